/* parser.c — .evt text to evt_graph (grammar: docs/language.md).
 *
 * Recursive descent over the token array made by lexer.c. Two kinds of
 * errors:
 *   - syntax errors (a token that cannot continue the declaration): the
 *     parse function returns 0 and the caller skips to the next top-level
 *     keyword (or, inside a call body, the next wait/notify/}).
 *   - scope errors (unknown name, wrong rank, duplicate...): reported, a
 *     placeholder is used, and parsing goes on, so one mistake does not
 *     hide the next. Builders are only called with consistent data.
 * Any error makes evt_parse return NULL after the whole text is read (or
 * after EVT_FRONT_MAX_ERRORS errors). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "evt/front.h"
#include "front/parser.h"

/* Reports a duplicate declaration; returns 1 if `name` is taken. */
static int check_dup(parser *p, const evt_tok *nt, const char *name)
{
    evt_loc loc; const char *kind;
    if (!evt_front_find_decl(p, name, &loc, &kind)) return 0;
    int before = p->e->n;
    ERR(nt, "duplicate name '%s' (first declared at %d:%d as %s)", name, loc.line, loc.col, kind);
    if (p->e->n <= EVT_FRONT_MAX_ERRORS && p->e->n > before)
        evt_diag_note(p->e->diag, loc, "'%s' first declared here", name);
    return 1;
}

static int parse_sym(parser *p)
{
    next(p);
    evt_tok *nt = evt_front_expect_name(p, "a symbol name");
    if (!nt) return 0;
    if (!evt_front_expect(p, TK_EQ, "'='")) return 0;
    evt_tok *dt = cur(p);
    int64_t def, lo = 1, hi = INT64_MAX / 2, b[EVT_MAX_BUCKETS];
    if (!evt_front_parse_sint(p, &def)) return 0;
    evt_tok *in_tok = NULL, *bk_tok = NULL, *btok[EVT_MAX_BUCKETS];
    int nb = 0, bad = 0;
    while (1) {
        if (is_kw(p, "in")) {
            if (in_tok) bad = !ERR(cur(p), "duplicate 'in' clause");
            in_tok = next(p);
            if (!evt_front_expect(p, TK_LBRACK, NULL) || !evt_front_parse_sint(p, &lo) || !evt_front_expect(p, TK_COMMA, "','") ||
                !evt_front_parse_sint(p, &hi) || !evt_front_expect(p, TK_RBRACK, "']'"))
                return 0;
        } else if (is_kw(p, "buckets")) {
            if (bk_tok) bad = !ERR(cur(p), "duplicate 'buckets' clause");
            bk_tok = next(p);
            if (!evt_front_expect(p, TK_LBRACK, NULL)) return 0;
            nb = 0;
            while (1) {
                evt_tok *t = cur(p);
                int64_t v;
                if (!evt_front_parse_sint(p, &v)) return 0;
                if (nb == EVT_MAX_BUCKETS) bad = !ERR(t, "too many buckets (at most %d)", EVT_MAX_BUCKETS);
                if (nb < EVT_MAX_BUCKETS) { btok[nb] = t; b[nb] = v; }
                nb++;
                if (is(p, TK_COMMA)) { next(p); continue; }
                if (!evt_front_expect(p, TK_RBRACK, "',' or ']'")) return 0;
                break;
            }
        } else {
            break;
        }
    }
    if (lo > hi) bad = !ERR(in_tok, "empty bounds: lower bound %lld is greater than upper bound %lld",
                            (long long)lo, (long long)hi);
    else if (def < lo || def > hi)
        bad = !ERR(dt, "default value %lld is outside the bounds [%lld, %lld]",
                   (long long)def, (long long)lo, (long long)hi);
    if (nb > EVT_MAX_BUCKETS) nb = EVT_MAX_BUCKETS;
    for (int i = 0; i < nb && lo <= hi; i++) {
        if (i > 0 && b[i] <= b[i - 1]) { bad = !ERR(btok[i], "buckets must be strictly increasing"); break; }
        if (b[i] < lo || b[i] > hi) {
            bad = !ERR(btok[i], "bucket %lld is outside the bounds [%lld, %lld]",
                       (long long)b[i], (long long)lo, (long long)hi);
            break;
        }
    }
    char *name = evt_front_tok_str(p, nt);
    if (check_dup(p, nt, name) || bad) return 1;
    evt_sym *s = evt_sym_new(p->g, name, def);
    evt_sym_set_bounds(s, lo, hi);
    if (nb) evt_sym_set_buckets(s, nb, b);
    s->loc = loc_of(nt);
    return 1;
}

