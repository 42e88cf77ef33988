#!/bin/sh
# soak.sh - soak test of the siwarp BTL, TAP output.
#
#   soak.sh [SECONDS]        default: SOAK_MINUTES (5) minutes
#
# One long job: 8 ranks oversubscribed (SOAK_NP) run test/fault/mpi_soak:
# all-to-all and random-pair traffic of random sizes (0..SOAK_MAX bytes,
# default 4 MiB, rendezvous through RDMA Read with every pair busy at once),
# every byte verified, sub-communicators split and freed; each rank's RSS,
# open descriptors and registered memory at the first minute (a quarter of
# a short run) and at the end, failing when RSS grows by more than
# SOAK_RSS_MIB (64), descriptors by more than 4, or registered memory (the
# BTL's MPI_T variable btl_siwarp_registered_bytes) by more than
# SOAK_REG_MIB (64).
#
# Alongside, connection churn: the BTL keeps one connection per peer pair for
# a process's life and has no disconnect, so connections are only opened
# and closed by new processes; MPI_Comm_spawn is heavy (and needs dynamic
# process support), so a loop runs consecutive short 2-rank jobs (each
# connects, moves verified data both ways, finalizes and closes) for as
# long as the long job runs, and every one must succeed.
#
# Environment: BUILDDIR (default: the tree above this script), SOAK_NP,
# SOAK_MAX, SOAK_RSS_MIB, SOAK_REG_MIB.  Every mpirun is bounded by timeout.
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
BUILDDIR=${BUILDDIR:-$top}
case $BUILDDIR in /*) ;; *) BUILDDIR=$(cd "$BUILDDIR" && pwd) ;; esac
srcdir=${srcdir:-$top}
case $srcdir in /*) ;; *) srcdir=$(cd "$srcdir" && pwd) ;; esac
secs=${1:-$(( ${SOAK_MINUTES:-5} * 60 ))}
np=${SOAK_NP:-8}
max=${SOAK_MAX:-4194304}
OUT=$BUILDDIR/test/fault
COMP=$BUILDDIR/btl_siwarp/.libs
mkdir -p "$OUT"

if ! command -v mpicc >/dev/null 2>&1 || [ ! -f "$COMP/mca_btl_siwarp.so" ]; then
    echo "1..0 # SKIP mpicc or the siwarp BTL not available"; exit 0
fi
OMPI_DIR=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
[ -n "$OMPI_DIR" ] || OMPI_DIR=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
export OMPI_MCA_mca_base_component_path="$COMP:$OMPI_DIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_plm_rsh_agent=${OMPI_MCA_plm_rsh_agent:-false}
MPIRUN="mpirun --mca pml ob1 --mca btl siwarp,self --bind-to none"

mpicc -O2 -g -Wall -o "$OUT/mpi_soak" "$srcdir/test/fault/mpi_soak.c" > "$OUT/soak-build.log" 2>&1 || {
    echo "1..1"; echo "not ok 1 - build mpi_soak"; sed 's/^/# /' "$OUT/soak-build.log"; exit 1; }

echo "1..2"
log=$OUT/soak.log
t0=$(date +%s)
timeout -k 10 $((secs + 300)) $MPIRUN -np "$np" "$OUT/mpi_soak" -t "$secs" -r 60 \
    -m "$max" -a 65536 -g "${SOAK_RSS_MIB:-64}" -G "${SOAK_REG_MIB:-64}" -f 4 > "$log" 2>&1 &
job=$!
trap 'kill -9 $job 2>/dev/null' EXIT INT TERM

churn=0 churn_bad=0
while kill -0 $job 2>/dev/null; do
    clog=$OUT/soak-churn.log
    if timeout -k 5 120 $MPIRUN -np 2 "$OUT/mpi_soak" -t 1 -r 100 -m 262144 -a 65536 \
            -s $((churn + 2)) -g 1024 -f 1000 > "$clog" 2>&1; then
        churn=$((churn + 1))
    else
        churn_bad=$((churn_bad + 1))
        cp "$clog" "$OUT/soak-churn-failed-$churn_bad.log"
        [ $churn_bad -ge 3 ] && break
    fi
done
wait $job
rc=$?
trap - EXIT INT TERM
dt=$(( $(date +%s) - t0 ))
grep '^soak: t=\|^soak: done\|^soak-mem' "$log" | sed 's/^/# /'
if [ $rc -eq 0 ] && grep -q '^soak: done' "$log"; then
    echo "ok 1 - soak: $np ranks, ${dt} s, all data verified, RSS, fds and registered memory within bounds"
else
    echo "not ok 1 - soak: $np ranks, rc $rc after ${dt} s (see $log)"
    grep -v '^soak: rank' "$log" | tail -n 20 | sed 's/^/# /'
fi
if [ $churn_bad -eq 0 ] && [ $churn -gt 0 ]; then
    echo "ok 2 - connection churn: $churn consecutive 2-rank jobs, all verified"
else
    echo "not ok 2 - connection churn: $churn ok, $churn_bad failed (see $OUT/soak-churn-failed-*.log)"
fi
[ $rc -eq 0 ] && [ $churn_bad -eq 0 ]
