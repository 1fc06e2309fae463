/* buffers.c — host copies of a program's tensors at one shape: allocation,
 * initialisation (zeros, const, seeded random, range, file, RoPE table), poisoning of
 * everything else, comparison, and parsing of --set NAME=VALUE. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "evt/runtime.h"
#include "runtime/half.h"
#include "tiles/rope.h"

struct evt_buffers {
    uint64_t uid;          /* unique per buffers object in this process (weight residency) */
    int n;
    void **data;
    unsigned char *shared; /* data[i] is another buffers' (evt_buffers_new_sharing): not freed here */
    size_t *bytes;
    int64_t (*dims)[EVT_MAX_RANK];
};

uint64_t evt_buffers_uid(const evt_buffers *b) { return b->uid; }

const char *evt_backend_name(evt_backend b) { return b == EVT_BACKEND_CUDA ? "cuda" : "cpu"; }

evt_status evt_shape_parse(const evt_graph *g, int nsets, const char *const *sets, int64_t *sym, evt_diag *d)
{
    for (int i = 0; i < g->nsyms; i++) sym[i] = g->syms[i]->def;
    for (int i = 0; i < nsets; i++) {
        const char *eq = strchr(sets[i], '=');
        if (!eq)
            return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "--set %s: expected NAME=VALUE", sets[i]);
        char name[128];
        size_t len = (size_t)(eq - sets[i]);
        if (len >= sizeof name) len = sizeof name - 1;
        memcpy(name, sets[i], len);
        name[len] = 0;
        const evt_sym *s = evt_graph_find_sym(g, name);
        if (!s) return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "--set %s: unknown symbol '%s'", sets[i], name);
        errno = 0;
        char *end;
        long long v = strtoll(eq + 1, &end, 10);
        if (eq[1] == 0 || *end || errno)
            return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "--set %s: '%s' is not an integer", sets[i], eq + 1);
        if (v < 0)
            return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "--set %s: symbol values cannot be negative", sets[i]);
        if (v < s->lo || v > s->hi)
            return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "--set %s: %s must be in [%lld, %lld]", sets[i], name,
                                  (long long)s->lo, (long long)s->hi);
        sym[s->id] = v;
    }
    return EVT_OK;
}

/* splitmix64: a small, well-mixed generator, the same on every platform */
static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void store(void *p, evt_dtype t, int64_t i, double v)
{
    switch (t) {
    case EVT_F32: ((float *)p)[i] = (float)v; break;
    case EVT_BF16: ((uint16_t *)p)[i] = evt_f32_to_bf16((float)v); break;
    case EVT_F16: ((uint16_t *)p)[i] = evt_f32_to_f16((float)v); break;
    case EVT_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case EVT_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    case EVT_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    default: break;
    }
}

static int is_int(evt_dtype t) { return t == EVT_I32 || t == EVT_I64 || t == EVT_U8; }

#define RANDOM_CHUNK ((int64_t)1 << 20)
typedef struct random_job {
    const evt_tensor *t;
    void *p;
    int64_t n;
    uint64_t seed;
    int64_t next_chunk; /* taken with an atomic add by the fill threads */
} random_job;

static void *random_worker(void *arg)
{
    random_job *j = arg;
    double lo = j->t->init.lo, hi = j->t->init.hi;
    int64_t span = (int64_t)hi - (int64_t)lo;
    for (;;) {
        int64_t c = __atomic_fetch_add(&j->next_chunk, 1, __ATOMIC_RELAXED);
        int64_t i0 = c * RANDOM_CHUNK;
        if (i0 >= j->n) return NULL;
        uint64_t s = j->seed ^ (uint64_t)c * 0xd1b54a32d192ed03ull;
        for (int64_t i = i0; i < i0 + RANDOM_CHUNK && i < j->n; i++) {
            uint64_t r = mix(&s);
            if (is_int(j->t->dtype))
                store(j->p, j->t->dtype, i, span > 0 ? (double)((int64_t)lo + (int64_t)(r % (uint64_t)span)) : lo);
            else
                store(j->p, j->t->dtype, i, lo + (hi - lo) * ((r >> 11) * 0x1.0p-53));
        }
    }
}

