/* bind.c — binds a plan to a shape: counter targets by enumeration of the
 * notify maps (declared counts win; data-dependent ones get EVT_DATA_TARGET),
 * static queues (bucket or exact, verified deadlock-free), the dynamic
 * consumer lists, pending targets and seed tasks, both for hybrid (split
 * between the `policy dynamic` calls and the rest), or for kernel by kernel
 * only the check that program order respects every wait. */
#include <stdio.h>
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "runtime/bind.h"
#include "pass/taskgraph.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int evt_bucket_shape(const evt_graph *g, const int64_t *sym, int64_t *out)
{
    int differs = 0;
    for (int i = 0; i < g->nsyms; i++) {
        out[i] = sym[i];
        const evt_sym *s = g->syms[i];
        for (int b = 0; b < s->nbuckets; b++)
            if (s->buckets[b] >= sym[i]) { out[i] = s->buckets[b]; break; }
        differs |= out[i] != sym[i];
    }
    return differs;
}

static void count_elem(void *user, int64_t elem) { ((int32_t *)user)[elem]++; }

typedef struct csr_fill { evt_bound *b; int pass; int64_t task; int64_t *fill; int occurrences, record; } csr_fill;
static void cons_elem(void *user, int64_t elem)
{
    csr_fill *f = user;
    if (f->b->target[elem] == 0) return; /* complete from the start */
    f->occurrences++;
    if (!f->record) return;
    if (f->pass == 0) f->b->cons_off[elem + 1]++;
    else f->b->cons[f->fill[elem]++] = (int32_t)f->task;
}

static evt_status bind_targets(const evt_plan *p, evt_bound *b, evt_diag *d);

evt_status evt_bind_targets(const evt_plan *p, const int64_t *sym, evt_bound *b, evt_diag *d)
{
    memset(b, 0, sizeof *b);
    evt_status st = evt_shape_init(&b->s, p, sym, d);
    if (!st) st = bind_targets(p, b, d);
    if (st) evt_bound_free(b);
    return st;
}

static evt_status bind_targets(const evt_plan *p, evt_bound *b, evt_diag *d)
{
    const evt_graph *g = p->g;
    const evt_shape *s = &b->s;
    b->target = calloc(s->ncounters + 1, sizeof(int32_t));
    if (!b->target) return EVT_ERR_NOMEM;
    evt_eval_env env = {.sym = s->sym};
    for (int c = 0; c < g->ncalls; c++) {
        const evt_call *call = g->calls[c];
        int64_t n = s->task_base[c + 1] - s->task_base[c];
        for (int k = 0; k < call->nedges; k++) {
            const evt_edge *e = &call->edges[k];
            int ev = e->event->id;
            if (e->kind != EVT_NOTIFY || p->ev[ev].kind == EVT_COUNT_DATA || g->events[ev]->count) continue;
            for (int64_t lin = 0; lin < n; lin++) {
                int64_t coord[EVT_MAX_RANK], bad = 0;
                evt_shape_decode(&s->ext[c * 4], call->rank, lin, coord);
                if (evt_edge_elems(s, call, e, coord, &env, count_elem, b->target, &bad))
                    return evt_diag_error(d, EVT_ERR_SHAPE, e->loc, "call %s: notify map on %s leaves the event at this shape (index %lld)",
                                          call->name, e->event->name, (long long)bad);
            }
        }
    }
    for (int ev = 0; ev < g->nevents; ev++) {
        const evt_event *e = g->events[ev];
        for (int64_t x = s->ev_base[ev]; x < s->ev_base[ev + 1]; x++) {
            if (p->ev[ev].kind == EVT_COUNT_DATA) { b->target[x] = EVT_DATA_TARGET; continue; }
            if (!e->count) continue;
            int64_t idx[EVT_MAX_RANK];
            evt_shape_decode(&s->ev_dim[ev * 4], e->rank, x - s->ev_base[ev], idx);
            evt_eval_env ee = {.sym = s->sym, .var = idx};
            int err = 0;
            int64_t v = evt_expr_eval(e->count, &ee, &err);
            if (err || v < 0 || v >= EVT_DATA_TARGET)
                return evt_diag_error(d, EVT_ERR_SHAPE, e->loc, "event %s: declared count %lld is invalid at this shape", e->name, (long long)v);
            b->target[x] = (int32_t)v;
        }
    }
    return EVT_OK;
}

