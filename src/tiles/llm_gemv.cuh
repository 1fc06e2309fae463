/* llm_gemv.cuh — the decode GEMV/GEMM tiles' core (CUDA; the C versions are
 * in llm.c): row tiles, the mma.sync unit, the fused-norm row scales, the
 * small- and large-batch unit shapes and the scalar fallback, behind
 * evt_llm_gemv<MODE, NORM> (linear, linear_res, mlp_up, their rms_
 * forms, and ss_linear / ss_mlp_up as MODE 3 and 4). At batch <= 8 the
 * one-matrix forms share one function, evt_llm_gemv_small (at batch 1 a
 * task runs its code once, so code shared is code the instruction cache
 * holds). Included by llm.cuh,
 * whose helpers (loads, the shared scratch) it uses and which defines the
 * tile entry points; see the header of llm.cuh for the method. */
#ifndef EVT_TILE_LLM_GEMV_CUH
#define EVT_TILE_LLM_GEMV_CUH

/* ------------------------------------------------- linear family ------- */
/* Rows [*n0, *n1) of tile nb of T over N rows (as llm.c). */
__device__ __forceinline__ void evt_llm_tile_rows(int64_t nb, int64_t T, int64_t N, int64_t *n0, int64_t *n1)
{
    if (T < 1) T = 1;
    if ((nb + 1) * N <= 0x7fffffff && T <= 0x7fffffff) { /* 32-bit divisions: no helper call */
        *n0 = (int)(nb * N) / (int)T;
        *n1 = (int)((nb + 1) * N) / (int)T;
    } else {
        *n0 = nb * N / T;
        *n1 = (nb + 1) * N / T;
    }
    if (*n1 > N) *n1 = N;
}

