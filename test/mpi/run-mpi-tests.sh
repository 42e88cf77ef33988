#!/bin/sh
# run-mpi-tests.sh - MPI tests of the siwarp BTL, TAP output.
#
# Builds the test programs with mpicc into $BUILDDIR/test/mpi, then runs each
# with `mpirun --mca pml ob1 --mca btl siwarp,self` on 2 ranks and on 4
# oversubscribed ranks over loopback, plus the TCP fallback (all ranks and
# mixed), fallback=error, a bad MCA value, the progress thread,
# interface selection and dynamic processes (spawn, accept/connect, join).
# Every mpirun is bounded by `timeout`.
#
# Environment: srcdir (set by `make check`), BUILDDIR (default: cwd),
# MPI_TEST_TIMEOUT (seconds per mpirun, default 180), MPI_TEST_QUICK=1
# (smaller sizes), MPI_TEST_SECTIONS (space-separated subset of: core
# fallback hostile params big netns dyn; default all), MPI_DYN_TIMEOUT
# (seconds per mpirun of the dyn section, default 90).
set -u

srcdir=${srcdir:-$(dirname "$0")/../..}
case $srcdir in /*) ;; *) srcdir=$(cd "$srcdir" && pwd) ;; esac
BUILDDIR=${BUILDDIR:-$(pwd)}
T=${MPI_TEST_TIMEOUT:-180}
COMP=$BUILDDIR/btl_siwarp/.libs
OUT=$BUILDDIR/test/mpi
mkdir -p "$OUT"
STAMP=$OUT/.run-started
touch "$STAMP"

n=0
failed=0
# free_ports N: the first of N consecutive free TCP ports below the
# kernel's ephemeral range, for tests that pin the BTL's ports: in the
# ephemeral range any other test's connection may hold one (one CI run lost
# 47001 that way), below it only explicitly bound sockets can
free_ports() {
    fp_lo=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
    fp=$(( ${fp_lo:-32768} - 3000 ))
    while [ $((fp + $1)) -le "${fp_lo:-32768}" ]; do
        fq=$fp
        while [ $fq -lt $((fp + $1)) ] &&
              ! ss -Htan "( sport = :$fq )" 2>/dev/null | grep -q .; do
            fq=$((fq + 1))
        done
        [ $fq -eq $((fp + $1)) ] && { echo "$fp"; return 0; }
        fp=$((fq + 1))
    done
    echo $(( ${fp_lo:-32768} - 3000 ))
}

ok()      { n=$((n + 1)); echo "ok $n - $1"; }
not_ok()  { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
skip()    { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
diag()    { sed 's/^/# /' "$1" | tail -n 25; }
section() { case " ${MPI_TEST_SECTIONS:-core fallback hostile params big netns dyn} " in
            *" $1 "*) return 0 ;; *) return 1 ;; esac; }

if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
    echo "1..0 # SKIP mpicc/mpirun not installed"
    exit 0
fi
if [ ! -f "$COMP/mca_btl_siwarp.so" ]; then
    echo "1..0 # SKIP $COMP/mca_btl_siwarp.so not built (configure found no Open MPI headers?)"
    exit 0
fi

# Open MPI finds the component in the build tree; root needs the two flags.
OMPI_DIR=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
[ -n "$OMPI_DIR" ] || OMPI_DIR=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
export OMPI_MCA_mca_base_component_path="$COMP:$OMPI_DIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# keep Open MPI from probing for an rsh agent / hostfile in odd containers
export OMPI_MCA_plm_rsh_agent=${OMPI_MCA_plm_rsh_agent:-false}
export OMPI_MCA_rmaps_base_oversubscribe=1

PROGS="mpi_pingpong mpi_anysrc mpi_datatype mpi_flood mpi_coll mpi_onesided mpi_remap mpi-bench
       mpi_hostile mpi_oneway mpi_big mpi_connect_race mpi_threads mpi_regcount
       mpi_progress_rule mpi_spawn mpi_accept mpi_join"
# the TAP plan is printed at the end (tests are added and skipped by
# environment: netns, big messages)

# ---- build -----------------------------------------------------------------
build_ok=1
: > "$OUT/build.log"
for p in $PROGS; do
    mpicc -O2 -g -Wall -o "$OUT/$p" "$srcdir/test/mpi/$p.c" >> "$OUT/build.log" 2>&1 || build_ok=0
done
if [ $build_ok = 1 ]; then ok "build MPI test programs with mpicc"; else
    not_ok "build MPI test programs with mpicc"; diag "$OUT/build.log"; exit 1; fi

# the fallback's registration table, driven directly (no MPI)
log="$OUT/test_regtab.log"
if cc -O2 -g -Wall -o "$OUT/test_regtab" "$srcdir/test/mpi/test_regtab.c" \
        "$srcdir/btl_siwarp/btl_siwarp_regtab.c" -lpthread > "$log" 2>&1 &&
   timeout 60 "$OUT/test_regtab" >> "$log" 2>&1; then
    ok "fallback registration table: handle -> rights -> bounds, overflow, removal, growth"
else
    not_ok "fallback registration table (test_regtab)"; diag "$log"
fi

if ompi_info 2>/dev/null | grep -q "MCA btl: siwarp"; then
    ok "ompi_info lists MCA btl: siwarp"
else
    not_ok "ompi_info lists MCA btl: siwarp"
fi

MPIRUN_BASE="mpirun --mca pml ob1 --mca btl siwarp,self --bind-to none"
MPIRUN="$MPIRUN_BASE --mca osc ^ucx"
# one-sided: osc/sm would bypass the BTL on one node and osc/rdma needs BTL
# atomics (not offered), so force osc/pt2pt, which runs over ob1 and this BTL
MPIRUN_OSC="$MPIRUN_BASE --mca osc pt2pt"

# run NAME NP [mpirun args...] -- PROG ARGS : expect exit 0 and no error text
run() {
    name=$1; np=$2; shift 2
    log="$OUT/$(echo "$name" | tr -c 'A-Za-z0-9.=-' '_' | tr -s _).log"
    timeout "$T" $MPIRUN -np "$np" "$@" > "$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && ! grep -q "check failed" "$log"; then
        ok "$name"
    else
        not_ok "$name (exit $rc)"
        diag "$log"
    fi
}

if [ "${MPI_TEST_QUICK:-0}" = 1 ]; then BIG=4194304; BIG4=1048576; FLOOD=5000
else BIG=67108864; BIG4=8388608; FLOOD=20000; fi

for np in 2 4; do
    section core || break
    [ $np = 2 ] && max=$BIG || max=$BIG4
    run "np=$np ping-pong and exchange 0 B..$max B, odd sizes, unaligned" $np "$OUT/mpi_pingpong" $max
    run "np=$np any-source/any-tag, probe, cancel" $np "$OUT/mpi_anysrc"
    run "np=$np derived datatypes (vector, struct)" $np "$OUT/mpi_datatype"
    run "np=$np unexpected-message flood ($FLOOD per pair)" $np "$OUT/mpi_flood" $FLOOD
    run "np=$np collectives (bcast, allreduce, alltoall(v))" $np "$OUT/mpi_coll"
    MPIRUN_SAVE=$MPIRUN; MPIRUN=$MPIRUN_OSC
    run "np=$np one-sided put/get/accumulate, fence and lock (osc pt2pt)" $np "$OUT/mpi_onesided"
    MPIRUN=$MPIRUN_SAVE
    run "np=$np buffers freed/unmapped/remapped between transfers" $np "$OUT/mpi_remap"
    flags=$(mktemp -d)
    run "np=$np completed sends reach a peer while the sender stays out of MPI" \
        $np "$OUT/mpi_progress_rule" "$flags"
    rm -rf "$flags"
    if [ $np = 2 ]; then
        run "registration counters through MPI_T: up with a transfer, down when freed" \
            2 "$OUT/mpi_regcount"
    fi
done

# ---- TCP fallback ---------------------------------------------------------------
if section fallback; then
log="$OUT/fallback_all.log"
# the transport is checked in the verbose output ("over framed TCP"): the
# warning goes through ORTE's show_help relay, which now and then drops it
timeout "$T" $MPIRUN -np 2 --mca btl_siwarp_mpa 0 --mca btl_base_verbose 20 \
    "$OUT/mpi_pingpong" 4194304 > "$log" 2>&1
rc=$?
grep -q "plain framed" "$log" || echo "# note: fallback warning not relayed by ORTE this time"
if [ $rc -eq 0 ] && grep -q "over framed TCP" "$log" && grep -q "pingpong: ok" "$log"; then
    ok "btl_siwarp_mpa=0 everywhere: ping-pong over framed TCP, warning shown"
else
    not_ok "btl_siwarp_mpa=0 everywhere (exit $rc)"; diag "$log"
fi

# 4 ranks all on the fallback, every pair connecting at once, then a flood
# that fills every socket.  The acceptor used to read a HELLO blocking: 3
# and more ranks waited on each other's until their connect timeout.
run "btl_siwarp_mpa=0 on 4 ranks: all-to-all connect and unexpected-message flood over framed TCP" \
    4 --mca btl_siwarp_mpa 0 "$OUT/mpi_flood" 3000
run "btl_siwarp_mpa=0 on 4 ranks: collectives over framed TCP" \
    4 --mca btl_siwarp_mpa 0 "$OUT/mpi_coll"
flags=$(mktemp -d)
run "btl_siwarp_mpa=0: completed sends reach a peer while the sender stays out of MPI" \
    2 --mca btl_siwarp_mpa 0 "$OUT/mpi_progress_rule" "$flags"
rm -rf "$flags"

log="$OUT/fallback_mixed.log"
timeout "$T" $MPIRUN --mca btl_base_verbose 20 -np 1 -x OMPI_MCA_btl_siwarp_mpa=0 \
    "$OUT/mpi_coll" : -np 3 "$OUT/mpi_coll" > "$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "over framed TCP" "$log" && grep -q "over iWARP" "$log" &&
   grep -q "collectives: ok" "$log"; then
    ok "mixed job: rank 0 with btl_siwarp_mpa=0, ranks 1-3 iWARP (collectives)"
else
    not_ok "mixed job with one TCP-fallback rank (exit $rc)"; diag "$log"
fi

log="$OUT/fallback_mixed_rdma.log"
timeout "$T" $MPIRUN -np 1 -x OMPI_MCA_btl_siwarp_mpa=0 "$OUT/mpi_pingpong" $BIG4 : \
    -np 1 "$OUT/mpi_pingpong" $BIG4 > "$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q "pingpong: ok" "$log"; then
    ok "mixed pair: emulated put/get over TCP up to $BIG4 B"
else
    not_ok "mixed pair: emulated put/get over TCP (exit $rc)"; diag "$log"
fi

log="$OUT/fallback_error.log"
# with btl tcp also selected, ob1 must move the refused pair to btl/tcp
timeout "$T" mpirun --mca pml ob1 --mca btl siwarp,tcp,self --mca osc ^ucx --bind-to none \
    --mca btl_base_verbose 20 -np 1 -x OMPI_MCA_btl_siwarp_mpa=0 -x OMPI_MCA_btl_siwarp_fallback=error \
    "$OUT/mpi_pingpong" 1048576 : -np 1 -x OMPI_MCA_btl_siwarp_fallback=error \
    "$OUT/mpi_pingpong" 1048576 > "$log" 2>&1
rc=$?
# the refusal is checked in the verbose output too: ORTE's show_help relay
# loses the help message now and then ("Data unpack would read past end")
if [ $rc -eq 0 ] && grep -q "pingpong: ok" "$log" &&
   { grep -q "is disabled (btl_siwarp_fallback=error)" "$log" ||
     grep -q "fallback refused for .*(btl_siwarp_fallback=error)" "$log"; } &&
   grep -q "Using tcp btl for send to" "$log"; then
    ok "btl_siwarp_fallback=error: non-iWARP peer refused with a message, ob1 uses btl/tcp"
else
    not_ok "btl_siwarp_fallback=error (exit $rc)"; diag "$log"
fi
# Clients that connect to the fallback listeners and never say a word must
# not stall the ranks: a HELLO is read without waiting, a silent connection
# is dropped after 5 s, and at most 64 wait at once.  Read blocking, each
# one held its rank for up to 5 s: this job took 33 s instead of 1.  The
# bound is a hang check, not a speed target.
log="$OUT/fallback_silent.log"
if command -v bash >/dev/null 2>&1; then
    P=$(free_ports 2)
    P=$P bash -c 'for t in $(seq 40); do
                 for p in $P $((P + 1)); do exec {fd}<>"/dev/tcp/127.0.0.1/$p"; done 2>/dev/null
                 sleep 0.05
             done; exec sleep 30' &
    silent=$!
    timeout 25 $MPIRUN -np 2 --mca btl_siwarp_mpa 0 --mca btl_siwarp_if_include lo \
        --mca btl_siwarp_port_min_v4 "$P" --mca btl_siwarp_port_range_v4 2 \
        "$OUT/mpi_pingpong" 1048576 > "$log" 2>&1
    rc=$?
    kill "$silent" 2>/dev/null
    wait "$silent" 2>/dev/null
    if [ $rc -eq 0 ] && grep -q "pingpong: ok" "$log"; then
        ok "silent clients on the fallback listeners: the ranks connect and run regardless"
    else
        not_ok "silent clients on the fallback listeners (exit $rc; 124: still running after 25 s)"
        diag "$log"
    fi
else
    skip "silent clients on the fallback listeners" "needs bash (/dev/tcp)"
fi
# Two processes on one host, one port for both: the one that finds it taken
# must say so, naming the interface and the ports (the job then ends, as
# no BTL reaches that process; before, only "BTLs attempted: self").
log="$OUT/fallback_no_port.log"
P=$(free_ports 1)
timeout 25 $MPIRUN -np 2 --mca btl_siwarp_mpa 0 --mca btl_siwarp_if_include lo \
    --mca btl_siwarp_port_min_v4 "$P" --mca btl_siwarp_port_range_v4 1 --mca btl_base_verbose 20 \
    "$OUT/mpi_pingpong" 1024 > "$log" 2>&1
rc=$?
if [ $rc -ne 124 ] && ! grep -q "pingpong: ok" "$log" &&
   { grep -q "Ports: *$P-$P (btl_siwarp_port_min_v4" "$log" ||
     grep -q "no TCP fallback listener on lo, ports $P-$P .*: Address already in use" "$log"; }; then
    ok "a port range too small for the host's processes: the listener that fails is named"
else
    not_ok "port range too small (exit $rc; 124: still running after 25 s)"; diag "$log"
fi
fi  # section fallback

# ---- very large messages (issue 3: ob1's RDMA path up to at least 1 GiB) ------------
# 256 MiB through RGET (ob1's default here: one RDMA Read of the whole
# message) and through the put pipeline (mpi_leave_pinned=0: 4 MiB RDMA
# Writes), then 1 GiB once; data verified both ways, and each rank's peak
# RSS must stay near its one buffer (registrations copy and pin nothing).
big() {
    name=$1; mib=$2; shift 2
    log="$OUT/big_$(echo "$name" | tr -c 'A-Za-z0-9' _).log"
    timeout "$T" $MPIRUN -np 2 "$@" > "$log" 2>&1
    rc=$?
    rss=$(sed -n 's/^big: rank [01] maxrss \([0-9]*\) MiB$/\1/p' "$log" | sort -n | tail -n 1)
    limit=$((mib * 5 / 4 + 256))
    if [ $rc -eq 0 ] && grep -q "^big: ok" "$log" && [ -n "$rss" ] && [ "$rss" -le $limit ]; then
        ok "$name (peak RSS ${rss} MiB <= $limit MiB)"
    else
        not_ok "$name (exit $rc, peak RSS ${rss:-?} MiB, limit $limit MiB)"; diag "$log"
    fi
}
if section big; then
    avail=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo 2>/dev/null)
    if [ "${avail:-0}" -lt 1536 ]; then
        skip "256 MiB messages" "only ${avail:-?} MiB of memory available"
    else
        big "256 MiB ping-pong, RGET (one RDMA Read), verified" 256 "$OUT/mpi_big" 256m
        big "256 MiB ping-pong, put pipeline (mpi_leave_pinned=0), verified" 256 \
            --mca mpi_leave_pinned 0 "$OUT/mpi_big" 256m
        big "256 MiB ping-pong over the TCP fallback (emulated get), verified" 256 \
            --mca btl_siwarp_mpa 0 "$OUT/mpi_big" 256m
    fi
    if [ "${MPI_TEST_QUICK:-0}" = 1 ]; then
        skip "1 GiB message" "MPI_TEST_QUICK=1"
    elif [ "${avail:-0}" -lt 4096 ]; then
        skip "1 GiB message" "only ${avail:-?} MiB of memory available (needs 4096)"
    else
        big "1 GiB ping-pong (2 ranks, once), verified" 1024 "$OUT/mpi_big" 1g
    fi
fi

# ---- hostile fallback peer ---------------------------------------------------------------
# SIWARP_BTL_TEST_HOSTILE (a test hook in btl_siwarp_fallback.c) makes one
# rank corrupt the target of every put / get it sends over the fallback.  The
# target must refuse with a message naming the peer, the job must fail, and
# mpi_hostile must never see its unregistered guard memory written or read.
# mpi_leave_pinned=0 makes ob1 use its put pipeline for 4 MiB (the hostile
# sender puts); by default ob1 uses RGET (the hostile receiver gets).
hostile() {
    what=$1; mode=$2
    log="$OUT/hostile_${what}_$mode.log"
    if [ "$what" = put ]; then
        timeout "$T" $MPIRUN --mca btl_siwarp_mpa 0 --mca mpi_leave_pinned 0 \
            -np 1 -x SIWARP_BTL_TEST_HOSTILE=$mode "$OUT/mpi_hostile" 4194304 : \
            -np 1 "$OUT/mpi_hostile" 4194304 > "$log" 2>&1
    else
        timeout "$T" $MPIRUN --mca btl_siwarp_mpa 0 -np 1 "$OUT/mpi_hostile" 4194304 : \
            -np 1 -x SIWARP_BTL_TEST_HOSTILE=$mode "$OUT/mpi_hostile" 4194304 > "$log" 2>&1
    fi
    rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && ! grep -q "HARM" "$log" &&
       grep -q "siwarp: refused $what of .* from \[\[" "$log" &&
       grep -q "remote access outside our registrations" "$log"; then
        ok "hostile fallback peer ($what, $mode): refused with the peer named, memory untouched"
    else
        not_ok "hostile fallback peer ($what, $mode) (exit $rc)"; diag "$log"
    fi
}
if section hostile; then
    hostile put below
    hostile get below
    hostile put stag
    hostile get wrap
fi

# ---- parameters ---------------------------------------------------------------------
if section params; then
# bad_param NAME VALUE: the job must fail, naming the parameter
bad_param() {
    log="$OUT/bad_param_$1.log"
    timeout "$T" $MPIRUN -np 2 --mca "$1" "$2" "$OUT/mpi_pingpong" 1024 > "$log" 2>&1
    rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "$1" "$log" &&
       grep -q "cannot use" "$log"; then
        ok "bad MCA value ($1=$2) refused with a clear message"
    else
        not_ok "bad MCA value $1=$2 refused (exit $rc)"; diag "$log"
    fi
}
bad_param btl_siwarp_rq_depth 0

if ompi_info --param btl siwarp --level 9 2>/dev/null | grep -q "btl_siwarp_progress_thread"; then
    ok "ompi_info --param btl siwarp --level 9 documents the parameters"
else
    not_ok "ompi_info --param btl siwarp --level 9"
fi

run "progress thread on (btl_siwarp_progress_thread=1)" 2 \
    --mca btl_siwarp_progress_thread 1 "$OUT/mpi_pingpong" $BIG4
# MPI_THREAD_MULTIPLE: Open MPI's free lists then take its 16-byte
# compare-and-swap, inlined into the component from its headers; built
# without -mcx16 that was a call to __sync_val_compare_and_swap_16, which
# nothing defines, and the job died at the first one (configure.ac).
if nm -D --undefined-only "$COMP/mca_btl_siwarp.so" 2>/dev/null | grep -q "__sync_.*_16\|__atomic_.*_16"; then
    not_ok "the component needs no 16-byte atomic from a library (built without -mcx16?)"
    nm -D --undefined-only "$COMP/mca_btl_siwarp.so" | grep "_16" | sed 's/^/# /'
else
    ok "the component needs no 16-byte atomic from a library"
fi
# The plugin exports its component and nothing else (btl_siwarp/local.mk):
# a call between its own functions that went through the PLT would be a
# jump through a table page more on every message.
exported=$(nm -D --defined-only "$COMP/mca_btl_siwarp.so" 2>/dev/null | awk '{print $3}' | tr '\n' ' ')
own_plt=$(objdump -d "$COMP/mca_btl_siwarp.so" 2>/dev/null | grep -c "call.*<\(swp_\|siwarp_\|mca_btl_siwarp_\)[a-z0-9_]*@plt>")
if [ "$exported" = "mca_btl_siwarp_component " ] && [ "$own_plt" = 0 ]; then
    ok "the component exports only mca_btl_siwarp_component; no call to its own code goes through the PLT"
else
    not_ok "the component exports only mca_btl_siwarp_component (exports: ${exported:0:200}...; own PLT calls: $own_plt)"
fi
run "MPI_THREAD_MULTIPLE: 4 threads a rank, each its own ping-pong 1 B-1 MiB" 2 \
    "$OUT/mpi_threads" 4 20
run "MPI_THREAD_MULTIPLE with the progress thread (btl_siwarp_progress_thread=1)" 2 \
    --mca btl_siwarp_progress_thread 1 "$OUT/mpi_threads" 4 10
run "MPI_THREAD_MULTIPLE, np=4: 4 threads a rank, each allreduces on its own communicator" 4 \
    "$OUT/mpi_threads" coll 4 100
run "interface selection: btl_siwarp_if_include=lo" 2 \
    --mca btl_siwarp_if_include lo "$OUT/mpi_flood" 2000
run "interface selection by network: btl_siwarp_if_include=127.0.0.0/8" 2 \
    --mca btl_siwarp_if_include 127.0.0.0/8 "$OUT/mpi_pingpong" 65536
run "interface selection: btl_siwarp_if_exclude=lo" 2 \
    --mca btl_siwarp_if_exclude lo "$OUT/mpi_pingpong" 65536
run "small receive queue (rq_depth=2, credit_threshold=1) under flood" 4 \
    --mca btl_siwarp_rq_depth 2 --mca btl_siwarp_credit_threshold 1 "$OUT/mpi_flood" 3000
# The shared receive queue must back every credit it grants with a posted
# buffer (iWARP: a Send without one is a Terminate): at its smallest, three
# peers flooding each rank get one credit each and the pool grows to match;
# the flood makes grants grow on demand up to srq_max, each backed too.
run "shared receive queue at its minimum (srq_size=1, srq_min_credits=1, srq_max=8) under flood" 4 \
    --mca btl_siwarp_srq_size 1 --mca btl_siwarp_srq_min_credits 1 \
    --mca btl_siwarp_srq_max 8 "$OUT/mpi_flood" 3000
run "shared receive queue, ping-pong and exchange up to 8 MiB (srq_size=2)" 4 \
    --mca btl_siwarp_srq_size 2 "$OUT/mpi_pingpong" $BIG4
run "per-peer receive queues (btl_siwarp_srq_size=0) under flood" 4 \
    --mca btl_siwarp_srq_size 0 --mca btl_siwarp_rq_depth 2 "$OUT/mpi_flood" 3000
# Inline receives (libsiwarp's receive handler) off, and on for every
# eager size: both paths carry floods and odd sizes, in order.
run "inline receives off (btl_siwarp_rx_inline=0) under flood" 4 \
    --mca btl_siwarp_rx_inline 0 "$OUT/mpi_flood" 3000
run "inline receives up to 64 KiB (btl_siwarp_rx_inline=65536) under flood" 4 \
    --mca btl_siwarp_rx_inline 65536 "$OUT/mpi_flood" 3000
run "inline receives up to 64 KiB, ping-pong and exchange 0 B..8 MiB, per-peer queues" 2 \
    --mca btl_siwarp_rx_inline 65536 --mca btl_siwarp_srq_size 0 "$OUT/mpi_pingpong" $BIG4
# The share's floor (btl_siwarp_srq_min_credits 0: 3, or rq_depth if less):
# 16 buffers among 7 peers would give each 1 credit, and a peer with one
# credit costs a CREDIT message for every Send that is not answered at once.
# vrun NAME NP ARGS...: one job with btl_base_verbose 20, its log in
# $OUT/vrun_NAME.log, for checks on what the BTL reports
vrun() {
    log="$OUT/vrun_$1.log"
    np=$2
    shift 2
    timeout "$T" $MPIRUN -np "$np" --oversubscribe --mca btl_base_verbose 20 "$@" > "$log" 2>&1
}
# vcheck RC NAME DESC PATTERN...: ok DESC when vrun NAME exited RC = 0 and
# its log matches every PATTERN (grep); "!PATTERN": matches nowhere
vcheck() {
    rc=$1 log="$OUT/vrun_$2.log" desc=$3
    shift 3
    good=$([ "$rc" -eq 0 ] && echo 1 || echo 0)
    for pat in "$@"; do
        case $pat in
        !*) ! grep -q -- "${pat#!}" "$log" || good=0 ;;
        *) grep -q -- "$pat" "$log" || good=0 ;;
        esac
    done
    if [ $good = 1 ]; then ok "$desc"; else not_ok "$desc (exit $rc)"; diag "$log"; fi
}
srq_floor() { name=$1; shift; vrun "srq_floor_$name" 8 "$@" "$OUT/mpi_coll"; }
srq_floor default
vcheck $? srq_floor_default "np=8: every peer gets 3 credits from the shared receive queue by default" \
    "collectives: ok" "shared receive queue: 3 credits granted (+1 control)" \
    "!shared receive queue: [12] credits granted"
srq_floor rq2 --mca btl_siwarp_rq_depth 2
vcheck $? srq_floor_rq2 "np=8, rq_depth=2: the default floor of 3 credits yields to rq_depth" \
    "collectives: ok" "shared receive queue: 2 credits granted (+1 control)"
# RFC 6581 peer-to-peer mode: auto (the default) leaves it out between
# two software stacks, so no RTR and the responder sends as soon as its
# Reply is out; 1 keeps it, with the Read RTR (4) that RNICs and siw get.
p2p_run() { name=$1; shift; vrun "p2p_$name" 2 "$@" "$OUT/mpi_pingpong" 65536; }
p2p_run auto
vcheck $? p2p_auto "btl_siwarp_p2p auto: no P2P RTR between two software siwarp peers" \
    "pingpong: ok" "connected: MPA rev 2 .* rtr 0 " "!connected: MPA .* rtr [1-9]"
p2p_run on --mca btl_siwarp_p2p 1
vcheck $? p2p_on "btl_siwarp_p2p 1: P2P with the Read RTR between software peers" \
    "pingpong: ok" "connected: MPA rev 2 .* rtr 4 "
# The libsiwarp context takes no lock when one thread at a time calls in:
# without MPI_THREAD_MULTIPLE and without the progress thread; either of
# them keeps it thread-safe.
vrun lock_default 2 "$OUT/mpi_pingpong" 65536
vcheck $? lock_default "one thread in MPI: the libsiwarp context takes no lock" \
    "pingpong: ok" "libsiwarp context: one thread at a time, no locks" "!libsiwarp context: thread-safe" \
    "inline receives: on"
vrun lock_multiple 2 "$OUT/mpi_threads" 2 5
vcheck $? lock_multiple "MPI_THREAD_MULTIPLE: the libsiwarp context locks" \
    "threads: ok" "libsiwarp context: thread-safe (MPI_THREAD_MULTIPLE)" "!no locks" \
    "!inline receives"
vrun lock_thread 2 --mca btl_siwarp_progress_thread 1 "$OUT/mpi_pingpong" 65536
vcheck $? lock_thread "btl_siwarp_progress_thread=1: the libsiwarp context locks" \
    "pingpong: ok" "libsiwarp context: thread-safe (btl_siwarp_progress_thread)" "!no locks" \
    "!inline receives"
# A peer that asked first: rank 1's request waits while rank 0 sleeps
# outside MPI; rank 0's reply must take that connection, not open its own
# and reject rank 1's as a duplicate.
vrun first_contact 2 "$OUT/mpi_oneway" reply 300
vcheck $? first_contact "first send to a peer whose request waits: that connection is taken, none crossed" \
    "oneway reply: ok" "connected to .* over iWARP" "!rejecting connection"
# The same, with rank 0 slow to see the accepted connection up: rank 1's
# first message then waits in the socket, and the library pass that reads
# it delivers it (receive handler) while the BTL is still checking that
# connection.  The BTL must take the connection as made there, once: not
# count its credits twice ("illegal state change").
vrun first_contact_stall 2 -x SIWARP_BTL_TEST_ACCEPT_STALL_MS=100 "$OUT/mpi_oneway" reply 300
vcheck $? first_contact_stall "a peer's first message read while its accepted connection is being checked: connected once" \
    "oneway reply: ok" "came before its connection was seen up" "!illegal state change"
bad_param btl_siwarp_p2p 2
bad_param btl_siwarp_rx_inline -1
bad_param btl_siwarp_srq_size -1
bad_param btl_siwarp_srq_min_credits -1
bad_param btl_siwarp_srq_max 8      # below btl_siwarp_srq_size (16)
bad_param btl_siwarp_tcp_congestion no-such-cc      # not in this kernel
bad_param btl_siwarp_tcp_congestion cubic,,reno     # malformed
run "TCP congestion control: system default (btl_siwarp_tcp_congestion empty)" 2 \
    --mca btl_siwarp_tcp_congestion "" "$OUT/mpi_pingpong" 1048576
run "TCP congestion control: reno after a name the kernel lacks" 2 \
    --mca btl_siwarp_tcp_congestion no-such-cc,reno "$OUT/mpi_pingpong" 1048576
# The default asks for Reno first (contrib/PERFORMANCE.md, *Congestion
# control*): every connection's socket must run it, none CUBIC.
vrun tcp_cc_default 2 -x SIWARP_DEBUG=1 "$OUT/mpi_pingpong" 65536
vcheck $? tcp_cc_default "TCP congestion control: reno on every socket by default" \
    "TCP congestion control reno" "!TCP congestion control cubic"
run "mpi-bench smoke (0 B..1 MiB)" 2 "$OUT/mpi-bench" -m 1048576 -i 20

# First contact while the odd ranks compute without progress for longer than
# the MPA timeout: the even ranks' requests time out and are retried on the
# next address, so an odd rank finds a given-up and a live request from one
# peer.  Connections persist for a job's life, so each launch is one race;
# several launches, each bounded by timeout, and the first failure is shown.
# The ranks start together at a wall-clock second given on the command line.
# Odd launches force RFC 6581's P2P mode (btl_siwarp_p2p 1, as toward an
# RNIC or siw), where a responder waits for the initiator's RTR: a rank
# must not answer a busy peer's waiting request in its place.
races=3; [ "${MPI_TEST_QUICK:-0}" = 1 ] || races=8
bad=0
for i in $(seq 1 $races); do
    log="$OUT/connect_race_$i.log"
    p2p=$([ $((i % 2)) = 1 ] && echo 1 || echo -1)
    timeout 60 $MPIRUN -np 4 --mca btl_siwarp_connect_timeout 1000 --mca btl_siwarp_p2p $p2p \
        "$OUT/mpi_connect_race" 1500 $(( $(date +%s) + 4 )) > "$log" 2>&1
    rc=$?
    if [ $rc -ne 0 ] || ! grep -q "connect_race: ok" "$log"; then
        [ $bad = 0 ] && diag "$log"
        bad=$((bad + 1))
    fi
done
if [ $bad = 0 ]; then
    ok "np=4 first contact with odd ranks busy past connect_timeout, $races launches (P2P on and auto): given-up requests beside live ones"
else
    not_ok "np=4 first contact with odd ranks busy past connect_timeout: $bad of $races launches failed"
fi

# The loser of a simultaneous connect waits for the winner's connection at
# most btl_siwarp_connect_timeout.  SIWARP_BTL_TEST_REFUSE_INCOMING (a test
# hook) makes rank 0 answer "duplicate, use mine" and never connect.
for mpa in 1 0; do
    log="$OUT/connect_timeout_mpa$mpa.log"
    t0=$(date +%s)
    timeout 60 $MPIRUN --mca btl_siwarp_mpa $mpa --mca btl_siwarp_connect_timeout 1500 \
        -np 1 -x SIWARP_BTL_TEST_REFUSE_INCOMING=1 "$OUT/mpi_oneway" : \
        -np 1 "$OUT/mpi_oneway" > "$log" 2>&1
    rc=$?
    dt=$(( $(date +%s) - t0 ))
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $dt -lt 30 ] &&
       grep -q "\[\[.*,0\] kept its own connection .* did not arrive within 1500 ms" "$log"; then
        ok "lost simultaneous connect, winner never connects (mpa=$mpa): peer reported after btl_siwarp_connect_timeout (${dt}s)"
    else
        not_ok "lost simultaneous connect wait is bounded (mpa=$mpa, exit $rc, ${dt}s)"; diag "$log"
    fi
done
fi  # section params

# ---- two hosts: one rank in each of two network namespaces (veth pair) -------------------
# contrib/netns-mpirun.sh makes the namespaces, starts the second rank
# through an rsh agent around `ip netns exec`, restricts the BTL to the veth
# pair and removes everything on exit.
# netns_why: why two namespaces cannot be made here, or nothing
netns_why() {
    if [ "$(id -u)" != 0 ]; then echo "not root"
    elif ! command -v ip >/dev/null 2>&1; then echo "ip (iproute2) not installed"
    elif ! "$srcdir/contrib/netns.sh" check >/dev/null 2>&1; then echo "ip netns unavailable here"
    elif ! command -v unshare >/dev/null 2>&1; then echo "unshare (util-linux) not installed"
    fi
}
if section netns; then
    NETNS_RUN="$srcdir/contrib/netns-mpirun.sh"
    why=$(netns_why)
    netns_run() {
        name=$1; expect=$2; shift 2
        log="$OUT/netns_$(echo "$name" | tr -c 'A-Za-z0-9' _ | cut -c1-40).log"
        if [ -n "$why" ]; then skip "two namespaces: $name" "$why"; return; fi
        NETNS_MPIRUN_TIMEOUT=$T "$NETNS_RUN" -np 2 --mca pml ob1 --mca btl siwarp,self \
            --bind-to none --mca osc ^ucx --mca btl_base_verbose 20 "$@" > "$log" 2>&1
        rc=$?
        if [ $rc -eq 0 ] && grep -q "$expect" "$log" && ! grep -q "check failed" "$log" &&
           grep -q "connected to .* over iWARP" "$log" &&
           grep -q "siwarp: using [^ ]*-v[sc] (10.231.0" "$log" &&
           ! grep -q "siwarp: using lo " "$log"; then
            ok "two namespaces over veth: $name"
        else
            not_ok "two namespaces over veth: $name (exit $rc)"; diag "$log"
        fi
    }
    netns_run "ping-pong and exchange 0 B..$BIG4 B" "pingpong: ok" "$OUT/mpi_pingpong" $BIG4
    netns_run "buffers freed/unmapped/remapped between transfers" "remap: ok" "$OUT/mpi_remap"
    netns_run "collectives (bcast, allreduce, alltoall(v))" "collectives: ok" "$OUT/mpi_coll"
    if [ -z "$why" ] && ip netns list 2>/dev/null | grep -q "^swpm"; then
        echo "# note: swpm* namespaces still present (another run?)"
    fi
fi

# ---- dynamic processes (issue 40) ------------------------------------------------------
# MPI_Comm_spawn(_multiple), accept/connect within a job and between two
# jobs through ompi-server, MPI_Comm_join, 50 connect/disconnect cycles,
# a spawn over the TCP fallback and one into another network namespace,
# each over siwarp and, as a reference, over btl tcp; then a spawn whose
# children cannot be reached.  The programs (mpi_spawn, mpi_accept,
# mpi_join) run dyn_exchange (mpi_dyn.h) over every intercommunicator:
# both ways 0 B..4 MiB, every byte verified, bcast and allreduce on the
# merge, then MPI_Comm_disconnect.  They print the stage they reached: a
# job killed by its bound is reported with the last one.  Everything talks
# over loopback (ORTE's out-of-band channel and ompi-server included) or
# over the veth pair of the namespaces.
if section dyn; then
DT=${MPI_DYN_TIMEOUT:-90}
DYN_MARK=siwarp-dyn-$$
cp "$OUT/mpi_spawn" "$OUT/mpi_spawn_b"      # spawn_multiple's second command

# dyn_reap MARK: end what a job marked MARK left running (a hung job's
# children belong to their own process groups, out of timeout's reach);
# only processes that carry the mark in their environment, by PID
dyn_reap() {
    for sig in TERM KILL; do
        pids=$(grep -lsxzF "SIWARP_DYN_MARK=$1" /proc/[0-9]*/environ 2>/dev/null |
               sed 's,^/proc/\([0-9]*\)/environ$,\1,' | tr '\n' ' ')
        [ -n "$pids" ] || return 0
        echo "dyn: ending what was left running: $pids (SIG$sig)"
        kill -s $sig $pids 2>/dev/null
        [ $sig = TERM ] && sleep 2
    done
}