/* Consumer lists, pending targets, seeds and task records of the tasks of
 * calls with dyn[c] set (NULL: every call). Other tasks are never pushed: they are not
 * in any list and their pending target (-1) is never reached. */
static evt_status bind_dynamic(const evt_plan *p, const uint8_t *dyn, evt_bound *b)
{
    const evt_graph *g = p->g;
    const evt_shape *s = &b->s;
    b->cons_off = calloc(s->ncounters + 2, sizeof(int64_t));
    b->pend_target = calloc(s->ntasks + 1, sizeof(int32_t));
    b->seeds = malloc((s->ntasks + 1) * sizeof(int32_t));
    if (!b->cons_off || !b->pend_target || !b->seeds) return EVT_ERR_NOMEM;
    evt_eval_env env = {0};
    csr_fill f = {.b = b};
    for (f.pass = 0; f.pass < 2; f.pass++) {
        if (f.pass == 1) {
            for (int64_t i = 0; i < s->ncounters; i++) b->cons_off[i + 1] += b->cons_off[i];
            b->cons = malloc((b->cons_off[s->ncounters] + 1) * sizeof(int32_t));
            f.fill = malloc((s->ncounters + 1) * sizeof(int64_t));
            if (!b->cons || !f.fill) { free(f.fill); return EVT_ERR_NOMEM; }
            memcpy(f.fill, b->cons_off, s->ncounters * sizeof(int64_t));
        }
        for (int c = 0; c < g->ncalls; c++) {
            const evt_call *call = g->calls[c];
            for (int64_t lin = 0; lin < s->task_base[c + 1] - s->task_base[c]; lin++) {
                int64_t coord[EVT_MAX_RANK];
                evt_shape_decode(&s->ext[c * 4], call->rank, lin, coord);
                f.task = s->task_base[c] + lin;
                f.occurrences = 0;
                f.record = !dyn || dyn[c];
                for (int k = 0; k < call->nedges; k++) {
                    const evt_edge *e = &call->edges[k];
                    if (e->kind != EVT_WAIT) continue;
                    if (e->trigger) { f.occurrences++; continue; }
                    evt_edge_elems(s, call, e, coord, &env, cons_elem, &f, NULL);
                }
                b->pend_target[f.task] = f.record ? f.occurrences : -1;
            }
        }
    }
    free(f.fill);
    /* a consumer with one wait occurrence is pushed by its one credit, with
       no pending count (EVT_CONS_SOLE) */
    for (int64_t k = 0; k < b->cons_off[s->ncounters]; k++)
        if (b->pend_target[b->cons[k]] == 1) b->cons[k] |= EVT_CONS_SOLE;
    b->nseeds = 0;
    for (int64_t t = 0; t < s->ntasks; t++)
        if (b->pend_target[t] == 0) b->seeds[b->nseeds++] = (int32_t)t;
    return evt_bind_task_records(p, dyn, b); /* what a dynamic worker reads after a pop */
}

static evt_status bind_static(const evt_plan *p, const int64_t *sym, int nworkers, evt_queue_policy policy,
                              int exact_shape, const uint8_t *skip, evt_bound *b, evt_diag *d)
{
    int64_t *bsym = calloc(p->g->nsyms + 1, sizeof(int64_t));
    if (!bsym) return EVT_ERR_NOMEM;
    int differs = evt_bucket_shape(p->g, sym, bsym) && !exact_shape;
    evt_status st = evt_schedule_static_part(p, differs ? bsym : sym, nworkers, policy, skip, &b->q, d);
    if (!st && differs) {
        b->bucket_used = 1;
        st = evt_schedule_verify(p, sym, &b->q, d); /* restriction to the actual shape */
    }
    if (!st) st = evt_bind_records(p, b);
    if (!st) st = evt_bind_stream_jobs(p, b, d);
    free(bsym);
    return st;
}

/* Hybrid: calls marked `policy dynamic` go to the ready queue, the others to
 * static queues. Workers are split by the calls' share of the estimated work
 * (tasks x cost), at least one on each side when both have tasks. */
