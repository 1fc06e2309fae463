/* module.c — modules: build from a graph, save/load artifacts, bind shapes
 * (cached), and launch through the backend (cpu.c or cuda.c).
 *
 * Artifact format (text header, binary sections):
 *   EVTC-ARTIFACT 1\n backend NAME\n abi N\n
 *   section NAME LEN\n <LEN bytes>\n      (program, source0, code0, source1, code1)
 *   end\n
 * Loading parses the program, re-runs the (cheap, deterministic) passes and
 * checks that they regenerate exactly the stored source; it never compiles.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/module.h"
#include "evt/front.h"
#include "emit/emit.h"

static const evt_backend_ops *ops(const evt_module *m)
{
    return m->backend == EVT_BACKEND_CUDA ? &evt_cuda_backend : &evt_cpu_backend;
}

const char *evt_src_dir(void)
{
    const char *e = getenv("EVT_SRC_DIR");
    if (e && *e) return e;
#ifdef EVT_SRC_DIR_DEFAULT
    return EVT_SRC_DIR_DEFAULT;
#else
    return "src";
#endif
}

evt_status evt_write_file(const char *path, const void *data, size_t len, evt_diag *d)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len) {
        if (f) fclose(f);
        return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot write %s", path);
    }
    if (fclose(f)) return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot write %s", path);
    return EVT_OK;
}

evt_status evt_variant_prepare(evt_module *m, evt_variant *v, evt_graph *g, evt_diag *d)
{
    v->g = g;
    evt_status st = evt_compile(g, &m->copts, &v->p, d);
    if (st) return st;
    evt_printer pr = {0};
    st = m->backend == EVT_BACKEND_CUDA ? evt_emit_cuda(v->p, &pr, d) : evt_emit_c(v->p, &pr, d);
    if (st) { evt_pr_free(&pr); return st; }
    v->source = pr.buf;
    return EVT_OK;
}

static evt_module *module_new(evt_backend backend, const evt_compile_opts *o)
{
    evt_module *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->backend = backend;
    if (o) m->copts = *o;
    return m;
}

static evt_status add_unfused(evt_module *m, evt_diag *d)
{
    evt_graph *u = evt_pass_unfuse(m->var[0].g);
    if (!u) return EVT_ERR_NOMEM;
    evt_status st = evt_variant_prepare(m, &m->var[1], u, d);
    if (!st) st = ops(m)->build(m, &m->var[1], d);
    if (!st) st = ops(m)->load(m, &m->var[1], d);
    return st;
}

evt_status evt_module_build(evt_graph *g, evt_backend backend, const evt_compile_opts *o,
                            int with_unfused, evt_module **out, evt_diag *d)
{
    *out = NULL;
    evt_module *m = module_new(backend, o);
    if (!m) { evt_graph_free(g); return EVT_ERR_NOMEM; }
    evt_printer pr = {0};
    evt_print_graph(&pr, g);
    m->program = pr.buf;
    evt_status st = evt_variant_prepare(m, &m->var[0], g, d);
    if (!st) st = ops(m)->build(m, &m->var[0], d);
    if (!st) st = ops(m)->load(m, &m->var[0], d);
    if (!st && with_unfused) st = add_unfused(m, d);
    if (st) { evt_module_free(m); return st; }
    *out = m;
    return EVT_OK;
}

/* Frees one bind cache entry (and the backend's copy of it). */
static void drop_entry(evt_module *m, evt_bind_entry *e)
{
    if (ops(m)->drop_bound) ops(m)->drop_bound(m, e);
    evt_bound_free(&e->b);
    free(e->sym);
    memset(e, 0, sizeof *e);
}

void evt_module_free(evt_module *m)
{
    if (!m) return;
    for (int i = 0; i < EVT_BIND_CACHE; i++)
        if (m->cache[i].used) drop_entry(m, &m->cache[i]);
    for (int v = 0; v < 2; v++) {
        if (m->var[v].handle || m->var[v].tmpdir[0]) ops(m)->unload(m, &m->var[v]);
        evt_plan_free(m->var[v].p);
        evt_graph_free(m->var[v].g);
        free(m->var[v].source);
        free(m->var[v].code);
    }
    if (ops(m)->release) ops(m)->release(m);
    free(m->weights_from_ids);
    free(m->program);
    free(m);
}

const evt_graph *evt_module_graph(const evt_module *m) { return m->var[0].g; }

