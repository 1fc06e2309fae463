/* llm_attn.cuh — decode attention tiles over a paged KV cache (CUDA; the C
 * versions are in llm.c): attn_split (one q head), attn_rope_split (the q
 * heads of one kv head, with their q/k RMSNorm + RoPE and the cache append
 * inside), attn_merge and attn_merge_group. Included by llm.cuh, whose helpers (loads, block
 * reductions, evt_llm_group_norm_rope, the shared scratch) it uses; see the
 * header of llm.cuh for the method. */
#ifndef EVT_TILE_LLM_ATTN_CUH
#define EVT_TILE_LLM_ATTN_CUH

/* -------------------------------------------------------- attention ---- */
/* One (b, h, split): q and the cache of kv head g (the new position's k
 * and v already written to it). */
struct evt_llm_attn_io {
    const evt_bf16 *q, *kc, *vc;
    const int32_t *bt;
    int64_t MP, PS, nkv, hd, b, g;
    int64_t rows; /* cache rows (pages x PS): the fast path's slots are 32-bit */
};

/* A team of warps that runs requests of its own (attn_rope_split's teams
 * at large batches, below): the warp's index in the team and the team's
 * warps, the thread's index and the team's threads, the team's named
 * barrier and its shared memory. The templates below take TEAM false for
 * the whole block (threadIdx.x, blockDim.x, evt_tile_sync, evt_llm_smem),
 * which folds to the code they had before teams (the batch-1-16 kernel's
 * machine code is unchanged: compare the cubins' .text). */
struct evt_llm_team {
    int warp, nwarps, tid, nthreads, bar;
    float *sm;
};
template <bool TEAM>
__device__ __forceinline__ void evt_llm_team_sync(const evt_llm_team &tm)
{
    if constexpr (TEAM) { /* immediate barrier numbers (1-4) */
        if (tm.bar == 1) asm volatile("bar.sync 1, %0;" ::"r"(tm.nthreads) : "memory");
        else if (tm.bar == 2) asm volatile("bar.sync 2, %0;" ::"r"(tm.nthreads) : "memory");
        else if (tm.bar == 3) asm volatile("bar.sync 3, %0;" ::"r"(tm.nthreads) : "memory");
        else asm volatile("bar.sync 4, %0;" ::"r"(tm.nthreads) : "memory");
    } else {
        evt_tile_sync();
    }
}

/* q heads / k / v of the fused tile in shared memory, above the fast path's
   per-warp merge area ([nwarps][G][hd + 2] floats) */
#define EVT_LLM_ATTN_QKV_OFF 6144
/* -DEVT_ATTN_PROF (diagnostic; tilebench prints the medians): clock64 stamps
   of attn_rope_split's phases into evt_attn_prof[block * SLOTS + k] when the
   pointer is set: thread 0 at 0 entry, 1 split range (pos read), 2 past
   the waits, 3 q/k norm + RoPE done, 4 new k, v appended, 5 its loop done,
   6 the warps merged, 7 merge_last done; 8 thread 224 (a table warp) past
   the angle table, 9 thread 32 past its staging, 10 thread 224's loop done.
   A run in teams (llm_attn_teams.cuh) stamps 0 at the run's entry, then
   team 0's first request (thread 0): 11 past the waits, 3 its new v
   stored to shared memory, 1 past the team's barrier after it, 2 its q / k
   normalised and rotated (before the team's barrier), 12 q/k norm + RoPE
   done, 13 new k, v appended, 6 its warps merged; 5 team 0's loop done and
   10 the last team's (thread 224, warp 7), each in its last round; 14 the
   last round's start and 15 the run's end */
#define EVT_ATTN_PROF_SLOTS 16  /* stamps a block may write (its row of evt_attn_prof) */
#define EVT_ATTN_PROF_STAMPS 16 /* stamps written: 0 .. 15 above */
#ifdef EVT_ATTN_PROF
__device__ unsigned long long *evt_attn_prof;
#define EVT_ATTN_STAMP(k, thr)                                                                                   \
    do {                                                                                                         \
        if (threadIdx.x == (thr) && evt_attn_prof) evt_attn_prof[(size_t)blockIdx.x * EVT_ATTN_PROF_SLOTS + (k)] = clock64(); \
    } while (0)
#else
#define EVT_ATTN_STAMP(k, thr) ((void)0)
#endif
#ifndef EVT_LLM_ATTN_STAGE_FIRST
#define EVT_LLM_ATTN_STAGE_FIRST 1 /* 0: attn_rope_split loads its first step after the norm + RoPE: evtc decode's
                                     batch-1-16 kernel (evt_decode_cuda_defines), where the staging's code costs more
                                     than it hides (H200, bench/RESULTS.md session 45: qwen3-0.6b batch 1 -1.6%) */
#endif
/* The fast path's staged first step (attn_rope_split: evt_llm_attn_stage_first)
   for warps 1-7 (warp 0 runs the task's waits: its loads could not start
   earlier anyway): 4 KiB a warp, K then V of each of its U positions per lane
   group, 16 bytes a lane, above the block sums and the warp path's angle
   table (evt_llm_smem[0, 320 + hd), hd <= 128 when staging); the merge area
   overlaps it once read. A staging task keeps its q heads, new k and v above
   it, at EVT_LLM_ATTN_STAGE_QKV_OFF (EVT_LLM_ATTN_STAGE_QKV_BF16: (G + 2) * hd), not at
   EVT_LLM_ATTN_QKV_OFF. */
#define EVT_LLM_ATTN_STAGE_OFF 448
#define EVT_LLM_ATTN_STAGE_QKV_OFF (EVT_LLM_ATTN_STAGE_OFF + 7 * 2 * EVT_LLM_ATTN_U * 32 * 4)
#define EVT_LLM_ATTN_STAGE_QKV_BF16 (2 * (EVT_LLM_SMEM_FLOATS - EVT_LLM_ATTN_STAGE_QKV_OFF))

