/* test_passes.c — expressions, count inference (closed forms agree with
 * enumeration at many shapes), event fusion (fewer events, same results),
 * the unfused transform, task records (bind-time wait and notify lists, the
 * fallback to device-side maps, bucket entries skipped), the traces' late_us,
 * and artifacts
 * (save, load without compiling, run, reject corrupt or stale files). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"
#include "pass/plan.h"
#include "runtime/bind.h"

static void expressions(void **state)
{
    (void)state;
    evt_graph *g = evt_graph_new();
    evt_sym *n = evt_sym_new(g, "n", 5);
    evt_expr *x = evt_symref(g, n);
    int64_t sym[1] = {-7};
    evt_eval_env env = {.sym = sym};
    int err = 0;
    /* floor semantics, as in the IR */
    assert_int_equal(evt_expr_eval(evt_binop(g, EVT_E_DIV, x, evt_const(g, 2)), &env, &err), -4);
    assert_int_equal(evt_expr_eval(evt_binop(g, EVT_E_MOD, x, evt_const(g, 2)), &env, &err), 1);
    assert_int_equal(err, 0);
    evt_expr_eval(evt_binop(g, EVT_E_DIV, x, evt_binop(g, EVT_E_SUB, x, x)), &env, &err);
    assert_int_equal(err, 1); /* division by zero is reported, not a crash */
    /* constants fold, identities vanish */
    int64_t v;
    assert_true(evt_expr_is_const(evt_binop(g, EVT_E_MUL, evt_const(g, 6), evt_const(g, 7)), &v) && v == 42);
    assert_ptr_equal(evt_binop(g, EVT_E_ADD, x, evt_const(g, 0)), x);
    assert_ptr_equal(evt_binop(g, EVT_E_MUL, evt_const(g, 1), x), x);
    /* printing with minimal parentheses */
    evt_printer p = {0};
    evt_expr_print(&p, evt_binop(g, EVT_E_MUL, evt_binop(g, EVT_E_ADD, x, evt_const(g, 1)), evt_binop(g, EVT_E_SUB, x, evt_const(g, 2))), NULL);
    assert_string_equal(p.buf, "(n + 1) * (n - 2)");
    evt_pr_free(&p);
    evt_expr_print(&p, evt_binop(g, EVT_E_SUB, x, evt_binop(g, EVT_E_SUB, x, evt_const(g, 2))), NULL);
    assert_string_equal(p.buf, "n - (n - 2)");
    evt_pr_free(&p);
    evt_graph_free(g);
}

static evt_plan *compile_text(const char *text, evt_graph **gout, evt_compile_opts *o)
{
    evt_diag d;
    evt_diag_init(&d, "t.evt");
    evt_graph *g = evt_parse(text, strlen(text), &d);
    if (!g) fail_msg("%s", d.text);
    evt_plan *p;
    if (evt_compile(g, o, &p, &d)) fail_msg("%s", d.text);
    evt_diag_free(&d);
    *gout = g;
    return p;
}