static int dtype_is_int(evt_dtype t) { return t == EVT_I32 || t == EVT_I64 || t == EVT_U8; }

/* zeros | const(NUM) | random[(k=v, ...)] | range | file("path") | rope(theta=NUM) */
static int parse_init(parser *p, evt_init *in, evt_dtype dt, const char *tname)
{
    evt_tok *t = cur(p);
    char b[100];
    memset(in, 0, sizeof *in);
    if (evt_tok_is(t, "zeros")) { next(p); in->kind = EVT_INIT_ZEROS; return 1; }
    if (evt_tok_is(t, "range")) { next(p); in->kind = EVT_INIT_RANGE; return 1; }
    if (evt_tok_is(t, "const")) {
        next(p);
        in->kind = EVT_INIT_CONST;
        return evt_front_expect(p, TK_LPAREN, NULL) && evt_front_parse_num(p, &in->value) && evt_front_expect(p, TK_RPAREN, "')'");
    }
    if (evt_tok_is(t, "rope")) { /* the RoPE angle table (verify.c checks the tensor's type and rank) */
        next(p);
        in->kind = EVT_INIT_ROPE;
        if (!evt_front_expect(p, TK_LPAREN, NULL)) return 0;
        evt_tok *k = cur(p);
        if (!evt_tok_is(k, "theta")) return ERR(k, "expected theta=NUM in rope(...), found %s", evt_front_describe(k, b, sizeof b));
        next(p);
        if (!evt_front_expect(p, TK_EQ, "'='")) return 0;
        evt_tok *v = cur(p);
        if (!evt_front_parse_num(p, &in->value)) return 0;
        if (!isfinite(in->value) || in->value <= 0) ERR(v, "rope(theta=...) needs a positive base");
        return evt_front_expect(p, TK_RPAREN, "')'");
    }
    if (evt_tok_is(t, "file")) {
        next(p);
        in->kind = EVT_INIT_FILE;
        if (!evt_front_expect(p, TK_LPAREN, NULL)) return 0;
        evt_tok *s = cur(p);
        if (s->kind != TK_STRING) return ERR(s, "expected a string, found %s", evt_front_describe(s, b, sizeof b));
        next(p);
        char *path = evt_graph_alloc(p->g, s->n + 1), *o = path;
        for (size_t i = 0; i < s->n; i++) {
            char c = s->s[i];
            if (c == '\\' && i + 1 < s->n) {
                char e = s->s[++i];
                if (e == 'n') c = '\n';
                else if (e == 't') c = '\t';
                else if (e == 'x' && i + 2 < s->n) {
                    char hex[3] = {s->s[i + 1], s->s[i + 2], 0};
                    c = (char)strtol(hex, NULL, 16);
                    i += 2;
                } else c = e;
            }
            *o++ = c;
        }
        *o = 0;
        in->path = path;
        return evt_front_expect(p, TK_RPAREN, "')'");
    }
    if (evt_tok_is(t, "random")) {
        next(p);
        in->kind = EVT_INIT_RANDOM;
        in->seed = 0; in->lo = -1; in->hi = 1;
        if (!is(p, TK_LPAREN)) return 1;
        next(p);
        int seen[3] = {0, 0, 0};
        while (!is(p, TK_RPAREN)) {
            evt_tok *k = cur(p);
            int which = evt_tok_is(k, "seed") ? 0 : evt_tok_is(k, "lo") ? 1 : evt_tok_is(k, "hi") ? 2 : -1;
            if (which < 0) {
                if (k->kind == TK_IDENT) return ERR(k, "unknown key '" NAMEFMT "' in random(...) (expected seed, lo or hi)", NAMEARG(k));
                return ERR(k, "expected seed, lo or hi, found %s", evt_front_describe(k, b, sizeof b));
            }
            next(p);
            if (seen[which]) ERR(k, "duplicate key '" NAMEFMT "' in random(...)", NAMEARG(k));
            seen[which] = 1;
            if (!evt_front_expect(p, TK_EQ, "'='")) return 0;
            evt_tok *v = cur(p);
            if (which == 0) {
                if (v->kind != TK_INT) return ERR(v, "expected a non-negative integer seed, found %s", evt_front_describe(v, b, sizeof b));
                next(p);
                if (v->overflow) ERR(v, "number too large (seeds are 64-bit)");
                in->seed = v->u;
            } else {
                double d;
                if (!evt_front_parse_num(p, &d)) return 0;
                if (dtype_is_int(dt) && (!isfinite(d) || d != floor(d)))
                    ERR(v, "random bounds of integer tensor %s must be integers", tname);
                if (which == 1) in->lo = d; else in->hi = d;
            }
            if (is(p, TK_COMMA)) { next(p); continue; }
            if (!is(p, TK_RPAREN)) return ERR(cur(p), "expected ',' or ')', found %s", evt_front_describe(cur(p), b, sizeof b));
        }
        next(p);
        return 1;
    }
    if (t->kind == TK_IDENT)
        return ERR(t, "unknown initializer '" NAMEFMT "' (expected zeros, const(...), random, range, file(...) or rope(...))", NAMEARG(t));
    return ERR(t, "expected an initializer, found %s", evt_front_describe(t, b, sizeof b));
}

