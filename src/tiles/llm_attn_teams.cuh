/* llm_attn_teams.cuh — attn_rope_split's teams (CUDA): a task with a run of
 * requests (large batches) serves them side by side in teams of warps,
 * each with its own named barrier and slice of the shared scratch. Included
 * by llm_attn.cuh, after attn_rope_request_cuda and before
 * attn_rope_split_cuda, in kernels without EVT_LLM_ATTN_ONE_REQUEST; uses
 * the fast path's evt_llm_attn_fast and the team type evt_llm_team from
 * there. */
#ifndef EVT_TILE_LLM_ATTN_TEAMS_CUH
#define EVT_TILE_LLM_ATTN_TEAMS_CUH

/* ---------------------------------------- a run's requests in teams ---- */
/* A task with a run of requests (large batches) splits its block into NT =
 * min(R, 4) teams of >= 2 warps (8 warps: 4 + 4, 3 + 3 + 2 or four of 2);
 * team j serves requests b0 + j, b0 + j + NT, ... in rounds of NT, and the
 * last R % NT requests form a round of that many teams (one of 8 warps for
 * a single request), each on its own (its norm + RoPE, append, scoring
 * loop and merge over its W warps, with its own named barrier and shared
 * memory), so that one
 * request's fixed latency (its rope row, q / k / v loads, the norm, the
 * merge: ~7 of a request's ~20 us at qwen3-8b B = 64, bench/RESULTS.md
 * session 38) overlaps the other teams' scoring loops instead of adding up
 * request after request. Only the fast path's shapes (head_dim 128, 1, 2 or
 * 4 q heads per kv head, one split, a power-of-two page size); others run
 * the requests one after the other. -DEVT_LLM_ATTN_TEAMS=0 is the ablation. */
#ifndef EVT_LLM_ATTN_TEAMS
#define EVT_LLM_ATTN_TEAMS 1
#endif
#ifndef EVT_LLM_ATTN_TEAMS_MIN
#define EVT_LLM_ATTN_TEAMS_MIN 2 /* the shortest run served in teams */
#endif
/* a team's shared memory in floats (evt_llm_attn_team_floats each): the
   merge area ([W][G][hd + 2], then the weights [G][W + 1]), the angle row
   (cos | sin, hd), then q heads, new k, new v ((G + 2) * hd bf16) */
__device__ __forceinline__ int64_t evt_llm_attn_team_tab(int64_t G, int64_t W, int64_t hd)
{
    return (W * G * (hd + 2) + G * (W + 1) + 3) / 4 * 4;
}
__device__ __forceinline__ int evt_llm_attn_team_floats(int NT) { return EVT_LLM_SMEM_FLOATS / NT / 4 * 4; }
/* Team j of NT over nw warps: warps [first(j), first(j + 1)); warp w's team */
__device__ __forceinline__ int evt_llm_attn_team_first(int j, int nw, int NT) { return (j * nw + NT - 1) / NT; }
__device__ __forceinline__ int evt_llm_attn_team_of(int w, int nw, int NT) { return w * NT / nw; }
/* The number of teams for a run of R requests (0: the requests one after
   the other): min(R, 4), fewer where a team would get fewer than 2 warps or
   its shared memory would not fit; 0 unless the shapes take the team
   path. */
__device__ __forceinline__ int evt_llm_attn_teams(const evt_task_args *a, int64_t R)
{
    const int64_t nkv = a->t[5].dim[2], hd = a->t[5].dim[3], nh = a->t[7].dim[1], S = a->t[7].dim[2], PS = a->t[5].dim[1];
    const int nw = evt_tile_threads() >> 5;
    if (!EVT_LLM_ATTN_TEAMS || R < 2 || R < EVT_LLM_ATTN_TEAMS_MIN || S != 1 || hd != 128 || nkv < 1 || nh % nkv || (evt_tile_threads() & 31)) return 0;
    const int64_t G = nh / nkv;
    if ((G != 1 && G != 2 && G != 4) || PS < 1 || (PS & (PS - 1)) || a->t[5].dim[0] * PS > 0xffffffffLL ||
        nkv * hd > 0xffffffffLL || (((uintptr_t)a->t[5].ptr | (uintptr_t)a->t[6].ptr) & 15))
        return 0;
    for (int nt = R < 4 ? (int)R : 4; nt >= 2; nt--) {
        const int wmax = (nw + nt - 1) / nt; /* the largest team */
        if (nw / nt >= 2 && evt_llm_attn_team_tab(G, wmax, hd) + hd + (G + 2) * hd / 2 <= evt_llm_attn_team_floats(nt)) return nt;
    }
    return 0;
}