static void counts_closed_form(void **state)
{
    (void)state;
    const char *prog =
        "sym n = 5 in [1, 40]\n"
        "sym m = 3 in [1, 9]\n"
        "tensor M : i32[n * m * 4] output = zeros\ntensor M2 : i32[n] output = zeros\n"
        "event Row[n]\nevent Pair[(n * m + 1) / 2, m]\nevent Bcast[1]\nevent Diag[n, 2]\nevent Off[n + 2]\n"
        "call a = mark(M) over (i, j) in [n, m] {\n"
        "    notify Row[i]\n"                 /* m per element */
        "    notify Pair[(i * m + j) / 2, j]\n" /* enumerated: not a projection */
        "    notify Bcast[0]\n"                  /* n * m */
        "    notify Diag[i, k] for k in [2]\n"  /* `for` variable: 1 each, m times */
        "    notify Off[i + 1]\n"               /* enumerated (i + 1) */
        "}\n"
        "call b = mark(M2) over (i) in [n] {\n    wait Row[i]\n    wait Bcast[0]\n    wait Diag[i, 1]\n    wait Off[i]\n}\n";
    evt_graph *g;
    evt_compile_opts o = {.no_fuse = 1};
    evt_plan *p = compile_text(prog, &g, &o);
    static const char *ev[] = {"e0", "e1"};
    evt_printer pr = {0};
    evt_expr_print(&pr, p->ev[0].formula, ev);
    assert_string_equal(pr.buf, "m");
    evt_pr_free(&pr);
    assert_null(p->ev[1].formula);   /* enumerated */
    assert_null(p->ev[4].formula);
    evt_expr_print(&pr, p->ev[2].formula, ev);
    assert_string_equal(pr.buf, "n * m");
    evt_pr_free(&pr);
    /* every closed form equals the enumeration, at every shape */
    for (int64_t n = 1; n <= 12; n++)
        for (int64_t m = 1; m <= 9; m++) {
            int64_t sym[2] = {n, m};
            evt_bound b;
            evt_diag d;
            evt_diag_init(&d, "t");
            assert_int_equal(evt_bind(p, sym, EVT_SCHED_DYNAMIC, 2, EVT_QUEUE_RR, 1, &b, &d), EVT_OK);
            for (int e = 0; e < g->nevents; e++) {
                if (!p->ev[e].formula) continue;
                for (int64_t x = b.s.ev_base[e]; x < b.s.ev_base[e + 1]; x++) {
                    int64_t idx[4] = {0};
                    evt_shape_decode(&b.s.ev_dim[e * 4], g->events[e]->rank, x - b.s.ev_base[e], idx);
                    evt_eval_env env = {.sym = sym, .var = idx};
                    int err = 0;
                    int64_t f = evt_expr_eval(p->ev[e].formula, &env, &err);
                    if (f != b.target[x]) fail_msg("%s element %lld at n=%lld m=%lld: formula %lld, enumeration %d",
                                                   g->events[e]->name, (long long)(x - b.s.ev_base[e]), (long long)n,
                                                   (long long)m, (long long)f, b.target[x]);
                }
            }
            evt_bound_free(&b);
            evt_diag_free(&d);
        }
    evt_plan_free(p);
    evt_graph_free(g);
}

static void division_counts(void **state)
{
    (void)state;
    /* (t) -> (t / 3) over [n]: the last element may get fewer than 3 */
    evt_graph *g;
    evt_plan *p = compile_text("sym n = 7 in [1, 50]\ntensor M : i32[n] output = zeros\ntensor M2 : i32[n] output = zeros\nevent E[(n + 2) / 3]\n"
                               "call a = mark(M) over (t) in [n] {\n    notify E[t / 3]\n}\n"
                               "call b = mark(M2) over (t) in [(n + 2) / 3] {\n    wait E[t]\n}\n", &g, NULL);
    assert_non_null(p->ev[0].formula);
    for (int64_t n = 1; n <= 50; n++) {
        int64_t sym[1] = {n};
        for (int64_t e = 0; e < (n + 2) / 3; e++) {
            int64_t idx[1] = {e};
            evt_eval_env env = {.sym = sym, .var = idx};
            int err = 0;
            int64_t expect = n - 3 * e < 3 ? n - 3 * e : 3;
            assert_int_equal(evt_expr_eval(p->ev[0].formula, &env, &err), expect);
        }
    }
    evt_plan_free(p);
    evt_graph_free(g);
}