__device__ __forceinline__ void evt_llm_mma(float *c, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* The weight matrices of a MODE: one (linear, linear_res, ss_linear: 0, 1,
   3) or two (mlp_up, ss_mlp_up: 2, 4, gate and up). */
template <int MODE>
__device__ __forceinline__ constexpr int evt_llm_nw() { return MODE == 2 || MODE == 4 ? 2 : 1; }

/* ss_linear / ss_mlp_up (MODE 3, 4): row b's scale rsqrt(ss[b] / K + eps),
   its sum of squares from linear_res_ss (the same float operations as
   llm.c; a row past ss gets NaN, never a silent result). Each path takes it
   once per row it holds, where the rms_ forms take theirs (NORM), and
   passes the scaled accumulators to evt_llm_out as MODE 0 and 2 would (a
   square root and a division per output, in the epilogue that the TMA path
   runs on one warp per scheduler, were part of why the first form was
   16-18% slower per step: bench/RESULTS.md session 42). */
template <int MODE>
__device__ __forceinline__ float evt_llm_ss_scale(const evt_task_args *a, int64_t b)
{
    const evt_tensor_ref &q = a->t[MODE == 3 ? 3 : 4];
    return b < q.dim[0] ? 1.0f / sqrtf(((const float *)q.ptr)[b] / (float)a->t[0].dim[1] + (float)a->iarg[1] * 1e-12f) : NAN;
}

/* MODE -1: linear (0) or linear_res (1) chosen at run time, the form of the
   batch <= 8 path that linear, linear_res and rms_linear share
   (evt_llm_gemv_small below). */
#define EVT_LLM_MODE_RT (-1)
/* MODE -2: linear_part (llm.c): y = acc into the task's k slice of the f32
   partials part[KP, B, N] (t[2]; slice = coord / (grid / KP)), no residual */
#define EVT_LLM_MODE_PART (-2)

/* Epilogue: MODE 0 y = acc, 1 y = r + acc, 2 y = silu(g) * u; 3 and 4 as 0
   and 2 (ss_linear, ss_mlp_up: g and u arrive scaled by evt_llm_ss_scale);
   MODE -1 as 1 where res, else as 0. */
template <int MODE>
__device__ __forceinline__ void evt_llm_out(const evt_task_args *a, int64_t b, int64_t n, float g, float u, bool res = MODE == 1)
{
    if constexpr (MODE == EVT_LLM_MODE_RT) {
        if (res) evt_llm_out<1>(a, b, n, g, u);
        else evt_llm_out<0>(a, b, n, g, u);
    } else if constexpr (MODE == EVT_LLM_MODE_PART) {
        const int64_t N = a->t[1].dim[0], B = a->t[0].dim[0], KP = a->t[2].dim[0], s = a->coord[0] / (a->grid[0] / KP);
        ((float *)a->t[2].ptr)[(s * B + b) * N + n] = g;
    } else if (MODE == 3 || MODE == 4) {
        evt_bf16 *y = (evt_bf16 *)a->t[MODE == 3 ? 2 : 3].ptr;
        int64_t N = a->t[1].dim[0];
        if (MODE == 3) evt_llm_st(y, b * N + n, g);
        else evt_llm_st(y, b * N + n, g / (1.0f + expf(-g)) * u);
    } else if (MODE == 0) {
        evt_bf16 *y = (evt_bf16 *)a->t[2].ptr;
        int64_t N = a->t[1].dim[0];
        evt_llm_st(y, b * N + n, g);
    } else if (MODE == 1) {
        const evt_bf16 *r = (const evt_bf16 *)a->t[2].ptr;
        evt_bf16 *y = (evt_bf16 *)a->t[3].ptr;
        int64_t N = a->t[1].dim[0];
        evt_llm_st(y, b * N + n, evt_llm_ld(r, b * N + n) + g);
    } else {
        evt_bf16 *y = (evt_bf16 *)a->t[3].ptr;
        int64_t N = a->t[1].dim[0];
        evt_llm_st(y, b * N + n, g / (1.0f + expf(-g)) * u);
    }
}

/* One unit: rows n0 .. n0 + 16*RT (clipped at n1) x batches b0 .. b0 + 8*NB8
 * (clipped at B), k chunks [c0, c1) of 32. NW = 1 (linear) or 2 (gate and
 * up). acc[w][rt][j][4]: C fragment of weight w, row tile rt, batch tile j.
 * RT > 1 reuses each x fragment for RT row tiles (large batches: x, not W,
 * dominates the loads otherwise). Row n of weight w is at Ww + (n - wrow0) * K:
 * global memory (SM false, wrow0 0) or the weight stream's rows in shared
 * memory (SM true, wrow0 the first of them). */
/* ss plus the squares of 8 packed bf16 values, added pair by pair in order
   (the fused-norm row scales' sum) */
__device__ __forceinline__ float evt_llm_sumsq8(float ss, uint4 v)
{
    const uint32_t *u = &v.x;
#pragma unroll
    for (int j = 0; j < 4; j++) ss += evt_llm_lo(u[j]) * evt_llm_lo(u[j]) + evt_llm_hi(u[j]) * evt_llm_hi(u[j]);
    return ss;
}

template <int NB8, int NW, int RT, bool NORM, bool SM, bool EARLY>
__device__ __forceinline__ bool evt_llm_unit(const evt_bf16 *x, const evt_bf16 *W0, const evt_bf16 *W1, int64_t K, int64_t wrow0,
                                             int64_t n0, int64_t n1, int64_t b0, int64_t B, int64_t c0, int64_t c1,
                                             float acc[NW][RT][NB8][4], float (&ss)[NB8], const evt_task_args *wa, int part = 0,
                                             int parts = 1, bool norm = NORM)
{
    int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    bool rok[RT][2];
    const evt_bf16 *wp[SM ? 1 : NW][RT][2]; /* global rows */
    uint32_t ws[SM ? NW : 1][RT][2];        /* shared rows */
#pragma unroll
    for (int r = 0; r < RT; r++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int64_t n = n0 + r * 16 + g + h * 8;
            rok[r][h] = n < n1;
            if constexpr (SM) {
                uint32_t off = (uint32_t)((n - wrow0) * K + 8 * t) * 2u;
                ws[0][r][h] = (uint32_t)__cvta_generic_to_shared(W0) + off;
                if (NW > 1) ws[NW - 1][r][h] = (uint32_t)__cvta_generic_to_shared(W1) + off;
            } else {
                wp[0][r][h] = W0 + (n - wrow0) * K + 8 * t;
                if (NW > 1) wp[NW - 1][r][h] = W1 + (n - wrow0) * K + 8 * t;
            }
        }
    const evt_bf16 *xp[NB8];
    bool xok[NB8];
#pragma unroll
    for (int j = 0; j < NB8; j++) {
        xok[j] = b0 + 8 * j + g < B;
        xp[j] = x + (b0 + 8 * j + g) * K + 8 * t;
    }
    const uint4 z = make_uint4(0, 0, 0, 0);
    /* UN k chunks per iteration, all loads first: a persistent block has 8
     * warps, so bytes in flight come from unrolling */
#ifndef EVT_LLM_UN_SMALL
#define EVT_LLM_UN_SMALL 8 /* k chunks in flight per warp at B <= 8 for one weight matrix; gate + up
                             tiles (NW = 2) take half, so every tile holds 64 registers of weight
                             loads (8 for both made the megakernel's mlp_up spill; 4 for both was
                             2-3% slower: bench/RESULTS.md session 10) */
#endif
    /* larger batches: as many k chunks in flight (1 to 4) as
       EVT_LLM_LOAD_REGS registers of loads allow (a chunk holds 2 * RT * NW
       weight and NB8 x fragments of 4 registers each) */
#ifndef EVT_LLM_LOAD_REGS
#define EVT_LLM_LOAD_REGS 64 /* 96: the megakernel's tiles spill (ptxas -v) */
#endif
    constexpr int FIT = EVT_LLM_LOAD_REGS / (4 * (2 * RT * NW + NB8));
    constexpr int UN = (NB8 == 1 && RT == 1) ? (EVT_LLM_UN_SMALL / NW > 0 ? EVT_LLM_UN_SMALL / NW : 1) : FIT > 4 ? 4 : FIT < 1 ? 1 : FIT;
    /* iterations part, part + parts, ... of [c0, c1) (parts > 1: the range is
       shared by warps that take its iterations in turn) */
    int64_t c = c0 + (int64_t)part * UN;
#if EVT_WAITS_IN_TILE
    /* warp 0's leader runs the task's waits inside evt_tile_wait, a call:
       warp 0 meets it before its own loads, which would otherwise have to
       land before the call (the others' loads are in flight meanwhile) */
    if (EARLY && wa && threadIdx.x < 32) {
        if (evt_tile_wait(wa)) return true;
        wa = nullptr;
    }
#endif
    for (; c < c1; c += (int64_t)parts * UN) {
        uint4 w[UN][NW][RT][2], xv[UN][NB8];
#pragma unroll
        for (int u = 0; u < UN; u++) {
            int64_t k = (c + u) * 32;
            bool kok = c + u < c1;
#pragma unroll
            for (int q = 0; q < NW; q++)
#pragma unroll
                for (int r = 0; r < RT; r++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        if constexpr (SM) w[u][q][r][h] = kok && rok[r][h] ? evt_llm_lds(ws[q][r][h] + (uint32_t)k * 2u) : z;
                        else w[u][q][r][h] = kok && rok[r][h] ? evt_llm_ldw(wp[q][r][h] + k) : z;
                    }
            if constexpr (!EARLY) {
#pragma unroll
                for (int j = 0; j < NB8; j++) xv[u][j] = kok && xok[j] ? evt_llm_ldx(xp[j] + k) : z;
            }
        }
        if constexpr (EARLY) {
            /* early loads: the first chunks' weights are in flight while
               warp 0 runs the task's waits (x is what they guard) */
            if (wa) {
                if (evt_tile_wait(wa)) return true;
                wa = nullptr;
            }
#pragma unroll
            for (int u = 0; u < UN; u++) {
                int64_t k = (c + u) * 32;
                bool kok = c + u < c1;
#pragma unroll
                for (int j = 0; j < NB8; j++) xv[u][j] = kok && xok[j] ? evt_llm_ldx(xp[j] + k) : z;
            }
        }
        if (NORM && norm) { /* the rows' sums of squares from the x fragments as loaded */
#pragma unroll
            for (int u = 0; u < UN; u++)
#pragma unroll
                for (int j = 0; j < NB8; j++) ss[j] = evt_llm_sumsq8(ss[j], xv[u][j]);
        }
#pragma unroll
        for (int u = 0; u < UN; u++)
#pragma unroll
            for (int q = 0; q < NW; q++)
#pragma unroll
                for (int r = 0; r < RT; r++)
#pragma unroll
                    for (int j = 0; j < NB8; j++) {
                        const uint4 *w0 = &w[u][q][r][0], *w1 = &w[u][q][r][1];
                        evt_llm_mma(acc[q][r][j], w0->x, w1->x, w0->y, w1->y, xv[u][j].x, xv[u][j].y);
                        evt_llm_mma(acc[q][r][j], w0->z, w1->z, w0->w, w1->w, xv[u][j].z, xv[u][j].w);
                    }
    }
    if constexpr (EARLY) return wa && evt_tile_wait(wa); /* an empty k range still meets the barrier */
    return false;
}

/* The fused-norm row scale rsqrt(mean(x^2) + eps) from a sum of squares. */
__device__ __forceinline__ float evt_llm_rms_scale(float ss, int64_t K, float eps) { return 1.0f / sqrtf(ss / (float)K + eps); }

/* The sum of squares of lane (g, t)'s x fragments (batch row g of the
 * unit's 8-row group, k slice t) added across t: every lane of row g holds
 * the row's sum over the unit's k range. */
__device__ __forceinline__ float evt_llm_ss_rows(float ss)
{
    ss += __shfl_xor_sync(0xffffffffu, ss, 1);
    return ss + __shfl_xor_sync(0xffffffffu, ss, 2);
}

/* The fused-norm tiles' eps (NORM: the norm's weight is folded into the
   matrices, so x is used as it is and only the row scales are added). */
template <bool NORM>
__device__ __forceinline__ float evt_llm_norm_eps(const evt_task_args *a) { return NORM ? (float)a->iarg[1] * 1e-12f : 0.f; }

#ifndef EVT_LLM_EARLY_MAX_NB8
#define EVT_LLM_EARLY_MAX_NB8 8 /* early loads (EARLY) in units of at most 8 x this batch rows; larger units wait
                                   first. 8 (every unit): on an H100 1.5-4.1% faster at batch 32 and 64, within
                                   0.8% at 1 and 8 (bench/RESULTS.md sessions 18, 20), although ptxas then spills
                                   28-32 bytes in the megakernel's attention tile. 1: batch <= 8 only */
#endif

/* x / d for 0 <= x < 2^16 and d >= 1 from rd, 1 / d within 2 ulp
   (__fdividef): a float product, exact there ((x + 0.5) / d is at least
   0.5 / d from an integer, the product's error below 0.05 / d), where a
   32-bit integer division is ~25 dependent instructions. */
__device__ __forceinline__ int evt_llm_rcp_div(int x, float rd) { return (int)(((float)x + 0.5f) * rd); }

/* The GEMV k split's divisions (the split count, the warp's split and unit:
   at most 32 warps and units) by evt_llm_rcp_div. At batch 1 warp 0 runs
   the split's prologue after its waits, before its loads and the barrier
   the other warps wait at: three divisions in a row there (those two and
   the unit's batch group, which batch <= 8 makes 1) cost qwen3-0.6b 2.5%
   per token (H200, bench/RESULTS.md session 59). */
#ifndef EVT_LLM_SPLIT_RCP
#define EVT_LLM_SPLIT_RCP 1 /* 0: integer divisions (the ablation, and the decode's larger-batch kernels:
                               evt_decode_cuda_defines; qwen3-8b batch 64 measured 0.55% slower with this
                               form in its kernel) */
