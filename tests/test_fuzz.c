/* test_fuzz.c — randomised programs against the sequential reference.
 *
 * Dense DAGs: chains of calls where consumer task c reads producer outputs
 * [c*fan, c*fan + fan); the events covering them are expressed with random
 * map styles — floor-division notifies (p / fan), `for` waits over fan
 * elements, barriers — on 1-D or 2-D grids, plus random extra waits on the
 * barrier events of earlier calls. Reading before the producer finished
 * reads poison, so any ordering bug shows as a bitwise mismatch.
 * MoE: given routings — uniform, all to one expert, half the experts empty.
 * Every program runs at random shapes inside its bounds under static rr,
 * static cp, dynamic (with and without early push) and unfused schedules
 * with 1 to 64 workers, some runs with chaos delays.
 * EVT_FUZZ_ITERS sets the number of programs per kind (default 12).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33) % n;
}

typedef struct gen { char *buf; size_t len, cap; } gen;
static void put(gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(gen *g, const char *fmt, ...)
{
    va_list ap;
    char tmp[1024];
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (g->len + n + 1 > g->cap) { g->cap = (g->len + n + 1) * 2; g->buf = realloc(g->buf, g->cap); }
    memcpy(g->buf + g->len, tmp, n + 1);
    g->len += n;
}

/* Sizes: call k has size(k) = n * mult[k] tasks; size(k-1) = size(k) * fan[k]. */
static char *gen_dense(int *ncalls_out)
{
    gen g = {0};
    int nc = 2 + rnd(4);
    int fan[8], mult[8];
    mult[nc - 1] = 1 + rnd(3);
    for (int k = nc - 1; k > 0; k--) { fan[k] = 1 + rnd(3); mult[k - 1] = mult[k] * fan[k]; }
    put(&g, "sym n = %u in [1, 12]\n", 1 + rnd(12));
    put(&g, "tensor z : f32[1] input = const(0.5)\n");
    for (int k = 0; k < nc; k++) put(&g, "tensor Y%d : f32[n * %d] %s\n", k, mult[k], k == nc - 1 ? "output" : "scratch");
    put(&g, "tensor M : i32[n * %d] output = zeros\n", mult[0]);
    int style[8], two_d[8];
    for (int k = 1; k < nc; k++) {
        style[k] = rnd(3); /* 0: div notify, 1: for-wait, 2: barrier */
        if (style[k] == 2) put(&g, "event E%d[1]\n", k);
        else put(&g, "event E%d[n * %d]\n", k, style[k] == 0 ? mult[k] : mult[k - 1]);
    }
    for (int k = 0; k < nc; k++) put(&g, "event B%d[1]\n", k);
    for (int k = 0; k < nc; k++) {
        two_d[k] = rnd(2);
        const char *x = k == 0 ? "z" : NULL;
        char xin[16];
        snprintf(xin, sizeof xin, "Y%d", k - 1);
        int f = k == 0 ? 0 : fan[k];
        unsigned ns = rnd(4) == 0 ? 20000 * rnd(5) : 0;
        const char *pol = rnd(3) == 0 ? " policy dynamic" : ""; /* hybrid: through the ready queue */
        if (two_d[k])
            put(&g, "call c%d = spin(%s, Y%d, %u, %d, 3, 1, 2) over (i, j) in [n, %d]%s {\n", k, x ? x : xin, k, ns, f, mult[k], pol);
        else
            put(&g, "call c%d = spin(%s, Y%d, %u, %d, 3, 1, 2) over (i) in [n * %d]%s {\n", k, x ? x : xin, k, ns, f, mult[k], pol);
        char lin[64];
        if (two_d[k]) snprintf(lin, sizeof lin, "i * %d + j", mult[k]);
        else snprintf(lin, sizeof lin, "i");
        if (k > 0) { /* waits on the producer c(k-1) */
            if (style[k] == 0) put(&g, "    wait E%d[%s]\n", k, lin);
            else if (style[k] == 1) put(&g, "    wait E%d[(%s) * %d + f] for f in [%d]\n", k, lin, fan[k], fan[k]);
            else put(&g, "    wait E%d[0]\n", k);
            if (k >= 2 && rnd(3) == 0) put(&g, "    wait B%u[0]\n", rnd(k - 1));
        }
        if (k + 1 < nc) { /* notifies for the consumer c(k+1) */
            int s = style[k + 1];
            if (s == 0) put(&g, "    notify E%d[(%s) / %d]\n", k + 1, lin, fan[k + 1]);
            else if (s == 1) put(&g, "    notify E%d[%s]\n", k + 1, lin);
            else put(&g, "    notify E%d[0]\n", k + 1);
        }
        put(&g, "    notify B%d[0]\n}\n", k);
    }
    /* every task of c0 runs exactly once */
    put(&g, "call once = mark(M) over (i) in [n * %d] {\n    wait B0[0]\n}\n", mult[0]);
    *ncalls_out = nc + 1;
    return g.buf;
}

