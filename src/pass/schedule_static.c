/* schedule_static.c — per-worker task queues for one concrete shape.
 *
 * Policies:
 *   rr  round-robin in program order (call by call, row-major): the paper's.
 *   cp  critical-path list scheduling (HLFET): repeatedly take the ready task
 *       with the longest cost-weighted path to the end and give it to the
 *       worker that frees up first. Queues are built in a topological order.
 * Every schedule is accepted only if dependency edges ∪ queue-order edges are
 * acyclic (evt_taskgraph_check); otherwise the tasks of a cycle are named.
 */
#include <stdlib.h>
#include <string.h>
#include "pass/taskgraph.h"
#include "device/evt_ctx.h"

const char *evt_sched_name(evt_sched_kind k)
{
    static const char *names[EVT_SCHED_COUNT] = {"static", "dynamic", "unfused", "kbk", "graph", "hybrid"};
    return (unsigned)k < EVT_SCHED_COUNT ? names[k] : "?";
}

int evt_sched_parse(const char *s)
{
    for (int k = 0; k < EVT_SCHED_COUNT; k++)
        if (!strcmp(s, evt_sched_name((evt_sched_kind)k))) return k;
    return -1;
}

void evt_static_sched_free(evt_static_sched *s)
{
    free(s->q_off); free(s->q); free(s->ext);
    memset(s, 0, sizeof *s);
}

/* Builds queues from an assignment (worker of each task, -1: not queued)
 * and an order. */
static evt_status fill_queues(const evt_shape *s, int nworkers, const int32_t *worker,
                              const int64_t *order, evt_static_sched *out)
{
    const evt_graph *g = s->p->g;
    memset(out, 0, sizeof *out);
    out->nworkers = nworkers;
    out->ntasks = s->ntasks;
    out->q_off = calloc(nworkers + 1, sizeof(int64_t));
    out->q = malloc((s->ntasks + 1) * sizeof(uint32_t));
    out->ext = malloc(g->ncalls * 4 * sizeof(int64_t) + 1);
    if (!out->q_off || !out->q || !out->ext) { evt_static_sched_free(out); return EVT_ERR_NOMEM; }
    memcpy(out->ext, s->ext, g->ncalls * 4 * sizeof(int64_t));
    for (int64_t t = 0; t < s->ntasks; t++)
        if (worker[t] >= 0) out->q_off[worker[t] + 1]++;
    for (int w = 0; w < nworkers; w++) out->q_off[w + 1] += out->q_off[w];
    int64_t *fill = malloc((nworkers + 1) * sizeof(int64_t));
    if (!fill) { evt_static_sched_free(out); return EVT_ERR_NOMEM; }
    memcpy(fill, out->q_off, nworkers * sizeof(int64_t));
    for (int64_t k = 0; k < s->ntasks; k++) {
        int64_t t = order[k];
        if (worker[t] < 0) continue;
        int64_t c = evt_shape_call_of(s, t);
        out->q[fill[worker[t]]++] = (uint32_t)(c << EVT_QCALL_SHIFT) | (uint32_t)(t - s->task_base[c]);
    }
    free(fill);
    return EVT_OK;
}

/* Bottom levels: longest cost path from each node to a sink. */
static void bottom_levels(const evt_taskgraph *tg, int64_t *bl, int64_t *topo)
{
    int64_t N = tg->nnodes, sp = 0, n = 0;
    int32_t *deg = malloc((N + 1) * sizeof(int32_t));
    int64_t *stack = malloc((N + 1) * sizeof(int64_t));
    memcpy(deg, tg->npred, N * sizeof(int32_t));
    for (int64_t i = 0; i < N; i++) if (!deg[i]) stack[sp++] = i;
    while (sp) {
        int64_t u = stack[--sp];
        topo[n++] = u;
        for (int64_t k = tg->succ_off[u]; k < tg->succ_off[u + 1]; k++)
            if (--deg[tg->succ[k]] == 0) stack[sp++] = tg->succ[k];
    }
    for (int64_t i = n - 1; i >= 0; i--) {
        int64_t u = topo[i], best = 0;
        for (int64_t k = tg->succ_off[u]; k < tg->succ_off[u + 1]; k++)
            if (bl[tg->succ[k]] > best) best = bl[tg->succ[k]];
        bl[u] = best + (u < tg->ntasks ? tg->cost[u] : 0);
    }
    free(deg); free(stack);
}