#endif
__device__ __forceinline__ int evt_llm_split_div(int x, int d, float rd)
{
#if EVT_LLM_SPLIT_RCP
    (void)d;
    return evt_llm_rcp_div(x, rd);
#else
    (void)rd;
    return x / d;
#endif
}

/* Rows [n0, n1) of the task's output, weights at W0 (W1) as evt_llm_unit.
   norm, res: NORM and MODE == 1 at run time where the template says "may"
   (NORM true, MODE -1: evt_llm_gemv_small); elsewhere the constants. */
template <int MODE, int NB8, int RT, bool NORM, bool SM, bool EARLY>
__device__ __forceinline__ void evt_llm_gemv_mma(const evt_task_args *a, const evt_bf16 *W0, const evt_bf16 *W1, int64_t wrow0,
                                                 int64_t n0, int64_t n1, bool norm = NORM, bool res = MODE == 1)
{
    const bool nrm = NORM && norm;
    constexpr int NW = evt_llm_nw<MODE>();
    constexpr int BB = 8 * NB8, RB = 16 * RT;
    const evt_bf16 *x = (const evt_bf16 *)a->t[0].ptr;
    int64_t B = a->t[0].dim[0], K = a->t[0].dim[1];
    if (n0 >= n1) {
        if constexpr (EARLY) evt_tile_wait(a);
        return;
    }
    /* unit and split indices in 32 bits: 64-bit divisions are helper calls */
    /* NB8 1: batch <= 8 (evt_llm_gemv_rows), one batch group */
    const int nrt = (int)((n1 - n0 + RB - 1) / RB), nbg = EVT_LLM_SPLIT_RCP && NB8 == 1 ? 1 : (int)((B + BB - 1) / BB),
              U = nrt * nbg, nch = (int)(K / 32);
    const float ru = EVT_LLM_SPLIT_RCP ? __fdividef(1.0f, (float)U) : 0.f; /* evt_llm_split_div */
    int warp = threadIdx.x >> 5, nwarps = evt_tile_threads() >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#ifndef EVT_LLM_KSPLIT_INTERLEAVE
#define EVT_LLM_KSPLIT_INTERLEAVE 1 /* 0: contiguous ranges at every batch (the ablation) */
#endif
    constexpr bool ILV = EVT_LLM_KSPLIT_INTERLEAVE && NB8 == 1 && RT == 1;
    /* every warp over every unit (below): the gate + up tiles at batch <= 8 */
#ifndef EVT_LLM_KSPLIT_EVERY
#define EVT_LLM_KSPLIT_EVERY 1 /* 0: nwarps / U warps a unit, the form's code left out (the ablation, and the
                                  decode kernels whose programs never take it: evt_decode_cuda_defines) */
