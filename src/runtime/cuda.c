/* cuda.c — the GPU backend: builds the generated CUDA into a cubin with nvcc
 * (sm_90a), loads it through the CUDA driver API, and runs one cooperative
 * launch of the persistent megakernel (one block per worker), or the
 * kernel-by-kernel / CUDA-graph baselines of the same tiles.
 *
 * The driver is opened at run time (cuda_driver.c): the library links and
 * runs on machines without a GPU, where every launch returns
 * EVT_ERR_NO_DEVICE. Building (cuda_build.c) needs only nvcc;
 * loading a module on a machine without a driver is deferred (the cubin is
 * kept) so artifacts can be built and saved there.
 *
 * Device memory, all owned by the module's runtime state (m->rt):
 *   state    int32 per-launch counters etc. Zeroed ONCE when allocated; the
 *            kernel zeroes what it used at the end of a successful launch,
 *            the host only after an aborted launch.
 *   ring     the MPMC ready queue (header + slots, seq[i] = i at allocation);
 *            persistent across launches (positions only grow).
 *   ctrl     abort flag + error record (zero unless a launch failed).
 *   tensors  one allocation per tensor, grown on demand (cuda_tensors.c).
 *   ctx      the evt_ctx the kernel reads (re-uploaded only when it changes).
 *   tmaps    the TMA tensor maps of the tensors (tmaps.c), re-encoded for a
 *            tensor whose address or shape changed, uploaded when changed.
 * Per bind entry (be->dev): one blob with every bound array (targets, queues,
 * consumer lists...), uploaded once when the shape is first launched.
 */
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "runtime/module.h"
#include "runtime/cuda_build.h"
#include "runtime/cuda_driver.h"
#include "runtime/tmaps.h"
#include "runtime/cuda_smem.h"
#include "runtime/cuda_rt.h"

static int64_t g_captures; /* CUDA graphs captured (the graph baseline) */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- load ------------------------------------------------------------ */

/* The module's exported unsigned `name` into *out (0 when it has none). */
static CUresult module_u32(CUmodule mod, const char *name, unsigned *out)
{
    CUdeviceptr gp;
    size_t gsz = 0;
    *out = 0;
    if (evt_cuda_g.cu.ModuleGetGlobal(&gp, &gsz, mod, name) || gsz != sizeof *out) return CUDA_SUCCESS;
    return evt_cuda_g.cu.MemcpyDtoH(out, gp, sizeof *out);
}

/* Loads the cubin. Without a driver the load is deferred to the first launch
 * (which then reports EVT_ERR_NO_DEVICE), so modules can be built and saved
 * on machines without a GPU. */
static evt_status cuda_load_now(evt_variant *v, evt_diag *d)
{
    evt_status st = evt_cuda_driver(d);
    if (st) return st;
    CUmodule mod;
    CUfunction fn;
    CK(evt_cuda_g.cu.ModuleLoadData(&mod, v->code));
    CUresult r = evt_cuda_g.cu.ModuleGetFunction(&fn, mod, "evt_kernel");
    if (r) {
        evt_cuda_g.cu.ModuleUnload(mod);
        return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cubin has no evt_kernel (%s): rebuild it", evt_cu_name(r));
    }
    CUfunction call_fn;
    if ((r = evt_cuda_g.cu.ModuleGetFunction(&call_fn, mod, "evt_call_kernel"))) {
        evt_cuda_g.cu.ModuleUnload(mod);
        return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cubin has no evt_call_kernel (%s): rebuild it", evt_cu_name(r));
    }
    /* what the generated code exports (evt_emit_cuda; an absent one reads 0):
       the dynamic shared memory the tiles need, the calls that stream their
       weights, the launch tables' bytes, the TMA ring the tiles may fill,
       the threads a block has past the tiles' (src/device/evt_dispatch_wg.h) */
    unsigned dyn = 0, streams = 0, tables = 0, tma = 0, extra = 0;
    const char *names[] = {"evt_dyn_smem_bytes", "evt_stream_calls", "evt_table_smem_bytes", "evt_tma_ring_want", "evt_extra_threads"};
    unsigned *vals[] = {&dyn, &streams, &tables, &tma, &extra};
    for (int k = 0; k < 5; k++)
        if ((r = module_u32(mod, names[k], vals[k]))) {
            evt_cuda_g.cu.ModuleUnload(mod);
            return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "CUDA error %s reading %s", evt_cu_name(r), names[k]);
        }
    if (dyn && ((r = evt_cuda_g.cu.FuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)dyn)) ||
                (r = evt_cuda_g.cu.FuncSetAttribute(call_fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)dyn)))) {
        evt_cuda_g.cu.ModuleUnload(mod);
        return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0},
                              "the kernel needs %u bytes of dynamic shared memory per block, more than %s allows (%s): "
                              "lower the tiles' need (EVT_TILES_DYN_SMEM, an operator's smem_bytes)", dyn, evt_cuda_g.name, evt_cu_name(r));
    }
    int static_smem = 0;
    if ((r = evt_cuda_g.cu.FuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn))) {
        evt_cuda_g.cu.ModuleUnload(mod);
        return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "CUDA error %s reading the kernel's static shared memory", evt_cu_name(r));
    }
    /* the persistent kernel's copy of the launch tables (tensor references,
       grid extents, call id rows), after the tiles' (the rings follow them,
       cuda_smem.c): read by every task's dispatch, so shared memory beats a
       chain of L2 round trips; when the device cannot give that much, they
       stay in global */
    if (tables && evt_cuda_g.cu.FuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)(dyn + tables)))
        tables = 0;
    v->handle = mod;
    v->entry = fn;
    v->call_entry = call_fn;
    v->dyn_smem = dyn;
    v->stream_calls = streams;
    v->static_smem = (unsigned)static_smem;
    v->table_smem = tables;
    v->dyn_attr = dyn + tables;
    v->call_attr = dyn;
    v->tma_ring_want = tma;
    v->extra_threads = extra;
    return EVT_OK;
}

