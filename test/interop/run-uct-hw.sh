#!/bin/bash
# run-uct-hw.sh - the UCX transport (uct_siwarp) over libsiwarp's verbs
# backend on kernel siw in the qemu guest, and mixed: one end on the host's
# software stack, the other on the guest's siw0.
#
#   run-uct-hw.sh            (root; a guest built by build-guest-mpi.sh)
#
# How: as run-mpi-hw.sh (lib-host.sh's tap_guest_boot), a network
# namespace holds a tap device 10.79.0.1 that qemu uses as the guest's NIC
# (guest 10.79.0.2, siw0 on it).  The tap is named eth0 as the guest's NIC
# is: ucx_perftest's server takes the client's UCT device name.  The module
# (uct_siwarp/.libs), the host's ucx_info and ucx_perftest (the guest has
# libucx0 but not ucx-utils) and the MPI programs go into the 9p share,
# which the guest links to the same path (guest-uct.sh).
#  1. in the guest, SIWARP_DEVICE=siw0: ucx_info -d lists siwarp on eth0
#     alone (not lo), without what the device cannot do (am_zcopy,
#     atomics, more than siw's 6 SGEs); test/uct/uct_check (every UCT
#     operation checked; strangers refused, and replays at the verbs
#     acceptor refused by its challenge round); ucx_perftest pairs, both ends on
#     siw0, at UCT level (am_lat short and bcopy, put_lat, put_bw, get
#     bcopy 4 KiB, get zcopy 8 B and 1 MiB) and UCP level (tag_lat, tag_bw
#     1 MiB, ucp_put_lat, ucp_get 1 MiB, ucp_am_lat);
#  2. mixed ucx_perftest, host (software) <-> guest (siw0), the guest as
#     server and as client: UCT am_lat, put_lat, get zcopy 1 MiB; UCP
#     tag_lat, tag_bw 1 MiB, ucp_get 1 MiB (RDMA Read between the stacks);
#  3. mixed MPI jobs over pml/osc ucx (rank 0 on the host, software; rank 1
#     in the guest on siw0; the guest's launch agent, lib-guest.sh):
#     mpi_pingpong 0 B .. MPI_UCT_MAX verified; mpi_rma counter and cas
#     with UCX_SIWARP_ATOMICS=n at the software rank (UCP's active-message
#     atomics); with atomics on there, the job must end at once with the
#     message that names that setting (uct_siwarp_amo.c);
#  4. every MPA Request the host sent the guest (captured on the tap)
#     offers neither RFC 7306 nor big FPDUs.
# A perftest step passes only on exit status 0 of both sides, a result line
# and the guest's libsiwarp saying it ran on siw0 (SIWARP_DEBUG).
# Environment: SIWVM_MPI (/tmp/siwvm-mpi), SIWVM_SCRIPTS, OUT, KEEP=1,
# MEM (2048), SMP (2), KARGS (e.g. siwfix=1), UCT_HW_NS (the namespace),
# UCT_HW_STEPS (the guest's steps: info, check, pair, server, client), UCT_HW_TIMEOUT (150 s a perftest run),
# MPI_UCT_JOBS ("pingpong rma rma-atomics"; empty: none), MPI_UCT_MAX
# (4194304), MPI_UCT_TIMEOUT (150 s a job), UCT_HW_SNAPLEN (128: octets of
# each segment captured into mixed.pcapng; 0, whole segments, to check a
# stream's CRCs afterwards).  Each mixed MPI job is also captured whole,
# kept and checked with Wireshark only if a rank reports an MPA CRC error
# (lib-host.sh crc_verdict).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib-host.sh"     # now_ms, wait_for, tap_guest_*, rsh_agent, hw_guest_start
hw_guest_start            # paths, tap, n; the skips of a host without the guest
OUT=${OUT:-$(mktemp -d /tmp/siwarp-ucthw.XXXXXX)}
SHARE=$OUT/share
NS=${UCT_HW_NS:-swpuct$$}
KARGS=${KARGS:-}
MAX=${MPI_UCT_MAX:-4194304}
T=${UCT_HW_TIMEOUT:-150}
HOSTIP=10.79.0.1 GUESTIP=10.79.0.2
MOD=$top_builddir/uct_siwarp/.libs/libuct_siwarp.so.0
[ -f "$MOD" ] || { echo "1..0 # SKIP $MOD not built (configure found no UCX 1.13.1 with its source)"; exit 0; }
for b in ucx_info ucx_perftest; do
    command -v $b >/dev/null || { echo "1..0 # SKIP no $b (ucx-utils)"; exit 0; }
