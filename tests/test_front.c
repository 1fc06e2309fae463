/* test_front.c — the .evt parser and printer: a program using every feature
 * parses to the expected graph and prints to the expected normal form;
 * printing round-trips; every example round-trips; random mutations of a
 * valid program never crash; deep nesting is rejected. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "evt/front.h"

/* Every feature of the language, written in a non-normalised way
 * (comments, odd spacing, options out of order). */
static const char *FULL =
    "# every feature of the .evt language\n"
    "sym n = 4 in [1, 1024] buckets [1, 2, 4, 8]\n"
    "sym K=2   # no bounds: default [1, INT64_MAX/2]\n"
    "sym m = -3 in [-10, 10]\n"
    "tensor A : f32[n * 32, 128] input = random(seed=1, lo=-1, hi=1)\n"
    "tensor P : f32[n * 32, 4] scratch\n"
    "tensor C : f32[n * 32] output\n"
    "tensor topk : i32[n, 2] input = random(seed=2, lo=0, hi=4)\n"
    "tensor W : bf16[(n + 1) * 2, max(n, 8)] weight = random(hi=0.5, seed=7)\n"
    "tensor H : f16[4] scratch = const(-2.5)\n"
    "tensor I : i64[n] input = range\n"
    "tensor U : u8[16] input = zeros\n"
    "tensor Z : i32[n + 1] input = random\n"
    "tensor F : f32[3] weight = file(\"data/w \\\"q\\\".bin\")\n"
    "tensor ptr : i32[5] input = range\n"
    "event E[n]\n"
    "event G[4] count = n * 2\n"
    "event X[n, 2] count = topk[e0, e1] + 1\n"
    "event T[4]\n"
    "call partial = rowsum_partial(A, P, 32) over (i, j) in [n, 4] cost 2 {\n"
    "    notify E[i]\n"
    "    notify X[i, j % 2]\n"
    "}\n"
    "call final = rowsum_final(P, C, n * 32 - 1, -m) over (i) in [n] policy static prefetch {\n"
    "    wait E[i]\n"
    "    wait X[i, k] for k in [2]\n"
    "    notify G[min(i, 3)]\n"
    "}\n"
    "call gather = g(topk, W) over (i, k) in [n, K] policy dynamic{\n"
    "  wait X[ topk[i, k] % n , (k + a) / 2 ] for a in [2], b in [K]\n"
    "  wait G[-i + 3]\n"
    "}\n"
    "call trig = t(ptr) over (c) in [8] { wait T trigger ptr }\n"
    "tensor R : f32[16, 8] weight = rope(theta = 1e4)   # declarations may follow the calls\n";

static const char *FULL_NORMAL =
    "sym n = 4 in [1, 1024] buckets [1, 2, 4, 8]\n"
    "sym K = 2\n"
    "sym m = -3 in [-10, 10]\n"
    "\n"
    "tensor A : f32[n * 32, 128] input = random(seed=1, lo=-1, hi=1)\n"
    "tensor P : f32[n * 32, 4] scratch\n"
    "tensor C : f32[n * 32] output\n"
    "tensor topk : i32[n, 2] input = random(seed=2, lo=0, hi=4)\n"
    "tensor W : bf16[(n + 1) * 2, max(n, 8)] weight = random(seed=7, lo=-1, hi=0.5)\n"
    "tensor H : f16[4] scratch = const(-2.5)\n"
    "tensor I : i64[n] input = range\n"
    "tensor U : u8[16] input = zeros\n"
    "tensor Z : i32[n + 1] input = random(seed=0, lo=-1, hi=1)\n"
    "tensor F : f32[3] weight = file(\"data/w \\\"q\\\".bin\")\n"
    "tensor ptr : i32[5] input = range\n"
    "tensor R : f32[16, 8] weight = rope(theta=10000)\n"
    "\n"
    "event E[n]\n"
    "event G[4] count = n * 2\n"
    "event X[n, 2] count = topk[e0, e1] + 1\n"
    "event T[4]\n"
    "\n"
    "call partial = rowsum_partial(A, P, 32) over (i, j) in [n, 4] cost 2 {\n"
    "    notify E[i]\n"
    "    notify X[i, j % 2]\n"
    "}\n"
    "call final = rowsum_final(P, C, n * 32 - 1, -1 * m) over (i) in [n] prefetch policy static {\n"
    "    wait E[i]\n"
    "    wait X[i, k] for k in [2]\n"
    "    notify G[min(i, 3)]\n"
    "}\n"
    "call gather = g(topk, W) over (i, k) in [n, K] policy dynamic {\n"
    "    wait X[topk[i, k] % n, (k + a) / 2] for a in [2], b in [K]\n"
    "    wait G[-1 * i + 3]\n"
    "}\n"
    "call trig = t(ptr) over (c) in [8] {\n"
    "    wait T trigger ptr\n"
    "}\n";

