/* tokenizer_impl.h — what the tokenizer's two files share (not a public
 * header): the tokenizer's fields, read by tokenizer_load.c from a
 * tokenizer.json and used by tokenizer.c to encode and decode. */
#ifndef EVT_TOKENIZER_IMPL_H
#define EVT_TOKENIZER_IMPL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>
#include "evt/tokenizer.h"

#define TK_MAX_STEPS 8 /* normalizer and pre-tokenizer steps */

typedef struct str_map { /* byte string -> id, open addressing; the keys are owned by the map */
    char **key;
    uint32_t *klen;
    int32_t *val;
    size_t cap, n;
} str_map;

typedef struct merge_map { /* (left id, right id) -> rank and merged id */
    uint64_t *key;         /* left << 32 | right, plus 1 so that 0 is empty */
    int32_t *rank, *merged;
    size_t cap;
} merge_map;

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

/* The id of the n bytes at s in the vocabulary, or -1. */
int32_t tk_vocab_get(const evt_tokenizer *tk, const char *s, size_t n);
/* 1 and the rank and merged id if a merge joins ids a and b, else 0. */
int tk_merge_find(const evt_tokenizer *tk, int32_t a, int32_t b, int32_t *rank, int32_t *merged);
/* The tokenizer's normalizer steps over n bytes of UTF-8: *res malloc'd. */
evt_status tk_normalize(const evt_tokenizer *tk, const char *s, size_t n, char **res, size_t *rn, evt_diag *d);

#endif
