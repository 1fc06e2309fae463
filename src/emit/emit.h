/* emit.h — the shared printer of generated code (internal). */
#ifndef EVT_EMIT_H
#define EVT_EMIT_H
#include "pass/plan.h"
#include "device/evt_ctx.h"
typedef enum evt_target { EVT_TARGET_C, EVT_TARGET_CUDA } evt_target;
evt_status evt_emit_program(const evt_plan *p, evt_printer *o, evt_target tgt, evt_diag *d);
#endif
