/* evtc.c — the command-line tool.
 *
 *   evtc check FILE [--counts]                 verify; exit 0 or diagnostics + 1
 *   evtc dump FILE                             the normalised program
 *   evtc schedule FILE [--set N=V]... [--workers N] [--policy rr|cp] [--sched static|hybrid]
 *   evtc compile FILE --target c|cuda -o OUT [--emit SRC]
 *   evtc run FILE|ARTIFACT [--set N=V]... [--backend cpu|cuda|auto]
 *            [--sched static|dynamic|unfused|kbk|graph|hybrid] [--policy rr|cp] [--workers N]
 *            [--seed S] [--check] [--trace OUT.json] [--timeout SEC]
 *            [--chaos SEED] [--exact] [--early-push] [--repeat N] [--trust-counts] [--no-records]
 *   evtc decode --model M ...                  one decode step of a model, timed (usage below)
 *   evtc tokenize --tokenizer PATH [--prompt-text TEXT | --prompt ID,...]...
 *                                              text to token ids and back
 * Exit codes: 0 success, 1 failure (diagnostics, check failed, runtime
 * error), 2 bad command line or bad values (unknown symbol, out of bounds...).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "evt/evt.h"
#include "evt/models.h"
#include "cli_text.h"
#include "pass/plan.h"
#include "runtime/bind.h"
#include "pass/taskgraph.h"
#include "device/evt_ctx.h"

#define MAX_SETS 64

typedef struct cli {
    const char *cmd, *file, *out, *emit, *trace, *target;
    const char *sets[MAX_SETS];
    int nsets;
    evt_backend backend;
    int backend_auto;
    evt_run_opts run;
    evt_compile_opts copts;
    uint64_t seed;
    int check, counts, repeat;
    /* decode */
    const char *model, *dump, *emit_program, *weights, *tokenizer;
#define CLI_MAX_PROMPTS 4096 /* as many as requests */
    int32_t *prompt[CLI_MAX_PROMPTS]; /* each --prompt's token ids (malloc'd) */
    const char *prompt_text[CLI_MAX_PROMPTS]; /* a --prompt-text's text, encoded once the tokenizer is read */
    int64_t prompt_len[CLI_MAX_PROMPTS];
    int nprompts;
    int ctx_given;
    int emit_only;
    long long batch, ctx, steps, splits, page, tiles, attn_rows, lm_waves, dn_slices, o_slices, slices_from, slices_to;
    evt_sched_kind also[EVT_DECODE_MAX_ALSO];
    int nalso, row_events, split_rope, norms, qkv_per_head, prefetch, argmax_per_tile, merge_per_group, merge_one_split, merge_tasks, attn_no_early;
    int no_early_loads, host_copies, prompt_steps;
    long long prefill_chunk;
    char defines[512]; /* --define: evt_compile_opts.cuda_defines */
} cli;

