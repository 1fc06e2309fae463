#!/bin/sh
# demo.sh — compile + run: the MoE toy (data-dependent events) and the split
# row sum, ahead of time into artifacts, then launched under the static,
# dynamic and unfused schedules and checked against the sequential reference.
set -e
EVTC=build/evtc
if $EVTC run examples/split_rowsum.evt --backend cuda --set n=1 >/dev/null 2>&1; then
    target=cuda; backend=cuda
else
    target=c; backend=cpu
    echo "demo: no usable GPU here; running the CPU target (worker threads, same protocol)"
fi
for ex in moe_toy split_rowsum; do
    echo "== $ex: evtc compile --target $target"
    $EVTC compile examples/$ex.evt --target $target -o build/$ex.evtm
    for sched in static dynamic unfused; do
        $EVTC run build/$ex.evtm --sched $sched --check --trace build/$ex-$sched.json | grep -E "^ran|^check"
    done
done
echo "== traces in build/*.json: open them in https://ui.perfetto.dev"
