/* tma_issue.cu — what a bulk copy in flight costs the rest of a persistent
 * worker block (the weight stream's questions, src/device/evt_stream.h).
 *
 * Every one of 132 blocks (one per SM, as the megakernel) copies `bytes` of
 * its own band of a 1 GiB buffer into shared memory — cp.async.bulk pieces of
 * 32 KiB issued by thread 0 (bulk), or 16-byte cp.async by warps 4-7
 * (ldgsts), completing on one mbarrier — while
 *   issue    the issuing thread times its issue loop (does issuing block?)
 *   done     ... and the time until the mbarrier completes
 *   release  thread 32 (warp 1, which issued nothing) runs a notify's release
 *            meanwhile: fence.acq_rel.gpu, red.release.gpu or st.release.gpu
 *            (does it wait for the block's copies?)
 *   chase    thread 64 walks a chain of 16 dependent loads through a 64 KiB
 *            L2-resident buffer meanwhile (a latency-bound tile's loads):
 *            ns per load, against the same walk with no copy in flight
 * Times are cycles of clock64 converted with the SM clock (reported), median
 * over blocks and 5 repetitions.
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 bench/tma_issue.cu -o build/tma_issue && build/tma_issue
 */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

#define CK(x)                                                                                          \
    do {                                                                                               \
        cudaError_t e_ = (x);                                                                          \
        if (e_) { printf("%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); return 1; }     \
    } while (0)

static __device__ __forceinline__ uint32_t saddr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
static __device__ __forceinline__ bool mbar_test(uint64_t *bar, uint32_t parity)
{
    uint32_t ok;
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(saddr(bar)), "r"(parity) : "memory");
    return ok != 0;
}

extern __shared__ __align__(1024) unsigned char dyn[];

/* out[block * 8 + k]: issue, done, fence (thread 32), chase (thread 64) cycles.
 * mech 0: thread 0 issues cp.async.bulk pieces; 1: warps 4-7 issue 16-byte
 * cp.async (LDGSTS) and arrive on the mbarrier when theirs complete.
 * release 0: fence.acq_rel.gpu; 1: red.release.gpu.global.add; 2: st.release.gpu */
__global__ void __launch_bounds__(256, 1) probe(const char *src, size_t band, uint32_t bytes, uint32_t piece, const uint32_t *chain,
                                                int mech, int release, int *flag, long long *out)
{
    __shared__ uint64_t bar;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(saddr(&bar)), "r"(mech ? 128 : 1));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    const char *my = src + (size_t)blockIdx.x * band;
    long long *o = out + blockIdx.x * 8;
    int warp = threadIdx.x >> 5;
    if (threadIdx.x == 0 && mech == 0) {
        long long t0 = clock64();
        if (bytes) {
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(saddr(&bar)), "r"(bytes) : "memory");
            for (uint32_t off = 0; off < bytes; off += piece)
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                                 saddr(dyn + off)),
                             "l"(my + off), "r"(bytes - off < piece ? bytes - off : piece), "r"(saddr(&bar))
                             : "memory");
        }
        long long t1 = clock64();
        if (bytes)
            while (!mbar_test(&bar, 0)) {
            }
        o[0] = t1 - t0;
        o[1] = clock64() - t0;
    } else if (mech == 1 && warp >= 4) {
        int t = threadIdx.x - 128;
        long long t0 = clock64();
        for (uint32_t off = 16 * t; off < bytes; off += 16 * 128)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(saddr(dyn + off)), "l"(my + off) : "memory");
        asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(saddr(&bar)) : "memory");
        long long t1 = clock64();
        while (!mbar_test(&bar, 0)) {
        }
        if (t == 0) {
            o[0] = t1 - t0;
            o[1] = clock64() - t0;
        }
    } else if (threadIdx.x == 32) {
        /* another warp's release, once the copies are (about to be) in flight */
        long long s = clock64();
        while (clock64() - s < 400) {
        }
        long long t0 = clock64();
        if (release == 0) asm volatile("fence.acq_rel.gpu;" ::: "memory");
        else if (release == 1) asm volatile("red.release.gpu.global.add.s32 [%0], 1;" ::"l"(flag + blockIdx.x * 32) : "memory");
        else asm volatile("st.release.gpu.global.s32 [%0], 1;" ::"l"(flag + blockIdx.x * 32) : "memory");
        o[2] = clock64() - t0;
    } else if (threadIdx.x == 64) {
        long long s = clock64();
        while (clock64() - s < 400) {
        }
        uint32_t i = blockIdx.x * 37 % 1024;
        long long t0 = clock64();
#pragma unroll 1
        for (int k = 0; k < 16; k++) i = *(volatile const uint32_t *)(chain + i * 16);
        o[3] = (clock64() - t0) / 16 + (i == 0xffffffffu);
    }
    __syncthreads();
}

