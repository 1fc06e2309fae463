/* evt_stream.h — the weight stream: each worker's weights arrive in shared
 * memory ahead of its tasks, independent of their events (papers/000 §3.4,
 * the prefetch annotation, carried to its end).
 *
 * A call annotated `prefetch` whose operator can stream (a `<op>_stream_cuda`
 * plan, evt_tile_decl.has_stream) and whose streamed tensors nothing in the
 * launch writes (weights, inputs) streams: the worker block's last warp, the
 * producer, walks the tasks the worker will run (its static queue; its share
 * of a call kernel by kernel), asks each task's operator for its plan, and
 * copies the planned chunks with bulk asynchronous copies (cp.async.bulk,
 * the TMA engine) into a ring of EVT_STREAM_SLOTS slots. It blocks only on
 * the ring being full, never on an event: a task's weights land while the
 * task, or the tasks before it, still wait for their inputs. The task's tile
 * then consumes its chunks in order (evt_stream_wait / evt_stream_release)
 * and computes from shared memory. Producer and tile compute the same plan
 * from the same arguments, so they agree on every chunk; the worker checks
 * at its end that everything issued was consumed (EVT_KERR_STREAM).
 *
 * A plan streams a band of rows of one or two row-major matrices of the
 * same shape (a linear tile's weight rows; gate and up of an MLP tile):
 * rows [row0, row0 + nrows), in row groups of rb rows, each row cut into
 * column blocks of cb bytes (cb = pitch: whole rows). Chunk c is
 *   m = c % nmat, u = c / nmat, kb = u % nkb, rg = u / nkb
 * i.e. row group by row group, column block by column block, the matrices
 * of a (row group, column block) unit adjacent. A chunk lands dense, rows of
 * its width one after another. Whole rows are one copy of a contiguous
 * range; otherwise one copy per row, issued by the 32 lanes of the producer
 * (bench/stream_bw.cu: 32 KB copies stream at 4.2 TB/s on an H200, 4 KB row
 * pieces from 32 lanes at 4.18, 2 KB at 3.5, from one lane at 1.8).
 *
 * Slots: full[s] (one arrival + the copy's bytes) completes when a chunk has
 * landed; empty[s] (one arrival per compute warp) when every compute warp has
 * read it. Chunk sequence numbers grow over the launch: chunk seq uses slot
 * seq % S; its use j = seq / S waits full phase j and the producer refills
 * the slot for seq + S after empty phase j. Every compute warp must wait for
 * and release every chunk of its task, in order, even one it does not read.
 *
 * Plain C structs (the plan) are shared with the C target, which never
 * streams; the machinery is CUDA only (included after evt_device.h).
 */
#ifndef EVT_STREAM_H
#define EVT_STREAM_H
#include <stdint.h>

#ifndef EVT_STREAM_SLOT_BYTES
#define EVT_STREAM_SLOT_BYTES 32768
#endif
#ifndef EVT_STREAM_SLOTS
#define EVT_STREAM_SLOTS 5
#endif
#define EVT_STREAM_RING_BYTES (EVT_STREAM_SLOT_BYTES * EVT_STREAM_SLOTS)

#ifdef __CUDACC__
#define EVT_STREAM_FN __host__ __device__ __forceinline__
#else
#define EVT_STREAM_FN static inline
#endif

typedef struct evt_stream_plan {
    const char *mat[2];  /* the matrices (row-major, 16-byte aligned) */
    int64_t pitch;       /* bytes per row, a multiple of 16 */
    int64_t row0, nrows; /* the band */
    int64_t cb;          /* bytes of a row per column block: a multiple of 64, or pitch */
    int32_t nmat, rb, nrg, nkb, nchunks, pad;
} evt_stream_plan;

/* Where chunk c of a plan comes from and how it lies in its slot. */
typedef struct evt_stream_chunk {
    const char *src;     /* first byte of its first row */
    int64_t row;         /* its first row (absolute) */
    int32_t nr;          /* rows */
    int32_t bytes;       /* bytes per row in the chunk (its row pitch in the slot) */
    int32_t m, rg, kb;
} evt_stream_chunk;

/* A band plan: rows [row0, row0 + nrows) of nmat matrices of pitch bytes per
 * row, rb rows per group; whole rows when rb rows fit a slot, else column
 * blocks of the largest multiple of 64 bytes that fits. Returns the number
 * of chunks (0: nothing to stream). */
