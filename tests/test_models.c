/* test_models.c — the LLM tiles against independent double-precision
 * formulas (the megakernel and the reference share the C tiles, so these
 * checks are what validates the math), the Qwen3 builder and config loader,
 * and decode steps of a tiny model under every schedule, bitwise against
 * the sequential reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "pass/plan.h"
#include "runtime/bind.h"
#include "evt/models.h"
#include "tiles/tiles_cpu.h"
#include "tiles/rope.h"
#include "tiles/attn_requests.h"
#include "runtime/half.h"

static uint32_t seed = 1;
static float frand(void) { seed = seed * 1664525u + 1013904223u; return (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f; }
static uint16_t bf(float x) { return evt_f32_to_bf16(x); }
static double fb(uint16_t h) { return evt_bf16_to_f32(h); }

static evt_tensor_ref ref(void *p, int rank, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    evt_tensor_ref r = {p, {d0, d1, d2, d3}, rank, 0, -1};
    return r;
}

/* rel err <= 2^-7 (bf16 output rounding) plus f32 accumulation slack */
static void near(double got, double want, double scale, const char *what)
{
    if (fabs(got - want) > 1e-2 * scale + 1e-6) fail_msg("%s: got %.6g, want %.6g", what, got, want);
}

static void linear_and_mlp(void **state)
{
    (void)state;
    enum { B = 3, K = 40, N = 24 };
    uint16_t x[B * K], W[N * K], Wu[N * K], r[B * N], y[B * N];
    for (int i = 0; i < B * K; i++) x[i] = bf(frand());
    for (int i = 0; i < N * K; i++) { W[i] = bf(frand()); Wu[i] = bf(frand()); }
    for (int i = 0; i < B * N; i++) r[i] = bf(frand());
    evt_task_args a = {0};
    a.ncoord = 1;
    a.t[0] = ref(x, 2, B, K, 1, 1);
    a.t[1] = ref(W, 2, N, K, 1, 1);
    a.t[2] = ref(y, 2, B, N, 1, 1);
    a.iarg[0] = 5; /* T: 5 ragged tiles of 4 or 5 rows cover all 24 */
    for (int i = 0; i < B * N; i++) y[i] = 0xffff; /* NaN: a row no tile writes fails */
    for (int nb = 0; nb < 5; nb++) { a.coord[0] = nb; evt_tile_linear(&a); }
    for (int b = 0; b < B; b++)
        for (int n = 0; n < N; n++) {
            double s = 0, mag = 0;
            for (int k = 0; k < K; k++) { s += fb(x[b * K + k]) * fb(W[n * K + k]); mag += fabs(fb(x[b * K + k]) * fb(W[n * K + k])); }
            near(fb(y[b * N + n]), s, mag, "linear");
        }
    a.t[2] = ref(r, 2, B, N, 1, 1);
    a.t[3] = ref(y, 2, B, N, 1, 1);
    for (int nb = 0; nb < 5; nb++) { a.coord[0] = nb; evt_tile_linear_res(&a); }
    for (int n = 0; n < N; n++) {
        double s = fb(r[N + n]), mag = fabs(s);
        for (int k = 0; k < K; k++) { s += fb(x[K + k]) * fb(W[n * K + k]); mag += fabs(fb(x[K + k]) * fb(W[n * K + k])); }
        near(fb(y[N + n]), s, mag, "linear_res");
    }
    /* mlp_up: silu(x Wg^T) * (x Wu^T) */
    a.t[2] = ref(Wu, 2, N, K, 1, 1);
    a.t[3] = ref(y, 2, B, N, 1, 1);
    for (int nb = 0; nb < 5; nb++) { a.coord[0] = nb; evt_tile_mlp_up(&a); }
    for (int n = 0; n < N; n++) {
        double g = 0, u = 0;
        for (int k = 0; k < K; k++) { g += fb(x[k]) * fb(W[n * K + k]); u += fb(x[k]) * fb(Wu[n * K + k]); }
        near(fb(y[n]), g / (1 + exp(-g)) * u, fabs(g * u) + 1, "mlp_up");
    }
}

static void norm_and_rope(void **state)
{
    (void)state;
    enum { H = 32, HD = 16, NH = 2, NKV = 1 };
    uint16_t x[2 * H], w[H], y[2 * H];
    for (int i = 0; i < 2 * H; i++) x[i] = bf(frand() * 3);
    for (int i = 0; i < H; i++) w[i] = bf(1 + frand() / 4);
    evt_task_args a = {0};
    a.ncoord = 1;
    a.coord[0] = 1;
    a.t[0] = ref(x, 2, 2, H, 1, 1);
    a.t[1] = ref(w, 1, H, 1, 1, 1);
    a.t[2] = ref(y, 2, 2, H, 1, 1);
    a.iarg[0] = 1000000; /* eps 1e-6 */
    evt_tile_rmsnorm(&a);
    double ss = 0;
    for (int i = 0; i < H; i++) ss += fb(x[H + i]) * fb(x[H + i]);
    double inv = 1 / sqrt(ss / H + 1e-6);
    for (int i = 0; i < H; i++) near(fb(y[H + i]), fb(x[H + i]) * inv * fb(w[i]), fabs(fb(x[H + i]) * inv * fb(w[i])) + 0.01, "rmsnorm");

    /* q_rope: per-head norm, then rotate-half RoPE; at position 0 it is the
       norm alone, and RoPE preserves the norm of every (i, i + hd/2) pair */
    uint16_t qkv[(NH + 2 * NKV) * HD], qn[HD], q[NH * HD];
    int32_t pos[1] = {0};
    for (int i = 0; i < (NH + 2 * NKV) * HD; i++) qkv[i] = bf(frand());
    for (int i = 0; i < HD; i++) qn[i] = bf(1);
    evt_task_args r = {0};
    r.ncoord = 2;
    r.coord[0] = 0;
    r.coord[1] = 1;
    r.t[0] = ref(qkv, 2, 1, (NH + 2 * NKV) * HD, 1, 1);
    r.t[1] = ref(qn, 1, HD, 1, 1, 1);
    r.t[2] = ref(pos, 1, 1, 1, 1, 1);
    r.t[3] = ref(q, 3, 1, NH, HD, 1);
    r.iarg[0] = 1000000;
    r.iarg[1] = 1000000;
    evt_tile_q_rope(&r);
    ss = 0;
    for (int i = 0; i < HD; i++) ss += fb(qkv[HD + i]) * fb(qkv[HD + i]);
    inv = 1 / sqrt(ss / HD + 1e-6);
    for (int i = 0; i < HD; i++) near(fb(q[HD + i]), fb(qkv[HD + i]) * inv, 1, "rope at position 0");
    pos[0] = 37;
    evt_tile_q_rope(&r);
    for (int i = 0; i < HD / 2; i++) {
        double a0 = fb(qkv[HD + i]) * inv, a1 = fb(qkv[HD + i + HD / 2]) * inv;
        double th = 37 * pow(1e6, -2.0 * i / HD);
        near(fb(q[HD + i]), a0 * cos(th) - a1 * sin(th), 1, "rope first half");
        near(fb(q[HD + i + HD / 2]), a1 * cos(th) + a0 * sin(th), 1, "rope second half");
    }
}

/* split-KV attention + merge == softmax(q k / sqrt(d)) v over 0..pos */
static void attention(void **state)
{
    (void)state;
    enum { NH = 4, NKV = 2, HD = 8, PS = 4, MP = 5, L = 13 };
    static uint16_t q[NH * HD], kc[MP * PS * NKV * HD], vc[MP * PS * NKV * HD], o[NH * HD];
    int32_t bt[MP] = {3, 0, 4, 1, 2}, pos[1] = {L - 1};
    for (int i = 0; i < NH * HD; i++) q[i] = bf(frand());
    for (int i = 0; i < MP * PS * NKV * HD; i++) { kc[i] = bf(frand()); vc[i] = bf(frand()); }
    for (int S = 1; S <= 5; S++) {
        float *part = calloc(NH * S * (HD + 2), sizeof(float));
        evt_task_args a = {0};
        a.ncoord = 3;
        a.t[0] = ref(q, 3, 1, NH, HD, 1);
        a.t[1] = ref(kc, 4, MP, PS, NKV, HD);
        a.t[2] = ref(vc, 4, MP, PS, NKV, HD);
        a.t[3] = ref(bt, 2, 1, MP, 1, 1);
        a.t[4] = ref(pos, 1, 1, 1, 1, 1);
        a.t[5] = ref(part, 4, 1, NH, S, HD + 2);
        for (int h = 0; h < NH; h++)
            for (int s = 0; s < S; s++) { a.coord[1] = h; a.coord[2] = s; evt_tile_attn_split(&a); }
        evt_task_args m = {0};
        m.ncoord = 2;
        m.t[0] = ref(part, 4, 1, NH, S, HD + 2);
        m.t[1] = ref(o, 2, 1, NH * HD, 1, 1);
        for (int h = 0; h < NH; h++) { m.coord[1] = h; evt_tile_attn_merge(&m); }
        for (int h = 0; h < NH; h++) {
            int g = h / (NH / NKV);
            double sc[L], mx = -1e300, z = 0;
            for (int t = 0; t < L; t++) {
                int off = ((bt[t / PS] * PS + t % PS) * NKV + g) * HD;
                double d = 0;
                for (int i = 0; i < HD; i++) d += fb(q[h * HD + i]) * fb(kc[off + i]);
                sc[t] = d / sqrt(HD);
                if (sc[t] > mx) mx = sc[t];
            }
            for (int t = 0; t < L; t++) z += exp(sc[t] - mx);
            for (int i = 0; i < HD; i++) {
                double acc = 0;
                for (int t = 0; t < L; t++) {
                    int off = ((bt[t / PS] * PS + t % PS) * NKV + g) * HD;
                    acc += exp(sc[t] - mx) / z * fb(vc[off + i]);
                }
                near(fb(o[h * HD + i]), acc, 1, "attention");
            }
        }
        /* the grouped merge (one task per kv group) writes the same bits */
        static uint16_t og[NH * HD];
        memset(og, 0xff, sizeof og);
        m.t[1] = ref(og, 2, 1, NH * HD, 1, 1);
        m.iarg[0] = NH / NKV;
        for (int g = 0; g < NKV; g++) { m.coord[1] = g; evt_tile_attn_merge_group(&m); }
        assert_memory_equal(og, o, sizeof o);
        free(part);
    }
}

/* attn_rope_split's arguments over these buffers (request 0; eps 1e-6, no
 * merge_last; rope: rows x width of the angle table) */
static evt_task_args rope_split_args(uint16_t *qkv, int N, uint16_t *wq, uint16_t *wk, int32_t *pos, int32_t *bt, int MP,
                                     uint16_t *kc, uint16_t *vc, int PS, int NKV, int HD, float *part, int NH, int S,
                                     uint16_t *o, float *rope, int rows, int width)
{
    evt_task_args f = {0};
    f.ncoord = 3;
    f.t[0] = ref(qkv, 2, 1, N, 1, 1);
    f.t[1] = ref(wq, 1, HD, 1, 1, 1);
    f.t[2] = ref(wk, 1, HD, 1, 1, 1);
    f.t[3] = ref(pos, 1, 1, 1, 1, 1);
    f.t[4] = ref(bt, 2, 1, MP, 1, 1);
    f.t[5] = ref(kc, 4, MP, PS, NKV, HD);
    f.t[6] = ref(vc, 4, MP, PS, NKV, HD);
    f.t[7] = ref(part, 4, 1, NH, S, HD + 2);
    f.t[8] = ref(o, 2, 1, NH * HD, 1, 1);
    f.t[10] = ref(rope, 2, rows, width, 1, 1);
    f.iarg[0] = 1000000;
    return f;
}

/* The prefill's grouped tiles give the per-head ones' values bitwise:
 * qk_rope_append over (b, g) == q_rope over (b, h) + k_rope_append over
 * (b, g) (q, and the cache appended at pos[b]), and attn_split_group over
 * (b, g, s) == attn_split over (b, h, s), for 1, 2 and 4 q heads per kv head
 * and 1, 3 and 20 splits (more than the positions), two rows at different
 * positions of one request's pages; qk_rope_append also over a run of both
 * rows in one task. */
