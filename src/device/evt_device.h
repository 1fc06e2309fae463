/* evt_device.h — the event protocol shared by generated kernels, written once
 * for both targets: C11 (CPU target, one thread per worker) and CUDA C++ (GPU
 * target, one block per worker, thread 0 is the leader).
 *
 *   notify(E, x):  block barrier; leader: device-scope release add of 1.
 *   wait(E, x):    leader: the task's waits in batches (evt_waits): loads
 *                  together, then acquire-spin on the incomplete ones,
 *                  bounded backoff, watchdog; then block barrier.
 *   push / pop:    bounded MPMC ring with per-slot sequence numbers.
 *
 * Counters count up from 0 to their target (see evt_ctx.h); the kernel zeroes
 * them at the end of a launch, so no host memset is needed between launches.
 * Include order in generated code: this header, the tile headers, the
 * generated dispatch, then evt_loop.h.
 */
#ifndef EVT_DEVICE_H
#define EVT_DEVICE_H
#include <stddef.h>
#include "evt_ctx.h"
#include "evt_tile.h"

#ifdef __CUDACC__
/* ------------------------------------------------------------ CUDA ---- */
#include <cuda/atomic>
#define EVT_DEV __device__ __forceinline__
#define EVT_NOINLINE __device__ __noinline__
/* The protocol's larger routines stay calls on the GPU: inlining them at
   every wait and notify site of hundreds of calls makes nvcc take minutes. */
#define EVT_PROTO __device__ __noinline__
#define EVT_CONST_TABLE __constant__ const
#define EVT_LEADER (threadIdx.x == 0)
#define EVT_TID ((int)threadIdx.x)
/* the compute threads (all but the weight stream's producer warp, evt_tile.h) */
#define EVT_NTHREADS evt_tile_threads()
#define EVT_SYNC() evt_tile_sync()
#define EVT_UNROLL _Pragma("unroll")
typedef cuda::atomic_ref<int32_t, cuda::thread_scope_device> evt_aref32;
typedef cuda::atomic_ref<int64_t, cuda::thread_scope_device> evt_aref64;
EVT_DEV int32_t evt_load_acquire(int32_t *p) { return evt_aref32(*p).load(cuda::memory_order_acquire); }
EVT_DEV int32_t evt_load_relaxed(int32_t *p) { return evt_aref32(*p).load(cuda::memory_order_relaxed); }
EVT_DEV void evt_store_relaxed(int32_t *p, int32_t v) { evt_aref32(*p).store(v, cuda::memory_order_relaxed); }
EVT_DEV int32_t evt_add_acq_rel(int32_t *p, int32_t v) { return evt_aref32(*p).fetch_add(v, cuda::memory_order_acq_rel); }
EVT_DEV int32_t evt_add_relaxed(int32_t *p, int32_t v) { return evt_aref32(*p).fetch_add(v, cuda::memory_order_relaxed); }
EVT_DEV int64_t evt_load64_acquire(int64_t *p) { return evt_aref64(*p).load(cuda::memory_order_acquire); }
EVT_DEV void evt_store64_release(int64_t *p, int64_t v) { evt_aref64(*p).store(v, cuda::memory_order_release); }
EVT_DEV void evt_store64_relaxed(int64_t *p, int64_t v) { evt_aref64(*p).store(v, cuda::memory_order_relaxed); }
EVT_DEV int evt_cas32(int32_t *p, int32_t expect, int32_t desired)
{ return evt_aref32(*p).compare_exchange_strong(expect, desired, cuda::memory_order_acq_rel); }
EVT_DEV int64_t evt_add64_relaxed(int64_t *p, int64_t v) { return evt_aref64(*p).fetch_add(v, cuda::memory_order_relaxed); }
/* Notifies: the leader issues ONE release fence per task (evt_notify_fence)
 * and then relaxed adds, instead of a release (a fence) per element. A
 * relaxed add after a release fence is a release pattern (PTX memory model);
 * later adds by other workers continue its release sequence. Fences are
 * fence.acq_rel.gpu, not __threadfence (fence.sc.gpu): release and acquire
 * patterns need no sequential consistency (EVT_FENCE_SC: the ablation). */
