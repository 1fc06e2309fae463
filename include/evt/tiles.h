/* evt/tiles.h — tile operators: how one is declared, and the built-in ones.
 *
 * A tile operator is declared once (evt_tile_decl) and implemented twice:
 * a plain C function (CPU target and reference executor) and a CUDA device
 * function of the same name with suffix _cuda in a header under src/tiles/
 * (GPU target). Both receive an evt_task_args (src/device/evt_task_args.h).
 *
 * Parameters are positional: tensors first or interleaved with integers, as
 * listed in params[]. The verifier checks a call's arguments against them
 * (count, kind, dtype, rank, and which tensors the call writes).
 */
#ifndef EVT_TILES_H
#define EVT_TILES_H

#include "evt/ir.h"
#include "../../src/device/evt_task_args.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum evt_param_mode { EVT_PARAM_IN, EVT_PARAM_OUT, EVT_PARAM_INOUT, EVT_PARAM_INT } evt_param_mode;

#define EVT_ANY_DTYPE (-1)
#define EVT_ANY_RANK (-1)

typedef struct evt_tile_param {
    const char *name;
    evt_param_mode mode;
    int dtype;   /* evt_dtype or EVT_ANY_DTYPE (tensors only) */
    int rank;    /* or EVT_ANY_RANK */
} evt_tile_param;

typedef void (*evt_tile_cpu_fn)(const evt_task_args *a);

/* The weight stream's band of one task: rows [row0, row0 + nrows) of the
 * row-major matrices passed as parameters param[0] and param[1] (-1: one
 * matrix), pitch bytes per row (a multiple of 16). */
typedef struct evt_stream_band {
    int param[2];
    int64_t row0, nrows, pitch;
} evt_stream_band;
/* Fills *band for a task (its arguments at the bound shape; tensor pointers
 * are not set) and returns 1, or 0 when the task does not stream. */
typedef int (*evt_tile_stream_fn)(const evt_task_args *a, evt_stream_band *band);

typedef struct evt_tile_decl {
    const char *name;
    const char *doc;            /* one line: what one task computes */
    int nparams;
    evt_tile_param params[EVT_MAX_ARGS];
    evt_tile_cpu_fn cpu;        /* C implementation */
    const char *cuda_header;    /* relative to src/, e.g. "tiles/rowsum.cuh" */
    int threads;                /* CUDA threads per block it expects (<= block) */
    int smem_bytes;             /* CUDA: dynamic shared memory it needs (every worker block gets the
                                   largest of the program's operators and of EVT_TILES_DYN_SMEM) */
    int has_prefetch;           /* CUDA: <name>_prefetch_cuda(args) exists; the worker's leader
                                   (one thread) runs it before the task's waits */
    unsigned stream_params;     /* CUDA: bit i set when parameter i may be streamed (a call annotated
                                   `prefetch` streams when those tensors are weights or inputs: nothing
                                   in a launch writes them); stream_plan says which rows a task reads */
    evt_tile_stream_fn stream_plan; /* the band of rows a task reads (host, at bind time), and
                                   <name>_cuda reads the leading args->stream rows of it from shared
                                   memory (the weight stream: src/device/evt_stream.h, docs/tile-abi.md) */
    int waits_in_tile;          /* CUDA: <name>_early_cuda(args) exists: it may load its stream_params
                                   tensors first, then calls evt_tile_wait(args) once, on every path and
                                   in every thread, before it reads or writes anything the waits guard
                                   (early_loads calls; docs/tile-abi.md) */
    unsigned early_params;      /* CUDA, with waits_in_tile: bit i set when the early form also reads
                                   parameter i before its waits although its own call writes it (the
                                   operator promises to read only elements its tasks do not write in the
                                   launch, e.g. the KV cache below pos); the call runs early only when
                                   no other call of the program writes those tensors */
} evt_tile_decl;

/* Looks an operator up by name among the built-ins and user-registered ones. */
const evt_tile_decl *evt_tile_find(const char *name);
/* Registers a user operator (copied). Returns EVT_OK, or EVT_ERR_VERIFY on a
 * duplicate name or parameters that do not fit the tile ABI
 * (evt_tile_fits_abi). Not thread-safe: register before compiling. */
evt_status evt_tile_register(const evt_tile_decl *decl);
/* 1 if decl's tensor and integer parameters fit evt_task_args (at most
 * EVT_ABI_MAX_TENSORS tensors, EVT_ABI_MAX_INTS integers, EVT_MAX_ARGS in
 * all); evt_tile_register refuses a declaration that does not. */
int evt_tile_fits_abi(const evt_tile_decl *decl);
/* Iterates all operators: returns NULL past the end. */
const evt_tile_decl *evt_tile_at(int index);

/* Spin tiles measure time with this clock; tests may scale it. */
uint64_t evt_tile_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif
