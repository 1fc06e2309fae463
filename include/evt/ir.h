/* evt/ir.h — the Event Tensor IR: symbols, integer expressions, tensors,
 * event tensors and calls (task grids) joined by wait/notify edges.
 *
 * A program is an evt_graph. Everything in it is allocated from the graph's
 * arena and released by evt_graph_free(). Structures are visible so that the
 * passes and emitters can walk them; build them only through the functions
 * below, which keep the graph consistent.
 *
 * Vocabulary (papers/000 §2):
 *   call     a task grid: one tile operator run at every coordinate of a
 *            symbolic grid, e.g. partial_sum over (i, j) in [n, 4].
 *   event    a tensor of completion counters, e.g. E[n].
 *   notify   producer edge: task (i, j) decrements E[map(i, j)] when done.
 *   wait     consumer edge: task (i) waits until E[map(i)] is complete.
 *   map      a list of integer expressions over the task coordinates (and
 *            optional `for` iteration variables), one per event dimension.
 *            Maps may read integer tensors (data-dependent gather:
 *            (i, k) -> (topk[i, k])). A wait edge may instead be a trigger
 *            range: task t waits E[e] where indptr[e] <= t < indptr[e + 1].
 *
 * Example (split row sum, see examples/split_rowsum.evt):
 *   evt_graph *g = evt_graph_new();
 *   evt_sym *n = evt_sym_new(g, "n", 4);  evt_sym_set_bounds(n, 1, 1024);
 *   ... evt_call_new(g, "partial", "rowsum_partial", 2, (evt_expr*[]){N, C4});
 *   evt_call_add_notify(partial, E, 1, (evt_expr*[]){evt_var(g, 0)});
 */
#ifndef EVT_IR_H
#define EVT_IR_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EVT_MAX_RANK 4      /* tensors, events, grids */
#define EVT_MAX_FOR 2       /* `for` iteration variables per edge */
#define EVT_MAX_ARGS 16     /* arguments of one call */
#define EVT_MAX_BUCKETS 16

/* Source position, for diagnostics. line 0 means "built through the C API". */
typedef struct evt_loc { int line, col; } evt_loc;

/* ---- status and diagnostics ------------------------------------------- */

typedef enum evt_status {
    EVT_OK = 0,
    EVT_ERR_PARSE,      /* malformed .evt text */
    EVT_ERR_VERIFY,     /* well-formed but invalid program */
    EVT_ERR_SHAPE,      /* bad symbol value: unknown, missing, out of bounds */
    EVT_ERR_SCHEDULE,   /* no deadlock-free schedule */
    EVT_ERR_COMPILE,    /* the C or CUDA compiler failed */
    EVT_ERR_IO,         /* file could not be read or written */
    EVT_ERR_RUNTIME,    /* a kernel reported an error (bad index, ...) */
    EVT_ERR_TIMEOUT,    /* the watchdog fired */
    EVT_ERR_NO_DEVICE,  /* no GPU / driver */
    EVT_ERR_CHECK,      /* result differs from the reference */
    EVT_ERR_NOMEM,
} evt_status;

const char *evt_status_name(evt_status s);

/* A diagnostics sink: messages are appended as "FILE:LINE:COL: error: ...".
 * Every library entry point that can fail takes one (may be NULL). */
typedef struct evt_diag {
    const char *file;   /* name used in messages ("<api>" if NULL) */
    char *text;         /* all messages, newline-separated (malloc'd) */
    size_t len, cap;
    int nerrors;
} evt_diag;