__device__ __forceinline__ int64_t evt_llm_cache_off(const int32_t *bt, int64_t MP, int64_t PS, int64_t nkv, int64_t hd,
                                                     int64_t b, int64_t t, int64_t g)
{
    return (((int64_t)bt[b * MP + t / PS] * PS + t % PS) * nkv + g) * hd;
}

#ifndef EVT_LLM_ATTN_U
#define EVT_LLM_ATTN_U 4 /* cache positions per lane group per step; the next step's loads are in flight too
                            (8 for 1 or 2 q heads per kv head made ptxas spill 112 bytes in rmsnorm; 2 in
                            evtc decode's batch-1-16 kernel, where a split's steps run once or twice a task:
                            bench/RESULTS.md session 60) */
#endif
static_assert(EVT_LLM_ATTN_STAGE_QKV_BF16 >= 6 * 128, "the staging layout holds 4 q heads, k and v of head_dim 128");

/* The fast path's offset of position t's cache row, in elements: its 32-bit
   slot (the page number from the request's block table btb, shifted by
   pssh = log2(page size), with the offset masked in) times the row stride */
__device__ __forceinline__ uint64_t evt_llm_attn_row_off(const int32_t *btb, int pssh, uint32_t psmask, uint32_t rowstride, uint32_t t)
{
    return (uint64_t)(((uint32_t)btb[t >> pssh] << pssh) | (t & psmask)) * rowstride;
}

/* The byte address of lane `lane`'s slot i (2u: K of position u, 2u + 1: its V)
   of warp `warp` (1-7) in the staging area */
__device__ __forceinline__ uint32_t evt_llm_attn_stage_slot(int warp, int lane, int i)
{
    return (uint32_t)__cvta_generic_to_shared(evt_llm_smem + EVT_LLM_ATTN_STAGE_OFF) +
           (uint32_t)(warp - 1) * (2u * EVT_LLM_ATTN_U * 512u) + (uint32_t)i * 512u + (uint32_t)lane * 16u;
}
/* the cross-warp merge at a split's end (evt_llm_attn_merge_warps, evt_llm_attn_combine_warps) */
#include "llm_attn_merge.cuh"

/* Fast path: hd % 8 == 0, hd / 8 a power of two <= 32, blockDim <= 256.
 * G q heads (io.q + i * hd, i < G) share the kv head: each cache position is
 * loaded once and scored against all of them (grouped-query attention).
 * Head i's result goes to dst + i * dstride.
 *
 * Per warp step (ppw * U positions, all their loads in flight): scores in
 * the log2 domain (q pre-scaled by log2(e) / sqrt(hd)), then one running-max
 * update per head for the whole step (the step's max over the warp), so a
 * position costs one exp2 and 8 FMAs of P.V per lane, not two exps and a
 * rescale; a cache row's address is a 32-bit slot (page number shifted,
 * the offset masked in: the path needs a power-of-two page size and fewer
 * than 2^32 cache rows, others take the generic path) times the row
 * stride, and the loads have no branches (a position past the split loads
 * the last one again, its score masked). As its own kernel at qwen3-8b
 * shapes, B = 64, 4 splits (bench/RESULTS.md): attn_split 244 -> 158 us,
 * attn_rope_split 244 -> 213 us. Results are stored in the natural-log
 * domain, as the C reference and attn_merge expect. A tensor-core split
 * (mma.sync, session 9, commit 5ff8572) was 22% faster as its own kernel
 * at B = 64 but made ptxas spill in the megakernel's other tiles and lost
 * there at every batch. */
#ifndef EVT_LLM_ATTN_RS
#define EVT_LLM_ATTN_RS 1 /* where the reduce-scatter form (below) sums the scores at head_dim 128: 1 for 2 q
                             heads per kv head (qwen3-0.6b: decode 2-7% faster on an H100, bench/RESULTS.md
                             session 20), 2 also for 4 (qwen3-8b: the tile alone 7% faster, the decode 2-5%
                             slower, session 19-20), 0 nowhere (the butterfly everywhere) */
