#!/bin/bash
# run-uct-tests.sh - the siwarp UCX transport, the way a user runs it: the
# module preloaded into Debian's stock UCX 1.13.1 (README: "UCX transport").
#   - ucx_info -d lists "Transport: siwarp" with the setting, not without;
#     ucx_info -c shows the UCX_SIWARP_* parameters; a bad value is refused
#     with a message naming it
#   - uct_check: every UCT operation over loopback, bytes and values checked
#   - ucx_perftest (ucx-utils) pairs, UCT and UCP level, small and large
#   - Open MPI 4.1 over pml ucx / osc ucx, and OpenSHMEM (oshrun, spml ucx),
#     with UCX_TLS=siwarp,self: the repo's MPI tests (dynamic processes
#     too) and test/uct/shmem_check.c
# Prints TAP.  Every command runs under timeout.
[ -n "$BASH_VERSION" ] || exec bash "$0" "$@"

srcdir=${top_srcdir:-$(dirname "$0")/../..}
BUILDDIR=$(cd "${top_builddir:-.}" && pwd)
# TAP helpers (ok, not_ok, skip, diag, log_name) and Open MPI's run-as-root
# and launch settings, shared with the BTL's MPI tests
. "$srcdir/test/mpi/lib-mpi-tap.sh"
OUT=$BUILDDIR/test/uct
MOD=$BUILDDIR/uct_siwarp/.libs/libuct_siwarp.so.0
DEV=${UCT_TEST_DEVICE:-lo}
T=${UCT_TEST_TIMEOUT:-120}
mkdir -p "$OUT"
result() { if [ "$1" = 0 ]; then ok "$2"; else not_ok "$2"; [ -n "$3" ] && diag "$3"; fi; }

if [ ! -f "$MOD" ]; then
    echo "1..0 # SKIP $MOD not built (configure found no UCX 1.13.1 or its source: contrib/setup.sh)"
    exit 0
fi
if ! command -v ucx_info >/dev/null || ! command -v ucx_perftest >/dev/null; then
    echo "1..0 # SKIP ucx_info / ucx_perftest not installed (ucx-utils)"
    exit 0
fi

# ---- loading and parameters ---------------------------------------------------
log=$OUT/ucx_info.log
timeout 60 env LD_PRELOAD="$MOD" ucx_info -d >"$log" 2>&1
grep -q "Transport: siwarp" "$log"
result $? "ucx_info -d lists Transport: siwarp with LD_PRELOAD=libuct_siwarp.so.0" "$log"
timeout 60 ucx_info -d 2>&1 | grep -q "Transport: siwarp"
result $((! $?)) "ucx_info -d without the setting does not list it (control)"
timeout 60 env LD_PRELOAD="$MOD" ucx_info -c -f >"$log" 2>&1
grep -q "UCX_SIWARP_RX_QUEUE_LEN=128" "$log" && grep -q "UCX_SIWARP_SEG_SIZE=16512" "$log" &&
    grep -q "UCX_SIWARP_PROGRESS_THREAD=y" "$log" && grep -q "UCX_SIWARP_TX_COALESCE=auto" "$log" &&
    grep -q "UCX_SIWARP_CRC=y" "$log" && grep -q "UCX_SIWARP_STALL_TIMEOUT=300000000" "$log"
result $? "ucx_info -c -f documents UCX_SIWARP_* (RX_QUEUE_LEN 128, SEG_SIZE 16512, PROGRESS_THREAD y, TX_COALESCE auto, CRC y, STALL_TIMEOUT 300s)" "$log"

log=$OUT/uct_check_badparam.log
timeout "$T" env LD_PRELOAD="$MOD" UCX_SIWARP_RX_QUEUE_LEN=1 "$OUT/uct_check" "$DEV" >"$log" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "UCX_SIWARP_RX_QUEUE_LEN=1: must be 2 .. 4096" "$log"
result $? "UCX_SIWARP_RX_QUEUE_LEN=1 is refused with a message naming it" "$log"
timeout "$T" env LD_PRELOAD="$MOD" UCX_SIWARP_TX_COALESCE=5000 "$OUT/uct_check" "$DEV" >"$log" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "UCX_SIWARP_TX_COALESCE=5000: must be 0 .. 1024" "$log"
result $? "UCX_SIWARP_TX_COALESCE=5000 is refused with a message naming it" "$log"
timeout "$T" env LD_PRELOAD="$MOD" UCX_SIWARP_STALL_TIMEOUT=0.5s "$OUT/uct_check" "$DEV" >"$log" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q "UCX_SIWARP_STALL_TIMEOUT=0.5s: must be 1s .. 3600s" "$log"
result $? "UCX_SIWARP_STALL_TIMEOUT=0.5s is refused with a message naming it" "$log"

