/* lexer.c — splits .evt text into tokens.
 *
 * Tokens: identifiers [A-Za-z_][A-Za-z0-9_]*, integers (decimal digits),
 * floats (digits with a fraction and/or exponent: 1.5, 2e-3, 1.0e+20),
 * strings "..." (escapes \\ \" \n \t \xHH, no raw newlines), and the
 * punctuation [ ] ( ) { } , : = + - * / %. `#` starts a comment that runs to
 * the end of the line. Newlines are plain whitespace: the grammar is
 * delimited by keywords, not by lines.
 *
 * The lexer never stops early on an error: it reports it, skips the
 * offending bytes, and goes on, so the parser can report more problems. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "front/front.h"

const char *const evt_front_keywords[] = {
    "sym", "tensor", "event", "call", "wait", "notify", "for", "in", "over",
    "trigger", "count", "cost", "prefetch", "policy", "buckets", "min", "max", NULL,
};

int evt_front_is_keyword(const char *s, size_t n)
{
    for (int i = 0; evt_front_keywords[i]; i++)
        if (strlen(evt_front_keywords[i]) == n && !memcmp(evt_front_keywords[i], s, n)) return 1;
    return 0;
}

int evt_tok_is(const evt_tok *t, const char *word)
{
    return t->kind == TK_IDENT && strlen(word) == t->n && !memcmp(t->s, word, t->n);
}

int evt_front_error(evt_front_errs *e, int line, int col, const char *fmt, ...)
{
    e->n++;
    if (e->n > EVT_FRONT_MAX_ERRORS) return 0;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    evt_diag_error(e->diag, EVT_ERR_PARSE, (evt_loc){line, col}, "%s", msg);
    if (e->n == EVT_FRONT_MAX_ERRORS)
        evt_diag_note(e->diag, (evt_loc){line, col}, "too many errors; giving up");
    return 0;
}

static int is_ident_start(int c) { return isalpha(c) || c == '_'; }
static int is_ident_char(int c) { return isalnum(c) || c == '_'; }

/* Lexes the body of a string starting after the opening quote; returns the
 * index of the closing quote, or -1 if the string is unterminated. */
static long lex_string(const unsigned char *s, size_t len, size_t i, evt_front_errs *e, int line, int col0)
{
    size_t start = i;
    while (i < len && s[i] != '"' && s[i] != '\n') {
        if (s[i] == '\\') {
            int col = col0 + (int)(i - start) + 1;
            if (i + 1 >= len || s[i + 1] == '\n') return -1;
            unsigned char c = s[i + 1];
            if (c == 'x') {
                if (i + 3 >= len || !isxdigit(s[i + 2]) || !isxdigit(s[i + 3])) {
                    evt_front_error(e, line, col, "\\x in a string needs two hex digits");
                    i += 2;
                    continue;
                }
                if (s[i + 2] == '0' && s[i + 3] == '0')
                    evt_front_error(e, line, col, "strings cannot contain a NUL byte");
                i += 4;
                continue;
            }
            if (c != '\\' && c != '"' && c != 'n' && c != 't')
                evt_front_error(e, line, col, "unknown escape '\\%c' in string", isprint(c) ? c : '?');
            i += 2;
            continue;
        }
        if (s[i] == 0) evt_front_error(e, line, col0 + (int)(i - start) + 1, "strings cannot contain a NUL byte");
        i++;
    }
    if (i >= len || s[i] != '"') return -1;
    return (long)i;
}

