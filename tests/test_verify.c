/* test_verify.c — semantic diagnostics of the verifier and the compile
 * pipeline (message and position), deadlock rejection of static schedules
 * with the tasks named, and the watchdog turning a planted wrong count into
 * an error instead of a hang. (Syntax errors: test_diagnostics.c.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

#define HEAD "sym n = 4 in [1, 64]\n"                    /* line 1 */ \
             "tensor A : f32[n * 32, 128] input = random\n" /* 2 */ \
             "tensor P : f32[n * 32, 4] scratch\n"          /* 3 */ \
             "tensor C : f32[n * 32] output\n"              /* 4 */ \
             "tensor ix : i32[n] input = range\n"           /* 5 */ \
             "tensor fx : f32[n] input = zeros\n"           /* 6 */ \
             "event E[n]\n"                                 /* 7 */
#define HEAD_W HEAD "tensor Wt : f32[n * 32, 4] weight = zeros\n" /* 8 */

typedef struct bad { const char *name, *program, *expect; } bad;

static const bad cases[] = {
    {"unknown operator", HEAD "call p = no_such_op(A) over (i) in [n] {\n}\n", "8:6: error: call p: unknown tile operator 'no_such_op'"},
    {"argument count", HEAD "call p = rowsum_partial(A, P) over (i, j) in [n, 4] {\n}\n", "8:6: error: call p: operator rowsum_partial takes 3 arguments, 2 given"},
    {"argument dtype", HEAD "call p = rowsum_partial(ix, P, 32) over (i, j) in [n, 4] {\n}\n", "8:25: error: call p: argument A of rowsum_partial must be f32, but ix is i32"},
    {"argument rank", HEAD "call p = rowsum_partial(C, P, 32) over (i, j) in [n, 4] {\n}\n", "8:25: error: call p: argument A of rowsum_partial must have rank 2, but C has rank 1"},
    {"tensor where int expected", HEAD "call p = rowsum_partial(A, P, C) over (i, j) in [n, 4] {\n}\n", "8:31: error: call p: argument 3 (tile) of rowsum_partial must be an integer"},
    {"int where tensor expected", HEAD "call p = rowsum_partial(A, 3, 32) over (i, j) in [n, 4] {\n}\n", "8:28: error: call p: argument 2 (P) of rowsum_partial must be a tensor"},
    {"writes an input", HEAD "call p = rowsum_partial(P, A, 32) over (i, j) in [n, 4] {\n}\n", "8:28: error: call p writes A, which is declared input"},
    {"writes a weight", HEAD_W "call p = rowsum_partial(A, Wt, 32) over (i, j) in [n, 4] {\n}\n", "9:28: error: call p writes Wt, which is declared weight"},
    {"waited, never notified", HEAD "call f = rowsum_final(P, C, 32) over (i) in [n] {\n    wait E[i]\n}\n", "7:7: error: event E is waited on by call f but no call notifies it"},
    {"read without ordering",
     HEAD "call p = rowsum_partial(A, P, 32) over (i, j) in [n, 4] {\n    notify E[i]\n}\n"
          "call f = rowsum_final(P, C, 32) over (i) in [n] {\n}\n",
     "11:23: error: call f reads P, written by call p, but waits on no event that orders it after p"},
    {"map out of range",
     HEAD "call p = rowsum_partial(A, P, 32) over (i, j) in [n, 4] {\n    notify E[i + 1]\n}\n"
          "call f = rowsum_final(P, C, 32) over (i) in [n] {\n    wait E[i]\n}\n",
     "9:5: error: call p: notify map on event E is out of range at task p(3, 0) (index 4)"},
    {"gather in a wait map",
     HEAD "call p = rowsum_partial(A, P, 32) over (i, j) in [n, 4] {\n    notify E[i]\n}\n"
          "call f = rowsum_final(P, C, 32) over (i) in [n] {\n    wait E[ix[i]]\n}\n",
     "12:5: error: call f: wait map on E reads a tensor"},
    {"gather from a float tensor",
     HEAD "call p = rowsum_partial(A, P, 32) over (i, j) in [n, 4] {\n    notify E[fx[i]]\n}\n"
          "call f = rowsum_final(P, C, 32) over (i) in [n] {\n    wait E[i]\n}\n",
     "9:14: error: tensor fx has type f32; only integer tensors can be read in index expressions"},
    {"trigger on a 2-D grid",
     HEAD "call p = rowsum_partial(A, P, 32) over (i, j) in [n, 4] {\n    notify E[i]\n}\n"
          "call f = rowsum_partial(A, P, 32) over (i, j) in [n, 4] {\n    wait E trigger ix\n}\n",
     "12:5: error: call f: a trigger range needs a 1-D grid, not rank 2"},
    {"trigger from a float tensor",
     HEAD "call p = rowsum_partial(A, P, 32) over (i, j) in [n, 4] {\n    notify E[i]\n}\n"
          "call f = rowsum_final(P, C, 32) over (i) in [n] {\n    wait E trigger fx\n}\n",
     "12:5: error: call f: trigger tensor fx must be a 1-D i32 or i64 tensor"},
    {"task waits on itself",
     HEAD "call p = rowsum_partial(A, P, 32) over (i, j) in [n, 4] {\n    wait E[i]\n    notify E[i]\n}\n",
     "9:5: error: call p waits on E with the same map it notifies: each task would wait for itself (cycle)"},
    {"declared count too high",
     "sym n = 4 in [1, 64]\ntensor A : f32[n * 32, 128] input\ntensor P : f32[n * 32, 4] scratch\ntensor C : f32[n * 32] output\n"
     "event E[n] count = 5\n"
     "call p = rowsum_partial(A, P, 32) over (i, j) in [n, 4] {\n    notify E[i]\n}\n"
     "call f = rowsum_final(P, C, 32) over (i) in [n] {\n    wait E[i]\n}\n",
     "5:7: error: event E: declared count 5 but element 0 receives 4 notifies at the default shape (it could never complete)"},
    {"count reads a tensor", HEAD "event G[n] count = ix[0]\n", "8:7: error: event G: a declared count may use symbols and the element coordinates e0.. but not tensors"},
    {"cycle between calls",
     "sym n = 4 in [1, 64]\ntensor X : f32[n] scratch\ntensor Y : f32[n] scratch\n"
     "event E[n]\nevent F[n]\n"
     "call a = spin(Y, X, 0, 1, 1, 0, 1) over (i) in [n] {\n    wait F[i]\n    notify E[i]\n}\n"
     "call b = spin(X, Y, 0, 1, 1, 0, 1) over (i) in [n] {\n    wait E[i]\n    notify F[i]\n}\n",
     "error: the program would deadlock: cycle through tasks"},
    {"two writers of routing",
     "sym T = 4 in [1, 64]\ntensor t1 : i32[T, 1] input\ntensor tk : i32[T, 1] scratch\ntensor ip : i32[3] scratch\n"
     "tensor pos : i32[T, 1] scratch\ntensor rt : i32[T] scratch\ntensor pos2 : i32[T, 1] scratch\ntensor rt2 : i32[T] scratch\n"
     "tensor ip2 : i32[3] scratch\nevent I[1]\nevent G[2]\n"
     "call a = moe_index(t1, ip, pos, rt) over (u) in [1] {\n    notify I[0]\n}\n"
     "call b = moe_index(t1, ip2, pos2, rt2) over (u) in [1] {\n    notify I[0]\n}\n"
     "call g = mark(rt) over (t) in [T] {\n    wait I[0]\n    notify G[rt[t] % 2 + ip2[0]]\n}\n",
     "11:7: error: event G: its count depends on tensors written by calls a and b"},
    {"trigger before ordering wait",
     "sym T = 4 in [1, 64]\ntensor tk : i32[T, 1] input = const(0)\ntensor ip : i32[2] scratch\ntensor pos : i32[T, 1] scratch\n"
     "tensor rt : i32[T] scratch\ntensor M : i32[T] output = zeros\nevent I[1]\nevent G[1]\n"
     "call a = moe_index(tk, ip, pos, rt) over (u) in [1] {\n    notify I[0]\n}\n"
     "call g = mark(rt) over (t) in [T] {\n    wait I[0]\n    notify G[0]\n}\n"
     "call e = mark(M) over (r) in [T] {\n    wait G trigger ip\n    wait I[0]\n}\n",
     "17:5: error: call e: the trigger range reads ip, written by call a; wait on an event ordered after a before the trigger wait"},
    {"rope table of bf16", HEAD "tensor R : bf16[16, 8] weight = rope(theta=10000)\n",
     "8:8: error: tensor R: `rope(...)` initialises f32 tensors of rank 2 only ([positions, head_dim])"},
    {"rope table of rank 1", HEAD "tensor R : f32[16] weight = rope(theta=10000)\n",
     "8:8: error: tensor R: `rope(...)` initialises f32 tensors of rank 2 only"},
    {"bucket does not cover bound", "sym n = 4 in [1, 64] buckets [1, 2, 4]\n", "1:5: error: symbol n: largest bucket 4 does not cover the upper bound 64"},
};

