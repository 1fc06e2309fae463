/* graph.c — building an evt_graph: symbols, tensors, events, calls, edges;
 * lookup by name; deep copy; dtype and role names. */
#include <stdlib.h>
#include <string.h>
#include "evt/ir.h"
#include "ir/arena.h"

evt_graph *evt_graph_new(void)
{
    evt_graph *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->arena = (struct evt_arena *)evt_arena_new();
    if (!g->arena) { free(g); return NULL; }
    return g;
}

void evt_graph_free(evt_graph *g)
{
    if (!g) return;
    free(g->syms); free(g->tensors); free(g->events); free(g->calls);
    for (int i = 0; i < g->ncalls; i++) (void)0;
    evt_arena_free((evt_arena *)g->arena);
    free(g);
}

void *evt_graph_alloc(evt_graph *g, size_t bytes)
{
    void *p = evt_arena_alloc((evt_arena *)g->arena, bytes);
    if (!p) abort(); /* out of memory in the arena: internal invariant */
    return p;
}

const char *evt_graph_strdup(evt_graph *g, const char *s)
{
    size_t n = strlen(s);
    char *d = evt_graph_alloc(g, n + 1);
    memcpy(d, s, n + 1);
    return d;
}

static void push(void ***arr, int *n, int *cap, void *x)
{
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 8;
        void **t = realloc(*arr, c * sizeof(void *));
        if (!t) abort();
        *arr = t; *cap = c;
    }
    (*arr)[(*n)++] = x;
}

evt_sym *evt_sym_new(evt_graph *g, const char *name, int64_t def)
{
    evt_sym *s = evt_graph_alloc(g, sizeof *s);
    s->id = g->nsyms; s->name = evt_graph_strdup(g, name); s->def = def;
    s->lo = 1; s->hi = INT64_MAX / 2;
    push((void ***)&g->syms, &g->nsyms, &g->caps[0], s);
    return s;
}

void evt_sym_set_bounds(evt_sym *s, int64_t lo, int64_t hi) { s->lo = lo; s->hi = hi; }

void evt_sym_set_buckets(evt_sym *s, int n, const int64_t *values)
{
    if (n > EVT_MAX_BUCKETS) n = EVT_MAX_BUCKETS;
    s->nbuckets = n;
    for (int i = 0; i < n; i++) s->buckets[i] = values[i];
}

evt_tensor *evt_tensor_new(evt_graph *g, const char *name, evt_dtype t, evt_role role,
                           int rank, evt_expr *const *shape)
{
    evt_tensor *x = evt_graph_alloc(g, sizeof *x);
    x->id = g->ntensors; x->name = evt_graph_strdup(g, name);
    x->dtype = t; x->role = role;
    x->rank = rank > EVT_MAX_RANK ? EVT_MAX_RANK : rank;
    for (int i = 0; i < x->rank; i++) x->shape[i] = shape[i];
    push((void ***)&g->tensors, &g->ntensors, &g->caps[1], x);
    return x;
}

evt_event *evt_event_new(evt_graph *g, const char *name, int rank, evt_expr *const *shape)
{
    evt_event *e = evt_graph_alloc(g, sizeof *e);
    e->id = g->nevents; e->name = evt_graph_strdup(g, name);
    e->rank = rank > EVT_MAX_RANK ? EVT_MAX_RANK : rank;
    for (int i = 0; i < e->rank; i++) e->shape[i] = shape[i];
    push((void ***)&g->events, &g->nevents, &g->caps[2], e);
    return e;
}

