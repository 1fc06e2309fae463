/* evt_stream.h — the weight stream: a worker's weights arrive in shared
 * memory ahead of its tasks, independent of their events (papers/000 §3.4,
 * the prefetch annotation carried to its end; MPK's cross-task pipelining).
 *
 * A call annotated `prefetch` whose operator can stream (stream_params and a
 * stream_plan, include/evt/tiles.h) and whose streamed tensors nothing in the
 * launch writes (weights, inputs) streams when the kernel is built with
 * evt_compile_opts.stream_weights. A static worker knows the tasks it will
 * run: its queue. At bind time the host resolves, for every streaming task
 * of every static worker, the band of weight rows it reads (a job,
 * evt_stream_job in evt_ctx.h: tensors, first row, rows, pitch, and the
 * first queue entry whose pump may copy it). Before each queue entry the
 * worker's leader runs the pump (evt_stream_pump): it retires the slots of
 * finished entries, then copies the next jobs' bands with bulk asynchronous
 * copies (cp.async.bulk, the TMA engine) into a ring in dynamic shared
 * memory, as long as the ring has room. The copies complete on one mbarrier
 * per slot and never wait on an event: a task's weights land while the tasks
 * before it run and while it waits for its inputs. The task finds its rows
 * in its arguments (evt_task_args.stream: how many leading rows of its band
 * are in shared memory; stream_at: where, and which barrier), waits for the
 * barrier and reads them with shared-memory loads; rows that did not fit come
 * from global memory as before.
 *
 * Ring policy (evt_stream_place): FIFO in queue order. A band is copied whole
 * when it fits in the free contiguous space (wrapping to the ring's start
 * when it does not fit before the end); a band larger than the whole ring
 * takes the largest prefix of whole rows that fits, but only once the ring
 * is empty, so that it never starves the tasks queued before it. The pump
 * stops at the first band that does not fit (order is kept).
 *
 * No warp is dedicated to the stream: the leader reads the jobs and places
 * them in the ring; after a block barrier, thread EVT_STREAM_ISSUER (32: lane
 * 0 of warp 1) issues their bulk copies (32 KiB pieces of each matrix's
 * band) and goes on with the tile like every other thread. The copies are
 * not the leader's own because the leader's release fences (its notifies)
 * would otherwise wait for them to land (bench/RESULTS.md, session 17). Dynamic workers do not know their next task and do not
 * stream; neither do kernel-by-kernel launches (a block runs one task:
 * nothing to overlap). The C target never streams.
 */
#ifndef EVT_STREAM_H
#define EVT_STREAM_H
#include <stdint.h>

#ifndef EVT_STREAM_SLOTS
#define EVT_STREAM_SLOTS 8 /* tasks whose weights may be in flight or resident at once */
#endif
#ifndef EVT_STREAM_ISSUER
#define EVT_STREAM_ISSUER 32 /* the thread that issues the copies (0: the leader, in the pump) */
#endif
#ifndef EVT_STREAM_LDGSTS
#define EVT_STREAM_LDGSTS 0 /* 1 (a measurement build): warps 1.. copy with 16-byte cp.async instead of the
                               TMA's bulk copies (bench/RESULTS.md session 17: a release fence anywhere in
                               the block waits for the block's bulk copies, not for other warps' cp.async) */
#endif
#ifndef EVT_STREAM_WINDOW
#define EVT_STREAM_WINDOW 32 /* jobs the leader keeps in shared memory (read 32 at a time) */
#endif

#ifdef __CUDACC__
#define EVT_STREAM_FN __host__ __device__ __forceinline__
#else
#define EVT_STREAM_FN static inline
#endif

/* The ring's decision for the next band (nrows rows of row_bytes bytes; a
 * ring of R bytes whose next free offset is head, with `used` bytes held by
 * `count` bands): the rows to copy (> 0), placed at *off and charging
 * *charge bytes (a skipped tail before the wrap included); 0: no room now
 * (the pump stops and keeps the order); -1: the band can never stream (not a
 * single row fits the ring: skip it). A band larger than the ring gets the
 * largest prefix that fits, and only when the ring is empty. */