static void diagnostics(void **state)
{
    (void)state;
    int n = (int)(sizeof cases / sizeof cases[0]), bad = 0;
    assert_true(n >= 15);
    for (int i = 0; i < n; i++) {
        char *msg;
        evt_module *m = h_try_build(cases[i].program, NULL, &msg);
        if (m) { print_error("%s: accepted\n", cases[i].name); bad++; evt_module_free(m); }
        else if (!strstr(msg, cases[i].expect)) { print_error("%s: expected\n  %s\ngot\n  %s\n", cases[i].name, cases[i].expect, msg); bad++; }
        free(msg);
    }
    assert_int_equal(bad, 0);
}

/* Reverse chain: task i waits on task i + 1. Round robin in program order
 * puts chain(0) first on worker 0 although it needs everything after it. */
static const char *reverse_chain =
    "sym n = 6 in [2, 64]\n"
    "tensor X : f32[n] output = zeros\n"
    "event E[n + 1]\n"
    "call chain = chain_step(X, -1) over (i) in [n] {\n"
    "    wait E[i + 1]\n"
    "    notify E[i]\n"
    "}\n";

static void deadlock_rejected(void **state)
{
    (void)state;
    evt_diag d;
    evt_diag_init(&d, "chain.evt");
    evt_graph *g = evt_parse(reverse_chain, strlen(reverse_chain), &d);
    assert_non_null(g);
    evt_plan *p;
    assert_int_equal(evt_compile(g, NULL, &p, &d), EVT_OK);
    int64_t sym[1] = {6};
    evt_static_sched q;
    assert_int_equal(evt_schedule_static(p, sym, 2, EVT_QUEUE_RR, &q, &d), EVT_ERR_SCHEDULE);
    /* the message names the tasks of the cycle */
    if (!strstr(d.text, "round-robin static schedule would deadlock: cycle through tasks chain(") ||
        !strstr(d.text, "(queued after it)") || !strstr(d.text, "(waits on E["))
        fail_msg("unexpected message: %s", d.text);
    /* critical-path list scheduling orders the queues topologically */
    evt_diag_free(&d);
    evt_diag_init(&d, "chain.evt");
    assert_int_equal(evt_schedule_static(p, sym, 2, EVT_QUEUE_CP, &q, &d), EVT_OK);
    assert_int_equal(evt_schedule_verify(p, sym, &q, &d), EVT_OK);
    evt_static_sched_free(&q);
    /* one worker, rr: a single queue in program order is a cycle as well */
    assert_int_equal(evt_schedule_static(p, sym, 1, EVT_QUEUE_RR, &q, &d), EVT_ERR_SCHEDULE);
    evt_plan_free(p);
    evt_graph_free(g);
    evt_diag_free(&d);

    /* at run time: rr is refused before launching; cp and dynamic run it */
    evt_module *m = h_build(reverse_chain);
    const evt_graph *mg = evt_module_graph(m);
    int64_t s2[1] = {6};
    evt_buffers *b;
    evt_diag_init(&d, "chain.evt");
    assert_int_equal(evt_buffers_new(mg, s2, 1, 0xff, &b, &d), EVT_OK);
    evt_run_opts o = {.sched = EVT_SCHED_STATIC, .workers = 2};
    assert_int_equal(evt_module_run(m, s2, b, &o, NULL, &d), EVT_ERR_SCHEDULE);
    o.policy = EVT_QUEUE_CP;
    assert_int_equal(evt_module_run(m, s2, b, &o, NULL, &d), EVT_OK);
    const float *X = evt_buffers_data(b, 0, NULL);
    for (int i = 0; i < 6; i++) assert_true(X[i] == (float)(6 - i));
    evt_run_opts od = {.sched = EVT_SCHED_DYNAMIC, .workers = 3};
    assert_int_equal(evt_module_run(m, s2, b, &od, NULL, &d), EVT_OK);
    for (int i = 0; i < 6; i++) assert_true(X[i] == (float)(6 - i));
    /* the sequential reference cannot run it, and says why */
    evt_diag_free(&d);
    evt_diag_init(&d, "chain.evt");
    assert_int_equal(evt_reference_run(m, s2, b, &d), EVT_ERR_RUNTIME);
    assert_non_null(strstr(d.text, "reference: task chain(0) waits on E[1], which is not complete"));
    evt_buffers_free(b);
    evt_diag_free(&d);
    evt_module_free(m);
}

