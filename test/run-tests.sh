#!/bin/sh
# run-tests.sh - build and run every test (make check), then summarise.
#
# Works from a fresh clone: runs ./autogen.sh and ./configure if needed.
# Sums the per-case results of all TAP test logs and ends with exactly one
# line "N passed, N failed[, N skipped]".  Exits non-zero if a case failed,
# a test program errored (crash, bad plan) or make failed.
# Extra arguments are passed to make (e.g. TESTS=test/unit/test_crc32c).

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2

if [ ! -f Makefile ]; then
    if [ ! -x configure ]; then
        ./autogen.sh || { echo "autogen.sh failed"; echo "0 passed, 1 failed"; exit 1; }
    fi
    ./configure || { echo "configure failed"; echo "0 passed, 1 failed"; exit 1; }
fi

# stale results of a previous run must not be counted
find . -name '*.trs' -type f | while read -r trs; do
    rm -f "$trs" "${trs%.trs}.log"
done

make -j2 -k check "$@"
make_rc=$?

passed=0 failed=0 skipped=0
failures=
nl='
'
for trs in $(find . -name '*.trs' -type f | sort); do
    log=${trs%.trs}.log
    name=${trs%.trs}; name=${name#./}
    p=$(grep -c '^:test-result: \(PASS\|XFAIL\)' "$trs")
    f=$(grep -c '^:test-result: \(FAIL\|XPASS\)' "$trs")
    s=$(grep -c '^:test-result: SKIP' "$trs")
    e=$(grep -c '^:test-result: ERROR' "$trs")
    passed=$((passed + p)); skipped=$((skipped + s)); failed=$((failed + f))
    if [ "$f" -gt 0 ] && [ -f "$log" ]; then
        failures="$failures$(grep '^not ok' "$log" | sed "s|^|  $name: |")$nl"
    fi
    # An ERROR alone (crash, missing plan, bail out) is a failure of its
    # own; next to failed cases it is only the non-zero exit they caused.
    if [ "$e" -gt 0 ] && [ "$f" -eq 0 ]; then
        failed=$((failed + e))
        why=$(grep -h '^ERROR:' "$log" 2>/dev/null | head -3)
        [ -n "$why" ] || why="ERROR (see $log)"
        failures="$failures  $name: $why$nl"
    fi
done

# make check fails whenever a test fails; only when no test result says
# so is it a failure of its own (a program that did not build, say).
if [ "$make_rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=$((failed + 1))
    failures="$failures  make check exited with status $make_rc (build error?)$nl"
fi
if [ -n "$failures" ]; then
    echo "Failures:"
    printf '%s' "$failures"
fi
summary="$passed passed, $failed failed"
[ "$skipped" -gt 0 ] && summary="$summary, $skipped skipped"
echo "$summary"
[ "$failed" -eq 0 ] && [ "$make_rc" -eq 0 ]