static evt_status cuda_load(evt_module *m, evt_variant *v, evt_diag *d)
{
    (void)m;
    if (!evt_cuda_available()) return EVT_OK; /* deferred: see above */
    return cuda_load_now(v, d);
}

static void cuda_unload(evt_module *m, evt_variant *v)
{
    (void)m;
    if (v->handle && evt_cuda_g.ok) {
        evt_cuda_g.cu.CtxSetCurrent(evt_cuda_g.ctx);
        evt_cuda_g.cu.ModuleUnload((CUmodule)v->handle);
    }
    v->handle = NULL;
    v->entry = NULL;
    v->call_entry = NULL;
}

/* ---- runtime state ---------------------------------------------------- */

typedef struct cuda_bound {
    CUdeviceptr blob;
    evt_ctx tmpl;          /* bound fields with device pointers */
    unsigned launch_smem;  /* the persistent launch's dynamic shared memory (tiles, tables, weight-stream or TMA ring) */
    unsigned call_smem;    /* a kernel-by-kernel launch's (tiles, TMA ring) */
    CUgraphExec graph;     /* graph schedule: the launches of every call, captured */
    CUdeviceptr graph_ctx; /* the ctx pointer baked into them */
    CUfunction graph_fn;
} cuda_bound;

static evt_status ring_reset(cuda_rt *rt, evt_diag *d)
{
    evt_ring h;
    memset(&h, 0, sizeof h);
    h.mask = rt->ring_cap - 1;
    h.slots = (evt_ring_slot *)(uintptr_t)rt->ring_slots.p;
    evt_ring_slot *s = malloc(rt->ring_cap * sizeof *s);
    if (!s) return EVT_ERR_NOMEM;
    evt_ring_slots_init(s, rt->ring_cap);
    CUresult r = evt_cuda_g.cu.MemcpyHtoD(rt->ring_slots.p, s, rt->ring_cap * sizeof *s);
    free(s);
    if (r) return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "CUDA error %s uploading the ring", evt_cu_name(r));
    CK(evt_cuda_g.cu.MemcpyHtoD(rt->ring_hdr.p, &h, sizeof h));
    return EVT_OK;
}

/* Full reset after an aborted launch: state, ring, control block, and the
   scratch tensors initialised with zeros (the tiles' own counters). */
static evt_status reset_after_abort(cuda_rt *rt, const evt_graph *g, evt_diag *d)
{
    CK(evt_cuda_g.cu.MemsetD8(rt->state.p, 0, rt->state.cap));
    CK(evt_cuda_g.cu.MemsetD8(rt->ctrl.p, 0, rt->ctrl.cap));
    for (int i = 0; i < g->ntensors && i < rt->ntens; i++)
        if (evt_tensor_rezeroed_after_abort(g->tensors[i]) && rt->tens[i].p) CK(evt_cuda_g.cu.MemsetD8(rt->tens[i].p, 0, rt->tens[i].cap));
    return ring_reset(rt, d);
}

