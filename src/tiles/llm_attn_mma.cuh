/* llm_attn_mma.cuh — a team's scoring loop on the tensor cores (CUDA):
 * attn_rope_split's team path (llm_attn_teams.cuh: large batches, one split,
 * head_dim 128, 1, 2 or 4 q heads per kv head, a power-of-two page size)
 * computes its request's attention with mma.sync instead of the fast path's
 * per-lane FMAs and shuffle butterflies. Included by llm_attn.cuh before the
 * teams, after the fast path, the merge it shares (llm_attn_merge.cuh) and
 * llm_gemv.cuh's evt_llm_mma. -DEVT_LLM_ATTN_MMA=0 is the ablation (the fast
 * path's loop).
 *
 * Why: the fast path's loop issues ~1000 instructions per warp step of 8
 * positions (bench/RESULTS.md, session 22's profile: FMAs, shuffles, the
 * ok flags), so at qwen3-8b batch 64 the teams stream their caches at
 * ~2.9 TB/s over the GPU (68% of the copy rate; session 51). Here a warp
 * takes 16 positions a step and spends 16 mma and 16 16-byte loads on them,
 * with a few shuffles, exp2s and byte permutes: the loop streams at about
 * the copy rate (the batch-64 call as its own kernel 66.0 -> 51.5 us).
 *
 * Layout (one warp, a step of 16 positions t0 .. t0 + 15; lane = 4 r + c):
 *   S^T = K Q^T      A = K (16 positions x 16 dims), B = Q^T (16 dims x 8
 *                    heads, heads >= G zero), 8 k slices over head_dim;
 *                    C: lane holds positions r and r + 8, heads 2c, 2c + 1.
 *                    The dims of a k slice are permuted (a dot product does
 *                    not care) so that lane (r, c) reads 16 contiguous bytes
 *                    of K row r per load: slice s's k = 2c + e is dim
 *                    32 (s / 2) + 8 c + 4 (s % 2) + e, k = 8 + 2c + e that
 *                    plus 2; Q's B fragments use the same map.
 *   online softmax   per head over the step (the 8 lanes of a column c
 *                    share m by 3 shuffles; l stays a per-lane partial sum
 *                    until the end), scores in the log2 domain.
 *   O^T += V^T P^T   A = V^T (16 dims x 16 positions), B = P^T (16
 *                    positions x 8 heads: the C fragment of S^T packed to
 *                    bf16 and transposed by movmatrix), 8 m tiles over
 *                    head_dim; m tile t's row j is dim 8 j + t, so lane (r,
 *                    c) reads rows 8r .. 8r + 7 and 64 + 8r .. of the
 *                    positions 2c, 2c + 1, 8 + 2c, 9 + 2c (16 bytes each)
 *                    and pairs their halves by byte permutes.
 * P goes into the product as bf16 (as FlashAttention does; relative error
 * ~5e-4 in tilebench against the f32 C tile, where the fast path had
 * ~1e-5, and under bf16's own rounding of the output o); its sum l is taken
 * in f32. -DEVT_LLM_ATTN_MMA_SPLIT=1 adds P's bf16 remainder as a second
 * product per m tile (error ~1e-5 again, measured 1.2-1.6% slower per
 * token). A position past hi loads the last valid one again (its score is
 * masked), as the fast path's loads do. */
#ifndef EVT_TILE_LLM_ATTN_MMA_CUH
#define EVT_TILE_LLM_ATTN_MMA_CUH

#ifndef EVT_LLM_ATTN_MMA
#define EVT_LLM_ATTN_MMA 1
#endif
#ifndef EVT_LLM_ATTN_MMA_SPLIT
#define EVT_LLM_ATTN_MMA_SPLIT 0 /* 1: P as bf16 plus its bf16 remainder, two products (P.V to ~2^-16 instead of
                                    bf16's 2^-9: tilebench's error 5e-4 -> 1.3e-5) but 1.2-1.6% slower per token from
                                    its registers (bench/RESULTS.md session 51); 0: bf16 P, as FlashAttention */
#endif

/* the bf16 pair (lo, hi) as one register, lo in the low half */
__device__ __forceinline__ uint32_t evt_llm_pack_bf16(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *(uint32_t *)&v;
}
/* an 8 x 8 b16 matrix transposed across the warp (lane 4 r + c holds row r,
   columns 2c, 2c + 1, before and after) */
