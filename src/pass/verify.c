/* verify.c — rejects ill-formed programs with positioned diagnostics.
 *
 * Structural checks (this file): symbols and buckets, operator signatures,
 * expressions that may only use symbols, map ranks and variables, loads from
 * integer tensors, trigger ranges, events nobody notifies, data read without
 * an ordering event. Checks that need a concrete shape (map bounds, declared
 * counts, task-level cycles) run in compile.c at the default shape.
 */
#include <string.h>
#include <stdlib.h>
#include "pass/plan.h"
#include "device/evt_ctx.h"

static int uses_only_syms(const evt_expr *e)
{
    if (!e) return 1;
    if (e->op == EVT_E_VAR || e->op == EVT_E_LOAD) return 0;
    for (int i = 0; i < e->nargs; i++) if (!uses_only_syms(e->a[i])) return 0;
    return 1;
}

static int is_int_dtype(evt_dtype t) { return t == EVT_I32 || t == EVT_I64; }

/* Checks loads and variables of an edge expression; nvars = rank + nfor. */
static void check_map_expr(const evt_expr *e, int nvars, const evt_call *c, evt_loc loc, evt_diag *d, int *bad)
{
    if (!e) return;
    if (e->op == EVT_E_VAR && (e->var < 0 || e->var >= nvars)) {
        evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s: map uses variable #%d but only %d exist", c->name, e->var, nvars);
        *bad = 1;
    }
    if (e->op == EVT_E_LOAD) {
        if (!is_int_dtype(e->tensor->dtype)) {
            evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s: map reads tensor %s of type %s; index tensors must be i32 or i64",
                           c->name, e->tensor->name, evt_dtype_name(e->tensor->dtype));
            *bad = 1;
        }
        if (e->nargs != e->tensor->rank) {
            evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s: tensor %s has rank %d but %d indices given",
                           c->name, e->tensor->name, e->tensor->rank, e->nargs);
            *bad = 1;
        }
    }
    for (int i = 0; i < e->nargs; i++) check_map_expr(e->a[i], nvars, c, loc, d, bad);
}

/* Call-level reachability through notify -> wait edges, computed once:
 * reach[a * n + b] = 1 if call a precedes call b through some chain of
 * events (a reaches itself). */
static unsigned char *reachability(const evt_graph *g)
{
    int n = g->ncalls;
    unsigned char *adj = calloc((size_t)n * n + 1, 1), *reach = calloc((size_t)n * n + 1, 1);
    int *stack = malloc((n + 1) * sizeof(int));
    if (!adj || !reach || !stack) { free(adj); free(reach); free(stack); return NULL; }
    /* waiters of each event, then a -> b when a notifies what b waits on */
    for (int b = 0; b < n; b++)
        for (int m = 0; m < g->calls[b]->nedges; m++) {
            if (g->calls[b]->edges[m].kind != EVT_WAIT) continue;
            const evt_event *ev = g->calls[b]->edges[m].event;
            for (int a = 0; a < n; a++)
                for (int k = 0; k < g->calls[a]->nedges; k++)
                    if (g->calls[a]->edges[k].kind == EVT_NOTIFY && g->calls[a]->edges[k].event == ev) adj[a * n + b] = 1;
        }
    for (int src = 0; src < n; src++) {
        unsigned char *r = &reach[(size_t)src * n];
        int sp = 0;
        r[src] = 1;
        stack[sp++] = src;
        while (sp) {
            int u = stack[--sp];
            for (int v = 0; v < n; v++)
                if (adj[(size_t)u * n + v] && !r[v]) { r[v] = 1; stack[sp++] = v; }
        }
    }
    free(adj);
    free(stack);
    return reach;
}

static int reaches(const evt_graph *g, const unsigned char *reach, int from, int to)
{
    return !reach || reach[(size_t)from * g->ncalls + to];
}

