/* tokenizer_load.c — reading a Hugging Face tokenizer.json (cJSON) into the
 * tables tokenizer.c encodes and decodes with (include/evt/tokenizer.h):
 * the vocabulary and the merges in hash tables, the normalizer steps, the
 * pre-tokenizer's regexes compiled by PCRE2, the added tokens; and what the
 * file may say that is not implemented, refused with the field named. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "models/tokenizer_impl.h"

#define TK_MAX_FILE ((long)1 << 30) /* a tokenizer.json past 1 GiB is not one */

/* GPT-2's split, which ByteLevel applies itself when use_regex is set */
static const char GPT2_SPLIT[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static const evt_loc NOLOC = {0, 0};

/* ---- the hash tables ---- */

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

static size_t merge_slot(const merge_map *m, uint64_t key)
{
    uint64_t h = key * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h ^ (h >> 31)) & (m->cap - 1);
    while (m->key[i] && m->key[i] != key) i = (i + 1) & (m->cap - 1);
    return i;
}

static uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1; }

int32_t tk_vocab_get(const evt_tokenizer *tk, const char *s, size_t n) { return str_map_get(&tk->vocab, s, n); }

int tk_merge_find(const evt_tokenizer *tk, int32_t a, int32_t b, int32_t *rank, int32_t *merged)
{
    const size_t s = merge_slot(&tk->merges, pair_key(a, b));
    if (!tk->merges.key[s]) return 0;
    *rank = tk->merges.rank[s];
    *merged = tk->merges.merged[s];
    return 1;
}

/* ---- reading ---- */

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
        evt_status st = a->normalized ? tk_normalize(tk, a->content, strlen(a->content), &a->match, &a->len, d)
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
    if (top > 2 * (int64_t)(nv + tk->nadded) + 1024) /* a corrupt file, not a table to allocate */
        return evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: token ids up to %lld for %d tokens: not a dense vocabulary", path,
                              (long long)top - 1, nv + tk->nadded);
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
