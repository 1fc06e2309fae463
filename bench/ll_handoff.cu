/* ll_handoff.cu — what a decode stage's handoff would cost if the data
 * carried its own flag (the "LL" protocol of NCCL's low-latency kernels)
 * instead of the runtime's counter, at the sizes of a batch-1 stage.
 *
 * 132 blocks (one per SM) of 256 threads run R rounds of an all-to-all
 * stage: each block streams LOAD bytes of "weights" from HBM (its own
 * region, a different one every round, so nothing is L2-resident), writes
 * its slice of an H-element bf16 vector, and then every block reads the
 * whole vector of the round (the next GEMV's x) and checks it. Protocols:
 *   none     no cross-block dependency (each block reads back its own
 *            slice): the round's work alone, the floor of the other two
 *   counter  the runtime's: plain stores, a block barrier, the leader's
 *            fence.acq_rel.gpu + red.relaxed.gpu.add on the round's counter,
 *            the leader polls it with ld.acquire.gpu until every block
 *            added, a block barrier, plain loads of the vector
 *   ll       the vector as 64-bit words {2 bf16, flag = round + 1}, written
 *            with st.relaxed.gpu.b64 (single-copy atomic: data and flag
 *            land together), no fence, no counter; every thread reloads its
 *            words (ld.relaxed.gpu.b64) until all carry the round's flag.
 *            Two buffers by round parity: a block can only write round r + 2
 *            after every block wrote round r + 1, i.e. finished reading r.
 * Block 0 stamps %globaltimer at each round's end; the median round
 * (rounds 10..R-1) is printed with the difference to `none`. Every word
 * every block reads is checked; the errors are printed (must be 0).
 *
 *   nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 bench/ll_handoff.cu -o build/ll_handoff
 *   build/ll_handoff
 */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
#include "bench_sync.cuh"

enum { P_NONE, P_COUNTER, P_LL, P_N };
enum { NT = 256, ROUNDS = 400 };

