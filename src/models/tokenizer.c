/* tokenizer.c — byte-level BPE from a Hugging Face tokenizer.json
 * (include/evt/tokenizer.h): the file read with cJSON, the normalizers by
 * utf8proc, the pre-tokenizer's regexes by PCRE2, the merges by rank. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include <cjson/cJSON.h>
#include "evt/tokenizer.h"

#define TK_MAX_FILE ((long)1 << 30) /* a tokenizer.json past 1 GiB is not one */
#define TK_MAX_STEPS 8              /* normalizer and pre-tokenizer steps */

/* GPT-2's split, which ByteLevel applies itself when use_regex is set */
static const char GPT2_SPLIT[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static const evt_loc NOLOC = {0, 0};

/* ---- string -> id and (id, id) -> merge, open addressing ---- */

typedef struct str_map { /* keys are NUL-free byte strings owned by the map */
    char **key;
    uint32_t *klen;
    int32_t *val;
    size_t cap, n;
} str_map;

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static int str_map_init(str_map *m, size_t want)
{
    m->cap = 16;
    while (m->cap < 2 * want + 16) m->cap *= 2;
    m->n = 0;
    m->key = calloc(m->cap, sizeof *m->key);
    m->klen = calloc(m->cap, sizeof *m->klen);
    m->val = calloc(m->cap, sizeof *m->val);
    return m->key && m->klen && m->val;
}

static void str_map_free(str_map *m)
{
    if (m->key)
        for (size_t i = 0; i < m->cap; i++) free(m->key[i]);
    free(m->key);
    free(m->klen);
    free(m->val);
}

/* The slot of key s, or of the empty place it would go. */
static size_t str_map_slot(const str_map *m, const char *s, size_t n)
{
    size_t i = hash_bytes(s, n) & (m->cap - 1);
    while (m->key[i] && !(m->klen[i] == n && !memcmp(m->key[i], s, n))) i = (i + 1) & (m->cap - 1);
    return i;
}

static int32_t str_map_get(const str_map *m, const char *s, size_t n)
{
    size_t i = str_map_slot(m, s, n);
    return m->key[i] ? m->val[i] : -1;
}

/* 1 on success, 0 out of memory, -1 if the key is there already. */
static int str_map_put(str_map *m, const char *s, size_t n, int32_t v)
{
    size_t i = str_map_slot(m, s, n);
    if (m->key[i]) return -1;
    if (2 * (m->n + 1) > m->cap) return 0; /* sized at init */
    if (!(m->key[i] = malloc(n + 1))) return 0;
    memcpy(m->key[i], s, n);
    m->key[i][n] = 0;
    m->klen[i] = (uint32_t)n;
    m->val[i] = v;
    m->n++;
    return 1;
}

typedef struct merge_map { /* (left id, right id) -> rank and merged id */
    uint64_t *key;         /* left << 32 | right, plus 1 so that 0 is empty */
    int32_t *rank, *merged;
    size_t cap;
} merge_map;

static size_t merge_slot(const merge_map *m, uint64_t key)
{
    uint64_t h = key * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h ^ (h >> 31)) & (m->cap - 1);
    while (m->key[i] && m->key[i] != key) i = (i + 1) & (m->cap - 1);
    return i;
}

static uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1; }

/* ---- the tokenizer ---- */

typedef enum { NORM_NFC, NORM_NFD, NORM_NFKC, NORM_NFKD } norm_kind;

typedef struct added_token {
    char *content;  /* as written (and decoded) */
    char *match;    /* what is matched: the content, normalized if `normalized` */
    size_t len;     /* of match */
    int32_t id;
    int normalized; /* matched in the normalized text, else in the raw text */
} added_token;

struct evt_tokenizer {
    str_map vocab;     /* byte-level spelling -> id */
    char **id_str;     /* id -> spelling (vocabulary or added token), NULL for a gap */
    int64_t nids;
    merge_map merges;
    int ignore_merges;
    added_token *added;
    int nadded;
    int has_normalized_added;
    norm_kind norm[TK_MAX_STEPS];
    int nnorm;
    pcre2_code *split[TK_MAX_STEPS]; /* the Split steps before ByteLevel, in order */
    int nsplit;
    int prefix_space;    /* ByteLevel's add_prefix_space */
    pcre2_code *bl_split; /* ByteLevel's own regex (use_regex), or NULL */
    uint32_t byte_cp[256]; /* byte -> the character standing for it */
    int16_t cp_byte[512];  /* that character -> the byte, -1 for others */
};

