/* infer_counts.c — how many notifies each event element receives.
 *
 * Three outcomes per event:
 *   static, closed form: every notify map component is a grid variable, a
 *     variable divided by a constant, or a constant, and each variable is used
 *     once: count(e) is a product of per-dimension factors, e.g. (i, j) -> (i)
 *     over [n, 4] gives 4; (i) -> (i / 2) over [m] gives max(0, min(2, m - 2*e0)).
 *   static, enumerated: any other symbol-only map; bind counts by enumeration.
 *   data-dependent: a map reads a tensor, or the notifying call's validity
 *     depends on data (a trigger range), or some consumer waits on it through a
 *     trigger range; the count is the histogram of the
 *     map over the valid tasks, computed on the device by the arming task.
 * The element variables of a formula are VAR 0.. (printed e0, e1, ...).
 */
#include "pass/plan.h"

static evt_expr *indicator_lt(evt_graph *g, evt_expr *ext, evt_expr *x)
{
    /* 1 if x < ext else 0, for x >= 0 */
    return evt_binop(g, EVT_E_MIN, evt_const(g, 1),
                     evt_binop(g, EVT_E_MAX, evt_const(g, 0), evt_binop(g, EVT_E_SUB, ext, x)));
}

/* The factor one event dimension contributes, or NULL if not closed form. */
static evt_expr *dim_factor(evt_graph *g, const evt_event *ev, int k, const evt_expr *m,
                            evt_expr *const *var_ext, int *used)
{
    evt_expr *x = evt_var(g, k);
    int64_t cst;
    if (evt_expr_is_const(m, &cst)) {
        int64_t dim;
        if (evt_expr_is_const(ev->shape[k], &dim) && dim == 1 && cst == 0) return evt_const(g, 1);
        evt_expr *diff = evt_binop(g, EVT_E_MAX, evt_binop(g, EVT_E_SUB, x, evt_const(g, cst)),
                                   evt_binop(g, EVT_E_SUB, evt_const(g, cst), x));
        return evt_binop(g, EVT_E_MAX, evt_const(g, 0), evt_binop(g, EVT_E_SUB, evt_const(g, 1), diff));
    }
    if (m->op == EVT_E_VAR) {
        if (used[m->var]++) return NULL;
        if (evt_expr_equal(var_ext[m->var], ev->shape[k])) return evt_const(g, 1);
        return indicator_lt(g, var_ext[m->var], x);
    }
    int64_t dv;
    if (m->op == EVT_E_DIV && m->a[0]->op == EVT_E_VAR && evt_expr_is_const(m->a[1], &dv) && dv > 0) {
        int v = m->a[0]->var;
        if (used[v]++) return NULL;
        evt_expr *rest = evt_binop(g, EVT_E_SUB, var_ext[v], evt_binop(g, EVT_E_MUL, evt_const(g, dv), x));
        return evt_binop(g, EVT_E_MAX, evt_const(g, 0), evt_binop(g, EVT_E_MIN, evt_const(g, dv), rest));
    }
    return NULL;
}

static evt_expr *edge_formula(evt_graph *g, const evt_call *c, const evt_edge *e)
{
    evt_expr *var_ext[EVT_MAX_RANK + EVT_MAX_FOR];
    int used[EVT_MAX_RANK + EVT_MAX_FOR] = {0};
    int nv = c->rank + e->nfor;
    for (int k = 0; k < c->rank; k++) var_ext[k] = c->grid[k];
    for (int f = 0; f < e->nfor; f++) var_ext[c->rank + f] = e->for_ext[f];
    evt_expr *f = evt_const(g, 1);
    for (int k = 0; k < e->nidx; k++) {
        evt_expr *fk = dim_factor(g, e->event, k, e->idx[k], var_ext, used);
        if (!fk) return NULL;
        f = evt_binop(g, EVT_E_MUL, f, fk);
    }
    for (int v = 0; v < nv; v++)
        if (!used[v]) f = evt_binop(g, EVT_E_MUL, f, var_ext[v]);
    return f;
}

void evt_infer_counts(evt_plan *p)
{
    evt_graph *g = p->g;
    for (int i = 0; i < g->nevents; i++) {
        evt_event_plan *ep = &p->ev[i];
        ep->kind = EVT_COUNT_STATIC;
        ep->formula = evt_const(g, 0);
        ep->armer = EVT_ARMER_INPUTS;
        int closed = 1;
        for (int c = 0; c < g->ncalls; c++) {
            const evt_call *call = g->calls[c];
            int produces = 0;
            for (int k = 0; k < call->nedges; k++) {
                const evt_edge *e = &call->edges[k];
                if (e->event->id != i) continue;
                if (e->kind == EVT_WAIT) {
                    if (e->trigger) ep->ntrigger_consumers++;
                    continue;
                }
                produces = 1;
                if (evt_edge_is_data(p, call, e)) { ep->kind = EVT_COUNT_DATA; continue; }
                evt_expr *f = edge_formula(g, call, e);
                if (!f) closed = 0;
                else ep->formula = evt_binop(g, EVT_E_ADD, ep->formula, f);
            }
            ep->nproducers += produces;
        }
        /* Whoever completes an element with trigger consumers reads the indptr
           tensor to push them; arming by its writer orders that read. */
        if (ep->ntrigger_consumers) ep->kind = EVT_COUNT_DATA;
        if (ep->kind == EVT_COUNT_DATA || !closed) ep->formula = NULL;
        if (g->events[i]->count && ep->kind == EVT_COUNT_STATIC) ep->formula = g->events[i]->count;
    }
}
