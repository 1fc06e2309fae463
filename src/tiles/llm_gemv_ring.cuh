/* llm_gemv_ring.cuh — the linear family for 16 < B <= 64 batch rows
 * (CUDA; the C versions are in llm.c): weights and x copied into a ring of
 * shared-memory stages by 16-byte asynchronous copies (cp.async.cg, L2 only)
 * from every thread, then read by ldmatrix into mma.sync m16n8k16 (bf16 ->
 * f32). Included by llm_gemv.cuh, whose evt_llm_gemv_rows picks it.
 *
 * Why: the register units of llm_gemv.cuh keep every load in flight in
 * registers, and at 32-64 batch rows x takes two thirds of them, so a warp
 * holds one 32-wide k chunk of weights in flight and every warp reads all of
 * x again (session 20's profile: DRAM at 34-41% of peak, one block of eight
 * warps issuing slowly; bench/RESULTS.md). Here the bytes in flight are
 * shared memory, not registers: the ring holds EVT_LLM_RING_BYTES / stage
 * bytes stages of EVT_LLM_RING_KC k each (the task's weight rows and every
 * batch row of x), all but one in flight while the block computes on the
 * oldest; x is read from L2 once per task, not once per warp.
 *
 * A stage is rows of EVT_LLM_RING_PITCH bytes: NW x Rp weight rows (Rp: the
 * task's rows rounded up to 16), then 64 x rows. The 16 bytes past each
 * row's 64 keep ldmatrix's eight rows on distinct banks. Rows past the task's
 * or past B hold stale bytes: they feed only outputs that are not written.
 * One block barrier per stage (the classic multistage loop: a thread waits
 * for its own copies of the stage, the barrier makes everyone's visible and
 * frees the slot read one stage before, then the next stage's copies go
 * into it).
 *
 * Warps: row tile rt (16 rows) x a group of NTW of the 8 batch tiles (8
 * rows each); a warp holds NW x NTW accumulator fragments for the whole K
 * and writes its outputs itself (no K split, no partial sums). Tasks with
 * more than EVT_LLM_RING_ROWS rows (the LM head) run the pipeline once per
 * block of that many rows.
 *
 * The early form (EARLY): the first stages' weight copies are issued before
 * evt_tile_wait (weights are never written in a launch), x's after it. */
#ifndef EVT_TILE_LLM_GEMV_RING_CUH
#define EVT_TILE_LLM_GEMV_RING_CUH

#ifndef EVT_LLM_RING_BYTES
#define EVT_LLM_RING_BYTES (96 * 1024) /* dynamic shared memory for the ring (every worker block reserves it) */
#endif
#define EVT_LLM_RING_KC 32                              /* k per stage */
#define EVT_LLM_RING_PITCH (2 * EVT_LLM_RING_KC + 16)   /* bytes per stage row */
#define EVT_LLM_RING_ROWS 128                           /* weight rows per pipeline pass: 8 row tiles */
#define EVT_LLM_RING_XROWS 64                           /* x rows per stage: every batch row */
#define EVT_LLM_RING_MAXST 8                            /* stages used at most */
static_assert(EVT_LLM_RING_BYTES >= 2 * (2 * EVT_LLM_RING_ROWS + EVT_LLM_RING_XROWS) * EVT_LLM_RING_PITCH,
              "the ring holds two stages of the largest unit (mlp_up, 128 rows)");
/* every worker block gets the ring as its dynamic shared memory (emit_cuda.c) */
#ifndef EVT_TILES_DYN_SMEM
#define EVT_TILES_DYN_SMEM EVT_LLM_RING_BYTES
#endif

extern __shared__ __align__(1024) unsigned char evt_dyn_smem[];

__device__ __forceinline__ void evt_llm_cp16(uint32_t dst, const void *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void evt_llm_cp_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
/* waits until at most n of this thread's copy groups are pending (n < EVT_LLM_RING_MAXST) */
__device__ __forceinline__ void evt_llm_cp_wait(int n)
{
    switch (n) {
    case 0: asm volatile("cp.async.wait_group 0;" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 6;" ::: "memory"); break;
    }
}
__device__ __forceinline__ void evt_llm_ldsm4(uint32_t addr, uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ void evt_llm_ldsm2(uint32_t addr, uint32_t &r0, uint32_t &r1)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r0), "=r"(r1) : "r"(addr));
}

/* The copies of one stage a thread issues: at most CPT 16-byte pieces, the
 * same pieces of every stage (k advances by EVT_LLM_RING_KC). */
