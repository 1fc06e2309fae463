/* evt/models.h — model builders: one decode step of an LLM as an Event
 * Tensor program, and a decode driver (evtc decode).
 *
 *   evt_qwen3_config c;
 *   evt_qwen3_preset("qwen3-0.6b", &c)  or  evt_qwen3_load_config("config.json", &c, &d);
 *   char *text = evt_qwen3_program(&c, &opts);      // .evt text; evt_parse() it
 *
 * The program has one symbol, B (batch, 1..max_batch): one compiled kernel
 * serves every batch size. Per-request context lengths live in the `pos`
 * tensor; the KV cache is paged (`bt` maps request b's page j to a page).
 * Fine-grained events: q_rope(b, h) waits only on the QKV tile holding head
 * h, and runs beside k_rope_append(b, g); attention splits of (b, h) wait on
 * Q[b, h] and KV[b, h / group]; the argmax of a vocabulary chunk waits on
 * the LM-head tile that produced it.
 */
#ifndef EVT_MODELS_H
#define EVT_MODELS_H

#include "evt/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Field names follow Hugging Face config.json. */
typedef struct evt_qwen3_config {
    char name[64];
    int64_t hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim;
    int64_t intermediate_size, vocab_size;
    double rms_norm_eps, rope_theta;
    int tie_word_embeddings;
    /* the end-of-sequence ids (`eos_token_id`, an id or a list) of a
       checkpoint directory's generation_config.json, else of config.json;
       none for the presets */
#define EVT_QWEN3_MAX_EOS 8
    int32_t eos_token_ids[EVT_QWEN3_MAX_EOS];
    int n_eos;
} evt_qwen3_config;

/* qwen3-0.6b, qwen3-1.7b, qwen3-8b. Returns 0 for an unknown name. */
int evt_qwen3_preset(const char *name, evt_qwen3_config *c);
/* Reads a config.json, or a checkpoint directory's (missing head_dim:
   hidden / heads; the end-of-sequence ids also from the directory's
   generation_config.json). Fields the builder cannot honour (a scaled RoPE,
   attention biases, sliding windows, experts) are errors. */
evt_status evt_qwen3_load_config(const char *path, evt_qwen3_config *c, evt_diag *d);

/* Fills the weight tensors of a decode program that evt_qwen3_program built
   from config c (g: its graph, b: its buffers) from a Hugging Face Qwen3
   checkpoint: a .safetensors file or a directory of them (shards). With
   fold_norms (the program's evt_qwen3_opts.fold_norms or fuse_norm) the input
   and post-attention norms' weights are folded into the QKV and gate/up
   matrices' columns; else they fill the program's norm tensors. Tensors the
   program lacks (e.g. rotary tables) are ignored; one the program needs and
   the checkpoint lacks, or holds at another shape or in another dtype than
   BF16, F16 or F32, is an error naming it (src/models/qwen3_weights.c has
   the name map). */
evt_status evt_qwen3_load_weights(const char *path, const evt_qwen3_config *c, int fold_norms, const evt_graph *g,
                                  evt_buffers *b, evt_diag *d);
/* The same checks without reading a tensor (headers only, a fraction of a
   second): evt_decode runs them before it builds a kernel or generates the
   other tensors, so a wrong path or checkpoint fails at once. */
evt_status evt_qwen3_check_weights(const char *path, const evt_qwen3_config *c, evt_diag *d);

/* evt_qwen3_opts.target_tasks when 0: one fewer than the 132 SMs of an H100/H200 */
#define EVT_QWEN3_TARGET_TASKS 131

