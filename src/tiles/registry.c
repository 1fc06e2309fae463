/* registry.c — the table of tile operators: built-ins and user-registered.
 * Each entry is the single declaration both targets use (evt/tiles.h). */
#include <string.h>
#include <time.h>
#include "tiles/tiles_cpu.h"

#define IN(n, t, r) {n, EVT_PARAM_IN, t, r}
#define OUT(n, t, r) {n, EVT_PARAM_OUT, t, r}
#define INT(n) {n, EVT_PARAM_INT, 0, 0}

static const evt_tile_decl builtins[] = {
    {"rowsum_partial", "P[i*tile+r, j] = sum of A[i*tile+r, j*tile .. +tile)", 3,
     {IN("A", EVT_F32, 2), OUT("P", EVT_F32, 2), INT("tile")}, evt_tile_rowsum_partial, "tiles/rowsum.cuh", 128, 0, 0, 0, NULL, 0, 0},
    {"rowsum_final", "C[i*tile+r] = sum over j of P[i*tile+r, j]", 3,
     {IN("P", EVT_F32, 2), OUT("C", EVT_F32, 1), INT("tile")}, evt_tile_rowsum_final, "tiles/rowsum.cuh", 128, 0, 0, 0, NULL, 0, 0},
    {"gemm_f32", "C tile (mi, ni) of A @ B, tiles tm x tn", 5,
     {IN("A", EVT_F32, 2), IN("B", EVT_F32, 2), OUT("C", EVT_F32, 2), INT("tm"), INT("tn")},
     evt_tile_gemm_f32, "tiles/gemm.cuh", 128, 0, 1, 0, NULL, 0, 0},
    {"spin", "busy-wait ns (x factor when lin % period >= period - heavy), Y[lin] = 1 + lin + sum X[lin*fan..+fan)", 7,
     {IN("X", EVT_F32, 1), OUT("Y", EVT_F32, 1), INT("ns"), INT("fan"), INT("period"), INT("heavy"), INT("factor")},
     evt_tile_spin, "tiles/spin.cuh", 32, 0, 0, 0, NULL, 0, 0},
    {"mark", "M[lin] += 1 (counts executions of each task)", 1,
     {{"M", EVT_PARAM_INOUT, EVT_I32, 1}}, evt_tile_mark, "tiles/spin.cuh", 32, 0, 0, 0, NULL, 0, 0},
    {"chain_step", "X[i] = X[i - dir] + 1 (1 at the chain's start); dir = +1 or -1", 2,
     {{"X", EVT_PARAM_INOUT, EVT_F32, 1}, INT("dir")}, evt_tile_chain_step, "tiles/spin.cuh", 32, 0, 0, 0, NULL, 0, 0},
    {"moe_route", "router: top-K experts per token, softmax weights, grouping index", 7,
     {IN("x", EVT_F32, 2), IN("wg", EVT_F32, 2), OUT("topk", EVT_I32, 2), OUT("topw", EVT_F32, 2),
      OUT("indptr", EVT_I32, 1), OUT("pos", EVT_I32, 2), OUT("row_tok", EVT_I32, 1)},
     evt_tile_moe_route, "tiles/moe.cuh", 128, 0, 0, 0, NULL, 0, 0},
    {"moe_index", "grouping index from a given routing topk", 4,
     {IN("topk", EVT_I32, 2), OUT("indptr", EVT_I32, 1), OUT("pos", EVT_I32, 2), OUT("row_tok", EVT_I32, 1)},
     evt_tile_moe_index, "tiles/moe.cuh", 32, 0, 0, 0, NULL, 0, 0},
    {"moe_group", "xg[pos[t, k]] = x[t]", 3,
     {IN("x", EVT_F32, 2), IN("pos", EVT_I32, 2), OUT("xg", EVT_F32, 2)}, evt_tile_moe_group, "tiles/moe.cuh", 128, 0, 0, 0, NULL, 0, 0},
    {"moe_expert", "yg[r] = xg[r] @ w[expert of row r]", 4,
     {IN("xg", EVT_F32, 2), IN("w", EVT_F32, 3), IN("indptr", EVT_I32, 1), OUT("yg", EVT_F32, 2)},
     evt_tile_moe_expert, "tiles/moe.cuh", 128, 0, 0, 0, NULL, 0, 0},
    {"moe_combine", "y[t] = sum over k of topw[t, k] * yg[pos[t, k]]", 4,
     {IN("yg", EVT_F32, 2), IN("pos", EVT_I32, 2), IN("topw", EVT_F32, 2), OUT("y", EVT_F32, 2)},
     evt_tile_moe_combine, "tiles/moe.cuh", 128, 0, 0, 0, NULL, 0, 0},
    /* decode-step operators for dense transformers (llm.c / llm.cuh) */
    {"embed", "x[b] = E[tok[b]]", 3,
     {IN("tok", EVT_I32, 1), IN("E", EVT_BF16, 2), OUT("x", EVT_BF16, 2)}, evt_tile_embed, "tiles/llm.cuh", 128, 0, 0, 0, NULL, 0, 0},
    {"rmsnorm", "y[b] = x[b] * rsqrt(mean(x[b]^2) + eps) * w", 4,
     {IN("x", EVT_BF16, 2), IN("w", EVT_BF16, 1), OUT("y", EVT_BF16, 2), INT("eps_e12")},
     evt_tile_rmsnorm, "tiles/llm.cuh", 256, 0, 0, 0, NULL, 0, 0},
    {"linear", "y[:, rows] = x @ W[rows]^T, rows [nb*N/T, (nb+1)*N/T)", 4,
     {IN("x", EVT_BF16, 2), IN("W", EVT_BF16, 2), OUT("y", EVT_BF16, 2), INT("T")},
     evt_tile_linear, "tiles/llm.cuh", 256, 0, 1, 1u << 1, evt_tile_linear_stream, 1, 0},
    {"linear_res", "y[:, cols] = r[:, cols] + x @ W[cols]^T", 5,
     {IN("x", EVT_BF16, 2), IN("W", EVT_BF16, 2), IN("r", EVT_BF16, 2), OUT("y", EVT_BF16, 2), INT("T")},
     evt_tile_linear_res, "tiles/llm.cuh", 256, 0, 1, 1u << 1, evt_tile_linear_stream, 1, 0},
    {"mlp_up", "a[:, cols] = silu(x @ Wg[cols]^T) * (x @ Wu[cols]^T)", 5,
     {IN("x", EVT_BF16, 2), IN("Wg", EVT_BF16, 2), IN("Wu", EVT_BF16, 2), OUT("a", EVT_BF16, 2), INT("T")},
     evt_tile_mlp_up, "tiles/llm.cuh", 256, 0, 1, 1u << 1 | 1u << 2, evt_tile_mlp_up_stream, 1, 0},
    {"rms_linear", "y[:, rows] = s * (x @ W[rows]^T), s[b] = rsqrt(mean(x[b]^2) + eps): the rmsnorm inside, its weight folded into W", 5,
     {IN("x", EVT_BF16, 2), IN("W", EVT_BF16, 2), OUT("y", EVT_BF16, 2), INT("T"), INT("eps_e12")},
     evt_tile_rms_linear, "tiles/llm.cuh", 256, 0, 1, 1u << 1, evt_tile_linear_stream, 1, 0},
    {"rms_mlp_up", "mlp_up of rmsnorm(x), the norm inside and its weight folded into Wg and Wu (as rms_linear)", 6,
     {IN("x", EVT_BF16, 2), IN("Wg", EVT_BF16, 2), IN("Wu", EVT_BF16, 2), OUT("a", EVT_BF16, 2), INT("T"), INT("eps_e12")},
     evt_tile_rms_mlp_up, "tiles/llm.cuh", 256, 0, 1, 1u << 1 | 1u << 2, evt_tile_mlp_up_stream, 1, 0},
    {"linear_res_ss", "linear_res, and the new rows' sums of squares: partials per tile, summed into ss by the last tile (cnt)", 8,
     {IN("x", EVT_BF16, 2), IN("W", EVT_BF16, 2), IN("r", EVT_BF16, 2), OUT("y", EVT_BF16, 2), OUT("part", EVT_F32, 2),
      OUT("ss", EVT_F32, 1), {"cnt", EVT_PARAM_INOUT, EVT_I32, 1}, INT("T")},
     evt_tile_linear_res_ss, "tiles/llm.cuh", 256, 0, 1, 1u << 1, evt_tile_linear_stream, 1, 0},
    {"linear_part", "part[s, :, rows] = x[:, k slice s] @ W[rows, k slice s]^T (f32): band nb % (grid / KP), "
     "slice s = nb / (grid / KP), KP = part's first extent", 3,
     {IN("x", EVT_BF16, 2), IN("W", EVT_BF16, 2), OUT("part", EVT_F32, 3)},
     evt_tile_linear_part, "tiles/llm.cuh", 256, 0, 0, 1u << 1 /* W: its early form's loads */, NULL, 1, 0},
    {"add_rmsnorm", "y[b] = r[b] + sum over s of part[s, b]; h[b] = y[b] * rsqrt(mean(y[b]^2) + eps) * w", 6,
     {IN("r", EVT_BF16, 2), IN("part", EVT_F32, 3), IN("w", EVT_BF16, 1), OUT("y", EVT_BF16, 2), OUT("h", EVT_BF16, 2),
      INT("eps_e12")},
     evt_tile_add_rmsnorm, "tiles/llm.cuh", 256, 0, 0, 0, NULL, 0, 0},
    {"ss_linear", "rms_linear with s[b] = rsqrt(ss[b] / K + eps), the sums of squares from linear_res_ss", 6,
     {IN("x", EVT_BF16, 2), IN("W", EVT_BF16, 2), OUT("y", EVT_BF16, 2), IN("ss", EVT_F32, 1), INT("T"), INT("eps_e12")},
     evt_tile_ss_linear, "tiles/llm.cuh", 256, 0, 1, 1u << 1, evt_tile_linear_stream, 1, 0},
    {"ss_mlp_up", "rms_mlp_up with the row scales from linear_res_ss's sums of squares (as ss_linear)", 7,
     {IN("x", EVT_BF16, 2), IN("Wg", EVT_BF16, 2), IN("Wu", EVT_BF16, 2), OUT("a", EVT_BF16, 2), IN("ss", EVT_F32, 1), INT("T"),
      INT("eps_e12")},
     evt_tile_ss_mlp_up, "tiles/llm.cuh", 256, 0, 1, 1u << 1 | 1u << 2, evt_tile_mlp_up_stream, 1, 0},
    {"q_rope", "q[b, h] = rope(rmsnorm(qkv[b, head h]) * wq, pos[b])", 6,
     {IN("qkv", EVT_BF16, 2), IN("wq", EVT_BF16, 1), IN("pos", EVT_I32, 1), OUT("q", EVT_BF16, 3), INT("eps_e12"), INT("theta")},
     evt_tile_q_rope, "tiles/llm.cuh", 128, 0, 0, 0, NULL, 0, 0},
    {"k_rope_append", "k head g: rmsnorm, rope; k and v head g appended to the paged cache at pos[b]", 9,
     {IN("qkv", EVT_BF16, 2), IN("wk", EVT_BF16, 1), IN("pos", EVT_I32, 1), IN("bt", EVT_I32, 2),
      {"kc", EVT_PARAM_INOUT, EVT_BF16, 4}, {"vc", EVT_PARAM_INOUT, EVT_BF16, 4}, INT("nh"), INT("eps_e12"), INT("theta")},
     evt_tile_k_rope_append, "tiles/llm.cuh", 128, 0, 0, 0, NULL, 0, 0},
    {"attn_split", "split s of decode attention for (b, h): max, sum, unnormalised output", 6,
     {IN("q", EVT_BF16, 3), IN("kc", EVT_BF16, 4), IN("vc", EVT_BF16, 4), IN("bt", EVT_I32, 2), IN("pos", EVT_I32, 1),
      OUT("part", EVT_F32, 4)}, evt_tile_attn_split, "tiles/llm.cuh", 128, 0, 0, 0, NULL, 0, 0},
    {"qk_rope_append", "q_rope of the q heads of kv head g, then k_rope_append of g, for row b (the prefill's form)", 10,
     {IN("qkv", EVT_BF16, 2), IN("wq", EVT_BF16, 1), IN("wk", EVT_BF16, 1), IN("pos", EVT_I32, 1), IN("bt", EVT_I32, 2),
      {"kc", EVT_PARAM_INOUT, EVT_BF16, 4}, {"vc", EVT_PARAM_INOUT, EVT_BF16, 4}, OUT("q", EVT_BF16, 3), INT("eps_e12"),
      INT("theta")},
     evt_tile_qk_rope_append, "tiles/llm.cuh", 128, 0, 0, 0, NULL, 0, 0},
    {"attn_split_group", "attn_split of the q heads of kv head g, split s, for row b: max, sum, unnormalised output", 6,
     {IN("q", EVT_BF16, 3), IN("kc", EVT_BF16, 4), IN("vc", EVT_BF16, 4), IN("bt", EVT_I32, 2), IN("pos", EVT_I32, 1),
      OUT("part", EVT_F32, 4)}, evt_tile_attn_split_group, "tiles/llm.cuh", 128, 0, 0, 0, NULL, 0, 0},
    {"attn_rope_split", "q_rope + k_rope_append + attn_split of the q heads of kv head g, split s, for the requests of run b "
     "(b, g, s): ceil(B / grid extent of b) of them (tiles/attn_requests.h; one when the extent is B); "
     "with one split, or (merge_last) as the last split of its merge group, also the group's merged output o; "
     "the RoPE angles from row pos[b] of rope (rope(theta=...))", 13,
     {IN("qkv", EVT_BF16, 2), IN("wq", EVT_BF16, 1), IN("wk", EVT_BF16, 1), IN("pos", EVT_I32, 1), IN("bt", EVT_I32, 2),
      {"kc", EVT_PARAM_INOUT, EVT_BF16, 4}, {"vc", EVT_PARAM_INOUT, EVT_BF16, 4}, OUT("part", EVT_F32, 4), OUT("o", EVT_BF16, 2),
      {"pc", EVT_PARAM_INOUT, EVT_I32, 2}, IN("rope", EVT_F32, 2), INT("eps_e12"), INT("merge_last")}, evt_tile_attn_rope_split,
     "tiles/llm.cuh", 256, 0, 0, 1u << 3 | 1u << 4 | 1u << 10 /* pos, bt, rope */, NULL, 1,
     1u << 5 | 1u << 6 /* kc, vc below pos (llm_attn.cuh) */},
    {"attn_merge", "o[b, h] = merge of the splits of part[b, h]", 2,
     {IN("part", EVT_F32, 4), OUT("o", EVT_BF16, 2)}, evt_tile_attn_merge, "tiles/llm.cuh", 128, 0, 0, 0, NULL, 0, 0},
    {"attn_merge_group", "o[b, heads g*G .. g*G+G) = merge of the splits of part[b, those heads]", 3,
     {IN("part", EVT_F32, 4), OUT("o", EVT_BF16, 2), INT("G")}, evt_tile_attn_merge_group, "tiles/llm.cuh", 128, 0, 0, 0, NULL, 0, 0},
    {"argmax_part", "(max, index) of logits[b, c*V/NC .. (c+1)*V/NC)", 3,
     {IN("logits", EVT_BF16, 2), OUT("pv", EVT_F32, 2), OUT("pi", EVT_I32, 2)},
     evt_tile_argmax_part, "tiles/llm.cuh", 256, 0, 0, 0, NULL, 0, 0},
    {"argmax_final", "next[b] = index of the largest partial (lowest index on ties)", 3,
     {IN("pv", EVT_F32, 2), IN("pi", EVT_I32, 2), OUT("next", EVT_I32, 1)}, evt_tile_argmax_final, "tiles/llm.cuh", 128, 0, 0, 0, NULL, 0, 0},
};
#define NBUILTIN ((int)(sizeof builtins / sizeof builtins[0]))

