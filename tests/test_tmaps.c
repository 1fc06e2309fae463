/* test_tmaps.c — the TMA tensor maps' host side (src/runtime/tmaps.c), with
 * the driver's encoder replaced by a recorder (no GPU needed):
 *   - a bf16 matrix gets EVT_TMA_BOXES maps of its 3-D view (64 columns,
 *     rows, 64-column chunks; dims innermost first, the row pitch and the
 *     128-byte chunk pitch): boxes 64 elements wide, 8, 16, ..., 128 rows
 *     high and 1, 2, 4 chunks deep in the order the device indexes them
 *     (depth index x EVT_TMA_HEIGHTS + rows / 8 - 1), the 128-byte swizzle
 *     and zero fill, the map bytes the encoder wrote copied out;
 *   - tensors TMA cannot address get none and zeroed bytes: another dtype,
 *     another rank, a misaligned base, rows that are not whole 64-column
 *     chunks, no address, no encoder (an old driver), an encoder failure
 *     part-way (no half-filled table entry);
 *   - a launch's table (evt_tmaps_bind): each tensor's index, re-encoding
 *     only a tensor that moved or changed shape, nothing without a ring.
 * The maps in use run on a GPU (tests/gpu/decode_check.sh, run.sh's
 * compute-sanitizer cases).
 */
#include <stdint.h>
#include <string.h>
#include "harness.h"
#include "runtime/cuda_driver.h"
#include "runtime/tmaps.h"

static struct {
    int calls, fail_at;
    int dtype, swizzle, oob;
    unsigned rank, box[EVT_TMA_BOXES][3];
    unsigned long long dims[3], stride[2];
    void *addr;
} rec;

static CUresult fake_encode(void *map, int dtype, unsigned rank, void *addr, const unsigned long long *dims,
                            const unsigned long long *strides, const unsigned *box, const unsigned *elem_strides, int interleave,
                            int swizzle, int l2_promotion, int oob_fill)
{
    (void)elem_strides; (void)interleave; (void)l2_promotion;
    int k = rec.calls++;
    if (k == rec.fail_at) return 1;
    rec.dtype = dtype; rec.rank = rank; rec.addr = addr; rec.swizzle = swizzle; rec.oob = oob_fill;
    for (unsigned d = 0; d < rank && d < 3; d++) rec.dims[d] = dims[d];
    for (unsigned d = 0; d + 1 < rank && d < 2; d++) rec.stride[d] = strides[d];
    if (k < EVT_TMA_BOXES)
        for (unsigned d = 0; d < rank && d < 3; d++) rec.box[k][d] = box[d];
    memset(map, 0xA0 + k, EVT_TMA_MAP_BYTES);
    return 0;
}

static evt_tensor_ref matrix(void *ptr, int64_t rows, int64_t cols, int dtype)
{
    evt_tensor_ref t;
    memset(&t, 0, sizeof t);
    t.ptr = ptr;
    t.dim[0] = rows; t.dim[1] = cols; t.dim[2] = t.dim[3] = 1;
    t.rank = 2; t.dtype = (int16_t)dtype; t.tmap = -1;
    return t;
}

static unsigned char out[EVT_TMA_BOXES * EVT_TMA_MAP_BYTES];

static int all_zero(void)
{
    for (size_t i = 0; i < sizeof out; i++)
        if (out[i]) return 0;
    return 1;
}

static void bf16_matrix_gets_every_height_and_depth(void **state)
{
    (void)state;
    memset(&rec, 0, sizeof rec);
    rec.fail_at = -1;
    evt_cuda_g.cu.TensorMapEncodeTiled = fake_encode;
    evt_tensor_ref t = matrix((void *)(uintptr_t)0x7000100, 12288, 4096, EVT_BF16);
    assert_int_equal(evt_tmaps_encode(&t, out), 1);
    assert_int_equal(rec.calls, EVT_TMA_BOXES);
    assert_int_equal(rec.rank, 3);
    assert_int_equal(rec.dtype, 9);   /* CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 */
    assert_int_equal(rec.swizzle, 3); /* CU_TENSOR_MAP_SWIZZLE_128B: the wgmma operands' layout */
    assert_int_equal(rec.oob, 0);     /* rows past the matrix read as zeros */
    assert_ptr_equal(rec.addr, t.ptr);
    assert_int_equal(rec.dims[0], 64); /* innermost first: a chunk's columns, rows, chunks */
    assert_int_equal(rec.dims[1], 12288);
    assert_int_equal(rec.dims[2], 4096 / 64);
    assert_int_equal(rec.stride[0], 4096 * 2); /* the row pitch */
    assert_int_equal(rec.stride[1], 128);      /* the chunk pitch */
    assert_int_equal(EVT_TMA_BOXES, 48);
    for (int b = 0; b < EVT_TMA_BOXES; b++) {
        assert_int_equal(rec.box[b][0], 64); /* 128 bytes: one swizzle span */
        assert_int_equal(rec.box[b][1], 8 * (b % EVT_TMA_HEIGHTS + 1));
        assert_int_equal(rec.box[b][2], 1u << (b / EVT_TMA_HEIGHTS));
        assert_int_equal(out[b * EVT_TMA_MAP_BYTES], 0xA0 + b);
        assert_int_equal(out[b * EVT_TMA_MAP_BYTES + EVT_TMA_MAP_BYTES - 1], 0xA0 + b);
    }
}

