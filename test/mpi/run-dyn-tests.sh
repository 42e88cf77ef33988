#!/bin/sh
# run-dyn-tests.sh - MPI dynamic processes over the siwarp BTL, TAP output.
#
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
#
# Environment: as run-mpi-tests.sh (srcdir, BUILDDIR, MPI_TEST_TIMEOUT),
# and MPI_DYN_TIMEOUT (seconds per mpirun here, default 90).
set -u

. "$(dirname "$0")/lib-mpi-tap.sh"
mpi_tap_usable || exit 0

mpi_tap_build "the dynamic-process test programs" "$OUT/dyn-build.log" \
    mpi_spawn mpi_accept mpi_join

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

# Open MPI 5 (PRRTE): the launcher's out-of-band layer takes no
# loopback-only interface list ("No network interfaces were found")
if [ "${OMPI_MAJOR:-4}" -ge 5 ]; then
    DYN_OOB_LO=""
else
    DYN_OOB_LO="--mca oob_tcp_if_include lo"
fi
# dyn_mpirun TRANSPORT LOG ARGS...: one job over siwarp or btl tcp, bounded
# by DT (DYN_BOUND overrides), launched by DYN_RUNNER (default mpirun);
# DYN_NET_siwarp / DYN_NET_tcp / DYN_OOB replace the loopback interface options;
# DYN_MCA_siwarp adds options to the siwarp run
dyn_mpirun() {
    dtr=$1 dlog=$2
    shift 2
    if [ "$dtr" = siwarp ]; then
        dnet="--mca btl siwarp,self ${DYN_NET_siwarp---mca btl_siwarp_if_include lo} ${DYN_MCA_siwarp:-}"
    else
        dnet="--mca btl tcp,self ${DYN_NET_tcp---mca btl_tcp_if_include lo}"
    fi
    dmark="$DYN_MARK.$(basename "$dlog")"
    dbound=${DYN_BOUND:-$DT}
    # shellcheck disable=SC2086
    SIWARP_DYN_MARK=$dmark NETNS_MPIRUN_TIMEOUT=$((dbound + 60)) \
        timeout -k 10 $((dbound + 60)) ${DYN_RUNNER:-mpirun} --mca pml ob1 \
        --mca osc ^ucx --bind-to none ${DYN_OOB-$DYN_OOB_LO} $dnet "$@" \
        > "$dlog" 2>&1 &
    dpid=$!
    dwaited=0
    while kill -0 $dpid 2>/dev/null && [ $dwaited -lt "$dbound" ]; do
        sleep 1; dwaited=$((dwaited + 1))
    done
    if kill -0 $dpid 2>/dev/null; then
        # hung: where every process of the job is, into the log, then the
        # job ends as a timeout would have ended it
        dyn_stacks "$dmark" >> "$dlog"
        dyn_reap "$dmark" >> "$dlog"
        kill -s TERM $dpid 2>/dev/null
        wait $dpid
        return 124
    fi
    wait $dpid
    drc=$?
    dyn_reap "$dmark" >> "$dlog"
    return $drc
}

# dyn_stacks MARK: the stacks of every thread of every process marked MARK
# (gdb, bounded; nothing where gdb is missing), so that a hang says where
dyn_stacks() {
    command -v gdb >/dev/null 2>&1 || { echo "dyn: hung; no gdb for stacks"; return 0; }
    for p in $(grep -lsxzF "SIWARP_DYN_MARK=$1" /proc/[0-9]*/environ 2>/dev/null |
               sed 's,^/proc/\([0-9]*\)/environ$,\1,'); do
        echo "dyn: hung; stacks of $p: $(tr '\0' ' ' 2>/dev/null < /proc/$p/cmdline | cut -c1-160)"
        timeout 30 gdb -p "$p" -batch -ex "thread apply all bt 20" 2>/dev/null |
            grep -E '^(#|Thread)' | cut -c1-200
    done
}

