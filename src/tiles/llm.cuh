/* llm.cuh — decode-step tile operators for dense transformers, CUDA (same
 * functions as llm.c; see its header for the op list and semantics).
 * bf16 storage, f32 accumulation, one rounding to bf16 per output.
 *
 *   linear / linear_res / mlp_up: tensor-core GEMV/GEMM (mma.sync m16n8k16
 *       bf16 -> f32). A warp owns a unit of 16 * RT weight rows x 8 * NB8
 *       batch rows and a slice of K (B <= 8: RT = NB8 = 1 and 8 k steps of
 *       loads in flight for one weight, 4 each for gate and up; larger B:
 *       either every batch row in one unit, so each weight row is loaded
 *       once, or NB8 = 4 and up to RT = 4 row tiles sharing each x
 *       fragment: evt_llm_gemv says which, from measurements); when a task
 *       has fewer units than warps,
 *       K is split across warps and partials are summed (in a fixed order) in
 *       shared memory. K is permuted identically for both operands, so each
 *       lane reads 16 contiguous bytes of a weight row and of an x row per
 *       32-wide k step (no shared-memory staging, no ldmatrix). Weights go
 *       through the read-only path (program inputs); x and r through plain
 *       coherent loads (written earlier in the same launch). A scalar path
 *       handles K % 32 != 0 or misaligned rows. Tile nb of T holds rows
 *       [nb*N/T, (nb+1)*N/T) (ragged: one tile per SM balances any N).
 *       Batches 17-64 with a TMA ring (evt_run_opts.tma_ring) and many
 *       weight rows per task: TMA boxes into shared memory and wgmma
 *       instead (llm_tma.cuh).
 *   rms_linear / rms_mlp_up: the same GEMV (the norm's weight is folded
 *       into the matrices), times the row scales rsqrt(mean(x^2) + eps) in
 *       the epilogue: the register units sum the squares of the x fragments
 *       they load anyway, the TMA path's consumers those of each stage's x
 *       box while its wgmmas run (no pass over x of their own, so the first
 *       weight loads still go out before the waits).
 *   linear_res_ss / ss_linear / ss_mlp_up (norm partials, above batch 16):
 *       linear_res that also leaves the new rows' sums of squares (each
 *       tile's partials read back from its outputs, the last tile to finish
 *       summing them per row into ss), and the plain GEMVs scaled in the
 *       epilogue by rsqrt(ss[b] / K + eps): no norm task and no tile summing
 *       all of x.
 *   *_prefetch_cuda: run by the worker's leader alone before its waits:
 *       cp.async.bulk.prefetch.L2 of (at most the first EVT_LLM_PREFETCH_CAP
 *       bytes of) the task's weight rows, one contiguous range of W (a call
 *       that streams runs no hook).
 *   weight stream (src/device/evt_stream.h; the band of a task is
 *       evt_tile_linear_stream / evt_tile_mlp_up_stream in llm.c): the
 *       linear family reads the leading a->stream rows of its band from
 *       shared memory, where the worker's leader copied them ahead of the
 *       task's waits, any batch size (evt_llm_gemv).
 *   rmsnorm: each thread's 16-byte chunks of x and w loaded at once, x kept
 *       in registers between the two passes, or (kernels with the
 *       attention's teams) staged in shared memory beside w (scalar path
 *       for odd shapes).
 *   q_rope / k_rope_append: block reductions; RoPE angles in double
 *       exactly as the C reference.
 *   attn_split (llm_attn.cuh): lanes split head_dim in 8-element (16-byte) chunks, a warp
 *       covers 32 / (hd / 8) x EVT_LLM_ATTN_U positions per step (all their
 *       loads in flight together, the next step's issued before this one
 *       is scored), each lane group keeps an online softmax state; states merge through shuffles, then across
 *       warps in shared memory. hd % 8 != 0 or hd > 256: a slow generic path.
 *   attn_rope_split: q_rope of the kv group's q heads into shared memory
 *       (the angles copied from row pos[b] of the rope table, loaded before
 *       the waits: the same floats the C tiles compute in double),
 *       and (the split holding the new position) the new k and v, which it
 *       writes to the cache; then the split attention for all the group's q
 *       heads at once (each cache line loaded once, scored G times), the new
 *       position read back from the cache after a block barrier; with one
 *       split, the heads' normalised output o from the final merge too;
 *       with several (merge_last), the group's last task to finish merges
 *       the group's splits into o (evt_llm_merge_last, llm_attn.cuh). A
 *       task with a run of requests (large batches) serves them in teams
 *       of warps side by side, each team with its own named barrier and
 *       slice of the scratch (attn_rope_team_request_cuda).
 *   argmax_part / argmax_final: block (max, lowest index) reductions.
 * Everything produced in the launch (x, activations, KV cache, partials) is
 * read with plain loads. Shared memory: one 32 KiB static buffer and the row
 * scales (the stream's ring is the runtime's). Tiles count and synchronise
 * the block's threads with evt_tile_threads() / evt_tile_sync() (evt_tile.h);
 * the attention's teams use named barriers 1-4 inside one task. */
#ifndef EVT_TILE_LLM_CUH
#define EVT_TILE_LLM_CUH
#include <cuda_bf16.h>
#include <stdint.h>
#include "device/evt_device.h"
#include "device/evt_stream.h"

#ifndef EVT_LLM_PREFETCH_CAP
#define EVT_LLM_PREFETCH_CAP (128 * 1024) /* bytes of L2 prefetch per weight matrix per task */
#endif
/* the tiles' shared scratch (32 KiB: more static shared memory would move
   the batch-64 kernel, 96 KiB of TMA ring beside it, to the next
   shared-memory carveout and shrink its L1; measured 1.8% slower at
   qwen3-8b B=64 with 38.5 KiB, bench/RESULTS.md session 27) */
