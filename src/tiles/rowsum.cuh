/* rowsum.cuh — split row sum tiles, CUDA (same function as rowsum.c).
 *   rowsum_partial: one warp per row, lanes stride over the tile's columns
 *       (coalesced), shuffle reduction. Differs from the C order only by the
 *       association of the sum (compared by relative error).
 *   rowsum_final: one thread per row, sum over j in order (as in C).
 * P is produced in the same launch: read with plain (coherent) loads. */
#ifndef EVT_TILE_ROWSUM_CUH
#define EVT_TILE_ROWSUM_CUH
#include "device/evt_tile.h"

__device__ __forceinline__ void rowsum_partial_cuda(const evt_task_args *a)
{
    const float *A = (const float *)a->t[0].ptr;
    float *P = (float *)a->t[1].ptr;
    int64_t rows = a->t[0].dim[0], cols = a->t[0].dim[1], pj = a->t[1].dim[1];
    int64_t tile = a->iarg[0], i = a->coord[0], j = a->coord[1];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = evt_tile_threads() >> 5;
    int64_t c0 = j * tile, c1 = (j + 1) * tile < cols ? (j + 1) * tile : cols;
    int64_t rend = (i + 1) * tile < rows ? (i + 1) * tile : rows;
    /* 8 rows per warp at a time, their loads issued together (a persistent
     * block has few warps: latency must be hidden by independent loads) */
    for (int64_t rb = i * tile + warp; rb < rend; rb += 8 * nwarps) {
        float s[8];
#pragma unroll
        for (int u = 0; u < 8; u++) s[u] = 0;
        for (int64_t cc = c0; cc < c1; cc += 32) {
            int64_t c = cc + lane;
#pragma unroll
            for (int u = 0; u < 8; u++) {
                int64_t r = rb + (int64_t)u * nwarps;
                if (r < rend && c < c1) s[u] += A[r * cols + c];
            }
        }
#pragma unroll
        for (int u = 0; u < 8; u++) {
            for (int o = 16; o > 0; o >>= 1) s[u] += __shfl_xor_sync(0xffffffffu, s[u], o);
            int64_t r = rb + (int64_t)u * nwarps;
            if (lane == 0 && r < rend && j < pj) P[r * pj + j] = s[u];
        }
    }
}

__device__ __forceinline__ void rowsum_final_cuda(const evt_task_args *a)
{
    const float *P = (const float *)a->t[0].ptr;
    float *C = (float *)a->t[1].ptr;
    int64_t rows = a->t[0].dim[0], pj = a->t[0].dim[1], tile = a->iarg[0], i = a->coord[0];
    for (int64_t r = i * tile + threadIdx.x; r < (i + 1) * tile && r < rows && r < a->t[1].dim[0]; r += evt_tile_threads()) {
        float s = 0;
#pragma unroll 4
        for (int64_t j = 0; j < pj; j++) s += P[r * pj + j];
        C[r] = s;
    }
}
#endif
