#!/bin/sh
# run_all.sh — runs every test binary given, prints each one's output, and
# ends with one summary line "N passed, N failed" (cmocka counts, summed).
passed=0; failed=0; skipped=0; crashed=""
for t in "$@"; do
    echo "== $t"
    out=$("$t" 2>&1); rc=$?
    echo "$out" | grep -E '^\[  (PASSED|FAILED|SKIPPED|  OK  |ERROR)|^\[ *FAILED|ERROR|error:|skipped' | grep -v '^\[       OK \]' | head -40
    p=$(echo "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    f=$(echo "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
    k=$(echo "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -1)
    [ -n "$p" ] || p=0
    [ -n "$f" ] || f=0
    [ -n "$k" ] || k=0
    skipped=$((skipped + k))
    if [ "$p" = 0 ] && [ "$f" = 0 ] && [ "$k" = 0 ]; then
        # no cmocka summary: the binary crashed or printed nothing
        echo "$out" | tail -20
        f=1; crashed="$crashed $t"
    elif [ $rc -ne 0 ] && [ "$f" = 0 ]; then
        f=1; crashed="$crashed $t"
    fi
    echo "   $t: $p passed, $f failed, $k skipped"
    passed=$((passed + p)); failed=$((failed + f))
done
[ -z "$crashed" ] || echo "crashed or exited non-zero:$crashed"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
