/* evt_dispatch_wg.h — a dispatch warp beside the tiles (EVT_DISPATCH_WG, a
 * cuda_defines option; GPU, static schedule, the shared record path).
 *
 * Why: between two tasks a worker's tile warps take the next queue entry,
 * build its arguments and only then poll its waits: 2.6-2.75 us from a
 * qwen3-8b batch-1 task's end to its successor's poll, and about half of a
 * layer's GEMV and attention tasks reach that poll after their inputs are
 * complete (bench/RESULTS.md session 64). Here a dispatch warp does that
 * work one task ahead, while the tiles run: the tile warps find the next
 * task's arguments built and its waits polled, and pay two shared-memory
 * barriers instead.
 *
 * The block: the tiles' EVT_BLOCK_THREADS threads (two warpgroups) and a
 * third warpgroup, whose first warp dispatches; its other warps leave at
 * once. ptxas gives a 384-thread block 168 registers a thread, so the entry
 * moves registers between the warpgroups (setmaxnreg, sm_90a): the dispatch
 * warpgroup drops to 24 and the tile warpgroups rise to 240. A raise takes
 * only what the block's own warps released (the CTA's pool; with 32 kept it
 * waited forever): (168 - 24) x 128 released is 2 x (240 - 168) x 128 taken.
 * Its code calls no function the tiles' code calls (ptxas then budgets
 * those functions, the tiles among them, below 240: 500-630 bytes of spills
 * a GEMV tile). EVT_DISPATCH_WG 1 is the measurement of the split alone:
 * the warpgroup leaves, the tiles run as without the option but at 240
 * registers.
 *
 * The protocol, task k of a worker's queue in slot s = k % 2 (two slots of
 * arguments in shared memory, so that the dispatch warp builds task k + 1
 * while task k runs); named barriers of the tile threads plus the dispatch
 * warp:
 *   READY[s]  dispatch warp arrives once slot s holds task k; tiles sync.
 *   GO[s]     dispatch warp arrives once task k's waits are complete (its
 *             lanes poll them, one wait each); tiles sync before the tile, or inside it
 *             (an early_loads tile's evt_tile_wait, after its weight loads
 *             are issued: args.wait_in_tile holds GO[s]'s id).
 *   FREE[s]   tiles arrive after task k (after its notifies); the dispatch
 *             warp syncs before it writes task k + 2 into slot s.
 * Each barrier's generations alternate strictly (the dispatch warp writes a
 * slot only after FREE of its previous task, the tiles read it only after
 * READY), so no arrival can be taken for another task's. The notifies stay
 * with the last tile warp (EVT_REC_NOTIFIER). An entry the record path does
 * not take (no lists, a template call) runs on the tile threads as before
 * (evt_dispatch with the worker's own arguments): the dispatch warp only
 * hands it over (on the GPU: tests/gpu/decode_check.sh's
 * uneven-b2-dwg-prefetch, whose GEMV calls have a prefetch hook and so take
 * their templates; evtc decode's default programs take the record path for
 * every call). A launch that aborts in the dispatch warp's waits sets
 * evt_ctl_stop: the task and every later one whose waits stop skip their
 * tile, the barriers still pair. With the dispatch warp, EVT_WAITS_IN_TILE
 * is off (evt_device.h): warp 0 no longer polls, so it issues its early
 * loads with the other warps.
 *
 * Measured (H200, bench/RESULTS.md session 65; ms per token against main in
 * the same call): qwen3-0.6b batch 1 1.092-1.093 -> 1.076-1.080 (-1.1 to
 * -1.5%), batch 8 -0.5%, batch 16 +0.5%; qwen3-1.7b batch 1 +0.9%; qwen3-8b
 * batch 1 +2.1%. The split alone (EVT_DISPATCH_WG 1) costs +2.8% at
 * qwen3-0.6b and +0.6% at qwen3-8b. So it is an option, not evtc decode's
 * default: EVT_NVCCFLAGS=-DEVT_DISPATCH_WG=2 adds it to any kernel whose
 * tiles have 256 threads.
 */
#ifndef EVT_DISPATCH_WG_H
#define EVT_DISPATCH_WG_H

#if EVT_DISPATCH_WG >= 2 && defined(__CUDACC__)