/* One request b of this warp's team of NT (evt_llm_attn_team_of): as
   attn_rope_request_cuda for G q heads per kv head, head_dim 128, one
   split, over the team's W warps, barrier and shared memory. The team's
   first call (first) puts its angle row in shared memory and meets the
   task's waits (every thread of the block meets them once), also where the
   team has no request (have false: none since session 43, whose rounds give
   every team a request; the parameter stays because dropping it moves this
   function's register allocation, which is what was measured). A function
   of its own: the run's loop
   state held across the scoring loop made ptxas spill. Returns true if the
   launch aborted. */
template <int G>
__device__ __noinline__ bool attn_rope_team_request_cuda(const evt_task_args *a, int64_t b, bool have, bool first, int NT)
{
    constexpr int hd = 128, half = 64, E = 4, KMAX = (G + 2) / 2; /* vectors (G q, k) a warp normalises, at W >= 2 */
    const int nw = evt_tile_threads() >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int team = evt_llm_attn_team_of(warp, nw, NT), w0 = evt_llm_attn_team_first(team, nw, NT);
    const int W = evt_llm_attn_team_first(team + 1, nw, NT) - w0; /* >= 2 (evt_llm_attn_teams; 8 for a run's last single request) */
    evt_llm_team tm;
    tm.warp = warp - w0;
    tm.nwarps = W;
    tm.tid = (int)threadIdx.x - w0 * 32;
    tm.nthreads = W * 32;
    tm.bar = 1 + team; /* 0 is the block's */
    tm.sm = evt_llm_smem + team * evt_llm_attn_team_floats(NT);
    float *tab = tm.sm + evt_llm_attn_team_tab(G, W, hd);
    const int64_t p = have ? ((const int32_t *)a->t[3].ptr)[b] : -1; /* pos, bt and rope: inputs, readable before the waits */
    const float *cs = have && a->t[10].dim[1] == hd && p >= 0 && p < a->t[10].dim[0] ? (const float *)a->t[10].ptr + p * hd : NULL;
    float t0 = 0.f, t1 = 0.f; /* this thread's share of the angle row (threads 0-63 of the team) */
    if (cs && tm.tid < half) {
        t0 = __ldg(cs + tm.tid);
        t1 = __ldg(cs + half + tm.tid);
    }
    if (first) {
        if (cs && tm.tid < half) { tab[tm.tid] = t0; tab[half + tm.tid] = t1; } /* the waits' barrier orders it */
        if (evt_tile_wait(a)) return true;
        EVT_ATTN_STAMP(11, 0);
    }
    if (!have) return false;
    const int64_t g = a->coord[1], N = a->t[0].dim[1], nkv = a->t[5].dim[2], nh = a->t[7].dim[1];
    float *dst = (float *)a->t[7].ptr + (b * nh + g * G) * (hd + 2); /* one split */
    evt_bf16 *ob = (evt_bf16 *)a->t[8].ptr + (b * nh + g * G) * hd;
    if (!cs) { /* no angle row: NaN outputs, never a silent result (as attn_rope_request_cuda) */
        for (int e = tm.tid; e < G * (hd + 2); e += tm.nthreads) dst[e] = NAN;
        for (int e = tm.tid; e < G * hd; e += tm.nthreads) evt_llm_st(ob, e, NAN);
        return false;
    }
    evt_bf16 *sq = (evt_bf16 *)(tab + hd), *sk = sq + G * hd, *sv = sk + hd;
    /* the new v and the norm's vectors (warp tm.warp: vectors tm.warp + r W) at once */
    const evt_bf16 *row = (const evt_bf16 *)a->t[0].ptr + b * N;
    float x[KMAX][E], w[KMAX][E];
#pragma unroll
    for (int r = 0; r < KMAX; r++) {
        const int v = tm.warp + r * W;
        if (v <= G) {
            const evt_bf16 *in = v < G ? row + (g * G + v) * hd : row + (nh + g) * hd;
            const evt_bf16 *wt = (const evt_bf16 *)a->t[v < G ? 1 : 2].ptr;
#pragma unroll
            for (int j = 0; j < E; j++) {
                x[r][j] = evt_llm_ld(in, lane * E + j);
                w[r][j] = __bfloat162float(__ldg(wt + lane * E + j));
            }
        }
    }
    const evt_bf16 *vin = row + (nh + nkv + g) * hd;
    for (int i = tm.tid; i < hd; i += tm.nthreads) sv[i] = vin[i];
    if (first) EVT_ATTN_STAMP(3, 0);
    if (!first && tm.tid < half) { tab[tm.tid] = t0; tab[half + tm.tid] = t1; }
    evt_llm_team_sync<true>(tm); /* the angle row */
    if (first) EVT_ATTN_STAMP(1, 0);
    /* RMSNorm + RoPE of each vector, the arithmetic of evt_llm_group_norm_rope_warp written out again: a helper
       shared by both changed the batch-1-16 kernel's machine code (8 instructions fewer, session 39), which stays
       byte for byte what was measured */
    const float eps = (float)a->iarg[0] * 1e-12f;
#pragma unroll
    for (int r = 0; r < KMAX; r++) {
        const int v = tm.warp + r * W;
        if (v <= G) {
            float ss = 0;
#pragma unroll
            for (int j = 0; j < E; j++) ss += x[r][j] * x[r][j];
            for (int d = 16; d > 0; d >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, d);
            const float sc = 1.0f / sqrtf(ss / (float)hd + eps);
            evt_bf16 *out = v < G ? sq + v * hd : sk;
#pragma unroll
            for (int j = 0; j < E; j++) {
                const int i = lane * E + j, i0 = i % half;
                const float mine = x[r][j] * sc * w[r][j], other = __shfl_xor_sync(0xffffffffu, mine, 16);
                const float c = tab[i0], sn = tab[half + i0];
                out[i] = __float2bfloat16_rn(lane < 16 ? mine * c - other * sn : mine * c + other * sn);
            }
        }
    }
    if (first) EVT_ATTN_STAMP(2, 0);
    evt_llm_team_sync<true>(tm);
    if (first) EVT_ATTN_STAMP(12, 0);
    /* append the new k, v at position p, read back by the loop (the team's barrier orders it) */
    evt_llm_attn_io io;
    io.kc = (const evt_bf16 *)a->t[5].ptr; io.vc = (const evt_bf16 *)a->t[6].ptr;
    io.bt = (const int32_t *)a->t[4].ptr;
    io.MP = a->t[4].dim[1]; io.PS = a->t[5].dim[1]; io.nkv = nkv; io.hd = hd;
    io.rows = a->t[5].dim[0] * io.PS;
    io.b = b; io.g = g;
    io.q = sq;
    const int64_t off = evt_llm_cache_off(io.bt, io.MP, io.PS, nkv, hd, b, p, g);
    evt_bf16 *kc = (evt_bf16 *)a->t[5].ptr, *vc = (evt_bf16 *)a->t[6].ptr;
    for (int i = tm.tid; i < hd; i += tm.nthreads) { kc[off + i] = sk[i]; vc[off + i] = sv[i]; }
    evt_llm_team_sync<true>(tm);
    if (first) EVT_ATTN_STAMP(13, 0);
    if (EVT_LLM_ATTN_MMA) evt_llm_attn_mma<G>(io, 0, p + 1, dst, hd + 2, ob, tm); /* ends with the team's barrier */
    else evt_llm_attn_fast<G, 16, true>(io, 0, p + 1, dst, hd + 2, ob, false, false, tm);
    if (first) EVT_ATTN_STAMP(6, 0);
    return false;
}