static void byte_level_tables(evt_tokenizer *tk)
{
    /* printable Latin-1 bytes stand for themselves; the rest (controls,
       space, DEL, NBSP, soft hyphen) take 256, 257, ... in byte order */
    for (int c = 0; c < 512; c++) tk->cp_byte[c] = -1;
    uint32_t next = 256;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        tk->byte_cp[b] = printable ? (uint32_t)b : next++;
        tk->cp_byte[tk->byte_cp[b]] = (int16_t)b;
    }
}

void evt_tokenizer_free(evt_tokenizer *tk)
{
    if (!tk) return;
    str_map_free(&tk->vocab);
    if (tk->id_str)
        for (int64_t i = 0; i < tk->nids; i++) free(tk->id_str[i]);
    free(tk->id_str);
    free(tk->merges.key);
    free(tk->merges.rank);
    free(tk->merges.merged);
    for (int i = 0; i < tk->nadded; i++) {
        free(tk->added[i].content);
        free(tk->added[i].match);
    }
    free(tk->added);
    for (int i = 0; i < tk->nsplit; i++) pcre2_code_free(tk->split[i]);
    pcre2_code_free(tk->bl_split);
    free(tk);
}

int64_t evt_tokenizer_vocab_size(const evt_tokenizer *tk) { return tk->nids; }

int64_t evt_tokenizer_token_id(const evt_tokenizer *tk, const char *token)
{
    for (int i = 0; i < tk->nadded; i++)
        if (!strcmp(tk->added[i].content, token)) return tk->added[i].id;
    return str_map_get(&tk->vocab, token, strlen(token));
}

static char *read_file(const char *path, long *len, evt_diag *d)
{
    FILE *f = fopen(path, "rb");
    if (!f) { evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: %s", path, strerror(errno)); return NULL; }
    char *buf = NULL;
    long n = -1;
    if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && n <= TK_MAX_FILE && !fseek(f, 0, SEEK_SET) &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = 0;
        *len = n;
    } else {
        evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: cannot read it%s", path, n > TK_MAX_FILE ? " (over 1 GiB)" : "");
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

static const char *json_type(const cJSON *o)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(t) ? t->valuestring : "";
}

/* A member that must be absent, null, false, 0 or "" for this reader. */
static int json_unset(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return !v || cJSON_IsNull(v) || cJSON_IsFalse(v) || (cJSON_IsNumber(v) && v->valuedouble == 0) ||
           (cJSON_IsString(v) && !v->valuestring[0]);
}

static int json_true(const cJSON *o, const char *name) { return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, name)); }

static evt_status compile_regex(const char *path, const char *pattern, int literal, pcre2_code **out, evt_diag *d)
{
    int err;
    PCRE2_SIZE at;
    uint32_t flags = PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0);
    *out = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, flags, &err, &at, NULL);
    if (*out) return EVT_OK;
    PCRE2_UCHAR msg[160];
    pcre2_get_error_message(err, msg, sizeof msg);
    return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: pre_tokenizer: the Split pattern does not compile at offset %zu: %s",
                          path, (size_t)at, (const char *)msg);
}

static evt_status load_normalizer(evt_tokenizer *tk, const char *path, const cJSON *n, evt_diag *d)
{
    if (!n || cJSON_IsNull(n)) return EVT_OK;
    const char *t = json_type(n);
    if (!strcmp(t, "Sequence")) {
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(n, "normalizers")) {
            evt_status st = load_normalizer(tk, path, it, d);
            if (st) return st;
        }
        return EVT_OK;
    }
    static const char *names[] = {"NFC", "NFD", "NFKC", "NFKD"}; /* norm_kind order */
    for (int k = 0; k < 4; k++)
        if (!strcmp(t, names[k])) {
            if (tk->nnorm == TK_MAX_STEPS)
                return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: normalizer: more than %d steps", path, TK_MAX_STEPS);
            tk->norm[tk->nnorm++] = (norm_kind)k;
            return EVT_OK;
        }
    return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: normalizer %s is not supported (only NFC, NFD, NFKC, NFKD and Sequences of them)",
                          path, t);
}