/* A consumer reading data some other call writes must be ordered after it. */
static void check_coverage(const evt_graph *g, const unsigned char *reach, const evt_call *c, const evt_tensor *t,
                           evt_loc loc, evt_diag *d)
{
    for (int w = 0; w < g->ncalls; w++) {
        const evt_call *wc = g->calls[w];
        if (wc == c || !evt_call_writes(wc, t)) continue;
        if (!reaches(g, reach, w, c->id))
            evt_diag_error(d, EVT_ERR_VERIFY, loc,
                           "call %s reads %s, written by call %s, but waits on no event that orders it after %s",
                           c->name, t->name, wc->name, wc->name);
    }
}

/* The owner of a trigger task is found by reading indptr before the trigger
 * wait, so an earlier wait must already order the task after its writer. */
static void check_trigger_order(const evt_graph *g, const unsigned char *reach, const evt_call *c, int k, evt_loc loc, evt_diag *d)
{
    const evt_tensor *t = c->edges[k].trigger;
    for (int w = 0; w < g->ncalls; w++) {
        const evt_call *wc = g->calls[w];
        if (wc == c || !evt_call_writes(wc, t)) continue;
        int ok = 0;
        for (int j = 0; j < k && !ok; j++) {
            const evt_edge *pe = &c->edges[j];
            if (pe->kind != EVT_WAIT) continue;
            /* some call that notifies pe->event is reachable from the writer */
            for (int x = 0; x < g->ncalls && !ok; x++)
                for (int m = 0; m < g->calls[x]->nedges && !ok; m++)
                    if (g->calls[x]->edges[m].kind == EVT_NOTIFY && g->calls[x]->edges[m].event == pe->event)
                        ok = reaches(g, reach, w, x);
        }
        if (!ok)
            evt_diag_error(d, EVT_ERR_VERIFY, loc,
                           "call %s: the trigger range reads %s, written by call %s; wait on an event ordered after %s "
                           "before the trigger wait", c->name, t->name, wc->name, wc->name);
    }
}