static void fusion(void **state)
{
    (void)state;
    /* predecessor-set: E and F have the same producers; successor-set: G and
       H are always awaited together by the same consumers */
    const char *prog =
        "sym n = 6 in [1, 64]\n"
        "tensor z : f32[1] input = const(1)\n"
        "tensor X : f32[n] scratch\ntensor X2 : f32[n] scratch\n"
        "tensor Y : f32[n] output\ntensor Z : f32[n] output\n"
        "event E[n]\nevent F[n]\nevent G[n]\nevent H[n]\n"
        "call a = spin(z, X, 0, 0, 1, 0, 1) over (i) in [n] {\n    notify E[i]\n    notify F[i]\n    notify G[i]\n}\n"
        "call a2 = spin(z, X2, 0, 0, 1, 0, 1) over (i) in [n] {\n    notify H[i]\n}\n"
        "call b = spin(X, Y, 0, 1, 1, 0, 1) over (i) in [n] {\n    wait E[i]\n    wait G[i]\n    wait H[i]\n}\n"
        "call c = spin(X, Z, 0, 1, 1, 0, 1) over (i) in [n] {\n    wait F[i]\n    wait G[i]\n    wait H[i]\n}\n";
    evt_graph *g;
    evt_plan *p = compile_text(prog, &g, NULL);
    assert_int_equal(p->nfused, 2);
    assert_int_equal(g->nevents, 2);
    evt_plan_free(p);
    evt_graph_free(g);
    evt_module *m = h_build(prog);
    const char *sets[] = {"n=13"};
    for (int s = 0; s < 3; s++) {
        evt_run_opts o = {.sched = (evt_sched_kind)s, .workers = 3};
        char *msg;
        if (h_run_check(m, 1, sets, &o, 3, &msg)) fail_msg("%s", msg);
        free(msg);
    }
    evt_module_free(m);
    /* no fusion when a consumer needs only one of them */
    p = compile_text("sym n = 4 in [1, 8]\ntensor M : i32[n] output = zeros\ntensor M2 : i32[n] output = zeros\n"
                     "tensor M3 : i32[n] output = zeros\nevent E[n]\nevent F[n]\n"
                     "call a = mark(M) over (i) in [n] {\n    notify E[i]\n}\n"
                     "call a2 = mark(M2) over (i) in [n] {\n    wait E[i]\n    notify F[i]\n}\n"
                     "call b = mark(M3) over (i) in [n] {\n    wait F[i]\n}\n", &g, NULL);
    assert_int_equal(p->nfused, 0);
    evt_plan_free(p);
    evt_graph_free(g);
}

static void unfused_graph(void **state)
{
    (void)state;
    evt_graph *g;
    evt_plan *p = compile_text("sym n = 4 in [1, 8]\ntensor A : f32[n * 32, 64] input = random\n"
                               "tensor P : f32[n * 32, 2] scratch\ntensor C : f32[n * 32] output\nevent E[n]\n"
                               "call partial = rowsum_partial(A, P, 32) over (i, j) in [n, 2] {\n    notify E[i]\n}\n"
                               "call final = rowsum_final(P, C, 32) over (i) in [n] {\n    wait E[i]\n}\n", &g, NULL);
    evt_graph *u = evt_pass_unfuse(g);
    evt_printer pr = {0};
    evt_print_graph(&pr, u);
    assert_non_null(strstr(pr.buf, "event partial_done[1]"));
    assert_non_null(strstr(pr.buf, "    notify partial_done[0]\n"));
    assert_non_null(strstr(pr.buf, "    wait partial_done[0]\n"));
    assert_null(strstr(pr.buf, "event E["));
    evt_pr_free(&pr);
    evt_plan *pu;
    evt_diag d;
    evt_diag_init(&d, "u");
    assert_int_equal(evt_compile(u, NULL, &pu, &d), EVT_OK);
    evt_printer c = {0};
    evt_plan_print_counts(&c, pu);
    assert_non_null(strstr(c.buf, "partial_done[e0] count = n * 2"));
    evt_pr_free(&c);
    evt_plan_free(pu);
    evt_graph_free(u);
    evt_plan_free(p);
    evt_graph_free(g);
    evt_diag_free(&d);
}

/* Kernel by kernel runs calls in program order with no events: a call
 * waiting on its own tasks, or on a later call, is refused with a message;
 * a valid program gives the reference's result, also on a second shape. */