static int usage(const char *msg)
{
    if (msg) fprintf(stderr, "evtc: %s\n", msg);
    fprintf(stderr,
            "usage: evtc check FILE [--counts]\n"
            "       evtc dump FILE\n"
            "       evtc schedule FILE [--set NAME=VALUE]... [--workers N] [--policy rr|cp] [--sched static|hybrid]\n"
            "       evtc compile FILE --target c|cuda -o OUT [--emit SOURCE] [--stream] [--early-loads]\n"
            "                [--define NAME[=VALUE]]...  (CUDA: a tile option #defined in the generated source, e.g.\n"
            "                                    EVT_LLM_NO_TMA; evtc decode and run take it too)\n"
            "       evtc run FILE|ARTIFACT [--set NAME=VALUE]... [--backend cpu|cuda|auto]\n"
            "                [--sched static|dynamic|unfused|kbk|graph|hybrid] [--policy rr|cp] [--workers N] [--seed S]\n"
            "                [--check] [--trace OUT.json] [--timeout SEC] [--chaos SEED] [--exact]\n"
            "                [--early-push] [--pop-batch K] [--repeat N] [--trust-counts]\n"
            "                [--no-records]       (ablation: static tasks evaluate their maps on the device, no task records)\n"
            "                [--tma-ring BYTES]   (GPU: shared memory the GEMV tiles' TMA ring may take; 0 or unset: none)\n"
            "       evtc decode --model qwen3-0.6b|qwen3-1.7b|qwen3-8b|CONFIG.json|CHECKPOINT_DIR --batch B --ctx N --steps S\n"
            "                [--backend cpu|cuda|auto] [--sched static|dynamic|unfused|kbk|graph|hybrid] [--check] [--dump DIR]\n"
            "                [--emit-program FILE [--emit-only]] [--splits N] [--page N] [--tiles N] [--workers N] [--seed S]\n"
            "                                     (--emit-program: with prompts the prefill program too, in FILE.prefill.evt\n"
            "                                      for FILE.evt)\n"
            "                [--weights PATH]     (a Hugging Face safetensors checkpoint, file or directory of shards, for\n"
            "                                      the model's weights instead of random ones; also read from a CHECKPOINT_DIR)\n"
            "                [--prompt ID,ID,...]... (request b starts from the (b mod N)-th of N prompts at position 0\n"
            "                                      instead of a random cache of --ctx tokens, then generates --steps tokens\n"
            "                                      greedily, printed per prompt; not with --ctx or --dump)\n"
            "                [--prompts FILE]     (more prompts, one a line: ids separated by commas or blanks)\n"
            "                [--prefill-chunk N]  (prompt tokens a prefill launch takes, 1..128, default 128: every prompt\n"
            "                                      token but the last goes into the cache that way before the steps;\n"
            "                                      with --trace FILE.json the prefill's last launch in FILE.prefill.json)\n"
            "                [--prompt-steps]     (ablation: no prefill; the prompts go in one token a decode step)\n"
            "                [--prompt-text TEXT]... (a prompt as text, encoded by the tokenizer; the generated tokens are\n"
            "                                      then printed as text too)\n"
            "                [--tokenizer PATH]   (a Hugging Face tokenizer.json, or a directory holding one; default: the\n"
            "                                      CHECKPOINT_DIR's tokenizer.json, if there is one)\n"
            "                [--lm-waves N]       (LM-head tiles: N x --tiles, at most one a vocabulary row; default 2)\n"
            "                [--dn-slices N]      (norm calls: the down projection in N k slices at batch 33-64, the next\n"
            "                                      norm adding them; default 4 there with a TMA ring, else 1: whole K)\n"
            "                [--o-slices N]       (the same for the O projection, the post-attention norm adding them)\n"
            "                [--slices-from B]    (the least batch the slices apply at; default 33, where the ring starts)\n"
            "                [--slices-to B]      (the largest; default 64)\n"
            "                [--also SCHED,...]   (also time these schedules on the same step; compare outputs)\n"
            "                [--attn-rows N]      (requests per attention task; default: as many as make the tasks\n"
            "                                      one wave, 1 up to batch 16; 1: one request a task, the ablation)\n"
            "                [--row-events]       (ablation: per-row events between row and tile calls)\n"
            "                [--split-rope]       (ablation: q/k norm + RoPE as calls of their own before attention)\n"
            "                [--norms auto|fused|calls|unfolded|partials]  (auto: the norms' weights folded into the\n"
            "                                     matrices, the norms inside the QKV and gate/up tiles up to batch 16, calls\n"
            "                                     above; fused, calls: either form at every batch; unfolded: calls with their\n"
            "                                     own weights; partials: from the sums of squares the O and down tiles\n"
            "                                     leave, opt-in, measured slower: docs/models.md)\n"
            "                [--fuse-norm]        (= --norms fused)\n"
            "                [--qkv-per-head]     (attention waits for the QKV heads it reads, not the whole projection)\n"
            "                [--argmax-per-tile]  (ablation: one argmax task per row and LM-head tile)\n"
            "                [--merge-per-group]  (ablation: one attention merge per row and kv group at every batch)\n"
            "                [--merge-one-split]  (ablation: merge tasks also with one split; by default its attention task writes o)\n"
            "                [--merge-tasks]  (ablation: merge tasks with several splits; by default each group's last split merges)\n"
            "                [--no-early-loads]   (ablation: GEMV tiles wait before loading; by default they issue\n"
            "                                      their first weight loads while warp 0 waits: docs/runtime.md)\n"
            "                [--no-attn-early]    (ablation: the attention tasks, too, wait before their first cache loads)\n"
            "                [--prefetch]         (GEMV tiles pull their weights into L2 before their waits)\n"
            "                [--stream]           (static workers copy their next GEMV weights into shared memory;\n"
            "                                      CUDA, measured slower: docs/runtime.md)\n"
            "                [--no-records]       (ablation: static tasks evaluate their maps on the device)\n"
            "                [--host-copies]      (ablation, GPU: every step copies every tensor, the KV cache too, to the\n"
            "                                      device and back; by default only tok, pos, logits and next move)\n"
            "                [--tma-ring BYTES]   (GPU: the GEMV tiles' TMA ring; default 96 KiB at batch 33-128, from 17 for a\n"
            "                                      hidden size of 2048 or more, none elsewhere; 0: none: docs/models.md)\n"
            "       evtc tokenize --tokenizer PATH [--prompt-text TEXT]... [--prompt ID,ID,...]...\n"
            "                                     (each text's token ids, each id list's text, in order)\n");
    return 2;
}

static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

/* "5,17,3": another prompt's token ids (at most 1 << 20 of them). */
static int parse_prompt(const char *v, cli *c)
{
    long long n = 1;
    for (const char *p = v; *p; p++) n += *p == ',';
    int32_t *ids;
    if (c->nprompts == CLI_MAX_PROMPTS || n > (1 << 20) || !(ids = malloc((size_t)n * sizeof(int32_t)))) return 0;
    c->prompt[c->nprompts] = ids;
    int64_t *len = &c->prompt_len[c->nprompts++];
    *len = 0;
    char buf[32];
    for (const char *p = v;; p++) {
        const char *e = strchr(p, ',');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        long long t;
        if (k >= sizeof buf) return 0;
        memcpy(buf, p, k);
        buf[k] = 0;
        if (!parse_int(buf, 0, 2147483647LL, &t)) return 0;
        ids[(*len)++] = (int32_t)t;
        if (!e) return 1;
        p = e;
    }
}

/* --prompts FILE: a prompt a line (ids separated by commas or blanks; blank
   lines and lines starting with '#' skipped). 0 with a message on error. */
static int read_prompts(const char *path, cli *c)
{
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "evtc: --prompts %s: %s\n", path, strerror(errno)); return 0; }
    char *line = NULL, *norm = NULL;
    size_t cap = 0;
    ssize_t n;
    int ok = 1, lineno = 0;
    while (ok && (n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (!*p || *p == '\n' || *p == '\r' || *p == '#') continue;
        free(norm);
        if (!(norm = malloc((size_t)n + 1))) { ok = 0; break; }
        size_t k = 0; /* blanks and commas -> one comma between ids */
        for (; *p; p++) {
            const int sep = *p == ',' || *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r';
            if (!sep) norm[k++] = *p;
            else if (k && norm[k - 1] != ',') norm[k++] = ',';
        }
        if (k && norm[k - 1] == ',') k--;
        norm[k] = 0;
        if (!parse_prompt(norm, c)) {
            fprintf(stderr, "evtc: --prompts %s:%d: expected token ids 0..2147483647 (at most %d prompts)\n", path, lineno,
                    CLI_MAX_PROMPTS);
            ok = 0;
        }
    }
    if (ok && !c->nprompts) { fprintf(stderr, "evtc: --prompts %s: no prompt in it\n", path); ok = 0; }
    free(line);
    free(norm);
    fclose(f);
    return ok;
}

