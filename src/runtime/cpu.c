/* cpu.c — the CPU backend: builds the generated C into a shared object with
 * the system C compiler, loads it, and runs one launch on N worker threads
 * (N may exceed the cores: waits yield). Same protocol as the GPU: the
 * kernel zeroes its own state at the end; the host resets it only after an
 * aborted launch. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "runtime/module.h"

typedef void (*entry_fn)(const evt_ctx *C, int worker);

typedef struct cpu_rt {
    int32_t *state;
    int64_t state_cap;
    evt_ring ring;
    int64_t ring_cap;
} cpu_rt;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}


static evt_status make_tmpdir(evt_variant *v, evt_diag *d)
{
    if (v->tmpdir[0]) return EVT_OK;
    const char *base = getenv("TMPDIR");
    snprintf(v->tmpdir, sizeof v->tmpdir, "%s/evtc-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(v->tmpdir)) {
        v->tmpdir[0] = 0;
        return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot create a temporary directory");
    }
    return EVT_OK;
}

static evt_status cpu_build(evt_module *m, evt_variant *v, evt_diag *d)
{
    (void)m;
    evt_status st = make_tmpdir(v, d);
    if (st) return st;
    char src[300], so[300], log[300], cmd[2048];
    snprintf(src, sizeof src, "%s/kernel.c", v->tmpdir);
    snprintf(so, sizeof so, "%s/kernel.so", v->tmpdir);
    snprintf(log, sizeof log, "%s/cc.log", v->tmpdir);
    if ((st = evt_write_file(src, v->source, strlen(v->source), d))) return st;
    const char *cc = getenv("CC");
    const char *extra = getenv("EVT_CFLAGS");
    snprintf(cmd, sizeof cmd, "%s -std=c11 -O2 -fPIC -shared -D_GNU_SOURCE -I'%s' %s '%s' -o '%s' > '%s' 2>&1",
             cc && *cc ? cc : "cc", evt_src_dir(), extra ? extra : "", src, so, log);
    if (system(cmd) != 0) {
        char msg[1500] = "";
        FILE *f = fopen(log, "r");
        if (f) { size_t n = fread(msg, 1, sizeof msg - 1, f); msg[n] = 0; fclose(f); }
        return evt_diag_error(d, EVT_ERR_COMPILE, (evt_loc){0, 0}, "the C compiler failed on generated code (%s):\n%s", src, msg);
    }
    FILE *f = fopen(so, "rb");
    if (!f) return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot read %s", so);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    v->code = malloc(n > 0 ? n : 1);
    v->code_len = fread(v->code, 1, n > 0 ? n : 0, f);
    fclose(f);
    return EVT_OK;
}

static evt_status cpu_load(evt_module *m, evt_variant *v, evt_diag *d)
{
    (void)m;
    evt_status st = make_tmpdir(v, d);
    if (st) return st;
    char so[300];
    snprintf(so, sizeof so, "%s/loaded.so", v->tmpdir);
    if ((st = evt_write_file(so, v->code, v->code_len, d))) return st;
    v->handle = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (!v->handle) return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot load generated code: %s", dlerror());
    v->entry = dlsym(v->handle, "evt_worker_entry");
    v->call_entry = dlsym(v->handle, "evt_call_entry");
    int (*abi)(void) = (int (*)(void))dlsym(v->handle, "evt_abi_version");
    if (!v->entry || !v->call_entry || !abi || abi() != EVT_ABI_VERSION)
        return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "generated code has the wrong ABI: rebuild it");
    return EVT_OK;
}

static void cpu_unload(evt_module *m, evt_variant *v)
{
    (void)m;
    if (v->handle) dlclose(v->handle);
    v->handle = NULL;
    if (v->tmpdir[0]) {
        const char *files[] = {"kernel.c", "kernel.so", "cc.log", "loaded.so"};
        char p[320];
        for (int i = 0; i < 4; i++) { snprintf(p, sizeof p, "%s/%s", v->tmpdir, files[i]); unlink(p); }
        rmdir(v->tmpdir);
        v->tmpdir[0] = 0;
    }
}

static void ring_init(evt_ring *r, evt_ring_slot *slots, int64_t cap)
{
    r->enq = r->deq = 0;
    r->mask = cap - 1;
    r->slots = slots;
    evt_ring_slots_init(slots, cap);
}

static evt_status ensure_rt(evt_module *m, const evt_bound *b, evt_diag *d)
{
    if (!m->rt) m->rt = calloc(1, sizeof(cpu_rt));
    cpu_rt *rt = m->rt;
    if (!rt) return EVT_ERR_NOMEM;
    if (rt->state_cap < b->state_len) {
        free(rt->state);
        rt->state = calloc(b->state_len + 1, sizeof(int32_t)); /* fresh memory is zero */
        rt->state_cap = rt->state ? b->state_len : 0;
    }
    int64_t cap = evt_ring_capacity(b);
    if (rt->ring_cap < cap) {
        free(rt->ring.slots);
        evt_ring_slot *slots = malloc(cap * sizeof(evt_ring_slot));
        if (!slots) { rt->ring_cap = 0; rt->ring.slots = NULL; }
        else { ring_init(&rt->ring, slots, cap); rt->ring_cap = cap; }
    }
    if (!rt->state || !rt->ring.slots) return evt_diag_error(d, EVT_ERR_NOMEM, (evt_loc){0, 0}, "out of memory for launch state");
    return EVT_OK;
}

