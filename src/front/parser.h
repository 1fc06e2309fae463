/* parser.h — the parser's state and helpers, shared by parser.c
 * (declarations) and parse_expr.c (tokens, numbers, expressions). Internal. */
#ifndef EVT_FRONT_PARSER_H
#define EVT_FRONT_PARSER_H
#include "front/front.h"

typedef struct parser {
    evt_tok *t;
    int nt, pos;
    evt_graph *g;
    evt_front_errs *e;
    int depth;
} parser;

/* Which names an expression may use. */
typedef struct scope {
    const char *const *vars; /* variable k -> evt_var(g, k) */
    int nvars;
    int vars_ok;             /* 0: the variables are known but not allowed */
    int loads_ok;            /* tensor[...] allowed */
    const char *where;       /* "a grid extent", for messages */
} scope;

extern const scope evt_front_syms_only;
#define SYMS_ONLY evt_front_syms_only

#define NAMEFMT "%.*s"
#define NAMEARG(tk) (int)((tk)->n > 64 ? 64 : (tk)->n), (tk)->s

static inline evt_tok *cur(parser *p) { return &p->t[p->pos]; }
static inline evt_tok *peek(parser *p, int k) { return &p->t[p->pos + k < p->nt ? p->pos + k : p->nt - 1]; }
static inline evt_tok *next(parser *p)
{
    evt_tok *t = cur(p);
    if (t->kind != TK_EOF) p->pos++;
    return t;
}
static inline int is(parser *p, evt_tok_kind k) { return cur(p)->kind == k; }
static inline int is_kw(parser *p, const char *w) { return evt_tok_is(cur(p), w); }
static inline int stopped(parser *p) { return p->e->n >= EVT_FRONT_MAX_ERRORS; }

#define ERR(tk, ...) evt_front_error(p->e, (tk)->line, (tk)->col, __VA_ARGS__)

/* Shared by parser.c (declarations) and parse_expr.c (tokens, numbers,
 * expressions). Each returns 0 after reporting a syntax error. */
const char *evt_front_kind_text(evt_tok_kind k);
const char *evt_front_describe(const evt_tok *t, char *buf, size_t cap);
int evt_front_expect(parser *p, evt_tok_kind k, const char *what);
int evt_front_expect_kw(parser *p, const char *w);
char *evt_front_tok_str(parser *p, const evt_tok *t);
evt_tok *evt_front_expect_name(parser *p, const char *what);
/* Where and as what a name is already declared (one namespace). */
int evt_front_find_decl(parser *p, const char *name, evt_loc *loc, const char **kind);
static inline evt_loc loc_of(const evt_tok *t) { return (evt_loc){t->line, t->col}; }
int evt_front_parse_sint(parser *p, int64_t *out);
int evt_front_parse_num(parser *p, double *out);
evt_expr *evt_front_parse_expr(parser *p, const scope *sc);
int evt_front_parse_list(parser *p, const scope *sc, evt_expr **out, int max, evt_tok **extra);
int evt_front_parse_shape(parser *p, evt_expr **shape, const char *where);

#endif
