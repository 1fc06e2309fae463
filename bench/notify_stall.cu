/* notify_stall.cu — what a persistent worker's leader pays between its
 * notify of one stage and the poll of the next, and whether the worker that
 * completes a counter sees it later than the others do.
 *
 * 132 blocks of 256 threads run R rounds of a decode-like stage: every
 * thread stores 8 floats (the tile's output), the block meets at a barrier,
 * then the leader notifies the round's shared counter the runtime's way
 * (fence.acq_rel.gpu, red.relaxed.gpu.add), copies 480 bytes of shared
 * memory alone (a 10-tensor argument build), meets the block at a barrier
 * and polls the counter (ld.acquire.gpu) until all 132 blocks have added.
 * The leader stamps %globaltimer between the steps:
 *   t0 fence t1 red t2 [stamp store] t3 args copy t4 barrier t5 poll t6
 * Per round, the block whose red was issued last (largest t2) is the
 * "last producer": its t6 - t2 is set against the others' t6 - t2(last).
 * Variants: plain; + a global store after the red (a trace stamp); the poll
 * issued right after the red (before the copy); no output stores.
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 bench/notify_stall.cu -o build/notify_stall
 */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#include "bench_sync.cuh"

enum { V_PLAIN, V_STAMP, V_POLL_FIRST, V_NO_STORES, V_N };
static const char *names[V_N] = {"plain", "+ stamp store", "poll right after red", "no output stores"};
enum { NT = 7 };

__global__ void __launch_bounds__(256) stage_rounds(int *cnt, uint64_t *st, float *out, uint64_t *junk, int rounds, int variant)
{
    __shared__ uint4 src[30], dst[30];
    if (threadIdx.x < 30) src[threadIdx.x] = make_uint4(threadIdx.x, 1, 2, 3);
    __syncthreads();
    for (int r = 0; r < rounds; r++) {
        if (variant != V_NO_STORES)
            for (int j = 0; j < 8; j++) out[((size_t)blockIdx.x * 256 + threadIdx.x) * 8 + j] = (float)(r + j);
        __syncthreads();
        uint64_t t[NT];
        int v = 0;
        if (threadIdx.x == 0) {
            t[0] = now_ns();
            asm volatile("fence.acq_rel.gpu;" ::: "memory");
            t[1] = now_ns();
            asm volatile("red.relaxed.gpu.global.add.s32 [%0], 1;" ::"l"(cnt + r) : "memory");
            t[2] = now_ns();
            if (variant == V_STAMP) junk[blockIdx.x] = t[2];
            if (variant == V_POLL_FIRST) v = ld_acquire(cnt + r);
            t[3] = now_ns();
            for (int i = 0; i < 30; i++) dst[i] = src[(i + r) % 30];
            t[4] = now_ns();
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            t[5] = now_ns();
            while (v < (int)gridDim.x) v = ld_acquire(cnt + r);
            t[6] = now_ns();
            for (int i = 0; i < NT; i++) st[((size_t)r * gridDim.x + blockIdx.x) * NT + i] = t[i];
            if (dst[r % 30].x == 12345u) junk[0] = 1; /* keep the copy */
        }
        __syncthreads();
    }
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

int main()
{
    const int blocks = 132, rounds = 400;
    int *cnt;
    uint64_t *st, *junk;
    float *out;
    CK(cudaMalloc(&cnt, rounds * sizeof(int)));
    CK(cudaMalloc(&st, (size_t)rounds * blocks * NT * sizeof(uint64_t)));
    CK(cudaMalloc(&junk, blocks * sizeof(uint64_t)));
    CK(cudaMalloc(&out, (size_t)blocks * 256 * 8 * sizeof(float)));
    std::vector<uint64_t> h((size_t)rounds * blocks * NT);
    printf("%d blocks x 256 threads, %d rounds; medians over rounds 10.. (us)\n", blocks, rounds);
    printf("%-22s %6s %6s %6s %6s %6s %6s | %10s %10s\n", "variant", "fence", "red", "after", "copy", "bar",
           "poll", "last: t6-t2", "others");
    for (int var = 0; var < V_N; var++) {
        for (int rep = 0; rep < 2; rep++) { /* the first launch warms up */
            CK(cudaMemset(cnt, 0, rounds * sizeof(int)));
            void *args[] = {&cnt, &st, &out, &junk, (void *)&rounds, &var};
            CK(cudaLaunchCooperativeKernel((void *)stage_rounds, blocks, 256, args, 0, 0));
            CK(cudaDeviceSynchronize());
        }
        CK(cudaMemcpy(h.data(), st, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
        std::vector<double> d[6], last, others;
        for (int r = 10; r < rounds; r++) {
            const uint64_t *R = &h[(size_t)r * blocks * NT];
            int L = 0;
            for (int b = 0; b < blocks; b++) {
                const uint64_t *t = R + b * NT;
                for (int i = 0; i < 6; i++) d[i].push_back((t[i + 1] - t[i]) * 1e-3);
                if (t[2] > R[L * NT + 2]) L = b;
            }
            last.push_back((R[L * NT + 6] - R[L * NT + 2]) * 1e-3);
            for (int b = 0; b < blocks; b++)
                if (b != L) others.push_back(((double)R[b * NT + 6] - (double)R[L * NT + 2]) * 1e-3);
        }
        printf("%-22s %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f | %10.3f %10.3f\n", names[var], median(d[0]), median(d[1]),
               median(d[2]), median(d[3]), median(d[4]), median(d[5]), median(last), median(others));
    }
    return 0;
}
