#!/bin/bash
# bench/decode.sh — Qwen3 decode benchmark (one device call; needs an H100/H200).
#
#   bench/decode.sh                   all of the below
#   MODELS="qwen3-0.6b" BATCHES="1 8" SCHEDS="static" PEERS=hand,hf bench/decode.sh
#
# For each model and batch (ctx 512):
#   - evtc decode --backend cuda --sched static|dynamic|unfused: ms/token as the
#     driver prints it (20 back-to-back launches of one step, CUDA events),
#     weight bytes per step
#   - the PyTorch peers (bench/peers/torch_qwen3.py: HF + torch.compile CUDA
#     graphs if transformers is installed; hand-written model in a CUDA graph)
#   - the bandwidth floor: weight bytes per step / cudaMemcpy D2D bandwidth
#     (read + write bytes per second, measured in this run by bench/tiles)
#   - kernel-by-kernel: the sum of per-tile kernel times of one step
#     (bench/tiles: each llm.cuh tile as its own kernel, one block per task)
# Writes $OUT/decode_results.md (or /tmp/evt-decode/) and appends it as a new
# section to bench/RESULTS.md.
set -u
cd "$(dirname "$0")/.."
LOG=${OUT:-/tmp/evt-decode}
mkdir -p "$LOG"
MODELS=${MODELS:-"qwen3-0.6b qwen3-8b"}
BATCHES=${BATCHES:-"1 8 32 64"}
SCHEDS=${SCHEDS:-"static dynamic unfused"}
PEERS=${PEERS:-hf,hand}
CTX=${CTX:-512}
STEPS=${STEPS:-16}
EVT_TIMEOUT=${EVT_TIMEOUT:-600}
make -j16 build/evtc > "$LOG/decode_build.log" 2>&1 || { echo "build failed"; tail -20 "$LOG/decode_build.log"; exit 1; }
cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -c src/tiles/llm.c -o build/tilebench_llm.o
nvcc -gencode=arch=compute_90a,code=sm_90a -std=c++17 -O3 -Isrc -Iinclude bench/tiles/tilebench.cu build/tilebench_llm.o \
    -o build/tilebench -lm >> "$LOG/decode_build.log" 2>&1 || { echo "tilebench build failed"; exit 1; }
DEV=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || echo unknown)
COPY=$(build/tilebench --copy-only | awk '/^COPY_GBS/ {print $2}')
declare -A KBK
for m in $MODELS; do
    flag=--no-8b; [ "$m" = qwen3-8b ] && flag=--8b-only
    [ "$m" = qwen3-0.6b ] || [ "$m" = qwen3-8b ] || continue
    build/tilebench $flag --ctx "$CTX" $BATCHES > "$LOG/tiles_$m.txt" 2>&1
    while read -r _ name b _ st; do KBK["$name ${b#B=}"]=${st#step_us=}; done < <(grep '^KBK' "$LOG/tiles_$m.txt")
done
SEC=$LOG/decode_results.md
{
    echo "## Qwen3 decode — $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "Device: $DEV. cudaMemcpy D2D bandwidth (read + write): ${COPY} GB/s. Command: \`bench/decode.sh\`"
    echo "(MODELS=\"$MODELS\" BATCHES=\"$BATCHES\" SCHEDS=\"$SCHEDS\" CTX=$CTX STEPS=$STEPS; commit $(git rev-parse --short HEAD 2>/dev/null || echo ?), working tree may differ)."
    echo "evtc: \`evtc decode --model M --batch B --ctx $CTX --steps $STEPS --backend cuda --sched S\` (on the GPU the driver's ms/token"
    echo "is 20 back-to-back launches of one decode step timed with CUDA events, tensors resident on the device)."
    echo "Floor: weight bytes per step / copy bandwidth. Kernel-by-kernel: sum of bench/tiles per-tile kernel times"
    echo "(CUDA events around back-to-back launches, best of 5 x 20; launch gaps not included). ms per token = ms per step."
    echo
    echo "| model | B | evtc static | evtc dynamic | evtc unfused | torch peers | kernel-by-kernel | floor |"
    echo "|---|---|---|---|---|---|---|---|"
} > "$SEC"
for m in $MODELS; do
    python3 bench/peers/torch_qwen3.py --model "$m" --batch "$(echo $BATCHES | tr ' ' ,)" --ctx "$CTX" --steps 30 --peers "$PEERS" \
        > "$LOG/peers_$m.txt" 2>&1
    for b in $BATCHES; do
        row="| $m | $b |"
        wgb=""
        for s in static dynamic unfused; do
            if ! echo " $SCHEDS " | grep -q " $s "; then row="$row – |"; continue; fi
            out="$LOG/decode_${m}_b${b}_$s.log"
            timeout "$EVT_TIMEOUT" build/evtc decode --model "$m" --batch "$b" --ctx "$CTX" --steps "$STEPS" --backend cuda --sched "$s" \
                > "$out" 2>&1
            ms=$(grep -o '[0-9.]* ms/token' "$out" | head -1 | awk '{print $1}')
            w=$(grep -o 'weights [0-9.]* GB/step' "$out" | head -1 | awk '{print $2}')
            [ -n "$w" ] && wgb=$w
            row="$row ${ms:-fail} |"
        done
        peers=$(grep "^PEER .* $m B=$b " "$LOG/peers_$m.txt" | awk '{printf "%s%s %s ms", sep, $2, $6; sep="; "}')
        kbk=${KBK["$m $b"]:-}
        [ -n "$kbk" ] && kbk=$(awk -v u="$kbk" 'BEGIN {printf "%.3f", u / 1000}')
        floor=""
        [ -n "$wgb" ] && [ -n "$COPY" ] && floor=$(awk -v w="$wgb" -v c="$COPY" 'BEGIN {printf "%.3f", w / c * 1000}')
        echo "$row ${peers:-–} | ${kbk:-–} | ${floor:-–} |" >> "$SEC"
    done
done
{
    echo
    echo "Per-tile details (bench/tiles): $(ls "$LOG"/tiles_*.txt 2>/dev/null | xargs -n1 basename | tr '\n' ' ')in the run's output folder."
} >> "$SEC"
cat "$SEC"
if [ -f bench/RESULTS.md ]; then echo >> bench/RESULTS.md; fi
cat "$SEC" >> bench/RESULTS.md
