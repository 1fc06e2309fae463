/* gpucheck.c — GPU backend checks against the library API (tests/gpu/run.sh).
 *
 *   gpucheck build IN.evt OUT.evtm [trust]     compile for CUDA (+ unfused), save
 *   gpucheck check FILE [opts]                 GPU vs CPU reference, relative error
 *       --sched static,dynamic,unfused,hybrid,kbk,graph  --seeds 1,2,3  --set NAME=V (repeat)
 *       --workers 0,7  --chaos SEED  --rtol 1e-4  --tag NAME
 *   gpucheck many FILE N SEED                  N launches, random shapes, each checked;
 *                                              asserts zero nvcc runs after load
 *   gpucheck hang FILE.evt GOOD BAD            trust-counts program: NAME=BAD must hang
 *                                              (watchdog error), NAME=GOOD must then pass
 *   gpucheck workers FILE                      too many workers: a clear refusal
 *   gpucheck nodev FILE.evt                    (no GPU) a launch returns EVT_ERR_NO_DEVICE
 *   gpucheck copy -                            evt_module_copy_tensor from device to device:
 *                                              a tensor a resident launch left on the GPU read
 *                                              by another module's launch (its own programs)
 * Prints "PASS what" / "FAIL what: why" lines and exits nonzero on a failure.
 * The reference is the CPU backend running the same program (C tiles).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "evt/front.h"
#include "evt/runtime.h"

static int npass, nfail;
static void pass(const char *what) { printf("PASS %s\n", what); fflush(stdout); npass++; }
static void fail(const char *what, const char *why)
{
    printf("FAIL %s: %s\n", what, why ? why : "");
    fflush(stdout);
    nfail++;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static evt_module *open_module(const char *path, int trust, evt_diag *d)
{
    evt_module *m = NULL;
    if (evt_is_artifact(path)) {
        if (evt_module_load(path, &m, d)) return NULL;
        return m;
    }
    evt_graph *g = evt_parse_file(path, d);
    if (!g) return NULL;
    evt_compile_opts o = {0};
    o.trust_counts = trust;
    if (evt_module_build(g, EVT_BACKEND_CUDA, &o, 1, &m, d)) return NULL;
    return m;
}

/* The CPU reference module of the same program. */
static evt_module *cpu_ref(evt_module *m, int trust, evt_diag *d)
{
    evt_printer pr = {0};
    evt_print_graph(&pr, evt_module_graph(m));
    evt_graph *g = evt_parse(pr.buf, strlen(pr.buf), d);
    evt_pr_free(&pr);
    if (!g) return NULL;
    evt_compile_opts o = {0};
    o.trust_counts = trust;
    evt_module *r = NULL;
    if (evt_module_build(g, EVT_BACKEND_CPU, &o, 0, &r, d)) return NULL;
    return r;
}

/* One checked launch. Returns 0 on success, else fills why. */
static int check_one(evt_module *m, evt_module *ref, const int64_t *sym, uint64_t seed, const evt_run_opts *o,
                     double rtol, char *why, size_t nwhy, evt_run_stats *st)
{
    const evt_graph *g = evt_module_graph(m);
    evt_diag d;
    evt_diag_init(&d, "gpu");
    evt_buffers *bg = NULL, *bc = NULL;
    int bad = 1;
    if (evt_buffers_new(g, sym, seed, 0xff, &bg, &d) || evt_buffers_new(evt_module_graph(ref), sym, seed, 0xff, &bc, &d)) {
        snprintf(why, nwhy, "buffers: %s", d.text ? d.text : "?");
        goto out;
    }
    evt_run_opts co = {0};
    if (evt_module_run(ref, sym, bc, &co, NULL, &d)) { snprintf(why, nwhy, "reference: %s", d.text ? d.text : "?"); goto out; }
    if (evt_module_run(m, sym, bg, o, st, &d)) { snprintf(why, nwhy, "gpu: %s", d.text ? d.text : "?"); goto out; }
    evt_printer rep = {0};
    int nb = evt_buffers_compare(g, bg, bc, rtol, &rep);
    if (nb) snprintf(why, nwhy, "mismatch: %s", rep.buf ? rep.buf : "?");
    evt_pr_free(&rep);
    bad = nb != 0;
out:
    evt_buffers_free(bg);
    evt_buffers_free(bc);
    evt_diag_free(&d);
    return bad;
}