done
# rdma-core is dlopen'ed on first use (common/hw_dl.h): ldd cannot tell
grep -q '^#define HAVE_VERBS 1' "$top_builddir/config.h" 2>/dev/null ||
    { echo "1..0 # SKIP libsiwarp built without the verbs backend"; exit 0; }
[ -e "$SIWVM_MPI/rootfs-full/usr/lib/x86_64-linux-gnu/libucp.so.0" ] ||
    { echo "1..0 # SKIP the guest in $SIWVM_MPI has no libucx0"; exit 0; }
trap tap_guest_cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p "$SHARE/run" "$SHARE/uct/bin" "$SHARE/uct/lib" "$SHARE/mpi"
cp "$MOD" "$SHARE/uct/"
cp "$(command -v ucx_info)" "$(command -v ucx_perftest)" "$SHARE/uct/bin/"
gomp=$(ldd "$(command -v ucx_perftest)" | awk '/libgomp/ { print $3 }')
[ -n "$gomp" ] && cp "$gomp" "$SHARE/uct/lib/"
# uct_check and the libsiwarp it links (libtool keeps both in .libs)
make -C "$top_builddir" test/uct/uct_check >/dev/null 2>&1
if [ -x "$top_builddir/test/uct/.libs/uct_check" ]; then
    cp "$top_builddir/test/uct/.libs/uct_check" "$SHARE/uct/bin/"
    cp -P "$top_builddir"/.libs/libsiwarp.so* "$SHARE/uct/lib/"
elif [ -x "$top_builddir/test/uct/uct_check" ]; then
    cp "$top_builddir/test/uct/uct_check" "$SHARE/uct/bin/"
fi
cp "$here/guest-uct.sh" "$here/lib-guest.sh" "$SHARE/"
echo "$SHARE" >"$SHARE/run/hostdir"
echo "$HOSTIP" >"$SHARE/run/hostip"

rsh_agent "$SHARE"

# UCT level: ucx_perftest's server takes the client's device name, so the
# tap device in the namespace is called eth0 as the guest's NIC is
U="-x siwarp -d eth0"
L="-n 200 -w 20"                   # latency: few iterations under TCG
B="-s 1048576 -n 20 -w 2"
# ID KIND ARGS (guest-uct.sh); for server/client the host runs the other end
cat >"$SHARE/run/steps" <<STEPS
${UCT_HW_STEPS:-g-info info
g-check check UCX_SIWARP_LLP_TIMEOUT=8s UCX_SIWARP_STALL_TIMEOUT=8s eth0
g-am-short pair $U -t am_lat $L
g-am-bcopy pair $U -t am_lat -D bcopy -s 4096 $L
g-put-short pair $U -t put_lat $L
g-put-bw pair $U -t put_bw -D zcopy $B
g-get-bcopy pair $U -t get -D bcopy -s 4096 $L
g-get-8 pair $U -t get -D zcopy $L
g-get-1m pair $U -t get -D zcopy $B
g-tag-lat pair -t tag_lat $L
g-tag-bw pair -t tag_bw $B
g-ucp-put pair -t ucp_put_lat $L
g-ucp-get pair -t ucp_get $B
g-ucp-am pair -t ucp_am_lat $L
m-am-gs server $U -t am_lat $L
m-put-gs server $U -t put_lat $L
m-get-gs server $U -t get -D zcopy $B
m-tag-gs server -t tag_lat $L
m-am-gc client $U -t am_lat $L
m-get-gc client $U -t get -D zcopy $B
m-tagbw-gc client -t tag_bw $B
m-ucpget-gc client -t ucp_get $B}
STEPS
# the MPI jobs, with the guest's launch agent as one step
MPI_UCT_JOBS=${MPI_UCT_JOBS-pingpong rma rma-atomics}
[ -z "$MPI_UCT_JOBS" ] || echo "m-mpi agent" >>"$SHARE/run/steps"
set -- $MPI_UCT_JOBS
# one test a step, and one of the MPA Requests captured
echo "1..$(( $(grep -vc ' agent$' "$SHARE/run/steps") + $# + 1 ))"
echo "# output in $OUT"

tb=$(now_ms)
tap_guest_boot "$NS" eth0 "$HOSTIP" "$GUESTIP" "$SIWVM_MPI" "$SHARE" guest-uct.sh \
    "$OUT/console.log" $KARGS || exit 1
