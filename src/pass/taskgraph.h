/* taskgraph.h — the task-level dependency graph of a plan at one concrete
 * shape (internal). Nodes: tasks [0, T), event elements [T, T+C), and one
 * node per data-dependent event [T+C, T+C+E) that stands for "any element":
 * since their edges are only known at run time, every producer of such an
 * event precedes every consumer of it. This conservative graph is what the
 * static scheduler proves deadlock-free; run time still syncs per element.
 */
#ifndef EVT_TASKGRAPH_H
#define EVT_TASKGRAPH_H
#include "pass/plan.h"

typedef struct evt_taskgraph {
    const evt_shape *s;
    int64_t ntasks, nnodes;
    int64_t *succ_off;   /* [nnodes+1] */
    int64_t *succ;
    int32_t *npred;      /* [nnodes] */
    int64_t *cost;       /* [ntasks] */
} evt_taskgraph;

/* Builds the graph; reports affine maps that leave their event's bounds. */
evt_status evt_taskgraph_build(const evt_shape *s, evt_taskgraph *tg, evt_diag *d);
void evt_taskgraph_free(evt_taskgraph *tg);

/* Kahn's algorithm over dependency edges plus optional queue-order edges
 * (qnext[task] = next task on the same worker, or -1). Returns EVT_OK if
 * acyclic, else EVT_ERR_SCHEDULE with the tasks of one cycle named in d. */
evt_status evt_taskgraph_check(const evt_taskgraph *tg, const int64_t *qnext, const char *what, evt_diag *d);

/* "final(3)" or "partial(1, 2)" */
void evt_task_name(const evt_shape *s, int64_t task, char *buf, size_t n);

#endif
