#!/bin/bash
# bench/spills.sh — ptxas's register spills in a decode megakernel, per
# function, on a machine without a GPU (needs nvcc). The persistent kernel
# calls every tile as a function inside one register budget (255 per thread,
# one 256-thread block per SM), so adding a form to one tile can make ptxas
# spill in another (bench/RESULTS.md, sessions 10, 19, 20): run this before
# spending device time on a tile change. tests/gpu/run.sh's spill gate reads
# its output.
#
#   bench/spills.sh [MODEL] [--stream|--no-early-loads ...] [nvcc flags...]
#     MODEL      qwen3-0.6b | qwen3-8b | CONFIG.json (default examples/qwen3-tiny.json:
#                the tiles are the same code for every model, and it compiles fastest)
#     --OPTION [VALUE]  passed to evtc decode (the build variant; --batch 64:
#                the large-batch program), the value of --batch, --norms, --define,
#                --splits, --tiles, --page, --tma-ring, --workers, --dn-slices,
#                --o-slices, --lm-waves and --attn-rows with it
#     flags      e.g. -DEVT_LLM_ATTN_RS=2 (passed as EVT_NVCCFLAGS)
#   EVT_SRC_DIR=DIR bench/spills.sh   the device and tile headers of another tree
#
# Prints "ENTRY FUNCTION: S bytes spill stores, L bytes spill loads" for each
# function that spills under a kernel entry (evt_kernel: the persistent
# kernel; evt_call_kernel: the kernel-by-kernel one, which clones the tiles
# under another allocation), then the entries' register counts; "no spills"
# when none. Compiles with the runtime's own nvcc command (evtc decode with
# the kernel cache off and EVT_NVCC_LOG), so the figures are the real kernel's.
set -u
cd "$(dirname "$0")/.."
model=examples/qwen3-tiny.json
case "${1:-}" in -*|"") ;; *) model=$1; shift ;; esac
evtc_flags=() nvcc_flags=()
value=0 # the previous argument was an evtc option that takes a value
for a in "$@"; do
    if [ $value = 1 ]; then evtc_flags+=("$a"); value=0; continue; fi
    case "$a" in
        --batch|--norms|--define|--splits|--tiles|--page|--tma-ring|--workers|--dn-slices|--o-slices|--lm-waves|--attn-rows) evtc_flags+=("$a"); value=1 ;;
        --*) evtc_flags+=("$a") ;;
        *) nvcc_flags+=("$a") ;;
    esac
done
make -s build/evtc || exit 1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
EVT_CACHE_DIR=off EVT_NVCC_LOG="$log" EVT_NVCCFLAGS="-Xptxas -v ${nvcc_flags[*]}" \
    build/evtc decode --model "$model" --batch 1 --ctx 16 --steps 1 --backend cuda "${evtc_flags[@]}" > /dev/null 2>&1
if ! grep -q 'Used [0-9]* registers' "$log"; then
    echo "spills.sh: no ptxas report (is nvcc on PATH? try: build/evtc decode --model $model --backend cuda)" >&2
    exit 1
fi
awk '/Compiling entry function/ { entry = $0; sub(/.*function .\047?/, "", entry); sub(/\047.*/, "", entry); fn = entry; next }
     /Function properties for/ { fn = $NF; next }
     /bytes spill stores/ { split($0, a, ","); s = a[2] + 0; l = a[3] + 0
                            if (s || l) { printf "%s %s: %d bytes spill stores, %d bytes spill loads\n", entry, fn, s, l; n++ } }
     /Used [0-9]+ registers/ { r = $0; sub(/.*: /, "", r); regs[entry] = r }
     END { for (e in regs) printf "%s: %s\n", e, regs[e]; if (!n) print "no spills" }' "$log"
