/* evt_maps.h — the arithmetic that lowered maps use in generated code:
 * floor division and modulo (as in the IR), min/max, and checked reads of
 * integer index tensors (a bad index raises EVT_KERR_BAD_INDEX, never a
 * wild memory access). Included by generated code after evt_device.h. */
#ifndef EVT_MAPS_H
#define EVT_MAPS_H

EVT_DEV int64_t evt_fdiv(int64_t a, int64_t b)
{
    if (b == 0) return 0;
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}
EVT_DEV int64_t evt_fmod(int64_t a, int64_t b) { return b == 0 ? 0 : a - evt_fdiv(a, b) * b; }
EVT_DEV int64_t evt_min(int64_t a, int64_t b) { return a < b ? a : b; }
EVT_DEV int64_t evt_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* tensor[i0, i1, ...] of integer tensor `t`; n indices. */
EVT_PROTO int64_t evt_ld(const evt_ctx *C, evt_worker *W, int call, int t, int n,
                       int64_t i0, int64_t i1, int64_t i2, int64_t i3)
{
    const evt_tensor_ref *r = &C->tensors[t];
    int64_t idx[4] = {i0, i1, i2, i3}, off = 0;
    for (int k = 0; k < n; k++) {
        if (idx[k] < 0 || idx[k] >= r->dim[k]) {
            evt_raise(C, EVT_KERR_BAD_INDEX, W->id, call, -1 - t, W->task, idx[k], k, r->dim[k]);
            return 0;
        }
        off = off * r->dim[k] + idx[k];
    }
    return evt_index_load(r, off);
}
#endif