typedef struct evt_qwen3_opts {
    int64_t max_batch;     /* bound of B (default 128) */
    int64_t max_ctx;       /* cache capacity per request, tokens (default 1024) */
    int64_t page_size;     /* tokens per KV page (default 16) */
    int64_t attn_splits;   /* split-KV partitions per (request, kv head); 0 (default): max(1, target_tasks / (B * kv heads)) */
    int64_t attn_rows;     /* requests per attention task (tiles/attn_requests.h); 0 (default):
                              max(1, ceil(B x kv heads / target_tasks)), the tasks one wave; 1: one
                              request a task (the ablation, and what evt_decode builds for the
                              batch-1-16 program of `--norms auto`: evt_decode_cuda_defines) */
    int64_t target_tasks;  /* linear calls have this many tiles (default 131: one fewer than the 132
                              workers of an H100/H200, so the worker without a tile in a GEMV stage
                              takes the RMSNorm after it; measured 2-10% faster per token together
                              with the one QKV counter, bench/RESULTS.md session 8) */
    int64_t lm_waves;      /* the LM head's tiles: lm_waves x target_tasks (at most one a vocabulary row);
                              0 (default): the fewest multiple of target_tasks with at most 256 rows a
                              tile (5 waves for Qwen3's vocabulary). evt_decode takes 2 for every
                              program: each task's dispatch, wait and stream ramp paid twice a worker,
                              not five times (H200, bench/RESULTS.md sessions 47-48: qwen3-0.6b batch 1
                              -0.9%, batch 32-128 -0.3 to -0.4%; qwen3-8b level to -0.15%) */
    int64_t dn_slices;     /* without fuse_norm and norm_partials: the down projection in this many k
                              slices at batch slices_from-slices_to (1 elsewhere): linear_part tasks of dn_slices times
                              the rows, each over its slice of K, leave f32 partials, and the next
                              layer's input norm (add_rmsnorm; the final norm after the last layer)
                              adds them to the residual and writes the new residual rows beside the
                              normed ones. Each tile then reads 1 / dn_slices of x, which every tile
                              reads from L2 beside its weight band (qwen3-8b batch 64's down: 1.5 MiB
                              of x against 762 KiB of weights), with the same weight bytes, and no
                              summing task or count joins the stage. 0 or 1: linear_res over all of K.
                              evt_decode takes evt_decode_slices' count when 0 */
    int64_t o_slices;      /* the same for the O projection (linear_part), the post-attention norm
                              (add_rmsnorm) adding its partials to x and writing xa. Give both the same
                              count: then O and down run the same tile code, and both norms too, as
                              they do without slices (one slice count alone made qwen3-0.6b batch 64
                              4.6% slower, both 2.8% faster: H200, bench/RESULTS.md session 49) */
    int64_t slices_from;   /* the least batch at which dn_slices and o_slices apply (one slice below it
                              and above slices_to); 0 (default): 33. Lower to try them at 17-32, where
                              evt_decode's TMA ring runs for a hidden size of 2048 or more (else ask for
                              one: evtc decode --tma-ring); measured level there (session 50) */
    int64_t slices_to;     /* the largest batch at which they apply; 0 (default): 64 */
    uint64_t seed;         /* weights and cache contents */
    int row_events;        /* ablation: per-row X/H/XA/H2/HF events (B waits per GEMV tile) instead of one counter each */
    int qkv_per_head;      /* QKV as one counter per head (each attention task waits for the heads it
                              reads) instead of one counter for the whole projection (the default: all
                              QKV tiles run in one wave, and one counter measured faster) */
    int split_rope;        /* ablation: q_rope and k_rope_append as their own calls before attn_split
                              (default: attn_rope_split does all three in one task) */
    int prefill;           /* the prefill program (implies split_rope): every row's cache append
                              notifies one event per kv head, and every attention task waits for all of
                              them, so rows that are positions of the same request (the same block
                              table row contents) see each other's keys and values (evt_decode's prompts);
                              its tasks take a kv head's group of q heads (qk_rope_append over runs of
                              rows as the attention's runs of requests and g, attn_split_group over
                              (b, g, s)) */
    int64_t cache_requests; /* > 0: the KV caches hold this many requests' pages (max_ctx / page_size each)
                              whatever B is; 0 (default): B requests' */
    int fuse_norm;         /* the input and post-attention RMSNorms inside the QKV and gate/up GEMV tiles
                              (rms_linear / rms_mlp_up) instead of rmsnorm calls of their own: two
                              handoffs fewer a layer; implies fold_norms (evt_decode's default at batch
                              <= EVT_DECODE_FUSE_NORM_MAX_BATCH; bench/RESULTS.md session 30) */
    int norm_partials;     /* without fuse_norm: the O and down tiles also leave the new residual rows'
                              sums of squares (linear_res_ss) and the QKV and gate/up tiles scale by
                              them (ss_linear, ss_mlp_up), so no norm call runs after layer 0's input
                              norm: two stages and handoffs fewer a layer with no tile summing all of
                              x (what made fuse_norm lose above batch 16); needs fold_norms. Measured
                              3.1-3.8% slower at batch 32-100 on an H200 (the producers' tail: 3-7 us
                              a tile; bench/RESULTS.md session 42), hence opt-in (`--norms partials`) */
    int fold_norms;        /* those two norms' weights folded into the matrices after them (QKV: W diag(wn),
                              gate and up likewise; a checkpoint loader folds them once): the model's
                              other tensors keep their seeds and shapes; without fuse_norm the norm
                              calls take unit weights, so both forms compute the same model from the
                              same matrices. 0 (the default): the norms keep their own random weights */
    int argmax_per_tile;   /* ablation: one argmax task per (row, LM-head tile), each waiting on its tile
                              (B x 655 tasks for Qwen3's vocabulary, B x 262 in two waves), instead of
                              about target_tasks argmax tasks in all (max(1, target_tasks / B) chunks per
                              row) after the whole LM head */
    int merge_per_group;   /* ablation: one attention merge task per (row, kv group) at every batch, not
                              one per row above batch 16 */
    int merge_one_split;   /* ablation: attention merge tasks also when a request's cache is one split
                              (S = 1, large batches), instead of the attention tasks writing o themselves */
    int merge_tasks;       /* ablation: attention merge tasks where a request's cache has several splits
                              (small batches), instead of the last attention task of each merge group
                              merging it (attn_rope_split's merge_last) */
    int prefetch;          /* GEMV calls annotated `prefetch`: their L2 prefetch hook runs before their
                              waits (measured 3-8% slower at batch 1 on an H200, so not the default),
                              or, in a kernel built with the weight stream, their weights stream */
    int attn_no_early;     /* ablation: the attention calls carry no `prefetch`, so under early loads they
                              do not start before their waits (by default warps 1-7 issue their first
                              step of cache loads and the RoPE table while warp 0 waits; llm_attn.cuh) */
} evt_qwen3_opts;