static evt_status ensure_rt(evt_module *m, const evt_graph *g, const evt_bound *b, evt_diag *d)
{
    if (!m->rt) m->rt = calloc(1, sizeof(cuda_rt));
    cuda_rt *rt = m->rt;
    if (!rt) return EVT_ERR_NOMEM;
    if (rt->broken) return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "GPU unusable after an earlier failure: %s", rt->broken_why);
    int grown;
    evt_status st = evt_cuda_buf_ensure(&rt->state, (size_t)(b->state_len + 1) * sizeof(int32_t), &grown, d);
    if (st) return st;
    if (grown) CK(evt_cuda_g.cu.MemsetD8(rt->state.p, 0, rt->state.cap)); /* the only zeroing, at allocation */
    int64_t cap = evt_ring_capacity(b);
    if (rt->ring_cap < cap) {
        if ((st = evt_cuda_buf_ensure(&rt->ring_hdr, sizeof(evt_ring), NULL, d))) return st;
        if ((st = evt_cuda_buf_ensure(&rt->ring_slots, cap * sizeof(evt_ring_slot), NULL, d))) return st;
        rt->ring_cap = cap;
        if ((st = ring_reset(rt, d))) return st;
    }
    if (!rt->ctrl.p) {
        if ((st = evt_cuda_buf_ensure(&rt->ctrl, sizeof(ctrl_block), NULL, d))) return st;
        CK(evt_cuda_g.cu.MemsetD8(rt->ctrl.p, 0, rt->ctrl.cap));
    }
    if ((st = evt_cuda_buf_ensure(&rt->ctx, sizeof(evt_ctx), &grown, d))) return st;
    if (grown) rt->ctx_valid = 0;
    if ((st = evt_cuda_ensure_tens(rt, g->ntensors))) return st;
    if ((st = evt_cuda_buf_ensure(&rt->tref, (g->ntensors + 1) * sizeof(evt_tensor_ref), &grown, d))) return st;
    if (grown) { free(rt->last_tref); rt->last_tref = NULL; rt->ntref = 0; }
    return EVT_OK;
}

/* Uploads the bound arrays once per bind entry; fills be->dev. */
static evt_status upload_bound(evt_bind_entry *be, const evt_graph *g, evt_diag *d)
{
    if (be->dev) return EVT_OK;
    const evt_bound *b = &be->b;
    evt_ctx h;
    memset(&h, 0, sizeof h);
    evt_bound_fill_ctx(b, &h);
    int64_t nc = b->s.ncounters, nt = b->s.ntasks, nq = b->q.nworkers; /* hybrid: fewer queues than workers */
    struct { const void *host; size_t bytes; const void **slot; } part[] = {
        {h.sym, g->nsyms * sizeof(int64_t), (const void **)&h.sym},
        {h.ext, g->ncalls * 4 * sizeof(int64_t), (const void **)&h.ext},
        {h.task_base, (g->ncalls + 1) * sizeof(int64_t), (const void **)&h.task_base},
        {h.ev_base, (g->nevents + 1) * sizeof(int64_t), (const void **)&h.ev_base},
        {h.ev_dim, g->nevents * 4 * sizeof(int64_t), (const void **)&h.ev_dim},
        {h.target, nc * sizeof(int32_t), (const void **)&h.target},
        {h.q_off, h.q_off ? (nq + 1) * sizeof(int64_t) : 0, (const void **)&h.q_off},
        {h.q, h.q && h.q_off ? (size_t)b->q.q_off[nq] * sizeof(uint32_t) : 0, (const void **)&h.q},
        {h.qext, h.qext ? g->ncalls * 4 * sizeof(int64_t) : 0, (const void **)&h.qext},
        {h.rec, h.rec && h.q_off ? (size_t)b->q.q_off[nq] * sizeof(evt_task_rec) : 0, (const void **)&h.rec},
        {h.trec, h.trec ? nt * sizeof(evt_task_rec) : 0, (const void **)&h.trec},
        {h.sjob_off, h.sjob_off ? (nq + 1) * sizeof(int64_t) : 0, (const void **)&h.sjob_off},
        {h.sjob, h.sjob && h.sjob_off ? (size_t)b->sjob_off[nq] * sizeof(evt_stream_job) : 0, (const void **)&h.sjob},
        {h.cons_off, h.cons_off ? (nc + 1) * sizeof(int64_t) : 0, (const void **)&h.cons_off},
        {h.cons, h.cons && h.cons_off ? (size_t)b->cons_off[nc] * sizeof(int32_t) : 0, (const void **)&h.cons},
        {h.pend_target, h.pend_target ? nt * sizeof(int32_t) : 0, (const void **)&h.pend_target},
        {h.seeds, h.seeds ? b->nseeds * sizeof(int32_t) : 0, (const void **)&h.seeds},
    };
    int np = (int)(sizeof part / sizeof part[0]);
    size_t total = 0, off[24];
    for (int i = 0; i < np; i++) { off[i] = total; total += (part[i].bytes + 15) / 16 * 16; }
    char *host = calloc(total + 16, 1);
    cuda_bound *cb = calloc(1, sizeof *cb);
    if (!host || !cb) { free(host); free(cb); return EVT_ERR_NOMEM; }
    for (int i = 0; i < np; i++)
        if (part[i].bytes && part[i].host) memcpy(host + off[i], part[i].host, part[i].bytes);
    CUresult r = evt_cuda_g.cu.MemAlloc(&cb->blob, total + 16);
    if (!r) r = evt_cuda_g.cu.MemcpyHtoD(cb->blob, host, total + 16);
    free(host);
    if (r) {
        if (cb->blob) evt_cuda_g.cu.MemFree(cb->blob);
        free(cb);
        return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "CUDA error %s uploading the bound shape", evt_cu_name(r));
    }
    for (int i = 0; i < np; i++)
        *part[i].slot = part[i].host ? (const void *)(uintptr_t)(cb->blob + off[i]) : NULL;
    cb->tmpl = h;
    be->dev = cb;
    return EVT_OK;
}