# dyn_mpirun TRANSPORT LOG ARGS...: one job over siwarp or btl tcp, bounded
# by DT (DYN_BOUND overrides), launched by DYN_RUNNER (default mpirun);
# DYN_NET_siwarp / DYN_NET_tcp / DYN_OOB replace the loopback interface options
dyn_mpirun() {
    dtr=$1 dlog=$2
    shift 2
    if [ "$dtr" = siwarp ]; then
        dnet="--mca btl siwarp,self ${DYN_NET_siwarp---mca btl_siwarp_if_include lo}"
    else
        dnet="--mca btl tcp,self ${DYN_NET_tcp---mca btl_tcp_if_include lo}"
    fi
    dmark="$DYN_MARK.$(basename "$dlog")"
    # shellcheck disable=SC2086
    SIWARP_DYN_MARK=$dmark NETNS_MPIRUN_TIMEOUT=${DYN_BOUND:-$DT} \
        timeout -k 10 $((${DYN_BOUND:-$DT} + 5)) ${DYN_RUNNER:-mpirun} --mca pml ob1 \
        --mca osc ^ucx --bind-to none ${DYN_OOB---mca oob_tcp_if_include lo} $dnet "$@" \
        > "$dlog" 2>&1
    drc=$?
    dyn_reap "$dmark" >> "$dlog"
    return $drc
}

