/* llm_attn_merge.cuh — the end of an attention split (CUDA): each warp's
 * running (m, l, o) per q head, over the positions it scored, merged across
 * the block's (or a team's) warps through shared memory into the split's
 * partial row (natural-log max, sum, unnormalised output) and, where the
 * split is the request's only one, the normalised output o. Included by
 * llm_attn.cuh after the team type and the loads it uses; the fast path's
 * loop (evt_llm_attn_fast) ends with evt_llm_attn_merge_warps, the
 * tensor-core team loop (llm_attn_mma.cuh) with evt_llm_attn_combine_warps,
 * the second half of the same merge. */
#ifndef EVT_TILE_LLM_ATTN_MERGE_CUH
#define EVT_TILE_LLM_ATTN_MERGE_CUH

/* The second half of the merge: the nwarps warps' (m, l, o) per head in sm
 * ([warp][G][hd + 2], m in the log2 domain; a warp with l = 0 had no
 * position) combined into dst and, with odst, the normalised output (see
 * evt_llm_attn_merge_warps); ends with the barrier that frees sm. */
template <int G, bool TEAM>
__device__ __forceinline__ void evt_llm_attn_combine_warps(float *sm, int nwarps, int64_t hd, float *dst, int64_t dstride,
                                                           evt_bf16 *odst, const evt_llm_team &tm)
{
    const float LN2 = 0.6931471805599453f;
    float *wt = sm + nwarps * G * (hd + 2); /* [G][nwarps + 1]: each warp's weight, then the max */
    if (TEAM ? tm.tid < G : threadIdx.x < G) {
        int i = TEAM ? tm.tid : (int)threadIdx.x;
        float M = -INFINITY;
        for (int w = 0; w < nwarps; w++) {
            const float *sw = sm + (w * G + i) * (hd + 2);
            if (sw[1] > 0 && sw[0] > M) M = sw[0];
        }
        for (int w = 0; w < nwarps; w++) {
            const float *sw = sm + (w * G + i) * (hd + 2);
            wt[i * (nwarps + 1) + w] = sw[1] > 0 ? exp2f(sw[0] - M) : 0.f;
        }
        wt[i * (nwarps + 1) + nwarps] = M;
    }
    evt_llm_team_sync<TEAM>(tm);
    for (int64_t e = TEAM ? (int64_t)tm.tid : (int64_t)threadIdx.x; e < G * (hd + 2); e += TEAM ? tm.nthreads : evt_tile_threads()) {
        int64_t i = e / (hd + 2), c = e % (hd + 2);
        const float *wi = wt + i * (nwarps + 1);
        float acc = 0;
        for (int w = 0; w < nwarps; w++) acc += sm[(w * G + i) * (hd + 2) + c] * wi[w];
        dst[i * dstride + c] = c == 0 ? wi[nwarps] * LN2 : acc;
        if (odst && c >= 2) { /* the sum as its own element (c = 1) computes it: the same float */
            float L = 0;
            for (int w = 0; w < nwarps; w++) L += sm[(w * G + i) * (hd + 2) + 1] * wi[w];
            evt_llm_st(odst, i * hd + c - 2, L > 0 ? acc / L : 0.f);
        }
    }
    evt_llm_team_sync<TEAM>(tm); /* the merge area is reused by the next call */
}

/* End of a grouped split: each warp's (m, l, o) per head (m is warp-uniform,
 * the lane groups hold disjoint positions) merged into dst in the natural-log
 * domain; with odst (the task's split is the only one) also the normalised
 * output of head i at odst + i * hd, as attn_merge computes it from dst.
 * Uses evt_llm_smem below EVT_LLM_ATTN_QKV_OFF. */
template <int G, bool TEAM>
__device__ __forceinline__ void evt_llm_attn_merge_warps(const float (&m)[G], float (&l)[G], float (&o)[G][8], int lpp, float *dst,
                                                         int64_t dstride, evt_bf16 *odst, const evt_llm_team &tm)
{
    int64_t hd = 8 * lpp;
    int warp = TEAM ? tm.warp : threadIdx.x >> 5, nwarps = TEAM ? tm.nwarps : evt_tile_threads() >> 5, lane = threadIdx.x & 31,
        part = lane % lpp;
    /* the lane groups of a warp share m: sum their l and o */
    for (int off = lpp; off < 32; off <<= 1) {
#pragma unroll
        for (int i = 0; i < G; i++) {
            l[i] += __shfl_xor_sync(0xffffffffu, l[i], off);
#pragma unroll
            for (int j = 0; j < 8; j++) o[i][j] += __shfl_xor_sync(0xffffffffu, o[i][j], off);
        }
    }
    float *sm = TEAM ? tm.sm : evt_llm_smem; /* [warp][G][hd + 2], then the warps' weights */
    if (lane < lpp) {
#pragma unroll
        for (int i = 0; i < G; i++) {
            float *sw = sm + (warp * G + i) * (hd + 2);
            if (lane == 0) { sw[0] = m[i]; sw[1] = l[i]; }
#pragma unroll
            for (int j = 0; j < 8; j++) sw[2 + part * 8 + j] = o[i][j];
        }
    }
    evt_llm_team_sync<TEAM>(tm);
    evt_llm_attn_combine_warps<G, TEAM>(sm, nwarps, hd, dst, dstride, odst, tm);
}

#endif
