#!/bin/sh
# bench-mpi.sh - siwarp against the other MPI transports that run here, in one
# run: test/mpi/mpi-bench (ping-pong latency, uni- and bi-directional
# bandwidth with a window of 64, 8-byte message rate, CPU seconds per GB)
# over
#   siwarp  --mca pml ob1 --mca btl siwarp,self
#   tcp     --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo
#   ucx     --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
#           -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=lo      (if it runs here)
# The transports alternate within every round (round r starts with the r-th
# one), REPS rounds; the table holds medians and the ratios siwarp/tcp and
# siwarp/ucx (latency: below 1 is better; bandwidth, rate: above 1 is better;
# CPU s/GB: below 1 is better).
#
#   contrib/bench-mpi.sh [--reps N] [--netns] [--max BYTES] [--min BYTES]
#                        [--iters N] [--bind core|none] [--transports "siwarp tcp ucx"]
#                        [--out FILE] [--no-plot]
#
# --netns runs every transport across two network namespaces joined by a veth
# pair (contrib/netns-mpirun.sh; root only), one rank in each.
# Writes the Markdown table to contrib/results/bench-YYYYMMDD[-netns].md (or
# --out) and, with gnuplot, latency and bandwidth PNGs next to it.
# Environment: BUILDDIR (build tree with btl_siwarp/.libs, default: the
# source tree), BENCH_TIMEOUT (seconds per mpirun, default 900).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
BUILDDIR=${BUILDDIR:-$top}
reps=3; netns=0; max=67108864; min=0; iters=1000; bind=core; plot=1; out=""
transports="siwarp tcp ucx"
cmdline="$0 $*"

usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --reps) reps=$2; shift ;;
    --netns) netns=1 ;;
    --max) max=$2; shift ;;
    --min) min=$2; shift ;;
    --iters) iters=$2; shift ;;
    --bind) bind=$2; shift ;;
    --transports) transports=$2; shift ;;
    --out) out=$2; shift ;;
    --no-plot) plot=0 ;;
    -h|--help) usage ;;
    *) echo "bench-mpi.sh: unknown option $1" >&2; usage ;;
    esac
    shift
done
case $reps in ''|*[!0-9]*|0) echo "bench-mpi.sh: --reps needs a positive number" >&2; exit 2 ;; esac

COMP=$BUILDDIR/btl_siwarp/.libs
if [ ! -f "$COMP/mca_btl_siwarp.so" ]; then
    echo "bench-mpi.sh: $COMP/mca_btl_siwarp.so not built (set BUILDDIR)" >&2
    exit 1
fi
OMPI_DIR=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
[ -n "$OMPI_DIR" ] || OMPI_DIR=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
export OMPI_MCA_mca_base_component_path="$COMP:$OMPI_DIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
T=${BENCH_TIMEOUT:-900}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-mpi.XXXXXX") || exit 1
child=""
# a signal ends the running mpirun (our child, by pid) and removes tmp
trap 'rm -rf "$tmp"' EXIT
trap '[ -n "$child" ] && kill $child 2>/dev/null; exit 130' INT
trap '[ -n "$child" ] && kill $child 2>/dev/null; exit 143' TERM

BENCH=$tmp/mpi-bench
if ! mpicc -O2 -g -o "$BENCH" "$top/test/mpi/mpi-bench.c" 2> "$tmp/cc.log"; then
    cat "$tmp/cc.log" >&2
    exit 1
fi

# ---- how each transport is run -------------------------------------------------
if [ $netns = 1 ]; then
    name=swpb$$
    export NETNS_NAME=$name NETNS_MPIRUN_TIMEOUT=$T
    LAUNCH="$here/netns-mpirun.sh"
    IF_CIDR=10.231.0.0/24
    UCX_DEV="$name-vs,$name-vc"
    bind=none           # each "host" would bind its rank to its core 0
else
    LAUNCH="timeout $T mpirun"
    IF_CIDR=lo
    UCX_DEV=lo