#endif
    constexpr bool EV = EVT_LLM_KSPLIT_EVERY && ILV && NW == 2;
    /* the batch rows a k split's partial holds: with EV (one batch group)
       only the B real ones of the unit's 8 */
    const int PB = EV ? (int)B : BB;
    int ksplit = U >= nwarps ? 1 : evt_llm_split_div(nwarps, U, ru);
    if (ksplit > nch) ksplit = nch;
    if (NB8 == 1 && RT == 1 && ksplit > 8) ksplit = 8; /* the batch <= 8 epilogue adds at most 8 */
    const int SSF = nrm ? nbg * PB : 0; /* a k split's sums of squares (rows of x) after the partials */
    if (ksplit * (U * RB * PB * NW + SSF) > EVT_LLM_SMEM_FLOATS) ksplit = EVT_LLM_SMEM_FLOATS / (U * RB * PB * NW + SSF);
    if (ksplit < 1) ksplit = 1;
    /* every warp over every unit: where the gate + up tile has fewer units
       than warps that do not divide them (qwen3-8b at batch 1, 6 units:
       nwarps / U warps a unit kept 6 of 8 busy), each warp takes its turns
       (ks = warp) of every unit's k iterations, the units one after the
       other, through the same partials (H200, bench/RESULTS.md session 56:
       qwen3-8b's gate + up tasks 3% shorter, batch 1 -1.0% per token). Only
       there: the one-matrix tiles at batch <= 8 share one function
       (evt_llm_gemv_small) whose code every small-batch GEMV runs, and that
       form of it (for qwen3-8b's QKV, 3 units) slowed the rest of the step
       more than QKV gained (qwen3-0.6b +2%, whose tiles never take it) */
    bool every = false;
    if constexpr (EV) {
        if (U < nwarps && nwarps % U && nwarps <= 8 && nch >= nwarps && nwarps * (U * RB * PB * NW + SSF) <= EVT_LLM_SMEM_FLOATS) {
            ksplit = nwarps;
            every = true;
        }
    }
    /* EARLY: the task's barrier with warp 0's waits (evt_tile_wait, once in
       every thread) after the first weight loads of the warp's first unit,
       or before everything when the units hold more than
       EVT_LLM_EARLY_MAX_NB8 x 8 batch rows. NORM: each unit sums the squares
       of the x it loads (its k range of its batch rows), so the row scales
       cost no pass over x of their own and need nothing before the units */
    const evt_task_args *wa = EARLY ? a : nullptr;
    const float eps = nrm ? evt_llm_norm_eps<NORM>(a) : 0.f;
    if (EARLY && NB8 > EVT_LLM_EARLY_MAX_NB8) {
        if (evt_tile_wait(a)) return;
        wa = nullptr;
    }
    if (ksplit == 1) {
        for (int u = warp; u < U; u += nwarps) {
            int rt = u / nbg, bg = u % nbg; /* nbg: 1 at batch <= 8 (EVT_LLM_SPLIT_RCP), no division */
            float acc[NW][RT][NB8][4] = {}, ss[NB8] = {};
            int64_t r0 = n0 + rt * RB, b0 = bg * BB;
            if (evt_llm_unit<NB8, NW, RT, NORM, SM, EARLY>(x, W0, W1, K, wrow0, r0, n1, b0, B, 0, nch, acc, ss, wa, 0, 1, nrm)) return;
            wa = nullptr;
            /* the unit covered all of K: its sums are the rows' whole sums;
               output (e & 1) of lane t is batch row 2t + (e & 1), whose sum
               lane 4 (2t + (e & 1)) holds */
            float sc[NB8][2];
#pragma unroll
            for (int j = 0; j < NB8; j++) {
                sc[j][0] = sc[j][1] = 1.f;
                if (nrm) {
                    float r = evt_llm_ss_rows(ss[j]);
                    sc[j][0] = evt_llm_rms_scale(__shfl_sync(0xffffffffu, r, 8 * t), K, eps);
                    sc[j][1] = evt_llm_rms_scale(__shfl_sync(0xffffffffu, r, 8 * t + 4), K, eps);
                }
                if constexpr (MODE >= 3) { /* rows b0 + 8 j + 2 t and the next (outputs e & 1) */
                    sc[j][0] = evt_llm_ss_scale<MODE>(a, b0 + 8 * j + 2 * t);
                    sc[j][1] = evt_llm_ss_scale<MODE>(a, b0 + 8 * j + 2 * t + 1);
                }
            }
#pragma unroll
            for (int r = 0; r < RT; r++)
#pragma unroll
                for (int j = 0; j < NB8; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        int64_t n = r0 + r * 16 + g + (e >> 1) * 8, b = b0 + 8 * j + 2 * t + (e & 1);
                        if (n < n1 && b < B)
                            evt_llm_out<MODE>(a, b, n, acc[0][r][j][e] * sc[j][e & 1], acc[NW - 1][r][j][e] * sc[j][e & 1], res);
                    }
        }
        if (EARLY && wa) evt_tile_wait(wa); /* a warp without units (the result is the other threads') */
        return;
    }
    /* fewer units than warps: split K, partials in shared memory */
    float *part = evt_llm_smem; /* [ks][u][w][RB][PB] */
    float *sspart = part + ksplit * U * RB * PB * NW; /* NORM: [ks][bg][PB], from the units of row tile 0 */
    if (warp < U * ksplit) {
#if EVT_LLM_SPLIT_RCP
        const int wu = evt_llm_split_div(warp, U, ru);
        const int ks = every ? warp : wu;
        for (int u = every ? 0 : warp - wu * U;; u++) {
#else
        const int ks = every ? warp : warp / U;
        for (int u = every ? 0 : warp % U;; u++) {
#endif
            int rt = u / nbg, bg = u % nbg; /* nbg: 1 at batch <= 8 (EVT_LLM_SPLIT_RCP), no division */
            /* the unit's k chunks: at batch <= 8 the warps of a unit take its
               iterations in turn (warp ks the iterations ks, ks + ksplit, ...,
               so they read adjacent stretches of the rows together; H200,
               bench/RESULTS.md session 35: qwen3-0.6b 0.9-1.2% faster per token
               at batch 1 and 8, the rest level); larger units split K into
               contiguous ranges */
            const int c0 = ILV ? 0 : nch * ks / ksplit, c1 = ILV ? nch : nch * (ks + 1) / ksplit;
            float acc[NW][RT][NB8][4] = {}, ss[NB8] = {};
            if (evt_llm_unit<NB8, NW, RT, NORM, SM, EARLY>(x, W0, W1, K, wrow0, n0 + rt * RB, n1, bg * BB, B, c0, c1, acc, ss, wa,
                                                            ILV ? ks : 0, ILV ? ksplit : 1, nrm))
                return;
            wa = nullptr;
            if (nrm) {
#pragma unroll
                for (int j = 0; j < NB8; j++) {
                    float r = evt_llm_ss_rows(ss[j]);
                    if (rt == 0 && t == 0 && (!EV || 8 * j + g < PB)) sspart[(ks * nbg + bg) * PB + 8 * j + g] = r;
                }
            }
#pragma unroll
            for (int q = 0; q < NW; q++)
#pragma unroll
                for (int r = 0; r < RT; r++)
#pragma unroll
                    for (int j = 0; j < NB8; j++)
#pragma unroll
                        for (int e = 0; e < 4; e++) {
                            int rr = r * 16 + g + (e >> 1) * 8, bb = 8 * j + 2 * t + (e & 1);
                            if (!EV || bb < PB) part[(((ks * U + u) * NW + q) * RB + rr) * PB + bb] = acc[q][r][j][e];
                        }
            if (!every || u + 1 == U) break;
        }
    } else if (wa && evt_tile_wait(a)) {
        return;
    }
    evt_tile_sync();
    if constexpr (NB8 == 1 && RT == 1) {
        /* batch <= 8 (one batch group, nbg 1): thread i the output of row
           u * 16 + r, batch row bb (i = (u * 16 + r) * PB + bb, PB 8, or
           B where the partials hold only the real rows, EV); the k splits'
           partials loaded at once and added in order, the same sums as the
           general loop below. At batch 1 a task runs this once, after its
           last warp's k loop and before its notify: the general loop (its
           divisions and a runtime-count loop the compiler unrolls by 16, 8
           and 4, ~450 instructions) took 1500-2300 cycles there with its
           code cold and 700-1250 warm (H200, bench/RESULTS.md session 59);
           this form made qwen3-0.6b batch 1 1.2-1.7% faster per token,
           qwen3-8b 0.4% */
        const float rpb = EV ? 1.0f / (float)PB : 0.f;
        for (int i = threadIdx.x; i < U * RB * PB; i += evt_tile_threads()) {
            int ur = i >> 3, bb = i & 7;
            if constexpr (EV) { /* i / PB */
                ur = evt_llm_rcp_div(i, rpb);
                bb = i - ur * PB;
            }
            const int u = ur >> 4, r = ur & 15;
            const int64_t n = n0 + u * RB + r;
            if (bb < B && n < n1) {
                const float *p0 = part + ((u * NW) * RB + r) * PB + bb;
                const int kstride = U * NW * RB * PB;
                float v0[8], v1[8], vq[8];
#pragma unroll
                for (int ks = 0; ks < 8; ks++) {
                    const bool on = ks < ksplit;
                    v0[ks] = on ? p0[ks * kstride] : 0.f;
                    v1[ks] = NW > 1 && on ? p0[ks * kstride + RB * PB] : 0.f;
                    vq[ks] = nrm && on ? sspart[ks * PB + bb] : 0.f;
                }
                float s0 = 0.f, s1 = 0.f, q = 0.f;
#pragma unroll
                for (int ks = 0; ks < 8; ks++)
                    if (ks < ksplit) {
                        s0 += v0[ks];
                        s1 += v1[ks];
                        q += vq[ks];
                    }
                if (NW == 1) s1 = s0;
                float sc = nrm ? evt_llm_rms_scale(q, K, eps) : 1.f;
                if constexpr (MODE >= 3) sc = evt_llm_ss_scale<MODE>(a, bb);
                evt_llm_out<MODE>(a, bb, n, s0 * sc, s1 * sc, res);
            }
        }
        return;
    }
    for (int i = threadIdx.x; i < U * RB * PB; i += evt_tile_threads()) {
        int u = i / (RB * PB), r = (i / PB) % RB, bb = i % PB;
        int64_t n = n0 + (u / nbg) * RB + r, b = (u % nbg) * BB + bb;
        if (n >= n1 || b >= B) continue;
        float s0 = 0, s1 = 0;
        for (int ks = 0; ks < ksplit; ks++) {
            s0 += part[(((ks * U + u) * NW + 0) * RB + r) * PB + bb];
            s1 += part[(((ks * U + u) * NW + NW - 1) * RB + r) * PB + bb];
        }
        float sc = 1.f;
        if (nrm) { /* the k splits' sums in order */
            float q = 0;
            for (int ks = 0; ks < ksplit; ks++) q += sspart[(ks * nbg + u % nbg) * PB + bb];
            sc = evt_llm_rms_scale(q, K, eps);
        }
        if constexpr (MODE >= 3) sc = evt_llm_ss_scale<MODE>(a, b);
        evt_llm_out<MODE>(a, b, n, s0 * sc, s1 * sc, res);
    }
}