# dyn_verdict RC LOG PATTERN...: why the job failed (empty: it did not):
# not exit 0, a failed check, a PATTERN (grep) missing
dyn_verdict() {
    vrc=$1 vlog=$2
    shift 2
    case $vrc in
    0) ;;
    124|137) echo "hung: killed after ${DYN_BOUND:-$DT} s; last stage: $(grep -E \
           '^(spawn|parent|child|acceptor|connector|server|client|cycles|join|joiner [01]):' \
           "$vlog" | tail -n 1)"; return ;;
    *) echo "exit $vrc"; return ;;
    esac
    if grep -q "check failed" "$vlog"; then echo "a check failed"; return; fi
    for vp in "$@"; do
        grep -q -- "$vp" "$vlog" || { echo "no '$vp' in the log"; return; }
    done
}

# dyn_case NAME RUNNER ARGS...: RUNNER TRANSPORT LOG ARGS... runs the case
# (dyn_mpirun or dyn_pair) over btl tcp, the reference, then over siwarp;
# the logs must show DYN_PAT (and DYN_PAT_siwarp over siwarp); lines
# matching DYN_SHOW are copied into the output.  A failure of the
# reference is reported as the reference's (TAP TODO), not as siwarp's; a
# siwarp failure whose log shows DYN_KNOWN is the known limitation
# DYN_KNOWN_WHY (TAP TODO, the matching lines shown).
dyn_case() {
    cname=$1 crun=$2
    shift 2
    cbase="$OUT/dyn_$(echo "$cname" | tr -c 'A-Za-z0-9' _ | tr -s _ | cut -c1-48)"
    "$crun" tcp "$cbase.tcp.log" "$@"
    cref=$(dyn_verdict $? "$cbase.tcp.log" "$DYN_PAT")
    "$crun" siwarp "$cbase.siwarp.log" "$@"
    cwhy=$(dyn_verdict $? "$cbase.siwarp.log" "$DYN_PAT" ${DYN_PAT_siwarp:+"$DYN_PAT_siwarp"})
    if [ -z "$cwhy" ]; then
        ok "dyn, siwarp: $cname"
    elif [ -n "${DYN_KNOWN:-}" ] && grep -q -- "$DYN_KNOWN" "$cbase.siwarp.log"; then
        n=$((n + 1))
        echo "not ok $n - dyn, siwarp: $cname ($cwhy) # TODO known limitation: $DYN_KNOWN_WHY"
        grep -h -- "$DYN_KNOWN" "$cbase.siwarp.log" | head -n 2 | sed 's/^/# /'
    else
        not_ok "dyn, siwarp: $cname ($cwhy${cref:+; the btl tcp reference failed too})"
        diag "$cbase.siwarp.log"
    fi
    [ -n "${DYN_SHOW:-}" ] && grep -h -- "$DYN_SHOW" "$cbase.siwarp.log" | sed 's/^/# siwarp: /'
    if [ -z "$cref" ]; then
        ok "dyn, btl tcp reference: $cname"
    else
        n=$((n + 1))
        echo "not ok $n - dyn, btl tcp reference: $cname ($cref) # TODO the reference transport failed, not siwarp"
        diag "$cbase.tcp.log"
    fi
    [ -n "${DYN_SHOW:-}" ] && grep -h -- "$DYN_SHOW" "$cbase.tcp.log" | sed 's/^/# btl tcp: /'
    return 0
}