EVT_STREAM_FN int evt_stream_band(evt_stream_plan *P, const void *m0, const void *m1, int nmat, int64_t pitch, int64_t row0,
                                  int64_t nrows, int rb)
{
    P->nchunks = 0;
    if (nrows <= 0 || rb <= 0 || pitch <= 0 || (pitch & 15) || nmat < 1 || nmat > 2) return 0;
    /* 32-bit arithmetic below: on the GPU a 64-bit division is a helper call */
    if (nrows > 0x7fffffff || pitch > 0x7fffffff) return 0;
    if (rb > nrows) rb = (int)nrows;
    int cb = pitch * rb <= EVT_STREAM_SLOT_BYTES ? (int)pitch : (EVT_STREAM_SLOT_BYTES / rb) & ~63;
    if (cb < 64) return 0;
    P->mat[0] = (const char *)m0;
    P->mat[1] = (const char *)(nmat > 1 ? m1 : m0);
    P->pitch = pitch;
    P->row0 = row0;
    P->nrows = nrows;
    P->cb = cb;
    P->nmat = nmat;
    P->rb = rb;
    P->nrg = (int32_t)(((uint32_t)nrows + (uint32_t)rb - 1) / (uint32_t)rb);
    P->nkb = (int32_t)(((uint32_t)pitch + (uint32_t)cb - 1) / (uint32_t)cb);
    P->pad = 0;
    P->nchunks = P->nrg * P->nkb * nmat;
    return P->nchunks;
}

EVT_STREAM_FN evt_stream_chunk evt_stream_chunk_of(const evt_stream_plan *P, int c)
{
    evt_stream_chunk k;
    k.m = c % P->nmat;
    int u = c / P->nmat;
    k.kb = u % P->nkb;
    k.rg = u / P->nkb;
    int64_t r0 = (int64_t)k.rg * P->rb, off = (int64_t)k.kb * P->cb;
    k.row = P->row0 + r0;
    k.nr = (int32_t)(P->nrows - r0 < P->rb ? P->nrows - r0 : P->rb);
    k.bytes = (int32_t)(P->pitch - off < P->cb ? P->pitch - off : P->cb);
    k.src = P->mat[k.m] + k.row * P->pitch + off;
    return k;
}

#if defined(__CUDACC__) && EVT_STREAM
/* ------------------------------------------------------------ CUDA ---- */

/* Per worker, in shared memory. The ring itself is dynamic shared memory at
 * EVT_STREAM_RING_OFFSET (after the tiles' own dynamic shared memory). */
typedef struct evt_stream_state {
    uint64_t full[EVT_STREAM_SLOTS], empty[EVT_STREAM_SLOTS];
    uint32_t head;           /* compute threads: next chunk to consume */
    uint32_t issued;         /* producer: chunks issued */
    int32_t stalled;         /* a wait passed the watchdog bound (evt_mbar_wait) */
    const evt_ctx *ctx;      /* for the abort flag and the watchdog (NULL: none) */
    evt_stream_plan plan;    /* producer's scratch */
    evt_task_args args;
} evt_stream_state;
static __shared__ evt_stream_state evt_stream_s;
extern __shared__ __align__(1024) unsigned char evt_dyn_smem[];
#ifndef EVT_STREAM_RING_OFFSET
#define EVT_STREAM_RING_OFFSET 0
#endif

__device__ __forceinline__ uint32_t evt_smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned char *evt_stream_slot(uint32_t seq)
{
    return evt_dyn_smem + EVT_STREAM_RING_OFFSET + (size_t)(seq % EVT_STREAM_SLOTS) * EVT_STREAM_SLOT_BYTES;
}
__device__ __forceinline__ bool evt_mbar_test(uint64_t *bar, uint32_t parity)
{
    uint32_t ok;
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(evt_smem_addr(bar)), "r"(parity) : "memory");
    return ok != 0;
}
/* Waits for a phase; returns false if the launch was aborted meanwhile or
 * the phase did not come within the watchdog bound. A stall is an internal
 * error of the stream: the waiter marks it (the worker reports it as
 * EVT_KERR_STREAM at its end, evt_stream_finish) and every later wait
 * returns at once, so the launch ends with an error instead of hanging.
 * No calls in here: it is inlined into tiles, where a call would make the
 * compiler save their registers around it. */
__device__ __forceinline__ bool evt_mbar_wait(uint64_t *bar, uint32_t parity)
{
    const evt_ctx *C = evt_stream_s.ctx;
    uint64_t t0 = 0;
    for (uint32_t spin = 0; !evt_mbar_test(bar, parity); spin++) {
        if ((spin & 255) != 255 || !C) continue;
        if (evt_aborted(C) || *(volatile int32_t *)&evt_stream_s.stalled) return false;
        uint64_t t = evt_now_ns();
        if (!t0) t0 = t;
        else if (t - t0 > C->timeout_ns) {
            *(volatile int32_t *)&evt_stream_s.stalled = 1;
            return false;
        }
    }
    return true;
}

