/* schedbench.c — scheduling benchmarks of the GPU megakernel (bench/sched.sh).
 * Uses the library API: evt_module_time times back-to-back launches with CUDA
 * events (no copies between launches). Prints markdown table rows.
 *   schedbench [examples_dir]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "evt/front.h"
#include "evt/runtime.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *P_CHAIN =
    "sym n = 64 in [1, 65536]\n"
    "tensor X : f32[n] output\n"
    "event S[n + 1]\n"
    "call step = chain_step(X, 1) over (i) in [n] {\n    wait S[i]\n    notify S[i + 1]\n}\n";
static const char *P_INDEP =
    "sym n = 64 in [1, 1048576]\nsym ns = 0 in [0, 1000000]\n"
    "tensor X : f32[1] input = const(0)\n"
    "tensor Y : f32[n] output\n"
    "call work = spin(X, Y, ns, 0, 1, 0, 1) over (i) in [n] {\n}\n";

static void die(const char *what, evt_diag *d)
{
    fprintf(stderr, "schedbench: %s: %s\n", what, d->text ? d->text : "?");
    exit(1);
}

static evt_module *build_text(const char *text, evt_diag *d)
{
    evt_graph *g = evt_parse(text, strlen(text), d);
    if (!g) die("parse", d);
    evt_module *m;
    if (evt_module_build(g, EVT_BACKEND_CUDA, NULL, 1, &m, d)) die("build", d);
    return m;
}
static evt_module *build_file(const char *path, evt_diag *d)
{
    evt_graph *g = evt_parse_file(path, d);
    if (!g) die(path, d);
    evt_module *m;
    if (evt_module_build(g, EVT_BACKEND_CUDA, NULL, 1, &m, d)) die("build", d);
    return m;
}

/* median of 5 evt_module_time measurements, ms per launch */
/* dynamic-schedule knobs for the next timeit() calls */
static int g_pop_batch = 1, g_early_push = 0;

static double timeit(evt_module *m, int nsets, const char **sets, evt_sched_kind sched, int workers, int iters, evt_diag *d)
{
    int64_t sym[64];
    if (evt_shape_parse(evt_module_graph(m), nsets, sets, sym, d)) die("shape", d);
    evt_buffers *b;
    if (evt_buffers_new(evt_module_graph(m), sym, 1, 0xff, &b, d)) die("buffers", d);
    evt_run_opts o = {0};
    o.sched = sched;
    o.workers = workers;
    o.pop_batch = g_pop_batch;
    o.early_push = g_early_push;
    o.timeout_s = 20;
    double v[5];
    for (int k = 0; k < 5; k++)
        if (evt_module_time(m, sym, b, &o, iters, &v[k], d)) die("time", d);
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            if (v[j] < v[i]) { double t = v[i]; v[i] = v[j]; v[j] = t; }
    evt_buffers_free(b);
    return v[2];
}

