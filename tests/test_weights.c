/* test_weights.c — the safetensors reader (include/evt/safetensors.h) and
 * `evtc decode --weights`: files written here in the format's layout, every
 * dtype the reader converts, shards in a directory, the errors a bad file
 * can cause, and a Qwen3 checkpoint in Hugging Face names loaded into the
 * tiny model's decode program (folded and unfolded norms), whose first
 * step's logits are checked against a plain double-precision Qwen3 step
 * written here from the checkpoint's tensors alone; prompts generate what
 * that step does, and through the CLI a checkpoint directory's tokenizer and
 * generation config are found. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "harness.h"
#include "evt/models.h"
#include "evt/runtime.h"
#include "evt/safetensors.h"
#include "runtime/half.h"

static uint32_t seed = 7;
static float frand(void) { seed = seed * 1664525u + 1013904223u; return (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f; }

/* A tensor to write: values as floats, stored as dtype ("BF16", "F16",
   "F32", or "I8" for an unsupported one). write_st rounds vals to what the
   file holds, so the caller's copy is what a reader must get back. */
typedef struct st_t {
    const char *name, *dtype;
    int rank;
    int64_t shape[2];
    float *vals;
} st_t;

static int64_t numel(const st_t *t) { return t->rank == 1 ? t->shape[0] : t->shape[0] * t->shape[1]; }
static int esize(const char *dt) { return !strcmp(dt, "F32") ? 4 : !strcmp(dt, "I8") ? 1 : 2; }

static void write_st(const char *path, const st_t *ts, int n)
{
    char hdr[1 << 16];
    size_t k = (size_t)snprintf(hdr, sizeof hdr, "{\"__metadata__\": {\"format\": \"pt\"}");
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        const uint64_t bytes = (uint64_t)numel(&ts[i]) * (uint64_t)esize(ts[i].dtype);
        char shape[48];
        if (ts[i].rank == 2) snprintf(shape, sizeof shape, "%lld, %lld", (long long)ts[i].shape[0], (long long)ts[i].shape[1]);
        else snprintf(shape, sizeof shape, "%lld", (long long)ts[i].shape[0]);
        k += (size_t)snprintf(hdr + k, sizeof hdr - k, ", \"%s\": {\"dtype\": \"%s\", \"shape\": [%s], \"data_offsets\": [%llu, %llu]}",
                              ts[i].name, ts[i].dtype, shape, (unsigned long long)off, (unsigned long long)(off + bytes));
        off += bytes;
    }
    k += (size_t)snprintf(hdr + k, sizeof hdr - k, "}");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    unsigned char len8[8];
    for (int b = 0; b < 8; b++) len8[b] = (unsigned char)((uint64_t)k >> (8 * b));
    fwrite(len8, 1, 8, f);
    fwrite(hdr, 1, k, f);
    for (int i = 0; i < n; i++) {
        for (int64_t e = 0; e < numel(&ts[i]); e++) {
            float *v = &ts[i].vals[e];
            if (!strcmp(ts[i].dtype, "F32")) fwrite(v, 4, 1, f);
            else if (!strcmp(ts[i].dtype, "I8")) fputc(0, f);
            else {
                const uint16_t h = !strcmp(ts[i].dtype, "BF16") ? evt_f32_to_bf16(*v) : evt_f32_to_f16(*v);
                *v = !strcmp(ts[i].dtype, "BF16") ? evt_bf16_to_f32(h) : evt_f16_to_f32(h);
                const unsigned char le[2] = {(unsigned char)(h & 0xff), (unsigned char)(h >> 8)};
                fwrite(le, 1, 2, f);
            }
        }
    }
    fclose(f);
}

static float *filled(int64_t n, float lo, float hi)
{
    float *v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = lo + (hi - lo) * 0.5f * (frand() + 1.0f);
    return v;
}

static void tmpdir(char *buf, size_t n, const char *what)
{
    snprintf(buf, n, "/tmp/evt_test_%s_%d", what, (int)getpid());
    mkdir(buf, 0777);
}

