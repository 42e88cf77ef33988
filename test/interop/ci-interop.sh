#!/bin/sh
# ci-interop.sh - `make check-interop`, `check-interop-perftest`,
# `check-interop-hw`, `check-interop-mpi-hw` and `check-interop-uct-hw` for
# CI: only when ../shared/siw-vm exists, under an overall time limit (INTEROP_TIMEOUT seconds, default
# 1500 = 25 min, guest build included), output TAP.  Run from the top of a
# configured tree.  Exits 0 when skipped or when no test failed.
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
scripts=${SIWVM_SCRIPTS:-$(cd "$top/.." 2>/dev/null && pwd)/shared/siw-vm}
if [ ! -d "$scripts" ]; then
    echo "1..0 # SKIP no ../shared/siw-vm"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "1..0 # SKIP needs root (guest build, capture on lo)"
    exit 0
fi
[ -f Makefile ] || { ./configure >/dev/null || { echo "Bail out! configure failed"; exit 1; }; }
make -j2 contrib/siwarp-rping contrib/siwarp-perftest >/dev/null || { echo "Bail out! build failed"; exit 1; }
# the siw matrix, perftest -R against siwarp-perftest (~1 min), then the
# verbs backend on the guest's siw0 and the mixed cluster (host rank on the
# software backend, guest rank on siw0), for the BTL and then the UCX
# transport
timeout --kill-after=30 "${INTEROP_TIMEOUT:-1500}" sh -c '
    rc=0
    make --no-print-directory check-interop SIWVM_SCRIPTS="$1" ${2:+INTEROP_BOOTS="$2"} || rc=1
    make --no-print-directory check-interop-perftest SIWVM_SCRIPTS="$1" || rc=1
    make --no-print-directory check-interop-hw SIWVM_SCRIPTS="$1" || rc=1
    make --no-print-directory check-interop-mpi-hw SIWVM_SCRIPTS="$1" || rc=1
    make --no-print-directory check-interop-uct-hw SIWVM_SCRIPTS="$1" || rc=1
    exit $rc' ci-interop "$scripts" "$INTEROP_BOOTS"
rc=$?
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "Bail out! check-interop exceeded ${INTEROP_TIMEOUT:-1500} s"
fi
exit $rc
