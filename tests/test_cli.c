/* test_cli.c — the command-line contract (scripts depend on it): exit codes,
 * the "check: ok" line, one-line errors for bad values, dump round-trips of
 * every example, the schedule verdict, compile + run of an artifact, the
 * trace tools' reading of a decode trace, text prompts through a tokenizer. */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"

static char out[1 << 16];

/* Runs cmd: it exits with `code` and says `want` (out keeps what it said). */
static void exits_with(const char *cmd, int code, const char *want)
{
    assert_int_equal(h_sh(cmd, out, sizeof out), code);
    if (!strstr(out, want)) fail_msg("no \"%s\" in:\n%s", want, out);
}

static void run_check_ok(void **state)
{
    (void)state;
    const char *scheds[] = {"static", "dynamic", "unfused", "kbk", "graph", "hybrid"};
    for (int s = 0; s < 6; s++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "build/evtc run examples/split_rowsum.evt --set n=9 --sched %s --workers 5 --check", scheds[s]);
        assert_int_equal(h_sh(cmd, out, sizeof out), 0);
        if (!strstr(out, "\ncheck: ok")) fail_msg("%s", out);
    }
    /* decode with GEMV tiles fewer than workers (--tiles): the program's
       linear calls get that many tiles, and the step still checks */
    assert_int_equal(h_sh("build/evtc decode --model examples/qwen3-tiny.json --batch 2 --ctx 16 --steps 2 --tiles 7 --workers 8 "
                        "--check --emit-program /tmp/evtc-test-tiles.evt", out, sizeof out), 0);
    if (!strstr(out, "\ncheck: ok")) fail_msg("%s", out);
    if (!strstr(out, "decode: 2 steps on the wall clock: the first ")) fail_msg("no wall-clock line in:\n%s", out);
    char *prog = h_read_file("/tmp/evtc-test-tiles.evt");
    if (!strstr(prog, ", 7) over (nb) in [7]")) fail_msg("no 7-tile linear call in:\n%.2000s", prog);
    free(prog);
    unlink("/tmp/evtc-test-tiles.evt");
    assert_int_equal(h_sh("build/evtc decode --model examples/qwen3-tiny.json --batch 2 --ctx 16 --steps 1 --tiles 0", out, sizeof out), 2);
    if (!strstr(out, "--tiles 0: expected 1..4096")) fail_msg("%s", out);
    /* a model that is neither a config file nor a preset: the presets named */
    assert_int_equal(h_sh("build/evtc decode --model qwen3-9b --batch 1 --ctx 4 --steps 1", out, sizeof out), 2);
    if (!strstr(out, "cannot open model config qwen3-9b (No such file or directory); the presets are qwen3-0.6b"))
        fail_msg("%s", out);
    /* --weights: a checkpoint that is not there is an error naming it (tests/test_weights.c loads real ones) */
    assert_int_equal(h_sh("build/evtc decode --model examples/qwen3-tiny.json --batch 1 --ctx 4 --steps 1 --weights /nonexistent/ckpt",
                        out, sizeof out), 2);
    if (!strstr(out, "error: /nonexistent/ckpt: No such file or directory")) fail_msg("%s", out);
    /* prompts: from the command line and from a file (a prompt a line), each request's tokens printed, checked */
    FILE *pf = fopen("/tmp/evtc-test-prompts.txt", "w");
    assert_non_null(pf);
    fputs("# two prompts\n5 17 200\n\n  9,3\n", pf);
    fclose(pf);
    assert_int_equal(h_sh("build/evtc decode --model examples/qwen3-tiny.json --batch 3 --steps 3 --prompts /tmp/evtc-test-prompts.txt "
                        "--check", out, sizeof out), 0);
    /* every prompt token but the last through one prefill launch (5 rows: 2 + 1 + 2), then the 3 steps */
    if (!strstr(out, "batch 3, 2 prompts, 3 steps") || !strstr(out, "\ngenerated[0]: ") || !strstr(out, "\ngenerated[1]: ") ||
        !strstr(out, "decode: prefilled 5 prompt tokens in 1 launch of 5 rows: ") ||
        !strstr(out, "\ncheck: ok (4 launches (prefill and steps) bitwise equal"))
        fail_msg("%s", out);
    /* in launches of at most 2 rows: 3 launches of 2 (one spare row), the same tokens; fed a token a step, too */
    char gen_prefill[256];
    const char *gl = strstr(out, "\ngenerated[0]: ");
    snprintf(gen_prefill, sizeof gen_prefill, "%.*s", (int)strcspn(gl + 1, "\n"), gl + 1);
    /* with --trace the prefill's last launch in FILE.prefill.json, the steps' in FILE, each a trace of its own program */
    unlink("/tmp/evtc-test-pf-trace.json");
    unlink("/tmp/evtc-test-pf-trace.prefill.json");
    assert_int_equal(h_sh("build/evtc decode --model examples/qwen3-tiny.json --batch 3 --steps 3 --prompts /tmp/evtc-test-prompts.txt "
                        "--check --prefill-chunk 2 --trace /tmp/evtc-test-pf-trace.json", out, sizeof out), 0);
    if (!strstr(out, "decode: prefilled 5 prompt tokens in 3 launches of 2 rows: ") || !strstr(out, gen_prefill) ||
        !strstr(out, "\ncheck: ok (6 launches (prefill and steps) bitwise equal") ||
        !strstr(out, "decode: the prefill's last launch traced in /tmp/evtc-test-pf-trace.prefill.json\n"))
        fail_msg("expected %s\n%s", gen_prefill, out);
    char *tr = h_read_file("/tmp/evtc-test-pf-trace.prefill.json");
    if (!tr || !strstr(tr, "\"cat\": \"l0_qk\"")) fail_msg("not the prefill's trace: %.300s", tr ? tr : "(none)");
    free(tr);
    tr = h_read_file("/tmp/evtc-test-pf-trace.json");
    if (!tr || strstr(tr, "\"cat\": \"l0_qk\"") || !strstr(tr, "\"cat\": \"l0_at\"")) fail_msg("not the steps' trace: %.300s", tr ? tr : "(none)");
    free(tr);
    unlink("/tmp/evtc-test-pf-trace.json");
    unlink("/tmp/evtc-test-pf-trace.prefill.json");
    assert_int_equal(h_sh("build/evtc decode --model examples/qwen3-tiny.json --batch 3 --steps 3 --prompts /tmp/evtc-test-prompts.txt "
                        "--check --prompt-steps", out, sizeof out), 0);
    if (strstr(out, "prefilled") || !strstr(out, "\ncheck: ok (5 steps bitwise equal")) fail_msg("%s", out);
    /* --emit-program with prompts: the prefill program beside the steps' (p.evt -> p.prefill.evt), an ordinary
       program (evtc check), whose appends notify one event per kv head; none where no prompt needs a prefill */
    unlink("/tmp/evtc-test-pf.prefill.evt");
    assert_int_equal(h_sh("build/evtc decode --model examples/qwen3-tiny.json --batch 3 --steps 3 --prompts /tmp/evtc-test-prompts.txt "
                        "--emit-program /tmp/evtc-test-pf.evt --emit-only", out, sizeof out), 0);
    assert_int_equal(h_sh("build/evtc check /tmp/evtc-test-pf.prefill.evt", out, sizeof out), 0);
    prog = h_read_file("/tmp/evtc-test-pf.prefill.evt");
    if (!strstr(prog, "    notify e0_KV[g]\n") || !strstr(prog, "sym B = 1 in [1, 128]")) fail_msg("not a prefill program:\n%.2000s", prog);
    free(prog);
    prog = h_read_file("/tmp/evtc-test-pf.evt");
    if (strstr(prog, "e0_KV[")) fail_msg("the steps' program has the prefill's events:\n%.2000s", prog);
    free(prog);
    unlink("/tmp/evtc-test-pf.prefill.evt");
    assert_int_equal(h_sh("build/evtc decode --model examples/qwen3-tiny.json --steps 1 --prompt 7 --emit-program /tmp/evtc-test-pf.evt "
                        "--emit-only", out, sizeof out), 0);
    assert_int_not_equal(access("/tmp/evtc-test-pf.prefill.evt", F_OK), 0);
    unlink("/tmp/evtc-test-pf.evt");
    exits_with("build/evtc decode --model examples/qwen3-tiny.json --batch 1 --ctx 4 --steps 1 --prefill-chunk 4", 2,
               "--prefill-chunk is for runs with prompts");
    exits_with("build/evtc decode --model examples/qwen3-tiny.json --steps 1 --prompt 1,2 --prefill-chunk 129", 2,
               "--prefill-chunk 129: expected 1..128");
    exits_with("build/evtc decode --model examples/qwen3-tiny.json --steps 1 --prompt 1,2 --prefill-chunk 4 --prompt-steps", 2,
               "--prefill-chunk and --prompt-steps together");
    assert_int_equal(h_sh("build/evtc decode --model examples/qwen3-tiny.json --steps 2 --prompt 7,8 --check", out, sizeof out), 0);
    if (!strstr(out, "a 2-token prompt") || !strstr(out, "\ngenerated: ")) fail_msg("%s", out);
    assert_int_equal(h_sh("build/evtc decode --model examples/qwen3-tiny.json --prompt 7 --ctx 8", out, sizeof out), 2);
    if (!strstr(out, "give it or --ctx, not both")) fail_msg("%s", out);
    pf = fopen("/tmp/evtc-test-prompts.txt", "w");
    fputs("5 17\n5 x\n", pf);
    fclose(pf);
    assert_int_equal(h_sh("build/evtc decode --model examples/qwen3-tiny.json --prompts /tmp/evtc-test-prompts.txt", out, sizeof out), 2);
    if (!strstr(out, "evtc-test-prompts.txt:2: expected token ids")) fail_msg("%s", out);
    unlink("/tmp/evtc-test-prompts.txt");
    /* the task-record ablation, on a bucket schedule (entries skipped) */
    assert_int_equal(h_sh("build/evtc run examples/buckets.evt --set B=3 --workers 3 --check --no-records", out, sizeof out), 0);
    if (!strstr(out, "\ncheck: ok")) fail_msg("%s", out);
}

