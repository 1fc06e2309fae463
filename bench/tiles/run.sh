#!/bin/bash
# bench/tiles/run.sh — build and run the per-tile harness (needs an H100/H200).
#   bench/tiles/run.sh [B ...] [--no-8b] [--8b-only] [--ctx N]    (default B = 1 8 64, ctx 512)
#   TB_NVCCFLAGS=-DEVT_ATTN_PROF bench/tiles/run.sh ...          also the attention's phases (tilebench.cu)
#   TB_NVCCFLAGS=-DEVT_TMA_PROF bench/tiles/run.sh ...           also the TMA GEMV ring stages' stamps (batch 17-64;
#                                                                with -DEVT_TMA_TWO_HALVES too, batch 65-128)
set -eu
cd "$(dirname "$0")/../.."
mkdir -p build
make -s build/libevtc.a # the C references (src/tiles/llm.c) and the runtime's TMA maps (src/runtime/tmaps.c)
nvcc -gencode=arch=compute_90a,code=sm_90a -std=c++17 -O3 -lineinfo ${TB_NVCCFLAGS:-} -Isrc -Iinclude bench/tiles/tilebench.cu build/libevtc.a \
    -o build/tilebench -lm
exec build/tilebench "$@"
