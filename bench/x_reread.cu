/* x_reread.cu — does re-reading the activations from L2 bound the batch-64
 * GEMV tiles?
 *
 * At batch 64 every one of a GEMV call's 131 tiles reads all of x ([64, K]
 * bf16: 1.5 MiB for qwen3-8b's down projection, K = 12288) beside its own
 * band of weights (31 rows x K: 762 KiB): twice as many bytes from L2 as
 * from HBM. This benchmark takes the arithmetic away: 132 blocks of 256
 * threads, each streaming its weight band (HBM: bands rotated over copies so
 * that no launch finds them in L2) and/or the shared x (L2 after the first
 * reader), k block by k block as the tile does, 8 independent 16-byte loads
 * a thread in flight. If "w + x" takes about "w" + "x", the SM's load path
 * (L2 -> SM bandwidth) is the bound, and a shared x (cluster multicast,
 * split K) is the lever; if it takes about "w", x rides along for free.
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 bench/x_reread.cu -o build/x_reread && build/x_reread
 */
#include "bench_sync.cuh"


/* block b: rows [b * R, b * R + R) of W [*, K] (if R) and all B rows of x [B, K]
   (if B), in k blocks of KB columns */
__global__ void __launch_bounds__(256, 1) stream(const uint16_t *W, const uint16_t *x, int R, int B, int K, int KB, uint32_t *sink)
{
    uint32_t acc = 0;
    const uint16_t *w0 = W + (size_t)blockIdx.x * R * K;
    const int cpr = KB / 8; /* 16-byte chunks a row of a k block */
    for (int k0 = 0; k0 < K; k0 += KB) {
        const int nw = R * cpr, nx = B * cpr, n = nw + nx;
        for (int c0 = threadIdx.x; c0 < n; c0 += 8 * blockDim.x) {
            uint4 v[8];
#pragma unroll
            for (int u = 0; u < 8; u++) {
                int c = c0 + u * blockDim.x;
                if (c < n) {
                    const uint16_t *p = c < nw ? w0 + (size_t)(c / cpr) * K + k0 + (c % cpr) * 8
                                               : x + (size_t)((c - nw) / cpr) * K + k0 + ((c - nw) % cpr) * 8;
                    v[u] = ldg16(p);
                } else {
                    v[u] = make_uint4(0, 0, 0, 0);
                }
            }
#pragma unroll
            for (int u = 0; u < 8; u++) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
        }
    }
    if (acc == 0x12345678u) sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}


int main()
{
    cudaDeviceProp prop;
    CKX(cudaGetDeviceProperties(&prop, 0));
    const int nsm = prop.multiProcessorCount;
    printf("device: %s, %d SMs, L2 %d MiB\n", prop.name, nsm, prop.l2CacheSize >> 20);
    struct shp { const char *name; int R, K; } shapes[] = {{"8b down (31 x 12288)", 32, 12288}, {"8b o (31 x 4096)", 32, 4096},
                                                          {"8b gate+up (188 x 4096)", 188, 4096}};
    uint32_t *sink;
    CKX(cudaMalloc(&sink, (size_t)nsm * 256 * 4));
    printf("\n%-26s %5s %10s %10s %10s %10s   %s\n", "shape", "B", "w us", "x us", "w + x us", "w GB/s", "x from L2, TB/s (x alone)");
    for (const shp &s : shapes) {
        const size_t wbytes = (size_t)nsm * s.R * s.K * 2;
        std::vector<char *> W = bench_cold_copies(wbytes, 0x3c);
        const int ncopy = (int)W.size();
        uint16_t *x;
        CKX(cudaMalloc(&x, (size_t)128 * s.K * 2));
        CKX(cudaMemset(x, 0x3d, (size_t)128 * s.K * 2));
        for (int B : {1, 16, 64, 128}) {
            float tw = bench_launch_us([&](int i) { stream<<<nsm, 256>>>((const uint16_t *)W[i % ncopy], x, s.R, 0, s.K, 512, sink); });
            float tx = bench_launch_us([&](int i) { stream<<<nsm, 256>>>((const uint16_t *)W[i % ncopy], x, 0, B, s.K, 512, sink); });
            float twx = bench_launch_us([&](int i) { stream<<<nsm, 256>>>((const uint16_t *)W[i % ncopy], x, s.R, B, s.K, 512, sink); });
            const double xb = (double)nsm * B * s.K * 2;
            printf("%-26s %5d %10.2f %10.2f %10.2f %10.0f   %.2f\n", s.name, B, tw, tx, twx, wbytes / tw / 1e3, xb / tx / 1e6);
        }
        bench_free_copies(W);
        CKX(cudaFree(x));
    }
    return 0;
}