static char *dump(const evt_graph *g)
{
    evt_printer p = {0};
    evt_print_graph(&p, g);
    if (!p.buf) { p.buf = malloc(1); p.buf[0] = 0; }
    return p.buf;
}

static evt_graph *parse_ok(const char *text)
{
    evt_diag d;
    evt_diag_init(&d, "test.evt");
    evt_graph *g = evt_parse(text, strlen(text), &d);
    if (!g) fprintf(stderr, "unexpected errors:\n%s", d.text ? d.text : "(none)\n");
    assert_non_null(g);
    assert_int_equal(d.nerrors, 0);
    evt_diag_free(&d);
    return g;
}

/* dump(parse(dump(g))) == dump(g); returns dump(g). */
static char *check_roundtrip(const evt_graph *g)
{
    char *a = dump(g);
    evt_graph *g2 = parse_ok(a);
    char *b = dump(g2);
    if (strcmp(a, b)) fprintf(stderr, "--- first\n%s--- second\n%s", a, b);
    assert_string_equal(a, b);
    free(b);
    evt_graph_free(g2);
    return a;
}

static void test_full_program(void **state)
{
    (void)state;
    evt_graph *g = parse_ok(FULL);
    assert_int_equal(g->nsyms, 3);
    assert_int_equal(g->ntensors, 12);
    assert_int_equal(g->nevents, 4);
    assert_int_equal(g->ncalls, 4);

    evt_sym *n = g->syms[0], *K = g->syms[1], *m = g->syms[2];
    assert_int_equal(n->def, 4);
    assert_int_equal(n->lo, 1);
    assert_int_equal(n->hi, 1024);
    assert_int_equal(n->nbuckets, 4);
    assert_int_equal(n->buckets[3], 8);
    assert_int_equal(n->loc.line, 2);
    assert_int_equal(n->loc.col, 5);
    assert_int_equal(K->lo, 1);
    assert_true(K->hi == INT64_MAX / 2);
    assert_int_equal(K->nbuckets, 0);
    assert_int_equal(m->def, -3);
    assert_int_equal(m->lo, -10);

    evt_tensor *A = evt_graph_find_tensor(g, "A");
    assert_non_null(A);
    assert_int_equal(A->dtype, EVT_F32);
    assert_int_equal(A->role, EVT_INPUT);
    assert_int_equal(A->rank, 2);
    assert_int_equal(A->shape[0]->op, EVT_E_MUL);
    assert_int_equal(A->init.kind, EVT_INIT_RANDOM);
    assert_int_equal(A->init.seed, 1);
    assert_true(A->init.lo == -1.0 && A->init.hi == 1.0);
    assert_int_equal(A->loc.line, 5);
    evt_tensor *W = evt_graph_find_tensor(g, "W");
    assert_int_equal(W->dtype, EVT_BF16);
    assert_int_equal(W->role, EVT_WEIGHT);
    assert_int_equal(W->init.seed, 7);
    assert_true(W->init.lo == -1.0 && W->init.hi == 0.5);
    assert_int_equal(W->shape[1]->op, EVT_E_MAX);
    evt_tensor *H = evt_graph_find_tensor(g, "H");
    assert_int_equal(H->init.kind, EVT_INIT_CONST);
    assert_true(H->init.value == -2.5);
    assert_int_equal(evt_graph_find_tensor(g, "I")->init.kind, EVT_INIT_RANGE);
    assert_int_equal(evt_graph_find_tensor(g, "R")->init.kind, EVT_INIT_ROPE);
    assert_true(evt_graph_find_tensor(g, "R")->init.value == 1e4);
    assert_int_equal(evt_graph_find_tensor(g, "U")->init.kind, EVT_INIT_ZEROS);
    assert_int_equal(evt_graph_find_tensor(g, "U")->dtype, EVT_U8);
    assert_int_equal(evt_graph_find_tensor(g, "P")->init.kind, EVT_INIT_NONE);
    evt_tensor *F = evt_graph_find_tensor(g, "F");
    assert_int_equal(F->init.kind, EVT_INIT_FILE);
    assert_string_equal(F->init.path, "data/w \"q\".bin");

    evt_event *G = evt_graph_find_event(g, "G"), *X = evt_graph_find_event(g, "X");
    assert_null(evt_graph_find_event(g, "E")->count);
    assert_non_null(G->count);
    assert_int_equal(X->rank, 2);
    assert_true(evt_expr_has_load(X->count));
    assert_true(evt_expr_uses_var(X->count, 1));

    evt_call *partial = g->calls[0], *final = g->calls[1], *gather = g->calls[2], *trig = g->calls[3];
    assert_string_equal(partial->name, "partial");
    assert_string_equal(partial->op, "rowsum_partial");
    assert_int_equal(partial->rank, 2);
    assert_string_equal(partial->var_name[1], "j");
    assert_int_equal(partial->cost, 2);
    assert_int_equal(partial->policy, EVT_POLICY_AUTO);
    assert_int_equal(partial->prefetch, 0);
    assert_int_equal(partial->nargs, 3);
    assert_int_equal(partial->args[0].kind, EVT_ARG_TENSOR);
    assert_ptr_equal(partial->args[0].tensor, A);
    assert_int_equal(partial->args[2].kind, EVT_ARG_INT);
    int64_t v;
    assert_true(evt_expr_is_const(partial->args[2].value, &v) && v == 32);
    assert_int_equal(partial->args[2].loc.line, 20);
    assert_int_equal(partial->args[2].loc.col, 37);
    assert_int_equal(partial->nedges, 2);
    assert_int_equal(partial->edges[0].kind, EVT_NOTIFY);
    assert_int_equal(partial->edges[0].loc.line, 21);
    assert_int_equal(partial->edges[0].loc.col, 5);
    assert_int_equal(partial->edges[1].idx[1]->op, EVT_E_MOD);
    assert_int_equal(partial->loc.line, 20);
    assert_int_equal(partial->loc.col, 6);

    assert_int_equal(final->cost, 1);
    assert_int_equal(final->prefetch, 1);
    assert_int_equal(final->policy, EVT_POLICY_STATIC);
    assert_int_equal(final->args[2].kind, EVT_ARG_INT);
    assert_int_equal(final->edges[1].nfor, 1);
    assert_string_equal(final->edges[1].for_name[0], "k");
    assert_int_equal(final->edges[1].idx[1]->op, EVT_E_VAR);
    assert_int_equal(final->edges[1].idx[1]->var, 1); /* rank 1 + for 0 */
    assert_int_equal(final->edges[2].idx[0]->op, EVT_E_MIN);

    assert_int_equal(gather->policy, EVT_POLICY_DYNAMIC);
    assert_int_equal(gather->args[0].kind, EVT_ARG_TENSOR);
    const evt_edge *ge = &gather->edges[0];
    assert_int_equal(ge->nfor, 2);
    assert_int_equal(ge->idx[0]->op, EVT_E_MOD);
    assert_int_equal(ge->idx[0]->a[0]->op, EVT_E_LOAD);
    assert_true(evt_expr_uses_var(ge->idx[1], 2)); /* a = rank 2 + 0 */
    assert_int_equal(gather->edges[1].kind, EVT_WAIT);

    assert_int_equal(trig->nedges, 1);
    assert_ptr_equal(trig->edges[0].trigger, evt_graph_find_tensor(g, "ptr"));
    assert_int_equal(trig->edges[0].nidx, 0);

    char *text = dump(g);
    if (strcmp(text, FULL_NORMAL)) fprintf(stderr, "%s", text);
    assert_string_equal(text, FULL_NORMAL);
    free(text);
    free(check_roundtrip(g));
    evt_graph_free(g);
}

