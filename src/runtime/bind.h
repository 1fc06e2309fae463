/* bind.h — a plan bound to one concrete shape (internal, target-independent).
 *
 * Everything a launch needs beyond the code: grid and event extents, task
 * and counter numbering, counter targets, and either static queues or the
 * dynamic consumer lists. Built on the host, cached per shape by the module;
 * the CPU backend points the kernel at it, the CUDA backend uploads it once.
 */
#ifndef EVT_BIND_H
#define EVT_BIND_H
#include "pass/plan.h"
#include "device/evt_ctx.h"
#include "evt/runtime.h"

typedef struct evt_bound {
    evt_shape s;
    evt_sched_kind sched;
    int nworkers;
    int32_t *target;          /* [ncounters] */
    /* static */
    evt_static_sched q;
    evt_task_rec *rec;        /* [q.q_off[q.nworkers]] task records of the queue entries (bind_records.c) */
    evt_task_rec *trec;       /* dynamic, hybrid: [s.ntasks] every task's record by global id */
    evt_stream_job *sjob;     /* weight stream: the static workers' jobs (bind_stream.c), or NULL */
    int64_t *sjob_off;        /*   [q.nworkers + 1] */
    int bucket_used;
    /* dynamic */
    int64_t *cons_off;        /* [ncounters+1] */
    int32_t *cons;
    int32_t *pend_target;     /* [ntasks] */
    int32_t *seeds;
    int64_t nseeds;
    int nstatic;              /* hybrid: static workers [0, nstatic) */
    int64_t state_len;        /* int32 words of per-launch state */
    double bind_ms;
} evt_bound;

/* Binds plan p at sym. Static schedules come from `cached` when given (a
 * bucket schedule) — it is then re-verified at this shape — else are built. */
evt_status evt_bind(const evt_plan *p, const int64_t *sym, evt_sched_kind sched, int nworkers,
                    evt_queue_policy policy, int exact_shape, evt_bound *out, evt_diag *d);
void evt_bound_free(evt_bound *b);
/* Host bytes of b's arrays (the bind cache's measure). */
size_t evt_bound_bytes(const evt_bound *b);
/* The task records of b's static queues, and of every task by global id
 * with lists for the calls with dyn[c] set (NULL: all) for dynamic workers
 * (bind_records.c; none when the shape's numbers do not fit 32 bits). */
evt_status evt_bind_records(const evt_plan *p, evt_bound *b);
evt_status evt_bind_task_records(const evt_plan *p, const uint8_t *dyn, evt_bound *b);
/* A task's arguments as its tile receives them: coordinate, the call's grid
 * extents ext[0..3], tensor references (ptr[id], NULL for none: every pointer
 * NULL; dims[id]: EVT_ABI_MAX_RANK extents) and integer arguments evaluated
 * under env. Returns 0 if an integer argument cannot be evaluated (a is
 * filled all the same) or the call has more arguments than the ABI holds. */
int evt_task_args_fill(const evt_call *call, const int64_t *ext, const int64_t *coord, void *const *ptr,
                       const int64_t *const *dims, const evt_eval_env *env, evt_task_args *a);
/* The weight stream's jobs of b's static queues (bind_stream.c; none when
 * no call streams). EVT_ERR_SHAPE with a message in d for an
 * $EVT_STREAM_ISSUE that names no policy. */
evt_status evt_bind_stream_jobs(const evt_plan *p, evt_bound *b, evt_diag *d);
/* Only the shape and the counter targets (the reference executor's needs). */
evt_status evt_bind_targets(const evt_plan *p, const int64_t *sym, evt_bound *out, evt_diag *d);

/* The shape a static schedule is built for: each bucketed symbol rounded up
 * to its bucket. Returns 1 if that differs from sym. */
int evt_bucket_shape(const evt_graph *g, const int64_t *sym, int64_t *out);

/* Fills the parts of a ctx that come from the bound plan (host pointers). */
void evt_bound_fill_ctx(const evt_bound *b, evt_ctx *C);
/* The run options every backend's context takes the same way: watchdog,
 * chaos, early push, pop batch, and the --no-records ablation (no task
 * records: static tasks evaluate their maps on the device). */
void evt_ctx_apply_run_opts(evt_ctx *C, const evt_run_opts *o);

/* Points the per-launch state fields of C into `state` (the one layout). */
void evt_ctx_place_state(evt_ctx *C, int32_t *state, const evt_bound *b);
/* Ring slots a launch needs: a power of two >= tasks + workers + 1. */
int64_t evt_ring_capacity(const evt_bound *b);
/* A ring's slots before their first lap: slot i waits for position i's task
   (sequence i, no task; the slot word of evt_ctx.h). Both runtimes. */
void evt_ring_slots_init(evt_ring_slot *slots, int64_t cap);

/* Message for a kernel-reported error ("watchdog: task final(2) ..."). */
void evt_describe_error(const evt_bound *b, const evt_error *e, const int32_t *counters, char *buf, size_t n);

#endif
