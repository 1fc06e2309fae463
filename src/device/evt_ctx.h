/* evt_ctx.h — the launch context shared by the host runtimes and the
 * generated persistent kernels (C and CUDA): bound shape, tensors, counters,
 * schedules, queue, watchdog and trace buffers.
 *
 * The host fills one evt_ctx per launch (pointers are host addresses on the
 * CPU target, device addresses on the GPU target) and the kernel reads it.
 * Plain C, fixed-width fields: the same layout on both sides.
 *
 * Mutable per-launch state lives in one int32 array `state` that the kernel
 * zeroes itself at the end of a successful launch (no host memset between
 * launches):
 *   [counters | pending | histograms | arm_done | outstanding | terminated | done_workers]
 * (evt_ctx_place_state in src/runtime/bind.c is the one place that lays it out)
 */
#ifndef EVT_CTX_H
#define EVT_CTX_H
#include <stdint.h>
#include "evt_task_args.h"

/* Target value of a data-dependent event: the arming task adds
 * (EVT_DATA_TARGET - count), notifies add 1 each, complete at EVT_DATA_TARGET. */
#define EVT_DATA_TARGET 0x40000000

/* Static queue entries: call id in the high bits, the task's linear index in
 * its grid in the low EVT_QCALL_SHIFT bits. */
#define EVT_QCALL_SHIFT 20
#define EVT_QINDEX_MASK ((1u << EVT_QCALL_SHIFT) - 1u)
#define EVT_MAX_CALLS 4095

/* Bumped whenever evt_ctx or the generated-code contract changes. */
#define EVT_ABI_VERSION 16

/* Task records: what a static queue entry's task needs before its tile,
 * resolved on the host at bind time for the bound shape, so that the
 * worker's leader reads them instead of evaluating maps on the device (one
 * 64-byte record per queue entry, parallel to evt_ctx.q; the GPU worker
 * copies its records into shared memory EVT_REC_CHUNK at a time).
 * nwait < 0: the task's lists are not in the record (a data-dependent or
 * trigger map, or more elements than fit): the generated code computes them
 * as it does without records. task < 0: the entry lies outside the bound
 * shape (a bucket schedule); the worker skips it. */
#define EVT_REC_ELEMS 9
#define EVT_REC_CHUNK 32
typedef struct evt_task_rec {
    uint32_t entry;                   /* the queue entry (call << EVT_QCALL_SHIFT | lin) */
    int32_t task;                     /* global task id, or -1: skip */
    int16_t nwait, nnotify;           /* nwait + nnotify <= EVT_REC_ELEMS */
    int32_t coord[4];                 /* the task's coordinate in its call's bound grid */
    int32_t elem[EVT_REC_ELEMS];      /* absolute counter indices: the waits (complete-from-start ones left
                                         out), then the notifies (one +1 each, repeats allowed) */
} evt_task_rec;

/* What the shared record path (evt_run_rec, src/device/evt_rec_run.h) needs
 * to run a task of one call from its record: the generated code's
 * evt_rec_calls[call]. Calls whose tasks it cannot run (generic 0) keep
 * their template's own record path. Device-side only (not in evt_ctx). */
enum {
    EVT_RECF_WAITS = 1,    /* the call has waits: the record's list is waited for */
    EVT_RECF_BESIDE = 2,   /* ... by warp 0 beside the tile (early_loads, CUDA) */
    EVT_RECF_NOTIFIES = 4, /* the call notifies: the record's list, after one release fence */
};
typedef struct evt_rec_call {
    int8_t generic;                   /* 1: evt_dispatch runs its record-driven tasks through evt_run_rec */
    int8_t rank, nt, ni;              /* grid rank, tensors, integer arguments */
    int8_t flags;                     /* EVT_RECF_* */
    uint8_t sym_mask;                 /* bit k: iarg[k] is a symbol id (A->iarg[k] = C->sym[id]) */
    int16_t tile;                     /* the tile: evt_rec_tile's case (CUDA), C->tile_fns' index (C) */
    int32_t tensor[EVT_ABI_MAX_TENSORS]; /* tensor ids, in the operator's parameter order */
    int64_t iarg[EVT_ABI_MAX_INTS];   /* constant integer arguments (or symbol ids) */
} evt_rec_call;