static evt_status load_pre_tokenizer(evt_tokenizer *tk, const char *path, const cJSON *p, int *byte_level, evt_diag *d)
{
    const char *t = json_type(p);
    if (*byte_level)
        return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: pre_tokenizer: a %s step after ByteLevel is not supported", path, t);
    if (!strcmp(t, "Sequence")) {
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(p, "pretokenizers")) {
            evt_status st = load_pre_tokenizer(tk, path, it, byte_level, d);
            if (st) return st;
        }
        return EVT_OK;
    }
    if (!strcmp(t, "Split")) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(p, "pattern"), *beh = cJSON_GetObjectItemCaseSensitive(p, "behavior");
        const cJSON *re = cJSON_GetObjectItemCaseSensitive(pat, "Regex"), *lit = cJSON_GetObjectItemCaseSensitive(pat, "String");
        if (!cJSON_IsString(beh) || strcmp(beh->valuestring, "Isolated") || json_true(p, "invert"))
            return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: pre_tokenizer Split: only behavior Isolated without invert is supported", path);
        if (!cJSON_IsString(re) && !cJSON_IsString(lit))
            return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: pre_tokenizer Split: its pattern is neither a Regex nor a String", path);
        if (tk->nsplit == TK_MAX_STEPS)
            return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: pre_tokenizer: more than %d Split steps", path, TK_MAX_STEPS);
        evt_status st = compile_regex(path, cJSON_IsString(re) ? re->valuestring : lit->valuestring, !cJSON_IsString(re),
                                      &tk->split[tk->nsplit], d);
        if (st) return st;
        tk->nsplit++;
        return EVT_OK;
    }
    if (!strcmp(t, "ByteLevel")) {
        *byte_level = 1;
        tk->prefix_space = json_true(p, "add_prefix_space");
        const cJSON *ur = cJSON_GetObjectItemCaseSensitive(p, "use_regex");
        if (!ur || cJSON_IsTrue(ur)) return compile_regex(path, GPT2_SPLIT, 0, &tk->bl_split, d);
        return EVT_OK;
    }
    return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: pre_tokenizer %s is not supported (only Split, ByteLevel and Sequences of them)",
                          path, t[0] ? t : "without a type");
}

static evt_status normalize(const evt_tokenizer *tk, const char *s, size_t n, char **res, size_t *rn, evt_diag *d);

/* The added tokens (after the normalizer: a token marked `normalized` is
   matched by its normalized content, as Hugging Face's library does). */
static evt_status load_added(evt_tokenizer *tk, const char *path, const cJSON *list, evt_diag *d)
{
    int n = cJSON_GetArraySize(list);
    if (!n) return EVT_OK;
    if (!(tk->added = calloc((size_t)n, sizeof *tk->added))) return evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
    const cJSON *it;
    cJSON_ArrayForEach(it, list) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id"), *c = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble >= INT32_MAX || !cJSON_IsString(c) || !c->valuestring[0])
            return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: added_tokens: an entry without an id or a content", path);
        if (json_true(it, "lstrip") || json_true(it, "rstrip") || json_true(it, "single_word"))
            return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: added token %s: lstrip, rstrip and single_word are not supported", path,
                                  c->valuestring);
        added_token *a = &tk->added[tk->nadded++];
        if (!(a->content = strdup(c->valuestring))) return evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
        a->id = (int32_t)id->valuedouble;
        a->normalized = json_true(it, "normalized");
        tk->has_normalized_added |= a->normalized;
        evt_status st = a->normalized ? normalize(tk, a->content, strlen(a->content), &a->match, &a->len, d)
                                      : ((a->match = strdup(a->content)) ? (a->len = strlen(a->match), EVT_OK)
                                                                         : evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory"));
        if (st) return st;
        if (!a->len) return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: added token %s normalizes to nothing", path, a->content);
    }
    return EVT_OK;
}

