/* cuda_smem.h — where a CUDA launch's shared-memory rings go (cuda_smem.c). */
#ifndef EVT_RUNTIME_CUDA_SMEM_H
#define EVT_RUNTIME_CUDA_SMEM_H
#include "runtime/module.h"

/* $name (EVT_STREAM_RING, EVT_TMA_RING): a ring's cap in bytes, a decimal
 * count from 0 to EVT_CUDA_RING_ENV_MAX. 0 when unset or empty (*cap
 * untouched), 1 when it sets *cap, -1 when it is not such a count: the
 * launch then fails with a message (cuda.c, which reads both once a launch and
 * passes the caps below), never silently without a ring. */
#define EVT_CUDA_RING_ENV_MAX (1L << 30)
#define EVT_CUDA_STREAM_RING_CAP (192 * 1024) /* the stream ring's cap without $EVT_STREAM_RING */
int evt_cuda_ring_env(const char *name, long *cap);

/* The weight stream's ring (evt_stream.h) for a persistent launch of
 * nworkers blocks: static and hybrid schedules of a module with streaming
 * calls. After the tiles' dynamic shared memory and the launch tables
 * (128-byte aligned, at *off), what is left of a block's share of the SM, at
 * most cap bytes ($EVT_STREAM_RING, else EVT_CUDA_STREAM_RING_CAP; 0: no
 * ring). Its size; 0: none (also under 8 KiB: too few rows to pay for the
 * pump). */
unsigned evt_cuda_stream_ring(const evt_variant *v, evt_sched_kind sched, int nworkers, long cap, unsigned *off);

/* The tiles' TMA ring (src/tiles/llm_tma.cuh) for a launch of the schedule
 * (persistent: nworkers blocks; kernel by kernel: one block per SM): at the
 * same place (1024-byte aligned, at
 * *off), what is left of a block's share, at most the tiles' request
 * (evt_variant.tma_ring_want) and the run's cap (evt_run_opts.tma_ring, or
 * $EVT_TMA_RING bytes when set). Its size; 0: none (no request or cap, no
 * TMA in the driver, before sm_90, or under 64 KiB: two stages of the
 * largest GEMV tile). */
unsigned evt_cuda_tma_ring(const evt_variant *v, long cap, evt_sched_kind sched, int nworkers, unsigned *off);

#endif
