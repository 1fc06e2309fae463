/* safetensors.c — the safetensors reader (include/evt/safetensors.h): an
 * index of every tensor's file, dtype, shape and byte range, built from the
 * files' JSON headers (cJSON), and reads that convert to bf16 or f32. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>
#include "evt/safetensors.h"
#include "runtime/half.h"

#define ST_MAX_HEADER ((uint64_t)256 << 20) /* a header past this is not a checkpoint's */
#define ST_CHUNK ((size_t)1 << 22)           /* elements converted a read */

typedef struct st_entry {
    char *name;
    char dtype[8];
    int rank, file;
    int64_t shape[EVT_ST_MAX_RANK];
    uint64_t offset, bytes; /* from the file's start */
} st_entry;

struct evt_st {
    char **files;
    int nfiles;
    st_entry *e;
    int n, cap;
};

static const evt_loc NOLOC = {0, 0};

static int dtype_size(const char *dt)
{
    if (!strcmp(dt, "BF16") || !strcmp(dt, "F16")) return 2;
    if (!strcmp(dt, "F32")) return 4;
    return 0; /* a dtype this reader does not convert (indexed all the same) */
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static evt_status add_entry(evt_st *st, const char *file, int fi, const cJSON *it, uint64_t base, uint64_t fsize, evt_diag *d)
{
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(it, "dtype"), *sh = cJSON_GetObjectItemCaseSensitive(it, "shape"),
                *off = cJSON_GetObjectItemCaseSensitive(it, "data_offsets");
    if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2)
        return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: tensor %s: its header entry lacks dtype, shape or data_offsets", file,
                              it->string);
    st_entry e = {0};
    snprintf(e.dtype, sizeof e.dtype, "%s", dt->valuestring);
    e.rank = cJSON_GetArraySize(sh);
    if (e.rank > EVT_ST_MAX_RANK)
        return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: tensor %s has rank %d (at most %d read here)", file, it->string, e.rank,
                              EVT_ST_MAX_RANK);
    uint64_t n = 1;
    for (int k = 0; k < e.rank; k++) {
        const cJSON *v = cJSON_GetArrayItem(sh, k);
        if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 1e15)
            return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: tensor %s: a bad extent in its shape", file, it->string);
        e.shape[k] = (int64_t)v->valuedouble;
        n *= (uint64_t)e.shape[k];
    }
    const cJSON *b0 = cJSON_GetArrayItem(off, 0), *b1 = cJSON_GetArrayItem(off, 1);
    if (!cJSON_IsNumber(b0) || !cJSON_IsNumber(b1) || b0->valuedouble < 0 || b1->valuedouble < b0->valuedouble)
        return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: tensor %s: bad data_offsets", file, it->string);
    const uint64_t lo = (uint64_t)b0->valuedouble, hi = (uint64_t)b1->valuedouble;
    const int sz = dtype_size(e.dtype);
    if (sz && hi - lo != n * (uint64_t)sz)
        return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: tensor %s: %llu bytes for %llu %s elements", file, it->string,
                              (unsigned long long)(hi - lo), (unsigned long long)n, e.dtype);
    if (base + hi > fsize)
        return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: tensor %s lies past the end of the file (truncated?)", file, it->string);
    e.offset = base + lo;
    e.bytes = hi - lo;
    e.file = fi;
    for (int i = 0; i < st->n; i++)
        if (!strcmp(st->e[i].name, it->string))
            return evt_diag_error(d, EVT_ERR_IO, NOLOC, "tensor %s is in both %s and %s", it->string, st->files[st->e[i].file], file);
    if (st->n == st->cap) {
        int cap = st->cap ? 2 * st->cap : 64;
        st_entry *ne = realloc(st->e, (size_t)cap * sizeof *ne);
        if (!ne) return EVT_ERR_NOMEM;
        st->e = ne;
        st->cap = cap;
    }
    if (!(e.name = strdup(it->string))) return EVT_ERR_NOMEM;
    st->e[st->n++] = e;
    return EVT_OK;
}

