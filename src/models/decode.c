/* decode.c — the decode driver behind `evtc decode`: builds the model's
 * decode-step program, fills weights (deterministic random values, or a
 * checkpoint's: qwen3_weights.c) and a prefilled paged KV cache (random, or
 * the prompts' through the prefill program: prefill.c), runs the steps (each one
 * persistent launch; next -> tok, pos + 1 between steps), optionally checks
 * every step against the sequential reference and dumps everything for the
 * PyTorch reference. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "evt/models.h"
#include "evt/front.h"
#include "evt/tiles.h"
#include "runtime/half.h"
#include "decode_impl.h"

double evt_decode_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int evt_decode_tensor_id(const evt_graph *g, const char *name)
{
    const evt_tensor *t = evt_graph_find_tensor(g, name);
    return t ? t->id : -1;
}

/* The longest prompt's length (0 without prompts). */
static int64_t longest_prompt(const evt_decode_opts *o)
{
    int64_t n = 0;
    for (int i = 0; i < o->nprompts; i++)
        if (o->prompt_lens[i] > n) n = o->prompt_lens[i];
    return n;
}

/* Sets each request's position (context lengths differ a little; with
 * prompts, the prompt's last token at its position once the prefill put the
 * others in the cache, else its first token at 0). */
static void init_positions(const evt_graph *g, evt_buffers *b, int64_t B, int64_t ctx, const prompt_set *p, int prefilled)
{
    int32_t *pos = evt_buffers_data(b, evt_decode_tensor_id(g, "pos"), NULL);
    int32_t *tok = evt_buffers_data(b, evt_decode_tensor_id(g, "tok"), NULL);
    for (int64_t r = 0; r < B; r++) {
        int64_t len = 0;
        const int32_t *ids = p ? prompt_of(p, r, &len) : NULL;
        pos[r] = !p ? (int32_t)(ctx > 4 ? ctx - r % 4 : ctx) : prefilled ? (int32_t)(len - 1) : 0;
        if (p) tok[r] = ids[prefilled ? len - 1 : 0];
    }
}

/* The cache positions a step at the current positions reads: each request
   attends over its cached tokens and the one it appends. */
static double positions_read(const evt_graph *g, evt_buffers *b, int64_t B)
{
    const int32_t *pos = evt_buffers_data(b, evt_decode_tensor_id(g, "pos"), NULL);
    double n = 0;
    for (int64_t r = 0; r < B; r++) n += (double)pos[r] + 1;
    return n;
}

/* The weight tensors of one buffer set into another of the same program. */
static void copy_weights(const evt_graph *g, evt_buffers *from, evt_buffers *to)
{
    for (int i = 0; i < g->ntensors; i++) {
        if (g->tensors[i]->role != EVT_WEIGHT) continue;
        size_t n = 0, m = 0;
        const void *src = evt_buffers_data(from, i, &n);
        void *dst = evt_buffers_data(to, i, &m);
        if (src && dst && n == m) memcpy(dst, src, n);
    }
}

/* The next step's inputs after launch s: each request's `next` at the next
   position, or, while a request's prompt lasts, the prompt's next token. */
static void advance(const evt_graph *g, evt_buffers *b, int64_t B, const prompt_set *p, int64_t s)
{
    int32_t *tok = evt_buffers_data(b, evt_decode_tensor_id(g, "tok"), NULL);
    int32_t *pos = evt_buffers_data(b, evt_decode_tensor_id(g, "pos"), NULL);
    const int32_t *next = evt_buffers_data(b, evt_decode_tensor_id(g, "next"), NULL);
    for (int64_t r = 0; r < B; r++) {
        int64_t len = 0;
        const int32_t *ids = p ? prompt_of(p, r, &len) : NULL;
        tok[r] = s + 1 < len ? ids[s + 1] : next[r];
        pos[r]++;
    }
}

/* --check's comparison of one GPU step with the reference (rtol > 0;
 * declared in evt/models.h):
 *   - every output but `next` within rtol (evt_buffers_compare_tensor);
 *   - each row's `next` exactly the first index of the largest of the
 *     device's own logits (the argmax tiles checked bitwise on their input);
 *   - where a row's token differs from the reference's, the reference's
 *     logits of the two tokens no further apart than the logits' tolerance
 *     allows twice (2 rtol max |reference logit|): a near-tie that bf16
 *     rounding and another summation order may flip. It is counted in
 *     *ties, not failed: deep models with random weights have many (28 layers
 *     of qwen3-0.6b at batch 40 flipped one in session 51), and the caller
 *     then feeds the device's token to both sides. A wider gap is a failure.
 * Returns the number of failures, a line each in report. */
