/* evt_loop.h — the persistent worker loop, written once for both targets.
 *
 * Included by generated code after it has defined:
 *   EVT_DEV void evt_dispatch(const evt_ctx *C, evt_worker *W, int call,
 *                             int64_t lin, const int64_t *qext, const evt_task_rec *R);
 *       runs one task: guard, waits, tile, arming, notifies (all threads);
 *       R: the entry's task record (static workers with records), else NULL.
 *   EVT_DEV void evt_arm_inputs(const evt_ctx *C, evt_worker *W);
 *       arms data-dependent events whose index tensors are program inputs.
 *
 * Static mode: worker w runs entries q[q_off[w] .. q_off[w+1]) in order,
 * reading their task records (C->rec, bind time) when there are some.
 * Hybrid mode: workers below C->nstatic do that, the others the dynamic loop
 * (they pop only tasks of `policy dynamic` calls).
 * Dynamic mode: workers seed the ring with the ready tasks (seeds), then pop
 * (blocking on their ticket) until the completion that finishes the last
 * task raises `terminated` (see evt_flush_completions); a popped task's
 * record, if any, is C->trec[task].
 * The last worker to finish zeroes the per-launch state for the next launch.
 */
#ifndef EVT_LOOP_H
#define EVT_LOOP_H

/* Which call a global task id belongs to (binary search over task_base). */
EVT_DEV int evt_call_of_task(const evt_ctx *C, int64_t task)
{
    int lo = 0, hi = C->ncalls - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (C->task_base[mid] <= task) lo = mid; else hi = mid - 1;
    }
    return lo;
}

/* Control decisions are made by the leader and broadcast, so that every
 * thread of a block takes the same branch at each barrier. */
EVT_DEV int evt_block_stop(const evt_ctx *C, evt_worker *W)
{
    if (EVT_LEADER) W->stop = evt_aborted(C);
    EVT_SYNC();
    int stop = W->stop;
    EVT_SYNC();
    return stop;
}

/* The task record of queue entry k of a worker's queue [k0, k1), or NULL
 * without records. On the GPU the block copies the next EVT_REC_CHUNK
 * records into shared memory when k starts a chunk: one round trip per
 * chunk instead of a chain of them per task. Its first barrier also waits
 * for the previous task's leader, whose notifies read that task's record. */
#ifdef __CUDACC__
static __shared__ __align__(16) evt_task_rec evt_rec_s[EVT_REC_CHUNK];
EVT_DEV const evt_task_rec *evt_rec_at(const evt_ctx *C, int64_t k, int64_t k0, int64_t k1)
{
    if (!C->rec) return NULL;
    int i = (int)((k - k0) % EVT_REC_CHUNK);
    if (i == 0) {
        static_assert(sizeof(evt_task_rec) == 64, "task records are copied in 16-byte pieces");
        int n = (int)((k1 - k < EVT_REC_CHUNK ? k1 - k : EVT_REC_CHUNK) * (sizeof(evt_task_rec) / 16));
        const uint4 *src = (const uint4 *)(C->rec + k);
        uint4 *dst = (uint4 *)evt_rec_s;
        EVT_SYNC();
        for (int j = EVT_TID; j < n; j += EVT_NTHREADS) dst[j] = __ldg(src + j);
        EVT_SYNC();
    }
    return &evt_rec_s[i];
}
#else
EVT_DEV const evt_task_rec *evt_rec_at(const evt_ctx *C, int64_t k, int64_t k0, int64_t k1)
{
    (void)k0; (void)k1;
    return C->rec ? &C->rec[k] : NULL;
}
#endif

/* One queue entry: from its record, or decoded from q. */
EVT_DEV void evt_run_entry(const evt_ctx *C, evt_worker *W, int64_t k, int64_t k0, int64_t k1)
{
    const evt_task_rec *R = evt_rec_at(C, k, k0, k1);
    uint32_t e = R ? R->entry : EVT_RO(C->q[k]);
    evt_dispatch(C, W, (int)(e >> EVT_QCALL_SHIFT), (int64_t)(e & EVT_QINDEX_MASK), C->qext, R);
}