static __device__ __forceinline__ uint64_t ld_relaxed64(const uint64_t *p)
{
    uint64_t v;
    asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
static __device__ __forceinline__ void st_relaxed64(uint64_t *p, uint64_t v)
{
    asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
/* the value of data word i (two bf16) in round r */
static __device__ __forceinline__ uint32_t word(int r, int i) { return (uint32_t)(r * 2654435761u) ^ (uint32_t)(i * 40503u); }

/* words: V 32-bit data words (counter, none: 2 x V uint32; ll: 2 x V uint64). */
__global__ void __launch_bounds__(NT) rounds_kernel(int proto, int V, size_t load, const uint4 *wts, size_t wwords, uint32_t *plain,
                                                    uint64_t *ll, int *cnt, uint64_t *stamps, unsigned *errors, uint32_t *sink)
{
    const int nb = gridDim.x, b = blockIdx.x, tid = threadIdx.x;
    const int lo = (int)((int64_t)V * b / nb), hi = (int)((int64_t)V * (b + 1) / nb);
    uint32_t acc = 0;
    unsigned bad = 0;
    for (int r = 0; r < ROUNDS; r++) {
        /* the stage's weight stream: this block's region of this round, 8 loads in flight a thread */
        const size_t n16 = load / 16, base = ((size_t)r * nb + b) * n16 % (wwords - n16);
        for (size_t k = tid; k < n16; k += 8 * NT) {
            uint4 v[8];
#pragma unroll
            for (int u = 0; u < 8; u++) v[u] = k + u * NT < n16 ? __ldcs(wts + base + k + u * NT) : make_uint4(0, 0, 0, 0);
#pragma unroll
            for (int u = 0; u < 8; u++) acc ^= v[u].x ^ v[u].w;
        }
        const int par = r & 1;
        if (proto == P_LL) {
            uint64_t *buf = ll + (size_t)par * V;
            for (int i = lo + tid; i < hi; i += NT) st_relaxed64(buf + i, (uint64_t)(uint32_t)(r + 1) << 32 | word(r, i));
            /* every word of the vector: this thread's ones, reloaded until all carry the flag */
            for (int i0 = tid; i0 < V; i0 += 8 * NT) {
                uint64_t w[8];
#pragma unroll
                for (int u = 0; u < 8; u++) w[u] = 0; /* flag 0: no round's */
                bool done;
                do {
                    done = true;
#pragma unroll
                    for (int u = 0; u < 8; u++) {
                        int i = i0 + u * NT;
                        if (i < V && (uint32_t)(w[u] >> 32) != (uint32_t)(r + 1)) w[u] = ld_relaxed64(buf + i);
                    }
#pragma unroll
                    for (int u = 0; u < 8; u++) done &= i0 + u * NT >= V || (uint32_t)(w[u] >> 32) == (uint32_t)(r + 1);
                } while (!done);
#pragma unroll
                for (int u = 0; u < 8; u++) {
                    int i = i0 + u * NT;
                    if (i < V) bad += (uint32_t)w[u] != word(r, i);
                }
            }
            __syncthreads();
        } else {
            uint32_t *buf = plain + (size_t)par * V;
            for (int i = lo + tid; i < hi; i += NT) buf[i] = word(r, i);
            __syncthreads();
            if (proto == P_COUNTER && tid == 0) {
                asm volatile("fence.acq_rel.gpu;" ::: "memory");
                asm volatile("red.relaxed.gpu.global.add.s32 [%0], 1;" ::"l"(cnt + r) : "memory");
                while (ld_acquire(cnt + r) < nb) { }
            }
            __syncthreads();
            const int a = proto == P_COUNTER ? 0 : lo, e = proto == P_COUNTER ? V : hi;
            for (int i = a + tid; i < e; i += NT) bad += *(volatile uint32_t *)(buf + i) != word(r, i);
            __syncthreads();
        }
        if (b == 0 && tid == 0) stamps[r] = now_ns();
    }
    if (bad) atomicAdd(errors, bad);
    if (acc == 0x9e3779b9u) *sink = acc;
}

int main()
{
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int nb = prop.multiProcessorCount;
    const size_t wbytes = (size_t)1 << 30;
    uint4 *wts;
    uint32_t *plain, *sink;
    uint64_t *ll, *stamps;
    int *cnt;
    unsigned *errors;
    CK(cudaMalloc(&wts, wbytes));
    CK(cudaMemset(wts, 1, wbytes));
    CK(cudaMalloc(&plain, 2 * 8192 * sizeof(uint32_t)));
    CK(cudaMalloc(&ll, 2 * 8192 * sizeof(uint64_t)));
    CK(cudaMalloc(&cnt, ROUNDS * sizeof(int)));
    CK(cudaMalloc(&stamps, ROUNDS * sizeof(uint64_t)));
    CK(cudaMalloc(&errors, sizeof(unsigned)));
    CK(cudaMalloc(&sink, sizeof(uint32_t)));
    printf("%s, %d blocks of %d threads, %d rounds; median us per round (rounds 10..%d), + us over `none`\n", prop.name, nb, NT,
           ROUNDS, ROUNDS - 1);
    printf("%-8s %-10s %10s %10s %10s   errors\n", "H", "load/blk", "none", "counter", "ll");
    const int Hs[] = {1024, 4096};
    const size_t loads[] = {0, 32 << 10, 256 << 10};
    for (int H : Hs)
        for (size_t load : loads) {
            double med[P_N];
            unsigned errs = 0;
            for (int p = 0; p < P_N; p++) {
                CK(cudaMemset(errors, 0, sizeof(unsigned)));
                std::vector<double> best;
                for (int rep = 0; rep < 3; rep++) {
                    /* every run starts from zero counters and flags */
                    CK(cudaMemset(cnt, 0, ROUNDS * sizeof(int)));
                    CK(cudaMemset(ll, 0, 2 * 8192 * sizeof(uint64_t)));
                    rounds_kernel<<<nb, NT>>>(p, H / 2, load, wts, wbytes / 16, plain, ll, cnt, stamps, errors, sink);
                    CK(cudaGetLastError());
                    CK(cudaDeviceSynchronize());
                    std::vector<uint64_t> st(ROUNDS);
                    CK(cudaMemcpy(st.data(), stamps, ROUNDS * sizeof(uint64_t), cudaMemcpyDeviceToHost));
                    std::vector<double> d;
                    for (int r = 10; r < ROUNDS; r++) d.push_back((st[r] - st[r - 1]) * 1e-3);
                    std::sort(d.begin(), d.end());
                    best.push_back(d[d.size() / 2]);
                }
                std::sort(best.begin(), best.end());
                med[p] = best[1];
                unsigned e;
                CK(cudaMemcpy(&e, errors, sizeof e, cudaMemcpyDeviceToHost));
                errs += e;
            }
            printf("%-8d %-10zu %10.3f %10.3f %10.3f   %u   (counter +%.3f, ll +%.3f)\n", H, load, med[P_NONE], med[P_COUNTER],
                   med[P_LL], errs, med[P_COUNTER] - med[P_NONE], med[P_LL] - med[P_NONE]);
        }
    return 0;
}