static void test_sample_normal_form(void **state)
{
    (void)state;
    const char *src =
        "sym n = 4 in [1, 1024] buckets [1, 2, 4, 8]\n"
        "tensor A : f32[n * 32, 128] input = random(seed=1, lo=-1, hi=1)\n"
        "tensor P : f32[n * 32, 4] scratch\n"
        "tensor C : f32[n * 32] output\n"
        "tensor topk : i32[n, 2] input = random(seed=2, lo=0, hi=4)\n"
        "event E[n]\n"
        "event G[4]\n"
        "call partial = rowsum_partial(A, P, 32) over (i, j) in [n, 4] cost 2 {\n"
        "    notify E[i]\n"
        "}\n"
        "call final = rowsum_final(P, C, 32) over (i) in [n] {\n"
        "    wait E[i]\n"
        "}\n";
    evt_graph *g = parse_ok(src);
    char *text = check_roundtrip(g);
    assert_non_null(strstr(text, "tensor topk : i32[n, 2] input = random(seed=2, lo=0, hi=4)\n\nevent E[n]\n"));
    assert_non_null(strstr(text, "event G[4]\n\ncall partial"));
    free(text);
    evt_graph_free(g);
}

static void test_expressions(void **state)
{
    (void)state;
    /* precedence, associativity, floor division, constant folding */
    evt_graph *g = parse_ok(
        "sym n = 3\n"
        "tensor a : f32[1 + 2 * 3, (1 + 2) * 3, 10 - 4 - 3, 2 * -3 + 20] input\n"
        "tensor b : f32[-7 / 2 + 10, -7 % 2, 100 / 10 / 5, min(4, max(2, 3))] input\n"
        "tensor c : f32[n - (n - 1), n - n - 1 + 2, --n, -9223372036854775808 + 9223372036854775807 + 2] input\n");
    int64_t want[] = {7, 9, 3, 14, 6, 1, 2, 3};
    for (int i = 0; i < 8; i++) {
        int64_t v = -1;
        evt_tensor *t = g->tensors[i / 4];
        assert_true(evt_expr_is_const(t->shape[i % 4], &v));
        assert_int_equal(v, want[i]);
    }
    evt_tensor *c = g->tensors[2];
    assert_int_equal(c->shape[0]->op, EVT_E_SUB);
    assert_int_equal(c->shape[0]->a[1]->op, EVT_E_SUB);
    assert_int_equal(c->shape[1]->op, EVT_E_ADD);
    assert_int_equal(c->shape[1]->a[0]->op, EVT_E_SUB);
    int64_t v;
    assert_true(evt_expr_is_const(c->shape[3], &v) && v == 1);
    char *text = check_roundtrip(g);
    assert_non_null(strstr(text, "tensor c : f32[n - (n - 1), n - n - 1 + 2, "));
    free(text);
    evt_graph_free(g);
}

