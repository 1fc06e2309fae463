#!/bin/bash
# bench/results_add.sh — adds a benchmark script's section to bench/RESULTS.md
# where the newest section goes: before the first "## Session" heading (the
# sections run newest first, after "Status now" and "Status history"), or at
# the end of a file that has none. Used by bench/decode.sh and bench/sched.sh;
# on a lent device machine the tree is a copy, so take the section from $OUT.
#
#   bench/results_add.sh SECTION.md [RESULTS.md]
set -eu
sec=$1 res=${2:-bench/RESULTS.md}
[ -f "$sec" ] || { echo "results_add: no section file $sec" >&2; exit 2; }
[ -f "$res" ] || { cp "$sec" "$res"; exit 0; }
tmp=$(mktemp -p "$(dirname "$res")") # beside it: the mv below is a rename
awk -v sec="$sec" '
    !done && /^## Session / { while ((getline l < sec) > 0) print l; print ""; done = 1 }
    { print }
    END { if (!done) { print ""; while ((getline l < sec) > 0) print l } }
' "$res" > "$tmp"
chmod --reference="$res" "$tmp" # mktemp makes it 0600
mv "$tmp" "$res"
