// baselines.cu — hand-written baselines for bench/sched.sh (CUDA runtime API).
//
//   pingpong    raw release/acquire ping-pong between two blocks on different
//               SMs (cuda::atomic_ref, device scope): one-way handoff time.
//               Also with the protocol's __nanosleep backoff (32..1024 ns).
//   launches    a chain of N tiny dependent kernels (X[i] = X[i-1] + 1): one
//               launch per task, back-to-back in a stream, and the same N
//               launches captured in a CUDA graph (replay timed).
//   rowsum      split row sum (the same tiles, src/tiles/rowsum.cuh) as two
//               kernels launched, and the same two kernels in a CUDA graph.
// Every timing: warm-up, then CUDA events around many repetitions; medians of
// 5 such measurements. Prints "name value unit" lines.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda/atomic>
#include "device/evt_task_args.h"
#include "tiles/rowsum.cuh"

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorName(e_)); exit(1); } } while (0)

typedef cuda::atomic_ref<int, cuda::thread_scope_device> aref;

__global__ void pingpong(int *flag, int iters, int backoff, unsigned *smid)
{
    int me = blockIdx.x;
    if (threadIdx.x != 0) return;
    unsigned s; asm volatile("mov.u32 %0, %%smid;" : "=r"(s)); smid[me] = s;
    aref f(*flag);
    for (int k = 0; k < iters; k++) {
        int want = 2 * k + me;
        unsigned b = 32;
        while (f.load(cuda::memory_order_acquire) != want) {
            if (backoff) { __nanosleep(b); if (b < 1024) b *= 2; }
        }
        f.store(want + 1, cuda::memory_order_release);
    }
}

__global__ void step(float *X, int i) { if (threadIdx.x == 0) X[i] = (i > 0 ? X[i - 1] : 0.0f) + 1.0f; }

__global__ void k_partial(const float *A, float *P, long rows, long cols, long pj, int n)
{
    evt_task_args a;
    a.ncoord = 2; a.coord[0] = blockIdx.x / 4; a.coord[1] = blockIdx.x % 4;
    a.t[0].ptr = (void *)A; a.t[0].dim[0] = rows; a.t[0].dim[1] = cols;
    a.t[1].ptr = P; a.t[1].dim[0] = rows; a.t[1].dim[1] = pj;
    a.iarg[0] = 32;
    rowsum_partial_cuda(&a);
}
__global__ void k_final(const float *P, float *C, long rows, long pj)
{
    evt_task_args a;
    a.ncoord = 1; a.coord[0] = blockIdx.x;
    a.t[0].ptr = (void *)P; a.t[0].dim[0] = rows; a.t[0].dim[1] = pj;
    a.t[1].ptr = C; a.t[1].dim[0] = rows;
    a.iarg[0] = 32;
    rowsum_final_cuda(&a);
}

template <class F> static double time_ms(F f, int reps)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    f(); CK(cudaDeviceSynchronize());
    std::vector<double> v;
    for (int t = 0; t < 5; t++) {
        CK(cudaEventRecord(e0));
        for (int r = 0; r < reps; r++) f();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
        v.push_back(ms / reps);
    }
    CK(cudaGetLastError());
    std::sort(v.begin(), v.end());
    return v[2];
}