#define EVT_LLM_SMEM_FLOATS 8192

static __shared__ __align__(16) float evt_llm_smem[EVT_LLM_SMEM_FLOATS];

typedef __nv_bfloat16 evt_bf16;

__device__ __forceinline__ float evt_llm_ld(const evt_bf16 *p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void evt_llm_st(evt_bf16 *p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }
__device__ __forceinline__ float evt_llm_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float evt_llm_hi(uint32_t u) { return __uint_as_float(u & 0xffff0000u); }

/* Sum over the block; every thread gets the result. Uses evt_llm_smem[0..32]. */
__device__ __forceinline__ float evt_llm_block_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int warp = threadIdx.x >> 5, nw = (evt_tile_threads() + 31) >> 5;
    if ((threadIdx.x & 31) == 0) evt_llm_smem[warp] = v;
    evt_tile_sync();
    float s = 0;
    for (int w = 0; w < nw; w++) s += evt_llm_smem[w];
    evt_tile_sync();
    return s;
}

/* Weight loads: read-only path with L1::no_allocate (streamed once) and
 * L2::256B (the next lines of the row come with it): 4% faster 0.6b decode
 * than plain ld.global.nc (bench/RESULTS.md). EVT_LLM_LDW_HINT=0 drops them. */
#ifndef EVT_LLM_LDW_HINT
#define EVT_LLM_LDW_HINT 1
#endif
__device__ __forceinline__ uint4 evt_llm_ldw(const evt_bf16 *p)
{
    uint4 r;
#if EVT_LLM_LDW_HINT
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
#else
    asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
#endif
    return r;
}
__device__ __forceinline__ uint4 evt_llm_ldx(const evt_bf16 *p)
{
    uint4 r;
    asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p) : "memory");
    return r;
}

/* 16 bytes from a 32-bit shared address (half the registers of a generic
 * pointer): weight rows of the weight stream (the same 16 bytes per lane as
 * evt_llm_ldw), rmsnorm's staged w. */
__device__ __forceinline__ uint4 evt_llm_lds(uint32_t addr)
{
    uint4 r;
    asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "r"(addr));
    return r;
}

/* ------------------------------------------------------------ embed ---- */
__device__ __noinline__ void embed_cuda(const evt_task_args *a)
{
    const int32_t *tok = (const int32_t *)a->t[0].ptr;
    const evt_bf16 *E = (const evt_bf16 *)a->t[1].ptr;
    evt_bf16 *x = (evt_bf16 *)a->t[2].ptr;
    int64_t b = a->coord[0], V = a->t[1].dim[0], H = a->t[1].dim[1];
    int64_t t = tok[b];
    if (t < 0 || t >= V) t = 0;
    const evt_bf16 *src = E + t * H;
    evt_bf16 *dst = x + b * H;
    if (((H & 7) == 0) && !(((uintptr_t)src | (uintptr_t)dst) & 15)) {
        for (int64_t i = threadIdx.x; i < H / 8; i += evt_tile_threads())
            ((uint4 *)dst)[i] = __ldg((const uint4 *)src + i);
    } else {
        for (int64_t i = threadIdx.x; i < H; i += evt_tile_threads()) dst[i] = src[i];
    }
}

/* ---------------------------------------------------------- rmsnorm ---- */
/* Fast path (H % 8 == 0, 16-byte aligned, H <= 32 * blockDim): each thread
 * loads its (up to 4) 16-byte chunks of x at once and keeps them in
 * registers for the second pass (a scalar loop was one memory round trip per
 * element per thread: 10 us for qwen3-8b's 4096, bench/RESULTS.md), and
 * copies its chunks of w into shared memory with cp.async beside them, so w
 * lands during the block sum without holding registers across it (held in
 * registers, w made ptxas spill 48-80 bytes in this tile, over the spill
 * gate of tests/gpu/run.sh: bench/RESULTS.md session 31). Each thread reads
 * back only the chunks it copied.
 * EVT_LLM_RMSNORM_STAGE_X (the kernels with the attention's teams, below):
 * x's chunks are copied into shared memory too (through L2 only: x is
 * produced in the launch) and read from there for the sum and the output,
 * so no register holds one across the block sum: held there, x spilled 64
 * bytes once the teams joined the kernel (bench/RESULTS.md session 39). */
