/* llm_tma.cuh — the decode GEMV through the tensor copy engine and the
 * warpgroup tensor cores (sm_90a): TMA boxes of the weights and of x into a
 * ring of shared-memory stages, wgmma from there. Included by llm_gemv.cuh,
 * whose evt_llm_gemv takes this path when evt_llm_gemv_tma accepts the task
 * and falls back to the register units otherwise.
 *
 * Why: at batch 32-64 a register unit holds one 32-wide k chunk of weights
 * in flight per warp, two thirds of its load registers are x, and every warp
 * reads all of x again; the tiles issue slowly from 8 warps at 255 registers
 * and reach a third of the DRAM bandwidth (bench/RESULTS.md, sessions 19-22).
 * A ring filled by TMA holds tens of KiB in flight per SM without registers
 * and x is read once per stage for all rows.
 *
 * The product: y[b, n] = sum_k x[b, k] W[n, k] for the task's rows
 * [n0, n1) (llm.c's tile rows), b < B <= 64, as D = A * B^T with A = x
 * (M = 64 batch rows, K-major) and B = W (N = NT rows, K-major), both from
 * shared memory in the 128-byte swizzled layout TMA writes. At batch 65-128
 * (kernels built with EVT_TMA_TWO_HALVES) a stage holds two x boxes, rows
 * [0, 64) and [64, B), and both warpgroups multiply, each its half of x
 * against the same weight stage: the band is streamed once. There, a
 * one-matrix GEMV of at most 64 rows a pass at batch 65-96 swaps the
 * product's roles instead (D^T = W x^T: 64 weight rows as M, x's 96 rows
 * as N, in warpgroup 0 alone): each m64 wgmma costs about the same
 * whatever its N (~100 cycles at N = 32-48), so one wgmma of N = 96 a k
 * step beats two of N = NT (bench/RESULTS.md session 44).
 *   - Stage: U = 4, 2 or 1 chunks of 64 k (the most that divide K and leave
 *     the ring two stages), moved as one 3-D box of x (8-64 rows covering B, rows
 *     past B read as zeros) and one box per weight matrix (the pass's rows
 *     rounded up to 8; src/runtime/tmaps.c encodes a map per height and
 *     depth): a box lands its chunks as consecutive planes of rows x 128
 *     bytes. Reserved per chunk: 8 KiB of x, NT rows per matrix (an operand
 *     reads 64 x rows or NT weight rows from a plane's start).
 *   - Warpgroup 0 multiplies (both at batch 65-128, warpgroup 1 on x's second
 *     box): accumulators NW x NT / 2 floats per thread.
 *     Reserved rows past the pass hold stale shared memory: their output
 *     columns are computed and dropped (a column of D depends on that row
 *     of W alone); so are x rows >= B.
 *   - Passes: more than NT rows (the LM head, 1151 rows a task) run again
 *     over K.
 *   - Ring: S = ring bytes / stage bytes slots (at most EVT_TMA_MAX_STAGES),
 *     a "full" mbarrier per slot (TMA transaction bytes) and an "empty" one
 *     (one arrival per multiplying warp once its wgmma retired). Lane 0 of
 *     warp 4 issues: the first S stages up front (with early loads, the
 *     weight boxes before the task's waits, which warp 0 runs, and x's
 *     after), then each stage once its slot's previous fill is released
 *     (at batch 65-128 warp 4 multiplies too, and refills a slot between
 *     its own stages, once both warpgroups released it).
 *     The barriers live for the launch (EVT_TILES_WORKER_BEGIN), their
 *     phases carried from task to task in evt_tma_phase.
 *   - x was written by other SMs with ordinary stores and acquired through
 *     the task's waits: the producer fences the async proxy once before its
 *     first x box.
 * Measured (tiles alone, H200, bench/RESULTS.md sessions 24-25): the copy
 * engine spends about 0.2 us per box whatever its bytes (4 KiB or 16 KiB;
 * neither relaxed arrivals, the wgmmas inlined into the kernel, nor a deeper
 * ring moved it), so a stage is as few boxes as possible: one 2-D box per 64
 * k and matrix took qwen3-8b's o at batch 64 34.2 us, 3-D boxes of 4 chunks
 * 20.8 (register units 27.9). ptxas serialises the wgmmas of a called
 * function (C7510: a WARPGROUP.DEPBAR after every HGMMA, so each k16 step
 * costs a wgmma's whole latency, ~120 cycles at N = 48). Inlined into
 * tilebench's kernels with straight-line stages (EVT_TMA_STRAIGHT) they
 * pipeline, and the qwen3-8b batch-64 tiles ran 15-17% faster (QKV 29.9 ->
 * 24.9 us, o 24.6 -> 21.1, down 58.6 -> 49.7, gate + up 65.4 -> 61.9); but
 * every GEMV tile inlined into the megakernel (EVT_LLM_INLINE_GEMV) made its
 * batch 64 3.2x slower per token (bench/RESULTS.md session 53). Diagnostics:
 * EVT_TMA_PROF (the ring's stamps, below), EVT_TMA_ABLATE_MMA (no products,
 * timing only), EVT_TMA_MAX_DI (a cap on the chunks a stage).
 * Shapes it takes (else the register units run): batch
 * EVT_TMA_MIN_B..EVT_TMA_MAX_B, K % 64 == 0, enough rows, maps for x and the weights
 * (the runtime encodes EVT_TMA_BOXES per bf16 matrix of whole 64-column
 * chunks: src/runtime/tmaps.c), a ring of at least two one-chunk stages
 * (evt_run_opts.tma_ring; evtc decode reserves 96 KiB at batch 33-128:
 * more shrinks L1 and slows the other tiles, less holds too few stages).
 * EVT_LLM_NO_TMA (a cuda_defines option) compiles the path out: evtc decode
 * sets it for the program it runs at batch 1-16, which never takes it; the
 * smaller kernel measured 0.3% (qwen3-8b) and 1.3% (qwen3-0.6b) faster per
 * token at batch 1 on an H100 (bench/RESULTS.md, session 33). */
#ifndef EVT_TILE_LLM_TMA_CUH
#define EVT_TILE_LLM_TMA_CUH

