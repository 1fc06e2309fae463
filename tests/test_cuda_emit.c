/* test_cuda_emit.c — the GPU target without a GPU: every example's CUDA
 * (fused and unfused variants) compiles with nvcc for sm_90a, the artifact
 * saves and loads, and a launch reports the missing device cleanly. The
 * kernel cache is off, so nvcc really runs. Skipped (with a message) only
 * where nvcc is not installed. */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "evt/models.h"
#include "pass/plan.h"

static int have_nvcc(void)
{
    const char *n = getenv("NVCC");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "'%s' --version > /dev/null 2>&1", n && *n ? n : "nvcc");
    return system(cmd) == 0;
}

static void examples_compile_for_cuda(void **state)
{
    (void)state;
    if (!have_nvcc()) {
        print_message("nvcc not found: the CUDA emitter check is skipped on this machine\n");
        skip();
    }
    setenv("EVT_CACHE_DIR", "off", 1);
    glob_t gl;
    assert_int_equal(glob("examples/*.evt", 0, NULL, &gl), 0);
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        evt_diag d;
        evt_diag_init(&d, gl.gl_pathv[i]);
        evt_graph *g = evt_parse_file(gl.gl_pathv[i], &d);
        assert_non_null(g);
        evt_module *m = NULL;
        int64_t before = evt_cuda_compile_count();
        if (evt_module_build(g, EVT_BACKEND_CUDA, NULL, 1, &m, &d)) fail_msg("%s: %s", gl.gl_pathv[i], d.text);
        assert_int_equal(evt_cuda_compile_count() - before, 2); /* fused and unfused */
        assert_non_null(strstr(evt_module_source(m, 0), "__global__ void EVT_LAUNCH_BOUNDS evt_kernel"));
        /* the artifact round-trips without compiling */
        char path[64];
        snprintf(path, sizeof path, "/tmp/evt-cu-%d.evtm", (int)getpid());
        assert_int_equal(evt_module_save(m, path, &d), EVT_OK);
        evt_module *l = NULL;
        before = evt_cuda_compile_count();
        if (evt_module_load(path, &l, &d)) fail_msg("%s: %s", gl.gl_pathv[i], d.text);
        assert_int_equal(evt_cuda_compile_count(), before);
        unlink(path);
        /* without a GPU a launch is a clean error, not a crash */
        if (!evt_cuda_available()) {
            const evt_graph *mg = evt_module_graph(l);
            int64_t sym[16];
            evt_buffers *b;
            assert_int_equal(evt_shape_parse(mg, 0, NULL, sym, &d), EVT_OK);
            assert_int_equal(evt_buffers_new(mg, sym, 1, 0xff, &b, &d), EVT_OK);
            assert_int_equal(evt_module_run(l, sym, b, NULL, NULL, &d), EVT_ERR_NO_DEVICE);
            evt_buffers_free(b);
        }
        evt_module_free(l);
        evt_module_free(m);
        evt_diag_free(&d);
    }
    globfree(&gl);
    unsetenv("EVT_CACHE_DIR");
}

/* The weight stream is opt-in (evt_compile_opts.stream_weights): without it
 * the tiny Qwen3 step's kernel (GEMV calls annotated prefetch) runs their L2
 * prefetch hooks and has no pump; with it every such call takes its rows
 * from the pump (evt_stream_take), runs no hook, the runtime is told how
 * many calls stream, and the kernel compiles. */