/* The first line of out that starts with `key`, without it (static buffer). */
static const char *line_after(const char *key)
{
    static char line[4096];
    const char *p = strstr(out, key);
    if (!p) return NULL;
    p += strlen(key);
    size_t n = strcspn(p, "\n");
    snprintf(line, sizeof line, "%.*s", (int)n, p);
    return line;
}

/* The tiny model's shapes with a 1536-token vocabulary, more config.json
   fields appended (`extra`: "" or ", \"key\": value"). */
static void write_tok_model(const char *extra)
{
    FILE *f = fopen("/tmp/evtc-test-tok-model.json", "w");
    assert_non_null(f);
    fprintf(f, "{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
               "\"head_dim\": 16, \"intermediate_size\": 128, \"vocab_size\": 1536, \"rms_norm_eps\": 1e-06, "
               "\"rope_theta\": 1000000.0, \"tie_word_embeddings\": true%s}\n", extra);
    fclose(f);
}

/* evtc tokenize and decode --prompt-text with tests/data's Qwen-layout
   tokenizer (test_tokenizer.c checks its ids against Hugging Face's): a text
   prompt generates what its ids generate, the generated ids print as the
   text `evtc tokenize` decodes them to, and the errors. */
static void text_prompts(void **state)
{
    (void)state;
    const char *tok = "tests/data/tok-qwen.json";
    char cmd[8192], ids_line[1024], gen_ids[1024], gen_text[1024];
    snprintf(cmd, sizeof cmd, "build/evtc tokenize --tokenizer %s --prompt-text 'Hello, world!' --prompt 39,333,317,11", tok);
    assert_int_equal(h_sh(cmd, out, sizeof out), 0);
    if (!strstr(out, "ids: 39 333 317 11 441 693 0\ntext: \"Hello,\"\n")) fail_msg("%s", out);
    write_tok_model(""); /* a model whose vocabulary holds the tokenizer's 1506 ids */
    snprintf(cmd, sizeof cmd, "build/evtc tokenize --tokenizer %s --prompt-text 'The Event Tensor compiler'", tok);
    assert_int_equal(h_sh(cmd, out, sizeof out), 0);
    snprintf(ids_line, sizeof ids_line, "%s", line_after("ids: "));
    for (char *p = ids_line; *p; p++) if (*p == ' ') *p = ',';
    snprintf(cmd, sizeof cmd, "build/evtc decode --model /tmp/evtc-test-tok-model.json --steps 6 --tokenizer %s "
                              "--prompt-text 'The Event Tensor compiler' --check", tok);
    assert_int_equal(h_sh(cmd, out, sizeof out), 0);
    if (!strstr(out, "\ncheck: ok") || !line_after("\ngenerated: ") || !line_after("\ngenerated text: \"")) fail_msg("%s", out);
    snprintf(gen_ids, sizeof gen_ids, "%s", line_after("\ngenerated: "));
    snprintf(gen_text, sizeof gen_text, "%s", line_after("\ngenerated text: "));
    /* the same prompt as ids: the same tokens */
    snprintf(cmd, sizeof cmd, "build/evtc decode --model /tmp/evtc-test-tok-model.json --steps 6 --prompt %s", ids_line);
    assert_int_equal(h_sh(cmd, out, sizeof out), 0);
    if (!line_after("\ngenerated: ") || strcmp(line_after("\ngenerated: "), gen_ids))
        fail_msg("ids %s generated\n%s\nthe text prompt: %s", ids_line, out, gen_ids);
    if (strstr(out, "generated text")) fail_msg("no tokenizer, yet text:\n%s", out);
    /* and the generated ids decode to the text printed */
    for (char *p = gen_ids; *p; p++) if (*p == ' ') *p = ',';
    snprintf(cmd, sizeof cmd, "build/evtc tokenize --tokenizer %s --prompt %s", tok, gen_ids);
    assert_int_equal(h_sh(cmd, out, sizeof out), 0);
    if (!line_after("text: ") || strcmp(line_after("text: "), gen_text)) fail_msg("%s\nvs %s", out, gen_text);
    /* two text prompts; then the model's eos_token_id set to request 1's first token: its text stops there */
    snprintf(cmd, sizeof cmd, "build/evtc decode --model /tmp/evtc-test-tok-model.json --batch 2 --steps 4 --tokenizer %s "
                              "--prompt-text 'The Event Tensor compiler' --prompt-text 'Hello world'", tok);
    assert_int_equal(h_sh(cmd, out, sizeof out), 0);
    char text0[1024], gen0[1024];
    int first1 = -1;
    if (!line_after("\ngenerated text[0]: \"") || !line_after("\ngenerated[1]: ")) fail_msg("%s", out);
    snprintf(text0, sizeof text0, "%s", line_after("\ngenerated text[0]: "));
    snprintf(gen0, sizeof gen0, "%s", line_after("\ngenerated[0]: "));
    sscanf(line_after("\ngenerated[1]: "), "%d", &first1);
    if (!strcmp(gen0, line_after("\ngenerated[1]: ")) || strstr(text0, "end of sequence"))
        fail_msg("the two prompts should generate differently:\n%s", out);
    char eos[64];
    snprintf(eos, sizeof eos, ", \"eos_token_id\": [1505, %d]", first1);
    write_tok_model(eos);
    assert_int_equal(h_sh(cmd, out, sizeof out), 0);
    if (!line_after("\ngenerated text[0]: ") || strcmp(line_after("\ngenerated text[0]: "), text0)) fail_msg("%s\nvs %s", out, text0);
    char want[128];
    snprintf(want, sizeof want, "\ngenerated text[1]: \"\" (end of sequence: token 1, id %d)\n", first1);
    if (!strstr(out, want)) fail_msg("no \"%s\" in\n%s", want + 1, out);
    /* errors */
    exits_with("build/evtc decode --model examples/qwen3-tiny.json --prompt-text hi", 2, "--prompt-text needs a tokenizer");
    snprintf(cmd, sizeof cmd, "build/evtc decode --model examples/qwen3-tiny.json --tokenizer %s --ctx 4", tok);
    exits_with(cmd, 2, "--tokenizer is for runs with --prompt-text or --prompt");
    /* a prompt past the model's vocabulary (256 ids): refused before anything runs */
    snprintf(cmd, sizeof cmd, "build/evtc decode --model examples/qwen3-tiny.json --tokenizer %s --prompt-text '<|im_start|>'", tok);
    exits_with(cmd, 2, "1501");
    exits_with("build/evtc decode --model examples/qwen3-tiny.json --tokenizer /nonexistent/tok.json --prompt 1", 2,
               "/nonexistent/tok.json: No such file or directory");
    snprintf(cmd, sizeof cmd, "build/evtc tokenize --tokenizer %s --prompt-text ''", tok);
    exits_with(cmd, 2, "no tokens in it");
    snprintf(cmd, sizeof cmd, "build/evtc tokenize --tokenizer %s --prompt 5,1506", tok);
    exits_with(cmd, 2, "token id 1506 is not in the tokenizer's vocabulary");
    unlink("/tmp/evtc-test-tok-model.json");
}

