/* evt_tile.h — what a CUDA tile operator may assume about its block.
 *
 * A tile runs on the worker block's compute threads. With the weight stream
 * (EVT_STREAM, src/device/evt_stream.h) the block's last warp is the
 * stream's producer, which never enters a tile: tiles therefore count their
 * threads with evt_tile_threads() and synchronise with evt_tile_sync() (a
 * named barrier over the compute threads), never with blockDim.x or
 * __syncthreads(), which would count, or wait for, the producer. Without the
 * stream both are the plain block. Threads 0 .. evt_tile_threads() - 1 are
 * the compute threads; thread 0 is the worker's leader.
 */
#ifndef EVT_TILE_H
#define EVT_TILE_H
#ifdef __CUDACC__

#ifndef EVT_STREAM
#define EVT_STREAM 0 /* generated code defines it: 1 when a call streams its weights */
#endif
#if EVT_STREAM
#define EVT_STREAM_THREADS 32 /* the producer warp: the block's last of EVT_BLOCK_THREADS */
#else
#define EVT_STREAM_THREADS 0
#endif

__device__ __forceinline__ int evt_tile_threads(void) { return (int)blockDim.x - EVT_STREAM_THREADS; }

__device__ __forceinline__ void evt_tile_sync(void)
{
#if EVT_STREAM
    asm volatile("bar.sync 1, %0;" ::"r"(evt_tile_threads()) : "memory");
#else
    __syncthreads();
#endif
}

#endif
#endif