evt_call *evt_call_new(evt_graph *g, const char *name, const char *op,
                       int rank, const char *const *var_names, evt_expr *const *grid)
{
    evt_call *c = evt_graph_alloc(g, sizeof *c);
    c->id = g->ncalls; c->name = evt_graph_strdup(g, name); c->op = evt_graph_strdup(g, op);
    c->rank = rank > EVT_MAX_RANK ? EVT_MAX_RANK : rank;
    for (int i = 0; i < c->rank; i++) {
        char buf[16];
        if (!var_names || !var_names[i]) snprintf(buf, sizeof buf, "c%d", i);
        c->var_name[i] = evt_graph_strdup(g, var_names && var_names[i] ? var_names[i] : buf);
        c->grid[i] = grid[i];
    }
    c->cost = 1;
    push((void ***)&g->calls, &g->ncalls, &g->caps[3], c);
    return c;
}

void evt_call_add_tensor_arg(evt_call *c, evt_tensor *t)
{
    if (c->nargs >= EVT_MAX_ARGS) return;
    evt_arg *a = &c->args[c->nargs++];
    a->kind = EVT_ARG_TENSOR; a->tensor = t;
}

void evt_call_add_int_arg(evt_call *c, evt_expr *value)
{
    if (c->nargs >= EVT_MAX_ARGS) return;
    evt_arg *a = &c->args[c->nargs++];
    a->kind = EVT_ARG_INT; a->value = value;
}

static evt_edge *new_edge(evt_graph *g, evt_call *c)
{
    if (c->nedges == c->edges_cap) {
        int cap = c->edges_cap ? c->edges_cap * 2 : 4;
        evt_edge *e = evt_graph_alloc(g, cap * sizeof *e);
        if (c->nedges) memcpy(e, c->edges, c->nedges * sizeof *e);
        c->edges = e; c->edges_cap = cap;
    }
    evt_edge *e = &c->edges[c->nedges++];
    memset(e, 0, sizeof *e);
    return e;
}

evt_edge *evt_call_add_edge(evt_graph *g, evt_call *c, evt_edge_kind kind, evt_event *ev,
                            int nidx, evt_expr *const *idx)
{
    evt_edge *e = new_edge(g, c);
    e->kind = kind; e->event = ev;
    e->nidx = nidx > EVT_MAX_RANK ? EVT_MAX_RANK : nidx;
    for (int i = 0; i < e->nidx; i++) e->idx[i] = idx[i];
    return e;
}

void evt_edge_add_for(evt_graph *g, evt_edge *e, const char *name, evt_expr *extent)
{
    if (e->nfor >= EVT_MAX_FOR) return;
    e->for_name[e->nfor] = evt_graph_strdup(g, name);
    e->for_ext[e->nfor] = extent;
    e->nfor++;
}

evt_edge *evt_call_add_trigger_wait(evt_graph *g, evt_call *c, evt_event *ev, evt_tensor *indptr)
{
    evt_edge *e = new_edge(g, c);
    e->kind = EVT_WAIT; e->event = ev; e->trigger = indptr;
    return e;
}

#define FIND(T, arr, n) \
    for (int i = 0; i < g->n; i++) if (!strcmp(g->arr[i]->name, name)) return g->arr[i]; \
    return NULL;
evt_sym *evt_graph_find_sym(const evt_graph *g, const char *name) { FIND(evt_sym, syms, nsyms) }
evt_tensor *evt_graph_find_tensor(const evt_graph *g, const char *name) { FIND(evt_tensor, tensors, ntensors) }
evt_event *evt_graph_find_event(const evt_graph *g, const char *name) { FIND(evt_event, events, nevents) }
evt_call *evt_graph_find_call(const evt_graph *g, const char *name) { FIND(evt_call, calls, ncalls) }

/* ---- deep copy ---- */

static evt_expr *clone_expr(evt_graph *d, const evt_expr *e)
{
    if (!e) return NULL;
    evt_expr *x = evt_graph_alloc(d, sizeof *x);
    *x = *e;
    if (e->sym) x->sym = d->syms[e->sym->id];
    if (e->tensor) x->tensor = d->tensors[e->tensor->id];
    for (int i = 0; i < e->nargs; i++) x->a[i] = clone_expr(d, e->a[i]);
    return x;
}

