/* test_diagnostics.c — malformed .evt programs: each must be rejected with
 * the exact position and message of the offending token. These are the
 * parser's syntax and scope errors; semantic checks (operators, counts,
 * schedules) are tested with the verifier. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "evt/front.h"

/* Parses `src` as "t.evt" and expects failure with a line that contains
 * "t.evt:" + want (want = "LINE:COL: error: MESSAGE-PREFIX"). */
static void expect_diag(const char *src, const char *want)
{
    evt_diag d;
    evt_diag_init(&d, "t.evt");
    evt_graph *g = evt_parse(src, strlen(src), &d);
    char full[512];
    snprintf(full, sizeof full, "t.evt:%s", want);
    if (g || !d.text || !strstr(d.text, full))
        fprintf(stderr, "program:\n%s\nwanted: %s\ngot:\n%s", src, full, d.text ? d.text : "(no diagnostics)\n");
    assert_null(g);
    assert_non_null(d.text);
    assert_non_null(strstr(d.text, full));
    evt_diag_free(&d);
}

static int count_lines(const char *text, const char *needle)
{
    int n = 0;
    for (const char *s = text; s && (s = strstr(s, needle)); s++) n++;
    return n;
}

#define PRELUDE "sym n = 4 in [1, 1024]\ntensor A : f32[n, 8] input\ntensor topk : i32[n, 2] input\nevent E[n]\n"
/* line 5 is the first line after the prelude */

static void test_unknown_name(void **state)
{
    (void)state;
    expect_diag("sym n = 4\ntensor A : f32[m * 2] input\n", "2:16: error: unknown name 'm'");
    expect_diag(PRELUDE "call c = f(A, q) over (i) in [n] {\n}\n", "5:15: error: unknown name 'q'");
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    wait E[j]\n}\n", "6:12: error: unknown name 'j'");
}

static void test_variable_where_only_symbols(void **state)
{
    (void)state;
    expect_diag("sym n = 4\ncall c = f() over (i, j) in [n, i] {\n}\n",
                "2:33: error: variable 'i' cannot be used in a grid extent");
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    wait E[k] for k in [i + 1]\n}\n",
                "6:25: error: variable 'i' cannot be used in a 'for' extent");
}

static void test_bad_loads(void **state)
{
    (void)state;
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    wait E[topk[i]]\n}\n",
                "6:16: error: tensor topk has rank 2 but 1 index given");
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    wait E[A[i, 0]]\n}\n",
                "6:12: error: tensor A has type f32; only integer tensors");
    expect_diag(PRELUDE "tensor B : f32[topk[0, 0]] input\n",
                "5:16: error: tensor loads are only allowed in edge index expressions");
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    wait E[n[i]]\n}\n",
                "6:12: error: 'n' is a symbol, not a tensor, and cannot be indexed");
}

static void test_duplicate_names(void **state)
{
    (void)state;
    const char *src = "sym n = 4\ntensor x : f32[n] input\nevent n[4]\n";
    expect_diag(src, "3:7: error: duplicate name 'n' (first declared at 1:5 as a symbol)");
    evt_diag d;
    evt_diag_init(&d, "t.evt");
    assert_null(evt_parse(src, strlen(src), &d));
    assert_non_null(strstr(d.text, "t.evt:1:5: note: 'n' first declared here"));
    evt_diag_free(&d);
    expect_diag(PRELUDE "call E = f() over (i) in [n] {\n}\n", "5:6: error: duplicate name 'E' (first declared at 4:7 as an event)");
}

static void test_rank_limits(void **state)
{
    (void)state;
    expect_diag("tensor A : f32[1, 2, 3, 4, 5] input\n", "1:28: error: rank 5 exceeds the maximum of 4");
    expect_diag("event E[1, 2, 3, 4, 5, 6]\n", "1:21: error: rank 6 exceeds the maximum of 4");
    expect_diag("call c = f() over (a, b, c, d, e) in [1, 1, 1, 1, 1] {\n}\n",
                "1:32: error: rank 5 exceeds the maximum of 4");
}

