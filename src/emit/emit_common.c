/* emit_common.c — prints a lowered plan as one translation unit of C or CUDA.
 *
 * Both targets get the same code: per call a function that decodes the task
 * coordinate, guards it against the bound shape, waits (leader), runs the
 * tile (all threads), arms data-dependent events, and notifies (leader);
 * per data-dependent event an arming function (histogram of its notify maps
 * over the valid tasks); a table of what the shared record path
 * (src/device/evt_rec_run.h) needs per call, which runs every task that has
 * a record unless its call is not generic; a dispatch switch; then the
 * shared persistent loop (src/device/evt_loop.h). Only the tile call and
 * the entry point differ.
 * Maps become index arithmetic over v[] (coordinates and `for` variables)
 * and C->sym[] (bound symbols); tensor reads become checked evt_ld() calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emit/emit.h"

/* Ids printed into a call's body. In a template (t->slots) every call, tensor
 * and event id becomes a slot I[k] of the call's id row, so that calls that
 * differ only in which tensors and events they touch (the layers of a model)
 * share one function; otherwise ids are printed as numbers. */
enum { ID_CALL, ID_TENSOR, ID_EVENT };
#define MAX_SLOTS 256
typedef struct ids {
    int slots;                 /* 1: print I[k] */
    int n;
    int kind[MAX_SLOTS], value[MAX_SLOTS];
} ids;

static void id(evt_printer *o, ids *t, int kind, int value)
{
    if (!t || !t->slots) { evt_pr(o, "%d", value); return; }
    for (int k = 0; k < t->n; k++)
        if (t->kind[k] == kind && t->value[k] == value) { evt_pr(o, "I[%d]", k); return; }
    if (t->n == MAX_SLOTS) { evt_pr(o, "%d", value); return; } /* too many: stay literal */
    t->kind[t->n] = kind;
    t->value[t->n] = value;
    evt_pr(o, "I[%d]", t->n++);
}

static void expr(evt_printer *o, const evt_expr *e, int call, ids *t)
{
    switch (e->op) {
    case EVT_E_CONST: evt_pr(o, "INT64_C(%lld)", (long long)e->value); return;
    case EVT_E_SYM: evt_pr(o, "C->sym[%d]", e->sym->id); return;
    case EVT_E_VAR: evt_pr(o, "v[%d]", e->var); return;
    case EVT_E_LOAD:
        evt_pr(o, "evt_ld(C, W, ");
        id(o, t, ID_CALL, call);
        evt_pr(o, ", ");
        id(o, t, ID_TENSOR, e->tensor->id);
        evt_pr(o, ", %d", e->nargs);
        for (int i = 0; i < 4; i++) {
            evt_pr(o, ", ");
            if (i < e->nargs) expr(o, e->a[i], call, t); else evt_pr(o, "0");
        }
        evt_pr(o, ")");
        return;
    default: break;
    }
    static const char *fn[] = {[EVT_E_DIV] = "evt_fdiv", [EVT_E_MOD] = "evt_fmod", [EVT_E_MIN] = "evt_min", [EVT_E_MAX] = "evt_max"};
    static const char *op[] = {[EVT_E_ADD] = " + ", [EVT_E_SUB] = " - ", [EVT_E_MUL] = " * "};
    if (e->op == EVT_E_ADD || e->op == EVT_E_SUB || e->op == EVT_E_MUL) {
        evt_pr(o, "(");
        expr(o, e->a[0], call, t);
        evt_pr(o, "%s", op[e->op]);
        expr(o, e->a[1], call, t);
        evt_pr(o, ")");
    } else {
        evt_pr(o, "%s(", fn[e->op]);
        expr(o, e->a[0], call, t);
        evt_pr(o, ", ");
        expr(o, e->a[1], call, t);
        evt_pr(o, ")");
    }
}

/* Opens loops over the edge's `for` variables (v[rank + f]). */
static void open_fors(evt_printer *o, const evt_call *c, const evt_edge *e, const char *ind, ids *t)
{
    for (int f = 0; f < e->nfor; f++) {
        evt_pr(o, "%sfor (v[%d] = 0; v[%d] < ", ind, c->rank + f, c->rank + f);
        expr(o, e->for_ext[f], c->id, t);
        evt_pr(o, "; v[%d]++) {\n", c->rank + f);
    }
}
static void close_fors(evt_printer *o, const evt_edge *e, const char *ind)
{
    for (int f = 0; f < e->nfor; f++) evt_pr(o, "%s}\n", ind);
}

/* Computes `elem` (absolute counter index) of an affine/gather edge; on a bad
 * index prints `on_bad`. */
