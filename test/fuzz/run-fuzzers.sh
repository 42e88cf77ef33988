#!/bin/sh
# run-fuzzers.sh [seconds] - build the libFuzzer harnesses with clang
# (-fsanitize=fuzzer,address,undefined, independent of automake) and run
# each for `seconds` (default 60) from the committed seed corpus.
#
# Exits non-zero if a harness crashes, leaks, times out or trips a
# sanitizer; the reproducer is kept under $FUZZ_OUT/artifacts and the
# command to replay it is printed.  For every harness one summary line:
#   fuzz_rx: 1234567 runs in 60 s, 20576 exec/s, cov: 1480 ft: 5121, corpus 812 (seeds 40)
#
# Environment: CC (default clang), FUZZ_OUT (build and run directory,
# default a fresh one under ${TMPDIR:-/tmp}), FUZZERS (subset, e.g.
# "fuzz_mpa fuzz_term"), FUZZ_UPDATE_SEEDS=1 to regenerate the committed
# corpus with gen_seeds first (review the diff before committing it).
set -eu

secs=${1:-60}
top=$(cd "$(dirname "$0")/../.." && pwd)
CC=${CC:-clang}
out=${FUZZ_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/siwarp-fuzz.XXXXXX")}
fuzzers=${FUZZERS:-"fuzz_mpa fuzz_term fuzz_rx"}
mkdir -p "$out/obj" "$out/artifacts"
rm -f "$out/artifacts/"*

if ! command -v "$CC" >/dev/null 2>&1; then
    echo "run-fuzzers: $CC not found (apt-get install clang libclang-rt-14-dev)" >&2
    exit 1
fi

# the software stack only: the verbs backend is stubbed (hw_stub.c)
lib="crc32c crc32c_x86 mpa ddp rdmap cm cm_listen qp qp_tx qp_tx_ops qp_rx qp_rx_ops qp_rx_direct qp_ext read_hint srq mem cq progress progress_thread tcp_cc verbs backend hw_stub"
inc="-I$top/include -I$top/common -I$top/test -I$top/test/fuzz"
cflags="-std=gnu11 -g -O1 -pthread -fno-omit-frame-pointer -Wall -Wextra -Wno-unused-parameter"
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"

echo "run-fuzzers: building in $out"
objs=
for f in $lib; do
    $CC $cflags $inc $san -fsanitize=fuzzer-no-link -c "$top/common/$f.c" -o "$out/obj/$f.o"
    objs="$objs $out/obj/$f.o"
done
for h in $fuzzers; do
    # shellcheck disable=SC2086
    $CC $cflags $inc $san -fsanitize=fuzzer "$top/test/fuzz/$h.c" $objs -o "$out/$h"
done

if [ "${FUZZ_UPDATE_SEEDS:-0}" = 1 ]; then
    gobjs=
    mkdir -p "$out/gobj"
    for f in $lib; do
        $CC $cflags $inc -c "$top/common/$f.c" -o "$out/gobj/$f.o"
        gobjs="$gobjs $out/gobj/$f.o"
    done
    # shellcheck disable=SC2086
    $CC $cflags $inc "$top/test/fuzz/gen_seeds.c" $gobjs -o "$out/gen_seeds"
    rm -rf "$top/test/fuzz/corpus"
    "$out/gen_seeds" "$top/test/fuzz/corpus"
    echo "run-fuzzers: seeds regenerated in test/fuzz/corpus"
fi

max_len() {
    case $1 in
    fuzz_mpa)  echo 600 ;;
    fuzz_term) echo 128 ;;
    *)         echo 24576 ;;
    esac
}

rc=0
summary=
for h in $fuzzers; do
    seeds="$top/test/fuzz/corpus/$h"
    work="$out/corpus/$h"
    log="$out/$h.log"
    mkdir -p "$work"
    nseeds=$(ls "$seeds" 2>/dev/null | wc -l)
    echo "run-fuzzers: $h for $secs s ($nseeds seeds)"
    set +e
    # the first directory receives new inputs; the committed seeds stay as they are
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
        "$out/$h" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -max_len="$(max_len "$h")" -print_final_stats=1 -detect_leaks=1 \
        -artifact_prefix="$out/artifacts/$h-" "$work" "$seeds" >"$log" 2>&1
    hrc=$?
    set -e
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
    [ -n "$done_line" ] || done_line=$(grep -E '^#[0-9]+' "$log" | tail -1)
    cov=$(echo "$done_line" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$done_line" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    corp=$(ls "$work" | wc -l)
    line="$h: ${runs:-?} runs in $secs s, ${eps:-?} exec/s, cov: ${cov:-?} ft: ${ft:-?}, corpus $corp (seeds $nseeds)"
    if [ $hrc -ne 0 ]; then
        line="$line: FAILED (exit $hrc, log $log)"
        rc=1
        grep -E 'ERROR: |invariant violated|runtime error|SUMMARY' "$log" | head -8 >&2 || true
        for a in "$out/artifacts/$h-"*; do
            [ -e "$a" ] && echo "run-fuzzers: reproduce with: $out/$h $a" >&2
        done
    fi
    echo "$line"
    summary="$summary$line
"
done
echo "---- fuzzing summary ----"
printf '%s' "$summary"
exit $rc