DYN_PAT="spawn: ok"
dyn_case "MPI_Comm_spawn from 2 parents: 2, 3 and 4 children in turn, both ways 0 B..4 MiB, merged collectives, disconnect" \
    dyn_mpirun -np 2 "$OUT/mpi_spawn" spawn 2,3,4
dyn_case "MPI_Comm_spawn from 4 parents: 2, 3 and 4 children in turn" \
    dyn_mpirun -np 4 "$OUT/mpi_spawn" spawn 2,3,4
dyn_case "MPI_Comm_spawn_multiple: 1 child of one command and 2 of another, each with its own argv" \
    dyn_mpirun -np 2 "$OUT/mpi_spawn" multiple "$OUT/mpi_spawn_b" 1 2

DYN_PAT="accept split: ok"
dyn_case "MPI_Comm_accept/connect between the halves of a 4-rank job" \
    dyn_mpirun -np 4 "$OUT/mpi_accept" split
dyn_case "MPI_Comm_accept/connect between the halves of an 8-rank job" \
    dyn_mpirun -np 8 "$OUT/mpi_accept" split

# Two jobs started apart meet through ompi-server: the server job
# publishes a name (MPI_Publish_name), the client job looks it up once the
# server's log says it is published.  ompi-server is started for the case,
# bounded, and ended by its PID.
# dyn_ompi_server URI [PREFIX...]: start one (PREFIX: e.g. ip netns exec
# NS), its PID in dyn_server; returns non-zero when it reports no URI
dyn_ompi_server() {
    duri=$1
    shift
    rm -f "$duri"
    timeout -k 5 $((DT * 8)) "$@" ompi-server --no-daemonize --report-uri "$duri" \
        > "$duri.log" 2>&1 &
    dyn_server=$!
    i=0
    while [ ! -s "$duri" ] && [ $i -lt 100 ] && kill -0 $dyn_server 2>/dev/null; do
        sleep 0.1; i=$((i + 1))
    done
    [ -s "$duri" ]
}
# dyn_pair TRANSPORT LOG [MPIRUN-ARGS...]: a 2-rank server job and a
# 2-rank client job through the ompi-server at DYN_URI, launched by
# DYN_SRV_RUNNER and DYN_CLI_RUNNER (default mpirun).  A job that fails
# leaves the other waiting in accept or connect: that one is ended at once,
# and the exit code is the first failure's.
dyn_pair() {
    ptr=$1 plog=$2
    shift 2
    pbase=${plog%.log}
    rm -f "$pbase.server.rc" "$pbase.client.rc"
    DYN_RUNNER=${DYN_SRV_RUNNER:-}
    { dyn_mpirun "$ptr" "$pbase.server.log" --ompi-server "file:$DYN_URI" "$@" \
          -np 2 "$OUT/mpi_accept" server "siwarp-dyn-$$-$ptr"
      echo $? > "$pbase.server.rc.new" && mv "$pbase.server.rc.new" "$pbase.server.rc"; } &
    pserver=$!
    pt=0
    while ! grep -q "^server: published" "$pbase.server.log" 2>/dev/null &&
          [ ! -f "$pbase.server.rc" ] && [ $pt -lt $((DT * 5)) ]; do
        sleep 0.2; pt=$((pt + 1))
    done
    DYN_RUNNER=${DYN_CLI_RUNNER:-}
    { dyn_mpirun "$ptr" "$pbase.client.log" --ompi-server "file:$DYN_URI" "$@" \
          -np 2 "$OUT/mpi_accept" client "siwarp-dyn-$$-$ptr"
      echo $? > "$pbase.client.rc.new" && mv "$pbase.client.rc.new" "$pbase.client.rc"; } &
    pclient=$!
    DYN_RUNNER=""
    prc=0
    while [ ! -f "$pbase.server.rc" ] || [ ! -f "$pbase.client.rc" ]; do
        for pside in server client; do
            [ $prc = 0 ] && [ -f "$pbase.$pside.rc" ] || continue
            prc=$(cat "$pbase.$pside.rc")
            [ "$prc" = 0 ] && continue
            pother=$([ $pside = server ] && echo client || echo server)
            dyn_reap "$DYN_MARK.$(basename "$pbase.$pother.log")" > /dev/null
            echo "dyn: the $pside job failed first (exit $prc); the $pother job was ended" \
                > "$pbase.note"
        done
        sleep 0.2
    done
    wait $pserver
    wait $pclient
    [ $prc = 0 ] && prc=$(cat "$pbase.server.rc") && [ $prc = 0 ] && prc=$(cat "$pbase.client.rc")
    { cat "$pbase.note" 2>/dev/null
      echo "== server job (exit $(cat "$pbase.server.rc"))"; cat "$pbase.server.log"
      echo "== client job (exit $(cat "$pbase.client.rc"))"; cat "$pbase.client.log"; } > "$plog"
    rm -f "$pbase.server.rc" "$pbase.client.rc" "$pbase.note"
    return $prc
}
DYN_URI="$OUT/dyn-ompi-server.uri"
if dyn_ompi_server "$DYN_URI" env OMPI_MCA_oob_tcp_if_include=lo; then
    # Over siwarp this fails as the BTL stands: a process of another job has
    # no known locality (Open MPI: "host: unknown"), so the BTL takes it
    # for a process on another host and will not use its loopback
    # addresses, the only ones here.  Between hosts (next case) it works.
    DYN_PAT="accept client: ok" DYN_KNOWN="has no address reachable from here"
    DYN_KNOWN_WHY="a process of another job on this host: locality unknown, loopback addresses refused"
    dyn_case "two jobs on this host through ompi-server: MPI_Publish_name / MPI_Lookup_name, accept/connect" \
        dyn_pair --mca btl_base_verbose 20
    DYN_KNOWN="" DYN_KNOWN_WHY=""
