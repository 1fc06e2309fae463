/* tilebench.cu — per-tile harness for the decode tiles of src/tiles/llm.cuh.
 *
 * Every tile runs as its own kernel: one block (256 threads) per task, the
 * same __device__ functions the megakernel calls, evt_task_args filled here
 * and copied into the block's shared memory, where the megakernel's worker
 * keeps them.
 * For each model shape (qwen3-0.6b, qwen3-8b layer shapes) and batch B it
 *   - checks the CUDA tile against the C reference (src/tiles/llm.c) on all
 *     tasks, or on a sample of tasks for the large GEMVs (relative L2 error
 *     on bf16/f32 outputs, exact match for argmax indices),
 *   - times it (CUDA events, 20 launches after warm-up, weights rotated over
 *     enough copies to defeat the 50 MB L2) and reports achieved GB/s of
 *     unique bytes (weights + activations in and out) against the device's
 *     cudaMemcpy D2D bandwidth measured in the same run.
 * The sum of the per-tile times of one decode step is printed as the
 * "kernel-by-kernel" estimate (one launch per call, no launch overhead
 * counted: CUDA events around back-to-back launches).
 *
 *   bench/tiles/run.sh [B...]       build + run (needs a GPU)
 *   build/tilebench --linear N,K,T [--linear ...] B...
 *                                   only `linear` over an N x K weight in T
 *                                   tiles at each batch B (shapes the models
 *                                   do not have: a split-K tile's rows and
 *                                   k range, other tile counts)
 *   -DEVT_ATTN_PROF (build flag)     also prints, for attn_rope_split and its run form, the median
 *                                   time from a task's entry to each of its phases
 *                                   (src/tiles/llm_attn.cuh, EVT_ATTN_STAMP)
 *   -DEVT_TMA_PROF (build flag)      also prints, for the GEMV tiles on the TMA path, the median
 *                                   time from a task's entry to each ring stage's issue, landing
 *                                   and release (src/tiles/llm_tma.cuh, EVT_TMA_STAMP)
 *   build/tilebench --l2-warm ...   weights not rotated: a tile whose weights fit
 *                                   the L2 reads them there from the second
 *                                   launch on (what a GEMV would gain from
 *                                   weights pulled into L2 ahead of it)
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>
#include <algorithm>
#include <string>
#include "device/evt_task_args.h"
#include "tiles/rope.h"
#include "tiles/llm.cuh"

extern "C" {
#include "tiles/tiles_cpu.h" /* the C references */
#include "runtime/cuda_driver.h" /* evt_cuda_g: the runtime's driver entry points */
#include "runtime/tmaps.h"       /* the runtime's TMA maps */
}

#undef CK /* (cuda_driver.h's, for driver calls) */
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

enum { F32 = (int)EVT_F32, BF16 = (int)EVT_BF16, I32 = (int)EVT_I32 };
typedef void (*cpu_fn)(const evt_task_args *);

#ifndef EVT_TILES_DYN_SMEM
#define EVT_TILES_DYN_SMEM (96 * 1024) /* the TMA GEMV's ring (llm_tma.cuh), as evtc decode reserves it */
#endif
#ifndef EVT_TILES_WORKER_BEGIN
#define EVT_TILES_WORKER_BEGIN() ((void)0)
#endif
#ifndef EVT_TILES_WORKER_END
#define EVT_TILES_WORKER_END() ((void)0)
#endif
/* one task per block, with the worker hooks the megakernel runs around its
   tasks (llm.cuh's weight ring) and its dynamic shared memory */
template <void (*F)(const evt_task_args *)>
__global__ void __launch_bounds__(256) tile_kernel(const evt_task_args *args)
{
    /* the arguments in shared memory, where the megakernel's tiles find them (the worker's args), copied a word
       a thread: read from global memory, every field a tile reads was an L2 round trip here and not there (the
       attention run form's phase stamps from its waits to its new v 0.5 us longer, bench/RESULTS.md session 52) */
    __shared__ evt_task_args a;
    EVT_TILES_WORKER_BEGIN();
    static_assert(sizeof(evt_task_args) % 4 == 0, "copied in words");
    for (unsigned i = threadIdx.x; i < sizeof(evt_task_args) / 4; i += blockDim.x)
        ((uint32_t *)&a)[i] = ((const uint32_t *)&args[blockIdx.x])[i];
    __syncthreads();
    F(&a);
    EVT_TILES_WORKER_END();
}
template <void (*F)(const evt_task_args *)>
static void launch_tile(unsigned nblocks, const evt_task_args *args)
{
    static int attr_set = 0;
    if (!attr_set && EVT_TILES_DYN_SMEM) {
        CK(cudaFuncSetAttribute(tile_kernel<F>, cudaFuncAttributeMaxDynamicSharedMemorySize, EVT_TILES_DYN_SMEM));
        attr_set = 1;
    }
    tile_kernel<F><<<nblocks, 256, EVT_TILES_DYN_SMEM>>>(args);
}

/* -DTB_INLINE_GEMV: the GEMV tiles inlined into their kernels instead of
   called (ptxas serialises the wgmmas of a called function, C7510): how much
   the megakernel's call structure costs the TMA path */
#ifdef TB_INLINE_GEMV
__device__ __forceinline__ void tb_linear(const evt_task_args *a) { evt_llm_gemv<0, false>(a); }
__device__ __forceinline__ void tb_linear_res(const evt_task_args *a) { evt_llm_gemv<1, false>(a); }
__device__ __forceinline__ void tb_mlp_up(const evt_task_args *a) { evt_llm_gemv<2, false>(a); }
#define linear_cuda tb_linear
#define linear_res_cuda tb_linear_res
#define mlp_up_cuda tb_mlp_up
#endif

