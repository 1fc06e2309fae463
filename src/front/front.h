/* front.h — internals shared by the .evt lexer, parser and printer.
 * Not a public header: include/evt/front.h is the API. */
#ifndef EVT_FRONT_INTERNAL_H
#define EVT_FRONT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "evt/ir.h"

#define EVT_FRONT_MAX_ERRORS 20   /* stop after this many diagnostics */
#define EVT_FRONT_MAX_DEPTH 64    /* expression nesting limit */

typedef enum evt_tok_kind {
    TK_EOF, TK_IDENT, TK_INT, TK_FLOAT, TK_STRING,
    TK_LBRACK, TK_RBRACK, TK_LPAREN, TK_RPAREN, TK_LBRACE, TK_RBRACE,
    TK_COMMA, TK_COLON, TK_EQ, TK_PLUS, TK_MINUS, TK_STAR, TK_SLASH, TK_PERCENT,
} evt_tok_kind;

typedef struct evt_tok {
    evt_tok_kind kind;
    int line, col;      /* 1-based */
    const char *s;      /* source text of the token (STRING: between the quotes) */
    size_t n;
    uint64_t u;         /* INT: magnitude */
    int overflow;       /* INT: does not fit in 64 bits */
} evt_tok;

/* The error budget shared by lexer and parser. */
typedef struct evt_front_errs {
    evt_diag *diag;
    int n;              /* errors reported so far (by this parse) */
} evt_front_errs;

/* Reports an error unless the budget is spent; returns 0 (for `return err(...)`). */
int evt_front_error(evt_front_errs *e, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Splits text into tokens (always terminated by a TK_EOF token). Lexical
 * errors are reported through e. Returns the malloc'd array, NULL on OOM. */
evt_tok *evt_front_lex(const char *text, size_t len, evt_front_errs *e, int *ntok);

/* 1 if the token is the identifier `word`. */
int evt_tok_is(const evt_tok *t, const char *word);

/* Keywords that cannot be used as names. NULL-terminated. */
extern const char *const evt_front_keywords[];
int evt_front_is_keyword(const char *s, size_t n);

#endif
