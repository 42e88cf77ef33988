#!/bin/sh
# bench-rma.sh - one-sided MPI over siwarp against the peer transports, in
# the OSU one-sided benchmarks' loops (test/mpi/mpi-rma-bench.c), with the
# goals of issue 34 judged in the same run.
#
#   contrib/bench-rma.sh [--reps N] [--netns] [--out FILE.md]
#
# Variants, alternating within each round (2 ranks, one per core):
#   siwarp   --mca pml ob1 --mca btl siwarp,self --mca osc rdma
#   tcp      --mca pml ob1 --mca btl tcp,self --mca osc pt2pt (5.0: osc rdma,
#            which has no pt2pt and carries btl tcp by active messages)
#   ucx      --mca pml ucx --mca osc ucx, UCX_TLS=tcp,self
# plus siwarp's two-sided figures (test/mpi/mpi-bench.c: osu_latency's
# half round trip at 8 B, osu_bw's window from 64 KiB) and the passive
# target: siwarp with btl_siwarp_progress_thread=1, the target idle and
# the target computing a whole second without calling MPI; and 8 B
# latencies with no --mca osc at all (Open MPI's own choice), siwarp
# against btl tcp.
# Medians over the rounds; every mpirun bounded (BENCH_RMA_TIMEOUT, 300 s).
# --netns: the two ranks in two network namespaces joined by a veth pair
# (contrib/netns-mpirun.sh; root).  Environment: BUILDDIR (the build tree
# whose btl_siwarp/.libs is used; default the source tree).
set -u

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
BUILDDIR=${BUILDDIR:-$top}
T=${BENCH_RMA_TIMEOUT:-300}
reps=3 netns=0 out=""
while [ $# -gt 0 ]; do
    case $1 in
    --reps) reps=$2; shift ;;
    --netns) netns=1 ;;
    --out) out=$2; shift ;;
    *) echo "usage: bench-rma.sh [--reps N] [--netns] [--out FILE.md]" >&2; exit 2 ;;
    esac
    shift
done

OMPI_DIR=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
export OMPI_MCA_mca_base_component_path="$BUILDDIR/btl_siwarp/.libs:${OMPI_DIR:-/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-rma.XXXXXX") || exit 1
child=""
cleanup() { [ -n "$child" ] && kill "$child" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for p in mpi-rma-bench mpi-bench; do
    mpicc -O2 -g -I"$top/test/mpi" -o "$tmp/$p" "$top/test/mpi/$p.c" || exit 1
done

if [ $netns = 1 ]; then
    export NETNS_NAME=swpr$$ NETNS_MPIRUN_TIMEOUT=$T NETNS_MPIRUN_CPUS="0 1"
    LAUNCH="$here/netns-mpirun.sh" BIND=none DEV="swpr$$-vs,swpr$$-vc" CIDR=10.231.0.0/24
else
    LAUNCH="timeout $T mpirun" BIND=core DEV=lo CIDR=lo
fi
# btl tcp's one-sided path: osc pt2pt (Open MPI 4.1); 5.0 removed it, and
# its osc rdma carries btl tcp through active messages instead
OSC_TCP=rdma
ompi_info 2>/dev/null | grep -q "MCA osc: pt2pt" && OSC_TCP=pt2pt
targs() {
    case $1 in
    siwarp) echo "--mca pml ob1 --mca btl siwarp,self --mca osc rdma" ;;
    # what a user gets without naming an osc component
    siwarp-default) echo "--mca pml ob1 --mca btl siwarp,self" ;;
    tcp-default) echo "--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include $CIDR" ;;
    siwarp-thread) echo "--mca pml ob1 --mca btl siwarp,self --mca osc rdma" \
                        "--mca btl_siwarp_progress_thread 1" ;;
    tcp) echo "--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include $CIDR --mca osc $OSC_TCP" ;;
    ucx) echo "--mca pml ucx --mca osc ucx --mca pml_ucx_tls any --mca pml_ucx_devices any" \
              "-x UCX_TLS=tcp,self -x UCX_NET_DEVICES=$DEV --mca btl ^siwarp" ;;
    esac
}
# run VARIANT TAG PROGRAM ARGS...: appends "TAG test size value" lines to $tmp/all
run() {
    v=$1 tag=$2; shift 2
    # shellcheck disable=SC2046
    $LAUNCH -np 2 --bind-to $BIND $(targs "$v") "$@" > "$tmp/run.out" 2>&1 &
    child=$!
    wait $child
    rc=$?
    child=""
    if [ $rc -ne 0 ]; then
        echo "bench-rma.sh: $v $* failed (exit $rc):" >&2
        tail -n 5 "$tmp/run.out" >&2
        return
    fi
    awk -v t="$tag" 'NF == 4 && $3 ~ /^[0-9.]+$/ { print t, $1, $2, $3 }' "$tmp/run.out" \
        >> "$tmp/all"
}

