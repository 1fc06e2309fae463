/* rope.h — the rotate-half RoPE angle row of one position, the one formula
 * behind every RoPE value evtc computes on the host: the C tiles (llm.c:
 * q_rope, k_rope_append) and the `rope(theta=...)` initializer that fills the
 * angle table attn_rope_split reads (runtime/buffers.c). Double precision,
 * rounded once to float, so the table's rows are bitwise what the C tiles
 * compute for the same position.
 *
 *   cs[i]         = cos(p * theta^(-2i/d))   for i < d/2
 *   cs[d/2 + i]   = sin(p * theta^(-2i/d))
 */
#ifndef EVT_TILES_ROPE_H
#define EVT_TILES_ROPE_H
#include <math.h>
#include <stdint.h>

static inline void evt_rope_row(double theta, int64_t d, int64_t p, float *cs)
{
    int64_t half = d / 2;
    for (int64_t i = 0; i < half; i++) {
        double inv = pow(theta, -2.0 * (double)i / (double)d);
        double ang = (double)p * inv;
        cs[i] = (float)cos(ang);
        cs[half + i] = (float)sin(ang);
    }
}

#endif