static void reader_formats(void **state)
{
    (void)state;
    char dir[96], path[160];
    tmpdir(dir, sizeof dir, "st_formats");
    snprintf(path, sizeof path, "%s/a.safetensors", dir);
    st_t ts[3] = {{"m.bf", "BF16", 2, {3, 5}, filled(15, -2, 2)}, {"m.half", "F16", 2, {2, 5}, filled(10, -2, 2)},
                  {"v.f32", "F32", 1, {5, 0}, filled(5, 0.5f, 1.5f)}};
    write_st(path, ts, 3);
    evt_st *st = NULL;
    evt_diag d;
    evt_diag_init(&d, "st");
    if (evt_st_open(path, &st, &d)) fail_msg("%s", d.text);
    assert_int_equal(evt_st_count(st), 3);
    evt_st_info info;
    assert_true(evt_st_find(st, "m.half", &info));
    assert_string_equal(info.dtype, "F16");
    assert_int_equal(info.rank, 2);
    assert_int_equal(info.shape[0], 2);
    assert_int_equal(info.shape[1], 5);
    assert_false(evt_st_find(st, "__metadata__", NULL));
    assert_false(evt_st_find(st, "nope", NULL));
    /* bf16 exactly; f16 and f32 rounded to bf16; a column scale in f32 before the rounding */
    uint16_t out[15];
    if (evt_st_read_bf16(st, "m.bf", 2, (int64_t[]){3, 5}, out, NULL, &d)) fail_msg("%s", d.text);
    for (int i = 0; i < 15; i++) assert_int_equal(out[i], evt_f32_to_bf16(ts[0].vals[i]));
    float g[5];
    if (evt_st_read_f32(st, "v.f32", 1, (int64_t[]){5}, g, &d)) fail_msg("%s", d.text);
    for (int i = 0; i < 5; i++) assert_true(g[i] == ts[2].vals[i]);
    if (evt_st_read_bf16(st, "m.half", 2, (int64_t[]){2, 5}, out, g, &d)) fail_msg("%s", d.text);
    for (int i = 0; i < 10; i++) assert_int_equal(out[i], evt_f32_to_bf16(ts[1].vals[i] * g[i % 5]));
    if (evt_st_read_f32(st, "m.half", 2, (int64_t[]){2, 5}, (float[10]){0}, &d)) fail_msg("%s", d.text);
    evt_st_close(st);
    evt_diag_free(&d);
    for (int i = 0; i < 3; i++) free(ts[i].vals);
    unlink(path);
    rmdir(dir);
}

/* Opens path and expects failure with a message containing want. */
static void expect_open_error(const char *path, const char *want)
{
    evt_st *st = NULL;
    evt_diag d;
    evt_diag_init(&d, "st");
    if (!evt_st_open(path, &st, &d)) fail_msg("%s: opened, expected an error with \"%s\"", path, want);
    assert_null(st);
    if (!strstr(d.text, want)) fail_msg("%s: message \"%s\" lacks \"%s\"", path, d.text, want);
    evt_diag_free(&d);
}

static void write_raw(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(p, 1, n, f);
    fclose(f);
}

