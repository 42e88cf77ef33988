#!/bin/sh
# valgrind-mpi.sh - the MPI ping-pong (0 B..1 MiB, 2 ranks, btl siwarp) and
# one-sided MPI over osc/rdma (atomics, put, get, flush) under valgrind
# memcheck, TAP.  Fails on any error whose innermost frame is in
# siwarp's own code (libsiwarp or the BTL); reports inside Open MPI itself
# (its rcache interval tree is known to valgrind as uninitialised reads) are
# counted and printed, not failed.
srcdir=${srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILDDIR=${BUILDDIR:-$(pwd)}
OUT=$BUILDDIR/test/mpi
COMP=$BUILDDIR/btl_siwarp/.libs

if ! command -v valgrind >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1 ||
   [ ! -f "$COMP/mca_btl_siwarp.so" ]; then
    echo "1..0 # SKIP needs valgrind, mpirun and the built BTL"
    exit 0
fi
echo "1..2"
mkdir -p "$OUT"
for p in mpi_pingpong mpi_rma; do
    if ! mpicc -O1 -g -o "$OUT/${p}_vg" "$srcdir/test/mpi/$p.c" 2>"$OUT/valgrind-build.log"; then
        echo "not ok - build $p"; exit 1
    fi
done
sys=$(ompi_info --path pkglibdir --parsable 2>/dev/null | cut -d: -f3)
export OMPI_MCA_mca_base_component_path="$COMP${sys:+:$sys}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# memcheck N WHAT MPIRUN-ARGS... -- PROGRAM ARGS: one run under valgrind
failed=0
memcheck() {
    num=$1 what=$2
    shift 2
    rm -f "$OUT"/valgrind.*.log
    timeout 600 mpirun -np 2 --oversubscribe --mca pml ob1 --mca btl siwarp,self "$@" \
        > "$OUT/valgrind-run.log" 2>&1
    rc=$?
    # one line per error context: its innermost frame outside libc and
    # valgrind's preload (a syscall-parameter error starts in libc's wrapper)
    tops=$(awk '/^==[0-9]+== [A-Z].*(uninitialised|Invalid|points to|Mismatched|overlap|free)/ {want=1; next}
                want && /^==[0-9]+== +(at|by) 0x/ {
                    if ($0 ~ /__libc_|libc\.so|vgpreload|\((sendmsg|sendto|send|writev|write|recv|syscall-template)\.[cS]/) next
                    sub(/^==[0-9]+== +(at|by) 0x[0-9A-F]+: /, ""); print; want=0 }' \
           "$OUT"/valgrind.*.log 2>/dev/null)
    ours=$(printf '%s\n' "$tops" | grep -E '^(swp_|siwarp_|mca_btl_siwarp|tx_|rx_|cm_)' || true)
    theirs=$(printf '%s\n' "$tops" | grep -cvE '^(swp_|siwarp_|mca_btl_siwarp|tx_|rx_|cm_|$)' || true)
    if [ $rc -eq 0 ] && [ -z "$ours" ]; then
        echo "ok $num - valgrind memcheck: $what, no error in siwarp code ($theirs report(s) inside Open MPI)"
    else
        echo "not ok $num - valgrind memcheck: $what: rc $rc, errors in siwarp code:"
        printf '%s\n' "$ours" | sed 's/^/#   /'
        tail -n 5 "$OUT/valgrind-run.log" | sed 's/^/#   /'
        failed=1
    fi
}
VG="valgrind --log-file=$OUT/valgrind.%p.log --num-callers=30"
memcheck 1 "ping-pong 0 B..1 MiB over btl siwarp" --mca osc ^ucx \
    $VG "$OUT/mpi_pingpong_vg" 1048576
memcheck 2 "one-sided over osc/rdma: atomics, put/get, flush (MPI_Win_create windows)" \
    --mca osc rdma $VG "$OUT/mpi_rma_vg" create counter cas sync
exit $failed