static void grouped_prefill_tiles(void **state)
{
    (void)state;
    enum { HD = 8, PS = 4, MP = 4, NKV = 2, B = 2 };
    static const int groups[] = {1, 2, 4}, splits[] = {1, 3, 20};
    for (int gi = 0; gi < 3; gi++)
        for (int si = 0; si < 3; si++) {
            int G = groups[gi], S = splits[si], NH = G * NKV, N = (NH + 2 * NKV) * HD;
            static uint16_t qkv[B * (8 + 4) * HD], wq[HD], wk[HD], q[2][B * 8 * HD];
            static uint16_t kc[2][MP * PS * NKV * HD], vc[2][MP * PS * NKV * HD];
            static float part[2][B * 8 * 20 * (HD + 2)];
            int32_t bt[B * MP] = {2, 0, 3, 1, 2, 0, 3, 1}, pos[B] = {5, 10};
            for (int i = 0; i < B * N; i++) qkv[i] = bf(frand());
            for (int i = 0; i < HD; i++) { wq[i] = bf(1 + frand() / 4); wk[i] = bf(1 + frand() / 4); }
            static uint16_t q3[B * 8 * HD], kc3[MP * PS * NKV * HD], vc3[MP * PS * NKV * HD];
            for (int i = 0; i < MP * PS * NKV * HD; i++) {
                kc[0][i] = kc[1][i] = kc3[i] = bf(frand());
                vc[0][i] = vc[1][i] = vc3[i] = bf(frand());
            }
            memset(q, 0xff, sizeof q);
            memset(part, 0xff, sizeof part);
            /* per head */
            evt_task_args r = {0}, k = {0}, a = {0};
            r.ncoord = k.ncoord = 2;
            a.ncoord = 3;
            r.t[0] = k.t[0] = ref(qkv, 2, B, N, 1, 1);
            r.t[1] = ref(wq, 1, HD, 1, 1, 1);
            r.t[2] = k.t[2] = ref(pos, 1, B, 1, 1, 1);
            r.t[3] = ref(q[0], 3, B, NH, HD, 1);
            r.iarg[0] = r.iarg[1] = 1000000;
            k.t[1] = ref(wk, 1, HD, 1, 1, 1);
            k.t[3] = ref(bt, 2, B, MP, 1, 1);
            k.t[4] = ref(kc[0], 4, MP, PS, NKV, HD);
            k.t[5] = ref(vc[0], 4, MP, PS, NKV, HD);
            k.iarg[0] = NH;
            k.iarg[1] = k.iarg[2] = 1000000;
            for (int b = 0; b < B; b++) {
                r.coord[0] = k.coord[0] = b;
                for (int h = 0; h < NH; h++) { r.coord[1] = h; evt_tile_q_rope(&r); }
                for (int g = 0; g < NKV; g++) { k.coord[1] = g; evt_tile_k_rope_append(&k); }
            }
            a.t[0] = ref(q[0], 3, B, NH, HD, 1);
            a.t[1] = ref(kc[0], 4, MP, PS, NKV, HD);
            a.t[2] = ref(vc[0], 4, MP, PS, NKV, HD);
            a.t[3] = ref(bt, 2, B, MP, 1, 1);
            a.t[4] = ref(pos, 1, B, 1, 1, 1);
            a.t[5] = ref(part[0], 4, B, NH, S, HD + 2);
            for (int b = 0; b < B; b++)
                for (int h = 0; h < NH; h++)
                    for (int sp = 0; sp < S; sp++) { a.coord[0] = b; a.coord[1] = h; a.coord[2] = sp; evt_tile_attn_split(&a); }
            /* grouped */
            evt_task_args gq = {0};
            gq.ncoord = 2;
            gq.t[0] = ref(qkv, 2, B, N, 1, 1);
            gq.t[1] = ref(wq, 1, HD, 1, 1, 1);
            gq.t[2] = ref(wk, 1, HD, 1, 1, 1);
            gq.t[3] = ref(pos, 1, B, 1, 1, 1);
            gq.t[4] = ref(bt, 2, B, MP, 1, 1);
            gq.t[5] = ref(kc[1], 4, MP, PS, NKV, HD);
            gq.t[6] = ref(vc[1], 4, MP, PS, NKV, HD);
            gq.t[7] = ref(q[1], 3, B, NH, HD, 1);
            gq.iarg[0] = gq.iarg[1] = 1000000;
            for (int b = 0; b < B; b++)
                for (int g = 0; g < NKV; g++) { gq.coord[0] = b; gq.coord[1] = g; evt_tile_qk_rope_append(&gq); }
            /* a run of both rows in one task (the grid's first extent 1: attn_requests.h), the same values */
            memset(q3, 0xff, sizeof q3);
            evt_task_args run = gq;
            run.t[5] = ref(kc3, 4, MP, PS, NKV, HD);
            run.t[6] = ref(vc3, 4, MP, PS, NKV, HD);
            run.t[7] = ref(q3, 3, B, NH, HD, 1);
            run.grid[0] = 1;
            run.grid[1] = NKV;
            run.coord[0] = 0;
            for (int g = 0; g < NKV; g++) { run.coord[1] = g; evt_tile_qk_rope_append(&run); }
            if (memcmp(q3, q[1], (size_t)B * NH * HD * sizeof(uint16_t)) || memcmp(kc3, kc[1], sizeof kc3) || memcmp(vc3, vc[1], sizeof vc3))
                fail_msg("G=%d: qk_rope_append over a run of rows differs from a task a row", G);
            a.t[0] = ref(q[1], 3, B, NH, HD, 1);
            a.t[1] = ref(kc[1], 4, MP, PS, NKV, HD);
            a.t[2] = ref(vc[1], 4, MP, PS, NKV, HD);
            a.t[5] = ref(part[1], 4, B, NH, S, HD + 2);
            for (int b = 0; b < B; b++)
                for (int g = 0; g < NKV; g++)
                    for (int sp = 0; sp < S; sp++) { a.coord[0] = b; a.coord[1] = g; a.coord[2] = sp; evt_tile_attn_split_group(&a); }
            if (memcmp(q[0], q[1], (size_t)B * NH * HD * sizeof(uint16_t))) fail_msg("G=%d: qk_rope_append's q differs from q_rope's", G);
            if (memcmp(kc[0], kc[1], sizeof kc[0]) || memcmp(vc[0], vc[1], sizeof vc[0]))
                fail_msg("G=%d: qk_rope_append's cache differs from k_rope_append's", G);
            if (memcmp(part[0], part[1], (size_t)B * NH * S * (HD + 2) * sizeof(float)))
                fail_msg("G=%d S=%d: attn_split_group's partials differ from attn_split's", G, S);
        }
}

/* attn_rope_split over (b, g, s) == q_rope + k_rope_append + attn_split over
 * (b, h, s), bitwise (partials and the appended cache: the fused tile's
 * angles come from the rope table, the separate tiles compute them), for 1, 2 and 4 q
 * heads per kv head and split counts from 1 to more splits than positions;
 * with one split it also writes o, bitwise attn_merge_group's, and so does
 * the last task of each merge group with merge_last (several splits, merge
 * groups of one kv head or of the whole row), leaving the counts at 0 */
static void fused_attention(void **state)
{
    (void)state;
    enum { HD = 8, PS = 4, MP = 4, NKV = 2 };
    static const int groups[] = {1, 2, 4}, splits[] = {1, 3, 7, 20};
    for (int gi = 0; gi < 3; gi++)
        for (int si = 0; si < 4; si++) {
            int G = groups[gi], S = splits[si], NH = G * NKV, N = (NH + 2 * NKV) * HD;
            static uint16_t qkv[(8 + 4) * HD], wq[HD], wk[HD], q[8 * HD];
            static uint16_t kc[2][MP * PS * NKV * HD], vc[2][MP * PS * NKV * HD];
            static float part[2][8 * 20 * (HD + 2)];
            static uint16_t o[2][8 * HD];
            int32_t bt[MP] = {2, 0, 3, 1}, pos[1] = {10};
            static float rope[MP * PS * HD]; /* the angle table rope(theta=1e6) fills: a row per cache position */
            for (int p = 0; p < MP * PS; p++) evt_rope_row(1e6, HD, p, rope + p * HD);
            for (int i = 0; i < N; i++) qkv[i] = bf(frand());
            for (int i = 0; i < HD; i++) { wq[i] = bf(1 + frand() / 4); wk[i] = bf(1 + frand() / 4); }
            for (int i = 0; i < MP * PS * NKV * HD; i++) { kc[0][i] = kc[1][i] = bf(frand()); vc[0][i] = vc[1][i] = bf(frand()); }
            memset(part, 0xff, sizeof part);
            memset(o, 0xff, sizeof o);
            /* separate calls */
            evt_task_args r = {0};
            r.ncoord = 2;
            r.t[0] = ref(qkv, 2, 1, N, 1, 1);
            r.t[1] = ref(wq, 1, HD, 1, 1, 1);
            r.t[2] = ref(pos, 1, 1, 1, 1, 1);
            r.t[3] = ref(q, 3, 1, NH, HD, 1);
            r.iarg[0] = 1000000;
            r.iarg[1] = 1000000;
            for (int h = 0; h < NH; h++) { r.coord[1] = h; evt_tile_q_rope(&r); }
            evt_task_args k = {0};
            k.ncoord = 2;
            k.t[0] = ref(qkv, 2, 1, N, 1, 1);
            k.t[1] = ref(wk, 1, HD, 1, 1, 1);
            k.t[2] = ref(pos, 1, 1, 1, 1, 1);
            k.t[3] = ref(bt, 2, 1, MP, 1, 1);
            k.t[4] = ref(kc[0], 4, MP, PS, NKV, HD);
            k.t[5] = ref(vc[0], 4, MP, PS, NKV, HD);
            k.iarg[0] = NH;
            k.iarg[1] = 1000000;
            k.iarg[2] = 1000000;
            for (int g = 0; g < NKV; g++) { k.coord[1] = g; evt_tile_k_rope_append(&k); }
            evt_task_args a = {0};
            a.ncoord = 3;
            a.t[0] = ref(q, 3, 1, NH, HD, 1);
            a.t[1] = ref(kc[0], 4, MP, PS, NKV, HD);
            a.t[2] = ref(vc[0], 4, MP, PS, NKV, HD);
            a.t[3] = ref(bt, 2, 1, MP, 1, 1);
            a.t[4] = ref(pos, 1, 1, 1, 1, 1);
            a.t[5] = ref(part[0], 4, 1, NH, S, HD + 2);
            for (int h = 0; h < NH; h++)
                for (int sp = 0; sp < S; sp++) { a.coord[1] = h; a.coord[2] = sp; evt_tile_attn_split(&a); }
            /* fused, one task per (kv head, split) */
            evt_task_args f = rope_split_args(qkv, N, wq, wk, pos, bt, MP, kc[1], vc[1], PS, NKV, HD, part[1], NH, S, o[1], rope,
                                              MP * PS, HD);
            for (int g = 0; g < NKV; g++)
                for (int sp = 0; sp < S; sp++) { f.coord[1] = g; f.coord[2] = sp; evt_tile_attn_rope_split(&f); }
            size_t np = (size_t)NH * S * (HD + 2);
            if (memcmp(part[0], part[1], np * sizeof(float)))
                fail_msg("G=%d S=%d: fused attention partials differ from the separate calls'", G, S);
            if (memcmp(kc[0], kc[1], sizeof kc[0]) || memcmp(vc[0], vc[1], sizeof vc[0]))
                fail_msg("G=%d S=%d: fused cache append differs", G, S);
            if (S == 1) { /* o of the separate path: its partials merged */
                evt_task_args m = {0};
                m.ncoord = 2;
                m.t[0] = ref(part[0], 4, 1, NH, 1, HD + 2);
                m.t[1] = ref(o[0], 2, 1, NH * HD, 1, 1);
                m.iarg[0] = G;
                for (int g = 0; g < NKV; g++) { m.coord[1] = g; evt_tile_attn_merge_group(&m); }
                if (memcmp(o[0], o[1], (size_t)NH * HD * sizeof(uint16_t)))
                    fail_msg("G=%d: the one-split attention's o differs from the merge's", G);
            } else {
                for (int i = 0; i < NH * HD; i++)
                    if (o[1][i] != 0xffff) fail_msg("G=%d S=%d: o written although there are %d splits", G, S, S);
                /* merge_last: the group's last task merges it as attn_merge_group does */
                evt_task_args m = {0};
                m.ncoord = 2;
                m.t[0] = ref(part[0], 4, 1, NH, S, HD + 2);
                m.t[1] = ref(o[0], 2, 1, NH * HD, 1, 1);
                m.iarg[0] = G;
                for (int g = 0; g < NKV; g++) { m.coord[1] = g; evt_tile_attn_merge_group(&m); }
                for (int MG = 1; MG <= NKV; MG *= 2) {
                    int32_t pc[NKV] = {0};
                    memset(o[1], 0xff, sizeof o[1]);
                    f.t[9] = ref(pc, 2, 1, MG, 1, 1);
                    f.iarg[1] = 1;
                    for (int g = 0; g < NKV; g++)
                        for (int sp = 0; sp < S; sp++) { f.coord[1] = g; f.coord[2] = sp; evt_tile_attn_rope_split(&f); }
                    f.iarg[1] = 0;
                    if (memcmp(o[0], o[1], (size_t)NH * HD * sizeof(uint16_t)))
                        fail_msg("G=%d S=%d MG=%d: the last split's merged o differs from attn_merge_group's", G, S, MG);
                    for (int i = 0; i < MG; i++)
                        if (pc[i]) fail_msg("G=%d S=%d MG=%d: merge count %d left at %d", G, S, MG, i, pc[i]);
                }
            }
        }
}

/* attn_rope_split with a rope table that has no row for the position (or
 * rows of another width): its outputs are NaN, never a read past the
 * table or angles of another position */
static void fused_attention_without_rope_row(void **state)
{
    (void)state;
    enum { HD = 8, PS = 4, MP = 4, NKV = 2, NH = 4, N = (NH + 2 * NKV) * HD };
    static uint16_t qkv[N], wq[HD], wk[HD], kc[MP * PS * NKV * HD], vc[MP * PS * NKV * HD], o[NH * HD];
    static float part[NH * (HD + 2)], rope[MP * PS * HD];
    int32_t bt[MP] = {2, 0, 3, 1}, pos[1] = {10};
    for (int i = 0; i < N; i++) qkv[i] = bf(frand());
    for (int i = 0; i < HD; i++) wq[i] = wk[i] = bf(1);
    for (int i = 0; i < MP * PS * NKV * HD; i++) kc[i] = vc[i] = bf(frand());
    for (int p = 0; p < MP * PS; p++) evt_rope_row(1e6, HD, p, rope + p * HD);
    for (int variant = 0; variant < 2; variant++) {
        /* variant 0: rows 0..9 only (position 10 missing); 1: rows of width HD / 2 */
        evt_task_args f = rope_split_args(qkv, N, wq, wk, pos, bt, MP, kc, vc, PS, NKV, HD, part, NH, 1, o, rope,
                                          variant == 0 ? 10 : MP * PS, variant == 0 ? HD : HD / 2);
        memset(o, 0, sizeof o);
        for (int g = 0; g < NKV; g++) { f.coord[1] = g; evt_tile_attn_rope_split(&f); }
        for (int i = 0; i < NH * HD; i++)
            if (!isnan(fb(o[i]))) fail_msg("variant %d: o[%d] = %g, expected NaN", variant, i, fb(o[i]));
    }
}

/* attn_rope_split's requests (tiles/attn_requests.h): for every batch B and
 * first grid extent nb the tasks serve each request exactly once, in runs of
 * ceil(B / nb); nb = B (or an unset grid) is one request a task */
static void attention_requests(void **state)
{
    (void)state;
    for (int64_t B = 1; B <= 40; B++)
        for (int64_t nb = 0; nb <= B + 2; nb++) {
            evt_task_args a = {0};
            a.t[3].dim[0] = B;
            a.grid[0] = nb;
            int served[40] = {0};
            int64_t tasks = nb >= 1 && nb <= B ? nb : B, R = nb >= 1 && nb < B ? (B + nb - 1) / nb : 1;
            for (int64_t bb = 0; bb < tasks; bb++) {
                int64_t b0, b1;
                a.coord[0] = bb;
                evt_tile_attn_requests(&a, &b0, &b1);
                if (b0 < b1 && b1 - b0 > R) fail_msg("B=%lld nb=%lld: task %lld serves %lld requests", (long long)B, (long long)nb,
                                                     (long long)bb, (long long)(b1 - b0));
                for (int64_t b = b0; b < b1; b++) served[b]++;
            }
            for (int64_t b = 0; b < B; b++)
                if (served[b] != 1) fail_msg("B=%lld nb=%lld: request %lld served %d times", (long long)B, (long long)nb, (long long)b,
                                             served[b]);
        }
}