static void elem_of(evt_printer *o, const evt_call *c, const evt_edge *e, const char *ind, const char *on_bad, int raise, ids *t)
{
    int ev = e->event->id;
    evt_pr(o, "%sint64_t elem = 0;\n", ind);
    for (int i = 0; i < e->nidx; i++) {
        evt_pr(o, "%s{ int64_t x = ", ind);
        expr(o, e->idx[i], c->id, t);
        evt_pr(o, ", dim = EVT_RO(C->ev_dim[");
        id(o, t, ID_EVENT, ev);
        evt_pr(o, " * 4 + %d]);\n", i);
        if (raise) {
            evt_pr(o, "%s  if (evt_check_index(C, W, ", ind);
            id(o, t, ID_CALL, c->id);
            evt_pr(o, ", ");
            id(o, t, ID_EVENT, ev);
            evt_pr(o, ", x, dim)) { %s }\n", on_bad);
        } else { /* the notifying task itself reports a bad index */
            evt_pr(o, "%s  if (x < 0 || x >= dim) { %s }\n", ind, on_bad);
        }
        evt_pr(o, "%s  elem = elem * dim + x; }\n", ind);
    }
    evt_pr(o, "%selem += EVT_RO(C->ev_base[", ind);
    id(o, t, ID_EVENT, ev);
    evt_pr(o, "]);\n");
}

static void decode(evt_printer *o, const evt_call *c, const char *ext, ids *t)
{
    evt_pr(o, "    { int64_t q = lin, K4 = ");
    id(o, t, ID_CALL, c->id);
    evt_pr(o, " * 4;\n");
    for (int k = c->rank - 1; k >= 0; k--)
        evt_pr(o, "      v[%d] = q %% %s[K4 + %d]; q /= %s[K4 + %d];\n", k, ext, k, ext, k); /* plain loads: ext may be in shared memory */
    evt_pr(o, "    }\n");
}

static void linear_task(evt_printer *o, const evt_call *c, ids *t)
{
    /* base + ((v0 * ext1 + v1) * ext2 + v2) ... */
    evt_pr(o, "EVT_RO(C->task_base[");
    id(o, t, ID_CALL, c->id);
    evt_pr(o, "]) + ");
    for (int k = 1; k < c->rank; k++) evt_pr(o, "(");
    evt_pr(o, "v[0]");
    for (int k = 1; k < c->rank; k++) evt_pr(o, " * X[%d] + v[%d])", k, k);
}

/* Trigger consumers of event ev: credit tasks indptr[x] .. indptr[x+1]. */
static void emit_trigger_credit(evt_printer *o, const evt_plan *p)
{
    const evt_graph *g = p->g;
    evt_pr(o, "EVT_NOINLINE void evt_trig(const evt_ctx *C, evt_worker *W, int ev, int64_t x)\n{\n");
    evt_pr(o, "    if (C->mode != EVT_MODE_DYNAMIC && C->mode != EVT_MODE_HYBRID) return;\n    switch (ev) {\n");
    for (int ev = 0; ev < g->nevents; ev++) {
        if (!p->ev[ev].ntrigger_consumers) continue;
        evt_pr(o, "    case %d:\n", ev);
        for (int c = 0; c < g->ncalls; c++)
            for (int k = 0; k < g->calls[c]->nedges; k++) {
                const evt_edge *e = &g->calls[c]->edges[k];
                if (!e->trigger || e->event->id != ev) continue;
                evt_pr(o, "      { /* %s waits %s trigger %s */\n", g->calls[c]->name, e->event->name, e->trigger->name);
                evt_pr(o, "        const evt_tensor_ref *ip = &C->tensors[%d];\n", e->trigger->id);
                evt_pr(o, "        int64_t lo = evt_index_load(ip, x), hi = evt_index_load(ip, x + 1);\n");
                evt_pr(o, "        if (lo < 0) lo = 0;\n        if (hi > C->ext[%d]) hi = C->ext[%d];\n", c * 4, c * 4);
                evt_pr(o, "        for (int64_t t = lo; t < hi; t++) evt_credit(C, W, C->task_base[%d] + t); }\n", c);
            }
        evt_pr(o, "      break;\n");
    }
    evt_pr(o, "    default: (void)W; (void)x; break;\n    }\n}\n\n");
}

