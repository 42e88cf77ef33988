# guest-uct.sh - runs inside the siw guest with Open MPI and UCX
# (build-guest-mpi.sh, siwrun=guest-uct.sh), driven by run-uct-hw.sh
# through /mnt/host/run.  uct_siwarp over libsiwarp's verbs backend on
# siw0 (SIWARP_DEVICE=siw0): ucx_info, ucx_perftest pairs inside the guest,
# and the guest's half of host+guest runs.
#   hostdir        host: the share's path on the host; linked here to
#                  /mnt/host so the module and programs have the same path
#                  on both sides of a host+guest mpirun
#   steps          host: "ID KIND [VAR=VALUE...] [ARGS...]", one a line:
#                    info    ucx_info -d
#                    check   test/uct/uct_check (TAP) on eth0
#                    pair    a ucx_perftest server and client, both here
#                    server  a ucx_perftest server for the host's client;
#                            ready.ID once it waits for the connection
#                    client  a ucx_perftest client of the host's server
#                            (which says hready.ID) at $HOSTIP
#                    sh      a shell command line (diagnostics)
#                    agent   the launch agent of a host+guest mpirun (TCP
#                            2222), until the host says mixed.done
#   out.ID done.ID guest: output; "rc t0 t1"
# Every run: LD_PRELOAD of the module, SIWARP_DEVICE=siw0, UCX_TLS=siwarp
# and UCX_NET_DEVICES=eth0 unless the step sets them.
R=/mnt/host/run
T=${STEP_TIMEOUT:-150}
. /mnt/host/lib-guest.sh     # wait_file, launch_agent
export HOME=/root OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
H=$(cat "$R/hostdir")
mkdir -p "$(dirname "$H")" && ln -sfn /mnt/host "$H"
HOSTIP=$(cat "$R/hostip")
# ucx-utils is not in the guest: the host's ucx_info and ucx_perftest (the
# same Debian build as the guest's libucx0), and libgomp for the latter
export PATH="$H/uct/bin:$PATH" LD_LIBRARY_PATH="$H/uct/lib"
: >"$R/up"
up() { cut -d' ' -f1 /proc/uptime; }
myip=$(ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1)
echo "SIWUCT: $(ibv_devinfo -d siw0 2>&1 | grep -E 'hca_id|transport|max_sge' | tr -s ' \n' ' ')"

# ENV ARGS -> the words that set variables, then the rest
split_env() {
    envs=; args=
    for w in "$@"; do
        case $w in
            [A-Z]*=*) [ -z "$args" ] && { envs="$envs $w"; continue; } ;;
        esac
        args="$args $w"
    done
}

# what every run gets (a step's VAR=VALUE words come after, and win)
E="env LD_PRELOAD=$H/uct/libuct_siwarp.so.0 SIWARP_DEVICE=siw0 SIWARP_DEBUG=1 UCX_TLS=siwarp UCX_NET_DEVICES=eth0"

# perftest_server LOG READYFILE ARGS...: stdbuf so the readiness line is not
# held in a stdio buffer; READYFILE appears when the server waits
perftest_server() {
    log=$1 ready=$2; shift 2
    mkfifo "/tmp/fifo.$$"
    # shellcheck disable=SC2086
    timeout "$T" $E $envs stdbuf -oL ucx_perftest "$@" >"/tmp/fifo.$$" 2>&1 &
    spid=$!
    exec 3<"/tmp/fifo.$$"
    rm -f "/tmp/fifo.$$"
    while IFS= read -r line <&3; do
        echo "$line" >>"$log"
        case $line in *"Waiting for connection"*) echo "$port" >"$ready"; break ;; esac
    done
    cat <&3 >>"$log" &
    cpid=$!
}

n=0
while read -r id kind rest; do
    [ -n "$id" ] || continue
    n=$((n + 1))
    # shellcheck disable=SC2086
    split_env $rest
    t0=$(up)
    out=/tmp/out.$id
    : >"$out"
    port=$((13000 + n))
    case $kind in
    info)
        # shellcheck disable=SC2086
        timeout "$T" $E $envs ucx_info -d $args >"$out" 2>&1; rc=$? ;;
    check)
        # shellcheck disable=SC2086
        timeout "$T" $E $envs uct_check $args >"$out" 2>&1; rc=$? ;;
    pair)
        # shellcheck disable=SC2086
        perftest_server "$out" "/tmp/ready.$id" -p $port $args
        # shellcheck disable=SC2086
        timeout "$T" $E $envs ucx_perftest "$myip" -p $port $args -f >"/tmp/client.$id" 2>&1
        rc=$?
        wait $spid; src=$?
        wait $cpid
        exec 3<&-
        cat "/tmp/client.$id" >>"$out"
        echo "SIWUCT: server rc=$src client rc=$rc" >>"$out"
        [ $src = 0 ] || rc=$src ;;
    server)
        # shellcheck disable=SC2086
        perftest_server "$out" "$R/ready.$id" -p $port $args
        wait $spid; rc=$?
        wait $cpid
        exec 3<&- ;;
    client)
        wait_file "$R/hready.$id" 1200
        hport=$(cat "$R/hready.$id" 2>/dev/null)
        # shellcheck disable=SC2086
        timeout "$T" $E $envs ucx_perftest "$HOSTIP" -p "${hport:-0}" $args -f >"$out" 2>&1
        rc=$? ;;
    agent)
        launch_agent "$R/agent.$id" "$R/mixed.done"
        rc=0 ;;
    sh)
        # diagnostics: a shell command line
        timeout "$T" sh -c "$args" >"$out" 2>&1; rc=$? ;;
    *)
        echo "unknown step kind $kind" >"$out"; rc=2 ;;
    esac
    cp "$out" "$R/out.$id"
    echo "$rc $t0 $(up)" >"$R/done.$id.tmp" && mv "$R/done.$id.tmp" "$R/done.$id"
    echo "SIWUCT: step $id $kind rc=$rc"
done <"$R/steps"
dmesg | grep -iE 'siw|iwarp' | tail -40 >"$R/dmesg"
sync
echo "SIWUCT: done"
