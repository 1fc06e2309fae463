/* parse_expr.c — the .evt parser's tokens, numbers and integer expressions
 * (precedence: unary minus > * / % > + -, left-associative; names resolve
 * to grid variables, `for` variables, then symbols; loads where allowed). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "front/parser.h"

const scope evt_front_syms_only = {NULL, 0, 0, 0, "this context"};

/* Location of a declared name, if any (shared namespace). */
int evt_front_find_decl(parser *p, const char *name, evt_loc *loc, const char **kind)
{
    evt_sym *s; evt_tensor *t; evt_event *e; evt_call *c;
    if ((s = evt_graph_find_sym(p->g, name))) { *loc = s->loc; *kind = "a symbol"; return 1; }
    if ((t = evt_graph_find_tensor(p->g, name))) { *loc = t->loc; *kind = "a tensor"; return 1; }
    if ((e = evt_graph_find_event(p->g, name))) { *loc = e->loc; *kind = "an event"; return 1; }
    if ((c = evt_graph_find_call(p->g, name))) { *loc = c->loc; *kind = "a call"; return 1; }
    return 0;
}


const char *evt_front_kind_text(evt_tok_kind k)
{
    static const char *s[] = {"end of input", "name", "integer", "number", "string",
                              "'['", "']'", "'('", "')'", "'{'", "'}'",
                              "','", "':'", "'='", "'+'", "'-'", "'*'", "'/'", "'%'"};
    return s[k];
}

/* "'foo'", "'123'", "end of input", "'['" ... */
const char *evt_front_describe(const evt_tok *t, char *buf, size_t cap)
{
    if (t->kind == TK_IDENT || t->kind == TK_INT || t->kind == TK_FLOAT)
        snprintf(buf, cap, "'" NAMEFMT "'", NAMEARG(t));
    else
        snprintf(buf, cap, "%s", evt_front_kind_text(t->kind));
    return buf;
}

int evt_front_expect(parser *p, evt_tok_kind k, const char *what)
{
    if (is(p, k)) { next(p); return 1; }
    char b[100];
    return ERR(cur(p), "expected %s, found %s", what ? what : evt_front_kind_text(k), evt_front_describe(cur(p), b, sizeof b));
}

int evt_front_expect_kw(parser *p, const char *w)
{
    if (is_kw(p, w)) { next(p); return 1; }
    char b[100];
    return ERR(cur(p), "expected '%s', found %s", w, evt_front_describe(cur(p), b, sizeof b));
}

char *evt_front_tok_str(parser *p, const evt_tok *t)
{
    char *s = evt_graph_alloc(p->g, t->n + 1);
    memcpy(s, t->s, t->n);
    return s;
}

/* A name being declared: an identifier that is not a keyword. */
evt_tok *evt_front_expect_name(parser *p, const char *what)
{
    evt_tok *t = cur(p);
    char b[100];
    if (t->kind != TK_IDENT) { ERR(t, "expected %s, found %s", what, evt_front_describe(t, b, sizeof b)); return NULL; }
    if (evt_front_is_keyword(t->s, t->n)) {
        ERR(t, "'" NAMEFMT "' is a reserved word and cannot be used as %s", NAMEARG(t), what);
        return NULL;
    }
    return next(p);
}


/* ---- numbers -------------------------------------------------------------- */

/* [-] INT as int64. Syntax error (returns 0) if no integer is there. */
int evt_front_parse_sint(parser *p, int64_t *out)
{
    evt_tok *start = cur(p);
    int neg = 0;
    if (is(p, TK_MINUS)) { next(p); neg = 1; }
    evt_tok *t = cur(p);
    char b[100];
    if (t->kind != TK_INT)
        return ERR(t, "expected an integer, found %s", evt_front_describe(t, b, sizeof b));
    next(p);
    *out = 0;
    if (t->overflow || t->u > (uint64_t)INT64_MAX + (uint64_t)neg) {
        ERR(start, "number too large (integers are 64-bit)");
        return 1;
    }
    *out = neg ? (int64_t)(0 - t->u) : (int64_t)t->u;
    return 1;
}

/* [-] (INT | FLOAT | inf | nan) as a double. */
int evt_front_parse_num(parser *p, double *out)
{
    int neg = 0;
    if (is(p, TK_MINUS)) { next(p); neg = 1; }
    evt_tok *t = cur(p);
    char b[100];
    if (evt_tok_is(t, "inf")) *out = INFINITY;
    else if (evt_tok_is(t, "nan")) *out = NAN;
    else if (t->kind == TK_INT || t->kind == TK_FLOAT) {
        char buf[128];
        if (t->n >= sizeof buf) { next(p); *out = 0; ERR(t, "number too long"); return 1; }
        memcpy(buf, t->s, t->n);
        buf[t->n] = 0;
        *out = strtod(buf, NULL);
    } else {
        return ERR(t, "expected a number, found %s", evt_front_describe(t, b, sizeof b));
    }
    next(p);
    if (neg) *out = -*out;
    return 1;
}