static void kernel_by_kernel(void **state)
{
    (void)state;
    const char *self = "sym n = 8 in [1, 64]\ntensor M : i32[1] output = zeros\ntensor M2 : i32[n] output = zeros\n"
                       "event F[n + 1]\n"
                       "call start = mark(M) over (i) in [1] {\n    notify F[0]\n}\n"
                       "call b = mark(M2) over (i) in [n] {\n    wait F[i]\n    notify F[i + 1]\n}\n";
    const char *later = "sym n = 8 in [1, 64]\ntensor M : i32[n] output = zeros\ntensor M2 : i32[n] output = zeros\n"
                        "event E[n]\n"
                        "call b = mark(M2) over (i) in [n] {\n    wait E[i]\n}\n"
                        "call a = mark(M) over (i) in [n] {\n    notify E[i]\n}\n";
    struct { const char *prog, *msg; } bad[] = {
        {self, "its own tasks notify"},
        {later, "which call a notifies later in program order"},
    };
    for (int k = 0; k < 2; k++) {
        evt_module *m = h_build(bad[k].prog); /* compiles: the megakernel does not need program order */
        const char *sets[] = {"n=8"};
        for (int s = EVT_SCHED_KBK; s <= EVT_SCHED_GRAPH; s++) {
            evt_run_opts o = {.sched = (evt_sched_kind)s, .workers = 2};
            char *msg = NULL;
            assert_int_equal(h_run_check(m, 1, sets, &o, 1, &msg), EVT_ERR_VERIFY);
            if (!msg || !strstr(msg, bad[k].msg)) fail_msg("expected '%s' in: %s", bad[k].msg, msg ? msg : "");
            free(msg);
        }
        evt_module_free(m);
    }
    evt_module *m = h_build_file("examples/split_rowsum.evt");
    const char *shapes[] = {"n=5", "n=64", "n=5"};
    for (int k = 0; k < 3; k++) {
        evt_run_opts o = {.sched = k == 1 ? EVT_SCHED_GRAPH : EVT_SCHED_KBK, .workers = 1 + 2 * k};
        char *msg;
        if (h_run_check(m, 1, &shapes[k], &o, 11 + k, &msg)) fail_msg("%s: %s", shapes[k], msg);
        free(msg);
    }
    evt_module_free(m);
}

/* Hybrid: the `policy dynamic` call's tasks run on the dynamic workers (the
 * upper share), the others in static queues on the lower ones; the result
 * is the reference's; one worker cannot serve both. */
static void hybrid_split(void **state)
{
    (void)state;
    const char *prog = "sym n = 24 in [1, 64]\ntensor z : f32[1] input = const(0)\ntensor Y : f32[n] output\n"
                       "tensor M : i32[n] output = zeros\nevent Done[n]\n"
                       "call work = spin(z, Y, 20000, 0, 1, 0, 1) over (t) in [n] {\n    notify Done[t]\n}\n"
                       "call once = mark(M) over (t) in [n] policy dynamic {\n    wait Done[t]\n}\n";
    evt_module *m = h_build(prog);
    const char *sets[] = {"n=24"};
    char trace[64];
    snprintf(trace, sizeof trace, "/tmp/evt-hybrid-%d.json", (int)getpid());
    evt_run_opts o = {.sched = EVT_SCHED_HYBRID, .workers = 4, .trace_path = trace};
    char *msg = NULL;
    if (h_run_check(m, 1, sets, &o, 1, &msg)) fail_msg("%s", msg);
    free(msg);
    h_trace tr;
    assert_int_equal(h_trace_load(trace, &tr), 0);
    unlink(trace);
    assert_int_equal(h_trace_count(&tr, "work("), 24);
    assert_int_equal(h_trace_count(&tr, "once("), 24);
    for (int i = 0; i < tr.n; i++) {
        int dynamic_task = !strncmp(tr.t[i].name, "once(", 5);
        /* equal work on both sides: 2 static and 2 dynamic workers */
        if (dynamic_task != (tr.t[i].tid >= 2)) fail_msg("%s ran on worker %d", tr.t[i].name, tr.t[i].tid);
    }
    h_trace_free(&tr);
    o.trace_path = NULL;
    o.workers = 1;
    assert_int_equal(h_run_check(m, 1, sets, &o, 1, &msg), EVT_ERR_SCHEDULE);
    if (!msg || !strstr(msg, "needs at least 2 workers")) fail_msg("%s", msg ? msg : "");
    free(msg);
    evt_module_free(m);
}

/* Runs a one-symbol module at n = `n` and checks it against the reference;
   a failure names n and the variant (`what` then v). */
static void run_check_at(evt_module *m, int n, const evt_run_opts *o, const char *what, int v)
{
    char set[16];
    snprintf(set, sizeof set, "n=%d", n);
    const char *sets[] = {set};
    char *msg = NULL;
    if (h_run_check(m, 1, sets, o, (uint64_t)n, &msg)) fail_msg("n=%d %s%d: %s", n, what, v, msg);
    free(msg);
}

/* Binds a one-symbol plan at n with 3 workers, round-robin queues. */
static void bind_at(const evt_plan *p, int64_t n, evt_sched_kind sched, evt_bound *b)
{
    int64_t sym[1] = {n};
    evt_diag d;
    evt_diag_init(&d, "t");
    assert_int_equal(evt_bind(p, sym, sched, 3, EVT_QUEUE_RR, 0, b, &d), EVT_OK);
    evt_diag_free(&d);
}