int main(int argc, char **argv)
{
    int N = argc > 1 ? atoi(argv[1]) : 1024;
    /* ping-pong */
    int *flag; unsigned *smid;
    CK(cudaMalloc(&flag, 4)); CK(cudaMalloc(&smid, 8));
    for (int backoff = 0; backoff < 2; backoff++) {
        int iters = 20000;
        double ms = time_ms([&] { cudaMemset(flag, 0, 4); pingpong<<<2, 32>>>(flag, iters, backoff, smid); }, 3);
        double ms0 = time_ms([&] { cudaMemset(flag, 0, 4); pingpong<<<2, 32>>>(flag, 0, backoff, smid); }, 3);
        unsigned s[2]; CK(cudaMemcpy(s, smid, 8, cudaMemcpyDeviceToHost));
        printf("pingpong%s_oneway_us %.4f us (round trip %.4f us; SMs %u and %u)\n", backoff ? "_backoff" : "",
               (ms - ms0) * 1e3 / (2.0 * iters), (ms - ms0) * 1e3 / iters, s[0], s[1]);
    }
    /* one launch per task, and a graph of them */
    float *X; CK(cudaMalloc(&X, N * sizeof(float)));
    cudaStream_t st; CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    {
        cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
        std::vector<double> v;
        for (int t = 0; t < 6; t++) {
            CK(cudaEventRecord(e0, st));
            for (int i = 0; i < N; i++) step<<<1, 32, 0, st>>>(X, i);
            CK(cudaEventRecord(e1, st)); CK(cudaEventSynchronize(e1));
            float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
            if (t) v.push_back(ms);
        }
        std::sort(v.begin(), v.end());
        printf("launch_per_task_us %.4f us per task (chain of %d kernels)\n", v[2] * 1e3 / N, N);
        cudaGraph_t g; cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
        for (int i = 0; i < N; i++) step<<<1, 32, 0, st>>>(X, i);
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        v.clear();
        for (int t = 0; t < 6; t++) {
            CK(cudaEventRecord(e0, st));
            CK(cudaGraphLaunch(ge, st));
            CK(cudaEventRecord(e1, st)); CK(cudaEventSynchronize(e1));
            float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
            if (t) v.push_back(ms);
        }
        std::sort(v.begin(), v.end());
        printf("graph_per_task_us %.4f us per task (graph of %d kernels)\n", v[2] * 1e3 / N, N);
        std::vector<float> h(N); CK(cudaMemcpy(h.data(), X, N * 4, cudaMemcpyDeviceToHost));
        if (h[N - 1] != (float)N) { printf("chain result wrong: %g\n", h[N - 1]); return 1; }
    }
    /* split row sum: two kernels, and the two kernels in a graph */
    for (int n = 1; n <= 16384; n *= 4) {
        long rows = n * 32L, cols = 128, pj = 4;
        float *A, *P, *C;
        CK(cudaMalloc(&A, rows * cols * 4)); CK(cudaMalloc(&P, rows * pj * 4)); CK(cudaMalloc(&C, rows * 4));
        std::vector<float> hA(rows * cols);
        for (auto &x : hA) x = (float)(rand() % 2000) / 1000.0f - 1.0f;
        CK(cudaMemcpy(A, hA.data(), rows * cols * 4, cudaMemcpyHostToDevice));
        auto two = [&] { k_partial<<<n * 4, 128, 0, st>>>(A, P, rows, cols, pj, n); k_final<<<n, 128, 0, st>>>(P, C, rows, pj); };
        cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
        auto timed = [&](auto f) {
            f(); CK(cudaStreamSynchronize(st));
            std::vector<double> v;
            for (int t = 0; t < 5; t++) {
                CK(cudaEventRecord(e0, st));
                for (int r = 0; r < 200; r++) f();
                CK(cudaEventRecord(e1, st)); CK(cudaEventSynchronize(e1));
                float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
                v.push_back(ms / 200);
            }
            CK(cudaGetLastError());
            std::sort(v.begin(), v.end());
            return v[2];
        };
        double t2 = timed(two);
        cudaGraph_t g; cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
        two();
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        double tg = timed([&] { CK(cudaGraphLaunch(ge, st)); });
        std::vector<float> hC(rows); CK(cudaMemcpy(hC.data(), C, rows * 4, cudaMemcpyDeviceToHost));
        double err = 0;
        for (long r = 0; r < rows; r++) { double s = 0; for (long c = 0; c < cols; c++) s += hA[r * cols + c]; err = std::max(err, fabs(s - hC[r])); }
        printf("rowsum_two_kernels n=%d %.2f us ; rowsum_graph n=%d %.2f us (max abs err %.2g)\n", n, t2 * 1e3, n, tg * 1e3, err);
        CK(cudaGraphExecDestroy(ge)); CK(cudaGraphDestroy(g));
        CK(cudaFree(A)); CK(cudaFree(P)); CK(cudaFree(C));
    }
    return 0;
}
