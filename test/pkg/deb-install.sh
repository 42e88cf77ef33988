#!/bin/sh
# deb-install.sh - install the siwarp .debs into a clean Debian 12 root
# (mmdebstrap, with this host's Debian package sources) next to
# openmpi-bin, and there, with no environment variable set:
#   - ompi_info lists the component;
#   - a 2-rank `mpirun --mca pml ob1 --mca btl siwarp,self` job passes a
#     message around (the program is built here with mpicc: the same
#     Debian 12 libraries);
#   - siwarp-perf measures against itself.
#   deb-install.sh PKG.deb...
# Exit 0: all passed; 77: cannot run here (the last line says why);
# anything else: a failure.  Needs root; bounded (timeout) at 25 minutes.

[ $# -gt 0 ] || { echo "usage: $0 PKG.deb..." >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "needs root (mmdebstrap --mode=root)"; exit 77; }
command -v mmdebstrap >/dev/null || { echo "no mmdebstrap (contrib/setup.sh)"; exit 77; }
command -v mpicc >/dev/null || { echo "no mpicc (contrib/setup.sh)"; exit 77; }
# this host's Debian sources, as apt here uses them
sources=
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -s "$f" ] && grep -q '^[^#]*debian' "$f" && sources="$sources $f"
done
[ -n "$sources" ] || { echo "no Debian package source configured in /etc/apt"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/deb-install.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
includes=
for d in "$@"; do
    cp "$d" "$tmp/" || exit 1
    includes="$includes --include=$tmp/$(basename "$d")"
done
chmod 755 "$tmp"; chmod 644 "$tmp"/*.deb

cat >"$tmp/ring.c" <<'C'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, v = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        v = 4242;
        MPI_Send(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("ring: got %d back\n", v);
    } else {
        MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        v++;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return !(rank != 0 || v == 4243);
}
C
mpicc -o "$tmp/siwarp-ring" "$tmp/ring.c" || exit 1

# run inside the new root; every step bounded, the first failure ends it
cat >"$tmp/inside.sh" <<'SH'
set -e
echo "inside: $(cat /etc/debian_version), $(dpkg-query -W -f='${Package} ${Version}\n' \
    libsiwarp0 siwarp-tools openmpi-btl-siwarp libopenmpi3 | tr '\n' ';')"
env | sed 's/^/inside: env: /'
timeout 60 ompi_info | grep 'MCA btl: siwarp'
timeout 120 mpirun --allow-run-as-root -np 2 --oversubscribe --mca pml ob1 --mca btl siwarp,self \
    --mca btl_siwarp_if_include lo --mca oob_tcp_if_include lo /usr/local/bin/siwarp-ring
sh /usr/local/bin/perf-pair.sh /usr/bin/siwarp-perf -t send -m lat -n 1000
echo "inside: all passed"
SH

timeout 1500 mmdebstrap --mode=root --variant=apt \
    --include=openmpi-bin $includes \
    --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
    --customize-hook="copy-in $tmp/siwarp-ring $tmp/inside.sh $(dirname "$0")/perf-pair.sh /usr/local/bin" \
    --customize-hook='chroot "$1" env -i PATH=/usr/local/bin:/usr/bin:/bin sh /usr/local/bin/inside.sh' \
    bookworm "$tmp/root" $sources
rc=$?
[ $rc -eq 0 ] && echo "deb-install: passed" || echo "deb-install: mmdebstrap or a step inside failed (status $rc)"
exit $rc