static evt_status index_file(evt_st *st, int fi, evt_diag *d)
{
    const char *file = st->files[fi];
    FILE *f = fopen(file, "rb");
    if (!f) return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: %s", file, strerror(errno));
    evt_status s = EVT_OK;
    char *hdr = NULL;
    cJSON *j = NULL;
    unsigned char len8[8];
    struct stat sb;
    if (fstat(fileno(f), &sb) || fread(len8, 1, 8, f) != 8) {
        s = evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: not a safetensors file (shorter than its 8-byte header length)", file);
        goto out;
    }
    uint64_t hl = 0;
    for (int k = 7; k >= 0; k--) hl = hl << 8 | len8[k];
    if (hl < 2 || hl > ST_MAX_HEADER || 8 + hl > (uint64_t)sb.st_size) {
        s = evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: not a safetensors file (header length %llu, file %lld bytes)", file,
                           (unsigned long long)hl, (long long)sb.st_size);
        goto out;
    }
    if (!(hdr = malloc(hl))) { s = EVT_ERR_NOMEM; goto out; }
    if (fread(hdr, 1, hl, f) != hl) {
        s = evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: could not read its %llu-byte header", file, (unsigned long long)hl);
        goto out;
    }
    j = cJSON_ParseWithLength(hdr, hl);
    if (!cJSON_IsObject(j)) {
        s = evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: its header is not a JSON object", file);
        goto out;
    }
    for (const cJSON *it = j->child; it && !s; it = it->next)
        if (strcmp(it->string, "__metadata__")) s = add_entry(st, file, fi, it, 8 + hl, (uint64_t)sb.st_size, d);
out:
    cJSON_Delete(j);
    free(hdr);
    fclose(f);
    return s;
}

static int has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

static evt_status list_files(evt_st *st, const char *path, evt_diag *d)
{
    struct stat sb;
    if (stat(path, &sb)) return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) {
        if (!(st->files = malloc(sizeof(char *))) || !(st->files[0] = strdup(path))) return EVT_ERR_NOMEM;
        st->nfiles = 1;
        return EVT_OK;
    }
    DIR *dir = opendir(path);
    if (!dir) return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: %s", path, strerror(errno));
    int cap = 0;
    evt_status s = EVT_OK;
    for (struct dirent *de; (de = readdir(dir)) && !s;) {
        if (!has_suffix(de->d_name, ".safetensors")) continue;
        if (st->nfiles == cap) {
            cap = cap ? 2 * cap : 8;
            char **nf = realloc(st->files, (size_t)cap * sizeof *nf);
            if (!nf) { s = EVT_ERR_NOMEM; break; }
            st->files = nf;
        }
        size_t n = strlen(path) + strlen(de->d_name) + 2;
        char *f = malloc(n);
        if (!f) { s = EVT_ERR_NOMEM; break; }
        snprintf(f, n, "%s/%s", path, de->d_name);
        st->files[st->nfiles++] = f;
    }
    closedir(dir);
    if (s) return s;
    if (!st->nfiles) return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: no *.safetensors file in this directory", path);
    qsort(st->files, (size_t)st->nfiles, sizeof(char *), cmp_str);
    return EVT_OK;
}

evt_status evt_st_open(const char *path, evt_st **out, evt_diag *d)
{
    *out = NULL;
    evt_st *st = calloc(1, sizeof *st);
    if (!st) return EVT_ERR_NOMEM;
    evt_status s = list_files(st, path, d);
    for (int i = 0; i < st->nfiles && !s; i++) s = index_file(st, i, d);
    if (s) {
        evt_st_close(st);
        return s;
    }
    *out = st;
    return EVT_OK;
}

void evt_st_close(evt_st *st)
{
    if (!st) return;
    for (int i = 0; i < st->n; i++) free(st->e[i].name);
    for (int i = 0; i < st->nfiles; i++) free(st->files[i]);
    free(st->e);
    free(st->files);
    free(st);
}

int evt_st_count(const evt_st *st) { return st ? st->n : 0; }

static const st_entry *lookup(const evt_st *st, const char *name)
{
    for (int i = 0; i < st->n; i++)
        if (!strcmp(st->e[i].name, name)) return &st->e[i];
    return NULL;
}

int evt_st_find(const evt_st *st, const char *name, evt_st_info *info)
{
    const st_entry *e = lookup(st, name);
    if (!e) return 0;
    if (info) {
        memset(info, 0, sizeof *info);
        info->dtype = e->dtype;
        info->rank = e->rank;
        memcpy(info->shape, e->shape, sizeof e->shape);
        info->file = st->files[e->file];
    }
    return 1;
}

static void shape_str(char *buf, size_t n, int rank, const int64_t *shape)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < rank && k < n; i++) k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

