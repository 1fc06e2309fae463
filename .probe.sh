#!/bin/bash
export EVT_CACHE_DIR=$PWD/build/kcache
make -j16 build/libevtc.a build/evtc > $OUT/build.log 2>&1 || exit 1
cc -O2 -std=c11 -Wall -Wextra -D_GNU_SOURCE -Iinclude -Isrc bench/schedbench.c build/libevtc.a -o build/schedbench $(make -s print-ldlibs)
timeout 120 build/schedbench examples 2>&1 | grep -E "^\| (static|dynamic|dynamic, early push) \||^\| 132000 \| 0 \| (static|dynamic) \||^\| (1|16384) \||^\| (ideal|static \(rr\)|dynamic) "
D="timeout 200 build/evtc decode --ctx 512 --steps 2 --backend cuda --sched static"
for m in qwen3-0.6b qwen3-8b; do for b in 1 64; do $D --model $m --batch $b --also graph,unfused 2>&1 | grep "schedule on"; done; done