/* Thread 0, before the block's first barrier. */
__device__ __forceinline__ void evt_stream_init(const evt_ctx *C, int compute_warps)
{
    evt_stream_state *S = &evt_stream_s;
    for (int i = 0; i < EVT_STREAM_SLOTS; i++) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(evt_smem_addr(&S->full[i])));
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(evt_smem_addr(&S->empty[i])), "r"(compute_warps));
    }
    S->head = S->issued = 0;
    S->stalled = 0;
    S->ctx = C;
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/* The producer warp: issues every chunk of S->plan. Returns false if the
 * launch was aborted (the rest of the worker's stream is then dropped). */
__device__ __forceinline__ bool evt_stream_put(void)
{
    evt_stream_state *S = &evt_stream_s;
    const evt_stream_plan *P = &S->plan;
    int lane = threadIdx.x & 31;
    for (int c = 0; c < P->nchunks; c++) {
        uint32_t seq = S->issued, slot = seq % EVT_STREAM_SLOTS;
        int ok = 1;
        if (lane == 0 && seq >= EVT_STREAM_SLOTS) ok = evt_mbar_wait(&S->empty[slot], (seq / EVT_STREAM_SLOTS - 1) & 1);
        if (!__shfl_sync(0xffffffffu, ok, 0)) return false;
        evt_stream_chunk k = evt_stream_chunk_of(P, c);
        unsigned char *dst = evt_stream_slot(seq);
        uint32_t total = (uint32_t)k.nr * (uint32_t)k.bytes;
        if (lane == 0)
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(evt_smem_addr(&S->full[slot])), "r"(total)
                         : "memory");
        __syncwarp();
        if (k.bytes == P->pitch) { /* whole rows: one contiguous range */
            if (lane == 0)
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                                 evt_smem_addr(dst)),
                             "l"(k.src), "r"(total), "r"(evt_smem_addr(&S->full[slot]))
                             : "memory");
        } else {
            for (int r = lane; r < k.nr; r += 32)
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                                 evt_smem_addr(dst + (size_t)r * k.bytes)),
                             "l"(k.src + r * P->pitch), "r"((uint32_t)k.bytes), "r"(evt_smem_addr(&S->full[slot]))
                             : "memory");
        }
        __syncwarp();
        if (lane == 0) S->issued = seq + 1;
        __syncwarp();
    }
    return true;
}

/* The producer warp, at the end: nothing may land in shared memory after the
 * block has left; waits for the last use of every slot. */
__device__ __forceinline__ void evt_stream_drain(void)
{
    evt_stream_state *S = &evt_stream_s;
    if ((threadIdx.x & 31) != 0) return;
    uint32_t n = S->issued, first = n > EVT_STREAM_SLOTS ? n - EVT_STREAM_SLOTS : 0;
    for (uint32_t s = first; s < n; s++)
        while (!evt_mbar_test(&S->full[s % EVT_STREAM_SLOTS], (s / EVT_STREAM_SLOTS) & 1)) {
        }
}

/* Compute threads: the first chunk of the current task (read by all of them
 * before any calls evt_stream_end). */
__device__ __forceinline__ uint32_t evt_stream_begin(void) { return evt_stream_s.head; }
/* Thread 0 after the tile's last barrier: the task consumed n chunks. */
__device__ __forceinline__ void evt_stream_end(uint32_t seq0, int n)
{
    if (threadIdx.x == 0) evt_stream_s.head = seq0 + (uint32_t)n;
}

/* Compute warps: chunk seq's slot, once the chunk has landed. If the launch
 * was aborted (or the watchdog fired) it returns at once: the slot then holds
 * stale bytes, which the tile may read (its result no longer matters; it
 * must only not hang or fault). */
__device__ __forceinline__ const unsigned char *evt_stream_wait(uint32_t seq)
{
    (void)evt_mbar_wait(&evt_stream_s.full[seq % EVT_STREAM_SLOTS], (seq / EVT_STREAM_SLOTS) & 1);
    return evt_stream_slot(seq);
}
/* Compute warps, all lanes: this warp is done with chunk seq. */
__device__ __forceinline__ void evt_stream_release(uint32_t seq)
{
    __syncwarp();
    if ((threadIdx.x & 31) == 0)
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(evt_smem_addr(&evt_stream_s.empty[seq % EVT_STREAM_SLOTS]))
                     : "memory");
}
#endif

#endif