evt_status evt_st_check(const evt_st *st, const char *name, int rank, const int64_t *shape, evt_diag *d)
{
    const st_entry *e = lookup(st, name);
    if (!e) return evt_diag_error(d, EVT_ERR_IO, NOLOC, "the checkpoint has no tensor %s", name);
    const char *file = st->files[e->file];
    int same = e->rank == rank;
    for (int k = 0; same && k < rank; k++) same = e->shape[k] == shape[k];
    if (!same) {
        char want[96], got[96];
        shape_str(want, sizeof want, rank, shape);
        shape_str(got, sizeof got, e->rank, e->shape);
        return evt_diag_error(d, EVT_ERR_SHAPE, NOLOC, "%s: tensor %s is %s, the model needs %s (another config?)", file, name, got,
                              want);
    }
    if (!dtype_size(e->dtype))
        return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: tensor %s is %s (BF16, F16 or F32 read here)", file, name, e->dtype);
    return EVT_OK;
}

/* Reads tensor `name` of `shape` as f32, chunk by chunk, handing each chunk
   (its first element's index, its count) to `sink`. */
typedef void (*st_sink)(void *ctx, uint64_t at, const float *v, size_t n);
static evt_status read_as_f32(const evt_st *st, const char *name, int rank, const int64_t *shape, st_sink sink, void *ctx,
                              evt_diag *d)
{
    evt_status s = evt_st_check(st, name, rank, shape, d);
    if (s) return s;
    const st_entry *e = lookup(st, name);
    const char *file = st->files[e->file];
    const int sz = dtype_size(e->dtype);
    FILE *f = fopen(file, "rb");
    if (!f) return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: %s", file, strerror(errno));
    unsigned char *raw = malloc(ST_CHUNK * (size_t)sz);
    float *v = malloc(ST_CHUNK * sizeof(float));
    if (!raw || !v) s = EVT_ERR_NOMEM;
    else if (fseeko(f, (off_t)e->offset, SEEK_SET)) s = evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: %s", file, strerror(errno));
    const uint64_t total = e->bytes / (uint64_t)sz;
    for (uint64_t at = 0; at < total && !s; at += ST_CHUNK) {
        const size_t n = total - at < ST_CHUNK ? (size_t)(total - at) : ST_CHUNK;
        if (fread(raw, (size_t)sz, n, f) != n) {
            s = evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: tensor %s: short read", file, name);
            break;
        }
        for (size_t i = 0; i < n; i++) {
            if (sz == 4) memcpy(&v[i], raw + 4 * i, 4); /* (little-endian hosts) */
            else {
                const uint16_t h = (uint16_t)(raw[2 * i] | raw[2 * i + 1] << 8);
                v[i] = e->dtype[0] == 'B' ? evt_bf16_to_f32(h) : evt_f16_to_f32(h);
            }
        }
        sink(ctx, at, v, n);
    }
    free(raw);
    free(v);
    fclose(f);
    return s;
}

typedef struct { uint16_t *dst; const float *scale; int64_t cols; } bf16_ctx;
static void to_bf16(void *c, uint64_t at, const float *v, size_t n)
{
    bf16_ctx *x = c;
    uint16_t *dst = x->dst + at;
    if (!x->scale) {
        for (size_t i = 0; i < n; i++) dst[i] = evt_f32_to_bf16(v[i]);
        return;
    }
    /* the column walks along with i: one division a chunk, not one an element */
    for (size_t i = 0, k = (size_t)(at % (uint64_t)x->cols); i < n; i++) {
        dst[i] = evt_f32_to_bf16(v[i] * x->scale[k]);
        if (++k == (size_t)x->cols) k = 0;
    }
}
static void to_f32(void *c, uint64_t at, const float *v, size_t n) { memcpy((float *)c + at, v, n * sizeof(float)); }

evt_status evt_st_read_bf16(const evt_st *st, const char *name, int rank, const int64_t *shape, uint16_t *dst,
                            const float *col_scale, evt_diag *d)
{
    if (rank < 1 || rank > EVT_ST_MAX_RANK) return evt_diag_error(d, EVT_ERR_SHAPE, NOLOC, "tensor %s: rank %d asked", name, rank);
    bf16_ctx c = {dst, col_scale, shape[rank - 1] > 0 ? shape[rank - 1] : 1};
    return read_as_f32(st, name, rank, shape, to_bf16, &c, d);
}

evt_status evt_st_read_f32(const evt_st *st, const char *name, int rank, const int64_t *shape, float *dst, evt_diag *d)
{
    if (rank < 1 || rank > EVT_ST_MAX_RANK) return evt_diag_error(d, EVT_ERR_SHAPE, NOLOC, "tensor %s: rank %d asked", name, rank);
    return read_as_f32(st, name, rank, shape, to_f32, dst, d);
}
