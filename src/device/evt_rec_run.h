/* evt_rec_run.h — the shared record path: one function that runs a task of
 * any call from its task record (static workers with records, dynamic
 * workers through C->trec), reading what differs between calls from the
 * generated table evt_rec_calls[call] (src/device/evt_ctx.h).
 *
 * Why: every call template (evt_tpl_N) carried its own copy of this path,
 * 6-11 KiB of machine code that a task's leader runs once. A batch-1 decode
 * layer ran five tiles and four templates, ~125 KiB of code executed once per
 * task, against an SM instruction cache of ~128 KiB (bench/icache.cu:
 * straight code past it runs at ~5.5 cycles an instruction a warp, inside it
 * at 1-2), and Nsight Compute sampled 20% of qwen3-0.6b's warps stalled with
 * no instruction (bench/RESULTS.md session 45). One shared path keeps a
 * layer's dispatch code the same few KiB for every call.
 *
 * It does what the template's record path does, in the same order (the
 * trace stamps, the waits before the tile or beside it, one release fence
 * before the record's notifies), and is taken only where that path would be:
 * a record with its lists (R->nwait >= 0), a call marked generic (constant or
 * symbol integer arguments, no weight stream, no prefetch hook, no arming),
 * and no early push (evt_dispatch checks). Included by the generated code
 * after evt_rec_calls and evt_rec_tile. */
#ifndef EVT_REC_RUN_H
#define EVT_REC_RUN_H

#ifndef EVT_REC_ARGS_WARP
#define EVT_REC_ARGS_WARP 1 /* 0: the leader copies the tensors and integer arguments alone (the ablation) */
#endif
#if defined(__CUDACC__) && EVT_REC_ARGS_WARP
#define EVT_REC_BY_WARP 1 /* the GPU's warp-0 build below; else the leader's loop in evt_run_rec (and the CPU's) */
#else
#define EVT_REC_BY_WARP 0
#endif
#if EVT_REC_BY_WARP
/* The argument build's copies, by the 32 lanes of warp 0 at once: the
 * call's tensor references (48 bytes each, in 8-byte pieces) from the
 * launch's table, its integer arguments, the task's coordinate and the
 * grid. The leader alone did them one after another, ~40 instructions a
 * tensor on one thread, each waiting on its shared-memory load: an empty
 * static task spent ~45% of its 2.1 us in that build (bench/RESULTS.md
 * session 62), and a task whose inputs are ready when its worker takes it
 * starts only after it. */
EVT_DEV void evt_rec_args_warp(const evt_ctx *C, evt_task_args *A, int call, const evt_rec_call *D, const evt_task_rec *R)
{
    const int lane = (int)(threadIdx.x & 31), nt = D->nt, ni = D->ni, rank = D->rank;
    /* 8-byte pieces: A->t sits 8 bytes past a 16-byte boundary */
    constexpr int P = (int)(sizeof(evt_tensor_ref) / 8);
    static_assert(sizeof(evt_tensor_ref) % 8 == 0 && offsetof(evt_task_args, t) % 8 == 0, "tensor refs are copied in 8-byte pieces");
    const bool in_smem = __isShared(C->tensors); /* the launch table's copy (not with EVT_CTX_IN_GLOBAL) */
    for (int j = lane; j < nt * P; j += 32) {
        const int k = j / P, piece = j - k * P;
        const unsigned long long *src = (const unsigned long long *)&C->tensors[D->tensor[k]] + piece;
        ((unsigned long long *)&A->t[k])[piece] = in_smem ? *src : __ldg(src);
    }
    if (lane < ni) A->iarg[lane] = D->sym_mask >> lane & 1 ? C->sym[D->iarg[lane]] : D->iarg[lane];
    if (lane < 4) {
        A->coord[lane] = lane < rank ? R->coord[lane] : 0;
        A->grid[lane] = C->ext[call * 4 + lane];
    }
}
#endif

/* The task arguments' fields other than the copies (evt_rec_args_warp or
 * the leader's loop): one thread. Shared with the dispatch warp
 * (src/device/evt_dispatch_wg.h). */
EVT_DEV void evt_rec_args_fields(const evt_ctx *C, evt_task_args *A, const evt_rec_call *D, int worker, int32_t wait_in_tile)
{
    A->ncoord = D->rank;
    A->worker = worker;
    A->ntensors = D->nt;
    A->nints = D->ni;
    A->stream = 0;
    A->stream_at = 0;
    A->wait_in_tile = wait_in_tile;
    A->tmaps = C->tmaps;
    A->tma_ring_off = C->tma_ring_off;
    A->tma_ring_bytes = C->tma_ring_bytes;
}

