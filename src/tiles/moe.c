/* moe.c — a toy mixture-of-experts layer, C reference (papers/000 §2.3).
 *
 *   moe_route(x[T, D], wg[D, E], topk[T, K], topw[T, K], indptr[E+1], pos[T, K], row_tok[T*K])
 *       one task: logits = x @ wg; top-K experts per token (ties: lower id);
 *       topw = softmax over the chosen logits; then the grouping index as in
 *       moe_index.
 *   moe_index(topk[T, K], indptr[E+1], pos[T, K], row_tok[T*K])
 *       one task: rows grouped expert-major, tokens in order within an
 *       expert; indptr[e] = first row of expert e, pos[t, k] = row of (t, k),
 *       row_tok[r] = token of row r. Entries outside [0, E) get no row.
 *   moe_group(x[T, D], pos[T, K], xg[T*K, D]) over (t, k): xg[pos[t, k]] = x[t]
 *   moe_expert(xg[R, D], w[E, D, H], indptr[E+1], yg[R, H]) over (r):
 *       yg[r] = xg[r] @ w[e] where indptr[e] <= r < indptr[e+1]
 *   moe_combine(yg[R, H], pos[T, K], topw[T, K], y[T, H]) over (t):
 *       y[t] = sum over k (in order) of topw[t, k] * yg[pos[t, k]]
 */
#include <math.h>
#include "tiles/tiles_cpu.h"
#include "tiles/moe_index.h"

void evt_tile_moe_index(const evt_task_args *a)
{
    int64_t T = a->t[0].dim[0], K = a->t[0].dim[1], E = a->t[1].dim[0] - 1;
    evt_moe_build_index(a->t[0].ptr, T, K, E, a->t[1].ptr, a->t[2].ptr, a->t[3].ptr, a->t[3].dim[0]);
}

void evt_tile_moe_route(const evt_task_args *a)
{
    const float *x = a->t[0].ptr, *wg = a->t[1].ptr;
    int32_t *topk = a->t[2].ptr;
    float *topw = a->t[3].ptr;
    int64_t T = a->t[0].dim[0], D = a->t[0].dim[1], E = a->t[1].dim[1], K = a->t[2].dim[1];
    float logits[256];
    if (E > 256) E = 256;
    for (int64_t t = 0; t < T; t++) {
        for (int64_t e = 0; e < E; e++) {
            float s = 0;
            for (int64_t d = 0; d < D; d++) s += x[t * D + d] * wg[d * a->t[1].dim[1] + e];
            logits[e] = s;
        }
        evt_moe_topk(logits, E, K, topk + t * K, topw + t * K);
    }
    evt_moe_build_index(topk, T, K, E, a->t[4].ptr, a->t[5].ptr, a->t[6].ptr, a->t[6].dim[0]);
}

void evt_tile_moe_group(const evt_task_args *a)
{
    const float *x = a->t[0].ptr;
    const int32_t *pos = a->t[1].ptr;
    float *xg = a->t[2].ptr;
    int64_t D = a->t[0].dim[1], K = a->t[1].dim[1], t = a->coord[0], k = a->coord[1];
    int32_t r = pos[t * K + k];
    if (r < 0 || r >= a->t[2].dim[0]) return;
    for (int64_t d = 0; d < D; d++) xg[r * D + d] = x[t * D + d];
}

void evt_tile_moe_expert(const evt_task_args *a)
{
    const float *xg = a->t[0].ptr, *w = a->t[1].ptr;
    const int32_t *indptr = a->t[2].ptr;
    float *yg = a->t[3].ptr;
    int64_t D = a->t[0].dim[1], E = a->t[1].dim[0], H = a->t[1].dim[2], r = a->coord[0];
    int64_t e = 0;
    while (e + 1 < E && indptr[e + 1] <= r) e++;
    const float *we = w + e * D * H;
    for (int64_t h = 0; h < H; h++) {
        float s = 0;
        for (int64_t d = 0; d < D; d++) s += xg[r * D + d] * we[d * H + h];
        yg[r * H + h] = s;
    }
}

void evt_tile_moe_combine(const evt_task_args *a)
{
    const float *yg = a->t[0].ptr, *topw = a->t[2].ptr;
    const int32_t *pos = a->t[1].ptr;
    float *y = a->t[3].ptr;
    int64_t H = a->t[0].dim[1], K = a->t[1].dim[1], t = a->coord[0];
    for (int64_t h = 0; h < H; h++) {
        float s = 0;
        for (int64_t k = 0; k < K; k++) {
            int32_t r = pos[t * K + k];
            if (r >= 0 && r < a->t[0].dim[0]) s += topw[t * K + k] * yg[r * H + h];
        }
        y[t * H + h] = s;
    }
}