evt_graph *evt_graph_clone(const evt_graph *g)
{
    evt_graph *d = evt_graph_new();
    if (!d) return NULL;
    for (int i = 0; i < g->nsyms; i++) {
        evt_sym *s = evt_sym_new(d, g->syms[i]->name, g->syms[i]->def);
        const char *nm = s->name; int id = s->id;
        *s = *g->syms[i]; s->name = nm; s->id = id;
    }
    for (int i = 0; i < g->ntensors; i++) {
        const evt_tensor *t = g->tensors[i];
        evt_tensor *x = evt_tensor_new(d, t->name, t->dtype, t->role, 0, NULL);
        x->rank = t->rank; x->init = t->init; x->loc = t->loc;
        if (t->init.path) x->init.path = evt_graph_strdup(d, t->init.path);
    }
    for (int i = 0; i < g->ntensors; i++)
        for (int k = 0; k < g->tensors[i]->rank; k++)
            d->tensors[i]->shape[k] = clone_expr(d, g->tensors[i]->shape[k]);
    for (int i = 0; i < g->nevents; i++) {
        const evt_event *e = g->events[i];
        evt_event *x = evt_event_new(d, e->name, 0, NULL);
        x->rank = e->rank; x->loc = e->loc; x->count = clone_expr(d, e->count);
        for (int k = 0; k < e->rank; k++) x->shape[k] = clone_expr(d, e->shape[k]);
    }
    for (int i = 0; i < g->ncalls; i++) {
        const evt_call *c = g->calls[i];
        evt_expr *grid[EVT_MAX_RANK];
        for (int k = 0; k < c->rank; k++) grid[k] = clone_expr(d, c->grid[k]);
        evt_call *x = evt_call_new(d, c->name, c->op, c->rank, c->var_name, grid);
        x->cost = c->cost; x->prefetch = c->prefetch; x->policy = c->policy; x->loc = c->loc;
        for (int a = 0; a < c->nargs; a++) {
            x->args[a] = c->args[a];
            if (c->args[a].tensor) x->args[a].tensor = d->tensors[c->args[a].tensor->id];
            x->args[a].value = clone_expr(d, c->args[a].value);
        }
        x->nargs = c->nargs;
        for (int k = 0; k < c->nedges; k++) {
            const evt_edge *e = &c->edges[k];
            evt_edge *y = new_edge(d, x);
            *y = *e;
            y->event = d->events[e->event->id];
            for (int j = 0; j < e->nidx; j++) y->idx[j] = clone_expr(d, e->idx[j]);
            for (int j = 0; j < e->nfor; j++) {
                y->for_name[j] = evt_graph_strdup(d, e->for_name[j]);
                y->for_ext[j] = clone_expr(d, e->for_ext[j]);
            }
            if (e->trigger) y->trigger = d->tensors[e->trigger->id];
        }
    }
    return d;
}

/* ---- names ---- */

static const char *dtype_names[EVT_NDTYPES] = {"f32", "bf16", "f16", "i32", "i64", "u8"};
static const int dtype_sizes[EVT_NDTYPES] = {4, 2, 2, 4, 8, 1};

const char *evt_dtype_name(evt_dtype t) { return (unsigned)t < EVT_NDTYPES ? dtype_names[t] : "?"; }
int evt_dtype_size(evt_dtype t) { return (unsigned)t < EVT_NDTYPES ? dtype_sizes[t] : 0; }
int evt_dtype_parse(const char *s, evt_dtype *out)
{
    for (int i = 0; i < EVT_NDTYPES; i++)
        if (!strcmp(s, dtype_names[i])) { *out = (evt_dtype)i; return 1; }
    return 0;
}

const char *evt_role_name(evt_role r)
{
    static const char *n[] = {"input", "output", "weight", "scratch"};
    return (unsigned)r < 4 ? n[r] : "?";
}