enum { EVT_CTL_RUN = 0, EVT_CTL_SKIP = 1, EVT_CTL_TEMPLATE = 2 };
enum { EVT_CTL_BAR_READY = 8, EVT_CTL_BAR_FREE = 10, EVT_CTL_BAR_GO = 12 }; /* + slot; 1-4 are the tiles' own */

typedef struct evt_ctl_slot {
    evt_task_args args;     /* the record path's task arguments (the tiles read them here) */
    const evt_task_rec *R;  /* the entry's record (global memory) */
    int32_t call, kind, go; /* go: GO[s]'s id when the dispatch warp polls the task's waits, else 0 */
} evt_ctl_slot;
static __shared__ __align__(16) evt_ctl_slot evt_ctl[2];

/* Tile threads: task k's slot is ready; runs it and releases the slot. */
EVT_NOINLINE void evt_ctl_tile_task(const evt_ctx *C, evt_worker *W, int s)
{
    evt_ctl_bar_sync(EVT_CTL_BAR_READY + s);
    evt_ctl_slot *S = &evt_ctl[s];
    const int kind = S->kind;
    const evt_task_rec *R = S->R;
    if (kind == EVT_CTL_TEMPLATE) {
        evt_dispatch(C, W, S->call, (int64_t)(R->entry & EVT_QINDEX_MASK), C->qext, R);
    } else if (kind == EVT_CTL_RUN) {
        const evt_rec_call *D = &evt_rec_calls[S->call];
        const int flags = D->flags, go = S->go;
        const evt_task_args *A = &S->args;
        int stopped = 0;
        if (go && !A->wait_in_tile) stopped = evt_ctl_go(go); /* the waits before the tile */
        if (!stopped) {
            evt_rec_tile(C, D->tile, A); /* an early_loads tile meets GO inside (evt_tile_wait) */
            /* (a stop the dispatch warp raised since, in a later task's waits,
               skips this task's notifies too: the launch fails either way) */
            stopped = A->wait_in_tile && evt_ctl_stop;
        }
        EVT_SYNC(); /* the tile's stores, before the notifier's fence */
        if (!stopped) evt_rec_finish(C, W, R, R->task, flags);
    }
    __syncwarp();
    evt_ctl_bar_arrive(EVT_CTL_BAR_FREE + s);
}

/* Tile threads: the worker's queue, each task from the dispatch warp's slot. */
EVT_DEV void evt_ctl_tiles_static(const evt_ctx *C, evt_worker *W)
{
    const int64_t k0 = EVT_RO(C->q_off[W->id]), k1 = EVT_RO(C->q_off[W->id + 1]);
    for (int64_t k = k0; k < k1; k++) evt_ctl_tile_task(C, W, (int)((k - k0) & 1));
}

/* The dispatch warp's waits for a task record: lane i polls the record's
   wait i (complete ones cost one round trip for all), spinning with
   evt_wait_spin's backoff and watchdog (its own copy: evt_wait_spin is a
   call the tiles' path makes, and the same loop as a shared inline helper
   moved the default kernels' machine code, bench/kernel_same.sh), then the
   warp's one acquire fence.
   The polls are relaxed loads: an acquire load invalidates the SM's L1
   after each poll, and these polls run beside the previous task's tile,
   whose loads it would slow (EVT_CTL_POLL_ACQUIRE 1: acquire polls, as
   measured first: qwen3-8b batch 1 +5.8% per token against main, bench/RESULTS.md
   session 65). Inline, so that the dispatch warpgroup's code calls none of
   the functions the tiles' warpgroups call (evt_wait_rec). Returns 1 when
   the launch aborted. */
#ifndef EVT_CTL_POLL_ACQUIRE
#define EVT_CTL_POLL_ACQUIRE 0
#endif
EVT_DEV int32_t evt_ctl_poll(int32_t *p) { return EVT_CTL_POLL_ACQUIRE ? evt_load_acquire(p) : evt_load_relaxed(p); }
EVT_DEV int evt_ctl_wait(const evt_ctx *C, int worker, int call, const evt_task_rec *R, int32_t tgt0)
{
    const int lane = (int)(threadIdx.x & 31);
    int stop = 0;
    if (lane < R->nwait) {
        const int32_t e = R->elem[lane];
        const int32_t target = lane == 0 && tgt0 >= 0 ? tgt0 : EVT_RO(C->target[e]);
        int32_t *cnt = &C->counters[e];
        int32_t v = evt_ctl_poll(cnt);
        if (v < target) {
            const uint64_t start = evt_now_ns();
            uint32_t backoff = 32;
            for (uint32_t spin = 0; (v = evt_ctl_poll(cnt)) < target; spin++) {
                if (evt_aborted(C)) { stop = 1; break; }
                if (spin < 64) continue;
                evt_pause(backoff);
                if (backoff < 256) backoff *= 2;
                if ((spin & 15) == 15 && evt_now_ns() - start > C->timeout_ns) {
                    evt_raise(C, EVT_KERR_WAIT_TIMEOUT, worker, call, -1, R->task, e, v, target);
                    stop = 1;
                    break;
                }
            }
        }
    }
    stop = __any_sync(0xffffffffu, stop);
    if (!EVT_CTL_POLL_ACQUIRE) evt_acquire_fence(); /* every lane: the producers' writes before the tiles' reads */
    return stop;
}

