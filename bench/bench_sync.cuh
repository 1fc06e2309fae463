/* bench_sync.cuh — what the single-file GPU microbenchmarks of bench/
 * (handoff.cu, notify_stall.cu, ll_handoff.cu) share: the CUDA-call check of
 * their main() and the device-side timer and protocol loads, each spelled
 * as the runtime's PTX spells it (src/device/evt_device.h). */
#ifndef EVT_BENCH_SYNC_CUH
#define EVT_BENCH_SYNC_CUH
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>

/* in main(): print the failing call and return 1 */
#define CK(x)                                                                                          \
    do {                                                                                               \
        cudaError_t e_ = (x);                                                                          \
        if (e_) { printf("%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); return 1; }     \
    } while (0)

/* the global timer, ns (32 ns steps on an H100) */
static __device__ __forceinline__ uint64_t now_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
/* a poll of a counter the runtime's way */
static __device__ __forceinline__ int ld_acquire(const int *p)
{
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
#endif
