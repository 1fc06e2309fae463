/* tmaps.c — the TMA tensor maps of a CUDA launch (src/tiles/llm_tma.cuh).
 *
 * A tile that moves a matrix with the tensor copy engine needs a
 * CUtensorMap for it, encoded on the host by the driver. For every bf16
 * matrix (rank 2) whose base is 16-byte aligned and whose rows are whole
 * 64-column chunks, the runtime encodes EVT_TMA_BOXES maps of the matrix
 * seen as 3-D (64 columns, rows, chunks: the chunk stride is 128 bytes):
 * boxes one chunk wide (128 bytes, the 128-byte swizzle the wgmma operands
 * use), 8, 16, ..., 128 rows high and 1, 2 or 4 chunks deep, so that one box
 * lands a stage's rows x (64, 128 or 256) columns as consecutive 64-column
 * planes. Rows and chunks beyond the matrix read as zeros. Why 3-D: a box
 * costs the copy engine about 0.2 us whatever its bytes (tiles alone, H200,
 * bench/RESULTS.md session 25), so a stage moves in as few boxes as
 * possible. The launch's table holds EVT_TMA_BOXES maps per tensor in tensor order;
 * evt_tensor_ref.tmap says which tensors have them (-1: none). Encoding is
 * host work only (no device call); evt_tmaps_bind re-encodes a tensor's maps
 * only when its address or shape changes, and cuda.c uploads the table.
 */
#include <stdlib.h>
#include <string.h>
#include "runtime/cuda_driver.h"
#include "runtime/tmaps.h"

/* the driver's enum values (cuda.h) */
enum { TM_BF16 = 9, TM_INTERLEAVE_NONE = 0, TM_SWIZZLE_128B = 3, TM_L2_256B = 3, TM_OOB_ZERO = 0 };

int evt_tmaps_wanted(const evt_tensor_ref *t)
{
    if (t->dtype != EVT_BF16 || t->rank != 2 || !t->ptr) return 0;
    unsigned long long rows = (unsigned long long)t->dim[0], cols = (unsigned long long)t->dim[1];
    return rows && cols && !((uintptr_t)t->ptr & 15) && !(cols % 64) && rows <= (1ull << 31) && cols <= (1ull << 31);
}

int evt_tmaps_encode(const evt_tensor_ref *t, unsigned char out[EVT_TMA_BOXES * EVT_TMA_MAP_BYTES])
{
    memset(out, 0, EVT_TMA_BOXES * EVT_TMA_MAP_BYTES);
    if (!evt_cuda_g.cu.TensorMapEncodeTiled || !evt_tmaps_wanted(t)) return 0;
    unsigned long long rows = (unsigned long long)t->dim[0], cols = (unsigned long long)t->dim[1];
    unsigned long long dims[3] = {64, rows, cols / 64}, strides[2] = {cols * 2, 128};
    unsigned elem[3] = {1, 1, 1};
    for (int b = 0; b < EVT_TMA_BOXES; b++) {
        unsigned box[3] = {64, 8u * (unsigned)(b % EVT_TMA_HEIGHTS + 1), 1u << (b / EVT_TMA_HEIGHTS)};
        if (evt_cuda_g.cu.TensorMapEncodeTiled(out + b * EVT_TMA_MAP_BYTES, TM_BF16, 3, t->ptr, dims, strides, box, elem,
                                               TM_INTERLEAVE_NONE, TM_SWIZZLE_128B, TM_L2_256B, TM_OOB_ZERO) != CUDA_SUCCESS) {
            memset(out, 0, EVT_TMA_BOXES * EVT_TMA_MAP_BYTES);
            return 0;
        }
    }
    return 1;
}

int evt_tmaps_bind(evt_tmap_table *t, evt_tensor_ref *tr, int n, int want, int *any)
{
    *any = 0;
    for (int i = 0; i < n; i++) tr[i].tmap = -1;
    if (!want || !evt_cuda_g.cu.TensorMapEncodeTiled || n < 1) return 0;
    const size_t per = EVT_TMA_BOXES * EVT_TMA_MAP_BYTES;
    int changed = 0;
    if (t->n != n) {
        evt_tmaps_free(t);
        t->host = calloc((size_t)n, per);
        t->ref = calloc((size_t)n, sizeof *t->ref);
        if (!t->host || !t->ref) { evt_tmaps_free(t); return -1; }
        for (int i = 0; i < n; i++) t->ref[i].tmap = -2;
        t->n = n;
    }
    for (int i = 0; i < n; i++) {
        evt_tensor_ref *old = &t->ref[i];
        int same = old->tmap != -2 && old->ptr == tr[i].ptr && !memcmp(old->dim, tr[i].dim, sizeof tr[i].dim) &&
                   old->rank == tr[i].rank && old->dtype == tr[i].dtype;
        if (!same) {
            *old = tr[i];
            old->tmap = evt_tmaps_encode(&tr[i], t->host + (size_t)i * per) ? i : -1;
            changed = 1;
        }
        tr[i].tmap = old->tmap;
        *any |= tr[i].tmap >= 0;
    }
    return changed;
}

void evt_tmaps_free(evt_tmap_table *t)
{
    free(t->host);
    free(t->ref);
    t->host = NULL;
    t->ref = NULL;
    t->n = 0;
}
