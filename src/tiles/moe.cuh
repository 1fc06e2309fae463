/* moe.cuh — toy mixture-of-experts tiles, CUDA (same function as moe.c).
 *   moe_route: one thread per token computes its logits with unfused
 *       multiply-add (__fmul_rn/__fadd_rn: bitwise the C order, so the top-K
 *       choice matches the reference exactly), then thread 0 builds the
 *       grouping index sequentially (as moe_index).
 *   moe_index / moe_group / moe_expert / moe_combine: as in moe.c, threads
 *       over the row's elements.
 * Everything routed is produced in the same launch: plain loads only. */
#ifndef EVT_TILE_MOE_CUH
#define EVT_TILE_MOE_CUH
#include "device/evt_tile.h"

#include "tiles/moe_index.h"

__device__ __forceinline__ void moe_index_cuda(const evt_task_args *a)
{
    evt_tile_sync();
    if (threadIdx.x == 0) {
        int64_t T = a->t[0].dim[0], K = a->t[0].dim[1], E = a->t[1].dim[0] - 1;
        evt_moe_build_index((const int32_t *)a->t[0].ptr, T, K, E, (int32_t *)a->t[1].ptr, (int32_t *)a->t[2].ptr,
                            (int32_t *)a->t[3].ptr, a->t[3].dim[0]);
    }
}

__device__ __forceinline__ void moe_route_cuda(const evt_task_args *a)
{
    const float *x = (const float *)a->t[0].ptr, *wg = (const float *)a->t[1].ptr;
    int32_t *topk = (int32_t *)a->t[2].ptr;
    float *topw = (float *)a->t[3].ptr;
    int64_t T = a->t[0].dim[0], D = a->t[0].dim[1], E = a->t[1].dim[1], K = a->t[2].dim[1];
    if (E > 256) E = 256;
    for (int64_t t = threadIdx.x; t < T; t += evt_tile_threads()) {
        float logits[256];
        for (int64_t e = 0; e < E; e++) {
            float s = 0;
            for (int64_t d = 0; d < D; d++) s = __fadd_rn(s, __fmul_rn(x[t * D + d], wg[d * a->t[1].dim[1] + e]));
            logits[e] = s;
        }
        evt_moe_topk(logits, E, K, topk + t * K, topw + t * K);
    }
    evt_tile_sync(); /* topk complete before the index is built */
    if (threadIdx.x == 0)
        evt_moe_build_index(topk, T, K, E, (int32_t *)a->t[4].ptr, (int32_t *)a->t[5].ptr, (int32_t *)a->t[6].ptr,
                            a->t[6].dim[0]);
}

__device__ __forceinline__ void moe_group_cuda(const evt_task_args *a)
{
    const float *x = (const float *)a->t[0].ptr;
    const int32_t *pos = (const int32_t *)a->t[1].ptr;
    float *xg = (float *)a->t[2].ptr;
    int64_t D = a->t[0].dim[1], K = a->t[1].dim[1], t = a->coord[0], k = a->coord[1];
    int32_t r = pos[t * K + k];
    if (r < 0 || r >= a->t[2].dim[0]) return;
    for (int64_t d = threadIdx.x; d < D; d += evt_tile_threads()) xg[r * D + d] = x[t * D + d];
}

__device__ __forceinline__ void moe_expert_cuda(const evt_task_args *a)
{
    const float *xg = (const float *)a->t[0].ptr, *w = (const float *)a->t[1].ptr;
    const int32_t *indptr = (const int32_t *)a->t[2].ptr;
    float *yg = (float *)a->t[3].ptr;
    int64_t D = a->t[0].dim[1], E = a->t[1].dim[0], H = a->t[1].dim[2], r = a->coord[0];
    int64_t e = 0;
    while (e + 1 < E && indptr[e + 1] <= r) e++;
    const float *we = w + e * D * H;
    for (int64_t h = threadIdx.x; h < H; h += evt_tile_threads()) {
        float s = 0;
        for (int64_t d = 0; d < D; d++) s += xg[r * D + d] * we[d * H + h];
        yg[r * H + h] = s;
    }
}

__device__ __forceinline__ void moe_combine_cuda(const evt_task_args *a)
{
    const float *yg = (const float *)a->t[0].ptr, *topw = (const float *)a->t[2].ptr;
    const int32_t *pos = (const int32_t *)a->t[1].ptr;
    float *y = (float *)a->t[3].ptr;
    int64_t H = a->t[0].dim[1], K = a->t[1].dim[1], t = a->coord[0];
    for (int64_t h = threadIdx.x; h < H; h += evt_tile_threads()) {
        float s = 0;
        for (int64_t k = 0; k < K; k++) {
            int32_t r = pos[t * K + k];
            if (r >= 0 && r < a->t[0].dim[0]) s += topw[t * K + k] * yg[r * H + h];
        }
        y[t * H + h] = s;
    }
}
#endif
