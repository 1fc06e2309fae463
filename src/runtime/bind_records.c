/* bind_records.c — the task records of a static schedule (evt_ctx.h):
 * for every queue entry, resolved on the host at the bound shape, the task's
 * coordinate and global id (or "outside the shape") and, for calls whose
 * maps are all known on the host (evt_call_has_records), the counter
 * elements it waits on and notifies. The worker's leader then reads one
 * 64-byte record instead of decoding the entry and evaluating every map on
 * the device (a chain of dependent table reads and 64-bit divisions that
 * took 2-4.5 us per task on an H200, bench/RESULTS.md).
 *
 * A task whose lists do not fit, or whose wait index is out of range (the
 * device reports it, naming the event), keeps nwait = -1: the generated code
 * computes its lists as it does without records. Dynamic and hybrid
 * schedules also get every task's record by global task id (trec), which a
 * dynamic worker indexes with the task it popped. */
#include <stdlib.h>
#include <string.h>
#include "runtime/bind.h"

typedef struct rec_list {
    const int32_t *target; /* NULL: keep every element (notifies) */
    int32_t *out;
    int n, cap;
} rec_list;

static void rec_add(void *user, int64_t elem)
{
    rec_list *l = user;
    if (l->target && l->target[elem] == 0) return; /* complete from the start */
    if (l->n < l->cap) l->out[l->n] = (int32_t)elem;
    l->n++;
}

/* The lists of one task, waits then notifies in r->elem, and their counts;
 * r->nwait stays -1 when they do not fit together or a wait map fails. */
static void rec_lists(const evt_bound *b, const evt_call *call, const int64_t *coord, evt_task_rec *r)
{
    const evt_shape *s = &b->s;
    evt_eval_env env = {0};
    int32_t notify[EVT_REC_ELEMS];
    rec_list w = {b->target, r->elem, 0, EVT_REC_ELEMS}, n = {NULL, notify, 0, EVT_REC_ELEMS};
    for (int k = 0; k < call->nedges; k++) {
        const evt_edge *e = &call->edges[k];
        if (evt_edge_elems(s, call, e, coord, &env, rec_add, e->kind == EVT_WAIT ? &w : &n, NULL)) return;
    }
    if (w.n + n.n > EVT_REC_ELEMS) return;
    for (int i = 0; i < n.n; i++) r->elem[w.n + i] = notify[i];
    r->nwait = (int16_t)w.n;
    r->nnotify = (int16_t)n.n;
}

/* Fills the record of the task at `coord` (in the grid the entry was decoded
 * with) of `call`; its lists too when `has` (evt_call_has_records). A bucket
 * entry that this shape does not have gets task = -1. */
static void rec_fill(const evt_bound *b, const evt_call *call, int has, uint32_t entry, const int64_t *coord, evt_task_rec *r)
{
    const evt_shape *s = &b->s;
    int c = call->id;
    int64_t lin = 0;
    int inside = 1;
    r->entry = entry;
    r->nwait = -1;
    r->task = -1;
    for (int d = 0; d < call->rank; d++) {
        inside &= coord[d] < s->ext[c * 4 + d];
        lin = lin * s->ext[c * 4 + d] + coord[d];
        r->coord[d] = (int32_t)coord[d];
    }
    if (!inside) return; /* a bucket schedule's task that this shape does not have */
    r->task = (int32_t)(s->task_base[c] + lin);
    if (has) rec_lists(b, call, coord, r);
}

int evt_task_args_fill(const evt_call *call, const int64_t *ext, const int64_t *coord, void *const *ptr,
                       const int64_t *const *dims, const evt_eval_env *env, evt_task_args *a)
{
    int ok = 1;
    memset(a, 0, sizeof *a);
    a->ncoord = call->rank;
    for (int k = 0; k < EVT_ABI_MAX_RANK; k++) {
        a->coord[k] = k < call->rank ? coord[k] : 0;
        a->grid[k] = ext[k];
    }
    for (int i = 0; i < call->nargs; i++) {
        const evt_arg *arg = &call->args[i];
        if (arg->kind == EVT_ARG_TENSOR) {
            if (a->ntensors >= EVT_ABI_MAX_TENSORS) return 0;
            evt_tensor_ref *t = &a->t[a->ntensors++];
            t->ptr = ptr ? ptr[arg->tensor->id] : NULL;
            memcpy(t->dim, dims[arg->tensor->id], sizeof t->dim);
            t->rank = (int16_t)arg->tensor->rank;
            t->dtype = (int16_t)arg->tensor->dtype;
            t->tmap = -1;
        } else {
            int err = 0;
            if (a->nints >= EVT_ABI_MAX_INTS) return 0;
            a->iarg[a->nints++] = evt_expr_eval(arg->value, env, &err);
            if (err) ok = 0;
        }
    }
    return ok;
}

/* Counter indices, task ids and coordinates are 32-bit in a record. */
static int records_fit(const evt_shape *s) { return s->ncounters < INT32_MAX && s->ntasks < INT32_MAX; }

/* Every task's record by global task id (the dynamic workers': a popped
 * task id indexes it); lists only for the tasks of calls with dyn[c] set
 * (NULL: every call), the others are never popped. */
evt_status evt_bind_task_records(const evt_plan *p, const uint8_t *dyn, evt_bound *b)
{
    const evt_graph *g = p->g;
    const evt_shape *s = &b->s;
    free(b->trec);
    b->trec = NULL;
    if (s->ntasks == 0 || !records_fit(s)) return EVT_OK;
    evt_task_rec *rec = calloc(s->ntasks, sizeof *rec);
    if (!rec) return EVT_ERR_NOMEM;
    for (int c = 0; c < g->ncalls; c++) {
        const evt_call *call = g->calls[c];
        int has = (!dyn || dyn[c]) && evt_call_has_records(p, call);
        for (int64_t lin = 0; lin < s->task_base[c + 1] - s->task_base[c]; lin++) {
            int64_t coord[EVT_MAX_RANK] = {0};
            evt_shape_decode(&s->ext[c * 4], call->rank, lin, coord);
            rec_fill(b, call, has, (uint32_t)c << EVT_QCALL_SHIFT | (uint32_t)lin, coord, &rec[s->task_base[c] + lin]);
        }
    }
    b->trec = rec;
    return EVT_OK;
}

evt_status evt_bind_records(const evt_plan *p, evt_bound *b)
{
    const evt_graph *g = p->g;
    const evt_shape *s = &b->s;
    const evt_static_sched *q = &b->q;
    int64_t n = q->q_off ? q->q_off[q->nworkers] : 0;
    free(b->rec);
    b->rec = NULL;
    if (n == 0 || !records_fit(s)) return EVT_OK;
    uint8_t *has = calloc(g->ncalls + 1, 1);
    evt_task_rec *rec = calloc(n, sizeof *rec);
    if (!has || !rec) { free(has); free(rec); return EVT_ERR_NOMEM; }
    for (int c = 0; c < g->ncalls; c++) has[c] = evt_call_has_records(p, g->calls[c]);
    for (int64_t k = 0; k < n; k++) {
        uint32_t e = q->q[k];
        int c = (int)(e >> EVT_QCALL_SHIFT);
        int64_t coord[EVT_MAX_RANK] = {0};
        evt_shape_decode(&q->ext[c * 4], g->calls[c]->rank, (int64_t)(e & EVT_QINDEX_MASK), coord);
        rec_fill(b, g->calls[c], has[c], e, coord, &rec[k]);
    }
    free(has);
    b->rec = rec;
    return EVT_OK;
}