static void emit_arm(evt_printer *o, const evt_plan *p, int ev)
{
    const evt_graph *g = p->g;
    evt_pr(o, "/* arms data-dependent event %s: histogram of its notify maps */\n", g->events[ev]->name);
    evt_pr(o, "EVT_NOINLINE void evt_arm_%d(const evt_ctx *C, evt_worker *W)\n{\n", ev);
    evt_pr(o, "    int32_t *H = C->hist + C->ev_base[%d];\n", ev);
    for (int c = 0; c < g->ncalls; c++) {
        const evt_call *call = g->calls[c];
        for (int k = 0; k < call->nedges; k++) {
            const evt_edge *e = &call->edges[k];
            if (e->kind != EVT_NOTIFY || e->event->id != ev) continue;
            evt_pr(o, "    { /* notified by %s */\n", call->name);
            evt_pr(o, "      int64_t n = 1, v[%d];\n", EVT_MAX_RANK + EVT_MAX_FOR);
            evt_pr(o, "      for (int k = 0; k < %d; k++) n *= C->ext[%d + k];\n", call->rank, c * 4);
            evt_pr(o, "      for (int64_t lin = EVT_TID; lin < n; lin += EVT_NTHREADS) {\n");
            evt_pr(o, "        { int64_t q = lin;\n");
            for (int d = call->rank - 1; d >= 0; d--)
                evt_pr(o, "          v[%d] = q %% C->ext[%d]; q /= C->ext[%d];\n", d, c * 4 + d, c * 4 + d);
            evt_pr(o, "        }\n");
            int te = p->call[c].trigger_edge;
            if (te >= 0) {
                const evt_edge *t = &call->edges[te];
                evt_pr(o, "        if (evt_trigger_owner(&C->tensors[%d], C->ev_dim[%d], v[0]) < 0) continue;\n",
                       t->trigger->id, t->event->id * 4);
            }
            open_fors(o, call, e, "        ", NULL);
            evt_pr(o, "        {\n");
            elem_of(o, call, e, "          ", "continue;", 0, NULL);
            evt_pr(o, "          evt_add_relaxed(&H[elem - C->ev_base[%d]], 1);\n        }\n", ev);
            close_fors(o, e, "        ");
            evt_pr(o, "      }\n    }\n");
        }
    }
    evt_pr(o, "    EVT_SYNC();\n    if (EVT_LEADER) {\n");
    evt_pr(o, "        int64_t n = C->ev_base[%d] - C->ev_base[%d];\n", ev + 1, ev);
    evt_pr(o, "        evt_notify_fence();\n");
    evt_pr(o, "        for (int64_t x = 0; x < n; x++) {\n");
    evt_pr(o, "            int32_t h = evt_load_relaxed(&H[x]);\n            evt_store_relaxed(&H[x], 0);\n");
    evt_pr(o, "            if (evt_signal(C, W, C->ev_base[%d] + x, EVT_DATA_TARGET - h)) {%s}\n", ev,
           p->ev[ev].ntrigger_consumers ? "" : " ");
    if (p->ev[ev].ntrigger_consumers)
        evt_pr(o, "                evt_trig(C, W, %d, x);\n", ev);
    evt_pr(o, "        }\n    }\n    EVT_SYNC();\n}\n\n");
}

/* Builds the task's arguments into W->args (v[] and X decoded); `streams`:
 * A->stream and A->stream_at come from the weight stream's pump
 * (evt_stream_take), else 0. */
static void emit_args(evt_printer *o, const evt_call *c, ids *t, int streams)
{
    evt_pr(o, "        evt_task_args *A = &W->args;\n        A->ncoord = %d; A->worker = W->id;\n", c->rank);
    evt_pr(o, "        for (int k = 0; k < 4; k++) { A->coord[k] = k < %d ? v[k] : 0; A->grid[k] = X[k]; }\n", c->rank);
    int nt = 0, ni = 0;
    for (int a = 0; a < c->nargs; a++) {
        if (c->args[a].kind == EVT_ARG_TENSOR) {
            evt_pr(o, "        A->t[%d] = evt_ld_tensor(&C->tensors[", nt++);
            id(o, t, ID_TENSOR, c->args[a].tensor->id);
            evt_pr(o, "]);\n");
        } else {
            evt_pr(o, "        A->iarg[%d] = ", ni++);
            expr(o, c->args[a].value, c->id, t);
            evt_pr(o, ";\n");
        }
    }
    evt_pr(o, "        A->ntensors = %d; A->nints = %d;\n", nt, ni);
    if (streams) evt_pr(o, "        A->stream = evt_stream_take(&A->stream_at); /* rows the pump put in shared memory */\n");
    else evt_pr(o, "        A->stream = 0; A->stream_at = 0;\n");
    evt_pr(o, "        A->wait_in_tile = 0;\n");
    evt_pr(o, "        A->tmaps = C->tmaps; A->tma_ring_off = C->tma_ring_off; A->tma_ring_bytes = C->tma_ring_bytes;\n");
}

/* Opens the function body: v[] and X, the bound grid extents of call c. */
static void open_body(evt_printer *o, const evt_call *c, ids *t)
{
    evt_pr(o, "{\n    int64_t v[%d];\n    const int64_t *X = C->ext + ", EVT_MAX_RANK + EVT_MAX_FOR);
    id(o, t, ID_CALL, c->id);
    evt_pr(o, " * 4;\n");
}

/* Decodes task lin into v[] and returns `ret` when it lies outside the
 * bound shape X. */
static void decode_guard(evt_printer *o, const evt_call *c, ids *t, const char *ret)
{
    decode(o, c, "qext", t);
    evt_pr(o, "    if (");
    for (int k = 0; k < c->rank; k++) evt_pr(o, "%sv[%d] >= X[%d]", k ? " || " : "", k, k);
    evt_pr(o, ") %s; /* guard: outside the bound shape */\n", ret);
}

/* Waits for the batched waits so far (evt_wait_flush orders the task's
 * reads after them). */
static void flush_waits(evt_printer *o, const evt_call *c, ids *t)
{
    evt_pr(o, "      if (evt_wait_flush(C, W, ");
    id(o, t, ID_CALL, c->id);
    evt_pr(o, ", &ws)) { W->skip = 1; goto waits_done; }\n");
}