/* The run [b0, b1) in NT teams (evt_llm_attn_teams): rounds of NT requests,
   team j serving b0 + j, b0 + j + NT, ... (R >= NT: every team has a
   first request, which meets the task's waits); the last R % NT requests
   form a round of as many teams over the whole block (a block barrier
   first: the teams' shared memory and barriers change shape), one team of
   all 8 warps for a single request. Before, those ran in the rounds' teams
   with the other teams idle: at qwen3-8b batch 72 (runs of 5, 4 teams) the
   fifth request took as long as the first four and the attention 1.7x
   batch 64's (bench/RESULTS.md, session 43). One call site per head group
   size, as before: more of them, or more state live across them, made
   ptxas spill in attn_rope_team_request_cuda. Returns true if the launch
   aborted. */
__device__ __forceinline__ bool evt_llm_attn_team_run(const evt_task_args *a, int64_t b0, int64_t b1, int NT)
{
    const int64_t G = a->t[7].dim[1] / a->t[5].dim[2];
    const int warp = (int)(threadIdx.x >> 5), nw = evt_tile_threads() >> 5;
    EVT_ATTN_STAMP(0, 0);
    for (int64_t r0 = b0, nt = NT; r0 < b1; r0 += nt) { /* r0: the round's first request */
        if (b1 - r0 < nt) { /* the tail */
            nt = b1 - r0;
            evt_tile_sync();
        }
        if (r0 + nt >= b1) EVT_ATTN_STAMP(14, 0);
        const int64_t b = r0 + evt_llm_attn_team_of(warp, nw, (int)nt);
        const bool first = r0 == b0;
        if (G == 4 ? attn_rope_team_request_cuda<4>(a, b, true, first, (int)nt)
                   : G == 2 ? attn_rope_team_request_cuda<2>(a, b, true, first, (int)nt) : attn_rope_team_request_cuda<1>(a, b, true, first, (int)nt))
            return true;
    }
    EVT_ATTN_STAMP(15, 0);
    return false;
}

#endif
