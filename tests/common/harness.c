/* harness.c — see harness.h. Traces are parsed with cJSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cjson/cJSON.h>
#include "harness.h"

evt_module *h_try_build(const char *text, const evt_compile_opts *o, char **msg)
{
    evt_diag d;
    evt_diag_init(&d, "test.evt");
    evt_module *m = NULL;
    evt_graph *g = evt_parse(text, strlen(text), &d);
    if (g) evt_module_build(g, EVT_BACKEND_CPU, o, 1, &m, &d);
    if (msg) *msg = d.text ? strdup(d.text) : strdup("");
    evt_diag_free(&d);
    return m;
}

evt_module *h_build(const char *text)
{
    char *msg;
    evt_module *m = h_try_build(text, NULL, &msg);
    if (!m) fail_msg("build failed:\n%s", msg);
    free(msg);
    return m;
}

evt_module *h_build_file(const char *path)
{
    char *text = h_read_file(path);
    evt_module *m = h_build(text);
    free(text);
    return m;
}

evt_status h_run_check(evt_module *m, int nsets, const char *const *sets, const evt_run_opts *o,
                       uint64_t seed, char **msg)
{
    evt_diag d;
    evt_diag_init(&d, "test.evt");
    const evt_graph *g = evt_module_graph(m);
    int64_t sym[64];
    evt_buffers *b = NULL, *r = NULL;
    evt_status st = evt_shape_parse(g, nsets, sets, sym, &d);
    if (!st) st = evt_buffers_new(g, sym, seed, 0xff, &b, &d);
    if (!st) st = evt_buffers_new(g, sym, seed, 0xfe, &r, &d);
    if (!st) st = evt_module_run(m, sym, b, o, NULL, &d);
    if (!st) st = evt_reference_run(m, sym, r, &d);
    evt_printer pr = {0};
    if (!st && evt_buffers_compare(g, b, r, 0, &pr)) st = EVT_ERR_CHECK;
    if (msg) {
        const char *text = st == EVT_ERR_CHECK ? pr.buf : d.text;
        *msg = strdup(text ? text : "");
    }
    evt_pr_free(&pr);
    evt_buffers_free(b);
    evt_buffers_free(r);
    evt_diag_free(&d);
    return st;
}

/* The whole file, NUL-terminated (malloc'd), or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(n + 1);
    size_t got = buf ? fread(buf, 1, n, f) : 0;
    if (buf) buf[got] = 0;
    fclose(f);
    return buf;
}

char *h_read_file(const char *path)
{
    char *s = slurp(path);
    if (!s) fail_msg("cannot read %s", path);
    return s;
}

int h_sh(const char *cmd, char *out, size_t cap)
{
    char full[16384];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int h_trace_load(const char *path, h_trace *out)
{
    memset(out, 0, sizeof *out);
    char *buf = slurp(path);
    if (!buf) return 1;
    cJSON *root = cJSON_Parse(buf);
    free(buf);
    if (!root) return 2;
    cJSON *ev = cJSON_GetObjectItem(root, "traceEvents");
    int cnt = cJSON_GetArraySize(ev);
    out->t = calloc(cnt + 1, sizeof(h_task));
    for (int i = 0; i < cnt; i++) {
        cJSON *e = cJSON_GetArrayItem(ev, i);
        cJSON *ph = cJSON_GetObjectItem(e, "ph");
        if (!ph || strcmp(ph->valuestring, "X")) continue;
        h_task *t = &out->t[out->n++];
        snprintf(t->name, sizeof t->name, "%s", cJSON_GetObjectItem(e, "name")->valuestring);
        t->ts = cJSON_GetObjectItem(e, "ts")->valuedouble;
        t->end = t->ts + cJSON_GetObjectItem(e, "dur")->valuedouble;
        t->tid = cJSON_GetObjectItem(e, "tid")->valueint;
    }
    cJSON_Delete(root);
    return 0;
}

void h_trace_free(h_trace *t) { free(t->t); t->t = NULL; t->n = 0; }

const h_task *h_trace_find(const h_trace *t, const char *name)
{
    for (int i = 0; i < t->n; i++) if (!strcmp(t->t[i].name, name)) return &t->t[i];
    return NULL;
}

double h_trace_max_end(const h_trace *t, const char *prefix)
{
    double m = -1;
    for (int i = 0; i < t->n; i++)
        if (!strncmp(t->t[i].name, prefix, strlen(prefix)) && t->t[i].end > m) m = t->t[i].end;
    return m;
}

double h_trace_min_start(const h_trace *t, const char *prefix)
{
    double m = 1e300;
    for (int i = 0; i < t->n; i++)
        if (!strncmp(t->t[i].name, prefix, strlen(prefix)) && t->t[i].ts < m) m = t->t[i].ts;
    return m;
}

int h_trace_count(const h_trace *t, const char *prefix)
{
    int c = 0;
    for (int i = 0; i < t->n; i++) if (!strncmp(t->t[i].name, prefix, strlen(prefix))) c++;
    return c;
}
