/* module.h — what a loaded module holds, and the backend interface that the
 * CPU (cpu.c) and CUDA (cuda.c) runtimes implement (internal).
 *
 * A module has up to two variants of the same program: 0 = the compiled
 * program (fine-grained events), 1 = its unfused ablation (evt_pass_unfuse).
 * Each variant has its own plan and code. Bound shapes are cached per
 * (variant, symbols, schedule, workers, policy, exact).
 */
#ifndef EVT_MODULE_H
#define EVT_MODULE_H
#include "evt/runtime.h"
#include "runtime/bind.h"

typedef struct evt_variant {
    evt_graph *g;
    evt_plan *p;
    char *source;         /* generated C or CUDA */
    void *code;           /* shared object bytes or cubin */
    size_t code_len;
    void *handle;         /* backend: dlopen handle / CUmodule */
    void *entry;          /* backend: worker entry / CUfunction */
    void *call_entry;     /* backend: kernel-by-kernel entry (one call) */
    unsigned dyn_smem;    /* CUDA: the tiles' dynamic shared memory per block (evt_dyn_smem_bytes) */
    unsigned table_smem;  /* CUDA: the launch tables the persistent kernel copies into dynamic shared
                             memory after dyn_smem (evt_table_smem_bytes), or 0: they stay in global */
    unsigned static_smem; /* CUDA: the persistent kernel's static shared memory */
    unsigned stream_calls;/* CUDA: calls that stream their weights (evt_stream_calls): static and hybrid
                             launches get a weight-stream ring after the tables (evt_stream.h) */
    unsigned dyn_attr;    /* CUDA: the persistent kernel's maximum dynamic shared memory as last set */
    unsigned call_attr;   /* CUDA: the same for the kernel-by-kernel entry */
    unsigned tma_ring_want; /* CUDA: shared memory the tiles' TMA ring may take (evt_tma_ring_want; 0: no
                               tile uses one): launches reserve it after the tables (src/tiles/llm_tma.cuh) */
    unsigned extra_threads; /* CUDA: threads a block has past the tiles' (evt_extra_threads: the dispatch
                               warpgroup, src/device/evt_dispatch_wg.h); launches add them */
    char tmpdir[256];     /* CPU: where the .so lives while loaded */
} evt_variant;

/* Bound shapes a module keeps (least recently used evicted first): up to
 * EVT_BIND_CACHE entries and EVT_BIND_CACHE_BYTES of bound data on the host
 * (the GPU keeps a copy of the same size), so that a server cycling through
 * every batch size 1..128 binds each once, not on every change. */
#define EVT_BIND_CACHE 256
#define EVT_BIND_CACHE_BYTES ((size_t)1 << 30)
typedef struct evt_bind_entry {
    int used, variant;
    int64_t *sym;
    evt_sched_kind sched;
    int nworkers, policy, exact;
    evt_bound b;
    void *dev;            /* backend copy of the bound data (CUDA) */
    uint64_t last_use;
    size_t bytes;         /* evt_bound_bytes(&b) */
} evt_bind_entry;

struct evt_module {
    evt_backend backend;
    char *program;        /* normalised program text (for artifacts) */
    evt_compile_opts copts;
    evt_variant var[2];
    evt_bind_entry cache[EVT_BIND_CACHE];
    uint64_t tick;
    void *rt;             /* backend runtime state (buffers, ring, device) */
    const struct evt_module *weights_from; /* evt_module_share_weights: the module whose device weights
                                              this one's launches read where it holds them */
    int *weights_from_ids; /* per tensor of this module's graph: the id of weights_from's weight of the
                              same name and dtype, or -1 (resolved once, not at every launch) */
};

typedef struct evt_backend_ops {
    /* source -> code bytes (compiles: only evt_module_build calls it) */
    evt_status (*build)(evt_module *m, evt_variant *v, evt_diag *d);
    /* code bytes -> loaded handle/entry (never compiles) */
    evt_status (*load)(evt_module *m, evt_variant *v, evt_diag *d);
    evt_status (*launch)(evt_module *m, evt_variant *v, evt_bind_entry *be, evt_buffers *b,
                         const evt_run_opts *o, evt_run_stats *st, evt_diag *d);
    int (*default_workers)(evt_module *m, const evt_run_opts *o);
    void (*unload)(evt_module *m, evt_variant *v);
    void (*release)(evt_module *m);            /* frees m->rt */
    void (*drop_bound)(evt_module *m, evt_bind_entry *be);
} evt_backend_ops;

extern const evt_backend_ops evt_cpu_backend;
extern const evt_backend_ops evt_cuda_backend;

/* Compiles a graph's variant: plan + generated source (module.c). */
evt_status evt_variant_prepare(evt_module *m, evt_variant *v, evt_graph *g, evt_diag *d);

/* Chrome trace JSON from per-task timestamps (trace.c). */
evt_status evt_trace_write(const char *path, const evt_bound *b, const uint64_t *ts, const int32_t *worker,
                           const char *label, evt_diag *d);

/* Writes len bytes to path (EVT_ERR_IO with the path on failure). */
evt_status evt_write_file(const char *path, const void *data, size_t len, evt_diag *d);

/* Unique id of a buffers object (never reused in a process). */
uint64_t evt_buffers_uid(const evt_buffers *b);
/* 1 for a scratch tensor initialised with zeros: a tile may keep counters
 * there that every complete launch leaves at zero (attn_rope_split's merge
 * counts), so the backends zero it again after an aborted launch. */
int evt_tensor_rezeroed_after_abort(const evt_tensor *t);

/* Directory of the device and tile headers generated code includes. */
const char *evt_src_dir(void);

#endif
