/* kv_stream.cu — how fast can one persistent block per SM stream a paged KV
 * cache the way the decode attention reads it?
 *
 * The batch-64 attention of qwen3-8b (one task per request and kv head, 512
 * positions, 256 KiB of K and V a task) runs at ~1.6 TB/s of a 3.0 TB/s
 * copy rate (bench/RESULTS.md, session 26). This benchmark takes the
 * arithmetic away and keeps only the loads, to separate what the access
 * pattern and the loads in flight allow from what the scoring costs:
 *
 *   layout NHD  the cache as evtc lays it out: [page][PS][nkv][hd], so a task
 *               reads 256 bytes of every 2 KiB cache row
 *   layout HND  [page][nkv][PS][hd]: a task's rows of a page are one
 *               contiguous PS x 256-byte run
 *   reg U       the attention's register loop: 16 lanes a row (16 bytes a
 *               lane), U rows a lane group a step, the next step's K and V
 *               loads issued before this step is consumed (through the
 *               read-only path, ld.global.nc; the attention uses plain
 *               ld.global, since its task writes the cache row it reads)
 *   bulk D      HND only: thread 0 copies whole pages of K and V (1-D
 *               cp.async.bulk, PS x 256 bytes each) into a ring of D page
 *               slots in shared memory; the 8 warps read each slot back
 *
 * Tasks (request, kv head, split) go round-robin to 132 blocks of 256
 * threads, as the static schedule deals them. Bytes counted: K and V of
 * every task's positions once. Median of 5 repetitions of 20 launches;
 * two cache copies alternate so that no launch starts on the previous one's
 * L2 lines.
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 bench/kv_stream.cu -o build/kv_stream && build/kv_stream
 */
#include "bench_sync.cuh"


struct shape {
    int B, nkv, ctx, PS, hd, S; /* S: splits of a request's positions */
};

/* element offset of (request b, position t, kv head g); bt = range (evtc decode's table) */
template <bool HND>
__device__ __forceinline__ uint64_t row_off(const shape &s, int b, int t, int g)
{
    const int MP = s.ctx / s.PS;
    const uint64_t page = (uint64_t)b * MP + t / s.PS, in = t % s.PS;
    return HND ? ((page * s.nkv + g) * s.PS + in) * s.hd : ((page * s.PS + in) * s.nkv + g) * s.hd;
}

template <bool HND, int U>
__global__ void __launch_bounds__(256, 1) reg_stream(const uint16_t *kc, const uint16_t *vc, shape s, int ntasks, uint32_t *sink)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, sub = lane >> 4, part = lane & 15;
    uint32_t acc = 0;
    for (int task = blockIdx.x; task < ntasks; task += gridDim.x) {
        const int b = task / (s.nkv * s.S), g = task / s.S % s.nkv, sp = task % s.S;
        const int chunk = (s.ctx + s.S - 1) / s.S, lo = sp * chunk, hi = min(s.ctx, lo + chunk);
        const int step = 8 * 2 * U;
        auto load = [&](int t0, uint4 (&k)[U], uint4 (&v)[U]) {
#pragma unroll
            for (int u = 0; u < U; u++) {
                int t = min(t0 + u * 2 + sub, hi - 1);
                uint64_t off = row_off<HND>(s, b, t, g) + part * 8;
                k[u] = ldg16(kc + off);
                v[u] = ldg16(vc + off);
            }
        };
        uint4 k[U], v[U];
        int t0 = lo + warp * 2 * U;
        load(t0, k, v);
        for (; t0 < hi; t0 += step) {
            uint4 nk[U], nv[U];
            load(t0 + step, nk, nv);
#pragma unroll
            for (int u = 0; u < U; u++) {
                acc ^= k[u].x ^ k[u].y ^ k[u].z ^ k[u].w ^ v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
                k[u] = nk[u];
                v[u] = nv[u];
            }
        }
    }
    if (acc == 0x12345678u) sink[blockIdx.x * blockDim.x + threadIdx.x] = acc; /* keeps the loads */
}

extern __shared__ __align__(128) unsigned char kv_ring[];

