/* llm_gemv_staged.cuh — the decode GEMV for batches above 16 (linear,
 * linear_res, mlp_up; CUDA, the C versions are in llm.c): weights and x
 * staged through shared memory by cp.async, several k stages in flight.
 *
 * Why: at B = 64 the register-fed units (llm_gemv.cuh) kept one 32-wide k
 * step of loads in flight per warp (more made the megakernel's tiles
 * spill) and reloaded x fragments through L1 for every row tile: qwen3-8b's
 * mlp_up ran at 38% of DRAM peak with 58% of its stalls on L1TEX loads
 * (Nsight Compute, bench/RESULTS.md session 7). Here the bytes in flight
 * live in shared memory, not registers, and x is read from L2 once per task.
 *
 * Method. The task's rows [n0, n1) are cut into row groups (at most
 * EVT_LLM_UMAX * warps / halves row tiles of 16, and a stage that fits three
 * times in EVT_LLM_GEMV_SMEM); the batch into passes of 64 rows (B > 64:
 * the weights stream again per pass). For each group and pass the block runs
 * a ring of ns stages of EVT_LLM_KC (64) k each: stage s holds, for every
 * weight row of the group and every x row of the pass, one 128-byte line
 * (k in [64 s, 64 s + 64)). Every thread copies its share with 16-byte
 * cp.async.cg (L2 only: x is written earlier in the launch), ns - 1 stages
 * ahead; one block barrier per stage tells the stage landed and the buffer
 * it overwrites was consumed. Each warp owns up to EVT_LLM_UMAX units of 16
 * weight rows x 32 batch rows (accumulators for the whole K in registers)
 * and computes them from shared memory with the mma of llm_gemv.cuh: the
 * same permuted k (lane (g, t) reads 16 contiguous bytes of rows g and
 * g + 8 and of x row g at k 8 t of each 32-wide step), the same order of
 * accumulation, so the results equal the register units' bit for bit when
 * those did not split K. The 16-byte chunk c of row r sits at c ^ 4 (r & 1):
 * the 8 lanes of a shared-memory phase read rows 2q and 2q + 1, whose
 * chunks then fall in different halves of the 128-byte bank line.
 *
 * Needs K % 64 == 0 and EVT_LLM_GEMV_SMEM bytes of dynamic shared memory
 * (the header asks for it through EVT_TILES_DYN_SMEM; checked at run time
 * with %dynamic_smem_size): otherwise evt_llm_gemv takes the register units.
 * Rows and batch columns past the end are not copied: their stale shared
 * memory only reaches accumulator rows and columns that are not stored. */
#ifndef EVT_TILE_LLM_GEMV_STAGED_CUH
#define EVT_TILE_LLM_GEMV_STAGED_CUH

/* EVT_LLM_GEMV_SMEM (llm.cuh): the ring's bytes of dynamic shared memory */
#ifndef EVT_LLM_KC
#define EVT_LLM_KC 64         /* k per stage: one 128-byte line per row */
#endif
#define EVT_LLM_KC_CH (EVT_LLM_KC / 8) /* 16-byte chunks per row per stage */
#ifndef EVT_LLM_ROTATE
#define EVT_LLM_ROTATE 1      /* task nb starts its k loop at stage 7 nb (mod stages) */
#endif
#ifndef EVT_LLM_CP_HINT
#define EVT_LLM_CP_HINT 1
#endif
#define EVT_LLM_MAX_STAGES 6  /* ring slots at most (cp.async.wait_group takes 0 .. 4 below) */
#ifndef EVT_LLM_UMAX
#define EVT_LLM_UMAX 2 /* units of 16 x 32 per warp per row group */
#endif
#ifndef EVT_LLM_STAGED_MIN_B
#define EVT_LLM_STAGED_MIN_B 17 /* smallest batch that takes this path */
#endif

extern __shared__ __align__(1024) unsigned char evt_dyn_smem[];

