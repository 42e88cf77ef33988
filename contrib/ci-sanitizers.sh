#!/bin/sh
# contrib/ci-sanitizers.sh [DIR] - the unit, hostile-peer and two-process
# tests under AddressSanitizer + UndefinedBehaviorSanitizer.
#
# Builds the committed HEAD (a fresh clone: uncommitted changes are not
# seen) out of tree in DIR (default ${TMPDIR:-/tmp}/siwarp-sanitizers) with
# CC=clang --enable-sanitizers, runs every test of `make check` except the
# MPI ones (test/mpi, test/fault's mpirun scripts: the BTL is loaded into
# mpirun's processes, which are
# not built with ASan), and fails on any test failure or any sanitizer
# report found in a log, even from a process whose exit status was lost.
#
#   ASAN_OPTIONS   detect_leaks=1 (leaks of processes that exit normally:
#                  the tools, the test programs' parents)
#   SWP_TEST_LEAKS 1: the harness runs LeakSanitizer in every forked case
#                  before its _exit, so a case that passed but left what it
#                  created behind fails (test/harness.c)
#   UBSAN_OPTIONS  halt_on_error=1: undefined behaviour fails the test
#
# Environment: CC (default clang), JOBS (default 2), KEEP=1 keeps DIR.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-${TMPDIR:-/tmp}/siwarp-sanitizers}
CC=${CC:-clang}
JOBS=${JOBS:-2}

rm -rf "$dir"
mkdir -p "$dir"
git clone -q "$top" "$dir/src"
(cd "$dir/src" && ./autogen.sh >/dev/null 2>&1) || { echo "ci-sanitizers: autogen.sh failed" >&2; exit 1; }
mkdir -p "$dir/build"
cd "$dir/build"
"$dir/src/configure" -q CC="$CC" --enable-sanitizers >configure.out 2>&1 ||
    { cat configure.out >&2; echo "ci-sanitizers: configure failed" >&2; exit 1; }
make -j"$JOBS" >make.out 2>&1 || { tail -30 make.out >&2; echo "ci-sanitizers: build failed" >&2; exit 1; }

# every test make check would run, minus test/mpi
cat >print-tests.mk <<'EOF'
print-tests:
	@echo $(TESTS)
EOF
tests=$(make -s -f Makefile -f print-tests.mk print-tests | tr ' ' '\n' |
       grep -v -e '^test/mpi/' -e '^test/fault/mpi-faults.sh' -e '^test/fault/soak-short.sh' | tr '\n' ' ')
echo "ci-sanitizers: $(echo $tests | wc -w) test programs under ASan+UBSan"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="${LSAN_OPTIONS:-}"
export SWP_TEST_LEAKS=1
rc=0
make -j"$JOBS" -k check TESTS="$tests" >check.out 2>&1 || rc=1

# A report counts even when a forked process's status was not propagated.
reports=$(grep -lE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: (Address|Undefined|Leak)' \
          $(find . -name '*.log' -path './test/*') 2>/dev/null || true)
if [ -n "$reports" ]; then
    rc=1
    echo "ci-sanitizers: sanitizer reports in:"
    for f in $reports; do
        echo "  $f"
        grep -E -A12 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$f" | head -30 | sed 's/^/    /'
    done
fi
pass=$(cat $(find . -name '*.trs' -path './test/*') | grep -c '^:test-result: \(PASS\|XFAIL\)' || true)
fail=$(cat $(find . -name '*.trs' -path './test/*') | grep -c '^:test-result: \(FAIL\|XPASS\|ERROR\)' || true)
skip=$(cat $(find . -name '*.trs' -path './test/*') | grep -c '^:test-result: SKIP' || true)
if [ "$fail" -gt 0 ]; then
    rc=1
    echo "ci-sanitizers: failed cases:"
    grep -h '^not ok\|^ERROR' $(find . -name '*.log' -path './test/*') | head -40 | sed 's/^/  /'
fi
echo "ci-sanitizers: $pass passed, $fail failed, $skip skipped; sanitizer reports: $(echo $reports | wc -w)"
[ "${KEEP:-0}" = 1 ] || [ $rc -ne 0 ] || rm -rf "$dir"
[ $rc -eq 0 ] || echo "ci-sanitizers: FAILED (logs in $dir/build)"
exit $rc