else
    not_ok "dyn: ompi-server did not report its URI"; diag "$DYN_URI.log"
fi
kill $dyn_server 2>/dev/null
wait $dyn_server 2>/dev/null

# The same between two "hosts": ompi-server and the server job in one
# network namespace, the client job in the other (contrib/netns.sh), over
# the veth pair only.
why=$(netns_why)
if [ -n "$why" ]; then
    skip "dyn: two jobs in two network namespaces through ompi-server" "$why"
else
    DYN_NS=swpd$$
    if "$srcdir/contrib/netns.sh" up "$DYN_NS" > /dev/null 2>&1 &&
       dyn_ompi_server "$DYN_URI" env OMPI_MCA_oob_tcp_if_include=10.231.0.0/24 \
           ip netns exec "$DYN_NS-s"; then
        DYN_SRV_RUNNER="ip netns exec $DYN_NS-s mpirun"
        DYN_CLI_RUNNER="ip netns exec $DYN_NS-c mpirun"
        DYN_OOB="--mca oob_tcp_if_include 10.231.0.0/24"
        DYN_NET_siwarp="--mca btl_siwarp_if_include 10.231.0.0/24"
        DYN_NET_tcp="--mca btl_tcp_if_include 10.231.0.0/24"
        DYN_PAT="accept client: ok"
        dyn_case "two jobs in two network namespaces through ompi-server over the veth pair" dyn_pair
        DYN_SRV_RUNNER="" DYN_CLI_RUNNER=""
        unset DYN_OOB DYN_NET_siwarp DYN_NET_tcp
    else
        not_ok "dyn: two network namespaces with ompi-server in one"; diag "$DYN_URI.log"
    fi
    kill $dyn_server 2>/dev/null
    wait $dyn_server 2>/dev/null
    for ns in "$DYN_NS-s" "$DYN_NS-c"; do      # what our jobs left there
        pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    done
    "$srcdir/contrib/netns.sh" down "$DYN_NS" > /dev/null 2>&1