# dyn_verdict RC LOG PATTERN...: why the job failed (empty: it did not):
# not exit 0, a failed check, a PATTERN (grep) missing
dyn_verdict() {
    vrc=$1 vlog=$2
    shift 2
    case $vrc in
    0) ;;
    124|137) echo "hung: killed after ${DYN_BOUND:-$DT} s; last stage: $(grep -a -E \
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
# reference is reported as the reference's (TAP TODO), not as siwarp's.
dyn_case() {
    cname=$1 crun=$2
    shift 2
    cbase="$OUT/dyn_$(echo "$cname" | tr -c 'A-Za-z0-9' _ | tr -s _ | cut -c1-48)"
    "$crun" tcp "$cbase.tcp.log" "$@"
    cref=$(dyn_verdict $? "$cbase.tcp.log" "$DYN_PAT")
    "$crun" siwarp "$cbase.siwarp.log" "$@"
    cwhy=$(dyn_verdict $? "$cbase.siwarp.log" "$DYN_PAT" ${DYN_PAT_siwarp:+"$DYN_PAT_siwarp"})
    cfirst=""
    case $cwhy in
    hung*)
        # An intermittent hang seen once in four clean-clone runs under a
        # loaded make check (MPI_Comm_spawn of 4 children from 2 parents
        # never returned) and in none of 90 runs of that case under a load
        # of 15-19 since: one second try, reported in the TAP line with the
        # first try's log, which holds every process's stacks (dyn_stacks).
        cfirst=$cwhy
        mv "$cbase.siwarp.log" "$cbase.siwarp.try1.log"
        "$crun" siwarp "$cbase.siwarp.log" "$@"
        cwhy=$(dyn_verdict $? "$cbase.siwarp.log" "$DYN_PAT" ${DYN_PAT_siwarp:+"$DYN_PAT_siwarp"})
        ;;
    esac
    if [ -z "$cwhy" ]; then
        ok "dyn, siwarp: $cname${cfirst:+ (second try; the first $cfirst)}"
        # where the first try's processes stood: each one's main thread
        [ -n "$cfirst" ] && grep -a -E '^(dyn: hung|#[0-9]+ .* in (PMPI_|PMIx_|ompi_|main))' \
            "$cbase.siwarp.try1.log" | head -n 60 | sed 's/^/# /'
    else
        not_ok "dyn, siwarp: $cname ($cwhy${cref:+; the btl tcp reference failed too})"
        diag "$cbase.siwarp.log"
    fi
    [ -n "${DYN_SHOW:-}" ] && grep -a -h -- "$DYN_SHOW" "$cbase.siwarp.log" | sed 's/^/# siwarp: /'
    if [ -z "$cref" ]; then
        ok "dyn, btl tcp reference: $cname"
    else
        n=$((n + 1))
        echo "not ok $n - dyn, btl tcp reference: $cname ($cref) # TODO the reference transport failed, not siwarp"
        diag "$cbase.tcp.log"
    fi
    [ -n "${DYN_SHOW:-}" ] && grep -a -h -- "$DYN_SHOW" "$cbase.tcp.log" | sed 's/^/# btl tcp: /'
    return 0
}

DYN_PAT="spawn: ok"
dyn_case "MPI_Comm_spawn from 2 parents: 2, 3 and 4 children in turn, both ways 0 B..4 MiB, merged collectives, disconnect" \
    dyn_mpirun -np 2 "$OUT/mpi_spawn" spawn 2,3,4
dyn_case "MPI_Comm_spawn from 4 parents: 2, 3 and 4 children in turn" \
    dyn_mpirun -np 4 "$OUT/mpi_spawn" spawn 2,3,4
# several app contexts in one launch crash Debian 13's launcher, spawned
# or from the command line (lib-mpi-tap.sh's probe set MPMD_REAL_MPIRUN)
if [ -n "${MPMD_REAL_MPIRUN:-}" ]; then
    skip "dyn: MPI_Comm_spawn_multiple" \
        "this Open MPI's launcher crashes on several app contexts (open-mpi/ompi#13303)"
else
    dyn_case "MPI_Comm_spawn_multiple: 1 child of one command and 2 of another, each with its own argv" \
        dyn_mpirun -np 2 "$OUT/mpi_spawn" multiple "$OUT/mpi_spawn_b" 1 2
fi

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
# Open MPI 5 has no ompi-server (PRRTE's DVM took its place)
if ! command -v ompi-server >/dev/null 2>&1; then
    skip "dyn: two jobs on this host through ompi-server" "no ompi-server (Open MPI $OMPI_MAJOR)"
    dyn_server=
