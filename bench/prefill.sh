#!/bin/bash
# bench/prefill.sh — a prompt into the KV cache: the prefill program (rows
# of up to 128 prompt tokens a launch; evtc decode's default with prompts)
# against the decode program fed one prompt token a step (--prompt-steps).
# One device call (an H100/H200); the kernels come from the kernel cache
# when EVT_CACHE_DIR holds them.
#
#   bench/prefill.sh                 MODELS="qwen3-0.6b qwen3-8b" LENS=512 BATCHES=1
#
# Each cell is two `evtc decode --backend cuda --prompts FILE --steps 4`
# processes with random prompt ids; the table gives, per form, the wall clock
# until the first generated token is out (the prefill's launches and the
# first step, or the prompt's steps and the first generated one), each
# launch with its copies: the prefill module uploads its own copy of the
# weights in its first launch (the two modules share no device memory), and
# the steps' first launch uploads the decode module's. Logs and a
# results.txt under $OUT (or /tmp/evt-prefill).
set -u
cd "$(dirname "$0")/.."
LOG=${OUT:-/tmp/evt-prefill}/prefill
mkdir -p "$LOG"
make -j16 build/evtc > "$LOG/build.log" 2>&1 || { echo "build failed"; tail -20 "$LOG/build.log"; exit 1; }
RES=$LOG/results.txt
echo "model batch prompt | prefill: launches, wall ms, first launch ms, kernels ms, first step ms, to first token ms | per step: first ms, others ms, kernel ms/token, to first token ms | speedup to the first token, kernels" | tee "$RES"
for model in ${MODELS:-qwen3-0.6b qwen3-8b}; do
    for b in ${BATCHES:-1}; do
        for n in ${LENS:-512}; do
            tag=$(basename "$model" .json)-b$b-n$n
            pf=$LOG/$tag.prompts
            : > "$pf"
            for k in $(seq 1 "$b"); do
                awk -v n="$n" -v s="$k" 'BEGIN { srand(s); for (i = 0; i < n; i++) printf "%d%s", int(rand() * 150000), i + 1 < n ? "," : "\n" }' >> "$pf"
            done
            base=$LOG/$tag
            timeout 580 build/evtc decode --model "$model" --batch "$b" --steps 4 --prompts "$pf" --backend cuda > "$base-prefill.log" 2>&1
            timeout 580 build/evtc decode --model "$model" --batch "$b" --steps 4 --prompts "$pf" --backend cuda --prompt-steps \
                > "$base-steps.log" 2>&1
            # prefill: its wall clock, then the first decode step; per step: the first launch, then n - 1 more to the first generated token
            awk -v model="$model" -v b="$b" -v n="$n" '
                FILENAME ~ /-prefill.log$/ && /^decode: prefilled/ { for (i = 1; i <= NF; i++) { if ($i == "in" && !L) L = $(i + 1); if ($i == "ms" && !P) P = $(i - 1) }
                                                                     match($0, /launch [0-9.]+ ms/); P1 = substr($0, RSTART + 7, RLENGTH - 10);
                                                                     match($0, /kernels [0-9.]+ ms/); K = substr($0, RSTART + 8, RLENGTH - 11) }
                FILENAME ~ /-steps.log$/ && /ms\/token/ { match($0, /[0-9.]+ ms\/token/); T = substr($0, RSTART, RLENGTH - 9) }
                FILENAME ~ /-prefill.log$/ && /steps on the wall clock/ { match($0, /the first [0-9.]+/); F1 = substr($0, RSTART + 10, RLENGTH - 10) }
                FILENAME ~ /-steps.log$/ && /steps on the wall clock/ { match($0, /the first [0-9.]+/); S1 = substr($0, RSTART + 10, RLENGTH - 10);
                                                                       match($0, /the others [0-9.]+/); S2 = substr($0, RSTART + 11, RLENGTH - 11) }
                END { a = P + F1; s = S1 + (n - 1) * S2;
                      printf "%s %s %s | %s, %.1f, %.1f, %.1f, %.1f, %.1f | %.1f, %.3f, %.3f, %.1f | %.2fx, %.2fx\n", model, b, n, L, P, P1, K, F1, a,
                             S1, S2, T, s, (a > 0 ? s / a : 0), (K > 0 ? (n - 1) * T / K : 0) }' \
                "$base-prefill.log" "$base-steps.log" | tee -a "$RES"
            grep -h "^generated\|^decode .*ms/token" "$base-prefill.log" "$base-steps.log" | sed 's/^/    /' | tee -a "$RES"
        done
    done
done