/* rope(theta=...) fills row p of an f32 [P, d] tensor with cos | sin of
 * p * theta^(-2i/d) (RoPE's rotate-half angles), in double rounded once; an
 * odd d is refused when the buffers are made */
static void rope_initializer(void **state)
{
    (void)state;
    const char *src = "tensor R : f32[40, 16] weight = rope(theta=500000)\n";
    evt_diag d;
    evt_diag_init(&d, "r.evt");
    evt_graph *g = evt_parse(src, strlen(src), &d);
    assert_non_null(g);
    int64_t sym[1] = {0};
    evt_buffers *b = NULL;
    assert_int_equal(evt_buffers_new(g, sym, 1, 0xff, &b, &d), EVT_OK);
    size_t bytes = 0;
    const float *r = evt_buffers_data(b, 0, &bytes);
    assert_int_equal(bytes, 40 * 16 * sizeof(float));
    for (int p = 0; p < 40; p++)
        for (int i = 0; i < 8; i++) {
            double ang = p * pow(500000.0, -2.0 * i / 16.0);
            if (r[p * 16 + i] != (float)cos(ang) || r[p * 16 + 8 + i] != (float)sin(ang))
                fail_msg("row %d, pair %d: %.9g | %.9g, want %.9g | %.9g", p, i, r[p * 16 + i], r[p * 16 + 8 + i], (float)cos(ang),
                         (float)sin(ang));
        }
    evt_buffers_free(b);
    evt_graph_free(g);
    const char *odd = "tensor R : f32[4, 7] weight = rope(theta=10000)\n";
    g = evt_parse(odd, strlen(odd), &d);
    assert_non_null(g);
    assert_int_equal(evt_buffers_new(g, sym, 1, 0xff, &b, &d), EVT_ERR_SHAPE);
    assert_non_null(strstr(d.text, "rope(...) fills f32 [positions, head_dim] with an even head_dim"));
    evt_graph_free(g);
    evt_diag_free(&d);
}

static void argmax_ties(void **state)
{
    (void)state;
    uint16_t logits[20];
    for (int i = 0; i < 20; i++) logits[i] = bf((float)(i % 7));
    float pv[4];
    int32_t pi[4], next[1];
    evt_task_args a = {0};
    a.ncoord = 2;
    a.t[0] = ref(logits, 2, 1, 20, 1, 1);
    a.t[1] = ref(pv, 2, 1, 4, 1, 1);
    a.t[2] = ref(pi, 2, 1, 4, 1, 1);
    for (int c = 0; c < 4; c++) { a.coord[1] = c; evt_tile_argmax_part(&a); }
    evt_task_args f = {0};
    f.ncoord = 1;
    f.t[0] = a.t[1];
    f.t[1] = a.t[2];
    f.t[2] = ref(next, 1, 1, 1, 1, 1);
    evt_tile_argmax_final(&f);
    assert_int_equal(next[0], 6); /* 6 and 13 hold the maximum (6): lowest index */
}

/* rms_linear / rms_mlp_up (the norm inside the GEMV, its weight folded into
 * the matrices: Wf = bf16(W diag(wn))) against rmsnorm then linear / mlp_up
 * with W: the same function up to where bf16 rounding falls, on ragged tiles
 * that cover every row exactly once. */
static void fused_norm_tiles(void **state)
{
    (void)state;
    enum { B = 3, K = 64, N = 40 };
    static uint16_t x[B * K], wn[K], W[N * K], W2[N * K], Wf[N * K], W2f[N * K], h[B * K], y0[B * N], y1[B * N];
    uint32_t r = 12345;
    for (int i = 0; i < B * K; i++) { r = r * 1664525u + 1013904223u; x[i] = bf((float)(r >> 8) / 16777216.0f * 4 - 2); }
    for (int i = 0; i < K; i++) { r = r * 1664525u + 1013904223u; wn[i] = bf(0.8f + (float)(r >> 8) / 16777216.0f * 0.4f); }
    for (int i = 0; i < N * K; i++) {
        r = r * 1664525u + 1013904223u;
        W[i] = bf((float)(r >> 8) / 16777216.0f * 0.4f - 0.2f);
        W2[i] = bf((float)(r & 0xffff) / 65536.0f * 0.4f - 0.2f);
    }
    for (int i = 0; i < N * K; i++) { /* the norm's weight folded in */
        Wf[i] = bf(evt_bf16_to_f32(W[i]) * evt_bf16_to_f32(wn[i % K]));
        W2f[i] = bf(evt_bf16_to_f32(W2[i]) * evt_bf16_to_f32(wn[i % K]));
    }
    const int64_t eps = 1000000, T = 7;
    for (int mlp = 0; mlp < 2; mlp++) {
        memset(y0, 0xff, sizeof y0); /* poisoned: every element must be written */
        memset(y1, 0xff, sizeof y1);
        evt_task_args a = {0};
        a.ncoord = 1;
        for (int b = 0; b < B; b++) { /* unfused: rmsnorm rows, then the GEMV */
            evt_task_args n = {0};
            n.ncoord = 1;
            n.coord[0] = b;
            n.t[0] = ref(x, 2, B, K, 1, 1);
            n.t[1] = ref(wn, 1, K, 1, 1, 1);
            n.t[2] = ref(h, 2, B, K, 1, 1);
            n.iarg[0] = eps;
            evt_tile_rmsnorm(&n);
        }
        evt_task_args f = {0};
        f.ncoord = 1;
        for (int nb = 0; nb < T; nb++) {
            a.coord[0] = f.coord[0] = nb;
            a.t[0] = ref(h, 2, B, K, 1, 1);
            a.t[1] = ref(W, 2, N, K, 1, 1);
            f.t[0] = ref(x, 2, B, K, 1, 1);
            f.t[1] = ref(Wf, 2, N, K, 1, 1);
            if (mlp) {
                a.t[2] = ref(W2, 2, N, K, 1, 1);
                a.t[3] = ref(y0, 2, B, N, 1, 1);
                f.t[2] = ref(W2f, 2, N, K, 1, 1);
                f.t[3] = ref(y1, 2, B, N, 1, 1);
                a.iarg[0] = f.iarg[0] = T;
                f.iarg[1] = eps;
                evt_tile_mlp_up(&a);
                evt_tile_rms_mlp_up(&f);
            } else {
                a.t[2] = ref(y0, 2, B, N, 1, 1);
                f.t[2] = ref(y1, 2, B, N, 1, 1);
                a.iarg[0] = f.iarg[0] = T;
                f.iarg[1] = eps;
                evt_tile_linear(&a);
                evt_tile_rms_linear(&f);
            }
        }
        double num = 0, den = 0;
        for (int i = 0; i < B * N; i++) {
            float u = evt_bf16_to_f32(y0[i]), v = evt_bf16_to_f32(y1[i]);
            assert_false(isnan(u) || isnan(v));
            num += (double)(u - v) * (u - v);
            den += (double)u * u;
        }
        if (!(den > 0 && sqrt(num / den) < 1e-2)) fail_msg("mlp=%d: relative error %g", mlp, den > 0 ? sqrt(num / den) : -1.0);
    }
}

/* Norm partials: linear_res_ss writes what linear_res writes and, through
   its last tile, each new row's sum of squares; ss_linear / ss_mlp_up over
   those sums compute what rms_linear / rms_mlp_up compute from the rows. */
static void norm_partial_tiles(void **state)
{
    (void)state;
    enum { B = 3, K = 64, N = 40, T = 6 };
    static uint16_t x[B * K], W[N * K], res[B * N], y0[B * N], y1[B * N], z0[B * K], z1[B * K];
    static uint16_t Wk[K * N], Wk2[K * N];
    static float part[B * T], ss[B];
    int32_t cnt = 0;
    uint32_t r = 777;
    for (int i = 0; i < B * K; i++) { r = r * 1664525u + 1013904223u; x[i] = bf((float)(r >> 8) / 16777216.0f * 4 - 2); }
    for (int i = 0; i < B * N; i++) { r = r * 1664525u + 1013904223u; res[i] = bf((float)(r >> 8) / 16777216.0f * 2 - 1); }
    for (int i = 0; i < N * K; i++) {
        r = r * 1664525u + 1013904223u;
        W[i] = bf((float)(r >> 8) / 16777216.0f * 0.4f - 0.2f);
        Wk[i] = bf((float)(r & 0xffff) / 65536.0f * 0.4f - 0.2f);
        Wk2[i] = bf((float)((r >> 3) & 0xffff) / 65536.0f * 0.4f - 0.2f);
    }
    memset(y0, 0xff, sizeof y0);
    memset(y1, 0xff, sizeof y1);
    for (int i = 0; i < B; i++) ss[i] = NAN; /* every row must be written */
    for (int k = 0; k < T; k++) {
        const int nb = (k * 5) % T; /* out of order: the last to finish is not tile T - 1 */
        evt_task_args a = {0}, s = {0};
        a.ncoord = s.ncoord = 1;
        a.coord[0] = s.coord[0] = nb;
        a.t[0] = s.t[0] = ref(x, 2, B, K, 1, 1);
        a.t[1] = s.t[1] = ref(W, 2, N, K, 1, 1);
        a.t[2] = s.t[2] = ref(res, 2, B, N, 1, 1);
        a.t[3] = ref(y0, 2, B, N, 1, 1);
        s.t[3] = ref(y1, 2, B, N, 1, 1);
        s.t[4] = ref(part, 2, B, T, 1, 1);
        s.t[5] = ref(ss, 1, B, 1, 1, 1);
        s.t[6] = ref(&cnt, 1, 1, 1, 1, 1);
        a.iarg[0] = s.iarg[0] = T;
        evt_tile_linear_res(&a);
        evt_tile_linear_res_ss(&s);
        assert_int_equal(cnt, k + 1 == T ? 0 : k + 1); /* the last tile sets the count back */
    }
    assert_memory_equal(y0, y1, sizeof y0);
    for (int b = 0; b < B; b++) {
        double want = 0;
        for (int n = 0; n < N; n++) want += (double)evt_bf16_to_f32(y0[b * N + n]) * evt_bf16_to_f32(y0[b * N + n]);
        near(ss[b], want, want * 1e-3, "row sum of squares");
    }
    /* the consumers: the rows y0 (K = N here: a matrix of N columns) */
    for (int mlp = 0; mlp < 2; mlp++) {
        memset(z0, 0xff, sizeof z0);
        memset(z1, 0xff, sizeof z1);
        for (int nb = 0; nb < 4; nb++) {
            evt_task_args f = {0}, q = {0};
            f.ncoord = q.ncoord = 1;
            f.coord[0] = q.coord[0] = nb;
            f.t[0] = q.t[0] = ref(y0, 2, B, N, 1, 1);
            f.t[1] = q.t[1] = ref(Wk, 2, K, N, 1, 1);
            if (mlp) {
                f.t[2] = q.t[2] = ref(Wk2, 2, K, N, 1, 1);
                f.t[3] = ref(z0, 2, B, K, 1, 1);
                q.t[3] = ref(z1, 2, B, K, 1, 1);
                q.t[4] = ref(ss, 1, B, 1, 1, 1);
            } else {
                f.t[2] = ref(z0, 2, B, K, 1, 1);
                q.t[2] = ref(z1, 2, B, K, 1, 1);
                q.t[3] = ref(ss, 1, B, 1, 1, 1);
            }
            f.iarg[0] = q.iarg[0] = 4;
            f.iarg[1] = q.iarg[1] = 1000000;
            if (mlp) { evt_tile_rms_mlp_up(&f); evt_tile_ss_mlp_up(&q); }
            else { evt_tile_rms_linear(&f); evt_tile_ss_linear(&q); }
        }
        for (int i = 0; i < B * K; i++) {
            float u = evt_bf16_to_f32(z0[i]), v = evt_bf16_to_f32(z1[i]);
            assert_false(isnan(u) || isnan(v));
            near(v, u, 1.0, mlp ? "ss_mlp_up" : "ss_linear");
        }
    }
    /* partials of the wrong shape: NaN sums, never a silent result */
    cnt = 0;
    for (int nb = 0; nb < T; nb++) {
        evt_task_args s = {0};
        s.ncoord = 1;
        s.coord[0] = nb;
        s.t[0] = ref(x, 2, B, K, 1, 1);
        s.t[1] = ref(W, 2, N, K, 1, 1);
        s.t[2] = ref(res, 2, B, N, 1, 1);
        s.t[3] = ref(y1, 2, B, N, 1, 1);
        s.t[4] = ref(part, 2, B, T - 1, 1, 1);
        s.t[5] = ref(ss, 1, B, 1, 1, 1);
        s.t[6] = ref(&cnt, 1, 1, 1, 1, 1);
        s.iarg[0] = T;
        evt_tile_linear_res_ss(&s);
    }
    for (int b = 0; b < B; b++) assert_true(isnan(ss[b]));
}

