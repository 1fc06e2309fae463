/* bind_stream.c — the weight stream's jobs of a static schedule (evt_ctx.h,
 * src/device/evt_stream.h): for every static worker, in queue order, the
 * band of weight rows each of its streaming tasks reads (its operator's
 * stream_plan at the bound shape) and the first queue entry whose pump may
 * copy it. The GPU worker's leader then reads a 32-byte job per band instead
 * of decoding tasks and building their arguments on the device (a chain of
 * dependent loads: ~2 us per task on the critical path, bench/RESULTS.md
 * session 17).
 *
 * When to copy (issue_at): as soon as the ring has room ("eager", the
 * worker's first entry), or not before the worker has run every task ahead
 * of the band that does not stream ("quiet": a copy in flight shares the
 * SM's memory path with those tasks' loads — attention, norms, merges — and
 * slows them), or only when the worker reaches the band's own task, before
 * its waits ("own": no copy is in flight while another task of the worker
 * runs or notifies; a deeper form of the early loads).
 * $EVT_STREAM_ISSUE=eager|quiet|own picks one (default: quiet; any other
 * value fails the bind with a message). */
#include <stdlib.h>
#include <string.h>
#include "runtime/bind.h"
#include "evt/tiles.h"

/* The issue policy, from the environment (read at bind time): -1 for a
   value that names none (an error, never a silent default). Unset or empty
   is quiet. */
enum { ISSUE_EAGER, ISSUE_QUIET, ISSUE_OWN };
static int stream_issue(void)
{
    const char *e = getenv("EVT_STREAM_ISSUE");
    if (!e || !*e || !strcmp(e, "quiet")) return ISSUE_QUIET;
    return !strcmp(e, "eager") ? ISSUE_EAGER : !strcmp(e, "own") ? ISSUE_OWN : -1;
}

/* The tensor id passed as parameter `param` of call (a tensor argument's
 * position among all arguments), or -1. */
static int param_tensor(const evt_call *call, int param)
{
    if (param < 0 || param >= call->nargs || call->args[param].kind != EVT_ARG_TENSOR) return -1;
    return call->args[param].tensor->id;
}

evt_status evt_bind_stream_jobs(const evt_plan *p, evt_bound *b, evt_diag *d)
{
    const evt_graph *g = p->g;
    const evt_static_sched *q = &b->q;
    free(b->sjob);
    free(b->sjob_off);
    b->sjob = NULL;
    b->sjob_off = NULL;
    if (!p->nstreams || !q->q_off || q->nworkers < 1) return EVT_OK;
    int64_t n = q->q_off[q->nworkers];
    if (n >= INT32_MAX) return EVT_OK; /* entries are 32-bit in a job */
    const int issue = stream_issue();
    if (issue < 0)
        return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "EVT_STREAM_ISSUE=%s: expected eager, quiet or own",
                              getenv("EVT_STREAM_ISSUE"));
    int64_t (*dims)[EVT_ABI_MAX_RANK] = calloc(g->ntensors + 1, sizeof *dims);
    const int64_t **dimp = calloc(g->ntensors + 1, sizeof *dimp);
    b->sjob = calloc(n + 1, sizeof *b->sjob);
    b->sjob_off = calloc(q->nworkers + 1, sizeof *b->sjob_off);
    if (!dims || !dimp || !b->sjob || !b->sjob_off) {
        free(dims); free(dimp);
        free(b->sjob); free(b->sjob_off);
        b->sjob = NULL; b->sjob_off = NULL;
        return EVT_ERR_NOMEM;
    }
    evt_eval_env env = {b->s.sym, NULL, NULL, NULL};
    for (int t = 0; t < g->ntensors; t++) {
        for (int d = 0; d < EVT_ABI_MAX_RANK; d++) {
            int err = 0;
            dims[t][d] = d < g->tensors[t]->rank ? evt_expr_eval(g->tensors[t]->shape[d], &env, &err) : 1;
        }
        dimp[t] = dims[t];
    }
    int64_t nj = 0;
    for (int w = 0; w < q->nworkers; w++) {
        b->sjob_off[w] = nj;
        int64_t blocker = q->q_off[w] - 1; /* the last entry so far that does not stream */
        for (int64_t k = q->q_off[w]; k < q->q_off[w + 1]; k++) {
            uint32_t e = q->q[k];
            int c = (int)(e >> EVT_QCALL_SHIFT);
            const evt_call *call = g->calls[c];
            int64_t coord[EVT_MAX_RANK] = {0};
            evt_shape_decode(&q->ext[c * 4], call->rank, (int64_t)(e & EVT_QINDEX_MASK), coord);
            int inside = 1;
            for (int d = 0; d < call->rank; d++) inside &= coord[d] < b->s.ext[c * 4 + d];
            if (!inside) continue; /* a bucket entry this shape does not have: the worker skips it */
            evt_task_args a;
            evt_stream_band band;
            const evt_tile_decl *decl = p->call[c].decl;
            int t0 = -1, t1 = -1;
            evt_eval_env targs = {b->s.sym, coord, NULL, NULL};
            int streams = p->call[c].streams && evt_task_args_fill(call, &b->s.ext[c * 4], coord, NULL, dimp, &targs, &a) &&
                          decl->stream_plan(&a, &band);
            if (streams) {
                t0 = param_tensor(call, band.param[0]);
                t1 = band.param[1] >= 0 ? param_tensor(call, band.param[1]) : -1;
                streams = t0 >= 0 && (band.param[1] < 0 || t1 >= 0) && band.nrows > 0 && band.nrows <= INT32_MAX &&
                          band.pitch > 0 && band.pitch % 16 == 0 && band.pitch <= INT32_MAX && band.row0 >= 0;
            }
            if (!streams) {
                blocker = k;
                continue;
            }
            evt_stream_job *j = &b->sjob[nj++];
            j->entry = (int32_t)k;
            j->issue_at = (int32_t)(issue == ISSUE_OWN ? k : issue == ISSUE_QUIET ? blocker + 1 : q->q_off[w]);
            j->tensor[0] = t0;
            j->tensor[1] = t1;
            j->nrows = (int32_t)band.nrows;
            j->pitch = (int32_t)band.pitch;
            j->row0 = band.row0;
        }
    }
    b->sjob_off[q->nworkers] = nj;
    free(dims);
    free(dimp);
    return EVT_OK;
}
