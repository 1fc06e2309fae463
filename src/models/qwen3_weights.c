/* qwen3_weights.c — a Hugging Face Qwen3 checkpoint (safetensors) into the
 * weight tensors of a decode program built by evt_qwen3_program.
 *
 *   program tensor     checkpoint tensor(s)                      note
 *   embed              model.embed_tokens.weight                 [V, H]
 *   lL_wqkv            model.layers.L.self_attn.{q,k,v}_proj     rows q, then k, then v;
 *                        .weight                                 columns x input_layernorm if folded
 *   lL_q_norm, k_norm  ...self_attn.{q,k}_norm.weight            [head_dim]
 *   lL_wo              ...self_attn.o_proj.weight                [H, heads x head_dim]
 *   lL_wg, lL_wu       ...mlp.{gate,up}_proj.weight              columns x post_attention_layernorm if folded
 *   lL_wd              ...mlp.down_proj.weight                   [H, I]
 *   lL_in_norm,        ...input_layernorm.weight,                unfolded programs only (folded ones
 *   lL_post_norm       ...post_attention_layernorm.weight        keep their unit weights)
 *   final_norm         model.norm.weight
 *   lm_head            lm_head.weight                            untied models only
 *   rope               (none: the program computes its table)
 *
 * Folding (evt_qwen3_opts.fold_norms): y = W (g * x / rms(x)) = (W diag(g))
 * x / rms(x), so a matrix's column k is scaled by the norm's weight g[k] in
 * f32 and rounded to bf16 once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "evt/models.h"
#include "evt/safetensors.h"

static const evt_loc NOLOC = {0, 0};

/* One pass over the checkpoint: reading into a program's buffers, or (g and
   b NULL) only checking that every tensor is there with its shape and a
   dtype the reader takes (evt_qwen3_check_weights). */
typedef struct loader {
    const evt_st *st;
    const evt_graph *g;
    evt_buffers *b;
} loader;

static evt_status read_bf16(const loader *ld, const char *ckpt, int rank, const int64_t *shape, uint16_t *dst,
                            const float *scale, evt_diag *d)
{
    return ld->b ? evt_st_read_bf16(ld->st, ckpt, rank, shape, dst, scale, d) : evt_st_check(ld->st, ckpt, rank, shape, d);
}

static evt_status read_f32(const loader *ld, const char *ckpt, int64_t n, float *dst, evt_diag *d)
{
    return ld->b ? evt_st_read_f32(ld->st, ckpt, 1, &n, dst, d) : evt_st_check(ld->st, ckpt, 1, &n, d);
}

/* The program tensor `name`'s buffer, checked against the shape the config
   implies (rows x cols, or a vector when cols is 0). NULL (with *st set)
   when absent or of another shape; NULL with *st EVT_OK when only checking. */
static uint16_t *program_bf16(const loader *ld, const char *name, int64_t rows, int64_t cols, evt_status *st, evt_diag *d)
{
    if (!ld->b) return NULL;
    const evt_tensor *t = evt_graph_find_tensor(ld->g, name);
    if (!t) {
        *st = evt_diag_error(d, EVT_ERR_VERIFY, NOLOC, "load weights: the program has no tensor %s", name);
        return NULL;
    }
    const int64_t *dims = evt_buffers_dims(ld->b, t->id);
    const int rank = cols ? 2 : 1;
    if (t->dtype != EVT_BF16 || t->rank != rank || dims[0] != rows || (cols && dims[1] != cols)) {
        *st = evt_diag_error(d, EVT_ERR_VERIFY, NOLOC, "load weights: program tensor %s is not bf16[%lld%s%lld]", name,
                             (long long)rows, cols ? ", " : "", (long long)cols);
        return NULL;
    }
    return evt_buffers_data(ld->b, t->id, NULL);
}

static evt_status matrix(const loader *ld, const char *prog, const char *ckpt, int64_t rows, int64_t cols, const float *scale,
                         evt_diag *d)
{
    evt_status s = EVT_OK;
    uint16_t *dst = program_bf16(ld, prog, rows, cols, &s, d);
    if (s) return s;
    const int64_t shape[2] = {rows, cols};
    return read_bf16(ld, ckpt, 2, shape, dst, scale, d);
}

static evt_status vector(const loader *ld, const char *prog, const char *ckpt, int64_t n, evt_diag *d)
{
    evt_status s = EVT_OK;
    uint16_t *dst = program_bf16(ld, prog, n, 0, &s, d);
    if (s) return s;
    return read_bf16(ld, ckpt, 1, &n, dst, NULL, d);
}

