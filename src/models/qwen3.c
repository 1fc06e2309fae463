/* qwen3.c — the Qwen3 dense decode step as an Event Tensor program.
 *
 * Per layer i (x_i is the residual stream, B rows):
 *   n1     rmsnorm(x_i) -> h            over (b)       waits X_i[0]        notifies H_i[0]
 *   qkvproj linear(h, Wqkv) -> qkv  over (nb)      waits H_i[0]        notifies QKV_i[0]
 *   at     attn_rope_split -> part, cache, o   over (b, g, s)  waits QKV_i[0]  notifies AT_i[0]
 *          (`qkv_per_head`: QKV_i has an element per head; a tile notifies
 *          the heads its rows touch, a task waits for its kv head g's q
 *          heads and k, v: finer, but all QKV tiles run in one wave and the
 *          one counter measured 2-10% faster with 131 tiles, RESULTS session 8)
 *          (q norm + RoPE of the group's q heads, the new k/v, split-KV
 *          attention reading the cache once per group; RoPE's cos | sin
 *          from row pos[b] of `rope`, a weight filled once by
 *          rope(theta=...)); with one split
 *          (S = 1) the task writes its heads of o itself, with several the
 *          last task of each merge group to finish merges the group's
 *          splits into o (counted in l_pc, zeros; attn_rope_split's
 *          merge_last): no merge stage, no P event, at any batch.
 *          Its first coordinate is a run of requests: R = ceil(B x kv
 *          heads / target_tasks) of them a task (1 up to batch 16 at 8 kv
 *          heads; `attn_rows` fixes R), the grid [ceil(B / R), nkv, S]
 *          (tiles/attn_requests.h): one dispatch, wait and notify per run
 *   am     (ablations: `merge_tasks` where S > 1, `merge_one_split` at every
 *          batch; the attention then notifies P_i[b, g])
 *          attn_merge_group -> o        over (b, g)    waits P_i[b, g]     notifies AT_i[0]
 *          (the splits of the group's q heads: one task and one notify per
 *          group, not per q head; at batch 64 the per-head merges were
 *          B * nh tiny tasks on the path to the O projection)
 *   oproj  linear_res(o, Wo, x_i) -> xa over (nb)      waits AT_i[0]       notifies XA_i[0]
 *   n2     rmsnorm(xa) -> h2            over (b)       waits XA_i[0]       notifies H2_i[0]
 *   up     mlp_up(h2, Wg, Wu) -> a      over (nb)      waits H2_i[0]       notifies A_i[0]
 *   dn     linear_res(a, Wd, xa) -> x_{i+1}  over (nb) waits A_i[0]        notifies X_{i+1}[0]
 * (`fuse_norm`: no n1 / n2 calls; rms_linear and rms_mlp_up compute the
 * norm inside every QKV and gate/up tile and wait on X_i / XA_i directly:
 * two handoffs fewer per layer. The norms' weights are folded into those
 * matrices (`fold_norms`, implied), so a tile only scales its dot products
 * by rsqrt(mean(x^2) + eps); without fuse_norm, fold_norms gives the norm
 * calls unit weights over the same matrices. The final norm stays a call.)
 * (`norm_partials`, without fuse_norm: oproj and dn are linear_res_ss, which
 * also leave each new residual row's sum of squares (partials per tile in
 * l{i}_po / l{i}_pd, summed by the call's last tile to finish, counted in
 * l{i}_co / l{i}_cd, into l{i}_sxa / x{i+1}_ss), and qkvproj and up are ss_linear / ss_mlp_up, which
 * scale by them: no n1 / n2 after layer 0's n1, whose input comes from the
 * embedding; the last dn stays linear_res, the final norm a call.)
 * (`dn_slices`, without fuse_norm and norm_partials: dn is linear_part(a, Wd)
 * -> dp_i[KP, B, H] over (nb) in [KP x (T / KP)], task nb the rows of band
 * nb % (T / KP) over k slice nb / (T / KP), f32 partials without the
 * residual; layer i+1's n1 (the final norm after the last layer) is
 * add_rmsnorm(xa_i, dp_i) -> x_{i+1}, h: the residual's new rows written
 * beside the normed ones. KP = dn_slices at batch slices_from (33) to slices_to (64), 1
 * elsewhere.
 * `o_slices`: oproj likewise, linear_part(o, Wo) -> op_i, and n2 is
 * add_rmsnorm(x_i, op_i) -> xa, h2.)
 * (`split_rope`, an ablation: q_rope over (b, h) and k_rope_append over
 * (b, g) as their own calls, notifying Q_i[b, h] and KV_i[b, g], which
 * attn_split waits on, notifying P_i[b, h / G]: one more handoff per layer.)
 * (`prefill`: the split-rope form with KV_i[g] notified by every row's
 * append, so that each attention task waits for all rows' appends of its kv
 * head: the rows are then positions of prompts, several of them the same
 * request's (their block tables alike), each attending over the others'
 * keys and values. Its tasks take a kv head's group of q heads: qk_rope_append
 * over (b, g) (q_rope of the group's heads and k_rope_append of g, for a run
 * of rows as attn_rope_split's runs of requests: attn_rows, or about
 * target_tasks tasks) and
 * attn_split_group over (b, g, s), which reads the group's cache rows once
 * for all its heads; the merges as in the split-rope form. With `cache_requests` the caches hold that many requests'
 * pages whatever B is: the prefill's rows share their requests' pages.)
 * Linear calls have target_tasks tiles (131: one fewer than the 132 workers
 * of an H100/H200, so the static round robin leaves the worker that takes
 * the RMSNorm after a GEMV stage without a tile in that stage) with ragged
 * row ranges, so every SM streams an equal share of each weight matrix.
 * then the final norm, the LM head (tiles of the vocabulary), the argmax of
 * each row in max(1, min(V, target_tasks / B)) chunks after the whole LM
 * head (about target_tasks tasks at any batch: one per (row, LM tile), the
 * `argmax_per_tile` ablation, was B x 655 tasks for Qwen3 (660 with 132
 * tiles: 47% of a qwen3-0.6b step's tasks at B = 64), and the final argmax.
 * Attention splits carry `policy dynamic`: their length follows each
 * request's position, so under the hybrid schedule they go through the ready
 * queue while the GEMVs keep their static queues (other schedules ignore it).
 * With `prefetch` (the decode's early loads) the GEMV and attention calls
 * carry the annotation: their tasks issue their first weight loads, or
 * stage their first step of old cache rows, while warp 0 waits
 * (`attn_no_early` leaves the attention out: an ablation).
 * Events between a row-wise call and a column-tiled one are single counters
 * (X, H, XA, H2, HF: count B or the number of tiles): a row of x needs every
 * column tile and a tile needs every row, so per-row elements would only
 * multiply the waits and notifies by B (bench/RESULTS.md).
 * Weights are uniform in +-sqrt(3 / fan_in) (unit-variance activations), the
 * paged KV cache holds random values: prefilled to `ctx` tokens.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <cjson/cJSON.h>
#include "evt/models.h"

int evt_qwen3_preset(const char *name, evt_qwen3_config *c)
{
    static const evt_qwen3_config presets[] = { /* random weights: no end-of-sequence ids */
        {"qwen3-0.6b", 1024, 28, 16, 8, 128, 3072, 151936, 1e-6, 1e6, 1, {0}, 0},
        {"qwen3-1.7b", 2048, 28, 16, 8, 128, 6144, 151936, 1e-6, 1e6, 1, {0}, 0},
        {"qwen3-8b", 4096, 36, 32, 8, 128, 12288, 151936, 1e-6, 1e6, 0, {0}, 0},
    };
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(name, presets[i].name)) { *c = presets[i]; return 1; }
    return 0;
}