static void bad_values_exit_2(void **state)
{
    (void)state;
    struct { const char *args, *msg; } bad[] = {
        {"--set m=3", "unknown symbol 'm'"},
        {"--set n", "expected NAME=VALUE"},
        {"--set n=-1", "cannot be negative"},
        {"--set n=abc", "'abc' is not an integer"},
        {"--set n=0", "n must be in [1, 16384]"},
        {"--set n=99999999999999999999", "is not an integer"},
        {"--workers 0", "--workers 0: expected an integer in [1, 4096]"},
        {"--sched fast", "expected static, dynamic, unfused, kbk, graph or hybrid"},
        {"--policy lifo", "expected rr or cp"},
        {"--frobnicate", "unknown option --frobnicate"},
        {"--tma-ring lots", "--tma-ring lots: expected 0..1048576 bytes"},
        {"--tma-ring 2000000", "--tma-ring 2000000: expected 0..1048576 bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "build/evtc run examples/split_rowsum.evt %s", bad[i].args);
        int rc = h_sh(cmd, out, sizeof out);
        if (rc != 2 || !strstr(out, bad[i].msg)) fail_msg("%s: rc %d, output:\n%s", bad[i].args, rc, out);
    }
}

static void check_and_dump(void **state)
{
    (void)state;
    glob_t gl;
    assert_int_equal(glob("examples/*.evt", 0, NULL, &gl), 0);
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        char cmd[512], once[1 << 15];
        snprintf(cmd, sizeof cmd, "build/evtc check %s", gl.gl_pathv[i]);
        assert_int_equal(h_sh(cmd, out, sizeof out), 0);
        /* dump of dump is identical */
        snprintf(cmd, sizeof cmd, "build/evtc dump %s > /tmp/evt-dump-%d.evt && cat /tmp/evt-dump-%d.evt",
                 gl.gl_pathv[i], (int)getpid(), (int)getpid());
        assert_int_equal(h_sh(cmd, once, sizeof once), 0);
        snprintf(cmd, sizeof cmd, "build/evtc dump /tmp/evt-dump-%d.evt", (int)getpid());
        assert_int_equal(h_sh(cmd, out, sizeof out), 0);
        assert_string_equal(once, out);
    }
    globfree(&gl);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -f /tmp/evt-dump-%d.evt", (int)getpid());
    h_sh(cmd, out, sizeof out);
    /* a malformed file: diagnostics on stderr, exit 1 */
    FILE *f = fopen("/tmp/evt-bad.evt", "w");
    fputs("sym n = 4\ntensor A : f99[n] input\n", f);
    fclose(f);
    assert_int_equal(h_sh("build/evtc check /tmp/evt-bad.evt", out, sizeof out), 1);
    assert_non_null(strstr(out, "/tmp/evt-bad.evt:2:"));
    assert_int_equal(h_sh("build/evtc check /tmp/no-such-file.evt", out, sizeof out), 1);
    unlink("/tmp/evt-bad.evt");
}