static void cuda_drop_bound(evt_module *m, evt_bind_entry *be)
{
    (void)m;
    cuda_bound *cb = be->dev;
    if (!cb) return;
    if (evt_cuda_g.ok) {
        evt_cuda_g.cu.CtxSetCurrent(evt_cuda_g.ctx);
        evt_cuda_g.cu.MemFree(cb->blob);
        if (cb->graph) evt_cuda_g.cu.GraphExecDestroy(cb->graph);
    }
    free(cb);
    be->dev = NULL;
}

/* Waits for the stream with a host-side bound. On overrun raises the abort
 * flag through the side stream and waits a little more. */
static evt_status wait_stream(cuda_rt *rt, double bound_s, evt_diag *d)
{
    double t0 = now_ms();
    int raised = 0;
    for (long spin = 0;; spin++) {
        CUresult r = evt_cuda_g.cu.StreamQuery(evt_cuda_g.stream);
        if (r == CUDA_SUCCESS) return EVT_OK;
        if (r != CUDA_ERROR_NOT_READY) {
            rt->broken = 1;
            snprintf(rt->broken_why, sizeof rt->broken_why, "kernel failed: %s (%s)", evt_cu_name(r), evt_cu_string(r));
            return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "%s", rt->broken_why);
        }
        double el = (now_ms() - t0) / 1e3;
        if (!raised && el > bound_s) {
            evt_cuda_g.cu.MemsetD32Async(rt->ctrl.p, 1, 1, evt_cuda_g.side); /* abort_flag = 1 */
            raised = 1;
        } else if (raised && el > bound_s + 5) {
            rt->broken = 1;
            snprintf(rt->broken_why, sizeof rt->broken_why, "device unresponsive: the kernel outlived its watchdog (%.1f s) by more than 5 s", bound_s - 5);
            return evt_diag_error(d, EVT_ERR_TIMEOUT, (evt_loc){0, 0}, "%s", rt->broken_why);
        }
        if (spin > 2000) {
            struct timespec ts = {0, spin > 20000 ? 200000 : 20000};
            nanosleep(&ts, NULL);
        }
    }
}

/* The launch's tensor maps (tmaps.c) for the tensor references tr (tr[i].tmap
 * set), uploaded when any tensor's maps were re-encoded. *table: the device
 * table, 0 when no tensor has maps (or !want). */
static evt_status bind_tmaps(cuda_rt *rt, evt_tensor_ref *tr, int n, int want, CUdeviceptr *table, evt_diag *d)
{
    *table = 0;
    rt->tma_maps = 0;
    int any = 0, changed = evt_tmaps_bind(&rt->tmt, tr, n, want, &any);
    if (changed < 0) return EVT_ERR_NOMEM;
    if (!any) return EVT_OK;
    for (int i = 0; i < n; i++) rt->tma_maps += tr[i].tmap >= 0;
    const size_t bytes = (size_t)n * EVT_TMA_BOXES * EVT_TMA_MAP_BYTES;
    int grown = 0;
    evt_status st = evt_cuda_buf_ensure(&rt->tmaps, bytes, &grown, d);
    if (st) return st;
    if (changed || grown) {
        CUresult r = evt_cuda_g.cu.MemcpyHtoD(rt->tmaps.p, rt->tmt.host, bytes);
        if (r) return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "CUDA error %s uploading the TMA tensor maps", evt_cu_name(r));
    }
    *table = rt->tmaps.p;
    return EVT_OK;
}

/* Everything up to (not including) the launch: runtime buffers, bound data,
 * tensors uploaded, ctx uploaded. Returns the device ctx pointer in *dctx. */