EVT_STREAM_FN int64_t evt_stream_place(uint32_t R, uint32_t head, uint32_t used, uint32_t count, int64_t nrows,
                                       int64_t row_bytes, uint32_t *off, uint32_t *charge)
{
    if (nrows <= 0 || row_bytes <= 0 || row_bytes > (int64_t)R) return -1;
    int64_t rows = nrows;
    if (rows * row_bytes > (int64_t)R) {
        if (count) return 0;
        rows = (int64_t)R / row_bytes;
    }
    uint32_t bytes = (uint32_t)(rows * row_bytes);
    *off = head;
    *charge = bytes;
    if (head + bytes > R) { /* no room before the end: start at 0, the tail stays unused */
        *charge += R - head;
        *off = 0;
    }
    if (used + *charge > R) return 0;
    return rows;
}

/* evt_task_args.stream_at: where a task's rows lie and which barrier says
 * they have landed (byte offset in dynamic shared memory / 16, slot, parity). */
#define EVT_STREAM_AT(off, slot, parity) ((uint32_t)(off) / 16u << 8 | (uint32_t)(slot) << 1 | (uint32_t)(parity))
#define EVT_STREAM_AT_OFF(at) (((at) >> 8) * 16u)
#define EVT_STREAM_AT_SLOT(at) (((at) >> 1) & 127u)
#define EVT_STREAM_AT_PARITY(at) ((at) & 1u)

#if defined(__CUDACC__) && EVT_STREAM
/* ------------------------------------------------------------ CUDA ---- */

/* Per worker, in shared memory; the leader alone writes it. */
typedef struct evt_stream_state {
    uint64_t bar[EVT_STREAM_SLOTS];    /* one arrival + the copies' bytes per use */
    uint32_t off[EVT_STREAM_SLOTS];    /* ring offset of its first byte */
    uint32_t charge[EVT_STREAM_SLOTS]; /* ring bytes it holds (a skipped tail included) */
    int32_t rows[EVT_STREAM_SLOTS];    /* rows of each matrix it holds */
    evt_stream_job held[EVT_STREAM_SLOTS]; /* the job it holds (held[s].entry: whose task reads it) */
    uint32_t npend;                    /* the last npend slots in flight are placed but not yet issued */
    uint32_t parity;                   /* bit s: the phase slot s's next use completes */
    uint32_t first, count;             /* the slots in flight: first, first + 1, ... (mod SLOTS) */
    uint32_t head, used;               /* ring: next free offset, bytes held */
    int64_t job, job_end;              /* the worker's next job and the end of its jobs (evt_ctx.sjob) */
    int64_t win0;                      /* the first job in win[] (-1: none) */
    int32_t cur_rows;                  /* the entry being dispatched: its rows in the ring (0: none) */
    uint32_t cur_at;                   /*   and where (EVT_STREAM_AT) */
    int32_t stalled;                   /* a barrier wait passed the watchdog bound */
    const evt_ctx *ctx;
    __align__(16) evt_stream_job win[EVT_STREAM_WINDOW]; /* jobs win0 .. win0 + EVT_STREAM_WINDOW - 1 (filled in 16-byte pieces) */
} evt_stream_state;
static __shared__ evt_stream_state evt_stream_s;
extern __shared__ __align__(1024) unsigned char evt_dyn_smem[];

__device__ __forceinline__ uint32_t evt_smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ bool evt_mbar_test(uint64_t *bar, uint32_t parity)
{
    uint32_t ok;
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(evt_smem_addr(bar)), "r"(parity) : "memory");
    return ok != 0;
}

/* Waits for a phase; returns false if the launch was aborted meanwhile or
 * the phase did not come within the watchdog bound. A stall is an internal
 * error (a bulk copy of valid memory always completes): the waiter marks it,
 * the worker reports it as EVT_KERR_STREAM at its end and every later wait
 * returns at once, so the launch ends with an error instead of hanging. No
 * calls in here: it is inlined into tiles. */
