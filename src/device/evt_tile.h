/* evt_tile.h — what a CUDA tile operator may assume about its block.
 *
 * A tile runs on every thread of the worker block; thread 0 is the worker's
 * leader. Tiles count their threads with evt_tile_threads() and synchronise
 * with evt_tile_sync(): today the plain block (blockDim.x, __syncthreads()),
 * kept as functions so that a tile never hard-codes which threads are its
 * own (an earlier weight stream took the block's last warp as a producer;
 * the stream is now run by the leader between tasks, src/device/evt_stream.h).
 */
#ifndef EVT_TILE_H
#define EVT_TILE_H
#ifdef __CUDACC__

#ifndef EVT_STREAM
#define EVT_STREAM 0 /* generated code defines it: 1 when a call streams its weights */
#endif

__device__ __forceinline__ int evt_tile_threads(void) { return (int)blockDim.x; }

__device__ __forceinline__ void evt_tile_sync(void) { __syncthreads(); }

/* The same barrier for threads that reach it from different places in the
 * code (evt_tile_wait: inside a GEMV unit in some warps, after it in
 * others): the non-aligned form, which PTX allows there. */
__device__ __forceinline__ void evt_tile_sync_any(void) { asm volatile("barrier.sync 0;" ::: "memory"); }

#endif
#endif
