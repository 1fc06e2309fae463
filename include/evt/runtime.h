/* evt/runtime.h — running compiled programs: modules, shapes, buffers,
 * launches, the reference executor, traces and artifacts.
 *
 *   evt_module *m;
 *   evt_module_build(graph, EVT_BACKEND_CPU, NULL, &m, &d);   // or evt_module_load("x.evtm")
 *   int64_t sym[16]; evt_shape_parse(evt_module_graph(m), nsets, sets, sym, &d);
 *   evt_buffers *b; evt_buffers_new(evt_module_graph(m), sym, seed, 0xff, &b, &d);
 *   evt_module_run(m, sym, b, &opts, &stats, &d);            // one persistent launch
 *
 * A module owns its graph, its plan and its code (a shared object on the CPU
 * target, a cubin on the GPU target). Launches with new symbol values bind
 * the shape on the host (counters' targets, queues; cached per shape) and
 * reuse the same code: nothing is compiled after evt_module_build/load.
 */
#ifndef EVT_RUNTIME_H
#define EVT_RUNTIME_H

#include "evt/compile.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum evt_backend { EVT_BACKEND_CPU, EVT_BACKEND_CUDA } evt_backend;
const char *evt_backend_name(evt_backend b);

typedef struct evt_module evt_module;

/* 1 if a CUDA driver and at least one GPU can be used (loads the driver at
 * run time; a build without CUDA still links and answers 0). */
int evt_cuda_available(void);

/* Compiles `g` (the module takes ownership) for a backend. CPU: emits C and
 * builds it with the system C compiler ($CC, default cc; extra flags in
 * $EVT_CFLAGS). CUDA: emits CUDA and builds a cubin with nvcc for sm_90a.
 * Builds the unfused variant as well when `with_unfused` is set. */
evt_status evt_module_build(evt_graph *g, evt_backend backend, const evt_compile_opts *o,
                            int with_unfused, evt_module **out, evt_diag *d);
/* Artifacts: a self-describing file (program text, code, metadata). */
evt_status evt_module_save(evt_module *m, const char *path, evt_diag *d);
evt_status evt_module_load(const char *path, evt_module **out, evt_diag *d);
/* 1 if path starts with the artifact magic. */
int evt_is_artifact(const char *path);
void evt_module_free(evt_module *m);
const evt_graph *evt_module_graph(const evt_module *m);
evt_backend evt_module_backend(const evt_module *m);
/* Lets dst's launches read src's device copies of the weights both programs
 * name alike (same dtype, at least as many bytes) instead of uploading their
 * own: two programs of one model (evtc decode's prefill and its steps) then
 * hold one copy of the weights on the GPU. A weight src does not hold on the
 * device (it has not launched yet, or names none such) is dst's own, as
 * usual. src must outlive dst's launches and not be launched with buffers
 * that move its weights meanwhile; NULL (or a module of another backend)
 * ends the sharing. CPU: no effect (the host copies can be shared with
 * evt_buffers_new_sharing). */
void evt_module_share_weights(evt_module *dst, const evt_module *src);
/* GPU: frees the device copies of m's tensors, all of them or, with
 * keep_weights, all but the weights (which another module may be reading:
 * evt_module_share_weights); a later launch of m allocates and uploads
 * what it needs again. CPU: no effect. */
void evt_module_release_tensors(evt_module *m, int keep_weights);
/* The generated source of a variant (0 fused, 1 unfused), or NULL. */
const char *evt_module_source(const evt_module *m, int variant);

/* ---- shapes ----------------------------------------------------------- */

/* Fills sym[] (by symbol id) with defaults, then applies "NAME=VALUE"
 * strings. Unknown name, missing '=', not a number, negative, or outside the
 * symbol's bounds: EVT_ERR_SHAPE with a one-line message. */
evt_status evt_shape_parse(const evt_graph *g, int nsets, const char *const *sets, int64_t *sym, evt_diag *d);

/* ---- buffers (host copies of every tensor at one shape) ---------------- */

typedef struct evt_buffers evt_buffers;
/* Allocates and initialises (inputs and weights per their init; tensors
 * without init are filled with `poison` bytes). */
evt_status evt_buffers_new(const evt_graph *g, const int64_t *sym, uint64_t seed, int poison,
                           evt_buffers **out, evt_diag *d);
/* The same, except that every weight tensor `from` (buffers of program
 * from_g) holds under the same name, dtype and byte count is not allocated
 * or initialised but read from `from`'s host copy: two programs of one
 * model share their weights' host memory. `from` must outlive these
 * buffers, and its weights stay as they are meanwhile. */
evt_status evt_buffers_new_sharing(const evt_graph *g, const int64_t *sym, uint64_t seed, int poison, const evt_graph *from_g,
                                   evt_buffers *from, evt_buffers **out, evt_diag *d);
void evt_buffers_free(evt_buffers *b);
void *evt_buffers_data(evt_buffers *b, int tensor, size_t *bytes);
const int64_t *evt_buffers_dims(const evt_buffers *b, int tensor);
/* Compares every output tensor: rtol == 0 bitwise, else max |a - b| over
 * max |b| at most rtol (and NaN where b has NaN). Appends a line per
 * mismatching tensor to report; returns the number of mismatching tensors. */
int evt_buffers_compare(const evt_graph *g, evt_buffers *a, evt_buffers *b, double rtol, evt_printer *report);
/* The same for tensor `tensor` alone (any role): 1 if it differs. */
int evt_buffers_compare_tensor(const evt_graph *g, evt_buffers *a, evt_buffers *b, int tensor, double rtol,
                               evt_printer *report);