int main(int argc, char **argv)
{
    const char *ex = argc > 1 ? argv[1] : "examples";
    evt_diag d;
    evt_diag_init(&d, "schedbench");
    char dev[160];
    int sms = 0;
    if (evt_cuda_device_info(dev, sizeof dev, &sms, &d)) die("device", &d);
    printf("device: %s\n\n", dev);
    const char *ST = "static", *DY = "dynamic";
    (void)ST; (void)DY;

    /* ---- module load and first launch ---- */
    {
        char path[256];
        snprintf(path, sizeof path, "%s/split_rowsum.evt", ex);
        double t0 = now_ms();
        evt_module *m = build_file(path, &d);
        double tb = now_ms() - t0;
        const char *art = "/tmp/schedbench_rowsum.evtm";
        if (evt_module_save(m, art, &d)) die("save", &d);
        evt_module_free(m);
        t0 = now_ms();
        if (evt_module_load(art, &m, &d)) die("load", &d);
        double tl = now_ms() - t0;
        int64_t sym[64];
        const char *set[] = {"n=64"};
        evt_shape_parse(evt_module_graph(m), 1, set, sym, &d);
        evt_buffers *b;
        evt_buffers_new(evt_module_graph(m), sym, 1, 0xff, &b, &d);
        evt_run_stats st;
        t0 = now_ms();
        if (evt_module_run(m, sym, b, NULL, &st, &d)) die("run", &d);
        double t1 = now_ms() - t0;
        t0 = now_ms();
        evt_run_stats st2;
        if (evt_module_run(m, sym, b, NULL, &st2, &d)) die("run", &d);
        double t2 = now_ms() - t0;
        printf("### Module load and first launch (split_rowsum, n=64, static)\n\n| what | ms |\n|---|---|\n");
        printf("| build (emit + nvcc, fused + unfused variants) | %.1f |\n", tb);
        printf("| evt_module_load of the artifact (passes re-run + cuModuleLoadData x2, no nvcc) | %.2f |\n", tl);
        printf("| first evt_module_run (bind %.3f ms + device alloc + uploads + launch + downloads) | %.2f |\n", st.bind_ms, t1);
        printf("| second evt_module_run (bound shape cached; uploads/downloads of 1 MB tensors included) | %.2f |\n\n", t2);
        evt_buffers_free(b);
        evt_module_free(m);
    }

    /* ---- dependency handoff: chain ---- */
    {
        evt_module *m = build_text(P_CHAIN, &d);
        const char *s1[] = {"n=1"}, *sN[] = {"n=4096"};
        printf("### Dependency handoff: chain of 4096 dependent tiny tasks (chain_step), %d workers\n\n", sms);
        printf("| schedule | launch n=1 (us) | launch n=4096 (us) | per edge (us) |\n|---|---|---|---|\n");
        for (int s = 0; s < 2; s++) {
            double a = timeit(m, 1, s1, (evt_sched_kind)s, 0, 50, &d);
            double b = timeit(m, 1, sN, (evt_sched_kind)s, 0, 5, &d);
            printf("| %s | %.2f | %.1f | %.3f |\n", s ? "dynamic" : "static", a * 1e3, b * 1e3, (b - a) * 1e3 / 4095);
            if (s == 1) {
                g_early_push = 1;
                a = timeit(m, 1, s1, EVT_SCHED_DYNAMIC, 0, 50, &d);
                b = timeit(m, 1, sN, EVT_SCHED_DYNAMIC, 0, 5, &d);
                g_early_push = 0;
                printf("| dynamic, early push | %.2f | %.1f | %.3f |\n", a * 1e3, b * 1e3, (b - a) * 1e3 / 4095);
            }
        }
        printf("\n");
        evt_module_free(m);
    }

    /* ---- ready-queue throughput ---- */
    {
        evt_module *m = build_text(P_INDEP, &d);
        printf("### Ready-queue throughput: n independent spin tasks, %d workers (one per SM)\n\n", sms);
        printf("| tasks | task ns | schedule | launch (us) | tasks/s | per task per worker (us) | overhead per task (us) |\n|---|---|---|---|---|---|---|\n");
        const char *sz[] = {"n=132000", "n=132000"};
        const char *nsv[] = {"ns=0", "ns=2000"};
        for (int k = 0; k < 2; k++)
            for (int s = 0; s < 2; s++) {
                const char *sets[] = {sz[k], nsv[k]};
                double t = timeit(m, 2, sets, (evt_sched_kind)s, 0, 3, &d);
                double n = 132000, tn = k ? 2.0 : 0.0;
                double per = t * 1e3 * sms / n;
                printf("| %.0f | %s | %s | %.1f | %.3g | %.3f | %.3f |\n", n, nsv[k] + 3, s ? "dynamic" : "static", t * 1e3,
                       n / (t / 1e3), per, per - tn);
                if (s == 1)
                    for (int bsz = 4; bsz <= 16; bsz *= 2) { /* tickets per atomic */
                        g_pop_batch = bsz;
                        t = timeit(m, 2, sets, EVT_SCHED_DYNAMIC, 0, 3, &d);
                        g_pop_batch = 1;
                        per = t * 1e3 * sms / n;
                        printf("| %.0f | %s | dynamic, pop batch %d | %.1f | %.3g | %.3f | %.3f |\n", n, nsv[k] + 3, bsz, t * 1e3,
                               n / (t / 1e3), per, per - tn);
                    }
            }
        printf("\n");
        evt_module_free(m);
    }

    /* ---- split row sum ---- */
    {
        char path[256];
        snprintf(path, sizeof path, "%s/split_rowsum.evt", ex);
        evt_module *m = build_file(path, &d);
        printf("### Split row sum, megakernel (%d workers) vs the same two tiles kernel by kernel and in a CUDA graph, us per launch\n\n"
               "| n | static | dynamic | unfused | static, 4 workers/SM | kbk | graph |\n|---|---|---|---|---|---|---|\n", sms);
        for (int n = 1; n <= 16384; n *= 4) {
            char s[32];
            snprintf(s, sizeof s, "n=%d", n);
            const char *sets[] = {s};
            double t[6];
            for (int k = 0; k < 3; k++) t[k] = timeit(m, 1, sets, (evt_sched_kind)k, 0, n > 1000 ? 20 : 100, &d);
            t[3] = timeit(m, 1, sets, EVT_SCHED_STATIC, 4 * sms, n > 1000 ? 20 : 100, &d);
            t[4] = timeit(m, 1, sets, EVT_SCHED_KBK, 0, n > 1000 ? 20 : 100, &d);
            t[5] = timeit(m, 1, sets, EVT_SCHED_GRAPH, 0, n > 1000 ? 20 : 100, &d);
            printf("| %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", n, t[0] * 1e3, t[1] * 1e3, t[2] * 1e3, t[3] * 1e3,
                   t[4] * 1e3, t[5] * 1e3);
        }
        printf("\n");
        evt_module_free(m);
    }

    /* ---- imbalance ---- */
    {
        char path[256];
        snprintf(path, sizeof path, "%s/imbalance.evt", ex);
        evt_module *m = build_file(path, &d);
        int n = sms * 16;
        char s[32];
        snprintf(s, sizeof s, "n=%d", n);
        const char *sets[] = {s};
        double ts = timeit(m, 1, sets, EVT_SCHED_STATIC, 0, 3, &d);
        double td = timeit(m, 1, sets, EVT_SCHED_DYNAMIC, 0, 3, &d);
        /* work: 20 us per task, every 8th x16; then n/8 tally tasks (~0) */
        double total_us = n * (7.0 / 8 * 20 + 1.0 / 8 * 320);
        double ideal = total_us / sms;
        if (ideal < 320) ideal = 320;
        printf("### Imbalanced tasks (examples/imbalance.evt, n=%d: 20 us tasks, every 8th 320 us), %d workers\n\n", n, sms);
        printf("| schedule | makespan (us) | vs ideal |\n|---|---|---|\n");
        printf("| ideal (total work / workers) | %.0f | 1.00 |\n", ideal);
        printf("| static (rr) | %.0f | %.3f |\n", ts * 1e3, ts * 1e3 / ideal);
        printf("| dynamic | %.0f | %.3f |\n", td * 1e3, td * 1e3 / ideal);
        g_early_push = 1;
        td = timeit(m, 1, sets, EVT_SCHED_DYNAMIC, 0, 3, &d);
        printf("| dynamic, early push | %.0f | %.3f |\n", td * 1e3, td * 1e3 / ideal);
        g_early_push = 0;
        g_pop_batch = 2;
        td = timeit(m, 1, sets, EVT_SCHED_DYNAMIC, 0, 3, &d);
        printf("| dynamic, pop batch 2 | %.0f | %.3f |\n\n", td * 1e3, td * 1e3 / ideal);
        g_pop_batch = 1;
        evt_module_free(m);
    }
    printf("nvcc runs in this process: %lld (all during builds)\n", (long long)evt_cuda_compile_count());
    evt_diag_free(&d);
    return 0;
}