/* After a record task's tile and the barrier behind it: the end stamp, then
 * the notifier's one release fence and the record's notifies (the leader's
 * stamp alone for a call without notifies). Shared with the dispatch
 * warp's tile threads. */
EVT_DEV void evt_rec_finish(const evt_ctx *C, evt_worker *W, const evt_task_rec *R, int64_t task, int flags)
{
    evt_trace_end(C, task); /* before notifies: consumers start after it */
    if (((flags & EVT_RECF_NOTIFIES) ? EVT_REC_NOTIFIER(C) : EVT_LEADER) && C->mode != EVT_MODE_KBK) {
        evt_chaos(C, W); /* chaos: delay before notifies */
        if (flags & EVT_RECF_NOTIFIES) {
            evt_notify_fence(); /* one release for all of this task's notifies */
            evt_notify_rec(C, W, R);
        }
        evt_trace_notified(C, task);
    }
}

EVT_NOINLINE void evt_run_rec(const evt_ctx *C, evt_worker *W, int call, const evt_task_rec *R)
{
    const evt_rec_call *D = &evt_rec_calls[call];
    if (R->task < 0) return; /* outside the bound shape */
    const int64_t task = R->task;
    const int flags = D->flags;
    int32_t tgt0 = -1; /* the leader's: its record's first wait target, loaded early */
    if (EVT_LEADER) {
        evt_trace_taken(C, task);
        tgt0 = evt_rec_target0(C, R);
    }
#if EVT_REC_BY_WARP
    if (threadIdx.x < 32) evt_rec_args_warp(C, &W->args, call, D, R); /* the block barrier below publishes them */
#endif
    if (EVT_LEADER) {
        W->task = task;
        W->skip = 0;
        evt_task_args *A = &W->args;
        evt_rec_args_fields(C, A, D, W->id, 0);
#if !EVT_REC_BY_WARP
        const int rank = D->rank, nt = D->nt, ni = D->ni;
        const int64_t *X = C->ext + call * 4;
        for (int k = 0; k < 4; k++) {
            A->coord[k] = k < rank ? R->coord[k] : 0;
            A->grid[k] = X[k];
        }
#ifdef __CUDACC__
#pragma unroll 1
#endif
        for (int k = 0; k < nt; k++) A->t[k] = evt_ld_tensor(&C->tensors[D->tensor[k]]);
        for (int k = 0; k < ni; k++) A->iarg[k] = D->sym_mask >> k & 1 ? C->sym[D->iarg[k]] : D->iarg[k];
#endif
        evt_trace_taken_at(C, task, 1); /* (a diagnostic: EVT_TRACE_TAKEN_AT) */
        if (flags & EVT_RECF_BESIDE) {
            A->wait_in_tile = 1; /* warp 0 waits beside the tile, below (EVT_WAITS_IN_TILE: inside it) */
#if EVT_WAITS_IN_TILE
            evt_tile_wait_record(W, C, call, R, tgt0, task);
#endif
        } else if (flags & EVT_RECF_WAITS) {
            evt_trace_taken_at(C, task, 2);
            if (evt_wait_rec(C, W, call, R, tgt0)) W->skip = 1;
        }
    }
    EVT_SYNC();
    if (W->skip) return;
#if EVT_WAITS_IN_TILE && defined(__CUDACC__)
    if (!W->args.wait_in_tile) evt_trace_start(C, W, task); /* else evt_tile_wait stamps it after the waits */
#elif defined(__CUDACC__)
    if (W->args.wait_in_tile) { /* the other warps enter the tile, issue their weight loads and meet warp 0 there */
        if (threadIdx.x < 32) {
            if (EVT_LEADER) evt_trace_taken_at(C, task, 2);
            if (EVT_LEADER && evt_wait_rec(C, W, call, R, tgt0)) W->skip = 1;
            evt_trace_start(C, W, task);
            __syncwarp();
        }
    } else {
        evt_trace_start(C, W, task);
    }
#else
    evt_trace_start(C, W, task);
#endif
    evt_rec_tile(C, D->tile, &W->args);
    /* its own waits stopped (launch aborted): read before the barrier, after which the next task's leader resets
       W->skip (a read after it raced with that write: compute-sanitizer racecheck, bench/RESULTS.md session 63) */
    const int stopped = (flags & EVT_RECF_BESIDE) && W->skip;
    EVT_SYNC();
    if (stopped) return;
    evt_rec_finish(C, W, R, task, flags);
}

#endif
