#!/bin/sh
# run-tests.sh - build and run every test (make check), then summarise.
#
# Works from a fresh clone: runs ./autogen.sh and ./configure if needed.
# Sums the per-case results of all TAP test logs and ends with exactly one
# line "N passed, N failed[, N skipped]".  Exits non-zero if a case failed,
# a test program errored (crash, bad plan) or make failed.
# Extra arguments are passed to make (e.g. TESTS=test/unit/test_crc32c).
#
# After make check come the long suites, each counted into the same total:
#   - the libFuzzer harnesses, SIWARP_FUZZ_SECONDS each (default 60);
#   - unit and two-process tests again under ASan + UBSan;
#   - interop against Linux kernel siw in a qemu guest, when ../shared/siw-vm
#     exists (root; guest built on first use, ~25 min at most);
#   - the BTL built and its MPI tests run against Open MPI 5.0 in a Debian 13
#     root (root and mmdebstrap; root made on first use, ~20 min at most);
#   - packaging: make distcheck, the Debian packages, lintian, the .debs in
#     a clean Debian root (test/pkg/run-pkg-tests.sh, ~20 min at most).
# SIWARP_QUICK=1 skips them (make check alone: about a minute).

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

# tap_failures LOG: each failed case (not ok, no TODO) with the diagnostic
# lines that follow it (at most 6, cut at 300 characters): CI shows only
# the end of this script's output, so the reason has to be here.
tap_failures() {
    awk '/^not ok/ { keep = ($0 !~ /# TODO/); d = 0; if (keep) print; next }
         /^#/ && keep && d < 6 { d++; print "    " substr($0, 1, 300); next }
         { keep = 0 }' "$1"
}

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
        failures="$failures$(tap_failures "$log" | sed "s|^|  $name: |")$nl"
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

# ---- long suites -------------------------------------------------------------
# run_suite NAME LOG CMD...: run CMD with its output in LOG; count its TAP
# lines (not ok # TODO: a known failure, counted as skipped) or, for a
# script that prints no TAP, the script itself as one test.
run_suite() {
    name=$1 log=$2
    shift 2
    echo "== $name (log: $log)"
    "$@" >"$log" 2>&1
    rc=$?
    if grep -aq '^\(ok\|not ok\)' "$log"; then
        p=$(grep -a '^ok' "$log" | grep -vc '# SKIP')
        s=$(grep -ac '^ok.*# SKIP' "$log")
        t=$(grep -ac '^not ok.*# TODO' "$log")
        f=$(grep -a '^not ok' "$log" | grep -vc '# TODO')
        passed=$((passed + p)); skipped=$((skipped + s + t)); failed=$((failed + f))
        [ "$f" -gt 0 ] && failures="$failures$(tap_failures "$log" | sed "s|^|  $name: |")$nl"
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
            failed=$((failed + 1))
            failures="$failures  $name: exited with status $rc (see $log)$nl"
        fi
    elif grep -aq '^[a-z-]*: [0-9]* passed, [0-9]* failed' "$log"; then
        # a script with its own count (ci-sanitizers.sh)
        line=$(grep -a '^[a-z-]*: [0-9]* passed, [0-9]* failed' "$log" | tail -n 1)
        p=$(echo "$line" | sed 's/^[a-z-]*: \([0-9]*\) passed.*/\1/')
        f=$(echo "$line" | sed 's/.* \([0-9]*\) failed.*/\1/')
        s=$(echo "$line" | sed -n 's/.* \([0-9]*\) skipped.*/\1/p')
        passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + ${s:-0}))
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
            failed=$((failed + 1))
        fi
        [ "$rc" -ne 0 ] && failures="$failures  $name: $line (see $log)$nl"
        # the script's one-line reasons ("NAME: report: ..."), so that CI's
        # tail says what failed, not only that something did
        why=$(grep -a '^[a-z-]*: report: ' "$log" | head -n 8 | cut -c 1-300)
        [ -n "$why" ] && failures="$failures$(echo "$why" | sed "s|^|    |")$nl"
    elif grep -aq '^1\.\.0 # SKIP' "$log"; then
        skipped=$((skipped + 1))
        echo "   skipped: $(sed -n 's/^1\.\.0 # SKIP //p' "$log")"
    elif [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        failures="$failures  $name: exited with status $rc (see $log)$nl"
    fi
    tail -n 3 "$log" | sed 's/^/   /'
}

if [ -z "$SIWARP_QUICK" ] && [ $# -eq 0 ]; then
    run_suite fuzzing "$top/test/fuzz/run-fuzzers.log" \
        "$top/test/fuzz/run-fuzzers.sh" "${SIWARP_FUZZ_SECONDS:-60}"
    run_suite sanitizers "$top/contrib/ci-sanitizers.log" "$top/contrib/ci-sanitizers.sh"
    run_suite interop "$top/test/interop/ci-interop.log" "$top/test/interop/ci-interop.sh"
    run_suite ompi5 "$top/test/mpi/run-ompi5-tests.log" "$top/test/mpi/run-ompi5-tests.sh"
    run_suite packaging "$top/test/pkg/run-pkg-tests.log" "$top/test/pkg/run-pkg-tests.sh"
fi

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
