/* taskgraph.c — builds the task-level dependency graph at a concrete shape
 * and checks it (with queue-order edges) for cycles, naming the tasks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pass/taskgraph.h"

void evt_task_name(const evt_shape *s, int64_t task, char *buf, size_t n)
{
    const evt_graph *g = s->p->g;
    int c = evt_shape_call_of(s, task);
    int64_t coord[EVT_MAX_RANK];
    evt_shape_decode(&s->ext[c * 4], g->calls[c]->rank, task - s->task_base[c], coord);
    int len = snprintf(buf, n, "%s(", g->calls[c]->name);
    for (int k = 0; k < g->calls[c]->rank && len > 0 && (size_t)len < n; k++)
        len += snprintf(buf + len, n - len, k ? ", %lld" : "%lld", (long long)coord[k]);
    if (len > 0 && (size_t)len < n) snprintf(buf + len, n - len, ")");
}

/* Edge collection: pass 0 counts successors, pass 1 fills them. */
typedef struct builder {
    evt_taskgraph *tg;
    int pass;
    int64_t from;   /* task -> elem (notify) when >= 0 */
    int64_t to;     /* elem -> task (wait) when >= 0 */
    int64_t *fill;
} builder;

static void add_edge(builder *b, int64_t u, int64_t v)
{
    if (b->pass == 0) { b->tg->succ_off[u + 1]++; return; }
    b->tg->succ[b->fill[u]++] = v;
    b->tg->npred[v]++;
}

static void on_elem(void *user, int64_t elem)
{
    builder *b = user;
    int64_t node = b->tg->ntasks + elem;
    if (b->from >= 0) add_edge(b, b->from, node);
    else add_edge(b, node, b->to);
}

static int is_data_event(const evt_plan *p, int ev) { return p->ev[ev].kind == EVT_COUNT_DATA; }

static evt_status walk(const evt_shape *s, builder *b, evt_diag *d)
{
    const evt_plan *p = s->p;
    const evt_graph *g = p->g;
    evt_eval_env env = {0};
    for (int c = 0; c < g->ncalls; c++) {
        const evt_call *call = g->calls[c];
        int64_t n = s->task_base[c + 1] - s->task_base[c];
        for (int64_t lin = 0; lin < n; lin++) {
            int64_t task = s->task_base[c] + lin;
            int64_t coord[EVT_MAX_RANK];
            evt_shape_decode(&s->ext[c * 4], call->rank, lin, coord);
            if (b->pass == 0 || b->pass == 1) b->tg->cost[task] = call->cost;
            for (int k = 0; k < call->nedges; k++) {
                const evt_edge *e = &call->edges[k];
                int ev = e->event->id;
                if (is_data_event(p, ev)) {
                    int64_t vnode = s->ntasks + s->ncounters + ev;
                    if (e->kind == EVT_NOTIFY) add_edge(b, task, vnode);
                    else add_edge(b, vnode, task);
                    continue;
                }
                b->from = e->kind == EVT_NOTIFY ? task : -1;
                b->to = e->kind == EVT_WAIT ? task : -1;
                int64_t bad = 0;
                int r = evt_edge_elems(s, call, e, coord, &env, on_elem, b, &bad);
                if (r && b->pass == 0) {
                    char name[128];
                    evt_task_name(s, task, name, sizeof name);
                    return evt_diag_error(d, EVT_ERR_VERIFY, e->loc.line ? e->loc : call->loc,
                                          r == 2 ? "call %s: %s map on event %s is out of range at task %s (index %lld)"
                                                 : "call %s: %s map on event %s cannot be evaluated at task %s",
                                          call->name, e->kind == EVT_WAIT ? "wait" : "notify", e->event->name, name, (long long)bad);
                }
            }
        }
    }
    return EVT_OK;
}

evt_status evt_taskgraph_build(const evt_shape *s, evt_taskgraph *tg, evt_diag *d)
{
    memset(tg, 0, sizeof *tg);
    tg->s = s;
    tg->ntasks = s->ntasks;
    tg->nnodes = s->ntasks + s->ncounters + s->p->g->nevents;
    tg->succ_off = calloc(tg->nnodes + 1, sizeof(int64_t));
    tg->npred = calloc(tg->nnodes + 1, sizeof(int32_t));
    tg->cost = calloc(tg->ntasks + 1, sizeof(int64_t));
    if (!tg->succ_off || !tg->npred || !tg->cost) { evt_taskgraph_free(tg); return EVT_ERR_NOMEM; }
    builder b = {.tg = tg, .pass = 0};
    evt_status st = walk(s, &b, d);
    if (st) { evt_taskgraph_free(tg); return st; }
    for (int64_t i = 0; i < tg->nnodes; i++) tg->succ_off[i + 1] += tg->succ_off[i];
    tg->succ = malloc((tg->succ_off[tg->nnodes] + 1) * sizeof(int64_t));
    b.fill = malloc((tg->nnodes + 1) * sizeof(int64_t));
    if (!tg->succ || !b.fill) { free(b.fill); evt_taskgraph_free(tg); return EVT_ERR_NOMEM; }
    memcpy(b.fill, tg->succ_off, tg->nnodes * sizeof(int64_t));
    b.pass = 1;
    walk(s, &b, d);
    free(b.fill);
    return EVT_OK;
}