wait_for 180 test -e "$SHARE/run/up" || echo "# guest did not start its script"
echo "# guest up after $(( $(now_ms) - tb )) ms"
# everything between host and guest, headers only (UCT_HW_SNAPLEN): the MPA Requests the
# host's software stack sends to the guest's siw0 (checked at the end)
cappid=
if command -v dumpcap >/dev/null && command -v tshark >/dev/null; then
    ip netns exec "$NS" dumpcap -i eth0 -s "${UCT_HW_SNAPLEN:-128}" -f tcp -w "$OUT/mixed.pcapng" 2>"$OUT/dumpcap.err" &
    cappid=$!
    wait_for 10 grep -q "Capturing on" "$OUT/dumpcap.err"
fi

# host side of a mixed step: software backend (SIWARP_DEVICE unset) on the
# namespace's eth0
host_env() {
    ip netns exec "$NS" timeout "$T" env -u SIWARP_DEVICE LD_PRELOAD="$MOD" UCX_TLS=siwarp \
        UCX_NET_DEVICES=eth0 "$@"
}

# verdict ID KIND LOG [HOSTRC]: exit status, result row, siw0 in the guest's log
verdict() {
    local id=$1 kind=$2 log=$3 hrc=${4:-0} rc t0 t1 ms row dev
    read -r rc t0 t1 <"$SHARE/run/done.$id"
    ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", (b - a) * 1000 }')
    row=$(grep -E '^ +[0-9]+ +[0-9.]+ ' "$log" | tail -n 1 | tr -s ' ')
    dev=$(grep -c "on verbs device siw0" "$log")
    case $kind in
    info)
        # the transport on eth0 (siw0's netdev) only -- not on lo, where
        # rdma_cm cannot connect through siw0 --, from siw0, without
        # am_zcopy and atomics, and no more iov than siw's 6 SGEs
        if [ "$rc" = 0 ] && grep -A1 "Transport: siwarp" "$log" | grep -q "Device: eth0" &&
           ! grep -A1 "Transport: siwarp" "$log" | grep -q "Device: lo" &&
           grep -q "on verbs device siw0" "$log" &&
           ! sed -n '/Transport: siwarp/,/Memory domain/p' "$log" | grep -qE "am_zcopy|atomic_|up to ([7-9]|[1-9][0-9]) iov"; then
            tap ok "$id: ucx_info -d in the guest: siwarp on eth0 alone, from siw0, no am_zcopy, no atomics, at most 6 iov"
        else
            tap "not ok" "$id: ucx_info -d in the guest (rc $rc)"
            sed -n '/Transport: siwarp/,/Memory domain/p' "$log" | head -40 | sed 's/^/#   /'
            tail -5 "$log" | sed 's/^/#   /'
        fi ;;
    check)
        # uct_check on siw0 (UCX_SIWARP_LLP_TIMEOUT and _STALL_TIMEOUT short, so that a
        # connection whose proof never comes is cut off within its wait):
        # everything passes, the verbs acceptor challenged the replayed
        # request and refused the replayed answer (uct_siwarp_challenge.c)
        local bad; bad=$(grep "^not ok" "$log")
        if [ "$rc" = 0 ] && grep -q "^1\.\.[1-9]" "$log" && [ -z "$bad" ] && [ "$dev" -ge 1 ] &&
           grep -q "^ok .*refused with a challenge" "$log" &&
           grep -q "^ok .*its challenge spent" "$log" && grep -q "^ok .*mac wrong by one bit" "$log"; then
            tap ok "$id: uct_check on siw0: $(grep -c '^ok' "$log") passed (strangers refused; the verbs acceptor challenged a replayed request and refused the replayed answer)"
        else
            tap "not ok" "$id: uct_check on siw0 (rc $rc)"
            { [ -n "$bad" ] && echo "$bad"; tail -8 "$log"; } | sed 's/^/#   /'
        fi ;;
    *)
        if [ "$rc" = 0 ] && [ "$hrc" = 0 ] && [ -n "$row" ] && [ "$dev" -ge 1 ]; then
            tap ok "$id: $kind $(sed -n "s/^$id [a-z]* //p" "$SHARE/run/steps") ($ms ms; row:$row)"
        else
            tap "not ok" "$id: $kind (guest rc $rc, host rc $hrc, $dev siw0 contexts; $ms ms)"
            # the lines that say why first (a summary may keep only a few),
            # then the end of the log without perftest's table
            { grep -E "^SIWUCT: server rc|rror|ERR|[Ff]ail|[Aa]bort|[Ss]ignal|[Cc]losed" "$log" | head -8
              grep -vE '^[|+]' "$log" | tail -25; } | sed 's/^/#   /'
        fi ;;
    esac
}

