/* llm.c — decode-step tile operators for dense transformers (Qwen3), C
 * reference. bf16 storage, f32 accumulation, one rounding to bf16 per output.
 * Floating-point parameters arrive as integers: eps_e12 = eps * 1e12,
 * theta = RoPE base.
 *
 *   embed(tok[B], E[V, H], x[B, H])                     over (b)
 *   rmsnorm(x[B, H], w[H], y[B, H], eps_e12)            over (b)
 *   linear(x[B, K], W[N, K], y[B, N], T)                over (nb): y[:, rows] = x W[rows]^T
 *   linear_res(x[B, K], W[N, K], r[B, N], y[B, N], T)   over (nb): y = r + x W^T
 *   mlp_up(x[B, K], Wg[I, K], Wu[I, K], a[B, I], T)     over (nb): a = silu(x Wg^T) * (x Wu^T)
 *       T tiles of (nearly) equal size: tile nb holds rows [nb*N/T, (nb+1)*N/T)
 *       (integer division), so any T <= N balances, e.g. one tile per SM
 *   rms_linear(x[B, K], W[N, K], y[B, N], T, eps_e12)            over (nb)
 *   rms_mlp_up(x[B, K], Wg[I, K], Wu[I, K], a[B, I], T, eps_e12) over (nb)
 *       linear / mlp_up of rmsnorm(x) with the norm inside the tile and its
 *       weight wn folded into the matrices beforehand (W = bf16(W0 diag(wn)),
 *       done once when the weights are made or loaded): every tile computes
 *       the row scales s[b] = rsqrt(mean(x[b]^2) + eps) itself (the norm
 *       needs no task, event or handoff of its own) and applies them after
 *       the dot product: y = s[b] * (x W^T) (the unfused form rounds
 *       x * s * wn to bf16 and W0 stays apart; the two agree to bf16
 *       rounding)
 *   linear_res_ss(x[B, K], W[N, K], r[B, N], y[B, N], part[B, T], ss[B], cnt[1], T)  over (nb)
 *       linear_res, and the new rows' sums of squares: part[b, nb] = the sum of
 *       y[b, n]^2 (as stored, bf16) over the tile's columns; the tile that
 *       finishes last (an acq_rel fetch-add on cnt, which it sets back to 0:
 *       `= zeros`) adds each row's T partials in order into ss[b]
 *   linear_part(x[B, K], W[N, K], part[KP, B, N])       over (nb) in [KP x bands]
 *       band nb % bands of rows over k slice nb / bands: part[s, :, rows] =
 *       x[:, slice s] W[rows, slice s]^T in f32 (the down projection in k
 *       slices: each tile reads 1 / KP of x)
 *   add_rmsnorm(r[B, H], part[KP, B, H], w[H], y[B, H], h[B, H], eps_e12)  over (b)
 *       y = r + the sum of the slices (in order), h = rmsnorm(y) * w
 *   ss_linear(x[B, K], W[N, K], y[B, N], ss[B], T, eps_e12)          over (nb)
 *   ss_mlp_up(x[B, K], Wg[I, K], Wu[I, K], a[B, I], ss[B], T, eps_e12) over (nb)
 *       rms_linear / rms_mlp_up with s[b] = rsqrt(ss[b] / K + eps): the row's
 *       sum of squares from linear_res_ss, not from x (norm partials: no norm
 *       task, and no tile summing all of x, which is what made fused norms
 *       lose above batch 16)
 *   q_rope(qkv[B, Nqkv], wq[hd], pos[B], q[B, nh, hd], eps_e12, theta)   over (b, h)
 *       per-head RMSNorm of q head h, then rotate-half RoPE at position pos[b]
 *   k_rope_append(qkv, wk[hd], pos[B], bt[B, MP], kc[NP, PS, nkv, hd], vc[...], nh, eps_e12, theta)
 *                                                        over (b, g)
 *       per-head RMSNorm + RoPE of k head g; k and v head g written to the
 *       paged cache at position pos[b]: page bt[b, pos / PS], slot pos % PS
 *   attn_split(q[B, nh, hd], kc, vc, bt, pos, part[B, nh, S, hd + 2])  over (b, h, s)
 *       split s of positions 0..pos[b]: running max, sum and unnormalised
 *       output of softmax(q k / sqrt(hd)) v, for the kv head h / (nh / nkv)
 *   attn_rope_split(qkv, wq[hd], wk[hd], pos[B], bt, kc, vc, part, o, pc[B, MG], rope[P, hd], eps_e12, merge_last)
 *                                                        over (b, g, s)
 *       q_rope, k_rope_append and attn_split in one task for the nh / nkv
 *       q heads of kv head g (grouped-query attention: the cache of g is read
 *       once for all of them): q heads normed and rotated in place; the split
 *       holding position pos[b] computes the new k and v itself and writes
 *       them to the cache, the others read only older positions; with one
 *       split (S = 1) the task also writes its heads of o[B, nh * hd] as
 *       attn_merge would, so that no merge has to run after it; with
 *       merge_last and S > 1, the task that finishes a merge group last (the
 *       kv heads of P element [b, g * MG / nkv]: nkv / MG x S tasks, counted
 *       in pc[b, g * MG / nkv] by an acq_rel fetch-add) merges the group's q
 *       heads into o as attn_merge_group would and sets the count back to 0,
 *       so that no merge task runs after the attention at any split count
 *       (pc starts at 0: `= zeros`, and the runtime zeroes it again after an
 *       aborted launch); the angles come from row pos[b] of rope, the table
 *       that `rope(theta=...)` fills (tiles/rope.h: bitwise the angles q_rope
 *       and k_rope_append compute), so no task computes them (on the GPU a
 *       double pow + sincos gated the norm: ~2.3 us of a task)
 *   attn_merge(part[B, nh, S, hd + 2], o[B, nh * hd])   over (b, h)
 *       the S splits of head h merged and normalised into o[b, head h]
 *   attn_merge_group(part, o, G)   over (b, g): attn_merge of heads g*G .. g*G+G-1
 *       (one task per kv group: G times fewer tasks and notifies)
 *   argmax_part(logits[B, V], pv[B, NC], pi[B, NC])     over (b, c): chunk c = [c*V/NC, (c+1)*V/NC)
 *   argmax_final(pv[B, NC], pi[B, NC], next[B])          over (b): lowest index wins ties
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tiles/tiles_cpu.h"
#include "runtime/half.h"
#include "tiles/rope.h"
#include "tiles/attn_requests.h"

typedef uint16_t bf16;
static inline float ld(const bf16 *p, int64_t i) { return evt_bf16_to_f32(p[i]); }
static inline void st(bf16 *p, int64_t i, float v) { p[i] = evt_f32_to_bf16(v); }

void evt_tile_embed(const evt_task_args *a)
{
    const int32_t *tok = a->t[0].ptr;
    const bf16 *E = a->t[1].ptr;
    bf16 *x = a->t[2].ptr;
    int64_t b = a->coord[0], V = a->t[1].dim[0], H = a->t[1].dim[1];
    int64_t t = tok[b];
    if (t < 0 || t >= V) t = 0; /* out-of-vocabulary ids read row 0 */
    memcpy(x + b * H, E + t * H, H * sizeof(bf16));
}