/* A declared count one too high (accepted with trust_counts): the consumer
 * can never start. The watchdog must turn that into an error naming the
 * task and the event, under every schedule, and the module stays usable. */
static void watchdog_planted_count(void **state)
{
    (void)state;
    const char *prog =
        "sym n = 4 in [1, 64]\n"
        "tensor A : f32[n * 32, 128] input = random\n"
        "tensor P : f32[n * 32, 4] scratch\n"
        "tensor C : f32[n * 32] output\n"
        "event E[n] count = 5\n"
        "call partial = rowsum_partial(A, P, 32) over (i, j) in [n, 4] {\n    notify E[i]\n}\n"
        "call final = rowsum_final(P, C, 32) over (i) in [n] {\n    wait E[i]\n}\n";
    evt_compile_opts co = {.trust_counts = 1};
    char *msg;
    evt_module *m = h_try_build(prog, &co, &msg);
    if (!m) fail_msg("%s", msg);
    free(msg);
    evt_sched_kind scheds[] = {EVT_SCHED_STATIC, EVT_SCHED_DYNAMIC};
    for (int k = 0; k < 2; k++) {
        evt_run_opts o = {.sched = scheds[k], .workers = 3, .timeout_s = 0.3};
        evt_status st = h_run_check(m, 0, NULL, &o, 1, &msg);
        assert_int_equal(st, EVT_ERR_TIMEOUT);
        if (k == 0 && !strstr(msg, "watchdog: task final(") ) fail_msg("static: %s", msg);
        if (k == 0 && !strstr(msg, "is stuck waiting on E[")) fail_msg("static: %s", msg);
        if (k == 0 && !strstr(msg, "4 of 5 notifies arrived")) fail_msg("static: %s", msg);
        if (k == 1 && !strstr(msg, "deadlock: the launch went quiet with E[") ) fail_msg("dynamic: %s", msg);
        if (k == 1 && !strstr(msg, "at 4 of 5 notifies; the tasks waiting on it never ran")) fail_msg("dynamic: %s", msg);
        free(msg);
    }
    evt_module_free(m);
}