# ---- UCT operations, checked byte by byte -----------------------------------
# Twice: as the software stack accepts, and with every acceptor challenging
# each Request first, as one on a verbs device does (uct_siwarp_challenge.c;
# SIWARP_UCT_TEST_CHALLENGE is the test hook for it)
for challenge in 0 1; do
    log=$OUT/uct_check.log tag=uct_check
    [ $challenge = 1 ] && log=$OUT/uct_check_challenge.log tag="uct_check, challenging acceptors"
    timeout "$T" env LD_PRELOAD="$MOD" SIWARP_UCT_TEST_CHALLENGE=$challenge "$OUT/uct_check" "$DEV" >"$log" 2>&1
    rc=$?
    while IFS= read -r line; do
        case $line in
            "ok "*)     ok "$tag: ${line#ok * - }" ;;
            "not ok "*) not_ok "$tag: ${line#not ok * - }" ;;
            "1..0 # SKIP"*) skip "$tag" "${line#1..0 # SKIP }" ;;
        esac
    done <"$log"
    grep -q '^1\.\.[1-9]' "$log" && [ $rc -eq 0 ]
    result $? "$tag ran to its plan and exited 0 (exit $rc)" "$log"
done
grep -q "^ok .*its challenge spent" "$OUT/uct_check_challenge.log"
result $? "a challenging acceptor refused the replayed answer to its challenge" "$OUT/uct_check_challenge.log"

# ---- ucx_perftest pairs -------------------------------------------------------
. "$srcdir/test/uct/lib-perftest.sh"
perftest_pair() {
    name=$1; shift
    plog=$(log_name "perftest $name")
    ucx_perftest_pair "$plog" "$@"
    if [ $pt_crc -eq 0 ] && [ $pt_src -eq 0 ] && [ -n "$pt_row" ]; then
        ok "ucx_perftest $name:$(echo "$pt_row" | awk '{printf " median %s us, %s MB/s", $2, $6}')"
    else
        not_ok "ucx_perftest $name (client $pt_crc, server $pt_src)"; diag "$plog"
    fi
}
U="-d $DEV -x siwarp"
perftest_pair "am_lat short 8 B"          $U -t am_lat -n 2000 -w 100
perftest_pair "am_lat bcopy 4 KiB"        $U -t am_lat -D bcopy -s 4096 -n 2000 -w 100
perftest_pair "am_bw zcopy 8 KiB"         $U -t am_bw -D zcopy -s 8000 -n 2000 -w 100
perftest_pair "put_lat short 8 B"         $U -t put_lat -n 2000 -w 100
perftest_pair "put_bw zcopy 1 MiB"        $U -t put_bw -D zcopy -s 1048576 -n 200 -w 10
perftest_pair "get zcopy 8 B"             $U -t get -D zcopy -n 2000 -w 100
perftest_pair "get zcopy 1 MiB"           $U -t get -D zcopy -s 1048576 -n 200 -w 10
perftest_pair "add_lat 64-bit"            $U -t add_lat -n 2000 -w 100
perftest_pair "fadd 64-bit"               $U -t fadd -n 2000 -w 100
perftest_pair "cswap 32-bit"              $U -t cswap -s 4 -n 2000 -w 100
export UCX_TLS=siwarp UCX_NET_DEVICES=$DEV
perftest_pair "UCP tag_lat 8 B"           -t tag_lat -n 2000 -w 100
perftest_pair "UCP tag_bw 1 MiB (rndv)"   -t tag_bw -s 1048576 -n 200 -w 10
perftest_pair "UCP ucp_put_lat 8 B"       -t ucp_put_lat -n 2000 -w 100
perftest_pair "UCP ucp_get 1 MiB"         -t ucp_get -s 1048576 -n 200 -w 10
perftest_pair "UCP ucp_fadd"              -t ucp_fadd -n 2000 -w 100
perftest_pair "UCP ucp_am_lat"            -t ucp_am_lat -n 2000 -w 100
# UCX_SIWARP_CRC: MPA CRC is used when either end asks (RFC 5044 7.1), so
# off only with n at both ends; the client's debug log says what was
# negotiated ("up (MPA CRC ...)": on the connection it opened, or, when its
# ep moved to the one the server opened (crossed eps), on that one, which
# it accepted), and the data still arrive
crc_pair() {
    what=$1 want=$2 senv=$3 cenv=$4; shift 4
    plog=$(log_name "crc $what")
    PT_SERVER_PRE="env $senv" PT_CLIENT_PRE="env UCX_LOG_LEVEL=debug $cenv" \
        ucx_perftest_pair "$plog" "$@"
    [ $pt_crc -eq 0 ] && [ $pt_src -eq 0 ] && [ -n "$pt_row" ] &&
        grep -q "up (MPA CRC $want" "$plog" && ! grep -q "up (MPA CRC $( [ $want = on ] && echo off || echo on)" "$plog"
    result $? "UCX_SIWARP_CRC $what: MPA CRC $want, tag_bw 1 MiB ran" "$plog"
}
crc_pair "n at both ends" off UCX_SIWARP_CRC=n UCX_SIWARP_CRC=n -t tag_bw -s 1048576 -n 50 -w 5
crc_pair "n at the client only" on UCX_SIWARP_CRC=y UCX_SIWARP_CRC=n -t tag_bw -s 1048576 -n 50 -w 5
unset UCX_TLS UCX_NET_DEVICES

