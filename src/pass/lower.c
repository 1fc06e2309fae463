/* lower.c — the compile pipeline and the lowering to a plan.
 *
 *   verify -> fuse_events -> lower (ops, trigger edges) -> infer_counts
 *          -> armers of data-dependent events -> checks at the default shape
 *             (map bounds, declared counts, task-level cycles)
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "pass/taskgraph.h"

/* The single call that writes every tensor a data-dependent count depends on. */
static evt_status find_armers(evt_plan *p, evt_diag *d)
{
    evt_graph *g = p->g;
    evt_status st = EVT_OK;
    int *arm_count = calloc(g->ncalls + 1, sizeof(int));
    for (int ev = 0; ev < g->nevents; ev++) {
        evt_event_plan *ep = &p->ev[ev];
        if (ep->kind != EVT_COUNT_DATA) continue;
        const evt_tensor *deps[32]; int nd = 0;
        for (int c = 0; c < g->ncalls; c++) {
            const evt_call *call = g->calls[c];
            for (int k = 0; k < call->nedges; k++) {
                const evt_edge *e = &call->edges[k];
                if (e->event->id != ev) continue;
                if (e->kind == EVT_WAIT) { if (e->trigger && nd < 32) deps[nd++] = e->trigger; continue; }
                for (int i = 0; i < e->nidx; i++) evt_expr_loads(e->idx[i], deps, &nd, 32);
                if (p->call[c].trigger_edge >= 0 && nd < 32) deps[nd++] = call->edges[p->call[c].trigger_edge].trigger;
            }
        }
        int armer = EVT_ARMER_INPUTS;
        for (int i = 0; i < nd; i++)
            for (int c = 0; c < g->ncalls; c++) {
                if (!evt_call_writes(g->calls[c], deps[i])) continue;
                if (armer != EVT_ARMER_INPUTS && armer != c) {
                    st = evt_diag_error(d, EVT_ERR_VERIFY, g->events[ev]->loc,
                                        "event %s: its count depends on tensors written by calls %s and %s; "
                                        "one call must produce all index tensors of a data-dependent event",
                                        g->events[ev]->name, g->calls[armer]->name, g->calls[c]->name);
                    continue;
                }
                armer = c;
            }
        if (armer >= 0 && p->call[armer].trigger_edge >= 0)
            st = evt_diag_error(d, EVT_ERR_VERIFY, g->calls[armer]->loc,
                                "call %s arms data-dependent event %s but has a data-dependent grid itself",
                                g->calls[armer]->name, g->events[ev]->name);
        if (g->events[ev]->count)
            st = evt_diag_error(d, EVT_ERR_VERIFY, g->events[ev]->loc,
                                "event %s: a declared count is not allowed on a data-dependent event (it is computed at run time)",
                                g->events[ev]->name);
        ep->armer = armer;
        if (armer >= 0) arm_count[armer]++;
        else p->narm_inputs++;
    }
    p->arm_inputs = calloc(p->narm_inputs + 1, sizeof(int));
    int ni = 0;
    for (int c = 0; c < g->ncalls; c++) p->call[c].arm = calloc(arm_count[c] + 1, sizeof(int));
    for (int ev = 0; ev < g->nevents; ev++) {
        if (p->ev[ev].kind != EVT_COUNT_DATA) continue;
        int a = p->ev[ev].armer;
        if (a >= 0) p->call[a].arm[p->call[a].narm++] = ev;
        else p->arm_inputs[ni++] = ev;
    }
    free(arm_count);
    return st;
}

/* 1 if the tensors of call c's operator's stream_params (its weights) are
   weights or inputs of the program: nothing in a launch writes them, so
   they may be read before the call's waits */
static int weights_are_inputs(const evt_call_plan *cp, const evt_call *c)
{
    if (!cp->decl || !cp->decl->stream_params) return 0;
    for (int i = 0; i < c->nargs && i < (int)(8 * sizeof cp->decl->stream_params); i++) {
        if (!(cp->decl->stream_params >> i & 1u)) continue;
        const evt_arg *a = &c->args[i];
        if (a->kind != EVT_ARG_TENSOR || (a->tensor->role != EVT_WEIGHT && a->tensor->role != EVT_INPUT)) return 0;
    }
    return 1;
}

/* 1 if the tensors of call c's operator's early_params are written by no
   other call of the program: the operator reads, before its waits, only
   elements its own call's tasks do not write in the launch (its
   declaration's promise), so no other task may write them either */
static int early_params_own(const evt_graph *g, const evt_call_plan *cp, const evt_call *c)
{
    for (int i = 0; i < c->nargs && i < (int)(8 * sizeof cp->decl->early_params); i++) {
        if (!(cp->decl->early_params >> i & 1u)) continue;
        const evt_arg *a = &c->args[i];
        if (a->kind != EVT_ARG_TENSOR) return 0;
        for (int k = 0; k < g->ncalls; k++) {
            const evt_call *o = g->calls[k];
            const evt_tile_decl *d = o == c ? NULL : evt_tile_find(o->op);
            for (int j = 0; o != c && j < o->nargs; j++)
                if (o->args[j].kind == EVT_ARG_TENSOR && o->args[j].tensor == a->tensor &&
                    (!d || j >= d->nparams || d->params[j].mode != EVT_PARAM_IN))
                    return 0;
        }
    }
    return 1;
}