/* The task's coordinate v[], X and global id: from its record R (static
 * workers with records), else decoded from lin and guarded. */
static void emit_task_of(evt_printer *o, const evt_call *c, ids *t)
{
    open_body(o, c, t);
    evt_pr(o, "    int64_t task;\n    if (R) { /* the entry's task record (bind time) */\n");
    evt_pr(o, "        if (R->task < 0) return; /* outside the bound shape */\n");
    for (int k = 0; k < c->rank; k++) evt_pr(o, "        v[%d] = R->coord[%d];\n", k, k);
    evt_pr(o, "        task = R->task;\n    } else {\n");
    decode_guard(o, c, t, "return");
    evt_pr(o, "    task = ");
    linear_task(o, c, t);
    evt_pr(o, ";\n    }\n");
}

/* Edges of call c of one kind (EVT_WAIT, EVT_NOTIFY). */
static int count_edges(const evt_call *c, evt_edge_kind kind)
{
    int n = 0;
    for (int k = 0; k < c->nedges; k++) n += c->edges[k].kind == kind;
    return n;
}

/* Whether call c's leader runs its tile's L2 prefetch hook before its waits
 * (an annotated call whose weights neither stream nor load early). */
static int runs_prefetch_hook(const evt_plan *p, const evt_call *c, evt_target tgt)
{
    const evt_call_plan *cp = &p->call[c->id];
    return c->prefetch && cp->decl && cp->decl->has_prefetch && tgt == EVT_TARGET_CUDA && !cp->streams && !cp->early_loads;
}

/* The tile function a call runs (CUDA). */
static void tile_name(char *buf, size_t n, const evt_plan *p, const evt_call *c)
{
    const evt_call_plan *cp = &p->call[c->id];
    snprintf(buf, n, "%s%s_cuda", cp->decl ? cp->decl->name : c->op, cp->early_loads ? "_early" : "");
}