#endif
template <int G, int LPP, bool TEAM = false>
__device__ __forceinline__ void evt_llm_attn_fast(const evt_llm_attn_io &io, int64_t lo, int64_t hi, float *dst, int64_t dstride,
                                                  evt_bf16 *odst, bool staged, bool stage_sync, const evt_llm_team &tm)
{
    const float LOG2E = 1.4426950408889634f;
    int64_t hd = io.hd;
    int lpp = LPP ? LPP : (int)(hd / 8), ppw = 32 / lpp; /* lanes per position, positions per warp step */
    int warp = TEAM ? tm.warp : threadIdx.x >> 5, nwarps = TEAM ? tm.nwarps : evt_tile_threads() >> 5, lane = threadIdx.x & 31;
    int sub = lane / lpp, part = lane % lpp;
    float qscale = LOG2E / sqrtf((float)hd);
    float qf[G][8], m[G], l[G], o[G][8];
#pragma unroll
    for (int i = 0; i < G; i++) {
        uint4 qv = *(const uint4 *)(io.q + i * hd + part * 8); /* plain load: global (after the waits) or shared */
        qf[i][0] = evt_llm_lo(qv.x); qf[i][1] = evt_llm_hi(qv.x); qf[i][2] = evt_llm_lo(qv.y); qf[i][3] = evt_llm_hi(qv.y);
        qf[i][4] = evt_llm_lo(qv.z); qf[i][5] = evt_llm_hi(qv.z); qf[i][6] = evt_llm_lo(qv.w); qf[i][7] = evt_llm_hi(qv.w);
#pragma unroll
        for (int j = 0; j < 8; j++) qf[i][j] *= qscale;
        m[i] = -INFINITY;
        l[i] = 0;
#pragma unroll
        for (int j = 0; j < 8; j++) o[i][j] = 0;
    }
    /* cache addressing: a position's cache row is slot * rowstride + goff
       elements from the cache's start, slot = page * PS + offset (32-bit:
       the cache holds fewer than 2^32 rows, checked by evt_llm_attend) */
    const uint32_t psmask = (uint32_t)io.PS - 1; /* a power of two (evt_llm_attend) */
    const int pssh = __ffs((int)io.PS) - 1;
    const int32_t *btb = io.bt + io.b * io.MP;
    const uint32_t rowstride = (uint32_t)(io.nkv * hd);
    const int64_t goff = io.g * hd + part * 8;
    const evt_bf16 *kbase = io.kc + goff, *vbase = io.vc + goff;
    const uint32_t hi32 = (uint32_t)hi, last = hi32 - 1;
    constexpr int U = EVT_LLM_ATTN_U, N = G * U;
    /* the reduce-scatter form (EVT_LLM_ATTN_RS): 2 q heads from level 1, 4 from level 2 */
    constexpr bool RS = LPP == 16 && N <= 16 && (N & (N - 1)) == 0 &&
                        ((G == 2 && EVT_LLM_ATTN_RS >= 1) || (G == 4 && EVT_LLM_ATTN_RS >= 2));
    const uint32_t step = (uint32_t)(nwarps * ppw * U);
    /* one step's K and V loads, without branches: a position past hi loads
       the last valid one again (a cache hit) and its ok flag is false */
    auto load_step = [&](uint32_t t0, uint4 (&kv)[U], uint4 (&vv)[U], bool (&ok)[U]) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            uint32_t t = t0 + (uint32_t)(u * ppw + sub);
            ok[u] = t < hi32;
            t = ok[u] ? t : last;
            uint64_t off = evt_llm_attn_row_off(btb, pssh, psmask, rowstride, t);
            kv[u] = evt_llm_ldx(kbase + off);
            vv[u] = evt_llm_ldx(vbase + off);
        }
    };
    /* software-pipelined: the next step's loads are issued before this
       step's scores, so a warp keeps a step of loads in flight while it
       computes (each step was a full memory round trip, then compute) */
    uint32_t t0 = (uint32_t)lo + (uint32_t)(warp * ppw * U);
    uint4 kv[U], vv[U];
    bool ok[U];
    if (!TEAM && staged) { /* this warp's first step is in the staging area (evt_llm_attn_stage_first) */
        asm volatile("cp.async.wait_all;" ::: "memory");
#pragma unroll
        for (int u = 0; u < U; u++) {
            ok[u] = t0 + (uint32_t)(u * ppw + sub) < hi32;
            const uint32_t sk = evt_llm_attn_stage_slot(warp, lane, 2 * u), sv = sk + 512u;
            asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(kv[u].x), "=r"(kv[u].y), "=r"(kv[u].z), "=r"(kv[u].w) : "r"(sk) : "memory");
            asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(vv[u].x), "=r"(vv[u].y), "=r"(vv[u].z), "=r"(vv[u].w) : "r"(sv) : "memory");
        }
    } else {
        load_step(t0, kv, vv, ok);
    }
    if (!TEAM && stage_sync) evt_tile_sync(); /* every warp has read its staging before any writes the merge area over it */
    for (; t0 < hi32; t0 += step) {
        uint4 nkv[U], nvv[U];
        bool nok[U];
        load_step(t0 + step, nkv, nvv, nok);
        float d[G][U];
#pragma unroll
        for (int i = 0; i < G; i++)
#pragma unroll
            for (int u = 0; u < U; u++)
                d[i][u] = qf[i][0] * evt_llm_lo(kv[u].x) + qf[i][1] * evt_llm_hi(kv[u].x) + qf[i][2] * evt_llm_lo(kv[u].y) +
                          qf[i][3] * evt_llm_hi(kv[u].y) + qf[i][4] * evt_llm_lo(kv[u].z) + qf[i][5] * evt_llm_hi(kv[u].z) +
                          qf[i][6] * evt_llm_lo(kv[u].w) + qf[i][7] * evt_llm_hi(kv[u].w);
        /* the step's max per head over the whole warp (every lane group),
           then one rescale of the running state */
        float mn[G], pmine = 0.f;
        if constexpr (RS) {
            /* reduce-scatter: the lane group's 16 lanes sum the N = G * U
               partial scores so that lane part ends with the total of score
               n = part / (16 / N) (15 shuffles for N = 16, not 64), then one
               exp2 per lane; P.V takes each p from its lane by a shuffle */
            float v[N];
#pragma unroll
            for (int i = 0; i < G; i++)
#pragma unroll
                for (int u = 0; u < U; u++) v[i * U + u] = d[i][u];
#pragma unroll
            for (int lev = 0; lev < 4; lev++) {
                const int h = 8 >> lev, sz = N >> lev;
                if (sz > 1) {
                    bool up = (part & h) != 0;
#pragma unroll
                    for (int k = 0; k < sz / 2; k++) { /* the half this lane keeps first */
                        float a0 = v[k], a1 = v[k + sz / 2];
                        v[k] = up ? a1 : a0;
                        v[k + sz / 2] = up ? a0 : a1;
                    }
#pragma unroll
                    for (int k = 0; k < sz / 2; k++) v[k] += __shfl_xor_sync(0xffffffffu, v[k + sz / 2], h);
                } else {
                    v[0] += __shfl_xor_sync(0xffffffffu, v[0], h);
                }
            }
            const int n = part / (16 / N), imine = n / U, umine = n % U;
            const bool okm = t0 + (uint32_t)(umine * ppw + sub) < hi32;
            /* my head's max: the lanes holding its scores, both lane groups */
            float x = okm ? v[0] : -INFINITY;
#pragma unroll
            for (int o2 = 1; o2 < 16 / G; o2 <<= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o2));
            x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 16));
            float mmine = 0.f;
