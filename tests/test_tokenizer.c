/* test_tokenizer.c — the tokenizer.json reader (include/evt/tokenizer.h)
 * against Hugging Face's own `tokenizers` library: tests/data holds two
 * tokenizers built with it (Qwen2/Qwen3's layout and GPT-2's) and the ids
 * and decoded text it gives for texts that exercise every step (added tokens
 * raw and normalized, NFC, the split regexes' Unicode classes and
 * contractions, whitespace runs, the space prefix, ignore_merges, emoji and
 * CJK bytes); tests/data/make_tokenizer_fixture.py rebuilds them. Then the
 * errors a bad tokenizer.json or a bad input can cause. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "harness.h"
#include "evt/tokenizer.h"

#define DATA "tests/data/"

static int diag_has(const evt_diag *d, const char *want) { return d->text && strstr(d->text, want); }

/* Every case of one tokenizer: the same ids as the library, and decoding
   them gives the library's text. Returns the number of cases; *cuts is the
   number whose ids but the last cut a character. */
static int check_cases(const char *name, int *cuts)
{
    char path[256];
    snprintf(path, sizeof path, DATA "%s", name);
    evt_diag d;
    evt_diag_init(&d, path);
    evt_tokenizer *tk = NULL;
    evt_status st = evt_tokenizer_load(path, &tk, &d);
    if (st) fprintf(stderr, "%s\n", d.text);
    assert_int_equal(st, EVT_OK);
    char *text = h_read_file(DATA "tok-cases.json");
    cJSON *all = cJSON_Parse(text);
    free(text);
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(all, name), *c;
    assert_true(cJSON_GetArraySize(cases) > 20);
    int n = 0, bad = 0, cut_replaced = 0;
    cJSON_ArrayForEach(c, cases) {
        const char *in = cJSON_GetObjectItemCaseSensitive(c, "text")->valuestring;
        const char *want_text = cJSON_GetObjectItemCaseSensitive(c, "decoded")->valuestring;
        const cJSON *want = cJSON_GetObjectItemCaseSensitive(c, "ids");
        int32_t *ids = NULL;
        int64_t nids = -1;
        assert_int_equal(evt_tokenizer_encode(tk, in, strlen(in), &ids, &nids, &d), EVT_OK);
        int same = nids == cJSON_GetArraySize(want);
        for (int64_t i = 0; same && i < nids; i++) same = ids[i] == (int32_t)cJSON_GetArrayItem(want, (int)i)->valuedouble;
        if (!same) {
            fprintf(stderr, "%s: \"%s\": got", name, in);
            for (int64_t i = 0; i < nids; i++) fprintf(stderr, " %d", ids[i]);
            fprintf(stderr, "\n  want %s\n", cJSON_PrintUnformatted(want));
            bad++;
        }
        char *out = NULL;
        size_t len = 0;
        assert_int_equal(evt_tokenizer_decode(tk, ids, nids, &out, &len, &d), EVT_OK);
        assert_int_equal(len, strlen(want_text));
        assert_string_equal(out, want_text);
        free(out);
        /* all but the last id: where that cuts a character, U+FFFD as the library gives */
        const char *want_cut = cJSON_GetObjectItemCaseSensitive(c, "decoded_but_last")->valuestring;
        assert_int_equal(evt_tokenizer_decode(tk, ids, nids ? nids - 1 : 0, &out, &len, &d), EVT_OK);
        assert_string_equal(out, want_cut);
        cut_replaced += strstr(want_cut, "\xEF\xBF\xBD") != NULL;
        free(out);
        free(ids);
        n++;
    }
    assert_int_equal(bad, 0);
    *cuts = cut_replaced;
    cJSON_Delete(all);
    evt_tokenizer_free(tk);
    evt_diag_free(&d);
    return n;
}

static void qwen_layout(void **s)
{
    (void)s;
    int cuts;
    assert_true(check_cases("tok-qwen.json", &cuts) >= 26);
    assert_true(cuts > 0); /* the fixture does cut a character */
}

static void gpt2_layout(void **s)
{
    (void)s;
    int cuts;
    assert_true(check_cases("tok-gpt2.json", &cuts) >= 26);
}

/* Lookups and the decoder's edges: ids of added and ordinary tokens, an
   empty list, an id past the vocabulary, text that is not UTF-8. */
