#!/bin/bash
# bench/sched.sh — scheduling benchmarks of the GPU megakernel (one device call).
#
#   bench/sched.sh        needs an H100/H200; writes $OUT/sched_results.md (or
#                         /tmp/evt-bench/) and adds the same section to bench/RESULTS.md
#                         as the newest one (bench/results_add.sh)
#
# Measures (method: /work/.library/device/METHOD.md — warm-up, CUDA events
# around back-to-back launches, median of 5):
#   - dependency handoff per edge (chain of dependent tiny tasks, static and
#     dynamic) vs a raw release/acquire ping-pong between two SMs, one kernel
#     launch per task, and a CUDA graph of those launches (bench/baselines.cu)
#   - ready-queue throughput (many independent tiny tasks)
#   - split row sum n = 1 .. 16384: megakernel static/dynamic/unfused vs two
#     kernels launched vs the same two kernels in a CUDA graph
#   - imbalanced tasks: makespan static vs dynamic vs ideal
#   - module load and first-launch time
set -eu
cd "$(dirname "$0")/.."
LOG=${OUT:-/tmp/evt-bench}
mkdir -p "$LOG"
make -j16 build/libevtc.a > "$LOG/bench_build.log" 2>&1
cc -O2 -std=c11 -Wall -Wextra -D_GNU_SOURCE -Iinclude -Isrc bench/schedbench.c build/libevtc.a -o build/schedbench $(make -s print-ldlibs)
nvcc -gencode=arch=compute_90a,code=sm_90a -std=c++17 -O3 -Isrc bench/baselines.cu -o build/baselines
DEV=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo unknown)
SEC=$LOG/sched_results.md
{
    echo "## Scheduling benchmarks — $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo "Device: $DEV (nvcc $(nvcc --version | grep -o 'release [0-9.]*')). Command: \`bench/sched.sh\` (commit $(git rev-parse --short HEAD 2>/dev/null || echo ?), working tree may differ)."
    echo
    echo "### Baselines (bench/baselines.cu)"
    echo
    echo '```'
    build/baselines 1024
    echo '```'
    echo
    build/schedbench examples
} > "$SEC" 2>&1
cat "$SEC"
bench/results_add.sh "$SEC"