/* The .evt program of one decode step (malloc'd), or NULL on bad config. */
char *evt_qwen3_program(const evt_qwen3_config *c, const evt_qwen3_opts *o, evt_diag *d);
/* Weight bytes streamed per step (the bandwidth floor's numerator). */
double evt_qwen3_weight_bytes(const evt_qwen3_config *c);
/* Bytes of keys and values one cached token holds over all layers (bf16):
 * a step whose requests attend over P positions in all reads P times this. */
double evt_qwen3_cache_bytes_per_token(const evt_qwen3_config *c);

/* ---- the decode driver ------------------------------------------------ */

#define EVT_DECODE_MAX_ALSO 8
/* prompt tokens a prefill launch takes by default: the programs' bound of B */
#define EVT_DECODE_PREFILL_CHUNK 128
/* evt_decode's default TMA ring (evt_run_opts.tma_ring) at batches
   EVT_DECODE_TMA_MIN_BATCH..EVT_DECODE_TMA_MAX_BATCH: the GEMV tiles take the
   TMA path at batch 17-128 (src/tiles/llm_tma.cuh; above 64 with x in two
   boxes, one per warpgroup), and for models of hidden size
   EVT_DECODE_TMA_EARLY_HIDDEN or more the ring starts at
   EVT_DECODE_TMA_EARLY_BATCH instead (below). From 33 it pays: with the ring qwen3-8b batch 40 and 48 took
   11.87-11.89 and 12.16-12.17 ms/token against 13.76-13.78 and 14.07-14.10
   without (its gate + up and LM head on the TMA path), qwen3-0.6b level at
   33 and 40 (H100, session 30); at 17-32 the smaller L1 costs more than the
   path saves (H200, session 40: qwen3-8b B=17-32 0.7-1.2% slower with the
   ring, qwen3-0.6b B=24-32 1.9-2.0%). Above 64 (EVT_DECODE_TMA_WIDE_BATCH)
   for every model since the band is streamed once there (H100, session 41,
   against session 40's form, which streamed it twice and lost on
   qwen3-0.6b): qwen3-8b batch 72 / 96 / 128 19.30 / 19.61 / 20.38-20.40 ->
   16.04 / 16.22 / 16.98 ms/token; qwen3-0.6b, which had no ring above 64,
   5.73 / 6.14 / 7.05 -> 5.41 / 5.73 / 6.39 */