__device__ __forceinline__ bool evt_mbar_wait(uint64_t *bar, uint32_t parity, bool give_up_on_abort = true)
{
    const evt_ctx *C = evt_stream_s.ctx;
    uint64_t t0 = 0;
    for (uint32_t spin = 0; !evt_mbar_test(bar, parity); spin++) {
        if ((spin & 255) != 255 || !C) continue;
        if ((give_up_on_abort && evt_aborted(C)) || *(volatile int32_t *)&evt_stream_s.stalled) return false;
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
__device__ __forceinline__ void evt_stream_init(const evt_ctx *C)
{
    evt_stream_state *S = &evt_stream_s;
    for (int i = 0; i < EVT_STREAM_SLOTS; i++) /* bulk: the issuer's arrival (+ bytes); cp.async: every copying thread's */
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(evt_smem_addr(&S->bar[i])),
                     "r"(EVT_STREAM_LDGSTS ? (int)blockDim.x - 32 : 1));
    S->parity = 0;
    S->first = S->count = S->npend = 0;
    S->head = S->used = 0;
    S->job = S->job_end = 0;
    S->win0 = -1;
    S->cur_rows = 0;
    S->cur_at = 0;
    S->stalled = 0;
    S->ctx = C;
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/* A job's matrices: one, or two (gate and up) */
__device__ __forceinline__ int evt_stream_nmat(const evt_stream_job *J) { return J->tensor[1] >= 0 ? 2 : 1; }

/* Leader: frees the oldest slot once its copies have landed (its task has
 * run, or was skipped: the copies may still be in flight, also in an aborted
 * launch, whose block must not leave before they land). */
__device__ __forceinline__ void evt_stream_retire(void)
{
    evt_stream_state *S = &evt_stream_s;
    uint32_t s = S->first;
    (void)evt_mbar_wait(&S->bar[s], S->parity >> s & 1u, false);
    S->parity ^= 1u << s;
    S->used -= S->charge[s];
    S->first = (s + 1) % EVT_STREAM_SLOTS;
    if (--S->count == 0) S->head = S->used = 0; /* empty: start again at the ring's start */
}

/* The issuer: copies `rows` rows of job J's matrices into slot s at ring offset
 * off, in pieces of at most 32 KiB (bench/stream_bw.cu: 32 KiB copies stream
 * at the memory's rate on an H200). */
__device__ __forceinline__ void evt_stream_issue(const evt_ctx *C, const evt_stream_job *J, uint32_t s, uint32_t off, int64_t rows)
{
    const evt_stream_state *S = &evt_stream_s;
    const int nmat = evt_stream_nmat(J);
    const uint32_t bytes = (uint32_t)(rows * J->pitch), piece = 32768;
    unsigned char *dst = evt_dyn_smem + C->stream_ring_off + off;
    uint32_t bar = evt_smem_addr(&S->bar[s]);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes * (uint32_t)nmat) : "memory");
    for (int m = 0; m < nmat; m++) {
        const char *src = (const char *)C->tensors[J->tensor[m]].ptr + J->row0 * J->pitch;
        for (uint32_t o = 0; o < bytes; o += piece)
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                             evt_smem_addr(dst + (size_t)m * bytes + o)),
                         "l"(src + o), "r"(bytes - o < piece ? bytes - o : piece), "r"(bar)
                         : "memory");
    }
}

/* Leader: job j of the worker (j < job_end), from the shared-memory window;
 * a miss reads the next EVT_STREAM_WINDOW jobs at once (independent loads:
 * one round trip). */