#pragma unroll
            for (int i = 0; i < G; i++) {
                mn[i] = fmaxf(m[i], __shfl_sync(0xffffffffu, x, i * (16 / G))); /* finite: a valid position */
                mmine = i == imine ? mn[i] : mmine;
            }
            pmine = okm ? exp2f(v[0] - mmine) : 0.f;
        } else {
            for (int o2 = lpp / 2; o2 > 0; o2 >>= 1)
#pragma unroll
                for (int i = 0; i < G; i++)
#pragma unroll
                    for (int u = 0; u < U; u++) d[i][u] += __shfl_xor_sync(0xffffffffu, d[i][u], o2);
#pragma unroll
            for (int u = 0; u < U; u++)
#pragma unroll
                for (int i = 0; i < G; i++) d[i][u] = ok[u] ? d[i][u] : -INFINITY; /* exp2 gives p = 0 */
#pragma unroll
            for (int i = 0; i < G; i++) {
                float x = d[i][0];
#pragma unroll
                for (int u = 1; u < U; u++) x = fmaxf(x, d[i][u]);
                for (int o2 = lpp; o2 < 32; o2 <<= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o2));
                mn[i] = fmaxf(m[i], x); /* finite: the step holds at least one valid position */
            }
        }
#pragma unroll
        for (int i = 0; i < G; i++) {
            float corr = exp2f(m[i] - mn[i]);
            l[i] *= corr;
#pragma unroll
            for (int j = 0; j < 8; j++) o[i][j] *= corr;
            m[i] = mn[i];
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            float vf[8] = {evt_llm_lo(vv[u].x), evt_llm_hi(vv[u].x), evt_llm_lo(vv[u].y), evt_llm_hi(vv[u].y),
                           evt_llm_lo(vv[u].z), evt_llm_hi(vv[u].z), evt_llm_lo(vv[u].w), evt_llm_hi(vv[u].w)};
#pragma unroll
            for (int i = 0; i < G; i++) {
                float p = RS ? __shfl_sync(0xffffffffu, pmine, (lane & 16) + (i * U + u) * (16 / N)) : exp2f(d[i][u] - m[i]);
                l[i] += p;
#pragma unroll
                for (int j = 0; j < 8; j++) o[i][j] += p * vf[j];
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            kv[u] = nkv[u];
            vv[u] = nvv[u];
            ok[u] = nok[u];
        }
    }
    EVT_ATTN_STAMP(5, 0);
    EVT_ATTN_STAMP(10, 224);
    evt_llm_attn_merge_warps<G, TEAM>(m, l, o, lpp, dst, dstride, odst, tm);
}

/* Generic path: positions in order, threads over head_dim. */
__device__ __forceinline__ void evt_llm_attn_slow(const evt_llm_attn_io &io, int64_t lo, int64_t hi, float *dst)
{
    int64_t hd = io.hd;
    float scale = 1.0f / sqrtf((float)hd), m = -INFINITY, l = 0;
    for (int64_t i = threadIdx.x; i < hd; i += evt_tile_threads()) dst[2 + i] = 0;
    for (int64_t t = lo; t < hi; t++) {
        const evt_bf16 *kp = io.kc + evt_llm_cache_off(io.bt, io.MP, io.PS, io.nkv, hd, io.b, t, io.g);
        const evt_bf16 *vp = io.vc + (kp - io.kc);
        float d = 0;
        for (int64_t i = threadIdx.x; i < hd; i += evt_tile_threads()) d += __bfloat162float(io.q[i]) * __bfloat162float(kp[i]);
        d = evt_llm_block_sum(d);
        float sc = d * scale, mn = sc > m ? sc : m, corr = expf(m - mn), p = expf(sc - mn);
        l = l * corr + p;
        for (int64_t i = threadIdx.x; i < hd; i += evt_tile_threads()) dst[2 + i] = dst[2 + i] * corr + p * __bfloat162float(vp[i]);
        m = mn;
    }
    if (threadIdx.x == 0) { dst[0] = m; dst[1] = l; }
}

__device__ __forceinline__ void evt_llm_split_range(int64_t L, int64_t S, int64_t s, int64_t *lo, int64_t *hi)
{
    int64_t chunk = (L + S - 1) / S;
    *lo = s * chunk;
    *hi = *lo + chunk < L ? *lo + chunk : L;
}

/* 1 when a split of G q heads over [lo, hi) takes the fast path (aligned:
   q and the cache 16-byte aligned) */
__device__ __forceinline__ bool evt_llm_attn_fast_ok(const evt_llm_attn_io &io, int64_t G, int64_t hi, bool aligned)
{
    int64_t hd = io.hd, lpp = hd / 8;
    return aligned && hd % 8 == 0 && lpp <= 32 && (lpp & (lpp - 1)) == 0 && (evt_tile_threads() & 31) == 0 &&
           (G == 1 || G == 2 || G == 4) &&
           (int64_t)(evt_tile_threads() >> 5) * (G * (hd + 2) + G + 1) + G <= EVT_LLM_ATTN_QKV_OFF && io.rows <= 0xffffffffLL &&
           io.nkv * hd <= 0xffffffffLL && hi <= 0xffffffffLL && io.PS > 0 && !(io.PS & (io.PS - 1));
}

/* 1 when attn_rope_split stages: a split of G q heads over [lo, hi) that
   takes the fast path, at most 8 warps, and the warp path's table and the
   q / k / v of the staging layout fit */
__device__ __forceinline__ bool evt_llm_attn_stage_ok(const evt_llm_attn_io &io, int64_t G, int64_t lo, int64_t hi, bool aligned)
{
    return EVT_LLM_ATTN_STAGE_FIRST && lo < hi && evt_tile_threads() <= 256 && 320 + io.hd <= EVT_LLM_ATTN_STAGE_OFF &&
           (G + 2) * io.hd <= EVT_LLM_ATTN_STAGE_QKV_BF16 &&
           evt_llm_attn_fast_ok(io, G, hi, aligned);
}

