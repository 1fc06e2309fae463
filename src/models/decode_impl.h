/* decode_impl.h — what the decode driver's two files share (internal):
 * decode.c runs the decode steps, prefill.c puts the prompts into the KV
 * cache through the prefill program before them. */
#ifndef EVT_MODELS_DECODE_IMPL_H
#define EVT_MODELS_DECODE_IMPL_H

#include "evt/models.h"
#include "evt/runtime.h"

/* Prompts (evt_decode_opts.prompts): request b takes prompt b % n. */
typedef struct prompt_set {
    const int32_t *const *ids;
    const int64_t *lens;
    int n;
} prompt_set;

static inline const int32_t *prompt_of(const prompt_set *p, int64_t b, int64_t *len)
{
    *len = p->lens[b % p->n];
    return p->ids[b % p->n];
}

/* The id of the tensor called name, or -1. */
int evt_decode_tensor_id(const evt_graph *g, const char *name);
/* Monotonic seconds. */
double evt_decode_now_s(void);

/* --check's comparison of one launch (dev) with the reference's (ref):
 * bitwise on the CPU, evt_decode_check_step's tolerance on the GPU. Counts
 * it in r->steps_checked; a mismatch sets r->check_failed and adds "WHAT K
 * differs from the reference: ..." to d. Returns the failures. */
int evt_decode_compare_launch(const evt_decode_opts *o, const evt_graph *g, evt_buffers *dev, evt_buffers *ref, const char *what,
                              int64_t k, evt_decode_result *r, evt_diag *d);

/* The compile and run options evt_decode uses for its program at `batch`
 * (from o's): the kernel's defines (evt_decode_cuda_defines, unless o gives
 * some) and the TMA ring (evt_decode_tma_ring). */
void evt_decode_kernel_opts(const evt_decode_opts *o, const evt_qwen3_config *c, int64_t batch, evt_compile_opts *co,
                            evt_run_opts *ro);

/* The prompts' prefill (prefill.c): every prompt token but each request's
 * last goes through the prefill program (evt_qwen3_opts.prefill) in
 * `launches` launches of C rows (at most o->prefill_chunk), row i one
 * (request, position) of `rows`. */
typedef struct prefill_row {
    int64_t r, p;
    int32_t tok;
} prefill_row;
typedef struct evt_prefill {
    evt_module *m;           /* the decode program at batch C in its prefill form */
    evt_run_opts run;        /* as evt_decode would run it at batch C (evt_decode_kernel_opts) */
    const char *cuda_defines; /* and the kernel's tile options it was compiled with (the same) */
    prefill_row *rows;
    int64_t nrows, requests, C, launches;
} evt_prefill;
/* Plans the launches and builds the prefill module, compiled as evt_decode
 * would compile its program at batch C (its own kernel, cached like any
 * other). *out stays NULL when no prompt has more than one token. */
evt_status evt_prefill_build(const evt_decode_opts *o, const prompt_set *ps, evt_prefill **out, evt_diag *d);
void evt_prefill_free(evt_prefill *pf);
/* Runs the launches with the decode program's weights (db's, copied by
 * name), then copies the KV caches they filled into db as the decode module
 * dm's next launch reads them (on the GPU device to device, db's host
 * copies left older, unless o->host_copies asks for the host copies; with
 * o->check the reference's into dref, on the host), so that request r decodes from position
 * len_r - 1 with its prompt's last token. Fills the result's prefill_*
 * fields; with o->check each launch is compared with the prefill program's
 * sequential reference and counted in steps_checked (a failure sets
 * r->check_failed and returns EVT_ERR_CHECK). */
evt_status evt_prefill_run(evt_prefill *pf, const evt_decode_opts *o, evt_module *dm, evt_buffers *db, evt_buffers *dref,
                           evt_decode_result *r, evt_diag *d);

#endif