/* HND only: a page slot = K rows then V rows of one (task, page) */
__global__ void __launch_bounds__(256, 1) bulk_stream(const uint16_t *kc, const uint16_t *vc, shape s, int ntasks, int D, uint32_t *sink)
{
    __shared__ uint64_t full[32];
    const uint32_t pb = (uint32_t)s.PS * s.hd * 2; /* bytes of one page of one head */
    if (threadIdx.x == 0) {
        for (int i = 0; i < D; i++) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(saddr(&full[i])));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    /* this block's (task, page) items in order */
    const int chunk = (s.ctx + s.S - 1) / s.S, ppt = (chunk + s.PS - 1) / s.PS;
    const int mine = (ntasks - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x, nitems = mine * ppt;
    auto issue = [&](int it) {
        const int task = blockIdx.x + (it / ppt) * gridDim.x, pg = it % ppt;
        const int b = task / (s.nkv * s.S), g = task / s.S % s.nkv, sp = task % s.S;
        const int t = sp * chunk + pg * s.PS;
        const uint64_t off = row_off<true>(s, b, t, g);
        const int slot = it % D;
        uint32_t dst = saddr(kv_ring + (size_t)slot * 2 * pb), bar = saddr(&full[slot]);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(2 * pb) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                     "l"(kc + off), "r"(pb), "r"(bar)
                     : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst + pb),
                     "l"(vc + off), "r"(pb), "r"(bar)
                     : "memory");
    };
    if (threadIdx.x == 0)
        for (int it = 0; it < D && it < nitems; it++) issue(it);
    uint32_t acc = 0;
    for (int it = 0; it < nitems; it++) {
        const int slot = it % D;
        mbar_wait(&full[slot], (uint32_t)((it / D) & 1));
        const uint4 *p = (const uint4 *)(kv_ring + (size_t)slot * 2 * pb);
        for (uint32_t i = threadIdx.x; i < 2 * pb / 16; i += blockDim.x) {
            uint4 x = p[i];
            acc ^= x.x ^ x.y ^ x.z ^ x.w;
        }
        __syncthreads(); /* the slot is read: refill it */
        if (threadIdx.x == 0 && it + D < nitems) issue(it + D);
    }
    if (acc == 0x12345678u) sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}


int main()
{
    int nsm = 0;
    CKX(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp prop;
    CKX(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, %d SMs\n", prop.name, nsm);
    const size_t max_elems = (size_t)64 * 512 * 8 * 128; /* B=64, ctx 512, 8 kv heads, hd 128 */
    uint16_t *buf[2][2];
    uint32_t *sink;
    for (int c = 0; c < 2; c++)
        for (int kv = 0; kv < 2; kv++) {
            CKX(cudaMalloc(&buf[c][kv], max_elems * 2));
            CKX(cudaMemset(buf[c][kv], 0x3c + c + kv, max_elems * 2)); /* nonzero */
        }
    CKX(cudaMalloc(&sink, (size_t)nsm * 256 * 4));
    /* the copy rate: read + write of a 256 MiB device-to-device copy */
    {
        size_t n = (size_t)256 << 20;
        void *x, *y;
        CKX(cudaMalloc(&x, n));
        CKX(cudaMalloc(&y, n));
        CKX(cudaMemset(x, 1, n));
        float ms = 1e-3f * bench_launch_us([&](int) { CKX(cudaMemcpyAsync(y, x, n, cudaMemcpyDeviceToDevice)); });
        printf("copy rate: %.0f GB/s (cudaMemcpy D2D, read + write)\n", 2.0 * n / ms / 1e6);
        CKX(cudaFree(x));
        CKX(cudaFree(y));
    }
    CKX(cudaFuncSetAttribute(bulk_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
    const shape shapes[] = {{64, 8, 512, 16, 128, 1}, {32, 8, 512, 16, 128, 1}, {8, 8, 512, 16, 128, 2}, {1, 8, 512, 16, 128, 8}};
    printf("\n%-28s %-14s %9s %9s\n", "shape", "variant", "us", "GB/s");
    for (const shape &s : shapes) {
        const int ntasks = s.B * s.nkv * s.S;
        const double bytes = 2.0 * s.B * s.nkv * s.ctx * s.hd * 2;
        char name[64];
        snprintf(name, sizeof name, "B=%d S=%d (%d tasks)", s.B, s.S, ntasks);
        auto report = [&](const char *v, float ms) { printf("%-28s %-14s %9.2f %9.0f\n", name, v, ms * 1e3, bytes / ms / 1e6); };
#define REG(L, U)                                                                                                       \
    report(#L " reg U=" #U, 1e-3f * bench_launch_us([&](int i) {                                                                       \
               reg_stream<L == 1, U><<<nsm, 256>>>(buf[i & 1][0], buf[i & 1][1], s, ntasks, sink);                     \
           }))
        const int NHD = 0, HND = 1;
        (void)NHD;
        (void)HND;
        REG(NHD, 2);
        REG(NHD, 4);
        REG(NHD, 8);
        REG(HND, 2);
        REG(HND, 4);
        REG(HND, 8);
        for (int D : {4, 8, 12, 20}) {
            char v[32];
            snprintf(v, sizeof v, "HND bulk D=%d", D);
            const size_t smem = (size_t)D * 2 * s.PS * s.hd * 2;
            report(v, 1e-3f * bench_launch_us([&](int i) {
                       bulk_stream<<<nsm, 256, smem>>>(buf[i & 1][0], buf[i & 1][1], s, ntasks, D, sink);
                   }));
        }
    }
    return 0;
}