static void config_and_program(void **state)
{
    (void)state;
    evt_qwen3_config c;
    evt_diag d;
    evt_diag_init(&d, "cfg");
    assert_int_equal(evt_qwen3_load_config("examples/qwen3-tiny.json", &c, &d), EVT_OK);
    assert_int_equal(c.hidden_size, 64);
    assert_int_equal(c.num_key_value_heads, 2);
    assert_true(evt_qwen3_preset("qwen3-8b", &c) && c.num_hidden_layers == 36 && !c.tie_word_embeddings);
    assert_false(evt_qwen3_preset("qwen3-9000b", &c));
    /* 0.6b: 0.44 B params outside the embedding + 0.16 B embedding, bf16 */
    assert_true(evt_qwen3_preset("qwen3-0.6b", &c));
    double gb = evt_qwen3_weight_bytes(&c) / 1e9;
    assert_true(gb > 1.1 && gb < 1.3);
    FILE *f = fopen("/tmp/evt-bad-config.json", "w");
    fputs("{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 3, \"num_key_value_heads\": 2,"
          " \"intermediate_size\": 8, \"vocab_size\": 16}", f);
    fclose(f);
    assert_int_not_equal(evt_qwen3_load_config("/tmp/evt-bad-config.json", &c, &d), EVT_OK);
    assert_non_null(strstr(d.text, "heads must be a multiple of kv heads"));
    f = fopen("/tmp/evt-bad-config.json", "w");
    fputs("{\"hidden_size\": \"big\"}", f);
    fclose(f);
    assert_int_not_equal(evt_qwen3_load_config("/tmp/evt-bad-config.json", &c, &d), EVT_OK);
    assert_non_null(strstr(d.text, "'hidden_size' must be a positive integer"));
    /* transformers 5's config: theta inside rope_parameters; a scaled RoPE, biases, experts refused */
    static const char *const base = "{\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                                     "\"num_key_value_heads\": 2, \"intermediate_size\": 8, \"vocab_size\": 16, ";
    f = fopen("/tmp/evt-bad-config.json", "w");
    fprintf(f, "%s\"rope_parameters\": {\"rope_theta\": 5000.0, \"rope_type\": \"default\"}}", base);
    fclose(f);
    assert_int_equal(evt_qwen3_load_config("/tmp/evt-bad-config.json", &c, &d), EVT_OK);
    assert_true(c.rope_theta == 5000.0);
    static const char *const refused[][2] = {
        {"\"rope_parameters\": {\"rope_theta\": 5000.0, \"rope_type\": \"yarn\"}}", "rope_type 'yarn'"},
        {"\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2.0}}", "rope_type 'linear'"},
        {"\"attention_bias\": true}", "attention_bias"},
        {"\"num_experts\": 8}", "mixture-of-experts"},
        {"\"use_sliding_window\": true}", "use_sliding_window"},
    };
    for (int k = 0; k < 5; k++) {
        f = fopen("/tmp/evt-bad-config.json", "w");
        fprintf(f, "%s%s", base, refused[k][0]);
        fclose(f);
        evt_diag_free(&d);
        evt_diag_init(&d, "config");
        assert_int_not_equal(evt_qwen3_load_config("/tmp/evt-bad-config.json", &c, &d), EVT_OK);
        if (!strstr(d.text, refused[k][1])) fail_msg("%s: %s", refused[k][0], d.text);
    }
    unlink("/tmp/evt-bad-config.json");
    /* the generated program is an ordinary one: it parses and round-trips */
    evt_qwen3_load_config("examples/qwen3-tiny.json", &c, &d);
    evt_qwen3_opts o = {.max_batch = 16, .max_ctx = 64, .qkv_per_head = 1}; /* the fine-grained QKV form; the default below */
    char *text = evt_qwen3_program(&c, &o, &d);
    evt_graph *g = evt_parse(text, strlen(text), &d);
    assert_non_null(g);
    evt_printer p1 = {0}, p2 = {0};
    evt_print_graph(&p1, g);
    evt_graph *g2 = evt_parse(p1.buf, p1.len, &d);
    evt_print_graph(&p2, g2);
    assert_string_equal(p1.buf, p2.buf);
    evt_pr_free(&p1);
    evt_pr_free(&p2);
    evt_graph_free(g);
    evt_graph_free(g2);
    /* a GEMV tile waits once for all rows (one counter), not once per row;
       the ablation keeps per-row elements */
    assert_non_null(strstr(text, "    wait e0_H[0]\n    notify e0_QKV[min(nb * 128 / 128 / 16 + f, ((nb + 1) * 128 / 128 - 1) / 16)] for f in [1]"));
    assert_null(strstr(text, "q_rope(")); /* q/k norm + RoPE inside the attention tasks */
    assert_non_null(strstr(text, "attn_rope_split(l0_qkv"));
    assert_null(strstr(text, "for r in [B]"));
    /* attention per kv head (its 2 q heads together) and run of requests
       (as many a task as make the tasks one wave: tiles/attn_requests.h), the ready queue under
       hybrid; it writes o itself (one split) or the last task of each merge
       group merges it (merge_last = 1, counting in l0_pc), and notifies the O
       projection: no merge call, no P event */
    assert_non_null(strstr(text, "tensor l0_pc : i32[B, max(1, 2 * min(1, 16 / B))] scratch = zeros\n"));
    assert_non_null(strstr(text, "l0_part, l0_o, l0_pc, rope, 1000000, 1) over (b, g, s) in [(B + max(1, (B * 2 + 130) / 131) - 1) / "
                                 "max(1, (B * 2 + 130) / 131), 2, min(8, max(1, 131 / (B * 2)))] "
                                 "policy dynamic {\n    wait e0_QKV[g * 2 + f] for f in [2]\n"
                                 "    wait e0_QKV[4 + g]\n    wait e0_QKV[6 + g]\n    notify e0_AT[0]\n}"));
    assert_null(strstr(text, "attn_merge_group("));
    assert_null(strstr(text, "e0_P["));
    free(text);
    o.row_events = 1;
    text = evt_qwen3_program(&c, &o, &d);
    assert_non_null(strstr(text, "    wait e0_H[r] for r in [B]\n    notify e0_QKV[min("));
    assert_non_null(strstr(text, "event e1_X[B]"));
    free(text);
    o.row_events = 0;
    o.split_rope = 1;
    text = evt_qwen3_program(&c, &o, &d);
    assert_non_null(strstr(text, "call l1_qr = q_rope("));
    assert_non_null(strstr(text, "    wait e1_Q[b, h]\n    wait e1_KV[b, h / 2]\n"));
    assert_non_null(strstr(text, "tensor l1_kc : bf16[B * 4, 16, 2, 16] scratch"));
    free(text);
    o.split_rope = 0;
    /* the prefill program: the split-rope form whose rows' appends all
       notify one KV element per kv head, every attention task waiting for
       its head's (rows of one request see each other's keys and values),
       a task a run of rows and kv head for the norms + RoPE (about
       target_tasks of them) and a task a row and kv head for the attention,
       and caches of cache_requests requests' pages whatever B */
    o.prefill = 1;
    o.cache_requests = 5;
    text = evt_qwen3_program(&c, &o, &d);
    assert_non_null(strstr(text, "call l1_qk = qk_rope_append(l1_qkv, l1_q_norm, l1_k_norm, pos, bt, l1_kc, l1_vc, l1_q, "));
    assert_non_null(strstr(text, ") over (b, g) in [(B + max(1, (B * 2 + 130) / 131) - 1) / max(1, (B * 2 + 130) / 131), 2] {\n    wait e1_QKV["));
    assert_non_null(strstr(text, "    notify e1_KV[g]\n}\n"));
    assert_non_null(strstr(text, "event e1_KV[2]\n"));
    assert_non_null(strstr(text, "call l1_at = attn_split_group(l1_q, l1_kc, l1_vc, bt, pos, l1_part) over (b, g, s) in [B, 2, "));
    assert_non_null(strstr(text, "    wait e1_KV[g]\n    notify e1_P[b, g * "));
    assert_null(strstr(text, "q_rope("));
    assert_null(strstr(text, "e1_Q["));
    assert_null(strstr(text, "e1_KV[b"));
    assert_non_null(strstr(text, "tensor l1_kc : bf16[5 * 4, 16, 2, 16] scratch"));
    assert_non_null(strstr(text, "tensor l1_vc : bf16[5 * 4, 16, 2, 16] scratch"));
    evt_graph *pg = evt_parse(text, strlen(text), &d);
    if (!pg) fail_msg("the prefill program does not verify: %s", d.text);
    evt_graph_free(pg);
    free(text);
    o.prefill = 0;
    o.cache_requests = 0;
    /* the norms inside the GEMV tiles (fuse_norm) or as calls (default) */
    o.fuse_norm = 1;
    text = evt_qwen3_program(&c, &o, &d);
    assert_non_null(strstr(text, "call l1_qkvproj = rms_linear(x1, l1_wqkv, l1_qkv, 128, 1000000) over (nb) in [128] {\n    wait e1_X[0]\n"));
    assert_non_null(strstr(text, "call l1_up = rms_mlp_up(l1_xa, l1_wg, l1_wu, l1_a, "));
    assert_non_null(strstr(text, "call final = rmsnorm(x2, final_norm, hf, "));
    assert_non_null(strstr(text, "call lm = linear(hf, "));
    assert_null(strstr(text, "call l1_n1 ="));
    assert_null(strstr(text, "call l1_n2 ="));
    assert_null(strstr(text, "l1_in_norm"));
    assert_null(strstr(text, "l1_post_norm"));
    assert_null(strstr(text, "event e1_H["));
    free(text);
    o.fuse_norm = 0;
    o.fold_norms = 1; /* norm calls over the folded matrices: unit weights */
    text = evt_qwen3_program(&c, &o, &d);
    assert_non_null(strstr(text, "call l1_n1 = rmsnorm(x1, l1_in_norm, l1_h, 1000000) over (b) in [B] {"));
    assert_non_null(strstr(text, "tensor l1_in_norm : bf16[64] weight = const(1)\n"));
    assert_non_null(strstr(text, "tensor l1_post_norm : bf16[64] weight = const(1)\n"));
    free(text);
    /* norm partials: layer 0's input norm a call, the others from the sums
       of squares the O and down tiles leave; the same weights as the calls */
    o.norm_partials = 1;
    text = evt_qwen3_program(&c, &o, &d);
    assert_non_null(strstr(text, "call l0_n1 = rmsnorm(x0, l0_in_norm, l0_h, 1000000) over (b) in [B] {"));
    assert_non_null(strstr(text, "call l0_qkvproj = linear(l0_h, l0_wqkv, l0_qkv, 128) over (nb) in [128] {\n    wait e0_H[0]\n"));
    assert_null(strstr(text, "call l1_n1 ="));
    assert_null(strstr(text, "call l0_n2 ="));
    assert_null(strstr(text, "event e0_H2["));
    assert_null(strstr(text, "event e1_H["));
    assert_non_null(strstr(text, "call l1_qkvproj = ss_linear(x1, l1_wqkv, l1_qkv, x1_ss, 128, 1000000) over (nb) in [128] {\n"
                                 "    wait e1_X[0]\n"));
    assert_non_null(strstr(text, "call l0_oproj = linear_res_ss(l0_o, l0_wo, x0, l0_xa, l0_po, l0_sxa, l0_co, 64) over (nb) in [64] {"));
    assert_non_null(strstr(text, "call l1_up = ss_mlp_up(l1_xa, l1_wg, l1_wu, l1_a, l1_sxa, "));
    assert_non_null(strstr(text, "call l0_dn = linear_res_ss(l0_a, l0_wd, l0_xa, x1, l0_pd, x1_ss, l0_cd, 64) over (nb) in [64] {"));
    assert_non_null(strstr(text, "call l1_dn = linear_res(l1_a, l1_wd, l1_xa, x2, 64) over (nb) in [64] {")); /* the last: a final norm call */
    assert_non_null(strstr(text, "tensor l0_po : f32[B, 64] scratch\ntensor l0_co : i32[1] scratch = zeros\n"));
    assert_non_null(strstr(text, "tensor l1_in_norm : bf16[64] weight = const(1)\n")); /* declared, so no tensor id moves */
    assert_non_null(strstr(text, "call final = rmsnorm(x2, final_norm, hf, "));
    free(text);
    o.norm_partials = 0;
    o.fold_norms = 0;
    text = evt_qwen3_program(&c, &o, &d);
    assert_non_null(strstr(text, "tensor l1_in_norm : bf16[64] weight = random("));
    assert_non_null(strstr(text, "call l1_n1 = rmsnorm(x1, l1_in_norm, l1_h, 1000000) over (b) in [B] {"));
    assert_non_null(strstr(text, "call l1_qkvproj = linear(l1_h, l1_wqkv, l1_qkv, 128) over (nb) in [128] {\n    wait e1_H[0]\n"));
    assert_non_null(strstr(text, "call final = rmsnorm("));
    assert_null(strstr(text, "prefetch"));
    free(text);
    /* prefetch: every GEMV call (qkv, o, up, down per layer, and the LM head)
       and every attention call is annotated; attn_no_early leaves the attention out */
    o.prefetch = 1;
    text = evt_qwen3_program(&c, &o, &d);
    assert_non_null(strstr(text, "call l1_qkvproj = linear(l1_h, l1_wqkv, l1_qkv, 128) over (nb) in [128] prefetch {\n    wait e1_H[0]\n"));
    int npf = 0;
    for (const char *q = text; (q = strstr(q, " prefetch {")); q++) npf++;
    assert_int_equal(npf, 5 * (int)c.num_hidden_layers + 1);
    assert_non_null(strstr(text, "call l1_at = attn_rope_split(") && strstr(text, "policy dynamic prefetch {"));
    free(text);
    o.attn_no_early = 1;
    text = evt_qwen3_program(&c, &o, &d);
    npf = 0;
    for (const char *q = text; (q = strstr(q, " prefetch {")); q++) npf++;
    assert_int_equal(npf, 4 * (int)c.num_hidden_layers + 1);
    assert_null(strstr(text, "policy dynamic prefetch"));
    free(text);
    o.attn_no_early = 0;
    o.prefetch = 0;
    o.qkv_per_head = 0; /* the default: one QKV counter */
    text = evt_qwen3_program(&c, &o, &d);
    assert_non_null(strstr(text, "event e1_QKV[1]\n"));
    assert_non_null(strstr(text, "    wait e1_H[0]\n    notify e1_QKV[0]\n}"));
    assert_non_null(strstr(text, "policy dynamic {\n    wait e1_QKV[0]\n    notify e1_AT[0]\n}"));
    free(text);
    o.merge_tasks = 1; /* the ablation of session 21's form: merge tasks where S > 1 */
    text = evt_qwen3_program(&c, &o, &d);
    assert_non_null(strstr(text, "policy dynamic {\n    wait e1_QKV[0]\n    notify e1_P[b, g * max(1, 2 * min(1, 16 / B)) / 2] for f in ["));
    assert_non_null(strstr(text, "l1_o, l1_pc, rope, 1000000, 0) over"));
    free(text);
    o.merge_tasks = 0;
    o.merge_one_split = 1; /* the ablation: merges after every attention call, as before session 21 */
    text = evt_qwen3_program(&c, &o, &d);
    assert_non_null(strstr(text, "policy dynamic {\n    wait e1_QKV[0]\n    notify e1_P[b, g * max(1, 2 * min(1, 16 / B)) / 2]\n}"));
    assert_null(strstr(text, "notify e1_AT[0] for f in"));
    assert_non_null(strstr(text, "over (b, g) in [B, max(1, 2 * min(1, 16 / B))] {\n    wait e1_P[b, g]\n"));
    free(text);
    evt_diag_free(&d);
}

/* A whole binary file (malloc'd), or NULL. */
/* One decode run with --check (o->check set): fails unless every step
   matched its sequential reference. what, k: the run's name in a failure. */
static void decode_checked(const evt_decode_opts *o, const char *what, int k)
{
    evt_decode_result r;
    evt_diag d;
    evt_diag_init(&d, "decode");
    if (evt_decode(o, &r, &d)) fail_msg("%s %d: %s", what, k, d.text);
    assert_int_equal(r.steps_checked, o->steps);
    assert_int_equal(r.check_failed, 0);
    evt_diag_free(&d);
}