/* ---- expressions ---------------------------------------------------------- */


/* evt_binop, but constant overflow and division by zero are errors. */
static evt_expr *mk_bin(parser *p, const evt_tok *at, evt_expr_op op, evt_expr *a, evt_expr *b)
{
    int64_t x, y, r;
    int ca = evt_expr_is_const(a, &x), cb = evt_expr_is_const(b, &y);
    if ((op == EVT_E_DIV || op == EVT_E_MOD) && cb && y == 0) {
        ERR(at, "division by zero");
        return evt_const(p->g, 0);
    }
    if (ca && cb) {
        int bad = 0;
        switch (op) {
        case EVT_E_ADD: bad = __builtin_add_overflow(x, y, &r); break;
        case EVT_E_SUB: bad = __builtin_sub_overflow(x, y, &r); break;
        case EVT_E_MUL: bad = __builtin_mul_overflow(x, y, &r); break;
        case EVT_E_DIV: case EVT_E_MOD: bad = (x == INT64_MIN && y == -1); break;
        default: break;
        }
        if (bad) {
            ERR(at, "integer overflow in constant expression");
            return evt_const(p->g, 0);
        }
    }
    return evt_binop(p->g, op, a, b);
}

/* '[' EXPR, ... ']' — returns the number of items (items past `max` are
 * parsed but dropped; *extra is set to the first of them), -1 on a syntax error. */
int evt_front_parse_list(parser *p, const scope *sc, evt_expr **out, int max, evt_tok **extra)
{
    if (extra) *extra = NULL;
    if (!evt_front_expect(p, TK_LBRACK, NULL)) return -1;
    int n = 0;
    if (is(p, TK_RBRACK)) { next(p); return 0; }
    while (1) {
        evt_tok *t = cur(p);
        evt_expr *e = evt_front_parse_expr(p, sc);
        if (!e) return -1;
        if (n < max) out[n] = e;
        else if (n == max && extra) *extra = t;
        n++;
        if (is(p, TK_COMMA)) { next(p); continue; }
        if (is(p, TK_RBRACK)) { next(p); return n; }
        char b[100];
        ERR(cur(p), "expected ',' or ']', found %s", evt_front_describe(cur(p), b, sizeof b));
        return -1;
    }
}

static evt_expr *parse_load(parser *p, const scope *sc, evt_tok *nt)
{
    evt_graph *g = p->g;
    char *name = evt_front_tok_str(p, nt);
    evt_expr *idx[EVT_MAX_RANK];
    evt_tok *lb = cur(p);
    int n = evt_front_parse_list(p, sc, idx, EVT_MAX_RANK, NULL);
    if (n < 0) return NULL;
    evt_tensor *t = evt_graph_find_tensor(g, name);
    if (!t) {
        evt_loc l; const char *kind;
        if (evt_front_find_decl(p, name, &l, &kind)) ERR(nt, "'%s' is %s, not a tensor, and cannot be indexed", name, kind);
        else ERR(nt, "unknown tensor '%s'", name);
        return evt_const(g, 0);
    }
    if (!sc->loads_ok) {
        ERR(nt, "tensor loads are only allowed in edge index expressions and event counts, not in %s", sc->where);
        return evt_const(g, 0);
    }
    if (t->dtype != EVT_I32 && t->dtype != EVT_I64 && t->dtype != EVT_U8) {
        ERR(nt, "tensor %s has type %s; only integer tensors can be read in index expressions",
            name, evt_dtype_name(t->dtype));
        return evt_const(g, 0);
    }
    if (n != t->rank) {
        ERR(lb, "tensor %s has rank %d but %d ind%s given", name, t->rank, n, n == 1 ? "ex" : "ices");
        return evt_const(g, 0);
    }
    return evt_load(g, t, n, idx);
}