int main()
{
    int sms = 0, clk_khz = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&clk_khz, cudaDevAttrClockRate, 0));
    const size_t total = (size_t)1 << 30, band = total / sms / 256 * 256;
    char *src;
    uint32_t *chain;
    long long *out;
    CK(cudaMalloc(&src, total));
    CK(cudaMemset(src, 1, total));
    CK(cudaMalloc(&chain, 1024 * 16 * sizeof(uint32_t)));
    std::vector<uint32_t> h(1024 * 16);
    for (int i = 0; i < 1024; i++) h[i * 16] = (uint32_t)((i * 389 + 1) % 1024); /* a permutation walk, one line per hop */
    CK(cudaMemcpy(chain, h.data(), h.size() * sizeof(uint32_t), cudaMemcpyHostToDevice));
    CK(cudaMalloc(&out, (size_t)sms * 8 * sizeof(long long)));
    CK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
    const double ns_per_cycle = 1e6 / clk_khz;
    printf("device SMs %d, SM clock %.0f MHz; ns, median over blocks and 5 runs\n", sms, clk_khz / 1e3);
    int *flag;
    CK(cudaMalloc(&flag, (size_t)sms * 32 * sizeof(int)));
    CK(cudaMemset(flag, 0, (size_t)sms * 32 * sizeof(int)));
    const char *mechs[] = {"bulk", "ldgsts"}, *rels[] = {"fence", "red.rel", "st.rel"};
    printf("%8s %7s %7s %8s | %9s %9s %9s %9s\n", "bytes", "piece", "mech", "release", "issue", "done", "release", "chase/ld");
    const uint32_t sizes[] = {0, 32768, 98304, 155648};
    static int run = 0;
    for (uint32_t bytes : sizes)
        for (int mech = 0; mech < 2; mech++)
            for (int rel = 0; rel < 3; rel++) {
                uint32_t piece = 32768;
                std::vector<double> col[4];
                std::vector<long long> ho((size_t)sms * 8);
                for (int rep = 0; rep < 5; rep++) {
                    CK(cudaMemset(out, 0, (size_t)sms * 8 * sizeof(long long)));
                    /* a fresh part of each block's band every run (30 x 256 KiB per band): L2 holds none of it */
                    probe<<<sms, 256, 200 * 1024>>>(src + (size_t)(run++ % 30) * 262144, band, bytes, piece, chain, mech, rel, flag, out);
                    CK(cudaGetLastError());
                    CK(cudaDeviceSynchronize());
                    CK(cudaMemcpy(ho.data(), out, ho.size() * sizeof(long long), cudaMemcpyDeviceToHost));
                    for (int b = 0; b < sms; b++)
                        for (int k = 0; k < 4; k++) col[k].push_back(ho[b * 8 + k] * ns_per_cycle);
                }
                double med[4];
                for (int k = 0; k < 4; k++) {
                    std::sort(col[k].begin(), col[k].end());
                    med[k] = col[k][col[k].size() / 2];
                }
                printf("%8u %7u %7s %8s | %9.0f %9.0f %9.0f %9.0f\n", bytes, piece, mechs[mech], rels[rel], med[0], med[1], med[2], med[3]);
            }
    return 0;
}
