/* llm_tma_ptx.cuh — the PTX the TMA GEMV (llm_tma.cuh) is built from, one
 * thin wrapper each: shared-memory addresses, mbarriers (init, expected
 * bytes, arrivals, a parity wait that traps instead of hanging), the 3-D
 * tensor copy into shared memory, the wgmma shared-memory descriptor and the
 * m64nNk16 bf16 wgmma for each N the GEMV uses. Included by llm_tma.cuh only. */
#ifndef EVT_TILE_LLM_TMA_PTX_CUH
#define EVT_TILE_LLM_TMA_PTX_CUH
__device__ __forceinline__ uint32_t evt_tma_saddr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void evt_tma_bar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void evt_tma_expect(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void evt_tma_arrive_expect(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void evt_tma_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void evt_tma_arrive_n(uint32_t bar, uint32_t n)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(n) : "memory");
}
/* Waits for the phase of parity `par` to complete; a ring that never fills
   (an internal error) traps rather than hangs the launch. */
__device__ __forceinline__ void evt_tma_wait(uint32_t bar, uint32_t par)
{
    for (uint32_t spins = 0;; spins++) {
        uint32_t ok;
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(ok) : "r"(bar), "r"(par) : "memory");
        if (ok) return;
        if (spins > (1u << 28)) __trap();
    }
}
/* One 3-D box of map m (64 k x its rows x its chunks of 64 k) at row r0,
   chunk c0 into dst: the chunks land as consecutive planes of rows x 128
   bytes. */
__device__ __forceinline__ void evt_tma_load3(uint32_t dst, const evt_tmap *m, int r0, int c0, uint32_t bar)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                 ::"r"(dst), "l"(m), "r"(0), "r"(r0), "r"(c0), "r"(bar) : "memory");
}
/* Shared-memory matrix descriptor: K-major, 128-byte swizzle, 8-row groups
   1024 bytes apart (the layout of the boxes above, 1024-byte aligned). */
__device__ __forceinline__ uint64_t evt_tma_desc(uint32_t addr)
{
    return (uint64_t)((addr & 0x3ffffu) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}
__device__ __forceinline__ void evt_tma_wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void evt_tma_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void evt_tma_wg_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }

/* D (64 x N, f32, this thread's N / 2) += A (64 x 16) * B (N x 16)^T: one
   specialisation per N, its N / 2 accumulators as operands %0.. and the
   descriptors and the scale-d flag after them. */
template <int N> __device__ __forceinline__ void evt_tma_wgmma(float *d, uint64_t da, uint64_t db);
#define EVT_TMA_R8(a, b, c, e, f, g, h, i) "%" #a ", %" #b ", %" #c ", %" #e ", %" #f ", %" #g ", %" #h ", %" #i
#define EVT_TMA_R16 EVT_TMA_R8(0, 1, 2, 3, 4, 5, 6, 7) ", " EVT_TMA_R8(8, 9, 10, 11, 12, 13, 14, 15)
#define EVT_TMA_R24 EVT_TMA_R16 ", " EVT_TMA_R8(16, 17, 18, 19, 20, 21, 22, 23)
#define EVT_TMA_R32 EVT_TMA_R24 ", " EVT_TMA_R8(24, 25, 26, 27, 28, 29, 30, 31)
#define EVT_TMA_R48 EVT_TMA_R32 ", " EVT_TMA_R8(32, 33, 34, 35, 36, 37, 38, 39) ", " EVT_TMA_R8(40, 41, 42, 43, 44, 45, 46, 47)
#define EVT_TMA_R64 EVT_TMA_R48 ", " EVT_TMA_R8(48, 49, 50, 51, 52, 53, 54, 55) ", " EVT_TMA_R8(56, 57, 58, 59, 60, 61, 62, 63)
#define EVT_TMA_D8(o) "+f"(d[o]), "+f"(d[o + 1]), "+f"(d[o + 2]), "+f"(d[o + 3]), "+f"(d[o + 4]), "+f"(d[o + 5]), "+f"(d[o + 6]), "+f"(d[o + 7])
#define EVT_TMA_D16 EVT_TMA_D8(0), EVT_TMA_D8(8)
#define EVT_TMA_D24 EVT_TMA_D16, EVT_TMA_D8(16)
#define EVT_TMA_D32 EVT_TMA_D24, EVT_TMA_D8(24)
#define EVT_TMA_D48 EVT_TMA_D32, EVT_TMA_D8(32), EVT_TMA_D8(40)
#define EVT_TMA_D64 EVT_TMA_D48, EVT_TMA_D8(48), EVT_TMA_D8(56)
/* N; the accumulators' register list and operands; the operand numbers of
   the two descriptors and the flag */
#define EVT_TMA_WGMMA(N, REGS, OPS, DA, DB, FLAG)                                                   \
    template <> __device__ __forceinline__ void evt_tma_wgmma<N>(float *d, uint64_t da, uint64_t db) \
    {                                                                                                \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #FLAG ", 0;\n"                            \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 {" REGS "}, %" #DA ", %" #DB \
                     ", p, 1, 1, 0, 0;\n}\n"                                                          \
                     : OPS                                                                           \
                     : "l"(da), "l"(db), "r"(1));                                                    \
    }
EVT_TMA_WGMMA(16, EVT_TMA_R8(0, 1, 2, 3, 4, 5, 6, 7), EVT_TMA_D8(0), 8, 9, 10)
EVT_TMA_WGMMA(32, EVT_TMA_R16, EVT_TMA_D16, 16, 17, 18)
EVT_TMA_WGMMA(48, EVT_TMA_R24, EVT_TMA_D24, 24, 25, 26)
EVT_TMA_WGMMA(64, EVT_TMA_R32, EVT_TMA_D32, 32, 33, 34)
EVT_TMA_WGMMA(96, EVT_TMA_R48, EVT_TMA_D48, 48, 49, 50)
EVT_TMA_WGMMA(128, EVT_TMA_R64, EVT_TMA_D64, 64, 65, 66)
#undef EVT_TMA_WGMMA
#undef EVT_TMA_R8
#undef EVT_TMA_R16
#undef EVT_TMA_R24
#undef EVT_TMA_R32
#undef EVT_TMA_R48
#undef EVT_TMA_R64
#undef EVT_TMA_D8
#undef EVT_TMA_D16
#undef EVT_TMA_D24
#undef EVT_TMA_D32
#undef EVT_TMA_D48
#undef EVT_TMA_D64

#endif