static char *gen_moe(int routing)
{
    gen g = {0};
    unsigned E = 1 + rnd(6), K = 1 + rnd(3);
    put(&g, "sym T = %u in [1, 24]\n", 1 + rnd(24));
    put(&g, "sym NE = %u in [%u, %u]\n", E, E, E);
    put(&g, "sym K = %u in [%u, %u]\n", K, K, K);
    put(&g, "tensor x : f32[T, 8] input = random(seed=%u)\n", rnd(1000));
    put(&g, "tensor w : f32[NE, 8, 4] weight = random(seed=%u)\n", rnd(1000));
    put(&g, "tensor topw : f32[T, K] input = random(seed=%u, lo=0, hi=1)\n", rnd(1000));
    if (routing == 0) put(&g, "tensor topk : i32[T, K] input = random(seed=%u, lo=0, hi=%u)\n", rnd(1000), E);
    else if (routing == 1) put(&g, "tensor topk : i32[T, K] input = const(%u)\n", rnd(E));
    else put(&g, "tensor topk : i32[T, K] input = random(seed=%u, lo=0, hi=%u)\n", rnd(1000), (E + 1) / 2);
    const char *pol[3];
    for (int k = 0; k < 3; k++) pol[k] = rnd(2) ? " policy dynamic" : "";
    put(&g, "tensor indptr : i32[NE + 1] scratch\n"
            "tensor pos : i32[T, K] scratch\n"
            "tensor row_tok : i32[T * K] scratch\n"
            "tensor xg : f32[T * K, 8] scratch\n"
            "tensor yg : f32[T * K, 4] scratch\n"
            "tensor y : f32[T, 4] output\n"
            "event I[1]\nevent G[NE]\nevent D[T]\n"
            "call index = moe_index(topk, indptr, pos, row_tok) over (u) in [1] {\n    notify I[0]\n}\n");
    put(&g, "call group = moe_group(x, pos, xg) over (t, k) in [T, K]%s {\n    wait I[0]\n    notify G[topk[t, k]]\n}\n"
            "call expert = moe_expert(xg, w, indptr, yg) over (r) in [T * K]%s {\n"
            "    wait I[0]\n    wait G trigger indptr\n    notify D[row_tok[r]]\n}\n"
            "call combine = moe_combine(yg, pos, topw, y) over (t) in [T]%s {\n    wait D[t]\n}\n", pol[0], pol[1], pol[2]);
    return g.buf;
}

static int iters(void)
{
    const char *e = getenv("EVT_FUZZ_ITERS");
    int n = e ? atoi(e) : 12;
    return n > 0 ? n : 12;
}

static void run_all_schedules(evt_module *m, const char *sym, int lo, int hi, const char *prog)
{
    for (int r = 0; r < 3; r++) {
        char set[32];
        snprintf(set, sizeof set, "%s=%u", sym, lo + rnd(hi - lo + 1));
        const char *sets[] = {set};
        for (int s = 0; s < 7; s++) {
            evt_run_opts o = {.workers = 1 + rnd(64), .timeout_s = 30};
            o.sched = s == 2 ? EVT_SCHED_DYNAMIC : s == 3 ? EVT_SCHED_UNFUSED : s == 4 ? EVT_SCHED_KBK
                    : s >= 5 ? EVT_SCHED_HYBRID : EVT_SCHED_STATIC;
            o.policy = s == 1 || s == 6 ? EVT_QUEUE_CP : EVT_QUEUE_RR;
            if (s >= 5 && o.workers < 2) o.workers = 2; /* static and dynamic workers */
            o.early_push = s == 2 && rnd(2);
            o.pop_batch = 1 + rnd(4);
            if (rnd(4) == 0) o.chaos = 1 + rnd(1000), o.chaos_max_ns = 20000;
            char *msg;
            evt_status st = h_run_check(m, 1, sets, &o, rnd(1000), &msg);
            if (st) fail_msg("%s, sched %d, %d workers: %s: %s\nprogram:\n%s", set, s, o.workers, evt_status_name(st), msg, prog);
            free(msg);
        }
    }
}

static void fuzz_dense(void **state)
{
    (void)state;
    rng_state = 12345;
    for (int it = 0; it < iters(); it++) {
        int nc;
        char *prog = gen_dense(&nc);
        char *msg;
        evt_module *m = h_try_build(prog, NULL, &msg);
        if (!m) fail_msg("generated program rejected: %s\n%s", msg, prog);
        free(msg);
        run_all_schedules(m, "n", 1, 12, prog);
        evt_module_free(m);
        free(prog);
    }
}

static void fuzz_moe(void **state)
{
    (void)state;
    rng_state = 777;
    for (int it = 0; it < iters(); it++) {
        char *prog = gen_moe(it % 3);
        char *msg;
        evt_module *m = h_try_build(prog, NULL, &msg);
        if (!m) fail_msg("generated program rejected: %s\n%s", msg, prog);
        free(msg);
        run_all_schedules(m, "T", 1, 24, prog);
        evt_module_free(m);
        free(prog);
    }
}

/* A routing entry outside [0, NE) is a run-time error naming the task. */
static void moe_bad_routing(void **state)
{
    (void)state;
    rng_state = 5;
    char *prog = gen_moe(0);
    char *p = strstr(strstr(prog, "tensor topk"), "hi=");
    assert_non_null(p);
    p[3] = '9'; /* routing values up to 9 with at most 6 experts */
    char *nl = strchr(p, ')');
    memmove(p + 4, nl, strlen(nl) + 1);
    evt_module *m = h_build(prog);
    const char *sets[] = {"T=24"};
    for (int s = 0; s < 2; s++) {
        evt_run_opts o = {.sched = s ? EVT_SCHED_DYNAMIC : EVT_SCHED_STATIC, .workers = 4, .timeout_s = 5};
        char *msg;
        evt_status st = h_run_check(m, 1, sets, &o, 1, &msg);
        assert_int_equal(st, EVT_ERR_RUNTIME);
        if (!strstr(msg, "bad index: task group(")) fail_msg("unexpected message: %s", msg);
        free(msg);
    }
    evt_module_free(m);
    free(prog);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fuzz_dense),
        cmocka_unit_test(fuzz_moe),
        cmocka_unit_test(moe_bad_routing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
