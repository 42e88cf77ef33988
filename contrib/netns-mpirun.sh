#!/bin/sh
# netns-mpirun.sh - run mpirun across two "hosts": two network namespaces
# joined by a veth pair (made by contrib/netns.sh), one rank per namespace.
#
#   netns-mpirun.sh [MPIRUN-ARGS...]       e.g. netns-mpirun.sh -np 2 ./mpi_pingpong
#
# How: mpirun itself runs in NAME-s (10.231.0.1); the hostfile names the two
# veth addresses, so ORTE launches its daemon for 10.231.0.2 through the rsh
# agent, which is this script again (--agent HOST CMD...): it maps the host
# to its namespace and runs CMD there with `ip netns exec`.  Each namespace
# gets its own UTS namespace and host name (NAME-s / NAME-c) so ORTE sees two
# nodes, and loopback is never a path between the ranks.  Added to the
# mpirun line: --hostfile, --mca plm_rsh_agent, --map-by node,
# oob_tcp_if_include and btl_siwarp_if_include set to the veth pair, by
# interface name (Open MPI 5.0.7's PRRTE finds no interface for a subnet
# such as 10.231.0.0/24, ignores the setting and may carry its channel
# over any link; names work for 4.1's ORTE and 5.0's PRRTE alike) (the
# BTL's interface list can be overridden with NETNS_BTL_IF; other BTLs'
# interface options are the caller's business, e.g. btl_tcp_if_include
# 10.231.0.0/24).
#
# Environment: NETNS_NAME (default swpm$$, max 12 characters),
# NETNS_MPIRUN_TIMEOUT (seconds, default 300), NETNS_MTU / NETNS_DELAY (see
# netns.sh), NETNS_MPIRUN_CPUS="S C" (pin every process of the server
# namespace to CPU S and of the client namespace to CPU C, with taskset: the
# two "hosts" then own a core each, as real hosts would; without it the ranks
# float, and mpirun's --bind-to core cannot help, since each daemon believes
# its host's core 0 is free and both ranks would land on it).  Exit 77 when not root or `ip netns` is unavailable (the
# automake "skipped" code).  The namespaces and every process left in them
# are removed on exit, also on error or a signal.
set -u

here=$(cd "$(dirname "$0")" && pwd)
self="$here/$(basename "$0")"
NETNS="$here/netns.sh"

# ---- rsh agent mode: netns-mpirun.sh --agent HOST CMD... --------------------
if [ "${1:-}" = "--agent" ]; then
    shift
    host=$1
    shift
    name=${NETNS_MPIRUN_NAME:?netns-mpirun.sh --agent runs only under netns-mpirun.sh}
    case $host in
    10.231.0.1) side=s ;;
    10.231.0.2) side=c ;;
    *) echo "netns-mpirun.sh: unknown pseudo-host '$host'" >&2; exit 255 ;;
    esac
    pin=""
    [ "$side" = c ] && [ -n "${NETNS_MPIRUN_CPU_C:-}" ] && pin="taskset -c $NETNS_MPIRUN_CPU_C"
    # ORTE hands the remote command as words, like ssh: run them in a shell
    exec ip netns exec "$name-$side" unshare --uts $pin /bin/sh -c \
        "hostname '$name-$side' && $*"
fi

# ---- driver ----------------------------------------------------------------
"$NETNS" check >/dev/null 2>&1
rc=$?
if [ $rc -ne 0 ]; then
    echo "netns-mpirun.sh: network namespaces unavailable here (root and ip netns needed)" >&2
    exit 77
fi
if ! command -v unshare >/dev/null 2>&1; then
    echo "netns-mpirun.sh: unshare (util-linux) not found" >&2
    exit 77
fi

name=${NETNS_NAME:-swpm$$}
tmo=${NETNS_MPIRUN_TIMEOUT:-300}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/netns-mpirun.XXXXXX") || exit 1

cleanup() {
    trap - EXIT INT TERM HUP
    # processes we started in our namespaces (orted, ranks) go first, by pid
    for ns in "$name-s" "$name-c"; do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    done
    "$NETNS" down "$name" >/dev/null 2>&1
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

if ! "$NETNS" up "$name" > "$tmp/env" 2> "$tmp/err"; then
    cat "$tmp/err" >&2
    echo "netns-mpirun.sh: could not create the namespaces" >&2
    exit 1
fi
printf '10.231.0.1 slots=1\n10.231.0.2 slots=1\n' > "$tmp/hostfile"

NETNS_MPIRUN_NAME=$name
export NETNS_MPIRUN_NAME
btl_if=${NETNS_BTL_IF:-$name-vs,$name-vc}
pin_s=""
if [ -n "${NETNS_MPIRUN_CPUS:-}" ]; then
    # shellcheck disable=SC2086
    set -- $NETNS_MPIRUN_CPUS -- "$@"
    if [ "${3:-}" != "--" ] || ! [ "$1" -ge 0 ] 2>/dev/null || ! [ "$2" -ge 0 ] 2>/dev/null ||
            ! command -v taskset >/dev/null 2>&1; then
        echo "netns-mpirun.sh: NETNS_MPIRUN_CPUS must be two CPU numbers (and taskset installed): '$NETNS_MPIRUN_CPUS'" >&2
        exit 2
    fi
    pin_s="taskset -c $1"
    NETNS_MPIRUN_CPU_C=$2
    export NETNS_MPIRUN_CPU_C
    shift 3
fi

# mpirun runs in the server namespace under its own host name; the daemon
# for 10.231.0.2 is started by the agent in the client namespace
# shellcheck disable=SC2086
timeout -k 10 "$tmo" ip netns exec "$name-s" unshare --uts $pin_s /bin/sh -c \
    'hostname "$0-s" && exec "$@"' "$name" \
    mpirun --hostfile "$tmp/hostfile" --map-by node \
    --mca plm_rsh_agent "$self --agent" \
    --mca oob_tcp_if_include "$name-vs,$name-vc" \
    --mca btl_siwarp_if_include "$btl_if" \
    "$@"
rc=$?
[ $rc -eq 124 ] && echo "netns-mpirun.sh: mpirun killed after ${tmo}s" >&2
exit $rc