/* Generic path: one warp per (row, batch), scalar loads. */
template <int MODE, bool NORM, bool EARLY>
__device__ __forceinline__ void evt_llm_gemv_scalar(const evt_task_args *a)
{
    const evt_bf16 *x = (const evt_bf16 *)a->t[0].ptr, *W0 = (const evt_bf16 *)a->t[1].ptr;
    const evt_bf16 *W1 = evt_llm_nw<MODE>() == 2 ? (const evt_bf16 *)a->t[2].ptr : W0;
    int64_t B = a->t[0].dim[0], K = a->t[0].dim[1], N = a->t[1].dim[0], n0, n1;
    evt_llm_tile_rows(a->coord[0], a->iarg[0], N, &n0, &n1);
    if (EARLY && evt_tile_wait(a)) return;
    int warp = threadIdx.x >> 5, nwarps = evt_tile_threads() >> 5, lane = threadIdx.x & 31;
    for (int64_t e = warp; e < (n1 - n0) * B; e += nwarps) {
        int64_t n = n0 + e / B, b = e % B;
        float s0 = 0, s1 = 0, ss = 0;
        for (int64_t k = lane; k < K; k += 32) {
            float xv = evt_llm_ld(x, b * K + k);
            if (NORM) ss += xv * xv; /* the row's sum of squares on the way */
            s0 += xv * __bfloat162float(__ldg(W0 + n * K + k));
            if (evt_llm_nw<MODE>() == 2) s1 += xv * __bfloat162float(__ldg(W1 + n * K + k));
        }
        for (int o = 16; o > 0; o >>= 1) {
            s0 += __shfl_xor_sync(0xffffffffu, s0, o);
            s1 += __shfl_xor_sync(0xffffffffu, s1, o);
            ss += __shfl_xor_sync(0xffffffffu, ss, o);
        }
        float sc = NORM ? evt_llm_rms_scale(ss, K, evt_llm_norm_eps<NORM>(a)) : MODE >= 3 ? evt_llm_ss_scale<MODE>(a, b) : 1.f;
        if (lane == 0) evt_llm_out<MODE>(a, b, n, s0 * sc, s1 * sc);
    }
}

