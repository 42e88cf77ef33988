# guest-mpi.sh - runs inside the siw guest with Open MPI (build-guest-mpi.sh,
# siwrun=guest-mpi.sh), driven by run-mpi-hw.sh through /mnt/host/run:
#   hostdir        host: the share's path on the host; linked here to
#                  /mnt/host so the BTL and the test programs have the same
#                  path on both sides of a host+guest mpirun
#   steps          host: "ID NP PROGRAM ARGS..." run here with mpirun over
#                  siw0 (verbs backend), one a line
#   out.ID done.ID guest: output; "rc t0 t1"
#   agent          guest: the launch agent listens (TCP 2222): the host's
#                  mpirun starts its orted here through it
#   mixed.done     host: the host+guest job is over; the guest powers off
R=/mnt/host/run
T=${STEP_TIMEOUT:-400}
. /mnt/host/lib-guest.sh     # launch_agent
export HOME=/root OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_plm_rsh_agent=false OMPI_MCA_rmaps_base_oversubscribe=1
H=$(cat "$R/hostdir")
mkdir -p "$(dirname "$H")" && ln -sfn /mnt/host "$H"
OMPI_DIR=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
: >"$R/up"
up() { cut -d' ' -f1 /proc/uptime; }
echo "SIWMPI: $(ibv_devinfo -d siw0 2>&1 | grep -E 'hca_id|transport' | tr -s ' \n' ' ')"

while read -r id np prog args; do
    [ -n "$id" ] || continue
    t0=$(up)
    osc="--mca osc ^ucx"
    [ "$prog" = mpi_onesided ] && osc="--mca osc pt2pt"
    # shellcheck disable=SC2086
    timeout "$T" mpirun --mca mca_base_component_path "$H/mpi/comp:$OMPI_DIR" \
        --mca pml ob1 --mca btl siwarp,self --bind-to none $osc \
        --mca btl_siwarp_if_include "$(ip -4 -o addr show eth0 | awk '{print $4}')" --mca btl_siwarp_fallback error \
        --mca btl_base_verbose 20 -x SIWARP_DEVICE=siw0 -x SIWARP_DEBUG=1 \
        -np "$np" "$H/mpi/$prog" $args </dev/null >"/tmp/out.$id" 2>&1
    rc=$?
    cp "/tmp/out.$id" "$R/out.$id"
    echo "$rc $t0 $(up)" >"$R/done.$id.tmp" && mv "$R/done.$id.tmp" "$R/done.$id"
    echo "SIWMPI: step $id rc=$rc"
done <"$R/steps"

# the host+guest job: the launch agent, until the host says mixed.done
launch_agent "$R/agent" "$R/mixed.done"
dmesg | grep -iE 'siw|iwarp' | tail -40 >"$R/dmesg"
sync
echo "SIWMPI: done"
