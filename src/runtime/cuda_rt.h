/* cuda_rt.h — the GPU backend's runtime state of a module (m->rt) and its
 * device buffers, shared by cuda.c (launches) and cuda_tensors.c (the
 * tensors' device copies: allocation, sharing, hand-over). Internal. */
#ifndef EVT_CUDA_RT_H
#define EVT_CUDA_RT_H
#include "runtime/module.h"
#include "runtime/cuda_driver.h"
#include "runtime/tmaps.h"

typedef struct dev_buf { CUdeviceptr p; size_t cap; } dev_buf;

typedef struct ctrl_block { int32_t abort_flag; int32_t pad; evt_error err; } ctrl_block;

typedef struct cuda_rt {
    dev_buf state;         /* int32 words */
    dev_buf ring_hdr, ring_slots;
    int64_t ring_cap;
    dev_buf ctrl;
    dev_buf ctx;
    evt_ctx last_ctx;      /* what ctx holds on the device */
    int ctx_valid;
    dev_buf tref;          /* evt_tensor_ref[ntensors] */
    evt_tensor_ref *last_tref;
    int ntref;
    dev_buf *tens;
    uint64_t *tens_src;    /* uid of the buffers whose tensor the device copy holds (uploaded from them,
                              or written by a launch with them) */
    uint64_t *tens_dev;    /* uid of the buffers whose host copy is older than the device's (a resident
                              launch left it there: evt_run_opts.resident) */
    int ntens;
    dev_buf trace, trace_worker;
    dev_buf tmaps;         /* EVT_TMA_BOXES maps per tensor (tmaps.c) */
    evt_tmap_table tmt;    /* the same on the host, and what they were encoded for */
    int tma_maps;          /* the last launch's tensors with maps (evt_run_stats.tma_maps) */
    int broken;            /* a sticky CUDA error or unresponsive device */
    char broken_why[256];
} cuda_rt;

/* Frees b's allocation (b then holds nothing). */
void evt_cuda_buf_free(dev_buf *b);
/* Grows b to at least n bytes (contents lost); *grown (if given) 1 when it
   reallocated. EVT_ERR_NOMEM with the driver's reason. */
evt_status evt_cuda_buf_ensure(dev_buf *b, size_t n, int *grown, evt_diag *d);
/* The per-tensor arrays of rt for n tensors (new entries hold nothing). */
evt_status evt_cuda_ensure_tens(cuda_rt *rt, int n);
/* The device copy of tensor i (a weight, bytes long) that module m reads
   from another module (evt_module_share_weights), or 0. */
CUdeviceptr evt_cuda_lent_weight(const evt_module *m, int i, size_t bytes);

#endif
