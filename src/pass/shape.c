/* shape.c — a plan evaluated at one concrete shape: grid and event extents,
 * task numbering, counter layout, and enumeration of the event elements an
 * edge touches. Shared by bind, the static scheduler and the reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pass/plan.h"

#include "device/evt_ctx.h"
#define MAX_TASKS_PER_CALL (1 << EVT_QCALL_SHIFT) /* what a queue entry can index */

evt_status evt_shape_init(evt_shape *s, const evt_plan *p, const int64_t *sym, evt_diag *d)
{
    const evt_graph *g = p->g;
    memset(s, 0, sizeof *s);
    s->p = p;
    s->sym = calloc(g->nsyms + 1, sizeof(int64_t));
    s->ext = calloc(g->ncalls * 4 + 1, sizeof(int64_t));
    s->task_base = calloc(g->ncalls + 1, sizeof(int64_t));
    s->ev_dim = calloc(g->nevents * 4 + 1, sizeof(int64_t));
    s->ev_base = calloc(g->nevents + 1, sizeof(int64_t));
    if (!s->sym || !s->ext || !s->task_base || !s->ev_dim || !s->ev_base) {
        evt_shape_free(s);
        return evt_diag_error(d, EVT_ERR_NOMEM, (evt_loc){0, 0}, "out of memory binding a shape");
    }
    memcpy(s->sym, sym, g->nsyms * sizeof(int64_t));
    evt_eval_env env = {.sym = s->sym};
    int err = 0;
    for (int c = 0; c < g->ncalls; c++) {
        const evt_call *call = g->calls[c];
        int64_t n = 1;
        for (int k = 0; k < 4; k++) {
            int64_t v = k < call->rank ? evt_expr_eval(call->grid[k], &env, &err) : 1;
            if (v < 0) v = 0;
            s->ext[c * 4 + k] = v;
            n *= v;
            if (n > MAX_TASKS_PER_CALL) {
                evt_shape_free(s);
                return evt_diag_error(d, EVT_ERR_SHAPE, call->loc, "call %s has more than %d tasks at this shape",
                                      call->name, MAX_TASKS_PER_CALL);
            }
        }
        s->task_base[c] = s->ntasks;
        s->ntasks += n;
    }
    s->task_base[g->ncalls] = s->ntasks;
    for (int e = 0; e < g->nevents; e++) {
        const evt_event *ev = g->events[e];
        int64_t n = 1;
        for (int k = 0; k < 4; k++) {
            int64_t v = k < ev->rank ? evt_expr_eval(ev->shape[k], &env, &err) : 1;
            if (v < 0) v = 0;
            s->ev_dim[e * 4 + k] = v;
            n *= v;
        }
        s->ev_base[e] = s->ncounters;
        s->ncounters += n;
    }
    s->ev_base[g->nevents] = s->ncounters;
    if (err) {
        evt_shape_free(s);
        return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "an extent divides by zero at this shape");
    }
    if (s->ntasks > INT32_MAX / 2 || s->ncounters > INT32_MAX / 2) {
        evt_shape_free(s);
        return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "shape too large (%lld tasks, %lld counters)",
                              (long long)s->ntasks, (long long)s->ncounters);
    }
    return EVT_OK;
}

void evt_shape_free(evt_shape *s)
{
    free(s->sym); free(s->ext); free(s->task_base); free(s->ev_dim); free(s->ev_base);
    memset(s, 0, sizeof *s);
}

int evt_shape_call_of(const evt_shape *s, int64_t task)
{
    int lo = 0, hi = s->p->g->ncalls - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (s->task_base[mid] <= task) lo = mid; else hi = mid - 1;
    }
    return lo;
}

void evt_shape_decode(const int64_t *ext, int rank, int64_t lin, int64_t *coord)
{
    for (int k = rank - 1; k >= 0; k--) {
        int64_t e = ext[k] ? ext[k] : 1;
        coord[k] = lin % e;
        lin /= e;
    }
}

int64_t evt_shape_elem(const evt_shape *s, int event, const int64_t *idx)
{
    const evt_event *ev = s->p->g->events[event];
    int64_t lin = 0;
    for (int k = 0; k < ev->rank; k++) {
        int64_t dim = s->ev_dim[event * 4 + k];
        if (idx[k] < 0 || idx[k] >= dim) return -1;
        lin = lin * dim + idx[k];
    }
    return s->ev_base[event] + lin;
}