/* The fast path's first step of this warp (its positions lo + warp * ppw * U
 * + u * ppw + sub, u < U, as evt_llm_attn_fast numbers them) copied by
 * cp.async into the warp's staging slots, for warps 1-7 when all of them lie
 * below ehi; returns whether it did (warp-uniform). No registers stay in
 * flight, so a caller may run anything before the fast path collects them
 * (measured: holding the loads in registers across attn_rope_split's norm +
 * RoPE made ptxas spill 2 KB in the tile). Only where evt_llm_attn_stage_ok. */
__device__ __forceinline__ bool evt_llm_attn_stage_first(const evt_llm_attn_io &io, int64_t lo, int64_t ehi)
{
    constexpr int U = EVT_LLM_ATTN_U;
    const int lpp = (int)(io.hd / 8), ppw = 32 / lpp, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int sub = lane / lpp, part = lane % lpp;
    const int64_t t0 = lo + (int64_t)warp * ppw * U;
    if (warp == 0 || t0 + ppw * U > ehi) return false;
    const uint32_t psmask = (uint32_t)io.PS - 1;
    const int pssh = __ffs((int)io.PS) - 1;
    const int32_t *btb = io.bt + io.b * io.MP;
    const uint32_t rowstride = (uint32_t)(io.nkv * io.hd);
    const int64_t goff = io.g * io.hd + part * 8;
#pragma unroll
    for (int u = 0; u < U; u++) {
        const uint32_t t = (uint32_t)t0 + (uint32_t)(u * ppw + sub);
        const uint64_t off = evt_llm_attn_row_off(btb, pssh, psmask, rowstride, t);
        const uint32_t sk = evt_llm_attn_stage_slot(warp, lane, 2 * u);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sk), "l"(io.kc + goff + off) : "memory");
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sk + 512u), "l"(io.vc + goff + off) : "memory");
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
    return true;
}

/* Runs one split for G q heads (io.q + i * hd; results at dst + i * dstride):
 * the empty marker, the grouped fast path, or per head the generic one.
 * odst (not NULL when the split is the only one): head i's normalised
 * output, bf16, at odst + i * hd as well, as attn_merge would compute it.
 * staged: this warp's first step is in its staging slots
 * (evt_llm_attn_stage_first); stage_sync: some warp's may be (every thread
 * of the block passes the same). */
__device__ __forceinline__ void evt_llm_attend(evt_llm_attn_io io, int64_t G, int64_t lo, int64_t hi, float *dst,
                                               int64_t dstride, bool aligned, evt_bf16 *odst, bool staged = false,
                                               bool stage_sync = false)
{
    int64_t hd = io.hd, lpp = hd / 8;
    bool fast = evt_llm_attn_fast_ok(io, G, hi, aligned);
    const evt_llm_team blk = {}; /* unused: the whole block */
    if (lo >= hi) {
        for (int64_t e = threadIdx.x; e < G * (hd + 2); e += evt_tile_threads())
            dst[(e / (hd + 2)) * dstride + e % (hd + 2)] = e % (hd + 2) == 0 ? -INFINITY : 0.f;
        for (int64_t e = threadIdx.x; odst && e < G * hd; e += evt_tile_threads()) evt_llm_st(odst, e, 0.f);
        return;
    }
    /* head_dim 128 (every Qwen3): the lane-group width as a constant, so the
       score reductions unroll (a runtime width kept them a loop: ~150 of a
       step's ~990 instructions per warp at qwen3-8b, bench/RESULTS.md session 23) */
    if (fast && lpp == 16 && G == 4) evt_llm_attn_fast<4, 16>(io, lo, hi, dst, dstride, odst, staged, stage_sync, blk);
    else if (fast && lpp == 16 && G == 2) evt_llm_attn_fast<2, 16>(io, lo, hi, dst, dstride, odst, staged, stage_sync, blk);
    else if (fast && lpp == 16) evt_llm_attn_fast<1, 16>(io, lo, hi, dst, dstride, odst, staged, stage_sync, blk);
    else if (fast && G == 4) evt_llm_attn_fast<4, 0>(io, lo, hi, dst, dstride, odst, staged, stage_sync, blk);
    else if (fast && G == 2) evt_llm_attn_fast<2, 0>(io, lo, hi, dst, dstride, odst, staged, stage_sync, blk);
    else if (fast) evt_llm_attn_fast<1, 0>(io, lo, hi, dst, dstride, odst, staged, stage_sync, blk);
    else {
        for (int64_t i = 0; i < G; i++) {
            evt_llm_attn_io one = io;
            one.q = io.q + i * hd;
            evt_llm_attn_slow(one, lo, hi, dst + i * dstride);
            evt_tile_sync();
        }
        /* the block reads back what it wrote (the barrier above orders it) */
        for (int64_t e = threadIdx.x; odst && e < G * hd; e += evt_tile_threads()) {
            const float *di = dst + (e / hd) * dstride;
            float L = di[1];
            evt_llm_st(odst, e, L > 0 ? di[2 + e % hd] / L : 0.f);
        }
    }
}

/* attn_split for the G q heads h0 .. h0 + G of row b (one kv head's: one
   pass over split s's cache rows serves them all), split s of its positions */
__device__ __forceinline__ void evt_llm_attn_split_heads(const evt_task_args *a, int64_t b, int64_t h0, int64_t G, int64_t s)
{
    const evt_bf16 *q = (const evt_bf16 *)a->t[0].ptr;
    const int32_t *pos = (const int32_t *)a->t[4].ptr;
    float *part = (float *)a->t[5].ptr;
    int64_t nh = a->t[0].dim[1], hd = a->t[0].dim[2], S = a->t[5].dim[2], lo, hi;
    evt_llm_split_range((int64_t)pos[b] + 1, S, s, &lo, &hi);
    evt_llm_attn_io io;
    io.q = q + (b * nh + h0) * hd;
    io.kc = (const evt_bf16 *)a->t[1].ptr;
    io.vc = (const evt_bf16 *)a->t[2].ptr;
    io.bt = (const int32_t *)a->t[3].ptr;
    io.MP = a->t[3].dim[1]; io.PS = a->t[1].dim[1]; io.nkv = a->t[1].dim[2]; io.hd = hd;
    io.rows = a->t[1].dim[0] * io.PS;
    io.b = b; io.g = h0 / (nh / io.nkv);
    bool aligned = !(((uintptr_t)a->t[0].ptr | (uintptr_t)a->t[1].ptr | (uintptr_t)a->t[2].ptr) & 15);
    evt_llm_attend(io, G, lo, hi, part + ((b * nh + h0) * S + s) * (hd + 2), S * (hd + 2), aligned, NULL);
}