#ifndef EVT_LLM_RMSNORM_STAGE_X
#ifdef EVT_LLM_ATTN_ONE_REQUEST
#define EVT_LLM_RMSNORM_STAGE_X 0 /* no teams: the kernel's machine code as before them */
#else
#define EVT_LLM_RMSNORM_STAGE_X 1
#endif
#endif
__device__ __noinline__ void rmsnorm_cuda(const evt_task_args *a)
{
    const evt_bf16 *x = (const evt_bf16 *)a->t[0].ptr, *w = (const evt_bf16 *)a->t[1].ptr;
    evt_bf16 *y = (evt_bf16 *)a->t[2].ptr;
    int64_t b = a->coord[0], H = a->t[0].dim[1];
    const evt_bf16 *xr = x + b * H;
    evt_bf16 *yr = y + b * H;
    float eps = (float)a->iarg[0] * 1e-12f;
    constexpr int R = 4;
    /* w's staging (then x's): above the block sums (evt_llm_smem[0, 32)), 2 H bytes each */
    constexpr int WOFF = 64, XST = EVT_LLM_RMSNORM_STAGE_X;
    if (H % 8 == 0 && H / 8 <= R * (int64_t)evt_tile_threads() && (XST ? 4 : 2) * H <= 4 * (EVT_LLM_SMEM_FLOATS - WOFF) &&
        !(((uintptr_t)xr | (uintptr_t)w | (uintptr_t)yr) & 15)) {
        const uint32_t ws = (uint32_t)__cvta_generic_to_shared(evt_llm_smem + WOFF), xs = ws + 2u * (uint32_t)H;
        uint4 xv[R];
        float ss = 0;
#pragma unroll
        for (int r = 0; r < R; r++) {
            int64_t i = threadIdx.x + (int64_t)r * evt_tile_threads();
            if (i < H / 8) {
                if constexpr (XST) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(xs + 16u * (uint32_t)i), "l"(xr + 8 * i) : "memory");
                else xv[r] = evt_llm_ldx(xr + 8 * i);
                asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(ws + 16u * (uint32_t)i), "l"(w + 8 * i) : "memory");
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        if constexpr (XST) asm volatile("cp.async.wait_all;" ::: "memory"); /* this thread's chunks of x (and w) */
#pragma unroll
        for (int r = 0; r < R; r++) {
            if (threadIdx.x + (int64_t)r * evt_tile_threads() >= H / 8) continue;
            if constexpr (XST) xv[r] = evt_llm_lds(xs + 16u * (uint32_t)(threadIdx.x + r * evt_tile_threads()));
            const uint32_t *u = &xv[r].x;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                float lo = evt_llm_lo(u[j]), hi = evt_llm_hi(u[j]);
                ss += lo * lo;
                ss += hi * hi;
            }
        }
        ss = evt_llm_block_sum(ss);
        float s = 1.0f / sqrtf(ss / (float)H + eps);
        if constexpr (!XST) asm volatile("cp.async.wait_all;" ::: "memory"); /* this thread's chunks of w */
#pragma unroll
        for (int r = 0; r < R; r++) {
            int64_t i = threadIdx.x + (int64_t)r * evt_tile_threads();
            if (i >= H / 8) continue;
            if constexpr (XST) xv[r] = evt_llm_lds(xs + 16u * (uint32_t)i); /* again: not held across the sum */
            const uint4 wv = evt_llm_lds(ws + 16u * (uint32_t)i);
            const uint32_t *u = &xv[r].x, *v = &wv.x;
            uint4 out;
            uint32_t *o = &out.x;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                __nv_bfloat162 pr = __floats2bfloat162_rn(evt_llm_lo(u[j]) * s * evt_llm_lo(v[j]), evt_llm_hi(u[j]) * s * evt_llm_hi(v[j]));
                o[j] = *(uint32_t *)&pr;
            }
            *(uint4 *)(yr + 8 * i) = out;
        }
        return;
    }
    float ss = 0;
    for (int64_t i = threadIdx.x; i < H; i += evt_tile_threads()) { float v = evt_llm_ld(xr, i); ss += v * v; }
    ss = evt_llm_block_sum(ss);
    float s = 1.0f / sqrtf(ss / (float)H + eps);
    for (int64_t i = threadIdx.x; i < H; i += evt_tile_threads())
        evt_llm_st(yr, i, evt_llm_ld(xr, i) * s * __bfloat162float(__ldg(w + i)));
}

/* the GEMV core: evt_llm_gemv and its units */
#include "llm_gemv.cuh"

/* Called by one thread (the worker's leader, before its waits). */
__device__ __forceinline__ void evt_llm_prefetch_rows(const evt_bf16 *W, int64_t N, int64_t K, int64_t nb, int64_t T)
{
    int64_t n0, n1;
    evt_llm_tile_rows(nb, T, N, &n0, &n1);
    if (n0 >= n1) return;
    const char *p = (const char *)(W + n0 * K);
    int64_t bytes = (n1 - n0) * K * 2;
    if (bytes > EVT_LLM_PREFETCH_CAP) bytes = EVT_LLM_PREFETCH_CAP;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (!((uintptr_t)p & 15)) {
        const int64_t chunk = 32768;
        for (int64_t o = 0; o < bytes; o += chunk) {
            uint32_t sz = (uint32_t)((bytes - o < chunk ? bytes - o : chunk) & ~(int64_t)15);
            if (sz) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p + o), "r"(sz) : "memory");
        }
        return;
    }
#endif
    for (int64_t o = 0; o < bytes; o += 128) asm volatile("prefetch.global.L2 [%0];" ::"l"(p + o));
}

/* EVT_LLM_INLINE_GEMV (an experiment's cuda_defines option, off): the GEMV
   tiles inlined into the kernel instead of called, since ptxas serialises
   the wgmmas of a called function (C7510: every HGMMA waits for the one
   before). Inlined into tilebench's kernels the batch-64 tiles ran 15-17%
   faster; all of them inlined into the megakernel made qwen3-8b batch 64
   3.2x slower per token (bench/RESULTS.md session 53) */
#ifdef EVT_LLM_INLINE_GEMV
#define EVT_LLM_GEMV_FN __forceinline__
#else
#define EVT_LLM_GEMV_FN __noinline__
#endif
__device__ EVT_LLM_GEMV_FN void linear_cuda(const evt_task_args *a) { evt_llm_gemv<0, false>(a); }
__device__ EVT_LLM_GEMV_FN void linear_res_cuda(const evt_task_args *a) { evt_llm_gemv<1, false>(a); }
__device__ EVT_LLM_GEMV_FN void mlp_up_cuda(const evt_task_args *a) { evt_llm_gemv<2, false>(a); }
__device__ EVT_LLM_GEMV_FN void rms_linear_cuda(const evt_task_args *a) { evt_llm_gemv<0, true>(a); }
__device__ EVT_LLM_GEMV_FN void rms_mlp_up_cuda(const evt_task_args *a) { evt_llm_gemv<2, true>(a); }
/* early loads (evt_call_plan.early_loads): the same, issuing the first
   weight loads before the barrier with warp 0's waits (evt_tile_wait) */