elif dyn_ompi_server "$DYN_URI" env OMPI_MCA_oob_tcp_if_include=lo; then
    # Only loopback joins the two jobs: a process of the other job has no
    # locality in Open MPI ("host: unknown"); the BTL finds it shares this
    # network stack by the identity both publish (btl_siwarp_stack.c).
    DYN_PAT="accept client: ok" DYN_PAT_siwarp="shares this network stack"
    dyn_case "two jobs on this host through ompi-server: MPI_Publish_name / MPI_Lookup_name, accept/connect" \
        dyn_pair --mca btl_base_verbose 20
    DYN_PAT_siwarp=""
else
    not_ok "dyn: ompi-server did not report its URI"; diag "$DYN_URI.log"
fi
[ -n "$dyn_server" ] && { kill $dyn_server 2>/dev/null; wait $dyn_server 2>/dev/null; }

# The same between two "hosts": ompi-server and the server job in one
# network namespace, the client job in the other (contrib/netns.sh), over
# the veth pair only.
why=$(netns_why)
command -v ompi-server >/dev/null 2>&1 || why="no ompi-server (Open MPI $OMPI_MAJOR)"
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
# most.  btl_siwarp_rcache_limit=1 drops every registration as soon as no
# transfer uses it, so what is left registered after a cycle is the eager
# buffers' and whatever leaked.  With the default limit the cache also
# keeps registrations of rendezvous buffers, as many as malloc's layout
# leaves apart and as the cycle's last transfers happened to make: 2 to 3
# 1 MiB ones here, 10 by cycle 50 in one CI run, a 4 MiB one more in a
# cycle of Open MPI 5's -- a cache at work, not a leak (mpi_regcount apart
# checks the limit).  Seen with the limit: descriptors and registered bytes
# flat from cycle 1, at the eager buffers' 4108 KiB.  A 4 MiB buffer left
# registered every cycle would pass 2 MiB at once, the 64 KiB ones within
# 32 cycles.
DYN_PAT="accept cycles: ok" DYN_SHOW="^cycles: rank" DYN_BOUND=$((DT * 3))
DYN_MCA_siwarp="--mca btl_siwarp_rcache_limit 1"
dyn_case "50 accept/connect/disconnect cycles: descriptors and registered memory flat" \
    dyn_mpirun -np 4 "$OUT/mpi_accept" cycles 50 4 2048
DYN_SHOW="" DYN_BOUND="" DYN_MCA_siwarp=""

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
# ([[JOB,2],RANK]: the spawned job): the BTL's own line on the process's
# stderr, which ORTE's show_help relay cannot lose (it lost both help
# texts, the BTL's and ob1's, in 3 of 16 runs).  No btl tcp reference:
# nothing there is unreachable.
log="$OUT/dyn_unreachable.log"
dyn_mpirun siwarp "$log" --mca btl_siwarp_fallback error -np 2 \
    "$OUT/mpi_spawn" spawn 2 param=OMPI_MCA_btl_siwarp_mpa=0
rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] && ! grep -q "^spawn: ok" "$log" &&
   grep -q "no iWARP with \[\[[0-9]*,2\],[0-9]*\] .* TCP fallback is refused" "$log"; then
    ok "dyn, siwarp: children that cannot be reached: the job fails within ${DT} s, naming a child"
elif [ $rc -eq 124 ] && mpirun --version 2>&1 | grep -q "(Open MPI) 5\.0\." &&
     grep -q "TCP fallback is refused" "$log" && grep -q "MPI_Init" "$log"; then
    # Open MPI 5.0.7 (Debian 13): the children fail at once, the BTL's
    # "fallback refused" naming the peer, but prterun keeps the job
    n=$((n + 1))
    echo "not ok $n - dyn, siwarp: unreachable children refused at once, but the job was not ended within ${DT} s # TODO Open MPI 5.0.7's prterun keeps a job whose spawned children abort in MPI_Init"
else
    not_ok "dyn, siwarp: unreachable children (exit $rc; 124, 137: still running after ${DT} s)"
    diag "$log"
fi

echo "1..$n"
[ $failed -eq 0 ]
