#!/bin/sh
# netns.sh - two network namespaces joined by a veth pair, for two-process
# tests that must cross a real (virtual) link instead of loopback.
#
#   netns.sh up NAME      create NAME-s (server) and NAME-c (client), a veth
#                         pair NAME-vs / NAME-vc between them, addresses
#                         10.231.0.1/24 (s) and 10.231.0.2/24 (c) plus
#                         fd00:231::1/64 and fd00:231::2/64, lo up in both;
#                         prints shell assignments (SERVER_NS= ... ) on stdout
#   netns.sh down NAME    delete both namespaces (the veth pair goes with them)
#   netns.sh exec NAME s|c CMD...   run CMD in the server / client namespace
#   netns.sh check        exit 0 if namespaces can be created here
#
# NAME must be short (interface names are limited to 15 characters) and
# unique: callers use their PID, e.g. swp$$.  Options through the environment:
#   NETNS_MTU (default 1500), NETNS_DELAY (tc netem delay on both ends, e.g. 1ms),
#   NETNS_RAILS=2 (a second veth pair NAME-ws / NAME-wc on 10.232.0.1/24 and
#   10.232.0.2/24, made after the first: two networks between the "hosts").
set -eu

usage() {
    echo "usage: $0 up|down NAME | exec NAME s|c CMD... | check" >&2
    exit 2
}

[ $# -ge 1 ] || usage
cmd=$1
shift

need_root() {
    if [ "$(id -u)" != 0 ]; then
        echo "netns.sh: needs root" >&2
        exit 77
    fi
    if ! command -v ip >/dev/null 2>&1; then
        echo "netns.sh: ip (iproute2) not found" >&2
        exit 77
    fi
}

case $cmd in
check)
    need_root
    probe="swpchk$$"
    if ! ip netns add "$probe" 2>/dev/null; then
        echo "netns.sh: ip netns add failed (no namespace support?)" >&2
        exit 77
    fi
    ip netns del "$probe"
    exit 0
    ;;
up)
    [ $# -eq 1 ] || usage
    need_root
    name=$1
    if [ ${#name} -gt 12 ]; then
        echo "netns.sh: NAME '$name' too long (max 12 characters)" >&2
        exit 2
    fi
    mtu=${NETNS_MTU:-1500}
    s="$name-s"
    c="$name-c"
    # half-made state is cleaned up by 'down'; make that automatic on error
    trap 'ip netns del "$s" 2>/dev/null || true; ip netns del "$c" 2>/dev/null || true' EXIT
    ip netns add "$s"
    ip netns add "$c"
    ip link add "$name-vs" netns "$s" type veth peer name "$name-vc" netns "$c"
    ip -n "$s" link set lo up
    ip -n "$c" link set lo up
    ip -n "$s" link set "$name-vs" mtu "$mtu" up
    ip -n "$c" link set "$name-vc" mtu "$mtu" up
    ip -n "$s" addr add 10.231.0.1/24 dev "$name-vs"
    ip -n "$c" addr add 10.231.0.2/24 dev "$name-vc"
    ip -n "$s" addr add fd00:231::1/64 dev "$name-vs" nodad
    ip -n "$c" addr add fd00:231::2/64 dev "$name-vc" nodad
    if [ "${NETNS_RAILS:-1}" = 2 ]; then
        ip link add "$name-ws" netns "$s" type veth peer name "$name-wc" netns "$c"
        ip -n "$s" link set "$name-ws" mtu "$mtu" up
        ip -n "$c" link set "$name-wc" mtu "$mtu" up
        ip -n "$s" addr add 10.232.0.1/24 dev "$name-ws"
        ip -n "$c" addr add 10.232.0.2/24 dev "$name-wc"
    fi
    if [ -n "${NETNS_DELAY:-}" ]; then
        ip netns exec "$s" tc qdisc add dev "$name-vs" root netem delay "$NETNS_DELAY"
        ip netns exec "$c" tc qdisc add dev "$name-vc" root netem delay "$NETNS_DELAY"
    fi
    # both ends must report carrier before we report success (no sleeping:
    # poll the link state a bounded number of times)
    n=0
    until ip -n "$s" link show "$name-vs" | grep -q LOWER_UP &&
          ip -n "$c" link show "$name-vc" | grep -q LOWER_UP &&
          { [ "${NETNS_RAILS:-1}" != 2 ] ||
            { ip -n "$s" link show "$name-ws" | grep -q LOWER_UP &&
              ip -n "$c" link show "$name-wc" | grep -q LOWER_UP; }; }; do
        n=$((n + 1))
        if [ $n -gt 1000 ]; then
            echo "netns.sh: veth link $name-vs/$name-vc never came up" >&2
            exit 1
        fi
    done
    trap - EXIT
    echo "SERVER_NS=$s"
    echo "CLIENT_NS=$c"
    echo "SERVER_ADDR=10.231.0.1"
    echo "CLIENT_ADDR=10.231.0.2"
    echo "SERVER_ADDR6=fd00:231::1"
    echo "CLIENT_ADDR6=fd00:231::2"
    ;;
down)
    [ $# -eq 1 ] || usage
    need_root
    name=$1
    rc=0
    for ns in "$name-s" "$name-c"; do
        if ip netns list | grep -q "^$ns\b"; then
            ip netns del "$ns" || rc=1
        fi
    done
    exit $rc
    ;;
exec)
    [ $# -ge 3 ] || usage
    name=$1
    side=$2
    shift 2
    case $side in
    s|c) ;;
    *) usage ;;
    esac
    exec ip netns exec "$name-$side" "$@"
    ;;
*)
    usage
    ;;
esac
