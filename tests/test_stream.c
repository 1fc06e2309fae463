/* test_stream.c — the weight stream's host-visible parts (src/device/evt_stream.h):
 *   - the linear family's bands (evt_tile_linear_stream, evt_tile_mlp_up_stream:
 *     the rows a GEMV task reads, as its CUDA tile reads them);
 *   - the jobs bind resolves for each static worker (bind_stream.c): one per
 *     streaming task, in queue order, with the right tensors and rows, and
 *     issue_at under the three policies (quiet: never across a task that does
 *     not stream; eager: from the worker's first entry; own: at the job's own
 *     entry); none without the stream,
 *     none for dynamic schedules, only the static workers' under hybrid;
 *   - the ring's placement (evt_stream_place, the decision the GPU pump makes
 *     before every copy): a simulated worker queue of bands under the pump's
 *     FIFO policy, checking that live bands never overlap, stay inside the
 *     ring, keep queue order, stream whole whenever they fit, and that a band
 *     larger than the ring gets a prefix only once the ring is empty;
 *   - the packed location word (EVT_STREAM_AT) round-trips;
 *   - the rings' caps from the environment (EVT_STREAM_RING, EVT_TMA_RING:
 *     evt_cuda_ring_env) parse as byte counts or are refused.
 * The copies themselves run on a GPU (tests/gpu/decode_check.sh --stream).
 */
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "device/evt_stream.h"
#include "runtime/bind.h"
#include "runtime/cuda_smem.h"
#include "tiles/tiles_cpu.h"
#include "evt/evt.h"
#include "evt/models.h"

static evt_task_args gemv_args(int64_t B, int64_t K, int64_t N, int64_t nb, int64_t T)
{
    evt_task_args a;
    memset(&a, 0, sizeof a);
    a.ncoord = 1;
    a.coord[0] = nb;
    a.t[0].dim[0] = B; a.t[0].dim[1] = K;
    for (int i = 1; i <= 2; i++) { a.t[i].dim[0] = N; a.t[i].dim[1] = K; }
    a.ntensors = 4;
    a.iarg[0] = T;
    a.nints = 1;
    return a;
}

static void linear_bands(void **state)
{
    (void)state;
    evt_stream_band band;
    /* qwen3-0.6b's QKV (4096 x 1024) in 131 tiles: tile nb owns rows [nb*N/T, (nb+1)*N/T) */
    int64_t total = 0;
    for (int nb = 0; nb < 131; nb++) {
        evt_task_args a = gemv_args(1, 1024, 4096, nb, 131);
        assert_int_equal(evt_tile_linear_stream(&a, &band), 1);
        assert_int_equal(band.row0, nb * 4096 / 131);
        assert_int_equal(band.row0 + band.nrows, (nb + 1) * 4096 / 131);
        assert_int_equal(band.pitch, 2048);
        assert_int_equal(band.param[0], 1);
        assert_int_equal(band.param[1], -1);
        total += band.nrows;
    }
    assert_int_equal(total, 4096);
    evt_task_args a = gemv_args(8, 1024, 3072, 5, 131); /* mlp_up: gate and up */
    assert_int_equal(evt_tile_mlp_up_stream(&a, &band), 1);
    assert_int_equal(band.param[0], 1);
    assert_int_equal(band.param[1], 2);
    a = gemv_args(1, 1000, 64, 0, 4); /* K % 32 != 0: the CUDA tile's scalar path reads global memory */
    assert_int_equal(evt_tile_linear_stream(&a, &band), 0);
    a = gemv_args(1, 1024, 8, 0, 16); /* more tiles than rows: tile 0 of 16 over 8 rows is empty */
    assert_int_equal(evt_tile_linear_stream(&a, &band), 0);
}

/* The tiny Qwen3 step's plan (GEMV calls annotated prefetch), streaming or not. */
static evt_plan *tiny_plan(int stream)
{
    evt_diag d;
    evt_diag_init(&d, "qwen3-tiny");
    evt_qwen3_config c;
    assert_int_equal(evt_qwen3_load_config("examples/qwen3-tiny.json", &c, &d), EVT_OK);
    evt_qwen3_opts qo = {.prefetch = 1};
    char *text = evt_qwen3_program(&c, &qo, &d);
    assert_non_null(text);
    evt_graph *g = evt_parse(text, strlen(text), &d);
    assert_non_null(g);
    free(text);
    evt_compile_opts co = {.stream_weights = stream};
    evt_plan *p = NULL;
    if (evt_compile(g, &co, &p, &d)) fail_msg("%s", d.text);
    evt_diag_free(&d);
    return p;
}

