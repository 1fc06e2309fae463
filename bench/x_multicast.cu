/* x_multicast.cu — would sharing the activations across a cluster make the
 * batch-64 GEMV tiles cheaper?
 *
 * bench/x_reread.cu found (session 32) that at batch 64 a GEMV tile's read
 * of all of x from L2 adds to its weight stream instead of hiding under it:
 * qwen3-8b's down tile reads 1.5 MiB of x beside 762 KiB of weights. A
 * cluster of C SMs whose tiles share x could read it from L2 once and
 * deliver it to all C (TMA multicast), each CTA issuing 1/C of every x
 * stage. This benchmark moves the same bytes the TMA GEMV path moves and
 * nothing else:
 *   - grid = the SM count, one 256-thread block per SM, clusters of C
 *     (1, 2 or 4: cudaLaunchKernelEx with the cluster attribute);
 *   - per k block: the block's weight band (R rows x KB columns, laid out
 *     stage-major so it is one contiguous bulk copy; bands rotated over
 *     copies so no launch finds them in L2) and x's k block (B rows x KB:
 *     the same for every block, so from L2), both by cp.async.bulk into a
 *     ring of shared-memory stages with a full and an empty mbarrier each;
 *   - with C > 1, CTA r of the cluster copies rows [r B / C, (r + 1) B / C)
 *     of x's k block with .multicast::cluster into every CTA of the cluster;
 *     a slot is refilled once the consumers of all C CTAs released it (a
 *     remote arrive on each CTA's empty barrier);
 *   - no arithmetic: a consumer warp waits for each stage and releases it.
 * Columns: w alone, x alone, w + x unshared (C = 1), w + x shared by 2 and
 * by 4. If w + x / C tracks "w + x (C = 1)" minus x's share, multicast is
 * the lever the batch-64 GEMVs need. It also prints whether the driver
 * accepts a cooperative launch with clusters of 2 at this shared memory
 * (the persistent kernel is a cooperative launch) and how many clusters of
 * 2 fit at once (cudaOccupancyMaxActiveClusters).
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 bench/x_multicast.cu -o build/x_multicast && build/x_multicast
 */
#include "bench_sync.cuh"

#define RING_BYTES (200u * 1024u)
#define MAX_STAGES 16

extern __shared__ __align__(1024) unsigned char ring[];

static __device__ __forceinline__ uint32_t cluster_rank()
{
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
static __device__ __forceinline__ void cluster_sync_all()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

/* W: ncopy-rotated bands, block b's band of stage k at W + (b * nst + k) * wst
   bytes; x: stage k at x + k * xst bytes (B rows x KB columns, contiguous) */
__global__ void __launch_bounds__(256, 1) stream(const char *W, const char *x, uint32_t wst, uint32_t xst, int nst, int C,
                                                 uint32_t *sink)
{
    __shared__ __align__(8) uint64_t full[MAX_STAGES], empty[MAX_STAGES];
    const uint32_t stage_bytes = wst + xst;
    const int S = (int)min((uint32_t)MAX_STAGES, RING_BYTES / stage_bytes);
    const uint32_t rank = C > 1 ? cluster_rank() : 0;
    if (threadIdx.x == 0) {
        for (int s = 0; s < S; s++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(saddr(&full[s])), "r"(1) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(saddr(&empty[s])), "r"(C) : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    if (C > 1) cluster_sync_all(); /* every CTA's barriers exist before any copy lands in it */
    else __syncthreads();
    const char *wb = W + (size_t)blockIdx.x * nst * wst;
    const uint32_t xshare = xst / C; /* multiple of 16: checked by the host */
    if (threadIdx.x == 0) {
        for (int k = 0; k < nst; k++) {
            const int s = k % S;
            if (k >= S) mbar_wait(&empty[s], (uint32_t)((k / S - 1) & 1));
            const uint32_t dst = saddr(ring + (size_t)s * stage_bytes), bar = saddr(&full[s]);
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(stage_bytes) : "memory");
            if (wst)
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                             "l"(wb + (size_t)k * wst), "r"(wst), "r"(bar) : "memory");
            if (xst && C == 1)
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst + wst),
                             "l"(x + (size_t)k * xst), "r"(xst), "r"(bar) : "memory");
            if (xst && C > 1) {
                const uint16_t mask = (uint16_t)((1u << C) - 1);
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;"
                             ::"r"(dst + wst + rank * xshare), "l"(x + (size_t)k * xst + rank * xshare), "r"(xshare), "r"(bar),
                             "h"(mask) : "memory");
            }
        }
    } else if (threadIdx.x == 32) {
        uint32_t acc = 0;
        for (int k = 0; k < nst; k++) {
            const int s = k % S;
            mbar_wait(&full[s], (uint32_t)((k / S) & 1));
            acc ^= *(volatile uint32_t *)(ring + (size_t)s * stage_bytes + (k & 63) * 16);
            for (int r = 0; r < C; r++) { /* release slot s in every CTA of the cluster (this one included) */
                uint32_t remote;
                asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(saddr(&empty[s])), "r"(r));
                asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
            }
        }
        if (acc == 0x12345678u) sink[blockIdx.x] = acc;
    }
    if (C > 1) cluster_sync_all(); /* no CTA leaves while a peer may still copy into it or arrive on its barriers */
}

