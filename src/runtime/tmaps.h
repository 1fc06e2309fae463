/* tmaps.h — TMA tensor maps for the CUDA backend (tmaps.c). */
#ifndef EVT_RUNTIME_TMAPS_H
#define EVT_RUNTIME_TMAPS_H
#include "evt/ir.h"
#include "device/evt_task_args.h"

/* Encodes t's EVT_TMA_BOXES maps into out (zeros and 0 when t is not a bf16
   matrix TMA can address, or the driver has no cuTensorMapEncodeTiled);
   1 when encoded. t->ptr is a device address. */
int evt_tmaps_encode(const evt_tensor_ref *t, unsigned char out[EVT_TMA_BOXES * EVT_TMA_MAP_BYTES]);

#endif