/* tensor NAME : DTYPE[EXPR, ...] ROLE [= INIT] */
static int parse_tensor(parser *p)
{
    next(p);
    evt_tok *nt = evt_front_expect_name(p, "a tensor name");
    if (!nt || !evt_front_expect(p, TK_COLON, "':'")) return 0;
    evt_tok *dt = cur(p);
    char b[100];
    if (dt->kind != TK_IDENT) return ERR(dt, "expected a dtype, found %s", evt_front_describe(dt, b, sizeof b));
    next(p);
    int bad = 0;
    evt_dtype dtype = EVT_F32;
    char *dname = evt_front_tok_str(p, dt);
    if (!evt_dtype_parse(dname, &dtype))
        bad = !ERR(dt, "unknown dtype '%s' (expected f32, bf16, f16, i32, i64 or u8)", dname);
    evt_expr *shape[EVT_MAX_RANK];
    int rank = evt_front_parse_shape(p, shape, "a tensor shape");
    if (rank < 0) return 0;
    if (rank > EVT_MAX_RANK) bad = 1;
    evt_tok *rt = cur(p);
    if (rt->kind != TK_IDENT) return ERR(rt, "expected a role (input, output, weight or scratch), found %s", evt_front_describe(rt, b, sizeof b));
    next(p);
    evt_role role = EVT_INPUT;
    if (evt_tok_is(rt, "input")) role = EVT_INPUT;
    else if (evt_tok_is(rt, "output")) role = EVT_OUTPUT;
    else if (evt_tok_is(rt, "weight")) role = EVT_WEIGHT;
    else if (evt_tok_is(rt, "scratch")) role = EVT_SCRATCH;
    else bad = !ERR(rt, "unknown role '" NAMEFMT "' (expected input, output, weight or scratch)", NAMEARG(rt));
    char *name = evt_front_tok_str(p, nt);
    evt_init init = {0};
    if (is(p, TK_EQ)) {
        next(p);
        if (!parse_init(p, &init, dtype, name)) return 0;
    }
    if (check_dup(p, nt, name) || bad) return 1;
    evt_tensor *t = evt_tensor_new(p->g, name, dtype, role, rank, shape);
    t->init = init;
    t->loc = loc_of(nt);
    return 1;
}

/* event NAME[EXPR, ...] [count = EXPR] */
static int parse_event(parser *p)
{
    next(p);
    evt_tok *nt = evt_front_expect_name(p, "an event name");
    if (!nt) return 0;
    evt_expr *shape[EVT_MAX_RANK], *count = NULL;
    int rank = evt_front_parse_shape(p, shape, "an event shape");
    if (rank < 0) return 0;
    if (is_kw(p, "count")) {
        next(p);
        if (!evt_front_expect(p, TK_EQ, "'='")) return 0;
        static const char *const coord[EVT_MAX_RANK] = {"e0", "e1", "e2", "e3"};
        scope sc = {coord, rank < EVT_MAX_RANK ? rank : EVT_MAX_RANK, 1, 1, "an event count"};
        if (!(count = evt_front_parse_expr(p, &sc))) return 0;
    }
    char *name = evt_front_tok_str(p, nt);
    if (check_dup(p, nt, name) || rank > EVT_MAX_RANK) return 1;
    evt_event *e = evt_event_new(p->g, name, rank, shape);
    e->count = count;
    e->loc = loc_of(nt);
    return 1;
}