enum { EAGER, QUIET, OWN };
/* Checks b's jobs against its queues (issue_at under the policy). */
static void check_jobs(const evt_plan *p, const evt_bound *b, int policy)
{
    const evt_graph *g = evt_plan_graph(p);
    const evt_static_sched *q = &b->q;
    assert_non_null(b->sjob_off);
    int64_t nstream = 0;
    for (int w = 0; w < q->nworkers; w++) {
        int64_t j = b->sjob_off[w];
        for (int64_t k = q->q_off[w]; k < q->q_off[w + 1]; k++) {
            int c = (int)(q->q[k] >> EVT_QCALL_SHIFT);
            const evt_call *call = g->calls[c];
            int is_gemv = !strcmp(call->op, "linear") || !strcmp(call->op, "linear_res") || !strcmp(call->op, "mlp_up");
            if (!is_gemv) continue;
            nstream++;
            assert_true(j < b->sjob_off[w + 1]);
            const evt_stream_job *J = &b->sjob[j++];
            assert_int_equal(J->entry, k); /* one job per GEMV task, in queue order */
            assert_int_equal(J->tensor[0], call->args[1].tensor->id);
            assert_int_equal(J->tensor[1], !strcmp(call->op, "mlp_up") ? call->args[2].tensor->id : -1);
            int64_t coord[EVT_MAX_RANK] = {0}, T = 0, N = 0;
            evt_shape_decode(&q->ext[c * 4], call->rank, (int64_t)(q->q[k] & EVT_QINDEX_MASK), coord);
            int err = 0;
            evt_eval_env env = {b->s.sym, coord, NULL, NULL};
            T = evt_expr_eval(call->args[call->nargs - 1].value, &env, &err);
            N = evt_expr_eval(call->args[1].tensor->shape[0], &env, &err);
            assert_int_equal(J->row0, coord[0] * N / T);
            assert_int_equal(J->row0 + J->nrows, (coord[0] + 1) * N / T);
            assert_int_equal(J->pitch, 2 * evt_expr_eval(call->args[1].tensor->shape[1], &env, &err));
            if (policy == EAGER) {
                assert_int_equal(J->issue_at, q->q_off[w]);
                continue;
            }
            if (policy == OWN) {
                assert_int_equal(J->issue_at, k);
                continue;
            }
            /* quiet: every entry from issue_at to the job's streams, and the one before issue_at does not */
            assert_true(J->issue_at >= q->q_off[w] && J->issue_at <= k);
            for (int64_t i = J->issue_at; i < k; i++) {
                const char *op = g->calls[q->q[i] >> EVT_QCALL_SHIFT]->op;
                assert_true(!strcmp(op, "linear") || !strcmp(op, "linear_res") || !strcmp(op, "mlp_up"));
            }
            if (J->issue_at > q->q_off[w]) {
                const char *op = g->calls[q->q[J->issue_at - 1] >> EVT_QCALL_SHIFT]->op;
                assert_false(!strcmp(op, "linear") || !strcmp(op, "linear_res") || !strcmp(op, "mlp_up"));
            }
        }
        assert_int_equal(j, b->sjob_off[w + 1]);
    }
    assert_true(nstream > 0);
}