static evt_status prepare(evt_module *m, evt_variant *v, evt_bind_entry *be, evt_buffers *bufs, const evt_run_opts *o,
                          int upload_tensors, CUdeviceptr *dctx, int *threads, evt_diag *d)
{
    evt_status st = evt_cuda_driver(d);
    if (st) return st;
    if (!v->handle && (st = cuda_load_now(v, d))) return st;
    const evt_graph *g = v->g;
    const evt_bound *b = &be->b;
    if ((st = ensure_rt(m, g, b, d))) return st;
    cuda_rt *rt = m->rt;
    *threads = evt_cuda_block_threads(v->p) + (int)v->extra_threads;
    int per_sm = 0;
    CK(evt_cuda_g.cu.OccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, (CUfunction)v->entry, *threads, v->dyn_smem + v->table_smem));
    /* the request is what must fit (a static launch may start fewer workers) */
    if (b->sched != EVT_SCHED_KBK && b->sched != EVT_SCHED_GRAPH && (be->nworkers > per_sm * evt_cuda_g.sms || b->nworkers > per_sm * evt_cuda_g.sms))
        return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0},
                              "%d workers requested but at most %d blocks of %d threads can be co-resident on %s "
                              "(%d per SM x %d SMs); a persistent kernel needs every worker resident: use --workers <= %d",
                              be->nworkers, per_sm * evt_cuda_g.sms, *threads, evt_cuda_g.name, per_sm, evt_cuda_g.sms, per_sm * evt_cuda_g.sms);
    if ((st = upload_bound(be, g, d))) return st;
    /* tensors */
    evt_tensor_ref *tr = calloc(g->ntensors + 1, sizeof *tr);
    if (!tr) return EVT_ERR_NOMEM;
    for (int i = 0; i < g->ntensors; i++) {
        size_t bytes = 0;
        void *host = evt_buffers_data(bufs, i, &bytes);
        const CUdeviceptr lent = evt_cuda_lent_weight(m, i, bytes);
        int grown = 0;
        if (!lent && (st = evt_cuda_buf_ensure(&rt->tens[i], bytes, &grown, d))) { free(tr); return st; }
        if (grown) rt->tens_src[i] = rt->tens_dev[i] = 0; /* a new allocation holds nothing */
        /* what the device already holds for these buffers stays: a weight
           with keep_weights, every tensor but the inputs with resident, and
           any tensor a resident launch left newer than its host copy */
        const uint64_t uid = evt_buffers_uid(bufs);
        const evt_role role = g->tensors[i]->role;
        const int held = rt->tens_src[i] == uid;
        int resident = held && ((o->keep_weights && role == EVT_WEIGHT) || (o->resident && role != EVT_INPUT) ||
                                rt->tens_dev[i] == uid);
        if (upload_tensors && bytes && !resident && !lent) {
            rt->tens_src[i] = rt->tens_dev[i] = 0;
            CUresult r = evt_cuda_g.cu.MemcpyHtoD(rt->tens[i].p, host, bytes);
            if (r) { free(tr); return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "CUDA error %s uploading tensor %s", evt_cu_name(r), g->tensors[i]->name); }
            rt->tens_src[i] = uid;
        }
        tr[i].ptr = (void *)(uintptr_t)(lent ? lent : rt->tens[i].p);
        const int64_t *dims = evt_buffers_dims(bufs, i);
        for (int k = 0; k < EVT_ABI_MAX_RANK; k++) tr[i].dim[k] = dims[k];
        tr[i].rank = (int16_t)g->tensors[i]->rank;
        tr[i].dtype = (int16_t)g->tensors[i]->dtype;
    }
    /* the shared-memory rings (cuda_smem.c): the weight stream's, or the TMA
       tiles' and the tensor maps; their caps (the environment's over the
       defaults) must parse */
    static const char *ring_env[2] = {"EVT_STREAM_RING", "EVT_TMA_RING"};
    long ring_cap[2] = {EVT_CUDA_STREAM_RING_CAP, o->tma_ring};
    for (int k = 0; k < 2; k++)
        if (evt_cuda_ring_env(ring_env[k], &ring_cap[k]) < 0) {
            free(tr);
            return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "%s=%s: expected a byte count from 0 to %ld", ring_env[k],
                                  getenv(ring_env[k]), EVT_CUDA_RING_ENV_MAX);
        }
    unsigned ring_off = 0, ring = evt_cuda_stream_ring(v, b->sched, b->nworkers, ring_cap[0], &ring_off), tma_off = 0;
    unsigned tma = ring ? 0 : evt_cuda_tma_ring(v, ring_cap[1], b->sched, b->nworkers, &tma_off);
    CUdeviceptr tmap_table = 0;
    if ((st = bind_tmaps(rt, tr, g->ntensors, tma > 0, &tmap_table, d))) { free(tr); return st; }
    if (!tmap_table) tma = 0;
    if (!rt->last_tref || rt->ntref != g->ntensors || memcmp(rt->last_tref, tr, g->ntensors * sizeof *tr)) {
        CUresult r = evt_cuda_g.cu.MemcpyHtoD(rt->tref.p, tr, g->ntensors * sizeof *tr);
        if (r) { free(tr); return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "CUDA error %s uploading tensor table", evt_cu_name(r)); }
        free(rt->last_tref);
        rt->last_tref = tr;
        rt->ntref = g->ntensors;
    } else {
        free(tr);
    }
    /* ctx */
    cuda_bound *cb = be->dev;
    evt_ctx C = cb->tmpl;
    int64_t nt = b->s.ntasks;
    C.tensors = (evt_tensor_ref *)(uintptr_t)rt->tref.p;
    evt_ctx_place_state(&C, (int32_t *)(uintptr_t)rt->state.p, b);
    C.ring = (evt_ring *)(uintptr_t)rt->ring_hdr.p;
    C.abort_flag = (int32_t *)(uintptr_t)rt->ctrl.p;
    C.err = (evt_error *)(uintptr_t)(rt->ctrl.p + offsetof(ctrl_block, err));
    evt_ctx_apply_run_opts(&C, o);
    /* the persistent kernel copies the launch tables into shared memory
       (--no-records, the ablation: tables in global, no task records) */
    C.tables_in_smem = v->table_smem && !o->computed_dispatch;
    C.tables_off = v->dyn_smem;
    C.stream_ring_off = ring ? ring_off : 0;
    C.stream_ring_bytes = ring;
    C.tmaps = (const void *)(uintptr_t)tmap_table;
    C.tma_ring_off = tma ? tma_off : 0;
    C.tma_ring_bytes = tma;
    cb->launch_smem = ring ? ring_off + ring : tma ? tma_off + tma : v->dyn_smem + v->table_smem;
    if (cb->launch_smem > v->dyn_attr) {
        CK(evt_cuda_g.cu.FuncSetAttribute((CUfunction)v->entry, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)cb->launch_smem));
        v->dyn_attr = cb->launch_smem;
    }
    cb->call_smem = tma ? tma_off + tma : v->dyn_smem;
    if (cb->call_smem > v->call_attr) {
        CK(evt_cuda_g.cu.FuncSetAttribute((CUfunction)v->call_entry, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)cb->call_smem));
        v->call_attr = cb->call_smem;
    }
    C.trace = NULL;
    C.trace_worker = NULL;
    C.tile_fns = NULL;
    if (o->trace_path) {
        if ((st = evt_cuda_buf_ensure(&rt->trace, (nt + 1) * EVT_TRACE_STAMPS * sizeof(uint64_t), NULL, d))) return st;
        if ((st = evt_cuda_buf_ensure(&rt->trace_worker, (nt + 1) * sizeof(int32_t), NULL, d))) return st;
        CK(evt_cuda_g.cu.MemsetD8(rt->trace.p, 0, (nt + 1) * EVT_TRACE_STAMPS * sizeof(uint64_t)));
        CK(evt_cuda_g.cu.MemsetD8(rt->trace_worker.p, 0, (nt + 1) * sizeof(int32_t)));
        C.trace = (uint64_t *)(uintptr_t)rt->trace.p;
        C.trace_worker = (int32_t *)(uintptr_t)rt->trace_worker.p;
    }
    if (!rt->ctx_valid || memcmp(&rt->last_ctx, &C, sizeof C)) {
        CK(evt_cuda_g.cu.MemcpyHtoD(rt->ctx.p, &C, sizeof C));
        rt->last_ctx = C;
        rt->ctx_valid = 1;
    }
    *dctx = rt->ctx.p;
    return EVT_OK;
}