void evt_diag_init(evt_diag *d, const char *file);
void evt_diag_free(evt_diag *d);
/* Appends an error at loc; returns EVT_ERR_* given as `code` for chaining. */
evt_status evt_diag_error(evt_diag *d, evt_status code, evt_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void evt_diag_note(evt_diag *d, evt_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- types --------------------------------------------------------------- */

typedef enum evt_dtype { EVT_F32, EVT_BF16, EVT_F16, EVT_I32, EVT_I64, EVT_U8, EVT_NDTYPES } evt_dtype;
const char *evt_dtype_name(evt_dtype t);
int evt_dtype_size(evt_dtype t);
int evt_dtype_parse(const char *s, evt_dtype *out); /* 1 on success */

typedef enum evt_role { EVT_INPUT, EVT_OUTPUT, EVT_WEIGHT, EVT_SCRATCH } evt_role;
const char *evt_role_name(evt_role r);

/* How `evtc run` fills a tensor before a launch. */
typedef enum evt_init_kind {
    EVT_INIT_NONE,     /* scratch / output: poisoned, must be written */
    EVT_INIT_ZEROS,
    EVT_INIT_CONST,    /* every element = value */
    EVT_INIT_RANDOM,   /* uniform in [lo, hi) from seed (floats); ints: [lo, hi) */
    EVT_INIT_RANGE,    /* element k = k (ints) — handy for index tensors */
    EVT_INIT_FILE,     /* raw little-endian bytes of the dtype, row-major */
    EVT_INIT_ROPE,     /* f32 [P, d], d even: row p = cos | sin of p * theta^(-2i/d), i < d/2
                          (RoPE's angle table; theta in value; src/tiles/rope.h) */
} evt_init_kind;

typedef struct evt_init {
    evt_init_kind kind;
    double value, lo, hi; /* CONST: value; ROPE: theta; RANDOM: [lo, hi) */
    uint64_t seed;        /* RANDOM: seed, mixed with --seed */
    const char *path;     /* FILE */
} evt_init;

/* ---- expressions --------------------------------------------------------- */

typedef enum evt_expr_op {
    EVT_E_CONST, EVT_E_SYM, EVT_E_VAR, /* VAR: coordinate or `for` variable */
    EVT_E_ADD, EVT_E_SUB, EVT_E_MUL, EVT_E_DIV /* floor */, EVT_E_MOD /* floor */,
    EVT_E_MIN, EVT_E_MAX,
    EVT_E_LOAD, /* integer tensor element: tensor[args...] (data-dependent) */
} evt_expr_op;

struct evt_sym;
struct evt_tensor;

/* Expressions are immutable trees; sharing subtrees is allowed. Variables are
 * numbered: 0..grid_rank-1 are the task coordinates, grid_rank.. are the edge's
 * `for` variables. Constructors simplify constants (2*3 -> 6, x+0 -> x). */
typedef struct evt_expr {
    evt_expr_op op;
    int64_t value;             /* CONST */
    struct evt_sym *sym;       /* SYM */
    int var;                   /* VAR */
    struct evt_tensor *tensor; /* LOAD */
    int nargs;
    struct evt_expr *a[EVT_MAX_RANK]; /* operands (2 for binary; rank for LOAD) */
} evt_expr;

/* ---- graph objects ------------------------------------------------------- */

typedef struct evt_sym {
    int id;
    const char *name;
    int64_t def;             /* default value */
    int64_t lo, hi;          /* bounds, inclusive */
    int nbuckets;            /* 0: no buckets */
    int64_t buckets[EVT_MAX_BUCKETS]; /* ascending */
    evt_loc loc;
} evt_sym;

typedef struct evt_tensor {
    int id;
    const char *name;
    evt_dtype dtype;
    evt_role role;
    int rank;
    evt_expr *shape[EVT_MAX_RANK];
    evt_init init;
    evt_loc loc;
} evt_tensor;

typedef struct evt_event {
    int id;
    const char *name;
    int rank;
    evt_expr *shape[EVT_MAX_RANK];
    evt_expr *count;      /* declared count (NULL: inferred); may use e0.. as VAR */
    evt_loc loc;
} evt_event;

typedef enum evt_edge_kind { EVT_WAIT, EVT_NOTIFY } evt_edge_kind;

typedef struct evt_edge {
    evt_edge_kind kind;
    evt_event *event;
    /* Affine / gather form: one index expression per event dimension. */
    int nidx;
    evt_expr *idx[EVT_MAX_RANK];
    /* Optional iteration variables: `for k in [K]`; var ids grid_rank + f. */
    int nfor;
    const char *for_name[EVT_MAX_FOR];
    evt_expr *for_ext[EVT_MAX_FOR];
    /* Trigger-range form (wait only, 1-D grid, 1-D event): task c0 waits
     * event[e] where indptr[e] <= c0 < indptr[e+1]; nidx == 0. */
    evt_tensor *trigger;
    evt_loc loc;
} evt_edge;

typedef enum evt_arg_kind { EVT_ARG_TENSOR, EVT_ARG_INT } evt_arg_kind;
typedef struct evt_arg {
    evt_arg_kind kind;
    evt_tensor *tensor;
    evt_expr *value; /* INT: an expression over symbols */
    evt_loc loc;
} evt_arg;

typedef enum evt_policy { EVT_POLICY_AUTO, EVT_POLICY_STATIC, EVT_POLICY_DYNAMIC } evt_policy;

typedef struct evt_call {
    int id;
    const char *name;    /* unique; used in traces and messages */
    const char *op;      /* tile operator name (see evt/tiles.h) */
    int nargs;
    evt_arg args[EVT_MAX_ARGS];
    int rank;
    const char *var_name[EVT_MAX_RANK];
    evt_expr *grid[EVT_MAX_RANK];
    int nedges;
    evt_edge *edges;     /* waits and notifies, in declaration order */
    int edges_cap;
    int64_t cost;        /* relative duration estimate for the cp policy (default 1) */
    int prefetch;        /* 1: run the op's prefetch hook before the waits */
    evt_policy policy;
    evt_loc loc;
} evt_call;

typedef struct evt_graph {
    int nsyms, ntensors, nevents, ncalls;
    evt_sym **syms;
    evt_tensor **tensors;
    evt_event **events;
    evt_call **calls;
    int caps[4];
    struct evt_arena *arena;
} evt_graph;

/* ---- building ------------------------------------------------------------ */

evt_graph *evt_graph_new(void);
void evt_graph_free(evt_graph *g);
/* Duplicate a string into the graph's arena. */
const char *evt_graph_strdup(evt_graph *g, const char *s);
void *evt_graph_alloc(evt_graph *g, size_t bytes); /* zeroed */

evt_sym *evt_sym_new(evt_graph *g, const char *name, int64_t def);
void evt_sym_set_bounds(evt_sym *s, int64_t lo, int64_t hi);
void evt_sym_set_buckets(evt_sym *s, int n, const int64_t *values);

evt_tensor *evt_tensor_new(evt_graph *g, const char *name, evt_dtype t, evt_role role,
                           int rank, evt_expr *const *shape);
evt_event *evt_event_new(evt_graph *g, const char *name, int rank, evt_expr *const *shape);

evt_call *evt_call_new(evt_graph *g, const char *name, const char *op,
                       int rank, const char *const *var_names, evt_expr *const *grid);
void evt_call_add_tensor_arg(evt_call *c, evt_tensor *t);
void evt_call_add_int_arg(evt_call *c, evt_expr *value);
/* Adds an affine/gather edge; returns it so `for` variables can be added. */
evt_edge *evt_call_add_edge(evt_graph *g, evt_call *c, evt_edge_kind kind, evt_event *e,
                            int nidx, evt_expr *const *idx);
void evt_edge_add_for(evt_graph *g, evt_edge *e, const char *name, evt_expr *extent);
evt_edge *evt_call_add_trigger_wait(evt_graph *g, evt_call *c, evt_event *e, evt_tensor *indptr);

evt_sym *evt_graph_find_sym(const evt_graph *g, const char *name);
evt_tensor *evt_graph_find_tensor(const evt_graph *g, const char *name);
evt_event *evt_graph_find_event(const evt_graph *g, const char *name);
evt_call *evt_graph_find_call(const evt_graph *g, const char *name);

/* Deep copy (used by transforming passes such as unfuse). */
evt_graph *evt_graph_clone(const evt_graph *g);

/* ---- expressions --------------------------------------------------------- */

evt_expr *evt_const(evt_graph *g, int64_t v);
evt_expr *evt_symref(evt_graph *g, evt_sym *s);
evt_expr *evt_var(evt_graph *g, int var);
evt_expr *evt_binop(evt_graph *g, evt_expr_op op, evt_expr *a, evt_expr *b);
evt_expr *evt_load(evt_graph *g, evt_tensor *t, int nargs, evt_expr *const *args);

int evt_expr_is_const(const evt_expr *e, int64_t *value);
/* 1 if the expression reads a tensor (data-dependent). */
int evt_expr_has_load(const evt_expr *e);
int evt_expr_uses_var(const evt_expr *e, int var);
int evt_expr_equal(const evt_expr *a, const evt_expr *b);

/* Values for evaluation: symbols by id, variables by number, and an optional
 * reader for LOAD (returns 0 and sets *err on out-of-bounds). */
typedef struct evt_eval_env {
    const int64_t *sym;
    const int64_t *var;
    int64_t (*load)(void *user, const evt_tensor *t, const int64_t *idx, int *err);
    void *user;
} evt_eval_env;
/* Evaluates; on division by zero or a failed load sets *err = 1. */
int64_t evt_expr_eval(const evt_expr *e, const evt_eval_env *env, int *err);

/* Printing. var_names may be NULL (prints v0, v1...). */
typedef struct evt_printer {
    char *buf; size_t len, cap;
} evt_printer;
void evt_pr(evt_printer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void evt_pr_free(evt_printer *p);
void evt_expr_print(evt_printer *p, const evt_expr *e, const char *const *var_names);

#ifdef __cplusplus
}
#endif
#endif