static int get_int(cJSON *j, const char *key, int64_t *out, int required)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v) return !required;
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble != floor(v->valuedouble)) return 0;
    *out = (int64_t)v->valuedouble;
    return 1;
}

/* `eos_token_id` (an id or a list) of a parsed config into c; the count. */
static int read_eos(const cJSON *j, evt_qwen3_config *c)
{
    const cJSON *e = cJSON_GetObjectItem(j, "eos_token_id"), *it;
    int n = 0;
    if (cJSON_IsNumber(e)) c->eos_token_ids[n++] = (int32_t)e->valuedouble;
    if (cJSON_IsArray(e))
        cJSON_ArrayForEach(it, e)
            if (cJSON_IsNumber(it) && n < EVT_QWEN3_MAX_EOS) c->eos_token_ids[n++] = (int32_t)it->valuedouble;
    return n;
}

/* A JSON file (its first MiB) parsed; NULL with *err the errno if it
   cannot be opened, -1 out of memory, 0 if it is not JSON. */
static cJSON *parse_file(const char *path, int *err)
{
    *err = 0;
    FILE *f = fopen(path, "rb");
    if (!f) { *err = errno; return NULL; }
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (!buf) { *err = -1; return NULL; }
    buf[n] = 0;
    cJSON *j = cJSON_Parse(buf);
    free(buf);
    return j;
}

evt_status evt_qwen3_load_config(const char *path, evt_qwen3_config *c, evt_diag *d)
{
    /* a checkpoint's directory: its config.json (and generation_config.json) */
    struct stat sb;
    char in_dir[4096], gen[4096];
    const int dir = !stat(path, &sb) && S_ISDIR(sb.st_mode);
    if (dir) {
        snprintf(in_dir, sizeof in_dir, "%s/config.json", path);
        snprintf(gen, sizeof gen, "%s/generation_config.json", path);
        path = in_dir;
    }
    int err;
    cJSON *j = parse_file(path, &err);
    if (!j && err > 0) /* a name that is neither a file nor a preset: say both */
        return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0},
                              "cannot open model config %s (%s); the presets are qwen3-0.6b, qwen3-1.7b and qwen3-8b",
                              path, strerror(err));
    if (!j && err) return EVT_ERR_NOMEM;
    if (!j) return evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "%s is not valid JSON", path);
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%.63s", path); /* a display name (c->name has 64 bytes) */
    static const char *req[] = {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size"};
    int64_t *dst[] = {&c->hidden_size, &c->num_hidden_layers, &c->num_attention_heads, &c->intermediate_size, &c->vocab_size};
    evt_status st = EVT_OK;
    for (int i = 0; i < 5 && !st; i++)
        if (!get_int(j, req[i], dst[i], 1))
            st = evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "%s: '%s' must be a positive integer", path, req[i]);
    c->num_key_value_heads = c->num_attention_heads;
    if (!st && !get_int(j, "num_key_value_heads", &c->num_key_value_heads, 0))
        st = evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "%s: 'num_key_value_heads' must be a positive integer", path);
    c->head_dim = c->num_attention_heads ? c->hidden_size / c->num_attention_heads : 0;
    if (!st && !get_int(j, "head_dim", &c->head_dim, 0))
        st = evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "%s: 'head_dim' must be a positive integer", path);
    cJSON *v;
    c->rms_norm_eps = (v = cJSON_GetObjectItem(j, "rms_norm_eps")) && cJSON_IsNumber(v) ? v->valuedouble : 1e-6;
    /* theta at the top (transformers 4) or in rope_parameters (transformers 5
       writes it there); a scaled RoPE (yarn, linear, ...) is not this model */
    const cJSON *rp = cJSON_GetObjectItem(j, "rope_parameters"), *rs = cJSON_GetObjectItem(j, "rope_scaling");
    c->rope_theta = (v = cJSON_GetObjectItem(j, "rope_theta")) && cJSON_IsNumber(v)                      ? v->valuedouble
                    : cJSON_IsObject(rp) && (v = cJSON_GetObjectItem(rp, "rope_theta")) && cJSON_IsNumber(v) ? v->valuedouble
                                                                                                             : 1e6;
    for (int k = 0; k < 2 && !st; k++) {
        const cJSON *r = k ? rs : rp, *t = cJSON_IsObject(r) ? cJSON_GetObjectItem(r, "rope_type") : NULL;
        if (cJSON_IsString(t) && strcmp(t->valuestring, "default"))
            st = evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "%s: rope_type '%s': only the default RoPE is built", path,
                                t->valuestring);
    }
    if (!st && (v = cJSON_GetObjectItem(j, "attention_bias")) && cJSON_IsTrue(v))
        st = evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "%s: attention_bias: the model is built without biases", path);
    if (!st && (v = cJSON_GetObjectItem(j, "use_sliding_window")) && cJSON_IsTrue(v))
        st = evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "%s: use_sliding_window: every layer is built with full attention", path);
    if (!st && cJSON_GetObjectItem(j, "num_experts"))
        st = evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0}, "%s: num_experts: a mixture-of-experts model (the dense builder only)", path);
    c->tie_word_embeddings = (v = cJSON_GetObjectItem(j, "tie_word_embeddings")) && cJSON_IsTrue(v);
    c->n_eos = read_eos(j, c);
    cJSON_Delete(j);
    cJSON *g = dir ? parse_file(gen, &err) : NULL; /* its ids, where it names any, over config.json's */
    evt_qwen3_config ge;
    const int ng = g ? read_eos(g, &ge) : 0;
    if (ng) {
        memcpy(c->eos_token_ids, ge.eos_token_ids, sizeof ge.eos_token_ids);
        c->n_eos = ng;
    }
    cJSON_Delete(g);
    if (!st && (c->num_attention_heads % c->num_key_value_heads || c->head_dim % 2 || c->head_dim > 1024))
        st = evt_diag_error(d, EVT_ERR_IO, (evt_loc){0, 0},
                            "%s: heads must be a multiple of kv heads, head_dim even and at most 1024", path);
    return st;
}