#ifndef EVT_TMA_MAX_STAGES
#define EVT_TMA_MAX_STAGES 8
#endif
#ifndef EVT_TMA_MIN_B
#define EVT_TMA_MIN_B 17 /* smaller batches keep the register units (tiles alone, H200: at batch 1-16
                            the path lost on every shape in session 24, and with 3-D boxes in session
                            25, e.g. qwen3-8b's o at batch 1 19.7 vs 13.6 us) */
#endif
#ifndef EVT_TMA_MIN_ROWS
#define EVT_TMA_MIN_ROWS 64 /* weight rows x matrices per task at least, batch 17-32 (EVT_TMA_MIN_ROWS_WIDE
                               from EVT_TMA_WIDE_MIN_B): tiles alone, H200, 96 KiB ring (session 25), the
                               path against the register units at batch 32: qwen3-8b gate + up (93 x 2
                               rows) 64.3 vs 68.6 us, LM heads 371 vs 514 (8b) and 133 vs 144 (0.6b); o
                               and down (31 rows) 23.0 vs 19.3 and 52.4 vs 41.1, QKV (47) 26.6 vs 26.5,
                               qwen3-0.6b's QKV, o, gate + up and down all lose */
#endif
#ifndef EVT_TMA_WIDE_MIN_B
#define EVT_TMA_WIDE_MIN_B 33 /* from this batch on, EVT_TMA_MIN_ROWS_WIDE rows suffice: the batches where
                                 evtc decode reserves the ring (from 33). Until session 40 it was 49, and
                                 qwen3-8b ran QKV, o and down on the register units at batch 33-48 and
                                 took longer there than at 64; from 33 (H200, bench/RESULTS.md session
                                 40): tiles alone at batch 40-48 QKV 26.7-27.0 vs 43.4-43.9 us, o
                                 22.0-22.3 vs 25.9-26.4, down 51.9-53.5 vs 60.2-61.4 (at 33: 27.2 vs
                                 43.2, 24.7 vs 25.8, 61.5 vs 59.5); the decode at batch 33 / 40 / 48
                                 10.35 / 10.38 / 10.68 -> 9.75 / 9.46 / 9.58 ms/token */
#endif
#ifndef EVT_TMA_MIN_ROWS_WIDE
#define EVT_TMA_MIN_ROWS_WIDE 16 /* at batch 49-64 (session 25): qwen3-8b QKV 27.3 vs 45.3 us, o 23.7 vs 28.6,
                                    down 56.7 vs 65.0, gate + up 66.0 vs 101.7; qwen3-0.6b QKV (31 rows)
                                    11.2 vs 14.3, gate + up (23 x 2) 15.2 vs 16.4, but o and down (8 rows)
                                    13.4 vs 11.2 and 16.9 vs 13.5 */
#endif
#ifdef EVT_TMA_TWO_HALVES
#define EVT_TMA_MAX_B 128 /* batch 65-128, x in two boxes multiplied by the two warpgroups (a cuda_defines
                             option: evtc decode sets it for the runs above 64 that have a ring) */
#define EVT_TMA_X_BOXES 2
#else
#define EVT_TMA_MAX_B 64 /* without the define the kernel is the one without the second half's code (with
                            it, qwen3-8b and qwen3-0.6b were 3-4% slower at batch 48-64 in one form) */