/* Max-heap of ready nodes keyed by bottom level (ties: lower id first). */
typedef struct heap { int64_t *v; int64_t n; const int64_t *key; } heap;
static int before(const heap *h, int64_t a, int64_t b)
{
    return h->key[a] > h->key[b] || (h->key[a] == h->key[b] && a < b);
}
static void heap_push(heap *h, int64_t x)
{
    int64_t i = h->n++;
    h->v[i] = x;
    while (i && before(h, h->v[i], h->v[(i - 1) / 2])) {
        int64_t p = (i - 1) / 2, t = h->v[p]; h->v[p] = h->v[i]; h->v[i] = t; i = p;
    }
}
static int64_t heap_pop(heap *h)
{
    int64_t top = h->v[0];
    h->v[0] = h->v[--h->n];
    for (int64_t i = 0;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && before(h, h->v[l], h->v[m])) m = l;
        if (r < h->n && before(h, h->v[r], h->v[m])) m = r;
        if (m == i) break;
        int64_t t = h->v[m]; h->v[m] = h->v[i]; h->v[i] = t; i = m;
    }
    return top;
}

static evt_status policy_cp(const evt_taskgraph *tg, int nworkers, int32_t *worker, int64_t *order, double *makespan)
{
    int64_t N = tg->nnodes;
    int64_t *bl = calloc(N + 1, sizeof(int64_t));
    int64_t *topo = malloc((N + 1) * sizeof(int64_t));
    int64_t *ready_at = calloc(N + 1, sizeof(int64_t)); /* earliest start from preds */
    int32_t *deg = malloc((N + 1) * sizeof(int32_t));
    int64_t *wfree = calloc(nworkers, sizeof(int64_t));
    heap h = {malloc((N + 1) * sizeof(int64_t)), 0, bl};
    if (!bl || !topo || !ready_at || !deg || !wfree || !h.v) {
        free(bl); free(topo); free(ready_at); free(deg); free(wfree); free(h.v);
        return EVT_ERR_NOMEM;
    }
    bottom_levels(tg, bl, topo);
    memcpy(deg, tg->npred, N * sizeof(int32_t));
    for (int64_t i = 0; i < N; i++) if (!deg[i]) heap_push(&h, i);
    int64_t n = 0, end = 0;
    while (h.n) {
        int64_t u = heap_pop(&h), finish = ready_at[u];
        if (u < tg->ntasks) {
            int w = 0;
            for (int k = 1; k < nworkers; k++) if (wfree[k] < wfree[w]) w = k;
            int64_t start = wfree[w] > ready_at[u] ? wfree[w] : ready_at[u];
            finish = start + tg->cost[u];
            wfree[w] = finish;
            worker[u] = w;
            order[n++] = u;
            if (finish > end) end = finish;
        }
        for (int64_t k = tg->succ_off[u]; k < tg->succ_off[u + 1]; k++) {
            int64_t v = tg->succ[k];
            if (finish > ready_at[v]) ready_at[v] = finish;
            if (--deg[v] == 0) heap_push(&h, v);
        }
    }
    *makespan = (double)end;
    free(bl); free(topo); free(ready_at); free(deg); free(wfree); free(h.v);
    return n == tg->ntasks ? EVT_OK : EVT_ERR_SCHEDULE;
}