static void test_edge_errors(void **state)
{
    (void)state;
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    notify F[i]\n}\n", "6:12: error: unknown event 'F'");
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    notify A[i]\n}\n", "6:12: error: 'A' is a tensor, not an event");
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    notify E[i, 0]\n}\n",
                "6:13: error: event E has rank 1 but 2 indices given");
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    wait E trigger n\n}\n",
                "6:20: error: trigger requires a tensor; 'n' is a symbol");
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    notify E trigger topk\n}\n",
                "6:14: error: 'trigger' is only allowed on wait edges");
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    wait E\n}\n",
                "7:1: error: expected '[' or 'trigger' after the event name, found '}'");
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    wait E[k] for k in [2], i in [2]\n}\n",
                "6:29: error: duplicate variable 'i'");
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    wait E[a] for a in [2], b in [2], c in [2]\n}\n",
                "6:39: error: at most 2 'for' variables per edge");
}

static void test_grid_errors(void **state)
{
    (void)state;
    expect_diag("sym n = 4\ncall c = f() over (i, j) in [n] {\n}\n",
                "2:29: error: call c has 2 grid variables but 1 extent");
    expect_diag("call c = f() over (i, i) in [1, 2] {\n}\n", "1:23: error: duplicate variable 'i'");
    expect_diag("call c = f() over (i) in [4] cost 1.5 {\n}\n", "1:35: error: expected an integer, found '1.5'");
    expect_diag("call c = f() over (i) in [4] policy fast {\n}\n",
                "1:37: error: expected static, dynamic or auto after 'policy', found 'fast'");
    expect_diag("call c = f() over (i) in [4] quickly {\n}\n", "1:30: error: unknown keyword 'quickly'");
    expect_diag("call c = f(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17) over (i) in [4] {\n}\n",
                "1:67: error: too many arguments (at most 16)");
}

static void test_structure_errors(void **state)
{
    (void)state;
    expect_diag("sym n = 4\nsymbol m = 3\n", "2:1: error: unknown keyword 'symbol' (expected sym, tensor, event or call)");
    expect_diag("sym n = 4\n= 3\n", "2:1: error: expected a declaration (sym, tensor, event or call), found '='");
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    wait E[i]\n",
                "7:1: error: missing '}' to close call c (opened at 5:30)");
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    wait E[i]\nevent G[2]\n",
                "7:1: error: missing '}' to close call c");
    expect_diag(PRELUDE "call c = f() over (i) in [n] {\n    signal E[i]\n}\n",
                "6:5: error: unknown keyword 'signal' in call body");
    expect_diag("sym n = \n", "2:1: error: expected an integer, found end of input");
    expect_diag("sym in = 4\n", "1:5: error: 'in' is a reserved word and cannot be used as a symbol name");
    expect_diag("sym n 4\n", "1:7: error: expected '=', found '4'");
    expect_diag("tensor A : f32[4 input\n", "1:18: error: expected ',' or ']', found 'input'");
    expect_diag("tensor A : f32[(4] input\n", "1:18: error: expected ')', found ']'");
    expect_diag("sym n = 4\ntensor A : f32[min(n)] input\n", "2:21: error: min takes two arguments");
}

static void test_lexical_errors(void **state)
{
    (void)state;
    expect_diag("tensor A : f32[4] input = file(\"abc)\n", "1:32: error: unterminated string");
    expect_diag("sym n = 4 $\n", "1:11: error: unexpected character '$'");
    expect_diag("sym n = 4\n\x01", "2:1: error: unexpected byte 0x01");
    expect_diag("sym n = 99999999999999999999\n", "1:9: error: number too large");
    expect_diag("sym n = 4\ntensor A : f32[n * 9223372036854775808] input\n", "2:20: error: number too large");
    expect_diag("sym n = 4x\n", "1:9: error: malformed number '4x'");
    expect_diag("tensor A : f32[4] input = file(\"a\\qb\")\n", "1:34: error: unknown escape '\\q' in string");
}

static void test_sym_errors(void **state)
{
    (void)state;
    expect_diag("sym n = 4 in [1, 16] buckets [1, 4, 2, 8]\n", "1:37: error: buckets must be strictly increasing");
    expect_diag("sym n = 4 in [1, 16] buckets [1, 4, 32]\n", "1:37: error: bucket 32 is outside the bounds [1, 16]");
    expect_diag("sym n = 40 in [1, 16]\n", "1:9: error: default value 40 is outside the bounds [1, 16]");
    expect_diag("sym n = 0\n", "1:9: error: default value 0 is outside the bounds");
    expect_diag("sym n = 4 in [8, 2]\n", "1:11: error: empty bounds: lower bound 8 is greater than upper bound 2");
    expect_diag("sym n = 1 buckets [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]\n",
                "1:75: error: too many buckets (at most 16)");
}