/* Weight-stream jobs (src/device/evt_stream.h): for each static worker, in
 * queue order, the band of weight rows each of its streaming tasks reads,
 * resolved on the host at bind time (src/runtime/bind_stream.c), so that
 * the worker's leader only reads a 32-byte job to copy a band. */
typedef struct evt_stream_job {
    int32_t entry;      /* the queue entry (index into q) whose task reads the band */
    int32_t issue_at;   /* the first queue entry whose pump may issue the copy */
    int32_t tensor[2];  /* the matrices' tensor ids (tensor[1] < 0: one matrix) */
    int32_t nrows;      /* rows of the band */
    int32_t pitch;      /* bytes per row (a multiple of 16) */
    int64_t row0;       /* its first row */
} evt_stream_job;

/* KBK: one launch per call (kernel by kernel): waits and notifies are no-ops,
 * the kernel boundary orders the calls. HYBRID: workers [0, nstatic) run
 * static queues, the others the ready queue (calls marked `policy dynamic`). */
enum { EVT_MODE_STATIC = 0, EVT_MODE_DYNAMIC = 1, EVT_MODE_KBK = 2, EVT_MODE_HYBRID = 3 };

/* Trace timestamps per task (evt_ctx.trace[task * EVT_TRACE_STAMPS + k]):
 * the leader took the task, its waits were done, its tile ended, its
 * notifies were issued. */
enum { EVT_TRACE_TAKEN, EVT_TRACE_STARTED, EVT_TRACE_ENDED, EVT_TRACE_NOTIFIED, EVT_TRACE_STAMPS };

/* Error kinds written to evt_error.kind by the kernel. */
enum {
    EVT_KERR_NONE = 0,
    EVT_KERR_WAIT_TIMEOUT = 1,   /* a wait spun past the watchdog bound */
    EVT_KERR_QUEUE_TIMEOUT = 2,  /* dynamic: no ready task for too long */
    EVT_KERR_BAD_INDEX = 3,      /* a map produced an event index out of range */
    EVT_KERR_INCOMPLETE = 5,     /* launch ended with a counter off its target */
    EVT_KERR_STREAM = 6,         /* the weight stream stalled or lost step (internal error) */
};

typedef struct evt_error {
    int32_t kind;       /* EVT_KERR_*, 0 = none; first error wins (CAS) */
    int32_t worker;
    int32_t call;
    int32_t event;
    int64_t task;       /* global task id (or -1) */
    int64_t elem;       /* event element (linear) or the bad index value */
    int64_t observed;   /* counter value seen */
    int64_t target;
} evt_error;

/* Bounded MPMC ring with tickets: a push or pop takes its position with one
 * fetch-add (no compare-and-swap retries under contention), then waits for
 * its slot's sequence number (Vyukov's per-slot protocol). A pop blocks until
 * its slot is filled or the launch is over (`terminated`); the last worker
 * then rewinds deq to enq, so the unfilled tickets are reused next launch.
 * Persistent across launches: positions keep increasing, nothing to reset.
 * Capacity >= tasks + workers of a launch (evt_ring_capacity).
 *
 * A slot is one 64-bit word: the sequence number in the high half (the
 * position modulo 2^32: pos while the slot waits for position pos's task,
 * pos + 1 once it holds it) and the task id in the low half. A pop reads both
 * with one acquire load and frees the slot for the next lap with one relaxed
 * store: coherence orders that store after the load of the same word, so no
 * fence is needed (bench/RESULTS.md, session 62). Task ids and the capacity
 * fit: binding a shape refuses more than 2^30 tasks (src/pass/shape.c). */
#define EVT_RING_EXIT (-1)
typedef int64_t evt_ring_slot;
#define EVT_RING_SLOT(seq, task) ((int64_t)(((uint64_t)(uint32_t)(seq) << 32) | (uint32_t)(task)))
#define EVT_RING_SEQ(slot) ((uint32_t)((uint64_t)(slot) >> 32))
#define EVT_RING_TASK(slot) ((int64_t)(int32_t)(uint32_t)(uint64_t)(slot))
typedef struct evt_ring {
    int64_t enq;                 /* next enqueue position */
    int64_t pad0[7];
    int64_t deq;                 /* next dequeue position */
    int64_t pad1[7];
    int64_t mask;                /* capacity - 1 (power of two) */
    evt_ring_slot *slots;
} evt_ring;