static void verify_call(const evt_graph *g, const unsigned char *reach, const evt_call *c, evt_diag *d)
{
    const evt_tile_decl *decl = evt_tile_find(c->op);
    if (!decl) {
        evt_diag_error(d, EVT_ERR_VERIFY, c->loc, "call %s: unknown tile operator '%s'", c->name, c->op);
    } else if (c->nargs != decl->nparams) {
        evt_diag_error(d, EVT_ERR_VERIFY, c->loc, "call %s: operator %s takes %d arguments, %d given",
                       c->name, c->op, decl->nparams, c->nargs);
    } else {
        for (int a = 0; a < c->nargs; a++) {
            const evt_tile_param *pm = &decl->params[a];
            const evt_arg *arg = &c->args[a];
            evt_loc loc = arg->loc.line ? arg->loc : c->loc;
            if (pm->mode == EVT_PARAM_INT) {
                if (arg->kind != EVT_ARG_INT)
                    evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s: argument %d (%s) of %s must be an integer, got tensor %s",
                                   c->name, a + 1, pm->name, c->op, arg->tensor->name);
                else if (!uses_only_syms(arg->value))
                    evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s: integer argument %s may only use symbols", c->name, pm->name);
                continue;
            }
            if (arg->kind != EVT_ARG_TENSOR) {
                evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s: argument %d (%s) of %s must be a tensor",
                               c->name, a + 1, pm->name, c->op);
                continue;
            }
            const evt_tensor *t = arg->tensor;
            if (pm->dtype != EVT_ANY_DTYPE && (int)t->dtype != pm->dtype)
                evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s: argument %s of %s must be %s, but %s is %s",
                               c->name, pm->name, c->op, evt_dtype_name((evt_dtype)pm->dtype), t->name, evt_dtype_name(t->dtype));
            if (pm->rank != EVT_ANY_RANK && t->rank != pm->rank)
                evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s: argument %s of %s must have rank %d, but %s has rank %d",
                               c->name, pm->name, c->op, pm->rank, t->name, t->rank);
            if ((pm->mode == EVT_PARAM_OUT || pm->mode == EVT_PARAM_INOUT) && (t->role == EVT_INPUT || t->role == EVT_WEIGHT))
                evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s writes %s, which is declared %s", c->name, t->name,
                               t->role == EVT_INPUT ? "input" : "weight");
            if (pm->mode == EVT_PARAM_IN || pm->mode == EVT_PARAM_INOUT) check_coverage(g, reach, c, t, loc, d);
        }
    }
    if (c->rank < 1)
        evt_diag_error(d, EVT_ERR_VERIFY, c->loc, "call %s: grid needs at least one dimension", c->name);
    for (int k = 0; k < c->rank; k++)
        if (!uses_only_syms(c->grid[k]))
            evt_diag_error(d, EVT_ERR_VERIFY, c->loc, "call %s: grid extent %d may only use symbols", c->name, k);
    int waited_trigger = 0;
    for (int k = 0; k < c->nedges; k++) {
        const evt_edge *e = &c->edges[k];
        evt_loc loc = e->loc.line ? e->loc : c->loc;
        int bad = 0;
        if (e->trigger) {
            if (e->kind != EVT_WAIT) evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s: only waits can use a trigger range", c->name);
            if (c->rank != 1) evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s: a trigger range needs a 1-D grid, not rank %d", c->name, c->rank);
            if (e->event->rank != 1) evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s: trigger range on event %s needs a 1-D event", c->name, e->event->name);
            if (!is_int_dtype(e->trigger->dtype) || e->trigger->rank != 1)
                evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s: trigger tensor %s must be a 1-D i32 or i64 tensor", c->name, e->trigger->name);
            if (waited_trigger++) evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s: at most one trigger range per call", c->name);
            check_coverage(g, reach, c, e->trigger, loc, d);
            check_trigger_order(g, reach, c, k, loc, d);
            continue;
        }
        if (e->nidx != e->event->rank)
            evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s: event %s has rank %d but %d indices given",
                           c->name, e->event->name, e->event->rank, e->nidx);
        for (int f = 0; f < e->nfor; f++)
            if (!uses_only_syms(e->for_ext[f]))
                evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s: extent of `for %s` may only use symbols", c->name, e->for_name[f]);
        for (int i = 0; i < e->nidx; i++) {
            check_map_expr(e->idx[i], c->rank + e->nfor, c, loc, d, &bad);
            if (e->kind == EVT_WAIT && evt_expr_has_load(e->idx[i]) && !bad) {
                evt_diag_error(d, EVT_ERR_VERIFY, loc,
                               "call %s: wait map on %s reads a tensor; data-dependent edges go on the notify side "
                               "(notify E[topk[i, k]]) or use `wait E trigger INDPTR`", c->name, e->event->name);
                bad = 1;
            }
            const evt_tensor *loads[8]; int nl = 0;
            evt_expr_loads(e->idx[i], loads, &nl, 8);
            for (int l = 0; l < nl; l++)
                if (!evt_call_writes(c, loads[l])) check_coverage(g, reach, c, loads[l], loc, d);
        }
        /* a task waiting on what it notifies itself can never proceed */
        if (e->kind == EVT_WAIT && !bad)
            for (int j = 0; j < c->nedges; j++) {
                const evt_edge *n = &c->edges[j];
                if (n->kind != EVT_NOTIFY || n->event != e->event || n->nidx != e->nidx || n->nfor || e->nfor) continue;
                int same = 1;
                for (int i = 0; i < e->nidx; i++) same &= evt_expr_equal(e->idx[i], n->idx[i]);
                if (same)
                    evt_diag_error(d, EVT_ERR_VERIFY, loc, "call %s waits on %s with the same map it notifies: each task would wait for itself (cycle)",
                                   c->name, e->event->name);
            }
    }
}