__device__ __forceinline__ const evt_stream_job *evt_stream_job_at(const evt_ctx *C, int64_t j)
{
    evt_stream_state *S = &evt_stream_s;
    if (S->win0 < 0 || j < S->win0 || j >= S->win0 + EVT_STREAM_WINDOW) {
        static_assert(sizeof(evt_stream_job) == 32, "jobs are read in 16-byte pieces");
        int n = (int)(S->job_end - j < EVT_STREAM_WINDOW ? S->job_end - j : EVT_STREAM_WINDOW);
        const uint4 *src = (const uint4 *)(C->sjob + j);
        uint4 *dst = (uint4 *)S->win;
        for (int i = 0; i < 2 * n; i += 8) { /* 8 loads in flight, then their stores */
            uint4 v[8];
#pragma unroll
            for (int u = 0; u < 8; u++) v[u] = i + u < 2 * n ? __ldg(src + i + u) : make_uint4(0, 0, 0, 0);
#pragma unroll
            for (int u = 0; u < 8; u++) if (i + u < 2 * n) dst[i + u] = v[u];
        }
        S->win0 = j;
    }
    return &S->win[j - S->win0];
}

/* Leader, before the worker's first entry: its jobs. */
__device__ __forceinline__ void evt_stream_start(const evt_ctx *C, int worker)
{
    evt_stream_state *S = &evt_stream_s;
    S->job = S->job_end = 0;
    if (C->sjob && C->stream_ring_bytes) {
        S->job = EVT_RO(C->sjob_off[worker]);
        S->job_end = EVT_RO(C->sjob_off[worker + 1]);
    }
}

/* The issuer (EVT_STREAM_ISSUER, after the barrier that follows the pump):
 * issues the copies of the slots the pump placed (the leader clears npend at
 * its next pump, after another barrier). */
__device__ __forceinline__ void evt_stream_issue_pending(const evt_ctx *C)
{
    const evt_stream_state *S = &evt_stream_s;
    if (!S->npend) return;
    /* the ring was read through the generic proxy; the copies write through the async one */
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    for (uint32_t i = S->count - S->npend; i < S->count; i++) {
        uint32_t s = (S->first + i) % EVT_STREAM_SLOTS;
        evt_stream_issue(C, &S->held[s], s, S->off[s], S->rows[s]);
    }
}

/* EVT_STREAM_LDGSTS: every thread of warps 1.. (after the pump's barrier)
 * copies its 16-byte pieces of the placed slots with cp.async and arrives on
 * each slot's barrier when its pieces have landed. */
__device__ __forceinline__ void evt_stream_copy_pending(const evt_ctx *C)
{
    const evt_stream_state *S = &evt_stream_s;
    const uint32_t t = threadIdx.x - 32, nt = blockDim.x - 32;
    for (uint32_t i = S->count - S->npend; i < S->count; i++) {
        uint32_t s = (S->first + i) % EVT_STREAM_SLOTS;
        const evt_stream_job *J = &S->held[s];
        const uint32_t bytes = (uint32_t)S->rows[s] * (uint32_t)J->pitch;
        unsigned char *dst = evt_dyn_smem + C->stream_ring_off + S->off[s];
        for (int m = 0; m < evt_stream_nmat(J); m++) {
            const char *src = (const char *)C->tensors[J->tensor[m]].ptr + J->row0 * J->pitch;
            for (uint32_t o = 16 * t; o < bytes; o += 16 * nt)
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(evt_smem_addr(dst + (size_t)m * bytes + o)), "l"(src + o)
                             : "memory");
        }
        asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(evt_smem_addr(&S->bar[s])) : "memory");
    }
}

/* Every thread, after the barrier that follows the pump: the copying
 * threads issue what it placed (EVT_STREAM_LDGSTS: warps 1..; else the
 * issuer thread; with EVT_STREAM_ISSUER 0 the pump itself did, before the
 * barrier). */
__device__ __forceinline__ void evt_stream_copy(const evt_ctx *C)
{
#if EVT_STREAM_LDGSTS
    if (threadIdx.x >= 32) evt_stream_copy_pending(C);
#elif EVT_STREAM_ISSUER != 0
    if ((int)threadIdx.x == (EVT_STREAM_ISSUER < (int)blockDim.x ? EVT_STREAM_ISSUER : 0)) evt_stream_issue_pending(C);
#else
    (void)C;
#endif
}