/* The weight stream (CUDA, evt_stream.h): the leader finds its jobs, pumps
 * before each entry (retires finished slots, places the next jobs' weights,
 * which the issuer thread copies) and, after the last entry, waits for every
 * copy in flight. Nothing without the stream. */
#if defined(__CUDACC__) && EVT_STREAM
#define EVT_STREAM_START(C, W) do { if (EVT_LEADER) evt_stream_start(C, (W)->id); } while (0)
#define EVT_STREAM_PUMP(C, k)                                                                                          \
    do {                                                                                                               \
        if ((C)->stream_ring_bytes) {                                                                                  \
            if (EVT_LEADER) evt_stream_pump(C, k);                                                                     \
            EVT_SYNC(); /* the block's threads are idle here: the copying threads issue what the pump placed */       \
            evt_stream_copy(C);                                                                                        \
        }                                                                                                              \
    } while (0)
#define EVT_STREAM_DRAIN() do { if (EVT_LEADER) evt_stream_drain(); } while (0)
#else
#define EVT_STREAM_START(C, W) ((void)0)
#define EVT_STREAM_PUMP(C, k) ((void)0)
#define EVT_STREAM_DRAIN() ((void)0)
#endif

#include "evt_dispatch_wg.h"

EVT_DEV void evt_run_static(const evt_ctx *C, evt_worker *W)
{
#if EVT_DISPATCH_WG >= 2 && defined(__CUDACC__)
    if (evt_ctl_on(C)) { /* the dispatch warp takes the entries (evt_dispatch_wg.h) */
        evt_ctl_tiles_static(C, W);
        return;
    }
#endif
    /* No barrier between tasks: a dispatch's leader writes the broadcast
       fields only after the previous task's last barrier, which every thread
       passed after reading them. An aborted launch skips its remaining tasks
       at their first wait check. (Hybrid static workers: evt_run_static_hybrid.) */
    int64_t k0 = EVT_RO(C->q_off[W->id]), k1 = EVT_RO(C->q_off[W->id + 1]);
    EVT_STREAM_START(C, W);
    for (int64_t k = k0; k < k1; k++) {
        EVT_STREAM_PUMP(C, k);
        evt_run_entry(C, W, k, k0, k1);
    }
    EVT_STREAM_DRAIN();
}

/* Hybrid mode, static workers: the same queue walk; completions may credit
 * dynamic consumers, and the queue's entries count toward termination. */
EVT_NOINLINE void evt_run_static_hybrid(const evt_ctx *C, evt_worker *W)
{
    int64_t k0 = EVT_RO(C->q_off[W->id]), k1 = EVT_RO(C->q_off[W->id + 1]);
    EVT_STREAM_START(C, W);
    for (int64_t k = k0; k < k1; k++) {
        EVT_STREAM_PUMP(C, k);
        evt_run_entry(C, W, k, k0, k1);
        EVT_SYNC();
        evt_fan_out(C, W);
    }
    EVT_STREAM_DRAIN();
    if (EVT_LEADER) {
        W->completed += (int32_t)(k1 - k0);
        evt_flush_completions(C, W);
    }
}