template <int CPT>
struct evt_llm_ring_copies {
    const evt_bf16 *src[CPT]; /* null: none */
    uint32_t dst[CPT];        /* offset in the stage */
};

/* Rows [n0, n1) (n1 - n0 <= EVT_LLM_RING_ROWS) x batch rows [0, B), B <= 64.
 * W1: mlp_up's up weights (NW = 2). EARLY: evt_tile_wait is called once,
 * after the first stages' weight copies; it returns true when the task is
 * skipped (the launch stopped). */
template <int MODE, int NTW, bool EARLY>
__device__ __forceinline__ bool evt_llm_ring_pass(const evt_task_args *a, const evt_bf16 *W0, const evt_bf16 *W1, int64_t n0,
                                                  int64_t n1, bool wait)
{
    constexpr int NW = MODE == 2 ? 2 : 1;
    constexpr int CPT = ((NW * EVT_LLM_RING_ROWS + EVT_LLM_RING_XROWS) * (EVT_LLM_RING_KC / 8) + 255) / 256;
    const evt_bf16 *x = (const evt_bf16 *)a->t[0].ptr;
    const int B = (int)a->t[0].dim[0], K = (int)a->t[0].dim[1], R = (int)(n1 - n0), Rp = (R + 15) & ~15;
    const int T = evt_tile_threads(), warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const uint32_t stage = (uint32_t)(NW * Rp + EVT_LLM_RING_XROWS) * EVT_LLM_RING_PITCH;
    int NS = (int)(EVT_LLM_RING_BYTES / stage);
    if (NS > EVT_LLM_RING_MAXST) NS = EVT_LLM_RING_MAXST;
    const int nst = K / EVT_LLM_RING_KC;
    const uint32_t ring = (uint32_t)__cvta_generic_to_shared(evt_dyn_smem);

    /* this thread's pieces: piece c of a stage is row c / 4 (weight rows of
       W0, of W1, then x rows), 16-byte part c % 4 */
    evt_llm_ring_copies<CPT> cp;
    const int wpieces = NW * R * (EVT_LLM_RING_KC / 8), npieces = wpieces + B * (EVT_LLM_RING_KC / 8);
#pragma unroll
    for (int i = 0; i < CPT; i++) {
        int c = (int)threadIdx.x + i * T;
        cp.src[i] = nullptr;
        cp.dst[i] = 0;
        if (c >= npieces) continue;
        int row = c / (EVT_LLM_RING_KC / 8), part = c % (EVT_LLM_RING_KC / 8);
        if (c < wpieces) {
            int q = row / R, r = row % R;
            cp.src[i] = (q ? W1 : W0) + (n0 + r) * (int64_t)K + part * 8;
            cp.dst[i] = (uint32_t)(q * Rp + r) * EVT_LLM_RING_PITCH + part * 16;
        } else {
            int b = row - NW * R;
            cp.src[i] = x + (int64_t)b * K + part * 8;
            cp.dst[i] = (uint32_t)(NW * Rp + b) * EVT_LLM_RING_PITCH + part * 16;
        }
    }
    /* stage s's copies (weights, x or both) into slot s % NS */
    auto issue = [&](int s, bool wts, bool xs) {
        if (s < nst) {
            uint32_t base = ring + (uint32_t)(s % NS) * stage;
            int64_t k = (int64_t)s * EVT_LLM_RING_KC;
#pragma unroll
            for (int i = 0; i < CPT; i++) {
                bool isw = (int)threadIdx.x + i * T < wpieces;
                if (cp.src[i] && (isw ? wts : xs)) evt_llm_cp16(base + cp.dst[i], cp.src[i] + k);
            }
        }
        evt_llm_cp_commit(); /* empty groups keep the count uniform */
    };
    /* the slot was read through the generic proxy before: nothing to fence
       for cp.async (generic proxy); the barrier below orders the reads */
    for (int s = 0; s < NS - 1; s++) issue(s, true, !EARLY);
    if (EARLY && wait) {
        if (evt_tile_wait(a)) {
            asm volatile("cp.async.wait_all;" ::: "memory");
            return true;
        }
    }
    if (EARLY)
        for (int s = 0; s < NS - 1; s++) issue(s, false, true);

    /* the warp's unit */
    const int nrt = Rp / 16, ng = 8 / NTW, rt = warp / ng, grp = warp % ng;
    const bool active = rt < nrt && warp < T / 32;
    float acc[NW][NTW][4] = {};
    /* ldmatrix row addresses within a slot: A (weights) rows rt*16 + (lane & 15),
       k (lane >> 4) * 8; B (x) rows of batch tile pair p: (grp * NTW + 2p) * 8 + (lane & 7)
       + ((lane >> 4) << 3), k ((lane >> 3) & 1) * 8 */
    const uint32_t aoff = (uint32_t)(rt * 16 + (lane & 15)) * EVT_LLM_RING_PITCH + (uint32_t)(lane >> 4) * 16;
    const uint32_t boff = (uint32_t)(NW * Rp + grp * NTW * 8 + (lane & 7) + (NTW > 1 ? ((lane >> 4) << 3) : 0)) * EVT_LLM_RING_PITCH +
                          (uint32_t)((lane >> 3) & 1) * 16;
    for (int s = 0; s < nst; s++) {
        evt_llm_cp_wait(NS - 2);
        evt_tile_sync(); /* stage s is everyone's; slot (s - 1) % NS is free */
        issue(s + NS - 1, true, true);
        if (!active) continue;
        const uint32_t base = ring + (uint32_t)(s % NS) * stage;
#pragma unroll
        for (int kk = 0; kk < EVT_LLM_RING_KC / 16; kk++) {
            uint32_t af[NW][4];
#pragma unroll
            for (int q = 0; q < NW; q++)
                evt_llm_ldsm4(base + aoff + (uint32_t)(q * Rp) * EVT_LLM_RING_PITCH + kk * 32, af[q][0], af[q][1], af[q][2], af[q][3]);
#pragma unroll
            for (int p = 0; p < (NTW + 1) / 2; p++) {
                uint32_t b0, b1, b2 = 0, b3 = 0;
                if constexpr (NTW > 1) evt_llm_ldsm4(base + boff + (uint32_t)(p * 16) * EVT_LLM_RING_PITCH + kk * 32, b0, b1, b2, b3);
                else evt_llm_ldsm2(base + boff + kk * 32, b0, b1);
#pragma unroll
                for (int q = 0; q < NW; q++) {
                    evt_llm_mma(acc[q][2 * p], af[q][0], af[q][1], af[q][2], af[q][3], b0, b1);
                    if constexpr (NTW > 1) evt_llm_mma(acc[q][2 * p + 1], af[q][0], af[q][1], af[q][2], af[q][3], b2, b3);
                }
            }
        }
    }
    asm volatile("cp.async.wait_all;" ::: "memory"); /* the trailing empty groups */
    if (active) {
#pragma unroll
        for (int j = 0; j < NTW; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int r = rt * 16 + g + (e >> 1) * 8, b = (grp * NTW + j) * 8 + 2 * t + (e & 1);
                if (r < R && b < B) evt_llm_out<MODE>(a, b, n0 + r, acc[0][j][e], acc[NW - 1][j][e]);
            }
    }
    evt_tile_sync(); /* the ring is free for the next pass or task */
    return false;
}

