#!/bin/sh
# netns-nodes.sh - run mpirun across N "nodes": N network namespaces, each
# with one veth into a bridge (a switch) in a hub namespace of its own.
#
#   netns-nodes.sh N [MPIRUN-ARGS...]     e.g. netns-nodes.sh 4 -np 16 ./a.out
#
# Node i (0..N-1) is namespace NAME-i, address 10.232.0.(i+1)/24 on its veth
# NAME-i (the hub ends hang in NAME-h on the bridge), its own UTS namespace
# and host name NAME-i, so ORTE sees N hosts and loopback is never a path
# between two of them (ranks of one node reach each other over the node's
# own address, as on a real host).  mpirun runs on node 0; the daemons of
# the others are started by the rsh agent, which is this script again
# (--agent HOST CMD...: `ip netns exec` into the host's namespace), as in
# contrib/netns-mpirun.sh, the two-namespace version.  Added to the mpirun
# line: --hostfile (N hosts, slots=1 each: more ranks than N need
# --oversubscribe, and Open MPI then sets mpi_yield_when_idle as it would
# on an oversubscribed host), --mca plm_rsh_agent, --map-by node (rank r on
# node r mod N) and oob_tcp_if_include 10.232.0.0/24.  The BTLs' interface
# options are the caller's (10.232.0.0/24 names the nodes' network).
#
# Environment: NETNS_NAME (default swn$$, at most 10 characters),
# NETNS_MPIRUN_TIMEOUT (seconds, default 300).  N is 2 to 16.  Exit 77 when
# not root or `ip netns` is unavailable (the automake "skipped" code).  The
# namespaces and every process left in them are removed on exit, also on
# error or a signal.
set -u

here=$(cd "$(dirname "$0")" && pwd)
self="$here/$(basename "$0")"

# ---- rsh agent mode: netns-nodes.sh --agent HOST CMD... -------------------------
if [ "${1:-}" = "--agent" ]; then
    shift
    host=$1
    shift
    name=${NETNS_NODES_NAME:?netns-nodes.sh --agent runs only under netns-nodes.sh}
    case $host in
    10.232.0.[0-9]*) i=$(( ${host##*.} - 1 )) ;;
    *) echo "netns-nodes.sh: unknown pseudo-host '$host'" >&2; exit 255 ;;
    esac
    # ORTE hands the remote command as words, like ssh: run them in a shell
    exec ip netns exec "$name-$i" unshare --uts /bin/sh -c "hostname '$name-$i' && $*"
fi

# ---- driver ------------------------------------------------------------------------
nodes=${1:-}
case $nodes in
[2-9]|1[0-6]) shift ;;
*) echo "usage: $0 N(2-16) [MPIRUN-ARGS...]" >&2; exit 2 ;;
esac
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null 2>&1 || ! command -v unshare >/dev/null 2>&1; then
    echo "netns-nodes.sh: needs root, ip (iproute2) and unshare (util-linux)" >&2
    exit 77
fi
name=${NETNS_NAME:-swn$$}
if [ ${#name} -gt 10 ]; then
    echo "netns-nodes.sh: NETNS_NAME '$name' too long (max 10 characters)" >&2
    exit 2
fi
tmo=${NETNS_MPIRUN_TIMEOUT:-300}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/netns-nodes.XXXXXX") || exit 1

cleanup() {
    trap - EXIT INT TERM HUP
    i=0
    while [ $i -lt "$nodes" ]; do
        # processes started in our namespaces (orted, ranks), by pid
        pids=$(ip netns pids "$name-$i" 2>/dev/null)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
        ip netns del "$name-$i" 2>/dev/null
        i=$((i + 1))
    done
    ip netns del "$name-h" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

if ! ip netns add "$name-h" 2> "$tmp/err" ||
        ! ip -n "$name-h" link add br0 type bridge forward_delay 0 2>> "$tmp/err" ||
        ! ip -n "$name-h" link set br0 up 2>> "$tmp/err"; then
    cat "$tmp/err" >&2
    echo "netns-nodes.sh: could not make the hub namespace and its bridge" >&2
    exit 1
fi
: > "$tmp/hostfile"
i=0
while [ $i -lt "$nodes" ]; do
    ns=$name-$i
    if ! { ip netns add "$ns" &&
           ip link add "$ns" netns "$ns" type veth peer name "p$i" netns "$name-h" &&
           ip -n "$name-h" link set "p$i" master br0 up &&
           ip -n "$ns" link set lo up &&
           ip -n "$ns" link set "$ns" up &&
           ip -n "$ns" addr add "10.232.0.$((i + 1))/24" dev "$ns"; } 2>> "$tmp/err"; then
        cat "$tmp/err" >&2
        echo "netns-nodes.sh: could not make node $i" >&2
        exit 1
    fi
    echo "10.232.0.$((i + 1)) slots=1" >> "$tmp/hostfile"
    i=$((i + 1))
done
# every link carrying before mpirun starts (no sleeping: a bounded poll)
i=0
while [ $i -lt "$nodes" ]; do
    n=0
    until ip -n "$name-$i" link show "$name-$i" | grep -q LOWER_UP; do
        n=$((n + 1))
        if [ $n -gt 1000 ]; then
            echo "netns-nodes.sh: the veth of node $i never came up" >&2
            exit 1
        fi
    done
    i=$((i + 1))
done

NETNS_NODES_NAME=$name
export NETNS_NODES_NAME
# mpirun on node 0 under its host name; the other daemons through the agent
timeout -k 10 "$tmo" ip netns exec "$name-0" unshare --uts /bin/sh -c \
    'hostname "$0-0" && exec "$@"' "$name" \
    mpirun --hostfile "$tmp/hostfile" --map-by node \
    --mca plm_rsh_agent "$self --agent" \
    --mca oob_tcp_if_include 10.232.0.0/24 \
    "$@"
rc=$?
[ $rc -eq 124 ] && echo "netns-nodes.sh: mpirun killed after ${tmo}s" >&2
exit $rc