__device__ __forceinline__ void evt_llm_cp16(uint32_t dst, const void *src)
{
#if EVT_LLM_CP_HINT
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
#else
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
#endif
}
__device__ __forceinline__ void evt_llm_cp_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
/* until at most n of this thread's copy groups are still in flight */
__device__ __forceinline__ void evt_llm_cp_wait(int n)
{
    switch (n) {
    case 0: asm volatile("cp.async.wait_group 0;" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 4;" ::: "memory"); break;
    }
}
__device__ __forceinline__ unsigned evt_llm_dyn_smem_size(void)
{
    unsigned r;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
    return r;
}

/* Whether the staged path runs this task (all threads agree). */
template <int MODE, bool NORM>
__device__ __forceinline__ bool evt_llm_staged_ok(int64_t B, int64_t K)
{
#if EVT_STREAM
    return false; /* the ring's shared memory is the stream's */
#else
    return !NORM && B >= EVT_LLM_STAGED_MIN_B && K % EVT_LLM_KC == 0 && K <= 0x7fffffff &&
           evt_llm_dyn_smem_size() >= EVT_LLM_GEMV_SMEM;
#endif
}

template <int MODE>
__device__ __noinline__ void evt_llm_gemv_staged(const evt_task_args *a, int64_t n0, int64_t n1)
{
    constexpr int NW = MODE == 2 ? 2 : 1;
    const evt_bf16 *x = (const evt_bf16 *)a->t[0].ptr, *W0 = (const evt_bf16 *)a->t[1].ptr;
    const evt_bf16 *W1 = MODE == 2 ? (const evt_bf16 *)a->t[2].ptr : W0;
    const int64_t B = a->t[0].dim[0], K = a->t[0].dim[1];
    const int nt = evt_tile_threads(), tid = threadIdx.x, warp = tid >> 5, nwarps = nt >> 5;
    const int lane = tid & 31, g = lane >> 2, t = lane & 3, sw = (g & 1) << 2;
    const int nst = (int)(K / EVT_LLM_KC), nrt = (int)((n1 - n0 + 15) / 16);
    const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(evt_dyn_smem);
    /* tasks start at different k stages: all SMs reading the same x lines
       at once would queue on the L2 slices that hold them */
    const int rot = EVT_LLM_ROTATE ? (int)a->coord[0] * 7 % nst : 0;
    for (int64_t pb = 0; pb < B; pb += 64) {
        const int BP = B - pb < 64 ? (int)(B - pb) : 64, nbh = (BP + 31) / 32, bpad = 32 * nbh;
        /* row tiles per group: units for every warp slot, three stages in the ring */
        int rtmax = EVT_LLM_UMAX * nwarps / nbh, rts = (EVT_LLM_GEMV_SMEM / 3 / (2 * EVT_LLM_KC) - bpad) / (16 * NW);
        if (rts < rtmax) rtmax = rts;
        if (rtmax < 1) rtmax = 1;
        const int ngrp = (nrt + rtmax - 1) / rtmax;
        for (int gi = 0; gi < ngrp; gi++) {
            const int rt0 = nrt * gi / ngrp, rt1 = nrt * (gi + 1) / ngrp, rpad = 16 * (rt1 - rt0);
            const int64_t r0 = n0 + 16 * rt0;
            const int grows = (int)((n1 < r0 + rpad ? n1 : r0 + rpad) - r0);
            const int sbytes = (NW * rpad + bpad) * 2 * EVT_LLM_KC, nunits = (rt1 - rt0) * nbh;
            int ns = EVT_LLM_GEMV_SMEM / sbytes;
            if (ns > EVT_LLM_MAX_STAGES) ns = EVT_LLM_MAX_STAGES;
            /* stage s into slot s % ns: row r's chunk c at line r, chunk c ^ 4 (r & 1) */
            auto issue = [&](int s) {
                const uint32_t buf = sbase + (uint32_t)((s % ns) * sbytes);
                const int64_t kof = (int64_t)((s + rot) % nst) * EVT_LLM_KC;
#pragma unroll
                for (int q = 0; q < NW; q++) {
                    const evt_bf16 *Wq = q ? W1 : W0;
                    for (int i = tid; i < grows * EVT_LLM_KC_CH; i += nt) {
                        int r = i / EVT_LLM_KC_CH, c = i % EVT_LLM_KC_CH;
                        evt_llm_cp16(buf + (uint32_t)(((q * rpad + r) * EVT_LLM_KC_CH + (c ^ ((r & 1) << 2))) * 16),
                                     Wq + (r0 + r) * K + kof + 8 * c);
                    }
                }
                for (int i = tid; i < BP * EVT_LLM_KC_CH; i += nt) {
                    int r = i / EVT_LLM_KC_CH, c = i % EVT_LLM_KC_CH;
                    evt_llm_cp16(buf + (uint32_t)(((NW * rpad + r) * EVT_LLM_KC_CH + (c ^ ((r & 1) << 2))) * 16),
                                 x + (pb + r) * K + kof + 8 * c);
                }
            };
            float acc[EVT_LLM_UMAX][NW][4][4] = {};
            evt_tile_sync(); /* the previous group's reads of the ring are done */
            for (int s = 0; s < ns - 1; s++) {
                if (s < nst) issue(s);
                evt_llm_cp_commit();
            }
            for (int s = 0; s < nst; s++) {
                evt_llm_cp_wait(ns - 2); /* this thread's copies of stage s landed */
                evt_tile_sync();         /* everyone's; slot (s - 1) % ns is free */
                if (s + ns - 1 < nst) issue(s + ns - 1);
                evt_llm_cp_commit();
                const unsigned char *buf = evt_dyn_smem + (s % ns) * sbytes;
#pragma unroll
                for (int ui = 0; ui < EVT_LLM_UMAX; ui++) {
                    const int u = warp + ui * nwarps;
                    if (u >= nunits) continue; /* warp-uniform */
                    const int rt = nbh == 2 ? u >> 1 : u, bh = nbh == 2 ? u & 1 : 0;
#pragma unroll
                    for (int kc = 0; kc < EVT_LLM_KC / 32; kc++) {
                        const int ch = (4 * kc + t) ^ sw;
                        uint4 w[NW][2], xv[4];
#pragma unroll
                        for (int q = 0; q < NW; q++)
#pragma unroll
                            for (int h = 0; h < 2; h++)
                                w[q][h] = *(const uint4 *)(buf + ((q * rpad + 16 * rt + 8 * h + g) * EVT_LLM_KC_CH + ch) * 16);
#pragma unroll
                        for (int j = 0; j < 4; j++)
                            xv[j] = *(const uint4 *)(buf + ((NW * rpad + 32 * bh + 8 * j + g) * EVT_LLM_KC_CH + ch) * 16);
#pragma unroll
                        for (int q = 0; q < NW; q++)
#pragma unroll
                            for (int j = 0; j < 4; j++) {
                                evt_llm_mma(acc[ui][q][j], w[q][0].x, w[q][1].x, w[q][0].y, w[q][1].y, xv[j].x, xv[j].y);
                                evt_llm_mma(acc[ui][q][j], w[q][0].z, w[q][1].z, w[q][0].w, w[q][1].w, xv[j].z, xv[j].w);
                            }
                    }
                }
            }
            evt_llm_cp_wait(0); /* only empty groups are left; keep none across tasks */
#pragma unroll
            for (int ui = 0; ui < EVT_LLM_UMAX; ui++) {
                const int u = warp + ui * nwarps;
                if (u >= nunits) continue;
                const int rt = nbh == 2 ? u >> 1 : u, bh = nbh == 2 ? u & 1 : 0;
#pragma unroll
                for (int j = 0; j < 4; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int rr = 16 * rt + g + (e >> 1) * 8, bb = 32 * bh + 8 * j + 2 * t + (e & 1);
                        if (rr < grows && bb < BP) evt_llm_out<MODE>(a, pb + bb, r0 + rr, acc[ui][0][j][e], acc[ui][NW - 1][j][e]);
                    }
            }
        }
    }
    evt_tile_sync(); /* the ring is free for the worker's next task */
}

#endif