static float rms_scale(const bf16 *x, int64_t n, int64_t eps_e12)
{
    float ss = 0;
    for (int64_t i = 0; i < n; i++) { float v = ld(x, i); ss += v * v; }
    return 1.0f / sqrtf(ss / (float)n + (float)eps_e12 * 1e-12f);
}

void evt_tile_rmsnorm(const evt_task_args *a)
{
    const bf16 *x = a->t[0].ptr, *w = a->t[1].ptr;
    bf16 *y = a->t[2].ptr;
    int64_t b = a->coord[0], H = a->t[0].dim[1];
    float s = rms_scale(x + b * H, H, a->iarg[0]);
    for (int64_t i = 0; i < H; i++) st(y, b * H + i, ld(x, b * H + i) * s * ld(w, i));
}

static float dot(const bf16 *x, const bf16 *w, int64_t K)
{
    float s = 0;
    for (int64_t k = 0; k < K; k++) s += ld(x, k) * ld(w, k);
    return s;
}

/* Rows [*n0, *n1) of tile nb of T over N rows. */
static void tile_rows(int64_t nb, int64_t T, int64_t N, int64_t *n0, int64_t *n1)
{
    if (T < 1) T = 1;
    *n0 = nb * N / T;
    *n1 = (nb + 1) * N / T < N ? (nb + 1) * N / T : N;
}