__device__ EVT_LLM_GEMV_FN void linear_early_cuda(const evt_task_args *a) { evt_llm_gemv<0, false, true>(a); }
__device__ EVT_LLM_GEMV_FN void linear_res_early_cuda(const evt_task_args *a) { evt_llm_gemv<1, false, true>(a); }
__device__ EVT_LLM_GEMV_FN void mlp_up_early_cuda(const evt_task_args *a) { evt_llm_gemv<2, false, true>(a); }
__device__ EVT_LLM_GEMV_FN void rms_linear_early_cuda(const evt_task_args *a) { evt_llm_gemv<0, true, true>(a); }
__device__ EVT_LLM_GEMV_FN void rms_mlp_up_early_cuda(const evt_task_args *a) { evt_llm_gemv<2, true, true>(a); }

/* the k-slice tiles: linear_part and add_rmsnorm */
#include "llm_slices.cuh"

/* linear_res_ss (llm.c): linear_res, then the tile's partial sums of
   squares of the rows it wrote (read back from y: every GEMV path writes
   its outputs its own way), and the last tile of the call to finish (an
   atomic count in cnt, set back to 0) sums every row's partials in a fixed
   order into ss. The partials of other SMs are read from L2 (ld.cg): this
   SM's L1 may hold an earlier launch's. */
template <bool EARLY>
__device__ __forceinline__ void evt_llm_linear_res_ss(const evt_task_args *a)
{
    evt_llm_gemv<1, false, EARLY>(a);
    evt_tile_sync_any(); /* the GEMV's stores (its paths leave at different points) */
    const evt_bf16 *y = (const evt_bf16 *)a->t[3].ptr;
    float *part = (float *)a->t[4].ptr, *ss = (float *)a->t[5].ptr;
    int32_t *cnt = (int32_t *)a->t[6].ptr;
    const int64_t B = a->t[0].dim[0], N = a->t[1].dim[0], T = a->iarg[0] < 1 ? 1 : a->iarg[0], nb = a->coord[0];
    int64_t n0, n1;
    evt_llm_tile_rows(nb, a->iarg[0], N, &n0, &n1);
    const bool shapes = a->t[4].dim[1] == T && a->t[4].dim[0] == B && a->t[5].dim[0] == B; /* else NaN sums (as llm.c) */
    const int warp = threadIdx.x >> 5, nw = evt_tile_threads() >> 5, lane = threadIdx.x & 31;
    /* a warp's rows 8 at a time, their loads issued together (a row at a
       time paid an L2 round trip per row) */
    constexpr int RB = 8;
    for (int64_t b0 = warp; shapes && b0 < B; b0 += RB * nw) {
        float s[RB];
#pragma unroll
        for (int i = 0; i < RB; i++) s[i] = 0.f;
        for (int64_t n = n0 + lane; n < n1; n += 32) {
            float v[RB];
#pragma unroll
            for (int i = 0; i < RB; i++) v[i] = b0 + i * nw < B ? evt_llm_ld(y, (b0 + i * nw) * N + n) : 0.f;
#pragma unroll
            for (int i = 0; i < RB; i++) s[i] += v[i] * v[i];
        }
#pragma unroll
        for (int i = 0; i < RB; i++) {
            for (int o = 16; o > 0; o >>= 1) s[i] += __shfl_xor_sync(0xffffffffu, s[i], o);
            if (lane == 0 && b0 + i * nw < B) part[(b0 + i * nw) * T + nb] = s[i];
        }
    }
    /* the leader's acq_rel fetch-add after the block barrier releases this
       tile's partials and, in the last tile, acquires the others' (as
       merge_last; __threadfence in every thread instead cost ~4 us a tile
       and ~10 us a call at qwen3-8b batch 64, bench/RESULTS.md session 42) */
    int *last = (int *)evt_llm_smem; /* the scratch is free after the GEMV */
    evt_tile_sync_any();
    if (threadIdx.x == 0) {
        *last = evt_add_acq_rel(cnt, 1) + 1 == (int)T;
        if (*last) *cnt = 0; /* every tile counted: ready for the next launch */
    }
    evt_tile_sync_any();
    const bool fin = *last != 0;
    evt_tile_sync_any(); /* the scratch is the next task's */
    if (!fin) return;
    /* each row's T partials in a fixed order (lane-wise, then the butterfly):
       a warp's rows 4 at a time with up to 8 chunks of 32 partials each in
       flight */
    constexpr int QB = 4, QC = 8;
    const int64_t Bs = a->t[5].dim[0];
    for (int64_t b0 = warp; b0 < Bs; b0 += QB * nw) {
        float q[QB];
#pragma unroll
        for (int i = 0; i < QB; i++) q[i] = 0.f;
        for (int64_t c0 = 0; shapes && c0 < T; c0 += 32 * QC) {
            float v[QB][QC];
#pragma unroll
            for (int i = 0; i < QB; i++)
#pragma unroll
                for (int k = 0; k < QC; k++) {
                    const int64_t p = c0 + 32 * k + lane;
                    v[i][k] = b0 + i * nw < Bs && p < T ? __ldcg(part + (b0 + i * nw) * T + p) : 0.f;
                }
#pragma unroll
            for (int i = 0; i < QB; i++)
#pragma unroll
                for (int k = 0; k < QC; k++) q[i] += v[i][k];
        }
#pragma unroll
        for (int i = 0; i < QB; i++) {
            for (int o = 16; o > 0; o >>= 1) q[i] += __shfl_xor_sync(0xffffffffu, q[i], o);
            if (lane == 0 && b0 + i * nw < Bs) ss[b0 + i * nw] = shapes ? q[i] : NAN;
        }
    }
}

