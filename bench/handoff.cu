/* handoff.cu — the cost of one all-to-all dependency stage between
 * persistent blocks, by protocol.
 *
 * A decode step is a chain of stages in which every SM's tile waits for
 * every SM's tile of the stage before (132 notifies into one event, 132
 * waiters on it). This runs R such rounds back to back on 132 blocks of 256
 * threads and reports microseconds per round for each way of doing it:
 *   fence+red      leader: fence.acq_rel.gpu, red.relaxed.gpu.add; waiters
 *                  poll with ld.acquire.gpu (the runtime's protocol today)
 *   red.release    red.release.gpu.add, no separate fence
 *   relaxed-poll   fence+red; waiters poll relaxed, one acquire fence after
 *   flags          each block st.release its own flag (no atomics); a
 *                  waiter's warp loads all 132 flags at once (ld.acquire)
 *   last-go        atom.add.acq_rel; the block that completes the count
 *                  st.release a separate go word that the others poll
 *   2-stage        132 -> 1 -> 132: block 0 waits for all, then signals
 *                  everyone (a norm task between two GEMVs)
 *   chain          a token passed block to block (per hop)
 * with pure spinning or the runtime's backoff (64 hot polls, then
 * __nanosleep 32..256 ns).
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 bench/handoff.cu -o build/handoff
 */
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>
#include "bench_sync.cuh"

enum { V_FENCE_RED, V_RED_RELEASE, V_RELAXED_POLL, V_FLAGS, V_LAST_GO, V_TWO_STAGE, V_CHAIN, V_N };
static const char *names[V_N] = {"fence+red", "red.release", "relaxed-poll", "flags", "last-go", "2-stage", "chain (per hop)"};

static __device__ __forceinline__ int ld_relaxed(const int *p)
{
    int v;
    asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
static __device__ __forceinline__ void fence_acq_rel() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
static __device__ __forceinline__ void red_relaxed(int *p, int v) { asm volatile("red.relaxed.gpu.global.add.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); }
static __device__ __forceinline__ void red_release(int *p, int v) { asm volatile("red.release.gpu.global.add.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); }
static __device__ __forceinline__ void st_release(int *p, int v) { asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); }
static __device__ __forceinline__ int atom_acq_rel(int *p, int v)
{
    int o;
    asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;" : "=r"(o) : "l"(p), "r"(v) : "memory");
    return o;
}

struct poller {
    int backoff, spin;
    uint32_t ns;
    __device__ poller(int b) : backoff(b), spin(0), ns(32) {}
    __device__ void pause()
    {
        if (!backoff || ++spin < 64) return;
        __nanosleep(ns);
        if (ns < 256) ns *= 2;
    }
};

static __device__ void wait_ge(const int *p, int target, int backoff, bool relaxed)
{
    poller pl(backoff);
    while ((relaxed ? ld_relaxed(p) : ld_acquire(p)) < target) pl.pause();
    if (relaxed) fence_acq_rel();
}

__global__ void __launch_bounds__(256, 1) rounds_kernel(int variant, int R, int backoff, int *cnt, int *cnt2, int *flags, int *go)
{
    int nb = gridDim.x, me = blockIdx.x;
    for (int r = 0; r < R; r++) {
        __syncthreads(); /* the tile's writes are done */
        switch (variant) {
        case V_FENCE_RED:
        case V_RELAXED_POLL:
            if (threadIdx.x == 0) {
                fence_acq_rel();
                red_relaxed(&cnt[r * 32], 1);
                wait_ge(&cnt[r * 32], nb, backoff, variant == V_RELAXED_POLL);
            }
            break;
        case V_RED_RELEASE:
            if (threadIdx.x == 0) {
                red_release(&cnt[r * 32], 1);
                wait_ge(&cnt[r * 32], nb, backoff, false);
            }
            break;
        case V_FLAGS:
            if (threadIdx.x == 0) st_release(&flags[me], r + 1);
            if (threadIdx.x < 32) {
                poller pl(backoff);
                for (;;) {
                    bool ok = true;
                    for (int i = threadIdx.x; i < nb; i += 32) ok &= ld_acquire(&flags[i]) >= r + 1;
                    if (__all_sync(0xffffffffu, ok)) break;
                    pl.pause();
                }
            }
            break;
        case V_LAST_GO:
            if (threadIdx.x == 0) {
                if (atom_acq_rel(&cnt[r * 32], 1) == nb - 1) st_release(&go[r * 32], 1);
                else wait_ge(&go[r * 32], 1, backoff, false);
            }
            break;
        case V_TWO_STAGE:
            if (threadIdx.x == 0) {
                fence_acq_rel();
                red_relaxed(&cnt[r * 32], 1);
                if (me == 0) {
                    wait_ge(&cnt[r * 32], nb, backoff, false);
                    fence_acq_rel();
                    red_relaxed(&cnt2[r * 32], 1);
                }
                wait_ge(&cnt2[r * 32], 1, backoff, false);
            }
            break;
        case V_CHAIN:
            if (threadIdx.x == 0) {
                if (!(me == 0 && r == 0)) wait_ge(&flags[me], me == 0 ? r : r + 1, backoff, false);
                fence_acq_rel();
                st_release(&flags[(me + 1) % nb], me + 1 == nb ? r + 1 : r + 1);
            }
            break;
        }
        __syncthreads(); /* the next tile may read */
    }
}

int main(void)
{
    const int nb = 132, R = 4000;
    int *cnt, *cnt2, *flags, *go;
    CK(cudaMalloc(&cnt, R * 4 * 32));
    CK(cudaMalloc(&cnt2, R * 4 * 32));
    CK(cudaMalloc(&flags, nb * 4));
    CK(cudaMalloc(&go, R * 4 * 32));
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    printf("%-16s %10s %10s\n", "protocol", "spin us", "backoff us");
    for (int v = 0; v < V_N; v++) {
        double us[2];
        for (int bo = 0; bo < 2; bo++) {
            float best = 1e30f;
            for (int rep = 0; rep < 3; rep++) {
                CK(cudaMemset(cnt, 0, R * 4 * 32));
                CK(cudaMemset(cnt2, 0, R * 4 * 32));
                CK(cudaMemset(flags, 0, nb * 4));
                CK(cudaMemset(go, 0, R * 4 * 32));
                cudaEventRecord(a);
                rounds_kernel<<<nb, 256>>>(v, R, bo, cnt, cnt2, flags, go);
                cudaEventRecord(b);
                CK(cudaEventSynchronize(b));
                CK(cudaGetLastError());
                float ms;
                cudaEventElapsedTime(&ms, a, b);
                if (ms < best) best = ms;
            }
            us[bo] = best * 1e3 / R / (v == V_CHAIN ? nb : 1);
        }
        printf("%-16s %10.3f %10.3f\n", names[v], us[0], us[1]);
    }
    return 0;
}