/* Recovery: after a watchdog abort the module's state is reset and the next
 * launch of a good shape succeeds. */
static void recovers_after_abort(void **state)
{
    (void)state;
    const char *prog =
        "sym n = 2 in [1, 8]\n"
        "sym c = 4 in [1, 8]\n"
        "tensor z : f32[1] input = const(0)\n"
        "tensor Y : f32[n * 4] scratch\n"
        "tensor Z : f32[n] output\n"
        "event E[n] count = c\n"
        "call p = spin(z, Y, 0, 0, 1, 0, 1) over (i, j) in [n, 4] {\n    notify E[i]\n}\n"
        "call f = spin(Y, Z, 0, 4, 1, 0, 1) over (i) in [n] {\n    wait E[i]\n}\n";
    char *msg;
    evt_module *m = h_try_build(prog, NULL, &msg);
    if (!m) fail_msg("%s", msg);
    free(msg);
    evt_run_opts o = {.sched = EVT_SCHED_STATIC, .workers = 2, .timeout_s = 0.2};
    const char *bad[] = {"c=5"}, *good[] = {"c=4"};
    assert_int_equal(h_run_check(m, 1, bad, &o, 1, &msg), EVT_ERR_TIMEOUT);
    free(msg);
    o.timeout_s = 10; /* good launches: no false alarm on a busy machine */
    for (int k = 0; k < 3; k++) {
        assert_int_equal(h_run_check(m, 1, good, &o, 1, &msg), EVT_OK);
        free(msg);
    }
    evt_module_free(m);
}

/* A scratch tensor initialised with zeros holds what tiles count in (their
 * counts are back at 0 after every complete launch, attn_rope_split's merge
 * groups): an aborted launch leaves them mid-way, so the backend zeroes
 * them again, and leaves other scratch alone. */