int evt_decode_check_step(const evt_graph *g, evt_buffers *dev, evt_buffers *ref, double rtol, int64_t *ties, evt_printer *pr)
{
    const int nid = evt_decode_tensor_id(g, "next"), lid = evt_decode_tensor_id(g, "logits");
    int bad = 0;
    for (int i = 0; i < g->ntensors; i++)
        if (g->tensors[i]->role == EVT_OUTPUT && i != nid) bad += evt_buffers_compare_tensor(g, dev, ref, i, rtol, pr);
    size_t nb = 0;
    const int64_t *ld = lid >= 0 ? evt_buffers_dims(dev, lid) : NULL, B = ld ? ld[0] : 0, V = ld ? ld[1] : 0;
    if (nid >= 0) evt_buffers_data(dev, nid, &nb);
    if (nid < 0 || lid < 0 || g->tensors[lid]->dtype != EVT_BF16 || g->tensors[nid]->dtype != EVT_I32 ||
        nb != (size_t)B * sizeof(int32_t)) /* not a decode program's pair: next compared as any output */
        return bad + (nid >= 0 ? evt_buffers_compare_tensor(g, dev, ref, nid, rtol, pr) : 0);
    const int32_t *dn = evt_buffers_data(dev, nid, NULL), *rn = evt_buffers_data(ref, nid, NULL);
    const uint16_t *dl = evt_buffers_data(dev, lid, NULL), *rl = evt_buffers_data(ref, lid, NULL);
    double maxref = 0;
    for (int64_t k = 0; k < B * V; k++) {
        const double y = fabs(evt_bf16_to_f32(rl[k]));
        if (y > maxref) maxref = y;
    }
    const double tol = 2 * rtol * maxref;
    for (int64_t r = 0; r < B; r++) {
        const uint16_t *row = dl + r * V;
        int64_t best = 0;
        float top = V > 0 ? evt_bf16_to_f32(row[0]) : 0;
        for (int64_t v = 1; v < V; v++)
            if (evt_bf16_to_f32(row[v]) > top) { top = evt_bf16_to_f32(row[v]); best = v; }
        if (dn[r] != best) {
            evt_pr(pr, "next[%lld]: token %d is not the first largest of the device's own logits (%lld)\n", (long long)r,
                   dn[r], (long long)best);
            bad++;
            continue;
        }
        if (dn[r] == rn[r]) continue;
        const double gap = rn[r] >= 0 && rn[r] < V ? evt_bf16_to_f32(rl[r * V + rn[r]]) - evt_bf16_to_f32(rl[r * V + dn[r]]) : INFINITY;
        if (gap <= tol) {
            (*ties)++;
            continue;
        }
        evt_pr(pr, "next[%lld]: token %d where the reference has %d, whose logit is %.4g higher (a near-tie is at most %.4g)\n",
               (long long)r, dn[r], rn[r], gap, tol);
        bad++;
    }
    return bad;
}

static evt_status write_tensor(const char *dir, const char *file, const void *p, size_t n, evt_diag *d)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) {
        if (f) fclose(f);
        return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot write %s", path);
    }
    return fclose(f) ? evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot write %s", path) : EVT_OK;
}

static void json_tensor(FILE *m, const evt_graph *g, evt_buffers *b, int id, const char *file, int first)
{
    const evt_tensor *t = g->tensors[id];
    const int64_t *dims = evt_buffers_dims(b, id);
    fprintf(m, "%s\n    {\"name\": \"%s\", \"dtype\": \"%s\", \"shape\": [", first ? "" : ",", t->name, evt_dtype_name(t->dtype));
    for (int k = 0; k < t->rank; k++) fprintf(m, k ? ", %lld" : "%lld", (long long)dims[k]);
    fprintf(m, "], \"file\": \"%s\"}", file);
}

/* State before step 0: every weight, cache and input tensor. */
static evt_status dump_inputs(const char *dir, const evt_qwen3_config *c, const evt_decode_opts *o, const evt_graph *g,
                              evt_buffers *b, FILE **manifest, evt_diag *d)
{
    if (mkdir(dir, 0777) && errno != EEXIST)
        return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot create %s", dir);
    char path[1024];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    FILE *m = fopen(path, "w");
    if (!m) return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "cannot write %s", path);
    fprintf(m, "{\n  \"config\": {\"hidden_size\": %lld, \"num_hidden_layers\": %lld, \"num_attention_heads\": %lld, "
               "\"num_key_value_heads\": %lld, \"head_dim\": %lld, \"intermediate_size\": %lld, \"vocab_size\": %lld, "
               "\"rms_norm_eps\": %.17g, \"rope_theta\": %.17g, \"tie_word_embeddings\": %s},\n",
            (long long)c->hidden_size, (long long)c->num_hidden_layers, (long long)c->num_attention_heads,
            (long long)c->num_key_value_heads, (long long)c->head_dim, (long long)c->intermediate_size,
            (long long)c->vocab_size, c->rms_norm_eps, c->rope_theta, c->tie_word_embeddings ? "true" : "false");
    const int64_t *btd = evt_buffers_dims(b, evt_decode_tensor_id(g, "bt"));
    const int64_t *kcd = evt_buffers_dims(b, evt_decode_tensor_id(g, "l0_kc"));
    fprintf(m, "  \"batch\": %lld, \"ctx\": %lld, \"steps\": %lld, \"page_size\": %lld, \"max_pages\": %lld,\n  \"tensors\": [",
            (long long)o->batch, (long long)o->ctx, (long long)o->steps, (long long)kcd[1], (long long)btd[1]);
    int first = 1;
    for (int i = 0; i < g->ntensors; i++) {
        const evt_tensor *t = g->tensors[i];
        int cache = strstr(t->name, "_kc") || strstr(t->name, "_vc");
        if (t->role != EVT_INPUT && t->role != EVT_WEIGHT && !cache) continue;
        char file[160];
        snprintf(file, sizeof file, "%s.bin", t->name);
        size_t n;
        void *p = evt_buffers_data(b, i, &n);
        evt_status st = write_tensor(dir, file, p, n, d);
        if (st) { fclose(m); return st; }
        json_tensor(m, g, b, i, file, first);
        first = 0;
    }
    fprintf(m, "\n  ],\n");
    *manifest = m;
    return EVT_OK;
}