static evt_expr *parse_primary(parser *p, const scope *sc)
{
    evt_graph *g = p->g;
    evt_tok *t = cur(p);
    char b[100];
    switch (t->kind) {
    case TK_INT:
        next(p);
        if (t->overflow || t->u > (uint64_t)INT64_MAX) {
            ERR(t, "number too large (integers are 64-bit)");
            return evt_const(g, 0);
        }
        return evt_const(g, (int64_t)t->u);
    case TK_FLOAT:
        next(p);
        ERR(t, "expected an integer, found '" NAMEFMT "'", NAMEARG(t));
        return evt_const(g, 0);
    case TK_LPAREN: {
        next(p);
        evt_expr *e = evt_front_parse_expr(p, sc);
        if (!e || !evt_front_expect(p, TK_RPAREN, NULL)) return NULL;
        return e;
    }
    case TK_IDENT:
        break;
    default:
        ERR(t, "expected an expression, found %s", evt_front_describe(t, b, sizeof b));
        return NULL;
    }
    if (evt_tok_is(t, "min") || evt_tok_is(t, "max")) {
        next(p);
        evt_expr_op op = evt_tok_is(t, "min") ? EVT_E_MIN : EVT_E_MAX;
        if (!evt_front_expect(p, TK_LPAREN, NULL)) return NULL;
        evt_expr *a = evt_front_parse_expr(p, sc);
        if (!a) return NULL;
        if (!is(p, TK_COMMA)) {
            ERR(cur(p), NAMEFMT " takes two arguments: expected ',', found %s", NAMEARG(t), evt_front_describe(cur(p), b, sizeof b));
            return NULL;
        }
        next(p);
        evt_expr *c = evt_front_parse_expr(p, sc);
        if (!c) return NULL;
        if (!is(p, TK_RPAREN)) {
            ERR(cur(p), NAMEFMT " takes two arguments: expected ')', found %s", NAMEARG(t), evt_front_describe(cur(p), b, sizeof b));
            return NULL;
        }
        next(p);
        return mk_bin(p, t, op, a, c);
    }
    if (evt_front_is_keyword(t->s, t->n)) {
        ERR(t, "expected an expression, found keyword '" NAMEFMT "'", NAMEARG(t));
        return NULL;
    }
    next(p);
    if (is(p, TK_LBRACK)) return parse_load(p, sc, t);
    for (int k = 0; k < sc->nvars; k++) {
        if (strlen(sc->vars[k]) == t->n && !memcmp(sc->vars[k], t->s, t->n)) {
            if (!sc->vars_ok) {
                ERR(t, "variable '%s' cannot be used in %s (only symbols are allowed there)", sc->vars[k], sc->where);
                return evt_const(g, 0);
            }
            return evt_var(g, k);
        }
    }
    char *name = evt_front_tok_str(p, t);
    evt_sym *s = evt_graph_find_sym(g, name);
    if (s) return evt_symref(g, s);
    evt_loc l; const char *kind;
    if (evt_front_find_decl(p, name, &l, &kind))
        ERR(t, "'%s' is %s, not an integer value", name, kind);
    else
        ERR(t, "unknown name '%s'", name);
    return evt_const(g, 0);
}

static int enter(parser *p, const evt_tok *t)
{
    if (++p->depth > EVT_FRONT_MAX_DEPTH) {
        ERR(t, "expression nested too deeply (limit %d levels)", EVT_FRONT_MAX_DEPTH);
        return 0;
    }
    return 1;
}

static evt_expr *parse_unary(parser *p, const scope *sc)
{
    if (!is(p, TK_MINUS)) return parse_primary(p, sc);
    evt_tok *m = next(p);
    evt_tok *t = cur(p);
    if (t->kind == TK_INT) { /* negative literal: -9223372036854775808 is valid */
        next(p);
        if (t->overflow || t->u > (uint64_t)INT64_MAX + 1) {
            ERR(m, "number too large (integers are 64-bit)");
            return evt_const(p->g, 0);
        }
        return evt_const(p->g, (int64_t)(0 - t->u));
    }
    if (!enter(p, m)) return NULL;
    evt_expr *x = parse_unary(p, sc);
    p->depth--;
    if (!x) return NULL;
    return mk_bin(p, m, EVT_E_MUL, evt_const(p->g, -1), x);
}

static evt_expr *parse_term(parser *p, const scope *sc)
{
    evt_expr *a = parse_unary(p, sc);
    while (a && (is(p, TK_STAR) || is(p, TK_SLASH) || is(p, TK_PERCENT))) {
        evt_tok *op = next(p);
        evt_expr *b = parse_unary(p, sc);
        if (!b) return NULL;
        a = mk_bin(p, op, op->kind == TK_STAR ? EVT_E_MUL : op->kind == TK_SLASH ? EVT_E_DIV : EVT_E_MOD, a, b);
    }
    return a;
}

evt_expr *evt_front_parse_expr(parser *p, const scope *sc)
{
    if (!enter(p, cur(p))) return NULL;
    evt_expr *a = parse_term(p, sc);
    while (a && (is(p, TK_PLUS) || is(p, TK_MINUS))) {
        evt_tok *op = next(p);
        evt_expr *b = parse_term(p, sc);
        if (!b) { a = NULL; break; }
        a = mk_bin(p, op, op->kind == TK_PLUS ? EVT_E_ADD : EVT_E_SUB, a, b);
    }
    p->depth--;
    return a;
}

/* A '[' shape ']' list of a tensor or event; reports rank > max. */
int evt_front_parse_shape(parser *p, evt_expr **shape, const char *where)
{
    scope sc = SYMS_ONLY;
    sc.where = where;
    evt_tok *extra;
    int n = evt_front_parse_list(p, &sc, shape, EVT_MAX_RANK, &extra);
    if (n > EVT_MAX_RANK) ERR(extra, "rank %d exceeds the maximum of %d", n, EVT_MAX_RANK);
    return n;
}

/* ---- declarations ---------------------------------------------------------- */

/* sym NAME = INT [in [LO, HI]] [buckets [B, ...]] */