#define EVT_DECODE_TMA_MIN_BATCH 33
/* From batch 17 for a hidden size of 2048 or more (H200, bench/RESULTS.md
   session 50, ring against none on the same machine: qwen3-1.7b batch 17 /
   24 / 32 -3.7 / -5.1 / -5.3% per token, qwen3-8b 17 / 20 / 24 / 32 -1.5 /
   -1.4 / -1.1 / -0.2%; qwen3-0.6b, hidden size 1024, +3.5 / +2.9 / +2.3% at
   17 / 24 / 32, so it keeps 33). Session 40 had measured qwen3-8b 0.7-1.2%
   slower with the ring at 17-32; the TMA path changed since (sessions
   41-49). The batch-17-32 kernel is the same with or without the ring. */
#define EVT_DECODE_TMA_EARLY_HIDDEN 2048
#define EVT_DECODE_TMA_EARLY_BATCH 17
#define EVT_DECODE_TMA_WIDE_BATCH 64
#define EVT_DECODE_TMA_MAX_BATCH 128
#define EVT_DECODE_TMA_RING (96 * 1024)
/* evt_decode's k slices for O and down (evt_qwen3_opts.dn_slices, o_slices)
   at batch EVT_DECODE_SLICES_MIN_BATCH..EVT_DECODE_SLICES_MAX_BATCH with the
   norm calls and a TMA ring: EVT_DECODE_SLICES each (H200, bench/RESULTS.md
   session 49: qwen3-8b batch 33 / 40 / 64 -5.9 / -3.0 / -1.9% per token,
   qwen3-0.6b batch 64 -2.7%). Below 33 there is no ring (the register units cannot read
   a slice of x: slice 0 would take all of K). Above 64 since session 72,
   when the batch-65-128 kernel's TMA forms took a slice (H200, the same
   call against whole K: qwen3-8b batch 72 / 96 / 128 -7.4 / -7.9 / -10.3%,
   qwen3-0.6b batch 100 / 112 / 128 -8.4 / -8.3 / -8.7%; a 128-row prefill
   launch too), except at 65-96 (EVT_DECODE_SLICES_SWAP_MAX_BATCH) for a
   hidden size under EVT_DECODE_SLICES_WIDE_HIDDEN, whose sliced bands (32
   rows at qwen3-0.6b) take the swapped product there and lost (qwen3-0.6b
   batch 72 / 96 +7.4 / +8.9%); qwen3-8b's (128 rows) take both warpgroups. */
#define EVT_DECODE_SLICES 4
#define EVT_DECODE_SLICES_MIN_BATCH 33
#define EVT_DECODE_SLICES_MAX_BATCH 128
#define EVT_DECODE_SLICES_SWAP_MAX_BATCH 96
#define EVT_DECODE_SLICES_WIDE_HIDDEN 4096
/* The slice count evt_decode gives O and down when the caller gives none:
   EVT_DECODE_SLICES in that range (with the ring evt_decode_tma_ring gives
   for `tma_ring` as requested, at least 8 tiles a slice and whole TMA stages
   of K per slice), else 1; range[0..1] (0 0 with one slice) the batches the
   program slices at (evt_qwen3_opts.slices_from, slices_to): 33-64 for a
   batch up to 64 (those programs as before session 72), 33-128 above for a
   hidden size of EVT_DECODE_SLICES_WIDE_HIDDEN or more, else 97-128. bo: the
   program's options, fuse_norm and norm_partials set. */
int64_t evt_decode_slices(const evt_qwen3_config *c, const evt_qwen3_opts *bo, int64_t batch, int tma_ring, int64_t range[2]);
/* evt_decode's norms (evt_decode_opts.norms): AUTO, the default, folds the
   norm weights into the matrices at every batch and fuses the norms into the
   GEMV tiles up to EVT_DECODE_FUSE_NORM_MAX_BATCH (above it the tiles' row
   sums cost more than the two handoffs they save: qwen3-8b batch 24-128
   2.6-8.6% slower on an H100, the split-K units' sums taking a k split at
   17-48, the wide units and the TMA path summing x per unit or per stage;
   bench/RESULTS.md sessions 30-31), so one set of weights serves both
   programs; FUSED and CALLS force either form over the folded weights;
   UNFOLDED is the classic model (norm calls with their own weights);
   PARTIALS computes the norms after layer 0's from the sums of squares the
   residual's producers leave (evt_qwen3_opts.norm_partials), over the folded
   weights: opt-in, measured 3.1-3.8% slower than CALLS (session 42). */
