/* expr.c — integer expressions: constructors that fold constants, floor
 * division semantics, evaluation, structural equality and printing. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "evt/ir.h"

static evt_expr *node(evt_graph *g, evt_expr_op op)
{
    evt_expr *e = evt_graph_alloc(g, sizeof *e);
    e->op = op;
    return e;
}

evt_expr *evt_const(evt_graph *g, int64_t v) { evt_expr *e = node(g, EVT_E_CONST); e->value = v; return e; }
evt_expr *evt_symref(evt_graph *g, evt_sym *s) { evt_expr *e = node(g, EVT_E_SYM); e->sym = s; return e; }
evt_expr *evt_var(evt_graph *g, int var) { evt_expr *e = node(g, EVT_E_VAR); e->var = var; return e; }

static int64_t floordiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}
static int64_t floormod(int64_t a, int64_t b) { return a - floordiv(a, b) * b; }

int evt_expr_is_const(const evt_expr *e, int64_t *value)
{
    if (e && e->op == EVT_E_CONST) { if (value) *value = e->value; return 1; }
    return 0;
}

evt_expr *evt_binop(evt_graph *g, evt_expr_op op, evt_expr *a, evt_expr *b)
{
    int64_t x, y;
    int ca = evt_expr_is_const(a, &x), cb = evt_expr_is_const(b, &y);
    if (ca && cb) {
        switch (op) {
        case EVT_E_ADD: return evt_const(g, x + y);
        case EVT_E_SUB: return evt_const(g, x - y);
        case EVT_E_MUL: return evt_const(g, x * y);
        case EVT_E_DIV: if (y != 0) return evt_const(g, floordiv(x, y)); break;
        case EVT_E_MOD: if (y != 0) return evt_const(g, floormod(x, y)); break;
        case EVT_E_MIN: return evt_const(g, x < y ? x : y);
        case EVT_E_MAX: return evt_const(g, x > y ? x : y);
        default: break;
        }
    }
    /* identities that keep printed maps readable */
    if (op == EVT_E_ADD && ca && x == 0) return b;
    if ((op == EVT_E_ADD || op == EVT_E_SUB) && cb && y == 0) return a;
    if (op == EVT_E_MUL && ca && x == 1) return b;
    if ((op == EVT_E_MUL || op == EVT_E_DIV) && cb && y == 1) return a;
    if (op == EVT_E_MUL && ((ca && x == 0) || (cb && y == 0))) return evt_const(g, 0);
    evt_expr *e = node(g, op);
    e->nargs = 2; e->a[0] = a; e->a[1] = b;
    return e;
}

evt_expr *evt_load(evt_graph *g, evt_tensor *t, int nargs, evt_expr *const *args)
{
    evt_expr *e = node(g, EVT_E_LOAD);
    e->tensor = t;
    e->nargs = nargs > EVT_MAX_RANK ? EVT_MAX_RANK : nargs;
    for (int i = 0; i < e->nargs; i++) e->a[i] = args[i];
    return e;
}

int evt_expr_has_load(const evt_expr *e)
{
    if (!e) return 0;
    if (e->op == EVT_E_LOAD) return 1;
    for (int i = 0; i < e->nargs; i++) if (evt_expr_has_load(e->a[i])) return 1;
    return 0;
}

int evt_expr_uses_var(const evt_expr *e, int var)
{
    if (!e) return 0;
    if (e->op == EVT_E_VAR) return e->var == var;
    for (int i = 0; i < e->nargs; i++) if (evt_expr_uses_var(e->a[i], var)) return 1;
    return 0;
}

int evt_expr_equal(const evt_expr *a, const evt_expr *b)
{
    if (a == b) return 1;
    if (!a || !b || a->op != b->op || a->nargs != b->nargs) return 0;
    switch (a->op) {
    case EVT_E_CONST: return a->value == b->value;
    case EVT_E_SYM: return a->sym->id == b->sym->id;
    case EVT_E_VAR: return a->var == b->var;
    case EVT_E_LOAD: if (a->tensor->id != b->tensor->id) return 0; break;
    default: break;
    }
    for (int i = 0; i < a->nargs; i++) if (!evt_expr_equal(a->a[i], b->a[i])) return 0;
    return 1;
}

