/* emit_cuda.c — the GPU target: the shared generated code plus a
 * __global__ persistent kernel; one block per worker, launched cooperatively
 * by the CUDA runtime (src/runtime/cuda.c). With the weight stream
 * (EVT_STREAM, src/device/evt_stream.h) the leader of a static worker copies
 * its next tasks' weights into a ring of dynamic shared memory, which the
 * runtime places after the tiles' own and the launch tables. */
#include "emit/emit.h"

int evt_emit_tile_smem(const evt_plan *p)
{
    int bytes = 0;
    for (int i = 0; i < p->nops; i++)
        if (p->ops[i]->smem_bytes > bytes) bytes = p->ops[i]->smem_bytes;
    return (bytes + 1023) & ~1023;
}

/* The entry's common parts: stream set-up before the block's first barrier,
   then (EVT_DISPATCH_WG) the warpgroups' register split; at the end, a
   stalled copy is reported. */
static void emit_entry_begin(evt_printer *out, const char *ctx, int persistent)
{
    evt_pr(out, "#if EVT_STREAM\n    if (threadIdx.x == 0) evt_stream_init(%s);\n#endif\n", ctx);
    evt_pr(out, "    EVT_TILES_WORKER_BEGIN();\n    __syncthreads();\n");
    /* EVT_DISPATCH_WG (src/device/evt_dispatch_wg.h): the third warpgroup
       gives its registers to the tiles' two; its first warp dispatches the
       persistent kernel's static tasks, the others leave */
    evt_pr(out, "#if EVT_DISPATCH_WG\n    if (threadIdx.x >= EVT_BLOCK_THREADS) {\n");
    evt_pr(out, "        asm volatile(\"setmaxnreg.dec.sync.aligned.u32 24;\");\n");
    if (persistent)
        evt_pr(out, "#if EVT_DISPATCH_WG >= 2\n        if (threadIdx.x < EVT_BLOCK_THREADS + 32 && evt_ctl_on(%s)) "
                    "evt_ctl_dispatch_static(%s, (int)blockIdx.x);\n#endif\n", ctx, ctx);
    evt_pr(out, "        return;\n    }\n    asm volatile(\"setmaxnreg.inc.sync.aligned.u32 240;\");\n#endif\n");
}
static void emit_entry_end(evt_printer *out, const char *ctx)
{
    evt_pr(out, "    EVT_TILES_WORKER_END();\n#if EVT_STREAM\n    evt_stream_finish(%s);\n#endif\n}\n", ctx);
}