static evt_status init_tensor(const evt_tensor *t, void *p, const int64_t *dims, int64_t n, size_t bytes, uint64_t seed,
                              int poison, evt_diag *d)
{
    const evt_init *in = &t->init;
    switch (in->kind) {
    case EVT_INIT_NONE: memset(p, poison, bytes); break;
    case EVT_INIT_ZEROS: memset(p, 0, bytes); break;
    case EVT_INIT_CONST: for (int64_t i = 0; i < n; i++) store(p, t->dtype, i, in->value); break;
    case EVT_INIT_RANGE: for (int64_t i = 0; i < n; i++) store(p, t->dtype, i, (double)i); break;
    case EVT_INIT_RANDOM: {
        /* the stream restarts every RANDOM_CHUNK elements from a seed mixed
           with the chunk index: the values do not depend on how many
           threads fill the tensor */
        random_job job = {t, p, n, in->seed * 0x100000001b3ull ^ seed * 0x9e3779b97f4a7c15ull ^ (uint64_t)t->id, 0};
        int nth = n > 4 * RANDOM_CHUNK ? 8 : 1;
        pthread_t th[8];
        int started = 0;
        for (int k = 1; k < nth; k++) started += !pthread_create(&th[started], NULL, random_worker, &job);
        random_worker(&job);
        for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
        break;
    }
    case EVT_INIT_ROPE: /* f32 [P, d] (verify.c) */
        if (t->dtype != EVT_F32 || t->rank != 2 || dims[1] % 2)
            return evt_diag_error(d, EVT_ERR_SHAPE, t->loc, "tensor %s: rope(...) fills f32 [positions, head_dim] with an even "
                                  "head_dim; here %s of rank %d, last extent %lld", t->name, evt_dtype_name(t->dtype), t->rank,
                                  (long long)dims[t->rank > 0 ? t->rank - 1 : 0]);
        for (int64_t r = 0; r < dims[0]; r++) evt_rope_row(in->value, dims[1], r, (float *)p + r * dims[1]);
        break;
    case EVT_INIT_FILE: {
        FILE *f = fopen(in->path, "rb");
        if (!f) return evt_diag_error(d, EVT_ERR_IO, t->loc, "tensor %s: cannot open %s", t->name, in->path);
        size_t got = fread(p, 1, bytes, f);
        int extra = fgetc(f) != EOF;
        fclose(f);
        if (got != bytes || extra)
            return evt_diag_error(d, EVT_ERR_IO, t->loc, "tensor %s: %s holds %s bytes, expected exactly %zu", t->name, in->path,
                                  extra ? "more than" : "fewer", bytes);
        break;
    }
    }
    return EVT_OK;
}

int evt_tensor_rezeroed_after_abort(const evt_tensor *t) { return t->role == EVT_SCRATCH && t->init.kind == EVT_INIT_ZEROS; }

/* The tensor of `from` (buffers of from_g) that weight t at `bytes` may
   share, or NULL. */
static void *shareable(const evt_tensor *t, size_t bytes, const evt_graph *from_g, evt_buffers *from)
{
    if (!from || t->role != EVT_WEIGHT) return NULL;
    const evt_tensor *f = evt_graph_find_tensor(from_g, t->name);
    if (!f || f->role != EVT_WEIGHT || f->dtype != t->dtype || f->id >= from->n || from->bytes[f->id] != bytes) return NULL;
    return from->data[f->id];
}

evt_status evt_buffers_new(const evt_graph *g, const int64_t *sym, uint64_t seed, int poison,
                           evt_buffers **out, evt_diag *d)
{
    return evt_buffers_new_sharing(g, sym, seed, poison, NULL, NULL, out, d);
}

evt_status evt_buffers_new_sharing(const evt_graph *g, const int64_t *sym, uint64_t seed, int poison, const evt_graph *from_g,
                                   evt_buffers *from, evt_buffers **out, evt_diag *d)
{
    static uint64_t next_uid;
    evt_buffers *b = calloc(1, sizeof *b);
    if (!b) return EVT_ERR_NOMEM;
    b->uid = __atomic_add_fetch(&next_uid, 1, __ATOMIC_RELAXED);
    b->n = g->ntensors;
    b->data = calloc(b->n + 1, sizeof(void *));
    b->bytes = calloc(b->n + 1, sizeof(size_t));
    b->dims = calloc(b->n + 1, sizeof *b->dims);
    b->shared = calloc(b->n + 1, 1);
    if (!b->data || !b->bytes || !b->dims || !b->shared) { evt_buffers_free(b); return EVT_ERR_NOMEM; }
    evt_eval_env env = {.sym = sym};
    for (int i = 0; i < g->ntensors; i++) {
        const evt_tensor *t = g->tensors[i];
        int64_t n = 1;
        int err = 0;
        for (int k = 0; k < EVT_MAX_RANK; k++) {
            int64_t v = k < t->rank ? evt_expr_eval(t->shape[k], &env, &err) : 1;
            if (v < 0 || err) {
                evt_buffers_free(b);
                return evt_diag_error(d, EVT_ERR_SHAPE, t->loc, "tensor %s has a negative or undefined extent at this shape", t->name);
            }
            b->dims[i][k] = v;
            n *= v;
        }
        if (n > (int64_t)1 << 34) {
            evt_buffers_free(b);
            return evt_diag_error(d, EVT_ERR_SHAPE, t->loc, "tensor %s is too large (%lld elements)", t->name, (long long)n);
        }
        b->bytes[i] = (size_t)n * evt_dtype_size(t->dtype);
        if ((b->data[i] = shareable(t, b->bytes[i], from_g, from))) {
            b->shared[i] = 1;
            continue;
        }
        b->data[i] = malloc(b->bytes[i] + 16);
        if (!b->data[i]) { evt_buffers_free(b); return evt_diag_error(d, EVT_ERR_NOMEM, t->loc, "out of memory for %s", t->name); }
        evt_status st = init_tensor(t, b->data[i], b->dims[i], n, b->bytes[i], seed, poison, d);
        if (st) { evt_buffers_free(b); return st; }
    }
    *out = b;
    return EVT_OK;
}

