/* llm_slices.cuh — the k-slice tiles (CUDA; the C versions are in llm.c):
 * linear_part, a band of rows over one slice of K into f32 partials, and
 * add_rmsnorm, the norm after it that adds the slices to the residual (the
 * O and down projections at batch 33-64 by default, to 128 with
 * --slices-to: docs/models.md, --dn-slices).
 * Included by llm.cuh after the GEMV core (llm_gemv.cuh, llm_tma.cuh),
 * whose units, TMA path and helpers it uses. */
#ifndef EVT_TILE_LLM_SLICES_CUH
#define EVT_TILE_LLM_SLICES_CUH

/* linear_part (llm.c): the band's rows over the task's k slice into f32
   partials. The TMA path streams just that slice of W and of x (the point:
   each tile reads 1 / KP of x; every form takes a slice: the batch-17-64
   one, and in the batch-65-128 kernel the two-halves and the swapped ones).
   Where it cannot run (batch <= 16, no ring or maps) slice 0 takes the band
   over all of K on the register units (or the scalar loop) and the other
   slices write zeros: the same sum, never a stale partial. */
template <bool EARLY>
__device__ __forceinline__ void evt_llm_linear_part(const evt_task_args *a)
{
    const int64_t B = a->t[0].dim[0], K = a->t[0].dim[1], N = a->t[1].dim[0], KP = a->t[2].dim[0];
    const int64_t nbands = KP > 0 ? a->grid[0] / KP : 0;
    int64_t n0 = 0, n1 = 0;
    if (nbands > 0 && a->coord[0] < nbands * KP) evt_llm_tile_rows(a->coord[0] % nbands, nbands, N, &n0, &n1);
    if (n0 >= n1) {
        if constexpr (EARLY) evt_tile_wait(a);
        return;
    }
    const int64_t s = a->coord[0] / nbands;
    const evt_bf16 *x = (const evt_bf16 *)a->t[0].ptr, *W = (const evt_bf16 *)a->t[1].ptr;
    float *part = (float *)a->t[2].ptr;
    const bool units = !((K & 31) || (((uintptr_t)x | (uintptr_t)W) & 15) || (evt_tile_threads() & 31));
    if (units && !(EVT_STREAM && a->stream > 0) && evt_llm_gemv_tma<EVT_LLM_MODE_PART, EARLY, false>(a, n0, n1)) return;
    if (s > 0 || !units) {
        if (EARLY && evt_tile_wait(a)) return;
        const int64_t R = n1 - n0;
        if (s > 0) {
            for (int64_t e = threadIdx.x; e < B * R; e += evt_tile_threads()) part[(s * B + e / R) * N + n0 + e % R] = 0.f;
            return;
        }
        /* odd shapes: a warp per (row, batch row), all of K */
        const int warp = threadIdx.x >> 5, nwarps = evt_tile_threads() >> 5, lane = threadIdx.x & 31;
        for (int64_t e = warp; e < R * B; e += nwarps) {
            const int64_t n = n0 + e / B, b = e % B;
            float acc = 0;
            for (int64_t k = lane; k < K; k += 32) acc += evt_llm_ld(x, b * K + k) * __bfloat162float(__ldg(W + n * K + k));
            for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
            if (lane == 0) part[b * N + n] = acc;
        }
        return;
    }
    evt_llm_gemv_rows<EVT_LLM_MODE_PART, false, false, EARLY>(a, W, W, 0, n0, n1, n1 - n0);
}
__device__ EVT_LLM_GEMV_FN void linear_part_cuda(const evt_task_args *a) { evt_llm_linear_part<false>(a); }
__device__ EVT_LLM_GEMV_FN void linear_part_early_cuda(const evt_task_args *a) { evt_llm_linear_part<true>(a); }