evt_status evt_pass_verify(const evt_graph *g, evt_diag *d)
{
    int before = d ? d->nerrors : 0;
    evt_diag local;
    if (!d) { evt_diag_init(&local, NULL); d = &local; }
    if (g->ncalls > EVT_MAX_CALLS)
        evt_diag_error(d, EVT_ERR_VERIFY, (evt_loc){0, 0}, "program has %d calls; at most %d are supported", g->ncalls, EVT_MAX_CALLS);
    for (int i = 0; i < g->nsyms; i++) {
        const evt_sym *s = g->syms[i];
        if (s->lo > s->hi)
            evt_diag_error(d, EVT_ERR_VERIFY, s->loc, "symbol %s: empty bounds [%lld, %lld]", s->name, (long long)s->lo, (long long)s->hi);
        if (s->lo < 0)
            evt_diag_error(d, EVT_ERR_VERIFY, s->loc, "symbol %s: bounds must not be negative", s->name);
        if (s->def < s->lo || s->def > s->hi)
            evt_diag_error(d, EVT_ERR_VERIFY, s->loc, "symbol %s: default %lld is outside [%lld, %lld]", s->name,
                           (long long)s->def, (long long)s->lo, (long long)s->hi);
        for (int b = 0; b < s->nbuckets; b++) {
            if (s->buckets[b] < s->lo || s->buckets[b] > s->hi)
                evt_diag_error(d, EVT_ERR_VERIFY, s->loc, "symbol %s: bucket %lld is outside [%lld, %lld]", s->name,
                               (long long)s->buckets[b], (long long)s->lo, (long long)s->hi);
            if (b && s->buckets[b] <= s->buckets[b - 1])
                evt_diag_error(d, EVT_ERR_VERIFY, s->loc, "symbol %s: buckets must be strictly increasing", s->name);
        }
        if (s->nbuckets && s->buckets[s->nbuckets - 1] < s->hi)
            evt_diag_error(d, EVT_ERR_VERIFY, s->loc, "symbol %s: largest bucket %lld does not cover the upper bound %lld",
                           s->name, (long long)s->buckets[s->nbuckets - 1], (long long)s->hi);
    }
    for (int i = 0; i < g->ntensors; i++) {
        const evt_tensor *t = g->tensors[i];
        for (int k = 0; k < t->rank; k++)
            if (!uses_only_syms(t->shape[k]))
                evt_diag_error(d, EVT_ERR_VERIFY, t->loc, "tensor %s: shape may only use symbols", t->name);
        if (t->init.kind == EVT_INIT_RANGE && !is_int_dtype(t->dtype))
            evt_diag_error(d, EVT_ERR_VERIFY, t->loc, "tensor %s: `range` initialises integer tensors only", t->name);
        if (t->init.kind == EVT_INIT_ROPE && (t->dtype != EVT_F32 || t->rank != 2))
            evt_diag_error(d, EVT_ERR_VERIFY, t->loc, "tensor %s: `rope(...)` initialises f32 tensors of rank 2 only ([positions, head_dim])",
                           t->name);
    }
    for (int i = 0; i < g->nevents; i++) {
        const evt_event *e = g->events[i];
        for (int k = 0; k < e->rank; k++)
            if (!uses_only_syms(e->shape[k]))
                evt_diag_error(d, EVT_ERR_VERIFY, e->loc, "event %s: shape may only use symbols", e->name);
        if (e->count && evt_expr_has_load(e->count))
            evt_diag_error(d, EVT_ERR_VERIFY, e->loc, "event %s: a declared count may use symbols and the element coordinates e0.. "
                                                      "but not tensors (data-dependent counts are inferred from the notify maps)", e->name);
        int notified = 0, waited = 0;
        const evt_call *waiter = NULL;
        for (int c = 0; c < g->ncalls; c++)
            for (int k = 0; k < g->calls[c]->nedges; k++)
                if (g->calls[c]->edges[k].event == e) {
                    if (g->calls[c]->edges[k].kind == EVT_NOTIFY) notified++;
                    else { waited++; waiter = g->calls[c]; }
                }
        if (waited && !notified)
            evt_diag_error(d, EVT_ERR_VERIFY, e->loc, "event %s is waited on by call %s but no call notifies it", e->name, waiter->name);
    }
    unsigned char *reach = reachability(g);
    for (int c = 0; c < g->ncalls; c++) verify_call(g, reach, g->calls[c], d);
    free(reach);
    for (int a = 0; a < g->ncalls; a++)
        for (int b = a + 1; b < g->ncalls; b++)
            if (!strcmp(g->calls[a]->name, g->calls[b]->name))
                evt_diag_error(d, EVT_ERR_VERIFY, g->calls[b]->loc, "duplicate call name %s", g->calls[b]->name);
    int failed = d->nerrors > before;
    if (d == &local) evt_diag_free(&local);
    return failed ? EVT_ERR_VERIFY : EVT_OK;
}