void evt_module_share_weights(evt_module *dst, const evt_module *src)
{
    free(dst->weights_from_ids);
    dst->weights_from_ids = NULL;
    dst->weights_from = NULL;
    if (!src || src == dst || src->backend != dst->backend) return;
    const evt_graph *g = evt_module_graph(dst), *sg = evt_module_graph(src);
    int *ids = malloc((g->ntensors + 1) * sizeof *ids);
    if (!ids) return; /* no sharing: dst uploads its own, as without the call */
    for (int i = 0; i < g->ntensors; i++) {
        const evt_tensor *t = g->tensors[i], *f = t->role == EVT_WEIGHT ? evt_graph_find_tensor(sg, t->name) : NULL;
        ids[i] = f && f->role == EVT_WEIGHT && f->dtype == t->dtype ? f->id : -1;
    }
    dst->weights_from_ids = ids;
    dst->weights_from = src;
}
evt_backend evt_module_backend(const evt_module *m) { return m->backend; }
const char *evt_module_source(const evt_module *m, int variant)
{
    return variant >= 0 && variant < 2 ? m->var[variant].source : NULL;
}

/* ---- artifacts ---- */

static void put_section(FILE *f, const char *name, const void *data, size_t len)
{
    fprintf(f, "section %s %zu\n", name, len);
    if (len) fwrite(data, 1, len, f);
    fputc('\n', f);
}

evt_status evt_module_save(evt_module *m, const char *path, evt_diag *d)
{
    if (!m->var[1].p) {
        evt_status st = add_unfused(m, d);
        if (st) return st;
    }
    FILE *f = fopen(path, "wb");
    if (!f) return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot write %s", path);
    fprintf(f, "EVTC-ARTIFACT 1\nbackend %s\nabi %d\n", evt_backend_name(m->backend), EVT_ABI_VERSION);
    put_section(f, "program", m->program, strlen(m->program));
    for (int v = 0; v < 2; v++) {
        char name[32];
        snprintf(name, sizeof name, "source%d", v);
        put_section(f, name, m->var[v].source, strlen(m->var[v].source));
        snprintf(name, sizeof name, "code%d", v);
        put_section(f, name, m->var[v].code, m->var[v].code_len);
    }
    fputs("end\n", f);
    if (fclose(f)) return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "error writing %s", path);
    return EVT_OK;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) { char *t = realloc(buf, cap * 2 + 1); if (!t) { free(buf); buf = NULL; break; } buf = t; cap *= 2; }
    }
    fclose(f);
    if (buf) buf[n] = 0;
    *len = n;
    return buf;
}

int evt_is_artifact(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char head[16] = {0};
    size_t n = fread(head, 1, 13, f);
    fclose(f);
    return n == 13 && !memcmp(head, "EVTC-ARTIFACT", 13);
}

evt_status evt_module_load(const char *path, evt_module **out, evt_diag *d)
{
    *out = NULL;
    size_t len;
    char *buf = read_all(path, &len);
    if (!buf) return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot read %s", path);
    evt_status st = EVT_OK;
    evt_module *m = NULL;
    char backend[16] = {0};
    int abi = 0, pos = 0;
    if (sscanf(buf, "EVTC-ARTIFACT 1\nbackend %15s\nabi %d\n%n", backend, &abi, &pos) < 2 || pos == 0) {
        free(buf);
        return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "%s is not an evtc artifact", path);
    }
    if (abi != EVT_ABI_VERSION) {
        free(buf);
        return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "%s was built for ABI %d, this evtc speaks %d: rebuild it", path, abi, EVT_ABI_VERSION);
    }
    m = module_new(!strcmp(backend, "cuda") ? EVT_BACKEND_CUDA : EVT_BACKEND_CPU, NULL);
    char *sec[5] = {0};
    size_t seclen[5] = {0};
    static const char *names[5] = {"program", "source0", "code0", "source1", "code1"};
    size_t p = (size_t)pos;
    while (p < len && strncmp(buf + p, "end\n", 4)) {
        char name[32];
        size_t slen;
        int hdr = 0;
        if (sscanf(buf + p, "section %31s %zu\n%n", name, &slen, &hdr) < 2 || hdr == 0 || p + hdr + slen + 1 > len) {
            st = evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "%s: corrupt artifact section", path);
            break;
        }
        p += hdr;
        for (int i = 0; i < 5; i++)
            if (!strcmp(name, names[i])) {
                sec[i] = malloc(slen + 1);
                memcpy(sec[i], buf + p, slen);
                sec[i][slen] = 0;
                seclen[i] = slen;
            }
        p += slen + 1;
    }
    for (int i = 0; !st && i < 5; i++)
        if (!sec[i]) st = evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "%s: artifact lacks section %s", path, names[i]);
    if (!st) {
        m->program = sec[0]; sec[0] = NULL;
        evt_diag pd;
        evt_diag_init(&pd, path);
        evt_graph *g = evt_parse(m->program, strlen(m->program), &pd);
        if (!g) st = evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "%s: embedded program does not parse: %s", path, pd.text ? pd.text : "");
        evt_diag_free(&pd);
        for (int v = 0; !st && v < 2; v++) {
            evt_graph *vg = v == 0 ? g : evt_pass_unfuse(m->var[0].g);
            st = evt_variant_prepare(m, &m->var[v], vg, d);
            if (!st && strcmp(m->var[v].source, sec[1 + 2 * v]))
                st = evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0},
                                    "%s: generated code differs from this evtc's lowering; rebuild the artifact", path);
            if (!st) {
                m->var[v].code = sec[2 + 2 * v]; m->var[v].code_len = seclen[2 + 2 * v]; sec[2 + 2 * v] = NULL;
                st = ops(m)->load(m, &m->var[v], d);
            }
        }
    }
    for (int i = 0; i < 5; i++) free(sec[i]);
    free(buf);
    if (st) { evt_module_free(m); return st; }
    *out = m;
    return EVT_OK;
}

