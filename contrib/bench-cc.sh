#!/bin/sh
# bench-cc.sh - siwarp against btl tcp with both on the same TCP congestion
# control: what siwarp's own choice (btl_siwarp_tcp_congestion, default
# "cubic,reno") is worth, and how the two compare once btl tcp gets it too.
#
#   contrib/bench-cc.sh [--reps N] [--ccs "bbr cubic"] [--out FILE]
#
# For each congestion control a private network namespace is made whose
# default it is (net.ipv4.tcp_congestion_control is per namespace), and both
# ranks run inside it over its loopback: btl tcp follows the namespace's
# default, and siwarp is told to as well (btl_siwarp_tcp_congestion="").
# The two alternate within each round; mpi-bench -t bw and -t bibw, 64 KiB
# to 4 MiB; medians of the rounds.  Root only (ip netns); every mpirun is
# bounded by timeout; the namespaces are removed on exit.
# Environment: BUILDDIR (where the BTL is built, default: the source tree).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
BUILDDIR=${BUILDDIR:-$top}
reps=3; ccs="bbr cubic"; out=""; T=300

while [ $# -gt 0 ]; do
    case $1 in
    --reps) reps=$2; shift ;;
    --ccs) ccs=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
    *) echo "bench-cc.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" = 0 ] || { echo "bench-cc.sh: needs root (ip netns)" >&2; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-cc.XXXXXX") || exit 1
ns=""
cleanup() {
    [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mpicc -O2 -o "$tmp/mpi-bench" "$top/test/mpi/mpi-bench.c" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OMPI_DIR=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
[ -n "$OMPI_DIR" ] || OMPI_DIR=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
export OMPI_MCA_mca_base_component_path="$BUILDDIR/btl_siwarp/.libs:$OMPI_DIR"
[ -d "$BUILDDIR/btl_siwarp/.libs" ] || { echo "bench-cc.sh: build first (make)" >&2; exit 1; }

run() {     # CC TRANSPORT TEST OUTFILE
    case $2 in
    siwarp) t="--mca pml ob1 --mca btl siwarp,self --mca btl_siwarp_tcp_congestion ''" ;;
    tcp) t="--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo" ;;
    esac
    # shellcheck disable=SC2086
    eval ip netns exec "$ns" timeout $T mpirun -np 2 --bind-to core --mca osc ^ucx $t \
        "$tmp/mpi-bench" -t "$3" -n 65536 -m 4194304 -f 4 -i 2000 > "$4" 2>&1
}

for cc in $ccs; do
    ns=swpcc$$
    ip netns add "$ns" || exit 1
    ip netns exec "$ns" ip link set lo up
    if ! ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_congestion_control="$cc"; then
        echo "bench-cc.sh: no congestion control $cc here; left out" >&2
        ip netns del "$ns"; ns=""
        continue
    fi
    r=0
    while [ $r -lt "$reps" ]; do
        for tst in bw bibw; do
            for t in siwarp tcp; do
                [ $((r % 2)) = 1 ] && t=$([ $t = siwarp ] && echo tcp || echo siwarp)
                echo "  $cc, round $((r + 1)): $t $tst" >&2
                run "$cc" "$t" "$tst" "$tmp/$cc.$t.$tst.$r" ||
                    { echo "bench-cc.sh: $cc $t $tst failed:" >&2; tail -n 5 "$tmp/$cc.$t.$tst.$r" >&2; }
            done
        done
        r=$((r + 1))
    done
    ip netns del "$ns"; ns=""
done

{
    echo "## siwarp and btl tcp on one congestion control, $(date '+%Y-%m-%d %H:%M') (loopback in a namespace)"
    echo
    echo "Command: \`contrib/bench-cc.sh --reps $reps --ccs \"$ccs\"\`  "
    echo "2 ranks, --bind-to core, medians of $reps rounds (MB/s); siwarp with its default CRC on."
    echo
    echo "| congestion control | test | size | siwarp | btl tcp | siwarp/tcp |"
    echo "|---|---|---:|---:|---:|---:|"
    for cc in $ccs; do
        for tst in bw bibw; do
            for s in 65536 262144 1048576 4194304; do
                med() { cat "$tmp/$cc.$1.$tst".* 2>/dev/null | awk -v t="$tst" -v s="$s" '$1 == t && $2 == s { print $3 }' |
                        sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
                a=$(med siwarp); b=$(med tcp)
                [ -n "$a" ] && [ -n "$b" ] || continue
                printf '| %s | %s | %s KiB | %.0f | %.0f | %.2f |\n' "$cc" "$tst" $((s / 1024)) "$a" "$b" \
                    "$(echo "$a $b" | awk '{ print $1 / $2 }')"
            done
        done
    done
} > "$tmp/table.md"
cat "$tmp/table.md"
[ -n "$out" ] && cp "$tmp/table.md" "$out"
exit 0