static void reader_errors(void **state)
{
    (void)state;
    char dir[96], path[160], path2[160];
    tmpdir(dir, sizeof dir, "st_errors");
    expect_open_error("/nonexistent/evt.safetensors", "No such file");
    expect_open_error(dir, "no *.safetensors file");
    snprintf(path, sizeof path, "%s/bad.safetensors", dir);
    write_raw(path, "abc", 3);
    expect_open_error(path, "not a safetensors file");
    const unsigned char huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, '{', '}'};
    write_raw(path, huge, sizeof huge);
    expect_open_error(path, "header length");
    unsigned char notjson[8 + 5] = {5, 0, 0, 0, 0, 0, 0, 0, '[', '1', ',', '2', ']'};
    write_raw(path, notjson, sizeof notjson);
    expect_open_error(path, "not a JSON object");
    /* a tensor whose bytes lie past the end, one whose byte count disagrees with its shape */
    const char *past = "{\"w\": {\"dtype\": \"BF16\", \"shape\": [2, 2], \"data_offsets\": [0, 8]}}";
    unsigned char buf[256];
    size_t n = strlen(past);
    for (int b = 0; b < 8; b++) buf[b] = (unsigned char)(n >> (8 * b));
    memcpy(buf + 8, past, n);
    write_raw(path, buf, 8 + n + 4); /* 4 of its 8 bytes */
    expect_open_error(path, "past the end of the file");
    const char *count = "{\"w\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [0, 8]}}";
    n = strlen(count);
    for (int b = 0; b < 8; b++) buf[b] = (unsigned char)(n >> (8 * b));
    memcpy(buf + 8, count, n);
    memset(buf + 8 + n, 0, 16);
    write_raw(path, buf, 8 + n + 16);
    expect_open_error(path, "8 bytes for 4 F32 elements");
    unlink(path);
    /* the same name in two shards */
    st_t a = {"w", "BF16", 1, {4, 0}, filled(4, -1, 1)};
    snprintf(path, sizeof path, "%s/model-00001-of-00002.safetensors", dir);
    snprintf(path2, sizeof path2, "%s/model-00002-of-00002.safetensors", dir);
    write_st(path, &a, 1);
    write_st(path2, &a, 1);
    expect_open_error(dir, "tensor w is in both");
    unlink(path2);
    /* reads: a missing tensor, another shape, an unconverted dtype */
    st_t two[2] = {{"w", "BF16", 2, {2, 3}, filled(6, -1, 1)}, {"q", "I8", 1, {4, 0}, filled(4, -1, 1)}};
    write_st(path, two, 2);
    evt_st *st = NULL;
    evt_diag d;
    evt_diag_init(&d, "st");
    if (evt_st_open(dir, &st, &d)) fail_msg("%s", d.text);
    uint16_t out[8];
    assert_int_not_equal(evt_st_read_bf16(st, "x", 1, (int64_t[]){4}, out, NULL, &d), EVT_OK);
    assert_non_null(strstr(d.text, "no tensor x"));
    evt_diag_free(&d);
    evt_diag_init(&d, "st");
    assert_int_equal(evt_st_read_bf16(st, "w", 2, (int64_t[]){3, 2}, out, NULL, &d), EVT_ERR_SHAPE);
    if (!strstr(d.text, "tensor w is [2, 3], the model needs [3, 2]")) fail_msg("message: %s", d.text);
    evt_diag_free(&d);
    evt_diag_init(&d, "st");
    assert_int_not_equal(evt_st_read_bf16(st, "q", 1, (int64_t[]){4}, out, NULL, &d), EVT_OK);
    assert_non_null(strstr(d.text, "is I8"));
    evt_diag_free(&d);
    evt_st_close(st);
    free(a.vals);
    free(two[0].vals);
    free(two[1].vals);
    unlink(path);
    rmdir(dir);
}

/* The tiny model (examples/qwen3-tiny.json) as a Hugging Face checkpoint:
   its tensors by name, kept as the file holds them. */
enum { H = 64, L = 2, NH = 4, NKV = 2, HD = 16, I = 128, V = 256 };
typedef struct ckpt {
    float *embed, *fnorm, *lm; /* lm: NULL for the tied model */
    float *q[L], *k[L], *v[L], *o[L], *qn[L], *kn[L], *in[L], *post[L], *gate[L], *up[L], *down[L];
} ckpt;

static void ckpt_write(const char *dir, ckpt *c, int untied)
{
    char p1[160], p2[160];
    snprintf(p1, sizeof p1, "%s/model-00001-of-00002.safetensors", dir);
    snprintf(p2, sizeof p2, "%s/model-00002-of-00002.safetensors", dir);
    const float a = 1.0f / sqrtf((float)H), ad = 1.0f / sqrtf((float)I);
    c->embed = filled(V * H, -1, 1);
    c->fnorm = filled(H, 0.8f, 1.2f);
    st_t t[2][16];
    int n[2] = {0, 0};
    t[0][n[0]++] = (st_t){"model.embed_tokens.weight", "BF16", 2, {V, H}, c->embed};
    t[1][n[1]++] = (st_t){"model.norm.weight", "F32", 1, {H, 0}, c->fnorm};
    c->lm = untied ? filled(V * H, -a, a) : NULL;
    if (untied) t[1][n[1]++] = (st_t){"lm_head.weight", "BF16", 2, {V, H}, c->lm};
    static char names[L][13][64];
    for (int l = 0; l < L; l++) {
        const int f = l; /* layer l in shard l */
        c->q[l] = filled(NH * HD * H, -a, a);
        c->k[l] = filled(NKV * HD * H, -a, a);
        c->v[l] = filled(NKV * HD * H, -a, a);
        c->o[l] = filled(H * NH * HD, -a, a);
        c->qn[l] = filled(HD, 0.8f, 1.2f);
        c->kn[l] = filled(HD, 0.8f, 1.2f);
        c->in[l] = filled(H, 0.5f, 1.5f);
        c->post[l] = filled(H, 0.5f, 1.5f);
        c->gate[l] = filled(I * H, -a, a);
        c->up[l] = filled(I * H, -a, a);
        c->down[l] = filled(H * I, -ad, ad);
        static const char *suffix[11] = {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                                         "self_attn.o_proj.weight", "self_attn.q_norm.weight", "self_attn.k_norm.weight",
                                         "input_layernorm.weight", "post_attention_layernorm.weight", "mlp.gate_proj.weight",
                                         "mlp.up_proj.weight", "mlp.down_proj.weight"};
        float *vals[11] = {c->q[l], c->k[l], c->v[l], c->o[l], c->qn[l], c->kn[l], c->in[l], c->post[l], c->gate[l], c->up[l], c->down[l]};
        const int64_t rows[11] = {NH * HD, NKV * HD, NKV * HD, H, HD, HD, H, H, I, I, H};
        const int64_t cols[11] = {H, H, H, NH * HD, 0, 0, 0, 0, H, H, I};
        /* the norms of layer 0 in F32, its q_norm in F16: every conversion */
        static const char *dts[11] = {"BF16", "BF16", "BF16", "BF16", "BF16", "BF16", "BF16", "BF16", "BF16", "BF16", "BF16"};
        for (int i = 0; i < 11; i++) {
            snprintf(names[l][i], sizeof names[l][i], "model.layers.%d.%s", l, suffix[i]);
            const char *dt = dts[i];
            if (l == 0 && (i == 6 || i == 7)) dt = "F32";
            if (l == 0 && i == 4) dt = "F16";
            t[f][n[f]++] = (st_t){names[l][i], dt, cols[i] ? 2 : 1, {rows[i], cols[i]}, vals[i]};
        }
    }
    write_st(p1, t[0], n[0]);
    write_st(p2, t[1], n[1]);
}

