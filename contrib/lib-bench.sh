# lib-bench.sh - sourced by the MPI benchmark scripts (bench-mpi.sh,
# bench-oversub.sh, bench-scale.sh): mpirun with the siwarp BTL of the
# build tree beside Open MPI's own plugins.
#
# bench_mpi_env NAME: BUILDDIR's btl_siwarp/.libs ahead of Open MPI's
# plugin directory (the .libs holds only the .so: a directory with the .la
# files too makes mpirun fail), and Open MPI's run-as-root settings; ends
# the script, naming it, if the BTL is not built.  Sets COMP and OMPI_DIR.
bench_mpi_env() {
    COMP=$BUILDDIR/btl_siwarp/.libs
    if [ ! -f "$COMP/mca_btl_siwarp.so" ]; then
        echo "$1: $COMP/mca_btl_siwarp.so not built (set BUILDDIR)" >&2
        exit 1
    fi
    OMPI_DIR=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
    [ -n "$OMPI_DIR" ] || OMPI_DIR=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
    export OMPI_MCA_mca_base_component_path="$COMP:$OMPI_DIR"
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}