fi
rm -f "$DYN_URI"

DYN_PAT="join: ok"
dyn_case "MPI_Comm_join over a loopback socket pair the ranks made" \
    dyn_mpirun -np 2 "$OUT/mpi_join"

# 50 accept/connect/disconnect cycles on 4 ranks: after cycle 5, open
# descriptors may grow by 4 and btl_siwarp_registered_bytes by 2 MiB at
# most.  Seen: descriptors flat from cycle 1; registered bytes up by at most
# 544 KiB after cycle 5 and flat from cycle 10 (the registration cache keeps
# the registrations of rendezvous buffers malloc has not given back).  A
# 4 MiB buffer left registered every cycle would pass 2 MiB at once, the
# 64 KiB ones within 10 cycles.
DYN_PAT="accept cycles: ok" DYN_SHOW="^cycles: rank" DYN_BOUND=$((DT * 3))
dyn_case "50 accept/connect/disconnect cycles: descriptors and registered memory flat" \
    dyn_mpirun -np 4 "$OUT/mpi_accept" cycles 50 4 2048
DYN_SHOW="" DYN_BOUND=""

# the whole job, children included, on the TCP fallback
DYN_PAT="spawn: ok" DYN_PAT_siwarp="over framed TCP"
dyn_case "MPI_Comm_spawn with btl_siwarp_mpa=0 (parents and children on the TCP fallback)" \
    dyn_mpirun --mca btl_siwarp_mpa 0 --mca btl_base_verbose 20 -np 2 "$OUT/mpi_spawn" spawn 2