static char *tiny_qwen3_cuda(evt_compile_opts co)
{
    evt_diag d;
    evt_diag_init(&d, "qwen3-tiny");
    evt_qwen3_config c;
    assert_int_equal(evt_qwen3_load_config("examples/qwen3-tiny.json", &c, &d), EVT_OK);
    evt_qwen3_opts qo = {.prefetch = 1}; /* the GEMV calls annotated: the stream takes them */
    char *text = evt_qwen3_program(&c, &qo, &d);
    assert_non_null(text);
    evt_graph *g = evt_parse(text, strlen(text), &d);
    assert_non_null(g);
    evt_plan *p = NULL;
    if (evt_compile(g, &co, &p, &d)) fail_msg("%s", d.text);
    evt_printer pr = {0};
    assert_int_equal(evt_emit_cuda(p, &pr, &d), EVT_OK);
    evt_plan_free(p);
    evt_graph_free(g);
    free(text);
    evt_diag_free(&d);
    return pr.buf;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *q = s; (q = strstr(q, what)); q += strlen(what)) n++;
    return n;
}

static void cache_fill_cpu(const evt_task_args *a) { (void)a; }

/* text (malloc'd, freed) with what inserted before the first `at` */
static char *insert_before(char *text, const char *at, const char *what)
{
    char *pos = strstr(text, at);
    assert_non_null(pos);
    size_t n0 = (size_t)(pos - text), n1 = strlen(what), n2 = strlen(pos);
    char *out = malloc(n0 + n1 + n2 + 1);
    assert_non_null(out);
    memcpy(out, text, n0);
    memcpy(out + n0, what, n1);
    memcpy(out + n0 + n1, pos, n2 + 1);
    free(text);
    return out;
}

/* The tiny Qwen3 step (GEMV calls annotated prefetch) built into a module
 * with co compiles with nvcc (the cache is off, so nvcc runs) from the
 * source `expected`; skipped with a message where nvcc is not installed. */
static void tiny_qwen3_compiles(const char *expected, evt_compile_opts co, const char *what)
{
    if (!have_nvcc()) {
        print_message("nvcc not found: the %s kernel is not compiled on this machine\n", what);
        return;
    }
    setenv("EVT_CACHE_DIR", "off", 1);
    evt_diag d;
    evt_diag_init(&d, "qwen3-tiny");
    evt_qwen3_config c;
    evt_qwen3_load_config("examples/qwen3-tiny.json", &c, &d);
    evt_qwen3_opts qo = {.prefetch = 1};
    char *text = evt_qwen3_program(&c, &qo, &d);
    evt_graph *g = evt_parse(text, strlen(text), &d);
    evt_module *m = NULL;
    if (evt_module_build(g, EVT_BACKEND_CUDA, &co, 0, &m, &d)) fail_msg("%s", d.text);
    assert_string_equal(evt_module_source(m, 0), expected);
    evt_module_free(m); /* and g, which the module owns */
    free(text);
    evt_diag_free(&d);
    unsetenv("EVT_CACHE_DIR");
}

static void weight_stream_is_opt_in(void **state)
{
    (void)state;
    char *plain = tiny_qwen3_cuda((evt_compile_opts){0}), *streamed = tiny_qwen3_cuda((evt_compile_opts){.stream_weights = 1});
    assert_null(strstr(plain, "#define EVT_STREAM 1"));
    assert_int_equal(count(plain, "evt_stream_take"), 0);
    assert_true(count(plain, "_prefetch_cuda(A)") >= 3);
    assert_non_null(strstr(plain, "evt_stream_calls = 0;"));
    /* the TMA GEMV's ring request (llm_tma.cuh) reaches the runtime, and every
       task hands the tiles the launch's maps and ring */
    assert_non_null(strstr(plain, "evt_tma_ring_want = EVT_TILES_TMA_RING;"));
    assert_true(count(plain, "A->tmaps = C->tmaps;") >= 3);
    assert_non_null(strstr(streamed, "#define EVT_STREAM 1"));
    /* qkv, o, up, down per layer and the LM head (linear, linear_res,
       mlp_up templates): their rows from the pump, no hook; the other
       templates none (their tasks never stream) */
    assert_true(count(streamed, "evt_stream_take(") >= 3);
    assert_int_equal(count(streamed, "evt_stream_take("), count(streamed, "A->stream = ") - count(streamed, "A->stream = 0;"));
    assert_int_equal(count(streamed, "_prefetch_cuda(A)"), 0);
    assert_null(strstr(streamed, "evt_stream_calls = 0;"));
    free(plain);
    tiny_qwen3_compiles(streamed, (evt_compile_opts){.stream_weights = 1}, "streamed");
    free(streamed);
}

