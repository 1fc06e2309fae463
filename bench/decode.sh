#!/bin/bash
# bench/decode.sh — Qwen3 decode benchmark (one device call; needs an H100/H200).
#
#   bench/decode.sh                   all of the below
#   MODELS="qwen3-0.6b" BATCHES="1 8" SCHEDS="static kbk graph" PEERS=hand BUDGET_S=300 bench/decode.sh
#
# For each model and batch (ctx 512), ONE `evtc decode` process (weights
# generated and uploaded once) times every schedule in SCHEDS on the same step:
#   the first with --sched, the others with --also, so every ratio below comes
#   from one process on one device:
#   static / dynamic / unfused  the persistent megakernel
#   kbk                         the same tiles launched kernel by kernel
#                               (one launch per call, a block per task)
#   graph                       those launches captured in a CUDA graph
#   (ms/token: 20 back-to-back launches of one step, CUDA events, tensors
#   resident on the device; --also also compares each schedule's logits and
#   next tokens with the first schedule's.)
# Then the PyTorch peers (bench/peers/torch_qwen3.py; PEERS=none skips them;
# the default, hand, is the hand-written model in one CUDA graph; PEERS=hand,hfgraph
# adds the compiled Hugging Face model, 1.5-3 minutes of torch.compile per row).
# The compiled peers run first, PEER_JOBS cells at a time (default all of
# them, 4 on a device of less than 120 GB): every process of a wave compiles and warms up
# at once, then they time one after another with the GPU otherwise idle
# (torch_qwen3.py --turn), so their compile minutes overlap instead of adding.
# Compiled this way two cells' peers measured 6-8% faster than compiled alone
# (PEER_JOBS=1; bench/RESULTS.md, session 69): compare peer figures only
# with ones compiled the same way.
# and the floor: weight bytes per step / cudaMemcpy D2D bandwidth (read +
# write bytes per second, measured in this run by bench/tiles --copy-only),
# and beside it the floor with the KV cache's bytes the timed step reads
# (evtc decode's "KV cache ... GB/step"), which from batch 32 is a sixth to
# a third more at context 512.
# FLOOR=none: no copy-bandwidth run (and no tilebench build, minutes of nvcc
# on a bare machine): the floor columns stay empty.
# EXTRA: more `evtc decode` arguments for every run (an ablation, e.g.
# EXTRA=--stream). BUDGET_S: no new run starts after this many seconds
# (results so far are kept). Writes $OUT/decode_results.md (or /tmp/evt-decode/) and adds it
# to bench/RESULTS.md as the newest section (bench/results_add.sh).
set -u
cd "$(dirname "$0")/.."
LOG=${OUT:-/tmp/evt-decode}
mkdir -p "$LOG"
MODELS=${MODELS:-"qwen3-0.6b qwen3-8b"}
BATCHES=${BATCHES:-"1 8 32 64"}
SCHEDS=${SCHEDS:-"static dynamic unfused hybrid kbk graph"}
PEERS=${PEERS:-hand}
CTX=${CTX:-512}
STEPS=${STEPS:-2}
BUDGET_S=${BUDGET_S:-3000}
EVT_TIMEOUT=${EVT_TIMEOUT:-300}
EXTRA=${EXTRA:-}
TAG=$(echo "$EXTRA" | tr -c 'a-zA-Z0-9\n' _)
T0=$(date +%s)
left() { echo $((BUDGET_S - ($(date +%s) - T0))); }
make -j16 build/evtc build/libevtc.a > "$LOG/decode_build.log" 2>&1 || { echo "build failed"; tail -20 "$LOG/decode_build.log"; exit 1; }
FLOOR=${FLOOR:-measure}
if [ "$FLOOR" != none ] && [ ! -x build/tilebench ]; then
    nvcc -gencode=arch=compute_90a,code=sm_90a -std=c++17 -O3 -Isrc -Iinclude bench/tiles/tilebench.cu build/libevtc.a \
        -o build/tilebench -lm >> "$LOG/decode_build.log" 2>&1 || { echo "tilebench build failed"; exit 1; }