/* Removes a run's dump directory. */
static void remove_dump(const char *dir)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(len > 0 ? (size_t)len : 1);
    *n = buf ? fread(buf, 1, len > 0 ? (size_t)len : 0, f) : 0;
    fclose(f);
    return buf;
}

/* The argmax over the vocabulary: about target_tasks tasks in all at any
 * batch (max(1, target_tasks / B) chunks per row, after the whole LM head),
 * one per (row, LM-head tile) in the ablation; the attention merge (merge
 * tasks, an ablation; by default the attention's last split merges): one
 * task per (row, kv group) up to batch 16, one per row above (every batch in
 * the ablation). Both forms pick the reference's tokens on the CPU backend
 * (tiny_decode checks the defaults). */
static void reduction_tasks(void **state)
{
    (void)state;
    evt_diag d;
    evt_diag_init(&d, "qwen3-0.6b");
    evt_qwen3_config c;
    assert_true(evt_qwen3_preset("qwen3-0.6b", &c));
    for (int per_tile = 0; per_tile < 2; per_tile++) {
        evt_qwen3_opts o = {.argmax_per_tile = per_tile, .merge_per_group = per_tile};
        evt_qwen3_opts dflt = {.argmax_per_tile = per_tile}; /* the default has no merge call at all */
        char *plain = evt_qwen3_program(&c, &dflt, &d);
        assert_non_null(plain);
        assert_null(strstr(plain, "attn_merge_group("));
        free(plain);
        o.merge_tasks = 1; /* the ablation: merge tasks where a request's cache has several splits */
        char *text = evt_qwen3_program(&c, &o, &d);
        assert_non_null(text);
        evt_graph *g = evt_parse(text, strlen(text), &d);
        assert_non_null(g);
        evt_compile_opts co = {0};
        evt_plan *p = NULL;
        assert_int_equal(evt_compile(g, &co, &p, &d), EVT_OK);
        int amax = -1, merge = -1;
        for (int k = 0; k < g->ncalls; k++) {
            if (!strcmp(g->calls[k]->name, "amax")) amax = k;
            if (!strcmp(g->calls[k]->name, "l5_am")) merge = k;
        }
        assert_true(amax >= 0 && merge >= 0);
        for (int64_t B = 1; B <= 128; B *= 2) {
            int64_t sym[1] = {B};
            evt_bound b;
            assert_int_equal(evt_bind_targets(p, sym, &b, &d), EVT_OK);
            int64_t n = b.s.task_base[amax + 1] - b.s.task_base[amax];
            int64_t want = per_tile ? B * 655 /* LM-head tiles: 5 x 131, <= 256 rows each */ : B * (131 / B > 1 ? 131 / B : 1);
            if (n != want) fail_msg("per_tile %d, B=%lld: %lld argmax tasks, want %lld", per_tile, (long long)B, (long long)n, (long long)want);
            n = b.s.task_base[merge + 1] - b.s.task_base[merge];
            /* none where a request's cache is one split (131 / (8 B) <= 1):
               the attention tasks write o themselves */
            want = 131 / (B * 8) <= 1 ? 0 : per_tile || B <= 16 ? B * 8 : B;
            if (n != want) fail_msg("per_group %d, B=%lld: %lld merge tasks, want %lld", per_tile, (long long)B, (long long)n, (long long)want);
            evt_bound_free(&b);
        }
        evt_plan_free(p);
        evt_graph_free(g);
        free(text);
    }
    evt_diag_free(&d);
    for (int B = 3; B <= 20; B += 17)
        for (int ablate = 0; ablate < 2; ablate++) {
            evt_decode_opts o = {.model = "examples/qwen3-tiny.json", .batch = B, .ctx = 24, .steps = 2,
                                 .backend = EVT_BACKEND_CPU, .check = 1, .quiet = 1};
            o.build.argmax_per_tile = o.build.merge_per_group = ablate;
            o.run.workers = 5;
            o.run.sched = ablate ? EVT_SCHED_DYNAMIC : EVT_SCHED_STATIC;
            evt_decode_result r;
            evt_diag_init(&d, "tiny");
            if (evt_decode(&o, &r, &d)) fail_msg("B=%d ablate=%d: %s", B, ablate, d.text);
            assert_int_equal(r.check_failed, 0);
            assert_int_equal(r.steps_checked, 2);
            /* the KV cache the timed step (the second) reads: request b
               starts with 24 - b % 4 cached tokens, has appended one, and
               attends over those and the one it appends; a token is keys and
               values of 2 layers x 2 kv heads x 16 dims in bf16 */
            double positions = 0;
            for (int b = 0; b < B; b++) positions += 24 - b % 4 + 2;
            assert_true(r.cache_bytes == positions * 2 * 2 * 2 * 16 * 2);
            assert_true(r.first_wall_ms > 0 && r.steps_wall_ms > 0);
            evt_diag_free(&d);
        }
}

/* --check's GPU tolerance: 2e-2 for shallow models, growing as the square
 * root of the depth (the measured 0.0221 of qwen3-0.6b's 28 layers passes,
 * a wrong result, O(1), never does). */
static void check_tolerance(void **state)
{
    (void)state;
    assert_true(evt_decode_check_rtol(1) == 2e-2);
    assert_true(evt_decode_check_rtol(4) == 2e-2);
    near(evt_decode_check_rtol(28), 2e-2 * sqrt(7.0), 1e-12, "rtol(28)");
    assert_true(evt_decode_check_rtol(28) > 0.0221);
    assert_true(evt_decode_check_rtol(36) > evt_decode_check_rtol(28));
    assert_true(evt_decode_check_rtol(128) < 0.5);
}

/* --check's step comparison on the GPU (evt_decode_check_step): identical
 * buffers pass; a token flipped at a near-tie of the reference's logits
 * (within 2 rtol max |logit|) passes and is counted; a flip across a wider
 * gap, a token that is not the first largest of the device's own logits, and
 * logits beyond rtol each fail with a line naming them. */
static void decode_check_step_ties(void **state)
{
    (void)state;
    const char *src = "sym B = 2 in [1, 4]\n"
                      "tensor logits : bf16[B, 8] output\n"
                      "tensor next : i32[B] output\n";
    evt_diag d;
    evt_diag_init(&d, "check");
    evt_graph *g = evt_parse(src, strlen(src), &d);
    if (!g) fail_msg("%s", d.text);
    int64_t sym[1] = {2};
    evt_buffers *dev = NULL, *ref = NULL;
    assert_int_equal(evt_buffers_new(g, sym, 1, 0, &dev, &d), EVT_OK);
    assert_int_equal(evt_buffers_new(g, sym, 1, 0, &ref, &d), EVT_OK);
    const int lid = evt_graph_find_tensor(g, "logits")->id, nid = evt_graph_find_tensor(g, "next")->id;
    uint16_t *dl = evt_buffers_data(dev, lid, NULL), *rl = evt_buffers_data(ref, lid, NULL);
    int32_t *dn = evt_buffers_data(dev, nid, NULL), *rn = evt_buffers_data(ref, nid, NULL);
    /* row 0: the largest at 3 (4.0), the runner-up at 5 (3.9375); row 1: at 6 */
    const float row0[8] = {0.5f, -1.f, 2.f, 4.f, 1.f, 3.9375f, -4.f, 0.f};
    const float row1[8] = {1.f, 0.f, -2.f, 0.25f, 3.f, 2.f, 8.f, -8.f};
    for (int v = 0; v < 8; v++) {
        dl[v] = rl[v] = bf(row0[v]);
        dl[8 + v] = rl[8 + v] = bf(row1[v]);
    }
    dn[0] = rn[0] = 3;
    dn[1] = rn[1] = 6;
    const double rtol = 2e-2; /* tolerance 2 x 0.02 x 8 = 0.32 between two logits */
    int64_t ties = 0;
    evt_printer pr = {0};
    assert_int_equal(evt_decode_check_step(g, dev, ref, rtol, &ties, &pr), 0);
    assert_int_equal(ties, 0);
    /* the device rounds token 5 up past token 3: a near-tie (0.0625 apart) */
    dl[5] = bf(4.0625f);
    dn[0] = 5;
    assert_int_equal(evt_decode_check_step(g, dev, ref, rtol, &ties, &pr), 0);
    assert_int_equal(ties, 1);
    assert_null(pr.buf);
    /* ... but not across a gap of 2 (token 2 at 4.125 on the device, 2.0 in the reference): the logits fail too */
    dl[5] = rl[5];
    dl[2] = bf(4.125f);
    dn[0] = 2;
    ties = 0;
    assert_int_equal(evt_decode_check_step(g, dev, ref, rtol, &ties, &pr), 2);
    assert_int_equal(ties, 0);
    assert_non_null(strstr(pr.buf, "logits: relative error"));
    assert_non_null(strstr(pr.buf, "next[0]: token 2 where the reference has 3"));
    evt_pr_free(&pr);
    /* a token that is not the device's own argmax fails, even where the reference agrees */
    dl[2] = rl[2];
    dn[0] = 3;
    dn[1] = rn[1] = 4;
    pr = (evt_printer){0};
    assert_int_equal(evt_decode_check_step(g, dev, ref, rtol, &ties, &pr), 1);
    assert_non_null(strstr(pr.buf, "next[1]: token 4 is not the first largest of the device's own logits (6)"));
    evt_pr_free(&pr);
    /* ties go to the lowest index, as the argmax tiles break them */
    dn[1] = rn[1] = 6;
    dl[8 + 4] = rl[8 + 4] = bf(8.f);
    pr = (evt_printer){0};
    assert_int_equal(evt_decode_check_step(g, dev, ref, rtol, &ties, &pr), 1); /* both sides hold 6, the first largest is 4 */
    evt_pr_free(&pr);
    evt_buffers_free(dev);
    evt_buffers_free(ref);
    evt_graph_free(g);
    evt_diag_free(&d);
}

/* evtc decode's TMA ring: the request when given, else 96 KiB exactly at the
   batches whose GEMV tasks gain from it (33-128; from 17 for a hidden size of
   2048 or more; none below, where the smaller L1 costs what it saves, nor
   above 128); and its norms */
/* evt_decode's tile options: the batch-1-16 program of `--norms auto` leaves
 * the TMA GEMV out (it runs only at 17-64), the attention's staged first step
 * and, unless the caller asks for request runs, the attention's run loop
 * (that program has one request per attention task:
 * decode_small_program_one_request); every program that may run at the
 * larger batches keeps them, and the batch <= 8 GEMV copies and merge loop
 * that its kernel replaces */
/* The prefill's kernel is compiled for its own row count, not with the
 * steps' options: a batch-1 decode whose 30-token prompt fills the cache in
 * one launch of 29 rows runs the batch-1-16 kernel's tiles in its steps and
 * the larger programs' (the TMA GEMV kept) in its prefill; a caller's own
 * options go to both. (Until session 72 the prefill was given the steps'
 * options and its 128-row launches ran without the TMA GEMV.) */
static void prefill_kernel_options(void **state)
{
    (void)state;
    int32_t prompt[30], gen[2];
    for (int i = 0; i < 30; i++) prompt[i] = (7 * i + 3) % 256;
    const int32_t *prompts[1] = {prompt};
    const int64_t lens[1] = {30};
    for (int given = 0; given < 2; given++) {
        evt_decode_opts o = {.model = "examples/qwen3-tiny.json", .batch = 1, .steps = 2, .backend = EVT_BACKEND_CPU, .quiet = 1,
                             .prompts = prompts, .prompt_lens = lens, .nprompts = 1, .generated = gen};
        if (given) o.compile.cuda_defines = "EVT_SOME_OPTION=1";
        evt_decode_result r;
        evt_diag d;
        evt_diag_init(&d, "prefill");
        if (evt_decode(&o, &r, &d)) fail_msg("decode: %s", d.text);
        evt_diag_free(&d);
        assert_int_equal(r.prefill_launches, 1);
        assert_int_equal(r.prefill_tokens, 29);
        assert_non_null(r.cuda_defines);
        assert_non_null(r.prefill_cuda_defines);
        if (given) {
            assert_string_equal(r.cuda_defines, "EVT_SOME_OPTION=1");
            assert_string_equal(r.prefill_cuda_defines, "EVT_SOME_OPTION=1");
        } else {
            assert_non_null(strstr(r.cuda_defines, "EVT_LLM_NO_TMA"));
            assert_null(strstr(r.prefill_cuda_defines, "EVT_LLM_NO_TMA"));
            assert_string_equal(r.prefill_cuda_defines, "EVT_LLM_SHARED_SMALL=0 EVT_LLM_MERGE_LOADS_AT_ONCE=0 EVT_LLM_SPLIT_RCP=0 "
                                                        "EVT_LLM_KSPLIT_EVERY=0");
        }
    }
}