/* Kernel by kernel: one launch per call with tasks, a block per task. */
static evt_status launch_calls(evt_variant *v, const evt_bind_entry *be, CUdeviceptr *dctx, int threads, evt_diag *d)
{
    const evt_bound *b = &be->b;
    const unsigned smem = ((const cuda_bound *)be->dev)->call_smem;
    for (int c = 0; c < v->g->ncalls; c++) {
        int64_t n = b->s.task_base[c + 1] - b->s.task_base[c];
        if (n <= 0) continue;
        void *args[] = {dctx, &c};
        /* a block per task: no weight stream (nothing to overlap) */
        CK(evt_cuda_g.cu.LaunchKernel((CUfunction)v->call_entry, (unsigned)(n < (1 << 30) ? n : (1 << 30)), 1, 1, (unsigned)threads,
                             1, 1, smem, evt_cuda_g.stream, args, NULL));
    }
    return EVT_OK;
}

/* The graph schedule: the kernel-by-kernel launches, captured into a CUDA
 * graph the first time this bound shape runs, then replayed. */
static evt_status launch_graph(evt_variant *v, evt_bind_entry *be, CUdeviceptr *dctx, int threads, evt_diag *d)
{
    cuda_bound *cb = be->dev;
    if (cb->graph && (cb->graph_ctx != *dctx || cb->graph_fn != (CUfunction)v->call_entry)) {
        evt_cuda_g.cu.GraphExecDestroy(cb->graph);
        cb->graph = NULL;
    }
    if (!cb->graph) {
        CK(evt_cuda_g.cu.StreamBeginCapture(evt_cuda_g.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
        evt_status st = launch_calls(v, be, dctx, threads, d);
        CUgraph graph = NULL;
        CUresult r = evt_cuda_g.cu.StreamEndCapture(evt_cuda_g.stream, &graph);
        if (st) { if (graph) evt_cuda_g.cu.GraphDestroy(graph); return st; }
        if (r) return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "CUDA error %s ending the graph capture", evt_cu_name(r));
        r = evt_cuda_g.cu.GraphInstantiate(&cb->graph, graph, 0);
        evt_cuda_g.cu.GraphDestroy(graph);
        if (r) { cb->graph = NULL; return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "CUDA error %s instantiating the graph", evt_cu_name(r)); }
        cb->graph_ctx = *dctx;
        cb->graph_fn = (CUfunction)v->call_entry;
        __atomic_add_fetch(&g_captures, 1, __ATOMIC_RELAXED);
    }
    CK(evt_cuda_g.cu.GraphLaunch(cb->graph, evt_cuda_g.stream));
    return EVT_OK;
}