static void ckpt_free(ckpt *c)
{
    free(c->embed);
    free(c->fnorm);
    free(c->lm);
    for (int l = 0; l < L; l++) {
        float **p[11] = {&c->q[l], &c->k[l], &c->v[l], &c->o[l], &c->qn[l], &c->kn[l], &c->in[l], &c->post[l], &c->gate[l], &c->up[l], &c->down[l]};
        for (int i = 0; i < 11; i++) free(*p[i]);
    }
}

/* A dumped tensor (evtc decode --dump) as raw bytes. */
static void *dumped(const char *dir, const char *name, size_t *bytes)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s.bin", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("no dumped %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc((size_t)n + 1);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    if (bytes) *bytes = (size_t)n;
    return p;
}

static void rms(const double *x, const float *g, int n, double eps, double *out)
{
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    const double r = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++) out[i] = x[i] * r * g[i];
}

static void matvec(const float *W, const double *x, int rows, int cols, double *y)
{
    for (int r = 0; r < rows; r++) {
        double s = 0;
        for (int k = 0; k < cols; k++) s += (double)W[(size_t)r * cols + k] * x[k];
        y[r] = s;
    }
}

static void rope(double *v, int64_t pos)
{
    for (int i = 0; i < HD / 2; i++) {
        const double ang = (double)pos * pow(1e6, -2.0 * i / HD), c = cos(ang), s = sin(ang);
        const double a = v[i], b = v[i + HD / 2];
        v[i] = a * c - b * s;
        v[i + HD / 2] = b * c + a * s;
    }
}

/* One Qwen3 decode step in double precision from the checkpoint's tensors
   (the Hugging Face model's formulas): token tok at position pos, whose
   keys and values of positions < pos are rows of kc[l], vc[l] ([t][NKV x
   HD]); the step writes row pos of each and returns the logits. */