static evt_status load_model(evt_tokenizer *tk, const char *path, const cJSON *m, evt_diag *d)
{
    if (strcmp(json_type(m), "BPE"))
        return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: model %s is not supported (only BPE)", path,
                              json_type(m)[0] ? json_type(m) : "without a type");
    static const char *unset[] = {"dropout", "continuing_subword_prefix", "end_of_word_suffix", "byte_fallback"};
    for (int k = 0; k < 4; k++)
        if (!json_unset(m, unset[k]))
            return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: model: %s is not supported", path, unset[k]);
    tk->ignore_merges = json_true(m, "ignore_merges");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(m, "vocab"), *merges = cJSON_GetObjectItemCaseSensitive(m, "merges");
    if (!cJSON_IsObject(vocab) || !cJSON_IsArray(merges))
        return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: model: no vocab object or merges list", path);
    const int nv = cJSON_GetArraySize(vocab), nm = cJSON_GetArraySize(merges);
    int64_t top = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, vocab) {
        if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble >= INT32_MAX)
            return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: vocab entry %s: not an id", path, it->string);
        if ((int64_t)it->valuedouble >= top) top = (int64_t)it->valuedouble + 1;
    }
    for (int i = 0; i < tk->nadded; i++)
        if (tk->added[i].id >= top) top = tk->added[i].id + 1;
    tk->nids = top;
    if (!str_map_init(&tk->vocab, (size_t)nv) || !(tk->id_str = calloc((size_t)top, sizeof *tk->id_str)))
        return evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
    cJSON_ArrayForEach(it, vocab) {
        const int32_t id = (int32_t)it->valuedouble;
        const size_t len = strlen(it->string);
        int r = str_map_put(&tk->vocab, it->string, len, id);
        if (r < 0) return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: vocab entry %s twice", path, it->string);
        if (!r || (!tk->id_str[id] && !(tk->id_str[id] = strdup(it->string))))
            return evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
    }
    for (int i = 0; i < tk->nadded; i++) { /* an added token's id decodes as it is matched (normalized if marked so) */
        const added_token *a = &tk->added[i];
        free(tk->id_str[a->id]);
        if (!(tk->id_str[a->id] = strdup(a->match))) return evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
    }
    merge_map *mm = &tk->merges;
    mm->cap = 16;
    while (mm->cap < 2 * (size_t)nm + 16) mm->cap *= 2;
    if (!(mm->key = calloc(mm->cap, sizeof *mm->key)) || !(mm->rank = malloc(mm->cap * sizeof *mm->rank)) ||
        !(mm->merged = malloc(mm->cap * sizeof *mm->merged)))
        return evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
    int rank = 0;
    char buf[1024];
    cJSON_ArrayForEach(it, merges) {
        const char *a = NULL, *b = NULL;
        size_t la = 0, lb = 0;
        if (cJSON_IsString(it)) { /* "left right" */
            const char *sp = strchr(it->valuestring, ' ');
            if (sp && !strchr(sp + 1, ' ')) { a = it->valuestring; la = (size_t)(sp - a); b = sp + 1; lb = strlen(b); }
        } else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 && cJSON_IsString(it->child) &&
                   cJSON_IsString(it->child->next)) { /* ["left", "right"] */
            a = it->child->valuestring; la = strlen(a);
            b = it->child->next->valuestring; lb = strlen(b);
        }
        if (!a || !la || !lb)
            return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: merge %d is neither \"left right\" nor [\"left\", \"right\"]", path, rank);
        if (la + lb >= sizeof buf) return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: merge %d: its tokens are too long", path, rank);
        memcpy(buf, a, la);
        memcpy(buf + la, b, lb);
        const int32_t ia = str_map_get(&tk->vocab, a, la), ib = str_map_get(&tk->vocab, b, lb),
                      iab = str_map_get(&tk->vocab, buf, la + lb);
        if (ia < 0 || ib < 0 || iab < 0)
            return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: merge %d (%.*s + %.*s): a token not in the vocab", path, rank, (int)la, a,
                                  (int)lb, b);
        const uint64_t key = pair_key(ia, ib);
        size_t s = merge_slot(mm, key);
        if (!mm->key[s]) { /* the first of a pair listed twice ranks */
            mm->key[s] = key;
            mm->rank[s] = rank;
            mm->merged[s] = iab;
        }
        rank++;
    }
    return EVT_OK;
}