__device__ __noinline__ void linear_res_ss_cuda(const evt_task_args *a) { evt_llm_linear_res_ss<false>(a); }
__device__ __noinline__ void linear_res_ss_early_cuda(const evt_task_args *a) { evt_llm_linear_res_ss<true>(a); }
/* ss_linear / ss_mlp_up: the plain GEMVs, scaled in the epilogue (MODE 3, 4) */
__device__ __noinline__ void ss_linear_cuda(const evt_task_args *a) { evt_llm_gemv<3, false>(a); }
__device__ __noinline__ void ss_mlp_up_cuda(const evt_task_args *a) { evt_llm_gemv<4, false>(a); }
__device__ __noinline__ void ss_linear_early_cuda(const evt_task_args *a) { evt_llm_gemv<3, false, true>(a); }
__device__ __noinline__ void ss_mlp_up_early_cuda(const evt_task_args *a) { evt_llm_gemv<4, false, true>(a); }

/* Prefetch hooks (the leader, before its waits): an L2 prefetch of the rows
   of the weights, t[1] (and t[2]). (A call that streams runs no hook.) */
template <int MODE, bool NORM>
__device__ __forceinline__ void evt_llm_prefetch(const evt_task_args *a)
{
    for (int w = 1; w <= evt_llm_nw<MODE>(); w++)
        evt_llm_prefetch_rows((const evt_bf16 *)a->t[w].ptr, a->t[w].dim[0], a->t[w].dim[1], a->coord[0], a->iarg[0]);
}
__device__ void linear_prefetch_cuda(const evt_task_args *a) { evt_llm_prefetch<0, false>(a); }
__device__ void linear_res_prefetch_cuda(const evt_task_args *a) { evt_llm_prefetch<1, false>(a); }
__device__ void mlp_up_prefetch_cuda(const evt_task_args *a) { evt_llm_prefetch<2, false>(a); }
__device__ void rms_linear_prefetch_cuda(const evt_task_args *a) { evt_llm_prefetch<0, true>(a); }
__device__ void rms_mlp_up_prefetch_cuda(const evt_task_args *a) { evt_llm_prefetch<2, true>(a); }
__device__ void linear_res_ss_prefetch_cuda(const evt_task_args *a) { evt_llm_prefetch<1, false>(a); }
__device__ void ss_linear_prefetch_cuda(const evt_task_args *a) { evt_llm_prefetch<3, false>(a); }
__device__ void ss_mlp_up_prefetch_cuda(const evt_task_args *a) { evt_llm_prefetch<4, false>(a); }

/* ------------------------------------------------------------- rope ---- */
/* RMSNorm of in[0..hd) (weight w), rotate-half RoPE at position p; calls
 * emit(i, value) for every i. Uses evt_llm_smem[0..32]. */
template <class F>
__device__ __forceinline__ void evt_llm_norm_rope(const evt_bf16 *in, const evt_bf16 *w, int64_t hd, int64_t p,
                                                  int64_t eps_e12, int64_t theta, F emit)
{
    float ss = 0;
    for (int64_t i = threadIdx.x; i < hd; i += evt_tile_threads()) { float v = evt_llm_ld(in, i); ss += v * v; }
    ss = evt_llm_block_sum(ss);
    float s = 1.0f / sqrtf(ss / (float)hd + (float)eps_e12 * 1e-12f);
    int64_t half = hd / 2;
    for (int64_t i = threadIdx.x; i < half; i += evt_tile_threads()) {
        float v0 = evt_llm_ld(in, i) * s * __bfloat162float(__ldg(w + i));
        float v1 = evt_llm_ld(in, i + half) * s * __bfloat162float(__ldg(w + i + half));
        double inv = pow((double)theta, -2.0 * (double)i / (double)hd);
        double ang = (double)p * inv;
        float c = (float)cos(ang), sn = (float)sin(ang);
        emit(i, v0 * c - v1 * sn);
        emit(i + half, v1 * c + v0 * sn);
    }
}

/* 1 when evt_llm_group_norm_rope takes the warp path for V vectors of hd */
__device__ __forceinline__ bool evt_llm_group_norm_rope_warp_ok(int64_t V, int64_t hd)
{
    return hd == 128 && (evt_tile_threads() & 31) == 0 && V <= ((evt_tile_threads() + 31) >> 5) - 2;
}
/* The warp path's angle table (cos | sin at evt_llm_smem + 320): row cs of
 * the rope table (the position's cos | sin, rope(theta=...)), copied by the
 * table warps (the last (hd / 2 + 31) / 32). The row is a weight, so the
 * attention loads it before its waits (evt_llm_group_norm_rope's tab_done;
 * a position without a row never gets here: attn_rope_split writes NaN
 * outputs instead); it replaced a
 * double pow + sincos per element that gated the norm (~2.3 us a task,
 * bench/RESULTS.md session 32) */
template <int E>
__device__ __forceinline__ void evt_llm_rope_table_warp(const float *cs)
{
    constexpr int half = 16 * E;
    const int nw = evt_tile_threads() >> 5, tw0 = nw - (half + 31) / 32; /* first table warp */
    const int i = (int)threadIdx.x - tw0 * 32;
    if (i >= 0 && i < half) {
        float *tab = evt_llm_smem + 320;
        tab[i] = __ldg(cs + i);
        tab[half + i] = __ldg(cs + half + i);
    }
}
/* evt_llm_group_norm_rope's fast path for hd = 32 * E and V = G (+ 1)
 * vectors <= warps - hd / 64: warp v < V loads vector v (each lane E
 * consecutive elements) while the last hd / 64 warps copy the angle row
 * (unless tab_done), then one block barrier; the sum of squares
 * is a warp reduction and the rotation partner (element i +- hd / 2) sits
 * 16 lanes away. The block-wide form paid a barrier and a dependent global
 * round trip per vector (~5 us of a qwen3-8b attention task at batch 1,
 * bench/RESULTS.md). Loads and the double math run on different warps:
 * one thread holding both made the megakernel's tiles spill. */