int64_t evt_expr_eval(const evt_expr *e, const evt_eval_env *env, int *err)
{
    int64_t x, y;
    switch (e->op) {
    case EVT_E_CONST: return e->value;
    case EVT_E_SYM: return env->sym[e->sym->id];
    case EVT_E_VAR: return env->var ? env->var[e->var] : 0;
    case EVT_E_LOAD: {
        int64_t idx[EVT_MAX_RANK];
        for (int i = 0; i < e->nargs; i++) idx[i] = evt_expr_eval(e->a[i], env, err);
        if (!env->load) { *err = 1; return 0; }
        return env->load(env->user, e->tensor, idx, err);
    }
    default: break;
    }
    x = evt_expr_eval(e->a[0], env, err);
    y = evt_expr_eval(e->a[1], env, err);
    switch (e->op) {
    case EVT_E_ADD: return x + y;
    case EVT_E_SUB: return x - y;
    case EVT_E_MUL: return x * y;
    case EVT_E_DIV: if (y == 0) { *err = 1; return 0; } return floordiv(x, y);
    case EVT_E_MOD: if (y == 0) { *err = 1; return 0; } return floormod(x, y);
    case EVT_E_MIN: return x < y ? x : y;
    case EVT_E_MAX: return x > y ? x : y;
    default: *err = 1; return 0;
    }
}

/* ---- printing ---- */

void evt_pr(evt_printer *p, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        size_t room = p->cap - p->len;
        va_start(ap, fmt);
        int n = vsnprintf(p->buf ? p->buf + p->len : NULL, p->buf ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) return;
        if (p->buf && (size_t)n < room) { p->len += n; return; }
        size_t cap = p->cap ? p->cap * 2 : 256;
        while (cap < p->len + n + 1) cap *= 2;
        char *t = realloc(p->buf, cap);
        if (!t) return;
        p->buf = t; p->cap = cap;
    }
}

void evt_pr_free(evt_printer *p) { free(p->buf); p->buf = NULL; p->len = p->cap = 0; }

static int prec(const evt_expr *e)
{
    switch (e->op) {
    case EVT_E_ADD: case EVT_E_SUB: return 1;
    case EVT_E_MUL: case EVT_E_DIV: case EVT_E_MOD: return 2;
    case EVT_E_CONST: return e->value < 0 ? 3 : 4;
    default: return 4;
    }
}

static void print_rec(evt_printer *p, const evt_expr *e, const char *const *vn, int min_prec, int right)
{
    int pe = prec(e);
    int paren = pe < min_prec || (right && pe == min_prec && pe < 3);
    if (paren) evt_pr(p, "(");
    switch (e->op) {
    case EVT_E_CONST: evt_pr(p, "%lld", (long long)e->value); break;
    case EVT_E_SYM: evt_pr(p, "%s", e->sym->name); break;
    case EVT_E_VAR:
        if (vn && vn[e->var]) evt_pr(p, "%s", vn[e->var]);
        else evt_pr(p, "v%d", e->var);
        break;
    case EVT_E_LOAD:
        evt_pr(p, "%s[", e->tensor->name);
        for (int i = 0; i < e->nargs; i++) {
            if (i) evt_pr(p, ", ");
            print_rec(p, e->a[i], vn, 0, 0);
        }
        evt_pr(p, "]");
        break;
    case EVT_E_MIN: case EVT_E_MAX:
        evt_pr(p, "%s(", e->op == EVT_E_MIN ? "min" : "max");
        print_rec(p, e->a[0], vn, 0, 0);
        evt_pr(p, ", ");
        print_rec(p, e->a[1], vn, 0, 0);
        evt_pr(p, ")");
        break;
    default: {
        static const char *ops[] = {[EVT_E_ADD] = " + ", [EVT_E_SUB] = " - ", [EVT_E_MUL] = " * ",
                                    [EVT_E_DIV] = " / ", [EVT_E_MOD] = " % "};
        print_rec(p, e->a[0], vn, pe, 0);
        evt_pr(p, "%s", ops[e->op]);
        print_rec(p, e->a[1], vn, pe, 1);
        break;
    }
    }
    if (paren) evt_pr(p, ")");
}

void evt_expr_print(evt_printer *p, const evt_expr *e, const char *const *var_names)
{
    print_rec(p, e, var_names, 0, 0);
}