__device__ __noinline__ void attn_split_cuda(const evt_task_args *a)
{
    evt_llm_attn_split_heads(a, a->coord[0], a->coord[1], 1, a->coord[2]);
}

/* attn_split for the G q heads of kv head g (the prefill's form) */
__device__ __noinline__ void attn_split_group_cuda(const evt_task_args *a)
{
    const int64_t G = a->t[0].dim[1] / a->t[1].dim[2];
    evt_llm_attn_split_heads(a, a->coord[0], a->coord[1] * G, G, a->coord[2]);
}

/* o[b, heads h0 .. h0 + G) = their splits of part[B, nh, S, hd + 2] merged
 * and normalised: a thread per output element, each reading its head's S
 * (max, sum) pairs. */
__device__ __forceinline__ void evt_llm_merge_heads(const float *part, evt_bf16 *o, int64_t nh, int64_t S, int64_t hd, int64_t b,
                                                    int64_t h0, int64_t G)
{
    if (h0 + G > nh) G = nh - h0;
    if (S == 1) { /* one split (batches above 16): o = its output / its sum,
                     four elements' loads at once (a dependent round trip per
                     element took ~14 us per 4096-element task at qwen3-8b
                     B = 64, bench/RESULTS.md session 9) */
        const int64_t T = evt_tile_threads(), n = G * hd;
        for (int64_t e0 = threadIdx.x; e0 < n; e0 += 4 * T) {
            float v[4], L[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                int64_t e = e0 + u * T;
                const float *p = part + (b * nh + h0 + (e < n ? e / hd : 0)) * (hd + 2);
                v[u] = e < n ? p[2 + e % hd] : 0.f;
                L[u] = e < n ? p[1] : 0.f;
            }
#pragma unroll
            for (int u = 0; u < 4; u++) {
                int64_t e = e0 + u * T;
                if (e < n) evt_llm_st(o, b * nh * hd + h0 * hd + e, L[u] > 0 ? v[u] / L[u] : 0.f);
            }
        }
        return;
    }
#ifndef EVT_LLM_MERGE_LOADS_AT_ONCE
#define EVT_LLM_MERGE_LOADS_AT_ONCE 1 /* 0: the splits' loads in the loop below (the ablation, and the decode's
                                         larger-batch kernels: evt_decode_cuda_defines) */
#endif
    if (EVT_LLM_MERGE_LOADS_AT_ONCE && S <= 8) { /* batches up to 16: every split's (max, sum) and value in flight at once
                                                    (one round trip to L2 instead of a chain of them), then the loops
                                                    below over registers: the same float operations in the same order */
        for (int64_t e = threadIdx.x; e < G * hd; e += evt_tile_threads()) {
            int64_t h = h0 + e / hd, i = e % hd;
            const float *p = part + (b * nh + h) * S * (hd + 2);
            float pm[8], pl[8], pv[8];
#pragma unroll
            for (int s = 0; s < 8; s++) {
                const float *ps = p + (s < S ? s : 0) * (hd + 2);
                pm[s] = ps[0];
                pl[s] = ps[1];
                pv[s] = ps[2 + i];
            }
            float M = -INFINITY, L = 0, acc = 0;
#pragma unroll
            for (int s = 0; s < 8; s++)
                if (s < S) M = fmaxf(M, pm[s]);
#pragma unroll
            for (int s = 0; s < 8; s++) {
                if (s >= S || pl[s] == 0) continue; /* past the splits; an empty split */
                float w = expf(pm[s] - M);
                L += pl[s] * w;
                acc += pv[s] * w;
            }
            evt_llm_st(o, b * nh * hd + h * hd + i, L != 0.f ? acc / L : 0.f); /* NaN partials: NaN */
        }
        return;
    }
    for (int64_t e = threadIdx.x; e < G * hd; e += evt_tile_threads()) {
        int64_t h = h0 + e / hd, i = e % hd;
        const float *p = part + (b * nh + h) * S * (hd + 2);
        float M = -INFINITY, L = 0, acc = 0;
        for (int64_t s = 0; s < S; s++) M = fmaxf(M, p[s * (hd + 2)]);
        for (int64_t s = 0; s < S; s++) {
            const float *ps = p + s * (hd + 2);
            if (ps[1] == 0) continue; /* empty split */
            float w = expf(ps[0] - M);
            L += ps[1] * w;
            acc += ps[2 + i] * w;
        }
        evt_llm_st(o, b * nh * hd + h * hd + i, L != 0.f ? acc / L : 0.f); /* NaN partials: NaN */
    }
}

/* merge_last (attn_rope_split's iarg[1]) with S > 1: the task that
 * finishes its merge group last (P element [b, g * MG / nkv] of pc[B, MG]:
 * nkv / MG x S tasks) merges the group's q heads into o, as
 * attn_merge_group would, and sets the count back to 0 for the next launch.
 * The leader's acq_rel fetch-add after the block barrier releases this
 * task's partials and, in the last task, acquires the others' (the
 * runtime's notify / wait pattern); no task ever waits here. */
