#!/bin/bash
# run-hw.sh - libsiwarp's verbs backend (rdma-core) over Linux kernel siw in
# the qemu guest (../shared/siw-vm), and the mixed case: a siwarp-rping on
# siw0 in the guest (verbs backend) talking to a siwarp-rping on the host
# (software backend) through qemu's port forwards.
#
#   run-hw.sh [BOOT...]     BOOT: stock, fix (siw with siwfix=1); default: stock fix
#
# The siwarp-rping built here (it loads libibverbs / librdmacm, as the
# Debian 12 guest has them) is copied into the share and run by
# guest-hw.sh, which drives the guest-only steps and signals the host for
# the mixed ones.  Output: TAP and a summary with timings.
# Environment: SIWVM (/tmp/siwvm), SIWVM_SCRIPTS (../shared/siw-vm),
# OUT (logs; default a fresh /tmp dir), HOSTFWD_PORT (17274), HOST_LISTEN
# (27274) -- not the matrix's ports, so both may run at once; KEEP=1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
RPING=${SIWARP_RPING:-$top_builddir/contrib/siwarp-rping}
SIWVM=${SIWVM:-/tmp/siwvm}
SIWVM_SCRIPTS=${SIWVM_SCRIPTS:-$(cd "$top_srcdir/.." && pwd)/shared/siw-vm}
[ -d "$SIWVM_SCRIPTS" ] || SIWVM_SCRIPTS=/work/shared/siw-vm
export HOSTFWD_PORT=${HOSTFWD_PORT:-17274}
export HOST_LISTEN=${HOST_LISTEN:-27274}
OUT=${OUT:-$(mktemp -d /tmp/siwarp-hw.XXXXXX)}
mkdir -p "$OUT"
SHARE=$OUT/share
export SHARE SIWVM
BOOTS=${*:-stock fix}
GUEST_STEPS="h01 h02 h03 h04 h05"
desc() {
    case $1 in
    h01) echo "guest: siwarp-rping -s on siw0 (verbs) <- rping -c, 3 x 64 B" ;;
    h02) echo "guest: rping -s <- siwarp-rping -c on siw0 (verbs), 3 x 64 B" ;;
    h03) echo "guest: siwarp-rping -s on siw0 <- rping -c, 2 x 65000 B" ;;
    h04) echo "guest: rping -s <- siwarp-rping -c on siw0, 2 x 65000 B" ;;
    h05) echo "guest: siwarp-rping on siw0 both ends, private data, 20 x 4000 B" ;;
    h06) echo "mixed: guest siwarp-rping -s on siw0 <- host siwarp-rping -c (soft), 3 x 64 B" ;;
    h07) echo "mixed: guest siwarp-rping -c on siw0 -> host siwarp-rping -s (soft), 3 x 64 B" ;;
    h08) echo "mixed: guest siwarp-rping -s on siw0 <- host soft client, 2 x 65000 B" ;;
    h09) echo "mixed: guest client on siw0 advertises a bad STag: the host's Read refused, both ends say why" ;;
    esac
}
n=0
failed=
qpid=
spid=
cleanup() {
    [ -n "$spid" ] && kill "$spid" 2>/dev/null
    [ -n "$qpid" ] && kill "$qpid" 2>/dev/null
    wait 2>/dev/null
    [ "${KEEP:-0}" = 1 ] || [ -n "$failed" ] || rm -rf "$SHARE"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
. "$here/lib-host.sh"     # now_ms, wait_for (its tap is replaced below)
tap() { n=$((n + 1)); echo "$1 $n - $2"; [ "$1" = ok ] || failed=1; }
guest_ms() {  # done file -> duration in ms from the guest's clock
    awk '{ printf "%d", ($3 - $2) * 1000 }' "$1"
}

# the host side of a mixed step
host_client() {  # ID COUNT SIZE
    local id=$1 d=$OUT/$boot t0 rc
    wait_for 120 test -e "$SHARE/run/ready.$id" || { echo "# $id: guest server not ready"; return 1; }
    t0=$(now_ms)
    timeout 60 "$RPING" -c -a 127.0.0.1 -p "$HOSTFWD_PORT" -C "$2" -S "$3" -V -T 20 >"$d/$id.host.log" 2>&1
    rc=$?
    echo "$(( $(now_ms) - t0 ))" >"$d/$id.host.ms"
    return $rc
}
host_server() {  # ID COUNT
    local id=$1 d=$OUT/$boot t0 rc
    t0=$(now_ms)
    timeout 60 "$RPING" -s -a 127.0.0.1 -p "$HOST_LISTEN" -C "$2" -T 30 >"$d/$id.host.log" 2>&1 &
    spid=$!
    wait_for 10 grep -q listening "$d/$id.host.log" && : >"$SHARE/run/go.$id"
    wait "$spid"; rc=$?; spid=
    echo "$(( $(now_ms) - t0 ))" >"$d/$id.host.ms"
    return $rc
}

judge() {  # ID HOSTRC(or -)
    local id=$1 hrc=$2 d=$OUT/$boot g=- ms="" grc
    if ! wait_for 90 test -e "$SHARE/run/done.$id"; then
        tap "not ok" "$boot/$id: $(desc "$id") (guest step did not finish)"
        return
    fi
    cp "$SHARE/run/out.$id" "$d/$id.guest.log"
    grc=$(cut -d' ' -f1 "$SHARE/run/done.$id")
    ms=$(guest_ms "$SHARE/run/done.$id")
    [ "$hrc" != - ] && [ -f "$d/$id.host.ms" ] && ms="$ms guest / $(cat "$d/$id.host.ms") host"
    if [ "$grc" = 0 ] && { [ "$hrc" = - ] || [ "$hrc" = 0 ]; } &&
       grep -q "backend siw0" "$d/$id.guest.log"; then
        tap ok "$boot/$id: $(desc "$id") ($ms ms)"
        printf '%-6s %-4s %-78s %-5s %s ms\n' "$boot" "$id" "$(desc "$id")" pass "$ms" >>"$OUT/summary.txt"
    else
        tap "not ok" "$boot/$id: $(desc "$id") (guest rc $grc, host rc $hrc)"
        printf '%-6s %-4s %-78s %-5s %s ms\n' "$boot" "$id" "$(desc "$id")" FAIL "$ms" >>"$OUT/summary.txt"
        sed 's/^/#   guest: /' "$d/$id.guest.log" | head -20
        [ -f "$d/$id.host.log" ] && sed 's/^/#   host: /' "$d/$id.host.log" | head -10
    fi
    grep -h "connected\|OK" "$d/$id.guest.log" "$d/$id.host.log" 2>/dev/null | sed 's/^/#   /' | head -4
}

# h09: both ends must fail, each naming the cause: the host (software) the
# Terminate it received (siw 6.1 sends a DDP catastrophic error for a Read
# of a bad STag, not RDMAP's invalid STag), the guest the device's
# asynchronous event for the Read it refused (common/hw_async.c), not a
# bare close
judge_refused() {  # ID HOSTRC
    local id=$1 hrc=$2 d=$OUT/$boot
    if ! wait_for 90 test -e "$SHARE/run/done.$id"; then
        tap "not ok" "$boot/$id: $(desc "$id") (guest step did not finish)"
        return
    fi
    cp "$SHARE/run/out.$id" "$d/$id.guest.log"
    if [ "$hrc" != 0 ] && grep -q "FAIL.*Terminate received" "$d/$id.host.log" &&
       grep -q "backend siw0" "$d/$id.guest.log" &&
       grep -q "FAIL.*IBV_EVENT_QP_" "$d/$id.guest.log"; then
        tap ok "$boot/$id: $(desc "$id")"
        printf '%-6s %-4s %-78s %-5s\n' "$boot" "$id" "$(desc "$id")" pass >>"$OUT/summary.txt"
    else
        tap "not ok" "$boot/$id: $(desc "$id") (host rc $hrc)"
        printf '%-6s %-4s %-78s %-5s\n' "$boot" "$id" "$(desc "$id")" FAIL >>"$OUT/summary.txt"
    fi
    grep -h "FAIL" "$d/$id.guest.log" "$d/$id.host.log" 2>/dev/null | sed 's/^/#   /' | head -4
}

run_boot() {
    boot=$1
    local kargs="" tb hrc
    [ "$boot" = fix ] && kargs=siwfix=1
    rm -rf "$SHARE/run" "$SHARE/bin"
    mkdir -p "$SHARE/run" "$SHARE/bin" "$OUT/$boot"
    cp "$here/guest-hw.sh" "$here/lib-guest.sh" "$SHARE/"
    cp "$RPING" "$SHARE/bin/siwarp-rping"
    echo "# boot $boot: $kargs"
    tb=$(now_ms)
    # shellcheck disable=SC2086
    timeout 600 "$SIWVM_SCRIPTS/boot.sh" siwrun=guest-hw.sh $kargs </dev/null \
        >"$OUT/$boot/console.log" 2>&1 &
    qpid=$!
    wait_for 120 test -e "$SHARE/run/up" || echo "# guest did not start its script within 120 s"
    echo "# guest up after $(( $(now_ms) - tb )) ms"
    for id in $GUEST_STEPS; do judge "$id" -; done
    host_client h06 3 64; hrc=$?; judge h06 $hrc
    host_server h07 3; hrc=$?; judge h07 $hrc
    host_client h08 2 65000; hrc=$?; judge h08 $hrc
    host_server h09 1; hrc=$?; judge_refused h09 $hrc
    wait_for 60 bash -c "! kill -0 $qpid 2>/dev/null" || kill "$qpid" 2>/dev/null
    wait "$qpid" 2>/dev/null; qpid=
    cp "$SHARE/run/dmesg" "$SHARE/run/devinfo" "$OUT/$boot/" 2>/dev/null
    echo "# boot $boot took $(( $(now_ms) - tb )) ms"
}

if [ ! -x "$RPING" ]; then echo "Bail out! $RPING not built"; exit 1; fi
# rdma-core is dlopen'ed on first use (common/hw_dl.h): ldd cannot tell
if ! grep -q '^#define HAVE_VERBS 1' "$top_builddir/config.h" 2>/dev/null; then
    echo "1..0 # SKIP $RPING built without the verbs backend (libibverbs-dev, librdmacm-dev)"; exit 0
fi
command -v qemu-system-x86_64 >/dev/null || { echo "1..0 # SKIP qemu not installed"; exit 0; }
if [ ! -f "$SIWVM/vmlinux" ] || [ ! -f "$SIWVM/initrd.img" ]; then
    echo "1..0 # SKIP no siw guest in $SIWVM (run $SIWVM_SCRIPTS/build-guest.sh)"; exit 0
fi
set -- $BOOTS
echo "1..$(( $# * 9 ))"
echo "# output in $OUT"
: >"$OUT/summary.txt"
for b in $BOOTS; do run_boot "$b"; done
echo "#"
echo "# summary (boot, step, what, outcome, time):"
sed 's/^/# /' "$OUT/summary.txt"
[ -z "$failed" ]
