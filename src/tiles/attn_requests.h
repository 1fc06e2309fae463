/* attn_requests.h — which requests an attn_rope_split task serves, one rule
 * for the C tile (llm.c) and the CUDA tile (llm_attn.cuh).
 *
 * The call's grid is (bb, g, s) in [nb, kv heads, splits]. Its first extent
 * nb blocks the batch B (the length of pos) into runs of R = ceil(B / nb)
 * requests, and task (bb, g, s) serves requests [bb R, min(B, (bb + 1) R))
 * one after the other. nb = B is one request a task. At large batches the
 * Qwen3 builder gives a task several requests (evt_qwen3_opts.attn_rows), so
 * that a worker runs its share of the attention as one task: one dispatch,
 * one wait and one notify instead of one per request (docs/models.md). A
 * task past the batch serves none (it still meets its waits). */
#ifndef EVT_TILES_ATTN_REQUESTS_H
#define EVT_TILES_ATTN_REQUESTS_H
#include <stdint.h>
#include "device/evt_task_args.h"

#ifdef __CUDACC__
#define EVT_ATTN_REQ_FN __host__ __device__ __forceinline__
#else
#define EVT_ATTN_REQ_FN static inline
#endif

EVT_ATTN_REQ_FN void evt_tile_attn_requests(const evt_task_args *a, int64_t *b0, int64_t *b1)
{
    int64_t B = a->t[3].dim[0], nb = a->grid[0];
    int64_t R = nb >= 1 && nb < B ? (B + nb - 1) / nb : 1;
    *b0 = a->coord[0] * R;
    *b1 = *b0 + R < B ? *b0 + R : B;
}

#endif
