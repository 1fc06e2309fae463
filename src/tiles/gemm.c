/* gemm.c — f32 tile GEMM, C reference.
 *   gemm_f32(A[M, K], B[K, N], C[M, N], tm, tn) over (mi, ni):
 *       C[mi*tm .. +tm, ni*tn .. +tn] = A[rows, :] @ B[:, cols]
 * Accumulates in f32 in order of k, clipped at the matrix edges. */
#include "tiles/tiles_cpu.h"

void evt_tile_gemm_f32(const evt_task_args *a)
{
    const float *A = a->t[0].ptr, *B = a->t[1].ptr;
    float *C = a->t[2].ptr;
    int64_t M = a->t[0].dim[0], K = a->t[0].dim[1], N = a->t[1].dim[1];
    int64_t tm = a->iarg[0], tn = a->iarg[1];
    for (int64_t m = a->coord[0] * tm; m < (a->coord[0] + 1) * tm && m < M; m++)
        for (int64_t n = a->coord[1] * tn; n < (a->coord[1] + 1) * tn && n < N; n++) {
            float s = 0;
            for (int64_t k = 0; k < K; k++) s += A[m * K + k] * B[k * N + n];
            C[m * N + n] = s;
        }
}