/* ---- launching --------------------------------------------------------- */

/* Tensor src_id of src_bufs, as src's last launch with them left it, into
 * tensor dst_id of dst_bufs, as dst's next launch with them will read it:
 * dst_id's bytes, the first ones of src_id (same dtype, at least as many
 * bytes). GPU: where src's device copy is current (a resident launch left
 * it there: evt_run_opts.resident), device to device, with no trip through
 * the host; dst_bufs' host copy of dst_id is then older than the device's
 * and comes back with dst's next launch that is not resident. Otherwise
 * (CPU, or src holds no current copy on the device): the host copies.
 * evtc decode hands its prefill's KV caches to the decode steps with it.
 * EVT_ERR_SHAPE: no such tensors, another dtype, too few bytes, or a dst
 * weight read from another module (evt_module_share_weights);
 * EVT_ERR_RUNTIME: src's copy is newer on a GPU that dst does not run on.
 * Nothing is copied on an error. */
evt_status evt_module_copy_tensor(evt_module *dst, evt_buffers *dst_bufs, int dst_id, evt_module *src, evt_buffers *src_bufs,
                                  int src_id, evt_diag *d);

typedef struct evt_run_opts {
    evt_sched_kind sched;      /* static (default), dynamic, unfused, kbk, graph, hybrid */
    evt_queue_policy policy;   /* static queues: rr (default) or cp */
    int workers;               /* 0: default (CPU: 4; GPU: SMs x per_sm) */
    int workers_per_sm;        /* GPU: persistent blocks per SM (default 1) */
    int exact_shape;           /* static: build for the exact shape, not the bucket */
    double timeout_s;          /* watchdog; 0: default 10 s */
    const char *trace_path;    /* Chrome trace JSON, or NULL */
    uint32_t chaos;            /* nonzero: random delays (seed) */
    uint32_t chaos_max_ns;     /* bound of one delay (default 20000) */
    int early_push;            /* dynamic: push consumers once their producers are dispatched */
    int pop_batch;             /* dynamic: ready-queue tickets per atomic (default 1) */
    int keep_weights;          /* GPU: upload weight tensors only on the first launch with these
                                  buffers (the caller promises not to change them afterwards) */
    int resident;              /* GPU: every tensor stays on the device between launches with these
                                  buffers: a launch uploads the inputs (and what the device does not
                                  hold yet) and downloads the outputs only; scratch (e.g. a KV cache)
                                  stays newer on the device than in the buffers, and no later launch
                                  overwrites it with the older host copy: the next launch without
                                  `resident` starts from the device's and downloads every tensor again.
                                  The caller promises to change only inputs between such launches; a
                                  launch with other buffers replaces what the device held. CPU: no
                                  effect (the buffers are the tensors) */
    int computed_dispatch;     /* ablation: static tasks decode their entry and evaluate their wait and
                                  notify maps on the device instead of reading bind-time task records */
    int tma_ring;              /* GPU: bytes of shared memory per worker the tiles' TMA ring may take
                                  (src/tiles/llm_tma.cuh), at most what the tiles ask; 0: none (the
                                  default: the reservation shrinks L1 for every tile); $EVT_TMA_RING
                                  overrides it */
} evt_run_opts;

typedef struct evt_run_stats {
    double bind_ms;            /* host: binding this shape (0 when cached) */
    double launch_ms;          /* the launch itself, wall clock */
    int64_t ntasks;            /* tasks at this shape */
    int bucket_used;           /* static: a bucket schedule served this shape */
    int cache_hit;
    unsigned stream_ring_bytes;/* GPU: the weight stream's ring per worker in this launch (0: none) */
    unsigned tma_ring_bytes;   /* GPU: the TMA tiles' ring per worker in this launch (0: none; evt_run_opts.tma_ring) */
    int tma_maps;              /*   and the tensors it encoded TMA maps for (0: the tiles take their other path) */
} evt_run_stats;

evt_status evt_module_run(evt_module *m, const int64_t *sym, evt_buffers *b, const evt_run_opts *o,
                          evt_run_stats *stats, evt_diag *d);

/* Sequential kernel-by-kernel execution (calls in program order, tasks in
 * row-major order) with the C tiles. Also checks that every wait would be
 * satisfied in that order and that every counter ends at its target. */
evt_status evt_reference_run(const evt_module *m, const int64_t *sym, evt_buffers *b, evt_diag *d);

/* ---- GPU extras and benchmarking (src/runtime/cuda.c) ------------------ */

/* Times `iters` back-to-back launches of one shape: one evt_module_run first
 * (binds, uploads the tensors, checks for errors), then on the GPU the
 * launches are timed with CUDA events with no copies between them; the
 * outputs left in `b` are those of the first run. CPU: loops evt_module_run.
 * *ms_per_launch = elapsed / iters. */
evt_status evt_module_time(evt_module *m, const int64_t *sym, evt_buffers *b, const evt_run_opts *o, int iters,
                           double *ms_per_launch, evt_diag *d);
/* How many times this process ran nvcc (tests assert none after build). */
int64_t evt_cuda_compile_count(void);
/* How many CUDA graphs the graph schedule captured (one per bound shape). */
int64_t evt_cuda_capture_count(void);
/* Name and multiprocessor count of the GPU; EVT_ERR_NO_DEVICE without one. */
evt_status evt_cuda_device_info(char *name, size_t n, int *sms, evt_diag *d);

#ifdef __cplusplus
}
#endif
#endif
