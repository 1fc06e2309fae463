/* cuda_tensors.c — the device copies of a module's tensors on the GPU
 * backend: the buffers they live in, the weights one module reads from
 * another's copies (evt_module_share_weights), and the public calls that
 * free them (evt_module_release_tensors) or hand one over from module to
 * module on the device (evt_module_copy_tensor). The launches that upload
 * and download them are cuda.c's. */
#include <stdlib.h>
#include <string.h>
#include "runtime/cuda_rt.h"

void evt_cuda_buf_free(dev_buf *b)
{
    if (b->p) evt_cuda_g.cu.MemFree(b->p);
    b->p = 0;
    b->cap = 0;
}

evt_status evt_cuda_buf_ensure(dev_buf *b, size_t n, int *grown, evt_diag *d)
{
    if (grown) *grown = 0;
    if (n == 0) n = 16;
    if (b->cap >= n) return EVT_OK;
    evt_cuda_buf_free(b);
    size_t cap = n < 256 ? 256 : n + n / 4;
    CUresult r = evt_cuda_g.cu.MemAlloc(&b->p, cap);
    if (r) {
        b->p = 0;
        return evt_diag_error(d, EVT_ERR_NOMEM, (evt_loc){0, 0}, "cuMemAlloc(%zu bytes): %s", cap, evt_cu_name(r));
    }
    b->cap = cap;
    if (grown) *grown = 1;
    return EVT_OK;
}

evt_status evt_cuda_ensure_tens(cuda_rt *rt, int n)
{
    if (rt->ntens >= n) return EVT_OK;
    dev_buf *t = realloc(rt->tens, n * sizeof *t);
    if (!t) return EVT_ERR_NOMEM;
    memset(t + rt->ntens, 0, (n - rt->ntens) * sizeof *t);
    rt->tens = t;
    uint64_t *src = realloc(rt->tens_src, n * sizeof *src);
    if (!src) return EVT_ERR_NOMEM;
    memset(src + rt->ntens, 0, (n - rt->ntens) * sizeof *src);
    rt->tens_src = src;
    uint64_t *dev = realloc(rt->tens_dev, n * sizeof *dev);
    if (!dev) return EVT_ERR_NOMEM;
    memset(dev + rt->ntens, 0, (n - rt->ntens) * sizeof *dev);
    rt->tens_dev = dev;
    rt->ntens = n;
    return EVT_OK;
}

/* The device copy of tensor i (a weight, bytes long) that the module m reads
   from (evt_module_share_weights: the same name and dtype, resolved then),
   or 0: that module holds none uploaded by one of its launches, of at least
   as many bytes. */
CUdeviceptr evt_cuda_lent_weight(const evt_module *m, int i, size_t bytes)
{
    const int j = m->weights_from_ids ? m->weights_from_ids[i] : -1;
    const cuda_rt *frt = j >= 0 ? m->weights_from->rt : NULL;
    if (!frt || j >= frt->ntens) return 0;
    return frt->tens_src[j] && frt->tens[j].cap >= bytes ? frt->tens[j].p : 0;
}

/* ---- public (include/evt/runtime.h) ---------------------------------- */

void evt_module_release_tensors(evt_module *m, int keep_weights)
{
    cuda_rt *rt = m->backend == EVT_BACKEND_CUDA ? m->rt : NULL;
    if (!rt || !evt_cuda_g.ok) return;
    evt_cuda_g.cu.CtxSetCurrent(evt_cuda_g.ctx);
    const evt_graph *g = evt_module_graph(m);
    for (int i = 0; i < rt->ntens && i < g->ntensors; i++) {
        if (keep_weights && g->tensors[i]->role == EVT_WEIGHT) continue;
        evt_cuda_buf_free(&rt->tens[i]);
        rt->tens_src[i] = rt->tens_dev[i] = 0;
    }
    free(rt->last_tref); /* its pointers are gone: the next launch uploads the table again */
    rt->last_tref = NULL;
    rt->ntref = 0;
}


evt_status evt_module_copy_tensor(evt_module *dst, evt_buffers *dst_bufs, int dst_id, evt_module *src, evt_buffers *src_bufs,
                                  int src_id, evt_diag *d)
{
    const evt_graph *dg = evt_module_graph(dst), *sg = evt_module_graph(src);
    if (dst_id < 0 || dst_id >= dg->ntensors || src_id < 0 || src_id >= sg->ntensors)
        return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "copy tensor: no tensor %d in the destination or %d in the source",
                              dst_id, src_id);
    const evt_tensor *dt = dg->tensors[dst_id], *stn = sg->tensors[src_id];
    size_t n = 0, m = 0;
    void *host = evt_buffers_data(dst_bufs, dst_id, &n);
    const void *from = evt_buffers_data(src_bufs, src_id, &m);
    if (dt->dtype != stn->dtype || m < n)
        return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0},
                              "copy tensor: %s (%zu bytes) cannot take the first bytes of %s (%zu bytes): %s", dt->name, n,
                              stn->name, m, dt->dtype != stn->dtype ? "another dtype" : "too few");
    /* a weight dst reads from another module's device copy would not see it */
    if (dst->backend == EVT_BACKEND_CUDA && dt->role == EVT_WEIGHT && evt_cuda_lent_weight(dst, dst_id, n))
        return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0},
                              "copy tensor: %s is read from another module's device copy (evt_module_share_weights)", dt->name);
    /* where src's device copy is as new as its host copy or newer, and both
       modules run on the GPU: device to device, dst's host copy then older */
    cuda_rt *srt = src->backend == EVT_BACKEND_CUDA ? src->rt : NULL;
    const uint64_t suid = evt_buffers_uid(src_bufs), duid = evt_buffers_uid(dst_bufs);
    const int on_device = srt && dst->backend == EVT_BACKEND_CUDA && evt_cuda_g.ok && src_id < srt->ntens &&
                          srt->tens_src[src_id] == suid && srt->tens[src_id].cap >= m;
    if (!on_device) {
        /* a newer device copy that cannot be read here would be lost */
        if (srt && src_id < srt->ntens && srt->tens_dev[src_id] == suid)
            return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "copy tensor: %s is newer on the GPU than its host copy", stn->name);
        if (n) memcpy(host, from, n);
        return EVT_OK;
    }
    evt_cuda_g.cu.CtxSetCurrent(evt_cuda_g.ctx);
    if (!dst->rt && !(dst->rt = calloc(1, sizeof(cuda_rt)))) return EVT_ERR_NOMEM;
    cuda_rt *drt = dst->rt;
    evt_status st = evt_cuda_ensure_tens(drt, dg->ntensors);
    if (!st) st = evt_cuda_buf_ensure(&drt->tens[dst_id], n, NULL, d);
    if (st) return st;
    drt->tens_src[dst_id] = drt->tens_dev[dst_id] = 0;
    if (n) CK(evt_cuda_g.cu.MemcpyDtoD(drt->tens[dst_id].p, srt->tens[src_id].p, n));
    drt->tens_src[dst_id] = drt->tens_dev[dst_id] = duid;
    return EVT_OK;
}