/* The batch <= 8 path of linear, linear_res and rms_linear (QKV, O, down and
 * the LM head of a decode step) as one function, the mode and the norm
 * arguments: at batch 1 a task runs its tile's code once, and a step's code
 * past the SM's instruction cache runs from L2 at ~3-5x the cycles
 * (bench/icache.cu, bench/RESULTS.md session 45). With one copy, QKV runs the
 * code the down projection before it left in the cache. */
#ifndef EVT_LLM_SHARED_SMALL
#define EVT_LLM_SHARED_SMALL 1 /* 0: each tile its own copy (the ablation, and the decode's larger-batch kernels:
                                  evt_decode_cuda_defines) */
#endif
template <bool EARLY>
__device__ __noinline__ void evt_llm_gemv_small(const evt_task_args *a, const evt_bf16 *W, int64_t n0, int64_t n1, bool res, bool norm)
{
    evt_llm_gemv_mma<EVT_LLM_MODE_RT, 1, 1, true, false, EARLY>(a, W, W, 0, n0, n1, norm, res);
}

/* Rows [n0, n1) from W0 (W1), nr of them per tile at most: the unit shapes. */
template <int MODE, bool NORM, bool SM, bool EARLY>
__device__ __forceinline__ void evt_llm_gemv_rows(const evt_task_args *a, const evt_bf16 *W0, const evt_bf16 *W1, int64_t wrow0,
                                                  int64_t n0, int64_t n1, int64_t nr)
{
    int64_t B = a->t[0].dim[0];
    if (B <= 8) {
        if constexpr ((MODE == 0 || MODE == 1) && !SM && EVT_LLM_SHARED_SMALL) evt_llm_gemv_small<EARLY>(a, W0, n0, n1, MODE == 1, NORM);
        else evt_llm_gemv_mma<MODE, 1, 1, NORM, SM, EARLY>(a, W0, W1, wrow0, n0, n1);
        return;
    }
    /* Larger batches. "Wide" units hold every batch row (up to 64; beyond,
     * two passes) and one 16-row tile, so each weight row is loaded once
     * per task; narrower units (16 or 32 batch rows, up to 4 row tiles
     * sharing each x fragment) load the weights B / 16 or B / 32 times but
     * each x fragment once per 32-64 weight rows. Measured as their own
     * kernels at qwen3 shapes on an H200 (bench/RESULTS.md, session 7):
     * wide wins for gate + up with many rows (qwen3-8b's mlp_up, 93 rows,
     * B = 64: 236 -> 114 us), for one weight with few rows (qwen3-0.6b's
     * o / down, 8 rows: 12.5 -> 11.5, 15.5 -> 14.1 us) or very many (the LM
     * head's 230: 699 -> 619 us at qwen3-8b) and at B <= 16; it loses 8-15%
     * in between (qkv / o / down at 31-47 rows) and for gate + up with 23.
     * Staging weights and x through shared memory with cp.async (a ring of
     * 64- or 128-k stages, session 8, commit e918f52) lost to these units
     * on every tile but the batch-64 LM head: its ingest capped near 20 GB/s
     * per SM. A register ring of 2-4 weight chunks with x loaded just in
     * time from L1 (session 9, commit 1c66780) made ptxas spill across the
     * megakernel's call graph and lost 14-38% at batch 32 and 64. */
    if (evt_llm_nw<MODE>() == 2) {
        if (B <= 16 || nr < 64) {
            if (nr >= 32 && B > 16) evt_llm_gemv_mma<MODE, 2, 2, NORM, SM, EARLY>(a, W0, W1, wrow0, n0, n1);
            else evt_llm_gemv_mma<MODE, 2, 1, NORM, SM, EARLY>(a, W0, W1, wrow0, n0, n1);
        } else if (B <= 32) evt_llm_gemv_mma<MODE, 4, 1, NORM, SM, EARLY>(a, W0, W1, wrow0, n0, n1);
        else evt_llm_gemv_mma<MODE, 8, 1, NORM, SM, EARLY>(a, W0, W1, wrow0, n0, n1);
    } else if (B <= 16) evt_llm_gemv_mma<MODE, 2, 1, NORM, SM, EARLY>(a, W0, W1, wrow0, n0, n1);
    else if (nr <= 16 || nr >= 128) {
        if (B <= 32) evt_llm_gemv_mma<MODE, 4, 1, NORM, SM, EARLY>(a, W0, W1, wrow0, n0, n1);
        else evt_llm_gemv_mma<MODE, 8, 1, NORM, SM, EARLY>(a, W0, W1, wrow0, n0, n1);
    } else if (nr >= 64) evt_llm_gemv_mma<MODE, 4, 4, NORM, SM, EARLY>(a, W0, W1, wrow0, n0, n1);
    else if (nr >= 32) evt_llm_gemv_mma<MODE, 4, 2, NORM, SM, EARLY>(a, W0, W1, wrow0, n0, n1);
    else evt_llm_gemv_mma<MODE, 4, 1, NORM, SM, EARLY>(a, W0, W1, wrow0, n0, n1);
}