/* what every batch-1-16 kernel's list starts with (evt_decode_cuda_defines) */
#define SMALL_COMMON "EVT_LLM_NO_TMA EVT_TILE_THREADS_CONST EVT_LLM_ATTN_U=2 "
static void decode_cuda_defines_policy(void **state)
{
    (void)state;
    for (int64_t b = 1; b <= 16; b++) {
        assert_string_equal(evt_decode_cuda_defines(b, EVT_NORMS_AUTO, 0, 0, 1, 0),
                            SMALL_COMMON "EVT_LLM_ATTN_ONE_REQUEST EVT_LLM_ATTN_STAGE_FIRST=0");
        assert_string_equal(evt_decode_cuda_defines(b, EVT_NORMS_AUTO, 1, 0, 1, 0),
                            SMALL_COMMON "EVT_LLM_ATTN_ONE_REQUEST EVT_LLM_ATTN_STAGE_FIRST=0");
        /* runs asked for: the loop stays */
        assert_string_equal(evt_decode_cuda_defines(b, EVT_NORMS_AUTO, 2, 0, 1, 0), SMALL_COMMON "EVT_LLM_ATTN_STAGE_FIRST=0");
        /* a model whose gate + up tiles never take every warp over every unit: the form left out */
        assert_string_equal(evt_decode_cuda_defines(b, EVT_NORMS_AUTO, 0, 0, 0, 0),
                            SMALL_COMMON "EVT_LLM_ATTN_ONE_REQUEST EVT_LLM_ATTN_STAGE_FIRST=0 EVT_LLM_KSPLIT_EVERY=0");
        assert_string_equal(evt_decode_cuda_defines(b, EVT_NORMS_AUTO, 2, 0, 0, 0),
                            SMALL_COMMON "EVT_LLM_ATTN_STAGE_FIRST=0 EVT_LLM_KSPLIT_EVERY=0");
    }
    /* the other programs keep each GEMV's own batch <= 8 copy, the split
       merge's loop and the k split's integer divisions, and leave the gate +
       up form out whatever the model */
    const char *large = "EVT_LLM_SHARED_SMALL=0 EVT_LLM_MERGE_LOADS_AT_ONCE=0 EVT_LLM_SPLIT_RCP=0 EVT_LLM_KSPLIT_EVERY=0";
    for (int every = 0; every <= 1; every++) {
        assert_string_equal(evt_decode_cuda_defines(17, EVT_NORMS_AUTO, 0, 0, every, 0), large);
        assert_string_equal(evt_decode_cuda_defines(64, EVT_NORMS_AUTO, 0, EVT_DECODE_TMA_RING, every, 0), large);
        assert_string_equal(evt_decode_cuda_defines(1, EVT_NORMS_FUSED, 0, 0, every, 0), large);
        assert_string_equal(evt_decode_cuda_defines(4, EVT_NORMS_CALLS, 0, 0, every, 0), large);
        assert_string_equal(evt_decode_cuda_defines(1, EVT_NORMS_UNFOLDED, 0, 0, every, 0), large);
        /* above batch 64 x's second box, only where the run has a ring */
        assert_string_equal(evt_decode_cuda_defines(65, EVT_NORMS_AUTO, 0, EVT_DECODE_TMA_RING, every, 0),
                            "EVT_TMA_TWO_HALVES EVT_LLM_SHARED_SMALL=0 EVT_LLM_MERGE_LOADS_AT_ONCE=0 EVT_LLM_SPLIT_RCP=0 EVT_LLM_KSPLIT_EVERY=0");
        assert_string_equal(evt_decode_cuda_defines(128, EVT_NORMS_FUSED, 0, 98304, every, 0),
                            "EVT_TMA_TWO_HALVES EVT_LLM_SHARED_SMALL=0 EVT_LLM_MERGE_LOADS_AT_ONCE=0 EVT_LLM_SPLIT_RCP=0 EVT_LLM_KSPLIT_EVERY=0");
        assert_string_equal(evt_decode_cuda_defines(100, EVT_NORMS_AUTO, 0, 0, every, 0), large);
        assert_string_equal(evt_decode_cuda_defines(100, EVT_NORMS_AUTO, 0, -1, every, 0), large);
        /* the leader's waits inside the tiles: only ever the batch-1-16 kernel's */
        assert_string_equal(evt_decode_cuda_defines(17, EVT_NORMS_AUTO, 0, 0, every, 1), large);
        assert_string_equal(evt_decode_cuda_defines(1, EVT_NORMS_CALLS, 0, 0, every, 1), large);
    }
    assert_string_equal(evt_decode_cuda_defines(1, EVT_NORMS_AUTO, 0, 0, 1, 1),
                        SMALL_COMMON "EVT_LLM_ATTN_ONE_REQUEST EVT_LLM_ATTN_STAGE_FIRST=0 EVT_WAITS_IN_TILE=1");
    assert_string_equal(evt_decode_cuda_defines(16, EVT_NORMS_AUTO, 0, 0, 0, 1),
                        SMALL_COMMON "EVT_LLM_ATTN_ONE_REQUEST EVT_LLM_ATTN_STAGE_FIRST=0 EVT_LLM_KSPLIT_EVERY=0 EVT_WAITS_IN_TILE=1");
    assert_string_equal(evt_decode_cuda_defines(8, EVT_NORMS_AUTO, 2, 0, 1, 1), SMALL_COMMON "EVT_LLM_ATTN_STAGE_FIRST=0 EVT_WAITS_IN_TILE=1");
    assert_string_equal(evt_decode_cuda_defines(8, EVT_NORMS_AUTO, 2, 0, 0, 1),
                        SMALL_COMMON "EVT_LLM_ATTN_STAGE_FIRST=0 EVT_LLM_KSPLIT_EVERY=0 EVT_WAITS_IN_TILE=1");
}

/* which models' batch-1-16 kernels run the GEMV tasks' waits inside the
 * tiles: hidden size 4096 or more (measured: qwen3-8b faster, qwen3-0.6b
 * slower; bench/RESULTS.md session 58) */
static void decode_waits_in_tile_models(void **state)
{
    (void)state;
    static const struct { const char *model; int on; } v[] = {
        {"qwen3-8b", 1}, {"qwen3-1.7b", 0}, {"qwen3-0.6b", 0}, {"examples/qwen3-tiny.json", 0}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        evt_qwen3_config c;
        evt_diag d;
        evt_diag_init(&d, "cfg");
        if (!evt_qwen3_preset(v[i].model, &c)) assert_int_equal(evt_qwen3_load_config(v[i].model, &c, &d), EVT_OK);
        assert_int_equal(evt_decode_waits_in_tile(c.hidden_size), v[i].on);
        evt_diag_free(&d);
    }
}

/* which models' gate + up tiles take every warp over every unit at batch
 * <= 8: 16-row units per tile (intermediate size over the tiles) fewer than
 * the 8 warps and not dividing them */
static void decode_gate_up_every_models(void **state)
{
    (void)state;
    static const struct { const char *model; int every; } v[] = {
        {"qwen3-8b", 1},   /* 12288 rows over 131 tiles: 94, 6 units */
        {"qwen3-1.7b", 1}, /* 6144: 47, 3 units */
        {"qwen3-0.6b", 0}, /* 3072: 24, 2 units, which divide the 8 warps */
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        evt_qwen3_config c;
        assert_true(evt_qwen3_preset(v[i].model, &c));
        assert_int_equal(evt_decode_gate_up_every(c.intermediate_size, 0), v[i].every);
    }
    assert_int_equal(evt_decode_gate_up_every(128, 0), 0);      /* the tiny config: one unit */
    assert_int_equal(evt_decode_gate_up_every(12288, 131), 1);  /* target_tasks given as the default */
    assert_int_equal(evt_decode_gate_up_every(12288, 48), 0);   /* 256 rows: 16 units, more than the warps */
    assert_int_equal(evt_decode_gate_up_every(12288, 193), 0);  /* 64 rows: 4 units, which divide them */
    assert_int_equal(evt_decode_gate_up_every(12288, 110), 1);  /* 112 rows: 7 units */
}

/* the program evt_decode builds: one request per attention task where
   `--norms auto` takes the batch-1-16 program (its kernel has no run loop),
   runs of requests above it, and runs wherever the caller asks for them */
static void decode_small_program_one_request(void **state)
{
    (void)state;
    static const struct { int64_t batch, attn_rows; evt_decode_norms norms; const char *grid; } v[] = {
        {1, 0, EVT_NORMS_AUTO, "over (b, g, s) in [B, 2, "},
        {16, 0, EVT_NORMS_AUTO, "over (b, g, s) in [B, 2, "},
        {4, 2, EVT_NORMS_AUTO, "over (b, g, s) in [(B + 2 - 1) / 2, 2, "},
        {17, 0, EVT_NORMS_AUTO, "over (b, g, s) in [(B + max(1, (B * 2 + 130) / 131) - 1) / max(1, (B * 2 + 130) / 131), 2, "},
        {64, 0, EVT_NORMS_AUTO, "over (b, g, s) in [(B + max(1, (B * 2 + 130) / 131) - 1) / max(1, (B * 2 + 130) / 131), 2, "},
        {1, 0, EVT_NORMS_CALLS, "over (b, g, s) in [(B + max(1, (B * 2 + 130) / 131) - 1) / max(1, (B * 2 + 130) / 131), 2, "},
    };
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        evt_decode_opts o = {.model = "examples/qwen3-tiny.json", .batch = v[k].batch, .ctx = 8, .steps = 1, .norms = v[k].norms};
        o.build.attn_rows = v[k].attn_rows;
        evt_qwen3_config c;
        char *text = NULL;
        evt_diag d = {0};
        assert_int_equal(evt_decode_program(&o, &c, &text, &d), EVT_OK);
        if (!strstr(text, v[k].grid)) fail_msg("batch %lld, attn_rows %lld: no '%s'", (long long)v[k].batch, (long long)v[k].attn_rows, v[k].grid);
        free(text);
    }
}

/* The down and O projections in k slices (evt_qwen3_opts.dn_slices, o_slices): linear_part's
 * partials added by add_rmsnorm give linear_res + rmsnorm's rows (bitwise
 * with one slice: 0 + p is p), within f32 rounding with more; the builder
 * emits them only in the norm-calls program; decode steps with 1, 2 and 3
 * slices pass --check and agree. */