#define EVT_DECODE_FUSE_NORM_MAX_BATCH 16
typedef enum evt_decode_norms { EVT_NORMS_AUTO, EVT_NORMS_FUSED, EVT_NORMS_CALLS, EVT_NORMS_UNFOLDED, EVT_NORMS_PARTIALS } evt_decode_norms;
/* Whether evt_decode fuses the norms at this batch (and folds their weights:
   *fold) under `norms`. */
int evt_decode_fuse_norm(int64_t batch, evt_decode_norms norms, int *fold);
/* The ring evt_decode runs with at this batch for a model of this hidden
   size: `requested` as evt_run_opts.tma_ring has it (bytes, -1 none), or 0
   (unset) for the default above. */
int evt_decode_tma_ring(int64_t hidden_size, int64_t batch, int requested);
/* The tile options (evt_compile_opts.cuda_defines) evt_decode compiles with
   when the caller gives none. For the fused-norm program that `--norms auto`
   runs at batch <= EVT_DECODE_FUSE_NORM_MAX_BATCH: "EVT_LLM_NO_TMA", since
   its batches are all below the TMA GEMV's (17-128), so its kernel leaves
   that path out (bench/RESULTS.md session 33: 0.3-1.3% faster per token at
   batch 1); and, when attn_rows (evt_qwen3_opts.attn_rows as the caller set
   it) is 0 or 1, "EVT_LLM_ATTN_ONE_REQUEST": evt_decode builds that program
   with one request per attention task, so its kernel leaves the request
   runs' loop out too (code a kernel carries and never runs cost batch 1
   0.8-2.7%, session 37); and "EVT_LLM_ATTN_STAGE_FIRST=0", the attention
   without its staged first step (less code: batch 1 0.3-1.6% faster,
   session 45). A kernel with EVT_LLM_ATTN_ONE_REQUEST serves only
   programs whose attn_rope_split grids have the batch as first extent
   (evt_compile refuses others).
   Above batch EVT_DECODE_TMA_WIDE_BATCH with a ring (tma_ring > 0, as
   evt_decode_tma_ring gives it): "EVT_TMA_TWO_HALVES", the TMA GEMV's second
   box of x and its second multiplying warpgroup, in a kernel of its own:
   code for batches above 64 in the kernel of batch 17-64 made one form of
   it 3.2-3.8% slower there (session 40).
   Every kernel but the batch-1-16 one also gets "EVT_LLM_SHARED_SMALL=0
   EVT_LLM_MERGE_LOADS_AT_ONCE=0": its GEMV tiles keep their own batch <= 8
   code and the split merge its loop, the machine code as before session 46
   (the shared form serves batch 1-8, and compiled into the batch-17-64
   kernel it measured 1.9% slower at qwen3-0.6b batch 64).
   "EVT_LLM_KSPLIT_EVERY=0" leaves out the batch <= 8 gate + up tiles' form
   with every warp over every unit (src/tiles/llm_gemv.cuh) from every kernel
   but the batch-1-16 one of a model whose tiles take it (gate_up_every:
   evt_decode_gate_up_every): its code alone cost qwen3-0.6b batch 1 0.3-0.5%,
   whose tiles never take it (H200, bench/RESULTS.md session 56).
   "EVT_WAITS_IN_TILE=1" (waits_in_tile: evt_decode_waits_in_tile) has the
   batch-1-16 kernel's leader run an early-loads task's waits inside its tile,
   after warp 0's share of the tile's prologue (src/device/evt_device.h,
   evt_tile_wait). */
const char *evt_decode_cuda_defines(int64_t batch, evt_decode_norms norms, int64_t attn_rows, int tma_ring, int gate_up_every,
                                    int waits_in_tile);