static uint64_t rng = 88172645463325252ull;
static inline uint32_t xr(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (uint32_t)(rng >> 11); }
static inline float urand(float lo, float hi) { return lo + (hi - lo) * (xr() & 0xffffff) / 16777216.0f; }
static inline uint16_t f2bf(float f) { uint32_t u; memcpy(&u, &f, 4); u += 0x7fff + ((u >> 16) & 1); return (uint16_t)(u >> 16); }
static inline float bf2f(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }

struct Ten {
    std::string name;
    int dtype, rank, mode; /* mode: 0 in, 1 out, 2 inout */
    int64_t dim[4];
    size_t bytes;
    void *h = nullptr, *ref = nullptr, *d = nullptr; /* host input, host reference output, device copy 0 */
    std::vector<void *> copies;                      /* rotating device copies (weights) */
    bool weight = false;
};

static size_t esz(int dt) { return dt == BF16 ? 2 : 4; }

static Ten *mk(std::vector<Ten *> &ts, const char *name, int dtype, std::vector<int64_t> dims, int mode, float lo, float hi, bool weight = false)
{
    Ten *t = new Ten;
    t->name = name; t->dtype = dtype; t->rank = (int)dims.size(); t->mode = mode; t->weight = weight;
    int64_t n = 1;
    for (int k = 0; k < 4; k++) { t->dim[k] = k < t->rank ? dims[k] : 1; n *= t->dim[k]; }
    t->bytes = (size_t)n * esz(dtype);
    t->h = malloc(t->bytes);
    if (dtype == BF16) for (int64_t i = 0; i < n; i++) ((uint16_t *)t->h)[i] = f2bf(urand(lo, hi));
    else if (dtype == F32) for (int64_t i = 0; i < n; i++) ((float *)t->h)[i] = urand(lo, hi);
    else for (int64_t i = 0; i < n; i++) ((int32_t *)t->h)[i] = hi > lo ? (int32_t)(lo + xr() % (uint32_t)(hi - lo)) : (int32_t)lo;
    CK(cudaMalloc(&t->d, t->bytes));
    CK(cudaMemcpy(t->d, t->h, t->bytes, cudaMemcpyHostToDevice));
    t->copies.push_back(t->d);
    if (mode != 0) {
        t->ref = malloc(t->bytes);
        if (mode == 2) memcpy(t->ref, t->h, t->bytes);
        else if (dtype == BF16) for (int64_t i = 0; i < n; i++) ((uint16_t *)t->ref)[i] = 0x7fc0;      /* NaN: not computed */
        else if (dtype == F32) for (int64_t i = 0; i < n; i++) ((float *)t->ref)[i] = NAN;
        else for (int64_t i = 0; i < n; i++) ((int32_t *)t->ref)[i] = INT32_MIN;
    }
    ts.push_back(t);
    return t;
}

static void free_all(std::vector<Ten *> &ts)
{
    for (Ten *t : ts) {
        for (void *p : t->copies) cudaFree(p);
        free(t->h); free(t->ref);
        delete t;
    }
    ts.clear();
}

static double g_copy_gbs; /* (read + write) bytes / s of cudaMemcpy D2D */
static int g_tma = 1;     /* give the GEMV tiles tensor maps and a ring (--no-tma: the register units) */
static int g_l2_warm = 0; /* --l2-warm: weights not rotated, so those that fit stay in L2 between launches */

/* The runtime's own encoder (src/runtime/tmaps.c, from build/libevtc.a),
   given the driver's entry point the CUDA runtime already resolved. */
static void tmaps_init(void)
{
    if (evt_cuda_g.cu.TensorMapEncodeTiled) return;
    cudaDriverEntryPointQueryResult q;
    CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&evt_cuda_g.cu.TensorMapEncodeTiled, 12000,
                                        cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !evt_cuda_g.cu.TensorMapEncodeTiled) { fprintf(stderr, "no cuTensorMapEncodeTiled\n"); exit(1); }
}

struct Result { std::string op; int64_t tasks; double us, gbs, err; int ok; };

#if defined(EVT_ATTN_PROF) || defined(EVT_TMA_PROF)
/* The stamp builds (-DEVT_ATTN_PROF, -DEVT_TMA_PROF): one launch of F with a
   zeroed buffer of `slots` clock64 stamps a task behind the device pointer
   `sym` (null again afterwards); returns the stamps. */
template <void (*F)(const evt_task_args *), typename Sym>
static std::vector<unsigned long long> tb_stamps(const Sym &sym, int slots, int64_t ntask, const evt_task_args *dargs)
{
    unsigned long long *dp, *np = nullptr;
    std::vector<unsigned long long> hp((size_t)ntask * slots, 0);
    CK(cudaMalloc(&dp, hp.size() * 8));
    CK(cudaMemset(dp, 0, hp.size() * 8));
    CK(cudaMemcpyToSymbol(sym, &dp, sizeof dp));
    launch_tile<F>((unsigned)ntask, dargs);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpyToSymbol(sym, &np, sizeof np));
    CK(cudaMemcpy(hp.data(), dp, hp.size() * 8, cudaMemcpyDeviceToHost));
    cudaFree(dp);
    return hp;
}
/* Stamp k's median over the tasks that wrote it and stamp 0, in us after
   stamp 0 (-1: none did). */
