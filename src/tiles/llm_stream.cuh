/* llm_stream.cuh — the weight stream of the linear tiles (CUDA, sm_90): a
 * task's weight rows travel from HBM into a ring of shared-memory slots
 * through bulk asynchronous copies (cp.async.bulk, the TMA engine), and the
 * tensor-core GEMV reads them from there. Included by llm.cuh.
 *
 * Opt-in (-DEVT_LLM_TMA=1), and slower than the register path it would
 * replace. The idea: the ring keeps up to EVT_LLM_RING_SLOTS x 18 KB in
 * flight per SM, issued by one warp, and the first slots fill while the task
 * still waits for its inputs. Measured on an H200 (bench/RESULTS.md): qwen3-8b
 * mlp_up 199 us against 56 us with register loads. A stream of 1 KB bulk
 * copies moves ~2 TB/s over 132 SMs, 16-32 KB copies 3.2-4.1 TB/s, so the
 * per-row copies of a row-major W cap it; a tiled weight layout (a stage one
 * contiguous copy) is what it needs. Kept, tested by tests/gpu/run.sh, as
 * the base for that.
 *
 * Stages. Tile nb of T owns rows [n0, n1) of W (N x K, row-major). A stage is
 * 16 rows x kc columns of each weight (kc = 512 for linear / linear_res,
 * 256 for mlp_up's gate and up), one bulk copy per row, rows padded by 64
 * bytes in the slot so the mma fragment loads are free of bank conflicts.
 * Stages run row tile by row tile, k block by k block.
 *
 * Ring protocol (per worker, state in evt_llm_pipe): stage sequence numbers
 * grow across the worker's tasks; stage seq lives in slot seq % S. full[slot]
 * (1 arrival + the copy bytes) completes when a stage has landed; empty[slot]
 * (one arrival per warp) when every warp has read it. Use j of a slot waits
 * full phase j (parity j & 1); refilling it for use j + 1 waits empty phase j.
 * Warp 0 is the producer: it issues the first stages (in the prefetch hook or
 * at the tile's start) and refills slot s % S with stage s + S after it has
 * read stage s. The ring belongs to one task at a time (tag = its first
 * weight and first row): a task that prefetched and then was skipped leaves
 * stages in flight, which the next user (or the worker's exit) drains.
 */
#ifndef EVT_TILE_LLM_STREAM_CUH
#define EVT_TILE_LLM_STREAM_CUH

#ifndef EVT_LLM_RING_SLOTS
#if defined(EVT_MIN_BLOCKS) && EVT_MIN_BLOCKS > 1
#define EVT_LLM_RING_SLOTS 4 /* two workers per SM must share the shared memory */
#else
#define EVT_LLM_RING_SLOTS 8
#endif
#endif
#define EVT_LLM_SLOT_BYTES 18432 /* 32 rows x (256 x 2 + 64) = 16 rows x (512 x 2 + 64) + 1 KB */
#define EVT_LLM_RING_BYTES (EVT_LLM_RING_SLOTS * EVT_LLM_SLOT_BYTES)

/* Dynamic shared memory every worker of a program that includes llm.cuh
 * gets (the runtime reads evt_dyn_smem_bytes from the module). */
#if EVT_LLM_TMA
#undef EVT_TILES_DYN_SMEM
#define EVT_TILES_DYN_SMEM EVT_LLM_RING_BYTES
#endif

extern __shared__ __align__(128) unsigned char evt_dyn_smem[];

struct evt_llm_pipe_state {
    uint64_t full[EVT_LLM_RING_SLOTS], empty[EVT_LLM_RING_SLOTS];
    uint32_t issued, consumed;  /* stage sequence numbers */
    uint32_t seq0;              /* sequence number of the owning task's stage 0 */
    int32_t next;               /* the owning task's next stage to issue */
    const void *tag;            /* owning task: first weight, first row (NULL: none) */
    int64_t tag_n0;
};
static __shared__ evt_llm_pipe_state evt_llm_pipe;

/* One task's stages (every thread computes the same plan). */
struct evt_llm_plan {
    const char *w[2];
    int64_t K, n0, n1, kc, nkb, pitch;
    int32_t nst, nw;
};

__device__ __forceinline__ uint32_t evt_llm_saddr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void evt_llm_mbar_init(uint64_t *bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(evt_llm_saddr(bar)), "r"(count) : "memory");
}