/* Times each `also` schedule on the step the main schedule ran last (same
 * inputs, same cache position: the step is re-run, not advanced) and compares
 * its logits and next tokens with the main schedule's. */
static evt_status time_also(const evt_decode_opts *o, evt_module *m, const int64_t *sym, evt_buffers *b,
                            evt_decode_result *r, evt_diag *d)
{
    const evt_graph *mg = evt_module_graph(m);
    /* on the GPU the timing run left the main schedule's outputs at these
       inputs in b; the CPU timed the steps themselves, one position back */
    evt_status st = o->backend == EVT_BACKEND_CUDA ? EVT_OK : evt_module_run(m, sym, b, &o->run, NULL, d);
    if (st) return st;
    size_t nl, nn;
    const uint16_t *logits = evt_buffers_data(b, evt_decode_tensor_id(mg, "logits"), &nl);
    const int32_t *next = evt_buffers_data(b, evt_decode_tensor_id(mg, "next"), &nn);
    uint16_t *main_logits = malloc(nl + 2);
    int32_t *main_next = malloc(nn + 4);
    st = main_logits && main_next ? EVT_OK : EVT_ERR_NOMEM;
    if (!st) { memcpy(main_logits, logits, nl); memcpy(main_next, next, nn); }
    double scale = 0;
    for (size_t i = 0; !st && i < nl / 2; i++) {
        double a = fabs(evt_bf16_to_f32(main_logits[i]));
        if (a > scale) scale = a;
    }
    int iters = o->steps < 20 ? 20 : (int)o->steps;
    for (int k = 0; k < o->nalso && !st; k++) {
        evt_run_opts ro = o->run;
        ro.sched = o->also[k];
        double ms = 0;
        if ((st = evt_module_time(m, sym, b, &ro, iters, &ms, d))) break;
        r->also_ms[k] = ms;
        double err = 0;
        for (size_t i = 0; i < nl / 2; i++) {
            double e = fabs((double)evt_bf16_to_f32(logits[i]) - evt_bf16_to_f32(main_logits[i]));
            if (e > err) err = e;
        }
        r->also_logit_err[k] = scale > 0 ? err / scale : err;
        r->also_next_diff[k] = 0;
        for (size_t i = 0; i < nn / 4; i++) r->also_next_diff[k] += next[i] != main_next[i];
    }
    free(main_logits);
    free(main_next);
    return st;
}

double evt_decode_check_rtol(int64_t layers)
{
    return layers <= 4 ? 2e-2 : 2e-2 * sqrt((double)layers / 4.0);
}

int evt_decode_fuse_norm(int64_t batch, evt_decode_norms norms, int *fold)
{
    *fold = norms != EVT_NORMS_UNFOLDED;
    return norms == EVT_NORMS_FUSED || (norms == EVT_NORMS_AUTO && batch <= EVT_DECODE_FUSE_NORM_MAX_BATCH);
}

/* 1 if evt_decode builds the batch-1-16 program for this batch: the fused
   norms that `--norms auto` picks (evt_decode_fuse_norm's rule) */
static int small_batch_program(int64_t batch, evt_decode_norms norms)
{
    int fold;
    return norms == EVT_NORMS_AUTO && evt_decode_fuse_norm(batch, norms, &fold);
}