static inline double tb_stamp_median(const std::vector<unsigned long long> &hp, int slots, int64_t ntask, int k)
{
    int clk = 0;
    CK(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0));
    std::vector<double> v;
    for (int64_t l = 0; l < ntask; l++)
        if (hp[l * slots + k] && hp[l * slots])
            v.push_back((double)(long long)(hp[l * slots + k] - hp[l * slots]) / (clk * 1e-3));
    if (v.empty()) return -1.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}
#endif

/* Runs one op: tensors ts (in declaration order), ints, grid. */
template <void (*F)(const evt_task_args *)>
static Result run_op(const char *op, cpu_fn cfn, std::vector<Ten *> &ts, std::vector<int64_t> ints, std::vector<int64_t> grid,
                     int sample_tasks, double tol)
{
    int64_t ntask = 1;
    for (int64_t g : grid) ntask *= g;
    /* rotate weights so that the weights of one launch are not in L2 */
    size_t wbytes = 0, ubytes = 0;
    for (Ten *t : ts) { if (t->mode != 2) ubytes += t->bytes; if (t->weight) wbytes += t->bytes; } /* INOUT (cache) excluded */
    int ncopy = 1;
    if (wbytes && wbytes < ((size_t)256 << 20) && !g_l2_warm) ncopy = (int)(((size_t)256 << 20) / wbytes) + 1;
    if (ncopy > 64) ncopy = 64;
    for (Ten *t : ts)
        if (t->weight)
            while ((int)t->copies.size() < ncopy) {
                void *p;
                CK(cudaMalloc(&p, t->bytes));
                CK(cudaMemcpy(p, t->d, t->bytes, cudaMemcpyDeviceToDevice));
                t->copies.push_back(p);
            }
    std::vector<evt_task_args> args((size_t)ntask * ncopy);
    /* tensor maps: one per (copy, bf16 matrix) */
    std::vector<evt_tmap> maps;
    std::vector<int> map_of((size_t)ncopy * ts.size(), -1);
    for (int c = 0; c < ncopy && g_tma; c++)
        for (size_t i = 0; i < ts.size(); i++) {
            Ten *t = ts[i];
            evt_tmap m[EVT_TMA_BOXES];
            evt_tensor_ref r;
            memset(&r, 0, sizeof r);
            r.ptr = t->weight ? t->copies[c] : t->d;
            for (int k = 0; k < 4; k++) r.dim[k] = t->dim[k];
            r.rank = (int16_t)t->rank;
            r.dtype = (int16_t)t->dtype;
            tmaps_init();
            if (evt_tmaps_encode(&r, (unsigned char *)m)) {
                map_of[(size_t)c * ts.size() + i] = (int)(maps.size() / EVT_TMA_BOXES);
                maps.insert(maps.end(), m, m + EVT_TMA_BOXES);
            } else if (evt_tmaps_wanted(&r)) {
                /* the driver refused a map the runtime wants: every task of
                   this op takes the register units, which a forced-TMA
                   build would otherwise time as if it were the TMA path */
                static int warned;
                if (!warned++)
                    fprintf(stderr, "tilebench: no TMA maps for a %lld x %lld bf16 matrix: its tasks run the register units\n",
                            (long long)t->dim[0], (long long)t->dim[1]);
            }
        }
    evt_tmap *dmaps = nullptr;
    if (!maps.empty()) {
        CK(cudaMalloc(&dmaps, maps.size() * sizeof(evt_tmap)));
        CK(cudaMemcpy(dmaps, maps.data(), maps.size() * sizeof(evt_tmap), cudaMemcpyHostToDevice));
    }
    for (int c = 0; c < ncopy; c++)
        for (int64_t l = 0; l < ntask; l++) {
            evt_task_args &A = args[(size_t)c * ntask + l];
            memset(&A, 0, sizeof A);
            A.ncoord = (int)grid.size();
            int64_t r = l;
            for (int k = (int)grid.size() - 1; k >= 0; k--) { A.coord[k] = r % grid[k]; r /= grid[k]; }
            for (int k = 0; k < 4; k++) A.grid[k] = k < (int)grid.size() ? grid[k] : 1;
            A.ntensors = (int)ts.size(); A.nints = (int)ints.size();
            for (size_t i = 0; i < ts.size(); i++) {
                A.t[i].ptr = ts[i]->weight ? ts[i]->copies[c] : ts[i]->d;
                for (int k = 0; k < 4; k++) A.t[i].dim[k] = ts[i]->dim[k];
                A.t[i].rank = (int16_t)ts[i]->rank; A.t[i].dtype = (int16_t)ts[i]->dtype;
                A.t[i].tmap = map_of[(size_t)c * ts.size() + i];
            }
            A.tmaps = dmaps;
            A.tma_ring_off = 0;
            A.tma_ring_bytes = dmaps ? EVT_TILES_DYN_SMEM : 0;
            for (size_t i = 0; i < ints.size(); i++) A.iarg[i] = ints[i];
        }
    evt_task_args *dargs;
    CK(cudaMalloc(&dargs, args.size() * sizeof(evt_task_args)));
    CK(cudaMemcpy(dargs, args.data(), args.size() * sizeof(evt_task_args), cudaMemcpyHostToDevice));
    /* correctness: one launch on copy 0 (INOUT tensors start from their host state) */
    for (Ten *t : ts) if (t->mode == 2) CK(cudaMemcpy(t->d, t->h, t->bytes, cudaMemcpyHostToDevice));
    launch_tile<F>((unsigned)ntask, dargs);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<int64_t> chk;
    if (sample_tasks <= 0 || ntask <= sample_tasks) for (int64_t l = 0; l < ntask; l++) chk.push_back(l);
    else {
        for (int64_t l = 0; l < sample_tasks - 2; l++) chk.push_back((l * 7919) % ntask);
        chk.push_back(0); chk.push_back(ntask - 1);
    }
    for (int64_t l : chk) {
        evt_task_args A = args[l];
        for (size_t i = 0; i < ts.size(); i++) A.t[i].ptr = ts[i]->mode ? ts[i]->ref : ts[i]->h;
        cfn(&A);
    }
    double num = 0, den = 0;
    int64_t bad_idx = 0, nidx = 0;
    for (Ten *t : ts) {
        if (!t->mode) continue;
        void *g = malloc(t->bytes);
        CK(cudaMemcpy(g, t->d, t->bytes, cudaMemcpyDeviceToHost));
        int64_t n = (int64_t)(t->bytes / esz(t->dtype));
        for (int64_t i = 0; i < n; i++) {
            if (t->dtype == I32) {
                int32_t r = ((int32_t *)t->ref)[i];
                if (r == INT32_MIN) continue;
                nidx++;
                bad_idx += r != ((int32_t *)g)[i];
                continue;
            }
            float r = t->dtype == BF16 ? bf2f(((uint16_t *)t->ref)[i]) : ((float *)t->ref)[i];
            float v = t->dtype == BF16 ? bf2f(((uint16_t *)g)[i]) : ((float *)g)[i];
            if (isnan(r)) continue;
            if (t->mode == 2) { /* only what the op wrote */
                uint16_t hv = ((uint16_t *)t->h)[i];
                if (t->dtype == BF16 && ((uint16_t *)t->ref)[i] == hv && ((uint16_t *)g)[i] == hv) continue;
            }
            if (isinf(r) && r == v) continue;
            num += (double)(v - r) * (v - r);
            den += (double)r * r;
        }
        free(g);
    }
    double err = den > 0 ? sqrt(num / den) : (num > 0 ? 1 : 0);
    int ok = err <= tol && (!nidx || bad_idx * 100 <= nidx * 1); /* argmax: >= 99% exact */
    if (nidx && bad_idx) fprintf(stderr, "  %s: %lld of %lld indices differ\n", op, (long long)bad_idx, (long long)nidx);
#ifdef EVT_ATTN_PROF
    /* phase stamps of one launch (copy 0), median over tasks, us from entry (the run form's: llm_attn.cuh's
       list): the first launch after the inputs' copy (code and data cold, as a layer's attention meets them
       in the decode), then the same again right after it (warm) */
    if (!strncmp(op, "attn_rope_split", 15)) for (int pass = 0; pass < 2; pass++) {
        for (Ten *t : ts) if (t->mode == 2) CK(cudaMemcpy(t->d, t->h, t->bytes, cudaMemcpyHostToDevice));
        const std::vector<unsigned long long> hp = tb_stamps<F>(evt_attn_prof, EVT_ATTN_PROF_SLOTS, ntask, dargs);
        printf("  phases, %s (median us from entry, %d tasks):", pass ? "warm" : "cold", (int)ntask);
        for (int k = 1; k < EVT_ATTN_PROF_STAMPS; k++) {
            const double m = tb_stamp_median(hp, EVT_ATTN_PROF_SLOTS, ntask, k);
            if (m >= 0) printf(" %d:%.2f", k, m);
        }
        printf("\n");
    }
#endif
#ifdef EVT_TMA_PROF
    /* the TMA GEMV's ring stamps of one launch (copy 0; llm_tma.cuh's list), median over tasks, us from entry */
    if (strstr(op, "linear") || strstr(op, "mlp_up")) {
        const std::vector<unsigned long long> hp = tb_stamps<F>(evt_tma_prof, EVT_TMA_PROF_SLOTS, ntask, dargs);
        auto med = [&](int k) { return tb_stamp_median(hp, EVT_TMA_PROF_SLOTS, ntask, k); };
        const double end = med(EVT_TMA_PROF_SLOTS - 1);
        if (end < 0) {
            printf("  ring stamps, %s: none (its tasks did not take the TMA path)\n", op);
        } else {
            printf("  ring stamps, %s (median us from entry: stage issued / landed / released):", op);
            for (int j = 0; j < EVT_TMA_PROF_STAGES; j++)
                if (j < 8 || j % 4 == 3) {
                    const double i = med(1 + 3 * j), f = med(2 + 3 * j), r = med(3 + 3 * j);
                    if (f < 0) break;
                    printf(" %d:%.2f/%.2f/%.2f", j, i, f, r);
                }
            printf(" end:%.2f\n", end);
        }
    }
#endif
    /* timing */
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    for (int w = 0; w < 3; w++) launch_tile<F>((unsigned)ntask, dargs + (size_t)(w % ncopy) * ntask);
    const int iters = 20;
    float best = 1e30f;
    for (int rep = 0; rep < 5; rep++) {
        CK(cudaEventRecord(e0));
        for (int it = 0; it < iters; it++) launch_tile<F>((unsigned)ntask, dargs + (size_t)((rep * iters + it) % ncopy) * ntask);
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (ms < best) best = ms; /* best of 5 */
    }
    CK(cudaGetLastError());
    cudaEventDestroy(e0); cudaEventDestroy(e1);
    cudaFree(dargs);
    if (dmaps) cudaFree(dmaps);
    double us = best * 1000.0 / iters;
    Result R{op, ntask, us, ubytes / (us * 1e-6) / 1e9, err, ok};
    if (wbytes > ((size_t)1 << 20) || !strncmp(op, "attn_", 5))
        printf("  %-15s tasks %6lld  %9.2f us  %7.1f GB/s (%5.1f%% of copy)  rel.err %.2e %s\n", op, (long long)ntask, us, R.gbs,
               100.0 * R.gbs / g_copy_gbs, err, ok ? "ok" : "FAIL");
    else /* latency-bound: bandwidth is not meaningful */
        printf("  %-15s tasks %6lld  %9.2f us                              rel.err %.2e %s\n", op, (long long)ntask, us, err,
               ok ? "ok" : "FAIL");
    fflush(stdout);
    return R;
}