/* Early loads (evt_compile_opts.early_loads): the GEMV and attention calls
 * annotated prefetch run their record's waits beside the tile
 * (A->wait_in_tile: warp 0's leader waits while the other warps enter the
 * tile, issue their weight or old-cache loads and meet it at
 * evt_tile_wait), run no L2 hook and stop after the tile when those waits
 * were aborted; the other calls (norms, merge, argmax) wait before the tile
 * as before. The weight stream takes precedence over them. The plan marks
 * exactly those calls, and the attention's only while no other call writes
 * its KV cache (the registry's early_params). */
static void early_loads_leave_waits_to_the_tile(void **state)
{
    (void)state;
    char *plain = tiny_qwen3_cuda((evt_compile_opts){0}), *early = tiny_qwen3_cuda((evt_compile_opts){.early_loads = 1});
    assert_int_equal(count(plain, "A->wait_in_tile = 1;"), 0);
    /* linear, linear_res, mlp_up, attn_rope_split templates */
    assert_true(count(early, "A->wait_in_tile = 1;") >= 4);
    assert_true(count(early, "attn_rope_split_early_cuda(&W->args);") >= 1);
    assert_int_equal(count(early, "A->wait_in_tile = 1;"), count(early, "if (W->args.wait_in_tile) {"));
    assert_int_equal(count(early, "A->wait_in_tile = 1;"), count(early, "const int stopped = W->skip; /* its own waits"));
    assert_int_equal(count(early, "_prefetch_cuda(A)"), 0);
    assert_true(count(early, "/* the record's waits */") >= 2); /* norms, attention, merge wait before their tiles */
    assert_int_equal(count(early, "evt_wait_rec(C, W, "), count(plain, "evt_wait_rec(C, W, ")); /* every call still waits */
    char *both = tiny_qwen3_cuda((evt_compile_opts){.early_loads = 1, .stream_weights = 1});
    assert_int_equal(count(both, "A->wait_in_tile = 1;"), 0);
    assert_true(count(both, "evt_stream_take(") >= 3);
    free(both);
    /* the plan: the GEMV and attention calls, annotated, and nothing else;
       (variant 2) not the attention under --no-attn-early; (variant 3) not
       layer 0's attention once another call writes its cache */
    evt_diag d;
    evt_diag_init(&d, "qwen3-tiny");
    evt_qwen3_config c;
    assert_int_equal(evt_qwen3_load_config("examples/qwen3-tiny.json", &c, &d), EVT_OK);
    static const evt_tile_decl fill = {.name = "test_cache_fill", .doc = "writes a KV cache (a test operator)", .nparams = 1,
                                       .params = {{"kc", EVT_PARAM_OUT, EVT_BF16, 4}}, .cpu = cache_fill_cpu,
                                       .cuda_header = "tiles/spin.cuh", .threads = 32};
    if (!evt_tile_find(fill.name)) assert_int_equal(evt_tile_register(&fill), EVT_OK);
    for (int variant = 0; variant < 4; variant++) {
        evt_qwen3_opts qo = {.prefetch = variant > 0, .attn_no_early = variant == 2};
        char *text = evt_qwen3_program(&c, &qo, &d);
        if (variant == 3) { /* a call that appends to layer 0's cache before its attention */
            text = insert_before(text, "call embed_tok = ", "event e0_EX[1]\n");
            text = insert_before(text, "call l0_at = ",
                                 "call l0_fill = test_cache_fill(l0_kc) over (b) in [B] {\n    wait e0_QKV[0]\n    notify e0_EX[0]\n}\n");
            text = insert_before(text, "    wait e0_QKV[0]\n    notify e0_AT[0]", "    wait e0_EX[0]\n");
        }
        evt_graph *g = evt_parse(text, strlen(text), &d);
        if (!g) fail_msg("%s", d.text);
        evt_compile_opts co = {.early_loads = 1};
        evt_plan *p = NULL;
        if (evt_compile(g, &co, &p, &d)) fail_msg("%s", d.text);
        int n = 0, nat = 0;
        for (int k = 0; k < g->ncalls; k++) {
            const char *op = g->calls[k]->op;
            int gemv = !strcmp(op, "linear") || !strcmp(op, "linear_res") || !strcmp(op, "mlp_up");
            int at = !strcmp(op, "attn_rope_split") && variant != 2 && !(variant == 3 && !strcmp(g->calls[k]->name, "l0_at"));
            assert_int_equal(p->call[k].early_loads, variant > 0 && (gemv || at));
            n += p->call[k].early_loads;
            nat += at && p->call[k].early_loads;
        }
        assert_true(variant ? n >= 4 * c.num_hidden_layers : n == 0);
        assert_int_equal(nat, variant == 1 ? c.num_hidden_layers : variant == 3 ? c.num_hidden_layers - 1 : 0);
        evt_plan_free(p);
        evt_graph_free(g);
        free(text);
    }
    evt_diag_free(&d);
    free(plain);
    tiny_qwen3_compiles(early, (evt_compile_opts){.early_loads = 1}, "early-loads");
    free(early);
}