static int split_list(char *s, char **out, int max)
{
    int n = 0;
    for (char *t = strtok(s, ","); t && n < max; t = strtok(NULL, ",")) out[n++] = t;
    return n;
}

static int cmd_check(int argc, char **argv)
{
    const char *path = argv[2];
    char scheds_s[64] = "static,dynamic,unfused,hybrid", seeds_s[256] = "1,2,3", workers_s[128] = "0";
    const char *sets[16];
    int nsets = 0;
    uint32_t chaos = 0;
    double rtol = 1e-4;
    const char *tag = path;
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--sched")) snprintf(scheds_s, sizeof scheds_s, "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "--seeds")) snprintf(seeds_s, sizeof seeds_s, "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "--workers")) snprintf(workers_s, sizeof workers_s, "%s", argv[i + 1]);
        else if (!strcmp(argv[i], "--set") && nsets < 16) sets[nsets++] = argv[i + 1];
        else if (!strcmp(argv[i], "--chaos")) chaos = (uint32_t)strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--rtol")) rtol = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--tag")) tag = argv[i + 1];
    }
    evt_diag d;
    evt_diag_init(&d, path);
    evt_module *m = open_module(path, 0, &d);
    evt_module *ref = m ? cpu_ref(m, 0, &d) : NULL;
    if (!m || !ref) {
        fail(tag, d.text);
        evt_diag_free(&d);
        return 1;
    }
    int64_t sym[64];
    if (evt_shape_parse(evt_module_graph(m), nsets, sets, sym, &d)) { fail(tag, d.text); return 1; }
    int64_t before = evt_cuda_compile_count();
    char *scheds[8], *seeds[32], *workers[8];
    int ns = split_list(scheds_s, scheds, 8), nseed = split_list(seeds_s, seeds, 32), nw = split_list(workers_s, workers, 8);
    for (int w = 0; w < nw; w++)
        for (int s = 0; s < ns; s++)
            for (int k = 0; k < nseed; k++) {
                evt_run_opts o = {0};
                int kind = evt_sched_parse(scheds[s]);
                if (kind < 0) { fail(tag, "unknown schedule"); continue; }
                o.sched = (evt_sched_kind)kind;
                o.workers = atoi(workers[w]);
                o.chaos = chaos ? chaos + (uint32_t)k : 0;
                o.timeout_s = 10;
                char what[512], why[4096];
                snprintf(what, sizeof what, "%s sched=%s seed=%s workers=%s%s", tag, scheds[s], seeds[k], workers[w], chaos ? " chaos" : "");
                for (int i = 0; i < nsets; i++) { strncat(what, " ", sizeof what - strlen(what) - 1); strncat(what, sets[i], sizeof what - strlen(what) - 1); }
                evt_run_stats st;
                if (check_one(m, ref, sym, strtoull(seeds[k], NULL, 10), &o, rtol, why, sizeof why, &st)) fail(what, why);
                else pass(what);
            }
    if (evt_cuda_compile_count() != before) fail(tag, "nvcc ran during launches");
    evt_module_free(m);
    evt_module_free(ref);
    evt_diag_free(&d);
    return nfail != 0;
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return rng_state;
}