/* The batch-1-16 program's kernel also leaves out the attention's staged
   first step (EVT_LLM_ATTN_STAGE_FIRST=0): at batch 1 a task runs its tile's
   code once and that code comes from L2 when a layer's does not fit the SM's
   instruction cache, so less of it is faster (H200, bench/RESULTS.md session
   45: qwen3-0.6b batch 1 -1.6%, 8 -1.0%, qwen3-8b batch 1 -0.3%, 8 -0.5%).
   The other kernels keep the batch <= 8 GEMV as each tile's own copy and the
   split merge's loop (EVT_LLM_SHARED_SMALL=0, EVT_LLM_MERGE_LOADS_AT_ONCE=0:
   their machine code as before those, session 46; they run neither at the
   batches they serve, and qwen3-0.6b batch 64 measured 1.9% slower with the
   shared GEMV compiled in), and the k split's integer divisions
   (EVT_LLM_SPLIT_RCP=0: the reciprocal form made qwen3-0.6b batch 1 2.6%
   faster and qwen3-8b batch 64 0.55% slower, session 59). The batch-1-16
   kernel takes its block size as a constant (EVT_TILE_THREADS_CONST,
   src/device/evt_tile.h: qwen3-0.6b batch 1 -1.4%, qwen3-8b -0.9%; the
   batch-17-64 kernel keeps blockDim, qwen3-8b batch 64 +0.7% with it) and
   scores two cache positions a lane group per attention step, not four
   (EVT_LLM_ATTN_U=2: at batch 1 a split's steps run once or twice a task,
   so a shorter step costs less than the loads it leaves in flight; with
   the constant, a further -1.0% at qwen3-0.6b batch 1 and -0.7% at
   qwen3-8b). Both: qwen3-0.6b batch 1 -2.5%, qwen3-8b batch 1 -1.6%,
   batch 8 level / -2.1%, batch 16 -0.7% / -2.5% (H200, bench/RESULTS.md
   session 60). */
#define EVT_DECODE_NO_EVERY "EVT_LLM_KSPLIT_EVERY=0"
#define EVT_DECODE_LARGE_DEFINES "EVT_LLM_SHARED_SMALL=0 EVT_LLM_MERGE_LOADS_AT_ONCE=0 EVT_LLM_SPLIT_RCP=0 " EVT_DECODE_NO_EVERY
#define EVT_DECODE_SMALL_COMMON "EVT_LLM_NO_TMA EVT_TILE_THREADS_CONST EVT_LLM_ATTN_U=2"
#define EVT_DECODE_SMALL_ONE EVT_DECODE_SMALL_COMMON " EVT_LLM_ATTN_ONE_REQUEST EVT_LLM_ATTN_STAGE_FIRST=0"
#define EVT_DECODE_SMALL_RUNS EVT_DECODE_SMALL_COMMON " EVT_LLM_ATTN_STAGE_FIRST=0"
#define EVT_DECODE_WAITS " EVT_WAITS_IN_TILE=1"
const char *evt_decode_cuda_defines(int64_t batch, evt_decode_norms norms, int64_t attn_rows, int tma_ring, int gate_up_every,
                                    int waits_in_tile)
{
    /* the batch-1-16 kernel's: [request runs][gate + up every-unit form][leader's waits in the tile] */
    static const char *const small[2][2][2] = {
        {{EVT_DECODE_SMALL_ONE " " EVT_DECODE_NO_EVERY, EVT_DECODE_SMALL_ONE " " EVT_DECODE_NO_EVERY EVT_DECODE_WAITS},
         {EVT_DECODE_SMALL_ONE, EVT_DECODE_SMALL_ONE EVT_DECODE_WAITS}},
        {{EVT_DECODE_SMALL_RUNS " " EVT_DECODE_NO_EVERY, EVT_DECODE_SMALL_RUNS " " EVT_DECODE_NO_EVERY EVT_DECODE_WAITS},
         {EVT_DECODE_SMALL_RUNS, EVT_DECODE_SMALL_RUNS EVT_DECODE_WAITS}},
    };
    if (!small_batch_program(batch, norms))
        return batch > EVT_DECODE_TMA_WIDE_BATCH && tma_ring > 0 ? "EVT_TMA_TWO_HALVES " EVT_DECODE_LARGE_DEFINES
                                                                 : EVT_DECODE_LARGE_DEFINES;
    return small[attn_rows > 1][gate_up_every != 0][waits_in_tile != 0];
}

int evt_decode_waits_in_tile(int64_t hidden_size) { return hidden_size >= EVT_DECODE_WAITS_IN_TILE_MIN_HIDDEN; }

int evt_decode_gate_up_every(int64_t intermediate_size, int64_t target_tasks)
{
    /* a worker's warps: the gate + up tile's declared threads (what the block runs) */
    const evt_tile_decl *up = evt_tile_find("mlp_up");
    const int64_t T = target_tasks > 0 ? target_tasks : EVT_QWEN3_TARGET_TASKS, warps = up ? up->threads / 32 : 0;
    const int64_t rows = (intermediate_size + T - 1) / T, units = (rows + 15) / 16; /* a tile's 16-row units, at most */
    return units > 1 && units < warps && warps % units != 0;
}