/* The tiles' nvcc options other than the defaults still compile into the
 * megakernel: the attention's score sums by a butterfly everywhere
 * (EVT_LLM_ATTN_RS=0) or by a reduce-scatter for 4 q heads per kv head too
 * (=2; the default, 1, does it for 2: bench/RESULTS.md session 20), and
 * early loads at batch <= 8 only (EVT_LLM_EARLY_MAX_NB8=1). The dispatch
 * instantiates every head_dim-128 form for every model, so the tiny one
 * builds them too. */
static void tile_options_compile(void **state)
{
    (void)state;
    char *plain = tiny_qwen3_cuda((evt_compile_opts){0});
    const char *flags[] = {"-DEVT_LLM_ATTN_RS=0", "-DEVT_LLM_ATTN_RS=2 -DEVT_LLM_EARLY_MAX_NB8=1"};
    for (int i = 0; i < 2; i++) {
        setenv("EVT_NVCCFLAGS", flags[i], 1);
        tiny_qwen3_compiles(plain, (evt_compile_opts){0}, flags[i]);
    }
    unsetenv("EVT_NVCCFLAGS");
    free(plain);
}

/* evt_compile_opts.cuda_defines: each NAME[=VALUE] a #define before the
 * tile headers (so part of the source, the compiled-kernel cache's key);
 * EVT_LLM_NO_TMA, which evtc decode sets for its batch-1-16 program, still
 * compiles the megakernel (the GEMV tiles without their TMA path); a list
 * that is not NAME[=VALUE] words is refused with a message. */
