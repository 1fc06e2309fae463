/* plan.h — the lowered, target-independent plan (internal) and the concrete
 * shape helpers that bind, the schedulers and the reference executor share.
 *
 * The plan annotates the graph: for every event how its count is known
 * (static closed form, enumerated, or data-dependent and armed at run time by
 * which call), for every call its tile operator and data-dependent validity.
 * Emitters print it; bind evaluates it for one shape.
 */
#ifndef EVT_PLAN_H
#define EVT_PLAN_H

#include "evt/compile.h"
#include "evt/tiles.h"

typedef enum evt_count_kind {
    EVT_COUNT_STATIC,  /* known from the shape: enumerated at bind time */
    EVT_COUNT_DATA,    /* data-dependent: armed on the device at run time */
} evt_count_kind;

#define EVT_ARMER_INPUTS (-1) /* armed at launch start: index tensors are inputs */

typedef struct evt_event_plan {
    evt_count_kind kind;
    evt_expr *formula;     /* closed-form count per element (vars e0..: element
                              coordinates), or NULL when only enumeration works */
    int armer;             /* DATA: call id that arms it, or EVT_ARMER_INPUTS */
    int nproducers;        /* calls that notify it */
    int ntrigger_consumers;/* calls that wait on it through a trigger range */
} evt_event_plan;

typedef struct evt_call_plan {
    const evt_tile_decl *decl;
    int op_index;          /* into plan->ops */
    int trigger_edge;      /* index of the trigger-range wait, or -1 */
    int narm;
    int *arm;              /* events this call arms (after its last task) */
    int streams;           /* 1: the call's weights come through the workers' weight streams
                              (CUDA; src/device/evt_stream.h; evt_call_streams) */
    int early_loads;       /* 1: the tile issues its weight loads before its waits, which it runs
                              itself (CUDA, tasks with records; evt_call_early_loads) */
} evt_call_plan;

struct evt_plan {
    evt_graph *g;
    evt_event_plan *ev;
    evt_call_plan *call;
    int nops;
    const evt_tile_decl **ops;
    int narm_inputs;
    int *arm_inputs;       /* events armed at launch start */
    int nfused;            /* events removed by fusion */
    int nstreams;          /* calls that stream their weights */
    int stream_weights;    /* evt_compile_opts.stream_weights */
    int early_loads;       /* evt_compile_opts.early_loads */
    char *cuda_defines;    /* evt_compile_opts.cuda_defines (a copy; NULL: none) */
};

/* ---- concrete shapes (host) ---- */

typedef struct evt_shape {
    const evt_plan *p;
    int64_t *sym;          /* [nsyms] */
    int64_t *ext;          /* [ncalls*4] grid extents (unused dims 1) */
    int64_t *task_base;    /* [ncalls+1] */
    int64_t *ev_dim;       /* [nevents*4] */
    int64_t *ev_base;      /* [nevents+1] */
    int64_t ntasks, ncounters;
} evt_shape;

/* Evaluates every extent under sym. Fails (EVT_ERR_SHAPE) on a negative
 * extent or a task count that does not fit the queue encoding. */
evt_status evt_shape_init(evt_shape *s, const evt_plan *p, const int64_t *sym, evt_diag *d);
void evt_shape_free(evt_shape *s);
/* The call that global task `task` belongs to (binary search). */
int evt_shape_call_of(const evt_shape *s, int64_t task);
/* Coordinates of task `lin` of call c (row-major over extents ext). */
void evt_shape_decode(const int64_t *ext, int rank, int64_t lin, int64_t *coord);
/* Linear counter index of event element idx, or -1 when out of range. */
int64_t evt_shape_elem(const evt_shape *s, int event, const int64_t *idx);

/* Calls fn(user, elem) for every element a task waits on / notifies through
 * edge `e` (iterating `for` variables). Data-dependent maps need `env->load`;
 * returns nonzero if a map could not be evaluated (or an index is out of
 * range: then *bad holds the offending value). */
typedef void (*evt_elem_fn)(void *user, int64_t elem);
int evt_edge_elems(const evt_shape *s, const evt_call *c, const evt_edge *e,
                   const int64_t *coord, const evt_eval_env *base_env,
                   evt_elem_fn fn, void *user, int64_t *bad);

/* Element `elem` (absolute counter index) as "E[1, 2]". */
void evt_elem_name(const evt_shape *s, int64_t elem, char *buf, size_t n);
/* 1 if call c writes tensor t (an OUT or INOUT parameter of its operator). */
int evt_call_writes(const evt_call *c, const evt_tensor *t);
/* Appends the tensors an expression reads (LOAD) to out[] (at most cap). */
void evt_expr_loads(const evt_expr *e, const evt_tensor **out, int *n, int cap);

/* 1 if the edge's map reads a tensor or the call's validity depends on data:
 * its targets can only be known at run time. */
int evt_edge_is_data(const evt_plan *p, const evt_call *c, const evt_edge *e);
/* 1 if every wait and notify of call c is known on the host at bind time
 * (affine maps, no data-dependent count, no trigger range on either side):
 * its static tasks then take their lists from task records (evt_ctx.h).
 * The emitter and bind ask this same question. */
int evt_call_has_records(const evt_plan *p, const evt_call *c);

/* 1 if call c streams its weights: annotated `prefetch`, its operator plans
 * a stream (stream_params), every streamed tensor is a weight or an input
 * (nothing in a launch writes it, so it may be read at any time), and the
 * call's tasks exist independently of data (no trigger-range wait: the
 * producer must know which tasks will run). */
int evt_call_streams(const evt_plan *p, const evt_call *c);
/* 1 if call c's tile loads its weights before its waits: annotated
 * `prefetch`, compiled with early_loads, its operator sets waits_in_tile,
 * its stream_params tensors are weights or inputs (nothing in a launch
 * writes them), no trigger-range wait and no weight stream. */
int evt_call_early_loads(const evt_plan *p, const evt_call *c);

/* Symbolic count inference (infer_counts.c). */
void evt_infer_counts(evt_plan *p);
evt_status evt_lower(evt_plan *p, evt_diag *d);

#endif
