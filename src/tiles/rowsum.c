/* rowsum.c — split row sum (papers/000 Fig. 3), C reference.
 *   rowsum_partial(A[R, Cols], P[R, J], tile) over (i, j):
 *       P[i*tile + r, j] = sum of A[i*tile + r, j*tile .. j*tile + tile)
 *   rowsum_final(P[R, J], C[R], tile) over (i):
 *       C[i*tile + r] = sum over j of P[i*tile + r, j]   (in order of j)
 * Rows or columns past the tensor's end are skipped (partial last tile). */
#include "tiles/tiles_cpu.h"

void evt_tile_rowsum_partial(const evt_task_args *a)
{
    const float *A = a->t[0].ptr;
    float *P = a->t[1].ptr;
    int64_t rows = a->t[0].dim[0], cols = a->t[0].dim[1], pj = a->t[1].dim[1];
    int64_t tile = a->iarg[0], i = a->coord[0], j = a->coord[1];
    for (int64_t r = i * tile; r < (i + 1) * tile && r < rows; r++) {
        float s = 0;
        for (int64_t c = j * tile; c < (j + 1) * tile && c < cols; c++) s += A[r * cols + c];
        if (j < pj) P[r * pj + j] = s;
    }
}

void evt_tile_rowsum_final(const evt_task_args *a)
{
    const float *P = a->t[0].ptr;
    float *C = a->t[1].ptr;
    int64_t rows = a->t[0].dim[0], pj = a->t[0].dim[1], tile = a->iarg[0], i = a->coord[0];
    for (int64_t r = i * tile; r < (i + 1) * tile && r < rows && r < a->t[1].dim[0]; r++) {
        float s = 0;
        for (int64_t j = 0; j < pj; j++) s += P[r * pj + j];
        C[r] = s;
    }
}