static void schedule_verdicts(void **state)
{
    (void)state;
    assert_int_equal(h_sh("build/evtc schedule examples/split_rowsum.evt --set n=2 --workers 3 --policy cp", out, sizeof out), 0);
    assert_non_null(strstr(out, "worker 0: partial("));
    assert_non_null(strstr(out, "deadlock-free: yes"));
    FILE *f = fopen("/tmp/evt-chain.evt", "w");
    fputs("sym n = 6 in [2, 64]\ntensor X : f32[n] output = zeros\nevent E[n + 1]\n"
          "call chain = chain_step(X, -1) over (i) in [n] {\n    wait E[i + 1]\n    notify E[i]\n}\n", f);
    fclose(f);
    assert_int_equal(h_sh("build/evtc schedule /tmp/evt-chain.evt --workers 2 --policy rr", out, sizeof out), 1);
    assert_non_null(strstr(out, "would deadlock: cycle through tasks chain("));
    assert_non_null(strstr(out, "deadlock-free: no"));
    assert_int_equal(h_sh("build/evtc run /tmp/evt-chain.evt --workers 2 --policy cp", out, sizeof out), 0);
    unlink("/tmp/evt-chain.evt");
    /* hybrid: the experts (policy dynamic) are left to the ready queue */
    assert_int_equal(h_sh("build/evtc schedule examples/moe_toy.evt --sched hybrid --workers 4", out, sizeof out), 0);
    assert_non_null(strstr(out, "workers 2..3: the ready queue, for expert (16 tasks)"));
    assert_null(strstr(out, " expert("));
    assert_non_null(strstr(out, "deadlock-free: yes"));
    assert_int_equal(h_sh("build/evtc schedule examples/moe_toy.evt --sched dynamic", out, sizeof out), 2);
}