static int cmd_many(int argc, char **argv)
{
    if (argc < 5) return 2;
    const char *path = argv[2];
    int n = atoi(argv[3]);
    rng_state ^= strtoull(argv[4], NULL, 10) * 0x9e3779b97f4a7c15ull;
    int64_t cap = argc > 5 ? atoll(argv[5]) : 1 << 30; /* cap on each symbol */
    evt_diag d;
    evt_diag_init(&d, path);
    evt_module *m = open_module(path, 0, &d);
    evt_module *ref = m ? cpu_ref(m, 0, &d) : NULL;
    if (!m || !ref) { fail("many: open", d.text); return 1; }
    const evt_graph *g = evt_module_graph(m);
    int64_t before = evt_cuda_compile_count();
    int bad = 0, binds = 0;
    double bind_total = 0, bind_max = 0, launch_total = 0, t0 = now_ms();
    for (int i = 0; i < n; i++) {
        int64_t sym[64];
        for (int s = 0; s < g->nsyms; s++) {
            int64_t lo = g->syms[s]->lo, hi = g->syms[s]->hi < cap ? g->syms[s]->hi : cap;
            sym[s] = lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
        }
        evt_run_opts o = {0};
        static const evt_sched_kind cycle[] = {EVT_SCHED_STATIC, EVT_SCHED_DYNAMIC, EVT_SCHED_UNFUSED, EVT_SCHED_HYBRID};
        o.sched = cycle[i % 4];
        o.timeout_s = 10;
        char why[4096];
        evt_run_stats st;
        memset(&st, 0, sizeof st);
        if (check_one(m, ref, sym, (uint64_t)i + 1, &o, 1e-4, why, sizeof why, &st)) {
            char what[256];
            int len = snprintf(what, sizeof what, "many: launch %d sched=%s", i, evt_sched_name(o.sched));
            for (int s = 0; s < g->nsyms && len < (int)sizeof what; s++)
                len += snprintf(what + len, sizeof what - len, " %s=%lld", g->syms[s]->name, (long long)sym[s]);
            if (bad < 5) fail(what, why);
            bad++;
            continue;
        }
        if (!st.cache_hit) { binds++; bind_total += st.bind_ms; if (st.bind_ms > bind_max) bind_max = st.bind_ms; }
        launch_total += st.launch_ms;
    }
    int64_t compiles = evt_cuda_compile_count() - before;
    printf("many: %d launches of %s in %.1f s (incl. reference), %d failed; %d new bindings, host bind %.3f ms mean, "
           "%.3f ms max; launch wall %.3f ms mean; nvcc runs after build: %lld; graph captures: 0 (none exist)\n",
           n, path, (now_ms() - t0) / 1e3, bad, binds, binds ? bind_total / binds : 0, bind_max, launch_total / (n - bad > 0 ? n - bad : 1),
           (long long)compiles);
    char what[256];
    snprintf(what, sizeof what, "many: %d launches with random shapes all correct (%s)", n, path);
    if (bad) fail(what, "some launches failed"); else pass(what);
    snprintf(what, sizeof what, "many: zero nvcc runs across %d launches", n);
    if (compiles) fail(what, "nvcc ran"); else pass(what);
    evt_module_free(m);
    evt_module_free(ref);
    evt_diag_free(&d);
    return nfail != 0;
}

static int cmd_hang(int argc, char **argv)
{
    if (argc < 5) return 2;
    const char *path = argv[2];
    evt_diag d;
    evt_diag_init(&d, path);
    evt_module *m = open_module(path, 1, &d);
    evt_module *ref = m ? cpu_ref(m, 1, &d) : NULL;
    if (!m || !ref) { fail("hang: open", d.text); return 1; }
    const char *good[1] = {argv[3]}, *badset[1] = {argv[4]};
    int64_t symg[64], symb[64];
    if (evt_shape_parse(evt_module_graph(m), 1, badset, symb, &d) || evt_shape_parse(evt_module_graph(m), 1, good, symg, &d)) {
        fail("hang: shape", d.text);
        return 1;
    }
    for (int sched = 0; sched < 2; sched++) {
        evt_buffers *b = NULL;
        evt_buffers_new(evt_module_graph(m), symb, 1, 0xff, &b, &d);
        evt_run_opts o = {0};
        o.sched = (evt_sched_kind)sched;
        o.timeout_s = 1;
        evt_diag dd;
        evt_diag_init(&dd, "hang");
        double t0 = now_ms();
        evt_status st = evt_module_run(m, symb, b, &o, NULL, &dd);
        double el = (now_ms() - t0) / 1e3;
        char what[256], why[1024];
        snprintf(what, sizeof what, "planted hang (%s, %s) returns a watchdog/deadlock error naming the event within 3 s", evt_sched_name(o.sched), argv[4]);
        snprintf(why, sizeof why, "status %s after %.2f s: %s", evt_status_name(st), el, dd.text ? dd.text : "(no message)");
        printf("  hang message: %s", dd.text ? dd.text : "(none)\n");
        /* static: the spinning wait hits the watchdog; dynamic: the launch goes
         * quiet (no ready task, nothing outstanding) and the end-of-launch
         * check names the incomplete event at once */
        int okmsg = dd.text && (strstr(dd.text, "watchdog") || (sched && strstr(dd.text, "deadlock")));
        if ((st == EVT_ERR_TIMEOUT || (sched && st == EVT_ERR_RUNTIME)) && okmsg && el < 3) pass(what); else fail(what, why);
        evt_diag_free(&dd);
        evt_buffers_free(b);
        /* the same module must recover (host reset after the abort) */
        char why2[4096];
        snprintf(what, sizeof what, "after the hang, %s runs correctly (%s)", argv[3], evt_sched_name(o.sched));
        o.timeout_s = 10;
        if (check_one(m, ref, symg, 7, &o, 1e-4, why2, sizeof why2, NULL)) fail(what, why2); else pass(what);
    }
    evt_module_free(m);
    evt_module_free(ref);
    evt_diag_free(&d);
    return nfail != 0;
}