/* The dynamic schedule's consumer lists flag the consumers whose only wait
 * is the element (EVT_CONS_SOLE: pushed by their one credit without a
 * pending count) and no other, and runs with the flag agree with the
 * reference under the dynamic schedule, with early push, and in hybrid
 * (where `one`, the `policy dynamic` call, is pushed by static producers). */
static void consumer_lists_flag_sole_waits(void **state)
{
    (void)state;
    const char *prog =
        "sym n = 3 in [1, 8]\n"
        "tensor M : i32[n] output = zeros\ntensor M2 : i32[n] output = zeros\ntensor M3 : i32[n] output = zeros\n"
        "event A[n]\nevent B[n]\n"
        "call a = mark(M) over (i) in [n] {\n    notify A[i]\n    notify B[i]\n}\n"
        "call one = mark(M2) over (i) in [n] policy dynamic {\n    wait A[i]\n}\n"
        "call two = mark(M3) over (i) in [n] {\n    wait A[i]\n    wait B[n - 1 - i]\n}\n";
    evt_graph *g;
    evt_compile_opts co = {.no_fuse = 1};
    evt_plan *p = compile_text(prog, &g, &co);
    for (int64_t n = 1; n <= 8; n++) {
        evt_bound b;
        bind_at(p, n, EVT_SCHED_DYNAMIC, &b);
        int64_t sole = 0, other = 0;
        for (int64_t k = 0; k < b.cons_off[b.s.ncounters]; k++) {
            int32_t e = b.cons[k], task = e & ~EVT_CONS_SOLE;
            assert_true(task >= 0 && task < b.s.ntasks);
            int call = task >= b.s.task_base[2] ? 2 : task >= b.s.task_base[1] ? 1 : 0;
            assert_int_equal(call == 1, (e & EVT_CONS_SOLE) != 0); /* only `one` waits once */
            assert_int_equal(b.pend_target[task], call == 1 ? 1 : 2);
            if (e & EVT_CONS_SOLE) sole++; else other++;
        }
        assert_int_equal(sole, n);      /* one(i) on A[i] */
        assert_int_equal(other, 2 * n); /* two(i) on A[i] and B[n - 1 - i] */
        evt_bound_free(&b);
    }
    evt_plan_free(p);
    evt_graph_free(g);
    evt_module *m = h_build(prog);
    for (int n = 1; n <= 8; n++)
        for (int v = 0; v < 3; v++) {
            evt_run_opts o = {.sched = v == 2 ? EVT_SCHED_HYBRID : EVT_SCHED_DYNAMIC, .workers = 3, .early_push = v == 1,
                              .chaos = (uint32_t)(n * 3 + v), .chaos_max_ns = 2000, .timeout_s = 30};
            run_check_at(m, n, &o, "variant ", v);
        }
    evt_module_free(m);
}

/* The task records of a static schedule hold, per queue entry, exactly the
 * task's coordinate, id and counter lists at the bound shape; a task with
 * more waits than fit falls back to device-side maps; the entries of a
 * bucket schedule that the shape does not have are marked to be skipped. A
 * dynamic schedule has the same records by global task id. Runs agree with
 * the reference with records and without (--no-records), static and
 * dynamic. */