# Every device at once, as a user who sets no UCX_NET_DEVICES gets them: in
# a namespace of its own with two (lo and a veth end), so the case does not
# depend on this host's interfaces.  UCP keys its event handlers by fd; the
# ifaces of one md shared their context's fd, and the second was refused
# ("failed to set event handler on siwarp/... Element already exists").
if [ "$(id -u)" = 0 ] && sh "$srcdir/contrib/netns.sh" check >/dev/null 2>&1; then
    dns=ud$$
    if eval "$(sh "$srcdir/contrib/netns.sh" up "$dns")"; then
        plog=$(log_name "perftest every device")
        ilog=$(log_name "ucx_info every device")
        ip netns exec "$SERVER_NS" env LD_PRELOAD="$MOD" ucx_info -d >"$ilog" 2>&1
        PT_SERVER_PRE="ip netns exec $SERVER_NS env UCX_TLS=siwarp" \
            PT_CLIENT_PRE="ip netns exec $SERVER_NS env UCX_TLS=siwarp" \
            ucx_perftest_pair "$plog" -t tag_lat -n 2000 -w 100
        [ $pt_crc -eq 0 ] && [ $pt_src -eq 0 ] && [ -n "$pt_row" ] &&
            ! grep -q "Element already exists" "$plog" &&
            [ "$(grep -c 'Transport: siwarp' "$ilog")" -ge 2 ]
        result $? "UCP tag_lat with no UCX_NET_DEVICES on a host of two interfaces (ucx_info -d: $(grep -c 'Transport: siwarp' "$ilog") siwarp devices)" "$plog"
        sh "$srcdir/contrib/netns.sh" down "$dns" >/dev/null 2>&1
    else
        not_ok "UCP tag_lat with no UCX_NET_DEVICES: contrib/netns.sh up failed"
    fi
else
    skip "UCP tag_lat with no UCX_NET_DEVICES on a host of two interfaces" \
        "needs root and network namespaces (contrib/netns.sh check)"
fi

# ---- Open MPI: pml ucx, osc ucx, OpenSHMEM ----------------------------------
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
    skip "MPI and OpenSHMEM over the siwarp transport" "mpicc/mpirun not installed"
    echo "1..$n"; [ $failed -eq 0 ]; exit
fi
blog=$OUT/build.log
: >"$blog"
bok=0
for p in mpi_pingpong mpi_coll mpi_onesided mpi_rma mpi_passive mpi_spawn mpi_accept \
         mpi_progress_rule mpi_busy_peer; do
    mpicc -O2 -g -I"$srcdir/test/mpi" -o "$OUT/$p" "$srcdir/test/mpi/$p.c" >>"$blog" 2>&1 || bok=1
done
result $bok "build the MPI test programs with mpicc" "$blog"