typedef void (*call_fn)(const evt_ctx *C, int worker, int call);
/* A megakernel worker (call < 0), or a worker's share of one call. */
typedef struct worker_arg { void *fn; const evt_ctx *C; int id, call; } worker_arg;
static void *worker_thread(void *p)
{
    worker_arg *a = p;
    if (a->call < 0) ((entry_fn)a->fn)(a->C, a->id);
    else ((call_fn)a->fn)(a->C, a->id, a->call);
    return NULL;
}

/* Runs nw threads on `fn` (one call, or the megakernel when call < 0) and
 * joins them. Returns how many started; if not all, the others are aborted. */
static int run_workers(void *fn, const evt_ctx *C, int call, int nw, pthread_t *th, worker_arg *args, int32_t *abort_flag)
{
    int started = 0;
    for (int w = 0; w < nw; w++) {
        args[w] = (worker_arg){fn, C, w, call};
        if (pthread_create(&th[w], NULL, worker_thread, &args[w])) break;
        started++;
    }
    /* cannot start every worker: abort the ones that did, so nobody waits forever */
    if (started < nw) __atomic_store_n(abort_flag, 1, __ATOMIC_SEQ_CST);
    for (int w = 0; w < started; w++) pthread_join(th[w], NULL);
    return started;
}