/* A consumer-list entry's flag: the element is the task's only wait
 * occurrence (pending target 1), so its one credit pushes it without the
 * pending count's round trip (evt_credit_cons). Task ids are below 2^30. */
#define EVT_CONS_SOLE (1 << 30)

typedef struct evt_ctx {
    /* bound shape */
    int32_t nsyms, ncalls, nevents, ntensors;
    const int64_t *sym;          /* [nsyms] */
    const int64_t *ext;          /* [ncalls*4] actual grid extents */
    const int64_t *task_base;    /* [ncalls+1] global task id of each call's task 0 */
    const int64_t *ev_base;      /* [nevents+1] counter offset of each event */
    const int64_t *ev_dim;       /* [nevents*4] event extents */
    evt_tensor_ref *tensors;     /* [ntensors] */
    int64_t ntasks, ncounters;

    /* per-launch state (zeroed by the kernel at the end of each launch) */
    int32_t *state;
    int64_t state_len;
    int32_t *counters;           /* = state */
    int32_t *pending;            /* dynamic: completed wait elements per task */
    int32_t *hist;               /* data-dependent counts under construction */
    int32_t *arm_done;           /* [ncalls] finished tasks of arming calls */
    int32_t *outstanding;        /* dynamic: pushed but not finished */
    int32_t *terminated;         /* dynamic: every task is done, workers leave */
    int32_t *done_workers;
    const int32_t *target;       /* [ncounters] */

    int32_t nworkers, mode;
    /* static schedule: entries (call << EVT_QCALL_SHIFT | linear index in the schedule's grid) */
    const int64_t *q_off;        /* [nworkers+1] */
    const uint32_t *q;
    const int64_t *qext;         /* [ncalls*4] extents the queue was built for */
    const evt_task_rec *rec;     /* NULL, or [q_off[nworkers]]: the entries' task records */
    const evt_task_rec *trec;    /* NULL, or [ntasks]: every task's record by global id (dynamic workers) */
    const int32_t *ids;          /* NULL: the generated call id rows (evt_call_ids); else a copy of them */
    int32_t tables_in_smem;      /* GPU: the persistent kernel copies tensors, ext and the id rows into */
    uint32_t tables_off;         /*   dynamic shared memory at this byte offset and points the fields above at them */
    /* dynamic schedule */
    const int64_t *cons_off;     /* [ncounters+1] */
    const int32_t *cons;         /* consumer task ids (affine waits), | EVT_CONS_SOLE for a task's only wait */
    const int32_t *pend_target;  /* [ntasks] */
    const int32_t *seeds; int64_t nseeds;
    evt_ring *ring;
    int32_t nstatic;             /* hybrid: workers [0, nstatic) run the static queues */

    /* control */
    int32_t *abort_flag;
    evt_error *err;
    uint64_t timeout_ns;
    uint64_t *trace;             /* NULL or [ntasks * EVT_TRACE_STAMPS] ns */
    int32_t *trace_worker;       /* NULL or [ntasks] */
    uint32_t chaos;              /* 0 off; else seed for random delays */
    uint32_t chaos_max_ns;
    void *const *tile_fns;       /* CPU target: C tile functions by op index */
    int32_t early_push;          /* dynamic: push consumers when producers are dispatched */
    int32_t pop_batch;           /* dynamic: tickets taken per fetch-add (>= 1) */
    uint32_t stream_ring_off;    /* GPU, weight stream: the ring's byte offset in dynamic shared memory */
    uint32_t stream_ring_bytes;  /*   and its size; 0: no task streams in this launch (evt_stream.h) */
    const evt_stream_job *sjob;  /* NULL, or the static workers' stream jobs, worker by worker */
    const int64_t *sjob_off;     /*   [static workers + 1]: worker w's are [sjob_off[w], sjob_off[w + 1]) */
    const void *tmaps;           /* GPU: NULL, or the launch's TMA tensor maps, EVT_TMA_BOXES (48) per tensor
                                    with a map (evt_tensor_ref.tmap), 128 bytes each (src/runtime/tmaps.c) */
    uint32_t tma_ring_off;       /* GPU: the TMA tiles' ring in dynamic shared memory (src/tiles/llm_tma.cuh): */
    uint32_t tma_ring_bytes;     /*   its byte offset and size; 0: none */
} evt_ctx;

#endif
