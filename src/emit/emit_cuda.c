/* emit_cuda.c — the GPU target: the shared generated code plus a
 * __global__ persistent kernel; one block per worker, launched cooperatively
 * by the CUDA runtime (src/runtime/cuda.c). */
#include "emit/emit.h"

evt_status evt_emit_cuda(const evt_plan *p, evt_printer *out, evt_diag *d)
{
    evt_status st = evt_emit_program(p, out, EVT_TARGET_CUDA, d);
    if (st) return st;
    evt_pr(out, "/* GPU entry: one persistent block per worker. */\n");
    evt_pr(out, "extern \"C\" __global__ void __launch_bounds__(EVT_BLOCK_THREADS) evt_kernel(const evt_ctx *C)\n{\n");
    evt_pr(out, "    __shared__ evt_worker W;\n    evt_worker_main(C, &W, (int)blockIdx.x);\n}\n");
    evt_pr(out, "extern \"C\" __global__ void evt_abi_probe(int *out) { *out = %d; }\n", EVT_ABI_VERSION);
    return EVT_OK;
}
