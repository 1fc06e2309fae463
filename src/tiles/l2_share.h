/* l2_share.h — which bytes task p of P pulls into L2 in l2_prefetch, shared
 * verbatim by the C tile (llm.c) and the CUDA tile (llm.cuh). The first n
 * weight tensors of the call are one concatenated byte range of S bytes;
 * task p takes [lo, hi): 128-byte-aligned boundaries (a cache line), the
 * last task up to S, so the P shares cover every byte exactly once. */
#ifndef EVT_L2_SHARE_H
#define EVT_L2_SHARE_H
#include <stdint.h>
#ifdef __CUDACC__
#define EVT_L2_FN __device__ __forceinline__
#else
#define EVT_L2_FN static inline
#endif

EVT_L2_FN void evt_l2_share(int64_t S, int64_t P, int64_t p, int64_t *lo, int64_t *hi)
{
    if (S <= 0 || P < 1 || p < 0 || p >= P) { *lo = *hi = 0; return; }
    int64_t lines = S / 128;
    *lo = lines * p / P * 128;
    *hi = p + 1 == P ? S : lines * (p + 1) / P * 128;
}

/* Bytes of tensor i of the call (bf16 rank-2 weights: dim[0] * dim[1] * 2). */
EVT_L2_FN int64_t evt_l2_bytes(const evt_task_args *a, int i) { return a->t[i].dim[0] * a->t[i].dim[1] * 2; }

/* The tensors l2_prefetch reads: iarg[0], clipped to the ones it was given. */
EVT_L2_FN int evt_l2_count(const evt_task_args *a)
{
    int64_t n = a->iarg[0];
    if (n > a->ntensors) n = a->ntensors;
    return n < 0 ? 0 : (int)n;
}
#endif