/* add_rmsnorm (llm.c): y = r + the slices of part (in order), rounded once;
   h = rmsnorm(y) * w. A thread's 8-element chunks: w's copied into shared
   memory by cp.async first (as rmsnorm: its round trip overlaps the row's,
   not after the sum); with a TMA ring of (4 KP + 2) H bytes, r's row and
   every slice's partial row copied into it by cp.async too (through L2:
   other SMs wrote them), all in flight at once without registers, then
   summed from shared memory (session 50: qwen3-8b batch 40 and 64 -0.9%
   per token against the loads below, which go one slice at a time and
   spilled 96 bytes at KP = 2); without, r and each slice's two float4s
   from global memory. The new y goes to global memory and to shared memory
   (bf16, above the block sums), whose sum of squares the block adds; then
   h from the staged y and w (each thread reads back only its own chunks). */
__device__ __noinline__ void add_rmsnorm_cuda(const evt_task_args *a)
{
    const evt_bf16 *r = (const evt_bf16 *)a->t[0].ptr, *w = (const evt_bf16 *)a->t[2].ptr;
    const float *part = (const float *)a->t[1].ptr;
    evt_bf16 *y = (evt_bf16 *)a->t[3].ptr, *h = (evt_bf16 *)a->t[4].ptr;
    const int64_t b = a->coord[0], B = a->t[0].dim[0], H = a->t[0].dim[1], KP = a->t[1].dim[0];
    const float eps = (float)a->iarg[0] * 1e-12f;
    evt_bf16 *ys = (evt_bf16 *)(evt_llm_smem + 64);
    const bool vec = H % 8 == 0 && 4 * H <= 4 * (EVT_LLM_SMEM_FLOATS - 64) &&
                     !((((uintptr_t)(r + b * H)) | (uintptr_t)w | (uintptr_t)(y + b * H) | (uintptr_t)(h + b * H) | (uintptr_t)part |
                        (uintptr_t)(B * H * 4)) & 15);
    const uint32_t ws = (uint32_t)__cvta_generic_to_shared(ys) + 2u * (uint32_t)H; /* w's staging, above y's */
    if (vec) {
        for (int64_t i = threadIdx.x; i < H / 8; i += evt_tile_threads())
            asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(ws + 16u * (uint32_t)i), "l"(w + 8 * i) : "memory");
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    float ss = 0;
    /* the residual row and every slice's partial row copied into the TMA ring
       by cp.async (free between GEMV tasks: theirs have all landed and been
       read before they end), all in flight at once without registers; each
       thread then reads back only the chunks it copied */
    const uint32_t rs = (uint32_t)__cvta_generic_to_shared(evt_dyn_smem + a->tma_ring_off), ps = rs + 2u * (uint32_t)H;
    if (vec && KP >= 1 && KP <= 8 && (uint64_t)a->tma_ring_bytes >= (uint64_t)(4 * KP + 2) * (uint64_t)H && !(rs & 15)) {
        for (int64_t i = threadIdx.x; i < H / 8; i += evt_tile_threads()) {
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(rs + 16u * (uint32_t)i), "l"(r + b * H + 8 * i) : "memory");
            for (int64_t s = 0; s < KP; s++) {
                const uint32_t d = ps + 4u * (uint32_t)(s * H + 8 * i);
                const float *src = part + (s * B + b) * H + 8 * i;
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d + 16u), "l"(src + 4) : "memory");
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
        asm volatile("cp.async.wait_all;" ::: "memory"); /* this thread's chunks (and w's) */
        for (int64_t i = threadIdx.x; i < H / 8; i += evt_tile_threads()) {
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (int64_t s = 0; s < KP; s++) { /* in slice order, as llm.c */
                const uint4 p0 = evt_llm_lds(ps + 4u * (uint32_t)(s * H + 8 * i)), p1 = evt_llm_lds(ps + 4u * (uint32_t)(s * H + 8 * i) + 16u);
                const uint32_t *u0 = &p0.x, *u1 = &p1.x;
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    acc[j] += __uint_as_float(u0[j]);
                    acc[4 + j] += __uint_as_float(u1[j]);
                }
            }
            const uint4 rv = evt_llm_lds(rs + 16u * (uint32_t)i);
            const uint32_t *ru = &rv.x;
            uint4 out;
            uint32_t *o = &out.x;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                __nv_bfloat162 pr = __floats2bfloat162_rn(evt_llm_lo(ru[j]) + acc[2 * j], evt_llm_hi(ru[j]) + acc[2 * j + 1]);
                o[j] = *(uint32_t *)&pr;
                const float lo = evt_llm_lo(o[j]), hi = evt_llm_hi(o[j]);
                ss += lo * lo;
                ss += hi * hi;
            }
            *(uint4 *)(y + b * H + 8 * i) = out;
            *(uint4 *)(ys + 8 * i) = out;
        }
    } else if (vec) { /* (the chunk's rounding and stores as above, written out again: a helper shared by
                         both paths changed the sliced kernel's machine code, bench/kernel_same.sh; kept as
                         session 50 measured it) */
        for (int64_t i = threadIdx.x; i < H / 8; i += evt_tile_threads()) {
            const uint4 rv = *(const uint4 *)(r + b * H + 8 * i);
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (int64_t s = 0; s < KP; s++) {
                const float *ps = part + (s * B + b) * H + 8 * i;
                float4 p0, p1;
                asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(p0.x), "=f"(p0.y), "=f"(p0.z), "=f"(p0.w) : "l"(ps));
                asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(p1.x), "=f"(p1.y), "=f"(p1.z), "=f"(p1.w) : "l"(ps + 4));
                acc[0] += p0.x; acc[1] += p0.y; acc[2] += p0.z; acc[3] += p0.w;
                acc[4] += p1.x; acc[5] += p1.y; acc[6] += p1.z; acc[7] += p1.w;
            }
            const uint32_t *ru = &rv.x;
            uint4 out;
            uint32_t *o = &out.x;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                __nv_bfloat162 pr = __floats2bfloat162_rn(evt_llm_lo(ru[j]) + acc[2 * j], evt_llm_hi(ru[j]) + acc[2 * j + 1]);
                o[j] = *(uint32_t *)&pr;
                const float lo = evt_llm_lo(o[j]), hi = evt_llm_hi(o[j]);
                ss += lo * lo;
                ss += hi * hi;
            }
            *(uint4 *)(y + b * H + 8 * i) = out;
            *(uint4 *)(ys + 8 * i) = out;
        }
    } else {
        for (int64_t i = threadIdx.x; i < H; i += evt_tile_threads()) {
            float acc = 0;
            for (int64_t s = 0; s < KP; s++) acc += __ldcg(part + (s * B + b) * H + i);
            const evt_bf16 v = __float2bfloat16_rn(evt_llm_ld(r, b * H + i) + acc);
            y[b * H + i] = v;
            const float f = __bfloat162float(v);
            ss += f * f;
        }
    }
    ss = evt_llm_block_sum(ss); /* its barriers also order the staged y */
    const float sc = 1.0f / sqrtf(ss / (float)H + eps);
    if (vec) {
        asm volatile("cp.async.wait_all;" ::: "memory"); /* this thread's chunks of w */
        for (int64_t i = threadIdx.x; i < H / 8; i += evt_tile_threads()) {
            const uint4 yv = *(const uint4 *)(ys + 8 * i), wv = evt_llm_lds(ws + 16u * (uint32_t)i);
            const uint32_t *u = &yv.x, *v = &wv.x;
            uint4 out;
            uint32_t *o = &out.x;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                __nv_bfloat162 pr = __floats2bfloat162_rn(evt_llm_lo(u[j]) * sc * evt_llm_lo(v[j]), evt_llm_hi(u[j]) * sc * evt_llm_hi(v[j]));
                o[j] = *(uint32_t *)&pr;
            }
            *(uint4 *)(h + b * H + 8 * i) = out;
        }
        evt_tile_sync(); /* the staging is reused by the next task */
    } else {
        for (int64_t i = threadIdx.x; i < H; i += evt_tile_threads())
            evt_llm_st(h, b * H + i, evt_llm_ld(y, b * H + i) * sc * __bfloat162float(__ldg(w + i)));
    }
}

#endif