template <int E>
__device__ __forceinline__ void evt_llm_group_norm_rope_warp(const evt_bf16 *qin, int G, const evt_bf16 *wq, const evt_bf16 *kin,
                                                             const evt_bf16 *wk, const float *cs, int64_t eps_e12,
                                                             evt_bf16 *qout, evt_bf16 *kout, bool tab_done)
{
    constexpr int hd = 32 * E, half = 16 * E;
    int V = G + (kin ? 1 : 0), warp = threadIdx.x >> 5, nw = evt_tile_threads() >> 5, lane = threadIdx.x & 31;
    int tw0 = nw - (half + 31) / 32; /* first table warp */
    float *tab = evt_llm_smem + 320; /* cos | sin, as the block-wide form */
    float x[E], w[E];
    const evt_bf16 *in = warp < G ? qin + warp * hd : kin, *wt = warp < G ? wq : wk;
    if (warp < V) {
#pragma unroll
        for (int j = 0; j < E; j++) {
            x[j] = evt_llm_ld(in, lane * E + j);
            w[j] = __bfloat162float(__ldg(wt + lane * E + j));
        }
    } else if (warp >= tw0 && !tab_done) {
        evt_llm_rope_table_warp<E>(cs);
    }
    evt_tile_sync();
    if (warp >= V) return; /* warp-uniform */
    float ss = 0;
#pragma unroll
    for (int j = 0; j < E; j++) ss += x[j] * x[j];
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    float sc = 1.0f / sqrtf(ss / (float)hd + (float)eps_e12 * 1e-12f);
    evt_bf16 *out = warp < G ? qout + warp * hd : kout;
#pragma unroll
    for (int j = 0; j < E; j++) {
        int i = lane * E + j, i0 = i % half;
        float mine = x[j] * sc * w[j], other = __shfl_xor_sync(0xffffffffu, mine, 16);
        float c = tab[i0], sn = tab[half + i0];
        out[i] = __float2bfloat16_rn(lane < 16 ? mine * c - other * sn : mine * c + other * sn);
    }
}

/* The G consecutive q heads at qin (and, when kin is not NULL, k): RMSNorm +
 * RoPE as evt_llm_norm_rope, all in one pass: one block reduction for every
 * sum of squares (each in the same order as evt_llm_block_sum, so the same
 * results), rotated by the angle row cs (the position's cos | sin: a row
 * of the rope table),
 * shared by all heads. Outputs bf16 (shared memory), qout[v * hd + i]. Uses
 * evt_llm_smem[0, 320 + hd). G <= 8. tab_done: the warp path's table is
 * already there (copied by evt_llm_rope_table_warp earlier in the task: the
 * barrier before the rotation orders it). */
__device__ __forceinline__ void evt_llm_group_norm_rope(const evt_bf16 *qin, int64_t G, const evt_bf16 *wq,
                                                        const evt_bf16 *kin, const evt_bf16 *wk, int64_t hd, const float *cs,
                                                        int64_t eps_e12, evt_bf16 *qout, evt_bf16 *kout, bool tab_done = false)
{
    int64_t V = G + (kin ? 1 : 0), half = hd / 2;
    int warp = threadIdx.x >> 5, nw = (evt_tile_threads() + 31) >> 5;
    if (evt_llm_group_norm_rope_warp_ok(V, hd)) {
        evt_llm_group_norm_rope_warp<4>(qin, (int)G, wq, kin, wk, cs, eps_e12, qout, kout, tab_done);
        return;
    }
    float *sums = evt_llm_smem, *scale = evt_llm_smem + 9 * 32, *tab = evt_llm_smem + 320; /* [9][32], [9], cos | sin */
    for (int64_t i = threadIdx.x; i < hd; i += evt_tile_threads()) tab[i] = __ldg(cs + i);
    for (int64_t v = 0; v < V; v++) {
        const evt_bf16 *in = v < G ? qin + v * hd : kin;
        float ss = 0;
        for (int64_t i = threadIdx.x; i < hd; i += evt_tile_threads()) { float x = evt_llm_ld(in, i); ss += x * x; }
        for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
        if ((threadIdx.x & 31) == 0) sums[v * 32 + warp] = ss;
    }
    evt_tile_sync();
    if (threadIdx.x < V) {
        float t = 0;
        for (int w = 0; w < nw; w++) t += sums[threadIdx.x * 32 + w];
        scale[threadIdx.x] = 1.0f / sqrtf(t / (float)hd + (float)eps_e12 * 1e-12f);
    }
    evt_tile_sync();
    for (int64_t e = threadIdx.x; e < V * half; e += evt_tile_threads()) {
        int64_t v = e / half, i = e % half;
        const evt_bf16 *in = v < G ? qin + v * hd : kin, *w = v < G ? wq : wk;
        evt_bf16 *out = v < G ? qout + v * hd : kout;
        float sc = scale[v], c = tab[i], sf = tab[half + i];
        float x0 = evt_llm_ld(in, i) * sc * __bfloat162float(__ldg(w + i));
        float x1 = evt_llm_ld(in, i + half) * sc * __bfloat162float(__ldg(w + i + half));
        out[i] = __float2bfloat16_rn(x0 * c - x1 * sf);
        out[i + half] = __float2bfloat16_rn(x1 * c + x0 * sf);
    }
}

