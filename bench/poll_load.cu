/* poll_load.cu — how late a waiting worker sees its input's counter when its
 * own block has weight loads in flight, by poll form.
 *
 * In the decode megakernel a GEMV task's warps 1-7 issue their first weight
 * loads (early loads: 8 KiB a warp) and warp 0 then polls the counter its
 * producers add to; traces put the median time from the last notify to the
 * task's start at 0.5-1.3 us for qwen3-8b's QKV and gate + up tasks (bench/
 * RESULTS.md sessions 64-66), where an all-to-all handoff with nothing else
 * in flight takes ~1 us in all (bench/handoff.cu). This separates the poll.
 *
 * Block 0 sets a flag once per round at a known time (globaltimer; fence +
 * red.relaxed.gpu.add, the runtime's notify); blocks 1..131 each have warp 0
 * poll it from before the set until they see it, and record when. Meanwhile
 * warps 1-7 of each waiting block, per load mode:
 *   none     nothing
 *   burst    16 x 16-byte loads a lane from HBM issued 0.3 us before the set
 *            (the early loads), then wait for them
 *   tma      the same 56 KiB as one bulk copy (cp.async.bulk, the TMA
 *            engine) into shared memory, issued by warp 1's lane 0
 *   stream   a GEMV's steady load stream from HBM (8 loads a lane in flight,
 *            reissued as they land) until the flag is seen
 * Poll forms (warp 0, lane 0):
 *   acquire  ld.acquire.gpu in a loop (the runtime's evt_poll_load)
 *   relaxed  ld.relaxed.gpu in a loop, fence.acq_rel.gpu once seen
 *   atom     atom.relaxed.gpu.or 0 in a loop, fence once seen
 *   pipe4    four ld.relaxed.gpu in flight, one issued every ~80 ns, fence
 *            once one has seen it
 * Detection = time seen - time set, over 131 blocks x ROUNDS rounds: mean,
 * median, p90, max, in us (globaltimer, which ticks every 0.256 us on the
 * H200: the quantiles are multiples of it, the mean is finer).
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 bench/poll_load.cu -o build/poll_load
 */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#include "bench_sync.cuh"

enum { P_ACQUIRE, P_RELAXED, P_ATOM, P_PIPE4, P_N };
static const char *poll_names[P_N] = {"acquire", "relaxed", "atom", "pipe4"};
enum { L_NONE, L_BURST, L_TMA, L_STREAM, L_N };
static const char *load_names[L_N] = {"none", "burst", "tma", "stream"};

#define ROUNDS 64
#define BURST_LOADS 16                            /* 16-byte loads a lane: 8 KiB a warp, as the decode's early loads */
#define BURST_BYTES (7 * BURST_LOADS * 32 * 16) /* warps 1-7: 56 KiB */
#define PERIOD_NS 20000ull /* a round: the set at +SET_NS, the burst at +SET_NS - 300 */
#define SET_NS 8000ull