static void compile_then_run(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "build/evtc compile examples/buckets.evt --target c -o /tmp/evt-b-%d.evtm", (int)getpid());
    assert_int_equal(h_sh(cmd, out, sizeof out), 0);
    snprintf(cmd, sizeof cmd, "CC=false build/evtc run /tmp/evt-b-%d.evtm --set B=5 --check --sched unfused", (int)getpid());
    assert_int_equal(h_sh(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "check: ok"));
    snprintf(cmd, sizeof cmd, "rm -f /tmp/evt-b-%d.evtm", (int)getpid());
    h_sh(cmd, out, sizeof out);
    /* --define: a malformed tile option is a one-line error, exit 1 */
    snprintf(cmd, sizeof cmd, "build/evtc compile examples/buckets.evt --target cuda -o /tmp/evt-d-%d.evtm --define A --define 9x",
             (int)getpid());
    assert_int_equal(h_sh(cmd, out, sizeof out), 1);
    if (!strstr(out, "cuda_defines 'A 9x' is not a list of NAME or NAME=VALUE")) fail_msg("%s", out);
    /* a watchdog error is a clean exit 1 with the task named */
    FILE *f = fopen("/tmp/evt-wd.evt", "w");
    fputs("sym n = 2 in [1, 8]\ntensor z : f32[1] input = const(0)\ntensor Y : f32[n * 4] scratch\n"
          "tensor Z : f32[n] output\nevent E[n] count = 5\n"
          "call p = spin(z, Y, 0, 0, 1, 0, 1) over (i, j) in [n, 4] {\n    notify E[i]\n}\n"
          "call f = spin(Y, Z, 0, 4, 1, 0, 1) over (i) in [n] {\n    wait E[i]\n}\n", f);
    fclose(f);
    assert_int_equal(h_sh("build/evtc run /tmp/evt-wd.evt --trust-counts --timeout 0.2", out, sizeof out), 1);
    assert_non_null(strstr(out, "watchdog: task f("));
    assert_int_equal(h_sh("build/evtc run /tmp/evt-wd.evt", out, sizeof out), 1);
    assert_non_null(strstr(out, "declared count 5 but element 0 receives 4 notifies"));
    unlink("/tmp/evt-wd.evt");
}