static void decode_down_slices(void **state)
{
    (void)state;
    enum { B = 3, K = 96, N = 40, BANDS = 5 };
    static uint16_t x[B * K], W[N * K], res[B * N], w[N], y0[B * N], h0[B * N], y1[B * N], h1[B * N];
    static float part[3 * B * N];
    for (int i = 0; i < B * K; i++) x[i] = bf(frand() * 2);
    for (int i = 0; i < N * K; i++) W[i] = bf(frand() * 0.2f);
    for (int i = 0; i < B * N; i++) res[i] = bf(frand());
    for (int i = 0; i < N; i++) w[i] = bf(1 + frand() * 0.2f);
    /* the reference: linear_res over BANDS tiles, then rmsnorm */
    for (int nb = 0; nb < BANDS; nb++) {
        evt_task_args a = {0};
        a.ncoord = 1; a.coord[0] = nb; a.grid[0] = BANDS;
        a.t[0] = ref(x, 2, B, K, 1, 1); a.t[1] = ref(W, 2, N, K, 1, 1); a.t[2] = ref(res, 2, B, N, 1, 1); a.t[3] = ref(y0, 2, B, N, 1, 1);
        a.iarg[0] = BANDS;
        evt_tile_linear_res(&a);
    }
    for (int b = 0; b < B; b++) {
        evt_task_args a = {0};
        a.ncoord = 1; a.coord[0] = b; a.grid[0] = B;
        a.t[0] = ref(y0, 2, B, N, 1, 1); a.t[1] = ref(w, 1, N, 1, 1, 1); a.t[2] = ref(h0, 2, B, N, 1, 1);
        a.iarg[0] = 1000000;
        evt_tile_rmsnorm(&a);
    }
    for (int KP = 1; KP <= 3; KP++) {
        for (int i = 0; i < KP * B * N; i++) part[i] = NAN; /* every partial must be written */
        memset(y1, 0xff, sizeof y1);
        memset(h1, 0xff, sizeof h1);
        for (int k = 0; k < KP * BANDS; k++) {
            evt_task_args a = {0};
            a.ncoord = 1; a.coord[0] = (k * 7) % (KP * BANDS); a.grid[0] = KP * BANDS;
            a.t[0] = ref(x, 2, B, K, 1, 1); a.t[1] = ref(W, 2, N, K, 1, 1); a.t[2] = ref(part, 3, KP, B, N, 1);
            evt_tile_linear_part(&a);
        }
        for (int b = 0; b < B; b++) {
            evt_task_args a = {0};
            a.ncoord = 1; a.coord[0] = b; a.grid[0] = B;
            a.t[0] = ref(res, 2, B, N, 1, 1); a.t[1] = ref(part, 3, KP, B, N, 1); a.t[2] = ref(w, 1, N, 1, 1, 1);
            a.t[3] = ref(y1, 2, B, N, 1, 1); a.t[4] = ref(h1, 2, B, N, 1, 1);
            a.iarg[0] = 1000000;
            evt_tile_add_rmsnorm(&a);
        }
        if (KP == 1) {
            assert_memory_equal(y0, y1, sizeof y0);
            assert_memory_equal(h0, h1, sizeof h0);
        }
        for (int i = 0; i < B * N; i++) {
            double want = fb(res[i]);
            for (int k = 0; k < K; k++) want += fb(x[i / N * K + k]) * fb(W[i % N * K + k]);
            near(fb(y1[i]), want, fabs(want), "add_rmsnorm's residual row");
            near(fb(h1[i]), fb(h0[i]), fabs(fb(h0[i])), "add_rmsnorm's normed row");
        }
    }
    /* the programs: linear_part and add_rmsnorm only with norm calls */
    static const struct { const char *model; int64_t batch, slices; evt_decode_norms norms; const char *want, *not; } v[] = {
        {"qwen3-8b", 64, 2, EVT_NORMS_AUTO, "linear_part(l35_a, l35_wd, l35_dp) over (nb) in [(1 + 1 * min(1, 64 / B) * min(1, B / 33)) * (131 / ", "linear_res(l35_a"},
        {"qwen3-8b", 64, 2, EVT_NORMS_AUTO, "call final = add_rmsnorm(l35_xa, l35_dp, final_norm, x36, hf", "call final = rmsnorm"},
        {"qwen3-8b", 1, 2, EVT_NORMS_AUTO, "rms_linear(", "linear_part"}, /* fused norms: no slices */
        {"qwen3-8b", 64, 1, EVT_NORMS_AUTO, "linear_res(l35_a", "linear_part(l35_a"}, /* whole K asked for (O keeps its default) */
        {"qwen3-0.6b", 40, 3, EVT_NORMS_CALLS, "call l1_n1 = add_rmsnorm(l0_xa, l0_dp, l1_in_norm, x1, l1_h", "l0_n1 = add_rmsnorm"},
        {"qwen3-0.6b", 40, -2, EVT_NORMS_CALLS, "call l3_n2 = add_rmsnorm(x3, l3_op, l3_post_norm, l3_xa, l3_h2", "linear_res(l3_o"},
        {"qwen3-0.6b", 40, -2, EVT_NORMS_CALLS, "linear_res(l3_a, l3_wd, l3_xa, x4", "l4_n1 = add_rmsnorm"},
    };
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        evt_decode_opts o = {.model = v[k].model, .batch = v[k].batch, .ctx = 8, .steps = 1, .norms = v[k].norms};
        if (v[k].slices > 0) o.build.dn_slices = v[k].slices;
        else { /* negative: O slices, the down projection over whole K */
            o.build.o_slices = -v[k].slices;
            o.build.dn_slices = 1;
        }
        evt_qwen3_config c;
        char *text = NULL;
        evt_diag d = {0};
        assert_int_equal(evt_decode_program(&o, &c, &text, &d), EVT_OK);
        if (!strstr(text, v[k].want)) fail_msg("%s batch %lld, %lld slices: no '%s'", v[k].model, (long long)v[k].batch, (long long)v[k].slices, v[k].want);
        if (strstr(text, v[k].not)) fail_msg("%s batch %lld, %lld slices: '%s'", v[k].model, (long long)v[k].batch, (long long)v[k].slices, v[k].not);
        free(text);
    }
    { /* evt_decode's defaults (evt_decode_slices): 4 slices for both with norm calls and a ring at batch 33-64 (the
         program's range 33-64), and above 64 (33-128 at qwen3-8b; qwen3-0.6b none at 65-96, 97-128 above) */
        static const struct { int64_t batch, dn, tiles; int ring; evt_decode_norms norms; int sliced, from, to; const char *model; } dv[] = {
            {33, 0, 0, 0, EVT_NORMS_AUTO, 1, 33, 64, NULL}, {40, 0, 0, 0, EVT_NORMS_AUTO, 1, 33, 64, NULL}, {64, 0, 0, 0, EVT_NORMS_AUTO, 1, 33, 64, NULL},
            {32, 0, 0, 0, EVT_NORMS_AUTO, 0, 0, 0, NULL} /* qwen3-8b has a ring there (hidden 4096), the slices start at 33 */,
            {20, 0, 0, 0, EVT_NORMS_AUTO, 0, 0, 0, NULL}, {16, 0, 0, 0, EVT_NORMS_AUTO, 0, 0, 0, NULL},
            {65, 0, 0, 0, EVT_NORMS_AUTO, 1, 33, 128, NULL}, {96, 0, 0, 0, EVT_NORMS_AUTO, 1, 33, 128, NULL},
            {128, 0, 0, 0, EVT_NORMS_AUTO, 1, 33, 128, NULL}, {128, 0, 0, -1, EVT_NORMS_AUTO, 0, 0, 0, NULL} /* no ring */,
            {8, 0, 0, 0, EVT_NORMS_CALLS, 0, 0, 0, NULL}, {64, 0, 0, -1, EVT_NORMS_AUTO, 0, 0, 0, NULL} /* no ring */,
            {64, 1, 0, 0, EVT_NORMS_AUTO, 0, 0, 0, NULL} /* asked for whole K */, {64, 0, 0, 0, EVT_NORMS_PARTIALS, 0, 0, 0, NULL},
            {64, 0, 0, 0, EVT_NORMS_FUSED, 0, 0, 0, NULL}, {64, 0, 31, 0, EVT_NORMS_AUTO, 0, 0, 0, NULL} /* fewer than 8 tiles a slice */,
            {48, 0, 0, 0, EVT_NORMS_CALLS, 1, 33, 64, NULL},
            {64, 0, 0, 0, EVT_NORMS_AUTO, 1, 33, 64, "qwen3-0.6b"}, {72, 0, 0, 0, EVT_NORMS_AUTO, 0, 0, 0, "qwen3-0.6b"},
            {96, 0, 0, 0, EVT_NORMS_AUTO, 0, 0, 0, "qwen3-0.6b"}, {97, 0, 0, 0, EVT_NORMS_AUTO, 1, 97, 128, "qwen3-0.6b"},
            {128, 0, 0, 0, EVT_NORMS_AUTO, 1, 97, 128, "qwen3-0.6b"}};
        for (size_t k = 0; k < sizeof dv / sizeof dv[0]; k++) {
            const char *model = dv[k].model ? dv[k].model : "qwen3-8b";
            const int L = dv[k].model ? 27 : 35; /* the last layer */
            evt_decode_opts o = {.model = model, .batch = dv[k].batch, .ctx = 8, .steps = 1, .norms = dv[k].norms};
            o.build.dn_slices = o.build.o_slices = dv[k].dn;
            o.build.target_tasks = dv[k].tiles;
            o.run.tma_ring = dv[k].ring;
            evt_qwen3_config c;
            char *text = NULL;
            evt_diag d = {0};
            assert_int_equal(evt_decode_program(&o, &c, &text, &d), EVT_OK);
            char want[256], want_o[64], want_n2[64];
            snprintf(want, sizeof want, "call l%d_dn = linear_part(l%d_a, l%d_wd, l%d_dp) over (nb) in [(1 + 3 * min(1, %d / B) * min(1, B / %d)) * (131 / ",
                     L, L, L, L, dv[k].to, dv[k].from);
            snprintf(want_o, sizeof want_o, "call l%d_oproj = linear_part(", L);
            snprintf(want_n2, sizeof want_n2, "call l%d_n2 = add_rmsnorm(", L);
            const int dn = strstr(text, want) != NULL, op = strstr(text, want_o) != NULL, n2 = strstr(text, want_n2) != NULL;
            if (dn != dv[k].sliced || op != dv[k].sliced || n2 != dv[k].sliced)
                fail_msg("evt_decode, %s at batch %lld (case %zu): down sliced %d (over %d-%d), O %d, add_rmsnorm %d; expected %d", model,
                         (long long)dv[k].batch, k, dn, dv[k].from, dv[k].to, op, n2, dv[k].sliced);
            free(text);
        }
    }
    { /* slices_from / slices_to: the least and the largest sliced batch in the program's expression (above 64 the
         batch-65-128 kernel's TMA forms take a slice too) */
        static const struct { int64_t batch, from, to; const char *want, *want_o, *absent; } rv[] = {
            {32, 17, 0, "call l0_dn = linear_part(l0_a, l0_wd, l0_dp) over (nb) in [(1 + 3 * min(1, 64 / B) * min(1, B / 17)) * (131 / ",
             NULL, "B / 33"},
            {100, 0, 128, "call l0_dn = linear_part(l0_a, l0_wd, l0_dp) over (nb) in [(1 + 3 * min(1, 128 / B) * min(1, B / 33)) * (131 / ",
             "call l0_oproj = linear_part(l0_o, l0_wo, l0_op) over (nb) in [(1 + 3 * min(1, 128 / B) * min(1, B / 33))", "64 / B"}};
        for (size_t k = 0; k < sizeof rv / sizeof rv[0]; k++) {
            evt_decode_opts o = {.model = "qwen3-8b", .batch = rv[k].batch, .ctx = 8, .steps = 1};
            o.build.dn_slices = o.build.o_slices = 4;
            o.build.slices_from = rv[k].from;
            o.build.slices_to = rv[k].to;
            evt_qwen3_config c;
            char *text = NULL;
            evt_diag d = {0};
            assert_int_equal(evt_decode_program(&o, &c, &text, &d), EVT_OK);
            assert_non_null(strstr(text, rv[k].want));
            if (rv[k].want_o) assert_non_null(strstr(text, rv[k].want_o));
            assert_null(strstr(text, rv[k].absent));
            free(text);
        }
    }
    { /* more slices than the down projection has tiles: refused with a message */
        evt_decode_opts o = {.model = "examples/qwen3-tiny.json", .batch = 20, .ctx = 8, .steps = 1, .norms = EVT_NORMS_CALLS};
        o.build.dn_slices = 8;
        o.build.target_tasks = 4;
        evt_qwen3_config c;
        char *text = NULL;
        evt_diag d;
        evt_diag_init(&d, "decode");
        assert_int_not_equal(evt_decode_program(&o, &c, &text, &d), EVT_OK);
        assert_non_null(strstr(d.text, "down-projection slices"));
        evt_diag_free(&d);
    }
    /* decode steps: each checked against its sequential reference; tokens equal, logits close
       (1, 2 and 3 down slices, the last with 2 O slices) */
    char dirs[3][48];
    for (int k = 0; k < 3; k++) {
        snprintf(dirs[k], sizeof dirs[k], "/tmp/evt_test_dn_slices_%d_%d", (int)getpid(), k);
        evt_decode_opts o = {.model = "examples/qwen3-tiny.json", .batch = 33, .ctx = 17, .steps = 2, .backend = EVT_BACKEND_CPU,
                             .check = 1, .quiet = 1, .dump_dir = dirs[k], .norms = EVT_NORMS_CALLS};
        o.run.workers = 3;
        o.build.dn_slices = k + 1;
        o.build.o_slices = k == 2 ? 2 : 0;
        decode_checked(&o, "dn_slices", k + 1);
    }
    for (int k = 1; k < 3; k++) {
        size_t n[2];
        char *buf[2];
        for (int f = 0; f < 2; f++) {
            for (int j = 0; j < 2; j++) {
                char path[200];
                snprintf(path, sizeof path, "%s/%s", dirs[j ? k : 0], f ? "tokens.bin" : "step0_logits.bin");
                buf[j] = read_all(path, &n[j]);
                assert_non_null(buf[j]);
            }
            assert_int_equal(n[0], n[1]);
            if (f) {
                if (memcmp(buf[0], buf[1], n[0])) fail_msg("tokens differ between 1 and %d down slices", k + 1);
            } else {
                const uint16_t *l0 = (const uint16_t *)buf[0], *l1 = (const uint16_t *)buf[1];
                double mx = 0, diff = 0;
                for (size_t i = 0; i < n[0] / 2; i++) {
                    mx = fmax(mx, fabs(fb(l0[i])));
                    diff = fmax(diff, fabs(fb(l0[i]) - fb(l1[i])));
                }
                if (diff > 2e-2 * mx) fail_msg("logits differ by %g (largest %g) between 1 and %d down slices", diff, mx, k + 1);
            }
            free(buf[0]);
            free(buf[1]);
        }
    }
    for (int k = 0; k < 3; k++) remove_dump(dirs[k]);
}

/* the LM head's tiles: two waves of target_tasks in every program evt_decode
   builds (evt_qwen3_opts.lm_waves), as many as asked for (at most one a
   vocabulary row); and any tiling computes the same logits, bitwise, on the
   CPU backend */
static void decode_lm_head_waves(void **state)
{
    (void)state;
    static const struct { const char *model; int64_t batch, waves; evt_decode_norms norms; const char *lm; } v[] = {
        {"qwen3-0.6b", 1, 0, EVT_NORMS_AUTO, "logits, 262) over (nb) in [262]"},
        {"qwen3-0.6b", 16, 0, EVT_NORMS_AUTO, "logits, 262) over (nb) in [262]"},
        {"qwen3-0.6b", 17, 0, EVT_NORMS_AUTO, "logits, 262) over (nb) in [262]"},
        {"qwen3-0.6b", 1, 0, EVT_NORMS_CALLS, "logits, 262) over (nb) in [262]"},
        {"qwen3-8b", 100, 0, EVT_NORMS_AUTO, "logits, 262) over (nb) in [262]"},
        {"qwen3-0.6b", 1, 1, EVT_NORMS_AUTO, "logits, 131) over (nb) in [131]"},
        {"qwen3-8b", 64, 3, EVT_NORMS_AUTO, "logits, 393) over (nb) in [393]"},
        {"examples/qwen3-tiny.json", 1, 0, EVT_NORMS_AUTO, "logits, 256) over (nb) in [256]"},
        {"examples/qwen3-tiny.json", 20, 0, EVT_NORMS_AUTO, "logits, 256) over (nb) in [256]"},
        {"examples/qwen3-tiny.json", 20, 1, EVT_NORMS_AUTO, "logits, 131) over (nb) in [131]"},
        {"examples/qwen3-tiny.json", 1, 64, EVT_NORMS_AUTO, "logits, 256) over (nb) in [256]"},
    };
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        evt_decode_opts o = {.model = v[k].model, .batch = v[k].batch, .ctx = 8, .steps = 1, .norms = v[k].norms};
        o.build.lm_waves = v[k].waves;
        evt_qwen3_config c;
        char *text = NULL;
        evt_diag d = {0};
        assert_int_equal(evt_decode_program(&o, &c, &text, &d), EVT_OK);
        if (!strstr(text, v[k].lm)) fail_msg("%s batch %lld, lm_waves %lld: no '%s'", v[k].model, (long long)v[k].batch, (long long)v[k].waves, v[k].lm);
        free(text);
    }
    /* one, two (the default here) and three waves: checked against the
       sequential reference, and the same logits and tokens */
    char dirs[3][48];
    for (int k = 0; k < 3; k++) {
        snprintf(dirs[k], sizeof dirs[k], "/tmp/evt_test_lm_waves_%d_%d", (int)getpid(), k);
        evt_decode_opts o = {.model = "examples/qwen3-tiny.json", .batch = 33, .ctx = 17, .steps = 2, .backend = EVT_BACKEND_CPU,
                             .check = 1, .quiet = 1, .dump_dir = dirs[k]};
        o.run.workers = 3;
        o.build.target_tasks = 50; /* 50, 100 and 150 tiles of the 256 rows: ragged */
        o.build.lm_waves = k == 1 ? 0 : k + 1;
        decode_checked(&o, "lm_waves", k + 1);
    }
    const char *files[] = {"step0_logits.bin", "tokens.bin"};
    for (int k = 1; k < 3; k++)
        for (int f = 0; f < 2; f++) {
            size_t n[2];
            char *buf[2];
            for (int j = 0; j < 2; j++) {
                char path[128];
                snprintf(path, sizeof path, "%s/%s", dirs[j ? k : 0], files[f]);
                buf[j] = read_all(path, &n[j]);
                assert_non_null(buf[j]);
            }
            assert_int_equal(n[0], n[1]);
            if (memcmp(buf[0], buf[1], n[0])) fail_msg("%s differs between one and %d waves of LM-head tiles", files[f], k + 1);
            free(buf[0]);
            free(buf[1]);
        }
    for (int k = 0; k < 3; k++) remove_dump(dirs[k]);
}

/* a kernel without the run loop (EVT_LLM_ATTN_ONE_REQUEST) refuses a
   program whose attention tasks serve runs of requests, with a message that
   names the call, and takes the one-request program */
static void one_request_define_refuses_runs(void **state)
{
    (void)state;
    for (int64_t batch = 1; batch <= 64; batch += 63) {
        evt_decode_opts o = {.model = "examples/qwen3-tiny.json", .batch = batch, .ctx = 8, .steps = 1};
        evt_qwen3_config c;
        char *text = NULL;
        evt_diag d = {0};
        assert_int_equal(evt_decode_program(&o, &c, &text, &d), EVT_OK);
        evt_graph *g = evt_parse(text, strlen(text), &d);
        assert_non_null(g);
        evt_compile_opts co = {.cuda_defines = "EVT_LLM_NO_TMA EVT_LLM_ATTN_ONE_REQUEST"};
        evt_plan *p = NULL;
        evt_status st = evt_compile(g, &co, &p, &d);
        if (batch == 1) assert_int_equal(st, EVT_OK);
        else {
            assert_int_equal(st, EVT_ERR_VERIFY);
            assert_non_null(strstr(d.text, "call l0_at: the kernel is compiled with EVT_LLM_ATTN_ONE_REQUEST"));
        }
        evt_plan_free(p);
        evt_graph_free(g);
        free(text);
        evt_diag_free(&d);
    }
}