static int parse_args(int argc, char **argv, cli *c)
{
    memset(c, 0, sizeof *c);
    c->repeat = 1;
    c->batch = 1; c->ctx = 512; c->steps = 16;
    if (argc >= 2 && (!strcmp(argv[1], "decode") || !strcmp(argv[1], "tokenize"))) {
        c->cmd = argv[1];
    } else {
        if (argc < 3) return usage(argc < 2 ? NULL : "missing FILE");
        c->cmd = argv[1];
        c->file = argv[2];
    }
    for (int i = c->file ? 3 : 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long n;
#define NEED() do { if (!v) { fprintf(stderr, "evtc: %s needs a value\n", a); return 2; } i++; } while (0)
        if (!strcmp(a, "--set")) { NEED(); if (c->nsets == MAX_SETS) return usage("too many --set"); c->sets[c->nsets++] = v; }
        else if (!strncmp(a, "--set=", 6)) { if (c->nsets == MAX_SETS) return usage("too many --set"); c->sets[c->nsets++] = a + 6; }
        else if (!strcmp(a, "--workers")) { NEED(); if (!parse_int(v, 1, 4096, &n)) { fprintf(stderr, "evtc: --workers %s: expected an integer in [1, 4096]\n", v); return 2; } c->run.workers = (int)n; }
        else if (!strcmp(a, "--workers-per-sm")) { NEED(); if (!parse_int(v, 1, 32, &n)) { fprintf(stderr, "evtc: --workers-per-sm %s: expected 1..32\n", v); return 2; } c->run.workers_per_sm = (int)n; }
        else if (!strcmp(a, "--policy")) { NEED(); if (!strcmp(v, "rr")) c->run.policy = EVT_QUEUE_RR; else if (!strcmp(v, "cp")) c->run.policy = EVT_QUEUE_CP; else { fprintf(stderr, "evtc: --policy %s: expected rr or cp\n", v); return 2; } }
        else if (!strcmp(a, "--sched")) {
            NEED();
            int k = evt_sched_parse(v);
            if (k < 0) { fprintf(stderr, "evtc: --sched %s: expected static, dynamic, unfused, kbk, graph or hybrid\n", v); return 2; }
            c->run.sched = (evt_sched_kind)k;
        }
        else if (!strcmp(a, "--backend")) { NEED(); if (!strcmp(v, "cpu")) c->backend = EVT_BACKEND_CPU; else if (!strcmp(v, "cuda")) c->backend = EVT_BACKEND_CUDA; else if (!strcmp(v, "auto")) c->backend_auto = 1; else { fprintf(stderr, "evtc: --backend %s: expected cpu, cuda or auto\n", v); return 2; } }
        else if (!strcmp(a, "--target")) { NEED(); if (strcmp(v, "c") && strcmp(v, "cuda")) { fprintf(stderr, "evtc: --target %s: expected c or cuda\n", v); return 2; } c->target = v; }
        else if (!strcmp(a, "--seed")) { NEED(); if (!parse_int(v, 0, 1LL << 62, &n)) { fprintf(stderr, "evtc: --seed %s: expected a non-negative integer\n", v); return 2; } c->seed = (uint64_t)n; }
        else if (!strcmp(a, "--chaos")) { NEED(); if (!parse_int(v, 1, 0xffffffffLL, &n)) { fprintf(stderr, "evtc: --chaos %s: expected a positive integer seed\n", v); return 2; } c->run.chaos = (uint32_t)n; }
        else if (!strcmp(a, "--timeout")) { NEED(); char *e; double t = strtod(v, &e); if (*e || t <= 0 || t > 3600) { fprintf(stderr, "evtc: --timeout %s: expected seconds in (0, 3600]\n", v); return 2; } c->run.timeout_s = t; }
        else if (!strcmp(a, "--repeat")) { NEED(); if (!parse_int(v, 1, 1000000, &n)) { fprintf(stderr, "evtc: --repeat %s: expected 1..1000000\n", v); return 2; } c->repeat = (int)n; }
        else if (!strcmp(a, "--trace")) { NEED(); c->trace = v; }
        else if (!strcmp(a, "-o")) { NEED(); c->out = v; }
        else if (!strcmp(a, "--emit")) { NEED(); c->emit = v; }
        else if (!strcmp(a, "--model")) { NEED(); c->model = v; }
        else if (!strcmp(a, "--dump")) { NEED(); c->dump = v; }
        else if (!strcmp(a, "--weights")) { NEED(); c->weights = v; }
        else if (!strcmp(a, "--prompt")) {
            NEED();
            if (!parse_prompt(v, c)) {
                fprintf(stderr, "evtc: --prompt %s: expected token ids 0..2147483647, comma-separated (at most %d prompts)\n", v,
                        CLI_MAX_PROMPTS);
                return 2;
            }
        }
        else if (!strcmp(a, "--prompts")) { NEED(); if (!read_prompts(v, c)) return 2; }
        else if (!strcmp(a, "--prompt-text")) {
            NEED();
            if (c->nprompts == CLI_MAX_PROMPTS) { fprintf(stderr, "evtc: --prompt-text: at most %d prompts\n", CLI_MAX_PROMPTS); return 2; }
            c->prompt_text[c->nprompts++] = v; /* its ids once the tokenizer is read */
        }
        else if (!strcmp(a, "--tokenizer")) { NEED(); c->tokenizer = v; }
        else if (!strcmp(a, "--emit-program")) { NEED(); c->emit_program = v; }
        else if (!strcmp(a, "--batch")) { NEED(); if (!parse_int(v, 1, 4096, &c->batch)) { fprintf(stderr, "evtc: --batch %s: expected 1..4096\n", v); return 2; } }
        else if (!strcmp(a, "--ctx")) { NEED(); if (!parse_int(v, 1, 1 << 20, &c->ctx)) { fprintf(stderr, "evtc: --ctx %s: expected 1..1048576\n", v); return 2; } c->ctx_given = 1; }
        else if (!strcmp(a, "--steps")) { NEED(); if (!parse_int(v, 1, 1 << 20, &c->steps)) { fprintf(stderr, "evtc: --steps %s: expected 1..1048576\n", v); return 2; } }
        else if (!strcmp(a, "--also")) {
            NEED();
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                int k = evt_sched_parse(tok);
                if (k < 0 || c->nalso == EVT_DECODE_MAX_ALSO) {
                    fprintf(stderr, "evtc: --also %s: expected up to %d of static, dynamic, unfused, kbk, graph, hybrid (comma-separated)\n",
                            v, EVT_DECODE_MAX_ALSO);
                    return 2;
                }
                c->also[c->nalso++] = (evt_sched_kind)k;
            }
        }
        else if (!strcmp(a, "--row-events")) c->row_events = 1;
        else if (!strcmp(a, "--split-rope")) c->split_rope = 1;
        else if (!strcmp(a, "--fuse-norm")) c->norms = EVT_NORMS_FUSED;
        else if (!strcmp(a, "--norms")) {
            NEED();
            static const char *names[] = {"auto", "fused", "calls", "unfolded", "partials"}; /* evt_decode_norms order */
            int k = 0;
            while (k < 5 && strcmp(v, names[k])) k++;
            if (k == 5) { fprintf(stderr, "evtc: --norms %s: expected auto, fused, calls, unfolded or partials\n", v); return 2; }
            c->norms = k;
        }
        else if (!strcmp(a, "--prefetch")) c->prefetch = 1;
        else if (!strcmp(a, "--argmax-per-tile")) c->argmax_per_tile = 1;
        else if (!strcmp(a, "--merge-per-group")) c->merge_per_group = 1;
        else if (!strcmp(a, "--merge-one-split")) c->merge_one_split = 1;
        else if (!strcmp(a, "--merge-tasks")) c->merge_tasks = 1;
        else if (!strcmp(a, "--no-attn-early")) c->attn_no_early = 1;
        else if (!strcmp(a, "--qkv-per-head")) c->qkv_per_head = 1;
        else if (!strcmp(a, "--tiles")) { NEED(); if (!parse_int(v, 1, 4096, &c->tiles)) { fprintf(stderr, "evtc: --tiles %s: expected 1..4096\n", v); return 2; } }
        else if (!strcmp(a, "--slices-from")) { NEED(); if (!parse_int(v, 1, 64, &c->slices_from)) { fprintf(stderr, "evtc: --slices-from %s: expected 1..64\n", v); return 2; } }
        else if (!strcmp(a, "--slices-to")) { NEED(); if (!parse_int(v, 1, 128, &c->slices_to)) { fprintf(stderr, "evtc: --slices-to %s: expected 1..128\n", v); return 2; } }
        else if (!strcmp(a, "--o-slices")) { NEED(); if (!parse_int(v, 1, 8, &c->o_slices)) { fprintf(stderr, "evtc: --o-slices %s: expected 1..8\n", v); return 2; } }
        else if (!strcmp(a, "--dn-slices")) { NEED(); if (!parse_int(v, 1, 8, &c->dn_slices)) { fprintf(stderr, "evtc: --dn-slices %s: expected 1..8\n", v); return 2; } }
        else if (!strcmp(a, "--lm-waves")) { NEED(); if (!parse_int(v, 1, 64, &c->lm_waves)) { fprintf(stderr, "evtc: --lm-waves %s: expected 1..64\n", v); return 2; } }
        else if (!strcmp(a, "--splits")) { NEED(); if (!parse_int(v, 1, 64, &c->splits)) { fprintf(stderr, "evtc: --splits %s: expected 1..64\n", v); return 2; } }
        else if (!strcmp(a, "--attn-rows")) { NEED(); if (!parse_int(v, 1, 128, &c->attn_rows)) { fprintf(stderr, "evtc: --attn-rows %s: expected 1..128\n", v); return 2; } }
        else if (!strcmp(a, "--page")) { NEED(); if (!parse_int(v, 1, 4096, &c->page)) { fprintf(stderr, "evtc: --page %s: expected 1..4096\n", v); return 2; } }
        else if (!strcmp(a, "--check")) c->check = 1;
        else if (!strcmp(a, "--emit-only")) c->emit_only = 1;
        else if (!strcmp(a, "--counts")) c->counts = 1;
        else if (!strcmp(a, "--exact")) c->run.exact_shape = 1;
        else if (!strcmp(a, "--early-push")) c->run.early_push = 1;
        else if (!strcmp(a, "--no-records")) c->run.computed_dispatch = 1;
        else if (!strcmp(a, "--pop-batch")) { NEED(); if (!parse_int(v, 1, 64, &n)) { fprintf(stderr, "evtc: --pop-batch %s: expected 1..64\n", v); return 2; } c->run.pop_batch = (int)n; }
        else if (!strcmp(a, "--trust-counts")) c->copts.trust_counts = 1;
        else if (!strcmp(a, "--no-fuse")) c->copts.no_fuse = 1;
        else if (!strcmp(a, "--stream")) c->copts.stream_weights = 1;
        else if (!strcmp(a, "--early-loads")) c->copts.early_loads = 1;
        else if (!strcmp(a, "--define")) {
            NEED();
            size_t used = strlen(c->defines);
            if (used + strlen(v) + 2 > sizeof c->defines) { fprintf(stderr, "evtc: --define: at most %zu characters in all\n", sizeof c->defines - 2); return 2; }
            snprintf(c->defines + used, sizeof c->defines - used, "%s%s", used ? " " : "", v);
            c->copts.cuda_defines = c->defines; /* checked by evt_compile */
        }
        else if (!strcmp(a, "--no-early-loads")) c->no_early_loads = 1;
        else if (!strcmp(a, "--host-copies")) c->host_copies = 1;
        else if (!strcmp(a, "--prompt-steps")) c->prompt_steps = 1;
        else if (!strcmp(a, "--prefill-chunk")) { NEED(); if (!parse_int(v, 1, 128, &c->prefill_chunk)) { fprintf(stderr, "evtc: --prefill-chunk %s: expected 1..128\n", v); return 2; } }
        else if (!strcmp(a, "--tma-ring")) {
            NEED();
            if (!parse_int(v, 0, 1 << 20, &n)) { fprintf(stderr, "evtc: --tma-ring %s: expected 0..1048576 bytes\n", v); return 2; }
            c->run.tma_ring = n ? (int)n : -1; /* 0: none (not the decode default) */
        }
        else { fprintf(stderr, "evtc: unknown option %s\n", a); return usage(NULL); }
    }
    c->run.trace_path = c->trace;
    return 0;
}

