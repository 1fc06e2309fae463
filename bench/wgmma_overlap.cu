/* wgmma_overlap.cu — do two warpgroups' wgmma chains overlap on one SM, in
 * the forms the batch-17-64 TMA GEMV issues them?
 *
 * The batch-64 GEMV stages run at ~1.5x their bytes: warpgroup 0's wgmmas
 * cost ~100-120 cycles each, one a k16 step, because ptxas serialises the
 * wgmmas of a called function (a WARPGROUP.DEPBAR after every HGMMA:
 * src/tiles/llm_tma.cuh, bench/RESULTS.md sessions 44 and 53). If a second
 * warpgroup's serialised chain runs beside the first at no cost to it, the
 * stage's k16 steps split between the two warpgroups would halve the
 * products' time; if the two chains share one pipe, nothing is gained.
 *
 * Every block (one per SM, 256 threads) runs STAGES stages of 8 wgmmas
 * (m64nNk16, bf16 in, f32 out; A = 64 rows of "x", B = N rows of "W", both
 * in shared memory in the 128-byte swizzled layout the TMA boxes have) in
 * warpgroup 0 alone or in both at once, each warpgroup on its own buffers,
 * in three forms:
 *   serial     fence, wgmma, commit, wait 0 for every wgmma (inline)
 *   pipelined  fence, 8 wgmmas, commit, wait 0 a stage (inline)
 *   called     the pipelined form's loop in a __noinline__ function, as the
 *              megakernel calls its tiles (ptxas then serialises it: C7510)
 * and prints the cycles a wgmma takes per warpgroup (clock64 around the
 * loop, mean over the blocks). Timing only: the buffers hold small values
 * and the sums are stored so that nothing is dropped.
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 bench/wgmma_overlap.cu -o build/wgmma_overlap
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
typedef struct __align__(64) evt_tmap { unsigned long long w[16]; } evt_tmap; /* (llm_tma.cuh's map type, which the PTX header names) */
#include "../src/tiles/llm_tma_ptx.cuh"

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

constexpr int STAGES = 2000;
constexpr uint32_t XBYTES = 2 * 8192;      /* two 64-k chunks of 64 x rows */
constexpr uint32_t WBYTES = 2 * 96 * 128;  /* two 64-k chunks of up to 96 W rows */
constexpr uint32_t REGION = XBYTES + WBYTES; /* a warpgroup's buffers (a multiple of 1024) */

/* The 8 wgmmas of a stage: chunk k / 4, k16 step k % 4. */
template <int N> __device__ __forceinline__ uint64_t desc_x(uint32_t xs, int k) { return evt_tma_desc(xs + (uint32_t)(k >> 2) * 8192u + 32u * (k & 3)); }
template <int N> __device__ __forceinline__ uint64_t desc_w(uint32_t ws, int k) { return evt_tma_desc(ws + (uint32_t)(k >> 2) * N * 128u + 32u * (k & 3)); }

template <int N> __device__ __noinline__ float called_loop(uint32_t xs, uint32_t ws)
{
    float acc[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; i++) acc[i] = 0.f;
    for (int j = 0; j < STAGES; j++) {
        evt_tma_wg_fence();
#pragma unroll
        for (int k = 0; k < 8; k++) evt_tma_wgmma<N>(acc, desc_x<N>(xs, k), desc_w<N>(ws, k));
        evt_tma_wg_commit();
        evt_tma_wg_wait_all();
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < N / 2; i++) s += acc[i];
    return s;
}

