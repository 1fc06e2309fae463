# bench/trace_handoffs.awk — where a handoff between a layer's calls goes, from an evtc Chrome trace.
#   awk -F'"' -v from=3 -v to=24 -f bench/trace_handoffs.awk trace.json
# For each call of layers from..to (names l<layer>_<call>) and the call that
# starts before it in the same chain (the layer's previous call, or the last
# call of the layer before), taken as its producer: lastn, the latest
# "notified" stamp of the producer's tasks (end + args.notify_us), then for
# the consumer's tasks, over all layers:
#   waiting  tasks taken before lastn (their worker was ready first), and
#            how long after lastn they started (the end of their waits):
#            median, 90th percentile, max: the detection of the handoff;
#   after    tasks taken after lastn (their worker was still busy with its
#            own previous task, its notify or its dispatch), and the median
#            of taken - lastn;
#   end      the consumer's last end after lastn (mean over layers): the
#            stage as the next call sees it;
#   notify   the producer tasks' median notify time (end to notified);
#   gap      the median time from a consumer task's worker ending its
#            previous task to taking this one (the dispatch between tasks).
# Stamps: with -DEVT_TRACE_TAKEN_AT=2 (evt_device.h) "taken" is the stamp just
# before the poll of the waits, so "after" counts tasks whose worker reached
# its poll after the inputs were complete. Only calls named l<N>_*; the chain
# is by first start, which is the decode's order (bench/RESULTS.md session 64).
function shellsort(A, n,    gap, i, j, t) { # (not recursive: mawk's evaluation stack is small)
  for (gap = int(n / 2); gap > 0; gap = int(gap / 2))
    for (i = gap + 1; i <= n; i++) {
      t = A[i]
      for (j = i; j > gap && A[j - gap] > t; j -= gap) A[j] = A[j - gap]
      A[j] = t
    }
}
# S[1..n] = the n values V[key, 1..n], sorted (once per column, its quantiles read from it)
function sorted(V, key, n,    i) {
  for (i = 1; i <= n; i++) S[i] = V[key, i]
  shellsort(S, n)
  return n
}
# the p-quantile of S[1..n] with two decimals; "-" for no values
function q(n, p) { return n < 1 ? "-" : sprintf("%.2f", S[int(p * (n - 1)) + 1]) }
/"ph": "X"/ {
  c = $8
  if (c !~ /^l[0-9]+_/) next
  match($0, /"tid": [0-9]+/); w = substr($0, RSTART + 7, RLENGTH - 7) + 0
  match($0, /"ts": [0-9.]+/); ts = substr($0, RSTART + 6, RLENGTH - 6) + 0
  match($0, /"dur": [0-9.]+/); d = substr($0, RSTART + 7, RLENGTH - 7) + 0
  wt = 0; if (match($0, /"wait_us": [0-9.]+/)) wt = substr($0, RSTART + 11, RLENGTH - 11) + 0
  nt = 0; if (match($0, /"notify_us": [0-9.]+/)) nt = substr($0, RSTART + 13, RLENGTH - 13) + 0
  n++; T_call[n] = c; T_w[n] = w; T_ts[n] = ts; T_end[n] = ts + d; T_taken[n] = ts - wt; T_nt[n] = nt
  if (!(c in first) || ts < first[c]) first[c] = ts
  if (!(c in lastn) || ts + d + nt > lastn[c]) lastn[c] = ts + d + nt
  if (ts + d > lastend[c]) lastend[c] = ts + d
  ntask[c]++; byc[c, ntask[c]] = n
  nw[w]++; byw[w, nw[w]] = n
}
END {
  if (from == "") from = 0
  if (to == "") to = 1e9
  # the calls in start order: each one's producer is the one before it
  k = 0; for (c in first) order[++k] = c
  for (i = 2; i <= k; i++) { t = order[i]; for (j = i - 1; j >= 1 && first[order[j]] > first[t]; j--) order[j + 1] = order[j]; order[j + 1] = t }
  # each task's previous task on its worker (its end), by start order per worker
  for (w in nw) {
    m = nw[w]
    for (i = 2; i <= m; i++) { t = byw[w, i]; for (j = i - 1; j >= 1 && T_ts[byw[w, j]] > T_ts[t]; j--) byw[w, j + 1] = byw[w, j]; byw[w, j + 1] = t }
    for (i = 2; i <= m; i++) prev_end[byw[w, i]] = T_end[byw[w, i - 1]]
  }
  for (i = 2; i <= k; i++) {
    c = order[i]; p = order[i - 1]
    L = substr(c, 2) + 0
    if (L < from || L > to) continue
    e = c; sub(/^l[0-9]+_/, "", e)
    if (!(e in seen)) { seen[e] = 1; kinds[++nk] = e }
    layers[e]++
    endsum[e] += lastend[c] - lastn[p]
    for (j = 1; j <= ntask[p]; j++) NT[e, ++nn[e]] = T_nt[byc[p, j]]
    for (j = 1; j <= ntask[c]; j++) {
      t = byc[c, j]
      if (T_taken[t] < lastn[p]) DET[e, ++nd[e]] = T_ts[t] - lastn[p]
      else AFT[e, ++na[e]] = T_taken[t] - lastn[p]
      if (t in prev_end) GAP[e, ++ng[e]] = T_taken[t] - prev_end[t]
    }
  }
  printf "%-12s %6s %8s %8s %8s %8s %7s %8s %8s %8s %8s\n", "call", "layers", "waiting", "det_med", "det_p90", "det_max", "after", "aft_med", "end", "notify", "gap"
  for (i = 1; i <= nk; i++) {
    e = kinds[i]
    m = sorted(DET, e, nd[e] + 0); dmed = q(m, 0.5); d90 = q(m, 0.9); dmax = q(m, 1)
    m = sorted(AFT, e, na[e] + 0); amed = q(m, 0.5)
    m = sorted(NT, e, nn[e] + 0); nmed = q(m, 0.5)
    m = sorted(GAP, e, ng[e] + 0); gmed = q(m, 0.5)
    printf "%-12s %6d %8d %8s %8s %8s %7d %8s %8.2f %8s %8s\n", e, layers[e], nd[e] + 0, dmed, d90, dmax, na[e] + 0, amed,
           endsum[e] / layers[e], nmed, gmed
  }
}
