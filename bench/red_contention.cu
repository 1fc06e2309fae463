/* red_contention.cu — what a split-K reduction through L2 atomics costs when
 * every SM adds its partial row to the same few KiB (the fused down
 * projection of bench/RESULTS.md session 57: 131 tasks each adding H = 1024
 * or 4096 values to one row of counts).
 *
 * 132 blocks (one per SM) of 256 threads each add H values (bf16-sized
 * work is not modelled: the values are ready in registers) into a region,
 * then the leader runs the release the runtime's notify runs (block
 * barrier, fence.acq_rel.gpu), which waits until the block's adds are
 * performed. A block's time is from its first add to the end of that
 * release (%globaltimer); the launch's is the median of 20 launches by CUDA
 * events. Forms:
 *   i64 coal    RED.ADD.64, a warp's lanes on 32 consecutive counts
 *   i64 scat    RED.ADD.64, each thread's 8 counts consecutive (lanes 64 bytes apart)
 *   i64 rep R   as coal, block b into replica b % R (R rows R x H apart)
 *   f32 coal    RED.ADD.F32, coalesced (order-dependent sums: for scale)
 *   f32 v4      red.global.add.v4.f32, a thread's 4 consecutive values at once
 *   store       plain 8-byte stores to the block's own row (no atomics): the floor
 * Checked: the i64 forms' sums against the host's.
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 bench/red_contention.cu -o build/red_contention
 *   build/red_contention
 */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>

#define CK(x)                                                                                       \
    do {                                                                                            \
        cudaError_t e_ = (x);                                                                       \
        if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } \
    } while (0)

enum { I64_COAL, I64_SCAT, I64_REP, F32_COAL, F32_V4, STORE };

__device__ __forceinline__ uint64_t now_ns() { uint64_t t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }

/* block b adds value (b + 1) * 2^20 + h to count h (h < H) */
__global__ void __launch_bounds__(256) adds(int form, int H, int R, long long *ci, float *cf, long long *own, unsigned long long *ns)
{
    const int b = blockIdx.x, t = threadIdx.x;
    __syncthreads();
    const uint64_t t0 = now_ns();
    if (form == I64_COAL || form == I64_REP) {
        long long *row = ci + (form == I64_REP ? (long long)(b % R) * H : 0);
        for (int h = t; h < H; h += blockDim.x) atomicAdd((unsigned long long *)(row + h), (unsigned long long)((b + 1LL) << 20 | h));
    } else if (form == I64_SCAT) {
        for (int g = t; g < H / 8; g += blockDim.x)
            for (int e = 0; e < 8; e++) atomicAdd((unsigned long long *)(ci + 8 * g + e), (unsigned long long)((b + 1LL) << 20 | (8 * g + e)));
    } else if (form == F32_COAL) {
        for (int h = t; h < H; h += blockDim.x) atomicAdd(cf + h, 1.0f);
    } else if (form == F32_V4) {
        for (int g = t; g < H / 4; g += blockDim.x) {
            float *p = cf + 4 * g;
            asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(1.f), "f"(1.f), "f"(1.f), "f"(1.f) : "memory");
        }
    } else {
        for (int h = t; h < H; h += blockDim.x) own[(long long)b * H + h] = (b + 1LL) << 20 | h;
    }
    __syncthreads();
    if (t == 0) {
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
        ns[b] = now_ns() - t0;
    }
}

int main()
{
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int nb = prop.multiProcessorCount, maxH = 4096, maxR = 16, launches = 20;
    printf("red_contention: %s, %d blocks of 256 threads, median of %d launches\n", prop.name, nb, launches);
    long long *ci, *own;
    float *cf;
    unsigned long long *ns;
    CK(cudaMalloc(&ci, sizeof(long long) * maxR * maxH));
    CK(cudaMalloc(&cf, sizeof(float) * maxH));
    CK(cudaMalloc(&own, sizeof(long long) * nb * maxH));
    CK(cudaMalloc(&ns, sizeof(unsigned long long) * nb));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    struct { int form, R; const char *name; } forms[] = {
        {STORE, 1, "store (no atomics)"}, {I64_COAL, 1, "i64 coal"}, {I64_SCAT, 1, "i64 scat"}, {I64_REP, 4, "i64 rep 4"},
        {I64_REP, 8, "i64 rep 8"}, {I64_REP, 16, "i64 rep 16"}, {F32_COAL, 1, "f32 coal"}, {F32_V4, 1, "f32 v4"},
    };
    int errors = 0;
    printf("%-20s %6s %12s %14s %14s\n", "form", "H", "launch us", "block med us", "block max us");
    for (int H : {1024, 4096})
        for (auto &f : forms) {
            std::vector<float> ms;
            std::vector<unsigned long long> bt(nb), med, mx;
            for (int l = 0; l < launches + 2; l++) {
                CK(cudaMemset(ci, 0, sizeof(long long) * maxR * maxH));
                CK(cudaMemset(cf, 0, sizeof(float) * maxH));
                CK(cudaEventRecord(e0));
                adds<<<nb, 256>>>(f.form, H, f.R, ci, cf, own, ns);
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                CK(cudaGetLastError());
                float t;
                CK(cudaEventElapsedTime(&t, e0, e1));
                CK(cudaMemcpy(bt.data(), ns, sizeof(unsigned long long) * nb, cudaMemcpyDeviceToHost));
                if (l < 2) continue; /* warm-up */
                ms.push_back(t);
                std::sort(bt.begin(), bt.end());
                med.push_back(bt[nb / 2]);
                mx.push_back(bt[nb - 1]);
            }
            if (f.form == I64_COAL || f.form == I64_SCAT || f.form == I64_REP) { /* the last launch's sums */
                std::vector<long long> got((size_t)f.R * H);
                CK(cudaMemcpy(got.data(), ci, sizeof(long long) * f.R * H, cudaMemcpyDeviceToHost));
                for (int h = 0; h < H; h++) {
                    long long want = 0, sum = 0;
                    for (int b = 0; b < nb; b++) want += (b + 1LL) << 20 | h;
                    for (int r = 0; r < f.R; r++) sum += got[(size_t)r * H + h];
                    errors += sum != want;
                }
            }
            std::sort(ms.begin(), ms.end());
            std::sort(med.begin(), med.end());
            std::sort(mx.begin(), mx.end());
            printf("%-20s %6d %12.2f %14.2f %14.2f\n", f.name, H, ms[ms.size() / 2] * 1e3, med[med.size() / 2] / 1e3,
                   mx[mx.size() / 2] / 1e3);
        }
    printf("errors: %d\n", errors);
    return errors != 0;
}