evt_status evt_tokenizer_load(const char *path, evt_tokenizer **out, evt_diag *d)
{
    *out = NULL;
    long len = 0;
    char *text = read_file(path, &len, d);
    if (!text) return EVT_ERR_IO;
    cJSON *root = strlen(text) == (size_t)len ? cJSON_ParseWithOpts(text, NULL, 1) : NULL; /* nothing after it */
    free(text);
    if (!root) return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: not JSON (a tokenizer.json was expected)", path);
    evt_tokenizer *tk = calloc(1, sizeof *tk);
    evt_status st = tk ? EVT_OK : evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
    if (!st) {
        byte_level_tables(tk);
        const cJSON *dec = cJSON_GetObjectItemCaseSensitive(root, "decoder");
        int byte_level = 0;
        if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "model")))
            st = evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: no model object (a tokenizer.json was expected)", path);
        if (!st) st = load_normalizer(tk, path, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), d);
        if (!st) st = load_pre_tokenizer(tk, path, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), &byte_level, d);
        if (!st && !byte_level)
            st = evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: pre_tokenizer: no ByteLevel step (only byte-level BPE is supported)", path);
        if (!st && strcmp(json_type(dec), "ByteLevel"))
            st = evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: decoder %s is not supported (only ByteLevel)", path,
                                json_type(dec)[0] ? json_type(dec) : "null");
        if (!st) st = load_added(tk, path, cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), d);
        if (!st) st = load_model(tk, path, cJSON_GetObjectItemCaseSensitive(root, "model"), d);
    }
    cJSON_Delete(root);
    if (st) { evt_tokenizer_free(tk); return st; }
    *out = tk;
    return EVT_OK;
}

/* ---- encoding ---- */

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static int buf_add(buf *b, const void *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 1;
}

typedef struct ids {
    int32_t *p;
    int64_t n, cap;
} ids;

static int ids_add(ids *v, int32_t id)
{
    if (v->n == v->cap) {
        int64_t cap = v->cap ? 2 * v->cap : 64;
        int32_t *p = realloc(v->p, (size_t)cap * sizeof *p);
        if (!p) return 0;
        v->p = p;
        v->cap = cap;
    }
    v->p[v->n++] = id;
    return 1;
}

/* A pair of adjacent symbols that a merge joins, as queued: the left
   symbol's position (its first character's index, which orders the pairs as
   the text does) and both ids when queued (a later merge may have changed
   either: the entry is then stale). */
typedef struct pair_entry {
    int32_t rank, pos, left, right, merged;
} pair_entry;