static void abort_rezeroes_counters(void **state)
{
    (void)state;
    const char *prog =
        "sym n = 2 in [1, 8]\n"
        "tensor z : f32[1] input = const(0)\n"
        "tensor Y : f32[n * 4] scratch\n"
        "tensor K : i32[n, 3] scratch = zeros\n"
        "tensor Z : f32[n] output\n"
        "event E[n] count = 5\n"
        "call p = spin(z, Y, 0, 0, 1, 0, 1) over (i, j) in [n, 4] {\n    notify E[i]\n}\n"
        "call f = spin(Y, Z, 0, 4, 1, 0, 1) over (i) in [n] {\n    wait E[i]\n}\n";
    evt_compile_opts co = {.trust_counts = 1};
    char *msg;
    evt_module *m = h_try_build(prog, &co, &msg);
    if (!m) fail_msg("%s", msg);
    free(msg);
    const evt_graph *g = evt_module_graph(m);
    evt_diag d;
    evt_diag_init(&d, "t.evt");
    int64_t sym[8];
    const char *sets[] = {"n=2"};
    evt_buffers *b = NULL;
    assert_int_equal(evt_shape_parse(g, 1, sets, sym, &d), EVT_OK);
    assert_int_equal(evt_buffers_new(g, sym, 1, 0xff, &b, &d), EVT_OK);
    int ik = -1, iy = -1;
    for (int i = 0; i < g->ntensors; i++) {
        if (!strcmp(g->tensors[i]->name, "K")) ik = i;
        if (!strcmp(g->tensors[i]->name, "Y")) iy = i;
    }
    size_t nk = 0, ny = 0;
    int32_t *k = evt_buffers_data(b, ik, &nk);
    unsigned char *y = evt_buffers_data(b, iy, &ny);
    for (size_t i = 0; i < nk / 4; i++) k[i] = 7; /* a count left mid-way */
    evt_run_opts o = {.sched = EVT_SCHED_STATIC, .workers = 2, .timeout_s = 0.2};
    assert_int_equal(evt_module_run(m, sym, b, &o, NULL, &d), EVT_ERR_TIMEOUT);
    for (size_t i = 0; i < nk / 4; i++) assert_int_equal(k[i], 0);
    int written = 0; /* Y was written by the tasks that ran: not zeroed */
    for (size_t i = 0; i < ny; i++) written |= y[i] != 0;
    assert_true(written);
    evt_buffers_free(b);
    evt_diag_free(&d);
    evt_module_free(m);
}

/* Every built-in operator's parameters fit the tile ABI's arrays (the
 * generated code fills evt_task_args.t[] and .iarg[] by position), and a
 * user operator with one tensor too many is refused, not registered. */
static void tile_abi_fits(void **state)
{
    (void)state;
    int n = 0;
    for (int i = 0; evt_tile_at(i); i++, n++)
        if (!evt_tile_fits_abi(evt_tile_at(i))) fail_msg("built-in %s does not fit the tile ABI", evt_tile_at(i)->name);
    assert_true(n > 20);
    evt_tile_decl wide = {.name = "too_wide", .doc = "one tensor more than evt_task_args holds", .nparams = EVT_ABI_MAX_TENSORS + 1,
                          .cpu = evt_tile_at(0)->cpu, .threads = 128};
    for (int k = 0; k < wide.nparams; k++) wide.params[k] = (evt_tile_param){"t", EVT_PARAM_IN, EVT_ANY_DTYPE, EVT_ANY_RANK};
    assert_false(evt_tile_fits_abi(&wide));
    assert_int_equal(evt_tile_register(&wide), EVT_ERR_VERIFY);
    assert_null(evt_tile_find("too_wide"));
    wide.nparams = EVT_MAX_ARGS + 1; /* more than params[] holds: refused without reading past it */
    assert_false(evt_tile_fits_abi(&wide));
    wide.nparams = -1;
    assert_false(evt_tile_fits_abi(&wide));
    wide.nparams = EVT_ABI_MAX_TENSORS; /* at the limit: registered */
    wide.name = "wide_enough";
    assert_int_equal(evt_tile_register(&wide), EVT_OK);
    assert_non_null(evt_tile_find("wide_enough"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(diagnostics),
        cmocka_unit_test(deadlock_rejected),
        cmocka_unit_test(watchdog_planted_count),
        cmocka_unit_test(recovers_after_abort),
        cmocka_unit_test(abort_rezeroes_counters),
        cmocka_unit_test(tile_abi_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
