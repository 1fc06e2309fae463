/* gemm.cuh — f32 tile GEMM, CUDA (same function as gemm.c).
 *   C[mi*tm .. +tm, ni*tn .. +tn] = A[rows, :] @ B[:, cols], clipped at the
 *   edges. One thread per output element (consecutive threads: consecutive
 *   columns, so B rows are read coalesced and A is broadcast), accumulating
 *   in order of k as the C reference does (FMA: compared by relative error).
 *   A and B may be produced in the same launch: plain loads only.
 * gemm_f32_prefetch_cuda (the leader): before the task's waits, pulls B's column tile
 *   into L2 (prefetch.global.L2, one request per 128-byte line). */
#ifndef EVT_TILE_GEMM_CUH
#define EVT_TILE_GEMM_CUH
#include "device/evt_tile.h"

__device__ __forceinline__ void gemm_f32_cuda(const evt_task_args *a)
{
    const float *A = (const float *)a->t[0].ptr, *B = (const float *)a->t[1].ptr;
    float *C = (float *)a->t[2].ptr;
    int64_t M = a->t[0].dim[0], K = a->t[0].dim[1], N = a->t[1].dim[1];
    int64_t tm = a->iarg[0], tn = a->iarg[1];
    int64_t m0 = a->coord[0] * tm, n0 = a->coord[1] * tn;
    for (int64_t e = threadIdx.x; e < tm * tn; e += evt_tile_threads()) {
        int64_t m = m0 + e / tn, n = n0 + e % tn;
        if (m >= M || n >= N) continue;
        float s = 0;
        for (int64_t k = 0; k < K; k++) s += A[m * K + k] * B[k * N + n];
        C[m * N + n] = s;
    }
}

__device__ __forceinline__ void gemm_f32_prefetch_cuda(const evt_task_args *a)
{
    const float *B = (const float *)a->t[1].ptr;
    int64_t K = a->t[1].dim[0], N = a->t[1].dim[1], tn = a->iarg[1];
    int64_t n0 = a->coord[1] * tn, n1 = n0 + tn < N ? n0 + tn : N;
    if (n0 >= N) return;
    int64_t lines = (n1 - n0 + 31) / 32; /* 32 floats = 128 bytes */
    for (int64_t e = 0; e < K * lines; e++) { /* the leader alone runs the hook */
        int64_t k = e / lines, l = e % lines;
        const float *p = B + k * N + n0 + l * 32;
        asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
    }
}
#endif