static int pair_less(const pair_entry *a, const pair_entry *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

typedef struct pair_heap {
    pair_entry *e;
    size_t n;
} pair_heap;

static void heap_push(pair_heap *h, pair_entry x)
{
    size_t i = h->n++;
    while (i && pair_less(&x, &h->e[(i - 1) / 2])) {
        h->e[i] = h->e[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->e[i] = x;
}

static pair_entry heap_pop(pair_heap *h)
{
    pair_entry top = h->e[0], x = h->e[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && pair_less(&h->e[c + 1], &h->e[c])) c++;
        if (!pair_less(&h->e[c], &x)) break;
        h->e[i] = h->e[c];
        i = c;
    }
    h->e[i] = x;
    return top;
}

/* Queues the pair (a, its next symbol) if a merge joins them. */
static void queue_pair(const evt_tokenizer *tk, pair_heap *h, const int32_t *sym, const int32_t *next, int32_t a)
{
    if (a < 0 || next[a] < 0) return;
    size_t s = merge_slot(&tk->merges, pair_key(sym[a], sym[next[a]]));
    if (tk->merges.key[s])
        heap_push(h, (pair_entry){tk->merges.rank[s], a, sym[a], sym[next[a]], tk->merges.merged[s]});
}

/* BPE over one word in its byte-level spelling: the lowest-ranked adjacent
   pair merged first, the leftmost of equal ranks (as Hugging Face's library
   does, with a queue: n log n in the word's length). */
static evt_status bpe_word(const evt_tokenizer *tk, const char *w, size_t n, ids *out, evt_diag *d)
{
    int32_t whole = tk->ignore_merges ? str_map_get(&tk->vocab, w, n) : -1;
    if (whole >= 0) return ids_add(out, whole) ? EVT_OK : evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
    if (n > (size_t)INT32_MAX / 4) return evt_diag_error(d, EVT_ERR_SHAPE, NOLOC, "a word of %zu bytes is too long", n);
    /* at most a symbol a byte, and a queued pair a symbol and a merge */
    int32_t *sym = malloc(n * sizeof *sym), *prev = malloc(n * sizeof *prev), *next = malloc(n * sizeof *next);
    pair_heap h = {malloc(2 * n * sizeof *h.e), 0};
    evt_status st = sym && prev && next && h.e ? EVT_OK : evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
    int32_t ns = 0;
    for (size_t i = 0; i < n && !st;) {
        size_t k = 1;
        while (i + k < n && ((unsigned char)w[i + k] & 0xC0) == 0x80) k++;
        if ((sym[ns] = str_map_get(&tk->vocab, w + i, k)) < 0)
            st = evt_diag_error(d, EVT_ERR_IO, NOLOC, "the character %.*s is not in the vocabulary", (int)k, w + i);
        prev[ns] = ns - 1;
        next[ns] = -1;
        if (ns) next[ns - 1] = ns;
        ns++;
        i += k;
    }
    for (int32_t a = 0; a < ns && !st; a++) queue_pair(tk, &h, sym, next, a);
    while (!st && h.n) {
        pair_entry e = heap_pop(&h);
        const int32_t a = e.pos, b = next[a];
        if (sym[a] != e.left || b < 0 || sym[b] != e.right) continue; /* stale: a symbol merged since */
        sym[a] = e.merged;
        sym[b] = -1;               /* b is gone */
        next[a] = next[b];
        if (next[b] >= 0) prev[next[b]] = a;
        queue_pair(tk, &h, sym, next, prev[a]);
        queue_pair(tk, &h, sym, next, a);
    }
    for (int32_t a = 0; a >= 0 && ns && !st; a = next[a])
        if (!ids_add(out, sym[a])) st = evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
    free(sym);
    free(prev);
    free(next);
    free(h.e);
    return st;
}

/* The byte-level word: every byte replaced by the character standing for it. */
static evt_status byte_level_word(const evt_tokenizer *tk, const char *s, size_t n, ids *out, evt_diag *d)
{
    buf w = {0};
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        utf8proc_uint8_t enc[4];
        utf8proc_ssize_t k = utf8proc_encode_char((utf8proc_int32_t)tk->byte_cp[(unsigned char)s[i]], enc);
        ok = buf_add(&w, enc, (size_t)k);
    }
    evt_status st = ok ? bpe_word(tk, w.p, w.n, out, d) : evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
    free(w.p);
    return st;
}

/* Calls fn on every piece of s that `re` isolates: its matches and the gaps
   between them, in order, none empty. */
typedef evt_status (*piece_fn)(const evt_tokenizer *tk, int step, const char *s, size_t n, ids *out, evt_diag *d);

static evt_status split_isolated(const evt_tokenizer *tk, const pcre2_code *re, int step, const char *s, size_t n, piece_fn fn,
                                 ids *out, evt_diag *d)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md) return evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
    evt_status st = EVT_OK;
    size_t from = 0, done = 0; /* where the search goes on; what is emitted */
    while (!st && from <= n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)s, n, from, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) { st = evt_diag_error(d, EVT_ERR_RUNTIME, NOLOC, "the Split regex failed (PCRE2 error %d)", rc); break; }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t b = ov[0], e = ov[1];
        if (e == b) { /* an empty match: step over a character */
            from = b + 1;
            while (from < n && ((unsigned char)s[from] & 0xC0) == 0x80) from++;
            continue;
        }
        if (b > done) st = fn(tk, step, s + done, b - done, out, d);
        if (!st) st = fn(tk, step, s + b, e - b, out, d);
        done = from = e;
    }
    if (!st && done < n) st = fn(tk, step, s + done, n - done, out, d);
    pcre2_match_data_free(md);
    return st;
}