fi
targs() {
    case $1 in
    siwarp) echo "--mca pml ob1 --mca btl siwarp,self" ;;
    tcp)    echo "--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include $IF_CIDR" ;;
    ucx)    echo "--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any" \
                 "-x UCX_TLS=tcp,self -x UCX_NET_DEVICES=$UCX_DEV --mca btl ^siwarp" ;;
    esac
}
run_bench() {   # TRANSPORT OUTFILE BENCH-ARGS...
    t=$1; o=$2; shift 2
    # shellcheck disable=SC2046
    $LAUNCH -np 2 --bind-to "$bind" --mca osc ^ucx $(targs "$t") "$BENCH" "$@" > "$o" 2>&1 &
    child=$!
    wait $child
    rc=$?
    child=""
    return $rc
}

# ---- which transports run here -----------------------------------------------------
ok_t=""
for t in $transports; do
    if run_bench "$t" "$tmp/probe.$t" -n 8 -m 8 -i 10 -t lat && grep -q "^lat 8 " "$tmp/probe.$t"; then
        ok_t="$ok_t $t"
    else
        echo "bench-mpi.sh: $t does not run here; left out (see below)" >&2
        tail -n 5 "$tmp/probe.$t" | sed 's/^/    /' >&2
    fi
done
ok_t=${ok_t# }
case " $ok_t " in *" siwarp "*) ;; *) echo "bench-mpi.sh: siwarp does not run" >&2; exit 1 ;; esac
set -- $ok_t
nt=$#

# ---- rounds, transports rotated ---------------------------------------------------------
echo "bench-mpi.sh: $reps rounds of [$ok_t], sizes $min..$max B, $([ $netns = 1 ] && echo "across a veth pair" || echo "loopback"), bind $bind" >&2
r=0
while [ $r -lt "$reps" ]; do
    i=0
    while [ $i -lt $nt ]; do
        k=$(( (r + i) % nt + 1 ))
        eval t=\${$k}
        echo "  round $((r + 1)): $t" >&2
        if ! run_bench "$t" "$tmp/out.$t.$r" -n "$min" -m "$max" -i "$iters"; then
            echo "bench-mpi.sh: round $((r + 1)) of $t failed:" >&2
            tail -n 5 "$tmp/out.$t.$r" | sed 's/^/    /' >&2
        fi
        i=$((i + 1))
    done
    r=$((r + 1))
done

# ---- medians -----------------------------------------------------------------------------
# med.T: "test size median" for every (test, size) transport T measured
for t in $ok_t; do
    cat "$tmp"/out."$t".* 2>/dev/null | awk '$1 ~ /^(lat|bw|bibw|rate|bwcpu)$/ { print $1, $2, $3 }' |
        sort -k1,1 -k2,2n -k3,3g |
        awk '{ k = $1 " " $2; v[k, ++n[k]] = $3; if (!(k in seen)) { seen[k] = 1; ord[++m] = k } }
             END { for (j = 1; j <= m; j++) { k = ord[j]; c = n[k];
                       med = (c % 2) ? v[k, (c + 1) / 2] : (v[k, c / 2] + v[k, c / 2 + 1]) / 2;
                       print k, med } }' > "$tmp/med.$t"
done
val() { awk -v k="$2 $3" '$1 " " $2 == k { print $3; exit }' "$tmp/med.$1" 2>/dev/null; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "–";
                                           else printf "%.2f", a / b }'; }
fmt() { awk -v v="$1" -v u="$2" 'BEGIN { if (v == "") { print "–"; exit }
                                         if (u == "rate") printf "%.0f k", v / 1000;
                                         else if (u == "cpu") printf "%.2f", v;
                                         else if (v >= 100) printf "%.0f", v; else printf "%.2f", v }'; }
hsize() { awk -v s="$1" 'BEGIN { if (s >= 1048576) printf "%d MiB", s / 1048576;
                                 else if (s >= 1024) printf "%d KiB", s / 1024; else printf "%d B", s }'; }
has() { case " $ok_t " in *" $1 "*) return 0 ;; esac; return 1; }

date=$(date +%Y%m%d)
mkdir -p "$here/results"
suffix=$([ $netns = 1 ] && echo "-netns" || true)
[ -n "$out" ] || out="$here/results/bench-$date$suffix.md"
base=${out%.md}