while read -r id kind rest; do
    log=$OUT/$id.log
    hrc=0
    case $kind in
    server)
        if ! wait_for 300 test -s "$SHARE/run/ready.$id"; then
            tap "not ok" "$id: the guest's server did not start"; continue
        fi
        # shellcheck disable=SC2086
        host_env ucx_perftest "$GUESTIP" -p "$(cat "$SHARE/run/ready.$id")" $rest -f \
            >"$OUT/$id.host.log" 2>&1
        hrc=$? ;;
    client)
        d=$(mktemp -d)
        mkfifo "$d/out"
        port=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 30000))
        # shellcheck disable=SC2086
        host_env stdbuf -oL ucx_perftest -p $port $rest >"$d/out" 2>&1 &
        sp=$!
        exec 3<"$d/out"
        : >"$OUT/$id.host.log"
        while IFS= read -r line <&3; do
            echo "$line" >>"$OUT/$id.host.log"
            case $line in *"Waiting for connection"*) echo $port >"$SHARE/run/hready.$id"; break ;; esac
        done
        cat <&3 >>"$OUT/$id.host.log" &
        cp=$!
        wait $sp; hrc=$?
        wait $cp
        exec 3<&-
        rm -rf "$d" ;;
    agent)
        break ;;
    esac
    if ! wait_for 600 test -e "$SHARE/run/done.$id"; then
        tap "not ok" "$id: $kind $rest (did not finish)"; continue
    fi
    cp "$SHARE/run/out.$id" "$log"
    [ -f "$OUT/$id.host.log" ] && cat "$OUT/$id.host.log" >>"$log"
    verdict "$id" "$kind" "$log" "$hrc"
done <"$SHARE/run/steps"

# ---- the mixed MPI job over pml ucx -------------------------------------------
# mpi_mixed ID PROG EXPECT HOSTX ARGS...: rank 0 on the host (software
# backend, HOSTX more -x options), rank 1 in the guest (siw0); EXPECT is
# the line that says the program passed, or FAIL for a job that must end
# at once with the message of uct_siwarp_amo.c
mpi_mixed() {
    local id=$1 prog=$2 expect=$3 hx=$4 log=$OUT/$1.log t0 rc ms
    shift 4
    # -x belongs to one application context: each gets all of them
    local x="-x UCX_TLS=siwarp,self -x UCX_NET_DEVICES=eth0 -x LD_PRELOAD=$SHARE/uct/libuct_siwarp.so.0"
    # whole segments while it runs: a CRC error gets Wireshark's verdict
    crc_capture_start "$NS" eth0 "$OUT/$id.pcapng"
    t0=$(now_ms)
    # shellcheck disable=SC2086
    ip netns exec "$NS" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        timeout "${MPI_UCT_TIMEOUT:-150}" mpirun --hostfile "$OUT/hostfile" --map-by node --bind-to none \
        --mca plm_rsh_agent "$SHARE/rsh-agent.sh" --mca oob_tcp_if_include 10.79.0.0/24 \
        --mca pml ucx --mca osc ucx --mca btl self --mca opal_common_ucx_tls siwarp \
        -np 1 --host "$HOSTIP" $x $hx -x SIWARP_DEVICE=soft "$SHARE/mpi/$prog" "$@" : \
        -np 1 --host "$GUESTIP" $x -x SIWARP_DEVICE=siw0 -x SIWARP_DEBUG=1 "$SHARE/mpi/$prog" "$@" \
        </dev/null >"$log" 2>&1
    rc=$?
    ms=$(( $(now_ms) - t0 ))
    crc_verdict "$log" "$OUT/$id.pcapng"
    if [ "$expect" = FAIL ]; then
        if [ $rc != 0 ] && [ $rc != 124 ] &&
           grep -q "set UCX_SIWARP_ATOMICS=n on the software ranks" "$log"; then
            tap ok "$id: mixed MPI job, atomics on at the software rank: $prog $* ends at once with the message naming UCX_SIWARP_ATOMICS=n ($ms ms)"
            return
        fi
        tap "not ok" "$id: mixed MPI job, atomics on at the software rank: $prog $*: no clear failure (rc $rc, $ms ms)"
    elif [ $rc = 0 ] && grep -q "$expect" "$log" && grep -q "on verbs device siw0" "$log" &&
         ! grep -q "check failed" "$log"; then
        tap ok "$id: mixed MPI job over pml/osc ucx, rank 0 host (software${hx:+, $hx}), rank 1 guest (siw0): $prog $* ($ms ms)"
        return
    else
        tap "not ok" "$id: mixed MPI job over pml/osc ucx: $prog $* (rc $rc, $ms ms)"
    fi
    grep -v "^siwarp\[" "$log" | tail -25 | sed 's/^/#   /'
}
if [ -n "$MPI_UCT_JOBS" ]; then
    for p in mpi_pingpong mpi_rma; do
        if [ -x "$top_builddir/test/mpi/$p" ]; then cp "$top_builddir/test/mpi/$p" "$SHARE/mpi/"
        else mpicc -O2 -g -o "$SHARE/mpi/$p" "$top_srcdir/test/mpi/$p.c" || exit 1; fi
    done
    printf '%s slots=1\n%s slots=1\n' "$HOSTIP" "$GUESTIP" >"$OUT/hostfile"
    if wait_for 300 test -e "$SHARE/run/agent.m-mpi"; then
        for j in $MPI_UCT_JOBS; do
            case $j in
            pingpong) mpi_mixed m-mpi-pingpong mpi_pingpong "pingpong: ok" "" "$MAX" ;;
            # atomics: a device sends no RFC 7306, and UCX 1.13 gives it a
            # lane for them by the target's capabilities alone
            # (uct_siwarp_amo.c); with them off at the software rank UCP
            # runs them all as active messages
            rma) mpi_mixed m-mpi-rma mpi_rma "rma: ok" "-x UCX_SIWARP_ATOMICS=n" counter cas ;;
            rma-atomics) mpi_mixed m-mpi-rma-atomics mpi_rma FAIL "" counter ;;
            esac
        done
    else
        for j in $MPI_UCT_JOBS; do tap "not ok" "m-mpi $j: the guest's launch agent did not start"; done
    fi