static int report(evt_diag *d)
{
    if (d->text) fputs(d->text, stderr);
    return 1;
}

static evt_graph *load_graph(const char *path, evt_diag *d)
{
    return evt_parse_file(path, d);
}

static int cmd_check(cli *c)
{
    evt_diag d;
    evt_diag_init(&d, c->file);
    evt_graph *g = load_graph(c->file, &d);
    int rc = 0;
    evt_plan *p = NULL;
    if (!g || evt_compile(g, &c->copts, &p, &d)) rc = report(&d);
    else if (c->counts) {
        evt_printer pr = {0};
        evt_plan_print_counts(&pr, p);
        if (pr.buf) fputs(pr.buf, stdout);
        evt_pr_free(&pr);
    }
    evt_plan_free(p);
    evt_graph_free(g);
    evt_diag_free(&d);
    return rc;
}

static int cmd_dump(cli *c)
{
    evt_diag d;
    evt_diag_init(&d, c->file);
    evt_graph *g = load_graph(c->file, &d);
    if (!g) { report(&d); evt_diag_free(&d); return 1; }
    evt_printer pr = {0};
    evt_print_graph(&pr, g);
    if (pr.buf) fputs(pr.buf, stdout);
    evt_pr_free(&pr);
    evt_graph_free(g);
    evt_diag_free(&d);
    return 0;
}

