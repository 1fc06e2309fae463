/* fuse_events.c — MPK event fusion (papers/002 §4.1) on the Event Tensor IR.
 *
 * Predecessor-set fusion: two events notified by exactly the same producer
 * edges (same call, same map) complete at the same moment, so their consumers
 * can wait on one of them: the other's notifies disappear.
 * Successor-set fusion: two events waited on by exactly the same consumer
 * edges (same calls, same maps) are always awaited together, so one counter
 * can collect both producer sets: the consumers' second wait disappears.
 * Neither removes parallelism: no task can start earlier than before.
 * Only statically counted events without declared counts are fused.
 */
#include <string.h>
#include "pass/plan.h"

static int edges_equal(const evt_edge *a, const evt_edge *b)
{
    if (a->kind != b->kind || a->nidx != b->nidx || a->nfor != b->nfor || a->trigger || b->trigger) return 0;
    for (int i = 0; i < a->nidx; i++) if (!evt_expr_equal(a->idx[i], b->idx[i])) return 0;
    for (int f = 0; f < a->nfor; f++) if (!evt_expr_equal(a->for_ext[f], b->for_ext[f])) return 0;
    return 1;
}

static int is_plain(const evt_graph *g, const evt_event *e)
{
    if (e->count) return 0;
    for (int c = 0; c < g->ncalls; c++)
        for (int k = 0; k < g->calls[c]->nedges; k++) {
            const evt_edge *x = &g->calls[c]->edges[k];
            if (x->event != e) continue;
            if (x->trigger) return 0;
            for (int i = 0; i < x->nidx; i++) if (evt_expr_has_load(x->idx[i])) return 0;
            if (x->kind == EVT_NOTIFY)
                for (int j = 0; j < g->calls[c]->nedges; j++)
                    if (g->calls[c]->edges[j].trigger) return 0; /* data-dependent validity */
        }
    return 1;
}

/* Same multiset of `kind` edges per call on a and b (pairwise equal maps). */
static int same_edges(const evt_graph *g, const evt_event *a, const evt_event *b, evt_edge_kind kind)
{
    for (int c = 0; c < g->ncalls; c++) {
        const evt_call *call = g->calls[c];
        int na = 0, nb = 0;
        const evt_edge *ea[16], *eb[16];
        for (int k = 0; k < call->nedges; k++) {
            const evt_edge *x = &call->edges[k];
            if (x->kind != kind) continue;
            if (x->event == a) { if (na == 16) return 0; ea[na++] = x; }
            if (x->event == b) { if (nb == 16) return 0; eb[nb++] = x; }
        }
        if (na != nb) return 0;
        for (int i = 0; i < na; i++) if (!edges_equal(ea[i], eb[i])) return 0;
    }
    return 1;
}

static int same_shape(const evt_event *a, const evt_event *b)
{
    if (a->rank != b->rank) return 0;
    for (int k = 0; k < a->rank; k++) if (!evt_expr_equal(a->shape[k], b->shape[k])) return 0;
    return 1;
}

static void drop_edges(evt_call *c, const evt_event *e, evt_edge_kind kind)
{
    int n = 0;
    for (int k = 0; k < c->nedges; k++)
        if (!(c->edges[k].event == e && c->edges[k].kind == kind)) c->edges[n++] = c->edges[k];
    c->nedges = n;
}

static void retarget(evt_call *c, const evt_event *from, evt_event *to, evt_edge_kind kind)
{
    for (int k = 0; k < c->nedges; k++)
        if (c->edges[k].event == from && c->edges[k].kind == kind) c->edges[k].event = to;
}

static void remove_event(evt_graph *g, int id)
{
    for (int i = id; i + 1 < g->nevents; i++) { g->events[i] = g->events[i + 1]; g->events[i]->id = i; }
    g->nevents--;
}

int evt_pass_fuse_events(evt_graph *g)
{
    int removed = 0;
    for (int i = 0; i < g->nevents; i++) {
        evt_event *a = g->events[i];
        if (!is_plain(g, a)) continue;
        for (int j = i + 1; j < g->nevents; j++) {
            evt_event *b = g->events[j];
            if (!same_shape(a, b) || !is_plain(g, b)) continue;
            if (same_edges(g, a, b, EVT_NOTIFY)) {          /* predecessor-set */
                for (int c = 0; c < g->ncalls; c++) {
                    drop_edges(g->calls[c], b, EVT_NOTIFY);
                    retarget(g->calls[c], b, a, EVT_WAIT);
                }
            } else if (same_edges(g, a, b, EVT_WAIT)) {     /* successor-set */
                for (int c = 0; c < g->ncalls; c++) {
                    drop_edges(g->calls[c], b, EVT_WAIT);
                    retarget(g->calls[c], b, a, EVT_NOTIFY);
                }
            } else {
                continue;
            }
            remove_event(g, j);
            removed++;
            j--;
        }
    }
    return removed;
}
