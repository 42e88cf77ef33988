#!/bin/sh
# contrib/probes/conn-ab.sh A_DIR B_DIR [ROUNDS] - time to first message of
# two builds of the siwarp BTL, alternating: bench-mpi.sh's connection
# phase (test/mpi/mpi-connect -t connect, 8 oversubscribed ranks,
# --bind-to none) without its other phases.
#
# A_DIR and B_DIR are directories holding a built mca_btl_siwarp.so (a
# build tree's btl_siwarp/.libs).  Round r runs A then B when r is even, B
# then A when odd; ROUNDS (default 15) of each.  Prints every run, then the
# medians of "connect" (time to first message, maximum over ranks) and
# "connlast" (from the last rank leaving MPI_Init), and B/A.
# Environment: BUILDDIR (where test/mpi/mpi-connect.c is, default: this
# tree), NP (default 8), BENCH_TIMEOUT (seconds per mpirun, default 120).
set -u

[ $# -ge 2 ] || { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
A=$1; B=$2; ROUNDS=${3:-15}
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILDDIR=${BUILDDIR:-$top}
NP=${NP:-8}
T=${BENCH_TIMEOUT:-120}
for d in "$A" "$B"; do
    [ -f "$d/mca_btl_siwarp.so" ] || { echo "conn-ab: no $d/mca_btl_siwarp.so" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
mpicc -O2 -o "$tmp/mpi-connect" "$BUILDDIR/test/mpi/mpi-connect.c" || exit 1
OMPI_DIR=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
[ -n "$OMPI_DIR" ] || OMPI_DIR=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_plm_rsh_agent=${OMPI_MCA_plm_rsh_agent:-false}

one() {     # NAME DIR
    OMPI_MCA_mca_base_component_path="$2:$OMPI_DIR" timeout "$T" \
        mpirun -np "$NP" --oversubscribe --bind-to none --mca pml ob1 --mca btl siwarp,self \
        --mca osc ^ucx "$tmp/mpi-connect" -t connect > "$tmp/out" 2>&1 || {
        echo "conn-ab: $1 failed:" >&2; tail -5 "$tmp/out" >&2; return 1; }
    c=$(awk '$1 == "connect" { print $3 }' "$tmp/out")
    l=$(awk '$1 == "connlast" { print $3 }' "$tmp/out")
    echo "$1 $c $l" | tee -a "$tmp/all"
}

r=0
while [ $r -lt "$ROUNDS" ]; do
    if [ $((r % 2)) -eq 0 ]; then one A "$A" && one B "$B"; else one B "$B" && one A "$A"; fi || exit 1
    r=$((r + 1))
done
median() {  # NAME COLUMN
    awk -v n="$1" '$1 == n { print $'"$2"' }' "$tmp/all" | sort -g |
        awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
for col in 2 3; do
    name=connect; [ $col = 3 ] && name=connlast
    ma=$(median A $col); mb=$(median B $col)
    echo "$name median over $ROUNDS rounds: A $ma us, B $mb us, B/A $(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.3f", b / a }')"
done
