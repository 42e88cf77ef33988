#!/bin/sh
# installcheck.sh - the installed tree at work, as a user meets it (make
# installcheck; make distcheck runs it on its --prefix install):
#   - the README's example builds with pkg-config and runs;
#   - siwarp-perf measures against itself;
#   - a 2-rank `mpirun --mca pml ob1 --mca btl siwarp,self` job finds the
#     component where it was installed, with nothing but the README's one
#     line (OMPI_MCA_mca_base_component_path) when that is not Open MPI's
#     own directory.
#   installcheck.sh DESTDIR MAKE_CMD     (MAKE_CMD: make -s -C BUILDDIR)
# Prints TAP; exits non-zero if a check failed.

dest=$1 make_cmd=$2
top_srcdir=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/installcheck.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
eval "$($make_cmd pkg-print-dirs)"
[ -n "$prefix" ] || { echo "installcheck.sh: make pkg-print-dirs said nothing" >&2; exit 1; }

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
echo "1..3"

export LD_LIBRARY_PATH="$dest$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

flags=$(PKG_CONFIG_PATH=$dest$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest \
        pkg-config --cflags --libs siwarp) &&
# shellcheck disable=SC2086
${CC:-cc} -o "$tmp/hello" "$top_srcdir/contrib/examples/siwarp-hello.c" $flags \
    >"$tmp/log" 2>&1 && timeout 30 "$tmp/hello" >>"$tmp/log" 2>&1
if [ $? -eq 0 ]; then
    ok "siwarp-hello with pkg-config ($flags)"
else
    notok "siwarp-hello with pkg-config"; sed 's/^/# /' "$tmp/log" | tail -10
fi

if sh "$top_srcdir/test/pkg/perf-pair.sh" "$dest$bindir/siwarp-perf" >"$tmp/perf" 2>&1; then
    ok "siwarp-perf against itself: $(tail -n 1 "$tmp/perf" | tr -s ' ')"
else
    notok "siwarp-perf against itself"; sed 's/^/# /' "$tmp/perf" | tail -10
fi

if [ -z "$btlsiwarpdir" ] || [ -z "$mpicc" ]; then
    echo "ok 3 - mpirun with the installed component # SKIP built without Open MPI"
    exit $((failed > 0))
fi
cat >"$tmp/ring.c" <<'C'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, size, v = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        v = 4242;
        MPI_Send(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(&v, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("ring: %d ranks, got %d back\n", size, v);
    } else if (rank == 1) {
        MPI_Recv(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        v++;
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return !(rank != 0 || v == 4243);
}
C
"$mpicc" -o "$tmp/ring" "$tmp/ring.c" >"$tmp/log" 2>&1
# The README's line, when the component is not where Open MPI looks
if [ "$dest$btlsiwarpdir" != "$ompi_system_component_dir" ]; then
    OMPI_MCA_mca_base_component_path=$dest$btlsiwarpdir:$ompi_system_component_dir
    export OMPI_MCA_mca_base_component_path
fi
# loopback only: the machine's other interfaces are not this test's to use
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    timeout 120 mpirun -np 2 --oversubscribe --mca pml ob1 --mca btl siwarp,self \
    --mca btl_siwarp_if_include lo --mca oob_tcp_if_include lo \
    "$tmp/ring" >>"$tmp/log" 2>&1
if [ $? -eq 0 ] && grep -q "got 4243 back" "$tmp/log"; then
    ok "mpirun --mca btl siwarp,self, component from $btlsiwarpdir"
else
    notok "mpirun --mca btl siwarp,self, component from $btlsiwarpdir"
    sed 's/^/# /' "$tmp/log" | tail -15
fi
exit $((failed > 0))
