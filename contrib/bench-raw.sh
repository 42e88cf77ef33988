#!/bin/sh
# bench-raw.sh - one round of the raw TCP references for bench-mpi.sh: what
# an MPI transport is held against when it claims to be "close to raw TCP".
#
#   contrib/bench-raw.sh [--netns NAME] [--max BYTES] [--lat-iters N]
#                        [--bw-bytes BYTES] [--iperf-time SECONDS]
#                        [--cpus "S C"] [--lat-only] [--lat-max BYTES]
#                        [--bw-sizes "S ..."] [--no-iperf]
#
# Prints, in mpi-bench's "test size value unit" form:
#   rawlat S V us      contrib/siwarp-perf --tcp ping-pong (TCP_NODELAY,
#                      busy-polled), S = 1 B .. 1 KiB (--lat-max); V is half the mean
#                      round trip (one way, as mpi-bench's lat and OSU)
#   rawlatmed S V us   the same run, half the median round trip (as
#                      mpi-bench's latmed: on a busy 2-core host one
#                      preempted round trip moves a mean, not a median)
#   rawbw S V MB/s     contrib/siwarp-perf --tcp stream, S = 64 KiB, 1 MiB,
#                      4 MiB (--bw-sizes; up to --max), about --bw-bytes per
#                      size; the client sends
#   iperf 0 V MB/s     single-stream iperf3, --iperf-time seconds (default 5;
#                      --no-iperf: none)
# A reference that cannot run prints nothing and says why on stderr.
#
# Loopback by default.  --netns NAME: the servers run in NAME-s (10.231.0.1)
# and the clients in NAME-c, namespaces made by `contrib/netns.sh up NAME`
# (the caller makes and removes them).  The servers are this script's
# children, bounded by timeout and ended by PID.  --cpus "S C": pin the
# servers to CPU S and the clients to CPU C (taskset), as the MPI ranks are
# bound one per core; a floating pair can share a core and reads slower.
# --lat-only: only the ping-pong (rawlat, rawlatmed), up to --max bytes.
# Environment: BUILDDIR (where contrib/siwarp-perf is built, default: the
# source tree).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
BUILDDIR=${BUILDDIR:-$top}
PERF=$BUILDDIR/contrib/siwarp-perf
ns=""; cpus=""; lat_only=0; max=4194304; lat_iters=2000; bw_bytes=268435456; itime=5
lat_max=1024; bw_sizes="65536 1048576 4194304"; iperf=1

usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --netns) ns=$2; shift ;;
    --cpus) cpus=$2; shift ;;
    --lat-only) lat_only=1 ;;
    --lat-max) lat_max=$2; shift ;;
    --bw-sizes) bw_sizes=$2; shift ;;
    --no-iperf) iperf=0 ;;
    --max) max=$2; shift ;;
    --lat-iters) lat_iters=$2; shift ;;
    --bw-bytes) bw_bytes=$2; shift ;;
    --iperf-time) itime=$2; shift ;;
    -h|--help) usage ;;
    *) echo "bench-raw.sh: unknown option $1" >&2; usage ;;
    esac
    shift
done

# prefixes, not functions: a backgrounded function would be a subshell whose
# PID is not the server's ("ip netns exec" execs, so its PID is)
if [ -n "$ns" ]; then
    addr=10.231.0.1
    on_s="ip netns exec $ns-s"
    on_c="ip netns exec $ns-c"
else
    addr=127.0.0.1
    on_s=""
    on_c=""
fi

