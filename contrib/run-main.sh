#!/bin/sh
# run-main.sh - the README's "main job".
#
# 1. If the Open MPI BTL is built (btl_siwarp/.libs/mca_btl_siwarp.so): the
#    2-rank MPI benchmark (test/mpi/mpi-bench via contrib/bench-mpi.sh) over
#    `--mca btl siwarp,self` and `--mca btl tcp,self` in alternating rounds,
#    medians and ratios, 0 B to 4 MiB.
# 2. siwarp-perf between two processes on loopback: Send, Write and Read
#    latency and bandwidth with CRC off and on, next to a plain TCP
#    ping-pong and stream measured in the same run.  Both ends offer 64 KiB
#    FPDUs (--big-fpdu 65535), as the BTL does toward a siwarp peer: with
#    FPDUs cut to loopback's 32 KiB MSS every payload would be staged and
#    copied, which is not what MPI runs.
#
# The MPI table and its plots go to contrib/results/main-YYYYMMDD.md (and
# -latency.png, -bandwidth.png; ignored by git), not over the benchmark
# tables committed there.
# Environment: REPS (default 3; each figure is the median of REPS runs),
# LAT_ITERS (default 2000), ADDR (default 127.0.0.1), SIWARP_PERF (binary).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
perf=${SIWARP_PERF:-$top/contrib/siwarp-perf}
btl=$top/btl_siwarp/.libs/mca_btl_siwarp.so
REPS=${REPS:-3}
LAT_ITERS=${LAT_ITERS:-2000}
ADDR=${ADDR:-127.0.0.1}

# ---- MPI (once the BTL exists) -------------------------------------------------
if [ -f "$btl" ]; then
    echo "=== 2-rank MPI benchmark: --mca btl siwarp,self against --mca btl tcp,self"
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        "$top/contrib/bench-mpi.sh" --reps "$REPS" --max 4194304 --transports "siwarp tcp" \
        --out "$top/contrib/results/main-$(date +%Y%m%d).md"
    echo
fi

# ---- siwarp-perf on loopback ---------------------------------------------------
[ -x "$perf" ] || { echo "run-main.sh: $perf not built (run make)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/siwarp-main.XXXXXX")
spid=
tpid=
cleanup() {
    # only the two servers this script started, by their PIDs
    [ -n "$spid" ] && kill "$spid" 2>/dev/null || true
    [ -n "$tpid" ] && kill "$tpid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# Start a server; readiness is its "listening port=N" line, read through a
# fifo (no sleeping).  Sets $port; the fifo stays open on fd 3/4.
start_server() { # fd name args...
    fd=$1 name=$2
    shift 2
    mkfifo "$tmp/$name.fifo"
    "$perf" -s -a "$ADDR" -p 0 "$@" >"$tmp/$name.fifo" 2>"$tmp/$name.err" &
    pid=$!
    eval "exec $fd<\"\$tmp/\$name.fifo\""
    if ! eval "read -r line <&$fd"; then
        echo "run-main.sh: $name server did not start:" >&2
        cat "$tmp/$name.err" >&2
        exit 1
    fi
    port=${line#listening port=}
}

start_server 3 rdma --big-fpdu 65535
spid=$pid rport=$port
start_server 4 tcp --tcp
tpid=$pid tport=$port
echo "# siwarp-perf servers: iWARP port $rport, TCP port $tport on $ADDR (pids $spid, $tpid)"

failed=0
# one figure: median over REPS runs of t_median_us (lat) or bw_MBps (bw)
measure() { # key args...
    key=$1
    shift
    : >"$tmp/vals"
    r=0
    while [ "$r" -lt "$REPS" ]; do
        if ! "$perf" --json "$@" >"$tmp/out" 2>"$tmp/err"; then
            echo "run-main.sh: siwarp-perf $* failed:" >&2
            sed 's/^/    /' "$tmp/err" >&2
            failed=$((failed + 1))
            echo "FAIL"
            return 0
        fi
        sed -n "s/.*\"$key\":\([0-9.]*\).*/\1/p" "$tmp/out" | tail -1 >>"$tmp/vals"
        r=$((r + 1))
    done
    sort -g "$tmp/vals" | awk '{v[NR] = $1} END {
        if (NR == 0) { print "n/a"; exit }
        if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%.2f\n", m }'
}

rd() { measure "$@" -c "$ADDR" -p "$rport" --big-fpdu 65535; }
tc() { measure "$@" -c "$ADDR" -p "$tport" --tcp; }

bw_iters() { # size -> iterations (~256 MiB per run)
    n=$((268435456 / $1))
    [ "$n" -lt 16 ] && n=16
    echo "$n"
}

echo
echo "Latency, 8 bytes, median of per-iteration medians (us), $REPS runs x $LAT_ITERS iterations"
printf '%-10s %12s %12s\n' "test" "CRC off" "CRC on"
for t in send write read; do
    off=$(rd t_median_us -t "$t" -m lat -z 8 -n "$LAT_ITERS")
    on=$(rd t_median_us -t "$t" -m lat -z 8 -n "$LAT_ITERS" --crc)
    printf '%-10s %12s %12s\n' "$t" "$off" "$on"
done
printf '%-10s %12s %12s\n' "tcp" "$(tc t_median_us -m lat -z 8 -n "$LAT_ITERS")" "-"

echo
echo "Bandwidth (MB/s, 10^6 bytes/s), median of $REPS runs"
printf '%-10s %-8s %12s %12s\n' "test" "size" "CRC off" "CRC on"
for sz in 65536 1048576 4194304; do
    n=$(bw_iters "$sz")
    for t in send write read; do
        off=$(rd bw_MBps -t "$t" -m bw -z "$sz" -n "$n")
        on=$(rd bw_MBps -t "$t" -m bw -z "$sz" -n "$n" --crc)
        printf '%-10s %-8s %12s %12s\n' "$t" "$sz" "$off" "$on"
    done
    printf '%-10s %-8s %12s %12s\n' "tcp" "$sz" "$(tc bw_MBps -m bw -z "$sz" -n "$n")" "-"
done

if [ "$failed" -gt 0 ]; then
    echo "run-main.sh: $failed measurement(s) failed" >&2
    exit 1
fi