static int same_name(const char *s, const evt_tok *t) { return strlen(s) == t->n && !memcmp(s, t->s, t->n); }

/* Skips a balanced [...] starting at '['; leaves pos after the ']'. */
static int skip_brackets(parser *p)
{
    int depth = 0;
    do {
        evt_tok *t = cur(p);
        if (t->kind == TK_LBRACK || t->kind == TK_LPAREN) depth++;
        else if (t->kind == TK_RBRACK || t->kind == TK_RPAREN) depth--;
        else if (t->kind == TK_EOF || t->kind == TK_LBRACE || t->kind == TK_RBRACE ||
                 (t->kind == TK_IDENT && evt_front_is_keyword(t->s, t->n) &&
                  !evt_tok_is(t, "min") && !evt_tok_is(t, "max")))
        {
            char b[100];
            return ERR(t, "expected ']' to close the index list, found %s", evt_front_describe(t, b, sizeof b));
        }
        next(p);
    } while (depth > 0);
    return 1;
}

/* wait|notify EVENT[EXPR, ...] [for V in [EXPR] [, V in [EXPR]]]  |  wait EVENT trigger TENSOR */
static int parse_edge(parser *p, evt_call *c, int rank, const char *const *gvars)
{
    evt_graph *g = p->g;
    evt_tok *kw = next(p);
    evt_edge_kind kind = evt_tok_is(kw, "wait") ? EVT_WAIT : EVT_NOTIFY;
    char b[100];
    evt_tok *et = cur(p);
    if (et->kind != TK_IDENT) return ERR(et, "expected an event name, found %s", evt_front_describe(et, b, sizeof b));
    next(p);
    char *ename = evt_front_tok_str(p, et);
    evt_event *ev = evt_graph_find_event(g, ename);
    if (!ev) {
        evt_loc l; const char *k;
        if (evt_front_find_decl(p, ename, &l, &k)) ERR(et, "'%s' is %s, not an event", ename, k);
        else ERR(et, "unknown event '%s'", ename);
    }
    if (is_kw(p, "trigger")) {
        evt_tok *tt = next(p);
        if (kind != EVT_WAIT) ERR(tt, "'trigger' is only allowed on wait edges");
        evt_tok *xt = cur(p);
        if (xt->kind != TK_IDENT) return ERR(xt, "trigger requires a tensor, found %s", evt_front_describe(xt, b, sizeof b));
        next(p);
        char *xname = evt_front_tok_str(p, xt);
        evt_tensor *x = evt_graph_find_tensor(g, xname);
        if (!x) {
            evt_loc l; const char *k;
            if (evt_front_find_decl(p, xname, &l, &k)) ERR(xt, "trigger requires a tensor; '%s' is %s", xname, k);
            else ERR(xt, "trigger requires a tensor; unknown name '%s'", xname);
        }
        if (c && ev && x && kind == EVT_WAIT) {
            evt_edge *e = evt_call_add_trigger_wait(g, c, ev, x);
            e->loc = loc_of(kw);
        }
        return 1;
    }
    if (!is(p, TK_LBRACK))
        return ERR(cur(p), "expected '[' or 'trigger' after the event name, found %s", evt_front_describe(cur(p), b, sizeof b));
    int lb = p->pos;
    if (!skip_brackets(p)) return 0;
    /* `for` variables come after the indices but are in scope inside them. */
    const char *names[EVT_MAX_RANK + EVT_MAX_FOR];
    evt_expr *ext[EVT_MAX_FOR];
    for (int k = 0; k < rank; k++) names[k] = gvars[k];
    int nfor = 0, bad = 0;
    if (is_kw(p, "for")) {
        next(p);
        while (1) {
            evt_tok *vt = evt_front_expect_name(p, "a variable name");
            if (!vt) return 0;
            for (int k = 0; k < rank + (nfor < EVT_MAX_FOR ? nfor : EVT_MAX_FOR); k++)
                if (same_name(names[k], vt)) {
                    bad = !ERR(vt, "duplicate variable '" NAMEFMT "'", NAMEARG(vt));
                    break;
                }
            if (nfor == EVT_MAX_FOR) bad = !ERR(vt, "at most %d 'for' variables per edge", EVT_MAX_FOR);
            if (!evt_front_expect_kw(p, "in") || !evt_front_expect(p, TK_LBRACK, NULL)) return 0;
            scope sc = {names, rank + (nfor < EVT_MAX_FOR ? nfor : EVT_MAX_FOR), 0, 0, "a 'for' extent"};
            evt_expr *x = evt_front_parse_expr(p, &sc);
            if (!x || !evt_front_expect(p, TK_RBRACK, "']'")) return 0;
            if (nfor < EVT_MAX_FOR) { names[rank + nfor] = evt_front_tok_str(p, vt); ext[nfor] = x; }
            nfor++;
            if (!is(p, TK_COMMA)) break;
            next(p);
        }
        if (nfor > EVT_MAX_FOR) nfor = EVT_MAX_FOR;
    }
    int end = p->pos;
    p->pos = lb;
    scope sc = {names, rank + nfor, 1, 1, "an edge index"};
    evt_expr *idx[EVT_MAX_RANK];
    evt_tok *lbt = cur(p);
    int n = evt_front_parse_list(p, &sc, idx, EVT_MAX_RANK, NULL);
    if (n < 0) return 0;
    p->pos = end;
    if (ev && n != ev->rank)
        bad = !ERR(lbt, "event %s has rank %d but %d ind%s given", ev->name, ev->rank, n, n == 1 ? "ex" : "ices");
    if (c && ev && !bad) {
        evt_edge *e = evt_call_add_edge(g, c, kind, ev, n, idx);
        e->loc = loc_of(kw);
        for (int f = 0; f < nfor; f++) evt_edge_add_for(g, e, names[rank + f], ext[f]);
    }
    return 1;
}

