#!/bin/bash
# build-guest-mpi.sh - the siw guest of ../shared/siw-vm/build-guest.sh with
# Open MPI added (openmpi-bin, the same Debian 12 build as the host's) and
# socat (the launch agent of a host+guest mpirun), for running the BTL over
# the verbs backend inside the guest and the mixed-cluster job.
#
# Output in $SIWVM_MPI (default /tmp/siwvm-mpi); the kernel, siw.ko builds
# and debootstrap's package cache are taken from an existing guest build in
# $SIWVM (default /tmp/siwvm) when there is one, so only the userland is
# assembled again (~2 min).  The shared scripts stay untouched: they are
# copied to a temporary directory and the package list is extended there.
# Boot it with: SIWVM=$SIWVM_MPI MEM=2048 ../shared/siw-vm/boot.sh ...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SCRIPTS=${SIWVM_SCRIPTS:-$(cd "$here/../../.." && pwd)/shared/siw-vm}
[ -d "$SCRIPTS" ] || SCRIPTS=/work/shared/siw-vm
BASE=${SIWVM:-/tmp/siwvm}
W=${SIWVM_MPI:-/tmp/siwvm-mpi}
EXTRA_PKGS=${EXTRA_PKGS:-openmpi-bin,libopenmpi3,socat}
mkdir -p "$W"
for d in debs kernel siwmod siwmod-fixed src cache; do
    [ -e "$W/$d" ] || [ ! -e "$BASE/$d" ] || cp -a "$BASE/$d" "$W/"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -a "$SCRIPTS/." "$tmp/"
grep -q '^PKGS=' "$tmp/build-guest.sh" || { echo "build-guest.sh has no PKGS= line" >&2; exit 1; }
sed -i "s|^PKGS=\\(.*\\)$|PKGS=\\1,$EXTRA_PKGS|" "$tmp/build-guest.sh"
# a userland built earlier without Open MPI is rebuilt
[ -x "$W/rootfs-full/usr/bin/orterun" ] || rm -rf "$W/rootfs-full"
SIWVM=$W bash "$tmp/build-guest.sh"
