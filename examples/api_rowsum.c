/* api_rowsum.c — the split row sum built with the C API instead of .evt text:
 * build the graph, compile it for the CPU target, bind a shape, run it on
 * worker threads and compare with the sequential reference.
 *   make build/examples/api_rowsum && build/examples/api_rowsum 37 */
#include <stdio.h>
#include <stdlib.h>
#include "evt/evt.h"

int main(int argc, char **argv)
{
    evt_graph *g = evt_graph_new();
    /* sym n = 4 in [1, 16384] */
    evt_sym *n = evt_sym_new(g, "n", 4);
    evt_sym_set_bounds(n, 1, 16384);
    evt_expr *N = evt_symref(g, n), *n32 = evt_binop(g, EVT_E_MUL, N, evt_const(g, 32));
    /* tensors A[n*32, 128] (random input), P[n*32, 4], C[n*32] */
    evt_tensor *A = evt_tensor_new(g, "A", EVT_F32, EVT_INPUT, 2, (evt_expr *[]){n32, evt_const(g, 128)});
    A->init = (evt_init){.kind = EVT_INIT_RANDOM, .lo = -1, .hi = 1, .seed = 1};
    evt_tensor *P = evt_tensor_new(g, "P", EVT_F32, EVT_SCRATCH, 2, (evt_expr *[]){n32, evt_const(g, 4)});
    evt_tensor *C = evt_tensor_new(g, "C", EVT_F32, EVT_OUTPUT, 1, (evt_expr *[]){n32});
    /* event E[n] */
    evt_event *E = evt_event_new(g, "E", 1, (evt_expr *[]){N});
    /* call partial = rowsum_partial(A, P, 32) over (i, j) in [n, 4] { notify E[i] } */
    evt_call *partial = evt_call_new(g, "partial", "rowsum_partial", 2, (const char *[]){"i", "j"},
                                     (evt_expr *[]){N, evt_const(g, 4)});
    evt_call_add_tensor_arg(partial, A);
    evt_call_add_tensor_arg(partial, P);
    evt_call_add_int_arg(partial, evt_const(g, 32));
    evt_call_add_edge(g, partial, EVT_NOTIFY, E, 1, (evt_expr *[]){evt_var(g, 0)});
    /* call final = rowsum_final(P, C, 32) over (i) in [n] { wait E[i] } */
    evt_call *final = evt_call_new(g, "final", "rowsum_final", 1, (const char *[]){"i"}, (evt_expr *[]){N});
    evt_call_add_tensor_arg(final, P);
    evt_call_add_tensor_arg(final, C);
    evt_call_add_int_arg(final, evt_const(g, 32));
    evt_call_add_edge(g, final, EVT_WAIT, E, 1, (evt_expr *[]){evt_var(g, 0)});

    evt_diag d;
    evt_diag_init(&d, "api_rowsum");
    evt_module *m;
    if (evt_module_build(g, EVT_BACKEND_CPU, NULL, 0, &m, &d)) { fputs(d.text, stderr); return 1; }

    int64_t sym[1];
    char set[32];
    snprintf(set, sizeof set, "n=%s", argc > 1 ? argv[1] : "16");
    const char *sets[] = {set};
    evt_buffers *out, *ref;
    evt_run_opts opts = {.sched = EVT_SCHED_DYNAMIC, .workers = 4};
    evt_run_stats st;
    if (evt_shape_parse(evt_module_graph(m), 1, sets, sym, &d) ||
        evt_buffers_new(evt_module_graph(m), sym, 42, 0xff, &out, &d) ||
        evt_buffers_new(evt_module_graph(m), sym, 42, 0xfe, &ref, &d) ||
        evt_module_run(m, sym, out, &opts, &st, &d) ||
        evt_reference_run(m, sym, ref, &d)) {
        fputs(d.text, stderr);
        return 1;
    }
    evt_printer report = {0};
    int bad = evt_buffers_compare(evt_module_graph(m), out, ref, 0, &report);
    const float *c = evt_buffers_data(out, C->id, NULL);
    printf("n=%lld: %lld tasks in %.3f ms; C[0] = %g\n", (long long)sym[0], (long long)st.ntasks, st.launch_ms, c[0]);
    printf(bad ? "check: FAILED\n%s" : "check: ok\n", report.buf);
    evt_pr_free(&report);
    evt_buffers_free(out);
    evt_buffers_free(ref);
    evt_module_free(m); /* frees the graph too */
    evt_diag_free(&d);
    return bad != 0;
}