/* the TMA + wgmma path for 16 < B <= 64 (needs evt_llm_out above) */
#include "llm_tma.cuh"

template <int MODE, bool NORM, bool EARLY = false>
__device__ __forceinline__ void evt_llm_gemv(const evt_task_args *a)
{
    int64_t B = a->t[0].dim[0], K = a->t[0].dim[1];
    uintptr_t al = (uintptr_t)a->t[0].ptr | (uintptr_t)a->t[1].ptr | (evt_llm_nw<MODE>() == 2 ? (uintptr_t)a->t[2].ptr : 0);
    if ((K & 31) || (al & 15) || (evt_tile_threads() & 31) || (NORM && B > 128)) { evt_llm_gemv_scalar<MODE, NORM, EARLY>(a); return; }
    const evt_bf16 *W0 = (const evt_bf16 *)a->t[1].ptr, *W1 = evt_llm_nw<MODE>() == 2 ? (const evt_bf16 *)a->t[2].ptr : W0;
    int64_t N = a->t[1].dim[0], T = a->iarg[0] < 1 ? 1 : a->iarg[0], nr = (N + T - 1) / T, n0, n1; /* rows per tile, at most */
    evt_llm_tile_rows(a->coord[0], a->iarg[0], N, &n0, &n1);
    if (n0 >= n1) {
        if constexpr (EARLY) evt_tile_wait(a);
        return;
    }
    if (!(EVT_STREAM && a->stream > 0) && evt_llm_gemv_tma<MODE, EARLY, NORM>(a, n0, n1)) return;
#if EVT_STREAM
    /* the first ns rows of the band came through the weight stream (the
       worker's leader copied rows [n0, n0 + ns) of W, and of Wu for mlp_up,
       into shared memory, the matrices one after the other: llm.c's
       evt_tile_linear_stream plans the same rows): the rest from global
       memory first (the copies land meanwhile), then those */
    int64_t ns = a->stream < n1 - n0 ? a->stream : n1 - n0;
    if (ns > 0) {
        if (n0 + ns < n1) {
            evt_llm_gemv_rows<MODE, NORM, false, EARLY>(a, W0, W1, 0, n0 + ns, n1, n1 - n0 - ns);
            evt_tile_sync(); /* the partials and row scales in shared memory are reused */
        }
        const evt_bf16 *S0 = (const evt_bf16 *)evt_stream_rows_ready(a), *S1 = S0 + ns * K;
        evt_llm_gemv_rows<MODE, NORM, true, false>(a, S0, S1, n0, n0, n0 + ns, ns == n1 - n0 ? nr : ns);
        return;
    }
#endif
    evt_llm_gemv_rows<MODE, NORM, false, EARLY>(a, W0, W1, 0, n0, n1, nr);
}

#endif