#ifdef EVT_FENCE_SC
EVT_DEV void evt_notify_fence(void) { __threadfence(); }
EVT_DEV void evt_acquire_fence(void) { __threadfence(); }
#else
EVT_DEV void evt_notify_fence(void) { cuda::atomic_thread_fence(cuda::memory_order_release, cuda::thread_scope_device); }
EVT_DEV void evt_acquire_fence(void) { cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device); }
#endif
EVT_DEV void evt_red_relaxed(int32_t *p, int32_t v)
{ asm volatile("red.relaxed.gpu.global.add.s32 [%0], %1;" :: "l"(p), "r"(v) : "memory"); }
EVT_DEV void evt_red_notify(int32_t *p, int32_t v) { evt_red_relaxed(p, v); } /* after evt_notify_fence */
EVT_DEV int32_t evt_add_notify(int32_t *p, int32_t v) { return evt_aref32(*p).fetch_add(v, cuda::memory_order_relaxed); }
#ifdef EVT_POLL_RELAXED
/* ablation: relaxed polls and one acquire fence after a task's last wait:
   slower (chain handoff 2.90 vs 2.55 us per edge, bench/RESULTS.md) */
EVT_DEV int32_t evt_poll_load(int32_t *p) { return evt_load_relaxed(p); }
EVT_DEV void evt_waits_acquire(void) { evt_acquire_fence(); }
#else
/* every poll is an acquire load (a batch's loads are still issued
   together); no fence after the waits */