: > "$tmp/all"
LAT="-t put,get,acc,fop,cas"
BW="-t putbw,getbw -n 65536 -m 1048576"
for r in $(seq 1 "$reps"); do
    echo "bench-rma.sh: round $r of $reps" >&2
    for v in siwarp tcp ucx; do
        run $v $v "$tmp/mpi-rma-bench" $LAT
    done
    for v in siwarp tcp ucx; do
        run $v $v "$tmp/mpi-rma-bench" $BW
    done
    for v in siwarp-default tcp-default; do
        run $v $v "$tmp/mpi-rma-bench" $LAT
    done
    run siwarp two-sided "$tmp/mpi-bench" -t lat -n 8 -m 8
    run siwarp two-sided "$tmp/mpi-bench" -t bw -n 65536 -m 1048576 -f 4
    run siwarp-thread idle "$tmp/mpi-rma-bench" -t put,get,fop -i 2000
    run siwarp-thread computing "$tmp/mpi-rma-bench" -t put,get,fop -i 2000 -c 1000
done

# median TAG TEST SIZE
median() {
    awk -v t="$1" -v n="$2" -v s="$3" '$1 == t && $2 == n && $3 == s { print $4 }' "$tmp/all" |
        sort -g | awk '{ v[NR] = $1 }
                       END { if (NR % 2) print v[(NR + 1) / 2];
                             else if (NR) print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"
                                     else printf "%.2fx", a / b }'
}
best_lat() {    # the lower of tcp and ucx for TEST SIZE
    a=$(median tcp "$1" "$2"); b=$(median ucx "$1" "$2")
    awk -v a="$a" -v b="$b" 'BEGIN { if (a == "") print b; else if (b == "" || a < b) print a;
                                     else print b }'
}
best_bw() {
    a=$(median tcp "$1" "$2"); b=$(median ucx "$1" "$2")
    awk -v a="$a" -v b="$b" 'BEGIN { if (a == "") print b; else if (b == "" || a > b) print a;
                                     else print b }'
}

{
    where=loopback; [ $netns = 1 ] && where="two namespaces (veth)"
    echo "# One-sided MPI, $where, $(date -u '+%Y-%m-%d %H:%M') UTC, commit $(git -C "$top" rev-parse --short HEAD 2>/dev/null)"
    echo
    echo "Medians of $reps rounds; variants alternate within each round."
    echo "\`contrib/bench-rma.sh --reps $reps$([ $netns = 1 ] && echo " --netns")\`"
    echo
    lat2=$(median two-sided lat 8)
    echo "| 8 B latency (us) | siwarp osc/rdma | btl tcp osc/$OSC_TCP | ucx osc/ucx | vs best peer | vs 2-sided ($lat2) |"
    echo "|---|---:|---:|---:|---:|---:|"
    for t in put get acc fop cas; do
        s=$(median siwarp $t 8)
        echo "| $t | $s | $(median tcp $t 8) | $(median ucx $t 8) | $(ratio "$s" "$(best_lat $t 8)") | $(ratio "$s" "$lat2") |"
    done
    echo
    echo "| bandwidth (MB/s) | siwarp osc/rdma | btl tcp osc/$OSC_TCP | ucx osc/ucx | vs best peer | siwarp 2-sided bw | vs 2-sided |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    for t in putbw getbw; do
        for s in 65536 262144 1048576; do
            v=$(median siwarp $t $s); bw2=$(median two-sided bw $s)
            echo "| $t $s | $v | $(median tcp $t $s) | $(median ucx $t $s) | $(ratio "$v" "$(best_bw $t $s)") | $bw2 | $(ratio "$v" "$bw2") |"
        done
    done
    echo
    echo "| 8 B latency, no --mca osc given (us) | siwarp | btl tcp | ratio |"
    echo "|---|---:|---:|---:|"
    for t in put get acc fop cas; do
        a=$(median siwarp-default $t 8); b=$(median tcp-default $t 8)
        echo "| $t | $a | $b | $(ratio "$a" "$b") |"
    done
    echo
    echo "| passive target, progress thread (us) | target in MPI_Barrier | target computing 1 s | ratio |"
    echo "|---|---:|---:|---:|"
    for t in put get fop; do
        a=$(median idle $t 8); b=$(median computing $t 8)
        echo "| $t 8 B | $a | $b | $(ratio "$b" "$a") |"
    done
    echo
    echo "Goals (issue 34): latency <= 2.5x siwarp's two-sided 8 B; <= 0.5x the best peer for"
    echo "put, get, acc and <= 0.8x for fop, cas; put/get bandwidth from 64 KiB >= 2x the best"
    echo "peer and >= 0.9x siwarp's two-sided; passive target <= 2x idle."
} > "$tmp/report.md"
if [ -n "$out" ]; then cp "$tmp/report.md" "$out"; fi
cat "$tmp/report.md"