static void stream_jobs(void **state)
{
    (void)state;
    evt_plan *p = tiny_plan(1), *plain = tiny_plan(0);
    evt_diag d;
    evt_diag_init(&d, "jobs");
    for (int64_t B = 1; B <= 5; B += 4) {
        int64_t sym[1] = {B};
        evt_bound b;
        unsetenv("EVT_STREAM_ISSUE");
        assert_int_equal(evt_bind(p, sym, EVT_SCHED_STATIC, 5, EVT_QUEUE_RR, 0, &b, &d), EVT_OK);
        check_jobs(p, &b, QUIET);
        evt_bound_free(&b);
        setenv("EVT_STREAM_ISSUE", "eager", 1);
        assert_int_equal(evt_bind(p, sym, EVT_SCHED_STATIC, 3, EVT_QUEUE_CP, 0, &b, &d), EVT_OK);
        check_jobs(p, &b, EAGER);
        evt_bound_free(&b);
        setenv("EVT_STREAM_ISSUE", "own", 1);
        assert_int_equal(evt_bind(p, sym, EVT_SCHED_STATIC, 4, EVT_QUEUE_RR, 0, &b, &d), EVT_OK);
        check_jobs(p, &b, OWN);
        evt_bound_free(&b);
        /* a value that names no policy fails the bind with a message */
        setenv("EVT_STREAM_ISSUE", "sooner", 1);
        evt_diag bad;
        evt_diag_init(&bad, "jobs");
        assert_int_equal(evt_bind(p, sym, EVT_SCHED_STATIC, 4, EVT_QUEUE_RR, 0, &b, &bad), EVT_ERR_SHAPE);
        assert_non_null(bad.text);
        assert_non_null(strstr(bad.text, "EVT_STREAM_ISSUE=sooner: expected eager, quiet or own"));
        evt_diag_free(&bad);
        setenv("EVT_STREAM_ISSUE", "", 1); /* empty: the default */
        assert_int_equal(evt_bind(p, sym, EVT_SCHED_STATIC, 5, EVT_QUEUE_RR, 0, &b, &d), EVT_OK);
        check_jobs(p, &b, QUIET);
        evt_bound_free(&b);
        unsetenv("EVT_STREAM_ISSUE");
        /* hybrid: the static workers' queues have their jobs */
        assert_int_equal(evt_bind(p, sym, EVT_SCHED_HYBRID, 6, EVT_QUEUE_RR, 0, &b, &d), EVT_OK);
        assert_true(b.nstatic > 0 && b.nstatic < 6);
        assert_int_equal(b.q.nworkers, b.nstatic);
        check_jobs(p, &b, QUIET);
        evt_bound_free(&b);
        /* no jobs: a dynamic schedule, or a plan that does not stream */
        assert_int_equal(evt_bind(p, sym, EVT_SCHED_DYNAMIC, 4, EVT_QUEUE_RR, 0, &b, &d), EVT_OK);
        assert_null(b.sjob);
        evt_bound_free(&b);
        assert_int_equal(evt_bind(plain, sym, EVT_SCHED_STATIC, 4, EVT_QUEUE_RR, 0, &b, &d), EVT_OK);
        assert_null(b.sjob);
        assert_null(b.sjob_off);
        evt_bound_free(&b);
    }
    evt_diag_free(&d);
    evt_graph *g1 = (evt_graph *)evt_plan_graph(p), *g2 = (evt_graph *)evt_plan_graph(plain);
    evt_plan_free(p);
    evt_plan_free(plain);
    evt_graph_free(g1);
    evt_graph_free(g2);
}

/* One live band in the simulated ring. */
typedef struct { int64_t entry, rows; uint32_t off, bytes, charge; } live_band;

/* Runs the pump's policy over a queue of bands (rows, row bytes; rows 0 = a
 * task that does not stream) with a ring of R bytes, and checks it. */
static void simulate(uint32_t R, int nslots, const int64_t *rows, const int64_t *row_bytes, int n, int lookahead)
{
    live_band *live = calloc(nslots, sizeof *live);
    int first = 0, count = 0;
    uint32_t head = 0, used = 0;
    int64_t next = 0, copied_whole = 0;
    for (int64_t k = 0; k < n; k++) {
        /* retire the bands of entries before k */
        while (count && live[first].entry < k) {
            used -= live[first].charge;
            first = (first + 1) % nslots;
            if (--count == 0) head = used = 0;
        }
        if (next < k) next = k;
        while (next < n && next <= k + lookahead && count < nslots) {
            uint32_t off = 0, charge = 0;
            int64_t r = rows[next] > 0 ? evt_stream_place(R, head, used, count, rows[next], row_bytes[next], &off, &charge) : -1;
            if (r < 0) {
                /* skipped: not streaming, or not even one row fits */
                assert_true(rows[next] <= 0 || row_bytes[next] > (int64_t)R);
                next++;
                continue;
            }
            if (r == 0) {
                /* stopping must be justified: the band does not fit now */
                assert_true(count > 0);
                break;
            }
            assert_true(r <= rows[next]);
            if (r < rows[next]) { /* a prefix: only for a band larger than the ring, into an empty ring */
                assert_true(rows[next] * row_bytes[next] > (int64_t)R);
                assert_int_equal(count, 0);
                assert_true((r + 1) * row_bytes[next] > (int64_t)R); /* the largest that fits */
            } else {
                copied_whole++;
            }
            uint32_t bytes = (uint32_t)(r * row_bytes[next]);
            assert_true(off + bytes <= R);
            assert_true(charge >= bytes && used + charge <= R);
            /* no overlap with any live band */
            for (int i = 0; i < count; i++) {
                const live_band *b = &live[(first + i) % nslots];
                assert_true(off + bytes <= b->off || b->off + b->bytes <= off);
                assert_true(b->entry < next); /* queue order */
            }
            int s = (first + count) % nslots;
            live[s] = (live_band){next, r, off, bytes, charge};
            count++;
            used += charge;
            head = off + bytes == R ? 0 : off + bytes;
            next++;
        }
        /* the current entry's band, when it streams and fits the ring, is live */
        if (rows[k] > 0 && row_bytes[k] <= (int64_t)R) {
            assert_true(count > 0);
            assert_int_equal(live[first].entry, k);
        }
    }
    int64_t fits = 0; /* bands that fit the ring whole are always copied whole */
    for (int i = 0; i < n; i++) fits += rows[i] > 0 && rows[i] * row_bytes[i] <= (int64_t)R;
    assert_int_equal(copied_whole, fits);
    free(live);
}

