/* test_runtime.c — the runtime protocol under concurrency; built a second
 * time with ThreadSanitizer (make tsan), which then also instruments the
 * generated kernels (EVT_CFLAGS=-fsanitize=thread is set by this test).
 *   - the MPMC ring: many producers and consumers, nothing lost or doubled,
 *     also across positions 2^32 (a slot's sequence is 32 bits);
 *   - every example under every schedule, with chaos delays, with more
 *     workers than cores, many launches re-arming the counters in-kernel;
 *   - shapes changing between launches of one module (no recompilation);
 *   - the bind cache keeping every shape a server cycles through;
 *   - integer arguments that are symbols, through the shared record path;
 *   - the kernel cache's key: a command's blanks between words do not count.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glob.h>
#include "harness.h"
#include "device/evt_device.h"
#include "runtime/kcache.h"

#define PRODUCERS 4
#define CONSUMERS 4
#define PER_PRODUCER 20000

static evt_ctx ring_ctx;
static int32_t seen[PRODUCERS * PER_PRODUCER];

static void *producer(void *p)
{
    int id = (int)(intptr_t)p;
    for (int i = 0; i < PER_PRODUCER; i++)
        assert_int_equal(evt_push(&ring_ctx, (int64_t)id * PER_PRODUCER + i), 0); /* waits while full */
    return NULL;
}