evt_status evt_emit_cuda(const evt_plan *p, evt_printer *out, evt_diag *d)
{
    evt_status st = evt_emit_program(p, out, EVT_TARGET_CUDA, d);
    if (st) return st;
    evt_pr(out, "/* GPU entry: one persistent block per worker. */\n");
    /* EVT_MIN_BLOCKS (nvcc -D): blocks per SM the register allocation must
       allow (2: two workers per SM, --workers-per-sm 2) */
    /* (not given: the compiler's own register budget, as before; an explicit
       1 changed kernel-by-kernel occupancy: split row sum 261 -> 375 us) */
    /* EVT_DISPATCH_WG: a third warpgroup (evt_extra_threads, which the
       runtime adds to the block), one block an SM */
    evt_pr(out, "#if EVT_DISPATCH_WG\n#if EVT_STREAM\n#error \"EVT_DISPATCH_WG: not with the weight stream\"\n#endif\n"
                "#define EVT_LAUNCH_BOUNDS __launch_bounds__(EVT_BLOCK_THREADS + 128, 1)\n"
                "extern \"C\" __device__ unsigned evt_extra_threads = 128;\n"
                "#elif defined(EVT_MIN_BLOCKS)\n#define EVT_LAUNCH_BOUNDS __launch_bounds__(EVT_BLOCK_THREADS, EVT_MIN_BLOCKS)\n#else\n"
                "#define EVT_LAUNCH_BOUNDS __launch_bounds__(EVT_BLOCK_THREADS)\n#endif\n");
    /* dynamic shared memory per block: the tile headers' need
       (EVT_TILES_DYN_SMEM) or the largest smem_bytes of the program's
       operators; the runtime reads it, adds the launch tables and, when a
       call streams (evt_stream_calls), the weight stream's ring */
    int tile_smem = evt_emit_tile_smem(p);
    evt_pr(out, "#ifndef EVT_TILES_DYN_SMEM\n#define EVT_TILES_DYN_SMEM 0\n#endif\n");
    evt_pr(out, "#define EVT_TILE_SMEM (EVT_TILES_DYN_SMEM > %d ? EVT_TILES_DYN_SMEM : %d)\n", tile_smem, tile_smem);
    evt_pr(out, "extern \"C\" __device__ unsigned evt_dyn_smem_bytes = EVT_TILE_SMEM;\n");
    evt_pr(out, "extern \"C\" __device__ unsigned evt_stream_calls = %d; /* calls that stream their weights */\n", p->nstreams);
    /* the TMA ring a tile header asks for (src/tiles/llm_tma.cuh): the runtime
       reserves up to this much dynamic shared memory after the tables */
    evt_pr(out, "#ifndef EVT_TILES_TMA_RING\n#define EVT_TILES_TMA_RING 0\n#endif\n");
    evt_pr(out, "extern \"C\" __device__ unsigned evt_tma_ring_want = EVT_TILES_TMA_RING;\n");
    /* the launch tables the persistent kernel copies into shared memory
       (evt_ctx.tables_in_smem): tensor references, grid extents, id rows */
    evt_pr(out, "#define EVT_TABLE_TENSOR_BYTES (%d * sizeof(evt_tensor_ref))\n#define EVT_TABLE_EXT_BYTES (%d * 4 * sizeof(int64_t))\n",
           p->g->ntensors, p->g->ncalls);
    evt_pr(out, "static_assert(sizeof(evt_tensor_ref) %% 16 == 0 && sizeof(evt_call_ids) %% 16 == 0, \"tables copied in 16-byte pieces\");\n");
    evt_pr(out, "extern __shared__ __align__(1024) unsigned char evt_dyn_smem[];\n");
    evt_pr(out, "extern \"C\" __device__ unsigned evt_table_smem_bytes = "
                "EVT_TABLE_TENSOR_BYTES + EVT_TABLE_EXT_BYTES + sizeof(evt_call_ids);\n");
    /* tile headers may hook the start and the end of every worker block */
    evt_pr(out, "#ifndef EVT_TILES_WORKER_BEGIN\n#define EVT_TILES_WORKER_BEGIN() ((void)0)\n#endif\n");
    evt_pr(out, "#ifndef EVT_TILES_WORKER_END\n#define EVT_TILES_WORKER_END() ((void)0)\n#endif\n");
    evt_pr(out, "extern \"C\" __global__ void EVT_LAUNCH_BOUNDS evt_kernel(const evt_ctx *C)\n{\n");
    /* the context lives in shared memory for the launch: its fields are read
       at every wait and notify, and global lines are refetched after each
       acquire */
    evt_pr(out, "    __shared__ evt_worker W;\n    __shared__ evt_ctx Cs;\n");
    evt_pr(out, "    for (unsigned i = threadIdx.x; i < sizeof(evt_ctx) / 8; i += blockDim.x)\n");
    evt_pr(out, "        ((uint64_t *)&Cs)[i] = ((const uint64_t *)C)[i];\n");
    evt_pr(out, "    if (C->tables_in_smem) { /* the launch tables, read at every dispatch */\n");
    evt_pr(out, "        unsigned char *t = evt_dyn_smem + C->tables_off;\n");
    evt_pr(out, "        const uint4 *src[3] = {(const uint4 *)C->tensors, (const uint4 *)C->ext, (const uint4 *)evt_call_ids};\n");
    evt_pr(out, "        const unsigned bytes[3] = {EVT_TABLE_TENSOR_BYTES, EVT_TABLE_EXT_BYTES, sizeof(evt_call_ids)};\n");
    evt_pr(out, "        unsigned off = 0;\n        for (int k = 0; k < 3; k++) {\n");
    evt_pr(out, "            for (unsigned i = threadIdx.x; i < bytes[k] / 16; i += blockDim.x) ((uint4 *)(t + off))[i] = src[k][i];\n");
    evt_pr(out, "            off += bytes[k];\n        }\n        __syncthreads(); /* Cs is complete before thread 0 repoints it */\n");
    evt_pr(out, "        if (threadIdx.x == 0) {\n            Cs.tensors = (evt_tensor_ref *)t;\n");
    evt_pr(out, "            Cs.ext = (const int64_t *)(t + EVT_TABLE_TENSOR_BYTES);\n");
    evt_pr(out, "            Cs.ids = (const int32_t *)(t + EVT_TABLE_TENSOR_BYTES + EVT_TABLE_EXT_BYTES);\n        }\n    }\n");
    evt_pr(out, "#ifdef EVT_CTX_IN_GLOBAL /* ablation */\n    const evt_ctx *Cw = C;\n#else\n    const evt_ctx *Cw = &Cs;\n#endif\n");
    emit_entry_begin(out, "Cw", 1);
    evt_pr(out, "    evt_worker_main(Cw, &W, (int)blockIdx.x);\n");
    emit_entry_end(out, "Cw");
    evt_pr(out, "/* Kernel-by-kernel entry: one ordinary launch per call, a block per task. */\n");
    evt_pr(out, "extern \"C\" __global__ void EVT_LAUNCH_BOUNDS evt_call_kernel(const evt_ctx *C, int call)\n{\n");
    evt_pr(out, "    __shared__ evt_worker W;\n    if (EVT_LEADER) { W.id = (int)blockIdx.x; W.task = -1; W.nfan = 0; W.rng = 1; }\n");
    emit_entry_begin(out, "C", 0);
    evt_pr(out, "    evt_run_call(C, &W, call, blockIdx.x, gridDim.x);\n");
    emit_entry_end(out, "C");
    evt_pr(out, "extern \"C\" __global__ void evt_abi_probe(int *out) { *out = %d; }\n", EVT_ABI_VERSION);
    return EVT_OK;
}