/* The weight-stream band of a linear-family task (evt_tile_decl.stream_plan):
 * rows [n0, n1) of W (parameter 1; mlp_up's gate and up: 1 and 2). None
 * where the CUDA tile takes its scalar path (K % 32 != 0): it would not read
 * them from shared memory. */
static int stream_band(const evt_task_args *a, int nmat, evt_stream_band *band)
{
    int64_t K = a->t[0].dim[1], N = a->t[1].dim[0], n0, n1;
    if (K % 32 || a->t[1].dim[1] != K || (nmat > 1 && (a->t[2].dim[0] != N || a->t[2].dim[1] != K))) return 0;
    tile_rows(a->coord[0], a->iarg[0], N, &n0, &n1);
    if (n1 <= n0) return 0;
    band->param[0] = 1;
    band->param[1] = nmat > 1 ? 2 : -1;
    band->row0 = n0;
    band->nrows = n1 - n0;
    band->pitch = K * 2;
    return 1;
}
int evt_tile_linear_stream(const evt_task_args *a, evt_stream_band *band) { return stream_band(a, 1, band); }
int evt_tile_mlp_up_stream(const evt_task_args *a, evt_stream_band *band) { return stream_band(a, 2, band); }

void evt_tile_linear(const evt_task_args *a)
{
    const bf16 *x = a->t[0].ptr, *W = a->t[1].ptr;
    bf16 *y = a->t[2].ptr;
    int64_t B = a->t[0].dim[0], K = a->t[0].dim[1], N = a->t[1].dim[0], n0, n1;
    tile_rows(a->coord[0], a->iarg[0], N, &n0, &n1);
    for (int64_t n = n0; n < n1; n++)
        for (int64_t b = 0; b < B; b++) st(y, b * N + n, dot(x + b * K, W + n * K, K));
}

void evt_tile_linear_res(const evt_task_args *a)
{
    const bf16 *x = a->t[0].ptr, *W = a->t[1].ptr, *r = a->t[2].ptr;
    bf16 *y = a->t[3].ptr;
    int64_t B = a->t[0].dim[0], K = a->t[0].dim[1], N = a->t[1].dim[0], n0, n1;
    tile_rows(a->coord[0], a->iarg[0], N, &n0, &n1);
    for (int64_t n = n0; n < n1; n++)
        for (int64_t b = 0; b < B; b++) st(y, b * N + n, ld(r, b * N + n) + dot(x + b * K, W + n * K, K));
}

/* The down projection in k slices (evt_qwen3_opts.dn_slices): KP = part's
 * first extent slices, grid / KP bands of rows; task nb computes the rows of
 * band nb % (grid / KP) over k slice s = nb / (grid / KP), [s K / KP,
 * (s + 1) K / KP), into part[s] as f32, no residual: add_rmsnorm adds the
 * slices in order to it. */
void evt_tile_linear_part(const evt_task_args *a)
{
    const bf16 *x = a->t[0].ptr, *W = a->t[1].ptr;
    float *part = a->t[2].ptr;
    int64_t B = a->t[0].dim[0], K = a->t[0].dim[1], N = a->t[1].dim[0], KP = a->t[2].dim[0];
    int64_t nbands = KP > 0 ? a->grid[0] / KP : 0, n0, n1;
    if (nbands < 1 || a->coord[0] >= nbands * KP) return; /* the builder makes KP x bands tasks */
    int64_t s = a->coord[0] / nbands, k0 = s * K / KP, k1 = (s + 1) * K / KP;
    tile_rows(a->coord[0] % nbands, nbands, N, &n0, &n1);
    for (int64_t n = n0; n < n1; n++)
        for (int64_t b = 0; b < B; b++) part[(s * B + b) * N + n] = dot(x + b * K + k0, W + n * K + k0, k1 - k0);
}

/* y[b] = r[b] + the KP slices of part[., b] (added in slice order, one
 * rounding to bf16: linear_res's result for the same products), then
 * h[b] = rmsnorm(y[b]) * w as rmsnorm computes it from the stored y. */