/* The body of call c's function, with ids as slots of t (see ids). */
static void emit_call_body(evt_printer *o, const evt_plan *p, const evt_call *c, evt_target tgt, ids *t)
{
    const evt_call_plan *cp = &p->call[c->id];
    const evt_tile_decl *decl = cp->decl;
    int has_rec = evt_call_has_records(p, c); /* its record may hold its wait and notify lists */
    emit_task_of(o, c, t);
    evt_pr(o, "    int32_t tgt0 = -1; /* the leader's: its record's first wait target, loaded early */\n");
    evt_pr(o, "    if (EVT_LEADER) {\n        evt_trace_taken(C, task);\n        tgt0 = evt_rec_target0(C, R);\n        W->task = task;\n        W->skip = 0;\n");
    /* the task's arguments, built once by the leader in the worker's
       (shared) state; every thread reads them after the barrier */
    emit_args(o, c, t, tgt == EVT_TARGET_CUDA && cp->streams);
    evt_pr(o, "        evt_trace_taken_at(C, task, 1); /* (a diagnostic: EVT_TRACE_TAKEN_AT) */\n");
    /* the leader runs the hook alone (warp 0 running it measured 0.7%
       slower per qwen3-0.6b token: two warp barriers on every GEMV task);
       a streaming call's weights come through the stream instead */
    int early = tgt == EVT_TARGET_CUDA && cp->early_loads; /* the tile runs the record's waits (evt_tile_wait) */
    if (runs_prefetch_hook(p, c, tgt))
        evt_pr(o, "        %s_prefetch_cuda(A); /* weights do not depend on the waits */\n", decl->name);
    /* early push: announce this task's static notifies at dispatch */
    int push = 0;
    for (int k = 0; k < c->nedges; k++)
        push |= c->edges[k].kind == EVT_NOTIFY && !evt_edge_is_data(p, c, &c->edges[k]) &&
                p->ev[c->edges[k].event->id].kind != EVT_COUNT_DATA;
    if (push) {
        evt_pr(o, "        if (C->early_push && C->mode == EVT_MODE_DYNAMIC) {\n");
        for (int k = 0; k < c->nedges; k++) {
            const evt_edge *e = &c->edges[k];
            if (e->kind != EVT_NOTIFY || evt_edge_is_data(p, c, e) || p->ev[e->event->id].kind == EVT_COUNT_DATA) continue;
            evt_pr(o, "          do { /* early notify (a bad index is reported at the real notify) */\n");
            open_fors(o, c, e, "            ", t);
            elem_of(o, c, e, "            ", "break;", 0, t);
            evt_pr(o, "            evt_early_signal(C, W, elem);\n");
            close_fors(o, e, "            ");
            evt_pr(o, "          } while (0);\n");
        }
        evt_pr(o, "        }\n");
    }
    /* waits go through a batch (evt_waits: their counters are loaded
       together) */
    const int nwaits = count_edges(c, EVT_WAIT);
    const int beside = early && nwaits && has_rec; /* the record's waits run beside the tile */
    if (beside) {
        /* run beside the tile, which issues its weight loads meanwhile */
        evt_pr(o, "      if (R && R->nwait >= 0) { /* the record's waits: beside the tile (evt_tile_wait) */\n");
        evt_pr(o, "        A->wait_in_tile = 1;\n#if EVT_WAITS_IN_TILE\n        evt_tile_wait_record(W, C, ");
        id(o, t, ID_CALL, c->id);
        evt_pr(o, ", R, tgt0, task);\n#endif\n        goto waits_done;\n      }\n");
    } else if (nwaits && has_rec) {
        evt_pr(o, "      if (R && R->nwait >= 0) { /* the record's waits */\n        evt_trace_taken_at(C, task, 2);\n        if (evt_wait_rec(C, W, ");
        id(o, t, ID_CALL, c->id);
        evt_pr(o, ", R, tgt0)) W->skip = 1;\n        goto waits_done;\n      }\n");
    }
    if (nwaits) evt_pr(o, "      evt_waits ws;\n      ws.n = 0;\n");
    int batched = 0; /* waits added since the last flush */
    for (int k = 0; k < c->nedges; k++) {
        const evt_edge *e = &c->edges[k];
        if (e->kind != EVT_WAIT) continue;
        int ev = e->event->id;
        if (batched && (e->trigger || evt_edge_is_data(p, c, e))) {
            /* this wait reads tensor data (indptr, an index map) that the
               earlier waits guard: they must be complete first */
            flush_waits(o, c, t);
            batched = 0;
        }
        if (e->trigger) {
            evt_pr(o, "      { /* trigger-range wait */\n        int64_t ev = ");
            id(o, t, ID_EVENT, ev);
            evt_pr(o, ", x = evt_trigger_owner(&C->tensors[");
            id(o, t, ID_TENSOR, e->trigger->id);
            evt_pr(o, "], C->ev_dim[ev * 4], v[0]);\n");
            evt_pr(o, "        if (x < 0) { W->skip = 2; goto waits_done; } /* no such task for this data */\n");
            evt_pr(o, "        if (evt_wait_add(C, W, ");
            id(o, t, ID_CALL, c->id);
            evt_pr(o, ", &ws, (int)ev, EVT_RO(C->ev_base[ev]) + x)) { W->skip = 1; goto waits_done; } }\n");
            batched = 1;
            continue;
        }
        evt_pr(o, "      { /* wait */\n");
        open_fors(o, c, e, "        ", t);
        elem_of(o, c, e, "        ", "W->skip = 1; goto waits_done;", 1, t);
        batched = 1;
        evt_pr(o, "        if (evt_wait_add(C, W, ");
        id(o, t, ID_CALL, c->id);
        evt_pr(o, ", &ws, ");
        id(o, t, ID_EVENT, ev);
        evt_pr(o, ", elem)) { W->skip = 1; goto waits_done; }\n");
        close_fors(o, e, "        ");
        evt_pr(o, "      }\n");
    }
    if (batched) flush_waits(o, c, t);
    if (nwaits) evt_pr(o, "    waits_done:;\n"); /* the waits' exits (a call without waits has none) */
    evt_pr(o, "    }\n    EVT_SYNC();\n    if (W->skip) return;\n");
    if (beside) {
        /* warp 0 waits; the other warps enter the tile, issue their weight
           loads and meet it at the tile's evt_tile_wait */
        evt_pr(o, "#if EVT_WAITS_IN_TILE /* the leader runs them inside the tile (evt_tile_wait) */\n");
        evt_pr(o, "    if (!W->args.wait_in_tile) evt_trace_start(C, W, task);\n#else\n");
        evt_pr(o, "    if (W->args.wait_in_tile) {\n        if (threadIdx.x < 32) {\n");
        evt_pr(o, "            if (EVT_LEADER) evt_trace_taken_at(C, task, 2);\n");
        evt_pr(o, "            if (EVT_LEADER && evt_wait_rec(C, W, ");
        id(o, t, ID_CALL, c->id);
        evt_pr(o, ", R, tgt0)) W->skip = 1;\n            evt_trace_start(C, W, task);\n            __syncwarp();\n        }\n");
        evt_pr(o, "    } else {\n        evt_trace_start(C, W, task);\n    }\n#endif\n");
    } else {
        evt_pr(o, "    evt_trace_start(C, W, task);\n");
    }
    if (tgt == EVT_TARGET_C)
        evt_pr(o, "    ((void (*)(const evt_task_args *))C->tile_fns[%d])(&W->args);\n", cp->op_index);
    else {
        char name[128];
        tile_name(name, sizeof name, p, c);
        evt_pr(o, "    %s(&W->args);\n", name);
    }
    /* (read before the barrier: after it the next task's leader resets W->skip) */
    if (beside) evt_pr(o, "    const int stopped = W->skip; /* its own waits stopped (launch aborted) */\n");
    evt_pr(o, "    EVT_SYNC();\n");
    if (beside) evt_pr(o, "    if (stopped) return;\n");
    evt_pr(o, "    evt_trace_end(C, task); /* before notifies: consumers start after it */\n");
    if (cp->narm) {
        evt_pr(o, "    /* the last task of this call arms the events whose counts depend on its outputs */\n");
        evt_pr(o, "    if (EVT_LEADER) {\n        int64_t n = 1;\n");
        evt_pr(o, "        for (int k = 0; k < %d; k++) n *= X[k];\n", c->rank);
        evt_pr(o, "        W->arm = C->mode != EVT_MODE_KBK && evt_add_acq_rel(&C->arm_done[");
        id(o, t, ID_CALL, c->id);
        evt_pr(o, "], 1) + 1 == n;\n    }\n    EVT_SYNC();\n");
        evt_pr(o, "    if (W->arm) {\n");
        for (int a = 0; a < cp->narm; a++) {
            evt_pr(o, "        evt_arm(C, W, ");
            id(o, t, ID_EVENT, cp->arm[a]);
            evt_pr(o, ");\n");
        }
        evt_pr(o, "    }\n");
    }
    const int nnotify = count_edges(c, EVT_NOTIFY);
    if (has_rec && nnotify) /* a record's notifies need no index checks: another thread may issue them (EVT_REC_NOTIFIER) */
        evt_pr(o, "    if ((R && R->nwait >= 0 ? EVT_REC_NOTIFIER(C) : EVT_LEADER) && C->mode != EVT_MODE_KBK) {\n");
    else
        evt_pr(o, "    if (EVT_LEADER && C->mode != EVT_MODE_KBK) {\n");
    evt_pr(o, "        evt_chaos(C, W); /* chaos: delay before notifies */\n");
    /* a device-scope fence costs ~1.8 us on an H200 (bench/RESULTS.md): only
       a task that publishes something pays it */
    if (nnotify) evt_pr(o, "        evt_notify_fence(); /* one release for all of this task's notifies */\n");
    if (nnotify && has_rec) evt_pr(o, "        if (R && R->nwait >= 0) evt_notify_rec(C, W, R); /* the record's notifies */\n        else {\n");
    for (int k = 0; k < c->nedges; k++) {
        const evt_edge *e = &c->edges[k];
        if (e->kind != EVT_NOTIFY) continue;
        int ev = e->event->id;
        evt_pr(o, "      { /* notify */\n");
        open_fors(o, c, e, "        ", t);
        elem_of(o, c, e, "        ", "return;", 1, t);
        if (p->ev[ev].ntrigger_consumers) {
            evt_pr(o, "        if (evt_signal(C, W, elem, 1)) evt_trig(C, W, ");
            id(o, t, ID_EVENT, ev);
            evt_pr(o, ", elem - C->ev_base[");
            id(o, t, ID_EVENT, ev);
            evt_pr(o, "]);\n");
        } else {
            evt_pr(o, "        evt_signal(C, W, elem, 1);\n");
        }
        close_fors(o, e, "        ");
        evt_pr(o, "      }\n");
    }
    if (nnotify && has_rec) evt_pr(o, "        }\n");
    evt_pr(o, "        evt_trace_notified(C, task);\n    }\n}\n\n");
}

