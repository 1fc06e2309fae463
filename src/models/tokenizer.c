/* tokenizer.c — encoding text into token ids and decoding them back
 * (include/evt/tokenizer.h) with the tables tokenizer_load.c reads: added
 * tokens cut out, the normalizer by utf8proc, the Split regexes by PCRE2,
 * the byte-level mapping, then BPE, the lowest-ranked pair first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include "models/tokenizer_impl.h"

static const evt_loc NOLOC = {0, 0};

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
    int32_t rank, merged;
    if (a >= 0 && next[a] >= 0 && tk_merge_find(tk, sym[a], sym[next[a]], &rank, &merged))
        heap_push(h, (pair_entry){rank, a, sym[a], sym[next[a]], merged});
}

/* BPE over one word in its byte-level spelling: the lowest-ranked adjacent
   pair merged first, the leftmost of equal ranks (as Hugging Face's library
   does, with a queue: n log n in the word's length). */
static evt_status bpe_word(const evt_tokenizer *tk, const char *w, size_t n, ids *out, evt_diag *d)
{
    int32_t whole = tk->ignore_merges ? tk_vocab_get(tk, w, n) : -1;
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
        if ((sym[ns] = tk_vocab_get(tk, w + i, k)) < 0)
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

evt_status tk_normalize(const evt_tokenizer *tk, const char *s, size_t n, char **res, size_t *rn, evt_diag *d)
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
    if (!tk->nnorm) return encode_normalized(tk, s, n, out, d); /* no normalizer: no copy */
    char *norm = NULL;
    size_t nn = 0;
    evt_status st = tk_normalize(tk, s, n, &norm, &nn, d);
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