static evt_status bind_hybrid(const evt_plan *p, const int64_t *sym, int nworkers, evt_queue_policy policy,
                              int exact_shape, evt_bound *b, evt_diag *d)
{
    const evt_graph *g = p->g;
    const evt_shape *s = &b->s;
    uint8_t *dyn = calloc(g->ncalls + 1, 1);
    if (!dyn) return EVT_ERR_NOMEM;
    double work_dyn = 0, work_all = 0;
    int64_t ndyn_tasks = 0;
    for (int c = 0; c < g->ncalls; c++) {
        int64_t n = s->task_base[c + 1] - s->task_base[c];
        dyn[c] = g->calls[c]->policy == EVT_POLICY_DYNAMIC;
        double w = (double)n * (double)(g->calls[c]->cost > 0 ? g->calls[c]->cost : 1);
        work_all += w;
        if (dyn[c]) { work_dyn += w; ndyn_tasks += n; }
    }
    int64_t nstat_tasks = s->ntasks - ndyn_tasks;
    int nstatic = nworkers;
    evt_status st = EVT_OK;
    if (ndyn_tasks > 0 && nstat_tasks == 0) nstatic = 0;
    else if (ndyn_tasks > 0) {
        if (nworkers < 2) {
            free(dyn);
            return evt_diag_error(d, EVT_ERR_SCHEDULE, (evt_loc){0, 0},
                                  "hybrid schedule: static and dynamic calls both have tasks, which needs at least 2 workers (got %d)",
                                  nworkers);
        }
        int nd = (int)(nworkers * work_dyn / work_all + 0.5);
        if (nd < 1) nd = 1;
        if (nd > nworkers - 1) nd = nworkers - 1;
        nstatic = nworkers - nd;
    }
    if (nstatic > 0) st = bind_static(p, sym, nstatic, policy, exact_shape, dyn, b, d);
    if (!st) st = bind_dynamic(p, dyn, b);
    if (!st) b->nstatic = nstatic;
    free(dyn);
    return st;
}

/* Kernel by kernel runs the calls in program order with nothing inside a
 * launch ordering its tasks: every event a call waits on must be notified
 * only by calls before it. */
static evt_status check_kbk_order(const evt_graph *g, evt_diag *d)
{
    for (int c = 0; c < g->ncalls; c++)
        for (int k = 0; k < g->calls[c]->nedges; k++) {
            const evt_edge *w = &g->calls[c]->edges[k];
            if (w->kind != EVT_WAIT) continue;
            for (int p = c; p < g->ncalls; p++)
                for (int j = 0; j < g->calls[p]->nedges; j++) {
                    const evt_edge *n = &g->calls[p]->edges[j];
                    if (n->kind != EVT_NOTIFY || n->event != w->event) continue;
                    if (p == c)
                        return evt_diag_error(d, EVT_ERR_VERIFY, g->calls[c]->loc,
                                              "kernel-by-kernel launch: call %s waits on event %s, which its own tasks "
                                              "notify; tasks of one kernel cannot wait on each other (use a megakernel schedule)",
                                              g->calls[c]->name, w->event->name);
                    return evt_diag_error(d, EVT_ERR_VERIFY, g->calls[c]->loc,
                                          "kernel-by-kernel launch: call %s waits on event %s, which call %s notifies later "
                                          "in program order", g->calls[c]->name, w->event->name, g->calls[p]->name);
                }
        }
    return EVT_OK;
}

evt_status evt_bind(const evt_plan *p, const int64_t *sym, evt_sched_kind sched, int nworkers,
                    evt_queue_policy policy, int exact_shape, evt_bound *b, evt_diag *d)
{
    double t0 = now_ms();
    memset(b, 0, sizeof *b);
    b->sched = sched;
    b->nworkers = nworkers;
    evt_status st = evt_shape_init(&b->s, p, sym, d);
    if (st) return st;
    st = bind_targets(p, b, d);
    if (!st && sched == EVT_SCHED_DYNAMIC) st = bind_dynamic(p, NULL, b);
    if (!st && sched == EVT_SCHED_HYBRID) st = bind_hybrid(p, sym, nworkers, policy, exact_shape, b, d);
    if (!st && (sched == EVT_SCHED_KBK || sched == EVT_SCHED_GRAPH)) st = check_kbk_order(p->g, d);
    if (!st && (sched == EVT_SCHED_STATIC || sched == EVT_SCHED_UNFUSED)) {
        st = bind_static(p, sym, nworkers, policy, exact_shape, NULL, b, d);
        /* launch only the workers that have something to do: trailing empty
           queues would cost a block each for nothing (small shapes) */
        if (!st) {
            int active = b->q.nworkers;
            while (active > 1 && b->q.q_off[active] == b->q.q_off[active - 1]) active--;
            b->nworkers = active;
        }
    }
    b->state_len = 2 * b->s.ncounters + b->s.ntasks + p->g->ncalls + 3;
    b->bind_ms = now_ms() - t0;
    if (st) evt_bound_free(b);
    return st;
}