/* Tiles as src/models/qwen3.c picks them (ragged rows, one per SM). */
static int64_t pick_tiles(int64_t n, int64_t target, int64_t max_rows)
{
    int64_t T = target < n ? target : n;
    while ((n + T - 1) / T > max_rows) T += target;
    return T < n ? T : n;
}

struct Shape { const char *name; int64_t H, nh, nkv, hd, I, V; };

static int g_fail = 0, g_pass = 0;
static void tally(const Result &r) { if (r.ok) g_pass++; else g_fail++; }

/* tasks a call aims at, the rule every row below derives its tiles, runs and
   chunks from (src/models/qwen3.c uses the same rules with target_tasks =
   131, one fewer than the workers; here one a SM) */
static const int64_t TB_TASKS = 132;
static int64_t g_splits = 4; /* attention splits per (b, head) (--splits; the megakernel uses max(1, tasks / (B * nkv))) */
static void bench_shape(const Shape &s, int64_t B, int64_t ctx, int64_t L)
{
    printf("\n== %s layer shapes, B=%lld, ctx %lld ==\n", s.name, (long long)B, (long long)ctx);
    const int64_t eps = 1000000, theta = 1000000, S = g_splits, PS = 16, MP = (ctx + 1 + PS - 1) / PS;
    int64_t H = s.H, nh = s.nh, nkv = s.nkv, hd = s.hd, I = s.I, V = s.V, nqkv = (nh + 2 * nkv) * hd;
    int64_t T_qkv = pick_tiles(nqkv, TB_TASKS, nqkv), T_o = pick_tiles(H, TB_TASKS, H), T_up = pick_tiles(I, TB_TASKS, I),
            NC = pick_tiles(V, TB_TASKS, 256);
    double layer_us = 0, head_us = 0;
    std::vector<Ten *> ts;
    Result r;
    /* embed */
    mk(ts, "tok", I32, {B}, 0, 0, (float)V); mk(ts, "E", BF16, {V, H}, 0, -1, 1); mk(ts, "x", BF16, {B, H}, 1, 0, 0);
    r = run_op<embed_cuda>("embed", evt_tile_embed, ts, {}, {B}, 0, 0); tally(r); head_us += r.us; free_all(ts);
    /* rmsnorm */
    mk(ts, "x", BF16, {B, H}, 0, -2, 2); mk(ts, "w", BF16, {H}, 0, 0.8f, 1.2f, true); mk(ts, "y", BF16, {B, H}, 1, 0, 0);
    r = run_op<rmsnorm_cuda>("rmsnorm", evt_tile_rmsnorm, ts, {eps}, {B}, 0, 1e-2); tally(r); layer_us += 2 * r.us; free_all(ts);
    /* qkv */
    float a = sqrtf(3.0f / H);
    mk(ts, "x", BF16, {B, H}, 0, -2, 2); mk(ts, "W", BF16, {nqkv, H}, 0, -a, a, true); mk(ts, "y", BF16, {B, nqkv}, 1, 0, 0);
    r = run_op<linear_cuda>("qkv linear", evt_tile_linear, ts, {T_qkv}, {T_qkv}, 12, 1e-2); tally(r); layer_us += r.us; free_all(ts);
    /* the same with the rmsnorm inside (rms_linear, the norm's weight folded
       into W; not added to the step estimate: it replaces rmsnorm + linear) */
    mk(ts, "x", BF16, {B, H}, 0, -2, 2); mk(ts, "W", BF16, {nqkv, H}, 0, -a, a, true); mk(ts, "y", BF16, {B, nqkv}, 1, 0, 0);
    r = run_op<rms_linear_cuda>("qkv rms_linear", evt_tile_rms_linear, ts, {T_qkv, eps}, {T_qkv}, 12, 1e-2); tally(r); free_all(ts);
    /* ... and with the rows' sums of squares given (ss_linear: norm partials, what linear_res_ss leaves;
       x uniform in [-2, 2]: sums near 4/3 H) */
    mk(ts, "x", BF16, {B, H}, 0, -2, 2); mk(ts, "W", BF16, {nqkv, H}, 0, -a, a, true); mk(ts, "y", BF16, {B, nqkv}, 1, 0, 0);
    mk(ts, "ss", F32, {B}, 0, 1.1f * H, 1.6f * H);
    r = run_op<ss_linear_cuda>("qkv ss_linear", evt_tile_ss_linear, ts, {T_qkv, eps}, {T_qkv}, 12, 1e-2); tally(r); free_all(ts);
    /* q_rope, k_rope_append */
    mk(ts, "qkv", BF16, {B, nqkv}, 0, -2, 2); mk(ts, "wq", BF16, {hd}, 0, 0.8f, 1.2f); mk(ts, "pos", I32, {B}, 0, (float)(ctx - 4), (float)ctx);
    mk(ts, "q", BF16, {B, nh, hd}, 1, 0, 0);
    r = run_op<q_rope_cuda>("q_rope", evt_tile_q_rope, ts, {eps, theta}, {B, nh}, 0, 1e-2); tally(r); layer_us += r.us; free_all(ts);
    {
        mk(ts, "qkv", BF16, {B, nqkv}, 0, -2, 2); mk(ts, "wk", BF16, {hd}, 0, 0.8f, 1.2f);
        Ten *pos = mk(ts, "pos", I32, {B}, 0, (float)(ctx - 4), (float)ctx);
        Ten *bt = mk(ts, "bt", I32, {B, MP}, 0, 0, 1);
        for (int64_t i = 0; i < B * MP; i++) ((int32_t *)bt->h)[i] = (int32_t)i;
        CK(cudaMemcpy(bt->d, bt->h, bt->bytes, cudaMemcpyHostToDevice));
        (void)pos;
        mk(ts, "kc", BF16, {B * MP, PS, nkv, hd}, 2, -1, 1); mk(ts, "vc", BF16, {B * MP, PS, nkv, hd}, 2, -1, 1);
        /* GB/s counts qkv + weights only (the cache is INOUT) */
        r = run_op<k_rope_append_cuda>("k_rope_append", evt_tile_k_rope_append, ts, {nh, eps, theta}, {B, nkv}, 0, 1e-2);
        tally(r); layer_us += r.us; free_all(ts);
    }
    /* attention */
    {
        mk(ts, "q", BF16, {B, nh, hd}, 0, -1, 1);
        mk(ts, "kc", BF16, {B * MP, PS, nkv, hd}, 0, -1, 1); mk(ts, "vc", BF16, {B * MP, PS, nkv, hd}, 0, -1, 1);
        Ten *bt = mk(ts, "bt", I32, {B, MP}, 0, 0, 1);
        for (int64_t i = 0; i < B * MP; i++) ((int32_t *)bt->h)[i] = (int32_t)i;
        CK(cudaMemcpy(bt->d, bt->h, bt->bytes, cudaMemcpyHostToDevice));
        mk(ts, "pos", I32, {B}, 0, (float)(ctx - 4), (float)ctx);
        mk(ts, "part", F32, {B, nh, S, hd + 2}, 1, 0, 0);
        r = run_op<attn_split_cuda>("attn_split", evt_tile_attn_split, ts, {}, {B, nh, S}, 0, 1e-3); tally(r); layer_us += r.us; free_all(ts);
    }
    /* the fused form: q/k norm + RoPE, the new k/v and the split in one task
       (not added to the step estimate: it replaces the three above); then,
       where the batch gives the model's tasks a run of requests (R =
       ceil(B x kv heads / tasks) > 1, src/models/qwen3.c), the form the
       decode runs there: one split, runs of R requests a task (served in
       teams of warps, the last R % teams by the whole block or fewer teams) */
    const int64_t R_run = std::max<int64_t>(1, (B * nkv + TB_TASKS - 1) / TB_TASKS);
    for (int form = 0; form < (R_run > 1 ? 2 : 1); form++) {
        const int64_t SS = form ? 1 : S, nb = form ? (B + R_run - 1) / R_run : B;
        mk(ts, "qkv", BF16, {B, nqkv}, 0, -2, 2); mk(ts, "wq", BF16, {hd}, 0, 0.8f, 1.2f); mk(ts, "wk", BF16, {hd}, 0, 0.8f, 1.2f);
        mk(ts, "pos", I32, {B}, 0, (float)(ctx - 4), (float)ctx);
        Ten *bt = mk(ts, "bt", I32, {B, MP}, 0, 0, 1);
        for (int64_t i = 0; i < B * MP; i++) ((int32_t *)bt->h)[i] = (int32_t)i;
        CK(cudaMemcpy(bt->d, bt->h, bt->bytes, cudaMemcpyHostToDevice));
        mk(ts, "kc", BF16, {B * MP, PS, nkv, hd}, 2, -1, 1); mk(ts, "vc", BF16, {B * MP, PS, nkv, hd}, 2, -1, 1);
        mk(ts, "part", F32, {B, nh, SS, hd + 2}, 1, 0, 0);
        mk(ts, "o", BF16, {B, nh * hd}, 1, 0, 0); /* with one split by every task, with several by each group's last */
        mk(ts, "pc", I32, {B, nkv}, 2, 0, 0);     /* the merge counts: 0 before and after every launch */
        /* RoPE's angle table, as rope(theta=...) fills it (one row per cache position; read by
           every layer of a step in the decode, so left in L2 here: not a rotated weight) */
        Ten *rope = mk(ts, "rope", F32, {MP * PS, hd}, 0, 0, 0);
        for (int64_t p = 0; p < MP * PS; p++) evt_rope_row((double)theta, hd, p, (float *)rope->h + p * hd);
        CK(cudaMemcpy(rope->d, rope->h, rope->bytes, cudaMemcpyHostToDevice));
        char name[64];
        snprintf(name, sizeof name, form ? "attn_rope_split run %lld" : "attn_rope_split", (long long)R_run);
        r = run_op<attn_rope_split_cuda>(name, evt_tile_attn_rope_split, ts, {eps, 1}, {nb, nkv, SS}, 0, 1e-3);
        tally(r); free_all(ts);
    }
    {
        Ten *p = mk(ts, "part", F32, {B, nh, S, hd + 2}, 0, -1, 1);
        for (int64_t i = 0; i < B * nh * S; i++) ((float *)p->h)[i * (hd + 2) + 1] = urand(0.5f, 2.0f);
        CK(cudaMemcpy(p->d, p->h, p->bytes, cudaMemcpyHostToDevice));
        mk(ts, "o", BF16, {B, nh * hd}, 1, 0, 0);
        r = run_op<attn_merge_cuda>("attn_merge", evt_tile_attn_merge, ts, {}, {B, nh}, 0, 1e-2); tally(r); free_all(ts);
    }
    {   /* the form the decode step uses: one task per (b, kv group) */
        Ten *p = mk(ts, "part", F32, {B, nh, S, hd + 2}, 0, -1, 1);
        for (int64_t i = 0; i < B * nh * S; i++) ((float *)p->h)[i * (hd + 2) + 1] = urand(0.5f, 2.0f);
        CK(cudaMemcpy(p->d, p->h, p->bytes, cudaMemcpyHostToDevice));
        mk(ts, "o", BF16, {B, nh * hd}, 1, 0, 0);
        r = run_op<attn_merge_group_cuda>("attn_merge_group", evt_tile_attn_merge_group, ts, {nh / nkv}, {B, nkv}, 0, 1e-2);
        tally(r); layer_us += r.us; free_all(ts);
    }
    /* o proj */
    a = sqrtf(3.0f / (nh * hd));
    mk(ts, "x", BF16, {B, nh * hd}, 0, -2, 2); mk(ts, "W", BF16, {H, nh * hd}, 0, -a, a, true); mk(ts, "r", BF16, {B, H}, 0, -2, 2);
    mk(ts, "y", BF16, {B, H}, 1, 0, 0);
    r = run_op<linear_res_cuda>("o linear_res", evt_tile_linear_res, ts, {T_o}, {T_o}, 24, 1e-2); tally(r); layer_us += r.us; free_all(ts);
    /* ... leaving the new rows' sums of squares (linear_res_ss: every task checked, the last one sums) */
    mk(ts, "x", BF16, {B, nh * hd}, 0, -2, 2); mk(ts, "W", BF16, {H, nh * hd}, 0, -a, a, true); mk(ts, "r", BF16, {B, H}, 0, -2, 2);
    mk(ts, "y", BF16, {B, H}, 1, 0, 0); mk(ts, "part", F32, {B, T_o}, 1, 0, 0); mk(ts, "ss", F32, {B}, 1, 0, 0);
    mk(ts, "cnt", I32, {1}, 2, 0, 0); /* 0 before and after every launch */
    r = run_op<linear_res_ss_cuda>("o linear_res_ss", evt_tile_linear_res_ss, ts, {T_o}, {T_o}, 0, 1e-2); tally(r); free_all(ts);
    /* mlp */
    a = sqrtf(3.0f / H);
    mk(ts, "x", BF16, {B, H}, 0, -2, 2); mk(ts, "Wg", BF16, {I, H}, 0, -a, a, true); mk(ts, "Wu", BF16, {I, H}, 0, -a, a, true);
    mk(ts, "a", BF16, {B, I}, 1, 0, 0);
    r = run_op<mlp_up_cuda>("mlp_up", evt_tile_mlp_up, ts, {T_up}, {T_up}, 16, 1e-2); tally(r); layer_us += r.us; free_all(ts);
    mk(ts, "x", BF16, {B, H}, 0, -2, 2); mk(ts, "Wg", BF16, {I, H}, 0, -a, a, true); mk(ts, "Wu", BF16, {I, H}, 0, -a, a, true);
    mk(ts, "a", BF16, {B, I}, 1, 0, 0);
    r = run_op<rms_mlp_up_cuda>("rms_mlp_up", evt_tile_rms_mlp_up, ts, {T_up, eps}, {T_up}, 16, 1e-2); tally(r); free_all(ts);
    mk(ts, "x", BF16, {B, H}, 0, -2, 2); mk(ts, "Wg", BF16, {I, H}, 0, -a, a, true); mk(ts, "Wu", BF16, {I, H}, 0, -a, a, true);
    mk(ts, "a", BF16, {B, I}, 1, 0, 0); mk(ts, "ss", F32, {B}, 0, 1.1f * H, 1.6f * H);
    r = run_op<ss_mlp_up_cuda>("ss_mlp_up", evt_tile_ss_mlp_up, ts, {T_up, eps}, {T_up}, 16, 1e-2); tally(r); free_all(ts);
    a = sqrtf(3.0f / I);
    mk(ts, "x", BF16, {B, I}, 0, -1, 1); mk(ts, "W", BF16, {H, I}, 0, -a, a, true); mk(ts, "r", BF16, {B, H}, 0, -2, 2);
    mk(ts, "y", BF16, {B, H}, 1, 0, 0);
    r = run_op<linear_res_cuda>("down linear_res", evt_tile_linear_res, ts, {T_o}, {T_o}, 24, 1e-2); tally(r); layer_us += r.us; free_all(ts);
    /* LM head + argmax */
    a = sqrtf(3.0f / H);
    mk(ts, "x", BF16, {B, H}, 0, -2, 2); mk(ts, "W", BF16, {V, H}, 0, -a, a, true); mk(ts, "y", BF16, {B, V}, 1, 0, 0);
    r = run_op<linear_cuda>("lm_head linear", evt_tile_linear, ts, {NC}, {NC}, 4, 1e-2); tally(r); head_us += r.us; free_all(ts);
    /* the argmax's chunks per row by the model builder's rule (src/models/qwen3.c: about one task a worker) */
    const int64_t NA = std::max<int64_t>(1, std::min<int64_t>(V, TB_TASKS / B));
    mk(ts, "logits", BF16, {B, V}, 0, -8, 8); mk(ts, "pv", F32, {B, NA}, 1, 0, 0); mk(ts, "pi", I32, {B, NA}, 1, 0, 0);
    r = run_op<argmax_part_cuda>("argmax_part", evt_tile_argmax_part, ts, {}, {B, NA}, 0, 0); tally(r); head_us += r.us; free_all(ts);
    mk(ts, "pv", F32, {B, NA}, 0, -8, 8); mk(ts, "pi", I32, {B, NA}, 0, 0, (float)V); mk(ts, "next", I32, {B}, 1, 0, 0);
    r = run_op<argmax_final_cuda>("argmax_final", evt_tile_argmax_final, ts, {}, {B}, 0, 0); tally(r); head_us += r.us; free_all(ts);
    printf("  kernel-by-kernel step estimate (%lld layers): %.1f us  (layer %.1f us x %lld + embed/head %.1f us)\n", (long long)L,
           layer_us * L + head_us + 0.0, layer_us, (long long)L, head_us);
    printf("KBK %s B=%lld ctx=%lld step_us=%.1f\n", s.name, (long long)B, (long long)ctx, layer_us * L + head_us);
}

