/* reference.c — the sequential, kernel-by-kernel reference executor.
 *
 * Calls run in program order, tasks in row-major order, with the C tiles; no
 * threads, no generated code. It keeps its own counters and checks, as it
 * goes, that every wait would already be satisfied in this order, and at the
 * end that every counter reached its target (a wrong declared count is
 * reported here too). Data-dependent targets are the histograms of the
 * notify maps, computed when their arming call has finished.
 */
#include <stdlib.h>
#include <string.h>
#include "runtime/module.h"
#include "pass/taskgraph.h"

typedef struct ref {
    const evt_plan *p;
    evt_shape s;
    evt_buffers *b;
    int64_t *count;       /* notifies received */
    int64_t *target;      /* -1: not known yet (data-dependent, not armed) */
    int bad_load;
} ref;

static int64_t load_cb(void *user, const evt_tensor *t, const int64_t *idx, int *err)
{
    ref *r = user;
    const int64_t *dims = evt_buffers_dims(r->b, t->id);
    int64_t off = 0;
    for (int k = 0; k < t->rank; k++) {
        if (idx[k] < 0 || idx[k] >= dims[k]) { *err = 1; r->bad_load = 1; return 0; }
        off = off * dims[k] + idx[k];
    }
    void *data = evt_buffers_data(r->b, t->id, NULL);
    return t->dtype == EVT_I64 ? ((int64_t *)data)[off] : ((int32_t *)data)[off];
}

/* Is task `coord` of call c valid for this data (trigger range)? */
static int task_valid(ref *r, int c, const int64_t *coord)
{
    int te = r->p->call[c].trigger_edge;
    if (te < 0) return 1;
    const evt_edge *e = &r->p->g->calls[c]->edges[te];
    int64_t n = r->s.ev_dim[e->event->id * 4];
    const int32_t *ip = evt_buffers_data(r->b, e->trigger->id, NULL);
    const int64_t *ipl = (const int64_t *)ip;
    int wide = e->trigger->dtype == EVT_I64;
    int64_t first = wide ? ipl[0] : ip[0], last = wide ? ipl[n] : ip[n];
    return coord[0] >= first && coord[0] < last;
}

static int64_t trigger_owner(ref *r, const evt_edge *e, int64_t t)
{
    int64_t n = r->s.ev_dim[e->event->id * 4];
    const int32_t *ip = evt_buffers_data(r->b, e->trigger->id, NULL);
    const int64_t *ipl = (const int64_t *)ip;
    for (int64_t x = 0; x < n; x++) {
        int64_t lo = e->trigger->dtype == EVT_I64 ? ipl[x] : ip[x], hi = e->trigger->dtype == EVT_I64 ? ipl[x + 1] : ip[x + 1];
        if (t >= lo && t < hi) return x;
    }
    return -1;
}

typedef struct visit { ref *r; int mode; int64_t missing; } visit; /* mode 0 check wait, 1 notify, 2 histogram */
static void on_elem(void *user, int64_t elem)
{
    visit *v = user;
    if (v->mode == 0) { if (v->missing < 0 && v->r->count[elem] != v->r->target[elem]) v->missing = elem; }
    else if (v->mode == 1) v->r->count[elem]++;
    else v->r->target[elem]++;
}

/* Data-dependent targets of event ev: histogram of its notify maps. */
static evt_status arm(ref *r, int ev, evt_diag *d)
{
    const evt_graph *g = r->p->g;
    evt_eval_env env = {.load = load_cb, .user = r};
    for (int64_t x = r->s.ev_base[ev]; x < r->s.ev_base[ev + 1]; x++) r->target[x] = 0;
    for (int c = 0; c < g->ncalls; c++) {
        const evt_call *call = g->calls[c];
        for (int k = 0; k < call->nedges; k++) {
            const evt_edge *e = &call->edges[k];
            if (e->kind != EVT_NOTIFY || e->event->id != ev) continue;
            for (int64_t lin = 0; lin < r->s.task_base[c + 1] - r->s.task_base[c]; lin++) {
                int64_t coord[EVT_MAX_RANK], bad = 0;
                evt_shape_decode(&r->s.ext[c * 4], call->rank, lin, coord);
                if (!task_valid(r, c, coord)) continue;
                visit v = {r, 2, -1};
                int rc = evt_edge_elems(&r->s, call, e, coord, &env, on_elem, &v, &bad);
                if (rc) {
                    char name[160];
                    evt_task_name(&r->s, r->s.task_base[c] + lin, name, sizeof name);
                    return evt_diag_error(d, EVT_ERR_RUNTIME, e->loc, "reference: task %s notifies %s at index %lld, outside the event",
                                          name, e->event->name, (long long)bad);
                }
            }
        }
    }
    return EVT_OK;
}

