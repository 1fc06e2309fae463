/* unfuse.c — the ablation baseline: one barrier event per producing call.
 *
 * Every call P that notifies anything notifies instead one element of a new
 * event `P_done[1]` (count = P's task count, or data-dependent if P's grid
 * is); every wait on an event that P notifies becomes a wait on P_done[0].
 * The program then synchronises exactly like kernel-by-kernel launches (a
 * consumer starts after the whole producer call), on the same tile code.
 * Trigger-range waits are kept as well (they decide which tasks exist), and
 * so are dependencies between tasks of one call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pass/plan.h"

evt_graph *evt_pass_unfuse(const evt_graph *src)
{
    evt_graph *g = evt_graph_clone(src);
    if (!g) return NULL;
    int nc = g->ncalls;
    evt_event **done = calloc(g->ncalls + 1, sizeof *done);
    int *need = calloc(g->ncalls + 1, sizeof *need);
    char *triggered = calloc(g->nevents + 1, 1);
    evt_edge *kept = NULL;
    int kept_cap = 0;
    if (!done || !need || !triggered) { free(done); free(need); free(triggered); evt_graph_free(g); return NULL; }
    /* which calls notify each original event */
    int nev = g->nevents;
    for (int c = 0; c < nc; c++) {
        evt_call *call = g->calls[c];
        int notifies = 0;
        for (int k = 0; k < call->nedges; k++) notifies |= call->edges[k].kind == EVT_NOTIFY;
        if (!notifies) continue;
        char name[256];
        snprintf(name, sizeof name, "%s_done", call->name);
        while (evt_graph_find_event(g, name) || evt_graph_find_tensor(g, name) || evt_graph_find_sym(g, name))
            strncat(name, "_", sizeof name - strlen(name) - 1);
        evt_expr *one = evt_const(g, 1);
        done[c] = evt_event_new(g, name, 1, &one);
    }
    for (int c = 0; c < nc; c++)
        for (int k = 0; k < g->calls[c]->nedges; k++)
            if (g->calls[c]->edges[k].trigger) triggered[g->calls[c]->edges[k].event->id] = 1;
    for (int c = 0; c < nc; c++) {
        evt_call *call = g->calls[c];
        int n = 0;
        memset(need, 0, nc * sizeof *need);
        if (call->nedges > kept_cap) {
            kept_cap = call->nedges;
            evt_edge *t = realloc(kept, kept_cap * sizeof *kept);
            if (!t) abort();
            kept = t;
        }
        for (int k = 0; k < call->nedges; k++) {
            evt_edge *e = &call->edges[k];
            if (e->event->id >= nev) continue;
            /* trigger ranges and the notifies feeding them stay: they decide
               which tasks exist at run time */
            int self = 0; /* dependencies inside one call survive unfusing */
            for (int j = 0; j < call->nedges; j++)
                self |= call->edges[j].event == e->event && call->edges[j].kind != e->kind;
            if (e->trigger || self || (e->kind == EVT_NOTIFY && triggered[e->event->id])) { kept[n++] = *e; continue; }
            if (e->kind == EVT_NOTIFY) continue; /* replaced by the barrier */
            for (int p = 0; p < nc; p++) /* producers, as in the original program */
                for (int j = 0; j < src->calls[p]->nedges; j++)
                    if (src->calls[p]->edges[j].kind == EVT_NOTIFY && src->calls[p]->edges[j].event->id == e->event->id) need[p] = 1;
        }
        call->nedges = 0;
        for (int p = 0; p < nc; p++)
            if (need[p] && p != c) {
                evt_expr *zero = evt_const(g, 0);
                evt_edge *w = evt_call_add_edge(g, call, EVT_WAIT, done[p], 1, &zero);
                w->loc = call->loc;
            }
        for (int k = 0; k < n; k++) {
            evt_edge *x = kept[k].trigger ? evt_call_add_trigger_wait(g, call, kept[k].event, kept[k].trigger)
                                          : evt_call_add_edge(g, call, EVT_NOTIFY, kept[k].event, 0, NULL);
            *x = kept[k];
        }
        if (done[c]) {
            evt_expr *zero = evt_const(g, 0);
            evt_call_add_edge(g, call, EVT_NOTIFY, done[c], 1, &zero);
        }
    }
    free(done); free(need); free(triggered); free(kept);
    /* drop events nobody uses any more */
    for (int i = 0; i < g->nevents; i++) {
        int used = 0;
        for (int c = 0; c < g->ncalls; c++)
            for (int k = 0; k < g->calls[c]->nedges; k++) used |= g->calls[c]->edges[k].event == g->events[i];
        if (!used) {
            for (int j = i; j + 1 < g->nevents; j++) { g->events[j] = g->events[j + 1]; g->events[j]->id = j; }
            g->nevents--;
            i--;
        }
    }
    return g;
}