static void test_doubles_and_strings_roundtrip(void **state)
{
    (void)state;
    evt_graph *g = parse_ok(
        "tensor a : f32[2] input = random(seed=18446744073709551615, lo=-1e-300, hi=0.1)\n"
        "tensor b : f32[2] input = const(1e+300)\n"
        "tensor c : f32[2] input = const(-inf)\n"
        "tensor d : f32[2] input = file(\"tab\\there\\nnl \\x01\\xff \\\\ end\")\n"
        "tensor e : i32[2] input = random(lo=-5, hi=5)\n"
        "tensor f : f32[2] input = const(0.30000000000000004)\n");
    assert_true(g->tensors[0]->init.seed == UINT64_MAX);
    assert_true(g->tensors[0]->init.lo == -1e-300);
    assert_true(g->tensors[0]->init.hi == 0.1);
    assert_true(isinf(g->tensors[2]->init.value) && g->tensors[2]->init.value < 0);
    assert_string_equal(g->tensors[3]->init.path, "tab\there\nnl \x01\xff \\ end");
    assert_true(g->tensors[5]->init.value == 0.30000000000000004);
    char *text = check_roundtrip(g);
    evt_graph *g2 = parse_ok(text);
    assert_true(g2->tensors[0]->init.hi == 0.1);
    assert_string_equal(g2->tensors[3]->init.path, g->tensors[3]->init.path);
    evt_graph_free(g2);
    free(text);
    evt_graph_free(g);
}