__device__ __noinline__ void evt_llm_merge_last(const evt_task_args *a, const float *part, evt_bf16 *o, int64_t b, int64_t g,
                                                   int64_t nkv, int64_t nh, int64_t S, int64_t hd)
{
    if (S <= 1 || !a->iarg[1]) return;
    static __shared__ int last;
    int32_t *pc = (int32_t *)a->t[9].ptr;
    int64_t MG = a->t[9].dim[1];
    if (MG < 1 || nkv % MG) { /* not a grouping of the kv heads: o is NaN, never silently stale (as llm.c) */
        int64_t G = nh / nkv;
        for (int64_t e = threadIdx.x; e < G * hd; e += evt_tile_threads()) evt_llm_st(o, (b * nh + g * G) * hd + e, NAN);
        return;
    }
    int64_t grp = g * MG / nkv, T = nkv / MG * S, GH = nh / MG;
    evt_tile_sync(); /* the block's partials are written */
    if (threadIdx.x == 0) {
        int32_t *c = pc + b * MG + grp;
        last = evt_add_acq_rel(c, 1) + 1 == T;
        if (last) *c = 0; /* every task of the group counted */
    }
    evt_tile_sync();
    if (last) evt_llm_merge_heads(part, o, nh, S, hd, b, grp * GH, GH);
}

/* q_rope + k_rope_append + attn_split for the G q heads of kv head g (see
 * llm.c): their q and the new k, v in shared memory, then one grouped split;
 * with one split (S = 1) also the merged output o of the group's heads, so
 * that no attn_merge task has to run after it.
 *
 * Before anything that depends on this step's qkv, each warp but warp 0
 * whose first step of the split lies below pos[b] stages that step's cache
 * rows (evt_llm_attn_stage_first) and the last warps copy the RoPE angle
 * row (row pos[b] of the rope table): their latency overlaps the norm, RoPE and
 * append, and in the early-loads form (attn_rope_split_early_cuda, what a
 * `prefetch` call runs under evt_compile_opts.early_loads) also the task's
 * waits, which warp 0 runs meanwhile (evt_tile_wait). Those positions were
 * written by earlier launches: the only cache element a launch writes is
 * position pos[b], by this call's own tasks (the registry's early_params;
 * the lowering checks that no other call of the program writes kc or vc). */
#ifdef EVT_LLM_ATTN_ONE_REQUEST
/* A kernel whose programs give every attn_rope_split task one request (the
   grid's first extent is the batch: evt_decode's batch-1-16 program, which it
   builds with `attn_rows` 1): the task is its coordinate's request, and the
   kernel carries no run loop. Code a kernel carries and never runs moves the
   allocation of the rest (bench/RESULTS.md, session 37: the loop cost batch 1
   0.8-2.7%), so this form is, token for token, the one-request tile (the
   same machine code: compare the cubins' .text). */
#define EVT_ATTN_REQ_B a->coord[0]
#define EVT_ATTN_REQ_WAIT(a) evt_tile_wait(a)
#define EVT_ATTN_REQ_RETURN(aborted) return
__device__ __noinline__ void attn_rope_split_cuda(const evt_task_args *a)
#else
/* One request (req) of a run (first: the run's first, which meets the
   task's waits; the others run after them). Returns true if the launch
   aborted. */
