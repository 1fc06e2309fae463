/* prefill.c — evt_decode's prompts into the KV cache in a few launches
 * instead of one launch a token. The prefill program (evt_qwen3_opts.prefill:
 * the decode step in its split-rope form, every attention task waiting for
 * all rows' cache appends of its kv head) takes up to prefill_chunk prompt
 * tokens a launch as its rows: row i is request r's token at position p,
 * with r's block table, so it appends its keys and values to r's pages and
 * attends over r's positions 0..p, written by this launch or an earlier one.
 * The rows of a launch are padded to one size with rows of a spare request
 * (its own pages, positions 0, 1, ...), whose outputs nobody reads, so that
 * every launch binds the same shape. Afterwards the caches go into the
 * decode program's (the first pages: both programs lay out request r's pages
 * at r x max pages; on the GPU from device to device, with no trip through
 * the host: evt_module_copy_tensor), and decode.c starts each request at its
 * prompt's last token. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "decode_impl.h"
#include "evt/front.h"

/* Every weight of the prefill program's buffers pb is the decode
   program's (db's, shared by name: the two programs declare different
   tensors, so a name can have another id and, for random weights, other
   values), or one the program fills itself (a norm's unit weights, the
   RoPE table). */
static evt_status check_weights_shared(const evt_graph *dg, evt_buffers *db, const evt_graph *pg, evt_buffers *pb, evt_diag *d)
{
    for (int i = 0; i < pg->ntensors; i++) {
        const evt_tensor *t = pg->tensors[i];
        if (t->role != EVT_WEIGHT || t->init.kind == EVT_INIT_CONST || t->init.kind == EVT_INIT_ROPE) continue;
        const int j = evt_decode_tensor_id(dg, t->name);
        if (j < 0 || evt_buffers_data(db, j, NULL) != evt_buffers_data(pb, i, NULL))
            return evt_diag_error(d, EVT_ERR_VERIFY, (evt_loc){0, 0}, "prefill: weight %s is not the decode program's", t->name);
    }
    return EVT_OK;
}

/* The prefill's KV caches (tensors ending in _kc / _vc) into the decode
   program's: the decode cache's bytes are the prefill cache's first ones
   (the real requests' pages; the spare request's come after them). With
   modules, as the prefill module pm's last launch left them (on the GPU
   device to device where it left them there) for the decode module dm's
   next launch; without (the references), host to host. */
static evt_status copy_caches(evt_module *pm, const evt_graph *pg, evt_buffers *pb, evt_module *dm, const evt_graph *dg,
                              evt_buffers *db, evt_diag *d)
{
    for (int i = 0; i < dg->ntensors; i++) {
        const char *name = dg->tensors[i]->name;
        const size_t len = strlen(name);
        if (len < 3 || (strcmp(name + len - 3, "_kc") && strcmp(name + len - 3, "_vc"))) continue;
        const int j = evt_decode_tensor_id(pg, name);
        size_t n = 0, m = 0;
        void *dst = evt_buffers_data(db, i, &n);
        const void *src = j >= 0 ? evt_buffers_data(pb, j, &m) : NULL;
        if (!src || m < n)
            return evt_diag_error(d, EVT_ERR_VERIFY, (evt_loc){0, 0}, "prefill: no cache %s of at least %zu bytes", name, n);
        evt_status st = EVT_OK;
        if (pm) st = evt_module_copy_tensor(dm, db, i, pm, pb, j, d);
        else memcpy(dst, src, n);
        if (st) return st;
    }
    return EVT_OK;
}

/* Rows [k x C, (k + 1) x C) of the launch sequence into b's tok, pos and bt
   (MP pages a request): real rows first, then the spare request R's. */
static void fill_launch(const evt_graph *g, evt_buffers *b, const prefill_row *rows, int64_t nrows, int64_t k, int64_t C,
                        int64_t R, int64_t MP)
{
    int32_t *tok = evt_buffers_data(b, evt_decode_tensor_id(g, "tok"), NULL);
    int32_t *pos = evt_buffers_data(b, evt_decode_tensor_id(g, "pos"), NULL);
    int32_t *bt = evt_buffers_data(b, evt_decode_tensor_id(g, "bt"), NULL);
    for (int64_t i = 0; i < C; i++) {
        const int64_t q = k * C + i;
        const prefill_row pad = {R, q - nrows, 0}, *row = q < nrows ? &rows[q] : &pad;
        tok[i] = row->tok;
        pos[i] = (int32_t)row->p;
        for (int64_t j = 0; j < MP; j++) bt[i * MP + j] = (int32_t)(row->r * MP + j);
    }
}

