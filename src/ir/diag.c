/* diag.c — diagnostics sink ("FILE:LINE:COL: error: ...") and status names. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "evt/ir.h"

void evt_diag_init(evt_diag *d, const char *file)
{
    memset(d, 0, sizeof *d);
    d->file = file;
}

void evt_diag_free(evt_diag *d)
{
    free(d->text);
    d->text = NULL; d->len = d->cap = 0;
}

static void append(evt_diag *d, const char *kind, evt_loc loc, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    char line[1400];
    int n;
    if (loc.line > 0)
        n = snprintf(line, sizeof line, "%s:%d:%d: %s: %s\n", d->file ? d->file : "<input>", loc.line, loc.col, kind, msg);
    else
        n = snprintf(line, sizeof line, "%s: %s: %s\n", d->file ? d->file : "<api>", kind, msg);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = sizeof line - 1;
    if (d->len + n + 1 > d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 1024;
        while (cap < d->len + n + 1) cap *= 2;
        char *t = realloc(d->text, cap);
        if (!t) return;
        d->text = t; d->cap = cap;
    }
    memcpy(d->text + d->len, line, n + 1);
    d->len += n;
}

evt_status evt_diag_error(evt_diag *d, evt_status code, evt_loc loc, const char *fmt, ...)
{
    if (!d) return code;
    va_list ap;
    va_start(ap, fmt);
    append(d, "error", loc, fmt, ap);
    va_end(ap);
    d->nerrors++;
    return code;
}

void evt_diag_note(evt_diag *d, evt_loc loc, const char *fmt, ...)
{
    if (!d) return;
    va_list ap;
    va_start(ap, fmt);
    append(d, "note", loc, fmt, ap);
    va_end(ap);
}

const char *evt_status_name(evt_status s)
{
    static const char *names[] = {
        "ok", "parse error", "verification error", "bad shape", "schedule error",
        "compile error", "I/O error", "runtime error", "timeout", "no device",
        "check failed", "out of memory",
    };
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown status";
}