/* 1 if a decode's batch-1-16 kernel runs the GEMV tasks' waits inside their
   tiles (EVT_WAITS_IN_TILE): hidden_size at least
   EVT_DECODE_WAITS_IN_TILE_MIN_HIDDEN. Measured on an H200 at batch 1
   (bench/RESULTS.md session 58): qwen3-8b (4096) -1.9% per token, qwen3-0.6b
   (1024) +2.0% and qwen3-1.7b (2048) +2.4%, whose tasks' inputs are often ready when the worker takes
   them, so that the waits start after warp 0's prologue instead of before. */
#define EVT_DECODE_WAITS_IN_TILE_MIN_HIDDEN 4096
int evt_decode_waits_in_tile(int64_t hidden_size);

/* 1 if a decode's gate + up tiles at batch <= 8 take every warp over every
   unit: a tile's rows (intermediate_size over target_tasks tiles, 0: the
   default) make fewer 16-row units than the warps of the tile's block (its
   declared threads: 256, 8 warps), and those units do not divide the warps
   (qwen3-8b: 6 units, qwen3-1.7b: 3; qwen3-0.6b: 2, which divide them). */
int evt_decode_gate_up_every(int64_t intermediate_size, int64_t target_tasks);

typedef struct evt_decode_opts {
    const char *model;     /* preset name, path to config.json, or a checkpoint directory (its
                              config.json, and its weights unless `weights` is set) */
    int64_t batch, ctx, steps;
    evt_backend backend;
    evt_run_opts run;
    int check;             /* compare every step with the sequential reference */
    const char *dump_dir;  /* write inputs, weights and per-step tokens here */
    const char *weights;   /* a safetensors checkpoint (file or directory) instead of random weights
                              (evt_qwen3_load_weights); the KV cache stays random */
    /* Prompts instead of a random cache (`ctx` then unused; not with dump_dir):
       request b takes prompts[b % nprompts] (prompt_lens[b % nprompts] token
       ids) from position 0 with an empty cache. Every token of its prompt but
       the last goes into the cache through the prefill program
       (evt_qwen3_opts.prefill), all requests' together in launches of up to
       prefill_chunk tokens; then `steps` decode launches, the first from each
       prompt's last token, generate greedily. */
    const int32_t *const *prompts;
    const int64_t *prompt_lens;
    int nprompts;
    int64_t prefill_chunk; /* prompt tokens a prefill launch takes, at most (0: EVT_DECODE_PREFILL_CHUNK) */
    int prompt_steps;      /* ablation: no prefill program; the prompts go in one token a decode launch
                              (teacher-forced): max(prompt lengths) - 1 + steps launches, every request
                              generating at least `steps` tokens (the shorter prompts start earlier) */
    int32_t *generated;    /* with prompts, if set: batch x steps, request b's first `steps` generated
                              tokens at [b * steps, (b + 1) * steps) */
    int quiet;
    int host_copies;       /* ablation (GPU): every step uploads every tensor and downloads every
                              written one, the KV cache included; by default the steps' launches are
                              resident (evt_run_opts.resident): tok and pos go up, logits and next
                              come back */
    evt_qwen3_opts build;  /* (its fuse_norm and fold_norms are set from `norms`) */
    evt_decode_norms norms;
    evt_compile_opts compile;  /* e.g. stream_weights */
    /* More schedules timed on the same weights and step after the main one
     * (e.g. kbk and graph: the same tiles kernel by kernel, and in a CUDA
     * graph); their outputs are compared with the main schedule's. */
    evt_sched_kind also[EVT_DECODE_MAX_ALSO];
    int nalso;
} evt_decode_opts;