# Debian's /etc/openmpi/openmpi-mca-params.conf says pml = ^ucx and
# osc = ^ucx,pt2pt, and Open MPI's common ucx code takes only the transports
# of opal_common_ucx_tls (by default InfiniBand ones): override all three.
UCXRUN="--mca pml ucx --mca osc ucx --mca btl self --mca opal_common_ucx_tls siwarp
        -x UCX_TLS=siwarp,self -x UCX_NET_DEVICES=$DEV -x LD_PRELOAD=$MOD"
mpi_run() {
    what=$1 np=$2; shift 2
    mlog=$(log_name "mpi $what")
    # shellcheck disable=SC2086
    timeout 300 mpirun -np "$np" $UCXRUN "$@" >"$mlog" 2>&1
    result $? "pml/osc ucx, UCX_TLS=siwarp,self, np=$np: $what" "$mlog"
}
mpi_run "ping-pong and exchange 0 B .. 4 MiB" 2 "$OUT/mpi_pingpong" 4194304
mpi_run "collectives (bcast, allreduce, alltoall(v))" 4 "$OUT/mpi_coll"
# every connection through the challenge round of a verbs acceptor (the
# test hook of uct_siwarp_challenge.c), the twins of simultaneous eps too
mpi_run "collectives, every acceptor challenging first" 4 -x SIWARP_UCT_TEST_CHALLENGE=1 \
    "$OUT/mpi_coll"
mpi_run "one-sided put/get/accumulate, fence and lock" 2 "$OUT/mpi_onesided"
# mpi_rma's "acc" case is left out: osc ucx of Open MPI 4.1.4 hands UCX
# 1-byte atomics it refuses ("invalid atomic operation datatype"), over
# UCX_TLS=tcp exactly as over siwarp
mpi_run "mpi_rma counter, cas, sync, dynamic (RDMA + RFC 7306 atomics)" 2 \
    "$OUT/mpi_rma" counter cas sync dynamic
mpi_run "mpi_rma counter, cas, sync on MPI_Win_create windows" 4 \
    "$OUT/mpi_rma" create counter cas sync
# dynamic processes: new eps both ways between jobs, and eps destroyed and
# made again between the same processes, which take the connection they
# left (uct_siwarp_conn.c): descriptors may not grow after cycle 5
mpi_run "MPI_Comm_spawn of 2 and 3 children, exchange 0 B .. 4 MiB" 2 --oversubscribe \
    "$OUT/mpi_spawn" spawn 2,3
mpi_run "MPI_Comm_accept/connect between halves of the job" 4 --oversubscribe \
    "$OUT/mpi_accept" split
mpi_run "30 accept/connect/disconnect cycles, descriptors flat" 2 \
    "$OUT/mpi_accept" cycles 30 4 0

# First contact with a rank out of MPI (computing) for longer than the LLP
# timeout, with and without the progress thread: the connection waits for
# it (siwarp_conn_param.reply_wait_ms), and an accepted connection waits
# for the busy initiator's first message up to UCX_SIWARP_STALL_TIMEOUT
# (it was the LLP timeout: the job died).
for pt in y n; do
    for mode in recv send; do
        mpi_run "first contact with a rank 8 s out of MPI ($mode side, LLP 3 s, thread $pt)" 2 \
            -x UCX_SIWARP_LLP_TIMEOUT=3s -x UCX_SIWARP_PROGRESS_THREAD=$pt \
            "$OUT/mpi_busy_peer" $mode 8000
    done
done

# True passive target: the target spins outside MPI while rank 0's atomics,
# put, get and compare-and-swap (each flushed) must complete; only
# libsiwarp's progress thread (UCX_SIWARP_PROGRESS_THREAD, on by default)
# serves them.  The control without it must see nothing.
passive_run() {
    what=$1 expect=$2 pt=$3 d=$4
    plog=$(log_name "mpi passive $pt")
    # shellcheck disable=SC2086
    timeout 300 mpirun -np 2 $UCXRUN -x UCX_SIWARP_PROGRESS_THREAD=$pt \
        "$OUT/mpi_passive" -d "$d" >"$plog" 2>&1
    rc=$?
    [ $rc -eq 0 ] && grep -q "^passive: $expect\$" "$plog" && ! grep -q "check failed" "$plog"
    result $? "osc ucx, UCX_TLS=siwarp,self: $what (exit $rc, expected '$expect')" "$plog"
    grep -h "^passive: target saw" "$plog" | sed 's/^/# /'
}
passive_run "passive target: atomics, put, get, cas complete while the target computes" ok y 30
passive_run "control, UCX_SIWARP_PROGRESS_THREAD=n: they wait for the target's MPI" incomplete n 3