static void print_queues(const evt_graph *g, const evt_shape *s, const evt_static_sched *q)
{
    for (int w = 0; w < q->nworkers; w++) {
        printf("worker %d:", w);
        for (int64_t k = q->q_off[w]; k < q->q_off[w + 1]; k++) {
            int call = (int)(q->q[k] >> EVT_QCALL_SHIFT);
            int64_t coord[EVT_MAX_RANK], lin = 0;
            evt_shape_decode(&q->ext[call * 4], g->calls[call]->rank, q->q[k] & EVT_QINDEX_MASK, coord);
            for (int dd = 0; dd < g->calls[call]->rank; dd++) lin = lin * s->ext[call * 4 + dd] + coord[dd];
            char name[160];
            evt_task_name(s, s->task_base[call] + lin, name, sizeof name);
            printf(" %s", name);
        }
        printf("\n");
    }
}

/* evtc schedule: the static queues (or, with --sched hybrid, the split between
 * static queues and the ready queue) and the deadlock-freedom verdict. */
static int cmd_schedule(cli *c)
{
    evt_diag d;
    evt_diag_init(&d, c->file);
    evt_graph *g = load_graph(c->file, &d);
    evt_plan *p = NULL;
    int rc = 0;
    if (!g || evt_compile(g, &c->copts, &p, &d)) { rc = report(&d); goto out; }
    if (c->run.sched != EVT_SCHED_STATIC && c->run.sched != EVT_SCHED_HYBRID) {
        fprintf(stderr, "evtc: schedule shows static or hybrid schedules (--sched static|hybrid)\n");
        rc = 2;
        goto out;
    }
    int64_t sym[256];
    if (g->nsyms > 256 || evt_shape_parse(g, c->nsets, c->sets, sym, &d)) { report(&d); rc = 2; goto out; }
    int workers = c->run.workers ? c->run.workers : 4;
    evt_bound b;
    if (evt_bind(p, sym, c->run.sched, workers, c->run.policy, 1, &b, &d)) {
        report(&d);
        printf("deadlock-free: no (schedule rejected)\n");
        rc = 1;
        goto out;
    }
    const evt_shape *s = &b.s;
    int hybrid = c->run.sched == EVT_SCHED_HYBRID;
    printf("# %s schedule: %lld tasks on %d workers, policy %s, shape", hybrid ? "hybrid" : "static", (long long)s->ntasks,
           workers, c->run.policy == EVT_QUEUE_CP ? "cp" : "rr");
    for (int i = 0; i < g->nsyms; i++) printf(" %s=%lld", g->syms[i]->name, (long long)sym[i]);
    printf("\n");
    if (b.q.q_off) print_queues(g, s, &b.q);
    if (hybrid && b.nstatic < workers) {
        printf("workers %d..%d: the ready queue, for", b.nstatic, workers - 1);
        int any = 0;
        for (int k = 0; k < g->ncalls; k++)
            if (g->calls[k]->policy == EVT_POLICY_DYNAMIC) {
                printf("%s %s (%lld tasks)", any++ ? "," : "", g->calls[k]->name, (long long)(s->task_base[k + 1] - s->task_base[k]));
            }
        printf("; %lld ready at launch\n", (long long)b.nseeds);
    }
    if (!hybrid && c->run.policy == EVT_QUEUE_CP) printf("estimated makespan: %.0f cost units\n", b.q.makespan);
    printf("deadlock-free: yes (dependency edges and queue order form an acyclic graph%s)\n",
           hybrid ? "; ready-queue tasks run whenever their inputs are complete" : "");
    evt_bound_free(&b);
out:
    evt_plan_free(p);
    evt_graph_free(g);
    evt_diag_free(&d);
    return rc;
}

static int cmd_compile(cli *c)
{
    if (!c->target) return usage("compile needs --target c|cuda");
    if (!c->out) return usage("compile needs -o OUT");
    evt_diag d;
    evt_diag_init(&d, c->file);
    evt_graph *g = load_graph(c->file, &d);
    if (!g) { report(&d); evt_diag_free(&d); return 1; }
    evt_module *m = NULL;
    evt_backend be = !strcmp(c->target, "cuda") ? EVT_BACKEND_CUDA : EVT_BACKEND_CPU;
    int rc = 0;
    if (evt_module_build(g, be, &c->copts, 1, &m, &d) || evt_module_save(m, c->out, &d)) rc = report(&d);
    else {
        if (c->emit) {
            FILE *f = fopen(c->emit, "w");
            if (!f || fputs(evt_module_source(m, 0), f) < 0) { fprintf(stderr, "evtc: cannot write %s\n", c->emit); rc = 1; }
            if (f) fclose(f);
        }
        if (!rc) printf("compiled %s for %s into %s\n", c->file, evt_backend_name(be), c->out);
    }
    evt_module_free(m);
    evt_diag_free(&d);
    return rc;
}

