#!/bin/bash
# tests/gpu/decode_check.sh — the decode megakernel against the C reference,
# every schedule, both weight paths (one device call; needs an H100/H200).
#
#   tests/gpu/decode_check.sh        logs under $OUT/decode_check or /tmp/evt-decode-check
#
# Each case is one `evtc decode --backend cuda --check` process: every step of
# the first schedule is compared with the sequential C reference (relative
# error <= 2e-2 on every tensor), and --also runs the other schedules on the
# same step and compares their logits and next tokens with the first one's.
# With --stream the static workers' leaders copy their next GEMV tasks'
# weight rows into shared memory and the tiles read them there (static and
# hybrid's static workers; kernel by kernel and dynamic workers read global
# memory, so --also compares the two paths), at batches 2 to 100 (every GEMV
# unit shape: B <= 8, 16, the units of every batch row at 40, two passes of 64
# at 100); EVT_STREAM_RING=12288 shrinks the ring below every band, so each
# task takes a prefix of its rows from shared memory and the rest from global
# memory. The default build and --prefetch (L2 prefetch hook) run the TMA
# ring's GEMV at batch 40 where a task has 16 rows or more (QKV, gate + up,
# the LM head) and the register units elsewhere (o and down: the units that
# hold every batch row; every GEMV at 100, in two passes of 64 rows: these
# configs' hidden size, 1024, gets no ring above 64 by default);
# --no-records runs the static schedule with
# its maps evaluated on the device (no task records, launch tables in
# global memory). ctx 600 at B = 20: one split of 601 positions per task
# (ten steps of the attention's pipelined loop per warp). The attention
# tasks stage their first step of old cache rows before their waits
# (attn_rope_split, early loads) wherever a warp's first step lies below
# pos: at ctx 600 and in uneven-b2-ctx300 (8 splits of ~38 positions, 4 q
# heads per kv head) on most warps, in the short-context cases on few.
# The default build's GEMV tiles issue their first weight loads while warp 0
# runs the task's waits (early loads: every batch, every schedule with task
# records, the fused norms too); --no-early-loads
# runs the plain form (waits, then the tile), early-b40 builds the tiles with
# -DEVT_LLM_EARLY_MAX_NB8=1 (early loads at B <= 8 only). The attention sums
# its scores by a reduce-scatter for 2 q heads per kv head (qwen3-mid) and by
# a butterfly for 4 (qwen3-uneven) by default; the attn cases build the
# other two forms (EVT_LLM_ATTN_RS=0: the butterfly for 2; 2: the
# reduce-scatter for 4; docs/models.md). Those forms are the batch-1-16
# kernel's and the non-team paths': since session 51 a run's teams score on
# the tensor cores (src/tiles/llm_attn_mma.cuh); attn-fma builds the teams
# with the loop before it (EVT_LLM_ATTN_MMA=0), attn-split with P's bf16
# remainder as a second product (EVT_LLM_ATTN_MMA_SPLIT=1).
# From batch 9 (qwen3-mid and -uneven have 8 kv heads: 131 / (8 B) < 2) a
# request's cache is one split: the attention tasks write o themselves and
# the merge call has no tasks (b12 and up); below (b1 to b6) the last
# attention task of each merge group merges it (merge_last), and there is no
# merge call either.
# The uneven cases (tests/gpu/qwen3-uneven.json: qwen3-8b's QKV and MLP
# widths and 4 q heads per kv head on a 1024-wide model, 2 layers) give the
# GEMV tiles unit counts that do not divide the 8 warps (QKV 3 at B <= 8,
# gate + up 6 at every batch, 12 at 100, the LM head 15).
# The norms (evtc decode --norms): by default their weights are folded into
# the QKV and gate/up matrices, and up to batch 16 the norms run inside
# those tiles (rms_linear, rms_mlp_up: every case at B <= 16 but the
# -unfolded and -calls ones; the units sum the squares of x as they load it,
# QKV's 3 uneven units splitting K between warps, gate + up's 6 not), above
# as calls with unit weights; -fusenorm forces them into the tiles at 40
# and 64 (at 64 the TMA path's consumers sum each stage's x box), -calls
# keeps the calls at 4, -unfolded is the classic model (norm calls with
# weights of their own).
# The page12 cases use 12-token KV pages: the attention's fast path needs a
# power-of-two page size, so these take its generic path (one split at b12,
# merge_last at b4; 2 and 4 q heads per kv head).
# The GEMV tiles take the TMA + wgmma path (src/tiles/llm_tma.cuh) where the
# run reserves a TMA ring (evtc decode: at batch 33-64, and up to 128 for a
# hidden size of 4096 or more; or --tma-ring) and a task has enough weight
# rows (batches 17-128: 64 rows x matrices up to 32, 16 from 33; above 64
# x in two boxes, rows [0, 64) and the rest, each multiplied by a warpgroup
# of its own against one stream of the band: uneven-b72-tma with a second
# box of 8 rows, mid-b100-tma of 36, uneven-b100-tma-tiles33 with o and
# down at 31 rows, uneven-b100-fusenorm-tma with each warpgroup summing its
# box's squares, uneven-b100-noearly-tma issuing x with the weights): at 33,
# 40 and 64 (uneven-b33, -b40-fusenorm, uneven-b64, -b64-attn-rs) the QKV
# (47 rows), gate + up (93 x 2) and the LM head, with early loads (the weight boxes before warp 0's waits);
# mid-b40 and its variants: QKV (31 rows) and gate + up (23 x 2);
# uneven-b20-tma: gate + up and the LM head at 20 rows (the x box of 32 rows
# past the batch read as zeros); mid-b64: QKV (31 rows), gate + up (23 x 2)
# and the LM head; the notma case the register units at 64;
# uneven-b64-tiles33 and -b40-tiles33 (33 tiles a call): o and down at 31 rows (the residual
# form, qwen3-8b's o and down shapes), QKV in two passes of 128 rows, gate +
# up in four of 96. A stage moves 1, 2 or 4 chunks of 64 k in one 3-D box
# per matrix (as many as leave the 96 KiB ring two stages).
# Above batch 16 an attention task serves a run of R = ceil(B x 8 / 131)
# requests (docs/models.md): 2 at b20 and b32, 3 at b40, 4 at b50 and b64
# (uneven-b50, mid-b50-page12: 13 runs, the last of 2 requests; the generic
# path in the page12 one), 7 at b100 (the last run of 2); uneven-b4-rows3
# asks for runs of 3 at batch 4 (runs of 3 and 1, four splits, the last
# split of each group merging), which keeps the loop in the batch-1-16
# kernel; every other case at B <= 16 runs that kernel without it
# (EVT_LLM_ATTN_ONE_REQUEST). A run of 2 or more requests with one split and
# a power-of-two page runs in min(R, 4) teams of warps
# (src/tiles/llm_attn.cuh): 4 + 4 warps for runs of 2 (uneven-b32, mha-b24:
# one q head per kv head), 3 + 3 + 2 for runs of 3 (mid-b40; its last run a
# single request, served by the whole block), four teams of 2 for 4 and
# more, in rounds of 4 requests: two in uneven-b64-rows8 (runs of 8). The
# last R % 4 requests of a longer run go to that many teams over the whole
# block, or, one, to the whole block alone: runs of 5 (uneven-b72-tma,
# uneven-b40-rows5 in the batch-17-64 kernel, mha-b72 with one q head per
# kv head), 6 (uneven-b90, mid-b40-rows6: 4 + 4 warps) and 7 (mid-b100:
# 3 + 3 + 2); the page12 and rows3 cases keep the requests one after the
# other.
# ONLY=REGEX runs the cases whose names match. Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
LOG=${OUT:-/tmp/evt-decode-check}/decode_check
mkdir -p "$LOG"
make -j16 build/evtc > "$LOG/build.log" 2>&1 || { echo "build failed"; tail -20 "$LOG/build.log"; echo "0 passed, 1 failed"; exit 1; }
pass=0
fail=0
run_case() { # name model batch ctx steps [extra evtc args]
    local name=$1 model=$2 b=$3 ctx=$4 steps=$5
    shift 5
    [ -n "${ONLY:-}" ] && ! echo "$name" | grep -Eq -- "$ONLY" && return 0
    timeout 300 build/evtc decode --model "$model" --batch "$b" --ctx "$ctx" --steps "$steps" --backend cuda --check \
        --sched static --also kbk,graph,dynamic,hybrid "$@" > "$LOG/$name.log" 2>&1
    local rc=$? worst
    worst=$(grep -o 'logits within [0-9.e+-]*' "$LOG/$name.log" | awk '{ if ($3 + 0 > w) w = $3 + 0 } END { print w + 0 }')
    local streamed=1 # a --stream case must have had a ring (else it silently ran the global path)
    case " $* " in *" --stream "*) grep -q "weight stream: a [0-9]* KiB ring" "$LOG/$name.log" || streamed=0 ;; esac
    # a --slices-to case must have run the TMA forms (the ring and maps evtc decode reports)
    case " $* " in *" --slices-to "*) grep -q "steps: a [0-9]* KiB TMA ring per worker, [1-9][0-9]* tensors" "$LOG/$name.log" || streamed=0 ;; esac
    if [ $rc -eq 0 ] && grep -q "^check: ok" "$LOG/$name.log" && [ "$(grep -c 'schedule on cuda' "$LOG/$name.log")" -eq 5 ] &&
       [ $streamed -eq 1 ] && awk -v w="$worst" 'BEGIN { exit !(w <= 2e-2) }'; then
        pass=$((pass + 1))
        echo "PASS $name: $(grep -o '^check: ok ([0-9]* steps' "$LOG/$name.log"); $(grep -o 'weight stream: a [0-9]* KiB ring' "$LOG/$name.log");" \
             "other schedules' logits within $worst;" \
             "next tokens differing: $(grep -o '[0-9]* next tokens differ' "$LOG/$name.log" | awk '{ printf "%s ", $1 }')"
    else
        fail=$((fail + 1)); echo "FAIL $name (rc=$rc, worst logits $worst, streamed $streamed): evtc decode --model $model --batch $b --ctx $ctx --steps $steps $*"
        tail -8 "$LOG/$name.log"
    fi
}
run_case tiny-b2 examples/qwen3-tiny.json 2 32 3
run_case tiny-b2-stream examples/qwen3-tiny.json 2 32 3 --stream
run_case tiny-b5-stream examples/qwen3-tiny.json 5 40 2 --stream
run_case mid-b4 tests/gpu/qwen3-mid.json 4 64 2
run_case mid-b4-stream tests/gpu/qwen3-mid.json 4 64 2 --stream
run_case mid-b12-stream tests/gpu/qwen3-mid.json 12 64 2 --stream
run_case mid-b20-stream tests/gpu/qwen3-mid.json 20 64 2 --stream
run_case mid-b40-stream tests/gpu/qwen3-mid.json 40 33 2 --stream
run_case mid-b100-stream tests/gpu/qwen3-mid.json 100 20 2 --stream
export EVT_STREAM_RING=12288 # prefixes: every band is larger than the ring
run_case mid-b4-stream-prefix tests/gpu/qwen3-mid.json 4 64 2 --stream
run_case mid-b20-stream-prefix tests/gpu/qwen3-mid.json 20 64 2 --stream
unset EVT_STREAM_RING
run_case mid-b40 tests/gpu/qwen3-mid.json 40 33 2
run_case mid-b100 tests/gpu/qwen3-mid.json 100 20 2
run_case uneven-b1 tests/gpu/qwen3-uneven.json 1 40 2
run_case uneven-b2-ctx300 tests/gpu/qwen3-uneven.json 2 300 2
run_case uneven-b4 tests/gpu/qwen3-uneven.json 4 40 2
# the batch <= 8 GEMV epilogue where the k splits' partials hold only the B
# real rows (every warp over every unit, 6 gate + up units): row i / B and
# batch row i % B for a B that is not a power of two
run_case uneven-b3 tests/gpu/qwen3-uneven.json 3 40 2
# the leader's waits inside the GEMV tiles (EVT_WAITS_IN_TILE, the batch-1-16
# kernel of qwen3-8b's shapes: evt_decode_waits_in_tile), forced on here
export EVT_NVCCFLAGS=-DEVT_WAITS_IN_TILE=1
run_case uneven-b1-waits tests/gpu/qwen3-uneven.json 1 40 2
run_case uneven-b4-waits tests/gpu/qwen3-uneven.json 4 40 2
# the dispatch warp (EVT_DISPATCH_WG=2, src/device/evt_dispatch_wg.h: an
# option, forced on here): the static schedule's tasks from its slots, the
# other schedules with its warpgroup gone; over the waits-in-tile list it
# turns that form off
export EVT_NVCCFLAGS=-DEVT_DISPATCH_WG=2
run_case tiny-b2-dwg examples/qwen3-tiny.json 2 32 3
run_case uneven-b1-dwg tests/gpu/qwen3-uneven.json 1 40 2
run_case uneven-b4-dwg tests/gpu/qwen3-uneven.json 4 40 2
# --prefetch: the GEMV calls run an L2 prefetch hook, so they take their
# templates, not the record path: the dispatch warp hands those entries to
# the tile threads, which dispatch them as without it (EVT_CTL_TEMPLATE)
run_case uneven-b2-dwg-prefetch tests/gpu/qwen3-uneven.json 2 40 2 --prefetch
export EVT_NVCCFLAGS="-DEVT_WAITS_IN_TILE=1 -DEVT_DISPATCH_WG=2"
run_case uneven-b3-waits-dwg tests/gpu/qwen3-uneven.json 3 40 2
unset EVT_NVCCFLAGS
run_case uneven-b12-unfolded tests/gpu/qwen3-uneven.json 12 40 2 --norms unfolded
run_case uneven-b40-fusenorm tests/gpu/qwen3-uneven.json 40 33 2 --fuse-norm
run_case uneven-b64-fusenorm tests/gpu/qwen3-uneven.json 64 40 2 --fuse-norm
run_case uneven-b32 tests/gpu/qwen3-uneven.json 32 40 2
run_case uneven-b64 tests/gpu/qwen3-uneven.json 64 40 2
run_case uneven-b100 tests/gpu/qwen3-uneven.json 100 20 2
run_case mid-b4-prefetch tests/gpu/qwen3-mid.json 4 64 2 --prefetch
run_case mid-b20-ctx600 tests/gpu/qwen3-mid.json 20 600 2
run_case mid-b4-calls tests/gpu/qwen3-mid.json 4 64 2 --norms calls
run_case mid-b64-fusenorm tests/gpu/qwen3-mid.json 64 64 2 --fuse-norm
run_case tiny-b2-unfolded examples/qwen3-tiny.json 2 32 3 --norms unfolded
run_case tiny-b2-noearly examples/qwen3-tiny.json 2 32 3 --no-early-loads
# the steps' launches are resident by default (the cache stays on the device,
# every case above checks each step against the reference); the ablation
# copies every tensor both ways each step
run_case tiny-b2-host-copies examples/qwen3-tiny.json 2 32 3 --host-copies
run_case mid-b4-noearly tests/gpu/qwen3-mid.json 4 64 2 --no-early-loads
run_case mid-b6-norecords tests/gpu/qwen3-mid.json 6 64 2 --no-records
export EVT_NVCCFLAGS=-DEVT_LLM_ATTN_RS=0 # the butterfly for 2 q heads per kv head
run_case mid-b4-attn-butterfly tests/gpu/qwen3-mid.json 4 64 2
run_case mid-b40-attn-butterfly tests/gpu/qwen3-mid.json 40 33 2
export EVT_NVCCFLAGS=-DEVT_LLM_ATTN_RS=2 # the reduce-scatter for 4 too
run_case uneven-b4-attn-rs tests/gpu/qwen3-uneven.json 4 40 2
run_case uneven-b64-attn-rs tests/gpu/qwen3-uneven.json 64 40 2
export EVT_NVCCFLAGS=-DEVT_LLM_ATTN_MMA=0 # the teams' scoring loop on the CUDA cores (before session 51)
run_case uneven-b64-attn-fma tests/gpu/qwen3-uneven.json 64 40 2
export EVT_NVCCFLAGS=-DEVT_LLM_ATTN_MMA_SPLIT=1 # the teams' P.V with P's bf16 remainder as a second product
run_case uneven-b64-attn-split tests/gpu/qwen3-uneven.json 64 40 2
run_case mid-b40-attn-split tests/gpu/qwen3-mid.json 40 33 2
export EVT_NVCCFLAGS=-DEVT_LLM_EARLY_MAX_NB8=1 # early loads at B <= 8 only
run_case mid-b40-early-b8 tests/gpu/qwen3-mid.json 40 33 2
unset EVT_NVCCFLAGS
run_case mid-b4-page12 tests/gpu/qwen3-mid.json 4 64 2 --page 12
run_case uneven-b50 tests/gpu/qwen3-uneven.json 50 40 2
run_case mid-b50-page12 tests/gpu/qwen3-mid.json 50 64 2 --page 12
run_case uneven-b4-rows3 tests/gpu/qwen3-uneven.json 4 40 2 --attn-rows 3
run_case uneven-b12-page12 tests/gpu/qwen3-uneven.json 12 40 2 --page 12
run_case uneven-b20-tma tests/gpu/qwen3-uneven.json 20 40 2 --tma-ring 98304
run_case uneven-b64-notma tests/gpu/qwen3-uneven.json 64 40 2 --tma-ring 0
run_case mid-b64 tests/gpu/qwen3-mid.json 64 33 2
run_case uneven-b64-tiles33 tests/gpu/qwen3-uneven.json 64 40 2 --tiles 33
run_case uneven-b40-tiles33 tests/gpu/qwen3-uneven.json 40 40 2 --tiles 33
run_case uneven-b33 tests/gpu/qwen3-uneven.json 33 40 2
run_case uneven-b72-tma tests/gpu/qwen3-uneven.json 72 40 2 --tma-ring 98304
run_case uneven-b100-tma-tiles33 tests/gpu/qwen3-uneven.json 100 20 2 --tiles 33 --tma-ring 98304
run_case mid-b100-tma tests/gpu/qwen3-mid.json 100 20 2 --tma-ring 98304
run_case uneven-b100-fusenorm-tma tests/gpu/qwen3-uneven.json 100 20 2 --fuse-norm --tma-ring 98304
run_case uneven-b100-noearly-tma tests/gpu/qwen3-uneven.json 100 20 2 --no-early-loads --tma-ring 98304
run_case uneven-b64-rows8 tests/gpu/qwen3-uneven.json 64 40 2 --attn-rows 8
run_case mha-b24 tests/gpu/qwen3-mha.json 24 40 2
run_case uneven-b40-rows5 tests/gpu/qwen3-uneven.json 40 40 2 --attn-rows 5
run_case mid-b40-rows6 tests/gpu/qwen3-mid.json 40 33 2 --attn-rows 6
run_case uneven-b90 tests/gpu/qwen3-uneven.json 90 20 2
run_case mha-b72 tests/gpu/qwen3-mha.json 72 40 2
# norm partials (--norms partials): the O and down tiles leave each new row's
# sum of squares (partials per tile, the last tile summing them), the QKV and
# gate/up tiles scale by them: the TMA ring at 64 and 40, the register units
# at 24 (waits before the tile: --no-early-loads), x in two boxes at 100
run_case uneven-b64-partials tests/gpu/qwen3-uneven.json 64 40 2 --norms partials
run_case mid-b40-partials tests/gpu/qwen3-mid.json 40 33 2 --norms partials
run_case uneven-b24-partials tests/gpu/qwen3-uneven.json 24 40 2 --norms partials
run_case uneven-b24-partials-noearly tests/gpu/qwen3-uneven.json 24 40 2 --norms partials --no-early-loads
run_case uneven-b100-partials tests/gpu/qwen3-uneven.json 100 20 2 --norms partials
# k slices (docs/models.md): at batch 33-64 evtc decode builds O and down as
# linear_part in 4 k slices by default (every case above at 33-64 runs them:
# each band's TMA form over a quarter of K, qwen3-uneven's 4096 and 12288,
# qwen3-mid's 2048 and 3072), and the norm after each adds the partials
# (add_rmsnorm); -whole-k keeps linear_res over all of K there; -dn2 gives the
# down projection 2 slices and O its default 4 (two forms of the tile at
# once); -dn2-notma has no ring (the register units' fallback: slice 0 over
# all of K, slice 1 zeros); -dn2-o2 2 each; b100-dn2 has one slice (the
# default --slices-to is 64); -to128 slices at batch 65-128 too (session 72:
# b72 the swapped product's form, b100 and b128 the two halves of x)
run_case uneven-b64-whole-k tests/gpu/qwen3-uneven.json 64 40 2 --dn-slices 1 --o-slices 1
run_case uneven-b64-dn2 tests/gpu/qwen3-uneven.json 64 40 2 --dn-slices 2
run_case uneven-b64-dn2-notma tests/gpu/qwen3-uneven.json 64 40 2 --dn-slices 2 --tma-ring 0
run_case mid-b40-dn2 tests/gpu/qwen3-mid.json 40 33 2 --dn-slices 2
run_case uneven-b100-dn2 tests/gpu/qwen3-uneven.json 100 20 2 --dn-slices 2
run_case uneven-b64-dn2-o2 tests/gpu/qwen3-uneven.json 64 40 2 --dn-slices 2 --o-slices 2
run_case uneven-b72-to128 tests/gpu/qwen3-uneven.json 72 20 2 --dn-slices 4 --o-slices 4 --slices-to 128
run_case uneven-b100-to128 tests/gpu/qwen3-uneven.json 100 20 2 --dn-slices 4 --o-slices 4 --slices-to 128
run_case mid-b128-to128 tests/gpu/qwen3-mid.json 128 20 2 --dn-slices 4 --o-slices 4 --slices-to 128
# Prompts (evtc decode --prompts; no --ctx): every prompt token but each
# request's last goes into the cache through the prefill program (the
# split-rope form, every attention task waiting for all rows' appends of its
# kv head; docs/models.md), up to --prefill-chunk rows a launch, each launch
# checked against that program's sequential reference; then the steps from
# each prompt's last token, checked as above. LENS: the prompts' lengths
# (ids below 256, every model's vocabulary; a prompt a line, request b takes
# prompt b mod N). prompts-tiny-b3: one launch of 5 rows (the batch-1-16
# kernel); prompts-mid-b4-chunk8: 50 rows in 7 launches of 8 (the last padded
# with rows of the spare request); prompts-mid-b2-long: 2 x 99 rows in 2
# launches of 99 (the batch-65-128 kernel, its TMA ring and norm calls);
# prompts-mid-b1-rows50: one launch of 50 rows (the batch-33-64 program: O
# and down in k slices on the TMA ring). Each prefill kernel is compiled for
# its own rows, not the steps' batch (the evtc decode line "prefill: ...
# tile options" says which; until session 72 it took the steps');
# -steps: the same prompts fed to the decode steps a token at a time
# (--prompt-steps, the ablation); the two forms' tokens are printed, not
# compared (other summation orders: a near-tie may differ).
run_prompt_case() { # name model batch steps lens [extra evtc args]
    local name=$1 model=$2 b=$3 steps=$4 lens=$5
    shift 5
    [ -n "${ONLY:-}" ] && ! echo "$name" | grep -Eq -- "$ONLY" && return 0
    local pf=$LOG/$name.prompts k=0
    : > "$pf"
    for n in ${lens//,/ }; do
        k=$((k + 1))
        awk -v n="$n" -v s="$k" 'BEGIN { srand(s); for (i = 0; i < n; i++) printf "%d%s", int(rand() * 256), i + 1 < n ? "," : "\n" }' >> "$pf"
    done
    timeout 300 build/evtc decode --model "$model" --batch "$b" --steps "$steps" --prompts "$pf" --backend cuda --check "$@" \
        > "$LOG/$name.log" 2>&1
    local rc=$? prefilled=1
    case " $* " in *" --prompt-steps "*) ;; *) grep -q "^decode: prefilled [0-9]* prompt token" "$LOG/$name.log" || prefilled=0 ;; esac
    if [ $rc -eq 0 ] && grep -q "^check: ok" "$LOG/$name.log" && [ $prefilled -eq 1 ]; then
        pass=$((pass + 1))
        echo "PASS $name: $(grep -o '^decode: prefilled .* rows' "$LOG/$name.log"); $(grep -o '^check: ok ([0-9]* [a-z]*' "$LOG/$name.log");" \
             "$(grep '^generated\[0\]' "$LOG/$name.log")"
    else
        fail=$((fail + 1)); echo "FAIL $name (rc=$rc, prefilled $prefilled): evtc decode --model $model --batch $b --steps $steps --prompts $pf $*"
        tail -8 "$LOG/$name.log"
    fi
}
run_prompt_case prompts-tiny-b3 examples/qwen3-tiny.json 3 4 3,2
run_prompt_case prompts-tiny-b3-steps examples/qwen3-tiny.json 3 4 3,2 --prompt-steps
run_prompt_case prompts-tiny-b3-dynamic examples/qwen3-tiny.json 3 4 3,2 --sched dynamic
run_prompt_case prompts-mid-b4-chunk8 tests/gpu/qwen3-mid.json 4 3 20,7 --prefill-chunk 8
run_prompt_case prompts-mid-b4-chunk8-host-copies tests/gpu/qwen3-mid.json 4 3 20,7 --prefill-chunk 8 --host-copies
run_prompt_case prompts-mid-b2-long tests/gpu/qwen3-mid.json 2 3 100,100
run_prompt_case prompts-mid-b1-rows50 tests/gpu/qwen3-mid.json 1 3 51
run_prompt_case prompts-mid-b2-long-steps tests/gpu/qwen3-mid.json 2 3 100,100 --prompt-steps
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
