/* bench/icache.cu — what straight-line code costs when it does not fit the
 * instruction caches: each kernel runs a block of S KiB of independent FMAs
 * (no loop inside the block) several passes over, and reports cycles per
 * instruction of a warp for the first pass (cold: the code comes from L2
 * or further) and for the later ones (warm: whatever the caches kept).
 *
 * Why: the decode megakernel's batch-1 tasks run their tile code once per
 * task (qwen3-0.6b: every hot instruction of the QKV, attention, O, gate + up
 * and down tiles executes at most twice per warp and task), ~120 KiB of code
 * a layer, and Nsight Compute samples 20% of its warps stalled with "no
 * instruction" (bench/RESULTS.md session 45). The knee of the warm curve is
 * the capacity that a layer's code would have to fit; the cold figure is
 * what a task pays for code it runs once.
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 bench/icache.cu -o build/icache && build/icache
 *
 * Prints one line per (blocks, warps per block, size): cycles per
 * instruction per warp, cold and warm (median over the warps of block 0). */
#include "bench_sync.cuh" /* CK */

/* 16 FMAs over 8 independent accumulators (ptxas cannot fold them: m and c
   are runtime values), 256 bytes of code */
#define F(r) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(r) : "f"(m), "f"(c));
#define X16 F(a0) F(a1) F(a2) F(a3) F(a4) F(a5) F(a6) F(a7) F(a0) F(a1) F(a2) F(a3) F(a4) F(a5) F(a6) F(a7)
#define X256 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16 X16

/* M x 4 KiB of straight code (256 FMAs of 16 bytes), `passes` times */
template <int M>
__global__ void straight(float *out, long long *cyc, float m, float c, int passes)
{
    float a0 = threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
    long long t0 = clock64(), t1 = t0;
    for (int p = 0; p < passes; p++) {
        if (p == 1) t1 = clock64();
#pragma unroll
        for (int i = 0; i < M; i++) { X256 }
    }
    long long t2 = clock64();
    if ((threadIdx.x & 31) == 0) {
        int w = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
        cyc[2 * w] = t1 - t0;
        cyc[2 * w + 1] = t2 - t1;
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

typedef void (*kfn)(float *, long long *, float, float, int);
struct size_entry { int kib; kfn f; };

int main()
{
    const size_entry sizes[] = {{4, straight<1>},    {8, straight<2>},    {16, straight<4>},   {24, straight<6>},
                                {32, straight<8>},   {48, straight<12>},  {64, straight<16>},  {96, straight<24>},
                                {128, straight<32>}, {160, straight<40>}, {192, straight<48>}, {256, straight<64>},
                                {384, straight<96>}};
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("device: %s, %d SMs\n", p.name, p.multiProcessorCount);
    const int passes = 8, maxw = p.multiProcessorCount * 8;
    float *out;
    long long *cyc;
    CK(cudaMalloc(&out, sizeof(float) * maxw * 32));
    CK(cudaMalloc(&cyc, sizeof(long long) * 2 * maxw));
    std::vector<long long> h(2 * maxw);
    const int blocks_list[] = {1, p.multiProcessorCount}, warps_list[] = {1, 8};
    for (int blocks : blocks_list)
        for (int warps : warps_list)
            for (const size_entry &s : sizes) {
                const double instr = (double)s.kib * 1024 / 16;
                double cold = 0, warm = 0;
                for (int rep = 0; rep < 2; rep++) { /* the second launch's figures (a first may load the module) */
                    s.f<<<blocks, warps * 32>>>(out, cyc, 1.0001f, 1e-7f, passes);
                    CK(cudaGetLastError());
                    CK(cudaDeviceSynchronize());
                    CK(cudaMemcpy(h.data(), cyc, sizeof(long long) * 2 * blocks * warps, cudaMemcpyDeviceToHost));
                    std::vector<double> c0, c1;
                    for (int w = 0; w < warps; w++) { /* block 0's warps */
                        c0.push_back(h[2 * w] / instr);
                        c1.push_back(h[2 * w + 1] / instr / (passes - 1));
                    }
                    std::sort(c0.begin(), c0.end());
                    std::sort(c1.begin(), c1.end());
                    cold = c0[c0.size() / 2];
                    warm = c1[c1.size() / 2];
                }
                printf("blocks %3d warps %d code %3d KiB: cycles/instr cold %7.2f warm %6.2f\n", blocks, warps, s.kib, cold, warm);
            }
    CK(cudaFree(out));
    CK(cudaFree(cyc));
    return 0;
}