/* Leader, before queue entry k of its static queue is dispatched: retires the
 * slots of the entries before k, places the bands of the next jobs whose
 * issue_at has come while the ring has room (the issuer copies them after
 * the next block barrier), and says whether entry k's rows are in the ring
 * (cur_rows, cur_at: the dispatch puts them in its arguments). */
EVT_NOINLINE void evt_stream_pump(const evt_ctx *C, int64_t k)
{
    evt_stream_state *S = &evt_stream_s;
    S->cur_rows = 0;
    S->npend = 0; /* the issuers took the last pump's slots before this one's barrier */
    const uint32_t R = C->stream_ring_bytes;
    while (S->count && S->held[S->first].entry < k) evt_stream_retire();
    while (S->job < S->job_end && S->count < EVT_STREAM_SLOTS) {
        const evt_stream_job *J = evt_stream_job_at(C, S->job);
        if (J->entry < k) { S->job++; continue; } /* its task has run (never: a job is placed by its own entry's pump) */
        if (J->issue_at > k) break;
        const int64_t row_bytes = (int64_t)J->pitch * evt_stream_nmat(J);
        uint32_t off = 0, charge = 0;
        int64_t rows = evt_stream_place(R, S->head, S->used, S->count, J->nrows, row_bytes, &off, &charge);
        if (rows < 0) { S->job++; continue; } /* not one row fits: the task reads global memory */
        if (rows == 0) break;                   /* wait for the slots ahead to retire */
        uint32_t s = (S->first + S->count) % EVT_STREAM_SLOTS;
        S->held[s] = *J;
        S->npend++;
        S->off[s] = off;
        S->charge[s] = charge;
        S->rows[s] = (int32_t)rows;
        S->count++;
        S->used += charge;
        S->head = off + (uint32_t)(rows * row_bytes);
        if (S->head == R) S->head = 0;
        S->job++;
    }
    if (S->count && S->held[S->first].entry == k) {
        uint32_t s = S->first;
        S->cur_rows = S->rows[s];
        S->cur_at = EVT_STREAM_AT(C->stream_ring_off + S->off[s], s, S->parity >> s & 1u);
    }
#if EVT_STREAM_ISSUER == 0 && !EVT_STREAM_LDGSTS
    evt_stream_issue_pending(C);
    S->npend = 0;
#endif
}

/* The dispatch (leader) of the entry the pump ran for: its rows in the ring
 * (0: none; dynamic and kernel-by-kernel workers never pump). */
__device__ __forceinline__ int32_t evt_stream_take(uint32_t *at)
{
    evt_stream_state *S = &evt_stream_s;
    int32_t rows = S->cur_rows;
    *at = rows ? S->cur_at : 0u;
    S->cur_rows = 0;
    return rows;
}

/* Leader, after the worker's last entry: nothing may land in shared memory
 * after the block has left. */
__device__ __forceinline__ void evt_stream_drain(void)
{
    while (evt_stream_s.count) evt_stream_retire();
}

/* Every thread of the block at its end: a stalled copy is reported. */
__device__ __forceinline__ void evt_stream_finish(const evt_ctx *C)
{
    evt_stream_state *S = &evt_stream_s;
    if (threadIdx.x == 0 && S->stalled && !evt_aborted(C))
        evt_raise(C, EVT_KERR_STREAM, (int)blockIdx.x, -1, -1, -1, 0, (int64_t)S->count, (int64_t)S->used);
}

/* A tile whose arguments carry streamed rows (a->stream > 0), all threads:
 * waits until they have landed; returns their first byte (matrix m at
 * + m * a->stream * pitch). If the launch was aborted it returns at once:
 * the rows may then be stale (the result no longer matters; the tile must
 * only not hang or fault). */
__device__ __forceinline__ const unsigned char *evt_stream_rows_ready(const evt_task_args *a)
{
    uint32_t at = a->stream_at;
    (void)evt_mbar_wait(&evt_stream_s.bar[EVT_STREAM_AT_SLOT(at)], EVT_STREAM_AT_PARITY(at));
    return evt_dyn_smem + EVT_STREAM_AT_OFF(at);
}
#endif

#endif