int64_t evt_decode_slices(const evt_qwen3_config *c, const evt_qwen3_opts *bo, int64_t batch, int tma_ring, int64_t range[2])
{
    const int64_t T = bo->target_tasks > 0 ? bo->target_tasks : EVT_QWEN3_TARGET_TASKS, KP = EVT_DECODE_SLICES;
    const int wide = c->hidden_size >= EVT_DECODE_SLICES_WIDE_HIDDEN;
    range[0] = range[1] = 0;
    if (bo->fuse_norm || bo->norm_partials || batch < EVT_DECODE_SLICES_MIN_BATCH || batch > EVT_DECODE_SLICES_MAX_BATCH ||
        evt_decode_tma_ring(c->hidden_size, batch, tma_ring) <= 0 || T < 8 * KP)
        return 1;
    /* whole TMA stages per slice (else the tiles' register fallback runs them, all of K in slice 0) */
    if ((c->num_attention_heads * c->head_dim) % (64 * KP) || c->intermediate_size % (64 * KP)) return 1;
    /* above 64 the batch-65-128 kernel's forms; at 65-96 the smaller
       models' sliced bands would take the swapped product, and lost */
    if (batch > EVT_DECODE_TMA_WIDE_BATCH && batch <= EVT_DECODE_SLICES_SWAP_MAX_BATCH && !wide) return 1;
    /* the program's range: the batch-33-64 programs' as before (their
       kernels' machine code unchanged), the others' from 33 (wide) or 97 */
    range[0] = batch <= EVT_DECODE_TMA_WIDE_BATCH || wide ? EVT_DECODE_SLICES_MIN_BATCH : EVT_DECODE_SLICES_SWAP_MAX_BATCH + 1;
    range[1] = batch <= EVT_DECODE_TMA_WIDE_BATCH ? EVT_DECODE_TMA_WIDE_BATCH : EVT_DECODE_SLICES_MAX_BATCH;
    return KP;
}

evt_status evt_decode_program(const evt_decode_opts *o, evt_qwen3_config *cfg, char **text, evt_diag *d)
{
    evt_qwen3_config c;
    evt_status st = EVT_OK;
    *text = NULL;
    if (!evt_qwen3_preset(o->model, &c) && (st = evt_qwen3_load_config(o->model, &c, d))) return st;
    /* prompts: non-empty, within the vocabulary, not with a dump */
    if (o->nprompts < 0 || (o->nprompts && (!o->prompts || !o->prompt_lens)))
        return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "decode: prompts need their tokens and lengths");
    if (o->nprompts && o->dump_dir)
        return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "decode: prompts and --dump together are not supported (the "
                                                                 "dump's replay feeds each step the tokens generated before it)");
    for (int i = 0; i < o->nprompts; i++) {
        if (o->prompt_lens[i] < 1 || !o->prompts[i])
            return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "decode: prompt %d is empty", i);
        for (int64_t k = 0; k < o->prompt_lens[i]; k++)
            if (o->prompts[i][k] < 0 || o->prompts[i][k] >= c.vocab_size)
                return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0},
                                      "decode: prompt %d's token %lld is %d, outside the vocabulary [0, %lld)", i, (long long)k,
                                      o->prompts[i][k], (long long)c.vocab_size);
    }
    /* with prompts the cache fills from position 0: it must hold the longest and the generated tokens */
    const int64_t ctx = o->nprompts > 0 ? longest_prompt(o) : o->ctx;
    if (o->batch < 1 || ctx < 1 || o->steps < 1)
        return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "decode: --batch, --ctx and --steps must be at least 1");
    evt_qwen3_opts bo = o->build;
    bo.fuse_norm = evt_decode_fuse_norm(o->batch, o->norms, &bo.fold_norms);
    bo.norm_partials = o->norms == EVT_NORMS_PARTIALS;
    /* the batch-1-16 program: one request per attention task (its kernel
       leaves the run loop out: evt_decode_cuda_defines); every program: the
       LM head in two waves of tiles (evt_qwen3_opts.lm_waves; H200,
       bench/RESULTS.md sessions 47-48) */
    if (small_batch_program(o->batch, o->norms) && !bo.attn_rows) bo.attn_rows = 1;
    if (!bo.lm_waves) bo.lm_waves = 2;
    /* the O and down projections in k slices where the TMA ring streams a
       slice of x (evt_decode_slices) */
    int64_t range[2];
    const int64_t slices = evt_decode_slices(&c, &bo, o->batch, o->run.tma_ring, range);
    if (!bo.dn_slices) bo.dn_slices = slices;
    if (!bo.o_slices) bo.o_slices = slices;
    if (slices > 1 && !bo.slices_from) bo.slices_from = range[0];
    if (slices > 1 && !bo.slices_to) bo.slices_to = range[1];
    if (!bo.max_batch) bo.max_batch = o->batch > 128 ? o->batch : 128;
    if (o->batch > bo.max_batch)
        return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "decode: --batch %lld exceeds the program's bound %lld",
                              (long long)o->batch, (long long)bo.max_batch);
    /* cache capacity rounded up to 1024 tokens: runs with different step
       counts build the same program (and hit the compiled-kernel cache) */
    if (!bo.max_ctx) bo.max_ctx = (ctx + o->steps + 1 + 1023) / 1024 * 1024;
    if (ctx + o->steps >= bo.max_ctx)
        return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "decode: ctx + steps must stay below the cache capacity %lld",
                              (long long)bo.max_ctx);
    /* the weight stream and the early loads take the prefetch calls */
    if (o->compile.stream_weights || o->compile.early_loads) bo.prefetch = 1;
    *text = evt_qwen3_program(&c, &bo, d);
    if (!*text) return EVT_ERR_VERIFY;
    *cfg = c;
    return EVT_OK;
}