static int cmd_workers(int argc, char **argv)
{
    (void)argc;
    evt_diag d;
    evt_diag_init(&d, argv[2]);
    evt_module *m = open_module(argv[2], 0, &d);
    if (!m) { fail("workers: open", d.text); return 1; }
    int64_t sym[64];
    evt_shape_parse(evt_module_graph(m), 0, NULL, sym, &d);
    evt_buffers *b = NULL;
    evt_buffers_new(evt_module_graph(m), sym, 1, 0xff, &b, &d);
    evt_run_opts o = {0};
    o.workers = 100000;
    evt_diag dd;
    evt_diag_init(&dd, "workers");
    evt_status st = evt_module_run(m, sym, b, &o, NULL, &dd);
    printf("  refusal message: %s", dd.text ? dd.text : "(none)\n");
    if (st != EVT_OK && dd.text && strstr(dd.text, "co-resident")) pass("more workers than can be co-resident: refused with a clear error");
    else fail("more workers than can be co-resident", dd.text);
    evt_diag_free(&dd);
    evt_buffers_free(b);
    evt_module_free(m);
    evt_diag_free(&d);
    return nfail != 0;
}

static int cmd_build(int argc, char **argv)
{
    evt_diag d;
    evt_diag_init(&d, argv[2]);
    double t0 = now_ms();
    evt_module *m = open_module(argv[2], argc > 4 && !strcmp(argv[4], "trust"), &d);
    if (!m || evt_module_save(m, argv[3], &d)) {
        fprintf(stderr, "%s", d.text ? d.text : "build failed\n");
        return 1;
    }
    printf("built %s -> %s in %.1f s\n", argv[2], argv[3], (now_ms() - t0) / 1e3);
    evt_module_free(m);
    evt_diag_free(&d);
    return 0;
}

static int cmd_nodev(int argc, char **argv)
{
    (void)argc;
    evt_diag d;
    evt_diag_init(&d, argv[2]);
    evt_module *m = open_module(argv[2], 0, &d);
    if (!m) { fail("nodev: build", d.text); return 1; }
    int64_t sym[64];
    evt_shape_parse(evt_module_graph(m), 0, NULL, sym, &d);
    evt_buffers *b = NULL;
    evt_buffers_new(evt_module_graph(m), sym, 1, 0xff, &b, &d);
    evt_status st = evt_module_run(m, sym, b, NULL, NULL, &d);
    printf("  message: %s", d.text ? d.text : "(none)\n");
    if (st == EVT_ERR_NO_DEVICE) pass("no GPU: EVT_ERR_NO_DEVICE"); else fail("no GPU", evt_status_name(st));
    evt_buffers_free(b);
    evt_module_free(m);
    evt_diag_free(&d);
    return nfail != 0;
}

/* A split row sum's partials P, left on the device by a resident launch of
   one module, copied into another module's input P (a program of the final
   sums alone) without the host: the second module's sums must equal the
   first's, and its host copy of P, poisoned and older after the copy, must
   come back with its launch. */
