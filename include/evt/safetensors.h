/* safetensors.h — reading tensors from Hugging Face safetensors checkpoints.
 *
 * A safetensors file is an 8-byte little-endian header length N, N bytes of
 * JSON ({"name": {"dtype": "BF16", "shape": [rows, cols], "data_offsets":
 * [begin, end]}, ..., "__metadata__": {...}}), then the tensors' bytes, each
 * at its offsets from the end of the header, row-major, little-endian.
 * Checkpoints of large models come in shards (model-00001-of-00004.safetensors
 * ...): evt_st_open takes one file or a directory and indexes every
 * *.safetensors file in it.
 *
 *   evt_st *st;
 *   if (evt_st_open("Qwen3-0.6B/", &st, &d)) ...          // file or directory
 *   int64_t shape[2] = {151936, 1024};
 *   evt_st_read_bf16(st, "model.embed_tokens.weight", 2, shape, dst, NULL, &d);
 *   evt_st_close(st);
 *
 * Reading converts BF16, F16 and F32 to bf16 (round to nearest even), and can
 * scale each column by a vector first (a norm's weight folded into the matrix
 * after it). Every error a file can cause (not a safetensors file, a header
 * that does not parse, offsets past the end, a missing tensor, another shape
 * or dtype) is a status with a message naming the file and the tensor. */
#ifndef EVT_SAFETENSORS_H
#define EVT_SAFETENSORS_H

#include <stdint.h>
#include "evt/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct evt_st evt_st; /* an index of one or more safetensors files */

#define EVT_ST_MAX_RANK 4

/* One tensor's entry: where it lies and what it holds. */
typedef struct evt_st_info {
    const char *dtype;      /* as the file names it: "BF16", "F16", "F32", ... */
    int rank;
    int64_t shape[EVT_ST_MAX_RANK];
    const char *file;       /* the file that holds it */
} evt_st_info;

/* Opens `path`: a .safetensors file, or a directory whose *.safetensors
   files are read in name order (a name in two files is an error). Reads only
   the headers; the tensors are read on demand. */
evt_status evt_st_open(const char *path, evt_st **out, evt_diag *d);
void evt_st_close(evt_st *st);
/* The number of tensors indexed. */
int evt_st_count(const evt_st *st);
/* Looks a tensor up; returns 0 if absent. */
int evt_st_find(const evt_st *st, const char *name, evt_st_info *info);
/* Whether tensor `name` is there with exactly `shape` (rank dims) and a dtype
   the readers take: EVT_OK, or the error a read would give (reads nothing). */
evt_status evt_st_check(const evt_st *st, const char *name, int rank, const int64_t *shape, evt_diag *d);
/* Reads tensor `name`, which must have exactly `shape` (rank dims), into dst
   as bf16, converting from BF16, F16 or F32. col_scale (NULL: none) has
   shape[rank - 1] floats: element [..., k] is multiplied by col_scale[k] in
   f32 before the one rounding to bf16. */
evt_status evt_st_read_bf16(const evt_st *st, const char *name, int rank, const int64_t *shape, uint16_t *dst,
                            const float *col_scale, evt_diag *d);
/* The same into f32 (a norm's weight to fold). */
evt_status evt_st_read_f32(const evt_st *st, const char *name, int rank, const int64_t *shape, float *dst, evt_diag *d);

#ifdef __cplusplus
}
#endif
#endif