#define EVT_TMA_X_BOXES 1
#endif
#ifndef EVT_TMA_SWAP_MAX_NT
#define EVT_TMA_SWAP_MAX_NT 64 /* batch 65-EVT_TMA_SWAP_MAX_B: one-matrix passes of at most this many rows take
                                  the swapped product (evt_tma_gemv's NB = 96: 48 accumulators a thread), the
                                  rest both warpgroups (evt_tma_gemv_wide); 0: always those. Measured (H200,
                                  bench/RESULTS.md session 44): qwen3-8b batch 72 -6.9% per token; with N = 128
                                  above 96 and for gate + up (two matrices) slower than both warpgroups */
#endif
#ifndef EVT_TMA_SWAP_MAX_B
#define EVT_TMA_SWAP_MAX_B 96 /* the swapped product's N (96 or 128, the wgmma widths above 64 defined here): B <= this */
#endif
#ifndef EVT_TMA_MAX_DI
#define EVT_TMA_MAX_DI (EVT_TMA_DEPTHS - 1) /* the deepest stage of the batch-17-64 form: 1 << this chunks of 64 k
                                               (an experiment's knob; session 53: 1 chunk a stage was slower) */
#endif
static_assert(EVT_TMA_MAX_DI >= 0 && EVT_TMA_MAX_DI < EVT_TMA_DEPTHS, "EVT_TMA_MAX_DI: a depth the maps encode");
#ifndef EVT_TILES_TMA_RING
#define EVT_TILES_TMA_RING (160u * 1024u) /* shared memory the runtime reserves for the ring, at most */
#endif

/* A CUtensorMap as the device sees it: 128 opaque bytes, 64-byte aligned. */
typedef struct __align__(64) evt_tmap { unsigned long long w[16]; } evt_tmap;

extern __shared__ __align__(1024) unsigned char evt_dyn_smem[]; /* (also declared by the weight stream) */
static __shared__ __align__(8) uint64_t evt_tma_bar[2 * EVT_TMA_MAX_STAGES]; /* full[s], then empty[s] */

#include "llm_tma_ptx.cuh"

/* The slots' mbarriers live for the whole launch (initialised once per
 * worker: EVT_TILES_WORKER_BEGIN); evt_tma_phase holds, bit s, the parity of
 * slot s's next phase (every fill of a slot is released exactly once, so its
 * full and empty barriers are at the same phase between tasks). */
static __shared__ uint32_t evt_tma_phase;
#define EVT_TMA_PRODUCER_WARP 4 /* the first warp of warpgroup 1: warpgroup 0 multiplies, warp 0 runs an
                                   early-loads task's waits */
#define EVT_TMA_CONSUMER_WARPS 4
#define EVT_TMA_RELEASING_WARPS (4 * EVT_TMA_X_BOXES) /* arrivals that release a slot: the multiplying warps */

__device__ __forceinline__ void evt_tma_worker_begin()
{
    if (threadIdx.x == 0) {
        uint32_t full0 = evt_tma_saddr(evt_tma_bar);
        for (int s = 0; s < 2 * EVT_TMA_MAX_STAGES; s++) evt_tma_bar_init(full0 + 8 * s, s < EVT_TMA_MAX_STAGES ? 1u : EVT_TMA_RELEASING_WARPS);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        evt_tma_phase = 0;
    }
}
#undef EVT_TILES_WORKER_BEGIN
#define EVT_TILES_WORKER_BEGIN() evt_tma_worker_begin()

/* What the task's product needs: the maps (EVT_TMA_BOXES per tensor: depth
   index x EVT_TMA_HEIGHTS + rows / 8 - 1) and the ring. */
struct evt_tma_io {
    const evt_tmap *mx, *mw0, *mw1;
    unsigned char *ring;
    uint32_t ring_bytes;
};

/* Rows of pass p of a task's R rows, NT a pass, rounded up to 8 (a box's
   height). */
__device__ __forceinline__ int evt_tma_pass_rows8(int R, int p, int NT)
{
    return ((R - p * NT < NT ? R - p * NT : NT) + 7) & ~7;
}

/* NORM (rms_linear, rms_mlp_up): the sums of squares of x's rows, taken by
   the consumers from each stage's x box of the first pass while its wgmmas
   run. Consumer thread i (its index in its warpgroup) sums row i % 64 over
   half the row's 16-byte chunks (i / 64 picks which half; with the 128-byte
   swizzle, chunk c of row r lies at c ^ (r % 8), so taking them in that
   order spreads a warp over all banks). */
__device__ __forceinline__ float evt_tma_ss_stage(uint32_t xs, uint32_t xp, int U, int xrows, float ss, int i)
{
    const int r = i & 63, h = i >> 6;
    if (r >= xrows) return ss;
    for (int u = 0; u < U; u++) {
        const uint32_t row = xs + (uint32_t)u * xp + (uint32_t)r * 128u;
#pragma unroll
        for (int c = 0; c < 4; c++) {
            uint4 v;
            asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                         : "r"(row + (uint32_t)(((4 * h + c) ^ (r & 7)) * 16)));
            ss = evt_llm_sumsq8(ss, v);
        }
    }
    return ss;
}
static __shared__ float evt_tma_ss[128 * EVT_TMA_X_BOXES]; /* NORM: the two halves of each row's sum (per warpgroup) */

/* -DEVT_TMA_PROF (diagnostic; tilebench prints the medians): clock64 stamps
   of the ring of evt_tma_gemv (the batch-17-64 form) and evt_tma_gemv_wide
   (batch 65-128, both warpgroups: warp 0 is warpgroup 0's first) into
   evt_tma_prof[block * EVT_TMA_PROF_SLOTS + k] when the pointer is set: k = 0
   the task's entry; for each of the first EVT_TMA_PROF_STAGES stages j,
   1 + 3j the producer has issued its boxes, 2 + 3j warp 0's wait for them
   ended, 3 + 3j warp 0 released the slot; the last slot the task's end. */
#define EVT_TMA_PROF_STAGES 40
#define EVT_TMA_PROF_SLOTS (2 + 3 * EVT_TMA_PROF_STAGES)
#ifdef EVT_TMA_PROF
__device__ unsigned long long *evt_tma_prof;
#define EVT_TMA_STAMP(k)                                                                                          \
    do {                                                                                                          \
        if (evt_tma_prof) evt_tma_prof[(size_t)blockIdx.x * EVT_TMA_PROF_SLOTS + (k)] = clock64(); \
    } while (0)
#else
#define EVT_TMA_STAMP(k) ((void)0)
#endif

/* The task's rows [n0, n1) (bx is 0): see the header. NB = 0: batch <= 64
   (the batch-17-64 kernel). NB = 96 (EVT_TMA_SWAP_MAX_B; the batch-65-128
   kernel, 64 < B <= NB, one matrix, NT <= 64, no norm, no row scales): the
   product's roles swapped, D^T = W x^T, the weight rows as wgmma's M (64:
   rows past the pass's are stale and dropped) and x's NB rows (one box,
   rows past B read as zeros) as its N, so that a k step is one wgmma as at
   batch <= 64 rather than one per 64 batch rows, and the producer warp
   only fills. The weight operand reads 64 rows from each plane's start, so
   the caller passes a ring 8 KiB short of the reserved one (the spare past
   its last slot). An early-loads task whose waits report an aborting
   launch leaves once its weight boxes have landed. (The NB = 0 path is
   written as it was before NB, so that the batch-17-64 kernel's machine
   code is byte for byte the same: `bench/kernel_same.sh`; even a constexpr
   local for the accumulator count changed it.) */
template <int MODE, int NT, bool EARLY, bool NORM, int NB = 0>
__device__ __forceinline__ void evt_tma_gemv(const evt_task_args *a, const evt_tma_io &io, int64_t n0, int64_t n1, int bx)
{
    static_assert(NB == 0 || (!NORM && MODE <= 2 && evt_llm_nw<MODE>() == 1 && NT <= 64),
                  "the swapped product: one matrix, no norm, no row scales");
    constexpr int NW = evt_llm_nw<MODE>();
    constexpr uint32_t WREG = NT * 128u, XREG = NB ? NB * 128u : 8192u; /* reserved per chunk: a matrix's rows, x's rows */
    const int B = (int)a->t[0].dim[0], K = (int)a->t[0].dim[1];
    /* linear_part: the task's k slice, chunks [kc0, kc0 + KS) (evt_llm_gemv_tma
       checked that the slices are whole stages' chunks) */
    const int KPS = MODE == EVT_LLM_MODE_PART ? (int)a->t[2].dim[0] : 1, KS = K / 64 / KPS;
    const int kc0 = MODE == EVT_LLM_MODE_PART ? (int)(a->coord[0] / (a->grid[0] / KPS)) * KS : 0;
    const int BH = B; /* bx is 0 */
    /* chunks per stage: 4, 2 or 1, the most that divide K and leave the ring
       two stages */
    int di = EVT_TMA_MAX_DI;
    while (di > 0 && (KS % (1 << di) || io.ring_bytes < 2u * (1u << di) * (XREG + NW * WREG))) di--;
    const int U = 1 << di;
    const uint32_t SLOT = (uint32_t)U * (XREG + NW * WREG); /* x's planes, then each matrix's */
    const int KT = KS / U; /* stages per pass */
    const int R = (int)(n1 - n0), npass = (R + NT - 1) / NT, J = npass * KT;
    int S = (int)(io.ring_bytes / SLOT);
    if (S > EVT_TMA_MAX_STAGES) S = EVT_TMA_MAX_STAGES;
    if (S > J) S = J;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const uint32_t full0 = evt_tma_saddr(evt_tma_bar), empty0 = full0 + 8 * EVT_TMA_MAX_STAGES, ring0 = evt_tma_saddr(io.ring);
    const uint32_t phase = evt_tma_phase; /* written by the previous task before the dispatch's barrier */
    const int xrows = NB ? NB : BH <= 8 ? 8 : BH <= 16 ? 16 : BH <= 32 ? 32 : 64; /* x's box: rows past B read as zeros */
    const evt_tmap *mx = io.mx + di * EVT_TMA_HEIGHTS + (xrows / 8 - 1);
    const bool early = EARLY && a->wait_in_tile && bx == 0; /* the second half runs after the waits */
    if (NB == 0 && threadIdx.x == 0) EVT_TMA_STAMP(0);

    if (warp == EVT_TMA_PRODUCER_WARP) {
        /* lane 0 fills the ring: stage j = (pass p, k stage kt) into slot s */
        if (lane == 0) {
            int s, kt, p, rows8;
            uint32_t wbytes;
            const uint32_t xbytes = (uint32_t)U * xrows * 128u;
            auto pass_rows = [&]() {
                rows8 = evt_tma_pass_rows8(R, p, NT);
                wbytes = (uint32_t)(U * NW * rows8) * 128u;
            };
            auto first = [&]() { /* back to stage 0 */
                s = kt = p = 0;
                pass_rows();
            };
            first();
            auto weights = [&]() { /* one box per matrix: the pass's rows x U chunks */
                const uint32_t dst = ring0 + (uint32_t)s * SLOT + (uint32_t)U * XREG, bar = full0 + 8 * s;
                const int r0 = (int)n0 + p * NT, m = di * EVT_TMA_HEIGHTS + rows8 / 8 - 1;
                evt_tma_load3(dst, io.mw0 + m, r0, kc0 + kt * U, bar);
                if (NW == 2) evt_tma_load3(dst + (uint32_t)U * WREG, io.mw1 + m, r0, kc0 + kt * U, bar);
            };
            auto xs = [&]() { evt_tma_load3(ring0 + (uint32_t)s * SLOT, mx, bx, kc0 + kt * U, full0 + 8 * s); };
            auto next = [&]() {
                if (++s == S) s = 0;
                if (++kt == KT) {
                    kt = 0;
                    p++;
                    pass_rows();
                }
            };
            /* x came through the waits (ordinary stores on other SMs,
               acquired by this block): a proxy fence orders them before
               the async reads, once the waits are done */
            if (!early) asm volatile("fence.proxy.async.global;" ::: "memory");
            /* the first S stages: the weights at once (before the task's
               waits when they run in the tile), x once they are done */
            for (int j = 0; j < S; j++, next()) {
                if (early) evt_tma_expect(full0 + 8 * s, wbytes);
                else evt_tma_arrive_expect(full0 + 8 * s, wbytes + xbytes);
                weights();
            }
            first();
            if (early && evt_tile_wait(a)) { /* aborting: let the weight boxes land before leaving */
                for (int j = 0; j < S; j++) evt_tma_arrive(full0 + 8 * j);
                for (int j = 0; j < S; j++) evt_tma_wait(full0 + 8 * j, (phase >> j) & 1u);
                return;
            }
            if (early) asm volatile("fence.proxy.async.global;" ::: "memory");
            for (int j = 0; j < S; j++, next()) {
                if (early) evt_tma_arrive_expect(full0 + 8 * s, xbytes);
                xs();
                if (NB == 0 && j < EVT_TMA_PROF_STAGES) EVT_TMA_STAMP(1 + 3 * j);
            }
            /* then each stage once its slot's previous fill is released */
            uint32_t par = phase;
            for (int j = S; j < J; j++, next()) {
                if (s == 0 && j > S) par = ~par; /* a new round of the ring */
                evt_tma_wait(empty0 + 8 * s, par >> s & 1u);
                evt_tma_arrive_expect(full0 + 8 * s, wbytes + xbytes);
                weights();
                xs();
                if (NB == 0 && j < EVT_TMA_PROF_STAGES) EVT_TMA_STAMP(1 + 3 * j);
            }
            /* the tail: wait for the releases of the last S stages too, so
               that every phase of an empty barrier has its waiter (the
               consumers' arrivals are otherwise never waited on; synccheck
               reports them as missing waits) */
            for (int j = J - S; j < J; j++)
                evt_tma_wait(empty0 + 8 * (j % S), ((phase >> (j % S)) ^ (uint32_t)(j / S)) & 1u);
        } else if (early) {
            evt_tile_wait(a); /* the other lanes meet warp 0's waits too */
        }
        return;
    }
    if (early && evt_tile_wait(a)) return;
    if (warp >= EVT_TMA_CONSUMER_WARPS) return; /* warpgroup 1's other warps have nothing to do */

    /* warpgroup 0: D (64 batch rows x NT weight rows per matrix) += x W^T;
       swapped (NB): D^T (64 weight rows x NB batch rows) += W x^T */
    float acc[NW][NB ? NB / 2 : NT / 2]; /* a thread's accumulators per matrix (its share of a 64-row D) */
#pragma unroll
    for (int q = 0; q < NW; q++)
#pragma unroll
        for (int i = 0; i < (NB ? NB / 2 : NT / 2); i++) acc[q][i] = 0.f;
    int s = 0, kt = 0, p = 0;
    uint32_t par = phase;
    float ss = 0.f, sc[2] = {1.f, 1.f}; /* NORM: this thread's share of a row's sum; its output rows' scales */
    if (MODE >= 3) { /* ss_linear / ss_mlp_up: rows b0, b0 + 8's scales from linear_res_ss's sums (the waits are done) */
        const int b0 = warp * 16 + (lane >> 2);
        sc[0] = evt_llm_ss_scale<MODE>(a, bx + b0);
        sc[1] = evt_llm_ss_scale<MODE>(a, bx + b0 + 8);
    }
    for (int j = 0; j < J; j++) {
        evt_tma_wait(full0 + 8 * s, par >> s & 1u);
        if (NB == 0 && threadIdx.x == 0 && j < EVT_TMA_PROF_STAGES) EVT_TMA_STAMP(2 + 3 * j);
        const uint32_t xs = ring0 + (uint32_t)s * SLOT, ws = xs + (uint32_t)U * XREG;
        /* a box's chunk planes lie its rows apart; the operands read NT
           (64) rows from each plane's start, past the box into the next
           plane or the next region (stale rows: dropped columns and rows) */
        const uint32_t xp = (uint32_t)xrows * 128u, wp = (uint32_t)evt_tma_pass_rows8(R, p, NT) * 128u;
#ifdef EVT_TMA_STRAIGHT
        /* an experiment's form (session 53): the stage's wgmmas as
           straight-line code, one copy per U, the fence and the commit in
           each. Inlined into a kernel (tilebench -DTB_INLINE_GEMV), the loop
           over u made ptxas serialise mlp_up's wgmmas (C7520); in the
           megakernel, where the tiles are called, C7510 serialises them
           whatever the form (bench/RESULTS.md session 53). Its own copy of
           the loop's body: the loop form calling mma_u changed the batch-17-64
           kernel's machine code (bench/kernel_same.sh) */
        auto mma_u = [&](const int u) {
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                const uint64_t dx = evt_tma_desc(xs + (uint32_t)u * xp + 32u * kk);
                if constexpr (NB != 0) { /* the weights as A, x as B */
                    evt_tma_wgmma<NB>(acc[0], evt_tma_desc(ws + (uint32_t)u * wp + 32u * kk), dx);
                } else {
                    evt_tma_wgmma<NT>(acc[0], dx, evt_tma_desc(ws + (uint32_t)u * wp + 32u * kk));
                    if (NW == 2) evt_tma_wgmma<NT>(acc[NW - 1], dx, evt_tma_desc(ws + (uint32_t)U * WREG + (uint32_t)u * wp + 32u * kk));
                }
            }
        };
        if (U == 4) { evt_tma_wg_fence(); mma_u(0); mma_u(1); mma_u(2); mma_u(3); evt_tma_wg_commit(); }
        else if (U == 2) { evt_tma_wg_fence(); mma_u(0); mma_u(1); evt_tma_wg_commit(); }
        else { evt_tma_wg_fence(); mma_u(0); evt_tma_wg_commit(); }
#else
        evt_tma_wg_fence();
#ifndef EVT_TMA_ABLATE_MMA /* timing only: no products (the outputs are wrong) */
        for (int u = 0; u < U; u++) {
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                const uint64_t dx = evt_tma_desc(xs + (uint32_t)u * xp + 32u * kk);
                if constexpr (NB != 0) { /* the weights as A, x as B */
                    evt_tma_wgmma<NB>(acc[0], evt_tma_desc(ws + (uint32_t)u * wp + 32u * kk), dx);
                } else {
                    evt_tma_wgmma<NT>(acc[0], dx, evt_tma_desc(ws + (uint32_t)u * wp + 32u * kk));
                    if (NW == 2) evt_tma_wgmma<NT>(acc[NW - 1], dx, evt_tma_desc(ws + (uint32_t)U * WREG + (uint32_t)u * wp + 32u * kk));
                }
            }
        }
#endif
        evt_tma_wg_commit();
#endif
        if (NORM && p == 0) ss = evt_tma_ss_stage(xs, xp, U, xrows, ss, threadIdx.x); /* beside the wgmmas */
        evt_tma_wg_wait_all(); /* the slot's data is read: release it */
        __syncwarp();
        if constexpr (EVT_TMA_RELEASING_WARPS == 4) {
            if (lane == 0) evt_tma_arrive(empty0 + 8 * s);
        } else { /* the batch-65-128 kernel's barriers count both warpgroups' warps */
            if (lane == 0) evt_tma_arrive_n(empty0 + 8 * s, EVT_TMA_RELEASING_WARPS / 4);
        }
        if (NB == 0 && threadIdx.x == 0 && j < EVT_TMA_PROF_STAGES) EVT_TMA_STAMP(3 + 3 * j);
        if (++kt == KT) { /* the pass's rows are done */
            if (NORM && p == 0) { /* the rows' sums are complete: the scales of this thread's rows b0, b0 + 8 */
                evt_tma_ss[threadIdx.x] = ss;
                asm volatile("bar.sync 1, 128;" ::: "memory"); /* warpgroup 0 alone */
                const int b0 = warp * 16 + (lane >> 2);
                const float eps = evt_llm_norm_eps<NORM>(a);
                sc[0] = evt_llm_rms_scale(evt_tma_ss[b0] + evt_tma_ss[64 + b0], K, eps);
                sc[1] = evt_llm_rms_scale(evt_tma_ss[b0 + 8] + evt_tma_ss[64 + b0 + 8], K, eps);
            }
            const int64_t rw = n0 + (int64_t)p * NT;
            const int mine = (int)(n1 - rw < NT ? n1 - rw : NT);
#pragma unroll
            for (int i = 0; i < (NB ? NB / 2 : NT / 2); i++) {
                /* the fragment's row (a batch row; swapped, a weight row) and column */
                int b = warp * 16 + (lane >> 2) + 8 * ((i >> 1) & 1), c = (i >> 2) * 8 + (lane & 3) * 2 + (i & 1);
                if constexpr (NB != 0) {
                    if (b < mine && c < B) evt_llm_out<MODE>(a, c, rw + b, acc[0][i], acc[NW - 1][i]);
                } else if constexpr (MODE == EVT_LLM_MODE_PART) { /* the slice's partials: no division per output */
                    if (b < BH && c < mine) {
                        const int64_t N = a->t[1].dim[0];
                        ((float *)a->t[2].ptr)[((int64_t)(kc0 / KS) * B + bx + b) * N + rw + c] = acc[0][i];
                    }
                } else {
                    const float f = sc[(i >> 1) & 1];
                    if (b < BH && c < mine) evt_llm_out<MODE>(a, bx + b, rw + c, acc[0][i] * f, acc[NW - 1][i] * f);
                }
            }
#pragma unroll
            for (int q = 0; q < NW; q++)
#pragma unroll
                for (int i = 0; i < (NB ? NB / 2 : NT / 2); i++) acc[q][i] = 0.f;
            kt = 0;
            p++;
        }
        if (++s == S) {
            s = 0;
            par = ~par;
        }
    }
    /* the next task's phases: slots used an odd number of times flip (written
       here, after every thread of the task has read evt_tma_phase: the
       producer before its first issue, the consumers before the warpgroup's
       first wgmma) */
    if (NB == 0 && threadIdx.x == 0) EVT_TMA_STAMP(EVT_TMA_PROF_SLOTS - 1);
    if (threadIdx.x == 0) {
        uint32_t flip = 0;
        for (int u = 0; u < S; u++) flip |= (uint32_t)(((J - 1 - u) / S + 1) & 1) << u;
        evt_tma_phase = phase ^ flip;
    }
}
#ifdef EVT_TMA_TWO_HALVES
/* The batch-65-128 kernel's form (EVT_TMA_TWO_HALVES): x's rows [0, 64) and
   [64, B) as two boxes of each stage, warpgroup g multiplying box g against
   the stage's weights, so the band is streamed once (session 40's form ran
   the task once per half and streamed it twice: 16.7-17.3% slower per token
   at qwen3-8b batch 72-128, bench/RESULTS.md session 41). A slot holds x's
   two boxes (8 KiB a chunk each), then each matrix's rows. Lane 0 of warp 4
   issues the first S stages as the form above does, then, multiplying too,
   refills a slot between its own stages once both warpgroups released it.
   A separate function so that the batch-17-64 kernel keeps its machine code
   (the lesson of sessions 33, 37 and 40: code moves cost 1-4%); the end of
   a pass repeats the form above's lines for the same reason (a helper
   shared by both changed that kernel's machine code, readelf, session 41). */