static void ring_placement(void **state)
{
    (void)state;
    /* qwen3-0.6b at batch 1, one worker's layer: qkv 31 x 2 KiB, attention
       (no band), o 8 x 4 KiB, up 2 x 23 x 2 KiB, down 8 x 6 KiB; a 150 KiB ring */
    int64_t rows[] = {31, 0, 8, 23, 8, 31, 0, 8, 23, 8, 31, 0, 8, 23, 8};
    int64_t rb[] = {2048, 0, 4096, 4096, 6144, 2048, 0, 4096, 4096, 6144, 2048, 0, 4096, 4096, 6144};
    simulate(150 * 1024, 8, rows, rb, 15, 48);
    /* qwen3-8b: bands larger than the ring (prefixes) between smaller ones */
    int64_t rows8[] = {47, 0, 31, 94, 31, 47, 0, 31, 94, 31};
    int64_t rb8[] = {8192, 0, 8192, 16384, 24576, 8192, 0, 8192, 16384, 24576};
    simulate(150 * 1024, 8, rows8, rb8, 10, 48);
    /* a row larger than the ring never streams; a tiny ring; few slots;
       random queues */
    int64_t big[] = {4, 2, 4};
    int64_t bigrb[] = {1 << 20, 1024, 512};
    simulate(64 * 1024, 8, big, bigrb, 3, 48);
    srand(7);
    for (int it = 0; it < 300; it++) {
        int n = 1 + rand() % 60;
        int64_t r[60], b[60];
        for (int i = 0; i < n; i++) {
            r[i] = rand() % 4 == 0 ? 0 : 1 + rand() % 64;
            b[i] = 16 * (1 + rand() % 512);
        }
        r[0] = 1 + rand() % 8; /* at least one band streams whole */
        b[0] = 1024;
        simulate((uint32_t)(16 * 1024 * (1 + rand() % 12)), 1 + rand() % 8, r, b, n, 1 + rand() % 48);
    }
}

static void location_word(void **state)
{
    (void)state;
    uint32_t offs[] = {0, 16, 4096, 232448 - 16};
    for (int i = 0; i < 4; i++)
        for (uint32_t s = 0; s < EVT_STREAM_SLOTS; s++)
            for (uint32_t p = 0; p < 2; p++) {
                uint32_t at = EVT_STREAM_AT(offs[i], s, p);
                assert_int_equal(EVT_STREAM_AT_OFF(at), offs[i]);
                assert_int_equal(EVT_STREAM_AT_SLOT(at), s);
                assert_int_equal(EVT_STREAM_AT_PARITY(at), p);
            }
}

/* EVT_STREAM_RING / EVT_TMA_RING: a decimal byte count from 0 to
   EVT_CUDA_RING_ENV_MAX sets the cap; unset or empty leaves the default;
   anything else is refused (-1), and the CUDA launch then fails with
   "NAME=VALUE: expected a byte count" (tests/gpu/run.sh, refusals) instead
   of running silently without a ring, as strtol's 0 used to */
static void ring_caps_from_env(void **state)
{
    (void)state;
    long cap = 77;
    unsetenv("EVT_TMA_RING");
    assert_int_equal(evt_cuda_ring_env("EVT_TMA_RING", &cap), 0);
    assert_int_equal(cap, 77);
    setenv("EVT_TMA_RING", "", 1);
    assert_int_equal(evt_cuda_ring_env("EVT_TMA_RING", &cap), 0);
    assert_int_equal(cap, 77);
    setenv("EVT_TMA_RING", "98304", 1);
    assert_int_equal(evt_cuda_ring_env("EVT_TMA_RING", &cap), 1);
    assert_int_equal(cap, 98304);
    setenv("EVT_TMA_RING", "0", 1);
    assert_int_equal(evt_cuda_ring_env("EVT_TMA_RING", &cap), 1);
    assert_int_equal(cap, 0);
    static const char *bad[] = {"96k", "-1", "1e5", "0x100", " ", "99999999999999999999", "2000000000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("EVT_STREAM_RING", bad[i], 1);
        cap = 5;
        if (evt_cuda_ring_env("EVT_STREAM_RING", &cap) != -1) fail_msg("EVT_STREAM_RING=%s accepted", bad[i]);
        assert_int_equal(cap, 5);
    }
    unsetenv("EVT_STREAM_RING");
    unsetenv("EVT_TMA_RING");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(linear_bands),
        cmocka_unit_test(ring_caps_from_env),
        cmocka_unit_test(stream_jobs),
        cmocka_unit_test(ring_placement),
        cmocka_unit_test(location_word),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