static void *consumer(void *p)
{
    evt_worker w = {.id = (int)(intptr_t)p};
    int64_t v = -1;
    for (int i = 0; i < PRODUCERS * PER_PRODUCER / CONSUMERS; i++) {
        assert_int_equal(evt_pop(&ring_ctx, &w, &v), 1); /* blocks until its ticket is filled */
        __atomic_fetch_add(&seen[v], 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* One run of the producers and consumers over a small ring (256 slots:
 * producers wait for free slots and wrap many times), its positions starting
 * at `start` (a slot's sequence is the position modulo 2^32). */
static void mpmc_ring_from(int64_t start)
{
    static evt_ring ring;
    static evt_ring_slot slots[256];
    static int32_t abort_flag, outstanding, terminated;
    static evt_error err;
    memset(seen, 0, sizeof seen);
    ring.mask = 255;
    ring.slots = slots;
    ring.enq = ring.deq = start;
    for (int64_t pos = start; pos < start + 256; pos++) slots[pos & 255] = EVT_RING_SLOT(pos, -1);
    ring_ctx.ring = &ring;
    ring_ctx.abort_flag = &abort_flag;
    ring_ctx.outstanding = &outstanding;
    ring_ctx.terminated = &terminated;
    ring_ctx.err = &err;
    ring_ctx.timeout_ns = 60ull * 1000000000ull;
    pthread_t th[PRODUCERS + CONSUMERS];
    for (int i = 0; i < PRODUCERS; i++) pthread_create(&th[i], NULL, producer, (void *)(intptr_t)i);
    for (int i = 0; i < CONSUMERS; i++) pthread_create(&th[PRODUCERS + i], NULL, consumer, (void *)(intptr_t)i);
    for (int i = 0; i < PRODUCERS + CONSUMERS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < PRODUCERS * PER_PRODUCER; i++)
        if (seen[i] != 1) fail_msg("from %lld: value %d popped %d times", (long long)start, i, seen[i]);
    assert_int_equal(ring.enq, start + PRODUCERS * PER_PRODUCER);
    assert_int_equal(ring.enq, ring.deq); /* every ticket served */
    assert_int_equal(err.kind, 0);
}

static void mpmc_ring(void **state)
{
    (void)state;
    mpmc_ring_from(0);
    /* positions crossing 2^32 mid-run: the slots' 32-bit sequence numbers wrap */
    mpmc_ring_from((INT64_C(1) << 32) - PRODUCERS * PER_PRODUCER / 2);
}

static void examples_all_schedules(void **state)
{
    (void)state;
    glob_t gl;
    assert_int_equal(glob("examples/*.evt", 0, NULL, &gl), 0);
    assert_true(gl.gl_pathc >= 5);
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        char *text = h_read_file(gl.gl_pathv[i]);
        evt_module *m = h_build(text);
        free(text);
        for (int s = 0; s < 6; s++)
            for (int w = 1; w <= 9; w += 4) {
                evt_run_opts o = {.workers = w, .chaos = (uint32_t)(s * 7 + w), .chaos_max_ns = 5000, .timeout_s = 60};
                o.sched = s == 2 ? EVT_SCHED_DYNAMIC : s == 3 ? EVT_SCHED_UNFUSED : s == 4 ? EVT_SCHED_KBK
                        : s == 5 ? EVT_SCHED_HYBRID : EVT_SCHED_STATIC;
                if (s == 5 && w < 2) o.workers = 2; /* hybrid: a static and a dynamic worker at least */
                o.policy = s == 1 ? EVT_QUEUE_CP : EVT_QUEUE_RR;
                o.early_push = s == 2 && w > 1;
                o.pop_batch = 1 + w % 3;
                o.computed_dispatch = (s == 0 || s == 2) && w == 5; /* without task records */
                char *msg;
                evt_status st = h_run_check(m, 0, NULL, &o, (uint64_t)(i + s), &msg);
                if (st) fail_msg("%s sched %d workers %d: %s", gl.gl_pathv[i], s, w, msg);
                free(msg);
            }
        evt_module_free(m);
    }
    globfree(&gl);
}

/* Many launches of one module at changing shapes: counters are re-armed by
 * the kernel itself, bound shapes are cached, nothing is recompiled. */
static void changing_shapes(void **state)
{
    (void)state;
    evt_module *m = h_build_file("examples/split_rowsum.evt");
    setenv("CC", "false", 1); /* any compilation from here on would fail */
    uint32_t r = 99;
    for (int it = 0; it < 60; it++) {
        r = r * 1103515245u + 12345u;
        char set[32];
        snprintf(set, sizeof set, "n=%u", 1 + (r >> 8) % 40);
        const char *sets[] = {set};
        evt_run_opts o = {.sched = it % 3 == 1 ? EVT_SCHED_DYNAMIC : it % 3 == 2 ? EVT_SCHED_UNFUSED : EVT_SCHED_STATIC,
                          .workers = 1 + (int)((r >> 4) % 16)};
        char *msg;
        if (h_run_check(m, 1, sets, &o, (uint64_t)it, &msg)) fail_msg("%s: %s", set, msg);
        free(msg);
    }
    unsetenv("CC");
    evt_module_free(m);
}

/* A server cycles through many batch sizes: every bound shape stays in the
 * module's cache (up to EVT_BIND_CACHE entries and a byte budget), so the
 * second pass over 40 shapes binds nothing (16 entries used to evict them). */
static void bind_cache_keeps_shapes(void **state)
{
    (void)state;
    evt_module *m = h_build_file("examples/split_rowsum.evt");
    const evt_graph *g = evt_module_graph(m);
    for (int pass = 0; pass < 2; pass++)
        for (int n = 1; n <= 40; n++) {
            int64_t sym[1] = {n};
            evt_diag d;
            evt_diag_init(&d, "bind cache");
            evt_buffers *b = NULL;
            assert_int_equal(evt_buffers_new(g, sym, 1, 0xff, &b, &d), EVT_OK);
            evt_run_opts o = {.sched = n % 2 ? EVT_SCHED_STATIC : EVT_SCHED_DYNAMIC, .workers = 3};
            evt_run_stats st;
            if (evt_module_run(m, sym, b, &o, &st, &d)) fail_msg("n=%d: %s", n, d.text);
            if (st.cache_hit != pass) fail_msg("pass %d, n=%d: cache_hit %d", pass, n, st.cache_hit);
            evt_buffers_free(b);
            evt_diag_free(&d);
        }
    evt_module_free(m);
}

/* The shared record path (src/device/evt_rec_run.h) takes a call's integer
 * arguments from the generated table evt_rec_calls: constants as they are,
 * symbols (sym_mask) from the bound values. A tile size given as a symbol
 * must reach the tile as its value under every schedule, as the sequential
 * reference computes it (passing the symbol's id, 1, would sum 1-wide
 * tiles and fail the check). */
static void symbol_arguments_on_the_record_path(void **state)
{
    (void)state;
    const char *prog = "sym n = 4 in [1, 64]\nsym t = 32 in [8, 64]\n"
                       "tensor A : f32[n * 32, 128] input = random(seed=1, lo=-1, hi=1)\n"
                       "tensor P : f32[n * 32, 4] scratch\ntensor C : f32[n * 32] output\nevent E[n]\n"
                       "call partial = rowsum_partial(A, P, t) over (i, j) in [n, 4] {\n    notify E[i]\n}\n"
                       "call final = rowsum_final(P, C, t) over (i) in [n] {\n    wait E[i]\n}\n";
    evt_module *m = h_build(prog);
    /* both calls generic, one integer argument, symbol 1 (t) */
    const char *src = evt_module_source(m, 0);
    assert_non_null(strstr(src, "{1, 2, 2, 1, 4, 1, "));         /* partial: rank 2, notifies */
    assert_non_null(strstr(src, "{INT64_C(1)}}, /* partial */"));
    assert_non_null(strstr(src, "{1, 1, 2, 1, 1, 1, "));         /* final: rank 1, waits */
    const char *sets[] = {"n=5", "t=32"};
    for (int s = 0; s < 4; s++) {
        evt_run_opts o = {.workers = 3, .timeout_s = 60, .chaos = (uint32_t)(s + 1), .chaos_max_ns = 2000};
        o.sched = s == 1 ? EVT_SCHED_DYNAMIC : s == 2 ? EVT_SCHED_HYBRID : EVT_SCHED_STATIC;
        o.computed_dispatch = s == 3; /* without records: the templates */
        char *msg;
        if (h_run_check(m, 2, sets, &o, (uint64_t)s, &msg)) fail_msg("sched %d: %s", s, msg);
        free(msg);
    }
    evt_module_free(m);
}

/* evt_buffers_new_sharing: a weight the other program holds under the same
 * name, dtype and byte count is its host copy (not allocated, not
 * initialised again), whatever its id; another dtype or size, or another
 * role, is allocated and initialised as usual; the sharing buffers free
 * only their own. evt_module_share_weights and evt_module_release_tensors
 * on the CPU change nothing. */
static void buffers_share_weights(void **state)
{
    (void)state;
    const char *a = "sym n = 4 in [1, 64]\n"
                    "tensor W : f32[8, 4] weight = random(seed=3, lo=-1, hi=1)\n"
                    "tensor V : f32[8] weight = random(seed=4, lo=-1, hi=1)\n"
                    "tensor X : f32[n, 8] input = random(seed=5, lo=-1, hi=1)\n"
                    "tensor Y : f32[n] output\n"
                    "call r = rowsum_final(X, Y, 8) over (i) in [n] {\n}\n";
    const char *b = "sym n = 4 in [1, 64]\n"
                    "tensor X : f32[n, 8] input = random(seed=5, lo=-1, hi=1)\n"
                    "tensor V : f32[9] weight = random(seed=4, lo=-1, hi=1)\n"
                    "tensor W : f32[8, 4] weight = random(seed=7, lo=-1, hi=1)\n"
                    "tensor Y : f32[n] output\n"
                    "call r = rowsum_final(X, Y, 8) over (i) in [n] {\n}\n";
    evt_module *ma = h_build(a), *mb = h_build(b);
    const evt_graph *ga = evt_module_graph(ma), *gb = evt_module_graph(mb);
    int64_t sym[1] = {3};
    evt_diag d;
    evt_diag_init(&d, "share");
    evt_buffers *ba = NULL, *bb = NULL, *own = NULL;
    assert_int_equal(evt_buffers_new(ga, sym, 1, 0xff, &ba, &d), EVT_OK);
    assert_int_equal(evt_buffers_new_sharing(gb, sym, 1, 0xff, ga, ba, &bb, &d), EVT_OK);
    assert_int_equal(evt_buffers_new(gb, sym, 1, 0xff, &own, &d), EVT_OK);
    const int wa = evt_graph_find_tensor(ga, "W")->id, wb = evt_graph_find_tensor(gb, "W")->id;
    assert_int_not_equal(wa, wb);
    size_t n = 0;
    assert_ptr_equal(evt_buffers_data(bb, wb, &n), evt_buffers_data(ba, wa, NULL));
    assert_int_equal(n, 8 * 4 * sizeof(float));
    /* its own buffers would have had other values (seed 7): the shared ones are a's */
    assert_memory_not_equal(evt_buffers_data(own, wb, NULL), evt_buffers_data(ba, wa, NULL), n);
    /* V: 9 floats against 8, an input X: each its own */
    const int va = evt_graph_find_tensor(ga, "V")->id, vb = evt_graph_find_tensor(gb, "V")->id;
    const int xa = evt_graph_find_tensor(ga, "X")->id, xb = evt_graph_find_tensor(gb, "X")->id;
    assert_ptr_not_equal(evt_buffers_data(bb, vb, NULL), evt_buffers_data(ba, va, NULL));
    assert_ptr_not_equal(evt_buffers_data(bb, xb, NULL), evt_buffers_data(ba, xa, NULL));
    /* a run with the shared weights, and the sharing's end, change nothing on the CPU */
    evt_module_share_weights(mb, ma);
    evt_run_opts o = {.workers = 2};
    if (evt_module_run(mb, sym, bb, &o, NULL, &d)) fail_msg("%s", d.text);
    evt_module_release_tensors(ma, 1); /* the CPU's tensors are the buffers: nothing to free, a's W stays */
    evt_module_share_weights(mb, NULL);
    float w[32];
    memcpy(w, evt_buffers_data(ba, wa, NULL), sizeof w);
    evt_buffers_free(bb); /* its own tensors only: a's W stays as it was */
    assert_memory_equal(evt_buffers_data(ba, wa, NULL), w, sizeof w);
    evt_buffers_free(own);
    evt_buffers_free(ba);
    evt_diag_free(&d);
    evt_module_free(ma);
    evt_module_free(mb);
}

/* evt_module_copy_tensor: the destination tensor's bytes are the first ones
 * of the source's (a prefix of a larger tensor, as a prefill's cache is of a
 * decode's), and a run of the destination reads them; another dtype, too few
 * bytes or a tensor id out of range is a clear error that copies nothing. */
static void module_copy_tensor(void **state)
{
    (void)state;
    const char *a = "sym n = 4 in [1, 64]\n"
                    "tensor X : f32[n, 8] input = random(seed=5, lo=-1, hi=1)\n"
                    "tensor Z : i32[n, 8] input = random(seed=6, lo=-9, hi=9)\n"
                    "tensor Y : f32[n] output\n"
                    "call r = rowsum_final(X, Y, 8) over (i) in [n] {\n}\n";
    evt_module *ma = h_build(a), *mb = h_build(a);
    const evt_graph *g = evt_module_graph(ma);
    const int x = evt_graph_find_tensor(g, "X")->id, z = evt_graph_find_tensor(g, "Z")->id, y = evt_graph_find_tensor(g, "Y")->id;
    int64_t big[1] = {5}, small[1] = {3};
    evt_diag d;
    evt_diag_init(&d, "copy");
    evt_buffers *ba = NULL, *bb = NULL;
    assert_int_equal(evt_buffers_new(g, big, 1, 0xff, &ba, &d), EVT_OK);
    assert_int_equal(evt_buffers_new(g, small, 2, 0xff, &bb, &d), EVT_OK);
    float *xa = evt_buffers_data(ba, x, NULL), *xb = evt_buffers_data(bb, x, NULL);
    for (int i = 0; i < 40; i++) xa[i] = (float)i;
    assert_int_equal(evt_module_copy_tensor(mb, bb, x, ma, ba, x, &d), EVT_OK);
    assert_memory_equal(xb, xa, 3 * 8 * sizeof(float));
    evt_run_opts o = {.workers = 2};
    if (evt_module_run(mb, small, bb, &o, NULL, &d)) fail_msg("%s", d.text);
    const float *yb = evt_buffers_data(bb, y, NULL);
    for (int i = 0; i < 3; i++) assert_float_equal(yb[i], 64.0f * i + 28.0f, 0); /* sum of 8i .. 8i + 7 */
    /* refused, and nothing copied: too few bytes (5 rows from 3), another dtype, no such tensor */
    memset(xa, 0, 40 * sizeof(float));
    evt_diag_free(&d);
    evt_diag_init(&d, "copy");
    assert_int_equal(evt_module_copy_tensor(ma, ba, x, mb, bb, x, &d), EVT_ERR_SHAPE);
    assert_non_null(strstr(d.text, "too few"));
    assert_int_equal(evt_module_copy_tensor(mb, bb, x, ma, ba, z, &d), EVT_ERR_SHAPE);
    assert_non_null(strstr(d.text, "another dtype"));
    assert_int_equal(evt_module_copy_tensor(mb, bb, g->ntensors, ma, ba, x, &d), EVT_ERR_SHAPE);
    assert_int_equal(xa[0], 0.0f);
    assert_int_equal(xb[8], 8.0f);
    evt_buffers_free(ba);
    evt_buffers_free(bb);
    evt_diag_free(&d);
    evt_module_free(ma);
    evt_module_free(mb);
}

/* The kernel cache compares its commands word by word: "-Xptxas -v " (a
   scripted precompile's trailing space) finds what "-Xptxas  -v" stored;
   other words, another source, or blanks inside quotes or escaped do not. */
static void kcache_key_is_words(void **state)
{
    (void)state;
    char dir[] = "/tmp/evt-kcache-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *old = getenv("EVT_CACHE_DIR");
    char *saved = old ? strdup(old) : NULL;
    setenv("EVT_CACHE_DIR", dir, 1);
    const char code[] = "cubin bytes";
    evt_kcache_put("t", "source", "nvcc -O3  -Xptxas -v ", code, sizeof code);
    const char *same[] = {"nvcc -O3 -Xptxas -v", " nvcc\t-O3 -Xptxas  -v", "nvcc -O3 -Xptxas -v\n"};
    for (int i = 0; i < 3; i++) {
        void *got = NULL;
        size_t len = 0;
        assert_int_equal(evt_kcache_get("t", "source", same[i], &got, &len), 1);
        assert_int_equal(len, sizeof code);
        assert_memory_equal(got, code, sizeof code);
        free(got);
    }
    const char *other[] = {"nvcc -O3 -Xptxas-v", "nvcc -O3 -Xptxas -v -DX", "nvcc -O3"};
    for (int i = 0; i < 3; i++) {
        void *got = NULL;
        size_t len = 0;
        assert_int_equal(evt_kcache_get("t", "source", other[i], &got, &len), 0);
    }
    void *got = NULL;
    size_t len = 0;
    assert_int_equal(evt_kcache_get("t", "source2", "nvcc -O3 -Xptxas -v", &got, &len), 0);
    evt_kcache_put("t", "source", "nvcc -DS='a  b'", code, sizeof code);
    assert_int_equal(evt_kcache_get("t", "source", "nvcc -DS='a b'", &got, &len), 0);
    assert_int_equal(evt_kcache_get("t", "source", "nvcc  -DS='a  b' ", &got, &len), 1);
    free(got);
    /* an escaped blank is part of its word: "a\ b" is one word, "a\  b" two */
    evt_kcache_put("t", "source", "nvcc -DS=a\\ b", code, sizeof code);
    assert_int_equal(evt_kcache_get("t", "source", "nvcc -DS=a\\  b", &got, &len), 0);
    assert_int_equal(evt_kcache_get("t", "source", " nvcc  -DS=a\\ b", &got, &len), 1);
    free(got);
    if (saved) { setenv("EVT_CACHE_DIR", saved, 1); free(saved); }
    else unsetenv("EVT_CACHE_DIR");
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    /* instrument the generated kernels too when this binary runs under TSan */
#if defined(__SANITIZE_THREAD__)
    setenv("EVT_CFLAGS", "-fsanitize=thread -g -O1", 1);
#endif
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mpmc_ring),
        cmocka_unit_test(examples_all_schedules),
        cmocka_unit_test(changing_shapes),
        cmocka_unit_test(bind_cache_keeps_shapes),
        cmocka_unit_test(symbol_arguments_on_the_record_path),
        cmocka_unit_test(kcache_key_is_words),
        cmocka_unit_test(buffers_share_weights),
        cmocka_unit_test(module_copy_tensor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