static void print_outputs(const evt_graph *g, evt_buffers *b)
{
    for (int i = 0; i < g->ntensors; i++) {
        const evt_tensor *t = g->tensors[i];
        if (t->role != EVT_OUTPUT) continue;
        size_t bytes;
        void *p = evt_buffers_data(b, i, &bytes);
        const int64_t *dim = evt_buffers_dims(b, i);
        int64_t n = bytes / evt_dtype_size(t->dtype);
        double sum = 0;
        for (int64_t k = 0; k < n; k++)
            sum += t->dtype == EVT_F32 ? ((float *)p)[k] : t->dtype == EVT_I32 ? ((int32_t *)p)[k] : 0;
        printf("  %s %s[", t->name, evt_dtype_name(t->dtype));
        for (int k = 0; k < t->rank; k++) printf(k ? ", %lld" : "%lld", (long long)dim[k]);
        printf("]: sum %.6g", sum);
        if (n && t->dtype == EVT_F32) printf(", first %.6g, last %.6g", ((float *)p)[0], ((float *)p)[n - 1]);
        printf("\n");
    }
}

static int cmd_run(cli *c)
{
    evt_diag d;
    evt_diag_init(&d, c->file);
    evt_module *m = NULL;
    int rc = 0;
    evt_buffers *b = NULL, *ref = NULL;
    if (c->backend_auto) c->backend = evt_cuda_available() ? EVT_BACKEND_CUDA : EVT_BACKEND_CPU;
    if (evt_is_artifact(c->file)) {
        if (evt_module_load(c->file, &m, &d)) { rc = report(&d); goto out; }
    } else {
        evt_graph *g = load_graph(c->file, &d);
        if (!g) { rc = report(&d); goto out; }
        if (evt_module_build(g, c->backend, &c->copts, c->run.sched == EVT_SCHED_UNFUSED, &m, &d)) { rc = report(&d); goto out; }
    }
    const evt_graph *g = evt_module_graph(m);
    int64_t sym[256];
    if (g->nsyms > 256 || evt_shape_parse(g, c->nsets, c->sets, sym, &d)) { report(&d); rc = 2; goto out; }
    if (evt_buffers_new(g, sym, c->seed, 0xff, &b, &d)) { rc = report(&d); goto out; }
    evt_run_stats st;
    for (int r = 0; r < c->repeat; r++)
        if (evt_module_run(m, sym, b, &c->run, &st, &d)) {
            rc = report(&d);
            if (d.nerrors && strstr(d.text, "outside [")) rc = 2;
            goto out;
        }
    printf("ran %s: %lld tasks, %s schedule%s on the %s backend: launch %.3f ms, bind %.3f ms%s\n", c->file,
           (long long)st.ntasks, evt_sched_name(c->run.sched),
           c->run.sched == EVT_SCHED_STATIC || c->run.sched == EVT_SCHED_UNFUSED || c->run.sched == EVT_SCHED_HYBRID ? (c->run.policy == EVT_QUEUE_CP ? " (cp)" : " (rr)") : "",
           evt_backend_name(evt_module_backend(m)), st.launch_ms, st.bind_ms, st.bucket_used ? ", bucket schedule" : "");
    print_outputs(g, b);
    if (c->trace) printf("trace: %s (open in https://ui.perfetto.dev)\n", c->trace);
    if (c->check) {
        if (evt_buffers_new(g, sym, c->seed, 0xfe, &ref, &d)) { rc = report(&d); goto out; }
        if (evt_reference_run(m, sym, ref, &d)) {
            printf("check: FAILED: the reference executor stopped\n");
            rc = report(&d);
            goto out;
        }
        int bitwise = evt_module_backend(m) == EVT_BACKEND_CPU;
        evt_printer pr = {0};
        int bad = evt_buffers_compare(g, b, ref, bitwise ? 0 : 1e-4, &pr);
        if (bad) {
            printf("check: FAILED: %d output tensor(s) differ from the sequential reference\n%s", bad, pr.buf ? pr.buf : "");
            rc = 1;
        } else {
            printf("check: ok (%s the sequential reference)\n", bitwise ? "bitwise equal to" : "within relative error 1e-4 of");
        }
        evt_pr_free(&pr);
    }
out:
    evt_buffers_free(b);
    evt_buffers_free(ref);
    evt_module_free(m);
    evt_diag_free(&d);
    return rc;
}

static int cmd_tokenize(cli *c)
{
    if (!c->tokenizer) return usage("tokenize needs --tokenizer PATH");
    if (!c->nprompts) return usage("tokenize needs --prompt-text TEXT or --prompt ID,... (one or more)");
    char buf[4096];
    const char *path = cli_tokenizer_path(c->tokenizer, c->model, buf, sizeof buf);
    evt_tokenizer *tk = cli_load_tokenizer(path);
    if (!tk) return 2;
    int rc = cli_encode_texts(c->nprompts, c->prompt_text, c->prompt, c->prompt_len, tk, path) ? 0 : 2;
    for (int i = 0; i < c->nprompts && !rc; i++) {
        if (c->prompt_text[i]) {
            printf("ids:");
            for (int64_t k = 0; k < c->prompt_len[i]; k++) printf(" %d", c->prompt[i][k]);
        } else {
            printf("text: ");
            if (!cli_print_decoded(tk, c->prompt[i], c->prompt_len[i])) rc = 2;
        }
        printf("\n");
    }
    evt_tokenizer_free(tk);
    return rc;
}

/* Which path the launches' GEMV tiles could take (src/tiles/llm_tma.cuh):
   the TMA ring and maps, or the register units. */