static void unaddressable_tensors_get_none(void **state)
{
    (void)state;
    evt_cuda_g.cu.TensorMapEncodeTiled = fake_encode;
    struct { evt_tensor_ref t; const char *why; } bad[] = {
        {matrix((void *)(uintptr_t)0x7000100, 64, 64, EVT_F32), "f32"},
        {matrix((void *)(uintptr_t)0x7000108, 64, 64, EVT_BF16), "base not 16-byte aligned"},
        {matrix((void *)(uintptr_t)0x7000100, 64, 60, EVT_BF16), "120-byte rows"},
        {matrix((void *)(uintptr_t)0x7000100, 64, 96, EVT_BF16), "1.5 chunks a row"},
        {matrix(NULL, 64, 64, EVT_BF16), "no address"},
        {matrix((void *)(uintptr_t)0x7000100, 0, 64, EVT_BF16), "no rows"},
    };
    evt_tensor_ref r3 = matrix((void *)(uintptr_t)0x7000100, 4, 64, EVT_BF16);
    r3.rank = 3;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0] + 1; i++) {
        const evt_tensor_ref *t = i < sizeof bad / sizeof bad[0] ? &bad[i].t : &r3;
        memset(&rec, 0, sizeof rec);
        rec.fail_at = -1;
        memset(out, 0x55, sizeof out);
        if (evt_tmaps_encode(t, out) != 0) fail_msg("encoded maps for a tensor TMA cannot address (%s)", i < sizeof bad / sizeof bad[0] ? bad[i].why : "rank 3");
        assert_int_equal(rec.calls, 0);
        assert_true(all_zero());
    }
}

static void no_encoder_or_a_failure_leaves_none(void **state)
{
    (void)state;
    evt_tensor_ref t = matrix((void *)(uintptr_t)0x7000100, 256, 1024, EVT_BF16);
    evt_cuda_g.cu.TensorMapEncodeTiled = NULL; /* a driver without it */
    memset(out, 0x55, sizeof out);
    assert_int_equal(evt_tmaps_encode(&t, out), 0);
    assert_true(all_zero());
    evt_cuda_g.cu.TensorMapEncodeTiled = fake_encode;
    memset(&rec, 0, sizeof rec);
    rec.fail_at = 20; /* the 40-row box two chunks deep is refused */
    memset(out, 0x55, sizeof out);
    assert_int_equal(evt_tmaps_encode(&t, out), 0);
    assert_int_equal(rec.calls, 21);
    assert_true(all_zero());
    evt_cuda_g.cu.TensorMapEncodeTiled = NULL;
}

/* The launch's table: maps for the tensors that can have them, re-encoded
   only for a tensor that moved or changed shape, nothing without `want`. */
static void table_reencodes_only_what_changed(void **state)
{
    (void)state;
    evt_cuda_g.cu.TensorMapEncodeTiled = fake_encode;
    memset(&rec, 0, sizeof rec);
    rec.fail_at = -1;
    evt_tmap_table tab = {0};
    evt_tensor_ref tr[3] = {matrix((void *)(uintptr_t)0x7000100, 256, 1024, EVT_BF16),
                            matrix((void *)(uintptr_t)0x7100000, 1, 1024, EVT_F32),
                            matrix((void *)(uintptr_t)0x7200000, 64, 4096, EVT_BF16)};
    int any = 0;
    assert_int_equal(evt_tmaps_bind(&tab, tr, 3, 1, &any), 1);
    assert_int_equal(any, 1);
    assert_int_equal(tr[0].tmap, 0);
    assert_int_equal(tr[1].tmap, -1);
    assert_int_equal(tr[2].tmap, 2);
    assert_int_equal(rec.calls, 2 * EVT_TMA_BOXES);
    const size_t per = EVT_TMA_BOXES * EVT_TMA_MAP_BYTES;
    assert_int_equal(tab.host[1 * per], 0); /* the f32 tensor's entry stays zero */
    assert_int_equal(tab.host[2 * per], 0xA0 + EVT_TMA_BOXES);
    /* the next launch, nothing moved: no encoding, no upload */
    tr[0].tmap = tr[1].tmap = tr[2].tmap = 7;
    assert_int_equal(evt_tmaps_bind(&tab, tr, 3, 1, &any), 0);
    assert_int_equal(rec.calls, 2 * EVT_TMA_BOXES);
    assert_int_equal(tr[0].tmap, 0);
    assert_int_equal(tr[1].tmap, -1);
    assert_int_equal(tr[2].tmap, 2);
    /* an activation bound at another batch: its maps only */
    tr[2].dim[0] = 32;
    assert_int_equal(evt_tmaps_bind(&tab, tr, 3, 1, &any), 1);
    assert_int_equal(rec.calls, 3 * EVT_TMA_BOXES);
    assert_int_equal(rec.dims[1], 32);
    assert_int_equal(rec.dims[2], 4096 / 64);
    /* a launch without a ring: no maps, nothing encoded */
    assert_int_equal(evt_tmaps_bind(&tab, tr, 3, 0, &any), 0);
    assert_int_equal(any, 0);
    assert_int_equal(tr[0].tmap, -1);
    assert_int_equal(tr[2].tmap, -1);
    assert_int_equal(rec.calls, 3 * EVT_TMA_BOXES);
    evt_tmaps_free(&tab);
    assert_null(tab.host);
    evt_cuda_g.cu.TensorMapEncodeTiled = NULL;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bf16_matrix_gets_every_height_and_depth),
        cmocka_unit_test(unaddressable_tensors_get_none),
        cmocka_unit_test(no_encoder_or_a_failure_leaves_none),
        cmocka_unit_test(table_reencodes_only_what_changed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
