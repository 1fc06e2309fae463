/* emit_c.c — the CPU target: the shared generated code plus a C entry point
 * that the CPU runtime calls once per worker thread. */
#include "emit/emit.h"

evt_status evt_emit_c(const evt_plan *p, evt_printer *out, evt_diag *d)
{
    evt_status st = evt_emit_program(p, out, EVT_TARGET_C, d);
    if (st) return st;
    evt_pr(out, "/* CPU entry: one call per worker thread. */\n");
    evt_pr(out, "void evt_worker_entry(const evt_ctx *C, int worker)\n{\n");
    evt_pr(out, "    evt_worker W = {0};\n    evt_worker_main(C, &W, worker);\n}\n");
    evt_pr(out, "/* CPU kernel-by-kernel entry: worker `worker` of C->nworkers runs its share of one call. */\n");
    evt_pr(out, "void evt_call_entry(const evt_ctx *C, int worker, int call)\n{\n");
    evt_pr(out, "    evt_worker W = {0};\n    W.id = worker;\n    W.task = -1;\n");
    evt_pr(out, "    evt_run_call(C, &W, call, worker, C->nworkers);\n}\n");
    evt_pr(out, "int evt_abi_version(void) { return %d; }\n", EVT_ABI_VERSION);
    return EVT_OK;
}