/* ---- binding and launching ---- */

/* Evicts least recently used entries other than `keep` while the cache
 * holds more than EVT_BIND_CACHE_BYTES of bound data. */
static void trim_cache(evt_module *m, const evt_bind_entry *keep)
{
    for (;;) {
        size_t total = 0;
        evt_bind_entry *lru = NULL;
        for (int i = 0; i < EVT_BIND_CACHE; i++) {
            evt_bind_entry *e = &m->cache[i];
            if (!e->used) continue;
            total += e->bytes;
            if (e != keep && (!lru || e->last_use < lru->last_use)) lru = e;
        }
        if (total <= EVT_BIND_CACHE_BYTES || !lru) return;
        drop_entry(m, lru);
    }
}

static evt_bind_entry *lookup(evt_module *m, int variant, const int64_t *sym, evt_sched_kind sched,
                              int nworkers, int policy, int exact)
{
    int ns = m->var[variant].g->nsyms;
    for (int i = 0; i < EVT_BIND_CACHE; i++) {
        evt_bind_entry *e = &m->cache[i];
        if (e->used && e->variant == variant && e->sched == sched && e->nworkers == nworkers &&
            e->policy == policy && e->exact == exact && !memcmp(e->sym, sym, ns * sizeof(int64_t)))
            return e;
    }
    return NULL;
}

evt_status evt_module_run(evt_module *m, const int64_t *sym, evt_buffers *b, const evt_run_opts *o,
                          evt_run_stats *stats, evt_diag *d)
{
    static const evt_run_opts defaults;
    if (!o) o = &defaults;
    evt_run_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    int variant = o->sched == EVT_SCHED_UNFUSED ? 1 : 0;
    if (!m->var[variant].p) {
        evt_status st = add_unfused(m, d);
        if (st) return st;
    }
    const evt_graph *g = m->var[variant].g;
    for (int i = 0; i < g->nsyms; i++)
        if (sym[i] < g->syms[i]->lo || sym[i] > g->syms[i]->hi)
            return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "symbol %s = %lld is outside [%lld, %lld]", g->syms[i]->name,
                                  (long long)sym[i], (long long)g->syms[i]->lo, (long long)g->syms[i]->hi);
    int nworkers = o->workers > 0 ? o->workers : ops(m)->default_workers(m, o);
    if ((unsigned)o->sched >= EVT_SCHED_COUNT)
        return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "unknown schedule kind %d", (int)o->sched);
    /* unfused is the static schedule of variant 1 */
    evt_sched_kind sched = o->sched == EVT_SCHED_UNFUSED ? EVT_SCHED_STATIC : o->sched;
    int queued = sched == EVT_SCHED_STATIC || sched == EVT_SCHED_HYBRID;
    int policy = queued ? (int)o->policy : 0;
    int exact = queued ? o->exact_shape : 0;
    evt_bind_entry *be = lookup(m, variant, sym, sched, nworkers, policy, exact);
    stats->cache_hit = be != NULL;
    if (!be) {
        be = &m->cache[0];
        for (int i = 0; i < EVT_BIND_CACHE; i++) {
            if (!m->cache[i].used) { be = &m->cache[i]; break; }
            if (m->cache[i].last_use < be->last_use) be = &m->cache[i];
        }
        if (be->used) drop_entry(m, be);
        evt_status st = evt_bind(m->var[variant].p, sym, sched, nworkers, (evt_queue_policy)policy, exact, &be->b, d);
        if (st) return st;
        be->used = 1; be->variant = variant; be->sched = sched; be->nworkers = nworkers;
        be->policy = policy; be->exact = exact;
        be->sym = malloc((g->nsyms + 1) * sizeof(int64_t));
        memcpy(be->sym, sym, g->nsyms * sizeof(int64_t));
        be->bytes = evt_bound_bytes(&be->b);
        stats->bind_ms = be->b.bind_ms;
        trim_cache(m, be);
    }
    be->last_use = ++m->tick;
    stats->ntasks = be->b.s.ntasks;
    stats->bucket_used = be->b.bucket_used;
    return ops(m)->launch(m, &m->var[variant], be, b, o, stats, d);
}
