/* cuda_smem.c — the dynamic shared memory of a CUDA launch past the tiles'
 * own and the launch tables: the weight stream's ring (static and hybrid
 * launches of a streaming module) or the TMA tiles' ring (runs that allow
 * one), sized from a block's share of the SM. cuda.c places them; the
 * kernels find them through evt_ctx (stream_ring_*, tma_ring_*).
 */
#include <errno.h>
#include <stdlib.h>
#include "runtime/cuda_driver.h"
#include "runtime/cuda_smem.h"

/* What a block may have of the SM's shared memory with blocks_per_sm of them
   resident: the SM's share less the per-block reservation, at most the
   opt-in limit. */
static long block_share(int blocks_per_sm)
{
    if (blocks_per_sm < 1) blocks_per_sm = 1;
    long block = evt_cuda_g.smem_per_sm / blocks_per_sm - evt_cuda_g.smem_reserved;
    return block > evt_cuda_g.smem_optin ? evt_cuda_g.smem_optin : block;
}

int evt_cuda_ring_env(const char *name, long *cap)
{
    const char *env = getenv(name);
    if (!env || !*env) return 0;
    char *end;
    errno = 0;
    long v = strtol(env, &end, 10);
    if (*end || errno || v < 0 || v > EVT_CUDA_RING_ENV_MAX) return -1;
    *cap = v;
    return 1;
}

unsigned evt_cuda_stream_ring(const evt_variant *v, evt_sched_kind sched, int nworkers, long cap, unsigned *off)
{
    *off = (v->dyn_smem + v->table_smem + 127) & ~127u;
    if (!v->stream_calls || (sched != EVT_SCHED_STATIC && sched != EVT_SCHED_HYBRID) || nworkers < 1) return 0;
    long ring = block_share((nworkers + evt_cuda_g.sms - 1) / evt_cuda_g.sms) - (long)v->static_smem - (long)*off;
    if (ring > cap) ring = cap;
    ring &= ~127L;
    return ring >= 8192 ? (unsigned)ring : 0;
}

unsigned evt_cuda_tma_ring(const evt_variant *v, long cap, evt_sched_kind sched, int nworkers, unsigned *off)
{
    *off = (v->dyn_smem + v->table_smem + 1023) & ~1023u;
    if (!v->tma_ring_want || !evt_cuda_g.cu.TensorMapEncodeTiled || evt_cuda_g.cc_major < 9) return 0;
    if (cap <= 0) return 0;
    if (cap > (long)v->tma_ring_want) cap = v->tma_ring_want;
    /* kernel by kernel (and its graph): blocks of their own, one per SM at
       the tiles' register use */
    int persistent = sched != EVT_SCHED_KBK && sched != EVT_SCHED_GRAPH;
    long ring = block_share(persistent ? (nworkers + evt_cuda_g.sms - 1) / evt_cuda_g.sms : 1) - (long)v->static_smem - (long)*off;
    if (ring > cap) ring = cap;
    ring &= ~1023L;
    return ring >= 64 * 1024 ? (unsigned)ring : 0;
}