/* Whether call c's record-driven tasks can take the shared record path
 * (evt_run_rec, src/device/evt_rec_run.h): the call has records, and its
 * template's record path does nothing the table cannot say (no weight
 * stream, no prefetch hook, no arming, integer arguments that are constants
 * or symbols). */
static int rec_generic(const evt_plan *p, const evt_call *c, evt_target tgt)
{
    const evt_call_plan *cp = &p->call[c->id];
    if (!evt_call_has_records(p, c) || cp->narm || !cp->decl) return 0;
    if ((tgt == EVT_TARGET_CUDA && cp->streams) || runs_prefetch_hook(p, c, tgt)) return 0;
    int nt = 0, ni = 0;
    for (int a = 0; a < c->nargs; a++) {
        if (c->args[a].kind == EVT_ARG_TENSOR) nt++;
        else if (c->args[a].value->op != EVT_E_CONST && c->args[a].value->op != EVT_E_SYM) return 0;
        else ni++;
    }
    return nt <= EVT_ABI_MAX_TENSORS && ni <= EVT_ABI_MAX_INTS;
}
_Static_assert(EVT_ABI_MAX_INTS <= 8, "evt_rec_call.sym_mask has a bit per integer argument");

/* evt_rec_calls (a row per call: what evt_run_rec reads), evt_rec_tile (the
 * tiles by index) and the shared record path itself. */