/* One layer's tensors; gin, gpost: scratch of H floats for the folded norms. */
static evt_status layer(const loader *ld, const evt_qwen3_config *c, int fold, int64_t l, float *gin, float *gpost, evt_diag *d)
{
    const int64_t H = c->hidden_size, hd = c->head_dim, nq = c->num_attention_heads * hd, nkv = c->num_key_value_heads * hd,
                  I = c->intermediate_size;
    char p[64], k[160], k2[160];
    snprintf(p, sizeof p, "model.layers.%lld.", (long long)l);
    evt_status s = EVT_OK;
#define PROG(suffix) (snprintf(k2, sizeof k2, "l%lld_" suffix, (long long)l), k2)
#define CKPT(suffix) (snprintf(k, sizeof k, "%s" suffix, p), k)
    if (fold) {
        if ((s = read_f32(ld, CKPT("input_layernorm.weight"), H, gin, d))) return s;
        if ((s = read_f32(ld, CKPT("post_attention_layernorm.weight"), H, gpost, d))) return s;
    } else {
        if ((s = vector(ld, PROG("in_norm"), CKPT("input_layernorm.weight"), H, d))) return s;
        if ((s = vector(ld, PROG("post_norm"), CKPT("post_attention_layernorm.weight"), H, d))) return s;
    }
    /* QKV: q's rows, then k's, then v's, in one matrix */
    uint16_t *qkv = program_bf16(ld, PROG("wqkv"), nq + 2 * nkv, H, &s, d);
    if (s) return s;
    const int64_t sq[2] = {nq, H}, skv[2] = {nkv, H};
    const float *sin = fold ? gin : NULL;
    if ((s = read_bf16(ld, CKPT("self_attn.q_proj.weight"), 2, sq, qkv, sin, d))) return s;
    if ((s = read_bf16(ld, CKPT("self_attn.k_proj.weight"), 2, skv, qkv ? qkv + nq * H : NULL, sin, d))) return s;
    if ((s = read_bf16(ld, CKPT("self_attn.v_proj.weight"), 2, skv, qkv ? qkv + (nq + nkv) * H : NULL, sin, d))) return s;
    if ((s = vector(ld, PROG("q_norm"), CKPT("self_attn.q_norm.weight"), hd, d))) return s;
    if ((s = vector(ld, PROG("k_norm"), CKPT("self_attn.k_norm.weight"), hd, d))) return s;
    if ((s = matrix(ld, PROG("wo"), CKPT("self_attn.o_proj.weight"), H, nq, NULL, d))) return s;
    const float *spost = fold ? gpost : NULL;
    if ((s = matrix(ld, PROG("wg"), CKPT("mlp.gate_proj.weight"), I, H, spost, d))) return s;
    if ((s = matrix(ld, PROG("wu"), CKPT("mlp.up_proj.weight"), I, H, spost, d))) return s;
    return matrix(ld, PROG("wd"), CKPT("mlp.down_proj.weight"), H, I, NULL, d);
#undef PROG
#undef CKPT
}

/* The whole map: every tensor the config needs, in order. */
static evt_status load(const char *path, const loader *ld, const evt_qwen3_config *c, int fold_norms, evt_diag *d)
{
    const int64_t H = c->hidden_size, V = c->vocab_size;
    float *gin = malloc((size_t)H * sizeof(float)), *gpost = malloc((size_t)H * sizeof(float));
    evt_status s = !gin || !gpost ? EVT_ERR_NOMEM : EVT_OK;
    if (!s) s = matrix(ld, "embed", "model.embed_tokens.weight", V, H, NULL, d);
    for (int64_t l = 0; l < c->num_hidden_layers && !s; l++) s = layer(ld, c, fold_norms, l, gin, gpost, d);
    if (!s) s = vector(ld, "final_norm", "model.norm.weight", H, d);
    if (!s && !c->tie_word_embeddings) {
        if (!evt_st_find(ld->st, "lm_head.weight", NULL))
            s = evt_diag_error(d, EVT_ERR_IO, NOLOC, "%s: no lm_head.weight, and the config does not tie the embeddings", path);
        else s = matrix(ld, "lm_head", "lm_head.weight", V, H, NULL, d);
    }
    free(gin);
    free(gpost);
    return s;
}

/* Opens the checkpoint and walks the map into b (or, b NULL, only checks). */
static evt_status open_and_load(const char *path, const evt_qwen3_config *c, int fold_norms, const evt_graph *g, evt_buffers *b,
                                evt_diag *d)
{
    evt_st *st = NULL;
    evt_status s = evt_st_open(path, &st, d);
    if (s) return s;
    const loader ld = {st, g, b};
    s = load(path, &ld, c, fold_norms, d);
    evt_st_close(st);
    return s;
}

evt_status evt_qwen3_load_weights(const char *path, const evt_qwen3_config *c, int fold_norms, const evt_graph *g,
                                  evt_buffers *b, evt_diag *d)
{
    return open_and_load(path, c, fold_norms, g, b, d);
}

evt_status evt_qwen3_check_weights(const char *path, const evt_qwen3_config *c, evt_diag *d)
{
    return open_and_load(path, c, 1, NULL, NULL, d);
}