__device__ __forceinline__ uint32_t evt_llm_movmatrix_t(uint32_t x)
{
    uint32_t y;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(y) : "r"(x));
    return y;
}

/* the bf16 halves (sel 0x5410: low, 0x7632: high) of word w of x and y, paired (x's in the low half) */
__device__ __forceinline__ uint32_t evt_llm_pair(const uint4 &x, const uint4 &y, int w, uint32_t sel)
{
    const uint32_t a = w == 0 ? x.x : w == 1 ? x.y : w == 2 ? x.z : x.w, b = w == 0 ? y.x : w == 1 ? y.y : w == 2 ? y.z : y.w;
    return __byte_perm(a, b, sel);
}

/* One step's cache rows for lane (r, c): K rows r and r + 8 (their 64 bytes
   at 16 c + 64 i, i < 4: k[i] and k[4 + i]), V rows 2c, 2c + 1, 8 + 2c and
   9 + 2c (bytes 16 r and 128 + 16 r of each: v[j] and v[4 + j]). */
struct evt_llm_attn_mma_rows {
    uint4 k[8], v[8];
};

template <int G>
__device__ __forceinline__ void evt_llm_attn_mma(const evt_llm_attn_io &io, int64_t lo, int64_t hi, float *dst, int64_t dstride,
                                                 evt_bf16 *odst, const evt_llm_team &tm)
{
    constexpr int hd = 128;
    const float qscale = 1.4426950408889634f / sqrtf((float)hd); /* log2(e) / sqrt(hd), applied to the scores */
    const int lane = threadIdx.x & 31, r = lane >> 2, c = lane & 3;
    /* Q^T's B fragments: head r's dims 32 i + 8 c .. + 7 (i < 4) hold slices 2i and 2i + 1 */
    uint32_t qb[8][2];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        uint4 w = r < G ? *(const uint4 *)(io.q + r * hd + 32 * i + 8 * c) : make_uint4(0, 0, 0, 0);
        qb[2 * i][0] = w.x; qb[2 * i][1] = w.y;
        qb[2 * i + 1][0] = w.z; qb[2 * i + 1][1] = w.w;
    }
    const uint32_t psmask = (uint32_t)io.PS - 1; /* a power of two (evt_llm_attend) */
    const int pssh = __ffs((int)io.PS) - 1;
    const int32_t *btb = io.bt + io.b * io.MP;
    const uint32_t rowstride = (uint32_t)(io.nkv * hd);
    const evt_bf16 *kbase = io.kc + io.g * hd + 8 * c, *vbase = io.vc + io.g * hd + 8 * r;
    const uint32_t hi32 = (uint32_t)hi, last = hi32 - 1;
    auto row = [&](uint32_t t) { return evt_llm_attn_row_off(btb, pssh, psmask, rowstride, t < hi32 ? t : last); };
    auto load = [&](uint32_t t0, evt_llm_attn_mma_rows &x) {
        const uint64_t ka = row(t0 + r), kb = row(t0 + r + 8);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            x.k[i] = evt_llm_ldx(kbase + ka + 32 * i);
            x.k[4 + i] = evt_llm_ldx(kbase + kb + 32 * i);
        }
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint64_t va = row(t0 + (uint32_t)((j >> 1) * 8 + 2 * c + (j & 1)));
            x.v[j] = evt_llm_ldx(vbase + va);
            x.v[4 + j] = evt_llm_ldx(vbase + va + 64);
        }
    };
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, o[8][4];
#pragma unroll
    for (int t = 0; t < 8; t++) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.f;
    const uint32_t step = 16u * (uint32_t)tm.nwarps;
    uint32_t t0 = (uint32_t)lo + 16u * (uint32_t)tm.warp;
    evt_llm_attn_mma_rows cur, nxt;
    load(t0, cur);
    for (; t0 < hi32; t0 += step) {
        load(t0 + step, nxt); /* in flight while this step computes */
        float s[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            evt_llm_mma(s, cur.k[i].x, cur.k[4 + i].x, cur.k[i].y, cur.k[4 + i].y, qb[2 * i][0], qb[2 * i][1]);
            evt_llm_mma(s, cur.k[i].z, cur.k[4 + i].z, cur.k[i].w, cur.k[4 + i].w, qb[2 * i + 1][0], qb[2 * i + 1][1]);
        }
        const bool oka = t0 + r < hi32, okb = t0 + r + 8 < hi32; /* position t0 + r is valid in some lane: t0 < hi */
        float p[4];
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const float sa = oka ? s[e] * qscale : -INFINITY, sb = okb ? s[2 + e] * qscale : -INFINITY;
            float x = fmaxf(sa, sb);
            x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 4));
            x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 8));
            x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 16));
            const float mn = fmaxf(m[e], x), corr = exp2f(m[e] - mn); /* mn finite: position t0 is valid */
            m[e] = mn;
            p[e] = exp2f(sa - mn);
            p[2 + e] = exp2f(sb - mn);
            l[e] = l[e] * corr + p[e] + p[2 + e];