static int cmd_copy(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const char *full = "sym n = 4 in [1, 64]\n"
                       "tensor A : f32[n * 32, 128] input = random(seed=1, lo=-1, hi=1)\n"
                       "tensor P : f32[n * 32, 4] scratch\n"
                       "tensor C : f32[n * 32] output\n"
                       "event E[n]\n"
                       "call partial = rowsum_partial(A, P, 32) over (i, j) in [n, 4] {\n    notify E[i]\n}\n"
                       "call final = rowsum_final(P, C, 32) over (i) in [n] {\n    wait E[i]\n}\n";
    const char *fin = "sym n = 4 in [1, 64]\n"
                      "tensor P : f32[n * 32, 4] input\n"
                      "tensor C : f32[n * 32] output\n"
                      "call final = rowsum_final(P, C, 32) over (i) in [n] {\n}\n";
    evt_diag d;
    evt_diag_init(&d, "copy");
    evt_graph *g1 = evt_parse(full, strlen(full), &d), *g2 = evt_parse(fin, strlen(fin), &d);
    evt_module *m1 = NULL, *m2 = NULL;
    evt_compile_opts co = {0};
    if (!g1 || !g2 || evt_module_build(g1, EVT_BACKEND_CUDA, &co, 0, &m1, &d) || evt_module_build(g2, EVT_BACKEND_CUDA, &co, 0, &m2, &d)) {
        fail("copy: build", d.text);
        return 1;
    }
    const evt_graph *h1 = evt_module_graph(m1), *h2 = evt_module_graph(m2);
    int64_t sym[1] = {3};
    evt_buffers *b1 = NULL, *b2 = NULL;
    evt_status st = evt_buffers_new(h1, sym, 1, 0xff, &b1, &d);
    if (!st) st = evt_buffers_new(h2, sym, 2, 0xff, &b2, &d);
    const int p1 = evt_graph_find_tensor(h1, "P")->id, c1 = evt_graph_find_tensor(h1, "C")->id;
    const int p2 = evt_graph_find_tensor(h2, "P")->id, c2 = evt_graph_find_tensor(h2, "C")->id;
    evt_run_opts ro = {.resident = 1};
    if (!st) st = evt_module_run(m1, sym, b1, &ro, NULL, &d);
    size_t n = 0;
    const unsigned char *host_p1 = evt_buffers_data(b1, p1, &n);
    int stale = 1; /* P's host copy stays the poison: the partials are on the device only */
    for (size_t i = 0; i < n; i++) stale &= host_p1[i] == 0xff;
    if (!st) st = evt_module_copy_tensor(m2, b2, p2, m1, b1, p1, &d);
    evt_run_opts plain = {0};
    if (!st) st = evt_module_run(m2, sym, b2, &plain, NULL, &d);
    if (st) fail("copy: run", d.text);
    else {
        const float *C1 = evt_buffers_data(b1, c1, NULL), *C2 = evt_buffers_data(b2, c2, NULL), *P2 = evt_buffers_data(b2, p2, NULL);
        int same = 1, back = 1;
        for (int r = 0; r < 3 * 32; r++) {
            same &= C1[r] == C2[r];
            back &= P2[r * 4] + P2[r * 4 + 1] + P2[r * 4 + 2] + P2[r * 4 + 3] == C1[r];
        }
        if (!stale) fail("copy: resident launch", "P's host copy changed: the premise (a device-only tensor) does not hold");
        else if (!same) fail("copy: device to device", "the second module's sums differ from the first's");
        else if (!back) fail("copy: host copy", "P's host copy did not come back with the next launch");
        else pass("copy: a resident launch's tensor read by another module, device to device");
    }
    evt_buffers_free(b1);
    evt_buffers_free(b2);
    evt_module_free(m1);
    evt_module_free(m2);
    evt_diag_free(&d);
    return nfail != 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) { fprintf(stderr, "usage: see the header of tests/gpu/gpucheck.c\n"); return 2; }
    (void)ends_with;
    int rc;
    if (!strcmp(argv[1], "build")) return cmd_build(argc, argv);
    else if (!strcmp(argv[1], "check")) rc = cmd_check(argc, argv);
    else if (!strcmp(argv[1], "many")) rc = cmd_many(argc, argv);
    else if (!strcmp(argv[1], "hang")) rc = cmd_hang(argc, argv);
    else if (!strcmp(argv[1], "workers")) rc = cmd_workers(argc, argv);
    else if (!strcmp(argv[1], "nodev")) rc = cmd_nodev(argc, argv);
    else if (!strcmp(argv[1], "copy")) rc = cmd_copy(argc, argv);
    else { fprintf(stderr, "unknown command %s\n", argv[1]); return 2; }
    printf("# %s: %d passed, %d failed\n", argv[1], npass, nfail);
    return rc;
}