static void lookups_and_bad_input(void **s)
{
    (void)s;
    evt_diag d;
    evt_diag_init(&d, "tok");
    evt_tokenizer *tk = NULL;
    assert_int_equal(evt_tokenizer_load(DATA "tok-qwen.json", &tk, &d), EVT_OK);
    assert_int_equal(evt_tokenizer_vocab_size(tk), 1506);
    assert_int_equal(evt_tokenizer_token_id(tk, "<|im_start|>"), 1501);
    assert_int_equal(evt_tokenizer_token_id(tk, "<think>"), 1504);
    assert_int_equal(evt_tokenizer_token_id(tk, "!"), 0);
    assert_int_equal(evt_tokenizer_token_id(tk, "no such token"), -1);
    char *out = NULL;
    size_t len = 9;
    assert_int_equal(evt_tokenizer_decode(tk, NULL, 0, &out, &len, &d), EVT_OK);
    assert_int_equal(len, 0);
    assert_string_equal(out, "");
    free(out);
    int32_t ids[2] = {39, 1506};
    assert_int_equal(evt_tokenizer_decode(tk, ids, 2, &out, &len, &d), EVT_ERR_SHAPE);
    assert_null(out);
    assert_true(diag_has(&d, "token id 1506 is not in the tokenizer's vocabulary"));
    ids[1] = -3;
    assert_int_equal(evt_tokenizer_decode(tk, ids, 2, &out, &len, &d), EVT_ERR_SHAPE);
    int32_t *enc = NULL;
    int64_t n = 0;
    assert_int_equal(evt_tokenizer_encode(tk, "ok \xC3\x28 no", 8, &enc, &n, &d), EVT_ERR_SHAPE);
    assert_true(diag_has(&d, "not valid UTF-8 at byte 3"));
    assert_null(enc);
    assert_int_equal(evt_tokenizer_encode(tk, "", 0, &enc, &n, &d), EVT_OK);
    assert_int_equal(n, 0);
    /* a long run of one character: the merges' loop over thousands of symbols */
    size_t big = 20000;
    char *run = malloc(big);
    memset(run, ' ', big);
    assert_int_equal(evt_tokenizer_encode(tk, run, big, &enc, &n, &d), EVT_OK);
    assert_true(n > 0 && n < (int64_t)big);
    assert_int_equal(evt_tokenizer_decode(tk, enc, n, &out, &len, &d), EVT_OK);
    assert_int_equal(len, big);
    assert_memory_equal(out, run, big);
    free(out);
    free(enc);
    free(run);
    evt_tokenizer_free(tk);
    evt_diag_free(&d);
}

/* Writes the Qwen fixture with one substitution (of the first match) and
   expects loading to fail with `want` in the message. */
static void expect_refused(const char *from, const char *to, const char *want)
{
    char *text = h_read_file(DATA "tok-qwen.json");
    char *at = strstr(text, from);
    assert_non_null(at);
    const char *path = "/tmp/evt_test_tok_bad.json";
    FILE *f = fopen(path, "wb");
    fwrite(text, 1, (size_t)(at - text), f);
    fputs(to, f);
    fputs(at + strlen(from), f);
    fclose(f);
    free(text);
    evt_diag d;
    evt_diag_init(&d, path);
    evt_tokenizer *tk = (evt_tokenizer *)&d; /* must come back NULL */
    evt_status st = evt_tokenizer_load(path, &tk, &d);
    assert_int_not_equal(st, EVT_OK);
    assert_null(tk);
    if (!diag_has(&d, want)) {
        fail_msg("message \"%s\" lacks \"%s\"", d.text ? d.text : "", want);
    }
    evt_diag_free(&d);
    remove(path);
}

static void refusals(void **s)
{
    (void)s;
    evt_diag d;
    evt_diag_init(&d, "tok");
    evt_tokenizer *tk = NULL;
    assert_int_equal(evt_tokenizer_load("/nonexistent/tokenizer.json", &tk, &d), EVT_ERR_IO);
    assert_true(diag_has(&d, "No such file"));
    evt_diag_free(&d);
    expect_refused("{\"version\"", "[1, 2] {\"version\"", "not JSON");
    expect_refused("\"type\":\"BPE\"", "\"type\":\"WordPiece\"", "model WordPiece is not supported");
    expect_refused("\"type\":\"NFC\"", "\"type\":\"Lowercase\"", "normalizer Lowercase is not supported");
    expect_refused("\"behavior\":\"Isolated\"", "\"behavior\":\"Removed\"", "only behavior Isolated");
    expect_refused("\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":false}]}",
                   "\"type\":\"Metaspace\"}]}", "pre_tokenizer Metaspace is not supported");
    expect_refused("\"decoder\":{\"type\":\"ByteLevel\"", "\"decoder\":{\"type\":\"WordPiece\"", "decoder WordPiece is not supported");
    expect_refused("\"dropout\":null", "\"dropout\":0.1", "dropout is not supported");
    expect_refused("\"lstrip\":false", "\"lstrip\":true", "lstrip, rstrip and single_word are not supported");
    expect_refused("{\"Regex\":\"(?i:", "{\"Regex\":\"((?i:", "does not compile");
    expect_refused("\"merges\":[\"", "\"merges\":[\"zzz qqq\",\"", "merge 0 (zzz + qqq): a token not in the vocab");
    expect_refused("\"merges\":[\"", "\"merges\":[\"a b c\",\"", "merge 0 is neither");
    expect_refused("\"vocab\":{\"!\":0", "\"vocab\":{\"!\":0,\"!\":7", "vocab entry ! twice");
    expect_refused("\"vocab\":{\"!\":0", "\"vocab\":{\"!\":\"zero\"", "vocab entry !: not an id");
    expect_refused("\"vocab\":{\"!\":0", "\"vocab\":{\"!\":2000000000", "token ids up to 2000000000 for");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(qwen_layout),
        cmocka_unit_test(gpt2_layout),
        cmocka_unit_test(lookups_and_bad_input),
        cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