int evt_call_streams(const evt_plan *p, const evt_call *c)
{
    const evt_call_plan *cp = &p->call[c->id];
    if (!p->stream_weights || !c->prefetch || !cp->decl || !cp->decl->stream_plan || cp->trigger_edge >= 0) return 0;
    return weights_are_inputs(cp, c);
}

int evt_call_early_loads(const evt_plan *p, const evt_call *c)
{
    const evt_call_plan *cp = &p->call[c->id];
    /* a kernel built with the weight stream runs no early form: the stream takes the prefetch calls */
    if (!p->early_loads || p->stream_weights || !c->prefetch || !cp->decl || !cp->decl->waits_in_tile || cp->trigger_edge >= 0 ||
        cp->streams)
        return 0;
    return weights_are_inputs(cp, c) && early_params_own(p->g, cp, c);
}

evt_status evt_lower(evt_plan *p, evt_diag *d)
{
    evt_graph *g = p->g;
    p->ops = calloc(g->ncalls + 1, sizeof(*p->ops));
    for (int c = 0; c < g->ncalls; c++) {
        evt_call_plan *cp = &p->call[c];
        cp->decl = evt_tile_find(g->calls[c]->op);
        cp->trigger_edge = -1;
        for (int k = 0; k < g->calls[c]->nedges; k++)
            if (g->calls[c]->edges[k].trigger) cp->trigger_edge = k;
        int found = -1;
        for (int o = 0; o < p->nops; o++) if (p->ops[o] == cp->decl) found = o;
        if (found < 0) { found = p->nops; p->ops[p->nops++] = cp->decl; }
        cp->op_index = found;
    }
    for (int c = 0; c < g->ncalls; c++) {
        p->nstreams += p->call[c].streams = evt_call_streams(p, g->calls[c]);
        p->call[c].early_loads = evt_call_early_loads(p, g->calls[c]);
    }
    evt_infer_counts(p);
    return find_armers(p, d);
}

/* Declared counts must match what the notify maps produce (default shape). */
static evt_status check_declared_counts(const evt_plan *p, const evt_shape *s, const evt_taskgraph *tg, evt_diag *d)
{
    const evt_graph *g = p->g;
    evt_status st = EVT_OK;
    evt_eval_env env = {.sym = s->sym};
    for (int ev = 0; ev < g->nevents; ev++) {
        const evt_event *e = g->events[ev];
        if (!e->count || p->ev[ev].kind != EVT_COUNT_STATIC) continue;
        for (int64_t x = s->ev_base[ev]; x < s->ev_base[ev + 1]; x++) {
            int64_t idx[EVT_MAX_RANK] = {0};
            evt_shape_decode(&s->ev_dim[ev * 4], e->rank, x - s->ev_base[ev], idx);
            env.var = idx;
            int err = 0;
            int64_t declared = evt_expr_eval(e->count, &env, &err);
            int64_t actual = tg->npred[tg->ntasks + x];
            if (actual != declared) {
                st = evt_diag_error(d, EVT_ERR_VERIFY, e->loc,
                                    "event %s: declared count %lld but element %lld receives %lld notifies at the default shape%s",
                                    e->name, (long long)declared, (long long)(x - s->ev_base[ev]), (long long)actual,
                                    declared > actual ? " (it could never complete)" : "");
                break;
            }
        }
    }
    return st;
}

/* 1 if s is "NAME[=VALUE] ..." as evt_compile_opts.cuda_defines allows */
static int cuda_defines_ok(const char *s)
{
    for (const char *c = s; *c;) {
        if (*c == ' ') { c++; continue; }
        if (!(isalpha((unsigned char)*c) || *c == '_')) return 0;
        while (isalnum((unsigned char)*c) || *c == '_') c++;
        if (*c == '=') {
            c++;
            if (!*c || *c == ' ') return 0;
            while (isalnum((unsigned char)*c) || *c == '_' || *c == '.' || *c == '+' || *c == '-') c++;
        }
        if (*c && *c != ' ') return 0;
    }
    return 1;
}

/* 1 if the define NAME is one of cuda_defines' entries */
static int defines_name(const char *defines, const char *name)
{
    size_t n = strlen(name);
    for (const char *c = defines; (c = strstr(c, name)); c += n)
        if ((c == defines || c[-1] == ' ') && (!c[n] || c[n] == ' ' || c[n] == '=')) return 1;
    return 0;
}