/* Pre-tokenizer step `step` on one piece: the Split steps in turn, then
   ByteLevel (its space prefix, its own regex, the byte mapping), then BPE. */
static evt_status pre_tokenize(const evt_tokenizer *tk, int step, const char *s, size_t n, ids *out, evt_diag *d)
{
    if (step < tk->nsplit) return split_isolated(tk, tk->split[step], step + 1, s, n, pre_tokenize, out, d);
    if (step == tk->nsplit) {
        char *tmp = NULL;
        if (tk->prefix_space && n && s[0] != ' ') {
            if (!(tmp = malloc(n + 1))) return evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
            tmp[0] = ' ';
            memcpy(tmp + 1, s, n);
            s = tmp;
            n++;
        }
        evt_status st = tk->bl_split ? split_isolated(tk, tk->bl_split, step + 1, s, n, pre_tokenize, out, d)
                                     : byte_level_word(tk, s, n, out, d);
        free(tmp);
        return st;
    }
    return byte_level_word(tk, s, n, out, d);
}

static evt_status normalize(const evt_tokenizer *tk, const char *s, size_t n, char **res, size_t *rn, evt_diag *d)
{
    static const int flags[] = {UTF8PROC_STABLE | UTF8PROC_COMPOSE, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE,
                                UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT,
                                UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT}; /* norm_kind order */
    char *cur = malloc(n + 1);
    if (!cur) return evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
    memcpy(cur, s, n);
    cur[n] = 0;
    for (int k = 0; k < tk->nnorm; k++) {
        utf8proc_uint8_t *next = NULL;
        utf8proc_ssize_t m = utf8proc_map((const utf8proc_uint8_t *)cur, (utf8proc_ssize_t)n, &next, flags[tk->norm[k]]);
        free(cur);
        if (m < 0) return evt_diag_error(d, EVT_ERR_SHAPE, NOLOC, "cannot normalize the text: %s", utf8proc_errmsg(m));
        cur = (char *)next;
        n = (size_t)m;
    }
    *res = cur;
    *rn = n;
    return EVT_OK;
}

/* The leftmost, then longest, added token of the kind wanted at or after
   `from`; returns its index or -1. */
static int find_added(const evt_tokenizer *tk, int normalized, const char *s, size_t n, size_t from, size_t *at)
{
    for (size_t i = from; i < n; i++) {
        int best = -1;
        for (int k = 0; k < tk->nadded; k++) {
            const added_token *a = &tk->added[k];
            if (a->normalized == normalized && a->len <= n - i && !memcmp(s + i, a->match, a->len) &&
                (best < 0 || a->len > tk->added[best].len))
                best = k;
        }
        if (best >= 0) { *at = i; return best; }
    }
    return -1;
}

/* A piece of the normalized text: its normalized added tokens, the rest
   pre-tokenized. */
static evt_status encode_normalized(const evt_tokenizer *tk, const char *s, size_t n, ids *out, evt_diag *d)
{
    size_t from = 0, at = 0;
    evt_status st = EVT_OK;
    int k;
    while (!st && tk->has_normalized_added && (k = find_added(tk, 1, s, n, from, &at)) >= 0) {
        if (at > from) st = pre_tokenize(tk, 0, s + from, at - from, out, d);
        if (!st && !ids_add(out, tk->added[k].id)) st = evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
        from = at + tk->added[k].len;
    }
    if (!st && from < n) st = pre_tokenize(tk, 0, s + from, n - from, out, d);
    return st;
}

static evt_status encode_raw_piece(const evt_tokenizer *tk, const char *s, size_t n, ids *out, evt_diag *d)
{
    char *norm = NULL;
    size_t nn = 0;
    evt_status st = normalize(tk, s, n, &norm, &nn, d);
    if (st) return st;
    st = encode_normalized(tk, norm, nn, out, d);
    free(norm);
    return st;
}