__device__ __noinline__ void q_rope_cuda(const evt_task_args *a)
{
    const evt_bf16 *qkv = (const evt_bf16 *)a->t[0].ptr, *w = (const evt_bf16 *)a->t[1].ptr;
    const int32_t *pos = (const int32_t *)a->t[2].ptr;
    evt_bf16 *q = (evt_bf16 *)a->t[3].ptr;
    int64_t b = a->coord[0], h = a->coord[1], nh = a->t[3].dim[1], hd = a->t[3].dim[2], N = a->t[0].dim[1];
    evt_bf16 *dst = q + (b * nh + h) * hd;
    evt_llm_norm_rope(qkv + b * N + h * hd, w, hd, pos[b], a->iarg[0], a->iarg[1],
                      [&](int64_t i, float v) { evt_llm_st(dst, i, v); });
}

__device__ __noinline__ void k_rope_append_cuda(const evt_task_args *a)
{
    const evt_bf16 *qkv = (const evt_bf16 *)a->t[0].ptr, *w = (const evt_bf16 *)a->t[1].ptr;
    const int32_t *pos = (const int32_t *)a->t[2].ptr, *bt = (const int32_t *)a->t[3].ptr;
    evt_bf16 *kc = (evt_bf16 *)a->t[4].ptr, *vc = (evt_bf16 *)a->t[5].ptr;
    int64_t b = a->coord[0], g = a->coord[1], N = a->t[0].dim[1];
    int64_t nkv = a->t[4].dim[2], hd = a->t[4].dim[3], PS = a->t[4].dim[1], MP = a->t[3].dim[1], nh = a->iarg[0];
    int64_t p = pos[b];
    int64_t off = (((int64_t)bt[b * MP + p / PS] * PS + p % PS) * nkv + g) * hd;
    evt_bf16 *kd = kc + off;
    evt_llm_norm_rope(qkv + b * N + (nh + g) * hd, w, hd, p, a->iarg[1], a->iarg[2],
                      [&](int64_t i, float v) { evt_llm_st(kd, i, v); });
    const evt_bf16 *vs = qkv + b * N + (nh + nkv + g) * hd;
    for (int64_t i = threadIdx.x; i < hd; i += evt_tile_threads()) vc[off + i] = vs[i];
}

/* attention: attn_split, attn_rope_split, attn_merge, attn_merge_group; then the prefill's qk_rope_append, which
   reads the cache layout through the attention's evt_llm_cache_off */
#include "attn_requests.h"
#include "llm_attn.cuh"

/* qk_rope_append (the prefill's form): q_rope for the G q heads of kv head
   g and k_rope_append for g, for each row of the task's run
   (attn_requests.h), in one task. Rows go through in groups of at most
   EVT_LLM_QK_PAIRS / (G + 1): each warp takes the sums of squares of every
   nw-th (row, vector) pair, then each thread the rotation of one (row,
   element) pair for all G + 1 vectors, its angles (position pos[row], in
   double as evt_llm_norm_rope) computed once for them. */
#define EVT_LLM_QK_PAIRS 512
__device__ __noinline__ void qk_rope_append_cuda(const evt_task_args *a)
{
    const evt_bf16 *qkv = (const evt_bf16 *)a->t[0].ptr, *wq = (const evt_bf16 *)a->t[1].ptr, *wk = (const evt_bf16 *)a->t[2].ptr;
    const int32_t *pos = (const int32_t *)a->t[3].ptr, *bt = (const int32_t *)a->t[4].ptr;
    evt_bf16 *kc = (evt_bf16 *)a->t[5].ptr, *vc = (evt_bf16 *)a->t[6].ptr, *q = (evt_bf16 *)a->t[7].ptr;
    const int64_t g = a->coord[1], N = a->t[0].dim[1];
    const int64_t nkv = a->t[5].dim[2], hd = a->t[5].dim[3], PS = a->t[5].dim[1], MP = a->t[4].dim[1];
    const int64_t nh = a->t[7].dim[1], G = nh / nkv, V = G + 1, half = hd / 2;
    int64_t b0, b1;
    evt_tile_attn_requests(a, &b0, &b1);
    float *scale = evt_llm_smem + 64; /* EVT_LLM_QK_PAIRS floats */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = evt_tile_threads() >> 5;
    const int64_t per = V < EVT_LLM_QK_PAIRS ? EVT_LLM_QK_PAIRS / V : 1; /* rows a group */
    for (int64_t r0 = b0; r0 < b1; r0 += per) {
        const int64_t rows = b1 - r0 < per ? b1 - r0 : per;
        for (int64_t e = warp; e < rows * V; e += nw) {
            const int64_t b = r0 + e / V, v = e % V;
            const evt_bf16 *in = qkv + b * N + (v < G ? g * G + v : nh + g) * hd;
            float ss = 0;
            for (int64_t i = lane; i < hd; i += 32) { float x = evt_llm_ld(in, i); ss += x * x; }
            for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
            if (lane == 0) scale[e] = 1.0f / sqrtf(ss / (float)hd + (float)a->iarg[0] * 1e-12f);
        }
        evt_tile_sync();
        for (int64_t e = threadIdx.x; e < rows * half; e += evt_tile_threads()) {
            const int64_t b = r0 + e / half, i = e % half, p = pos[b], off = evt_llm_cache_off(bt, MP, PS, nkv, hd, b, p, g);
            const double inv = pow((double)a->iarg[1], -2.0 * (double)i / (double)hd), ang = (double)p * inv;
            const float c = (float)cos(ang), sn = (float)sin(ang);
            for (int64_t v = 0; v < V; v++) {
                const evt_bf16 *in = qkv + b * N + (v < G ? g * G + v : nh + g) * hd, *w = v < G ? wq : wk;
                evt_bf16 *out = v < G ? q + (b * nh + g * G + v) * hd : kc + off;
                const float sc = scale[(b - r0) * V + v];
                const float x0 = evt_llm_ld(in, i) * sc * __bfloat162float(__ldg(w + i));
                const float x1 = evt_llm_ld(in, i + half) * sc * __bfloat162float(__ldg(w + i + half));
                evt_llm_st(out, i, x0 * c - x1 * sn);
                evt_llm_st(out, i + half, x1 * c + x0 * sn);
            }
        }
        for (int64_t e = threadIdx.x; e < rows * hd; e += evt_tile_threads()) { /* the rows' v */
            const int64_t b = r0 + e / hd, k = e % hd;
            vc[evt_llm_cache_off(bt, MP, PS, nkv, hd, b, pos[b], g) + k] = qkv[b * N + (nh + nkv + g) * hd + k];
        }
        evt_tile_sync(); /* scale is reused by the next group */
    }
}