double evt_qwen3_weight_bytes(const evt_qwen3_config *c)
{
    double H = c->hidden_size, hd = c->head_dim, nh = c->num_attention_heads, nkv = c->num_key_value_heads;
    double layer = H * (nh + 2 * nkv) * hd + nh * hd * H + 3 * H * c->intermediate_size + 2 * H + 2 * hd;
    return 2.0 * (layer * c->num_hidden_layers + (double)c->vocab_size * H + H);
}

double evt_qwen3_cache_bytes_per_token(const evt_qwen3_config *c)
{
    return 2.0 * 2.0 * (double)c->num_hidden_layers * (double)c->num_key_value_heads * (double)c->head_dim;
}

/* Tiles of a linear call over n rows: `target` (one wave of workers), or
 * fewer when rows are few; with max_rows < n / target, the fewest multiple
 * of target with at most max_rows rows per tile (the LM head's default).
 * Tiles are ragged (llm.c: rows [nb*n/T, (nb+1)*n/T)). */
static int64_t pick_tiles(int64_t n, int64_t target, int64_t max_rows)
{
    int64_t T = target < n ? target : n;
    while ((n + T - 1) / T > max_rows) T += target;
    return T < n ? T : n;
}

#define P(...) evt_pr(&o, __VA_ARGS__)
#define EVT_QWEN3_AUTO_SPLITS_MAX 8 /* adaptive split-KV count's cap (see Sx below) */
#define EVT_QWEN3_MERGE_ROWS_B 16   /* above this batch, one attention merge task per row (see MGx below) */

/* A projection's slice count as the program's expression of B into out (n
   slices from batch SF to 64, one elsewhere; "1" for n <= 1); 0 with a
   diagnostic when n exceeds its tiles T or its K. */
static int slice_count(const evt_qwen3_config *c, const char *what, int64_t n, int64_t T, int64_t N, int64_t K, long long SF,
                       long long ST, char out[96], evt_diag *d)
{
    if (n <= 1) {
        snprintf(out, 96, "1");
        return 1;
    }
    if (n > T || n > K) {
        evt_diag_error(d, EVT_ERR_VERIFY, (evt_loc){0, 0}, "model %s: %lld %s slices for %lld tiles of %lld rows over K %lld", c->name,
                       (long long)n, what, (long long)T, (long long)N, (long long)K);
        return 0;
    }
    snprintf(out, 96, "(1 + %lld * min(1, %lld / B) * min(1, B / %lld))", (long long)n - 1, ST, SF);
    return 1;
}