EVT_DEV int32_t evt_poll_load(int32_t *p) { return evt_load_acquire(p); }
EVT_DEV void evt_waits_acquire(void) { }
#endif
EVT_DEV void evt_fence(void) { __threadfence(); }
EVT_DEV uint64_t evt_now_ns(void) { uint64_t t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
EVT_DEV void evt_pause(uint32_t ns) { __nanosleep(ns); }
#define EVT_SHARED __shared__
/* Tables that do not change during a launch (shape, events, queues, tensor
   refs) are read through the read-only path: several loads in flight, and
   not refetched after every acquire (bench/RESULTS.md: per-task overhead) */
#ifdef EVT_RO_PLAIN /* ablation: plain loads */
#define EVT_RO(x) (x)
EVT_DEV evt_tensor_ref evt_ld_tensor(const evt_tensor_ref *p) { return *p; }
#else
#define EVT_RO(x) __ldg(&(x))
/* (the table may be the persistent kernel's shared-memory copy) */
EVT_DEV evt_tensor_ref evt_ld_tensor(const evt_tensor_ref *p)
{
    static_assert(sizeof(evt_tensor_ref) % 16 == 0, "tensor refs are copied in 16-byte pieces");
    evt_tensor_ref r;
    const uint4 *s = (const uint4 *)p;
    uint4 *d = (uint4 *)&r;
    uint4 w[sizeof(evt_tensor_ref) / 16];
    if (__isShared(p))
        for (unsigned i = 0; i < sizeof(evt_tensor_ref) / 16; i++) w[i] = s[i];
    else
        for (unsigned i = 0; i < sizeof(evt_tensor_ref) / 16; i++) w[i] = __ldg(s + i);
    for (unsigned i = 0; i < sizeof(evt_tensor_ref) / 16; i++) d[i] = w[i];
    return r;
}
#endif
#else
/* ------------------------------------------------------------- C ------ */
#include <sched.h>
#include <time.h>
#define EVT_DEV static inline
#define EVT_NOINLINE static
#define EVT_PROTO static inline
#define EVT_CONST_TABLE static const
#define EVT_LEADER 1
#define EVT_TID 0
#define EVT_NTHREADS 1
#define EVT_SYNC() ((void)0)
#define EVT_UNROLL
EVT_DEV int32_t evt_load_acquire(int32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
EVT_DEV int32_t evt_load_relaxed(int32_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
EVT_DEV void evt_store_relaxed(int32_t *p, int32_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
EVT_DEV int32_t evt_add_acq_rel(int32_t *p, int32_t v) { return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL); }
EVT_DEV int32_t evt_add_relaxed(int32_t *p, int32_t v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
EVT_DEV int64_t evt_load64_acquire(int64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
EVT_DEV void evt_store64_release(int64_t *p, int64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
EVT_DEV void evt_store64_relaxed(int64_t *p, int64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
EVT_DEV int evt_cas32(int32_t *p, int32_t expect, int32_t desired)
{ return __atomic_compare_exchange_n(p, &expect, desired, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE); }
EVT_DEV int64_t evt_add64_relaxed(int64_t *p, int64_t v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
/* CPU: per-operation release / acq_rel (cheap on x86, and what
   ThreadSanitizer models; it does not model standalone fences) */
EVT_DEV void evt_notify_fence(void) { }
EVT_DEV void evt_red_notify(int32_t *p, int32_t v) { __atomic_fetch_add(p, v, __ATOMIC_RELEASE); }
EVT_DEV void evt_red_relaxed(int32_t *p, int32_t v) { __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
EVT_DEV int32_t evt_add_notify(int32_t *p, int32_t v) { return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL); }
EVT_DEV void evt_acquire_fence(void) { }
/* CPU: acquire polls (what ThreadSanitizer models), no fence after them */
EVT_DEV int32_t evt_poll_load(int32_t *p) { return evt_load_acquire(p); }
EVT_DEV void evt_waits_acquire(void) { }
#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer does not model standalone fences: a seq_cst read-modify-
   write of one shared word orders the same stores and is what it sees */
static int evt_tsan_fence_word;
EVT_DEV void evt_fence(void) { __atomic_fetch_add(&evt_tsan_fence_word, 0, __ATOMIC_SEQ_CST); }
#else
EVT_DEV void evt_fence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#endif
EVT_DEV uint64_t evt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
/* More workers than cores is allowed: yield rather than burn the core. */
EVT_DEV void evt_pause(uint32_t ns)
{
    if (ns < 2000) { sched_yield(); return; }
    struct timespec ts = {0, (long)ns};
    nanosleep(&ts, NULL);
}
#define EVT_SHARED
#define EVT_RO(x) (x)
EVT_DEV evt_tensor_ref evt_ld_tensor(const evt_tensor_ref *p) { return *p; }
#endif

#ifndef EVT_INPUT_ARMING /* generated code defines it: 1 if the launch arms events first */
#define EVT_INPUT_ARMING 0
#endif

/* Where the leader runs the waits of an early_loads task (evt_tile_wait
 * below): 0, before the tile, while warps 1-7 enter it; 1, inside it, every
 * warp entering at once (generated code sets it from the compile options'
 * cuda_defines: evtc decode turns it on for models of hidden size 4096 or
 * more, evt_decode_waits_in_tile). */
#if EVT_DISPATCH_WG >= 2 /* the dispatch warp polls: warp 0 issues its early loads with the others (evt_dispatch_wg.h) */
#undef EVT_WAITS_IN_TILE
#define EVT_WAITS_IN_TILE 0
#endif
#ifndef EVT_WAITS_IN_TILE
#define EVT_WAITS_IN_TILE 0
#endif

/* Per-worker state. On the GPU it lives in shared memory; the leader writes
 * the broadcast fields, then a barrier publishes them to the block. */
typedef struct evt_worker {
    int32_t id;
    uint32_t rng;
    int32_t skip;      /* broadcast: the current task is not valid / aborted */
    int32_t arm;       /* broadcast: this task arms data-dependent events */
    int32_t stop;      /* broadcast: leave the loop (launch aborted / done) */
    int64_t task;      /* broadcast: current global task id */
    int64_t entry;     /* broadcast: next queue entry (-1 none, -2 exit) */
    int64_t ticket;    /* leader: next ticket of the current batch */
    int32_t tickets_left, completed; /* leader: batch left; unreported completions */
    int32_t nfan;      /* broadcast: completed elements whose consumers the block credits */
    int64_t fan[8];
    evt_task_args args; /* broadcast: the current task's arguments */
#if EVT_WAITS_IN_TILE
    /* broadcast: what the leader's waits inside the tile need (evt_tile_wait) */
    const struct evt_ctx *wctx;
    const struct evt_task_rec *wrec;
    int64_t wtask;
    int32_t wcall, wtgt0;
#endif
} evt_worker;

EVT_DEV int evt_aborted(const evt_ctx *C) { return evt_load_relaxed(C->abort_flag) != 0; }

/* Records the first error and raises the abort flag every spinner polls. */
EVT_PROTO void evt_raise(const evt_ctx *C, int kind, int worker, int call, int event,
                       int64_t task, int64_t elem, int64_t observed, int64_t target)
{
    if (evt_cas32(&C->err->kind, 0, -1)) {
        C->err->worker = worker; C->err->call = call; C->err->event = event;
        C->err->task = task; C->err->elem = elem; C->err->observed = observed; C->err->target = target;
        evt_fence();
        evt_store_relaxed(&C->err->kind, kind);
    }
    evt_fence();
    evt_add_acq_rel(C->abort_flag, 1);
}

EVT_DEV uint32_t evt_rand(evt_worker *W)
{
    uint32_t x = W->rng ? W->rng : 0x9e3779b9u;
    x ^= x << 13; x ^= x >> 17; x ^= x << 5;
    W->rng = x;
    return x;
}

/* Chaos mode: a random delay (tests only; C->chaos == 0 disables it). */
EVT_DEV void evt_chaos(const evt_ctx *C, evt_worker *W)
{
    if (!C->chaos) return;
    uint32_t r = evt_rand(W);
    if (r % 3 == 0) evt_pause(r % (C->chaos_max_ns + 1));
}

/* ---- batched waits ---------------------------------------------------- */

/* A task's waits, collected by the generated dispatch (leader only): the
 * element indices are computed first and the counters of a batch loaded
 * together (acquire loads; EVT_POLL_RELAXED: relaxed loads and one acquire
 * fence after the last batch, the slower ablation). */
#define EVT_WAIT_BATCH 8
typedef struct evt_waits {
    int64_t elem[EVT_WAIT_BATCH];
    int32_t event[EVT_WAIT_BATCH];
    int32_t n;
} evt_waits;

/* Spins on one element (linear, absolute counter index) until it reaches
 * target; returns 1 if the launch was aborted or the watchdog fired. A value
 * above target only comes from a wrong count: reported at the end. */
EVT_PROTO int evt_wait_spin(const evt_ctx *C, evt_worker *W, int call, int event, int64_t elem, int32_t target)
{
    int32_t *cnt = &C->counters[elem];
    uint64_t start = evt_now_ns();
    uint32_t backoff = 32;
    for (uint32_t spin = 0;; spin++) {
        int32_t v = evt_poll_load(cnt);
        if (v >= target) return 0;
        if (evt_aborted(C)) return 1;
        if (spin < 64) continue; /* hot polls first: most handoffs are short */
        evt_pause(backoff);
        if (backoff < 256) backoff *= 2; /* GPU: a 1024 ns cap added ~0.4 us per handoff */
        if ((spin & 15) == 15 && evt_now_ns() - start > C->timeout_ns) {
            evt_raise(C, EVT_KERR_WAIT_TIMEOUT, W->id, call, event, W->task, elem, v, target);
            return 1;
        }
    }
}

/* Waits for every element of the batch (all loads issued first), then
 * empties it; the task's reads after it are ordered after the producers'
 * writes. Returns 1 if the launch was aborted. */
EVT_PROTO int evt_wait_flush(const evt_ctx *C, evt_worker *W, int call, evt_waits *ws)
{
    int n = ws->n;
    ws->n = 0;
    if (C->mode == EVT_MODE_KBK) return 0; /* the kernel boundary ordered it */
    int32_t v[EVT_WAIT_BATCH], target[EVT_WAIT_BATCH];
    EVT_UNROLL
    for (int i = 0; i < EVT_WAIT_BATCH; i++)
        if (i < n) target[i] = EVT_RO(C->target[ws->elem[i]]);
    EVT_UNROLL
    for (int i = 0; i < EVT_WAIT_BATCH; i++)
        if (i < n) v[i] = evt_poll_load(&C->counters[ws->elem[i]]);
    for (int i = 0; i < n; i++)
        if (v[i] < target[i] && evt_wait_spin(C, W, call, ws->event[i], ws->elem[i], target[i])) return 1;
    evt_waits_acquire();
    return 0;
}

/* The target of a task record's first wait (-1: no waits), loaded by the
 * leader as it takes the task, so that the load overlaps the argument build:
 * the target table is read about once per element and launch, and the weight
 * stream has usually evicted it from L2 by then; loaded at the poll it made
 * a task whose inputs were already complete start ~0.7 us later (traces,
 * bench/RESULTS.md session 27). */
#ifndef EVT_REC_TARGET_EARLY
#define EVT_REC_TARGET_EARLY 1 /* 0: loaded at the poll (ablation) */
#endif
EVT_DEV int32_t evt_rec_target0(const evt_ctx *C, const evt_task_rec *R)
{
    return EVT_REC_TARGET_EARLY && R && R->nwait > 0 ? EVT_RO(C->target[R->elem[0]]) : -1;
}

/* A task's waits from its record (leader; evt_ctx.h): every target and
 * counter loaded at once (the first target is target0, from
 * evt_rec_target0, unless that is -1), then spins on the incomplete ones. Returns 1 if the
 * launch was aborted. (A watchdog report names the element, from which the
 * host finds the event: event -1 here.) */
EVT_PROTO int evt_wait_rec(const evt_ctx *C, evt_worker *W, int call, const evt_task_rec *R, int32_t target0)
{
    int n = R->nwait;
    int32_t v[EVT_REC_ELEMS], target[EVT_REC_ELEMS], elem[EVT_REC_ELEMS];
    EVT_UNROLL
    for (int i = 0; i < EVT_REC_ELEMS; i++)
        if (i < n) elem[i] = R->elem[i];
    EVT_UNROLL
    for (int i = 0; i < EVT_REC_ELEMS; i++)
        if (i < n) target[i] = i == 0 && target0 >= 0 ? target0 : EVT_RO(C->target[elem[i]]);
    EVT_UNROLL
    for (int i = 0; i < EVT_REC_ELEMS; i++)
        if (i < n) v[i] = evt_poll_load(&C->counters[elem[i]]);
    for (int i = 0; i < n; i++)
        if (v[i] < target[i] && evt_wait_spin(C, W, call, -1, elem[i], target[i])) return 1;
    evt_waits_acquire();
    return 0;
}

/* Adds one wait to the batch; flushes it when full. Returns 1 if aborted. */
EVT_DEV int evt_wait_add(const evt_ctx *C, evt_worker *W, int call, evt_waits *ws, int event, int64_t elem)
{
    ws->elem[ws->n] = elem;
    ws->event[ws->n] = event;
    return ++ws->n == EVT_WAIT_BATCH ? evt_wait_flush(C, W, call, ws) : 0;
}

/* ---- ready queue ---------------------------------------------------- */

/* Fills ring position pos with task once the slot is free (its previous
 * lap consumed; the ring holds every task of a launch, so it soon is): one
 * release store of the slot's word (sequence pos + 1 and the task). */
EVT_DEV int evt_ring_put(const evt_ctx *C, int64_t pos, int64_t task)
{
    evt_ring *r = C->ring;
    evt_ring_slot *s = &r->slots[pos & r->mask];
    uint32_t backoff = 32;
    while (EVT_RING_SEQ(evt_load64_acquire(s)) != (uint32_t)pos) {
        if (evt_aborted(C)) return 1;
        evt_pause(backoff);
        if (backoff < 256) backoff *= 2;
    }
    evt_store64_release(s, EVT_RING_SLOT(pos + 1, task));
    return 0;
}

/* Leader only. One fetch-add reserves the position. */
EVT_PROTO int evt_push(const evt_ctx *C, int64_t task)
{
    return evt_ring_put(C, evt_add64_relaxed(&C->ring->enq, 1), task);
}

/* Leader only. Takes the next ticket (C->pop_batch of them per fetch-add)
 * and waits for its slot: returns 1 and the task, or 0 when the launch is
 * over (every task done), was aborted, or the watchdog fired while waiting.
 * Before blocking it flushes the completions it has not reported yet, so
 * termination is never held up by a waiting worker. */
EVT_PROTO void evt_flush_completions(const evt_ctx *C, evt_worker *W);
EVT_PROTO int evt_pop(const evt_ctx *C, evt_worker *W, int64_t *task)
{
    evt_ring *r = C->ring;
    if (W->tickets_left == 0) {
        int32_t k = C->pop_batch > 0 ? C->pop_batch : 1;
        W->ticket = evt_add64_relaxed(&r->deq, k);
        W->tickets_left = k;
    }
    int64_t pos = W->ticket++;
    W->tickets_left--;
    evt_ring_slot *s = &r->slots[pos & r->mask];
    int64_t v = evt_load64_acquire(s);
    if (EVT_RING_SEQ(v) != (uint32_t)(pos + 1)) {
        evt_flush_completions(C, W);
        uint64_t start = evt_now_ns();
        uint32_t backoff = 32;
        for (uint32_t spin = 0; EVT_RING_SEQ(v = evt_load64_acquire(s)) != (uint32_t)(pos + 1); spin++) {
            if (evt_load_acquire(C->terminated) || evt_aborted(C)) return 0;
            if (spin < 64) continue;
            evt_pause(backoff);
            if (backoff < 256) backoff *= 2;
            if ((spin & 15) == 15 && evt_now_ns() - start > C->timeout_ns) {
                evt_raise(C, EVT_KERR_QUEUE_TIMEOUT, W->id, -1, -1, -1, 0, evt_load_relaxed(C->outstanding), 0);
                return 0;
            }
        }
    }
    *task = EVT_RING_TASK(v);
    evt_store64_relaxed(s, EVT_RING_SLOT(pos + r->mask + 1, -1)); /* free for the next lap (after the load: coherence) */
    return 1;
}

/* Dynamic termination without a barrier or a sentinel. `outstanding` is
 * raised before every push that is not a seed and lowered after every
 * completion; seeds are never counted. It therefore ends at -(seeds) and
 * can only get there once every seed was pushed and everything pushed has
 * finished. Input arming counts as one more seed (it may push tasks). The
 * completion that reaches the goal ends the launch. */
EVT_DEV int32_t evt_dynamic_goal(const evt_ctx *C)
{
    /* hybrid: every static queue entry is reported as one more completion */
    int64_t entries = C->mode == EVT_MODE_HYBRID && C->nstatic > 0 ? C->q_off[C->nstatic] : 0;
    return -(int32_t)(C->nseeds + EVT_INPUT_ARMING + entries);
}

/* Completions are counted locally and reported in one atomic when a worker
 * is about to block on an empty slot (evt_pop), not after every task: that
 * acq_rel add on one word all workers share was a round trip per task on
 * the leader's path (bench/RESULTS.md, session 62). Reporting late only keeps
 * `outstanding` above the truth, so the goal is never reached early; and
 * every worker reports before it blocks, so the last completion is reported
 * once no task is left to pop. */
EVT_PROTO void evt_flush_completions(const evt_ctx *C, evt_worker *W)
{
    int32_t n = W->completed;
    if (!n) return;
    W->completed = 0;
    if (evt_add_acq_rel(C->outstanding, -n) - n == evt_dynamic_goal(C))
        evt_add_acq_rel(C->terminated, 1);
}

/* Pushes a task that a credit made ready, raising `outstanding` first by a
 * relaxed add whose result nobody reads (a fire-and-forget reduction on the
 * GPU, not a round trip): the completion this credit comes from is reported
 * later by the same worker (evt_pop's flush, after its block barrier on the
 * GPU), so that report follows the add in `outstanding`'s order and the goal
 * cannot be reached while the pushed task is pending (bench/RESULTS.md,
 * session 62). */
EVT_DEV void evt_push_counted(const evt_ctx *C, int64_t task)
{
    evt_red_relaxed(C->outstanding, 1);
    evt_push(C, task);
}

/* Dynamic mode: one wait element of `task` is complete; push it when all are. */
EVT_PROTO void evt_credit(const evt_ctx *C, evt_worker *W, int64_t task)
{
    if (evt_add_acq_rel(&C->pending[task], 1) + 1 == C->pend_target[task]) evt_push_counted(C, task);
    (void)W;
}

/* The same for a consumer-list entry: a task whose only wait this is
 * (EVT_CONS_SOLE, bind time) is pushed at once; an element completes once
 * a launch, so it is credited once (early push credits a static element at
 * dispatch instead of at completion, never both). */
EVT_PROTO void evt_credit_cons(const evt_ctx *C, evt_worker *W, int32_t entry)
{
    if (entry & EVT_CONS_SOLE) evt_push_counted(C, entry & ~EVT_CONS_SOLE);
    else evt_credit(C, W, entry);
}

/* Leader only, after evt_notify_fence(). Adds `delta` to a counter; if that completes it (dynamic mode),
 * credits its consumers found through the bind-time consumer lists. Returns 1
 * when this add completed the element (callers then credit trigger ranges). */
EVT_PROTO int evt_signal(const evt_ctx *C, evt_worker *W, int64_t elem, int32_t delta)
{
    if (C->mode == EVT_MODE_STATIC) { /* nobody acts on completion (KBK never notifies) */
        evt_red_notify(&C->counters[elem], delta);
        return 0;
    }
    int32_t now = evt_add_notify(&C->counters[elem], delta) + delta;
    if (now != C->target[elem]) return 0;
    evt_acquire_fence(); /* the completer reads what the other producers wrote (indptr) */
    /* with early push (dynamic only), static elements credited their
       consumers at dispatch; hybrid lists hold only dynamic consumers */
    if (!(C->mode == EVT_MODE_DYNAMIC && C->early_push && C->target[elem] != EVT_DATA_TARGET)) {
        /* many consumers (a barrier-like event): the whole block credits them
           after the task (evt_fan_out); a few: the leader does it now */
        if (C->cons_off[elem + 1] - C->cons_off[elem] > 4 && W->nfan < 8) W->fan[W->nfan++] = elem;
        else
            for (int64_t k = C->cons_off[elem]; k < C->cons_off[elem + 1]; k++)
                evt_credit_cons(C, W, C->cons[k]);
    }
    return 1;
}

/* A task's notifies from its record (leader, after evt_notify_fence()). */
EVT_PROTO void evt_notify_rec(const evt_ctx *C, evt_worker *W, const evt_task_rec *R)
{
    for (int i = 0; i < R->nnotify; i++) evt_signal(C, W, R->elem[R->nwait + i], 1);
}

/* All threads, after a task: credit the consumers of the elements the leader
 * recorded (W->nfan was published by the barrier before). */
EVT_DEV void evt_fan_out(const evt_ctx *C, evt_worker *W)
{
    if (!W->nfan) return;
    for (int f = 0; f < W->nfan; f++) {
        int64_t lo = C->cons_off[W->fan[f]], n = C->cons_off[W->fan[f] + 1] - lo;
        for (int64_t k = EVT_TID; k < n; k += EVT_NTHREADS) evt_credit_cons(C, W, C->cons[lo + k]);
    }
    EVT_SYNC();
    if (EVT_LEADER) W->nfan = 0;
}

/* Early push (papers/000 appendix E), leader only: a producer of static
 * element `elem` has been dispatched. When all of them have, its consumers
 * are credited: they may be pushed before the producers finish and wait on
 * the real counter when they run. Every task a consumer waits on was
 * dispatched before it was pushed, so waits only point at running tasks. */
EVT_PROTO void evt_early_signal(const evt_ctx *C, evt_worker *W, int64_t elem)
{
    if (evt_add_acq_rel(&C->hist[elem], 1) + 1 != C->target[elem]) return;
    for (int64_t k = C->cons_off[elem]; k < C->cons_off[elem + 1]; k++)
        evt_credit_cons(C, W, C->cons[k]);
}

/* Bounds check of a computed event index; raises BAD_INDEX on failure. */
EVT_PROTO int evt_check_index(const evt_ctx *C, evt_worker *W, int call, int event, int64_t v, int64_t dim)
{
    if (v >= 0 && v < dim) return 0;
    evt_raise(C, EVT_KERR_BAD_INDEX, W->id, call, event, W->task, v, 0, dim);
    return 1;
}

/* Integer tensor element read by a data-dependent map. */
EVT_DEV int64_t evt_index_load(const evt_tensor_ref *t, int64_t off)
{
    if (t->dtype == 4 /* EVT_I64 */) return ((const int64_t *)t->ptr)[off];
    return ((const int32_t *)t->ptr)[off];
}

/* Trigger range: the e with indptr[e] <= t < indptr[e+1] (binary search), or
 * -1 when t is past the last range (the task does not exist for this data). */
EVT_PROTO int64_t evt_trigger_owner(const evt_tensor_ref *indptr, int64_t nranges, int64_t t)
{
    if (t < evt_index_load(indptr, 0) || t >= evt_index_load(indptr, nranges)) return -1;
    int64_t lo = 0, hi = nranges - 1;
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;
        if (evt_index_load(indptr, mid) <= t) lo = mid; else hi = mid - 1;
    }
    return lo;
}

/* Trace: the task's timestamps (EVT_TRACE_*, evt_ctx.h). evt_trace_put
 * stamps from whichever thread calls it (the notifier's stamp);
 * evt_trace_stamp and the stamps built on it, from the leader only. */
EVT_DEV void evt_trace_put(const evt_ctx *C, int64_t task, int which)
{
    if (C->trace) C->trace[task * EVT_TRACE_STAMPS + which] = evt_now_ns();
}
EVT_DEV void evt_trace_stamp(const evt_ctx *C, int64_t task, int which)
{
    if (EVT_LEADER) evt_trace_put(C, task, which);
}
/* The "taken" stamp is the leader taking the task (point 0) unless the
   kernel is built with -DEVT_TRACE_TAKEN_AT=1 (after the task's arguments are
   built, before its waits) or 2 (just before the poll of its waits): a
   diagnostic that splits a trace's wait_us (start - taken) into the dispatch's
   pieces (bench/RESULTS.md, session 27). */
#ifndef EVT_TRACE_TAKEN_AT
#define EVT_TRACE_TAKEN_AT 0
#endif
EVT_DEV void evt_trace_taken_at(const evt_ctx *C, int64_t task, int point)
{
    if (point == EVT_TRACE_TAKEN_AT) evt_trace_stamp(C, task, EVT_TRACE_TAKEN);
}
EVT_DEV void evt_trace_taken(const evt_ctx *C, int64_t task) { evt_trace_taken_at(C, task, 0); }
EVT_DEV void evt_trace_start(const evt_ctx *C, evt_worker *W, int64_t task)
{
    evt_trace_stamp(C, task, EVT_TRACE_STARTED);
    if (C->trace && EVT_LEADER) C->trace_worker[task] = W->id;
}
EVT_DEV void evt_trace_end(const evt_ctx *C, int64_t task) { evt_trace_stamp(C, task, EVT_TRACE_ENDED); }
/* (by the notifier, EVT_REC_NOTIFIER, which need not be the leader) */
EVT_DEV void evt_trace_notified(const evt_ctx *C, int64_t task) { evt_trace_put(C, task, EVT_TRACE_NOTIFIED); }

/* Which thread issues the notifies of a task whose record lists them: the
 * leader, except under a static schedule on the GPU, where the first thread
 * of the block's last warp does, so that the leader goes on to its next task
 * (argument build, waits) while the notify's release fence waits for the
 * block's stores (~1 us: bench/notify_stall.cu). The block barrier of the
 * next task still waits for it. -DEVT_NOTIFY_BY_LEADER=1 is the ablation. */
#ifndef EVT_NOTIFY_BY_LEADER
#define EVT_NOTIFY_BY_LEADER 0
#endif
#if defined(__CUDACC__)
#if EVT_DISPATCH_WG /* the block's last tile warp (the dispatch warpgroup follows the tiles' threads) */
#define EVT_REC_NOTIFIER(C)                                                                                            \
    (!EVT_NOTIFY_BY_LEADER && (C)->mode == EVT_MODE_STATIC ? (int)threadIdx.x == EVT_BLOCK_THREADS - 32 : EVT_LEADER)
#else
#define EVT_REC_NOTIFIER(C)                                                                                            \
    (!EVT_NOTIFY_BY_LEADER && (C)->mode == EVT_MODE_STATIC && blockDim.x >= 64 ? threadIdx.x == blockDim.x - 32     \
                                                                                 : EVT_LEADER)
#endif
#else
#define EVT_REC_NOTIFIER(C) EVT_LEADER
#endif

/* The barrier of a task whose waits run beside its tile (an early_loads
 * call, docs/tile-abi.md): the dispatch sets args.wait_in_tile and sends the
 * tile's threads in at once, except warp 0, whose leader first runs the
 * task's waits. The tile calls this once in every thread, after issuing the
 * loads that do not depend on the waits (its weights) and before anything
 * they guard: the threads meet warp 0 there. Returns 1 when the task must
 * stop (launch aborted). With wait_in_tile 0 (waits done before the tile, a
 * tile harness, the C target) it returns 0 at once. No call (without
 * EVT_WAITS_IN_TILE): a call in the GEMV tiles made ptxas spill in other
 * tiles of the megakernel.
 *
 * EVT_WAITS_IN_TILE 1: warp 0 enters the tile with the others, and its
 * leader runs the task's waits here (evt_wait_rec, recorded by the dispatch
 * in evt_tile_wait_record) and stamps the task's start, so that warp 0's
 * part of the tile's prologue runs while the inputs are still being
 * produced instead of after (~670 cycles of one warp's dependent code:
 * bench/RESULTS.md session 58). The GEMV units then let warp 0 meet the
 * barrier before its own loads (src/tiles/llm_gemv.cuh): a call with weight
 * loads in flight waits for them. H200: qwen3-8b batch 1 -1.9% per token,
 * qwen3-0.6b +2.0% (its leader's waits start later where its inputs are
 * ready at once), so evtc decode turns it on by model. */
#if EVT_WAITS_IN_TILE
EVT_DEV void evt_tile_wait_record(evt_worker *W, const evt_ctx *C, int call, const evt_task_rec *R, int32_t tgt0, int64_t task)
{
    W->wctx = C;
    W->wrec = R;
    W->wcall = call;
    W->wtgt0 = tgt0;
    W->wtask = task;
}
#endif
#if EVT_DISPATCH_WG >= 2 && defined(__CUDACC__)
/* The dispatch warp's barriers with the tile threads (src/device/evt_dispatch_wg.h):
   the tiles' EVT_BLOCK_THREADS and its 32, counted thread by thread (the
   non-aligned forms: tiles reach GO from different places in their code). */
static __shared__ int evt_ctl_stop; /* the dispatch warp's waits stopped (launch aborted) */
EVT_DEV void evt_ctl_bar_sync(int id) { asm volatile("barrier.sync %0, %1;" ::"r"(id), "n"(EVT_BLOCK_THREADS + 32) : "memory"); }
EVT_DEV void evt_ctl_bar_arrive(int id) { asm volatile("barrier.arrive %0, %1;" ::"r"(id), "n"(EVT_BLOCK_THREADS + 32) : "memory"); }
/* GO: the task's waits are complete; 1 when they stopped instead */
EVT_DEV int evt_ctl_go(int id)
{
    evt_ctl_bar_sync(id);
    return evt_ctl_stop;
}
#endif
EVT_DEV int evt_tile_wait(const evt_task_args *a)
{
    if (!a->wait_in_tile) return 0;
#if EVT_DISPATCH_WG >= 2 && defined(__CUDACC__)
    if (a->wait_in_tile > 1) return evt_ctl_go(a->wait_in_tile); /* the dispatch warp ran the waits: its GO barrier */
#endif
    /* args is the worker's own (the dispatch passes &W->args) */
#if EVT_WAITS_IN_TILE && defined(__CUDACC__)
    evt_worker *W = (evt_worker *)((const char *)a - offsetof(evt_worker, args));
    if (EVT_LEADER) {
        const evt_ctx *C = W->wctx;
        evt_trace_taken_at(C, W->wtask, 2);
        if (evt_wait_rec(C, W, W->wcall, W->wrec, W->wtgt0)) W->skip = 1;
        evt_trace_start(C, W, W->wtask);
    }
#else
    const evt_worker *W = (const evt_worker *)((const char *)a - offsetof(evt_worker, args));
#endif
#ifdef __CUDACC__
    evt_tile_sync_any();
#endif
    return W->skip;
}

#endif