/* The prefill's rows (every prompt token but each request's last: *nrows,
   0 with one-token prompts) and its launches of C rows each, as even as the
   rows allow (fewer than one spare row a launch). */
static evt_status prefill_plan(const evt_decode_opts *o, const prompt_set *ps, int64_t *nrows, int64_t *launches, int64_t *C,
                               evt_diag *d)
{
    int64_t len = 0;
    *nrows = *launches = *C = 0;
    for (int64_t q = 0; q < o->batch; q++) {
        prompt_of(ps, q, &len);
        *nrows += len - 1;
    }
    const int64_t bound = o->build.max_batch > 0 ? o->build.max_batch : 128;
    const int64_t most = o->prefill_chunk > 0 ? o->prefill_chunk : EVT_DECODE_PREFILL_CHUNK;
    if (o->prefill_chunk < 0 || most > bound)
        return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "decode: --prefill-chunk %lld: between 1 and the program's bound %lld",
                              (long long)o->prefill_chunk, (long long)bound);
    if (!*nrows) return EVT_OK;
    *launches = (*nrows + most - 1) / most;
    *C = (*nrows + *launches - 1) / *launches;
    return EVT_OK;
}

/* The decode program at batch C in its prefill form, its caches R + 1
   requests' pages (the spare request's last); *po the options it was built
   from (evt_decode_kernel_opts takes them). */
static evt_status prefill_text(const evt_decode_opts *o, int64_t C, evt_decode_opts *po, evt_qwen3_config *c, char **text, evt_diag *d)
{
    *po = *o;
    po->batch = C;
    po->build.prefill = 1;
    po->build.cache_requests = o->batch + 1;
    po->nalso = 0;
    return evt_decode_program(po, c, text, d);
}

evt_status evt_decode_prefill_program(const evt_decode_opts *o, evt_qwen3_config *cfg, char **text, evt_diag *d)
{
    *text = NULL;
    if (!o->nprompts || o->prompt_steps) return EVT_OK;
    /* the prompts and sizes checked as the steps' program checks them */
    char *steps_text = NULL;
    evt_status st = evt_decode_program(o, cfg, &steps_text, d);
    free(steps_text);
    if (st) return st;
    const prompt_set ps = {o->prompts, o->prompt_lens, o->nprompts};
    int64_t nrows, launches, C;
    evt_decode_opts po;
    st = prefill_plan(o, &ps, &nrows, &launches, &C, d);
    return st || !nrows ? st : prefill_text(o, C, &po, cfg, text, d);
}

evt_status evt_prefill_build(const evt_decode_opts *o, const prompt_set *ps, evt_prefill **out, evt_diag *d)
{
    *out = NULL;
    int64_t nrows, launches, C, len = 0;
    evt_status st = prefill_plan(o, ps, &nrows, &launches, &C, d);
    if (st || !nrows) return st; /* one-token prompts: the decode steps take them */
    evt_prefill *pf = calloc(1, sizeof *pf);
    prefill_row *rows = malloc((size_t)nrows * sizeof *rows);
    if (!pf || !rows) {
        free(pf);
        free(rows);
        return EVT_ERR_NOMEM;
    }
    int64_t n = 0;
    for (int64_t q = 0; q < o->batch; q++) {
        const int32_t *ids = prompt_of(ps, q, &len);
        for (int64_t p = 0; p + 1 < len; p++) rows[n++] = (prefill_row){q, p, ids[p]};
    }
    pf->rows = rows;
    pf->nrows = nrows;
    pf->requests = o->batch;
    pf->launches = launches;
    pf->C = C;
    /* compiled and run as evt_decode would at batch C */
    evt_decode_opts po;
    evt_qwen3_config c;
    char *text = NULL;
    st = prefill_text(o, C, &po, &c, &text, d);
    evt_graph *g = st ? NULL : evt_parse(text, strlen(text), d);
    free(text);
    if (!st && !g) st = EVT_ERR_VERIFY;
    if (!st) {
        evt_compile_opts compile;
        evt_decode_kernel_opts(&po, &c, pf->C, &compile, &pf->run);
        pf->cuda_defines = compile.cuda_defines;
        if (!o->quiet && o->backend == EVT_BACKEND_CUDA)
            fprintf(stderr, "decode: building the prefill program's kernel (%lld rows a launch) for cuda\n", (long long)pf->C);
        st = evt_module_build(g, o->backend, &compile, o->run.sched == EVT_SCHED_UNFUSED, &pf->m, d);
    }
    if (st) {
        evt_prefill_free(pf);
        return st;
    }
    *out = pf;
    return EVT_OK;
}