void evt_tile_add_rmsnorm(const evt_task_args *a)
{
    const bf16 *r = a->t[0].ptr, *w = a->t[2].ptr;
    const float *part = a->t[1].ptr;
    bf16 *y = a->t[3].ptr, *h = a->t[4].ptr;
    int64_t b = a->coord[0], B = a->t[0].dim[0], H = a->t[0].dim[1], KP = a->t[1].dim[0];
    for (int64_t i = 0; i < H; i++) {
        float acc = 0;
        for (int64_t s = 0; s < KP; s++) acc += part[(s * B + b) * H + i];
        st(y, b * H + i, ld(r, b * H + i) + acc);
    }
    float sc = rms_scale(y + b * H, H, a->iarg[0]);
    for (int64_t i = 0; i < H; i++) st(h, b * H + i, ld(y, b * H + i) * sc * ld(w, i));
}

/* linear_res that also leaves the new rows' sums of squares: each tile
 * writes the sum of y[b, n]^2 (as stored, bf16) over its columns to
 * part[b, nb]; the tile that finishes last (counted in cnt by an acq_rel
 * fetch-add, set back to 0 for the next launch) adds each row's T partials
 * in order into ss[b]. The norm after it (ss_linear / ss_mlp_up) then needs
 * neither a task of its own nor a pass over x. */
void evt_tile_linear_res_ss(const evt_task_args *a)
{
    evt_tile_linear_res(a);
    const bf16 *y = a->t[3].ptr;
    float *part = a->t[4].ptr, *ss = a->t[5].ptr;
    int32_t *cnt = a->t[6].ptr;
    int64_t B = a->t[0].dim[0], N = a->t[1].dim[0], T = a->iarg[0], nb = a->coord[0], n0, n1;
    tile_rows(nb, T, N, &n0, &n1);
    const int shapes = a->t[4].dim[1] == T && a->t[4].dim[0] == B && a->t[5].dim[0] == B; /* else NaN sums, never a silent result */
    for (int64_t b = 0; b < B && shapes; b++) {
        float s = 0;
        for (int64_t n = n0; n < n1; n++) { float v = ld(y, b * N + n); s += v * v; }
        part[b * T + nb] = s;
    }
    if (__atomic_fetch_add(cnt, 1, __ATOMIC_ACQ_REL) + 1 != T) return;
    __atomic_store_n(cnt, 0, __ATOMIC_RELAXED); /* every tile counted: ready for the next launch */
    for (int64_t b = 0; b < a->t[5].dim[0]; b++) {
        float q = shapes ? 0.f : NAN;
        for (int64_t p = 0; p < T && shapes; p++) q += part[b * T + p];
        ss[b] = q;
    }
}

void evt_tile_mlp_up(const evt_task_args *a)
{
    const bf16 *x = a->t[0].ptr, *Wg = a->t[1].ptr, *Wu = a->t[2].ptr;
    bf16 *out = a->t[3].ptr;
    int64_t B = a->t[0].dim[0], K = a->t[0].dim[1], I = a->t[1].dim[0], n0, n1;
    tile_rows(a->coord[0], a->iarg[0], I, &n0, &n1);
    for (int64_t n = n0; n < n1; n++)
        for (int64_t b = 0; b < B; b++) {
            float g = dot(x + b * K, Wg + n * K, K), u = dot(x + b * K, Wu + n * K, K);
            st(out, b * I + n, g / (1.0f + expf(-g)) * u);
        }
}

/* The fused-norm GEMV: rows [n0, n1) of W (and W2 when given, the norm's
 * weight folded into both) against x[b], scaled by the row's rms scale after
 * the dot product: rsqrt(mean(x[b]^2) + eps) from x itself (rms_linear,
 * rms_mlp_up), or, given ss, rsqrt(ss[b] / K + eps) from the rows' sums of
 * squares that linear_res_ss left (ss_linear, ss_mlp_up; a row past ss gets
 * NaN). T and eps_e12 are the tile's iarg[0] and iarg[1]. */
static void rms_rows(const evt_task_args *a, const bf16 *W, const bf16 *W2, bf16 *y, const evt_tensor_ref *ss)
{
    const bf16 *x = a->t[0].ptr;
    int64_t B = a->t[0].dim[0], K = a->t[0].dim[1], N = a->t[1].dim[0], eps_e12 = a->iarg[1], n0, n1;
    tile_rows(a->coord[0], a->iarg[0], N, &n0, &n1);
    for (int64_t b = 0; b < B && n0 < n1; b++) {
        float s = !ss ? rms_scale(x + b * K, K, eps_e12)
                : b < ss->dim[0] ? 1.0f / sqrtf(((const float *)ss->ptr)[b] / (float)K + (float)eps_e12 * 1e-12f)
                                 : NAN;
        for (int64_t n = n0; n < n1; n++) {
            float g = dot(x + b * K, W + n * K, K) * s;
            if (!W2) { st(y, b * N + n, g); continue; }
            float u = dot(x + b * K, W2 + n * K, K) * s;
            st(y, b * N + n, g / (1.0f + expf(-g)) * u);
        }
    }
}

