/* emit_cuda.c — the GPU target: the shared generated code plus a
 * __global__ persistent kernel; one block per worker, launched cooperatively
 * by the CUDA runtime (src/runtime/cuda.c). */
#include "emit/emit.h"

evt_status evt_emit_cuda(const evt_plan *p, evt_printer *out, evt_diag *d)
{
    evt_status st = evt_emit_program(p, out, EVT_TARGET_CUDA, d);
    if (st) return st;
    evt_pr(out, "/* GPU entry: one persistent block per worker. */\n");
    /* EVT_MIN_BLOCKS (nvcc -D): blocks per SM the register allocation must
       allow (2: two workers per SM, --workers-per-sm 2) */
    /* (not given: the compiler's own register budget, as before; an explicit
       1 changed kernel-by-kernel occupancy: split row sum 261 -> 375 us) */
    evt_pr(out, "#ifdef EVT_MIN_BLOCKS\n#define EVT_LAUNCH_BOUNDS __launch_bounds__(EVT_BLOCK_THREADS, EVT_MIN_BLOCKS)\n#else\n"
                "#define EVT_LAUNCH_BOUNDS __launch_bounds__(EVT_BLOCK_THREADS)\n#endif\n");
    /* dynamic shared memory per block: the tile headers' need
       (EVT_TILES_DYN_SMEM) or the largest smem_bytes of the program's
       operators; the runtime reads it from the module */
    int decl_smem = 0;
    for (int i = 0; i < p->nops; i++)
        if (p->ops[i]->smem_bytes > decl_smem) decl_smem = p->ops[i]->smem_bytes;
    evt_pr(out, "#ifndef EVT_TILES_DYN_SMEM\n#define EVT_TILES_DYN_SMEM 0\n#endif\n");
    evt_pr(out, "extern \"C\" __device__ unsigned evt_dyn_smem_bytes = EVT_TILES_DYN_SMEM > %d ? EVT_TILES_DYN_SMEM : %d;\n",
           decl_smem, decl_smem);
    /* tile headers may hook the start and the end of every worker block
       (llm.cuh: its TMA ring's barriers) */
    evt_pr(out, "#ifndef EVT_TILES_WORKER_BEGIN\n#define EVT_TILES_WORKER_BEGIN() ((void)0)\n#endif\n");
    evt_pr(out, "#ifndef EVT_TILES_WORKER_END\n#define EVT_TILES_WORKER_END() ((void)0)\n#endif\n");
    evt_pr(out, "extern \"C\" __global__ void EVT_LAUNCH_BOUNDS evt_kernel(const evt_ctx *C)\n{\n");
    /* the context lives in shared memory for the launch: its fields are read
       at every wait and notify, and global lines are refetched after each
       acquire */
    evt_pr(out, "    __shared__ evt_worker W;\n    __shared__ evt_ctx Cs;\n");
    evt_pr(out, "    for (unsigned i = threadIdx.x; i < sizeof(evt_ctx) / 8; i += blockDim.x)\n");
    evt_pr(out, "        ((uint64_t *)&Cs)[i] = ((const uint64_t *)C)[i];\n    EVT_TILES_WORKER_BEGIN();\n    EVT_SYNC();\n");
    evt_pr(out, "#ifdef EVT_CTX_IN_GLOBAL /* ablation */\n    evt_worker_main(C, &W, (int)blockIdx.x);\n#else\n");
    evt_pr(out, "    evt_worker_main(&Cs, &W, (int)blockIdx.x);\n#endif\n    EVT_TILES_WORKER_END();\n}\n");
    evt_pr(out, "/* Kernel-by-kernel entry: one ordinary launch per call, a block per task. */\n");
    evt_pr(out, "extern \"C\" __global__ void EVT_LAUNCH_BOUNDS evt_call_kernel(const evt_ctx *C, int call)\n{\n");
    evt_pr(out, "    __shared__ evt_worker W;\n    if (EVT_LEADER) { W.id = (int)blockIdx.x; W.task = -1; W.nfan = 0; W.rng = 1; }\n");
    evt_pr(out, "    EVT_TILES_WORKER_BEGIN();\n    EVT_SYNC();\n    evt_run_call(C, &W, call, blockIdx.x, gridDim.x);\n    EVT_TILES_WORKER_END();\n}\n");
    evt_pr(out, "extern \"C\" __global__ void evt_abi_probe(int *out) { *out = %d; }\n", EVT_ABI_VERSION);
    return EVT_OK;
}