evt_status evt_tokenizer_encode(const evt_tokenizer *tk, const char *text, size_t len, int32_t **res, int64_t *n, evt_diag *d)
{
    *res = NULL;
    *n = 0;
    for (size_t i = 0; i < len;) { /* valid UTF-8 only (PCRE2 is then told not to check) */
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)text + i, (utf8proc_ssize_t)(len - i), &cp);
        if (k <= 0) return evt_diag_error(d, EVT_ERR_SHAPE, NOLOC, "the text is not valid UTF-8 at byte %zu", i);
        i += (size_t)k;
    }
    ids out = {0};
    size_t from = 0, at = 0;
    evt_status st = EVT_OK;
    int k;
    while (!st && (k = find_added(tk, 0, text, len, from, &at)) >= 0) {
        if (at > from) st = encode_raw_piece(tk, text + from, at - from, &out, d);
        if (!st && !ids_add(&out, tk->added[k].id)) st = evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
        from = at + tk->added[k].len;
    }
    if (!st && from < len) st = encode_raw_piece(tk, text + from, len - from, &out, d);
    if (st) { free(out.p); return st; }
    *res = out.p;
    *n = out.n;
    return EVT_OK;
}

/* ---- decoding ---- */

/* The length of the valid UTF-8 character at s (n bytes left), or 0; *bad
   is then the length of its longest valid prefix (at least 1), which the
   lossy conversion replaces by one U+FFFD, as Rust's from_utf8_lossy does. */
static size_t utf8_char(const unsigned char *s, size_t n, size_t *bad)
{
    const unsigned c = s[0];
    size_t len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    *bad = 1;
    if (len <= 1) return len;
    for (size_t k = 1; k < len; k++) {
        unsigned lo = 0x80, hi = 0xBF; /* the second byte's range narrows after E0, ED, F0, F4 */
        if (k == 1) {
            if (c == 0xE0) lo = 0xA0;
            else if (c == 0xED) hi = 0x9F;
            else if (c == 0xF0) lo = 0x90;
            else if (c == 0xF4) hi = 0x8F;
        }
        if (k >= n || s[k] < lo || s[k] > hi) { *bad = k; return 0; }
    }
    return len;
}

evt_status evt_tokenizer_decode(const evt_tokenizer *tk, const int32_t *in, int64_t n, char **text, size_t *len, evt_diag *d)
{
    *text = NULL;
    *len = 0;
    buf raw = {0}, out = {0};
    evt_status st = buf_add(&raw, "", 0) && buf_add(&out, "", 0) ? EVT_OK : evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
    for (int64_t i = 0; i < n && !st; i++) {
        const int32_t id = in[i];
        const char *s = id >= 0 && id < tk->nids ? tk->id_str[id] : NULL;
        if (!s) {
            st = evt_diag_error(d, EVT_ERR_SHAPE, NOLOC, "token id %d is not in the tokenizer's vocabulary (%lld ids)", id,
                                (long long)tk->nids);
            break;
        }
        /* as Hugging Face's ByteLevel decoder: the bytes the characters stand
           for if every one stands for a byte, else the token as written */
        const size_t sl = strlen(s), mark = raw.n;
        int mapped = 1;
        for (size_t j = 0; j < sl && mapped && !st;) {
            utf8proc_int32_t cp;
            utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + j, (utf8proc_ssize_t)(sl - j), &cp);
            if (k <= 0 || cp >= 512 || tk->cp_byte[cp] < 0) { mapped = 0; break; }
            const char b = (char)tk->cp_byte[cp];
            if (!buf_add(&raw, &b, 1)) st = evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
            j += (size_t)k;
        }
        if (!mapped && !st) {
            raw.n = mark;
            if (!buf_add(&raw, s, sl)) st = evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
        }
    }
    /* the bytes as UTF-8, each invalid sequence replaced by U+FFFD */
    for (size_t i = 0; i < raw.n && !st;) {
        size_t bad, k = utf8_char((const unsigned char *)raw.p + i, raw.n - i, &bad);
        if (!(k ? buf_add(&out, raw.p + i, k) : buf_add(&out, "\xEF\xBF\xBD", 3)))
            st = evt_diag_error(d, EVT_ERR_NOMEM, NOLOC, "out of memory");
        i += k ? k : bad;
    }
    free(raw.p);
    if (st) { free(out.p); return st; }
    *text = out.p;
    *len = out.n;
    return EVT_OK;
}