static void qwen3_step(const ckpt *c, int32_t tok, int64_t pos, double *const *kc, double *const *vc, double *logits)
{
    static double x[H], h[H], q[NH * HD], att[NH * HD], o[H], g[I], u[I], dn[H];
    for (int i = 0; i < H; i++) x[i] = c->embed[(size_t)tok * H + i];
    const int64_t T = pos + 1;
    double *sc = malloc((size_t)T * sizeof(double));
    for (int l = 0; l < L; l++) {
        double *k = kc[l] + pos * NKV * HD, *v = vc[l] + pos * NKV * HD;
        rms(x, c->in[l], H, 1e-6, h);
        matvec(c->q[l], h, NH * HD, H, q);
        matvec(c->k[l], h, NKV * HD, H, k);
        matvec(c->v[l], h, NKV * HD, H, v);
        for (int hh = 0; hh < NH; hh++) { rms(q + hh * HD, c->qn[l], HD, 1e-6, q + hh * HD); rope(q + hh * HD, pos); }
        for (int hh = 0; hh < NKV; hh++) { rms(k + hh * HD, c->kn[l], HD, 1e-6, k + hh * HD); rope(k + hh * HD, pos); }
        for (int hh = 0; hh < NH; hh++) {
            const int kv = hh / (NH / NKV);
            double mx = -1e300, den = 0;
            for (int64_t t = 0; t < T; t++) {
                double s = 0;
                for (int i = 0; i < HD; i++) s += q[hh * HD + i] * kc[l][(t * NKV + kv) * HD + i];
                sc[t] = s / sqrt((double)HD);
                if (sc[t] > mx) mx = sc[t];
            }
            for (int i = 0; i < HD; i++) att[hh * HD + i] = 0;
            for (int64_t t = 0; t < T; t++) {
                const double w = exp(sc[t] - mx);
                den += w;
                for (int i = 0; i < HD; i++) att[hh * HD + i] += w * vc[l][(t * NKV + kv) * HD + i];
            }
            for (int i = 0; i < HD; i++) att[hh * HD + i] /= den;
        }
        matvec(c->o[l], att, H, NH * HD, o);
        for (int i = 0; i < H; i++) x[i] += o[i];
        rms(x, c->post[l], H, 1e-6, h);
        matvec(c->gate[l], h, I, H, g);
        matvec(c->up[l], h, I, H, u);
        for (int i = 0; i < I; i++) g[i] = g[i] / (1 + exp(-g[i])) * u[i];
        matvec(c->down[l], g, H, I, dn);
        for (int i = 0; i < H; i++) x[i] += dn[i];
    }
    free(sc);
    rms(x, c->fnorm, H, 1e-6, h);
    matvec(c->lm ? c->lm : c->embed, h, V, H, logits);
}

/* evtc decode --weights on the CPU backend (checked against the sequential
   reference), then the dumped program weights against the checkpoint and
   step 0's logits against qwen3_step. */
