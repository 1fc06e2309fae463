/* moe_index.h — routing and the MoE grouping index, shared verbatim by the
 * C tiles (moe.c) and the CUDA tiles (moe.cuh). evt_moe_topk: one token's
 * K highest logits (lowest index on ties) and their softmax weights.
 * evt_moe_build_index (one thread builds it on the GPU): rows grouped
 * expert-major, tokens in order within an expert. indptr[e] = first row of
 * expert e, pos[t, k] = row of (t, k), row_tok[r] = token of row r; routing
 * entries outside [0, E) get no row (pos = -1). */
#ifndef EVT_MOE_INDEX_H
#define EVT_MOE_INDEX_H
#include <math.h>
#include <stdint.h>
#ifdef __CUDACC__
#define EVT_MOE_FN __device__ __noinline__
#else
#define EVT_MOE_FN static
#endif

EVT_MOE_FN void evt_moe_topk(const float *logits, int64_t E, int64_t K, int32_t *topk, float *topw)
{
    unsigned char taken[256] = {0}; /* E <= 256 (callers clip) */
    float mx = -INFINITY, z = 0;
    for (int64_t k = 0; k < K; k++) {
        int64_t best = -1;
        for (int64_t e = 0; e < E; e++)
            if (!taken[e] && (best < 0 || logits[e] > logits[best])) best = e;
        if (best < 0) best = 0;
        taken[best] = 1;
        topk[k] = (int32_t)best;
        if (logits[best] > mx) mx = logits[best];
    }
    for (int64_t k = 0; k < K; k++) z += expf(logits[topk[k]] - mx);
    for (int64_t k = 0; k < K; k++) topw[k] = expf(logits[topk[k]] - mx) / z;
}

EVT_MOE_FN void evt_moe_build_index(const int32_t *topk, int64_t T, int64_t K, int64_t E,
                        int32_t *indptr, int32_t *pos, int32_t *row_tok, int64_t nrows)
{
    for (int64_t e = 0; e <= E; e++) indptr[e] = 0;
    for (int64_t i = 0; i < T * K; i++)
        if (topk[i] >= 0 && topk[i] < E) indptr[topk[i] + 1]++;
    for (int64_t e = 0; e < E; e++) indptr[e + 1] += indptr[e];
    int64_t r = 0;
    for (int64_t e = 0; e < E; e++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t k = 0; k < K; k++)
                if (topk[t * K + k] == e) {
                    pos[t * K + k] = (int32_t)r;
                    if (r < nrows) row_tok[r] = (int32_t)t;
                    r++;
                }
    for (int64_t i = 0; i < T * K; i++)
        if (topk[i] < 0 || topk[i] >= E) pos[i] = -1;
    for (; r < nrows; r++) row_tok[r] = 0;
}

#endif