EVT_DEV void evt_run_dynamic(const evt_ctx *C, evt_worker *W)
{
    if (evt_dynamic_goal(C) == 0) return; /* no task at this shape */
    if (EVT_LEADER) {
        /* this worker's seeds: one fetch-add reserves all their positions
           (hybrid: the dynamic workers are [nstatic, nworkers)) */
        int64_t first = W->id - C->nstatic, stride = C->nworkers - C->nstatic, mine = 0;
        for (int64_t k = first; k < C->nseeds; k += stride) mine++;
        int64_t pos = mine ? evt_add64_relaxed(&C->ring->enq, mine) : 0;
        for (int64_t k = first; k < C->nseeds; k += stride) evt_ring_put(C, pos++, C->seeds[k]);
    }
    for (;;) {
        if (EVT_LEADER) {
            int64_t task = EVT_RING_EXIT;
            if (!evt_pop(C, W, &task)) task = EVT_RING_EXIT; /* done or aborted */
            W->entry = task;
            if (task >= 0) evt_chaos(C, W); /* chaos: delay after pop */
        }
        EVT_SYNC();
        int64_t task = W->entry;
        if (task < 0) break;
        /* the task's record (global memory, by task id), or the decode */
        const evt_task_rec *R = C->trec ? C->trec + task : NULL;
        int call = R ? (int)(R->entry >> EVT_QCALL_SHIFT) : evt_call_of_task(C, task);
        int64_t lin = R ? (int64_t)(R->entry & EVT_QINDEX_MASK) : task - C->task_base[call];
        evt_dispatch(C, W, call, lin, C->ext, R);
        EVT_SYNC(); /* W->entry is rewritten only after everyone read it */
        evt_fan_out(C, W); /* credits pushed before this task counts as done */
        if (EVT_LEADER) W->completed++; /* reported when this worker next finds its slot empty (evt_pop) */
    }
}

/* Kernel by kernel (C->mode == EVT_MODE_KBK): tasks first, first + stride,
 * ... of one call; the launch boundary orders the calls, so dispatch skips
 * waits and notifies. */
EVT_DEV void evt_run_call(const evt_ctx *C, evt_worker *W, int call, int64_t first, int64_t stride)
{
    int64_t n = C->task_base[call + 1] - C->task_base[call];
    for (int64_t lin = first; lin < n; lin += stride) evt_dispatch(C, W, call, lin, C->ext, NULL);
}

/* Entry point of every worker (a block on the GPU, a thread on the CPU). */
EVT_DEV void evt_worker_main(const evt_ctx *C, evt_worker *W, int worker_id)
{
    if (EVT_LEADER) {
        W->id = worker_id;
        W->rng = (C->chaos ^ (uint32_t)(worker_id * 2654435761u)) | 1u;
        W->task = -1;
        W->tickets_left = 0;
        W->completed = 0;
        W->nfan = 0;
    }
    EVT_SYNC();
    if (worker_id == 0) {
        evt_arm_inputs(C, W);
        EVT_SYNC();
        evt_fan_out(C, W);
        /* arming input events was the launch's extra "seed" (dynamic, hybrid) */
        if (EVT_INPUT_ARMING && C->mode != EVT_MODE_STATIC && EVT_LEADER) {
            W->completed++;
            evt_flush_completions(C, W);
        }
    }
    if (C->mode == EVT_MODE_STATIC) evt_run_static(C, W);
    else if (C->mode == EVT_MODE_HYBRID && worker_id < C->nstatic) evt_run_static_hybrid(C, W);
    else evt_run_dynamic(C, W);

    /* The last worker out checks the counters and re-arms the state. */
    EVT_SYNC();
    if (EVT_LEADER) W->arm = evt_add_acq_rel(C->done_workers, 1) + 1 == C->nworkers;
    EVT_SYNC();
    if (!W->arm || evt_block_stop(C, W)) return;
    /* Every counter must have reached its target: otherwise some task never
       ran (dynamic quiescence with a stuck event) or ran too early (too many
       notifies). Either is an error, never a silent result. */
    for (int64_t i = EVT_TID; i < C->ncounters; i += EVT_NTHREADS) {
        int32_t v = evt_load_relaxed(&C->counters[i]);
        if (v != C->target[i]) { evt_raise(C, EVT_KERR_INCOMPLETE, W->id, -1, -1, -1, i, v, C->target[i]); break; }
    }
    EVT_SYNC();
    if (evt_block_stop(C, W)) return;
    int64_t n = C->state_len - 1; /* done_workers is the last word */
    for (int64_t i = EVT_TID; i < n; i += EVT_NTHREADS) C->state[i] = 0;
    EVT_SYNC();
    if (EVT_LEADER) {
        /* tickets taken after the last task are never filled: rewind them */
        evt_store64_release(&C->ring->deq, evt_load64_acquire(&C->ring->enq));
        evt_store_relaxed(C->done_workers, 0);
    }
}

#endif
