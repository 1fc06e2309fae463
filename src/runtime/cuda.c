/* cuda.c — placeholder GPU backend: reports that no GPU support is built. */
#include "runtime/module.h"

static evt_status nodev(evt_diag *d)
{
    return evt_diag_error(d, EVT_ERR_NO_DEVICE, (evt_loc){0, 0}, "the CUDA backend is not available in this build");
}
static evt_status b_build(evt_module *m, evt_variant *v, evt_diag *d) { (void)m; (void)v; return nodev(d); }
static evt_status b_load(evt_module *m, evt_variant *v, evt_diag *d) { (void)m; (void)v; return nodev(d); }
static evt_status b_launch(evt_module *m, evt_variant *v, evt_bind_entry *be, evt_buffers *b, const evt_run_opts *o,
                           evt_run_stats *st, evt_diag *d)
{ (void)m; (void)v; (void)be; (void)b; (void)o; (void)st; return nodev(d); }
static int b_workers(evt_module *m, const evt_run_opts *o) { (void)m; (void)o; return 1; }
static void b_unload(evt_module *m, evt_variant *v) { (void)m; (void)v; }
const evt_backend_ops evt_cuda_backend = {b_build, b_load, b_launch, b_workers, b_unload, NULL, NULL};
int evt_cuda_available(void) { return 0; }