evt_tok *evt_front_lex(const char *text, size_t len, evt_front_errs *e, int *ntok)
{
    const unsigned char *s = (const unsigned char *)text;
    int cap = 256, n = 0;
    evt_tok *toks = malloc(cap * sizeof *toks);
    if (!toks) return NULL;
    int line = 1;
    size_t line_start = 0, i = 0;
    while (1) {
        /* whitespace and comments */
        while (i < len) {
            if (s[i] == '\n') { line++; i++; line_start = i; }
            else if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\f' || s[i] == '\v') i++;
            else if (s[i] == '#') { while (i < len && s[i] != '\n') i++; }
            else break;
        }
        if (n == cap) {
            if (cap > (1 << 28)) { free(toks); return NULL; }
            evt_tok *t = realloc(toks, 2 * cap * sizeof *toks);
            if (!t) { free(toks); return NULL; }
            toks = t; cap *= 2;
        }
        evt_tok *t = &toks[n];
        memset(t, 0, sizeof *t);
        t->line = line;
        t->col = (int)(i - line_start) + 1;
        t->s = text + i;
        if (i >= len) { t->kind = TK_EOF; n++; break; }
        unsigned char c = s[i];
        size_t j = i + 1;
        if (is_ident_start(c)) {
            while (j < len && is_ident_char(s[j])) j++;
            t->kind = TK_IDENT;
        } else if (isdigit(c)) {
            uint64_t v = 0;
            j = i;
            while (j < len && isdigit(s[j])) {
                unsigned d = s[j] - '0';
                if (v > (UINT64_MAX - d) / 10) t->overflow = 1;
                else v = v * 10 + d;
                j++;
            }
            t->kind = TK_INT; t->u = v;
            if (j + 1 < len && s[j] == '.' && isdigit(s[j + 1])) {
                t->kind = TK_FLOAT;
                j++;
                while (j < len && isdigit(s[j])) j++;
            }
            if (j < len && (s[j] == 'e' || s[j] == 'E')) {
                size_t k = j + 1;
                if (k < len && (s[k] == '+' || s[k] == '-')) k++;
                if (k < len && isdigit(s[k])) {
                    t->kind = TK_FLOAT;
                    j = k;
                    while (j < len && isdigit(s[j])) j++;
                }
            }
            if (j < len && is_ident_char(s[j])) {
                size_t k = j;
                while (k < len && is_ident_char(s[k])) k++;
                evt_front_error(e, t->line, t->col, "malformed number '%.*s'", (int)(k - i > 40 ? 40 : k - i), text + i);
                i = k;
                continue;
            }
        } else if (c == '"') {
            long end = lex_string(s, len, i + 1, e, t->line, t->col);
            if (end < 0) {
                evt_front_error(e, t->line, t->col, "unterminated string");
                j = i + 1;
                while (j < len && s[j] != '\n') j++;
            } else {
                j = (size_t)end + 1;
            }
            t->kind = TK_STRING;
            t->s = text + i + 1;
            t->n = (end < 0 ? j : (size_t)end) - (i + 1);
            n++;
            i = j;
            continue;
        } else {
            switch (c) {
            case '[': t->kind = TK_LBRACK; break;
            case ']': t->kind = TK_RBRACK; break;
            case '(': t->kind = TK_LPAREN; break;
            case ')': t->kind = TK_RPAREN; break;
            case '{': t->kind = TK_LBRACE; break;
            case '}': t->kind = TK_RBRACE; break;
            case ',': t->kind = TK_COMMA; break;
            case ':': t->kind = TK_COLON; break;
            case '=': t->kind = TK_EQ; break;
            case '+': t->kind = TK_PLUS; break;
            case '-': t->kind = TK_MINUS; break;
            case '*': t->kind = TK_STAR; break;
            case '/': t->kind = TK_SLASH; break;
            case '%': t->kind = TK_PERCENT; break;
            default:
                if (isprint(c)) evt_front_error(e, t->line, t->col, "unexpected character '%c'", c);
                else evt_front_error(e, t->line, t->col, "unexpected byte 0x%02x", c);
                i++;
                if (e->n > EVT_FRONT_MAX_ERRORS) { /* garbage: stop here */
                    t->kind = TK_EOF; t->s = text + len; n++;
                    *ntok = n;
                    return toks;
                }
                continue;
            }
        }
        t->n = j - i;
        n++;
        i = j;
    }
    *ntok = n;
    return toks;
}