static void emit_rec_path(evt_printer *o, const evt_plan *p, evt_target tgt)
{
    const evt_graph *g = p->g;
    int nc = g->ncalls, ntile = 0;
    char (*tiles)[128] = calloc(nc + 1, sizeof *tiles);
    if (!tiles) return;
    evt_pr(o, "EVT_CONST_TABLE evt_rec_call evt_rec_calls[%d] = { /* the shared record path's rows (evt_rec_run.h) */\n", nc + 1);
    for (int ci = 0; ci < nc; ci++) {
        const evt_call *c = g->calls[ci];
        const evt_call_plan *cp = &p->call[ci];
        int gen = rec_generic(p, c, tgt), tile = 0;
        if (gen && tgt == EVT_TARGET_CUDA) {
            char name[128];
            tile_name(name, sizeof name, p, c);
            for (tile = 0; tile < ntile && strcmp(tiles[tile], name); tile++) {}
            if (tile == ntile) memcpy(tiles[ntile++], name, sizeof name);
        } else if (gen) {
            tile = cp->op_index;
        }
        const int nwaits = count_edges(c, EVT_WAIT), nnotify = count_edges(c, EVT_NOTIFY);
        int nt = 0, ni = 0, sym = 0;
        int flags = (nwaits ? EVT_RECF_WAITS : 0) | (nwaits && tgt == EVT_TARGET_CUDA && cp->early_loads ? EVT_RECF_BESIDE : 0) |
                    (nnotify ? EVT_RECF_NOTIFIES : 0);
        evt_pr(o, "    {%d, %d, ", gen, c->rank);
        char tens[256] = "", ints[512] = "";
        size_t tl = 0, il = 0;
        for (int a = 0; gen && a < c->nargs; a++) {
            if (c->args[a].kind == EVT_ARG_TENSOR) {
                tl += (size_t)snprintf(tens + tl, sizeof tens - tl, "%s%d", nt++ ? ", " : "", c->args[a].tensor->id);
            } else {
                const evt_expr *e = c->args[a].value;
                if (e->op == EVT_E_SYM) sym |= 1 << ni;
                il += (size_t)snprintf(ints + il, sizeof ints - il, "%sINT64_C(%lld)", ni++ ? ", " : "",
                                       e->op == EVT_E_SYM ? (long long)e->sym->id : (long long)e->value);
            }
        }
        evt_pr(o, "%d, %d, %d, %d, %d, {%s}, {%s}}, /* %s */\n", nt, ni, flags, sym, tile, nt ? tens : "0", ni ? ints : "0",
               c->name);
    }
    evt_pr(o, "    {0, 0, 0, 0, 0, 0, 0, {0}, {0}}};\n\n");
    evt_pr(o, "/* the tiles of the calls above by evt_rec_calls[].tile */\n");
    evt_pr(o, "EVT_DEV void evt_rec_tile(const evt_ctx *C, int tile, const evt_task_args *A)\n{\n");
    if (tgt == EVT_TARGET_C) {
        evt_pr(o, "    ((void (*)(const evt_task_args *))C->tile_fns[tile])(A);\n");
    } else {
        evt_pr(o, "    (void)C;\n    switch (tile) {\n");
        for (int k = 0; k < ntile; k++) evt_pr(o, "    case %d: %s(A); break;\n", k, tiles[k]);
        evt_pr(o, "    default: break;\n    }\n");
    }
    evt_pr(o, "}\n\n#include \"device/evt_rec_run.h\"\n\n");
    free(tiles);
}

/* One function per distinct call body; calls[i] -> template tpl[i] and its
 * id row (offset off[i] in one constant table). */
static void emit_calls(evt_printer *o, const evt_plan *p, evt_target tgt)
{
    const evt_graph *g = p->g;
    int nc = g->ncalls, ntpl = 0;
    char **bodies = calloc(nc + 1, sizeof *bodies);
    int *tpl = calloc(nc + 1, sizeof *tpl), *off = calloc(nc + 2, sizeof *off), *rows = NULL, nrows = 0;
    ids *t = calloc(1, sizeof *t);
    if (!bodies || !tpl || !off || !t) {
        free(bodies); free(tpl); free(off); free(t);
        return;
    }
    emit_rec_path(o, p, tgt);
    for (int c = 0; c < nc; c++) {
        memset(t, 0, sizeof *t);
        t->slots = 1;
        evt_printer b = {0};
        emit_call_body(&b, p, g->calls[c], tgt, t);
        int found = -1;
        for (int k = 0; k < ntpl && found < 0; k++) if (!strcmp(bodies[k], b.buf)) found = k;
        if (found < 0) {
            found = ntpl;
            bodies[ntpl++] = b.buf;
            evt_pr(o, "/* template %d: first used by call %s = %s */\n", found, g->calls[c]->name, g->calls[c]->op);
            evt_pr(o, "EVT_NOINLINE void evt_tpl_%d(const evt_ctx *C, evt_worker *W, int64_t lin, const int64_t *qext, "
                      "const int32_t *I, const evt_task_rec *R)\n%s", found, b.buf);
        } else {
            evt_pr_free(&b);
        }
        tpl[c] = found;
        off[c] = nrows;
        int *r = realloc(rows, (nrows + t->n + 1) * sizeof *rows);
        if (!r) break;
        rows = r;
        for (int k = 0; k < t->n; k++) rows[nrows++] = t->value[k];
    }
    /* the id rows of every call, in one constant table */
    int padded = (nrows + 1 + 3) / 4 * 4; /* whole 16-byte pieces (the GPU copies them) */
    evt_pr(o, "EVT_CONST_TABLE int32_t evt_call_ids[%d] = {", padded);
    for (int k = 0; k < nrows; k++) evt_pr(o, "%s%d", !k ? "\n    " : k % 16 ? ", " : ",\n    ", rows[k]);
    evt_pr(o, "%s0};\n\n", nrows ? ", " : "");
    evt_pr(o, "EVT_DEV void evt_dispatch(const evt_ctx *C, evt_worker *W, int call, int64_t lin, const int64_t *qext, "
              "const evt_task_rec *R)\n{\n");
    /* a record with its lists: the shared record path, unless the call is
       not generic or dynamic workers push early (the templates do that) */
    evt_pr(o, "    if (R && R->nwait >= 0 && evt_rec_calls[call].generic && !(C->early_push && C->mode == EVT_MODE_DYNAMIC)) {\n");
    evt_pr(o, "        evt_run_rec(C, W, call, R);\n        return;\n    }\n");
    evt_pr(o, "    const int32_t *ids = C->ids ? C->ids : evt_call_ids; /* the GPU's shared-memory copy, if any */\n");
    evt_pr(o, "    switch (call) { /* %d calls share %d templates */\n", nc, ntpl);
    for (int c = 0; c < nc; c++)
        evt_pr(o, "    case %d: evt_tpl_%d(C, W, lin, qext, ids + %d, R); break;\n", c, tpl[c], off[c]);
    evt_pr(o, "    default: break;\n    }\n}\n\n");
    for (int k = 0; k < ntpl; k++) free(bodies[k]);
    free(bodies); free(tpl); free(off); free(rows); free(t);
}

