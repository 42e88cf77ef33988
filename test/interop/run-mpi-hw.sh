#!/bin/bash
# run-mpi-hw.sh - the siwarp BTL over libsiwarp's verbs backend in the siw
# guest, and the mixed cluster: one MPI job with a rank on the host
# (software backend) and a rank in the guest (kernel siw through verbs).
#
#   run-mpi-hw.sh            (root; a guest built by build-guest-mpi.sh)
#
# How: a network namespace holds a tap device (10.78.0.1/24) that qemu
# uses as the guest's NIC (guest 10.78.0.2, siw0 on it), so host and guest
# TCP meet without NAT.  The BTL (btl_siwarp/.libs) and the MPI programs
# (test/mpi, built by run-mpi-tests.sh or here with mpicc) go into the 9p
# share, which the guest links to the same path as on the host.
#  1. in the guest: mpirun -np 2 over siw0 (SIWARP_DEVICE=siw0), the core
#     MPI tests (ping-pong to 4 MiB, any-source, datatypes, flood,
#     collectives, one-sided, remap), btl_siwarp_fallback=error so a rank
#     that is not on iWARP fails;
#  2. mixed: mpirun in the namespace, hostfile 10.78.0.1 + 10.78.0.2, rank 0
#     on the host (SIWARP_DEVICE unset: software), rank 1 in the guest
#     (SIWARP_DEVICE=siw0), orted started through a socat launch agent in the
#     guest (rsh-agent.sh in the share: orted checks that the agent exists,
#     so it has the same path on both sides); mpi_pingpong 0 B .. 16 MiB,
#     verified.
# Environment: SIWVM_MPI (/tmp/siwvm-mpi), SIWVM_SCRIPTS, OUT, KEEP=1,
# MPI_HW_MAX (16777216), MEM (2048), SMP (2), MPI_HW_GUEST=0 (mixed job only),
# MPI_HW_NS (the network namespace's name), MPI_HW_CAPTURE (1: capture the
# mixed job whole, kept and checked with Wireshark when a rank reports a
# CRC error, lib-host.sh crc_verdict; 0: no capture),
# MPI_HW_RTR (read: the P2P RTR the host's software rank offers; stock siw
# 6.1 can leave a Write RTR unread, siw-vm README), KARGS (e.g. siwfix=1).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib-host.sh"     # now_ms, wait_for, tap_guest_*, rsh_agent, hw_guest_start
hw_guest_start            # paths, tap, n; the skips of a host without the guest
OUT=${OUT:-$(mktemp -d /tmp/siwarp-mpihw.XXXXXX)}
MAX=${MPI_HW_MAX:-16777216}
SHARE=$OUT/share
NS=${MPI_HW_NS:-swphw$$}
KARGS=${KARGS:-}
HOSTIP=10.78.0.1 GUESTIP=10.78.0.2
COMP=$top_builddir/btl_siwarp/.libs/mca_btl_siwarp.so
PROGS="mpi_pingpong mpi_anysrc mpi_datatype mpi_flood mpi_coll mpi_onesided mpi_remap"
[ -f "$COMP" ] || { echo "1..0 # SKIP $COMP not built"; exit 0; }
# rdma-core is dlopen'ed on first use (common/hw_dl.h): ldd cannot tell
grep -q '^#define HAVE_VERBS 1' "$top_builddir/config.h" 2>/dev/null ||
    { echo "1..0 # SKIP BTL built without the verbs backend"; exit 0; }
trap tap_guest_cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p "$SHARE/run" "$SHARE/mpi/comp"
cp "$COMP" "$SHARE/mpi/comp/"
for p in $PROGS; do
    if [ -x "$top_builddir/test/mpi/$p" ]; then cp "$top_builddir/test/mpi/$p" "$SHARE/mpi/"
    else mpicc -O2 -g -o "$SHARE/mpi/$p" "$top_srcdir/test/mpi/$p.c" || exit 1; fi
done
cp "$here/guest-mpi.sh" "$here/lib-guest.sh" "$SHARE/"
echo "$SHARE" >"$SHARE/run/hostdir"
rsh_agent "$SHARE"
: >"$SHARE/run/steps"
[ "${MPI_HW_GUEST:-1}" = 0 ] || cat >"$SHARE/run/steps" <<STEPS
g1 2 mpi_pingpong 4194304
g2 2 mpi_anysrc
g3 2 mpi_datatype
g4 2 mpi_flood 2000
g5 2 mpi_coll
g6 2 mpi_onesided
g7 2 mpi_remap
STEPS
echo "1..$(( $(wc -l <"$SHARE/run/steps") + 1 ))"
echo "# output in $OUT"

tb=$(now_ms)
tap_guest_boot "$NS" tapsiw0 "$HOSTIP" "$GUESTIP" "$SIWVM_MPI" "$SHARE" guest-mpi.sh \
    "$OUT/console.log" $KARGS || exit 1
