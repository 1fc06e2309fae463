/* evt/compile.h — the compiler: passes from a graph to a lowered plan, the
 * static and dynamic schedulers, and the C / CUDA emitters.
 *
 *   graph ─verify─> infer_counts ─> fuse_events ─> lower ─> plan ─emit─> C | CUDA
 *   plan + shape ─bind─> bound plan (counters, targets, queues)  [evt/runtime.h]
 *
 * Typical use:
 *   evt_diag d; evt_diag_init(&d, "prog.evt");
 *   evt_plan *p;
 *   if (evt_compile(g, &(evt_compile_opts){0}, &p, &d) != EVT_OK) fputs(d.text, stderr);
 */
#ifndef EVT_COMPILE_H
#define EVT_COMPILE_H

#include "evt/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct evt_plan evt_plan;

typedef struct evt_compile_opts {
    int no_fuse;        /* skip event fusion */
    int trust_counts;   /* accept declared counts that differ from inferred ones */
    int stream_weights; /* CUDA: `prefetch` calls whose operator declares stream_params and
                           stream_plan stream their weights through the static workers'
                           shared-memory ring (src/device/evt_stream.h); off: the L2 prefetch hook */
    int early_loads;    /* CUDA: `prefetch` calls whose operator sets waits_in_tile run its early
                           form: warps 1-7 issue their weight loads while warp 0 runs the task's
                           waits, all meet at evt_tile_wait; off: the L2 prefetch hook
                           (docs/runtime.md; the stream takes precedence) */
    const char *cuda_defines; /* CUDA: tile options, "NAME[=VALUE] ..." (space-separated; names of
                           letters, digits and _, values of those and .+-), each emitted as a
                           #define before the tile headers, so part of the generated source and of
                           the compiled-kernel cache's key; e.g. EVT_LLM_NO_TMA leaves the GEMV
                           tiles' TMA path out of a kernel that never reserves a TMA ring
                           (src/tiles/llm_tma.cuh). NULL: none */
} evt_compile_opts;

/* Individual passes (each returns EVT_OK or appends diagnostics). */
evt_status evt_pass_verify(const evt_graph *g, evt_diag *d);
/* Graph transform: one barrier event per producing call (the ablation
 * baseline). Returns a new graph; the input is unchanged. */
evt_graph *evt_pass_unfuse(const evt_graph *g);
/* MPK event fusion on the IR; returns the number of events removed. */
int evt_pass_fuse_events(evt_graph *g);

/* verify + infer_counts + fuse_events + lower. The plan keeps a reference to
 * g (which must outlive it). */
evt_status evt_compile(evt_graph *g, const evt_compile_opts *o, evt_plan **out, evt_diag *d);
void evt_plan_free(evt_plan *p);
const evt_graph *evt_plan_graph(const evt_plan *p);

/* Human-readable count inference results ("E[e0] count = 4"). */
void evt_plan_print_counts(evt_printer *pr, const evt_plan *p);

/* Emitters: the whole generated translation unit. */
evt_status evt_emit_c(const evt_plan *p, evt_printer *out, evt_diag *d);
evt_status evt_emit_cuda(const evt_plan *p, evt_printer *out, evt_diag *d);

/* ---- schedules ---------------------------------------------------------- */

/* STATIC, DYNAMIC, UNFUSED: one persistent megakernel. KBK: the baseline of
 * the same tiles launched kernel by kernel (one launch per call, in program
 * order, a block per task, no events); GRAPH: those launches captured once
 * per bound shape into a CUDA graph and replayed (CPU: same as KBK).
 * HYBRID: one megakernel where calls marked `policy dynamic` go through the
 * ready queue (served by a share of the workers) and all others through
 * static queues (the rest of the workers). */
typedef enum evt_sched_kind {
    EVT_SCHED_STATIC, EVT_SCHED_DYNAMIC, EVT_SCHED_UNFUSED, EVT_SCHED_KBK, EVT_SCHED_GRAPH, EVT_SCHED_HYBRID
} evt_sched_kind;
#define EVT_SCHED_COUNT 6
/* Parses "static", "dynamic", "unfused", "kbk", "graph" or "hybrid"; -1 otherwise. */
int evt_sched_parse(const char *s);
typedef enum evt_queue_policy { EVT_QUEUE_RR, EVT_QUEUE_CP } evt_queue_policy;
const char *evt_sched_name(evt_sched_kind k);

/* Static per-worker queues for one concrete shape, proven deadlock-free.
 * evt_schedule_static_part leaves the tasks of calls with skip[c] set out of
 * the queues (hybrid: the ready queue runs them; the proof treats them as
 * tasks that run whenever their inputs are complete). */
typedef struct evt_static_sched {
    int nworkers;
    int64_t *q_off;      /* [nworkers+1] */
    uint32_t *q;         /* entries: call << 24 | linear index in grid ext */
    int64_t *ext;        /* [ncalls*4] grid extents the queues were built for */
    int64_t ntasks;
    double makespan;     /* estimated, in cost units (cp policy) */
} evt_static_sched;

/* Builds queues for the shape `sym` (values by symbol id). On a deadlock,
 * returns EVT_ERR_SCHEDULE and names the tasks of a cycle in d. */
evt_status evt_schedule_static(const evt_plan *p, const int64_t *sym, int nworkers,
                               evt_queue_policy policy, evt_static_sched *out, evt_diag *d);
evt_status evt_schedule_static_part(const evt_plan *p, const int64_t *sym, int nworkers, evt_queue_policy policy,
                                    const uint8_t *skip, evt_static_sched *out, evt_diag *d);
/* Re-checks an existing schedule (e.g. a bucket schedule used at a smaller
 * actual shape): dependency edges ∪ queue-order edges must be acyclic. */
evt_status evt_schedule_verify(const evt_plan *p, const int64_t *sym, const evt_static_sched *s, evt_diag *d);
void evt_static_sched_free(evt_static_sched *s);

#ifdef __cplusplus
}
#endif
#endif