static void c_api_example(void **state)
{
    (void)state;
    assert_int_equal(h_sh("build/examples/api_rowsum 37", out, sizeof out), 0);
    assert_non_null(strstr(out, "n=37: 185 tasks"));
    assert_non_null(strstr(out, "check: ok"));
}

/* Tasks of call l<k>_<name> in a trace, summed over k >= k0 */
static int trace_tasks(const char *trace, const char *name, int k0)
{
    int n = 0;
    for (int k = k0; k < 64; k++) {
        char tag[96];
        snprintf(tag, sizeof tag, "\"cat\": \"l%d_%s\"", k, name);
        for (const char *p = strstr(trace, tag); p; p = strstr(p + 1, tag)) n++;
    }
    return n;
}

/* bench/trace_handoffs.awk on a CPU decode trace: a row per chained call of
 * the layers, every consumer task counted once, as waiting (taken before its
 * producer's last notify) or after (taken later). The first layer's QKV has
 * no producer in the chain (the calls before it are not a layer's). */
static void trace_handoffs(void **state)
{
    (void)state;
    char cmd[512], path[64];
    snprintf(path, sizeof path, "/tmp/evt-trace-%d.json", (int)getpid());
    snprintf(cmd, sizeof cmd, "build/evtc decode --model examples/qwen3-tiny.json --batch 1 --ctx 8 --steps 1 --backend cpu --trace %s", path);
    assert_int_equal(h_sh(cmd, out, sizeof out), 0);
    char *trace = h_read_file(path);
    snprintf(cmd, sizeof cmd, "awk -F'\"' -f bench/trace_handoffs.awk %s", path);
    assert_int_equal(h_sh(cmd, out, sizeof out), 0);
    const char *calls[] = {"qkvproj", "at", "oproj", "up", "dn"};
    for (int c = 0; c < 5; c++) {
        char key[32];
        snprintf(key, sizeof key, "\n%s ", calls[c]);
        const char *row = strstr(out, key);
        if (!row) fail_msg("no row for %s in:\n%s", calls[c], out);
        int layers = 0, waiting = 0, after = 0;
        char name[32];
        /* (the detection's quantiles are "-" where no task waited) */
        if (sscanf(row + 1, "%31s %d %d %*s %*s %*s %d", name, &layers, &waiting, &after) != 4 || layers < 1)
            fail_msg("unreadable row for %s in:\n%s", calls[c], out);
        int want = trace_tasks(trace, calls[c], c == 0 ? 1 : 0);
        if (waiting + after != want || want == 0) fail_msg("%s: %d waiting + %d after, %d tasks in the trace\n%s", calls[c], waiting, after, want, out);
    }
    free(trace);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(run_check_ok),
        cmocka_unit_test(bad_values_exit_2),
        cmocka_unit_test(check_and_dump),
        cmocka_unit_test(schedule_verdicts),
        cmocka_unit_test(compile_then_run),
        cmocka_unit_test(c_api_example),
        cmocka_unit_test(trace_handoffs),
        cmocka_unit_test(text_prompts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