#pragma unroll
            for (int t = 0; t < 8; t++) { o[t][e] *= corr; o[t][2 + e] *= corr; }
        }
        /* P^T's B fragments: positions 2c, 2c + 1 (pb0) and 8 + 2c, 9 + 2c (pb1) of head r; with
           EVT_LLM_ATTN_MMA_SPLIT also the bf16 remainders p - bf16(p) (pr0, pr1) */
        const uint32_t h0 = evt_llm_pack_bf16(p[0], p[1]), h1 = evt_llm_pack_bf16(p[2], p[3]);
        const uint32_t pb0 = evt_llm_movmatrix_t(h0), pb1 = evt_llm_movmatrix_t(h1);
        uint32_t pr0 = 0, pr1 = 0;
        if (EVT_LLM_ATTN_MMA_SPLIT) {
            pr0 = evt_llm_movmatrix_t(evt_llm_pack_bf16(p[0] - evt_llm_lo(h0), p[1] - evt_llm_hi(h0)));
            pr1 = evt_llm_movmatrix_t(evt_llm_pack_bf16(p[2] - evt_llm_lo(h1), p[3] - evt_llm_hi(h1)));
        }
#pragma unroll
        for (int t = 0; t < 8; t++) { /* m tile t: dims 8 j + t, element t of each row's 16 bytes */
            const uint32_t sel = (t & 1) ? 0x7632u : 0x5410u;
            const int w = t >> 1;
            const uint32_t a0 = evt_llm_pair(cur.v[0], cur.v[1], w, sel), a1 = evt_llm_pair(cur.v[4], cur.v[5], w, sel);
            const uint32_t a2 = evt_llm_pair(cur.v[2], cur.v[3], w, sel), a3 = evt_llm_pair(cur.v[6], cur.v[7], w, sel);
            evt_llm_mma(o[t], a0, a1, a2, a3, pb0, pb1);
            if (EVT_LLM_ATTN_MMA_SPLIT) evt_llm_mma(o[t], a0, a1, a2, a3, pr0, pr1);
        }
        cur = nxt;
    }
    EVT_ATTN_STAMP(5, 0);
    EVT_ATTN_STAMP(10, 224);
    /* the warp's (m, l, o) per head into the team's merge area ([warp][G][hd + 2], as evt_llm_attn_merge_warps) */
#pragma unroll
    for (int e = 0; e < 2; e++) {
        l[e] += __shfl_xor_sync(0xffffffffu, l[e], 4);
        l[e] += __shfl_xor_sync(0xffffffffu, l[e], 8);
        l[e] += __shfl_xor_sync(0xffffffffu, l[e], 16);
    }
#pragma unroll
    for (int e = 0; e < 2; e++) {
        const int h = 2 * c + e;
        if (h < G) {
            float *sw = tm.sm + (tm.warp * G + h) * (hd + 2);
            if (r == 0) { sw[0] = m[e]; sw[1] = l[e]; }
#pragma unroll
            for (int t = 0; t < 8; t++) {
                sw[2 + 8 * r + t] = o[t][e];
                sw[2 + 64 + 8 * r + t] = o[t][2 + e];
            }
        }
    }
    evt_llm_team_sync<true>(tm);
    evt_llm_attn_combine_warps<G, true>(tm.sm, tm.nwarps, hd, dst, dstride, odst, tm);
}

#endif