/* evt_arm / evt_trig: by event id, for the templates */
static void emit_event_switches(evt_printer *o, const evt_plan *p)
{
    const evt_graph *g = p->g;
    evt_pr(o, "EVT_NOINLINE void evt_arm(const evt_ctx *C, evt_worker *W, int ev)\n{\n    switch (ev) {\n");
    for (int ev = 0; ev < g->nevents; ev++)
        if (p->ev[ev].kind == EVT_COUNT_DATA) evt_pr(o, "    case %d: evt_arm_%d(C, W); break;\n", ev, ev);
    evt_pr(o, "    default: (void)C; (void)W; break;\n    }\n}\n\n");
}

evt_status evt_emit_program(const evt_plan *p, evt_printer *o, evt_target tgt, evt_diag *d)
{
    const evt_graph *g = p->g;
    for (int c = 0; c < g->ncalls; c++)
        if (!p->call[c].decl)
            return evt_diag_error(d, EVT_ERR_VERIFY, g->calls[c]->loc, "call %s: unknown operator %s", g->calls[c]->name, g->calls[c]->op);
    evt_pr(o, "/* Generated by evtc: the persistent megakernel of one Event Tensor program.\n");
    evt_pr(o, " * %d calls, %d events, %d tensors. Do not edit; regenerate. */\n", g->ncalls, g->nevents, g->ntensors);
    evt_pr(o, "#define EVT_INPUT_ARMING %d /* the launch arms data-dependent events first */\n", p->narm_inputs > 0);
    if (tgt == EVT_TARGET_CUDA && p->nstreams) /* the weight stream: the leaders' pumps and a ring in dynamic shared memory */
        evt_pr(o, "#define EVT_STREAM 1 /* %d calls stream their weights (device/evt_stream.h) */\n", p->nstreams);
    if (tgt == EVT_TARGET_CUDA && p->cuda_defines) /* tile options (evt_compile_opts.cuda_defines) */
        for (const char *c = p->cuda_defines; *c;) {
            if (*c == ' ') { c++; continue; }
            int n = (int)strcspn(c, " "), eq = (int)strcspn(c, "=");
            if (eq < n) evt_pr(o, "#define %.*s %.*s /* cuda_defines */\n", eq, c, n - eq - 1, c + eq + 1);
            else evt_pr(o, "#define %.*s 1 /* cuda_defines */\n", n, c);
            c += n;
        }
    evt_pr(o, "#include \"device/evt_device.h\"\n");
    if (tgt == EVT_TARGET_CUDA) evt_pr(o, "#include \"device/evt_stream.h\"\n");
    if (tgt == EVT_TARGET_CUDA) {
        for (int i = 0; i < p->nops; i++) {
            int seen = 0;
            for (int j = 0; j < i; j++) seen |= !strcmp(p->ops[j]->cuda_header, p->ops[i]->cuda_header);
            if (!seen) evt_pr(o, "#include \"%s\"\n", p->ops[i]->cuda_header);
        }
    }
    evt_pr(o, "#include \"device/evt_maps.h\"\n\n");
    emit_trigger_credit(o, p);
    for (int ev = 0; ev < g->nevents; ev++)
        if (p->ev[ev].kind == EVT_COUNT_DATA) emit_arm(o, p, ev);
    emit_event_switches(o, p);
    emit_calls(o, p, tgt);
    evt_pr(o, "EVT_DEV void evt_arm_inputs(const evt_ctx *C, evt_worker *W)\n{\n    (void)C; (void)W;\n");
    for (int i = 0; i < p->narm_inputs; i++) evt_pr(o, "    evt_arm(C, W, %d);\n", p->arm_inputs[i]);
    evt_pr(o, "}\n\n");
    evt_pr(o, "#include \"device/evt_loop.h\"\n\n");
    return EVT_OK;
}