void evt_taskgraph_free(evt_taskgraph *tg)
{
    free(tg->succ_off); free(tg->succ); free(tg->npred); free(tg->cost);
    memset(tg, 0, sizeof *tg);
}

static void name_node(const evt_taskgraph *tg, int64_t node, char *buf, size_t n)
{
    const evt_shape *s = tg->s;
    if (node < tg->ntasks) { evt_task_name(s, node, buf, n); return; }
    const evt_graph *g = s->p->g;
    if (node >= s->ntasks + s->ncounters) {
        snprintf(buf, n, "%s[*]", g->events[node - s->ntasks - s->ncounters]->name);
        return;
    }
    evt_elem_name(s, node - s->ntasks, buf, n);
}

evt_status evt_taskgraph_check(const evt_taskgraph *tg, const int64_t *qnext, const char *what, evt_diag *d)
{
    int64_t N = tg->nnodes;
    int32_t *deg = malloc((N + 1) * sizeof(int32_t));
    int64_t *stack = malloc((N + 1) * sizeof(int64_t));
    if (!deg || !stack) { free(deg); free(stack); return EVT_ERR_NOMEM; }
    memcpy(deg, tg->npred, N * sizeof(int32_t));
    if (qnext)
        for (int64_t t = 0; t < tg->ntasks; t++) if (qnext[t] >= 0) deg[qnext[t]]++;
    int64_t sp = 0, done = 0;
    for (int64_t i = 0; i < N; i++) if (!deg[i]) stack[sp++] = i;
    while (sp) {
        int64_t u = stack[--sp];
        done++;
        for (int64_t k = tg->succ_off[u]; k < tg->succ_off[u + 1]; k++)
            if (--deg[tg->succ[k]] == 0) stack[sp++] = tg->succ[k];
        if (qnext && u < tg->ntasks && qnext[u] >= 0 && --deg[qnext[u]] == 0) stack[sp++] = qnext[u];
    }
    evt_status st = EVT_OK;
    if (done < N) {
        /* Walk backwards through unfinished predecessors until a node repeats. */
        int64_t *pred_of = malloc((N + 1) * sizeof(int64_t));
        char *onpath = calloc(N + 1, 1);
        int64_t *path = malloc((N + 1) * sizeof(int64_t));
        if (!pred_of || !onpath || !path) { free(pred_of); free(onpath); free(path); free(deg); free(stack); return EVT_ERR_NOMEM; }
        for (int64_t i = 0; i < N; i++) pred_of[i] = -1;
        for (int64_t u = 0; u < N; u++) {
            if (!deg[u]) continue;
            for (int64_t k = tg->succ_off[u]; k < tg->succ_off[u + 1]; k++)
                if (deg[tg->succ[k]]) pred_of[tg->succ[k]] = u;
            if (qnext && u < tg->ntasks && qnext[u] >= 0 && deg[qnext[u]]) pred_of[qnext[u]] = u;
        }
        int64_t v = -1;
        for (int64_t i = 0; i < N; i++) if (deg[i] && pred_of[i] >= 0) { v = i; break; }
        int64_t len = 0;
        while (v >= 0 && !onpath[v]) { onpath[v] = 1; path[len++] = v; v = pred_of[v]; }
        char buf[2048];
        size_t bl = 0;
        int shown = 0;
        /* print the cycle in forward order, starting at v */
        int64_t start = 0;
        for (int64_t i = 0; i < len; i++) if (path[i] == v) { start = i; break; }
        /* forward order: path[len-1] -> ... -> path[start] -> path[len-1];
           an event element between two tasks is a dependency, none is queue order */
        const char *via = NULL;
        char vbuf[160] = "";
        int64_t first_task = -1;
        for (int64_t i = len - 1; i >= start - 1 && bl < sizeof buf - 400; i--) {
            int64_t node = i >= start ? path[i] : first_task; /* close the cycle */
            if (node < 0) break;
            if (node >= tg->ntasks) { name_node(tg, node, vbuf, sizeof vbuf); via = vbuf; continue; }
            char nm[160];
            name_node(tg, node, nm, sizeof nm);
            if (shown) bl += snprintf(buf + bl, sizeof buf - bl, " -> %s (%s%s)", nm, via ? "waits on " : "queued after it",
                                      via ? via : "");
            else bl += snprintf(buf + bl, sizeof buf - bl, "%s", nm);
            if (first_task < 0) first_task = node;
            via = NULL;
            shown++;
            if (i < start) break;
            if (shown > 12) { bl += snprintf(buf + bl, sizeof buf - bl, " -> ..."); break; }
        }
        if (!shown) snprintf(buf, sizeof buf, "(no task on the cycle)");
        st = evt_diag_error(d, EVT_ERR_SCHEDULE, (evt_loc){0, 0}, "%s would deadlock: cycle through tasks %s",
                            what, buf);
        free(pred_of); free(onpath); free(path);
    }
    free(deg); free(stack);
    return st;
}