fi
DEV=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || echo unknown)
COPY=""
[ "$FLOOR" = none ] || COPY=$(build/tilebench --copy-only | awk '/^COPY_GBS/ {print $2}')
MAIN=${SCHEDS%% *}
ALSO=$(echo "$SCHEDS" | cut -s -d' ' -f2- | tr ' ' ,)
SEC=$LOG/decode_results$TAG.md
# The compiled peers (hf, hfgraph in PEERS): waves of PEER_JOBS processes that
# compile at once and time in turn; each cell's lines in $LOG/peers_hf_M_bB.txt.
HF_PEERS=$(echo "$PEERS" | tr , '\n' | grep -E '^(hf|hfgraph)$' | tr '\n' ' ')
PLAIN_PEERS=$(echo "$PEERS" | tr , '\n' | grep -vE '^(hf|hfgraph|none)$' | paste -sd, -)
CELLS=""
for m in $MODELS; do for b in $BATCHES; do CELLS="$CELLS $m:$b"; done; done
NCELLS=$(echo $CELLS | wc -w)
GPU_MIB=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits 2>/dev/null | head -1)
if [ -z "${PEER_JOBS:-}" ]; then # all at once on an H200 (qwen3-8b's peer holds ~20 GB), 4 on less
    PEER_JOBS=$NCELLS
    [ "${GPU_MIB:-0}" -ge 120000 ] || PEER_JOBS=4