char *evt_qwen3_program(const evt_qwen3_config *c, const evt_qwen3_opts *opt, evt_diag *d)
{
    evt_qwen3_opts def = {.max_batch = 128, .max_ctx = 1024, .page_size = 16, .target_tasks = EVT_QWEN3_TARGET_TASKS, .seed = 1};
    evt_qwen3_opts op = opt ? *opt : def;
    if (op.max_batch <= 0) op.max_batch = def.max_batch;
    if (op.max_ctx <= 0) op.max_ctx = def.max_ctx;
    if (op.page_size <= 0) op.page_size = def.page_size;
    if (op.attn_splits < 0) op.attn_splits = 0;
    if (op.target_tasks <= 0) op.target_tasks = def.target_tasks;
    if (op.prefill) op.split_rope = 1; /* the prefill program is the split-rope form with one KV event per kv head */
    if (op.cache_requests < 0) op.cache_requests = 0;
    int64_t H = c->hidden_size, L = c->num_hidden_layers, nh = c->num_attention_heads, nkv = c->num_key_value_heads;
    int64_t hd = c->head_dim, I = c->intermediate_size, V = c->vocab_size;
    if (H <= 0 || L <= 0 || nh <= 0 || nkv <= 0 || nh % nkv || hd <= 0 || hd % 2 || hd > 1024 || I <= 0 || V <= 0) {
        evt_diag_error(d, EVT_ERR_VERIFY, (evt_loc){0, 0}, "model %s: invalid configuration", c->name);
        return NULL;
    }
    int64_t MP = (op.max_ctx + op.page_size - 1) / op.page_size, G = nh / nkv;
    /* split-KV partitions: given, or adaptive in B: about target_tasks
       attention tasks (at B = 1, 4 splits were 32 tasks for 132 workers;
       at B = 64, 1 split amortises a task's fixed cost - q/k RoPE, the
       cross-warp merge - over the whole context), at most
       EVT_QWEN3_AUTO_SPLITS_MAX: at batch 1, ctx 512, 8 splits of 64
       positions beat 16 of 32 (qwen3-0.6b 1.986 -> 1.879 ms, qwen3-8b
       6.134 -> 5.970 ms on an H200, bench/RESULTS.md) */
    /* merge tasks per row: one per kv group up to EVT_QWEN3_MERGE_ROWS_B rows,
       one per row above (the per-group tasks were mostly dispatch and
       notify: B x kv heads of them, merging a single split each once B is
       past target_tasks / (2 x kv heads)); merge_per_group keeps one per group */
    char MGx[96];
    if (op.merge_per_group) snprintf(MGx, sizeof MGx, "%lld", (long long)nkv);
    else snprintf(MGx, sizeof MGx, "max(1, %lld * min(1, %d / B))", (long long)nkv, EVT_QWEN3_MERGE_ROWS_B);
    char Sx[96];
    if (op.attn_splits > 0) snprintf(Sx, sizeof Sx, "%lld", (long long)op.attn_splits);
    else snprintf(Sx, sizeof Sx, "min(%d, max(1, %lld / (B * %lld)))", EVT_QWEN3_AUTO_SPLITS_MAX, (long long)op.target_tasks,
                  (long long)(op.split_rope && !op.prefill ? nh : nkv));
    /* merges only where a request's cache has more than one split: with one
       (S = 1, batches above target_tasks / (2 x kv heads)) attn_rope_split
       writes o itself and notifies AT_i, and the merge call has no tasks (a
       stage and its handoff less per layer; merge_one_split, or the
       split-rope form, whose attn_split does not, keeps the merges).
       MULTIx is 1 when S > 1, else 0; MGTx the merge tasks per row; PFORx
       the attention's `for` on its notify of P (none without the fold). */
    const int fold = !op.split_rope && !op.merge_one_split;
    /* with several splits, the last attention task of each merge group
       merges it (attn_rope_split's merge_last, counting in l_pc): no merge
       call, no P event, at any split count; merge_tasks keeps the merge
       tasks there (the ablation) */
    const int last = fold && !op.merge_tasks;
    /* requests per attention task (tiles/attn_requests.h): given, or as
       many as make the tasks one wave (ceil(B x kv heads / target_tasks):
       1 up to batch 16 at 8 kv heads, 4 at 64), so that a worker runs its
       share of the attention as one task rather than paying a dispatch, a
       wait and a notify per request. Only where the attention's events do
       not name the request (the last split merges, or one split): the merge
       tasks' P[b, ...] and the split-rope form keep one request a task.
       Bx is the grid's first extent */
    char Rx[160], Bx[400];
    if (op.attn_rows > 0) snprintf(Rx, sizeof Rx, "%lld", (long long)op.attn_rows);
    else snprintf(Rx, sizeof Rx, "max(1, (B * %lld + %lld) / %lld)", (long long)nkv, (long long)op.target_tasks - 1,
                  (long long)op.target_tasks);
    if (last && !op.split_rope && op.attn_rows != 1) snprintf(Bx, sizeof Bx, "(B + %s - 1) / %s", Rx, Rx);
    else snprintf(Bx, sizeof Bx, "B");
    char MULTIx[128], MGTx[256], PFORx[160] = "";
    snprintf(MULTIx, sizeof MULTIx, fold ? "min(1, %s - 1)" : "1", Sx);
    snprintf(MGTx, sizeof MGTx, fold ? "%s * %s" : "%s", MGx, MULTIx);
    if (fold) snprintf(PFORx, sizeof PFORx, " for f in [%s]", MULTIx);
    if (!op.split_rope && ((G + 2) * hd > 4096 || G > 8)) { /* attn_rope_split keeps a group's q heads, k and v in shared memory */
        evt_diag_error(d, EVT_ERR_VERIFY, (evt_loc){0, 0},
                       "model %s: %lld q heads per kv head of %lld: more than 8 heads or 4096 values per group "
                       "(use the split-rope form)", c->name, (long long)G, (long long)hd);
        return NULL;
    }
    int64_t nqkv = (nh + 2 * nkv) * hd;
    int64_t T_qkv = pick_tiles(nqkv, op.target_tasks, nqkv), T_o = pick_tiles(H, op.target_tasks, H);
    int64_t T_up = pick_tiles(I, op.target_tasks, I), T_dn = T_o;
    /* the LM head: lm_waves x target tiles, or tiles of at most 256 rows;
       at most one tile a vocabulary row */
    int64_t NC = op.lm_waves > 0 ? op.lm_waves * op.target_tasks : pick_tiles(V, op.target_tasks, 256);
    if (NC > V) NC = V;
    /* the O and down projections in k slices (o_slices, dn_slices, without
       fused norms or norm partials): KOx / KPx slices at batch slices_from-slices_to
       (33 by default: the TMA ring streams a slice of x; below 33 there is no
       ring for hidden sizes under 2048 and slice 0 would take all of K, and
       with one the slices measured level, session 50; above 64 the TMA path's
       two-halves and swapped forms take whole rows), T / KP bands of rows
       each, the norm after each adding the partials (add_rmsnorm) */
    const long long SF = op.slices_from > 0 ? (long long)op.slices_from : 33; /* the least sliced batch */
    const long long ST = op.slices_to > 0 ? (long long)op.slices_to : 64;     /* the largest */
    const int OS = op.o_slices > 1 && !op.fuse_norm && !op.norm_partials, DS = op.dn_slices > 1 && !op.fuse_norm && !op.norm_partials;
    char KOx[96], KPx[96];
    if (!slice_count(c, "O-projection", OS ? op.o_slices : 1, T_o, H, nh * hd, SF, ST, KOx, d) ||
        !slice_count(c, "down-projection", DS ? op.dn_slices : 1, T_dn, H, I, SF, ST, KPx, d))
        return NULL;
    /* a QKV tile notifies every head its rows touch: F elements from its
       first row's head, clamped to its last row's head (a repeated element
       is notified twice; wait-count inference counts both) */
    int64_t F = ((nqkv + T_qkv - 1) / T_qkv - 1 + hd - 1) / hd + 1;
    long long eps = llround(c->rms_norm_eps * 1e12), theta = llround(c->rope_theta);
    /* row <-> tile events: one counter each, or (ablation) one element per row */
    const char *EV = op.row_events ? "B" : "1", *RW = op.row_events ? "b" : "0";
    const char *AW = op.row_events ? "[r] for r in [B]" : "[0]";
    uint64_t sd = op.seed * 1000;
    evt_printer o = {0};
    P("# %s: one decode step. hidden %lld, %lld layers, %lld/%lld heads of %lld, mlp %lld, vocab %lld\n",
      c->name, (long long)H, (long long)L, (long long)nh, (long long)nkv, (long long)hd, (long long)I, (long long)V);
    P("sym B = 1 in [1, %lld]\n\n", (long long)op.max_batch);
    P("tensor tok : i32[B] input = random(seed=%llu, lo=0, hi=%lld)\n", (unsigned long long)sd + 1, (long long)V);
    P("tensor pos : i32[B] input = const(%lld)\n", (long long)(op.max_ctx / 2));
    P("tensor bt : i32[B, %lld] input = range\n", (long long)MP);

#define WEIGHT(name, shape, fan) \
    P("tensor %s : bf16[%s] weight = random(seed=%llu, lo=%.9g, hi=%.9g)\n", name, shape, (unsigned long long)++sd, \
      -sqrt(3.0 / (fan)), sqrt(3.0 / (fan)))
    /* an input or post-attention norm weight: unit when folded into the
       matrices after it, else random (seed sd) */
    const int fold_nw = op.fold_norms || op.fuse_norm;
#define NORMW(what)                                                                                                            \
    do {                                                                                                                       \
        if (fold_nw) P("tensor l%lld_" what " : bf16[%lld] weight = const(1)\n", (long long)l, (long long)H);                   \
        else P("tensor l%lld_" what " : bf16[%lld] weight = random(seed=%llu, lo=0.8, hi=1.2)\n", (long long)l, (long long)H, \
               (unsigned long long)sd);                                                                                        \
    } while (0)
    char nm[64], shp[128], CRx[32] = "B * ";
    if (op.cache_requests > 0) snprintf(CRx, sizeof CRx, "%lld * ", (long long)op.cache_requests);
    snprintf(shp, sizeof shp, "%lld, %lld", (long long)V, (long long)H);
    P("tensor embed : bf16[%s] weight = random(seed=%llu, lo=-1, hi=1)\n", shp, (unsigned long long)++sd);
    for (int64_t l = 0; l < L; l++) {
        /* folded norms: their weights are in the matrices (the norm calls
           get unit weights; fused norms have none), and the other tensors
           keep the seeds of the unfolded model */
        ++sd;
        if (!op.fuse_norm) NORMW("in_norm");
        snprintf(nm, sizeof nm, "l%lld_wqkv", (long long)l);
        snprintf(shp, sizeof shp, "%lld, %lld", (long long)nqkv, (long long)H);
        WEIGHT(nm, shp, (double)H);
        P("tensor l%lld_q_norm : bf16[%lld] weight = random(seed=%llu, lo=0.8, hi=1.2)\n", (long long)l, (long long)hd, (unsigned long long)++sd);
        P("tensor l%lld_k_norm : bf16[%lld] weight = random(seed=%llu, lo=0.8, hi=1.2)\n", (long long)l, (long long)hd, (unsigned long long)++sd);
        snprintf(nm, sizeof nm, "l%lld_wo", (long long)l);
        snprintf(shp, sizeof shp, "%lld, %lld", (long long)H, (long long)(nh * hd));
        WEIGHT(nm, shp, (double)(nh * hd));
        ++sd;
        if (!op.fuse_norm) NORMW("post_norm");
        snprintf(shp, sizeof shp, "%lld, %lld", (long long)I, (long long)H);
        snprintf(nm, sizeof nm, "l%lld_wg", (long long)l);
        WEIGHT(nm, shp, (double)H);
        snprintf(nm, sizeof nm, "l%lld_wu", (long long)l);
        WEIGHT(nm, shp, (double)H);
        snprintf(nm, sizeof nm, "l%lld_wd", (long long)l);
        snprintf(shp, sizeof shp, "%lld, %lld", (long long)H, (long long)I);
        WEIGHT(nm, shp, (double)I);
        for (int kv = 0; kv < 2; kv++) /* MP pages a request: B of them, or cache_requests whatever B */
            P("tensor l%lld_%s : bf16[%s%lld, %lld, %lld, %lld] scratch = random(seed=%llu, lo=-1, hi=1)\n", (long long)l,
              kv ? "vc" : "kc", CRx, (long long)MP, (long long)op.page_size, (long long)nkv, (long long)hd, (unsigned long long)++sd);
    }
    P("tensor final_norm : bf16[%lld] weight = random(seed=%llu, lo=0.8, hi=1.2)\n", (long long)H, (unsigned long long)++sd);
    const char *lm = "embed";
    if (!c->tie_word_embeddings) {
        snprintf(shp, sizeof shp, "%lld, %lld", (long long)V, (long long)H);
        WEIGHT("lm_head", shp, (double)H);
        lm = "lm_head";
    }
    /* activations */
    for (int64_t l = 0; l <= L; l++) P("tensor x%lld : bf16[B, %lld] scratch\n", (long long)l, (long long)H);
    const int SN = !op.fuse_norm;
    const int PN = SN && op.norm_partials; /* norm partials: n1 at layer 0 only, no n2 */
    const char *PF = op.prefetch ? " prefetch" : ""; /* GEMV weights pulled (or streamed) ahead of the inputs; the attention's first cache loads (early loads) */
    for (int64_t l = 0; l < L; l++) {
        if (SN && (!PN || l == 0)) P("tensor l%lld_h : bf16[B, %lld] scratch\n", (long long)l, (long long)H);
        P("tensor l%lld_qkv : bf16[B, %lld] scratch\n", (long long)l, (long long)nqkv);
        if (op.split_rope) P("tensor l%lld_q : bf16[B, %lld, %lld] scratch\n", (long long)l, (long long)nh, (long long)hd);
        P("tensor l%lld_part : f32[B, %lld, %s, %lld] scratch\n", (long long)l, (long long)nh, Sx, (long long)(hd + 2));
        P("tensor l%lld_o : bf16[B, %lld] scratch\n", (long long)l, (long long)(nh * hd));
        if (!op.split_rope) P("tensor l%lld_pc : i32[B, %s] scratch = zeros\n", (long long)l, MGx);
        P("tensor l%lld_xa : bf16[B, %lld] scratch\n", (long long)l, (long long)H);
        if (SN && !PN) P("tensor l%lld_h2 : bf16[B, %lld] scratch\n", (long long)l, (long long)H);
        /* norm partials: each producer call's partials and count, and the sums */
        if (PN) P("tensor l%lld_po : f32[B, %lld] scratch\ntensor l%lld_co : i32[1] scratch = zeros\ntensor l%lld_sxa : f32[B] scratch\n",
                  (long long)l, (long long)T_o, (long long)l, (long long)l);
        if (PN && l + 1 < L)
            P("tensor l%lld_pd : f32[B, %lld] scratch\ntensor l%lld_cd : i32[1] scratch = zeros\ntensor x%lld_ss : f32[B] scratch\n",
              (long long)l, (long long)T_dn, (long long)l, (long long)l + 1);
        P("tensor l%lld_a : bf16[B, %lld] scratch\n", (long long)l, (long long)I);
        if (DS) P("tensor l%lld_dp : f32[%s, B, %lld] scratch\n", (long long)l, KPx, (long long)H);
        if (OS) P("tensor l%lld_op : f32[%s, B, %lld] scratch\n", (long long)l, KOx, (long long)H);
    }
    P("tensor hf : bf16[B, %lld] scratch\n", (long long)H);
    P("tensor logits : bf16[B, %lld] output\n", (long long)V);
    /* argmax chunks per row: one per LM tile (ablation), or about
       target_tasks argmax tasks in all */
    char NAx[96];
    if (op.argmax_per_tile) snprintf(NAx, sizeof NAx, "%lld", (long long)NC);
    else snprintf(NAx, sizeof NAx, "max(1, min(%lld, %lld / B))", (long long)V, (long long)op.target_tasks);
    P("tensor pv : f32[B, %s] scratch\n", NAx);
    P("tensor pi : i32[B, %s] scratch\n", NAx);
    P("tensor next : i32[B] output\n");
    /* RoPE's angles per cache position (cos | sin), filled once on the host in
       double as the C tiles compute them: attn_rope_split reads row pos[b]
       before its waits instead of a double pow + sincos per task. Declared
       last, so that no other tensor's id (part of its random seed) moves */
    if (!op.split_rope)
        P("tensor rope : f32[%lld, %lld] weight = rope(theta=%lld)\n", (long long)(MP * op.page_size), (long long)hd, theta);
    P("\n");
    /* events */
    /* event names carry the layer as a prefix (e12_QKV): no name is another's prefix-extension */
    for (int64_t l = 0; l <= L; l++) P("event e%lld_X[%s]\n", (long long)l, EV);
    for (int64_t l = 0; l < L; l++) {
        if (SN && (!PN || l == 0)) P("event e%lld_H[%s]\n", (long long)l, EV);
        P("event e%lld_QKV[%lld]\n", (long long)l, (long long)(op.qkv_per_head ? nh + 2 * nkv : 1));
        if (op.prefill) P("event e%lld_KV[%lld]\n", (long long)l, (long long)nkv);
        else if (op.split_rope) P("event e%lld_Q[B, %lld]\nevent e%lld_KV[B, %lld]\n", (long long)l, (long long)nh, (long long)l, (long long)nkv);
        if (!last) P("event e%lld_P[B, %s]\n", (long long)l, MGx);
        P("event e%lld_AT[1]\nevent e%lld_XA[%s]\nevent e%lld_A[1]\n", (long long)l, (long long)l, EV, (long long)l);
        if (SN && !PN) P("event e%lld_H2[%s]\n", (long long)l, EV);
    }
    P("event HF[%s]\n", EV);
    P("event LM[%lld]\nevent AP[B]\n\n", (long long)(op.argmax_per_tile ? NC : 1));
    /* calls */
    P("call embed_tok = embed(tok, embed, x0) over (b) in [B] {\n    notify e0_X[%s]\n}\n", RW);
    for (int64_t l = 0; l < L; l++) {
        long long i = (long long)l;
        const int n1 = SN && (!PN || l == 0); /* layer l's input norm is a call */
        if (n1 && DS && l > 0) /* the residual x_i from layer i-1's xa and its down partials */
            P("call l%lld_n1 = add_rmsnorm(l%lld_xa, l%lld_dp, l%lld_in_norm, x%lld, l%lld_h, %lld) over (b) in [B] {\n"
              "    wait e%lld_X[%s]\n    notify e%lld_H[%s]\n}\n", i, i - 1, i - 1, i, i, i, eps, i, RW, i, RW);
        else if (n1)
            P("call l%lld_n1 = rmsnorm(x%lld, l%lld_in_norm, l%lld_h, %lld) over (b) in [B] {\n    wait e%lld_X[%s]\n    notify e%lld_H[%s]\n}\n",
              i, i, i, i, eps, i, RW, i, RW);
        /* QKV waits: the whole projection, or (qkv_per_head) the heads a task reads */
        char qn[200], wq_h[64], wk_g[64], wv_g[64], wq_grp[160];
        if (!op.qkv_per_head) {
            snprintf(qn, sizeof qn, "notify e%lld_QKV[0]", i);
            snprintf(wq_h, sizeof wq_h, "wait e%lld_QKV[0]", i);
            snprintf(wk_g, sizeof wk_g, "wait e%lld_QKV[0]", i);
            wv_g[0] = 0;
            snprintf(wq_grp, sizeof wq_grp, "wait e%lld_QKV[0]", i);
        } else {
            snprintf(qn, sizeof qn, "notify e%lld_QKV[min(nb * %lld / %lld / %lld + f, ((nb + 1) * %lld / %lld - 1) / %lld)] for f in [%lld]",
                     i, (long long)nqkv, (long long)T_qkv, (long long)hd, (long long)nqkv, (long long)T_qkv, (long long)hd, (long long)F);
            snprintf(wq_h, sizeof wq_h, "wait e%lld_QKV[h]", i);
            snprintf(wk_g, sizeof wk_g, "wait e%lld_QKV[%lld + g]", i, (long long)nh);
            snprintf(wv_g, sizeof wv_g, "\n    wait e%lld_QKV[%lld + g]", i, (long long)(nh + nkv));
            snprintf(wq_grp, sizeof wq_grp, "wait e%lld_QKV[g * %lld + f] for f in [%lld]\n    %s", i, (long long)G, (long long)G, wk_g);
        }
        if (n1)
            P("call l%lld_qkvproj = linear(l%lld_h, l%lld_wqkv, l%lld_qkv, %lld) over (nb) in [%lld]%s {\n"
              "    wait e%lld_H%s\n    %s\n}\n", i, i, i, i, (long long)T_qkv, (long long)T_qkv, PF, i, AW, qn);
        else if (PN) /* the input norm from the sums of squares the last dn left */
            P("call l%lld_qkvproj = ss_linear(x%lld, l%lld_wqkv, l%lld_qkv, x%lld_ss, %lld, %lld) over (nb) in [%lld]%s {\n"
              "    wait e%lld_X%s\n    %s\n}\n", i, i, i, i, i, (long long)T_qkv, eps, (long long)T_qkv, PF, i, AW, qn);
        else /* the input norm inside every tile */
            P("call l%lld_qkvproj = rms_linear(x%lld, l%lld_wqkv, l%lld_qkv, %lld, %lld) over (nb) in [%lld]%s {\n"
              "    wait e%lld_X%s\n    %s\n}\n", i, i, i, i, (long long)T_qkv, eps, (long long)T_qkv, PF, i, AW, qn);
        if (op.prefill) { /* a task a run of rows (as the attention's runs of requests) and kv head for the q/k norm +
                             RoPE and the append, then a task a row, kv head and split for the attention */
            P("call l%lld_qk = qk_rope_append(l%lld_qkv, l%lld_q_norm, l%lld_k_norm, pos, bt, l%lld_kc, l%lld_vc, l%lld_q, %lld, %lld) "
              "over (b, g) in [(B + %s - 1) / %s, %lld] {\n    %s%s\n    notify e%lld_KV[g]\n}\n",
              i, i, i, i, i, i, i, eps, theta, Rx, Rx, (long long)nkv, wq_grp, wv_g, i);
            P("call l%lld_at = attn_split_group(l%lld_q, l%lld_kc, l%lld_vc, bt, pos, l%lld_part) over (b, g, s) in [B, %lld, %s] "
              "policy dynamic {\n    wait e%lld_KV[g]\n    notify e%lld_P[b, g * %s / %lld]\n}\n",
              i, i, i, i, i, (long long)nkv, Sx, i, i, MGx, (long long)nkv);
        } else if (op.split_rope) {
            P("call l%lld_qr = q_rope(l%lld_qkv, l%lld_q_norm, pos, l%lld_q, %lld, %lld) over (b, h) in [B, %lld] {\n"
              "    %s\n    notify e%lld_Q[b, h]\n}\n", i, i, i, i, eps, theta, (long long)nh, wq_h, i);
            P("call l%lld_kr = k_rope_append(l%lld_qkv, l%lld_k_norm, pos, bt, l%lld_kc, l%lld_vc, %lld, %lld, %lld) over (b, g) in [B, %lld] {\n"
              "    %s%s\n    notify e%lld_KV[b, g]\n}\n",
              i, i, i, i, i, (long long)nh, eps, theta, (long long)nkv, wk_g, wv_g, i);
            P("call l%lld_at = attn_split(l%lld_q, l%lld_kc, l%lld_vc, bt, pos, l%lld_part) over (b, h, s) in [B, %lld, %s] policy dynamic {\n"
              "    wait e%lld_Q[b, h]\n    wait e%lld_KV[b, h / %lld]\n    notify e%lld_P[b, h / %lld * %s / %lld]\n}\n",
              i, i, i, i, i, (long long)nh, Sx, i, i, (long long)G, i, (long long)G, MGx, (long long)nkv);
        } else {
            P("call l%lld_at = attn_rope_split(l%lld_qkv, l%lld_q_norm, l%lld_k_norm, pos, bt, l%lld_kc, l%lld_vc, l%lld_part, l%lld_o, "
              "l%lld_pc, rope, %lld, %d) over (b, g, s) in [%s, %lld, %s] policy dynamic%s {\n    %s%s\n",
              i, i, i, i, i, i, i, i, i, eps, last, Bx, (long long)nkv, Sx, op.attn_no_early ? "" : PF, wq_grp, wv_g);
            if (last) {
                P("    notify e%lld_AT[0]\n", i);
            } else {
                P("    notify e%lld_P[b, g * %s / %lld]%s\n", i, MGx, (long long)nkv, PFORx);
                if (fold) P("    notify e%lld_AT[0] for f in [1 - %s]\n", i, MULTIx);
            }
            P("}\n");
        }
        if (!last)
            P("call l%lld_am = attn_merge_group(l%lld_part, l%lld_o, %lld / %s) over (b, g) in [B, %s] {\n    wait e%lld_P[b, g]\n"
              "    notify e%lld_AT[0]\n}\n", i, i, i, (long long)nh, MGx, MGTx, i, i);
        if (PN)
            P("call l%lld_oproj = linear_res_ss(l%lld_o, l%lld_wo, x%lld, l%lld_xa, l%lld_po, l%lld_sxa, l%lld_co, %lld) over (nb) in [%lld]%s {\n"
              "    wait e%lld_AT[0]\n    notify e%lld_XA%s\n}\n", i, i, i, i, i, i, i, i, (long long)T_o, (long long)T_o, PF, i, i, AW);
        else if (OS) /* partials only: n2 adds them to x_i and writes xa */
            P("call l%lld_oproj = linear_part(l%lld_o, l%lld_wo, l%lld_op) over (nb) in [%s * (%lld / %s)]%s {\n"
              "    wait e%lld_AT[0]\n    notify e%lld_XA%s\n}\n", i, i, i, i, KOx, (long long)T_o, KOx, PF, i, i, AW);
        else
            P("call l%lld_oproj = linear_res(l%lld_o, l%lld_wo, x%lld, l%lld_xa, %lld) over (nb) in [%lld]%s {\n"
              "    wait e%lld_AT[0]\n    notify e%lld_XA%s\n}\n", i, i, i, i, i, (long long)T_o, (long long)T_o, PF, i, i, AW);
        if (PN) {
            P("call l%lld_up = ss_mlp_up(l%lld_xa, l%lld_wg, l%lld_wu, l%lld_a, l%lld_sxa, %lld, %lld) over (nb) in [%lld]%s {\n"
              "    wait e%lld_XA%s\n    notify e%lld_A[0]\n}\n", i, i, i, i, i, i, (long long)T_up, eps, (long long)T_up, PF, i, AW, i);
        } else if (SN) {
            if (OS)
                P("call l%lld_n2 = add_rmsnorm(x%lld, l%lld_op, l%lld_post_norm, l%lld_xa, l%lld_h2, %lld) over (b) in [B] {\n"
                  "    wait e%lld_XA[%s]\n    notify e%lld_H2[%s]\n}\n", i, i, i, i, i, i, eps, i, RW, i, RW);
            else
                P("call l%lld_n2 = rmsnorm(l%lld_xa, l%lld_post_norm, l%lld_h2, %lld) over (b) in [B] {\n    wait e%lld_XA[%s]\n    notify e%lld_H2[%s]\n}\n",
                  i, i, i, i, eps, i, RW, i, RW);
            P("call l%lld_up = mlp_up(l%lld_h2, l%lld_wg, l%lld_wu, l%lld_a, %lld) over (nb) in [%lld]%s {\n"
              "    wait e%lld_H2%s\n    notify e%lld_A[0]\n}\n", i, i, i, i, i, (long long)T_up, (long long)T_up, PF, i, AW, i);
        } else {
            P("call l%lld_up = rms_mlp_up(l%lld_xa, l%lld_wg, l%lld_wu, l%lld_a, %lld, %lld) over (nb) in [%lld]%s {\n"
              "    wait e%lld_XA%s\n    notify e%lld_A[0]\n}\n", i, i, i, i, i, (long long)T_up, eps, (long long)T_up, PF, i, AW, i);
        }
        if (PN && l + 1 < L)
            P("call l%lld_dn = linear_res_ss(l%lld_a, l%lld_wd, l%lld_xa, x%lld, l%lld_pd, x%lld_ss, l%lld_cd, %lld) over (nb) in [%lld]%s {\n"
              "    wait e%lld_A[0]\n    notify e%lld_X%s\n}\n", i, i, i, i, i + 1, i, i + 1, i, (long long)T_dn, (long long)T_dn, PF, i, i + 1, AW);
        else if (DS) /* partials only: the next norm adds them to xa and writes x_{i+1} */
            P("call l%lld_dn = linear_part(l%lld_a, l%lld_wd, l%lld_dp) over (nb) in [%s * (%lld / %s)]%s {\n"
              "    wait e%lld_A[0]\n    notify e%lld_X%s\n}\n", i, i, i, i, KPx, (long long)T_dn, KPx, PF, i, i + 1, AW);
        else
            P("call l%lld_dn = linear_res(l%lld_a, l%lld_wd, l%lld_xa, x%lld, %lld) over (nb) in [%lld]%s {\n"
              "    wait e%lld_A[0]\n    notify e%lld_X%s\n}\n", i, i, i, i, i + 1, (long long)T_dn, (long long)T_dn, PF, i, i + 1, AW);
    }
    const char *lm_elem = op.argmax_per_tile ? "nb" : "0", *amax_elem = op.argmax_per_tile ? "c" : "0"; /* LM[...] */
    /* the final norm stays a call with fused norms too: with tied embeddings
       the LM head's matrix is the embedding table, which its weight cannot be
       folded into (one handoff a step) */
    if (DS)
        P("call final = add_rmsnorm(l%lld_xa, l%lld_dp, final_norm, x%lld, hf, %lld) over (b) in [B] {\n    wait e%lld_X[%s]\n"
          "    notify HF[%s]\n}\n", (long long)L - 1, (long long)L - 1, (long long)L, eps, (long long)L, RW, RW);
    else
        P("call final = rmsnorm(x%lld, final_norm, hf, %lld) over (b) in [B] {\n    wait e%lld_X[%s]\n    notify HF[%s]\n}\n",
          (long long)L, eps, (long long)L, RW, RW);
    P("call lm = linear(hf, %s, logits, %lld) over (nb) in [%lld]%s {\n    wait HF%s\n    notify LM[%s]\n}\n",
      lm, (long long)NC, (long long)NC, PF, AW, lm_elem);
    P("call amax = argmax_part(logits, pv, pi) over (b, c) in [B, %s] {\n    wait LM[%s]\n    notify AP[b]\n}\n", NAx, amax_elem);
    P("call pick = argmax_final(pv, pi, next) over (b) in [B] {\n    wait AP[b]\n}\n");
    return o.buf;
}