#define EVT_ATTN_REQ_B req
#define EVT_ATTN_REQ_WAIT(a) (first && evt_tile_wait(a))
#define EVT_ATTN_REQ_RETURN(aborted) return aborted
__device__ __noinline__ bool attn_rope_request_cuda(const evt_task_args *a, int64_t req, bool first)
#endif
{
    const evt_bf16 *qkv = (const evt_bf16 *)a->t[0].ptr, *wq = (const evt_bf16 *)a->t[1].ptr, *wk = (const evt_bf16 *)a->t[2].ptr;
    const int32_t *pos = (const int32_t *)a->t[3].ptr;
    evt_bf16 *kc = (evt_bf16 *)a->t[5].ptr, *vc = (evt_bf16 *)a->t[6].ptr;
    float *part = (float *)a->t[7].ptr;
    evt_bf16 *o = (evt_bf16 *)a->t[8].ptr;
    int64_t b = EVT_ATTN_REQ_B, g = a->coord[1], s = a->coord[2], N = a->t[0].dim[1];
    int64_t nkv = a->t[5].dim[2], hd = a->t[5].dim[3], nh = a->t[7].dim[1], S = a->t[7].dim[2];
    EVT_ATTN_STAMP(0, 0);
    int64_t G = nh / nkv, p = pos[b], lo, hi; /* pos, bt and rope: inputs, readable before the waits */
    evt_llm_split_range(p + 1, S, s, &lo, &hi);
    /* the angles of position p: row p of the rope table (NULL: no such row; the NaN outputs below) */
    const float *cs = p >= 0 && p < a->t[10].dim[0] && a->t[10].dim[1] == hd ? (const float *)a->t[10].ptr + p * hd : NULL;
    EVT_ATTN_STAMP(1, 0);
    float *dst = part + ((b * nh + g * G) * S + s) * (hd + 2);
    bool room = (G + 2) * hd <= 2 * (EVT_LLM_SMEM_FLOATS - EVT_LLM_ATTN_QKV_OFF) && G <= 8 && hd <= 1024;
    if (!room || !cs) { /* the builder refuses such shapes and makes a row for every cache position; never a silent result */
        if (EVT_ATTN_REQ_WAIT(a)) EVT_ATTN_REQ_RETURN(true);
        for (int64_t e = threadIdx.x; e < G * (hd + 2); e += evt_tile_threads()) dst[(e / (hd + 2)) * S * (hd + 2) + e % (hd + 2)] = NAN;
        for (int64_t e = threadIdx.x; S == 1 && e < G * hd; e += evt_tile_threads()) evt_llm_st(o, (b * nh + g * G) * hd + e, NAN);
        evt_llm_merge_last(a, part, o, b, g, nkv, nh, S, hd);
        EVT_ATTN_REQ_RETURN(false);
    }
    bool has_new = lo <= p && p < hi;
    evt_llm_attn_io io;
    io.kc = kc; io.vc = vc;
    io.bt = (const int32_t *)a->t[4].ptr;
    io.MP = a->t[4].dim[1]; io.PS = a->t[5].dim[1]; io.nkv = nkv; io.hd = hd;
    io.rows = a->t[5].dim[0] * io.PS;
    io.b = b; io.g = g;
    const bool aligned = !(((uintptr_t)kc | (uintptr_t)vc) & 15);
    const bool stage = evt_llm_attn_stage_ok(io, G, lo, hi, aligned);
    /* q heads, new k, new v: (G + 2) * hd bf16 in shared memory */
    evt_bf16 *sq = (evt_bf16 *)(evt_llm_smem + (stage ? EVT_LLM_ATTN_STAGE_QKV_OFF : EVT_LLM_ATTN_QKV_OFF)), *sk = sq + G * hd, *sv = sk + hd;
    io.q = sq;
    /* before the waits: the first step's old cache rows and the angle table */
    const bool staged = stage && evt_llm_attn_stage_first(io, lo, hi < p ? hi : p);
    const bool tab = lo < hi && evt_llm_group_norm_rope_warp_ok(G + (has_new ? 1 : 0), hd);
    if (tab) evt_llm_rope_table_warp<4>(cs);
    EVT_ATTN_STAMP(8, 224);
    EVT_ATTN_STAMP(9, 32);
    int64_t off = has_new ? evt_llm_cache_off(io.bt, io.MP, io.PS, nkv, hd, b, p, g) : 0;
    if (EVT_ATTN_REQ_WAIT(a)) { /* aborted: let the staged copies land before leaving */
        asm volatile("cp.async.wait_all;" ::: "memory");
        EVT_ATTN_REQ_RETURN(true);
    }
    EVT_ATTN_STAMP(2, 0);
    /* the new v is loaded before the norm + RoPE, so its latency overlaps it */
    const evt_bf16 *vin = qkv + b * N + (nh + nkv + g) * hd;
    bool v1 = hd <= evt_tile_threads(); /* one element per thread */
    evt_bf16 vmine = v1 && has_new && threadIdx.x < hd ? vin[threadIdx.x] : __float2bfloat16_rn(0.f);
    if (lo < hi) {
        evt_llm_group_norm_rope(qkv + b * N + g * G * hd, G, wq, has_new ? qkv + b * N + (nh + g) * hd : NULL, wk, hd, cs,
                                a->iarg[0], sq, sk, tab);
        if (has_new) {
            if (v1) {
                if (threadIdx.x < hd) sv[threadIdx.x] = vmine;
            } else {
                for (int64_t i = threadIdx.x; i < hd; i += evt_tile_threads()) sv[i] = vin[i];
            }
        }
        evt_tile_sync();
    }
    EVT_ATTN_STAMP(3, 0);
    if (has_new) { /* the group's task writes the new k, v, then reads them back with the rest of its split (a
                      block barrier makes the block's global writes visible to it); no other task of this launch
                      reads position p from the cache. Reading the new position from shared memory instead
                      was a branch per load in the scoring loop, and its registers made the tile spill. */
        for (int64_t i = threadIdx.x; i < hd; i += evt_tile_threads()) { kc[off + i] = sk[i]; vc[off + i] = sv[i]; }
        evt_tile_sync();
    }
    EVT_ATTN_STAMP(4, 0);
    evt_llm_attend(io, G, lo, hi, dst, S * (hd + 2), aligned, S == 1 ? o + (b * nh + g * G) * hd : NULL, staged, stage);
    EVT_ATTN_STAMP(6, 0);
    evt_llm_merge_last(a, part, o, b, g, nkv, nh, S, hd);
    EVT_ATTN_STAMP(7, 0);
#ifndef EVT_LLM_ATTN_ONE_REQUEST
    return false;
#endif
}
#undef EVT_ATTN_REQ_B
#undef EVT_ATTN_REQ_WAIT
#undef EVT_ATTN_REQ_RETURN
#ifndef EVT_LLM_ATTN_ONE_REQUEST
/* a run's requests in teams of warps (evt_llm_attn_teams, evt_llm_attn_team_run), their scoring loop on the tensor
   cores (evt_llm_attn_mma) */
#include "llm_attn_mma.cuh"
#include "llm_attn_teams.cuh"

/* The task's requests (tiles/attn_requests.h: one, or a run of them at
   large batches): in teams where the shapes allow, else one after the other
   (a barrier between requests: each reuses the shared memory). One
   dispatch, one wait and one notify for the run. */
__device__ __noinline__ void attn_rope_split_cuda(const evt_task_args *a)
{
    int64_t b0, b1;
    evt_tile_attn_requests(a, &b0, &b1);
    if (b0 >= b1) { /* past the batch: no request, the waits still met */
        evt_tile_wait(a);
        return;
    }
    const int NT = evt_llm_attn_teams(a, b1 - b0);
    if (NT) {
        evt_llm_attn_team_run(a, b0, b1, NT);
        return;
    }
    for (int64_t b = b0; b < b1; b++) {
        if (b > b0) evt_tile_sync();
        if (attn_rope_request_cuda(a, b, b == b0)) return;
    }
}
#endif
/* the early-loads form is the same code: evt_tile_wait meets warp 0 there */
__device__ __forceinline__ void attn_rope_split_early_cuda(const evt_task_args *a) { attn_rope_split_cuda(a); }

/* evt_llm_merge_heads over an attn_merge / attn_merge_group task's tensors */
__device__ __forceinline__ void evt_llm_merge_task(const evt_task_args *a, int64_t h0, int64_t G)
{
    evt_llm_merge_heads((const float *)a->t[0].ptr, (evt_bf16 *)a->t[1].ptr, a->t[0].dim[1], a->t[0].dim[2], a->t[0].dim[3] - 2,
                        a->coord[0], h0, G);
}
__device__ __noinline__ void attn_merge_cuda(const evt_task_args *a) { evt_llm_merge_task(a, a->coord[1], 1); }
__device__ __noinline__ void attn_merge_group_cuda(const evt_task_args *a) { evt_llm_merge_task(a, a->coord[1] * a->iarg[0], a->iarg[0]); }

#endif