static void decode_tma_ring_policy(void **state)
{
    (void)state;
    static const struct { int64_t hidden, batch; int requested, want; } v[] = {
        /* hidden size 1024 (qwen3-0.6b): from batch 33 */
        {1024, 1, 0, 0}, {1024, 17, 0, 0}, {1024, 32, 0, 0}, {1024, 33, 0, EVT_DECODE_TMA_RING},
        {1024, 49, 0, EVT_DECODE_TMA_RING}, {1024, 64, 0, EVT_DECODE_TMA_RING},
        {1024, 65, 0, EVT_DECODE_TMA_RING} /* x in two boxes, one stream of the band */,
        {1024, 128, 0, EVT_DECODE_TMA_RING}, {1024, 129, 0, 0},
        /* 2048 and more (qwen3-1.7b, -8b): from batch 17 */
        {2047, 17, 0, 0}, {2048, 16, 0, 0}, {2048, 17, 0, EVT_DECODE_TMA_RING}, {4096, 24, 0, EVT_DECODE_TMA_RING},
        {4096, 32, 0, EVT_DECODE_TMA_RING}, {4096, 128, 0, EVT_DECODE_TMA_RING}, {4096, 129, 0, 0},
        /* a request wins at any batch and width */
        {1024, 64, -1, -1} /* --tma-ring 0 */, {4096, 24, -1, -1}, {1024, 8, 65536, 65536} /* --tma-ring 65536 */,
        {1024, 100, 98304, 98304}};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        const int got = evt_decode_tma_ring(v[k].hidden, v[k].batch, v[k].requested);
        if (got != v[k].want)
            fail_msg("evt_decode_tma_ring(%lld, %lld, %d) = %d, want %d", (long long)v[k].hidden, (long long)v[k].batch,
                     v[k].requested, got, v[k].want);
    }
    /* the norms: folded everywhere but UNFOLDED, fused up to batch 16 (AUTO) */
    int fold = -1;
    assert_true(evt_decode_fuse_norm(1, EVT_NORMS_AUTO, &fold) && fold == 1);
    assert_true(evt_decode_fuse_norm(EVT_DECODE_FUSE_NORM_MAX_BATCH, EVT_NORMS_AUTO, &fold) && fold == 1);
    assert_true(!evt_decode_fuse_norm(EVT_DECODE_FUSE_NORM_MAX_BATCH + 1, EVT_NORMS_AUTO, &fold) && fold == 1);
    assert_true(evt_decode_fuse_norm(128, EVT_NORMS_FUSED, &fold) && fold == 1);
    assert_true(!evt_decode_fuse_norm(1, EVT_NORMS_CALLS, &fold) && fold == 1);
    assert_true(!evt_decode_fuse_norm(1, EVT_NORMS_UNFOLDED, &fold) && fold == 0);
}

static void tiny_decode(void **state)
{
    (void)state;
    evt_sched_kind s[] = {EVT_SCHED_STATIC, EVT_SCHED_DYNAMIC, EVT_SCHED_UNFUSED, EVT_SCHED_KBK, EVT_SCHED_GRAPH, EVT_SCHED_HYBRID};
    for (int k = 0; k < 6; k++) {
        evt_decode_opts o = {.model = "examples/qwen3-tiny.json", .batch = 1 + 3 * k, .ctx = 20 + k, .steps = 3,
                             .backend = EVT_BACKEND_CPU, .check = 1, .quiet = 1};
        o.run.sched = s[k];
        o.run.workers = 3 + k;
        o.run.early_push = k == 1;
        o.build.row_events = k == 2;
        o.build.qkv_per_head = k == 3;
        o.build.split_rope = k == 4;
        /* B = 1, 4, 7, 10, 13, 16: the classic norms, fused twice, folded
           calls, and the default (fused up to 16) twice */
        static const evt_decode_norms norms[] = {EVT_NORMS_UNFOLDED, EVT_NORMS_FUSED, EVT_NORMS_CALLS, EVT_NORMS_AUTO, EVT_NORMS_FUSED,
                                                 EVT_NORMS_AUTO};
        o.norms = norms[k];
        o.build.target_tasks = k == 0 ? 5 : k == 5 ? 7 : 0; /* ragged QKV tiles that straddle heads */
        evt_decode_result r;
        evt_diag d;
        evt_diag_init(&d, "decode");
        evt_status st = evt_decode(&o, &r, &d);
        if (st) fail_msg("%s: %s", evt_sched_name(s[k]), d.text);
        assert_int_equal(r.steps_checked, 3);
        assert_int_equal(r.check_failed, 0);
        evt_diag_free(&d);
    }
    /* norm partials: checked against the sequential reference, every
       schedule bitwise the static one's, and the same model as the norm
       calls (both over the folded weights) to bf16 rounding: the same next
       tokens, logits within 2e-2 */
    {
        char dir[2][48];
        for (int form = 0; form < 2; form++) {
            snprintf(dir[form], sizeof dir[form], "/tmp/evt_test_partials_%d_%d", (int)getpid(), form);
            evt_decode_opts o = {.model = "examples/qwen3-tiny.json", .batch = 20, .ctx = 19, .steps = 2,
                                 .backend = EVT_BACKEND_CPU, .check = 1, .quiet = 1, .nalso = 4,
                                 .also = {EVT_SCHED_KBK, EVT_SCHED_UNFUSED, EVT_SCHED_DYNAMIC, EVT_SCHED_HYBRID}};
            o.run.workers = 4;
            o.norms = form ? EVT_NORMS_PARTIALS : EVT_NORMS_CALLS;
            o.dump_dir = dir[form];
            evt_decode_result r;
            evt_diag d;
            evt_diag_init(&d, "decode");
            if (evt_decode(&o, &r, &d)) fail_msg("norms form %d: %s", form, d.text);
            assert_int_equal(r.steps_checked, 2);
            assert_int_equal(r.check_failed, 0);
            for (int k = 0; k < 4; k++)
                if (r.also_logit_err[k] != 0 || r.also_next_diff[k] != 0)
                    fail_msg("norms form %d, %s: logits differ by %g", form, evt_sched_name(o.also[k]), r.also_logit_err[k]);
            evt_diag_free(&d);
        }
        size_t n[2][2] = {{0}};
        void *buf[2][2] = {{0}};
        static const char *files[2] = {"step0_logits.bin", "step0_next.bin"};
        for (int form = 0; form < 2; form++)
            for (int f = 0; f < 2; f++) {
                char path[128];
                snprintf(path, sizeof path, "%s/%s", dir[form], files[f]);
                FILE *fp = fopen(path, "rb");
                assert_non_null(fp);
                buf[form][f] = malloc(1 << 22);
                n[form][f] = fread(buf[form][f], 1, 1 << 22, fp);
                fclose(fp);
            }
        assert_true(n[0][0] == n[1][0] && n[0][0] > 0 && n[0][1] == n[1][1] && n[0][1] > 0);
        assert_memory_equal(buf[0][1], buf[1][1], n[0][1]); /* the same next tokens */
        const uint16_t *l0 = buf[0][0], *l1 = buf[1][0];
        double err = 0, scale = 0;
        for (size_t i = 0; i < n[0][0] / 2; i++) {
            double u = evt_bf16_to_f32(l0[i]), v = evt_bf16_to_f32(l1[i]);
            err = fmax(err, fabs(u - v));
            scale = fmax(scale, fabs(u));
        }
        if (!(scale > 0 && err / scale < 2e-2)) fail_msg("partials vs calls: logits within %g", scale > 0 ? err / scale : -1.0);
        for (int form = 0; form < 2; form++) {
            for (int f = 0; f < 2; f++) free(buf[form][f]);
            char cmd[160];
            snprintf(cmd, sizeof cmd, "rm -rf %s", dir[form]);
            assert_int_equal(system(cmd), 0);
        }
    }
    /* the same step kernel by kernel, in a graph, unfused and dynamic: the
       same tiles in another order give bitwise the same logits on the CPU;
       also with one split per request (the attention writes o, no merges) */
    for (int splits = 0; splits < 2; splits++) {
        evt_decode_opts o = {.model = "examples/qwen3-tiny.json", .batch = 5, .ctx = 17, .steps = 2,
                             .backend = EVT_BACKEND_CPU, .quiet = 1, .nalso = 5,
                             .also = {EVT_SCHED_KBK, EVT_SCHED_GRAPH, EVT_SCHED_UNFUSED, EVT_SCHED_DYNAMIC, EVT_SCHED_HYBRID}};
        o.run.workers = 3;
        o.build.attn_splits = splits;
        evt_decode_result r;
        evt_diag d;
        evt_diag_init(&d, "decode");
        if (evt_decode(&o, &r, &d)) fail_msg("splits %d: %s", splits, d.text);
        for (int k = 0; k < 5; k++) {
            assert_true(r.also_ms[k] > 0);
            if (r.also_logit_err[k] != 0 || r.also_next_diff[k] != 0)
                fail_msg("splits %d, %s: logits differ by %g, %lld next tokens differ", splits, evt_sched_name(o.also[k]),
                         r.also_logit_err[k], (long long)r.also_next_diff[k]);
        }
        evt_diag_free(&d);
    }
    /* attention with q/k norm + RoPE inside (the default) and as calls of
       their own (the ablation): the same logits and tokens, bitwise; with one
       split per request (--splits 1) also the attention tasks writing o
       themselves (the default) and merge tasks after them (--merge-one-split) */
    {
        /* ... and with several requests a task (attn_rows 2, 3 or 4 of the 4
           rows: tiles/attn_requests.h), one split or eight */
        enum { NV = 10 };
        static const struct { int splits, split_rope, merge_one_split, merge_tasks, attn_rows, same_as; } v[NV] = {
            {0, 0, 0, 0, 0, -1}, {0, 1, 0, 0, 0, 0}, {1, 0, 0, 0, 0, -1}, {1, 0, 1, 0, 0, 2}, {1, 1, 0, 0, 0, 2}, {0, 0, 0, 1, 0, 0},
            {1, 0, 0, 0, 3, 2},  {1, 0, 0, 0, 4, 2}, {0, 0, 0, 0, 2, 0},  {0, 0, 0, 0, 3, 0}};
        char dirs[NV][64];
        for (int k = 0; k < NV; k++) {
            snprintf(dirs[k], sizeof dirs[k], "/tmp/evt-rope-XXXXXX");
            assert_non_null(mkdtemp(dirs[k]));
            evt_decode_opts o = {.model = "examples/qwen3-tiny.json", .batch = 4, .ctx = 23, .steps = 4,
                                 .backend = EVT_BACKEND_CPU, .quiet = 1, .dump_dir = dirs[k]};
            o.run.workers = 3;
            o.build.attn_splits = v[k].splits;
            o.build.split_rope = v[k].split_rope;
            o.build.merge_one_split = v[k].merge_one_split;
            o.build.merge_tasks = v[k].merge_tasks;
            o.build.attn_rows = v[k].attn_rows;
            evt_decode_result r;
            evt_diag d;
            evt_diag_init(&d, "decode");
            if (evt_decode(&o, &r, &d)) fail_msg("variant %d: %s", k, d.text);
            evt_diag_free(&d);
        }
        const char *files[] = {"step0_logits.bin", "tokens.bin"};
        for (int k = 0; k < NV; k++)
            for (int f = 0; f < 2 && v[k].same_as >= 0; f++) {
                size_t n[2];
                char *buf[2];
                for (int j = 0; j < 2; j++) {
                    char path[128];
                    snprintf(path, sizeof path, "%s/%s", dirs[j ? k : v[k].same_as], files[f]);
                    buf[j] = read_all(path, &n[j]);
                    assert_non_null(buf[j]);
                }
                assert_int_equal(n[0], n[1]);
                if (memcmp(buf[0], buf[1], n[0]))
                    fail_msg("%s differs between variants %d and %d (splits %d, split_rope %d, merge_one_split %d, merge_tasks %d, "
                             "attn_rows %d)", files[f], v[k].same_as, k, v[k].splits, v[k].split_rope, v[k].merge_one_split,
                             v[k].merge_tasks, v[k].attn_rows);
                free(buf[0]);
                free(buf[1]);
            }
        for (int k = 0; k < NV; k++) {
            char cmd[800];
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", dirs[k]);
            assert_int_equal(system(cmd), 0);
        }
    }
    /* bad requests are errors, not crashes */
    evt_decode_opts bad = {.model = "no-such-model", .batch = 1, .ctx = 8, .steps = 1, .quiet = 1};
    evt_decode_result r;
    evt_diag d;
    evt_diag_init(&d, "decode");
    assert_int_not_equal(evt_decode(&bad, &r, &d), EVT_OK);
    bad.model = "examples/qwen3-tiny.json";
    bad.batch = 0;
    assert_int_equal(evt_decode(&bad, &r, &d), EVT_ERR_SHAPE);
    bad.batch = 4;
    bad.build.max_batch = 2; /* the program's bound on B */
    assert_int_equal(evt_decode(&bad, &r, &d), EVT_ERR_SHAPE);
    evt_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(linear_and_mlp),
        cmocka_unit_test(norm_and_rope),
        cmocka_unit_test(attention),
        cmocka_unit_test(fused_attention),
        cmocka_unit_test(grouped_prefill_tiles),
        cmocka_unit_test(fused_attention_without_rope_row),
        cmocka_unit_test(attention_requests),
        cmocka_unit_test(rope_initializer),
        cmocka_unit_test(argmax_ties),
        cmocka_unit_test(fused_norm_tiles),
        cmocka_unit_test(norm_partial_tiles),
        cmocka_unit_test(config_and_program),
        cmocka_unit_test(reduction_tasks),
        cmocka_unit_test(check_tolerance),
        cmocka_unit_test(decode_tma_ring_policy),
        cmocka_unit_test(decode_cuda_defines_policy),
        cmocka_unit_test(prefill_kernel_options),
        cmocka_unit_test(decode_waits_in_tile_models),
        cmocka_unit_test(decode_gate_up_every_models),
        cmocka_unit_test(decode_small_program_one_request),
        cmocka_unit_test(decode_lm_head_waves),
        cmocka_unit_test(decode_down_slices),
        cmocka_unit_test(one_request_define_refuses_runs),
        cmocka_unit_test(tiny_decode),
        cmocka_unit_test(decode_check_step_ties),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