static int is_top_kw(const evt_tok *t)
{
    return evt_tok_is(t, "sym") || evt_tok_is(t, "tensor") || evt_tok_is(t, "event") || evt_tok_is(t, "call");
}

/* call NAME = OP(ARG, ...) over (V, ...) in [EXPR, ...] [cost N] [prefetch] [policy P] { EDGES } */
static int parse_call(parser *p)
{
    evt_graph *g = p->g;
    next(p);
    evt_tok *nt = evt_front_expect_name(p, "a call name");
    if (!nt || !evt_front_expect(p, TK_EQ, "'='")) return 0;
    evt_tok *ot = evt_front_expect_name(p, "an operator name");
    if (!ot || !evt_front_expect(p, TK_LPAREN, NULL)) return 0;
    char b[100];
    int bad = 0;
    /* arguments */
    struct { evt_tensor *t; evt_expr *v; evt_loc loc; } args[EVT_MAX_ARGS];
    int nargs = 0;
    scope asc = SYMS_ONLY;
    asc.where = "a call argument";
    if (is(p, TK_RPAREN)) next(p);
    else while (1) {
        evt_tok *at = cur(p);
        evt_tensor *t = NULL;
        evt_expr *v = NULL;
        evt_tok_kind nk = peek(p, 1)->kind;
        if (at->kind == TK_IDENT && (nk == TK_COMMA || nk == TK_RPAREN) &&
            (t = evt_graph_find_tensor(g, evt_front_tok_str(p, at))))
            next(p);
        else if (!(v = evt_front_parse_expr(p, &asc)))
            return 0;
        if (nargs == EVT_MAX_ARGS) bad = !ERR(at, "too many arguments (at most %d)", EVT_MAX_ARGS);
        if (nargs < EVT_MAX_ARGS) { args[nargs].t = t; args[nargs].v = v; args[nargs].loc = loc_of(at); }
        nargs++;
        if (is(p, TK_COMMA)) { next(p); continue; }
        if (!evt_front_expect(p, TK_RPAREN, "',' or ')'")) return 0;
        break;
    }
    /* grid */
    if (!evt_front_expect_kw(p, "over") || !evt_front_expect(p, TK_LPAREN, NULL)) return 0;
    const char *vars[EVT_MAX_RANK];
    int nvars = 0;
    if (is(p, TK_RPAREN)) next(p);
    else while (1) {
        evt_tok *vt = evt_front_expect_name(p, "a variable name");
        if (!vt) return 0;
        for (int k = 0; k < nvars && k < EVT_MAX_RANK; k++)
            if (same_name(vars[k], vt)) { bad = !ERR(vt, "duplicate variable '" NAMEFMT "'", NAMEARG(vt)); break; }
        if (nvars == EVT_MAX_RANK) bad = !ERR(vt, "rank %d exceeds the maximum of %d", nvars + 1, EVT_MAX_RANK);
        if (nvars < EVT_MAX_RANK) vars[nvars] = evt_front_tok_str(p, vt);
        nvars++;
        if (is(p, TK_COMMA)) { next(p); continue; }
        if (!evt_front_expect(p, TK_RPAREN, "',' or ')'")) return 0;
        break;
    }
    int rank = nvars < EVT_MAX_RANK ? nvars : EVT_MAX_RANK;
    if (!evt_front_expect_kw(p, "in")) return 0;
    evt_tok *lb = cur(p);
    scope gsc = {vars, rank, 0, 0, "a grid extent"};
    evt_expr *grid[EVT_MAX_RANK];
    int next_n = evt_front_parse_list(p, &gsc, grid, EVT_MAX_RANK, NULL);
    if (next_n < 0) return 0;
    if (next_n != nvars && nvars <= EVT_MAX_RANK)
        bad = !ERR(lb, "call %.*s has %d grid variable%s but %d extent%s", NAMEARG(nt),
                   nvars, nvars == 1 ? "" : "s", next_n, next_n == 1 ? "" : "s");
    /* options */
    int64_t cost = 1;
    int prefetch = 0;
    evt_policy policy = EVT_POLICY_AUTO;
    int seen_cost = 0, seen_policy = 0;
    while (1) {
        evt_tok *t = cur(p);
        if (evt_tok_is(t, "cost")) {
            next(p);
            if (seen_cost++) ERR(t, "duplicate 'cost'");
            if (!evt_front_parse_sint(p, &cost)) return 0;
        } else if (evt_tok_is(t, "prefetch")) {
            next(p);
            if (prefetch++) ERR(t, "duplicate 'prefetch'");
        } else if (evt_tok_is(t, "policy")) {
            next(p);
            if (seen_policy++) ERR(t, "duplicate 'policy'");
            evt_tok *v = cur(p);
            if (evt_tok_is(v, "static")) policy = EVT_POLICY_STATIC;
            else if (evt_tok_is(v, "dynamic")) policy = EVT_POLICY_DYNAMIC;
            else if (evt_tok_is(v, "auto")) policy = EVT_POLICY_AUTO;
            else return ERR(v, "expected static, dynamic or auto after 'policy', found %s", evt_front_describe(v, b, sizeof b));
            next(p);
        } else {
            break;
        }
    }
    evt_tok *lbrace = cur(p);
    if (!is(p, TK_LBRACE)) {
        if (cur(p)->kind == TK_IDENT && !is_top_kw(cur(p)))
            return ERR(cur(p), "unknown keyword '" NAMEFMT "' (expected cost, prefetch, policy or '{')", NAMEARG(cur(p)));
        return ERR(cur(p), "expected '{', found %s", evt_front_describe(cur(p), b, sizeof b));
    }
    next(p);
    char *name = evt_front_tok_str(p, nt);
    evt_call *c = NULL;
    if (!check_dup(p, nt, name) && !bad) {
        c = evt_call_new(g, name, evt_front_tok_str(p, ot), rank, vars, grid);
        c->loc = loc_of(nt);
        c->cost = cost;
        c->prefetch = prefetch ? 1 : 0;
        c->policy = policy;
        for (int i = 0; i < nargs; i++) {
            if (args[i].t) evt_call_add_tensor_arg(c, args[i].t);
            else evt_call_add_int_arg(c, args[i].v);
            c->args[c->nargs - 1].loc = args[i].loc;
        }
    }
    /* body */
    while (!stopped(p)) {
        evt_tok *t = cur(p);
        if (t->kind == TK_RBRACE) { next(p); return 1; }
        if (evt_tok_is(t, "wait") || evt_tok_is(t, "notify")) {
            if (parse_edge(p, c, rank, vars)) continue;
        } else if (t->kind == TK_EOF || is_top_kw(t)) {
            ERR(t, "missing '}' to close call %s (opened at %d:%d)", name, lbrace->line, lbrace->col);
            return 1;
        } else if (t->kind == TK_IDENT) {
            ERR(t, "unknown keyword '" NAMEFMT "' in call body (expected wait, notify or '}')", NAMEARG(t));
        } else {
            ERR(t, "expected wait, notify or '}', found %s", evt_front_describe(t, b, sizeof b));
        }
        /* recover: skip to the next statement */
        next(p);
        while (!is(p, TK_EOF) && !is(p, TK_RBRACE) && !is_kw(p, "wait") && !is_kw(p, "notify") && !is_top_kw(cur(p)))
            next(p);
    }
    return 1;
}