static evt_status cpu_launch(evt_module *m, evt_variant *v, evt_bind_entry *be, evt_buffers *bufs,
                             const evt_run_opts *o, evt_run_stats *stats, evt_diag *d)
{
    const evt_bound *b = &be->b;
    evt_status st = ensure_rt(m, b, d);
    if (st) return st;
    cpu_rt *rt = m->rt;
    const evt_graph *g = v->g;
    evt_ctx C;
    memset(&C, 0, sizeof C);
    evt_bound_fill_ctx(b, &C);
    evt_tensor_ref *tensors = calloc(g->ntensors + 1, sizeof *tensors);
    void **fns = calloc(v->p->nops + 1, sizeof(void *));
    uint64_t *trace = NULL;
    int32_t *trace_worker = NULL;
    if (!tensors || !fns) { free(tensors); free(fns); return EVT_ERR_NOMEM; }
    for (int i = 0; i < g->ntensors; i++) {
        tensors[i].ptr = evt_buffers_data(bufs, i, NULL);
        const int64_t *dims = evt_buffers_dims(bufs, i);
        for (int k = 0; k < EVT_ABI_MAX_RANK; k++) tensors[i].dim[k] = dims[k];
        tensors[i].rank = (int16_t)g->tensors[i]->rank;
        tensors[i].dtype = (int16_t)g->tensors[i]->dtype;
        tensors[i].tmap = -1; /* no TMA on the CPU target */
    }
    for (int i = 0; i < v->p->nops; i++) fns[i] = (void *)v->p->ops[i]->cpu;
    C.tensors = tensors;
    C.tile_fns = fns;
    int64_t nt = b->s.ntasks;
    evt_ctx_place_state(&C, rt->state, b);
    C.ring = &rt->ring;
    int32_t abort_flag = 0;
    evt_error err;
    memset(&err, 0, sizeof err);
    C.abort_flag = &abort_flag;
    C.err = &err;
    evt_ctx_apply_run_opts(&C, o);
    if (o->trace_path) {
        trace = calloc((nt + 1) * EVT_TRACE_STAMPS, sizeof(uint64_t));
        trace_worker = calloc(nt + 1, sizeof(int32_t));
        C.trace = trace;
        C.trace_worker = trace_worker;
    }
    int nw = b->nworkers;
    pthread_t *th = calloc(nw, sizeof(pthread_t));
    worker_arg *args = calloc(nw, sizeof(worker_arg));
    double t0 = now_ms();
    int started = 0;
    if (th && args && C.mode == EVT_MODE_KBK) {
        /* kernel by kernel: every call in program order, joined in between */
        started = nw;
        for (int c = 0; c < g->ncalls && started == nw && !__atomic_load_n(&abort_flag, __ATOMIC_ACQUIRE); c++)
            if (b->s.task_base[c + 1] > b->s.task_base[c]) started = run_workers(v->call_entry, &C, c, nw, th, args, &abort_flag);
    } else if (th && args) {
        started = run_workers(v->entry, &C, -1, nw, th, args, &abort_flag);
    }
    stats->launch_ms = now_ms() - t0;
    free(th); free(args);
    if (started < nw) {
        st = evt_diag_error(d, EVT_ERR_RUNTIME, (evt_loc){0, 0}, "could start only %d of %d worker threads", started, nw);
    } else if (err.kind) {
        char msg[1024];
        evt_describe_error(b, &err, rt->state, msg, sizeof msg);
        if (err.kind == EVT_KERR_INCOMPLETE && err.observed < err.target) err.kind = EVT_KERR_QUEUE_TIMEOUT; /* a hang, caught early */
        st = evt_diag_error(d, err.kind == EVT_KERR_WAIT_TIMEOUT || err.kind == EVT_KERR_QUEUE_TIMEOUT ? EVT_ERR_TIMEOUT : EVT_ERR_RUNTIME,
                            (evt_loc){0, 0}, "%s", msg);
    }
    if (abort_flag || err.kind || started < nw) {
        /* an aborted launch leaves counters mid-way: reset fully (the only host reset) */
        memset(rt->state, 0, rt->state_cap * sizeof(int32_t));
        ring_init(&rt->ring, rt->ring.slots, rt->ring_cap);
        for (int i = 0; i < g->ntensors; i++) { /* the tiles' own counters too */
            size_t bytes = 0;
            void *p = evt_buffers_data(bufs, i, &bytes);
            if (evt_tensor_rezeroed_after_abort(g->tensors[i]) && p) memset(p, 0, bytes);
        }
    }
    if (!st && o->trace_path) st = evt_trace_write(o->trace_path, b, trace, trace_worker, "cpu", d);
    free(trace); free(trace_worker); free(tensors); free(fns);
    return st;
}

static int cpu_default_workers(evt_module *m, const evt_run_opts *o)
{
    (void)m; (void)o;
    return 4;
}

static void cpu_release(evt_module *m)
{
    cpu_rt *rt = m->rt;
    if (!rt) return;
    free(rt->state);
    free(rt->ring.slots);
    free(rt);
    m->rt = NULL;
}

const evt_backend_ops evt_cpu_backend = {
    .build = cpu_build, .load = cpu_load, .launch = cpu_launch, .default_workers = cpu_default_workers,
    .unload = cpu_unload, .release = cpu_release, .drop_bound = NULL,
};