static void cuda_defines_in_source(void **state)
{
    (void)state;
    char *q = tiny_qwen3_cuda((evt_compile_opts){.cuda_defines = " EVT_LLM_NO_TMA  EVT_X=2.5 "});
    const char *defs = strstr(q, "#define EVT_LLM_NO_TMA 1 /* cuda_defines */\n#define EVT_X 2.5 /* cuda_defines */\n");
    assert_non_null(defs);
    assert_true(defs < strstr(q, "#include \"tiles/llm.cuh\""));
    char *plain = tiny_qwen3_cuda((evt_compile_opts){0});
    assert_null(strstr(plain, "cuda_defines"));
    free(plain);
    tiny_qwen3_compiles(q, (evt_compile_opts){.cuda_defines = " EVT_LLM_NO_TMA  EVT_X=2.5 "}, "EVT_LLM_NO_TMA");
    free(q);
    const char *bad[] = {"1X", "A=", "A;B", "A=\"q\"", "A B=", "A=1=2"};
    const char *prog = "tensor A : f32[4, 4] input = zeros\ntensor C : f32[4] output\n"
                       "call f = rowsum_final(A, C, 4) over (i) in [1] {\n}\n";
    for (int i = 0; i < 6; i++) {
        evt_diag d;
        evt_diag_init(&d, "defines");
        evt_graph *g = evt_parse(prog, strlen(prog), &d);
        assert_non_null(g);
        evt_plan *p = NULL;
        evt_compile_opts co = {.cuda_defines = bad[i]};
        assert_int_equal(evt_compile(g, &co, &p, &d), EVT_ERR_VERIFY);
        if (!strstr(d.text, "is not a list of NAME or NAME=VALUE")) fail_msg("'%s': %s", bad[i], d.text);
        evt_graph_free(g);
        evt_diag_free(&d);
    }
}

/* A failed CUDA build keeps its directory for inspection and names it in
 * the message ("(kept in DIR/kernel.cu"); a test that expects the failure
 * removes it. */
static void remove_kept_build(const char *msg)
{
    const char *kept = strstr(msg, "(kept in ");
    char dir[300], cmd[340];
    if (!kept || sscanf(kept, "(kept in %299[^)]", dir) != 1 || !strrchr(dir, '/')) return;
    *strrchr(dir, '/') = 0; /* .../kernel.cu -> its directory */
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!strncmp(dir, "/tmp/evtc-cu-", 13) && system(cmd) != 0) print_message("could not remove %s\n", dir);
}

/* The dispatch warpgroup (EVT_DISPATCH_WG, src/device/evt_dispatch_wg.h):
 * every kernel's entries carry it behind the define, the persistent one
 * with the dispatch warp's loop and the kernel-by-kernel one without; the
 * registers the third warpgroup releases (168 - 24 a thread) are exactly
 * what the tiles' two take (240 - 168 each: a CTA's pool holds no more);
 * the tiny Qwen3 kernel compiles with it; a program whose tiles do not have
 * 256 threads, and a kernel with the weight stream (whose pump runs between
 * entries on the tile threads), are refused by nvcc with the reason. */
