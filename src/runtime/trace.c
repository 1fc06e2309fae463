/* trace.c — per-task timestamps to Chrome trace JSON ("X" complete events,
 * one row per worker), viewable in Perfetto (ui.perfetto.dev) or
 * chrome://tracing. Tasks that did not run (guarded out) are omitted.
 * ts holds EVT_TRACE_STAMPS timestamps per task (taken, started, ended,
 * notified: evt_ctx.h); a box spans started..ended, args.wait_us is started -
 * taken (the task's dispatch and waits) and args.notify_us notified - ended
 * (its release fence and notifies; 0 for a task without notifies).
 * args.late_us, for a task with producers, is how long after it could have
 * started it did: started - max(taken, the last of its producers' notified
 * stamps), found through the task graph. That is the protocol's cost on the
 * critical path (dispatch, argument building, the polls that see the
 * counters complete, the barrier), where wait_us also counts real waiting. */
#include <stdio.h>
#include <stdlib.h>
#include "runtime/module.h"
#include "pass/taskgraph.h"

/* ready[t]: the latest notified stamp among the producers of task t's
 * waits (0: none ran, or it waits on nothing). NULL if the graph cannot be
 * built (the trace is then written without late_us). */
static uint64_t *inputs_ready(const evt_bound *b, const uint64_t *ts)
{
    evt_taskgraph tg;
    evt_diag d;
    evt_diag_init(&d, "trace");
    uint64_t *node = NULL, *ready = NULL;
    if (evt_taskgraph_build(&b->s, &tg, &d) == EVT_OK) {
        node = calloc(tg.nnodes + 1, sizeof *node);
        ready = calloc(tg.ntasks + 1, sizeof *ready);
        if (node && ready) {
            for (int64_t t = 0; t < tg.ntasks; t++) { /* task -> element: the element is ready when its last producer notified */
                uint64_t n = ts[t * EVT_TRACE_STAMPS + EVT_TRACE_NOTIFIED];
                for (int64_t k = tg.succ_off[t]; k < tg.succ_off[t + 1]; k++)
                    if (n > node[tg.succ[k]]) node[tg.succ[k]] = n;
            }
            for (int64_t v = tg.ntasks; v < tg.nnodes; v++) /* element -> task */
                for (int64_t k = tg.succ_off[v]; k < tg.succ_off[v + 1]; k++)
                    if (tg.succ[k] < tg.ntasks && node[v] > ready[tg.succ[k]]) ready[tg.succ[k]] = node[v];
        } else {
            free(ready);
            ready = NULL;
        }
        evt_taskgraph_free(&tg);
    }
    free(node);
    evt_diag_free(&d);
    return ready;
}

evt_status evt_trace_write(const char *path, const evt_bound *b, const uint64_t *ts, const int32_t *worker,
                           const char *label, evt_diag *d)
{
    FILE *f = fopen(path, "w");
    if (!f) return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot write trace %s", path);
    uint64_t t0 = UINT64_MAX;
    for (int64_t t = 0; t < b->s.ntasks; t++)
        if (ts[t * EVT_TRACE_STAMPS + EVT_TRACE_STARTED] && ts[t * EVT_TRACE_STAMPS + EVT_TRACE_STARTED] < t0)
            t0 = ts[t * EVT_TRACE_STAMPS + EVT_TRACE_STARTED];
    fprintf(f, "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"backend\": \"%s\", \"schedule\": \"%s\", \"workers\": %d},\n"
               " \"traceEvents\": [\n", label, evt_sched_name(b->sched), b->nworkers);
    int first = 1;
    for (int w = 0; w < b->nworkers; w++) {
        fprintf(f, "%s  {\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": %d, \"args\": {\"name\": \"worker %d\"}}",
                first ? "" : ",\n", w, w);
        first = 0;
    }
    const evt_graph *g = b->s.p->g;
    uint64_t *ready = inputs_ready(b, ts);
    for (int64_t t = 0; t < b->s.ntasks; t++) {
        const uint64_t *s = ts + t * EVT_TRACE_STAMPS;
        uint64_t taken = s[EVT_TRACE_TAKEN], start = s[EVT_TRACE_STARTED], end = s[EVT_TRACE_ENDED], notified = s[EVT_TRACE_NOTIFIED];
        if (!start || !end) continue;
        char name[160];
        evt_task_name(&b->s, t, name, sizeof name);
        int c = evt_shape_call_of(&b->s, t);
        fprintf(f, ",\n  {\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": 0, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, "
                   "\"args\": {\"task\": %lld, \"wait_us\": %.3f, \"notify_us\": %.3f",
                name, g->calls[c]->name, worker[t], (start - t0) / 1e3, (end - start) / 1e3, (long long)t,
                taken && taken <= start ? (start - taken) / 1e3 : 0.0, notified >= end ? (notified - end) / 1e3 : 0.0);
        uint64_t could = ready && ready[t] > taken ? ready[t] : taken;
        if (ready && ready[t] && taken && could <= start) fprintf(f, ", \"late_us\": %.3f", (start - could) / 1e3);
        fprintf(f, "}}");
    }
    free(ready);
    fprintf(f, "\n]}\n");
    if (fclose(f)) return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "error writing trace %s", path);
    return EVT_OK;
}