/* FORM 0 serial, 1 pipelined, 2 called; wgs: 1 or 2 warpgroups multiply */
template <int N, int FORM> __global__ void __launch_bounds__(256, 1) k_wgmma(int wgs, long long *cycles, float *sink)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    const int wg = threadIdx.x >> 7;
    for (uint32_t i = threadIdx.x; i < 2 * REGION / 4; i += blockDim.x) /* bf16 pairs of 1/64 */
        ((uint32_t *)smem)[i] = 0x3c803c80u;
    __syncthreads();
    if (wg >= wgs) return;
    const uint32_t xs = evt_tma_saddr(smem) + (uint32_t)wg * REGION, ws = xs + XBYTES;
    asm volatile("bar.sync 1, %0;" ::"r"(wgs * 128) : "memory");
    const long long t0 = clock64();
    float s = 0.f;
    if constexpr (FORM == 2) {
        s = called_loop<N>(xs, ws);
    } else {
        float acc[N / 2];
#pragma unroll
        for (int i = 0; i < N / 2; i++) acc[i] = 0.f;
        for (int j = 0; j < STAGES; j++) {
            if constexpr (FORM == 0) {
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    evt_tma_wg_fence();
                    evt_tma_wgmma<N>(acc, desc_x<N>(xs, k), desc_w<N>(ws, k));
                    evt_tma_wg_commit();
                    evt_tma_wg_wait_all();
                }
            } else {
                evt_tma_wg_fence();
#pragma unroll
                for (int k = 0; k < 8; k++) evt_tma_wgmma<N>(acc, desc_x<N>(xs, k), desc_w<N>(ws, k));
                evt_tma_wg_commit();
                evt_tma_wg_wait_all();
            }
        }
#pragma unroll
        for (int i = 0; i < N / 2; i++) s += acc[i];
    }
    const long long t1 = clock64();
    if ((threadIdx.x & 127) == 0) cycles[blockIdx.x * 2 + wg] = t1 - t0;
    sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

template <int N, int FORM> static void run(const char *form, int blocks, long long *dcyc, float *dsink)
{
    auto k = k_wgmma<N, FORM>;
    CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)(2 * REGION)));
    for (int wgs = 1; wgs <= 2; wgs++) {
        CHECK(cudaMemset(dcyc, 0, sizeof(long long) * 2 * blocks));
        k<<<blocks, 256, 2 * REGION>>>(wgs, dcyc, dsink); /* warm */
        k<<<blocks, 256, 2 * REGION>>>(wgs, dcyc, dsink);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        std::vector<long long> c(2 * blocks);
        CHECK(cudaMemcpy(c.data(), dcyc, sizeof(long long) * 2 * blocks, cudaMemcpyDeviceToHost));
        double m[2] = {0, 0};
        for (int b = 0; b < blocks; b++)
            for (int g = 0; g < wgs; g++) m[g] += (double)c[2 * b + g] / blocks;
        printf("N=%3d %-9s warpgroups=%d  cycles/wgmma: wg0 %6.1f", N, form, wgs, m[0] / (STAGES * 8.0));
        if (wgs == 2) printf("  wg1 %6.1f  (SM: %5.1f a wgmma)", m[1] / (STAGES * 8.0), (m[0] > m[1] ? m[0] : m[1]) / (STAGES * 16.0));
        printf("\n");
    }
}

int main()
{
    int dev = 0, sms = 0;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, dev));
    printf("wgmma_overlap: %s, %d SMs, %d stages of 8 wgmmas a warpgroup, one block per SM\n", p.name, sms, STAGES);
    long long *dcyc;
    float *dsink;
    CHECK(cudaMalloc(&dcyc, sizeof(long long) * 2 * sms));
    CHECK(cudaMalloc(&dsink, sizeof(float) * 256 * sms));
    run<32, 0>("serial", sms, dcyc, dsink);
    run<32, 1>("pipelined", sms, dcyc, dsink);
    run<32, 2>("called", sms, dcyc, dsink);
    run<48, 0>("serial", sms, dcyc, dsink);
    run<48, 1>("pipelined", sms, dcyc, dsink);
    run<48, 2>("called", sms, dcyc, dsink);
    run<96, 0>("serial", sms, dcyc, dsink);
    run<96, 1>("pipelined", sms, dcyc, dsink);
    run<96, 2>("called", sms, dcyc, dsink);
    CHECK(cudaFree(dcyc));
    CHECK(cudaFree(dsink));
    return 0;
}