/* A launch of `stream` over nsm blocks in clusters of C (and cooperative):
   cfg points into the struct's own attribute array */
struct cluster_launch {
    cudaLaunchConfig_t cfg;
    cudaLaunchAttribute at[2];
    cluster_launch(int nsm, int C, bool cooperative)
    {
        cfg = {};
        cfg.gridDim = dim3(nsm);
        cfg.blockDim = dim3(256);
        cfg.dynamicSmemBytes = RING_BYTES;
        at[0].id = cudaLaunchAttributeClusterDimension;
        at[0].val.clusterDim.x = C;
        at[0].val.clusterDim.y = 1;
        at[0].val.clusterDim.z = 1;
        at[1].id = cudaLaunchAttributeCooperative;
        at[1].val.cooperative = 1;
        cfg.attrs = at;
        cfg.numAttrs = cooperative ? 2 : 1;
    }
};

int main()
{
    cudaDeviceProp prop;
    CKX(cudaGetDeviceProperties(&prop, 0));
    const int nsm = prop.multiProcessorCount;
    printf("device: %s, %d SMs, L2 %d MiB\n", prop.name, nsm, prop.l2CacheSize >> 20);
    CKX(cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, RING_BYTES));
    CKX(cudaFuncSetAttribute(stream, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    for (int C : {2, 4}) {
        cluster_launch L(nsm, C, false);
        int nc = -1;
        cudaError_t e = cudaOccupancyMaxActiveClusters(&nc, stream, &L.cfg);
        printf("clusters of %d with %u KiB shared memory a block: at most %d at once (%s); the grid needs %d\n", C, RING_BYTES >> 10,
               nc, cudaGetErrorString(e), nsm / C);
    }
    struct shp { const char *name; int R, K, KB; } shapes[] = {{"8b down (32 x 12288)", 32, 12288, 256},
                                                          {"8b o (32 x 4096)", 32, 4096, 256},
                                                          {"8b qkv (48 x 4096)", 48, 4096, 256},
                                                          {"8b gate+up (188 x 4096)", 188, 4096, 64}};
    uint32_t *sink;
    CKX(cudaMalloc(&sink, (size_t)nsm * 4));
    const int B = 64;
    /* a cooperative launch with clusters: accepted? */
    {
        const uint32_t wst = 32 * 256 * 2, xst = B * 256 * 2;
        char *W, *x;
        CKX(cudaMalloc(&W, (size_t)nsm * 4 * wst));
        CKX(cudaMalloc(&x, (size_t)4 * xst));
        cluster_launch L(nsm, 2, true);
        cudaError_t e = cudaLaunchKernelEx(&L.cfg, stream, (const char *)W, (const char *)x, wst, xst, 4, 2, sink);
        cudaError_t e2 = cudaDeviceSynchronize();
        printf("cooperative launch of %d blocks in clusters of 2: launch %s, run %s\n", nsm, cudaGetErrorString(e),
               cudaGetErrorString(e2));
        cudaGetLastError();
        CKX(cudaFree(W));
        CKX(cudaFree(x));
    }
    printf("\nbatch %d, us per launch (median of 5 x 20); x's bytes read by the SMs at C = 1 in brackets\n", B);
    printf("%-26s %9s %9s %9s %11s %11s %11s\n", "shape", "w", "x", "x C=2", "w+x C=1", "w+x C=2", "w+x C=4");
    for (const shp &s : shapes) {
        const int nst = s.K / s.KB;
        const uint32_t wst = (uint32_t)s.R * s.KB * 2, xst = (uint32_t)B * s.KB * 2;
        if (xst % (16 * 4) || RING_BYTES / (wst + xst) < 2) {
            printf("%s: bad shape\n", s.name);
            continue;
        }
        const size_t wbytes = (size_t)nsm * nst * wst;
        std::vector<char *> W = bench_cold_copies(wbytes, 0x3c);
        const int ncopy = (int)W.size();
        char *x;
        CKX(cudaMalloc(&x, (size_t)nst * xst));
        CKX(cudaMemset(x, 0x3d, (size_t)nst * xst));
        auto cell = [&](uint32_t w, uint32_t xx, int C) {
            cluster_launch L(nsm, C, false);
            return bench_launch_us([&](int i) {
                CKX(cudaLaunchKernelEx(&L.cfg, stream, (const char *)W[i % ncopy], (const char *)x, w, xx, nst, C, sink));
            });
        };
        float tw = cell(wst, 0, 1), tx = cell(0, xst, 1), tx2 = cell(0, xst, 2), t1 = cell(wst, xst, 1), t2 = cell(wst, xst, 2), t4 = cell(wst, xst, 4);
        printf("%-26s %9.2f %9.2f %9.2f %11.2f %11.2f %11.2f   (w %.0f GB/s; x %.1f MiB a block)\n", s.name, tw, tx, tx2, t1, t2, t4,
               wbytes / tw / 1e3, (double)nst * xst / (1 << 20));
        bench_free_copies(W);
        CKX(cudaFree(x));
    }
    return 0;
}
