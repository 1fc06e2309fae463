/* emit.h — the shared printer of generated code (internal). */
#ifndef EVT_EMIT_H
#define EVT_EMIT_H
#include "pass/plan.h"
#include "device/evt_ctx.h"
typedef enum evt_target { EVT_TARGET_C, EVT_TARGET_CUDA } evt_target;
evt_status evt_emit_program(const evt_plan *p, evt_printer *o, evt_target tgt, evt_diag *d);
/* CUDA: the operators' dynamic shared memory (the largest smem_bytes),
 * rounded up to 1 KB: where the weight stream's ring starts. */
int evt_emit_tile_smem(const evt_plan *p);
#endif