int evt_edge_is_data(const evt_plan *p, const evt_call *c, const evt_edge *e)
{
    if (e->trigger) return 1;
    if (p->call[c->id].trigger_edge >= 0 && e->kind == EVT_NOTIFY) return 1;
    for (int i = 0; i < e->nidx; i++) if (evt_expr_has_load(e->idx[i])) return 1;
    return 0;
}

int evt_call_has_records(const evt_plan *p, const evt_call *c)
{
    for (int k = 0; k < c->nedges; k++) {
        const evt_edge *e = &c->edges[k];
        int ev = e->event->id;
        if (evt_edge_is_data(p, c, e)) return 0;
        for (int f = 0; f < e->nfor; f++) if (evt_expr_has_load(e->for_ext[f])) return 0;
        if (e->kind == EVT_NOTIFY && (p->ev[ev].kind == EVT_COUNT_DATA || p->ev[ev].ntrigger_consumers)) return 0;
    }
    return 1;
}

int evt_edge_elems(const evt_shape *s, const evt_call *c, const evt_edge *e,
                   const int64_t *coord, const evt_eval_env *base_env,
                   evt_elem_fn fn, void *user, int64_t *bad)
{
    int64_t var[EVT_MAX_RANK + EVT_MAX_FOR] = {0};
    for (int k = 0; k < c->rank; k++) var[k] = coord[k];
    evt_eval_env env = *base_env;
    env.sym = s->sym;
    env.var = var;
    int err = 0;
    int64_t fext[EVT_MAX_FOR] = {1, 1};
    for (int f = 0; f < e->nfor; f++) fext[f] = evt_expr_eval(e->for_ext[f], &env, &err);
    for (int64_t a = 0; a < fext[0]; a++)
        for (int64_t b = 0; b < fext[1]; b++) {
            if (e->nfor > 0) var[c->rank] = a;
            if (e->nfor > 1) var[c->rank + 1] = b;
            int64_t idx[EVT_MAX_RANK];
            for (int i = 0; i < e->nidx; i++) idx[i] = evt_expr_eval(e->idx[i], &env, &err);
            if (err) return 1;
            int64_t elem = evt_shape_elem(s, e->event->id, idx);
            if (elem < 0) {
                if (bad) {
                    /* report the first coordinate that is out of range */
                    *bad = idx[0];
                    for (int i = 0; i < e->nidx; i++)
                        if (idx[i] < 0 || idx[i] >= s->ev_dim[e->event->id * 4 + i]) { *bad = idx[i]; break; }
                }
                return 2;
            }
            fn(user, elem);
        }
    return 0;
}

void evt_elem_name(const evt_shape *s, int64_t elem, char *buf, size_t n)
{
    const evt_graph *g = s->p->g;
    int ev = 0;
    while (ev + 1 < g->nevents && s->ev_base[ev + 1] <= elem) ev++;
    int64_t idx[EVT_MAX_RANK] = {0};
    evt_shape_decode(&s->ev_dim[ev * 4], g->events[ev]->rank, elem - s->ev_base[ev], idx);
    int len = snprintf(buf, n, "%s[", g->events[ev]->name);
    for (int k = 0; k < g->events[ev]->rank && len > 0 && (size_t)len < n; k++)
        len += snprintf(buf + len, n - len, k ? ", %lld" : "%lld", (long long)idx[k]);
    if (len > 0 && (size_t)len < n) snprintf(buf + len, n - len, "]");
}

int evt_call_writes(const evt_call *c, const evt_tensor *t)
{
    const evt_tile_decl *decl = evt_tile_find(c->op);
    for (int a = 0; decl && a < c->nargs && a < decl->nparams; a++)
        if (c->args[a].kind == EVT_ARG_TENSOR && c->args[a].tensor == t &&
            (decl->params[a].mode == EVT_PARAM_OUT || decl->params[a].mode == EVT_PARAM_INOUT))
            return 1;
    return 0;
}

void evt_expr_loads(const evt_expr *e, const evt_tensor **out, int *n, int cap)
{
    if (!e) return;
    if (e->op == EVT_E_LOAD && *n < cap) out[(*n)++] = e->tensor;
    for (int i = 0; i < e->nargs; i++) evt_expr_loads(e->a[i], out, n, cap);
}