void evt_buffers_free(evt_buffers *b)
{
    if (!b) return;
    for (int i = 0; i < b->n && b->data; i++)
        if (!b->shared || !b->shared[i]) free(b->data[i]);
    free(b->data); free(b->bytes); free(b->dims); free(b->shared);
    free(b);
}

void *evt_buffers_data(evt_buffers *b, int tensor, size_t *bytes)
{
    if (bytes) *bytes = b->bytes[tensor];
    return b->data[tensor];
}

const int64_t *evt_buffers_dims(const evt_buffers *b, int tensor) { return b->dims[tensor]; }

static double load(const void *p, evt_dtype t, int64_t i)
{
    switch (t) {
    case EVT_F32: return ((const float *)p)[i];
    case EVT_BF16: return evt_bf16_to_f32(((const uint16_t *)p)[i]);
    case EVT_F16: return evt_f16_to_f32(((const uint16_t *)p)[i]);
    case EVT_I32: return ((const int32_t *)p)[i];
    case EVT_I64: return (double)((const int64_t *)p)[i];
    case EVT_U8: return ((const uint8_t *)p)[i];
    default: return 0;
    }
}

int evt_buffers_compare_tensor(const evt_graph *g, evt_buffers *a, evt_buffers *b, int i, double rtol, evt_printer *report)
{
    const evt_tensor *t = g->tensors[i];
    if (a->bytes[i] != b->bytes[i]) {
        evt_pr(report, "%s: sizes differ\n", t->name);
        return 1;
    }
    if (rtol == 0) {
        if (!memcmp(a->data[i], b->data[i], a->bytes[i])) return 0;
        int64_t n = (int64_t)(a->bytes[i] / evt_dtype_size(t->dtype)), first = -1, count = 0;
        int es = evt_dtype_size(t->dtype);
        for (int64_t k = 0; k < n; k++)
            if (memcmp((char *)a->data[i] + k * es, (char *)b->data[i] + k * es, es)) { if (first < 0) first = k; count++; }
        evt_pr(report, "%s: %lld of %lld elements differ bitwise; first at %lld: %.9g vs %.9g\n", t->name,
               (long long)count, (long long)n, (long long)first, load(a->data[i], t->dtype, first),
               load(b->data[i], t->dtype, first));
        return 1;
    }
    int64_t n = (int64_t)(a->bytes[i] / evt_dtype_size(t->dtype));
    double maxerr = 0, maxref = 0;
    int nan = 0;
    for (int64_t k = 0; k < n; k++) {
        double x = load(a->data[i], t->dtype, k), y = load(b->data[i], t->dtype, k);
        if (isnan(x) != isnan(y)) nan = 1;
        if (fabs(x - y) > maxerr) maxerr = fabs(x - y);
        if (fabs(y) > maxref) maxref = fabs(y);
    }
    double rel = maxref > 0 ? maxerr / maxref : maxerr;
    if (nan || rel > rtol) {
        evt_pr(report, "%s: relative error %.3g exceeds %.3g%s\n", t->name, rel, rtol, nan ? " (NaN mismatch)" : "");
        return 1;
    }
    return 0;
}

int evt_buffers_compare(const evt_graph *g, evt_buffers *a, evt_buffers *b, double rtol, evt_printer *report)
{
    int bad = 0;
    for (int i = 0; i < g->ntensors; i++)
        if (g->tensors[i]->role == EVT_OUTPUT) bad += evt_buffers_compare_tensor(g, a, b, i, rtol, report);
    return bad;
}