/* One launch of the bound shape in its schedule's form. */
static evt_status launch_once(evt_variant *v, evt_bind_entry *be, CUdeviceptr *dctx, int threads, evt_diag *d)
{
    const evt_bound *b = &be->b;
    if (b->sched == EVT_SCHED_KBK) return launch_calls(v, be, dctx, threads, d);
    if (b->sched == EVT_SCHED_GRAPH) return launch_graph(v, be, dctx, threads, d);
    void *args[] = {dctx};
    CK(evt_cuda_g.cu.LaunchCooperativeKernel((CUfunction)v->entry, (unsigned)b->nworkers, 1, 1, (unsigned)threads, 1, 1,
                                    ((cuda_bound *)be->dev)->launch_smem, evt_cuda_g.stream, args));
    return EVT_OK;
}

/* After the kernel(s) finished: reads the error record; on error describes it
 * (with the downloaded counters) and resets the state. */
static evt_status check_error(cuda_rt *rt, const evt_bound *b, const evt_graph *g, evt_diag *d)
{
    ctrl_block cb;
    CK(evt_cuda_g.cu.MemcpyDtoH(&cb, rt->ctrl.p, sizeof cb));
    if (!cb.abort_flag && !cb.err.kind) return EVT_OK;
    evt_status st;
    if (cb.err.kind) {
        int32_t *state = malloc((b->state_len + 1) * sizeof(int32_t));
        if (state && evt_cuda_g.cu.MemcpyDtoH(state, rt->state.p, b->state_len * sizeof(int32_t))) { free(state); state = NULL; }
        char msg[1024];
        evt_describe_error(b, &cb.err, state, msg, sizeof msg);
        free(state);
        st = evt_diag_error(d, cb.err.kind == EVT_KERR_WAIT_TIMEOUT || cb.err.kind == EVT_KERR_QUEUE_TIMEOUT ? EVT_ERR_TIMEOUT : EVT_ERR_RUNTIME,
                            (evt_loc){0, 0}, "%s", msg);
    } else {
        st = evt_diag_error(d, EVT_ERR_TIMEOUT, (evt_loc){0, 0}, "launch aborted by the host after the watchdog bound");
    }
    evt_status r = reset_after_abort(rt, g, d);
    return st ? st : r;
}

static evt_status cuda_launch(evt_module *m, evt_variant *v, evt_bind_entry *be, evt_buffers *bufs,
                              const evt_run_opts *o, evt_run_stats *stats, evt_diag *d)
{
    CUdeviceptr dctx;
    int threads;
    evt_status st = prepare(m, v, be, bufs, o, 1, &dctx, &threads, d);
    if (st) return st;
    cuda_rt *rt = m->rt;
    const evt_bound *b = &be->b;
    double timeout_s = o->timeout_s > 0 ? o->timeout_s : 10.0;
    double t0 = now_ms();
    if ((st = launch_once(v, be, &dctx, threads, d))) return st;
    st = wait_stream(rt, timeout_s + 5, d);
    stats->launch_ms = now_ms() - t0;
    stats->stream_ring_bytes = rt->last_ctx.stream_ring_bytes;
    stats->tma_ring_bytes = rt->last_ctx.tma_ring_bytes;
    stats->tma_maps = rt->last_ctx.tma_ring_bytes ? rt->tma_maps : 0;
    if (st) return st;
    const evt_graph *g = v->g;
    if ((st = check_error(rt, b, g, d))) return st;
    const uint64_t uid = evt_buffers_uid(bufs);
    for (int i = 0; i < g->ntensors; i++) {
        size_t bytes = 0;
        void *host = evt_buffers_data(bufs, i, &bytes);
        /* inputs and weights are never written (verify rejects it): their
           host copies are current (unless evt_module_copy_tensor left the
           device's newer), only the rest comes back; with resident only the
           outputs, the rest staying newer on the device */
        const evt_role role = g->tensors[i]->role;
        if ((role == EVT_INPUT || role == EVT_WEIGHT) && rt->tens_dev[i] != uid) continue;
        if (o->resident && role != EVT_OUTPUT) {
            rt->tens_dev[i] = uid;
            continue;
        }
        if (bytes) CK(evt_cuda_g.cu.MemcpyDtoH(host, rt->tens[i].p, bytes));
        rt->tens_dev[i] = 0;
    }
    if (o->trace_path) {
        int64_t nt = b->s.ntasks;
        uint64_t *ts = malloc((nt + 1) * EVT_TRACE_STAMPS * sizeof(uint64_t));
        int32_t *tw = malloc((nt + 1) * sizeof(int32_t));
        if (!ts || !tw) { free(ts); free(tw); return EVT_ERR_NOMEM; }
        CUresult r = evt_cuda_g.cu.MemcpyDtoH(ts, rt->trace.p, nt * EVT_TRACE_STAMPS * sizeof(uint64_t));
        if (!r) r = evt_cuda_g.cu.MemcpyDtoH(tw, rt->trace_worker.p, nt * sizeof(int32_t));
        if (r) st = evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "CUDA error %s downloading the trace", evt_cu_name(r));
        else st = evt_trace_write(o->trace_path, b, ts, tw, "cuda", d);
        free(ts); free(tw);
    }
    return st;
}