void evt_tile_ss_linear(const evt_task_args *a) { rms_rows(a, a->t[1].ptr, NULL, a->t[2].ptr, &a->t[3]); }
void evt_tile_ss_mlp_up(const evt_task_args *a) { rms_rows(a, a->t[1].ptr, a->t[2].ptr, a->t[3].ptr, &a->t[4]); }
void evt_tile_rms_linear(const evt_task_args *a) { rms_rows(a, a->t[1].ptr, NULL, a->t[2].ptr, NULL); }
void evt_tile_rms_mlp_up(const evt_task_args *a) { rms_rows(a, a->t[1].ptr, a->t[2].ptr, a->t[3].ptr, NULL); }

/* RMSNorm over one head (weight w) then rotate-half RoPE by the angle row
 * cs (cos | sin of one position: evt_rope_row, or a row of the table that
 * rope(theta=...) fills with it). */
static void norm_rope(const bf16 *in, const bf16 *w, int64_t hd, const float *cs, int64_t eps_e12, float *out)
{
    float s = rms_scale(in, hd, eps_e12);
    float v[1024];
    for (int64_t i = 0; i < hd && i < 1024; i++) v[i] = ld(in, i) * s * ld(w, i);
    int64_t half = hd / 2;
    for (int64_t i = 0; i < half; i++) {
        float c = cs[i], sn = cs[half + i];
        out[i] = v[i] * c - v[i + half] * sn;
        out[i + half] = v[i + half] * c + v[i] * sn;
    }
}

/* RMSNorm + RoPE at position p with the angles computed here (q_rope, k_rope_append) */
static void norm_rope_at(const bf16 *in, const bf16 *w, int64_t hd, int64_t p, int64_t eps_e12, int64_t theta, float *out)
{
    float cs[1024]; /* a head fits 1024 floats here, as in norm_rope */
    evt_rope_row((double)theta, hd <= 1024 ? hd : 1024, p, cs);
    norm_rope(in, w, hd, cs, eps_e12, out);
}

void evt_tile_q_rope(const evt_task_args *a)
{
    const bf16 *qkv = a->t[0].ptr, *w = a->t[1].ptr;
    const int32_t *pos = a->t[2].ptr;
    bf16 *q = a->t[3].ptr;
    int64_t b = a->coord[0], h = a->coord[1], nh = a->t[3].dim[1], hd = a->t[3].dim[2], N = a->t[0].dim[1];
    float out[1024];
    norm_rope_at(qkv + b * N + h * hd, w, hd, pos[b], a->iarg[0], a->iarg[1], out);
    for (int64_t i = 0; i < hd; i++) st(q, (b * nh + h) * hd + i, out[i]);
}

static int64_t cache_off(const evt_task_args *a, int ti_bt, int ti_cache, int64_t b, int64_t t, int64_t g)
{
    const int32_t *bt = a->t[ti_bt].ptr;
    int64_t MP = a->t[ti_bt].dim[1], PS = a->t[ti_cache].dim[1], nkv = a->t[ti_cache].dim[2], hd = a->t[ti_cache].dim[3];
    int64_t page = bt[b * MP + t / PS];
    return ((page * PS + t % PS) * nkv + g) * hd;
}

void evt_tile_k_rope_append(const evt_task_args *a)
{
    const bf16 *qkv = a->t[0].ptr, *w = a->t[1].ptr;
    const int32_t *pos = a->t[2].ptr;
    bf16 *kc = a->t[4].ptr, *vc = a->t[5].ptr;
    int64_t b = a->coord[0], g = a->coord[1], N = a->t[0].dim[1];
    int64_t nkv = a->t[4].dim[2], hd = a->t[4].dim[3], nh = a->iarg[0];
    float out[1024];
    norm_rope_at(qkv + b * N + (nh + g) * hd, w, hd, pos[b], a->iarg[1], a->iarg[2], out);
    int64_t off = cache_off(a, 3, 4, b, pos[b], g);
    for (int64_t i = 0; i < hd; i++) {
        st(kc, off + i, out[i]);
        vc[off + i] = qkv[b * N + (nh + nkv + g) * hd + i];
    }
}

