/* bench_sync.cuh — what the single-file GPU microbenchmarks of bench/
 * (handoff.cu, notify_stall.cu, ll_handoff.cu, kv_stream.cu, x_reread.cu)
 * share: the CUDA-call checks, the device-side timer and protocol loads,
 * each spelled as the runtime's PTX spells it (src/device/evt_device.h),
 * and a host-side timer of back-to-back launches (METHOD: warm-up, events,
 * median). */
#ifndef EVT_BENCH_SYNC_CUH
#define EVT_BENCH_SYNC_CUH
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <vector>

/* in main(): print the failing call and return 1 */
#define CK(x)                                                                                          \
    do {                                                                                               \
        cudaError_t e_ = (x);                                                                          \
        if (e_) { printf("%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); return 1; }     \
    } while (0)

/* anywhere on the host: print the failing call and exit */
#define CKX(x)                                                                                         \
    do {                                                                                               \
        cudaError_t e_ = (x);                                                                          \
        if (e_) { printf("%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); }      \
    } while (0)

/* us per launch: launch(i) issues launch i (i selects rotating inputs);
   3 warm-up launches, then the median of 5 repetitions of 20 back-to-back
   launches between two events */
template <typename F>
static float bench_launch_us(F launch)
{
    cudaEvent_t a, b;
    CKX(cudaEventCreate(&a));
    CKX(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) launch(i);
    CKX(cudaGetLastError());
    CKX(cudaDeviceSynchronize());
    std::vector<float> r;
    for (int rep = 0; rep < 5; rep++) {
        CKX(cudaEventRecord(a));
        for (int i = 0; i < 20; i++) launch(i);
        CKX(cudaEventRecord(b));
        CKX(cudaEventSynchronize(b));
        CKX(cudaGetLastError());
        float ms;
        CKX(cudaEventElapsedTime(&ms, a, b));
        r.push_back(ms * 1000 / 20);
    }
    std::sort(r.begin(), r.end());
    CKX(cudaEventDestroy(a));
    CKX(cudaEventDestroy(b));
    return r[2];
}

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