static void parse_program(parser *p)
{
    char b[100];
    while (!is(p, TK_EOF) && !stopped(p)) {
        evt_tok *t = cur(p);
        int ok;
        p->depth = 0;
        if (evt_tok_is(t, "sym")) ok = parse_sym(p);
        else if (evt_tok_is(t, "tensor")) ok = parse_tensor(p);
        else if (evt_tok_is(t, "event")) ok = parse_event(p);
        else if (evt_tok_is(t, "call")) ok = parse_call(p);
        else if (t->kind == TK_IDENT)
            ok = ERR(t, "unknown keyword '" NAMEFMT "' (expected sym, tensor, event or call)", NAMEARG(t));
        else
            ok = ERR(t, "expected a declaration (sym, tensor, event or call), found %s", evt_front_describe(t, b, sizeof b));
        if (!ok) { /* recover: skip to the next declaration */
            if (p->pos == (int)(t - p->t)) next(p);
            while (!is(p, TK_EOF) && !is_top_kw(cur(p))) next(p);
        }
    }
}

evt_graph *evt_parse(const char *text, size_t len, evt_diag *diag)
{
    evt_front_errs errs = {diag, 0};
    if (!text) len = 0;
    if (len > (size_t)INT_MAX / 2) {
        evt_diag_error(diag, EVT_ERR_PARSE, (evt_loc){1, 1}, "input too large (%zu bytes)", len);
        return NULL;
    }
    int nt = 0;
    evt_tok *toks = evt_front_lex(text ? text : "", len, &errs, &nt);
    if (!toks) {
        evt_diag_error(diag, EVT_ERR_NOMEM, (evt_loc){0, 0}, "out of memory while reading the program");
        return NULL;
    }
    evt_graph *g = evt_graph_new();
    if (!g) {
        free(toks);
        evt_diag_error(diag, EVT_ERR_NOMEM, (evt_loc){0, 0}, "out of memory");
        return NULL;
    }
    parser p = {toks, nt, 0, g, &errs, 0};
    if (!stopped(&p)) parse_program(&p);
    free(toks);
    if (errs.n > 0) {
        evt_graph_free(g);
        return NULL;
    }
    return g;
}

evt_graph *evt_parse_file(const char *path, evt_diag *diag)
{
    const char *saved = diag ? diag->file : NULL;
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int too_large = 0;
    if (f) {
        while (1) {
            if (cap - len < 65536) {
                if (cap > (size_t)INT_MAX / 2) { too_large = 1; break; }
                size_t nc = cap ? cap * 2 : 65536;
                char *t = realloc(buf, nc);
                if (!t) break;
                buf = t; cap = nc;
            }
            size_t r = fread(buf + len, 1, cap - len, f);
            len += r;
            if (r == 0) break;
        }
    }
    if (!f || ferror(f) || !buf || too_large) {
        int err = errno;
        if (diag) diag->file = path;
        evt_diag_error(diag, EVT_ERR_IO, (evt_loc){0, 0}, "cannot read %s: %s", path,
                       !f ? strerror(err) : too_large ? "file too large" : "read error");
        if (diag) diag->file = saved;
        if (f) fclose(f);
        free(buf);
        return NULL;
    }
    fclose(f);
    if (diag) diag->file = path;
    evt_graph *g = evt_parse(buf, len, diag);
    if (diag) diag->file = saved;
    free(buf);
    return g;
}
