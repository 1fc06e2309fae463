#!/bin/bash
# bench/spills.sh — ptxas's register spills in a decode megakernel, per
# function, on a machine without a GPU (needs nvcc). The persistent kernel
# calls every tile as a function inside one register budget (255 per thread,
# one 256-thread block per SM), so adding a form to one tile can make ptxas
# spill in another (bench/RESULTS.md, sessions 10, 19, 20): run this before
# spending device time on a tile change.
#
#   bench/spills.sh [MODEL] [nvcc flags...]
#     MODEL      qwen3-0.6b | qwen3-8b | CONFIG.json (default examples/qwen3-tiny.json:
#                the tiles are the same code for every model, and it compiles fastest)
#     flags      e.g. -DEVT_LLM_ATTN_RS=2 (passed as EVT_NVCCFLAGS)
#   EVT_SRC_DIR=DIR bench/spills.sh   the device and tile headers of another tree
#
# Prints one line per function with spills (name, stack frame, spill stores
# and loads) and the kernels' register counts; "no spills" when none.
# Compiles with the runtime's own nvcc command (evtc decode with the kernel
# cache off and EVT_NVCC_LOG), so the figures are those of the real kernel.
set -u
cd "$(dirname "$0")/.."
model=examples/qwen3-tiny.json
case "${1:-}" in -*|"") ;; *) model=$1; shift ;; esac
make -s build/evtc || exit 1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
EVT_CACHE_DIR=off EVT_NVCC_LOG="$log" EVT_NVCCFLAGS="-Xptxas -v $*" \
    build/evtc decode --model "$model" --batch 1 --ctx 16 --steps 1 --backend cuda > /dev/null 2>&1
if ! grep -q 'Used [0-9]* registers' "$log"; then
    echo "spills.sh: no ptxas report (is nvcc on PATH? try: build/evtc decode --model $model --backend cuda)" >&2
    exit 1
fi
awk '/Compiling entry function|Function properties for/ { f = $NF; gsub(/[\047]/, "", f) }
     /bytes spill stores/ { if ($5 != "0" || $9 != "0") { print f ": " $0; n++ } }
     /Used [0-9]+ registers/ && f ~ /^evt_(call_)?kernel$/ { print f ": " $0 }
     END { if (!n) print "no spills" }' "$log" | sed 's/ptxas info *: //; s/  */ /g' | sort -u