static void dispatch_warpgroup_option(void **state)
{
    (void)state;
    char *plain = tiny_qwen3_cuda((evt_compile_opts){0});
    assert_int_equal(count(plain, "#if EVT_DISPATCH_WG\n    if (threadIdx.x >= EVT_BLOCK_THREADS) {"), 2);
    const char *dec = "setmaxnreg.dec.sync.aligned.u32 ", *inc = "setmaxnreg.inc.sync.aligned.u32 ";
    assert_non_null(strstr(plain, dec));
    assert_non_null(strstr(plain, inc));
    /* the launch's registers a thread: the register file over three warpgroups, in steps of 8 */
    const int launch = 65536 / (3 * 128) / 8 * 8, keep = atoi(strstr(plain, dec) + strlen(dec)),
              rise = atoi(strstr(plain, inc) + strlen(inc));
    assert_int_equal(launch, 168);
    assert_int_equal(launch - keep, 2 * (rise - launch)); /* released = taken */
    assert_true(keep >= 24 && rise <= 256 && keep % 8 == 0 && rise % 8 == 0); /* setmaxnreg's range */
    assert_int_equal(count(plain, dec), 2);
    assert_int_equal(count(plain, inc), 2);
    assert_int_equal(count(plain, "evt_ctl_dispatch_static(Cw, (int)blockIdx.x)"), 1);
    assert_non_null(strstr(plain, "extern \"C\" __device__ unsigned evt_extra_threads = 128;"));
    free(plain);
    const char *defs = "EVT_LLM_NO_TMA EVT_TILE_THREADS_CONST EVT_DISPATCH_WG=2";
    char *q = tiny_qwen3_cuda((evt_compile_opts){.cuda_defines = defs});
    tiny_qwen3_compiles(q, (evt_compile_opts){.cuda_defines = defs}, "EVT_DISPATCH_WG=2");
    free(q);
    if (!have_nvcc()) return;
    setenv("EVT_CACHE_DIR", "off", 1);
    const char *prog = "tensor A : f32[4, 4] input = zeros\ntensor C : f32[4] output\n"
                       "call f = rowsum_final(A, C, 4) over (i) in [1] {\n}\n";
    evt_diag d;
    evt_diag_init(&d, "dwg");
    evt_graph *g = evt_parse(prog, strlen(prog), &d);
    assert_non_null(g);
    evt_compile_opts co = {.cuda_defines = "EVT_DISPATCH_WG=2"};
    evt_module *m = NULL;
    assert_int_equal(evt_module_build(g, EVT_BACKEND_CUDA, &co, 0, &m, &d), EVT_ERR_COMPILE);
    if (!strstr(d.text, "EVT_DISPATCH_WG: the register split assumes tiles of 256 threads")) fail_msg("%s", d.text);
    remove_kept_build(d.text);
    evt_diag_free(&d);
    /* the weight stream: refused before any tile is compiled (an #error) */
    evt_diag_init(&d, "dwg-stream");
    evt_qwen3_config c;
    assert_int_equal(evt_qwen3_load_config("examples/qwen3-tiny.json", &c, &d), EVT_OK);
    evt_qwen3_opts qo = {.prefetch = 1};
    char *text = evt_qwen3_program(&c, &qo, &d);
    g = evt_parse(text, strlen(text), &d);
    assert_non_null(g);
    co = (evt_compile_opts){.stream_weights = 1, .cuda_defines = "EVT_DISPATCH_WG=2"};
    m = NULL;
    assert_int_equal(evt_module_build(g, EVT_BACKEND_CUDA, &co, 0, &m, &d), EVT_ERR_COMPILE);
    if (!strstr(d.text, "EVT_DISPATCH_WG: not with the weight stream")) fail_msg("%s", d.text);
    remove_kept_build(d.text);
    free(text);
    evt_diag_free(&d);
    unsetenv("EVT_CACHE_DIR");
}

/* Task records and shared-memory launch tables in the generated kernel:
 * every template takes the entry's record; calls whose maps are all known
 * on the host read their waits and notifies from it, calls with a
 * data-dependent or trigger map (the MoE example) never do; the persistent
 * kernel copies the launch tables into shared memory and exports their
 * size. */
static void records_and_tables(void **state)
{
    (void)state;
    char *q = tiny_qwen3_cuda((evt_compile_opts){0});
    assert_true(count(q, "evt_wait_rec(C, W, ") >= 5);  /* GEMVs, norms, attention, merge */
    assert_true(count(q, "evt_notify_rec(C, W, R)") >= 5);
    /* a record's notifies may be issued by another thread than the leader */
    assert_int_equal(count(q, "EVT_REC_NOTIFIER(C)"), count(q, "evt_notify_rec(C, W, R)"));
    assert_int_equal(count(q, "const int32_t *I, const evt_task_rec *R)"), count(q, "/* template "));
    assert_non_null(strstr(q, "evt_table_smem_bytes"));
    assert_non_null(strstr(q, "if (C->tables_in_smem)"));
    free(q);
    char *text = h_read_file("examples/moe_toy.evt");
    evt_diag d;
    evt_diag_init(&d, "moe_toy");
    evt_graph *g = evt_parse(text, strlen(text), &d);
    assert_non_null(g);
    evt_compile_opts co = {0};
    evt_plan *p = NULL;
    if (evt_compile(g, &co, &p, &d)) fail_msg("%s", d.text);
    evt_printer pr = {0};
    assert_int_equal(evt_emit_cuda(p, &pr, &d), EVT_OK);
    int data_templates = 0;
    for (char *t = strstr(pr.buf, "/* template "); t; ) {
        char *next = strstr(t + 1, "/* template ");
        size_t n = next ? (size_t)(next - t) : strlen(t);
        char *body = strndup(t, n);
        if (strstr(body, "evt_ld(C, W") || strstr(body, "evt_trigger_owner")) {
            data_templates++;
            assert_null(strstr(body, "evt_wait_rec("));
            assert_null(strstr(body, "evt_notify_rec("));
            assert_null(strstr(body, "EVT_REC_NOTIFIER("));
        }
        free(body);
        t = next;
    }
    assert_true(data_templates >= 2); /* the routed GEMM's and the combine's */
    evt_pr_free(&pr);
    evt_plan_free(p);
    evt_graph_free(g);
    free(text);
    evt_diag_free(&d);
}