/* EVT_LLM_ATTN_ONE_REQUEST (evt_decode's batch-1-16 kernel) compiles
   attn_rope_split without its loop over a run of requests
   (tiles/attn_requests.h): such a kernel serves only calls whose grid's first
   extent is the batch, the length of pos (the call's fourth argument) */
static evt_status one_request_calls(const evt_graph *g, const char *defines, evt_diag *d)
{
    if (!defines || !defines_name(defines, "EVT_LLM_ATTN_ONE_REQUEST")) return EVT_OK;
    for (int i = 0; i < g->ncalls; i++) {
        const evt_call *c = g->calls[i];
        if (strcmp(c->op, "attn_rope_split") || c->nargs < 4 || c->args[3].kind != EVT_ARG_TENSOR) continue;
        if (c->rank >= 1 && evt_expr_equal(c->grid[0], c->args[3].tensor->shape[0])) continue;
        return evt_diag_error(d, EVT_ERR_VERIFY, c->loc,
                              "call %s: the kernel is compiled with EVT_LLM_ATTN_ONE_REQUEST (one request per attention "
                              "task), but this call's first grid extent is not the batch (the length of %s): it gives "
                              "a task a run of requests; drop the define",
                              c->name, c->args[3].tensor->name);
    }
    return EVT_OK;
}

evt_status evt_compile(evt_graph *g, const evt_compile_opts *o, evt_plan **out, evt_diag *d)
{
    static const evt_compile_opts none;
    if (!o) o = &none;
    *out = NULL;
    if (o->cuda_defines && !cuda_defines_ok(o->cuda_defines))
        return evt_diag_error(d, EVT_ERR_VERIFY, (evt_loc){0, 0},
                              "compile options: cuda_defines '%s' is not a list of NAME or NAME=VALUE (letters, digits, _; "
                              "values also . + -) separated by spaces", o->cuda_defines);
    evt_status st = evt_pass_verify(g, d);
    if (st) return st;
    if ((st = one_request_calls(g, o->cuda_defines, d))) return st;
    evt_plan *p = calloc(1, sizeof *p);
    if (!p) return EVT_ERR_NOMEM;
    p->g = g;
    p->stream_weights = o->stream_weights;
    p->early_loads = o->early_loads;
    if (o->cuda_defines && !(p->cuda_defines = strdup(o->cuda_defines))) { free(p); return EVT_ERR_NOMEM; }
    if (!o->no_fuse) p->nfused = evt_pass_fuse_events(g);
    p->ev = calloc(g->nevents + 1, sizeof *p->ev);
    p->call = calloc(g->ncalls + 1, sizeof *p->call);
    st = evt_lower(p, d);
    if (!st) {
        /* shape-dependent checks at the default shape */
        int64_t *sym = calloc(g->nsyms + 1, sizeof(int64_t));
        for (int i = 0; i < g->nsyms; i++) sym[i] = g->syms[i]->def;
        evt_shape s;
        st = evt_shape_init(&s, p, sym, d);
        if (!st) {
            evt_taskgraph tg;
            st = evt_taskgraph_build(&s, &tg, d);
            if (!st) {
                if (!o->trust_counts) st = check_declared_counts(p, &s, &tg, d);
                if (!st) st = evt_taskgraph_check(&tg, NULL, "the program", d);
                evt_taskgraph_free(&tg);
            }
            evt_shape_free(&s);
        }
        free(sym);
    }
    if (st) { evt_plan_free(p); return st; }
    *out = p;
    return EVT_OK;
}

void evt_plan_free(evt_plan *p)
{
    if (!p) return;
    if (p->call)
        for (int c = 0; c < p->g->ncalls; c++) free(p->call[c].arm);
    free(p->ev); free(p->call); free(p->ops); free(p->arm_inputs); free(p->cuda_defines);
    free(p);
}

const evt_graph *evt_plan_graph(const evt_plan *p) { return p->g; }

void evt_plan_print_counts(evt_printer *pr, const evt_plan *p)
{
    static const char *ev_names[] = {"e0", "e1", "e2", "e3"};
    const evt_graph *g = p->g;
    for (int i = 0; i < g->nevents; i++) {
        const evt_event_plan *ep = &p->ev[i];
        evt_pr(pr, "%s[", g->events[i]->name);
        for (int k = 0; k < g->events[i]->rank; k++) evt_pr(pr, k ? ", e%d" : "e%d", k);
        evt_pr(pr, "] count = ");
        if (ep->kind == EVT_COUNT_DATA) {
            evt_pr(pr, "data-dependent: histogram of the notify maps over valid tasks, armed by %s\n",
                   ep->armer >= 0 ? g->calls[ep->armer]->name : "the launch (index tensors are inputs)");
        } else if (ep->formula) {
            evt_expr_print(pr, ep->formula, ev_names);
            evt_pr(pr, "%s\n", g->events[i]->count ? " (declared)" : "");
        } else {
            evt_pr(pr, "enumerated at bind time (map is not a projection)\n");
        }
    }
}
