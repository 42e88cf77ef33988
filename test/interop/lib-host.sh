# lib-host.sh - shell helpers the host-side interop runners share (sourced
# by run-interop.sh, run-perftest.sh, run-hw.sh, run-mpi-hw.sh, run-uct-hw.sh).

now_ms() { date +%s%3N; }

# wait_for SECONDS COMMAND...: true once COMMAND succeeds, false at the deadline
wait_for() {
    local end=$(( $(now_ms) + $1 * 1000 ))
    shift
    until "$@"; do
        [ "$(now_ms)" -ge "$end" ] && return 1
        sleep 0.05
    done
}

# tap ok|"not ok" NAME [DIRECTIVE]: one TAP line, numbered by the caller's $n
tap() {
    n=$((n + 1))
    echo "$1 $n - $2${3:+ # $3}"
}

# hw_guest_start: how the drivers that boot the MPI guest (run-mpi-hw.sh,
# run-uct-hw.sh) begin.  From $here: top_srcdir, top_builddir, SIWVM_MPI
# (/tmp/siwvm-mpi) and SIWVM_SCRIPTS (../shared/siw-vm) unless given; n,
# failed and qpid start empty; tap also notes a failure in $failed.  A host
# that cannot boot the guest (not root, no guest built) ends the caller
# with a TAP skip saying why.
hw_guest_start() {
    top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
    top_builddir=${top_builddir:-$top_srcdir}
    SIWVM_MPI=${SIWVM_MPI:-/tmp/siwvm-mpi}
    SIWVM_SCRIPTS=${SIWVM_SCRIPTS:-$(cd "$top_srcdir/.." && pwd)/shared/siw-vm}
    [ -d "$SIWVM_SCRIPTS" ] || SIWVM_SCRIPTS=/work/shared/siw-vm
    n=0; failed=; qpid=
    tap() { n=$((n + 1)); echo "$1 $n - $2"; [ "$1" = ok ] || failed=1; }
    [ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root (netns, tap)"; exit 0; }
    [ -f "$SIWVM_MPI/initrd.img" ] ||
        { echo "1..0 # SKIP no MPI guest in $SIWVM_MPI (test/interop/build-guest-mpi.sh)"; exit 0; }
}

# tap_guest_boot NS NETDEV HOSTIP GUESTIP SIWVM SHARE SCRIPT LOG [KARGS...]:
# a network namespace NS with a tap device NETDEV (HOSTIP/24) that qemu
# uses as the guest's NIC (guest GUESTIP/24, siw0 on its eth0), so host and
# guest TCP meet without NAT; boots the guest from SIWVM on it, running
# SCRIPT from the share SHARE, console in LOG.  Sets qpid (qemu's
# timeout); the caller's cleanup kills what runs in NS and deletes it.
tap_guest_boot() {
    local ns=$1 dev=$2 hip=$3 gip=$4 vm=$5 share=$6 script=$7 log=$8
    shift 8
    ip netns add "$ns" || return 1
    ip -n "$ns" link set lo up
    ip -n "$ns" tuntap add dev "$dev" mode tap
    ip -n "$ns" addr add "$hip/24" dev "$dev"
    ip -n "$ns" link set "$dev" up
    ip netns exec "$ns" env SIWVM="$vm" SHARE="$share" MEM="${MEM:-2048}" SMP="${SMP:-2}" \
        NETDEV="tap,id=n0,ifname=$dev,script=no,downscript=no" \
        timeout 3000 "$SIWVM_SCRIPTS/boot.sh" siwip="$gip/24" siwgw="$hip" siwrun="$script" "$@" \
        </dev/null >"$log" 2>&1 &
    qpid=$!
}

# rsh_agent SHARE: SHARE/rsh-agent.sh, the plm_rsh_agent of a host+guest
# mpirun (orted checks that the agent exists, so it has the same path on
# both sides): one command line to the guest's launch agent (lib-guest.sh)
rsh_agent() {
    cat >"$1/rsh-agent.sh" <<'AGENT'
#!/bin/sh
# plm_rsh_agent: HOST CMD... -> one line to the guest's socat (TCP 2222)
host=$1; shift
printf '%s\n' "$*" | socat -t 5 - "TCP:$host:2222"
AGENT
    chmod +x "$1/rsh-agent.sh"
}

# tap_guest_cleanup: the EXIT trap of a runner that used tap_guest_boot:
# stops qemu ($qpid) and whatever runs in $NS, deletes $NS, and removes
# $SHARE unless KEEP=1 or a test failed ($failed)
tap_guest_cleanup() {
    local pids
    [ -n "$qpid" ] && kill "$qpid" 2>/dev/null
    pids=$(ip netns pids "$NS" 2>/dev/null)
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    ip netns del "$NS" 2>/dev/null
    wait 2>/dev/null
    [ "${KEEP:-0}" = 1 ] || [ -n "$failed" ] || rm -rf "$SHARE"
}

# crc_capture_start NS IFACE FILE: capture the TCP traffic of IFACE in NS,
# whole segments, into FILE (sets cap_pid; empty without dumpcap/tshark),
# for crc_verdict.  A mixed job's traffic is a few hundred MB.
crc_capture_start() {
    cap_pid=
    command -v dumpcap >/dev/null && command -v tshark >/dev/null || return 0
    ip netns exec "$1" dumpcap -q -i "$2" -f tcp -w "$3" 2>"$3.err" &
    cap_pid=$!
    wait_for 10 grep -q "Capturing on" "$3.err"
}

# crc_verdict LOG FILE: stop the capture; if LOG reports an MPA CRC error,
# print what Wireshark's dissectors make of the wire (were the bytes sent
# wrong for their CRC, the sender's fault, or sound, the receiver's?) and
# keep FILE; otherwise delete it.
crc_verdict() {
    local log=$1 f=$2
    if [ -n "$cap_pid" ]; then
        sleep 1; kill "$cap_pid" 2>/dev/null; wait "$cap_pid" 2>/dev/null; cap_pid=
    fi
    if grep -q "CRC error" "$log" && [ -s "$f" ]; then
        pcap_check "$f" 1
        echo "#   the wire, by Wireshark's iWARP dissectors ($f): $pc_detail"
        grep -iE -B12 'Bad CRC|incorrect' "$f.txt" | grep -E '^Frame|CRC' | head -12 |
            sed 's/^/#     /'
        rm -f "$f.txt"
    else
        rm -f "$f" "$f.err"
    fi
}

# pcap_check FILE CRC(0|1): decode a capture with Wireshark's iWARP dissectors
# (independent of siwarp's parser) and set pc_detail to what they found:
# MPA Requests/Replies, FPDUs, malformed frames, expert errors, good and bad
# CRCs (written out in FILE.txt).  True if clean (and, with CRC 1, every
# FPDU's CRC good).
pcap_check() {
    local f=$1 crc=$2 dec=$1.txt
    # heuristics first: an ephemeral port that Wireshark registers for
    # another protocol would otherwise hide the stream's MPA (test_tshark.sh)
    tshark --disable-protocol rpcordma -o tcp.try_heuristic_first:TRUE -r "$f" -V -O iwarp_mpa,iwarp_ddp_rdmap >"$dec" 2>"$f.tshark.err"
    local req rep fpdu rdmap malformed errs good bad
    req=$(grep -c 'Request frame header' "$dec")
    rep=$(grep -c 'Reply frame header' "$dec")
    fpdu=$(grep -c '^    FPDU$' "$dec")
    rdmap=$(grep -c 'Remote Direct Memory Access Protocol' "$dec")
    malformed=$(grep -c '\[Malformed' "$dec")
    errs=$(grep -c 'Expert Info (Error' "$dec")
    good=$(grep -c 'Good CRC32' "$dec")
    bad=$(grep -ciE 'Bad CRC|incorrect' "$dec")
    pc_detail="req=$req rep=$rep fpdu=$fpdu ddp/rdmap=$rdmap malformed=$malformed errors=$errs goodcrc=$good badcrc=$bad"
    [ "$req" -ge 1 ] && [ "$rep" -ge 1 ] || return 1
    [ "$malformed" -eq 0 ] && [ "$errs" -eq 0 ] && [ "$bad" -eq 0 ] || return 1
    if [ "$crc" = 1 ]; then [ "$good" -eq "$fpdu" ] || return 1; fi
    return 0
}