# Children on another host: contrib/netns-mpirun.sh runs the parent in one
# namespace (host NAME-s) with the other's daemon up; the "host" info key
# puts the children on 10.231.0.2 (NAME-c), and mpi_spawn's "remote" checks
# that their processor name is not the parent's.  Open MPI's launch allows
# it there, so the children really are spawned across the veth pair (no
# ompi-server stand-in is needed).
why=$(netns_why)
if [ -n "$why" ]; then
    skip "dyn: spawn into another network namespace" "$why"
else
    DYN_RUNNER="$srcdir/contrib/netns-mpirun.sh" DYN_OOB="" DYN_NET_siwarp=""
    DYN_NET_tcp="--mca btl_tcp_if_include 10.231.0.0/24"
    DYN_PAT="spawn: ok" DYN_PAT_siwarp="siwarp: using [^ ]*-vc (10.231.0.2)"
    DYN_SHOW="^spawn: child"
    dyn_case "MPI_Comm_spawn from one namespace of 2 children into the other, over the veth pair" \
        dyn_mpirun --mca btl_base_verbose 20 -np 1 "$OUT/mpi_spawn" spawn 2 host=10.231.0.2 remote
    DYN_RUNNER="" DYN_SHOW=""
    unset DYN_OOB DYN_NET_siwarp DYN_NET_tcp