/* q_rope for the G q heads of kv head g, then k_rope_append for g, for each
   row of the task's run (the prefill's form: one task a run of rows and kv
   head, the same values; tiles/attn_requests.h) */
void evt_tile_qk_rope_append(const evt_task_args *a)
{
    const bf16 *qkv = a->t[0].ptr, *wq = a->t[1].ptr, *wk = a->t[2].ptr;
    const int32_t *pos = a->t[3].ptr;
    bf16 *kc = a->t[5].ptr, *vc = a->t[6].ptr, *q = a->t[7].ptr;
    int64_t g = a->coord[1], N = a->t[0].dim[1], b0, b1;
    int64_t nkv = a->t[5].dim[2], hd = a->t[5].dim[3], nh = a->t[7].dim[1], G = nh / nkv;
    evt_tile_attn_requests(a, &b0, &b1);
    float out[1024];
    for (int64_t b = b0; b < b1; b++) {
        for (int64_t h = g * G; h < (g + 1) * G; h++) {
            norm_rope_at(qkv + b * N + h * hd, wq, hd, pos[b], a->iarg[0], a->iarg[1], out);
            for (int64_t i = 0; i < hd; i++) st(q, (b * nh + h) * hd + i, out[i]);
        }
        norm_rope_at(qkv + b * N + (nh + g) * hd, wk, hd, pos[b], a->iarg[0], a->iarg[1], out);
        int64_t off = cache_off(a, 4, 5, b, pos[b], g);
        for (int64_t i = 0; i < hd; i++) {
            st(kc, off + i, out[i]);
            vc[off + i] = qkv[b * N + (nh + nkv + g) * hd + i];
        }
    }
}

/* Split [lo, hi) of one (b, h) into dst = (max, sum, unnormalised output):
 * q (hd floats) against the cache of kv head g; position pnew (if in range)
 * uses knew / vnew instead of the cache. */
static void attend(const evt_task_args *a, int ti_bt, int ti_kc, int ti_vc, int64_t b, int64_t g, const float *q,
                   int64_t lo, int64_t hi, int64_t pnew, const float *knew, const float *vnew, float *dst)
{
    const bf16 *kc = a->t[ti_kc].ptr, *vc = a->t[ti_vc].ptr;
    int64_t hd = a->t[ti_kc].dim[3];
    float m = -INFINITY, l = 0, o[1024] = {0};
    float scale = 1.0f / sqrtf((float)hd);
    for (int64_t t = lo; t < hi; t++) {
        int64_t off = t == pnew ? 0 : cache_off(a, ti_bt, ti_kc, b, t, g);
        float d = 0;
        for (int64_t i = 0; i < hd; i++) d += q[i] * (t == pnew ? knew[i] : ld(kc, off + i));
        float sc = d * scale;
        float mn = sc > m ? sc : m;
        float corr = expf(m - mn), p = expf(sc - mn);
        l = l * corr + p;
        for (int64_t i = 0; i < hd; i++) o[i] = o[i] * corr + p * (t == pnew ? vnew[i] : ld(vc, off + i));
        m = mn;
    }
    dst[0] = m;
    dst[1] = l;
    for (int64_t i = 0; i < hd; i++) dst[2 + i] = o[i];
}

/* Positions [lo, hi) of split s of 0..L-1 (empty when lo >= hi). */
static void split_range(int64_t L, int64_t S, int64_t s, int64_t *lo, int64_t *hi)
{
    int64_t chunk = (L + S - 1) / S;
    *lo = s * chunk;
    *hi = *lo + chunk < L ? *lo + chunk : L;
}

