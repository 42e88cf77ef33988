#!/bin/sh
# mpi-faults.sh - MPI-level fault tests of the siwarp BTL, TAP output.
#
#   1. a rank killed with kill -9 mid-transfer: mpirun exits non-zero within
#      FAULT_KILL_BOUND seconds (default 60);
#   2. a bit flip between two ranks with MPA CRC on: the job aborts with the
#      BTL's "CRC error" message naming the peer process and both hosts.
#      The proxy sits between the ranks without BTL changes: mpirun runs in
#      a private network namespace (loopback only), the BTL's listeners are
#      pinned with btl_siwarp_port_min_v4/port_range_v4, and an nftables
#      REDIRECT sends connections to those ports to contrib/fault-proxy in
#      transparent mode (SO_ORIGINAL_DST; its own upstream sockets carry a
#      mark the rule exempts).  Needs nft (skipped without it);
#   2b. the TCP fallback through the same proxy forwarding 7 octets at a
#      time (frames cut at every offset): a flood and a ping-pong to 1 MiB
#      complete with their data verified;
#   3. the data link goes down while both ranks live: two namespaces joined
#      by two veth pairs, the BTL on the first (btl_siwarp_if_include), ORTE's
#      out-of-band channel on the second (oob_tcp_if_include, by interface
#      name: 5.0.7's PRRTE ignores a subnet there); the data pair
#      is set down mid-transfer; the job must fail with a message naming both
#      hosts within FAULT_LINK_BOUND seconds (default 60: the test sets
#      btl_siwarp_llp_timeout to 10 s, plus the abort).  The time is measured and printed.  FAULT_TCP_COMPARE=1 also
#      runs the same with btl tcp (bounded at 120 s) and prints its outcome
#      (informational: never fails).
#   3b. the data link goes down while rank 0's connection request waits for
#      rank 1, which stays out of MPI for 10 minutes (a busy peer is waited
#      for): keepalive at btl_siwarp_llp_timeout must fail the job within
#      FAULT_LINK_BOUND, naming this host and the peer's (address or name);
#   3u. the same with pml ucx over the siwarp UCX transport (uct_siwarp,
#      UCX_SIWARP_LLP_TIMEOUT=10s): the rank whose connection failed ends
#      with a message naming the peer's address, and the job with it.
#      Skipped where the module is not built or Open MPI has no pml ucx.
#
# Every mpirun is bounded by timeout; namespaces are removed and every
# process left in them killed by PID on exit.  Environment: srcdir, BUILDDIR
# as for test/mpi/run-mpi-tests.sh.
set -u

srcdir=${srcdir:-$(dirname "$0")/../..}
case $srcdir in /*) ;; *) srcdir=$(cd "$srcdir" && pwd) ;; esac
BUILDDIR=${BUILDDIR:-$(pwd)}
case $BUILDDIR in /*) ;; *) BUILDDIR=$(cd "$BUILDDIR" && pwd) ;; esac
COMP=$BUILDDIR/btl_siwarp/.libs
OUT=$BUILDDIR/test/fault
PROXY=$BUILDDIR/contrib/fault-proxy
mkdir -p "$OUT"

. "$srcdir/test/lib-tap.sh"
now()     { date +%s.%N | cut -c1-14; }
elapsed() { echo "$1 $2" | awk '{ printf "%.1f", $2 - $1 }'; }

if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
    echo "1..0 # SKIP mpicc/mpirun not installed"; exit 0
fi
if [ ! -f "$COMP/mca_btl_siwarp.so" ]; then
    echo "1..0 # SKIP $COMP/mca_btl_siwarp.so not built"; exit 0
fi
OMPI_DIR=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
[ -n "$OMPI_DIR" ] || OMPI_DIR=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
export OMPI_MCA_mca_base_component_path="$COMP:$OMPI_DIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
MPIRUN_BASE="mpirun --bind-to none"
MPIRUN="$MPIRUN_BASE --mca pml ob1"

for prog in fault/mpi_soak mpi/mpi_flood mpi/mpi_pingpong mpi/mpi_busy_peer; do
    if ! mpicc -O2 -g -Wall -o "$OUT/${prog#*/}" "$srcdir/test/$prog.c" > "$OUT/build.log" 2>&1; then
        echo "1..1"; not_ok "build ${prog#*/}"; diag "$OUT/build.log"; exit 1
    fi
