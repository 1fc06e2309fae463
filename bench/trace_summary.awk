# bench/trace_summary.awk — per-call breakdown of an evtc Chrome trace (evtc run/decode --trace).
#   awk -F'"' -f bench/trace_summary.awk trace.json | sort -k5 -n -r
# Calls are grouped by name with the layer prefix (l12_) stripped: tasks, summed
# task time (busy), summed span of each call (first start to last end), mean task time.
/"ph": "X"/ {
  full=$8; cat=full; sub(/^l[0-9]+_/,"",cat)
  match($0,/"ts": [0-9.]+/); ts=substr($0,RSTART+6,RLENGTH-6)+0
  match($0,/"dur": [0-9.]+/); d=substr($0,RSTART+7,RLENGTH-7)+0
  n[cat]++; s[cat]+=d
  if (!(full in lo) || ts < lo[full]) lo[full]=ts
  if (ts+d > hi[full]) hi[full]=ts+d
  kind[full]=cat
  if (ts+d > end) end=ts+d
}
END {
  for (f in lo) span[kind[f]]+=hi[f]-lo[f]
  printf "makespan %.1f us\n", end
  for (c in n) printf "%-14s tasks %7d  busy %11.1f us  span %9.1f us  mean %7.2f us\n", c, n[c], s[c], span[c], s[c]/n[c]
}
