/* llm_stream.cuh — the linear tiles' side of the weight stream (CUDA,
 * sm_90; src/device/evt_stream.h is the machinery). Included by llm.cuh.
 *
 * Plan (linear, linear_res, mlp_up; evt_llm_stream_plan): tile nb of T owns
 * rows [n0, n1) of W (N x K, row-major). For B <= EVT_LLM_STREAM_MAX_B the
 * rows stream in row groups of 16 (K <= 1024: 16 whole rows are one 32 KB
 * copy) or 8 (whole rows up to K = 2048, else 4 KB column blocks of the 8
 * rows); mlp_up streams its gate and up rows unit by unit. Larger batches
 * are not streamed: the register path (llm.cuh) runs them.
 *
 * Compute (evt_llm_gemv_streamed): mma.sync m16n8k16 with x as the A
 * operand (16 batch rows, zero beyond B) and 8 weight rows as the B operand
 * (row groups of 16: two such tiles sharing each x fragment). K is permuted
 * identically in both operands, so each lane reads 16 contiguous bytes of an
 * x row (global memory, produced in the launch: plain loads) and of a
 * weight row (the slot) per 32-column step. Every compute warp takes an
 * equal run of the steps of every chunk and keeps its partial sums over the
 * row group's column blocks in registers; at the end of a row group the
 * warps' partials meet in shared memory and are summed in warp order (the
 * same order every run: results are reproducible bit for bit).
 */
#ifndef EVT_TILE_LLM_STREAM_CUH
#define EVT_TILE_LLM_STREAM_CUH

#ifndef EVT_LLM_STREAM_UNROLL
#define EVT_LLM_STREAM_UNROLL 4 /* 32-column steps whose x loads a warp issues together */
#endif
#ifndef EVT_LLM_STREAM_MAX_B
#define EVT_LLM_STREAM_MAX_B 16 /* batch rows the streamed GEMV takes (x is reread per row group) */
#endif

/* The plan of a linear-family task (0: not streamed). Producer and tile
 * both call it. */
template <int MODE>
__device__ __forceinline__ int evt_llm_stream_plan(const evt_task_args *a, evt_stream_plan *P)
{
    constexpr int NW = MODE == 2 ? 2 : 1;
    int64_t B = a->t[0].dim[0], K = a->t[0].dim[1], N = a->t[1].dim[0], n0, n1;
    uintptr_t al = (uintptr_t)a->t[0].ptr | (uintptr_t)a->t[1].ptr | (NW > 1 ? (uintptr_t)a->t[2].ptr : 0);
    P->nchunks = 0;
    if (B < 1 || B > EVT_LLM_STREAM_MAX_B || B > 16 || (K & 31) || (al & 15) || (evt_tile_threads() & 31)) return 0;
    evt_llm_tile_rows(a->coord[0], a->iarg[0], N, &n0, &n1);
    int rb = K * 2 * 16 <= EVT_STREAM_SLOT_BYTES ? 16 : 8;
    return evt_stream_band(P, a->t[1].ptr, NW > 1 ? a->t[2].ptr : a->t[1].ptr, NW, K * 2, n0, n1 - n0, rb);
}

/* EVT_NOGEMV (a measurement build, bench/RESULTS.md): the stream's machinery
 * without the streamed GEMV; only for batches that stream nothing (B > 16). */
#if EVT_STREAM && !defined(EVT_NOGEMV)
/* RT: 8-row weight tiles per row group (rb = 8 * RT); XB: 8-row halves of
 * the batch (B <= 8 * XB). */
