/* stream_bw.cu — how fast can one block per SM stream weights from HBM?
 *
 * 132 blocks of 256 threads each stream their own 1.5 MiB (200 MB in all,
 * four times the L2) and touch every byte, two ways:
 *   tma   bulk asynchronous copies (cp.async.bulk, the TMA engine) into a
 *         ring of S shared-memory slots of STAGE bytes, each stage issued as
 *         STAGE / COPY copies by warp 0; full/empty mbarriers per slot
 *         (the protocol of src/tiles/llm_stream.cuh)
 *   reg   plain 16-byte loads, UN of them in flight per thread
 * It answers why llm_stream.cuh's per-row 1 KB copies lose to register loads
 * and what copy size a tiled weight layout would need (bench/RESULTS.md).
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 bench/stream_bw.cu -o build/stream_bw && build/stream_bw
 */
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_) { printf("%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); return 1; } \
    } while (0)

static __device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

static __device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity)
{
    uint32_t ok;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(ok) : "r"(smem_addr(bar)), "r"(parity) : "memory");
    } while (!ok);
}

extern __shared__ __align__(128) unsigned char ring[];

/* Warp 0: stage s into slot s % S (after every warp has read its last use). */
static __device__ void issue_stage(const char *src, long s, int stage, int copy, int S, uint64_t *full, uint64_t *empty)
{
    int lane = threadIdx.x & 31, slot = (int)(s % S);
    if (s >= S) mbar_wait(&empty[slot], (uint32_t)((s / S - 1) & 1));
    if (lane == 0)
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(&full[slot])), "r"(stage) : "memory");
    __syncwarp();
    for (int i = lane; i < stage / copy; i += 32)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     ::"r"(smem_addr(ring + slot * stage + i * copy)), "l"(src + s * stage + (long)i * copy), "r"(copy),
                     "r"(smem_addr(&full[slot])) : "memory");
}

__global__ void stream_tma(const char *src, long per_block, int stage, int copy, int S, float *sink)
{
    __shared__ uint64_t full[16], empty[16];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
    if (threadIdx.x == 0) {
        for (int i = 0; i < S; i++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&full[i])));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(&empty[i])), "r"(nwarps));
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    const char *p = src + blockIdx.x * per_block;
    long nstages = per_block / stage;
    if (warp == 0)
        for (long s = 0; s < S && s < nstages; s++) issue_stage(p, s, stage, copy, S, full, empty);
    float acc = 0;
    for (long s = 0; s < nstages; s++) {
        int slot = (int)(s % S);
        mbar_wait(&full[slot], (uint32_t)((s / S) & 1));
        const uint4 *q = (const uint4 *)(ring + slot * stage);
        for (int i = threadIdx.x; i < stage / 16; i += blockDim.x) {
            uint4 v = q[i];
            acc += __uint_as_float(v.x ^ v.w);
        }
        __syncwarp();
        if (lane == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(&empty[slot])) : "memory");
        if (warp == 0 && s + S < nstages) issue_stage(p, s + S, stage, copy, S, full, empty);
    }
    if (acc == 1.2345f) sink[0] = acc; /* keeps the reads */
}

template <int UN>
__global__ void stream_reg(const char *src, long per_block, float *sink)
{
    const uint4 *p = (const uint4 *)(src + blockIdx.x * per_block);
    long n = per_block / 16;
    float acc = 0;
    for (long i = threadIdx.x; i < n; i += (long)blockDim.x * UN) {
        uint4 v[UN];
#pragma unroll
        for (int u = 0; u < UN; u++) {
            long j = i + (long)u * blockDim.x;
            if (j < n)
                asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                             : "=r"(v[u].x), "=r"(v[u].y), "=r"(v[u].z), "=r"(v[u].w) : "l"(p + j));
            else
                v[u] = make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < UN; u++) acc += __uint_as_float(v[u].x ^ v[u].w);
    }
    if (acc == 1.2345f) sink[0] = acc;
}

/* Best of 5 x 4 back-to-back launches, GB/s of bytes streamed. */
template <class F>
static double best_gbs(F launch, double bytes)
{
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    float best = 1e30f;
    for (int rep = 0; rep < 5; rep++) {
        cudaEventRecord(a);
        for (int it = 0; it < 4; it++) launch();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        if (ms < best) best = ms;
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return bytes * 4 / (best * 1e-3) / 1e9;
}

int main(void)
{
    const long per = 1536 * 1024;
    const int nb = 132;
    char *src;
    float *sink;
    CK(cudaMalloc(&src, per * nb));
    CK(cudaMalloc(&sink, 4));
    CK(cudaMemset(src, 1, per * nb));
    CK(cudaFuncSetAttribute(stream_tma, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
    const int cfg[][3] = {{16384, 512, 8},  {16384, 1024, 8},  {16384, 2048, 8}, {16384, 4096, 8},  {16384, 16384, 8},
                          {16384, 1024, 4}, {16384, 16384, 4}, {8192, 8192, 16}, {32768, 1024, 6}, {32768, 32768, 6}};
    for (const auto &c : cfg) {
        double g = best_gbs([&] { stream_tma<<<nb, 256, c[0] * c[2]>>>(src, per, c[0], c[1], c[2], sink); }, (double)per * nb);
        CK(cudaGetLastError());
        printf("tma  stage %6d B  copy %6d B  slots %2d: %6.0f GB/s\n", c[0], c[1], c[2], g);
    }
    printf("reg  4 x 16 B in flight per thread: %6.0f GB/s\n", best_gbs([&] { stream_reg<4><<<nb, 256>>>(src, per, sink); }, (double)per * nb));
    printf("reg  8 x 16 B in flight per thread: %6.0f GB/s\n", best_gbs([&] { stream_reg<8><<<nb, 256>>>(src, per, sink); }, (double)per * nb));
    CK(cudaDeviceSynchronize());
    return 0;
}