/* --linear N,K,T: y[B, N] = x[B, K] W[N, K]^T in T ragged tiles of rows */
struct LinearShape { int64_t N, K, T; };
static void bench_linear(const LinearShape &l, int64_t B)
{
    printf("\n== linear N=%lld K=%lld T=%lld (%lld rows a tile), B=%lld ==\n", (long long)l.N, (long long)l.K, (long long)l.T,
           (long long)((l.N + l.T - 1) / l.T), (long long)B);
    std::vector<Ten *> ts;
    float a = sqrtf(3.0f / (float)l.K);
    mk(ts, "x", BF16, {B, l.K}, 0, -2, 2); mk(ts, "W", BF16, {l.N, l.K}, 0, -a, a, true); mk(ts, "y", BF16, {B, l.N}, 1, 0, 0);
    Result r = run_op<linear_cuda>("linear", evt_tile_linear, ts, {l.T}, {l.T}, 12, 1e-2);
    tally(r);
    free_all(ts);
}

int main(int argc, char **argv)
{
    std::vector<int64_t> Bs;
    std::vector<LinearShape> linears;
    int only8b = 0, skip8b = 0, copy_only = 0;
    int64_t ctx = 512;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--8b-only")) only8b = 1;
        else if (!strcmp(argv[i], "--no-8b")) skip8b = 1;
        else if (!strcmp(argv[i], "--ctx") && i + 1 < argc) ctx = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--copy-only")) copy_only = 1;
        else if (!strcmp(argv[i], "--no-tma")) g_tma = 0;
        else if (!strcmp(argv[i], "--l2-warm")) g_l2_warm = 1;
        else if (!strcmp(argv[i], "--linear") && i + 1 < argc) {
            LinearShape l;
            long long n, k, t;
            if (sscanf(argv[++i], "%lld,%lld,%lld", &n, &k, &t) != 3 || n < 1 || k < 1 || t < 1 || t > n) {
                fprintf(stderr, "--linear wants N,K,T with 1 <= T <= N\n");
                return 2;
            }
            l.N = n; l.K = k; l.T = t;
            linears.push_back(l);
        }
        else if (!strcmp(argv[i], "--splits") && i + 1 < argc) {
            g_splits = atoll(argv[++i]);
            if (g_splits < 1) g_splits = 1;
        }
        else Bs.push_back(atoll(argv[i]));
    }
    if (Bs.empty()) Bs = {1, 8, 64};
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    /* D2D copy bandwidth: 1 GiB, best of 5 */
    size_t nb = (size_t)1 << 30;
    void *s0, *s1;
    CK(cudaMalloc(&s0, nb)); CK(cudaMalloc(&s1, nb));
    CK(cudaMemset(s0, 1, nb));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    CK(cudaMemcpy(s1, s0, nb, cudaMemcpyDeviceToDevice));
    float best = 1e30f;
    for (int r = 0; r < 5; r++) {
        CK(cudaEventRecord(e0)); CK(cudaMemcpy(s1, s0, nb, cudaMemcpyDeviceToDevice)); CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); if (ms < best) best = ms;
    }
    cudaFree(s0); cudaFree(s1);
    g_copy_gbs = 2.0 * nb / (best * 1e-3) / 1e9;
    printf("device %s, %d SMs; cudaMemcpy D2D 1 GiB: %.3f ms = %.1f GB/s (read + write)\n", prop.name, prop.multiProcessorCount, best,
           g_copy_gbs);
    printf("COPY_GBS %.1f\n", g_copy_gbs);
    if (copy_only) return 0;
    Shape s06 = {"qwen3-0.6b", 1024, 16, 8, 128, 3072, 151936}, s8 = {"qwen3-8b", 4096, 32, 8, 128, 12288, 151936};
    for (int64_t B : Bs) {
        if (!linears.empty()) {
            for (const LinearShape &l : linears) bench_linear(l, B);
            continue;
        }
        if (!only8b) bench_shape(s06, B, ctx, 28);
        if (!skip8b) bench_shape(s8, B, ctx, 36);
    }
    printf("\ntilebench: %d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