template <int MODE, int RT, int XB>
__device__ __forceinline__ void evt_llm_gemv_streamed(const evt_task_args *a, const evt_stream_plan &P)
{
    constexpr int NW = MODE == 2 ? 2 : 1, UN = EVT_LLM_STREAM_UNROLL;
    const evt_bf16 *x = (const evt_bf16 *)a->t[0].ptr;
    const int64_t B = a->t[0].dim[0], K = a->t[0].dim[1];
    const int warp = threadIdx.x >> 5, nwarps = evt_tile_threads() >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const uint32_t seq0 = evt_stream_begin();
    const uint4 z = make_uint4(0, 0, 0, 0);
    const bool xok0 = g < B, xok1 = XB > 1 && g + 8 < B;
    const evt_bf16 *x0 = x + (int64_t)g * K + 8 * t, *x1 = x + (int64_t)(g + 8) * K + 8 * t;
    float *part = evt_llm_smem; /* [nwarps][NW][RT][4][32] */
    float acc[NW][RT][4];
    const int nunits = P.nrg * P.nkb;
    for (int u = 0; u < nunits; u++) {
        evt_stream_chunk k = evt_stream_chunk_of(&P, u * NW);
        const int64_t k0 = (int64_t)k.kb * (P.cb / 2);
        const int steps = k.bytes / 64, s0 = warp * steps / nwarps, s1 = (warp + 1) * steps / nwarps;
        if (k.kb == 0) {
#pragma unroll
            for (int m = 0; m < NW; m++)
#pragma unroll
                for (int r = 0; r < RT; r++)
#pragma unroll
                    for (int e = 0; e < 4; e++) acc[m][r][e] = 0.f;
        }
        const unsigned char *base[NW];
        for (int s = s0; s < s1 || s == s0; s += UN) {
            /* x first: its loads are in flight while the chunk lands */
            uint4 xa[UN][XB];
#pragma unroll
            for (int j = 0; j < UN; j++) {
                bool ok = s + j < s1;
                int64_t kk = k0 + (int64_t)(s + j) * 32;
                xa[j][0] = ok && xok0 ? evt_llm_ldx(x0 + kk) : z;
                if (XB > 1) xa[j][XB - 1] = ok && xok1 ? evt_llm_ldx(x1 + kk) : z;
            }
            if (s == s0)
#pragma unroll
                for (int m = 0; m < NW; m++) base[m] = evt_stream_wait(seq0 + (uint32_t)(u * NW + m));
#pragma unroll
            for (int j = 0; j < UN; j++) {
                if (s + j >= s1) break;
                uint32_t a1x = XB > 1 ? xa[j][XB - 1].x : 0u, a1y = XB > 1 ? xa[j][XB - 1].y : 0u;
                uint32_t a1z = XB > 1 ? xa[j][XB - 1].z : 0u, a1w = XB > 1 ? xa[j][XB - 1].w : 0u;
#pragma unroll
                for (int m = 0; m < NW; m++)
#pragma unroll
                    for (int r = 0; r < RT; r++) {
                        int row = r * 8 + g;
                        uint4 w = row < k.nr ? *(const uint4 *)(base[m] + (size_t)row * k.bytes + (s + j) * 64 + 16 * t) : z;
                        evt_llm_mma(acc[m][r], xa[j][0].x, a1x, xa[j][0].y, a1y, w.x, w.y);
                        evt_llm_mma(acc[m][r], xa[j][0].z, a1z, xa[j][0].w, a1w, w.z, w.w);
                    }
            }
            if (s1 <= s0) break;
        }
#pragma unroll
        for (int m = 0; m < NW; m++) evt_stream_release(seq0 + (uint32_t)(u * NW + m));
        if (k.kb != P.nkb - 1) continue;
        /* row group done: the warps' partials, summed in warp order */
#pragma unroll
        for (int m = 0; m < NW; m++)
#pragma unroll
            for (int r = 0; r < RT; r++)
#pragma unroll
                for (int e = 0; e < 4; e++) part[(((warp * NW + m) * RT + r) * 4 + e) * 32 + lane] = acc[m][r][e];
        evt_tile_sync();
        for (int i = threadIdx.x; i < RT * 128; i += evt_tile_threads()) {
            int r = i / 128, e = (i / 32) % 4, l = i % 32;
            int64_t b = (l >> 2) + 8 * (e >> 1), row = r * 8 + 2 * (l & 3) + (e & 1);
            if (b >= B || row >= k.nr) continue;
            float s0v = 0.f, s1v = 0.f;
            for (int w = 0; w < nwarps; w++) {
                s0v += part[(((w * NW + 0) * RT + r) * 4 + e) * 32 + l];
                s1v += part[(((w * NW + NW - 1) * RT + r) * 4 + e) * 32 + l];
            }
            evt_llm_out<MODE>(a, b, k.row + row, s0v, s1v);
        }
        evt_tile_sync();
    }
    evt_stream_end(seq0, nunits * NW);
}

/* The task's weights came through the stream: run the GEMV on them. Returns
 * false when the plan streams nothing (the caller takes the register path,
 * as the producer did not stream either). */
template <int MODE>
__device__ __forceinline__ bool evt_llm_gemv_stream(const evt_task_args *a)
{
    evt_stream_plan P;
    if (!a->stream || !evt_llm_stream_plan<MODE>(a, &P)) return false;
    bool wide = EVT_LLM_STREAM_MAX_B > 8 && a->t[0].dim[0] > 8;
    if (P.rb > 8) {
        if (wide) evt_llm_gemv_streamed<MODE, 2, 2>(a, P);
        else evt_llm_gemv_streamed<MODE, 2, 1>(a, P);
    } else {
        if (wide) evt_llm_gemv_streamed<MODE, 1, 2>(a, P);
        else evt_llm_gemv_streamed<MODE, 1, 1>(a, P);
    }
    return true;
}
#else
template <int MODE>
__device__ __forceinline__ bool evt_llm_gemv_stream(const evt_task_args *) { return false; }
#endif

#endif