static void decode_with(const char *ckdir, const ckpt *c, evt_decode_norms norms, int64_t batch)
{
    char dump[96];
    snprintf(dump, sizeof dump, "/tmp/evt_test_wdump_%d_%d", (int)getpid(), (int)norms);
    evt_decode_opts o = {.model = "examples/qwen3-tiny.json", .batch = batch, .ctx = 21, .steps = 2, .backend = EVT_BACKEND_CPU,
                         .check = 1, .quiet = 1, .weights = ckdir, .dump_dir = dump, .norms = norms};
    o.run.workers = 3;
    evt_decode_result r;
    evt_diag d;
    evt_diag_init(&d, "decode");
    if (evt_decode(&o, &r, &d)) fail_msg("decode --weights: %s", d.text);
    assert_int_equal(r.steps_checked, 2);
    evt_diag_free(&d);
    const int fold = norms != EVT_NORMS_UNFOLDED;
    /* the program's tensors: qkv's rows q, k, v, folded columns where the norms are */
    uint16_t *wqkv = dumped(dump, "l1_wqkv", NULL), *wg = dumped(dump, "l0_wg", NULL), *emb = dumped(dump, "embed", NULL);
    for (int r0 = 0; r0 < (NH + 2 * NKV) * HD; r0++)
        for (int k = 0; k < H; k++) {
            const float *src = r0 < NH * HD ? c->q[1] + (size_t)r0 * H : r0 < (NH + NKV) * HD ? c->k[1] + (size_t)(r0 - NH * HD) * H
                                                                                           : c->v[1] + (size_t)(r0 - (NH + NKV) * HD) * H;
            const uint16_t want = evt_f32_to_bf16(fold ? src[k] * c->in[1][k] : src[k]);
            if (wqkv[(size_t)r0 * H + k] != want) fail_msg("l1_wqkv[%d, %d]: %04x, want %04x", r0, k, wqkv[(size_t)r0 * H + k], want);
        }
    for (int i = 0; i < I * H; i++) assert_int_equal(wg[i], evt_f32_to_bf16(fold ? c->gate[0][i] * c->post[0][i % H] : c->gate[0][i]));
    for (int i = 0; i < V * H; i++) assert_int_equal(emb[i], evt_f32_to_bf16(c->embed[i]));
    if (!fold) {
        uint16_t *in0 = dumped(dump, "l0_in_norm", NULL);
        for (int i = 0; i < H; i++) assert_int_equal(in0[i], evt_f32_to_bf16(c->in[0][i]));
        free(in0);
    }
    free(wqkv);
    free(wg);
    free(emb);
    /* step 0 against the plain model */
    size_t nb = 0;
    int32_t *tok = dumped(dump, "tok", NULL), *pos = dumped(dump, "pos", NULL), *bt = dumped(dump, "bt", &nb);
    const int64_t mp = (int64_t)(nb / sizeof(int32_t)) / batch;
    uint16_t *kc[L], *vc[L];
    char nm[32];
    for (int l = 0; l < L; l++) {
        snprintf(nm, sizeof nm, "l%d_kc", l);
        kc[l] = dumped(dump, nm, NULL);
        snprintf(nm, sizeof nm, "l%d_vc", l);
        vc[l] = dumped(dump, nm, NULL);
    }
    char mpath[160];
    snprintf(mpath, sizeof mpath, "%s/manifest.json", dump);
    char *man = h_read_file(mpath);
    cJSON *mj = cJSON_Parse(man);
    assert_non_null(mj);
    const int64_t ps = (int64_t)cJSON_GetObjectItem(mj, "page_size")->valuedouble;
    cJSON_Delete(mj);
    free(man);
    uint16_t *lg = dumped(dump, "step0_logits", NULL);
    double num = 0, den = 0, logits[V];
    double *rk[L], *rv[L];
    for (int l = 0; l < L; l++) {
        rk[l] = malloc((size_t)(mp * ps) * NKV * HD * sizeof(double));
        rv[l] = malloc((size_t)(mp * ps) * NKV * HD * sizeof(double));
    }
    for (int64_t b = 0; b < batch; b++) {
        for (int l = 0; l < L; l++) /* request b's cached positions, page by page */
            for (int64_t t = 0; t < pos[b]; t++)
                for (int i = 0; i < NKV * HD; i++) {
                    const int64_t at = ((int64_t)bt[b * mp + t / ps] * ps + t % ps) * NKV * HD + i;
                    rk[l][t * NKV * HD + i] = evt_bf16_to_f32(kc[l][at]);
                    rv[l][t * NKV * HD + i] = evt_bf16_to_f32(vc[l][at]);
                }
        qwen3_step(c, tok[b], pos[b], rk, rv, logits);
        for (int i = 0; i < V; i++) {
            const double e = evt_bf16_to_f32(lg[b * V + i]) - logits[i];
            num += e * e;
            den += logits[i] * logits[i];
        }
    }
    const double rel = sqrt(num / den);
    if (!(rel < 2e-2)) fail_msg("norms %d: step-0 logits rel. error %.3e against the plain Qwen3 step", (int)norms, rel);
    free(tok);
    free(pos);
    free(bt);
    free(lg);
    for (int l = 0; l < L; l++) { free(kc[l]); free(vc[l]); free(rk[l]); free(rv[l]); }
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dump);
    assert_int_equal(system(cmd), 0);
}

/* evt_decode(o) fails (with status `want`, or any error where want is
   EVT_OK) and its message holds `msg`. */
static void decode_refused(const evt_decode_opts *o, evt_status want, const char *msg)
{
    evt_decode_result r;
    evt_diag d;
    evt_diag_init(&d, "decode");
    const evt_status st = evt_decode(o, &r, &d);
    if (want) assert_int_equal(st, want);
    else assert_int_not_equal(st, EVT_OK);
    if (!strstr(d.text, msg)) fail_msg("message: %s", d.text);
    evt_diag_free(&d);
}