int evt_decode_tma_ring(int64_t hidden_size, int64_t batch, int requested)
{
    if (requested) return requested;
    const int64_t lo = hidden_size >= EVT_DECODE_TMA_EARLY_HIDDEN ? EVT_DECODE_TMA_EARLY_BATCH : EVT_DECODE_TMA_MIN_BATCH;
    return batch >= lo && batch <= EVT_DECODE_TMA_MAX_BATCH ? EVT_DECODE_TMA_RING : 0;
}

int evt_decode_compare_launch(const evt_decode_opts *o, const evt_graph *g, evt_buffers *dev, evt_buffers *ref, const char *what,
                              int64_t k, evt_decode_result *r, evt_diag *d)
{
    evt_printer pr = {0};
    /* the CPU backend runs the reference's own tiles: bitwise */
    const int bad = o->backend == EVT_BACKEND_CPU ? evt_buffers_compare(g, dev, ref, 0, &pr)
                                                  : evt_decode_check_step(g, dev, ref, r->check_rtol, &r->near_ties, &pr);
    if (bad) {
        r->check_failed = 1;
        evt_diag_error(d, EVT_ERR_CHECK, (evt_loc){0, 0}, "%s %lld differs from the reference: %s", what, (long long)k,
                       pr.buf ? pr.buf : "");
    }
    evt_pr_free(&pr);
    r->steps_checked++;
    return bad;
}

void evt_decode_kernel_opts(const evt_decode_opts *o, const evt_qwen3_config *c, int64_t batch, evt_compile_opts *co,
                            evt_run_opts *ro)
{
    *co = o->compile;
    *ro = o->run;
    /* the GEMV tiles' TMA ring where they gain from it (src/tiles/llm_tma.cuh);
       elsewhere the reservation would only shrink L1 */
    ro->tma_ring = evt_decode_tma_ring(c->hidden_size, batch, o->run.tma_ring);
    /* the batch-1-16 program's kernel without the TMA GEMV and the
       attention's request runs, which it never runs; x's second box (both
       warpgroups multiplying) only in the kernel of the runs above batch 64
       that have a ring */
    if (!co->cuda_defines)
        co->cuda_defines = evt_decode_cuda_defines(batch, o->norms, o->build.attn_rows, ro->tma_ring,
                                                   evt_decode_gate_up_every(c->intermediate_size, o->build.target_tasks),
                                                   evt_decode_waits_in_tile(c->hidden_size));
}