static void test_built_through_api_roundtrips(void **state)
{
    (void)state;
    /* A graph made with the C API (no source locations) prints and reparses. */
    evt_graph *g = evt_graph_new();
    evt_sym *n = evt_sym_new(g, "n", 8);
    evt_expr *N = evt_symref(g, n);
    evt_tensor *t = evt_tensor_new(g, "x", EVT_I32, EVT_INPUT, 1, (evt_expr *[]){N});
    evt_event *e = evt_event_new(g, "E", 1, (evt_expr *[]){evt_binop(g, EVT_E_DIV, N, evt_const(g, 2))});
    evt_call *c = evt_call_new(g, "c", "op", 1, (const char *[]){"i"}, (evt_expr *[]){N});
    evt_call_add_tensor_arg(c, t);
    evt_call_add_int_arg(c, evt_binop(g, EVT_E_SUB, evt_const(g, 0), N));
    evt_call_add_edge(g, c, EVT_NOTIFY, e, 1,
                      (evt_expr *[]){evt_binop(g, EVT_E_DIV, evt_var(g, 0), evt_const(g, 2))});
    evt_edge *w = evt_call_add_edge(g, c, EVT_WAIT, e, 1,
                                    (evt_expr *[]){evt_load(g, t, 1, (evt_expr *[]){evt_var(g, 1)})});
    evt_edge_add_for(g, w, "k", evt_const(g, 3));
    free(check_roundtrip(g));
    evt_graph_free(g);
}

static void test_examples_roundtrip(void **state)
{
    (void)state;
    glob_t gl;
    int found = 0;
    if (glob("examples/*.evt", 0, NULL, &gl) == 0) {
        for (size_t i = 0; i < gl.gl_pathc; i++) {
            evt_diag d;
            evt_diag_init(&d, gl.gl_pathv[i]);
            evt_graph *g = evt_parse_file(gl.gl_pathv[i], &d);
            if (!g) fprintf(stderr, "%s", d.text ? d.text : "?\n");
            assert_non_null(g);
            free(check_roundtrip(g));
            evt_graph_free(g);
            evt_diag_free(&d);
            found++;
        }
        globfree(&gl);
    }
    if (!found) fprintf(stderr, "note: no examples/*.evt found (run from the repository root)\n");
}