/* EVT_TMA_WIDE_ABLATE (timing only: rows 64 and up come out wrong): 1,
   warpgroup 1 loads its box but does not multiply; 2, no second box either
   (what the band costs without the second half) */
#ifndef EVT_TMA_WIDE_ABLATE
#define EVT_TMA_WIDE_ABLATE 0
#endif
__device__ __forceinline__ int evt_tma_x_rows(int rows) { return rows <= 8 ? 8 : rows <= 16 ? 16 : rows <= 32 ? 32 : 64; }
template <int MODE, int NT, bool EARLY, bool NORM>
__device__ __forceinline__ void evt_tma_gemv_wide(const evt_task_args *a, const evt_tma_io &io, int64_t n0, int64_t n1)
{
    constexpr int NW = evt_llm_nw<MODE>();
    constexpr uint32_t WREG = NT * 128u, XREG = 2u * 8192u; /* reserved per chunk: a matrix's rows, x's two boxes */
    if (threadIdx.x == 0) EVT_TMA_STAMP(0);
    const int B = (int)a->t[0].dim[0], K = (int)a->t[0].dim[1];
    /* linear_part: the task's k slice, chunks [kc0, kc0 + KS) (as above) */
    const int KPS = MODE == EVT_LLM_MODE_PART ? (int)a->t[2].dim[0] : 1, KS = K / 64 / KPS;
    const int kc0 = MODE == EVT_LLM_MODE_PART ? (int)(a->coord[0] / (a->grid[0] / KPS)) * KS : 0;
    int di = EVT_TMA_DEPTHS - 1; /* chunks per stage, as above */
    while (di > 0 && (KS % (1 << di) || io.ring_bytes < 2u * (1u << di) * (XREG + NW * WREG))) di--;
    const int U = 1 << di;
    const uint32_t SLOT = (uint32_t)U * (XREG + NW * WREG);
    const int KT = KS / U, R = (int)(n1 - n0), J = (R + NT - 1) / NT * KT; /* stages: per pass, in all */
    int S = (int)(io.ring_bytes / SLOT);
    if (S > EVT_TMA_MAX_STAGES) S = EVT_TMA_MAX_STAGES;
    if (S > J) S = J;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wg = warp >> 2, wl = warp & 3; /* warpgroup, warp in it */
    const uint32_t full0 = evt_tma_saddr(evt_tma_bar), empty0 = full0 + 8 * EVT_TMA_MAX_STAGES, ring0 = evt_tma_saddr(io.ring);
    const uint32_t phase = evt_tma_phase; /* written by the previous task before the dispatch's barrier */
    /* the boxes' heights (rows past B read as zeros; no second box at B <= 64) */
    const int xrows0 = evt_tma_x_rows(B < 64 ? B : 64), xrows1 = B > 64 && EVT_TMA_WIDE_ABLATE < 2 ? evt_tma_x_rows(B - 64) : 0;
    const evt_tmap *mx0 = io.mx + di * EVT_TMA_HEIGHTS + (xrows0 / 8 - 1), *mx1 = io.mx + di * EVT_TMA_HEIGHTS + (xrows1 / 8 - 1);
    const uint32_t xbytes = (uint32_t)(U * (xrows0 + xrows1)) * 128u;
    const bool early = EARLY && a->wait_in_tile;
    /* stage j's boxes into its slot: the weights (with x's bytes expected
       too, or not: the first stages of an early task), then x */
    auto weights = [&](int j, bool with_x) {
        const int s = j % S, p = j / KT, rows8 = evt_tma_pass_rows8(R, p, NT), m = di * EVT_TMA_HEIGHTS + rows8 / 8 - 1;
        const uint32_t dst = ring0 + (uint32_t)s * SLOT + (uint32_t)U * XREG, bar = full0 + 8 * s, wbytes = (uint32_t)(U * NW * rows8) * 128u;
        if (with_x) evt_tma_arrive_expect(bar, wbytes + xbytes);
        else evt_tma_expect(bar, wbytes);
        evt_tma_load3(dst, io.mw0 + m, (int)n0 + p * NT, kc0 + j % KT * U, bar);
        if (NW == 2) evt_tma_load3(dst + (uint32_t)U * WREG, io.mw1 + m, (int)n0 + p * NT, kc0 + j % KT * U, bar);
    };
    auto xs = [&](int j) {
        const uint32_t dst = ring0 + (uint32_t)(j % S) * SLOT, bar = full0 + 8 * (j % S);
        evt_tma_load3(dst, mx0, 0, kc0 + j % KT * U, bar);
        if (xrows1) evt_tma_load3(dst + (uint32_t)U * 8192u, mx1, 64, kc0 + j % KT * U, bar);
    };

    if (warp == EVT_TMA_PRODUCER_WARP && lane == 0) {
        /* the first S stages: the weights at once (before the task's waits
           when they run in the tile), x once they are done (x came through
           the waits: a proxy fence orders them before the async reads) */
        if (!early) asm volatile("fence.proxy.async.global;" ::: "memory");
        for (int j = 0; j < S; j++) weights(j, !early);
        if (early && evt_tile_wait(a)) { /* aborting: let the weight boxes land before leaving */
            for (int j = 0; j < S; j++) evt_tma_arrive(full0 + 8 * j);
            for (int j = 0; j < S; j++) evt_tma_wait(full0 + 8 * j, (phase >> j) & 1u);
            return;
        }
        if (early) asm volatile("fence.proxy.async.global;" ::: "memory");
        for (int j = 0; j < S; j++) {
            if (early) evt_tma_arrive_expect(full0 + 8 * j, xbytes);
            xs(j);
            if (j < EVT_TMA_PROF_STAGES) EVT_TMA_STAMP(1 + 3 * j);
        }
    } else if (early && evt_tile_wait(a)) {
        return;
    }

    /* warpgroup wg: D (64 batch rows of box wg x NT weight rows per matrix) += x W^T */
    const int xr = wg ? xrows1 : xrows0, BH = wg ? B - 64 : (B < 64 ? B : 64); /* its box's height, its batch rows */
    float acc[NW][NT / 2];
#pragma unroll
    for (int q = 0; q < NW; q++)
#pragma unroll
        for (int i = 0; i < NT / 2; i++) acc[q][i] = 0.f;
    int s = 0, kt = 0, p = 0;
    uint32_t par = phase;
    float ss = 0.f, sc[2] = {1.f, 1.f}; /* NORM: this thread's share of a row's sum; its output rows' scales */
    if (MODE >= 3) { /* (as the form above) */
        const int b0 = wg * 64 + wl * 16 + (lane >> 2);
        sc[0] = evt_llm_ss_scale<MODE>(a, b0);
        sc[1] = evt_llm_ss_scale<MODE>(a, b0 + 8);
    }
    for (int j = 0; j < J; j++) {
        evt_tma_wait(full0 + 8 * s, par >> s & 1u);
        if (threadIdx.x == 0 && j < EVT_TMA_PROF_STAGES) EVT_TMA_STAMP(2 + 3 * j);
        const uint32_t xs0 = ring0 + (uint32_t)s * SLOT + (uint32_t)(wg * U) * 8192u, ws = ring0 + (uint32_t)s * SLOT + (uint32_t)U * XREG;
        const uint32_t xp = (uint32_t)xr * 128u, wp = (uint32_t)evt_tma_pass_rows8(R, p, NT) * 128u;
        if (xr && !(EVT_TMA_WIDE_ABLATE == 1 && wg)) { /* (warpgroup 1 at batch <= 64 only releases) */
            evt_tma_wg_fence();
            for (int u = 0; u < U; u++) {
#pragma unroll
                for (int kk = 0; kk < 4; kk++) {
                    const uint64_t dx = evt_tma_desc(xs0 + (uint32_t)u * xp + 32u * kk);
                    evt_tma_wgmma<NT>(acc[0], dx, evt_tma_desc(ws + (uint32_t)u * wp + 32u * kk));
                    if (NW == 2) evt_tma_wgmma<NT>(acc[NW - 1], dx, evt_tma_desc(ws + (uint32_t)U * WREG + (uint32_t)u * wp + 32u * kk));
                }
            }
            evt_tma_wg_commit();
            if (NORM && p == 0) ss = evt_tma_ss_stage(xs0, xp, U, xr, ss, threadIdx.x & 127); /* beside the wgmmas */
            evt_tma_wg_wait_all(); /* the slot's data is read: release it */
        }
        __syncwarp();
        if (lane == 0) evt_tma_arrive(empty0 + 8 * s);
        if (threadIdx.x == 0 && j < EVT_TMA_PROF_STAGES) EVT_TMA_STAMP(3 + 3 * j);
        if (warp == EVT_TMA_PRODUCER_WARP) { /* refill the slot with stage j + S once both warpgroups released it */
            if (lane == 0 && j + S < J) {
                evt_tma_wait(empty0 + 8 * s, ((phase >> s) ^ (uint32_t)(j / S)) & 1u);
                weights(j + S, true);
                xs(j + S);
                if (j + S < EVT_TMA_PROF_STAGES) EVT_TMA_STAMP(1 + 3 * (j + S));
            }
            __syncwarp();
        }
        if (++kt == KT) { /* the pass's rows are done */
            if (NORM && p == 0) { /* the rows' sums are complete: the scales of this thread's rows b0, b0 + 8 */
                float *sw = evt_tma_ss + wg * 128;
                sw[threadIdx.x & 127] = ss;
                if (wg == 0) asm volatile("bar.sync 1, 128;" ::: "memory"); /* the warpgroup alone */
                else asm volatile("bar.sync 2, 128;" ::: "memory");
                const int b0 = wl * 16 + (lane >> 2);
                const float eps = evt_llm_norm_eps<NORM>(a);
                sc[0] = evt_llm_rms_scale(sw[b0] + sw[64 + b0], K, eps);
                sc[1] = evt_llm_rms_scale(sw[b0 + 8] + sw[64 + b0 + 8], K, eps);
            }
            const int64_t rw = n0 + (int64_t)p * NT;
            const int mine = (int)(n1 - rw < NT ? n1 - rw : NT);
#pragma unroll
            for (int i = 0; i < NT / 2; i++) {
                int b = wl * 16 + (lane >> 2) + 8 * ((i >> 1) & 1), c = (i >> 2) * 8 + (lane & 3) * 2 + (i & 1);
                if constexpr (MODE == EVT_LLM_MODE_PART) { /* the slice's partials (as above) */
                    if (b < BH && c < mine) {
                        const int64_t N = a->t[1].dim[0];
                        ((float *)a->t[2].ptr)[((int64_t)(kc0 / KS) * B + wg * 64 + b) * N + rw + c] = acc[0][i];
                    }
                } else {
                    const float f = sc[(i >> 1) & 1];
                    if (b < BH && c < mine) evt_llm_out<MODE>(a, wg * 64 + b, rw + c, acc[0][i] * f, acc[NW - 1][i] * f);
                }
            }
#pragma unroll
            for (int q = 0; q < NW; q++)
#pragma unroll
                for (int i = 0; i < NT / 2; i++) acc[q][i] = 0.f;
            kt = 0;
            p++;
        }
        if (++s == S) {
            s = 0;
            par = ~par;
        }
    }
    /* the releases of the last S stages have their waiter too (as the
       producer's tail above: synccheck reports unwaited phases) */
    if (warp == EVT_TMA_PRODUCER_WARP && lane == 0)
        for (int j = J - S; j < J; j++) evt_tma_wait(empty0 + 8 * (j % S), ((phase >> (j % S)) ^ (uint32_t)(j / S)) & 1u);
    /* the next task's phases (as above) */
    if (threadIdx.x == 0) {
        uint32_t flip = 0;
        for (int u = 0; u < S; u++) flip |= (uint32_t)(((J - 1 - u) / S + 1) & 1) << u;
        evt_tma_phase = phase ^ flip;
        EVT_TMA_STAMP(EVT_TMA_PROF_SLOTS - 1);
    }
}
#endif

