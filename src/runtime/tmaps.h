/* tmaps.h — TMA tensor maps for the CUDA backend (tmaps.c). */
#ifndef EVT_RUNTIME_TMAPS_H
#define EVT_RUNTIME_TMAPS_H
#include "evt/ir.h"
#include "device/evt_task_args.h"

/* 1 when t is a matrix the maps describe: bf16, rank 2, its base 16-byte
   aligned, its rows whole 64-column chunks (whether the driver then encodes
   them is evt_tmaps_encode's answer). */
int evt_tmaps_wanted(const evt_tensor_ref *t);

/* Encodes t's EVT_TMA_BOXES maps into out (zeros and 0 when t is not a bf16
   matrix TMA can address, or the driver has no cuTensorMapEncodeTiled);
   1 when encoded. t->ptr is a device address. */
int evt_tmaps_encode(const evt_tensor_ref *t, unsigned char out[EVT_TMA_BOXES * EVT_TMA_MAP_BYTES]);

/* A launch's maps on the host: EVT_TMA_BOXES per tensor, in tensor order
   (zeros for a tensor without), and each tensor as they were encoded for. */
typedef struct evt_tmap_table {
    unsigned char *host;  /* n * EVT_TMA_BOXES * EVT_TMA_MAP_BYTES */
    evt_tensor_ref *ref;  /* [n]; tmap -2: not encoded yet */
    int n;
} evt_tmap_table;

/* Sets tr[i].tmap for the n tensor references of a launch (-1 everywhere when
   !want): a tensor's maps are re-encoded only when its address, shape or
   type changed since they were encoded. *any: some tensor has maps. Returns
   1 when the table's bytes changed (upload them), 0 when not, -1 when out of
   memory. */
int evt_tmaps_bind(evt_tmap_table *t, evt_tensor_ref *tr, int n, int want, int *any);
void evt_tmaps_free(evt_tmap_table *t);

#endif