/* Waits until the phase of parity `parity` of bar has completed. A stuck
 * ring is an internal bug: after 10 s the kernel traps (an error the
 * runtime reports) instead of hanging. */
__device__ __forceinline__ void evt_llm_mbar_wait(uint64_t *bar, uint32_t parity)
{
    uint32_t a = evt_llm_saddr(bar), ok;
    uint64_t t0 = 0;
    for (int spin = 0;; spin++) {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(ok) : "r"(a), "r"(parity) : "memory");
        if (ok) return;
        if ((spin & 1023) == 1023) {
            uint64_t t;
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
            if (!t0) t0 = t;
            else if (t - t0 > 10000000000ull) __trap();
        }
    }
}

__device__ __forceinline__ void evt_llm_mbar_arrive(uint64_t *bar, uint32_t count)
{
    asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(evt_llm_saddr(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void evt_llm_mbar_expect(uint64_t *bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(evt_llm_saddr(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void evt_llm_bulk_copy(void *dst, const void *src, uint32_t bytes, uint64_t *bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(evt_llm_saddr(dst)), "l"(src), "r"(bytes), "r"(evt_llm_saddr(bar)) : "memory");
}

/* Worker start (all threads; the kernel synchronises after it). */
__device__ __forceinline__ void evt_llm_worker_begin(void)
{
    if (threadIdx.x == 0) {
        for (int i = 0; i < EVT_LLM_RING_SLOTS; i++) {
            evt_llm_mbar_init(&evt_llm_pipe.full[i], 1);
            evt_llm_mbar_init(&evt_llm_pipe.empty[i], blockDim.x / 32);
        }
        evt_llm_pipe.issued = evt_llm_pipe.consumed = evt_llm_pipe.seq0 = 0;
        evt_llm_pipe.next = 0;
        evt_llm_pipe.tag = NULL;
        evt_llm_pipe.tag_n0 = 0;
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
}

/* One thread: waits for stages still in flight (a task that prefetched and
 * was then skipped) and releases their slots. */
__device__ __forceinline__ void evt_llm_drain(void)
{
    evt_llm_pipe_state *P = &evt_llm_pipe;
    for (uint32_t s = P->consumed; s != P->issued; s++) {
        uint32_t slot = s % EVT_LLM_RING_SLOTS;
        evt_llm_mbar_wait(&P->full[slot], (s / EVT_LLM_RING_SLOTS) & 1);
        evt_llm_mbar_arrive(&P->empty[slot], blockDim.x / 32);
    }
    P->consumed = P->issued;
    P->tag = NULL;
}

/* Worker exit: nothing may land in shared memory after the block ends. */
__device__ __forceinline__ void evt_llm_worker_end(void)
{
    if (threadIdx.x == 0 && evt_llm_pipe.tag) evt_llm_drain();
}

__device__ __forceinline__ void evt_llm_plan_of(const evt_task_args *a, int nw, evt_llm_plan *p)
{
    int64_t N = a->t[1].dim[0];
    p->w[0] = (const char *)a->t[1].ptr;
    p->w[1] = nw > 1 ? (const char *)a->t[2].ptr : p->w[0];
    p->nw = nw;
    p->K = a->t[0].dim[1];
    evt_llm_tile_rows(a->coord[0], a->iarg[0], N, &p->n0, &p->n1);
    p->kc = nw > 1 ? 256 : 512;
    if (p->kc > p->K) p->kc = p->K;
    p->pitch = p->kc * 2 + 64;
    p->nkb = (p->K + p->kc - 1) / p->kc;
    p->nst = p->n1 > p->n0 ? (int32_t)(((p->n1 - p->n0 + 15) / 16) * p->nkb) : 0;
}

/* The calling lanes of warp 0 (all 32 in the tile, the leader alone in the
 * prefetch hook): issue stage s of plan p as sequence number seq. */
__device__ __forceinline__ void evt_llm_issue(const evt_llm_plan *p, int32_t s, uint32_t seq)
{
    evt_llm_pipe_state *P = &evt_llm_pipe;
    unsigned m = __activemask();
    int lane = __popc(m & ((1u << (threadIdx.x & 31)) - 1)), nl = __popc(m); /* rank among the callers */
    uint32_t slot = seq % EVT_LLM_RING_SLOTS;
    if (seq >= EVT_LLM_RING_SLOTS) evt_llm_mbar_wait(&P->empty[slot], (seq / EVT_LLM_RING_SLOTS - 1) & 1);
    int64_t r0 = p->n0 + (s / p->nkb) * 16, k0 = (s % p->nkb) * p->kc;
    int nr = (int)(p->n1 - r0 < 16 ? p->n1 - r0 : 16);
    uint32_t kb = (uint32_t)((p->K - k0 < p->kc ? p->K - k0 : p->kc) * 2);
    if (lane == 0) evt_llm_mbar_expect(&P->full[slot], kb * nr * p->nw);
    __syncwarp(m);
    unsigned char *base = evt_dyn_smem + slot * EVT_LLM_SLOT_BYTES;
    for (int i = lane; i < nr * p->nw; i += nl) {
        int w = i / nr, r = i % nr;
        evt_llm_bulk_copy(base + (w * 16 + r) * p->pitch, p->w[w] + ((r0 + r) * p->K + k0) * 2, kb, &P->full[slot]);
    }
}

/* The calling lanes of warp 0: make the ring hold plan p's stages, issuing
 * up to a full ring of them. Called by the prefetch hook (the leader) and by
 * the tile (warp 0). */
__device__ __forceinline__ void evt_llm_stream_begin(const evt_llm_plan *p)
{
    evt_llm_pipe_state *P = &evt_llm_pipe;
    unsigned m = __activemask();
    int lane = __popc(m & ((1u << (threadIdx.x & 31)) - 1));
    if (!(P->tag == p->w[0] && P->tag_n0 == p->n0)) {
        __syncwarp(m);
        if (lane == 0) {
            if (P->tag) evt_llm_drain();
            P->tag = p->w[0];
            P->tag_n0 = p->n0;
            P->seq0 = P->issued;
            P->next = 0;
        }
        __syncwarp(m);
    }
    while (P->next < p->nst && P->issued - P->consumed < EVT_LLM_RING_SLOTS) {
        evt_llm_issue(p, P->next, P->issued);
        __syncwarp(m);
        if (lane == 0) { P->next++; P->issued++; }
        __syncwarp(m);
    }
}

/* The GEMV over the ring: rows [n0, n1) x batches [0, B), B <= 8 * NB8.
 * Each warp takes chunks warp, warp + nwarps, ... (32 columns each) of every
 * stage; partial sums meet in shared memory at the end of each row tile. */
template <int MODE, int NB8>
__device__ __forceinline__ void evt_llm_gemv_stream(const evt_task_args *a)
{
    constexpr int NW = MODE == 2 ? 2 : 1;
    constexpr int CPW = NW == 1 ? 2 : 1; /* chunks per warp per stage (8 warps) */
    evt_llm_pipe_state *P = &evt_llm_pipe;
    evt_llm_plan p;
    evt_llm_plan_of(a, NW, &p);
    if (!p.nst) return;
    const evt_bf16 *x = (const evt_bf16 *)a->t[0].ptr;
    int64_t B = a->t[0].dim[0], K = p.K;
    int warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    if (warp == 0) evt_llm_stream_begin(&p);
    __syncthreads(); /* seq0 */
    uint32_t seq0 = P->seq0;
    const uint4 z = make_uint4(0, 0, 0, 0);
    float acc[NW][NB8][4];
    float *part = evt_llm_smem; /* [warp][NW][NB8][4][32] */
    for (int32_t s = 0; s < p.nst; s++) {
        int64_t kb = s % p.nkb, rt = s / p.nkb, k0 = kb * p.kc;
        int64_t kw = K - k0 < p.kc ? K - k0 : p.kc;
        if (kb == 0) {
#pragma unroll
            for (int q = 0; q < NW; q++)
#pragma unroll
                for (int j = 0; j < NB8; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++) acc[q][j][e] = 0.f;
        }
        /* x fragments first: their latency overlaps the wait for the stage */
        uint4 xv[CPW][NB8];
#pragma unroll
        for (int c = 0; c < CPW; c++) {
            int64_t ch = warp + c * nwarps, k = k0 + ch * 32 + 8 * t;
#pragma unroll
            for (int j = 0; j < NB8; j++) {
                int64_t b = 8 * j + g;
                xv[c][j] = ch * 32 < kw && b < B ? evt_llm_ldx(x + b * K + k) : z;
            }
        }
        uint32_t seq = seq0 + (uint32_t)s, slot = seq % EVT_LLM_RING_SLOTS;
        evt_llm_mbar_wait(&P->full[slot], (seq / EVT_LLM_RING_SLOTS) & 1);
        const unsigned char *base = evt_dyn_smem + slot * EVT_LLM_SLOT_BYTES;
#pragma unroll
        for (int c = 0; c < CPW; c++) {
            int64_t ch = warp + c * nwarps;
            if (ch * 32 >= kw) break;
#pragma unroll
            for (int q = 0; q < NW; q++) {
                const unsigned char *row = base + (q * 16 + g) * p.pitch + ch * 64 + 16 * t;
                uint4 w0 = *(const uint4 *)row, w1 = *(const uint4 *)(row + 8 * p.pitch);
#pragma unroll
                for (int j = 0; j < NB8; j++) {
                    evt_llm_mma(acc[q][j], w0.x, w1.x, w0.y, w1.y, xv[c][j].x, xv[c][j].y);
                    evt_llm_mma(acc[q][j], w0.z, w1.z, w0.w, w1.w, xv[c][j].z, xv[c][j].w);
                }
            }
        }
        __syncwarp();
        if (lane == 0) evt_llm_mbar_arrive(&P->empty[slot], 1);
        /* the producer refills: stage P->next reuses the slot of stage
           P->next - S, which every warp has read once it arrives */
        if (warp == 0 && P->next < p.nst) {
            evt_llm_issue(&p, P->next, seq0 + (uint32_t)P->next);
            __syncwarp();
            if (lane == 0) { P->next++; P->issued++; }
            __syncwarp();
        }
        if (kb == p.nkb - 1) { /* row tile done: sum the warps' partials */
#pragma unroll
            for (int q = 0; q < NW; q++)
#pragma unroll
                for (int j = 0; j < NB8; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++) part[(((warp * NW + q) * NB8 + j) * 4 + e) * 32 + lane] = acc[q][j][e];
            __syncthreads();
            int64_t r0 = p.n0 + rt * 16;
            for (int i = threadIdx.x; i < NB8 * 128; i += blockDim.x) {
                int j = i / 128, e = (i / 32) % 4, l = i % 32;
                int64_t n = r0 + (l >> 2) + (e >> 1) * 8, b = 8 * j + 2 * (l & 3) + (e & 1);
                if (n >= p.n1 || b >= B) continue;
                float s0 = 0.f, s1 = 0.f;
                for (int w = 0; w < nwarps; w++) {
                    s0 += part[(((w * NW + 0) * NB8 + j) * 4 + e) * 32 + l];
                    s1 += part[(((w * NW + NW - 1) * NB8 + j) * 4 + e) * 32 + l];
                }
                evt_llm_out<MODE>(a, b, n, s0, s1);
            }
            __syncthreads();
        }
    }
    if (threadIdx.x == 0) {
        P->consumed = seq0 + (uint32_t)p.nst;
        P->tag = NULL;
    }
}

/* May this task use the stream? (B, K, alignment, block shape) */
template <int MODE>
__device__ __forceinline__ bool evt_llm_stream_ok(const evt_task_args *a)
{
    int64_t B = a->t[0].dim[0], K = a->t[0].dim[1];
    uintptr_t al = (uintptr_t)a->t[0].ptr | (uintptr_t)a->t[1].ptr | (MODE == 2 ? (uintptr_t)a->t[2].ptr : 0);
    int maxb = MODE == 2 ? 32 : 64;
    return EVT_LLM_TMA && !(K & 31) && !(al & 15) && blockDim.x == 256 && B <= maxb && B >= 1;
}

/* Prefetch hook body (the leader): the task's first stages start landing.
 * Returns 0 for a task the stream does not take. */
template <int MODE>
__device__ __forceinline__ bool evt_llm_stream_prefetch(const evt_task_args *a)
{
    if (!evt_llm_stream_ok<MODE>(a)) return false;
    evt_llm_plan p;
    evt_llm_plan_of(a, MODE == 2 ? 2 : 1, &p);
    if (p.nst) evt_llm_stream_begin(&p);
    return true;
}

#endif