static void test_empty_and_io(void **state)
{
    (void)state;
    evt_graph *g = parse_ok("");
    assert_int_equal(g->nsyms + g->ntensors + g->nevents + g->ncalls, 0);
    char *text = dump(g);
    assert_string_equal(text, "");
    free(text);
    evt_graph_free(g);
    g = parse_ok("# only a comment");
    evt_graph_free(g);
    g = evt_parse(NULL, 0, NULL);
    assert_non_null(g);
    evt_graph_free(g);

    evt_diag d;
    evt_diag_init(&d, "x");
    assert_null(evt_parse_file("/nonexistent/dir/prog.evt", &d));
    assert_int_equal(d.nerrors, 1);
    assert_non_null(strstr(d.text, "error: cannot read /nonexistent/dir/prog.evt"));
    assert_string_equal(d.file, "x");
    evt_diag_free(&d);

    /* parse_file names the file in messages */
    char path[] = "/tmp/evt_front_testXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("sym n = 4\nsym n = 5\n", f);
    fclose(f);
    evt_diag_init(&d, NULL);
    assert_null(evt_parse_file(path, &d));
    char want[128];
    snprintf(want, sizeof want, "%s:2:5: error: duplicate name 'n'", path);
    assert_non_null(strstr(d.text, want));
    evt_diag_free(&d);
    remove(path);

    /* errors with no diagnostics sink */
    assert_null(evt_parse("sym", 3, NULL));
}

/* ---- robustness ---------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    return rng_state = x;
}

/* Parses; a failure must come with at least one error line; a success must
 * round-trip. */
static void parse_any(const char *text, size_t len)
{
    evt_diag d;
    evt_diag_init(&d, "fuzz.evt");
    evt_graph *g = evt_parse(text, len, &d);
    if (!g) {
        assert_non_null(d.text);
        assert_non_null(strstr(d.text, "error:"));
        assert_true(d.nerrors >= 1 && d.nerrors <= 21);
    } else {
        assert_int_equal(d.nerrors, 0);
        free(check_roundtrip(g));
        evt_graph_free(g);
    }
    evt_diag_free(&d);
}

static void test_truncation_at_every_byte(void **state)
{
    (void)state;
    size_t len = strlen(FULL);
    for (size_t i = 0; i <= len; i++) {
        char *buf = malloc(i + 1); /* exact size: catches reads past the end */
        memcpy(buf, FULL, i);
        parse_any(buf, i);
        free(buf);
    }
}

static void test_fuzz_mutations(void **state)
{
    (void)state;
    static const char *toks[] = {
        "[", "]", "(", ")", "{", "}", ",", ":", "=", "-", "+", "*", "/", "%", "#", "\"", "\\",
        "sym", "tensor", "event", "call", "wait", "notify", "for", "in", "over", "trigger",
        "count", "cost", "prefetch", "policy", "buckets", "min", "max", "random", "const",
        "file", "zeros", "range", "seed", "lo", "hi", "static", "dynamic", "i32", "f32",
        "input", "output", "n", "i", "j", "k", "A", "topk", "E", "G", "0", "1", "-1",
        "99999999999999999999", "9223372036854775807", "-9223372036854775808", "1.5", "1e308",
        "inf", "nan", "\n", " ", "\t", "\x00", "\xff", "(((((((((((", "]]]]]",
    };
    size_t base = strlen(FULL), ntoks = sizeof toks / sizeof toks[0];
    char *buf = malloc(base * 4 + 4096);
    int failures = 0, successes = 0;
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(buf, FULL, base);
        size_t len = base;
        int nmut = 1 + (int)(rnd() % 4);
        for (int m = 0; m < nmut; m++) {
            size_t pos = len ? rnd() % (len + 1) : 0;
            switch (rnd() % 6) {
            case 0: /* byte flip */
                if (pos < len) buf[pos] ^= (char)(1u << (rnd() % 8));
                break;
            case 1: /* random byte */
                if (pos < len) buf[pos] = (char)rnd();
                break;
            case 2: /* truncation */
                len = pos;
                break;
            case 3: { /* insertion of a token */
                const char *t = toks[rnd() % ntoks];
                size_t tl = strlen(t) ? strlen(t) : 1; /* "\x00" inserts a NUL */
                if (len + tl + 1 >= base * 4 + 4096) break;
                memmove(buf + pos + tl, buf + pos, len - pos);
                memcpy(buf + pos, t, tl);
                len += tl;
                break;
            }
            case 4: { /* deletion of a range */
                size_t n = rnd() % 16;
                if (pos + n > len) n = len - pos;
                memmove(buf + pos, buf + pos + n, len - pos - n);
                len -= n;
                break;
            }
            default: { /* duplicate a range */
                size_t n = rnd() % 64;
                if (pos + n > len) n = len - pos;
                if (len + n >= base * 4 + 4096) break;
                memmove(buf + pos + n, buf + pos, len - pos);
                len += n;
                break;
            }
            }
        }
        evt_diag d;
        evt_diag_init(&d, "fuzz.evt");
        evt_graph *g = evt_parse(buf, len, &d);
        if (g) successes++; else failures++;
        evt_graph_free(g);
        evt_diag_free(&d);
        parse_any(buf, len);
    }
    free(buf);
    assert_true(failures > 1000);
    assert_true(successes > 100);
}