evt_status evt_decode(const evt_decode_opts *o, evt_decode_result *r, evt_diag *d)
{
    /* the weights never change between steps: upload them once */
    evt_decode_opts local = *o;
    local.run.keep_weights = 1;
    o = &local;
    memset(r, 0, sizeof *r);
    evt_qwen3_config c;
    char *text = NULL;
    evt_status st = evt_decode_program(o, &c, &text, d);
    if (st) return st;
    /* a checkpoint's directory as the model: its weights too, unless given;
       its headers checked now, before minutes of nvcc and of generating the
       tensors the checkpoint does not give */
    struct stat sb;
    const char *weights = o->weights ? o->weights : !stat(o->model, &sb) && S_ISDIR(sb.st_mode) ? o->model : NULL;
    if (weights && (st = evt_qwen3_check_weights(weights, &c, d))) {
        free(text);
        return st;
    }
    r->check_rtol = o->check && o->backend != EVT_BACKEND_CPU ? evt_decode_check_rtol(c.num_hidden_layers) : 0;
    /* the steps' kernel options at their batch; the prefill derives its own
       from the caller's at its row count (until session 72 it was given the
       steps' and ran the batch-1 kernel's tiles: no TMA GEMV at 128 rows) */
    const evt_decode_opts given = local;
    evt_decode_kernel_opts(o, &c, o->batch, &local.compile, &local.run);
    r->cuda_defines = local.compile.cuda_defines;
    evt_graph *g = evt_parse(text, strlen(text), d);
    free(text);
    if (!g) return EVT_ERR_VERIFY;
    double t0 = evt_decode_now_s();
    evt_module *m = NULL;
    int unfused = o->run.sched == EVT_SCHED_UNFUSED;
    if (o->nalso < 0 || o->nalso > EVT_DECODE_MAX_ALSO) {
        evt_graph_free(g);
        return evt_diag_error(d, EVT_ERR_SHAPE, (evt_loc){0, 0}, "decode: at most %d extra schedules", EVT_DECODE_MAX_ALSO);
    }
    for (int k = 0; k < o->nalso; k++) unfused |= o->also[k] == EVT_SCHED_UNFUSED;
    if (!o->quiet && o->backend == EVT_BACKEND_CUDA) /* a first build is minutes of nvcc with nothing else to say */
        fprintf(stderr, "decode: building %s's kernel%s for cuda (nvcc runs 1-3 minutes the first time; the kernel cache "
                        "serves later runs)\n", c.name, unfused ? "s" : "");
    st = evt_module_build(g, o->backend, &o->compile, unfused, &m, d);
    if (st) return st;
    /* prompts: prefilled (prefill.c), or fed to the decode steps a token at a
       time (prompt_steps); the prefill's kernel is built now too */
    const prompt_set ps = {o->prompts, o->prompt_lens, o->nprompts}, *prompts = o->nprompts ? &ps : NULL;
    const prompt_set *fed = o->prompt_steps ? prompts : NULL;
    evt_prefill *pf = NULL;
    if (prompts && !fed && (st = evt_prefill_build(&given, prompts, &pf, d))) {
        evt_module_free(m);
        return st;
    }
    if (pf) r->prefill_cuda_defines = pf->cuda_defines;
    if (o->backend == EVT_BACKEND_CUDA && !evt_cuda_available()) {
        /* before generating gigabytes of weights: the kernel is built (and in
           the compiled-kernel cache) but cannot run here */
        evt_module_free(m);
        evt_prefill_free(pf);
        return evt_diag_error(d, EVT_ERR_NO_DEVICE, (evt_loc){0, 0},
                              "decode: no usable CUDA device (the kernel was built and cached; run on a machine with a GPU)");
    }
    const evt_graph *mg = evt_module_graph(m);
    if (!o->quiet)
        fprintf(stderr, "decode: %s, %d calls, built for %s in %.1f s\n", c.name, mg->ncalls, evt_backend_name(o->backend), evt_decode_now_s() - t0);
    int64_t sym[1] = {o->batch};
    evt_buffers *b = NULL, *ref = NULL;
    FILE *manifest = NULL;
    int32_t *tokens = NULL;
    t0 = evt_decode_now_s();
    st = evt_buffers_new(mg, sym, o->build.seed, 0xff, &b, d);
    if (!st && o->check) st = evt_buffers_new(mg, sym, o->build.seed, 0xfe, &ref, d);
    if (st) goto out;
    const int64_t longest = longest_prompt(o);
    const int64_t launches = fed ? longest - 1 + o->steps : o->steps; /* the fed prompts' steps, then the generated */
    init_positions(mg, b, o->batch, o->ctx, prompts, !fed);
    if (ref) init_positions(mg, ref, o->batch, o->ctx, prompts, !fed);
    if (!o->quiet && prompts)
        fprintf(stderr, "decode: weights generated in %.1f s; %d prompt%s of up to %lld tokens\n", evt_decode_now_s() - t0, o->nprompts,
                o->nprompts > 1 ? "s" : "", (long long)longest);
    else if (!o->quiet) fprintf(stderr, "decode: weights and a %lld-token cache generated in %.1f s\n", (long long)o->ctx, evt_decode_now_s() - t0);
    if (weights) {
        t0 = evt_decode_now_s();
        if ((st = evt_qwen3_load_weights(weights, &c, o->norms != EVT_NORMS_UNFOLDED, mg, b, d))) goto out;
        if (ref) copy_weights(mg, b, ref);
        if (!o->quiet) fprintf(stderr, "decode: weights read from %s in %.1f s\n", weights, evt_decode_now_s() - t0);
    }
    if (pf && (st = evt_prefill_run(pf, o, m, b, ref, r, d))) goto out;
    /* the steps read the weights the prefill's launches put on the device
       (one copy; the prefill module lives until the steps are done) and
       the caches it copied into theirs there; its other tensors, its copy
       of the caches among them, leave the device */
    if (pf) {
        evt_module_release_tensors(pf->m, 1);
        evt_module_share_weights(m, pf->m);
    }
    if (o->dump_dir && (st = dump_inputs(o->dump_dir, &c, o, mg, b, &manifest, d))) goto out;
    tokens = calloc((size_t)(launches * o->batch + 1), sizeof(int32_t));
    if (!tokens) { st = EVT_ERR_NOMEM; goto out; }
    double sum = 0, read = 0, last_report = evt_decode_now_s();
    /* between steps only tok and pos change: on the GPU the cache and the
       other scratch stay on the device, and only logits and next come back */
    evt_run_opts step_run = o->run;
    step_run.resident = !o->host_copies;
    for (int64_t s = 0; s < launches; s++) {
        evt_run_stats rs;
        if (s > 0 || launches == 1) read += positions_read(mg, b, o->batch);
        const double w0 = evt_decode_now_s();
        if ((st = evt_module_run(m, sym, b, &step_run, &rs, d))) goto out;
        const double wall_ms = (evt_decode_now_s() - w0) * 1e3;
        if (s == 0) r->first_wall_ms = wall_ms;
        else r->steps_wall_ms += wall_ms / (double)(launches - 1);
        r->ntasks = rs.ntasks;
        r->stream_ring_bytes = rs.stream_ring_bytes;
        r->tma_ring_bytes = rs.tma_ring_bytes;
        r->tma_maps = rs.tma_maps;
        if (s == 0) r->first_ms = rs.launch_ms;
        else sum += rs.launch_ms;
        memcpy(tokens + s * o->batch, evt_buffers_data(b, evt_decode_tensor_id(mg, "next"), NULL), o->batch * sizeof(int32_t));
        if (o->check) {
            if ((st = evt_reference_run(m, sym, ref, d))) goto out;
            evt_decode_compare_launch(o, mg, b, ref, "step", s, r, d);
            /* both sides go on with the device's tokens (the same on the
               CPU; on the GPU they differ only at near-ties, or where the
               step failed), so that one flip does not fail every later step */
            memcpy(evt_buffers_data(ref, evt_decode_tensor_id(mg, "next"), NULL), evt_buffers_data(b, evt_decode_tensor_id(mg, "next"), NULL),
                   (size_t)o->batch * sizeof(int32_t));
            advance(mg, ref, o->batch, fed, s);
        }
        if (s == 0 && manifest) {
            size_t n;
            fprintf(manifest, "  \"step0\": [");
            void *p = evt_buffers_data(b, evt_decode_tensor_id(mg, "logits"), &n);
            if ((st = write_tensor(o->dump_dir, "step0_logits.bin", p, n, d))) goto out;
            json_tensor(manifest, mg, b, evt_decode_tensor_id(mg, "logits"), "step0_logits.bin", 1);
            p = evt_buffers_data(b, evt_decode_tensor_id(mg, "next"), &n);
            if ((st = write_tensor(o->dump_dir, "step0_next.bin", p, n, d))) goto out;
            json_tensor(manifest, mg, b, evt_decode_tensor_id(mg, "next"), "step0_next.bin", 0);
            fprintf(manifest, "\n  ],\n");
        }
        for (int64_t q = 0; prompts && o->generated && q < o->batch; q++) { /* request q's k-th generated token */
            int64_t len = 1;
            if (fed) prompt_of(fed, q, &len);
            const int64_t k = s + 1 - len;
            if (k >= 0 && k < o->steps) o->generated[q * o->steps + k] = tokens[s * o->batch + q];
        }
        advance(mg, b, o->batch, fed, s);
        if (!o->quiet && evt_decode_now_s() - last_report > 1.0) {
            fprintf(stderr, "decode: step %lld/%lld, last %.3f ms\n", (long long)s + 1, (long long)launches, rs.launch_ms);
            last_report = evt_decode_now_s();
        }
    }
    r->ms_per_token = launches > 1 ? sum / (double)(launches - 1) : r->first_ms;
    if (launches == 1) r->steps_wall_ms = r->first_wall_ms;
    if (!o->quiet && launches == 1)
        fprintf(stderr, "decode: 1 step, %.3f ms on the wall clock\n", r->first_wall_ms);
    else if (!o->quiet)
        fprintf(stderr, "decode: %lld steps on the wall clock: the first %.3f ms, the others %.3f ms each%s\n", (long long)launches,
                r->first_wall_ms, r->steps_wall_ms,
                o->backend != EVT_BACKEND_CUDA ? ""
                : o->host_copies              ? " (every tensor copied to the device and back)"
                : r->prefill_launches         ? " (the weights and the cache already on the device from the prefill; tok, pos, "
                                                "logits and next move)"
                                              : " (the first uploads the weights and the cache; then tok, pos, logits and next move)");
    r->cache_bytes = read / (double)(launches > 1 ? launches - 1 : 1) * evt_qwen3_cache_bytes_per_token(&c);
    if (o->backend == EVT_BACKEND_CUDA) {
        /* launches above include host<->device copies of every tensor; the
           time per token is measured on back-to-back launches of the same
           step with device-resident tensors (CUDA events) */
        int iters = o->steps < 20 ? 20 : (int)o->steps;
        double ms = 0;
        if ((st = evt_module_time(m, sym, b, &o->run, iters, &ms, d))) goto out;
        r->ms_per_token = ms;
        r->timed_launches = iters;
        r->cache_bytes = positions_read(mg, b, o->batch) * evt_qwen3_cache_bytes_per_token(&c);
    }
    if (!st && o->nalso) st = time_also(o, m, sym, b, r, d);
    if (manifest) {
        st = write_tensor(o->dump_dir, "tokens.bin", tokens, (size_t)(o->steps * o->batch) * sizeof(int32_t), d);
        fprintf(manifest, "  \"tokens\": {\"file\": \"tokens.bin\", \"dtype\": \"i32\", \"shape\": [%lld, %lld]}\n}\n",
                (long long)o->steps, (long long)o->batch);
    }
    if (!st && r->check_failed) st = EVT_ERR_CHECK;
out:
    if (manifest) fclose(manifest);
    free(tokens);
    evt_buffers_free(b);
    evt_buffers_free(ref);
    evt_module_free(m);
    evt_prefill_free(pf); /* after the module that borrowed its device weights */
    return st;
}