#define MAX_USER 64
static evt_tile_decl user[MAX_USER];
static int nuser;

const evt_tile_decl *evt_tile_at(int i)
{
    if (i < 0) return NULL;
    if (i < NBUILTIN) return &builtins[i];
    if (i - NBUILTIN < nuser) return &user[i - NBUILTIN];
    return NULL;
}

const evt_tile_decl *evt_tile_find(const char *name)
{
    for (int i = 0; evt_tile_at(i); i++)
        if (!strcmp(evt_tile_at(i)->name, name)) return evt_tile_at(i);
    return NULL;
}

/* 1 if the declaration's tensor and integer parameters fit the tile ABI's
 * arrays (evt_task_args.t[], .iarg[]): the generated code fills them by
 * position, so one more would be written past the end. */
int evt_tile_fits_abi(const evt_tile_decl *decl)
{
    int nt = 0, ni = 0;
    if (decl->nparams < 0 || decl->nparams > EVT_MAX_ARGS) return 0;
    for (int k = 0; k < decl->nparams; k++) {
        if (decl->params[k].mode == EVT_PARAM_INT) ni++;
        else nt++;
    }
    return nt <= EVT_ABI_MAX_TENSORS && ni <= EVT_ABI_MAX_INTS;
}

evt_status evt_tile_register(const evt_tile_decl *decl)
{
    if (!decl || !decl->name || evt_tile_find(decl->name) || nuser == MAX_USER || !evt_tile_fits_abi(decl))
        return EVT_ERR_VERIFY;
    user[nuser++] = *decl;
    return EVT_OK;
}

uint64_t evt_tile_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