__global__ void k_now(unsigned long long *t) { *t = now_ns(); }
static __device__ __forceinline__ int ld_relaxed(const int *p)
{
    int v;
    asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
static __device__ __forceinline__ int atom_or0(int *p)
{
    int v;
    asm volatile("atom.relaxed.gpu.global.or.b32 %0, [%1], 0;" : "=r"(v) : "l"(p) : "memory");
    return v;
}
static __device__ __forceinline__ void fence_acq_rel() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
static __device__ __forceinline__ uint4 ld_w(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
static __device__ __forceinline__ void wait_until(uint64_t t) { while (now_ns() < t) { } }

/* Polls until *flag >= target; returns when seen (after the form's fence). */
template <int POLL>
static __device__ __forceinline__ void poll(int *flag, int target)
{
    if (POLL == P_ACQUIRE) {
        while (ld_acquire(flag) < target) { }
    } else if (POLL == P_RELAXED) {
        while (ld_relaxed(flag) < target) { }
        fence_acq_rel();
    } else if (POLL == P_ATOM) {
        while (atom_or0(flag) < target) { }
        fence_acq_rel();
    } else {
        /* four loads in flight, issued ~80 ns apart: a new one goes out as
           the oldest is checked (unrolled: v stays in registers) */
        int v[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[i] = ld_relaxed(flag);
            if (i < 3) __nanosleep(60);
        }
        for (bool seen = false; !seen;) {
#pragma unroll
            for (int i = 0; i < 4 && !seen; i++) {
                seen = v[i] >= target;
                if (!seen) {
                    v[i] = ld_relaxed(flag);
                    __nanosleep(60);
                }
            }
        }
        fence_acq_rel();
    }
}

template <int POLL, int LOAD>
__global__ void __launch_bounds__(256, 1) k_poll(int *flag, volatile int *seen_flag, const uint4 *W, size_t wlen16,
                                                 uint64_t base, unsigned long long *t_set, unsigned long long *t_seen,
                                                 unsigned *sink)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    extern __shared__ __align__(128) uint4 tma_buf[]; /* LOAD == L_TMA: the burst's 56 KiB */
    __shared__ __align__(8) uint64_t tma_bar;
    if (LOAD == L_TMA && threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(saddr(&tma_bar)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    uint32_t acc = 0;
    size_t spos = 0; /* the stream's position in the block's window (uint4s) */
    for (int r = 0; r < ROUNDS; r++) {
        const uint64_t t0 = base + (uint64_t)r * PERIOD_NS;
        if (blockIdx.x == 0) {
            if (threadIdx.x == 0) {
                wait_until(t0 + SET_NS);
                const uint64_t t = now_ns();
                fence_acq_rel();
                asm volatile("red.relaxed.gpu.global.add.s32 [%0], 1;" ::"l"(flag) : "memory");
                t_set[r] = t;
            }
            continue;
        }
        if (warp == 0) {
            if (lane == 0) {
                wait_until(t0 + SET_NS - 2000); /* polling from 2 us before the set */
                poll<POLL>(flag, r + 1);
                t_seen[(size_t)r * gridDim.x + blockIdx.x] = now_ns();
                seen_flag[blockIdx.x] = r + 1; /* the stream warps stop */
            }
            __syncwarp();
        } else if (LOAD != L_NONE) {
            /* each block and round its own 1 MiB-spaced stretch: HBM, not L2 */
            const size_t region = ((size_t)r * gridDim.x + blockIdx.x) * 65536 % (wlen16 - 65536);
            const uint4 *p = W + region + (size_t)(warp - 1) * BURST_LOADS * 32 + lane;
            if (LOAD == L_TMA) {
                if (warp == 1 && lane == 0) {
                    const uint32_t bytes = BURST_BYTES;
                    wait_until(t0 + SET_NS - 300);
                    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(saddr(&tma_bar)), "r"(bytes) : "memory");
                    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                                 ::"r"(saddr(tma_buf)), "l"(W + region), "r"(bytes), "r"(saddr(&tma_bar)) : "memory");
                    mbar_wait(&tma_bar, r & 1);
                    acc += tma_buf[lane].x;
                }
            } else if (LOAD == L_BURST) {
                wait_until(t0 + SET_NS - 300);
                uint4 v[BURST_LOADS];
#pragma unroll
                for (int u = 0; u < BURST_LOADS; u++) v[u] = ld_w(p + u * 32);
#pragma unroll
                for (int u = 0; u < BURST_LOADS; u++) acc += v[u].x ^ v[u].w;
            } else {
                /* a stream that moves on through W across the rounds (a
                   block's 8 MiB window comes round again after ~40 rounds,
                   long out of L2) */
                wait_until(t0 + SET_NS - 4000);
                const size_t win = (wlen16 / gridDim.x) & ~(size_t)4095, w0 = (size_t)blockIdx.x * win;
                for (;;) {
                    const uint4 *q = W + w0 + (spos + (size_t)(warp - 1) * 256 + lane) % win;
                    uint4 v[8];
#pragma unroll
                    for (int u = 0; u < 8; u++) v[u] = ld_w(q + u * 32 * 7);
#pragma unroll
                    for (int u = 0; u < 8; u++) acc += v[u].x ^ v[u].w;
                    spos += 8 * 32 * 7;
                    if (seen_flag[blockIdx.x] > r) break;
                }
            }
        }
    }
    if (acc == 0x12345678u) sink[blockIdx.x] = acc;
}

template <int POLL, int LOAD>
static void run(int nblocks, const uint4 *W, size_t wlen16)
{
    int *flag;
    int *seen;
    unsigned long long *t_set, *t_seen;
    unsigned *sink;
    CKX(cudaMalloc(&flag, sizeof(int)));
    CKX(cudaMalloc(&seen, nblocks * sizeof(int)));
    CKX(cudaMalloc(&t_set, ROUNDS * sizeof(*t_set)));
    CKX(cudaMalloc(&t_seen, (size_t)ROUNDS * nblocks * sizeof(*t_seen)));
    CKX(cudaMalloc(&sink, nblocks * sizeof(unsigned)));
    CKX(cudaMemset(flag, 0, sizeof(int)));
    CKX(cudaMemset(seen, 0, nblocks * sizeof(int)));
    CKX(cudaMemset(t_seen, 0, (size_t)ROUNDS * nblocks * sizeof(*t_seen)));
    /* the rounds start 200 us after a timestamp read by a tiny kernel (the launch in between takes less) */
    unsigned long long *tb, base;
    CKX(cudaMalloc(&tb, sizeof(*tb)));
    k_now<<<1, 1>>>(tb);
    CKX(cudaMemcpy(&base, tb, sizeof base, cudaMemcpyDeviceToHost));
    const int smem = LOAD == L_TMA ? BURST_BYTES : 0;
    CKX(cudaFuncSetAttribute(k_poll<POLL, LOAD>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    k_poll<POLL, LOAD><<<nblocks, 256, smem>>>(flag, seen, W, wlen16, base + 200000, t_set, t_seen, sink);
    CKX(cudaGetLastError());
    CKX(cudaDeviceSynchronize());
    std::vector<unsigned long long> ts(ROUNDS), tv((size_t)ROUNDS * nblocks);
    CKX(cudaMemcpy(ts.data(), t_set, ts.size() * sizeof ts[0], cudaMemcpyDeviceToHost));
    CKX(cudaMemcpy(tv.data(), t_seen, tv.size() * sizeof tv[0], cudaMemcpyDeviceToHost));
    std::vector<double> d;
    for (int r = 2; r < ROUNDS; r++) /* the first rounds warm up */
        for (int b = 1; b < nblocks; b++) d.push_back(((double)tv[(size_t)r * nblocks + b] - (double)ts[r]) / 1000.0);
    std::sort(d.begin(), d.end());
    double mean = 0;
    for (double x : d) mean += x;
    mean /= (double)d.size();
    printf("%-8s %-7s  mean %6.3f  median %6.3f  p90 %6.3f  max %6.3f us\n", poll_names[POLL], load_names[LOAD], mean,
           d[d.size() / 2], d[d.size() * 9 / 10], d.back());
    cudaFree(flag);
    cudaFree(seen);
    cudaFree(t_set);
    cudaFree(t_seen);
    cudaFree(sink);
    cudaFree(tb);
}

template <int POLL>
static void run_loads(int nblocks, const uint4 *W, size_t wlen16)
{
    run<POLL, L_NONE>(nblocks, W, wlen16);
    run<POLL, L_BURST>(nblocks, W, wlen16);
    run<POLL, L_TMA>(nblocks, W, wlen16);
    run<POLL, L_STREAM>(nblocks, W, wlen16);
}

int main()
{
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const size_t bytes = (size_t)1 << 30; /* 1 GiB of "weights": far past the L2 */
    uint4 *W;
    CK(cudaMalloc(&W, bytes));
    CK(cudaMemset(W, 1, bytes));
    printf("poll_load: %d blocks (block 0 sets, %d wait), %d rounds of %.0f us\n", sms, sms - 1, ROUNDS, PERIOD_NS / 1000.0);
    run_loads<P_ACQUIRE>(sms, W, bytes / 16);
    run_loads<P_RELAXED>(sms, W, bytes / 16);
    run_loads<P_ATOM>(sms, W, bytes / 16);
    run_loads<P_PIPE4>(sms, W, bytes / 16);
    cudaFree(W);
    return 0;
}
