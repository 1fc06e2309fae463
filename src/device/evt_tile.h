/* evt_tile.h — what a CUDA tile operator may assume about its block.
 *
 * A tile runs on every thread of the worker block; thread 0 is the worker's
 * leader. Tiles count their threads with evt_tile_threads() and synchronise
 * with evt_tile_sync(): the plain block (its size, __syncthreads()), or,
 * with the dispatch warpgroup (EVT_DISPATCH_WG, src/device/evt_dispatch_wg.h),
 * the block's first EVT_BLOCK_THREADS threads and a barrier of that count;
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

/* The block's threads. The runtime compiles every generated kernel with
   -DEVT_BLOCK_THREADS, the block size all its launches use (persistent,
   kernel by kernel, graph: src/runtime/cuda.c), so a kernel built with
   -DEVT_TILE_THREADS_CONST may take it as a constant: the tiles' loops over
   warps unroll and their strides and divisions by it fold. evtc decode's
   batch-1-16 kernel does (H200, bench/RESULTS.md session 60: qwen3-0.6b
   batch 1 -1.4% per token, qwen3-8b -0.9%); its batch-17-64 kernel does
   not (qwen3-8b batch 64 +0.7% with it). Code built without EVT_BLOCK_THREADS
   (bench/tiles/tilebench.cu) reads blockDim either way. */
/* EVT_DISPATCH_WG (a cuda_defines option, src/device/evt_dispatch_wg.h): the
   persistent kernel's block has a third warpgroup past the tiles' threads
   (EVT_BLOCK_THREADS of them), so the tiles count EVT_BLOCK_THREADS and
   synchronise with barriers of that count, never the whole block. */
#ifndef EVT_DISPATCH_WG
#define EVT_DISPATCH_WG 0
#endif
#if EVT_DISPATCH_WG && !defined(EVT_BLOCK_THREADS)
#error "EVT_DISPATCH_WG needs EVT_BLOCK_THREADS (the runtime defines it)"
#endif
#if EVT_DISPATCH_WG
static_assert(EVT_BLOCK_THREADS == 256, "EVT_DISPATCH_WG: the register split assumes tiles of 256 threads (two warpgroups)");
#endif
#if (defined(EVT_TILE_THREADS_CONST) || EVT_DISPATCH_WG) && defined(EVT_BLOCK_THREADS)
__device__ __forceinline__ int evt_tile_threads(void) { return EVT_BLOCK_THREADS; }
#else
__device__ __forceinline__ int evt_tile_threads(void) { return (int)blockDim.x; }
#endif

#if EVT_DISPATCH_WG
__device__ __forceinline__ void evt_tile_sync(void) { asm volatile("barrier.sync.aligned 0, %0;" ::"n"(EVT_BLOCK_THREADS) : "memory"); }
__device__ __forceinline__ void evt_tile_sync_any(void) { asm volatile("barrier.sync 0, %0;" ::"n"(EVT_BLOCK_THREADS) : "memory"); }
#else
__device__ __forceinline__ void evt_tile_sync(void) { __syncthreads(); }

/* The same barrier for threads that reach it from different places in the
 * code (evt_tile_wait: inside a GEMV unit in some warps, after it in
 * others): the non-aligned form, which PTX allows there. */
__device__ __forceinline__ void evt_tile_sync_any(void) { asm volatile("barrier.sync 0;" ::: "memory"); }
#endif

#endif
#endif