{
    echo "## MPI transports, $(date '+%Y-%m-%d %H:%M') ($([ $netns = 1 ] && echo "two namespaces, veth pair" || echo "loopback"))"
    echo
    echo "Command: \`$cmdline\`  "
    echo "Host: $(nproc) cores, $(uname -r), load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); 2 ranks, --bind-to $bind; medians of $reps rounds, transports alternating. Ratios are siwarp/other: latency and CPU below 1 and bandwidth and rate above 1 favour siwarp."
    echo
    printf '| test | size | siwarp |'
    has tcp && printf ' btl tcp |'
    has ucx && printf ' pml ucx (tcp) |'
    has tcp && printf ' siwarp/tcp |'
    has ucx && printf ' siwarp/ucx |'
    echo
    printf '|---|---:|---:|'
    has tcp && printf -- '---:|'
    has ucx && printf -- '---:|'
    has tcp && printf -- '---:|'
    has ucx && printf -- '---:|'
    echo
    for test in lat bw bibw rate bwcpu; do
        case $test in
        lat) label="latency (µs)"; u=us ;;
        bw) label="bandwidth (MB/s)"; u=mb ;;
        bibw) label="bi-bandwidth (MB/s)"; u=mb ;;
        rate) label="message rate (msg/s)"; u=rate ;;
        bwcpu) label="CPU s per GB (both ranks)"; u=cpu ;;
        esac
        sizes=$(awk -v t=$test '$1 == t { print $2 }' "$tmp/med.siwarp" | sort -n -u)
        case $test in
        rate) sizes=$(echo "$sizes" | grep -x 8) ;;
        bwcpu) sizes=$(echo "$sizes" | grep -x -e 1048576 -e 4194304) ;;
        bw|bibw) sizes=$(echo "$sizes" | awk '$1 > 0') ;;
        esac
        for s in $sizes; do
            a=$(val siwarp $test "$s")
            printf '| %s | %s | %s |' "$label" "$(hsize "$s")" "$(fmt "$a" $u)"
            has tcp && printf ' %s |' "$(fmt "$(val tcp $test "$s")" $u)"
            has ucx && printf ' %s |' "$(fmt "$(val ucx $test "$s")" $u)"
            has tcp && printf ' %s |' "$(ratio "$a" "$(val tcp $test "$s")")"
            has ucx && printf ' %s |' "$(ratio "$a" "$(val ucx $test "$s")")"
            echo
        done
    done
    for t in $transports; do
        has "$t" || echo "
$t: did not run here ($(tail -n 1 "$tmp/probe.$t" 2>/dev/null | cut -c1-120))."
    done
} > "$out"
cat "$out"
echo "bench-mpi.sh: table written to $out" >&2

# ---- plots -------------------------------------------------------------------------------
if [ $plot = 1 ] && command -v gnuplot >/dev/null 2>&1; then
    for t in $ok_t; do
        awk '$1 == "lat" && $2 > 0 { print $2, $3 }' "$tmp/med.$t" > "$tmp/lat.$t"
        awk '$1 == "bw" && $2 > 0 { print $2, $3 }' "$tmp/med.$t" > "$tmp/bw.$t"
    done
    lat_plot=""; bw_plot=""
    for t in $ok_t; do
        lat_plot="$lat_plot${lat_plot:+, }'$tmp/lat.$t' using 1:2 with linespoints title '$t'"
        bw_plot="$bw_plot${bw_plot:+, }'$tmp/bw.$t' using 1:2 with linespoints title '$t'"
    done
    gnuplot <<EOF 2> "$tmp/gnuplot.log" || { echo "bench-mpi.sh: gnuplot failed:" >&2; cat "$tmp/gnuplot.log" >&2; }
set terminal pngcairo size 900,560 noenhanced
set logscale x 2
set format x "%.0s%cB"
set xlabel "message size"
set grid
set key top left
set output "$base-latency.png"
set title "ping-pong latency (median of $reps), $(date +%Y-%m-%d)$suffix"
set logscale y 10
set ylabel "microseconds"
plot $lat_plot
set output "$base-bandwidth.png"
set title "bandwidth, window 64 (median of $reps), $(date +%Y-%m-%d)$suffix"
unset logscale y
set ylabel "MB/s"
plot $bw_plot
EOF
    [ -f "$base-latency.png" ] && echo "bench-mpi.sh: plots $base-latency.png $base-bandwidth.png" >&2
fi
exit 0