void evt_bound_free(evt_bound *b)
{
    evt_shape_free(&b->s);
    evt_static_sched_free(&b->q);
    free(b->target); free(b->cons_off); free(b->cons); free(b->pend_target); free(b->seeds); free(b->rec); free(b->trec);
    free(b->sjob); free(b->sjob_off);
    memset(b, 0, sizeof *b);
}

size_t evt_bound_bytes(const evt_bound *b)
{
    const evt_shape *s = &b->s;
    size_t nc = (size_t)s->ncounters, nt = (size_t)s->ntasks, nq = b->q.q_off ? (size_t)b->q.q_off[b->q.nworkers] : 0;
    size_t calls = (size_t)s->p->g->ncalls, events = (size_t)s->p->g->nevents;
    size_t n = (calls * 9 + events * 5 + 2) * sizeof(int64_t) + nc * sizeof(int32_t); /* shape, targets */
    n += (b->q.q_off ? ((size_t)b->q.nworkers + 1 + calls * 4) * sizeof(int64_t) : 0) + nq * sizeof(uint32_t);
    n += b->rec ? nq * sizeof(evt_task_rec) : 0;
    n += b->trec ? nt * sizeof(evt_task_rec) : 0;
    n += b->sjob_off ? ((size_t)b->q.nworkers + 1) * sizeof(int64_t) + (size_t)b->sjob_off[b->q.nworkers] * sizeof(evt_stream_job) : 0;
    n += b->cons_off ? (nc + 1) * sizeof(int64_t) + (size_t)b->cons_off[nc] * sizeof(int32_t) : 0;
    n += (b->pend_target ? nt * sizeof(int32_t) : 0) + (b->seeds ? nt * sizeof(int32_t) : 0);
    return n;
}

void evt_bound_fill_ctx(const evt_bound *b, evt_ctx *C)
{
    const evt_graph *g = b->s.p->g;
    C->nsyms = g->nsyms; C->ncalls = g->ncalls; C->nevents = g->nevents; C->ntensors = g->ntensors;
    C->sym = b->s.sym; C->ext = b->s.ext; C->task_base = b->s.task_base;
    C->ev_base = b->s.ev_base; C->ev_dim = b->s.ev_dim;
    C->ntasks = b->s.ntasks; C->ncounters = b->s.ncounters;
    C->target = b->target;
    C->nworkers = b->nworkers;
    C->mode = b->sched == EVT_SCHED_DYNAMIC ? EVT_MODE_DYNAMIC
            : b->sched == EVT_SCHED_KBK || b->sched == EVT_SCHED_GRAPH ? EVT_MODE_KBK
            : b->sched == EVT_SCHED_HYBRID ? EVT_MODE_HYBRID : EVT_MODE_STATIC;
    C->nstatic = b->nstatic;
    C->q_off = b->q.q_off; C->q = b->q.q; C->qext = b->q.ext; C->rec = b->rec; C->trec = b->trec;
    C->sjob = b->sjob; C->sjob_off = b->sjob_off;
    C->cons_off = b->cons_off; C->cons = b->cons; C->pend_target = b->pend_target;
    C->seeds = b->seeds; C->nseeds = b->nseeds;
    C->state_len = b->state_len;
}

void evt_ctx_apply_run_opts(evt_ctx *C, const evt_run_opts *o)
{
    C->timeout_ns = (uint64_t)((o->timeout_s > 0 ? o->timeout_s : 10.0) * 1e9);
    C->chaos = o->chaos;
    C->early_push = o->early_push;
    C->pop_batch = o->pop_batch > 0 ? o->pop_batch : 1;
    C->chaos_max_ns = o->chaos_max_ns ? o->chaos_max_ns : 20000;
    if (o->computed_dispatch) C->rec = C->trec = NULL;
}