/* The evt_rec_calls row of call `name` in generated source src (malloc'd) */
static char *rec_row(const char *src, const char *name)
{
    char tag[96];
    snprintf(tag, sizeof tag, "}}, /* %s */", name);
    const char *end = strstr(src, tag);
    assert_non_null(end);
    const char *start = end;
    while (start > src && start[-1] != '\n') start--;
    return strndup(start, (size_t)(end - start) + strlen(tag));
}

/* The shared record path (src/device/evt_rec_run.h): evt_dispatch sends a
 * task with a record to evt_run_rec when its call's row in evt_rec_calls is
 * generic. With early loads every call of the tiny Qwen3 step is (the GEMV
 * and attention rows wait beside the tile: flags 7); a call whose template
 * does more than the table says keeps its template: the GEMVs' L2 prefetch
 * hook without early loads, the weight stream's rows. The table has a row
 * per call and a sentinel. */
static void the_shared_record_path(void **state)
{
    (void)state;
    char *plain = tiny_qwen3_cuda((evt_compile_opts){0}), *early = tiny_qwen3_cuda((evt_compile_opts){.early_loads = 1}),
         *streamed = tiny_qwen3_cuda((evt_compile_opts){.stream_weights = 1});
    const int rows = count(early, "}}, /* "), sentinel = 1;
    assert_true(rows >= 10);
    assert_non_null(strstr(early, "evt_run_rec(C, W, call, R);"));
    assert_non_null(strstr(early, "#include \"device/evt_rec_run.h\""));
    assert_int_equal(count(early, "\n    {1, "), rows);                  /* every call */
    /* layer 0's GEMVs and attention wait beside their tiles and notify
       (flags 7), its norms wait before theirs (flags 5) */
    const char *beside[] = {"l0_qkvproj", "l0_at", "l0_oproj", "l0_up", "l0_dn"};
    for (int k = 0; k < 5; k++) {
        char *row = rec_row(early, beside[k]);
        if (!strstr(row, ", 7, 0, ")) fail_msg("%s: %s", beside[k], row);
        free(row);
    }
    assert_true(count(early, ", 5, 0, ") >= 2);
    assert_true(count(plain, "\n    {0, ") - sentinel >= 3);            /* the GEMVs with their hook */
    assert_true(count(plain, "\n    {1, ") >= 3);                       /* norms, attention, merge */
    assert_int_equal(count(plain, "\n    {0, ") - sentinel + count(plain, "\n    {1, "), rows);
    assert_true(count(streamed, "\n    {0, ") - sentinel >= 3);         /* streamed GEMVs */
    free(plain);
    free(early);
    free(streamed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(examples_compile_for_cuda),
        cmocka_unit_test(weight_stream_is_opt_in),
        cmocka_unit_test(early_loads_leave_waits_to_the_tile),
        cmocka_unit_test(tile_options_compile),
        cmocka_unit_test(cuda_defines_in_source),
        cmocka_unit_test(dispatch_warpgroup_option),
        cmocka_unit_test(records_and_tables),
        cmocka_unit_test(the_shared_record_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