static void qwen3_checkpoint(void **state)
{
    (void)state;
    char dir[96];
    tmpdir(dir, sizeof dir, "ckpt");
    ckpt c;
    ckpt_write(dir, &c, 0);
    decode_with(dir, &c, EVT_NORMS_AUTO, 3);      /* folded norms inside the GEMV tiles */
    decode_with(dir, &c, EVT_NORMS_UNFOLDED, 2);  /* norm calls with the checkpoint's weights */
    decode_with(dir, &c, EVT_NORMS_CALLS, 20);    /* folded, norm calls (the large-batch program) */
    /* a checkpoint of another shape: the error names the tensor and both shapes */
    evt_decode_opts o = {.model = "tests/gpu/qwen3-uneven.json", .batch = 1, .ctx = 4, .steps = 1, .backend = EVT_BACKEND_CPU,
                         .quiet = 1, .weights = dir};
    decode_refused(&o, EVT_OK, "model.embed_tokens.weight is [256, 64], the model needs");
    /* checked before anything is built: on the CUDA backend (no nvcc needed,
       none run) the same error, and a shard missing its tensors named */
    const int64_t compiles = evt_cuda_compile_count();
    o.backend = EVT_BACKEND_CUDA;
    decode_refused(&o, EVT_OK, "model.embed_tokens.weight is [256, 64], the model needs");
    char one[200];
    snprintf(one, sizeof one, "%s/model-00001-of-00002.safetensors", dir);
    o.model = "examples/qwen3-tiny.json";
    o.weights = one;
    decode_refused(&o, EVT_OK, "the checkpoint has no tensor model.layers.1.input_layernorm.weight");
    assert_int_equal(evt_cuda_compile_count(), compiles);
    ckpt_free(&c);
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* --prompt on an untied checkpoint: two prompts of different lengths over
   the requests, each fed from position 0, then greedy tokens, against the
   plain model fed the same tokens (a token may differ from the plain
   model's argmax only at a near-tie of its logits, bf16 rounding's; the
   plain model then follows evtc's token). */
static void prompt_generation(void **state)
{
    (void)state;
    char dir[96], cfg[160];
    tmpdir(dir, sizeof dir, "ckpt_untied");
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    FILE *f = fopen(cfg, "w");
    assert_non_null(f);
    fprintf(f, "{\"hidden_size\": %d, \"num_hidden_layers\": %d, \"num_attention_heads\": %d, \"num_key_value_heads\": %d, "
               "\"head_dim\": %d, \"intermediate_size\": %d, \"vocab_size\": %d, \"rms_norm_eps\": 1e-06, "
               "\"rope_theta\": 1000000.0, \"tie_word_embeddings\": false}\n", H, L, NH, NKV, HD, I, V);
    fclose(f);
    ckpt c;
    ckpt_write(dir, &c, 1);
    /* two prompts of different lengths: request b takes prompt b % 2 */
    enum { S = 12, NP = 2 };
    static const int32_t p0[] = {17, 200, 3, 91, 42}, p1[] = {250, 8};
    const int32_t *const prompts[NP] = {p0, p1};
    const int64_t lens[NP] = {5, 2};
    int32_t gen[20 * S];
    /* runs: batch 3 and 20, the prompts through the prefill program (in one
       launch, or in launches of at most 4 / 8 rows, the last padded at batch
       20: 50 rows in 7 launches of 8; with runs of 3 rows a qk_rope_append
       task and 3 requests an attention task of the steps) or fed to the
       decode steps a token at a time (prompt_steps, the ablation) */
    static const struct { int64_t B, chunk; int steps, rows; } run[] = {{3, 0, 0, 0}, {20, 0, 0, 0}, {3, 4, 0, 0}, {20, 8, 0, 0},
                                                                        {20, 0, 0, 3}, {3, 0, 1, 0}, {20, 0, 1, 0}};
    for (int k = 0; k < (int)(sizeof run / sizeof run[0]); k++) {
        const int64_t B = run[k].B;
        /* the runs at batch 20 name the checkpoint's directory as the model: its config.json and its weights */
        evt_decode_opts o = {.model = B > 3 ? dir : cfg, .batch = B, .steps = S, .backend = EVT_BACKEND_CPU, .check = 1, .quiet = 1,
                             .weights = B > 3 ? NULL : dir, .prompts = prompts, .prompt_lens = lens, .nprompts = NP, .generated = gen,
                             .prefill_chunk = run[k].chunk, .prompt_steps = run[k].steps};
        o.run.workers = 4;
        o.run.sched = B > 3 ? EVT_SCHED_DYNAMIC : EVT_SCHED_STATIC;
        o.build.attn_rows = run[k].rows;
        memset(gen, 0xff, sizeof gen);
        evt_decode_result r;
        evt_diag d;
        evt_diag_init(&d, "decode");
        if (evt_decode(&o, &r, &d)) fail_msg("decode --prompt (run %d): %s", k, d.text);
        /* the prompts' rows: 4 and 1 a request (prompt lengths 5 and 2, the last token of each decoded) */
        const int64_t rows = (B + 1) / 2 * 4 + B / 2, most = run[k].chunk ? run[k].chunk : EVT_DECODE_PREFILL_CHUNK;
        if (run[k].steps) { /* the longest prompt's steps, then S */
            assert_int_equal(r.steps_checked, 5 - 1 + S);
            assert_int_equal(r.prefill_launches, 0);
        } else { /* the prefill's launches, then S */
            assert_int_equal(r.prefill_tokens, rows);
            assert_int_equal(r.prefill_launches, (rows + most - 1) / most);
            assert_int_equal(r.steps_checked, r.prefill_launches + S);
        }
        evt_diag_free(&d);
        for (int64_t b = 0; b < B; b++) {
            const int32_t *prompt = prompts[b % NP];
            const int64_t P = lens[b % NP];
            double *kc[L], *vc[L], logits[V];
            for (int l = 0; l < L; l++) {
                kc[l] = malloc((size_t)(P + S) * NKV * HD * sizeof(double));
                vc[l] = malloc((size_t)(P + S) * NKV * HD * sizeof(double));
            }
            int32_t tok = prompt[0];
            int distinct = 0;
            for (int64_t s = 0; s < P - 1 + S; s++) {
                qwen3_step(&c, tok, s, kc, vc, logits);
                if (s + 1 < P) { tok = prompt[s + 1]; continue; }
                int best = 0;
                double mx = 0;
                for (int i = 0; i < V; i++) {
                    if (logits[i] > logits[best]) best = i;
                    if (fabs(logits[i]) > mx) mx = fabs(logits[i]);
                }
                const int32_t got = gen[b * S + s + 1 - P];
                if (got != best && logits[best] - logits[got] > 2e-2 * mx)
                    fail_msg("run %d, batch %lld, request %lld, generated token %lld: %d, the plain model's %d (logits %g vs %g)", k,
                             (long long)B, (long long)b, (long long)(s + 1 - P), got, best, logits[got], logits[best]);
                distinct += s + 1 == P || got != tok;
                tok = got;
            }
            if (distinct < 3) fail_msg("request %lld: the generated tokens hardly change (%d changes)", (long long)b, distinct);
            for (int l = 0; l < L; l++) { free(kc[l]); free(vc[l]); }
        }
    }
    /* bad prompts: a token outside the vocabulary, with --dump */
    const int32_t bad[2] = {3, V}, *const badp[2] = {p0, bad};
    const int64_t badl[2] = {5, 2};
    evt_decode_opts o = {.model = cfg, .batch = 1, .steps = 1, .backend = EVT_BACKEND_CPU, .quiet = 1, .prompts = badp,
                         .prompt_lens = badl, .nprompts = 2};
    decode_refused(&o, EVT_ERR_SHAPE, "prompt 1's token 1 is 256, outside the vocabulary [0, 256)");
    o.nprompts = 1;
    o.dump_dir = "/tmp/evt_test_never_written";
    decode_refused(&o, EVT_ERR_SHAPE, "prompts and --dump together are not supported");
    ckpt_free(&c);
    /* the CLI finds the checkpoint directory's tokenizer.json and generation_config.json: a text prompt
       ("Hi": ids 39, 72 in tests/data/tok-qwen.json) generates what its ids do, printed as text too, cut at
       the end-of-sequence token the generation config names */
    char cmd[1024], out[8192], ids[512];
    snprintf(cmd, sizeof cmd, "cp tests/data/tok-qwen.json %s/tokenizer.json && build/evtc decode --model %s --steps 5 --prompt 39,72",
             dir, dir);
    assert_int_equal(h_sh(cmd, out, sizeof out), 0);
    const char *g = strstr(out, "\ngenerated: ");
    if (!g || !strstr(out, "\ngenerated text: \"")) fail_msg("%s", out);
    snprintf(ids, sizeof ids, "%.*s", (int)strcspn(g + 1, "\n"), g + 1);
    int first = -1;
    sscanf(ids, "generated: %d", &first);
    snprintf(cmd, sizeof cmd, "printf '{\"eos_token_id\": [%d]}' > %s/generation_config.json && build/evtc decode --model %s --steps 5 "
             "--prompt-text Hi", first, dir, dir);
    assert_int_equal(h_sh(cmd, out, sizeof out), 0);
    if (!strstr(out, "a 2-token prompt") || !strstr(out, ids)) fail_msg("the ids' \"%s\", the text's:\n%s", ids, out);
    char want[96];
    snprintf(want, sizeof want, "\ngenerated text: \"\" (end of sequence: token 1, id %d)", first);
    if (!strstr(out, want)) fail_msg("no \"%s\" in\n%s", want + 1, out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reader_formats),
        cmocka_unit_test(reader_errors),
        cmocka_unit_test(qwen3_checkpoint),
        cmocka_unit_test(prompt_generation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
