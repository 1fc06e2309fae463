/* spin.cuh — synthetic tiles, CUDA (same function as spin.c).
 *   spin: thread 0 busy-waits `ns` (x factor for heavy tasks:
 *       lin % period >= period - heavy) on the global nanosecond timer, then
 *       Y[lin] = 1 + lin + sum X[lin*fan ..) (same order as C: bitwise).
 *   chain_step: X[i] = X[i - dir] + 1 (1 where i - dir is outside X).
 *   mark: M[lin] += 1.
 *   X may be produced in the same launch: plain loads only. */
#ifndef EVT_TILE_SPIN_CUH
#define EVT_TILE_SPIN_CUH

__device__ __forceinline__ uint64_t evt_tile_globaltimer(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ void spin_cuda(const evt_task_args *a)
{
    if (threadIdx.x != 0) return;
    int64_t lin = 0;
    for (int k = 0; k < a->ncoord; k++) lin = lin * a->grid[k] + a->coord[k];
    int64_t ns = a->iarg[0], fan = a->iarg[1], period = a->iarg[2], heavy = a->iarg[3], factor = a->iarg[4];
    if (period > 0 && lin % period >= period - heavy) ns *= factor;
    if (ns > 0) {
        uint64_t end = evt_tile_globaltimer() + (uint64_t)ns;
        while (evt_tile_globaltimer() < end) { }
    }
    const float *X = (const float *)a->t[0].ptr;
    float *Y = (float *)a->t[1].ptr;
    float s = 1.0f + (float)lin;
    for (int64_t k = lin * fan; k < (lin + 1) * fan && k < a->t[0].dim[0]; k++) s += X[k];
    if (lin < a->t[1].dim[0]) Y[lin] = s;
}

__device__ __forceinline__ void mark_cuda(const evt_task_args *a)
{
    if (threadIdx.x != 0) return;
    int32_t *M = (int32_t *)a->t[0].ptr;
    int64_t lin = 0;
    for (int k = 0; k < a->ncoord; k++) lin = lin * a->grid[k] + a->coord[k];
    if (lin < a->t[0].dim[0]) M[lin] += 1;
}

__device__ __forceinline__ void chain_step_cuda(const evt_task_args *a)
{
    if (threadIdx.x != 0) return;
    float *X = (float *)a->t[0].ptr;
    int64_t i = a->coord[0], n = a->t[0].dim[0], prev = i - a->iarg[0];
    if (i < n) X[i] = (prev >= 0 && prev < n ? X[prev] : 0.0f) + 1.0f;
}
#endif