static int64_t *queue_next(const evt_shape *s, const evt_static_sched *q, int *ok)
{
    const evt_graph *g = s->p->g;
    int64_t *qnext = malloc((s->ntasks + 1) * sizeof(int64_t));
    *ok = qnext != NULL;
    if (!qnext) return NULL;
    for (int64_t t = 0; t < s->ntasks; t++) qnext[t] = -1;
    for (int w = 0; w < q->nworkers; w++) {
        int64_t prev = -1;
        for (int64_t k = q->q_off[w]; k < q->q_off[w + 1]; k++) {
            int c = (int)(q->q[k] >> EVT_QCALL_SHIFT);
            int64_t coord[EVT_MAX_RANK], lin = 0;
            evt_shape_decode(&q->ext[c * 4], g->calls[c]->rank, q->q[k] & EVT_QINDEX_MASK, coord);
            int valid = 1;
            for (int d = 0; d < g->calls[c]->rank; d++) {
                if (coord[d] >= s->ext[c * 4 + d]) valid = 0;
                lin = lin * s->ext[c * 4 + d] + coord[d];
            }
            if (!valid) continue; /* guarded out at this shape */
            int64_t t = s->task_base[c] + lin;
            if (prev >= 0) qnext[prev] = t;
            prev = t;
        }
    }
    return qnext;
}

evt_status evt_schedule_verify(const evt_plan *p, const int64_t *sym, const evt_static_sched *q, evt_diag *d)
{
    evt_shape s;
    evt_status st = evt_shape_init(&s, p, sym, d);
    if (st) return st;
    evt_taskgraph tg;
    st = evt_taskgraph_build(&s, &tg, d);
    if (!st) {
        int ok;
        int64_t *qnext = queue_next(&s, q, &ok);
        st = ok ? evt_taskgraph_check(&tg, qnext, "static schedule", d) : EVT_ERR_NOMEM;
        free(qnext);
        evt_taskgraph_free(&tg);
    }
    evt_shape_free(&s);
    return st;
}

evt_status evt_schedule_static(const evt_plan *p, const int64_t *sym, int nworkers,
                               evt_queue_policy policy, evt_static_sched *out, evt_diag *d)
{
    return evt_schedule_static_part(p, sym, nworkers, policy, NULL, out, d);
}

evt_status evt_schedule_static_part(const evt_plan *p, const int64_t *sym, int nworkers, evt_queue_policy policy,
                                    const uint8_t *skip, evt_static_sched *out, evt_diag *d)
{
    memset(out, 0, sizeof *out);
    if (nworkers < 1)
        return evt_diag_error(d, EVT_ERR_SCHEDULE, (evt_loc){0, 0}, "need at least one worker");
    evt_shape s;
    evt_status st = evt_shape_init(&s, p, sym, d);
    if (st) return st;
    evt_taskgraph tg;
    st = evt_taskgraph_build(&s, &tg, d);
    if (st) { evt_shape_free(&s); return st; }
    int32_t *worker = malloc((s.ntasks + 1) * sizeof(int32_t));
    int64_t *order = malloc((s.ntasks + 1) * sizeof(int64_t));
    double makespan = 0;
    if (!worker || !order) st = EVT_ERR_NOMEM;
    else if (policy == EVT_QUEUE_RR) { /* round robin over the queued tasks */
        int64_t k = 0;
        for (int64_t t = 0; t < s.ntasks; t++) {
            worker[t] = skip && skip[evt_shape_call_of(&s, t)] ? -1 : (int32_t)(k++ % nworkers);
            order[t] = t;
        }
    } else {
        st = policy_cp(&tg, nworkers, worker, order, &makespan);
        if (st == EVT_ERR_SCHEDULE) evt_taskgraph_check(&tg, NULL, "the task graph", d);
        for (int64_t t = 0; !st && skip && t < s.ntasks; t++)
            if (skip[evt_shape_call_of(&s, t)]) worker[t] = -1;
    }
    if (!st) st = fill_queues(&s, nworkers, worker, order, out);
    out->makespan = makespan;
    if (!st) {
        int ok;
        int64_t *qnext = queue_next(&s, out, &ok);
        st = ok ? evt_taskgraph_check(&tg, qnext, policy == EVT_QUEUE_RR ? "round-robin static schedule" : "static schedule", d)
                : EVT_ERR_NOMEM;
        free(qnext);
        if (st) evt_static_sched_free(out);
    }
    free(worker); free(order);
    evt_taskgraph_free(&tg);
    evt_shape_free(&s);
    return st;
}