/* Rows [n0, n1) of the task through the ring, EVT_LLM_RING_ROWS at a time.
 * Warps per batch-tile group: as many of the 8 warps as the row tiles leave
 * (NTW batch tiles each). */
template <int MODE, bool EARLY>
__device__ __forceinline__ void evt_llm_gemv_ring(const evt_task_args *a, const evt_bf16 *W0, const evt_bf16 *W1, int64_t n0, int64_t n1)
{
    bool wait = EARLY;
    for (int64_t r0 = n0; r0 < n1; r0 += EVT_LLM_RING_ROWS) {
        int64_t r1 = r0 + EVT_LLM_RING_ROWS < n1 ? r0 + EVT_LLM_RING_ROWS : n1;
        int nrt = (int)((r1 - r0 + 15) / 16);
        bool skip;
        if (nrt == 1) skip = evt_llm_ring_pass<MODE, 1, EARLY>(a, W0, W1, r0, r1, wait);
        else if (nrt == 2) skip = evt_llm_ring_pass<MODE, 2, EARLY>(a, W0, W1, r0, r1, wait);
        else if (nrt <= 4) skip = evt_llm_ring_pass<MODE, 4, EARLY>(a, W0, W1, r0, r1, wait);
        else skip = evt_llm_ring_pass<MODE, 8, EARLY>(a, W0, W1, r0, r1, wait);
        if (skip) return;
        wait = false;
    }
}

#endif