static void task_records(void **state)
{
    (void)state;
    const char *prog =
        "sym n = 3 in [1, 8] buckets [2, 4, 8]\n"
        "tensor M : i32[n * 4] output = zeros\ntensor M2 : i32[n] output = zeros\ntensor M3 : i32[n] output = zeros\n"
        "event Row[n]\nevent Fan[1]\nevent Done[n]\n"
        "call a = mark(M) over (i, j) in [n, 4] {\n    notify Row[i]\n    notify Fan[0]\n}\n"
        "call b = mark(M2) over (i) in [n] {\n    wait Row[i]\n    wait Row[n - 1 - i]\n    notify Done[i]\n}\n"
        "call c = mark(M3) over (i) in [n] {\n    wait Fan[0]\n    wait Done[k] for k in [n]\n    wait Row[k] for k in [n]\n}\n";
    evt_graph *g;
    evt_compile_opts co = {.no_fuse = 1};
    evt_plan *p = compile_text(prog, &g, &co);
    for (int64_t n = 1; n <= 8; n++) {
        evt_bound b;
        bind_at(p, n, EVT_SCHED_STATIC, &b);
        assert_non_null(b.rec);
        int64_t nent = b.q.q_off[b.q.nworkers], ran = 0, bucket = n <= 2 ? 2 : n <= 4 ? 4 : 8;
        assert_int_equal(nent, bucket * 4 + 2 * bucket);
        for (int64_t k = 0; k < nent; k++) {
            const evt_task_rec *r = &b.rec[k];
            assert_int_equal(r->entry, b.q.q[k]);
            int c = (int)(r->entry >> EVT_QCALL_SHIFT);
            int64_t lin = r->entry & EVT_QINDEX_MASK, i = c == 0 ? lin / 4 : lin, j = lin % 4;
            if (i >= n) { assert_int_equal(r->task, -1); continue; } /* bucket entry outside the shape */
            ran++;
            assert_int_equal(r->coord[0], i);
            int64_t row[1] = {i}, mirror[1] = {n - 1 - i}, zero[1] = {0};
            if (c == 0) {
                assert_int_equal(r->coord[1], j);
                assert_int_equal(r->task, b.s.task_base[0] + i * 4 + j);
                assert_int_equal(r->nwait, 0);
                assert_int_equal(r->nnotify, 2);
                assert_int_equal(r->elem[0], evt_shape_elem(&b.s, 0, row)); /* notifies after the (no) waits */
                assert_int_equal(r->elem[1], evt_shape_elem(&b.s, 1, zero));
            } else if (c == 1) {
                assert_int_equal(r->task, b.s.task_base[1] + i);
                assert_int_equal(r->nwait, 2);
                assert_int_equal(r->elem[0], evt_shape_elem(&b.s, 0, row));
                assert_int_equal(r->elem[1], evt_shape_elem(&b.s, 0, mirror));
                assert_int_equal(r->nnotify, 1);
                assert_int_equal(r->elem[2], evt_shape_elem(&b.s, 2, row));
            } else {
                assert_int_equal(r->task, b.s.task_base[2] + i);
                if (1 + 2 * n > EVT_REC_ELEMS) {
                    assert_int_equal(r->nwait, -1); /* too many: the device evaluates the maps */
                } else {
                    assert_int_equal(r->nwait, 1 + 2 * n);
                    assert_int_equal(r->nnotify, 0);
                    assert_int_equal(r->elem[0], evt_shape_elem(&b.s, 1, zero));
                    for (int64_t x = 0; x < n; x++) {
                        int64_t e[1] = {x};
                        assert_int_equal(r->elem[1 + x], evt_shape_elem(&b.s, 2, e));
                        assert_int_equal(r->elem[1 + n + x], evt_shape_elem(&b.s, 0, e));
                    }
                }
            }
        }
        assert_int_equal(ran, b.s.ntasks);
        assert_null(b.trec); /* static: queue records only */
        evt_bound_free(&b);
        /* dynamic: every task's record by global id, the same contents */
        evt_bound q;
        bind_at(p, n, EVT_SCHED_DYNAMIC, &q);
        assert_non_null(q.trec);
        for (int64_t t = 0; t < q.s.ntasks; t++) {
            const evt_task_rec *r = &q.trec[t];
            int c = (int)(r->entry >> EVT_QCALL_SHIFT);
            assert_int_equal(r->task, t);
            assert_int_equal(q.s.task_base[c] + (int64_t)(r->entry & EVT_QINDEX_MASK), t);
            int64_t i = r->coord[0], row[1] = {i}, zero[1] = {0};
            if (c == 0) assert_int_equal(r->elem[1], evt_shape_elem(&q.s, 1, zero));
            if (c == 1) assert_int_equal(r->elem[0], evt_shape_elem(&q.s, 0, row));
            if (c == 2) assert_int_equal(r->nwait, 1 + 2 * n > EVT_REC_ELEMS ? -1 : 1 + 2 * n);
        }
        evt_bound_free(&q);
    }
    evt_plan_free(p);
    evt_graph_free(g);
    evt_module *m = h_build(prog);
    for (int n = 1; n <= 8; n++)
        for (int computed = 0; computed < 4; computed++) {
            evt_run_opts o = {.sched = computed < 2 ? EVT_SCHED_STATIC : EVT_SCHED_DYNAMIC, .workers = 3,
                              .computed_dispatch = computed & 1, .chaos = (uint32_t)(n + 1)};
            run_check_at(m, n, &o, "computed=", computed);
        }
    evt_module_free(m);
}

