# lib-mpi-tap.sh - sourced by the MPI test drivers: TAP helpers, where the
# build is, and the environment every mpirun of theirs needs.
#
# Sets srcdir, BUILDDIR, T (seconds per mpirun: MPI_TEST_TIMEOUT, default
# 180), COMP (the component's directory), OUT (where programs and logs go),
# and exports the component path and the root and launch settings.  The
# caller checks `mpi_tap_usable` before its first test.

srcdir=${srcdir:-$(dirname "$0")/../..}
case $srcdir in /*) ;; *) srcdir=$(cd "$srcdir" && pwd) ;; esac
BUILDDIR=${BUILDDIR:-$(pwd)}
T=${MPI_TEST_TIMEOUT:-180}
COMP=$BUILDDIR/btl_siwarp/.libs
OUT=$BUILDDIR/test/mpi
mkdir -p "$OUT"

. "$srcdir/test/lib-tap.sh"
# log_name NAME: a log file under $OUT named after a test
log_name() { echo "$OUT/$(echo "$1" | tr -c 'A-Za-z0-9.=-' '_' | tr -s _ | cut -c1-80).log"; }

# mpi_tap_usable: 0 when mpicc, mpirun and the built component are there;
# otherwise prints the TAP skip plan naming what is missing.
mpi_tap_usable() {
    if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
        echo "1..0 # SKIP mpicc/mpirun not installed"
        return 1
    fi
    if [ ! -f "$COMP/mca_btl_siwarp.so" ]; then
        echo "1..0 # SKIP $COMP/mca_btl_siwarp.so not built (configure found no Open MPI headers?)"
        return 1
    fi
    return 0
}

# Open MPI finds the component in the build tree; root needs the two flags.
OMPI_DIR=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
[ -n "$OMPI_DIR" ] || OMPI_DIR=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
export OMPI_MCA_mca_base_component_path="$COMP:$OMPI_DIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# keep Open MPI from probing for an rsh agent / hostfile in odd containers
export OMPI_MCA_plm_rsh_agent=${OMPI_MCA_plm_rsh_agent:-false}
export OMPI_MCA_rmaps_base_oversubscribe=1

# What differs between Open MPI 4.1 and 5.0 for a test (README: Open MPI 5):
# OSC_AM, the one-sided component that runs over a BTL's sends (4.1:
# osc/pt2pt; 5.0 removed it, osc/rdma emulates RDMA over active messages
# on a BTL without it); BTL_SM, the shared-memory BTL (vader, sm).  5.0's
# launcher (PRRTE) takes its settings as PRTE_MCA_*, and PMIx reads
# OMPI_MCA_mca_base_component_path as its own plugin path unless its own
# is set.
OMPI_MAJOR=$(ompi_info -V 2>/dev/null | sed -n 's/^Open MPI v\([0-9]*\)\..*/\1/p')
if [ "${OMPI_MAJOR:-4}" -ge 5 ]; then
    OSC_AM=rdma BTL_SM=sm
    export PRTE_MCA_plm_ssh_agent=${PRTE_MCA_plm_ssh_agent:-false}
    export PRTE_MCA_rmaps_default_mapping_policy=${PRTE_MCA_rmaps_default_mapping_policy-:oversubscribe}
    pmix_lib=$(pkg-config --variable=libdir pmix 2>/dev/null)
    [ -d "$pmix_lib/pmix" ] && export PMIX_MCA_mca_base_component_path="$pmix_lib/pmix"
    # Debian 13's mpirun crashes on any MPMD line (open-mpi/ompi#13303):
    # where it does, mpirun-mpmd.sh runs such lines as one SPMD job
    if [ -z "${MPMD_REAL_MPIRUN:-}" ] && command -v mpirun >/dev/null 2>&1; then
        timeout 60 mpirun -np 1 true : -np 1 true >/dev/null 2>&1
        if [ $? -eq 139 ]; then
            export MPMD_REAL_MPIRUN=$(command -v mpirun)
            mkdir -p "$OUT/mpmd-bin"
            printf '#!/bin/sh\nexec sh "%s/test/mpi/mpirun-mpmd.sh" "$@"\n' "$srcdir" > "$OUT/mpmd-bin/mpirun"
            chmod +x "$OUT/mpmd-bin/mpirun"
            export PATH="$OUT/mpmd-bin:$PATH"
        fi
    fi
else
    OSC_AM=pt2pt BTL_SM=vader
fi

# mpi_tap_build WHAT LOG PROGRAM...: build test/mpi/PROGRAM.c into $OUT with
# mpicc, one TAP line for all ("build WHAT with mpicc"); on failure the
# plan and exit, since nothing can run
mpi_tap_build() {
    bwhat=$1 blog=$2
    shift 2
    bok=1
    : > "$blog"
    for bp in "$@"; do
        mpicc -O2 -g -Wall -o "$OUT/$bp" "$srcdir/test/mpi/$bp.c" >> "$blog" 2>&1 || bok=0
    done
    if [ $bok = 1 ]; then
        ok "build $bwhat with mpicc"
    else
        not_ok "build $bwhat with mpicc"; diag "$blog"
        echo "1..$n"; exit 1
    fi
}

# netns_why: empty when two network namespaces can be made here, else why not
netns_why() {
    if [ "$(id -u)" != 0 ]; then echo "not root"
    elif ! command -v ip >/dev/null 2>&1; then echo "ip (iproute2) not installed"
    elif ! "$srcdir/contrib/netns.sh" check >/dev/null 2>&1; then echo "ip netns unavailable here"
    elif ! command -v unshare >/dev/null 2>&1; then echo "unshare (util-linux) not installed"
    fi
}