void evt_ctx_place_state(evt_ctx *C, int32_t *state, const evt_bound *b)
{
    int64_t nc = b->s.ncounters, nt = b->s.ntasks;
    C->state = state;
    C->counters = state;
    C->pending = C->counters + nc;
    C->hist = C->pending + nt;
    C->arm_done = C->hist + nc;
    C->outstanding = C->arm_done + b->s.p->g->ncalls;
    C->terminated = C->outstanding + 1;
    C->done_workers = C->terminated + 1; /* last word: zeroed separately */
}

int64_t evt_ring_capacity(const evt_bound *b)
{
    int64_t cap = 64;
    while (cap < b->s.ntasks + b->nworkers + 1) cap *= 2;
    assert(cap <= (INT64_C(1) << 31)); /* a slot's 32-bit sequence and task id (evt_ctx.h); shape.c bounds ntasks */
    return cap;
}

void evt_ring_slots_init(evt_ring_slot *slots, int64_t cap)
{
    for (int64_t i = 0; i < cap; i++) slots[i] = EVT_RING_SLOT(i, -1);
}

void evt_describe_error(const evt_bound *b, const evt_error *e, const int32_t *counters, char *buf, size_t n)
{
    const evt_shape *s = &b->s;
    const evt_graph *g = s->p->g;
    char task[160] = "?";
    if (e->task >= 0 && e->task < s->ntasks) evt_task_name(s, e->task, task, sizeof task);
    switch (e->kind) {
    case EVT_KERR_WAIT_TIMEOUT: {
        char el[128];
        evt_elem_name(s, e->elem, el, sizeof el);
        long long obs = counters ? counters[e->elem] : e->observed;
        if (e->target == EVT_DATA_TARGET)
            snprintf(buf, n, "watchdog: task %s (worker %d) is stuck waiting on %s (data-dependent count; %s)",
                     task, e->worker, el, obs < EVT_DATA_TARGET / 2 ? "never armed" : "armed, notifies missing");
        else
            snprintf(buf, n, "watchdog: task %s (worker %d) is stuck waiting on %s: %lld of %lld notifies arrived",
                     task, e->worker, el, obs, (long long)e->target);
        break;
    }
    case EVT_KERR_QUEUE_TIMEOUT: {
        /* name one task that never became ready */
        char stuck[160] = "none found";
        if (counters && b->pend_target) {
            const int32_t *pending = counters + s->ncounters;
            for (int64_t t = 0; t < s->ntasks; t++)
                if (pending[t] < b->pend_target[t] && pending[t] > 0) { evt_task_name(s, t, stuck, sizeof stuck); break; }
        }
        snprintf(buf, n, "watchdog: %lld tasks outstanding but none became ready (dynamic schedule); first waiting task: %s",
                 (long long)e->observed, stuck);
        break;
    }
    case EVT_KERR_BAD_INDEX:
        if (e->event <= -1 && -1 - e->event < g->ntensors)
            snprintf(buf, n, "bad index: task %s read %s with index %lld outside [0, %lld)", task,
                     g->tensors[-1 - e->event]->name, (long long)e->elem, (long long)e->target);
        else
            snprintf(buf, n, "bad index: task %s computed %s index %lld outside [0, %lld)", task,
                     e->event >= 0 && e->event < g->nevents ? g->events[e->event]->name : "?", (long long)e->elem,
                     (long long)e->target);
        break;
    case EVT_KERR_INCOMPLETE: {
        char el[128];
        evt_elem_name(s, e->elem, el, sizeof el);
        if (e->observed < e->target)
            snprintf(buf, n, "deadlock: the launch went quiet with %s at %lld of %lld notifies; the tasks waiting on it never ran",
                     el, (long long)e->observed, (long long)e->target);
        else
            snprintf(buf, n, "count mismatch: %s received %lld notifies but its count is %lld; a task waiting on it may have run early",
                     el, (long long)e->observed, (long long)e->target);
        break;
    }
    case EVT_KERR_STREAM:
        snprintf(buf, n, "weight stream: worker %d %s (chunk %lld consumed, %lld issued); an internal error of evtc, please report it",
                 e->worker, e->elem < 0 ? "ended with chunks issued but not consumed" : "waited past the watchdog bound for a chunk",
                 (long long)e->observed, (long long)e->target);
        break;
    default:
        snprintf(buf, n, "kernel error %d", e->kind);
    }
}