/* o[b, h] = the splits of part[B, nh, S, hd + 2][b, h] merged and normalised. */
static void merge_head(const float *part, bf16 *o, int64_t nh, int64_t S, int64_t hd, int64_t b, int64_t h)
{
    const float *p = part + (b * nh + h) * S * (hd + 2);
    float M = -INFINITY;
    for (int64_t s = 0; s < S; s++) if (p[s * (hd + 2)] > M) M = p[s * (hd + 2)];
    float L = 0, acc[1024] = {0};
    for (int64_t s = 0; s < S; s++) {
        const float *ps = p + s * (hd + 2);
        if (ps[1] == 0) continue; /* empty split */
        float w = expf(ps[0] - M);
        L += ps[1] * w;
        for (int64_t i = 0; i < hd; i++) acc[i] += ps[2 + i] * w;
    }
    for (int64_t i = 0; i < hd; i++) st(o, b * nh * hd + h * hd + i, L != 0 ? acc[i] / L : 0); /* NaN partials: NaN */
}

/* attn_split for the n q heads h0 .. h0 + n of row b (their kv head's
   cache), split s of its positions */
static void attn_split_heads(const evt_task_args *a, int64_t b, int64_t h0, int64_t n, int64_t s)
{
    const bf16 *q = a->t[0].ptr;
    const int32_t *pos = a->t[4].ptr;
    float *part = a->t[5].ptr;
    int64_t nh = a->t[0].dim[1], hd = a->t[0].dim[2], nkv = a->t[1].dim[2], S = a->t[5].dim[2], lo, hi;
    split_range((int64_t)pos[b] + 1, S, s, &lo, &hi);
    float qf[1024];
    for (int64_t h = h0; h < h0 + n; h++) {
        for (int64_t i = 0; i < hd; i++) qf[i] = ld(q, (b * nh + h) * hd + i);
        attend(a, 3, 1, 2, b, h / (nh / nkv), qf, lo, hi, -1, NULL, NULL, part + ((b * nh + h) * S + s) * (hd + 2));
    }
}

void evt_tile_attn_split(const evt_task_args *a) { attn_split_heads(a, a->coord[0], a->coord[1], 1, a->coord[2]); }

/* attn_split for the G q heads of kv head g (the prefill's form: the
   group's keys and values read once a task on the GPU; the same values) */
void evt_tile_attn_split_group(const evt_task_args *a)
{
    const int64_t G = a->t[0].dim[1] / a->t[1].dim[2];
    attn_split_heads(a, a->coord[0], a->coord[1] * G, G, a->coord[2]);
}

/* attn_rope_split for request b (the task's kv head and split) */
static void attn_rope_one(const evt_task_args *a, int64_t b)
{
    const bf16 *qkv = a->t[0].ptr, *wq = a->t[1].ptr, *wk = a->t[2].ptr;
    const int32_t *pos = a->t[3].ptr;
    bf16 *kc = a->t[5].ptr, *vc = a->t[6].ptr;
    float *part = a->t[7].ptr;
    int64_t g = a->coord[1], s = a->coord[2], N = a->t[0].dim[1];
    int64_t nkv = a->t[5].dim[2], hd = a->t[5].dim[3], nh = a->t[7].dim[1], S = a->t[7].dim[2];
    int64_t G = nh / nkv, p = pos[b], lo, hi;
    split_range(p + 1, S, s, &lo, &hi);
    /* the angles of position p: row p of the rope table. A table without
       that row (or of another width) gives NaN partials and o, as the CUDA
       tile's fallback does: never a read past the table, never a silent
       result (the merges below carry the NaN into o) */
    const float *cs = a->t[10].ptr;
    if (p < 0 || p >= a->t[10].dim[0] || a->t[10].dim[1] != hd) {
        for (int64_t h = g * G; h < (g + 1) * G; h++) {
            float *dst = part + ((b * nh + h) * S + s) * (hd + 2);
            for (int64_t i = 0; i < hd + 2; i++) dst[i] = NAN;
            for (int64_t i = 0; S == 1 && i < hd; i++) st(a->t[8].ptr, (b * nh + h) * hd + i, NAN);
        }
    } else {
        cs += p * hd;
        /* q and the new k round to bf16 as the separate q_rope / k_rope_append
           tiles store them: both forms give the same result */
        float qf[1024], kf[1024], vf[1024];
        int has_new = lo <= p && p < hi;
        if (has_new) { /* the new k and v, written to the cache once per group */
            norm_rope(qkv + b * N + (nh + g) * hd, wk, hd, cs, a->iarg[0], kf);
            int64_t off = cache_off(a, 4, 5, b, p, g);
            for (int64_t i = 0; i < hd; i++) {
                kf[i] = evt_bf16_to_f32(evt_f32_to_bf16(kf[i]));
                vf[i] = ld(qkv, b * N + (nh + nkv + g) * hd + i);
                st(kc, off + i, kf[i]);
                vc[off + i] = qkv[b * N + (nh + nkv + g) * hd + i];
            }
        }
        for (int64_t h = g * G; h < (g + 1) * G; h++) {
            norm_rope(qkv + b * N + h * hd, wq, hd, cs, a->iarg[0], qf);
            for (int64_t i = 0; i < hd; i++) qf[i] = evt_bf16_to_f32(evt_f32_to_bf16(qf[i]));
            attend(a, 4, 5, 6, b, g, qf, lo, hi, has_new ? p : -1, kf, vf, part + ((b * nh + h) * S + s) * (hd + 2));
            if (S == 1) merge_head(part, a->t[8].ptr, nh, S, hd, b, h); /* the only split: o as attn_merge writes it */
        }
    }
    if (S > 1 && a->iarg[1]) { /* the merge group's last task merges it */
        int32_t *pc = a->t[9].ptr;
        int64_t MG = a->t[9].dim[1];
        if (MG < 1 || nkv % MG) { /* not a grouping of the kv heads: o is NaN, never silently stale */
            for (int64_t i = 0; i < G * hd; i++) st(a->t[8].ptr, (b * nh + g * G) * hd + i, NAN);
            return;
        }
        int64_t grp = g * MG / nkv, T = nkv / MG * S, GH = nh / MG;
        int32_t *c = pc + b * MG + grp;
        if (__atomic_fetch_add(c, 1, __ATOMIC_ACQ_REL) + 1 == T) { /* the other tasks' partials are visible */
            __atomic_store_n(c, 0, __ATOMIC_RELAXED);                /* every task counted: ready for the next launch */
            for (int64_t h = grp * GH; h < (grp + 1) * GH; h++) merge_head(part, a->t[8].ptr, nh, S, hd, b, h);
        }
    }
}

