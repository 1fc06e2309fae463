/* printer.c — evt_graph to normalised .evt text.
 *
 * Normal form: symbols, tensors, events, calls, each group in declaration
 * order and separated by one blank line; one declaration per line; canonical
 * spacing; defaults left out (sym bounds equal to the no-`in` default, cost 1,
 * policy auto, no count); random initialisers always spelled out in full;
 * doubles printed with %.17g so they read back exactly. The parser reads this
 * form back to an identical graph, so printing is idempotent. */
#include <inttypes.h>
#include <stdint.h>
#include "evt/front.h"

static void pr_expr(evt_printer *p, const evt_expr *e, const char *const *names)
{
    if (!e) { evt_pr(p, "?"); return; }
    evt_expr_print(p, e, names);
}

static void pr_list(evt_printer *p, int n, evt_expr *const *xs, const char *const *names)
{
    evt_pr(p, "[");
    for (int i = 0; i < n; i++) {
        if (i) evt_pr(p, ", ");
        pr_expr(p, xs[i], names);
    }
    evt_pr(p, "]");
}

static void pr_string(evt_printer *p, const char *s)
{
    evt_pr(p, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') evt_pr(p, "\\%c", *c);
        else if (*c == '\n') evt_pr(p, "\\n");
        else if (*c == '\t') evt_pr(p, "\\t");
        else if (*c < 0x20 || *c >= 0x7f) evt_pr(p, "\\x%02x", *c);
        else evt_pr(p, "%c", *c);
    }
    evt_pr(p, "\"");
}

static void pr_init(evt_printer *p, const evt_init *in)
{
    switch (in->kind) {
    case EVT_INIT_NONE: return;
    case EVT_INIT_ZEROS: evt_pr(p, " = zeros"); return;
    case EVT_INIT_RANGE: evt_pr(p, " = range"); return;
    case EVT_INIT_CONST: evt_pr(p, " = const(%.17g)", in->value); return;
    case EVT_INIT_ROPE: evt_pr(p, " = rope(theta=%.17g)", in->value); return;
    case EVT_INIT_RANDOM:
        evt_pr(p, " = random(seed=%" PRIu64 ", lo=%.17g, hi=%.17g)", in->seed, in->lo, in->hi);
        return;
    case EVT_INIT_FILE:
        evt_pr(p, " = file(");
        pr_string(p, in->path ? in->path : "");
        evt_pr(p, ")");
        return;
    }
}

static void pr_sym(evt_printer *p, const evt_sym *s)
{
    evt_pr(p, "sym %s = %lld", s->name, (long long)s->def);
    if (s->lo != 1 || s->hi != INT64_MAX / 2)
        evt_pr(p, " in [%lld, %lld]", (long long)s->lo, (long long)s->hi);
    if (s->nbuckets > 0) {
        evt_pr(p, " buckets [");
        for (int i = 0; i < s->nbuckets && i < EVT_MAX_BUCKETS; i++)
            evt_pr(p, "%s%lld", i ? ", " : "", (long long)s->buckets[i]);
        evt_pr(p, "]");
    }
    evt_pr(p, "\n");
}

static void pr_tensor(evt_printer *p, const evt_tensor *t)
{
    evt_pr(p, "tensor %s : %s", t->name, evt_dtype_name(t->dtype));
    pr_list(p, t->rank, t->shape, NULL);
    evt_pr(p, " %s", evt_role_name(t->role));
    pr_init(p, &t->init);
    evt_pr(p, "\n");
}

static void pr_event(evt_printer *p, const evt_event *e)
{
    static const char *const coord[EVT_MAX_RANK] = {"e0", "e1", "e2", "e3"};
    evt_pr(p, "event %s", e->name);
    pr_list(p, e->rank, e->shape, NULL);
    if (e->count) {
        evt_pr(p, " count = ");
        pr_expr(p, e->count, coord);
    }
    evt_pr(p, "\n");
}

static void pr_edge(evt_printer *p, const evt_call *c, const evt_edge *e)
{
    evt_pr(p, "    %s %s", e->kind == EVT_WAIT ? "wait" : "notify", e->event ? e->event->name : "?");
    if (e->trigger) {
        evt_pr(p, " trigger %s\n", e->trigger->name);
        return;
    }
    const char *names[EVT_MAX_RANK + EVT_MAX_FOR];
    for (int k = 0; k < c->rank; k++) names[k] = c->var_name[k];
    for (int f = 0; f < e->nfor && f < EVT_MAX_FOR; f++) names[c->rank + f] = e->for_name[f];
    pr_list(p, e->nidx, e->idx, names);
    for (int f = 0; f < e->nfor && f < EVT_MAX_FOR; f++) {
        evt_pr(p, "%s%s in [", f ? ", " : " for ", e->for_name[f]);
        pr_expr(p, e->for_ext[f], names);
        evt_pr(p, "]");
    }
    evt_pr(p, "\n");
}

static void pr_call(evt_printer *p, const evt_call *c)
{
    evt_pr(p, "call %s = %s(", c->name, c->op);
    for (int i = 0; i < c->nargs; i++) {
        if (i) evt_pr(p, ", ");
        const evt_arg *a = &c->args[i];
        if (a->kind == EVT_ARG_TENSOR) evt_pr(p, "%s", a->tensor ? a->tensor->name : "?");
        else pr_expr(p, a->value, NULL);
    }
    evt_pr(p, ") over (");
    for (int k = 0; k < c->rank; k++) evt_pr(p, "%s%s", k ? ", " : "", c->var_name[k]);
    evt_pr(p, ") in ");
    pr_list(p, c->rank, c->grid, c->var_name);
    if (c->cost != 1) evt_pr(p, " cost %lld", (long long)c->cost);
    if (c->prefetch) evt_pr(p, " prefetch");
    if (c->policy == EVT_POLICY_STATIC) evt_pr(p, " policy static");
    else if (c->policy == EVT_POLICY_DYNAMIC) evt_pr(p, " policy dynamic");
    evt_pr(p, " {\n");
    for (int k = 0; k < c->nedges; k++) pr_edge(p, c, &c->edges[k]);
    evt_pr(p, "}\n");
}

void evt_print_graph(evt_printer *p, const evt_graph *g)
{
    int groups = 0;
    if (g->nsyms) {
        groups++;
        for (int i = 0; i < g->nsyms; i++) pr_sym(p, g->syms[i]);
    }
    if (g->ntensors) {
        if (groups++) evt_pr(p, "\n");
        for (int i = 0; i < g->ntensors; i++) pr_tensor(p, g->tensors[i]);
    }
    if (g->nevents) {
        if (groups++) evt_pr(p, "\n");
        for (int i = 0; i < g->nevents; i++) pr_event(p, g->events[i]);
    }
    if (g->ncalls) {
        if (groups++) evt_pr(p, "\n");
        for (int i = 0; i < g->ncalls; i++) pr_call(p, g->calls[i]);
    }
}