static void cli_print_tma(const char *model, const char *what, unsigned ring_bytes, int maps, const char *defines)
{
    if (ring_bytes && maps)
        printf("decode %s: %s: a %u KiB TMA ring per worker, %d tensors with TMA maps", model, what, ring_bytes / 1024, maps);
    else
        printf("decode %s: %s: no TMA ring (the GEMVs run on the register units)", model, what);
    printf("; the kernel's tile options: %s\n", defines && *defines ? defines : "none");
}

static int cmd_decode(cli *c)
{
    if (!c->model) return usage("decode needs --model NAME|CONFIG.json");
    evt_diag d;
    evt_diag_init(&d, c->model);
    if (c->backend_auto) c->backend = evt_cuda_available() ? EVT_BACKEND_CUDA : EVT_BACKEND_CPU;
    evt_decode_opts o = {.model = c->model, .batch = c->batch, .ctx = c->ctx, .steps = c->steps, .backend = c->backend,
                         .run = c->run, .check = c->check, .dump_dir = c->dump,
                         .weights = c->weights, .prompts = (const int32_t *const *)c->prompt, .prompt_lens = c->prompt_len,
                         .nprompts = c->nprompts};
    if (c->nprompts && c->ctx_given) {
        fprintf(stderr, "evtc: decode: --prompt fills the cache from position 0; give it or --ctx, not both\n");
        return 2;
    }
    if (c->tokenizer && !c->nprompts) {
        fprintf(stderr, "evtc: decode: --tokenizer is for runs with --prompt-text or --prompt\n");
        return 2;
    }
    if ((c->prefill_chunk || c->prompt_steps) && !c->nprompts) {
        fprintf(stderr, "evtc: decode: %s is for runs with prompts (--prompt, --prompts, --prompt-text)\n",
                c->prompt_steps ? "--prompt-steps" : "--prefill-chunk");
        return 2;
    }
    if (c->prefill_chunk && c->prompt_steps) {
        fprintf(stderr, "evtc: decode: --prefill-chunk and --prompt-steps together: the second leaves out the prefill\n");
        return 2;
    }
    /* the tokenizer: to encode --prompt-text, and to print what is generated as text */
    int any_text = 0;
    for (int i = 0; i < c->nprompts; i++) any_text |= c->prompt_text[i] != NULL;
    char tkbuf[4096];
    const char *tkpath = c->nprompts ? cli_tokenizer_path(c->tokenizer, c->model, tkbuf, sizeof tkbuf) : NULL;
    if (any_text && !tkpath) {
        fprintf(stderr, "evtc: decode: --prompt-text needs a tokenizer: --tokenizer PATH, or a --model CHECKPOINT_DIR "
                        "holding tokenizer.json\n");
        return 2;
    }
    evt_tokenizer *tk = tkpath ? cli_load_tokenizer(tkpath) : NULL;
    if (tkpath && !tk) {
        if (c->tokenizer || any_text) return 2;
        fprintf(stderr, "evtc: decode: the generated tokens are printed as ids only (%s not read)\n", tkpath);
    }
    if (tk && !cli_encode_texts(c->nprompts, c->prompt_text, c->prompt, c->prompt_len, tk, tkpath)) {
        evt_tokenizer_free(tk);
        return 2;
    }
    int32_t *generated = c->nprompts ? calloc((size_t)(c->batch * c->steps), sizeof(int32_t)) : NULL;
    if (c->nprompts && !generated) { fprintf(stderr, "evtc: out of memory\n"); evt_tokenizer_free(tk); return 1; }
    o.generated = generated;
    o.build.attn_splits = c->splits;
    o.build.attn_rows = c->attn_rows;
    o.build.target_tasks = c->tiles;
    o.build.lm_waves = c->lm_waves;
    o.build.dn_slices = c->dn_slices;
    o.build.o_slices = c->o_slices;
    o.build.slices_from = c->slices_from;
    o.build.slices_to = c->slices_to;
    o.build.row_events = c->row_events;
    o.build.split_rope = c->split_rope;
    o.norms = (evt_decode_norms)c->norms;
    o.build.prefetch = c->prefetch;
    o.build.argmax_per_tile = c->argmax_per_tile;
    o.build.merge_per_group = c->merge_per_group;
    o.build.merge_one_split = c->merge_one_split;
    o.build.merge_tasks = c->merge_tasks;
    o.build.attn_no_early = c->attn_no_early;
    o.host_copies = c->host_copies;
    o.prompt_steps = c->prompt_steps;
    o.prefill_chunk = c->prefill_chunk;
    o.compile = c->copts;
    /* early loads are the decode default (bench/RESULTS.md session 18); the
       L2 hook (--prefetch) and the weight stream take the calls otherwise */
    o.compile.early_loads = !c->no_early_loads && !c->prefetch && !c->copts.stream_weights;
    o.build.qkv_per_head = c->qkv_per_head;
    memcpy(o.also, c->also, sizeof o.also);
    o.nalso = c->nalso;
    o.build.page_size = c->page;
    o.build.seed = c->seed + 1;
    if (c->emit_program) { /* the very programs evt_decode runs: the steps', and with prompts the prefill's beside it */
        /* the prefill's file: ".prefill" before FILE's extension (p.evt -> p.prefill.evt) */
        char prefill_path[4096];
        const char *dot = strrchr(c->emit_program, '.'), *slash = strrchr(c->emit_program, '/');
        if (!dot || (slash && dot < slash)) dot = c->emit_program + strlen(c->emit_program);
        snprintf(prefill_path, sizeof prefill_path, "%.*s.prefill%s", (int)(dot - c->emit_program), c->emit_program, dot);
        for (int k = 0; k < 2; k++) {
            evt_qwen3_config cfg;
            char *text = NULL;
            evt_status pst = k ? evt_decode_prefill_program(&o, &cfg, &text, &d) : evt_decode_program(&o, &cfg, &text, &d);
            if (pst == EVT_ERR_IO || pst == EVT_ERR_SHAPE) { report(&d); evt_diag_free(&d); free(generated); evt_tokenizer_free(tk); return 2; }
            if (k && !pst && !text) break; /* no prefill program for this run */
            const char *path = k ? prefill_path : c->emit_program;
            FILE *f = text ? fopen(path, "w") : NULL;
            int ok = f && fputs(text, f) >= 0;
            if (f) fclose(f);
            free(text);
            if (!ok) { fprintf(stderr, "evtc: cannot write %s\n", path); report(&d); evt_diag_free(&d); free(generated); evt_tokenizer_free(tk); return 1; }
        }
        if (c->emit_only) { evt_diag_free(&d); free(generated); evt_tokenizer_free(tk); return 0; }
    }
    evt_decode_result r;
    evt_status st = evt_decode(&o, &r, &d);
    int rc = 0;
    if (st && st != EVT_ERR_CHECK) {
        report(&d);
        rc = st == EVT_ERR_SHAPE || st == EVT_ERR_IO ? 2 : 1;
    } else {
        evt_qwen3_config cfg;
        if (!evt_qwen3_preset(c->model, &cfg)) evt_qwen3_load_config(c->model, &cfg, NULL);
        double wb = evt_qwen3_weight_bytes(&cfg);
        char ctx[48];
        if (c->nprompts == 1) snprintf(ctx, sizeof ctx, "a %lld-token prompt", (long long)c->prompt_len[0]);
        else if (c->nprompts) snprintf(ctx, sizeof ctx, "%d prompts", c->nprompts);
        else snprintf(ctx, sizeof ctx, "ctx %lld", c->ctx);
        printf("decode %s: batch %lld, %s, %lld steps, %s schedule on %s: %.3f ms/token (first step %.3f ms), "
               "%lld tasks/step, weights %.3f GB/step (%.1f GB/s), KV cache %.3f GB/step\n",
               c->model, c->batch, ctx, c->steps, evt_sched_name(c->run.sched), evt_backend_name(o.backend), r.ms_per_token,
               r.first_ms, (long long)r.ntasks, wb / 1e9, r.ms_per_token > 0 ? wb / 1e6 / r.ms_per_token : 0, r.cache_bytes / 1e9);
        /* request b had prompt b % nprompts: the first requests' tokens stand for the rest */
        for (long long b = 0; b < c->nprompts && b < c->batch; b++) {
            if (c->nprompts == 1) printf("generated:");
            else printf("generated[%lld]:", b);
            for (long long k = 0; k < c->steps; k++) printf(" %d", generated[b * c->steps + k]);
            printf("\n");
            if (tk) { /* up to the first end-of-sequence token */
                const int32_t *g = generated + b * c->steps;
                long long k = 0;
                int at_eos = 0;
                for (; k < c->steps && !at_eos; k++)
                    for (int e = 0; e < cfg.n_eos; e++) at_eos |= g[k] == cfg.eos_token_ids[e];
                if (c->nprompts == 1) printf("generated text: ");
                else printf("generated text[%lld]: ", b);
                cli_print_decoded(tk, g, at_eos ? k - 1 : k);
                if (at_eos) printf(" (end of sequence: token %lld, id %d)", k, g[k - 1]);
                printf("\n");
            }
        }
        if (r.stream_ring_bytes)
            printf("decode %s: weight stream: a %u KiB ring per worker\n", c->model, r.stream_ring_bytes / 1024);
        if (o.backend == EVT_BACKEND_CUDA)
            cli_print_tma(c->model, "steps", r.tma_ring_bytes, r.tma_maps, r.cuda_defines);
        if (o.backend == EVT_BACKEND_CUDA && r.prefill_launches)
            cli_print_tma(c->model, "prefill", r.prefill_tma_ring_bytes, r.prefill_tma_maps, r.prefill_cuda_defines);
        for (int k = 0; k < c->nalso; k++)
            printf("decode %s: batch %lld, %s schedule on %s: %.3f ms/token (%.3fx the %s schedule's time), "
                   "logits within %.2e of the %s schedule's, %lld next tokens differ\n",
                   c->model, c->batch, evt_sched_name(c->also[k]), evt_backend_name(o.backend), r.also_ms[k],
                   r.ms_per_token > 0 ? r.also_ms[k] / r.ms_per_token : 0, evt_sched_name(c->run.sched),
                   r.also_logit_err[k], evt_sched_name(c->run.sched), (long long)r.also_next_diff[k]);
        if (c->check) {
            if (st == EVT_ERR_CHECK) { printf("check: FAILED\n"); report(&d); rc = 1; }
            else if (o.backend == EVT_BACKEND_CPU)
                printf("check: ok (%lld %s bitwise equal to the sequential reference)\n", (long long)r.steps_checked,
                       r.prefill_launches ? "launches (prefill and steps)" : "steps");
            else
                printf("check: ok (%lld %s within relative error %.3g of the sequential reference; near-ties: %lld, "
                       "each continued with the device's token)\n", (long long)r.steps_checked,
                       r.prefill_launches ? "launches (prefill and steps)" : "steps", r.check_rtol,
                       (long long)r.near_ties);
        }
    }
    evt_diag_free(&d);
    free(generated);
    evt_tokenizer_free(tk);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) { usage(NULL); return 0; }
    cli c;
    int rc = parse_args(argc, argv, &c);
    if (rc) return rc;
    if (!strcmp(c.cmd, "check")) return cmd_check(&c);
    if (!strcmp(c.cmd, "dump")) return cmd_dump(&c);
    if (!strcmp(c.cmd, "schedule")) return cmd_schedule(&c);
    if (!strcmp(c.cmd, "compile")) return cmd_compile(&c);
    if (!strcmp(c.cmd, "run")) return cmd_run(&c);
    if (!strcmp(c.cmd, "decode") || !strcmp(c.cmd, "tokenize")) {
        rc = !strcmp(c.cmd, "decode") ? cmd_decode(&c) : cmd_tokenize(&c);
        for (int i = 0; i < c.nprompts; i++) free(c.prompt[i]);
        return rc;
    }
    fprintf(stderr, "evtc: unknown command '%s'\n", c.cmd);
    return usage(NULL);
}
