/* trace.c — per-task timestamps to Chrome trace JSON ("X" complete events,
 * one row per worker), viewable in Perfetto (ui.perfetto.dev) or
 * chrome://tracing. Tasks that did not run (guarded out) are omitted.
 * ts holds EVT_TRACE_STAMPS timestamps per task (taken, started, ended,
 * notified: evt_ctx.h); a box spans started..ended, args.wait_us is started -
 * taken (the task's dispatch and waits) and args.notify_us notified - ended
 * (its release fence and notifies; 0 for a task without notifies). */
#include <stdio.h>
#include "runtime/module.h"
#include "pass/taskgraph.h"

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
    for (int64_t t = 0; t < b->s.ntasks; t++) {
        const uint64_t *s = ts + t * EVT_TRACE_STAMPS;
        uint64_t taken = s[EVT_TRACE_TAKEN], start = s[EVT_TRACE_STARTED], end = s[EVT_TRACE_ENDED], notified = s[EVT_TRACE_NOTIFIED];
        if (!start || !end) continue;
        char name[160];
        evt_task_name(&b->s, t, name, sizeof name);
        int c = evt_shape_call_of(&b->s, t);
        fprintf(f, ",\n  {\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": 0, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, "
                   "\"args\": {\"task\": %lld, \"wait_us\": %.3f, \"notify_us\": %.3f}}",
                name, g->calls[c]->name, worker[t], (start - t0) / 1e3, (end - start) / 1e3, (long long)t,
                taken && taken <= start ? (start - taken) / 1e3 : 0.0, notified >= end ? (notified - end) / 1e3 : 0.0);
    }
    fprintf(f, "\n]}\n");
    if (fclose(f)) return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "error writing trace %s", path);
    return EVT_OK;
}