evt_status evt_reference_run(const evt_module *m, const int64_t *sym, evt_buffers *b, evt_diag *d)
{
    ref r = {.p = m->var[0].p, .b = b};
    const evt_graph *g = r.p->g;
    evt_status st = evt_shape_init(&r.s, r.p, sym, d);
    if (st) return st;
    r.count = calloc(r.s.ncounters + 1, sizeof(int64_t));
    r.target = calloc(r.s.ncounters + 1, sizeof(int64_t));
    void **ptrs = calloc(g->ntensors + 1, sizeof *ptrs); /* the tiles' tensor references */
    const int64_t **dims = calloc(g->ntensors + 1, sizeof *dims);
    if (!r.count || !r.target || !ptrs || !dims) { st = EVT_ERR_NOMEM; goto out; }
    for (int t = 0; t < g->ntensors; t++) {
        ptrs[t] = evt_buffers_data(b, t, NULL);
        dims[t] = evt_buffers_dims(b, t);
    }
    /* static targets: the same enumeration as bind */
    {
        evt_bound bb;
        st = evt_bind_targets(r.p, sym, &bb, d);
        if (st) goto out;
        for (int64_t x = 0; x < r.s.ncounters; x++)
            r.target[x] = bb.target[x] == EVT_DATA_TARGET ? -1 : bb.target[x];
        evt_bound_free(&bb);
    }
    for (int i = 0; i < r.p->narm_inputs && !st; i++) st = arm(&r, r.p->arm_inputs[i], d);
    evt_eval_env env = {.sym = r.s.sym, .load = load_cb, .user = &r};
    for (int c = 0; c < g->ncalls && !st; c++) {
        const evt_call *call = g->calls[c];
        const evt_call_plan *cp = &r.p->call[c];
        for (int64_t lin = 0; lin < r.s.task_base[c + 1] - r.s.task_base[c] && !st; lin++) {
            int64_t coord[EVT_MAX_RANK] = {0}, task = r.s.task_base[c] + lin;
            evt_shape_decode(&r.s.ext[c * 4], call->rank, lin, coord);
            if (!task_valid(&r, c, coord)) continue;
            for (int k = 0; k < call->nedges && !st; k++) {
                const evt_edge *e = &call->edges[k];
                if (e->kind != EVT_WAIT) continue;
                visit v = {&r, 0, -1};
                if (e->trigger) {
                    int64_t x = trigger_owner(&r, e, coord[0]) + r.s.ev_base[e->event->id];
                    if (r.count[x] != r.target[x]) v.missing = x;
                } else {
                    evt_edge_elems(&r.s, call, e, coord, &env, on_elem, &v, NULL);
                }
                if (v.missing >= 0) {
                    char tn[160], en[160];
                    evt_task_name(&r.s, task, tn, sizeof tn);
                    evt_elem_name(&r.s, v.missing, en, sizeof en);
                    st = evt_diag_error(d, EVT_ERR_RUNTIME, e->loc.line ? e->loc : call->loc,
                                        "reference: task %s waits on %s, which is not complete when calls run in program order "
                                        "(%lld of %lld notifies); the sequential reference cannot run this program",
                                        tn, en, (long long)r.count[v.missing], (long long)r.target[v.missing]);
                }
            }
            if (st) break;
            evt_task_args A;
            evt_task_args_fill(call, &r.s.ext[c * 4], coord, ptrs, dims, &env, &A);
            cp->decl->cpu(&A);
            for (int k = 0; k < call->nedges && !st; k++) {
                const evt_edge *e = &call->edges[k];
                if (e->kind != EVT_NOTIFY) continue;
                visit v = {&r, 1, -1};
                int64_t bad = 0;
                if (evt_edge_elems(&r.s, call, e, coord, &env, on_elem, &v, &bad)) {
                    char tn[160];
                    evt_task_name(&r.s, task, tn, sizeof tn);
                    st = evt_diag_error(d, EVT_ERR_RUNTIME, e->loc.line ? e->loc : call->loc,
                                        "bad index: task %s notifies %s at index %lld, outside the event", tn, e->event->name, (long long)bad);
                }
            }
        }
        for (int a = 0; a < cp->narm && !st; a++) st = arm(&r, cp->arm[a], d);
    }
    for (int64_t x = 0; x < r.s.ncounters && !st; x++)
        if (r.count[x] != r.target[x]) {
            char en[160];
            evt_elem_name(&r.s, x, en, sizeof en);
            st = evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0},
                                "reference: %s received %lld notifies but its count is %lld", en, (long long)r.count[x], (long long)r.target[x]);
        }
out:
    free(r.count); free(r.target); free(ptrs); free(dims);
    evt_shape_free(&r.s);
    return st;
}