typedef struct evt_decode_result {
    double ms_per_token;   /* CPU: mean over steps after the first; GPU: back-to-back launches */
    int timed_launches;    /* GPU: launches timed with CUDA events (0 on the CPU) */
    double first_ms;
    double first_wall_ms;  /* wall clock of the first step's launch with its copies (on the GPU it
                              uploads the weights and the cache) */
    double steps_wall_ms;  /* the same, mean over the steps after the first (the first's where there is
                              one): what a generated token takes; ms_per_token is the kernel's alone on
                              the GPU */
    int64_t steps_checked; /* steps compared with the reference (check) */
    int check_failed;
    double check_rtol;     /* the relative error the check accepted (0: bitwise, the CPU backend) */
    int64_t near_ties;     /* GPU check: rows whose token differed from the reference's at a near-tie of
                              its logits (within the logits' tolerance; both sides then took the
                              device's token) */
    int64_t ntasks;
    double cache_bytes;    /* bytes of the KV cache (keys and values, every layer) the timed steps
                              read: each request's cached positions up to its own, averaged over
                              the timed launches (GPU: the one step timed) */
    unsigned stream_ring_bytes; /* GPU: the weight stream's ring per worker (0: the GEMVs read global memory) */
    unsigned tma_ring_bytes;    /* GPU: the steps' TMA ring per worker (0: the GEMVs' register units) */
    int tma_maps;               /*   and their tensors with TMA maps */
    unsigned prefill_tma_ring_bytes; /* GPU: the same for the prefill's launches */
    int prefill_tma_maps;
    const char *cuda_defines;   /* the tile options the steps' kernel was compiled with (CUDA: #defines;
                                   evt_decode_cuda_defines unless the caller gave some; static or the
                                   caller's string) */
    const char *prefill_cuda_defines; /* the prefill's, from its own row count (NULL: no prefill) */
    int64_t prefill_tokens;    /* prompt tokens the prefill program put into the cache (padding not counted) */
    int64_t prefill_launches;  /* its launches */
    double prefill_wall_ms;    /* their wall clock, copies included (the prefill module's build not) */
    double prefill_first_wall_ms; /* the first one's (on the GPU it uploads the weights, which the steps then
                                     read: evt_module_share_weights) */
    double prefill_kernel_ms;  /* their kernels' alone (evt_run_stats.launch_ms, summed) */
    double also_ms[EVT_DECODE_MAX_ALSO];      /* ms/token of each `also` schedule */
    double also_logit_err[EVT_DECODE_MAX_ALSO]; /* max |logit - main| / max |main logit| */
    int64_t also_next_diff[EVT_DECODE_MAX_ALSO]; /* next tokens that differ from the main schedule's */
} evt_decode_result;

evt_status evt_decode(const evt_decode_opts *o, evt_decode_result *r, evt_diag *d);

/* The program evt_decode builds and runs for o: the model's config (preset
 * or config.json) in *cfg and the program text in *text (the caller frees
 * it), with o->build completed as evt_decode completes it (batch and cache
 * bounds from --batch / --ctx / --steps, the weight stream's prefetch
 * calls). EVT_ERR_IO: a bad config; EVT_ERR_SHAPE: bad sizes. */
evt_status evt_decode_program(const evt_decode_opts *o, evt_qwen3_config *cfg, char **text, evt_diag *d);
/* The prefill program evt_decode builds for o's prompts (src/models/prefill.c:
 * the decode program at the launches' row count in its prefill form), or
 * *text NULL where it builds none (no prompts, prompt_steps, or no prompt of
 * more than one token). */
evt_status evt_decode_prefill_program(const evt_decode_opts *o, evt_qwen3_config *cfg, char **text, evt_diag *d);

/* The relative error (max |x - ref| / max |ref| per tensor) that `--check`
 * accepts on the GPU for a model of `layers` layers: 2e-2 up to 4 layers,
 * growing with the square root of the depth beyond (bf16 rounding at other
 * points and other summation orders than the C reference compound layer by
 * layer: qwen3-0.6b, 28 layers, measured 0.0221 on an H200). The CPU
 * backend runs the reference's own tiles and is compared bitwise. */
double evt_decode_check_rtol(int64_t layers);

/* One step of `--check` on the GPU: dev against ref, both buffer sets of a
 * decode program (outputs `logits` bf16[B, V] and `next` i32[B]). Every
 * output but next within rtol (evt_buffers_compare_tensor); each next[r]
 * exactly the first largest of dev's own logits row r; and where next[r]
 * differs from ref's, ref's logits of the two tokens at most 2 rtol
 * max |ref logit| apart (a near-tie, counted in *ties; a wider gap fails).
 * Returns the number of failures, a line each appended to report. */
int evt_decode_check_step(const evt_graph *g, evt_buffers *dev, evt_buffers *ref, double rtol, int64_t *ties,
                          evt_printer *report);

#ifdef __cplusplus
}
#endif
#endif