static void test_tensor_errors(void **state)
{
    (void)state;
    expect_diag("tensor A : f64[4] input\n", "1:12: error: unknown dtype 'f64' (expected f32, bf16, f16, i32, i64 or u8)");
    expect_diag("tensor A : f32[4] temp\n", "1:19: error: unknown role 'temp'");
    expect_diag("tensor A : f32[4] input = ones\n", "1:27: error: unknown initializer 'ones'");
    expect_diag("tensor A : f32[4] input = random(seed=1, mean=0)\n", "1:42: error: unknown key 'mean' in random(...)");
    expect_diag("tensor A : f32[4] input = random(seed=1, seed=2)\n", "1:42: error: duplicate key 'seed'");
    expect_diag("tensor A : i32[4] input = random(lo=0, hi=2.5)\n", "1:43: error: random bounds of integer tensor A must be integers");
    expect_diag("tensor A : f32[4] input = random(seed=-1)\n", "1:39: error: expected a non-negative integer seed");
    expect_diag("tensor A : f32[4, 8] weight = rope(base=1e4)\n", "1:36: error: expected theta=NUM in rope(...), found 'base'");
    expect_diag("tensor A : f32[4, 8] weight = rope(theta=0)\n", "1:42: error: rope(theta=...) needs a positive base");
    expect_diag("tensor A : f32[4 / 0] input\n", "1:18: error: division by zero");
    expect_diag("tensor A : f32[9223372036854775807 + 1] input\n", "1:36: error: integer overflow in constant expression");
    expect_diag("tensor A : f32[2.5] input\n", "1:16: error: expected an integer, found '2.5'");
    expect_diag("sym n = 4\nevent E[n] count = i\n", "2:20: error: unknown name 'i'");
    expect_diag("event E[4]\ntensor A : f32[E] input\n", "2:16: error: 'E' is an event, not an integer value");
}

static void test_several_errors_and_cap(void **state)
{
    (void)state;
    /* recovery: one error per broken declaration, the good ones in between parse */
    const char *src =
        "sym n = 4\n"
        "tensor A : f32[m] input\n"         /* unknown name */
        "tensor B : f32[4 input\n"          /* syntax error, skip to next decl */
        "event E[n]\n"
        "call c = f(A) over (i) in [n] {\n" /* A was still declared: no cascade */
        "    wait E[i, i]\n"                /* rank mismatch */
        "    bogus\n"                       /* unknown keyword, skip to next statement */
        "    notify E[i]\n"
        "}\n"
        "tensor C : q8[n] output\n";        /* unknown dtype */
    evt_diag d;
    evt_diag_init(&d, "t.evt");
    assert_null(evt_parse(src, strlen(src), &d));
    assert_int_equal(d.nerrors, 5);
    assert_non_null(strstr(d.text, "t.evt:2:16: error: unknown name 'm'"));
    assert_non_null(strstr(d.text, "t.evt:3:18: error: expected ',' or ']'"));
    assert_null(strstr(d.text, "t.evt:5:"));
    assert_non_null(strstr(d.text, "t.evt:6:11: error: event E has rank 1 but 2 indices given"));
    assert_non_null(strstr(d.text, "t.evt:7:5: error: unknown keyword 'bogus'"));
    assert_non_null(strstr(d.text, "t.evt:10:12: error: unknown dtype 'q8'"));
    evt_diag_free(&d);

    /* cap: at most 20 errors, then a note */
    char buf[4096] = "";
    for (int i = 0; i < 50; i++) strcat(buf, "tensor A : f32[zz] input\n");
    evt_diag_init(&d, "t.evt");
    assert_null(evt_parse(buf, strlen(buf), &d));
    assert_int_equal(d.nerrors, 20);
    assert_int_equal(count_lines(d.text, "error:"), 20);
    assert_non_null(strstr(d.text, "note: too many errors"));
    evt_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_name),
        cmocka_unit_test(test_variable_where_only_symbols),
        cmocka_unit_test(test_bad_loads),
        cmocka_unit_test(test_duplicate_names),
        cmocka_unit_test(test_rank_limits),
        cmocka_unit_test(test_edge_errors),
        cmocka_unit_test(test_grid_errors),
        cmocka_unit_test(test_structure_errors),
        cmocka_unit_test(test_lexical_errors),
        cmocka_unit_test(test_sym_errors),
        cmocka_unit_test(test_tensor_errors),
        cmocka_unit_test(test_several_errors_and_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