wait_for 180 test -e "$SHARE/run/up" || echo "# guest did not start its script"
echo "# guest up after $(( $(now_ms) - tb )) ms"

while read -r id np prog args; do
    if ! wait_for 900 test -e "$SHARE/run/done.$id"; then
        tap "not ok" "guest $id: $prog $args (did not finish)"; continue
    fi
    read -r rc t0 t1 <"$SHARE/run/done.$id"
    cp "$SHARE/run/out.$id" "$OUT/$id.log"
    ms=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", (b - a) * 1000 }')
    # occurrences, not lines: two ranks' messages can share a line
    iw=$(grep -o "over iWARP" "$OUT/$id.log" | wc -l)
    dev=$(grep -o "on verbs device siw0" "$OUT/$id.log" | wc -l)
    # an acceptor on siw0 admits a QP only after the challenge round
    # (btl_siwarp_auth.c): every connection went through it
    chl=$(grep -o "challenges us; connecting again" "$OUT/$id.log" | wc -l)
    if [ "$rc" = 0 ] && [ "$dev" -ge 2 ] && [ "$chl" -ge 1 ] && ! grep -q "check failed" "$OUT/$id.log"; then
        tap ok "guest: np=$np $prog $args, BTL on siw0 through verbs ($dev ranks on siw0, $iw iWARP connections logged, $chl after a challenge; $ms ms)"
    else
        tap "not ok" "guest: np=$np $prog $args (rc $rc, $dev ranks on siw0; $ms ms)"
        tail -25 "$OUT/$id.log" | sed 's/^/#   /'
    fi
done <"$SHARE/run/steps"

# ---- the mixed cluster ---------------------------------------------------------
wait_for 60 test -e "$SHARE/run/agent" || echo "# guest launch agent not ready"
printf '%s slots=1\n%s slots=1\n' "$HOSTIP" "$GUESTIP" >"$OUT/hostfile"
# the job's traffic, whole segments: if a rank reports an MPA CRC error,
# Wireshark's dissectors tell from the wire which side was wrong (kept only
# then)
cap_pid=
[ "${MPI_HW_CAPTURE:-1}" = 1 ] && crc_capture_start "$NS" tapsiw0 "$OUT/mixed.pcapng"
t0=$(now_ms)
ip netns exec "$NS" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    timeout 900 mpirun --hostfile "$OUT/hostfile" --map-by node --bind-to none \
    --mca plm_rsh_agent "$SHARE/rsh-agent.sh" --mca oob_tcp_if_include 10.78.0.0/24 \
    --mca mca_base_component_path "$SHARE/mpi/comp:/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3" \
    --mca pml ob1 --mca btl siwarp,self --mca osc ^ucx \
    --mca btl_siwarp_if_include 10.78.0.0/24 --mca btl_siwarp_fallback error \
    --mca btl_siwarp_rtr "${MPI_HW_RTR:-read}" --mca btl_base_verbose 20 \
    -np 1 --host "$HOSTIP" -x SIWARP_DEVICE=soft "$SHARE/mpi/mpi_pingpong" "$MAX" : \
    -np 1 --host "$GUESTIP" -x SIWARP_DEVICE=siw0 -x SIWARP_DEBUG=1 "$SHARE/mpi/mpi_pingpong" "$MAX" \
    </dev/null >"$OUT/mixed.log" 2>&1
rc=$?
ms=$(( $(now_ms) - t0 ))
: >"$SHARE/run/mixed.done"
# rank 0 (lower, it sends first) connects; the guest's rank, on siw0,
# challenges before it accepts (btl_siwarp_auth.c)
if [ $rc = 0 ] && grep -q "pingpong: ok" "$OUT/mixed.log" && grep -q "on verbs device siw0" "$OUT/mixed.log" &&
   grep -q "challenging .* before accepting" "$OUT/mixed.log" &&
   grep -q "challenges us; connecting again" "$OUT/mixed.log"; then
    tap ok "mixed cluster: rank 0 host (software), rank 1 guest (siw0 via verbs, accepting after the challenge round), ping-pong 0 B..$MAX B verified ($ms ms)"
else
    tap "not ok" "mixed cluster: host soft + guest siw0 (rc $rc, $ms ms)"
    tail -30 "$OUT/mixed.log" | sed 's/^/#   /'
fi
crc_verdict "$OUT/mixed.log" "$OUT/mixed.pcapng"
grep -h "over iWARP\|pingpong" "$OUT/mixed.log" | head -6 | sed 's/^/#   /'
wait_for 120 bash -c "! kill -0 $qpid 2>/dev/null" || kill "$qpid" 2>/dev/null
wait "$qpid" 2>/dev/null; qpid=
cp "$SHARE/run/agent.log" "$SHARE/run/agent.out" "$SHARE/run/dmesg" "$OUT/" 2>/dev/null
echo "# total $(( $(now_ms) - tb )) ms"
[ -z "$failed" ]
