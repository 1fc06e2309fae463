#!/bin/bash
# bench/tiles/run.sh — build and run the per-tile harness (needs an H100/H200).
#   bench/tiles/run.sh [B ...] [--no-8b] [--8b-only] [--ctx N]    (default B = 1 8 64, ctx 512)
set -eu
cd "$(dirname "$0")/../.."
mkdir -p build
cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -c src/tiles/llm.c -o build/tilebench_llm.o
nvcc -gencode=arch=compute_90a,code=sm_90a -std=c++17 -O3 -lineinfo -Isrc -Iinclude bench/tiles/tilebench.cu build/tilebench_llm.o \
    -o build/tilebench -lm
exec build/tilebench "$@"
