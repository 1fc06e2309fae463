/* tiles_cpu.h — C implementations of the built-in tile operators (internal).
 * Each takes the tile ABI (evt_task_args) and computes one task. */
#ifndef EVT_TILES_CPU_H
#define EVT_TILES_CPU_H
#include "evt/tiles.h"

void evt_tile_rowsum_partial(const evt_task_args *a);
void evt_tile_rowsum_final(const evt_task_args *a);
void evt_tile_gemm_f32(const evt_task_args *a);
void evt_tile_spin(const evt_task_args *a);
void evt_tile_moe_route(const evt_task_args *a);
void evt_tile_moe_index(const evt_task_args *a);
void evt_tile_moe_group(const evt_task_args *a);
void evt_tile_moe_expert(const evt_task_args *a);
void evt_tile_moe_combine(const evt_task_args *a);
void evt_tile_chain_step(const evt_task_args *a);
void evt_tile_mark(const evt_task_args *a);
void evt_tile_embed(const evt_task_args *a);
void evt_tile_rmsnorm(const evt_task_args *a);
void evt_tile_linear(const evt_task_args *a);
void evt_tile_linear_res(const evt_task_args *a);
void evt_tile_mlp_up(const evt_task_args *a);
void evt_tile_rms_linear(const evt_task_args *a);
void evt_tile_rms_mlp_up(const evt_task_args *a);
void evt_tile_linear_res_ss(const evt_task_args *a);
void evt_tile_linear_part(const evt_task_args *a);
void evt_tile_add_rmsnorm(const evt_task_args *a);
void evt_tile_ss_linear(const evt_task_args *a);
void evt_tile_ss_mlp_up(const evt_task_args *a);
void evt_tile_q_rope(const evt_task_args *a);
void evt_tile_k_rope_append(const evt_task_args *a);
void evt_tile_attn_split(const evt_task_args *a);
void evt_tile_qk_rope_append(const evt_task_args *a);
void evt_tile_attn_split_group(const evt_task_args *a);
void evt_tile_attn_rope_split(const evt_task_args *a);
void evt_tile_attn_merge(const evt_task_args *a);
void evt_tile_attn_merge_group(const evt_task_args *a);
void evt_tile_argmax_part(const evt_task_args *a);
void evt_tile_argmax_final(const evt_task_args *a);
/* weight-stream bands (evt_tile_decl.stream_plan) of the linear family */
int evt_tile_linear_stream(const evt_task_args *a, evt_stream_band *band);
int evt_tile_mlp_up_stream(const evt_task_args *a, evt_stream_band *band);
#endif