/* Traces say how late each task with producers started: late_us = start -
 * max(taken, last producer notified) is present for the consumers (between
 * 0 and their wait_us) and absent for tasks that wait on nothing. */
static void trace_late_us(void **state)
{
    (void)state;
    evt_module *m = h_build_file("examples/split_rowsum.evt");
    char path[64];
    snprintf(path, sizeof path, "/tmp/evt-late-%d.json", (int)getpid());
    const char *sets[] = {"n=8"};
    evt_run_opts o = {.sched = EVT_SCHED_STATIC, .workers = 3, .trace_path = path};
    char *msg = NULL;
    if (h_run_check(m, 1, sets, &o, 1, &msg)) fail_msg("%s", msg);
    free(msg);
    char *json = h_read_file(path);
    unlink(path);
    int finals = 0, partials = 0;
    for (char *q = strstr(json, "{\"name\": \""); q; q = strstr(q + 1, "{\"name\": \"")) {
        char *end = strchr(q, '}');
        end = end ? strchr(end + 1, '}') : NULL; /* the args object closes first */
        assert_non_null(end);
        char *late = strstr(q, "\"late_us\": "), *wait = strstr(q, "\"wait_us\": ");
        if (late && late > end) late = NULL;
        if (!strncmp(q + 10, "final(", 6)) {
            finals++;
            if (!late || !wait) fail_msg("no late_us in %.200s", q);
            double l = atof(late + 11), w = atof(wait + 11);
            if (l < 0 || l > w + 1e-3) fail_msg("late_us %g outside [0, wait_us %g]", l, w);
        } else if (!strncmp(q + 10, "partial(", 8)) {
            partials++;
            if (late) fail_msg("late_us on a task without waits: %.200s", q);
        }
    }
    assert_int_equal(finals, 8);
    assert_int_equal(partials, 32);
    free(json);
    evt_module_free(m);
}

static void artifacts(void **state)
{
    (void)state;
    evt_module *m = h_build_file("examples/moe_toy.evt");
    char path[64];
    snprintf(path, sizeof path, "/tmp/evt-art-%d.evtm", (int)getpid());
    evt_diag d;
    evt_diag_init(&d, "art");
    assert_int_equal(evt_module_save(m, path, &d), EVT_OK);
    setenv("CC", "false", 1); /* loading must not compile */
    evt_module *l;
    if (evt_module_load(path, &l, &d)) fail_msg("%s", d.text);
    unsetenv("CC");
    assert_true(evt_is_artifact(path));
    for (int s = 0; s < 3; s++) {
        evt_run_opts o = {.sched = (evt_sched_kind)s, .workers = 3};
        char *msg;
        if (h_run_check(l, 0, NULL, &o, 9, &msg)) fail_msg("from artifact: %s", msg);
        free(msg);
    }
    evt_module_free(l);
    /* a truncated artifact is rejected with a message */
    FILE *in = fopen(path, "rb");
    fseek(in, 0, SEEK_END);
    long len = ftell(in);
    fclose(in);
    assert_int_equal(truncate(path, len / 2), 0);
    assert_int_not_equal(evt_module_load(path, &l, &d), EVT_OK);
    assert_non_null(strstr(d.text, "corrupt artifact"));
    /* not an artifact at all */
    assert_int_not_equal(evt_module_load("examples/moe_toy.evt", &l, &d), EVT_OK);
    assert_non_null(strstr(d.text, "is not an evtc artifact"));
    unlink(path);
    evt_diag_free(&d);
    evt_module_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(expressions),
        cmocka_unit_test(counts_closed_form),
        cmocka_unit_test(division_counts),
        cmocka_unit_test(fusion),
        cmocka_unit_test(unfused_graph),
        cmocka_unit_test(kernel_by_kernel),
        cmocka_unit_test(hybrid_split),
        cmocka_unit_test(consumer_lists_flag_sole_waits),
        cmocka_unit_test(task_records),
        cmocka_unit_test(trace_late_us),
        cmocka_unit_test(artifacts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
