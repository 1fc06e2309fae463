# bench/trace_layer.awk — the timeline of one layer's calls in an evtc Chrome trace.
#   awk -F'"' -v layer=10 -f bench/trace_layer.awk trace.json
# For each call named l<layer>_* (and the next layer's first call), in start
# order: tasks, first start and last end relative to the layer's first task,
# mean and max task time, the gap between the previous call's last end and
# this call's first start (the handoff latency on the critical path), and the
# mean time a task spent between its leader taking it and the end of its
# waits (args.wait_us: dispatch, argument building and waits), the mean
# time of its release fence and notifies (args.notify_us), and the mean of
# args.late_us (start - max(taken, last producer notified): the protocol's
# cost with the real waiting taken out; "-" for calls without producers).
#   -v detail=l10_at  also lists that call's tasks: worker, start, end, and the
#   task the same worker ran before it (what it was doing until then)
/"ph": "X"/ {
  c=$8
  match($0,/"tid": [0-9]+/); tid=substr($0,RSTART+7,RLENGTH-7)+0
  match($0,/"ts": [0-9.]+/); ts0=substr($0,RSTART+6,RLENGTH-6)+0
  match($0,/"dur": [0-9.]+/); d0=substr($0,RSTART+7,RLENGTH-7)+0
  na++; an[na]=$4; at[na]=tid; as[na]=ts0; ae[na]=ts0+d0; ac[na]=c
  if (index(c, "l" layer "_") != 1 && c != "l" (layer + 1) "_n1") next
  match($0,/"ts": [0-9.]+/); ts=substr($0,RSTART+6,RLENGTH-6)+0
  match($0,/"dur": [0-9.]+/); d=substr($0,RSTART+7,RLENGTH-7)+0
  if (match($0,/"wait_us": [0-9.]+/)) wt[c]+=substr($0,RSTART+11,RLENGTH-11)+0
  if (match($0,/"notify_us": [0-9.]+/)) nt[c]+=substr($0,RSTART+13,RLENGTH-13)+0
  if (match($0,/"late_us": [0-9.]+/)) { lt[c]+=substr($0,RSTART+11,RLENGTH-11)+0; nl[c]++ }
  if (!(c in lo) || ts < lo[c]) lo[c]=ts
  if (ts+d > hi[c]) hi[c]=ts+d
  n[c]++; s[c]+=d; if (d > mx[c]) mx[c]=d
}
END {
  t0=-1; for (c in lo) if (t0 < 0 || lo[c] < t0) t0=lo[c]
  k=0; for (c in lo) order[k++]=c
  for (i=0;i<k;i++) for (j=i+1;j<k;j++) if (lo[order[j]] < lo[order[i]]) { t=order[i]; order[i]=order[j]; order[j]=t }
  printf "%-14s %6s %9s %9s %8s %8s %8s %8s %8s %8s\n", "call", "tasks", "start", "end", "gap", "mean", "max", "wait", "notify", "late"
  prev=-1
  for (i=0;i<k;i++) { c=order[i]
    printf "%-14s %6d %9.2f %9.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8s\n", c, n[c], lo[c]-t0, hi[c]-t0, prev < 0 ? 0 : lo[c]-prev, s[c]/n[c], mx[c], wt[c]/n[c], nt[c]/n[c], nl[c] ? sprintf("%.2f", lt[c]/nl[c]) : "-"
    if (hi[c] > prev) prev=hi[c] }
  if (detail != "") {
    printf "\n%-22s %6s %9s %9s   previous task on the worker (end)\n", "task", "worker", "start", "end"
    for (i=1;i<=na;i++) if (ac[i] == detail) {
      best=0; for (j=1;j<=na;j++) if (at[j]==at[i] && j!=i && ae[j] <= as[i] + 0.001 && (best==0 || ae[j] > ae[best])) best=j
      printf "%-22s %6d %9.2f %9.2f   %s (%.2f)\n", an[i], at[i], as[i]-t0, ae[i]-t0, best ? an[best] : "-", best ? ae[best]-t0 : 0
    }
  }
}