/* an attn_rope_split task serves its run of requests one after the other
   (tiles/attn_requests.h) */
void evt_tile_attn_rope_split(const evt_task_args *a)
{
    int64_t b0, b1;
    evt_tile_attn_requests(a, &b0, &b1);
    for (int64_t b = b0; b < b1; b++) attn_rope_one(a, b);
}

/* merge_head over the tensors of an attn_merge / attn_merge_group task */
static void merge_task_head(const evt_task_args *a, int64_t b, int64_t h)
{
    merge_head(a->t[0].ptr, a->t[1].ptr, a->t[0].dim[1], a->t[0].dim[2], a->t[0].dim[3] - 2, b, h);
}

void evt_tile_attn_merge(const evt_task_args *a) { merge_task_head(a, a->coord[0], a->coord[1]); }

void evt_tile_attn_merge_group(const evt_task_args *a)
{
    int64_t G = a->iarg[0], nh = a->t[0].dim[1];
    for (int64_t h = a->coord[1] * G; h < (a->coord[1] + 1) * G && h < nh; h++) merge_task_head(a, a->coord[0], h);
}

void evt_tile_argmax_part(const evt_task_args *a)
{
    const bf16 *logits = a->t[0].ptr;
    float *pv = a->t[1].ptr;
    int32_t *pi = a->t[2].ptr;
    int64_t b = a->coord[0], c = a->coord[1], V = a->t[0].dim[1], NC = a->t[1].dim[1], v0, v1;
    tile_rows(c, NC, V, &v0, &v1);
    float best = -INFINITY;
    int64_t bi = v0;
    for (int64_t v = v0; v < v1; v++)
        if (ld(logits, b * V + v) > best) { best = ld(logits, b * V + v); bi = v; }
    pv[b * NC + c] = best;
    pi[b * NC + c] = (int32_t)bi;
}

void evt_tile_argmax_final(const evt_task_args *a)
{
    const float *pv = a->t[0].ptr;
    const int32_t *pi = a->t[1].ptr;
    int32_t *next = a->t[2].ptr;
    int64_t b = a->coord[0], NC = a->t[0].dim[1];
    float best = -INFINITY;
    int32_t bi = 0;
    for (int64_t c = 0; c < NC; c++)
        if (pv[b * NC + c] > best) { best = pv[b * NC + c]; bi = pi[b * NC + c]; }
    next[b] = bi;
}