/* The dispatch warp: fills slot s with queue entry k (lane 0 decides, every
   lane copies), hands it over, then polls its waits. */
EVT_DEV void evt_ctl_dispatch_task(const evt_ctx *C, int worker, int64_t k, int s)
{
    const int lane = (int)(threadIdx.x & 31);
    const evt_task_rec *R = C->rec + k;
    evt_ctl_slot *S = &evt_ctl[s];
    const uint32_t e = R->entry;
    const int call = (int)(e >> EVT_QCALL_SHIFT);
    const evt_rec_call *D = &evt_rec_calls[call];
    const int64_t task = R->task;
    const int kind = !(R->nwait >= 0 && D->generic) ? EVT_CTL_TEMPLATE : task < 0 ? EVT_CTL_SKIP : EVT_CTL_RUN;
    const int flags = D->flags;
    const int go = kind == EVT_CTL_RUN && (flags & (EVT_RECF_WAITS | EVT_RECF_BESIDE)) ? EVT_CTL_BAR_GO + s : 0;
    int32_t tgt0 = -1;
    if (kind == EVT_CTL_RUN) {
        if (lane == 0) {
            evt_trace_put(C, task, EVT_TRACE_TAKEN);
            tgt0 = evt_rec_target0(C, R);
        }
        evt_rec_args_warp(C, &S->args, call, D, R);
        if (lane == 0) evt_rec_args_fields(C, &S->args, D, worker, (flags & EVT_RECF_BESIDE) ? go : 0);
    }
    if (lane == 0) {
        S->R = R;
        S->call = call;
        S->kind = kind;
        S->go = go;
    }
    __syncwarp();
    evt_ctl_bar_arrive(EVT_CTL_BAR_READY + s);
    if (kind != EVT_CTL_RUN) return;
    if (go && evt_ctl_wait(C, worker, call, R, __shfl_sync(0xffffffffu, tgt0, 0)) && lane == 0) evt_ctl_stop = 1;
    if (lane == 0) {
        evt_trace_put(C, task, EVT_TRACE_STARTED);
        if (C->trace) C->trace_worker[task] = worker;
    }
    __syncwarp();
    if (go) evt_ctl_bar_arrive(go);
}

/* The dispatch warp's loop over the worker's queue. */
EVT_DEV void evt_ctl_dispatch_static(const evt_ctx *C, int worker_id)
{
    if ((threadIdx.x & 31) == 0) evt_ctl_stop = 0;
    __syncwarp();
    const int64_t k0 = EVT_RO(C->q_off[worker_id]), k1 = EVT_RO(C->q_off[worker_id + 1]);
    for (int64_t k = k0; k < k1; k++) {
        const int s = (int)((k - k0) & 1);
        if (k - k0 >= 2) evt_ctl_bar_sync(EVT_CTL_BAR_FREE + s); /* task k - 2 left the slot */
        evt_ctl_dispatch_task(C, worker_id, k, s);
    }
    /* the last tasks' releases have their waiter too (no barrier is left mid-generation) */
    for (int64_t k = (k1 - k0 >= 2 ? k1 - 2 : k0); k < k1; k++) evt_ctl_bar_sync(EVT_CTL_BAR_FREE + (int)((k - k0) & 1));
}

/* Whether this launch's static workers use the dispatch warp (both sides
   read the same fields of the launch context). */
EVT_DEV bool evt_ctl_on(const evt_ctx *C) { return C->mode == EVT_MODE_STATIC && C->rec != NULL; }
#endif

#endif