# Send coalescing (UCX_SIWARP_TX_COALESCE) holds the second and later sends
# posted between two progress calls; a sender whose MPI_Send completed and
# that then stays out of MPI must not keep them (MPI's progress rule, the
# BTL's test).  auto: with the thread (which writes them once the process
# is away), and off without it; forcing 16 without the thread must fail
# case a, which shows the test sees a held send.
rule_run() {
    what=$1 expect=$2; shift 2
    rlog=$(log_name "mpi progress rule $*")
    rdir=$(mktemp -d)
    # shellcheck disable=SC2086
    timeout 300 mpirun -np 2 $UCXRUN "$@" "$OUT/mpi_progress_rule" "$rdir" >"$rlog" 2>&1
    rc=$?
    rm -rf "$rdir"
    if [ "$expect" = ok ]; then
        [ $rc -eq 0 ] && grep -q "^progress rule: ok" "$rlog"
    else
        [ $rc -ne 0 ] && grep -q "case a: rank 1 never got the 8 messages" "$rlog"
    fi
    result $? "pml ucx, UCX_TLS=siwarp,self: $what (exit $rc)" "$rlog"
}
rule_run "progress rule with send coalescing (auto, thread on): sends complete outside MPI" ok
rule_run "progress rule, UCX_SIWARP_PROGRESS_THREAD=n (coalescing auto: off)" ok \
    -x UCX_SIWARP_PROGRESS_THREAD=n
rule_run "control, coalescing forced on without the thread: case a is held back" held \
    -x UCX_SIWARP_PROGRESS_THREAD=n -x UCX_SIWARP_TX_COALESCE=16

if command -v oshcc >/dev/null && command -v oshrun >/dev/null; then
    slog=$OUT/shmem-build.log
    oshcc -O2 -g -o "$OUT/shmem_check" "$srcdir/test/uct/shmem_check.c" >"$slog" 2>&1
    result $? "build shmem_check with oshcc" "$slog"
    for np in 2 4; do
        slog=$(log_name "shmem np=$np")
        # shellcheck disable=SC2086
        timeout 300 oshrun -np $np --mca spml ucx $UCXRUN "$OUT/shmem_check" >"$slog" 2>&1
        rc=$?
        # The program's own line comes after every check; and oshrun must
        # exit 0.  (Without --mca btl self, which UCXRUN sets, shmem_finalize
        # of Debian's Open MPI 4.1.4 segfaulted here even for an empty
        # program over UCX_TLS=tcp.)
        grep -q "^shmem: ok on $np PEs" "$slog" && ! grep -q "check failed" "$slog" && [ $rc -eq 0 ]
        result $? "OpenSHMEM (spml ucx) np=$np: put/get 8 B..1 MiB, fetch-add, cswap, add, barrier, broadcast, sum (oshrun exit $rc)" "$slog"
    done
    # contrib/bench-uct.sh's OpenSHMEM loops, which check what they leave
    slog=$(log_name "shmem_bench")
    if oshcc -O2 -o "$OUT/shmem_bench" "$srcdir/test/uct/shmem_bench.c" >"$slog" 2>&1; then
        # shellcheck disable=SC2086
        timeout 300 oshrun -np 2 --mca spml ucx $UCXRUN "$OUT/shmem_bench" 2048 >>"$slog" 2>&1
        rc=$?
        [ $rc -eq 0 ] && [ "$(grep -cE '^(put|get|fadd|cswap) [0-9]+ [0-9.]+ us$' "$slog")" -eq 8 ]
        result $? "OpenSHMEM benchmark loops (put+quiet, get, fetch-add, cswap) run and check their values (exit $rc)" "$slog"
    else
        result 1 "build shmem_bench with oshcc" "$slog"
    fi
else
    skip "OpenSHMEM over the siwarp transport" "oshcc/oshrun not installed"
fi

echo "1..$n"
[ $failed -eq 0 ]