done

name=swpf$$
started=
cleanup() {
    trap - EXIT INT TERM HUP
    for ns in "$name-p" "$name-s" "$name-c"; do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    done
    for p in $started; do kill -9 "$p" 2>/dev/null; done
    ip netns del "$name-p" 2>/dev/null
    "$srcdir/contrib/netns.sh" down "$name" >/dev/null 2>&1
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# wait_line FILE REGEX SECONDS: until FILE has a line matching REGEX
wait_line() {
    i=0
    while ! grep -aq "$2" "$1" 2>/dev/null; do
        i=$((i + 1))
        [ $i -gt $(($3 * 10)) ] && return 1
        sleep 0.1
    done
    return 0
}
# wait_pid PID SECONDS: until PID exited (0) or SECONDS passed (1)
wait_pid() {
    i=0
    while kill -0 "$1" 2>/dev/null; do
        i=$((i + 1))
        [ $i -gt $(($2 * 10)) ] && return 1
        sleep 0.1
    done
    return 0
}

# ---- 1. kill -9 ------------------------------------------------------------------
log=$OUT/kill9.log
KB=${FAULT_KILL_BOUND:-60}
timeout -k 5 $((KB + 120)) $MPIRUN --mca btl siwarp,self -np 2 "$OUT/mpi_soak" -t 100 -r 1 \
    -a 8192 -m 1048576 > "$log" 2>&1 &
job=$!
started="$started $job"
# (rank 1's pid line may reach the log after rank 0's first progress line:
# mpirun forwards each rank's output on its own)
if wait_line "$log" '^soak: t=' 60 && wait_line "$log" '^soak: rank 1 pid [0-9]' 30; then
    victim=$(sed -n 's/^soak: rank 1 pid \([0-9]*\).*/\1/p' "$log")
    t0=$(now)
    kill -9 "$victim"
    wait_pid "$job" "$KB"
    wait "$job"
    rc=$?
    t=$(elapsed "$t0" "$(now)")
    # mpirun passes on the victim's 137; timeout's own kill would come only
    # after the bound, so the time tells them apart
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && awk "BEGIN { exit !($t < $KB) }"; then
        ok "rank killed with kill -9 mid-transfer: mpirun exits $rc after ${t} s (bound ${KB} s)"
    else
        not_ok "rank killed with kill -9: mpirun rc $rc after ${t} s (bound ${KB} s)"; diag "$log"
    fi
else
    not_ok "kill -9: the job never reported progress"; diag "$log"
    kill -9 "$job" 2>/dev/null
fi

# ---- 2. bit flip through the proxy, CRC on ---------------------------------------
log=$OUT/crcflip.log
if [ "$(id -u)" != 0 ] || ! command -v nft >/dev/null 2>&1 || ! ip netns add "$name-p" 2>/dev/null; then
    skip "bit flip between ranks, CRC on" "needs root, ip netns and nft (nftables)"
else
    P="ip netns exec $name-p"
    ip -n "$name-p" link set lo up
    ctl=$OUT/proxy-$$.sock
    printf 'table ip swpfault {\n chain out {\n  type nat hook output priority -100;\n  meta mark 0x5157 return\n  tcp dport 20000-20063 redirect to :29999\n }\n}\n' |
        $P nft -f - 2>"$log.nft"
    rm -f "$log.proxy" "$ctl"       # wait_line must not see an old run's line
    $P "$PROXY" -l 127.0.0.1:29999 -T -c "$ctl" -s 11 -v > "$log.proxy" 2>&1 &
    started="$started $!"
    if ! wait_line "$log.proxy" 'listening on port' 10; then
        not_ok "bit flip: fault-proxy did not start"; diag "$log.proxy"
    elif ! "$PROXY" -C "$ctl" flip 1048576 65536 > /dev/null; then
        not_ok "bit flip: fault-proxy refused the flip command"; diag "$log.proxy"
    else
        t0=$(now)
        $P timeout -k 5 120 $MPIRUN --mca btl siwarp,self -np 2 \
            --mca btl_siwarp_port_min_v4 20000 --mca btl_siwarp_port_range_v4 64 \
            --mca btl_siwarp_crc 1 --mca btl_siwarp_fallback error \
            "$OUT/mpi_soak" -t 60 -r 1 -a 65536 -m 1048576 > "$log" 2>&1
        rc=$?
        t=$(elapsed "$t0" "$(now)")
        stats=$("$PROXY" -C "$ctl" stats)
        host=$($P hostname)
        echo "# proxy: $stats"
        # the help text (Local host / Peer host / Peer process), or, when
        # Open MPI's help relay drops it while the job aborts, the BTL's
        # error-callback line "siwarp connection from H to P on H failed: ...
        # (Terminate ...: MPA: CRC error ...)"
        if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -aq "CRC error" "$log" &&
           { { grep -aq "Peer process" "$log" && grep -aq "Peer host: *$host" "$log" &&
               grep -aq "Local host: *$host" "$log"; } ||
             grep -aq "siwarp connection from $host to .* on $host failed: .*CRC error" "$log"; } &&
           echo "$stats" | grep -aq "flips=1" && echo "$stats" | grep -aq "accepted=[1-9]"; then
            ok "bit flip between ranks with CRC on: job aborts (rc $rc, ${t} s) with 'CRC error' naming the peer process and both hosts"
            grep -a -A6 "CRC32c" "$log" | sed 's/^/#   /' | head -8
        else
            not_ok "bit flip between ranks with CRC on (rc $rc, ${t} s): no 'CRC error' naming both peers"
            diag "$log" 40; diag "$log.proxy" 10
        fi
        "$PROXY" -C "$ctl" quit > /dev/null
    fi
fi

# ---- 2b. the TCP fallback through a proxy that forwards 7 octets at a time ------
# Frames then arrive cut anywhere: a header in pieces, a body split at every
# offset, several frames and a part of the next in one read
# (btl_siwarp_fallback_rx.c).  Same namespace and REDIRECT rule as 2.
log=$OUT/dribble.log
if [ "$(id -u)" != 0 ] || ! command -v nft >/dev/null 2>&1 ||
   ! ip netns list 2>/dev/null | grep -aq "^$name-p"; then
    skip "TCP fallback through a proxy forwarding 7 octets at a time" \
        "needs root, ip netns and nft (nftables)"
else
    P="ip netns exec $name-p"
    ctl=$OUT/proxy7-$$.sock
    rm -f "$log.proxy" "$ctl"
    $P "$PROXY" -l 127.0.0.1:29999 -T -c "$ctl" -k 7 > "$log.proxy" 2>&1 &
    started="$started $!"
    if ! wait_line "$log.proxy" 'listening on port' 10; then
        not_ok "7-octet proxy: fault-proxy did not start"; diag "$log.proxy"
    else
        : > "$log"
        for prog in "mpi_flood 300" "mpi_pingpong 1048576"; do
            # shellcheck disable=SC2086
            $P timeout -k 5 180 $MPIRUN --mca btl siwarp,self -np 2 \
                --mca btl_siwarp_port_min_v4 20000 --mca btl_siwarp_port_range_v4 64 \
                --mca btl_siwarp_mpa 0 --mca btl_base_verbose 20 \
                "$OUT"/$prog >> "$log" 2>&1 || echo "exit $? from $prog" >> "$log"
        done
        stats=$("$PROXY" -C "$ctl" stats)
        echo "# proxy: $stats"
        if ! grep -aq "^exit " "$log" && grep -aq "flood: ok" "$log" &&
           grep -aq "pingpong: ok" "$log" && grep -aq "over framed TCP" "$log" &&
           echo "$stats" | grep -aq "accepted=[1-9]"; then
            ok "TCP fallback through a proxy forwarding 7 octets at a time: flood and ping-pong to 1 MiB verified"
        else
            not_ok "TCP fallback through a proxy forwarding 7 octets at a time"; diag "$log" 30
        fi
        "$PROXY" -C "$ctl" quit > /dev/null
    fi
fi

# ---- 3. data link down, runtime channel up ----------------------------------------
# link_down BTL-ARGS...: run the job across the namespaces, set the data
# pair down mid-transfer, measure; sets rc, t, log
link_down() {
    bound=$1
    shift
    "$srcdir/contrib/netns.sh" up "$name" > "$OUT/netns.env" 2>&1 || return 2
    ip link add "$name-os" netns "$name-s" type veth peer name "$name-oc" netns "$name-c" || return 2
    ip -n "$name-s" addr add 10.232.0.1/24 dev "$name-os"
    ip -n "$name-c" addr add 10.232.0.2/24 dev "$name-oc"
    ip -n "$name-s" link set "$name-os" up
    ip -n "$name-c" link set "$name-oc" up
    printf '10.231.0.1 slots=1\n10.231.0.2 slots=1\n' > "$OUT/hostfile"
    NETNS_MPIRUN_NAME=$name
    export NETNS_MPIRUN_NAME
    timeout -k 5 "$((bound + 60))" ip netns exec "$name-s" unshare --uts /bin/sh -c \
        'hostname "$0-s" && exec "$@"' "$name" \
        ${LINK_MPIRUN:-$MPIRUN} --hostfile "$OUT/hostfile" --map-by node -np 2 \
        --mca plm_rsh_agent "$srcdir/contrib/netns-mpirun.sh --agent" \
        --mca oob_tcp_if_include "$name-os,$name-oc" "$@" \
        ${LINK_PROG:-"$OUT/mpi_soak" -t 600 -r 1 -a 65536 -m 1048576} > "$log" 2>&1 &
    job=$!
    started="$started $job"
    if ! wait_line "$log" "${LINK_READY:-^soak: t=}" 60; then
        kill -9 "$job" 2>/dev/null
        wait "$job"
        return 3
    fi
    sleep "${LINK_SETTLE:-0}"
    t0=$(now)
    ip -n "$name-c" link set "$name-vc" down
    wait_pid "$job" "$bound"
    timed_out=$?
    t=$(elapsed "$t0" "$(now)")
    if [ $timed_out -ne 0 ]; then
        kill -9 "$job" 2>/dev/null
    fi
    wait "$job"
    rc=$?
    [ $timed_out -ne 0 ] && rc=124
    for ns in "$name-s" "$name-c"; do
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    done
    "$srcdir/contrib/netns.sh" down "$name" >/dev/null 2>&1
    return 0
}

# link_verdict WHAT PATTERN SAID SHOW: judge a link_down run (lrc, rc, t, log):
# the job must fail, not time out, with a line matching PATTERN; SAID says
# what that shows, SHOW picks the lines to print
link_verdict() {
    if [ $lrc -ne 0 ]; then
        not_ok "$1: setup or first progress failed ($lrc)"; diag "$log"
    elif [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -aq "$2" "$log"; then
        ok "$1: job fails after ${t} s (bound ${LB} s, rc $rc), $3"
        grep -a "$4" "$log" | head -3 | sed 's/^/#   /'
    else
        not_ok "$1: rc $rc after ${t} s (bound ${LB} s), not: $3"
        diag "$log" 15
    fi
}

LB=${FAULT_LINK_BOUND:-60}      # btl_siwarp_llp_timeout 10 s + the abort
log=$OUT/linkdown.log
if ! "$srcdir/contrib/netns.sh" check >/dev/null 2>&1 || ! command -v unshare >/dev/null 2>&1 ||
   [ ! -x "$srcdir/contrib/netns-mpirun.sh" ]; then
    skip "data link down mid-transfer (siwarp)" "needs root, ip netns, unshare, contrib/netns-mpirun.sh"
else
    link_down "$LB" --mca btl siwarp,self --mca btl_siwarp_if_include 10.231.0.0/24 \
        --mca btl_siwarp_llp_timeout 10000
    lrc=$?
    if [ $lrc -ne 0 ]; then
        not_ok "data link down: setup or first progress failed ($lrc)"; diag "$log"
    elif [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -aq "$name-s" "$log" && grep -aq "$name-c" "$log"; then
        ok "data link down mid-transfer (siwarp): job fails after ${t} s (bound ${LB} s, rc $rc), message names $name-s and $name-c"
        grep -a -B2 -A6 "Cause:\|Reason:" "$log" | sed 's/^/#   /' | head -10
    else
        not_ok "data link down mid-transfer (siwarp): rc $rc after ${t} s (bound ${LB} s), no message naming both hosts"
        diag "$log" 15
    fi
    if [ "${FAULT_TCP_COMPARE:-0}" = 1 ]; then
        log=$OUT/linkdown-tcp.log
        link_down 120 --mca btl tcp,self --mca btl_tcp_if_include 10.231.0.0/24
        if [ ${rc:-124} -eq 124 ]; then
            echo "# btl tcp for comparison: still running ${t} s after the data link went down (killed)"
        else
            echo "# btl tcp for comparison: mpirun exited $rc after ${t} s"
        fi
        ok "btl tcp link-down comparison measured (informational)"
    fi
fi

# ---- 3b. the link goes down while a connection waits for a busy peer ---------------
# Rank 1 stays out of MPI for 10 minutes; rank 0's connection request waits
# for its answer (a busy peer is waited for: btl_siwarp_connect_timeout
# does not end it).  When the data link goes down, keepalive at the LLP
# timeout must end the wait: the job fails within the bound, naming this
# host and the peer's, instead of waiting out the busy rank.
log=$OUT/linkdown-waiting.log
if ! "$srcdir/contrib/netns.sh" check >/dev/null 2>&1 || ! command -v unshare >/dev/null 2>&1 ||
   [ ! -x "$srcdir/contrib/netns-mpirun.sh" ]; then
    skip "data link down while a connection waits for a busy peer" "needs root, ip netns, unshare, contrib/netns-mpirun.sh"
else
    LINK_PROG="$OUT/mpi_busy_peer recv 600000" LINK_READY="^busy_peer: rank 1 out of MPI" \
        LINK_SETTLE=2 link_down "$LB" --mca btl siwarp,self \
        --mca btl_siwarp_if_include 10.231.0.0/24 --mca btl_siwarp_llp_timeout 10000
    lrc=$?
    # (Open MPI 4.1 knows the peer's host name only once a message has
    # passed, and names its address; 5.0 knows it from the start)
    link_verdict "data link down while a connection waits for a busy peer" \
        "siwarp connection from $name-s to .* on \(10.231.0.2\|$name-c\) failed" \
        "message names $name-s and the peer's host" "failed:"
fi

# ---- 3u. the same over pml ucx and the siwarp UCX transport -------------------------
MOD=$BUILDDIR/uct_siwarp/.libs/libuct_siwarp.so.0
log=$OUT/linkdown-ucx.log
if ! "$srcdir/contrib/netns.sh" check >/dev/null 2>&1 || ! command -v unshare >/dev/null 2>&1; then
    skip "data link down mid-transfer (pml ucx, siwarp transport)" "needs root, ip netns, unshare"
elif [ ! -f "$MOD" ] || ! ompi_info 2>/dev/null | grep -aq "MCA pml: ucx"; then
    skip "data link down mid-transfer (pml ucx, siwarp transport)" "uct_siwarp not built or no pml ucx"
else
    LINK_MPIRUN=$MPIRUN_BASE link_down "$LB" --mca pml ucx --mca osc ucx --mca btl self \
        --mca opal_common_ucx_tls siwarp -x UCX_TLS=siwarp,self \
        -x UCX_NET_DEVICES="$name-vs,$name-vc" -x LD_PRELOAD="$MOD" \
        -x UCX_SIWARP_LLP_TIMEOUT=10s
    lrc=$?
    link_verdict "data link down mid-transfer (pml ucx, siwarp transport)" \
        "siwarp: connection to 10.231.0.[12]:[0-9]* on $name-v[sc]" \
        "the message names the peer" "siwarp: connection to"
fi

echo "1..$n"