if [ -n "$cpus" ]; then
    # shellcheck disable=SC2086
    set -- $cpus
    if [ $# -ne 2 ] || ! [ "$1" -ge 0 ] 2>/dev/null || ! [ "$2" -ge 0 ] 2>/dev/null ||
            ! command -v taskset >/dev/null 2>&1; then
        echo "bench-raw.sh: --cpus takes two CPU numbers (and taskset): '$cpus'" >&2
        exit 2
    fi
    on_s="$on_s taskset -c $1"
    on_c="$on_c taskset -c $2"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-raw.XXXXXX") || exit 1
pids=""
cleanup() {
    # only the servers started here, by PID
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_server FD NAME WORD CMD...: run CMD (bounded) with stdout into a fifo
# read on FD until a line containing WORD: readiness without sleeping.
# Sets $line (the ready line) and $pid.
start_server() {
    fd=$1 sname=$2 word=$3
    shift 3
    mkfifo "$tmp/$sname.fifo"
    $on_s timeout 3600 "$@" > "$tmp/$sname.fifo" 2> "$tmp/$sname.err" &
    pid=$!
    pids="$pids $pid"
    eval "exec $fd<\"\$tmp/\$sname.fifo\""
    while eval "read -r line <&$fd"; do
        case $line in *"$word"*) return 0 ;; esac
    done
    echo "bench-raw.sh: $sname server did not start: $(head -c 300 "$tmp/$sname.err")" >&2
    return 1
}

# ---- siwarp-perf --tcp: busy-polled ping-pong and stream ---------------------
if [ ! -x "$PERF" ]; then
    echo "bench-raw.sh: $PERF not built (make); no raw TCP ping-pong" >&2
elif start_server 3 perf "listening port=" "$PERF" --tcp -s -a "$addr" -p 0; then
    port=${line#listening port=}
    if $on_c timeout 120 "$PERF" --tcp -c "$addr" -p "$port" -m lat -A -M "$lat_max" \
            -n "$lat_iters" --json > "$tmp/lat" 2> "$tmp/lat.err"; then
        sed -n 's/.*"bytes":\([0-9]*\).*"t_median_us":\([0-9.]*\).*"t_avg_us":\([0-9.]*\).*/\1 \2 \3/p' \
            "$tmp/lat" |
            awk '{ printf "rawlat %d %.2f us\nrawlatmed %d %.2f us\n", $1, $3 / 2, $1, $2 / 2 }'
    else
        echo "bench-raw.sh: TCP ping-pong failed: $(head -c 300 "$tmp/lat.err")" >&2
    fi
    for s in $bw_sizes; do
        [ "$s" -le "$max" ] && [ $lat_only = 0 ] || continue
        n=$((bw_bytes / s)); [ $n -ge 16 ] || n=16
        if $on_c timeout 120 "$PERF" --tcp -c "$addr" -p "$port" -m bw -z "$s" -n "$n" \
                --json > "$tmp/bw" 2> "$tmp/bw.err"; then
            sed -n 's/.*"bytes":\([0-9]*\).*"bw_MBps":\([0-9.]*\).*/rawbw \1 \2 MB\/s/p' "$tmp/bw"
        else
            echo "bench-raw.sh: TCP stream $s B failed: $(head -c 300 "$tmp/bw.err")" >&2
        fi
    done
fi

# ---- iperf3, one stream --------------------------------------------------------
if [ $lat_only = 1 ] || [ $iperf = 0 ]; then
    :
elif ! command -v iperf3 >/dev/null 2>&1; then
    echo "bench-raw.sh: iperf3 not installed (contrib/setup.sh); no iperf3 figure" >&2
else
    iport=$((20000 + $$ % 20000))
    if start_server 4 iperf "listening" iperf3 -s -1 -B "$addr" -p "$iport" --forceflush; then
        if $on_c timeout $((itime + 30)) iperf3 -c "$addr" -p "$iport" -t "$itime" -J \
                > "$tmp/iperf.json" 2> "$tmp/iperf.err"; then
            python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print("iperf 0 %.1f MB/s" % (d["end"]["sum_received"]["bits_per_second"] / 8e6))' \
                "$tmp/iperf.json" 2>> "$tmp/iperf.err" ||
                echo "bench-raw.sh: iperf3 output not understood: $(head -c 300 "$tmp/iperf.err")" >&2
        else
            echo "bench-raw.sh: iperf3 client failed: $(head -c 300 "$tmp/iperf.json" "$tmp/iperf.err")" >&2
        fi
    fi
fi
exit 0