static int cuda_default_workers(evt_module *m, const evt_run_opts *o)
{
    (void)m;
    int per = o && o->workers_per_sm > 0 ? o->workers_per_sm : 1;
    return evt_cuda_available() ? evt_cuda_g.sms * per : 1;
}

static void cuda_release(evt_module *m)
{
    cuda_rt *rt = m->rt;
    if (!rt) return;
    if (evt_cuda_g.ok) {
        evt_cuda_g.cu.CtxSetCurrent(evt_cuda_g.ctx);
        evt_cuda_buf_free(&rt->state); evt_cuda_buf_free(&rt->ring_hdr); evt_cuda_buf_free(&rt->ring_slots); evt_cuda_buf_free(&rt->ctrl);
        evt_cuda_buf_free(&rt->ctx); evt_cuda_buf_free(&rt->tref); evt_cuda_buf_free(&rt->trace); evt_cuda_buf_free(&rt->trace_worker); evt_cuda_buf_free(&rt->tmaps);
        for (int i = 0; i < rt->ntens; i++) evt_cuda_buf_free(&rt->tens[i]);
    }
    free(rt->tens);
    free(rt->tens_src);
    free(rt->tens_dev);
    free(rt->last_tref);
    evt_tmaps_free(&rt->tmt);
    free(rt);
    m->rt = NULL;
}

const evt_backend_ops evt_cuda_backend = {
    .build = evt_cuda_build, .load = cuda_load, .launch = cuda_launch, .default_workers = cuda_default_workers,
    .unload = cuda_unload, .release = cuda_release, .drop_bound = cuda_drop_bound,
};

/* ---- public extras (include/evt/runtime.h) ---------------------------- */

int64_t evt_cuda_capture_count(void) { return __atomic_load_n(&g_captures, __ATOMIC_RELAXED); }


/* The bind entry the last evt_module_run used. */
static evt_bind_entry *last_entry(evt_module *m)
{
    for (int i = 0; i < EVT_BIND_CACHE; i++)
        if (m->cache[i].used && m->cache[i].last_use == m->tick) return &m->cache[i];
    return NULL;
}

evt_status evt_module_time(evt_module *m, const int64_t *sym, evt_buffers *b, const evt_run_opts *o, int iters,
                           double *ms_per_launch, evt_diag *d)
{
    static const evt_run_opts defaults;
    if (!o) o = &defaults;
    if (iters < 1) iters = 1;
    *ms_per_launch = 0;
    /* warm-up launch: binds, uploads, checks for errors */
    evt_run_opts oo = *o;
    oo.trace_path = NULL;
    evt_run_stats st0;
    evt_status st = evt_module_run(m, sym, b, &oo, &st0, d);
    if (st) return st;
    if (m->backend != EVT_BACKEND_CUDA) {
        double t0 = now_ms();
        for (int i = 0; i < iters && !st; i++) st = evt_module_run(m, sym, b, &oo, &st0, d);
        *ms_per_launch = (now_ms() - t0) / iters;
        return st;
    }
    evt_bind_entry *be = last_entry(m);
    if (!be) return evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "internal: no bound shape after a run");
    evt_variant *v = &m->var[be->variant];
    CUdeviceptr dctx;
    int threads;
    if ((st = prepare(m, v, be, b, &oo, 0, &dctx, &threads, d))) return st;
    cuda_rt *rt = m->rt;
    CUevent e0, e1;
    CK(evt_cuda_g.cu.EventCreate(&e0, CU_EVENT_DEFAULT));
    CUresult r = evt_cuda_g.cu.EventCreate(&e1, CU_EVENT_DEFAULT);
    if (r) { evt_cuda_g.cu.EventDestroy(e0); CK(r); }
    r = evt_cuda_g.cu.EventRecord(e0, evt_cuda_g.stream);
    for (int i = 0; i < iters && !st && !r; i++) st = launch_once(v, be, &dctx, threads, d);
    if (!r && !st) r = evt_cuda_g.cu.EventRecord(e1, evt_cuda_g.stream);
    double timeout_s = o->timeout_s > 0 ? o->timeout_s : 10.0;
    if (!r && !st) st = wait_stream(rt, timeout_s + 5 + iters * 0.01, d);
    float ms = 0;
    if (!r && !st) r = evt_cuda_g.cu.EventElapsedTime(&ms, e0, e1);
    evt_cuda_g.cu.EventDestroy(e0);
    evt_cuda_g.cu.EventDestroy(e1);
    if (st) return st;
    CK(r);
    if ((st = check_error(rt, &be->b, v->g, d))) return st;
    *ms_per_launch = ms / iters;
    return EVT_OK;
}
