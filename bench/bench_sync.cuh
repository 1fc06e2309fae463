/* bench_sync.cuh — what the single-file GPU microbenchmarks of bench/
 * (handoff.cu, notify_stall.cu, ll_handoff.cu, kv_stream.cu, x_reread.cu, x_multicast.cu, icache.cu,
 * stream_bw.cu)
 * share: the CUDA-call checks, the device-side timer and protocol loads,
 * each spelled as the runtime's PTX spells it (src/device/evt_device.h),
 * the streaming loads and mbarrier waits of the load-only benches (also
 * stream_bw.cu), and a host-side timer of back-to-back launches (METHOD:
 * warm-up, events, median). */
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

/* Copies of a buffer of `bytes` (every byte `fill`), enough that launches
   rotating over them (copy i % size() for launch i) find none in L2: at
   least 2, about 400 MiB in all. bench_free_copies releases them. */
static std::vector<char *> bench_cold_copies(size_t bytes, int fill)
{
    std::vector<char *> c((size_t)std::max<size_t>(2, (size_t)(400u << 20) / bytes + 1));
    for (auto &p : c) {
        CKX(cudaMalloc(&p, bytes));
        CKX(cudaMemset(p, fill, bytes));
    }
    return c;
}
static void bench_free_copies(std::vector<char *> &c)
{
    for (auto &p : c) CKX(cudaFree(p));
    c.clear();
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
/* 16 bytes through the read-only path, as the GEMV tiles read weights
   (evt_llm_ldw without its hint) */
static __device__ __forceinline__ uint4 ldg16(const void *p)
{
    uint4 v;
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
static __device__ __forceinline__ uint32_t saddr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
/* spin until the mbarrier completes the phase of this parity */
static __device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity)
{
    uint32_t ok;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(ok)
                     : "r"(saddr(bar)), "r"(parity)
                     : "memory");
    } while (!ok);
}
#endif