/* Runs the task on this path when its shapes, maps and ring allow (see the
 * header); false: nothing was done, the caller runs the register units.
 * (A launch aborting in the task's waits needs no report: the dispatch
 * stops after the tile either way.) */
template <int MODE, bool EARLY, bool NORM>
__device__ __forceinline__ bool evt_llm_gemv_tma(const evt_task_args *a, int64_t n0, int64_t n1)
{
#ifdef EVT_LLM_NO_TMA
    return false; /* compiled out (evt_compile_opts.cuda_defines): the register units run */
#endif
    constexpr int NW = evt_llm_nw<MODE>();
    const int64_t B = a->t[0].dim[0], K = a->t[0].dim[1];
    if (!a->tmaps || B < EVT_TMA_MIN_B || B > EVT_TMA_MAX_B) return false; /* the common case first: no division */
    const int64_t T = a->iarg[0] < 1 ? 1 : a->iarg[0]; /* linear_part: no T (its bands are the task's rows) */
    const int64_t nr = MODE == EVT_LLM_MODE_PART ? n1 - n0 : (a->t[1].dim[0] + T - 1) / T; /* the call's rows per task */
    if constexpr (MODE == EVT_LLM_MODE_PART) { /* k slices: whole stages (every form's stage divides a slice's chunks) */
        const int64_t KP = a->t[2].dim[0];
        if (KP < 1 || (K / 64) % KP) return false;
    }
    /* (linear_part takes any band: its slices exist to read less of x, which the register units cannot) */
    if (nr * NW < (MODE == EVT_LLM_MODE_PART ? 1 : B >= EVT_TMA_WIDE_MIN_B ? EVT_TMA_MIN_ROWS_WIDE : EVT_TMA_MIN_ROWS) || (K & 63) ||
        K > (1 << 30) || n1 > (1 << 30) ||
        evt_tile_threads() != 256)
        return false;
    if (a->t[0].tmap < 0 || a->t[1].tmap < 0 || (NW == 2 && a->t[2].tmap < 0)) return false;
    unsigned char *ring = evt_dyn_smem + a->tma_ring_off;
    if (evt_tma_saddr(ring) & 1023u) return false;
    const evt_tmap *maps = (const evt_tmap *)a->tmaps;
    const evt_tma_io io = {maps + EVT_TMA_BOXES * a->t[0].tmap, maps + EVT_TMA_BOXES * a->t[1].tmap, maps + EVT_TMA_BOXES * a->t[NW].tmap,
                           ring, a->tma_ring_bytes};
    const int64_t rows = (n1 - n0 + 7) / 8 * 8;
#ifdef EVT_TMA_TWO_HALVES
    /* one matrix, passes of at most EVT_TMA_SWAP_MAX_NT rows, batch 65 to
       EVT_TMA_SWAP_MAX_B: the swapped product (evt_tma_gemv's NB, with its 8
       KiB spare); else both warpgroups on a box of x each */
#define EVT_TMA_RUN(NT)                                                                             \
    if constexpr (!NORM && MODE <= 2 && NW == 1 && NT <= EVT_TMA_SWAP_MAX_NT) {                     \
        if (B > 64 && B <= EVT_TMA_SWAP_MAX_B && a->tma_ring_bytes >= 2 * (EVT_TMA_SWAP_MAX_B * 128u + NT * 128u) + 8192u) { \
            evt_tma_io spared = io;                                                                 \
            spared.ring_bytes -= 8192u;                                                             \
            evt_tma_gemv<MODE, NT, EARLY, NORM, EVT_TMA_SWAP_MAX_B>(a, spared, n0, n1, 0);          \
            return true;                                                                            \
        }                                                                                           \
    }                                                                                               \
    evt_tma_gemv_wide<MODE, NT, EARLY, NORM>(a, io, n0, n1);
#else
#define EVT_TMA_RUN(NT) evt_tma_gemv<MODE, NT, EARLY, NORM>(a, io, n0, n1, 0);
#endif
#define EVT_TMA_TRY(NT)                                                                             \
    if (rows <= NT || NT == (NW == 2 ? 96 : 128)) {                                                 \
        if (a->tma_ring_bytes < 2 * (8192u * EVT_TMA_X_BOXES + NW * NT * 128u)) return false;        \
        EVT_TMA_RUN(NT)                                                                             \
        return true;                                                                                \
    }
    EVT_TMA_TRY(16)
    EVT_TMA_TRY(32)
    EVT_TMA_TRY(48)
    EVT_TMA_TRY(64)
    EVT_TMA_TRY(96)
    if constexpr (NW == 1) {
        EVT_TMA_TRY(128)
    }
#undef EVT_TMA_TRY
#undef EVT_TMA_RUN
    return false;
}

#endif