fi

# ---- what the software stack offered the device ---------------------------------
# RFC 7306 and the 64 KiB FPDUs are offered in the 4 reserved bits of the
# MPA Request's flags (common/mpa.h), which siw echoes; toward an iface
# address without UCT_SIWARP_IFACE_F_SOFT they must stay 0
if [ -n "$cappid" ]; then
    kill -INT "$cappid" 2>/dev/null; wait "$cappid" 2>/dev/null; cappid=
    tshark -r "$OUT/mixed.pcapng" -Y "ip.src == $HOSTIP && tcp.payload contains \"MPA ID Req Frame\"" \
        -T fields -e tcp.payload >"$OUT/mpa-req.txt" 2>"$OUT/tshark.err"
    # byte 16 of the Request: M C R ENH, then the 4 reserved bits
    nreq=$(grep -c . "$OUT/mpa-req.txt")
    nrsvd=0
    while read -r pl; do
        [ $(( 16#${pl:32:2} & 0x0f )) = 0 ] || nrsvd=$((nrsvd + 1))
    done <"$OUT/mpa-req.txt"
    if [ "$nreq" -ge 2 ] && [ "$nrsvd" = 0 ]; then
        tap ok "mpa: the host's $nreq MPA Requests to the guest's siw0 offer neither RFC 7306 nor big FPDUs (reserved flag bits 0)"
    else
        tap "not ok" "mpa: the host's MPA Requests to siw0: $nreq captured, $nrsvd with reserved flag bits set"
        head -5 "$OUT/mpa-req.txt" | cut -c1-80 | sed 's/^/#   /'
    fi
else
    tap ok "mpa: the host's MPA Requests to siw0 # SKIP no dumpcap/tshark (wireshark) to capture them"
fi

# ---- end ---------------------------------------------------------------------
: >"$SHARE/run/mixed.done"
wait_for 120 bash -c "! kill -0 $qpid 2>/dev/null" || kill "$qpid" 2>/dev/null
wait "$qpid" 2>/dev/null; qpid=
cp "$SHARE/run/dmesg" "$SHARE/run/agent.log" "$SHARE/run/agent.out" "$OUT/" 2>/dev/null
echo "# total $(( $(now_ms) - tb )) ms"
[ -z "$failed" ]