fi
DYN_PAT_siwarp=""

# Unreachable children: the parents refuse the fallback
# (btl_siwarp_fallback=error), the children get btl_siwarp_mpa=0 through
# the "ompi_param" info key, and no other BTL is selected.  The job must
# end within the bound, non-zero, with a message naming a child
# ([[JOB,2],RANK]: the spawned job).  No btl tcp reference: nothing there is
# unreachable.
log="$OUT/dyn_unreachable.log"
dyn_mpirun siwarp "$log" --mca btl_siwarp_fallback error -np 2 \
    "$OUT/mpi_spawn" spawn 2 param=OMPI_MCA_btl_siwarp_mpa=0
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] && ! grep -q "^spawn: ok" "$log" &&
   { grep -q "Peer process: *\[\[[0-9]*,2\],[0-9]*\]" "$log" ||
     grep -q "Process 2 (\[\[[0-9]*,2\],[0-9]*\])" "$log"; }; then
    ok "dyn, siwarp: children that cannot be reached: the job fails within ${DT} s, naming a child"
else
    not_ok "dyn, siwarp: unreachable children (exit $rc; 124, 137: still running after ${DT} s)"
    diag "$log"
fi
fi  # section dyn

# An endpoint state change that the BTL refuses is a bug in the BTL,
# whatever the test around it checked: look through every log this run
# wrote (not older ones left in $OUT).
bad_logs=$(find "$OUT" -name '*.log' -newer "$STAMP" -exec grep -l "illegal state change" {} + 2>/dev/null)
if [ -z "$bad_logs" ]; then
    ok "no run logged an illegal endpoint state change"
else
    not_ok "no run logged an illegal endpoint state change"
    for l in $bad_logs; do echo "# $l:"; grep "illegal state change" "$l" | sed 's/^/#   /'; done
fi

echo "1..$n"
[ $failed -eq 0 ]