void evt_prefill_free(evt_prefill *pf)
{
    if (!pf) return;
    evt_module_free(pf->m);
    free(pf->rows);
    free(pf);
}

/* With a trace asked for (evt_run_opts.trace_path FILE), the prefill's
   launches write theirs to FILE with ".prefill" before its extension
   (t.json -> t.prefill.json; each launch overwrites it, the last one's
   stays) and the steps to FILE itself. */
static void prefill_trace_path(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (!dot || (slash && dot < slash)) dot = path + strlen(path);
    snprintf(out, n, "%.*s.prefill%s", (int)(dot - path), path, dot);
}

evt_status evt_prefill_run(evt_prefill *pf, const evt_decode_opts *o, evt_module *dm, evt_buffers *db, evt_buffers *dref,
                           evt_decode_result *r, evt_diag *d)
{
    r->prefill_tokens = pf->nrows;
    const evt_graph *pg = evt_module_graph(pf->m), *dg = evt_module_graph(dm);
    const int64_t sym[1] = {pf->C}, C = pf->C, R = pf->requests;
    evt_buffers *pb = NULL, *pref = NULL;
    /* the weights' host copies are the decode program's (on the device
       evt_decode lends this module's to the decode module) */
    evt_status st = evt_buffers_new_sharing(pg, sym, o->build.seed, 0xff, dg, db, &pb, d);
    if (!st && dref) st = evt_buffers_new_sharing(pg, sym, o->build.seed, 0xfe, dg, db, &pref, d);
    if (!st) st = check_weights_shared(dg, db, pg, pb, d);
    const int64_t MP = st ? 0 : evt_buffers_dims(pb, evt_decode_tensor_id(pg, "bt"))[1];
    char trace[4096] = "";
    if (pf->run.trace_path) prefill_trace_path(pf->run.trace_path, trace, sizeof trace);
    const double t0 = evt_decode_now_s();
    for (int64_t k = 0; !st && k < pf->launches; k++) {
        fill_launch(pg, pb, pf->rows, pf->nrows, k, C, R, MP);
        /* resident launches keep the caches on the device between them and
           for the decode steps after them (copy_caches); with host copies
           every launch brings them back */
        evt_run_opts ro = pf->run;
        ro.resident = !o->host_copies;
        if (ro.trace_path) ro.trace_path = trace;
        evt_run_stats rs = {0};
        if ((st = evt_module_run(pf->m, sym, pb, &ro, &rs, d))) break;
        r->prefill_launches++;
        r->prefill_kernel_ms += rs.launch_ms;
        r->prefill_tma_ring_bytes = rs.tma_ring_bytes;
        r->prefill_tma_maps = rs.tma_maps;
        if (k == 0) r->prefill_first_wall_ms = (evt_decode_now_s() - t0) * 1e3;
        if (!pref) continue;
        fill_launch(pg, pref, pf->rows, pf->nrows, k, C, R, MP);
        if ((st = evt_reference_run(pf->m, sym, pref, d))) break;
        if (evt_decode_compare_launch(o, pg, pb, pref, "prefill launch", k, r, d)) st = EVT_ERR_CHECK;
    }
    r->prefill_wall_ms = (evt_decode_now_s() - t0) * 1e3;
    if (!st) st = copy_caches(o->host_copies ? NULL : pf->m, pg, pb, dm, dg, db, d);
    if (!st && pref) st = copy_caches(NULL, pg, pref, dm, dg, dref, d);
    if (!st && !o->quiet)
        fprintf(stderr, "decode: prefilled %lld prompt token%s in %lld launch%s of %lld row%s: %.3f ms on the wall clock (the first "
                        "launch %.3f ms with the weights' upload; the kernels %.3f ms in all)\n",
                (long long)pf->nrows, pf->nrows > 1 ? "s" : "", (long long)pf->launches, pf->launches > 1 ? "es" : "", (long long)C,
                C > 1 ? "s" : "", r->prefill_wall_ms, r->prefill_first_wall_ms, r->prefill_kernel_ms);
    if (!st && !o->quiet && trace[0]) fprintf(stderr, "decode: the prefill's last launch traced in %s\n", trace);
    evt_buffers_free(pb);
    evt_buffers_free(pref);
    return st;
}
