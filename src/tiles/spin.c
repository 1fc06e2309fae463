/* spin.c — synthetic tasks of controlled duration (overlap, load balance,
 * scheduling overhead), and a chain step for dependency-handoff tests.
 *   spin(X[n], Y[m], ns, fan, period, heavy, factor) over any grid; task lin:
 *       busy-waits ns, times `factor` for heavy tasks: lin % period >= period - heavy
 *       (period 8, heavy 1: every 8th task; period 8, heavy 4: the second half), then
 *       Y[lin] = 1 + lin + sum of X[lin*fan .. lin*fan + fan)
 *   chain_step(X[n], dir) over (i): X[i] = X[i - dir] + 1, or 1 where i - dir
 *       falls outside X (dir = +1: forward chain, -1: backward chain)
 *   mark(M[n]) over any grid: M[lin] += 1 — a task lost or run twice shows.
 * The output depends only on the inputs, so schedules compare bitwise. */
#include "tiles/tiles_cpu.h"

static int64_t linear(const evt_task_args *a)
{
    int64_t lin = 0;
    for (int k = 0; k < a->ncoord; k++) lin = lin * a->grid[k] + a->coord[k];
    return lin;
}

void evt_tile_spin(const evt_task_args *a)
{
    int64_t lin = linear(a);
    int64_t ns = a->iarg[0], fan = a->iarg[1], period = a->iarg[2], heavy = a->iarg[3], factor = a->iarg[4];
    if (period > 0 && lin % period >= period - heavy) ns *= factor;
    if (ns > 0) {
        uint64_t end = evt_tile_now_ns() + (uint64_t)ns;
        while (evt_tile_now_ns() < end) { }
    }
    const float *X = a->t[0].ptr;
    float *Y = a->t[1].ptr;
    float s = 1.0f + (float)lin;
    for (int64_t k = lin * fan; k < (lin + 1) * fan && k < a->t[0].dim[0]; k++) s += X[k];
    if (lin < a->t[1].dim[0]) Y[lin] = s;
}

void evt_tile_mark(const evt_task_args *a)
{
    int32_t *M = a->t[0].ptr;
    int64_t lin = linear(a);
    if (lin < a->t[0].dim[0]) M[lin] += 1;
}

void evt_tile_chain_step(const evt_task_args *a)
{
    float *X = a->t[0].ptr;
    int64_t i = a->coord[0], n = a->t[0].dim[0], prev = i - a->iarg[0];
    if (i < n) X[i] = (prev >= 0 && prev < n ? X[prev] : 0.0f) + 1.0f;
}
