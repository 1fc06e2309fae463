/* evt_task_args.h — the tile ABI: what a tile operator receives for one task.
 *
 * Shared verbatim by the C reference tiles, the generated C of the CPU target
 * and the generated CUDA of the GPU target, so it is plain C with fixed-width
 * fields. A tile reads its task coordinate from coord[], its tensors from t[]
 * (in the order of the op's declared parameters) and its integer parameters
 * from iarg[]. See docs/tile-abi.md.
 */
#ifndef EVT_TASK_ARGS_H
#define EVT_TASK_ARGS_H
#include <stdint.h>

#define EVT_ABI_MAX_RANK 4
#define EVT_ABI_MAX_TENSORS 11 /* attn_rope_split takes 11 (registry.c refuses more) */
#define EVT_ABI_MAX_INTS 8
/* TMA maps per tensor with one (src/runtime/tmaps.c): 3-D boxes of 64-column
   chunks, EVT_TMA_HEIGHTS heights (8, 16, ..., 128 rows) x EVT_TMA_DEPTHS
   depths (1, 2, 4 chunks); map index = depth index x EVT_TMA_HEIGHTS +
   height / 8 - 1 */
#define EVT_TMA_HEIGHTS 16
#define EVT_TMA_DEPTHS 3
#define EVT_TMA_BOXES (EVT_TMA_HEIGHTS * EVT_TMA_DEPTHS)
#define EVT_TMA_MAP_BYTES 128

typedef struct evt_tensor_ref {
    void *ptr;                       /* device (GPU) or host (CPU) address */
    int64_t dim[EVT_ABI_MAX_RANK];   /* bound shape, row-major, unused dims = 1 */
    int16_t rank;
    int16_t dtype;                   /* evt_dtype */
    int32_t tmap;                    /* CUDA: index of the tensor's TMA map in evt_task_args.tmaps,
                                        -1: none (src/tiles/llm_tma.cuh; docs/tile-abi.md) */
} evt_tensor_ref;

typedef struct evt_task_args {
    int32_t ncoord;
    int32_t worker;                  /* which worker runs it (diagnostics) */
    int64_t coord[EVT_ABI_MAX_RANK]; /* task coordinate in its grid */
    int64_t grid[EVT_ABI_MAX_RANK];  /* bound grid extents */
    evt_tensor_ref t[EVT_ABI_MAX_TENSORS];
    int64_t iarg[EVT_ABI_MAX_INTS];
    int32_t ntensors, nints;
    int32_t stream;                  /* CUDA: how many leading rows of the task's weight band the
                                        worker's weight stream put in shared memory (0: none;
                                        src/device/evt_stream.h) */
    uint32_t stream_at;              /* CUDA: where they lie and which barrier they complete on
                                        (EVT_STREAM_AT); 0 when stream is 0 */
    int32_t wait_in_tile;            /* CUDA: 1 while warp 0 still runs the task's waits: the
                                        tile meets it at evt_tile_wait once its weight loads are
                                        issued (early_loads calls); 0: done before the tile */
    const void *tmaps;               /* CUDA: the launch's TMA tensor maps (128 bytes each), NULL:
                                        none; a tensor's is tmaps[t[i].tmap] */
    uint32_t tma_ring_off;           /* CUDA: a ring of dynamic shared memory the TMA tiles may fill */
    uint32_t tma_ring_bytes;         /*   (its byte offset and size; 0: none) */
} evt_task_args;

#endif