/* ----------------------------------------------------------- argmax ---- */
/* Block reduce of (value, index): larger value wins, lower index on ties.
 * Result valid in every thread. Uses evt_llm_smem[0..64]. */
__device__ __forceinline__ void evt_llm_block_argmax(float &v, int32_t &ix)
{
    for (int o = 16; o > 0; o >>= 1) {
        float v2 = __shfl_xor_sync(0xffffffffu, v, o);
        int32_t i2 = __shfl_xor_sync(0xffffffffu, ix, o);
        if (v2 > v || (v2 == v && i2 < ix)) { v = v2; ix = i2; }
    }
    int warp = threadIdx.x >> 5, nw = (evt_tile_threads() + 31) >> 5;
    if ((threadIdx.x & 31) == 0) { evt_llm_smem[warp] = v; ((int32_t *)evt_llm_smem)[32 + warp] = ix; }
    evt_tile_sync();
    v = -INFINITY;
    ix = INT32_MAX;
    for (int w = 0; w < nw; w++) {
        float v2 = evt_llm_smem[w];
        int32_t i2 = ((int32_t *)evt_llm_smem)[32 + w];
        if (v2 > v || (v2 == v && i2 < ix)) { v = v2; ix = i2; }
    }
    evt_tile_sync();
}

/* A row's chunk [v0, e) of the logits, eight loads in flight per thread
   (the plain loop waited for one load at a time: a task took 116 us for
   half a qwen3 row at batch 64 and 230 us for a whole one above, on an
   H100, bench/RESULTS.md session 43). A thread takes its values in
   increasing index order, keeping the first of equal values, so the
   block's (max, lowest index) reduction matches the C reference's first
   maximum. 16-byte loads, four (or two) in flight, made ptxas spill 4-32
   bytes more in the attention's functions, which did not change (their
   register budget moves with this one's code). The batch-1-16 kernel
   (EVT_LLM_NO_TMA: chunks of at most a few thousand logits) keeps the
   plain loop and its machine code (a changed argmax there cost qwen3-8b
   0.7% per token at batch 1 in the vector form). EVT_LLM_ARGMAX_UNROLL=0/1
   forces either. */
#ifndef EVT_LLM_ARGMAX_UNROLL
#ifdef EVT_LLM_NO_TMA
#define EVT_LLM_ARGMAX_UNROLL 0
#else
#define EVT_LLM_ARGMAX_UNROLL 1
#endif
#endif
__device__ __noinline__ void argmax_part_cuda(const evt_task_args *a)
{
    const evt_bf16 *logits = (const evt_bf16 *)a->t[0].ptr;
    float *pv = (float *)a->t[1].ptr;
    int32_t *pi = (int32_t *)a->t[2].ptr;
    int64_t b = a->coord[0], c = a->coord[1], V = a->t[0].dim[1], NC = a->t[1].dim[1], v0, e;
    evt_llm_tile_rows(c, NC, V, &v0, &e);
    float best = -INFINITY;
    int32_t bi = INT32_MAX;
#if EVT_LLM_ARGMAX_UNROLL
    const int64_t T = evt_tile_threads();
    for (int64_t v = v0 + threadIdx.x; v < e; v += 8 * T) {
        float x[8];
#pragma unroll
        for (int k = 0; k < 8; k++) x[k] = v + k * T < e ? evt_llm_ld(logits, b * V + v + k * T) : -INFINITY;
#pragma unroll
        for (int k = 0; k < 8; k++)
            if (x[k] > best) { best = x[k]; bi = (int32_t)(v + k * T); }
    }
#else
    for (int64_t v = v0 + threadIdx.x; v < e; v += evt_tile_threads()) {
        float x = evt_llm_ld(logits, b * V + v);
        if (x > best) { best = x; bi = (int32_t)v; }
    }
#endif
    evt_llm_block_argmax(best, bi);
    if (threadIdx.x == 0) {
        pv[b * NC + c] = best;
        pi[b * NC + c] = bi == INT32_MAX ? (int32_t)v0 : bi;
    }
}

__device__ __noinline__ void argmax_final_cuda(const evt_task_args *a)
{
    const float *pv = (const float *)a->t[0].ptr;
    const int32_t *pi = (const int32_t *)a->t[1].ptr;
    int32_t *next = (int32_t *)a->t[2].ptr;
    int64_t b = a->coord[0], NC = a->t[0].dim[1];
    float best = -INFINITY;
    int32_t bc = INT32_MAX; /* chunk index: chunks are in index order */
    for (int64_t c = threadIdx.x; c < NC; c += evt_tile_threads()) {
        float x = pv[b * NC + c];
        if (x > best) { best = x; bc = (int32_t)c; }
    }
    evt_llm_block_argmax(best, bc);
    if (threadIdx.x == 0) next[b] = bc == INT32_MAX ? 0 : pi[b * NC + bc];
}
#endif