static void test_garbage(void **state)
{
    (void)state;
    char buf[4096];
    for (int iter = 0; iter < 2000; iter++) {
        size_t len = rnd() % sizeof buf;
        for (size_t i = 0; i < len; i++) buf[i] = (char)rnd();
        parse_any(buf, len);
    }
    /* lots of errors: capped */
    evt_diag d;
    evt_diag_init(&d, "x");
    memset(buf, '$', sizeof buf);
    assert_null(evt_parse(buf, sizeof buf, &d));
    assert_true(d.nerrors <= 20);
    assert_non_null(strstr(d.text, "too many errors"));
    evt_diag_free(&d);
}

static void expect_nesting_error(const char *text)
{
    evt_diag d;
    evt_diag_init(&d, "deep.evt");
    assert_null(evt_parse(text, strlen(text), &d));
    assert_non_null(d.text);
    assert_non_null(strstr(d.text, "nested too deeply"));
    evt_diag_free(&d);
}

static void test_deep_nesting(void **state)
{
    (void)state;
    size_t depth = 100000;
    char *buf = malloc(6 * depth + 100);
    char *o = buf;
    o += sprintf(o, "tensor A : f32[");
    for (size_t i = 0; i < depth; i++) *o++ = '(';
    *o++ = '1';
    for (size_t i = 0; i < depth; i++) *o++ = ')';
    o += sprintf(o, "] input\n");
    *o = 0;
    expect_nesting_error(buf);

    o = buf;
    o += sprintf(o, "sym n = 1\ntensor A : f32[");
    for (size_t i = 0; i < depth; i++) *o++ = '-', *o++ = ' ';
    o += sprintf(o, "n] input\n");
    expect_nesting_error(buf);

    o = buf;
    o += sprintf(o, "sym n = 1\ntensor A : f32[");
    for (size_t i = 0; i < depth; i++) o += sprintf(o, "min(");
    o += sprintf(o, "n] input\n");
    expect_nesting_error(buf);

    o = buf;
    o += sprintf(o, "tensor t : i32[4] input\nevent E[4]\ncall c = f() over (i) in [4] {\n  wait E[");
    for (size_t i = 0; i < 1000; i++) o += sprintf(o, "t[");
    o += sprintf(o, "i");
    for (size_t i = 0; i < 1000; i++) *o++ = ']';
    o += sprintf(o, "]\n}\n");
    *o = 0;
    expect_nesting_error(buf);

    /* 60 levels are fine */
    o = buf;
    o += sprintf(o, "tensor A : f32[");
    for (int i = 0; i < 60; i++) *o++ = '(';
    *o++ = '1';
    for (int i = 0; i < 60; i++) *o++ = ')';
    o += sprintf(o, "] input\n");
    *o = 0;
    evt_graph *g = parse_ok(buf);
    evt_graph_free(g);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_program),
        cmocka_unit_test(test_sample_normal_form),
        cmocka_unit_test(test_expressions),
        cmocka_unit_test(test_doubles_and_strings_roundtrip),
        cmocka_unit_test(test_built_through_api_roundtrips),
        cmocka_unit_test(test_examples_roundtrip),
        cmocka_unit_test(test_empty_and_io),
        cmocka_unit_test(test_truncation_at_every_byte),
        cmocka_unit_test(test_fuzz_mutations),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_deep_nesting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