fi
run_hf_wave() { # cells of one wave: compile at once, then time one at a time
    local turn=$LOG/turns pids="" c m b
    mkdir -p "$turn"
    local threads=$(( $(nproc) / $# )); [ "$threads" -ge 1 ] || threads=1
    for c in "$@"; do
        m=${c%%:*}; b=${c##*:}
        rm -f "$LOG/peers_hf_${m}_b$b.txt"
        for p in $HF_PEERS; do
            rm -f "$turn/${m}_b${b}_$p".*
            TORCHINDUCTOR_COMPILE_THREADS=$threads timeout 900 python3 bench/peers/torch_qwen3.py --model "$m" --batch "$b" \
                --ctx "$CTX" --steps 30 --peers "$p" --turn "$turn/${m}_b${b}_$p" >> "$LOG/peers_hf_${m}_b$b.txt" 2>&1 &
            pids="$pids $!:$turn/${m}_b${b}_$p"
        done
    done
    for e in $pids; do # every process ready to time (or ended)
        while kill -0 "${e%%:*}" 2>/dev/null && [ ! -e "${e#*:}.ready" ]; do sleep 1; done
    done
    echo "compiled peers ready: $* ($(( $(date +%s) - T0 )) s)"
    for e in $pids; do # one at a time
        touch "${e#*:}.go"
        wait "${e%%:*}"
    done
}
if [ -n "$HF_PEERS" ]; then
    wave=()
    for c in $CELLS; do
        wave+=("$c")
        if [ "${#wave[@]}" -ge "$PEER_JOBS" ]; then run_hf_wave "${wave[@]}"; wave=(); fi
    done
    [ "${#wave[@]}" -eq 0 ] || run_hf_wave "${wave[@]}"
fi
# the tree measured: git's HEAD can be stale where the working tree was
# copied without its history (the device machine), so also a hash of src/
# (what the kernels and evtc are built from), comparable with
# `find src -type f | LC_ALL=C sort | xargs cat | sha256sum` on the workstation
SRC_HASH=$(find src -type f | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-12)
{
    echo "## Qwen3 decode — $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "Device: $DEV. cudaMemcpy D2D bandwidth (read + write): ${COPY:-not measured (FLOOR=none)} GB/s. Command: \`bench/decode.sh\`"
    echo "(MODELS=\"$MODELS\" BATCHES=\"$BATCHES\" SCHEDS=\"$SCHEDS\" PEERS=$PEERS${HF_PEERS:+ PEER_JOBS=$PEER_JOBS} CTX=$CTX STEPS=$STEPS${EXTRA:+ EXTRA=\"$EXTRA\"}$([ "$FLOOR" = none ] && echo " FLOOR=none"); commit $(git rev-parse --short HEAD 2>/dev/null || echo ?), src/ sha256 $SRC_HASH)."
    echo "One process per row: \`evtc decode --model M --batch B --ctx $CTX --steps $STEPS --backend cuda --sched $MAIN${ALSO:+ --also $ALSO}${EXTRA:+ $EXTRA}\`;"
    echo "ms/token = 20 back-to-back launches of one decode step, CUDA events, tensors resident on the device."
    echo "kbk = the same tiles, one kernel launch per call; graph = those launches in a CUDA graph (captured once per batch size)."
    echo "Floor: weight bytes per step / copy bandwidth (with the KV cache: weight and cache bytes the timed step reads). \"x graph\" = graph time / $MAIN time (above 1: the megakernel is faster)."
    echo
    hdr="| model | B |"; sep="|---|---|"
    for s in $SCHEDS; do hdr="$hdr $s |"; sep="$sep---|"; done
    echo "$hdr x graph | outputs vs $MAIN | torch peer | floor | $MAIN % of floor | floor with the KV cache | $MAIN % of it |"
    echo "$sep---|---|---|---|---|---|---|"
} > "$SEC"
for m in $MODELS; do
    for b in $BATCHES; do
        if [ "$(left)" -le 0 ]; then echo "| $m | $b | (time budget spent) |" >> "$SEC"; continue; fi
        out="$LOG/decode_${m}_b${b}$TAG.log"
        timeout "$EVT_TIMEOUT" build/evtc decode --model "$m" --batch "$b" --ctx "$CTX" --steps "$STEPS" --backend cuda \
            --sched "$MAIN" ${ALSO:+--also "$ALSO"} $EXTRA > "$out" 2>&1
        row="| $m | $b |"
        main_ms=$(grep -o "$MAIN schedule on cuda: [0-9.]* ms/token" "$out" | head -1 | awk '{print $5}')
        graph_ms=""
        outs=""
        for s in $SCHEDS; do
            ms=$(grep -o " $s schedule on cuda: [0-9.]* ms/token" "$out" | head -1 | awk '{print $5}')
            [ "$s" = graph ] && graph_ms=$ms
            row="$row ${ms:-fail} |"
            [ "$s" = "$MAIN" ] && continue
            e=$(grep " $s schedule on cuda" "$out" | grep -o 'logits within [0-9.e+-]*' | awk '{print $3}')
            nd=$(grep " $s schedule on cuda" "$out" | grep -o '[0-9]* next tokens differ' | awk '{print $1}')
            [ -n "$e" ] && outs="$outs${outs:+; }$s $e, $nd differ"
        done
        xg=""
        [ -n "$graph_ms" ] && [ -n "$main_ms" ] && xg=$(awk -v g="$graph_ms" -v s="$main_ms" 'BEGIN {printf "%.2f", g / s}')
        wgb=$(grep -o 'weights [0-9.]* GB/step' "$out" | head -1 | awk '{print $2}')
        kvgb=$(grep -o 'KV cache [0-9.]* GB/step' "$out" | head -1 | awk '{print $3}')
        floor=""; pct=""; floorkv=""; pctkv=""
        if [ -n "$wgb" ] && [ -n "$COPY" ]; then
            floor=$(awk -v w="$wgb" -v c="$COPY" 'BEGIN {printf "%.3f", w / c * 1000}')
            [ -n "$main_ms" ] && pct=$(awk -v f="$floor" -v s="$main_ms" 'BEGIN {printf "%.0f%%", 100 * f / s}')
            if [ -n "$kvgb" ]; then
                floorkv=$(awk -v w="$wgb" -v k="$kvgb" -v c="$COPY" 'BEGIN {printf "%.3f", (w + k) / c * 1000}')
                [ -n "$main_ms" ] && pctkv=$(awk -v f="$floorkv" -v s="$main_ms" 'BEGIN {printf "%.0f%%", 100 * f / s}')
            fi
        fi
        if [ -n "$PLAIN_PEERS" ] && [ "$(left)" -gt 0 ]; then
            timeout 420 python3 bench/peers/torch_qwen3.py --model "$m" --batch "$b" --ctx "$CTX" --steps 30 --peers "$PLAIN_PEERS" \
                > "$LOG/peers_${m}_b$b.txt" 2>&1
        fi
        peer=$(cat "$LOG/peers_${m}_b$b.txt" "$LOG/peers_hf_${m}_b$b.txt" 2>/dev/null | grep "^PEER .* $m B=$b " |
            awk '{printf "%s%s %s ms", sep, $2, $6; sep="; "}')
        echo "$row ${xg:-–} | ${outs:-–} | ${peer:-–} | ${floor:-–} | ${pct:-–} | ${floorkv:-–} | ${pctkv:-–} |" >> "$SEC"
        cat "$SEC" | tail -1
    done
done
cat "$SEC"
bench/results_add.sh "$SEC"
