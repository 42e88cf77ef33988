#!/bin/bash
# run-perftest.sh - siwarp against Linux kernel soft-iWARP (siw) running the
# real perftest (Debian 12's 4.5+0.17, version 6.06) in the qemu guest of
# ../shared/siw-vm: contrib/siwarp-perftest as the client of the guest's
# `ib_write_bw -R` / `ib_read_bw -R` / `ib_send_bw -R` servers, and as the
# server of the guest's perftest clients.
#
#   run-perftest.sh [BOOT...]     BOOT: stock (siw as shipped) and stock-fix
#                                 (siw with siwfix=1); default both
#
# As run-interop.sh: one guest boot per siw set-up; the guest script
# (guest-perftest.sh) runs the steps, both sides signal each other through
# files in the 9p share, the host waits only for conditions, each with a
# deadline, and kills only the processes it started.  A step passes when
# both sides do: siwarp-perftest exits 0 with its "OK" line (completions and
# data checked, see contrib/siwarp-perftest-data.c), and perftest exits 0
# having printed its result line with the expected size and iteration count
# (perftest prints its table only on success).
#
# Environment: SIWVM (/tmp/siwvm), SIWVM_SCRIPTS (../shared/siw-vm),
# OUT (logs; default a fresh /tmp dir), PT_HOSTFWD_PORT (17515: host port
# forwarded to the guest's 18515), PT_HOST_LISTEN (27515: where the host
# server listens for the guest's 10.0.2.100:18515), STEP_T (15 s: the bound
# of every siwarp-perftest wait), KEEP=1 keeps $OUT/share.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
PT=${SIWARP_PERFTEST:-$top_builddir/contrib/siwarp-perftest}
SIWVM=${SIWVM:-/tmp/siwvm}
SIWVM_SCRIPTS=${SIWVM_SCRIPTS:-$(cd "$top_srcdir/.." && pwd)/shared/siw-vm}
[ -d "$SIWVM_SCRIPTS" ] || SIWVM_SCRIPTS=/work/shared/siw-vm
# boot.sh's forwards, both on perftest's port inside the guest
export HOSTFWD_PORT=${PT_HOSTFWD_PORT:-17515} GUEST_PORT=18515
export HOST_LISTEN=${PT_HOST_LISTEN:-27515} GUESTFWD_PORT=18515
OUT=${OUT:-$(mktemp -d /tmp/siwarp-perftest.XXXXXX)}
mkdir -p "$OUT"
SHARE=$OUT/share
export SHARE SIWVM
STEP_T=${STEP_T:-15}

BOOTS=${*:-stock stock-fix}

n=0
summary=$OUT/summary.txt
: >"$summary"
qpid=
spid=

cleanup() {
    [ -n "$spid" ] && kill "$spid" 2>/dev/null
    [ -n "$qpid" ] && kill "$qpid" 2>/dev/null
    wait 2>/dev/null
    [ "${KEEP:-0}" = 1 ] || [ -n "${failed_any:-}" ] || rm -rf "$SHARE"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

. "$here/lib-host.sh"     # now_ms, wait_for, tap

# ---- the matrix ------------------------------------------------------------------
# step ID KIND VERB "size iters [rx_depth]" "description"
#   KIND gs: perftest server in the guest, siwarp-perftest client on the host
#   KIND gc: perftest client in the guest, siwarp-perftest server on the host
# Sizes: one FPDU, several FPDUs (65536), and a send run longer than the
# receive depth so that the iWARP credit Writes pace the sender.
steps=()
step() { steps+=("$1|$2|$3|$4|$5"); }
matrix() {
    steps=()
    step w1 gs write "4096 20" "siwarp client -> ib_write_bw -R server, 4 KiB"
    step w2 gs write "65536 10" "siwarp client -> ib_write_bw -R server, 64 KiB"
    step r1 gs read "4096 20" "siwarp client -> ib_read_bw -R server, 4 KiB, data verified"
    step r2 gs read "65536 10" "siwarp client -> ib_read_bw -R server, 64 KiB, data verified"
    step s1 gs send "4096 20" "siwarp client -> ib_send_bw -R server, 4 KiB"
    step s2 gs send "8192 40 9" "siwarp client -> ib_send_bw -R server, 40 > rx depth 9: credits"
    step W1 gc write "4096 20" "ib_write_bw -R client -> siwarp server, 4 KiB, data verified"
    step W2 gc write "65536 10" "ib_write_bw -R client -> siwarp server, 64 KiB, data verified"
    step R1 gc read "4096 20" "ib_read_bw -R client -> siwarp server, 4 KiB"
    step R2 gc read "65536 10" "ib_read_bw -R client -> siwarp server, 64 KiB"
    step S1 gc send "4096 20" "ib_send_bw -R client -> siwarp server, 4 KiB, sizes verified"
    step S2 gc send "8192 40 9" "ib_send_bw -R client -> siwarp server, credits every 3"
}

kargs_of() {
    case $1 in *-fix) echo "siwfix=1" ;; esac
}

# ---- one step --------------------------------------------------------------------------


run_step() {  # boot, step record
    local boot=$1 id kind verb params desc
    IFS='|' read -r id kind verb params desc <<<"$2"
    local size iters rxd
    read -r size iters rxd <<<"$params"
    local d=$OUT/$boot/$id
    mkdir -p "$d"
    local slog=$d/siwarp.log t0 t1 side_rc=255 grc=255 ok=1 why=""
    local sargs="-t $verb -s $size -n $iters -T $STEP_T ${rxd:+-r $rxd}"

    t0=$(now_ms)
    if [ "$kind" = gs ]; then
        if ! wait_for 90 test -e "$SHARE/run/ready.$id"; then
            why="guest perftest server never became ready"; ok=0
        fi
        if [ $ok = 1 ]; then
            # shellcheck disable=SC2086
            timeout $((STEP_T * 3 + 20)) "$PT" $sargs -p "$HOSTFWD_PORT" 127.0.0.1 >"$slog" 2>&1
            side_rc=$?
        fi
        : >"$SHARE/run/fin.$id"
    else
        # shellcheck disable=SC2086
        timeout $((STEP_T * 3 + 20)) "$PT" $sargs -p "$HOST_LISTEN" >"$slog" 2>&1 &
        spid=$!
        if wait_for 10 grep -q listening "$slog"; then
            : >"$SHARE/run/go.$id"
        else
            why="siwarp-perftest server did not start"; ok=0
        fi
        wait "$spid"
        side_rc=$?
        spid=
    fi
    wait_for $((STEP_T * 2 + 30)) test -e "$SHARE/run/done.$id" || { why="${why:-guest step did not finish}"; ok=0; }
    t1=$(now_ms)
    [ -e "$SHARE/run/done.$id" ] && grc=$(cut -d' ' -f1 "$SHARE/run/done.$id")
    cp "$SHARE/run/out.$id" "$d/perftest.log" 2>/dev/null

    # perftest's result line: "#bytes #iterations BW-peak BW-average MsgRate"
    local table=""
    [ -f "$d/perftest.log" ] &&
        table=$(grep -E "^[[:space:]]*$size[[:space:]]+$iters([[:space:]]+[0-9.]+){3}[[:space:]]*$" "$d/perftest.log" | head -1)
    local side_ok=0 siw_ok=0
    [ "$side_rc" = 0 ] && grep -q "^siwarp-perftest: OK" "$slog" && side_ok=1
    [ "$grc" = 0 ] && [ -n "$table" ] && siw_ok=1
    [ $side_ok = 1 ] || why="${why:+$why; }siwarp-perftest rc=$side_rc"
    [ $siw_ok = 1 ] || why="${why:+$why; }perftest rc=$grc${table:+ (table printed)}${table:- (no result line)}"
    local ms=$((t1 - t0)) outcome status
    if [ $ok = 1 ] && [ $side_ok = 1 ] && [ $siw_ok = 1 ]; then
        outcome=pass; status=ok
    else
        outcome=FAIL; status="not ok"; failed_any=1
    fi
    tap "$status" "$boot/$id: $desc (${ms} ms)"
    {
        echo "#   siwarp: $(grep -E '^siwarp-perftest: (data |OK|FAIL)' "$slog" | tr '\n' ' ' | cut -c1-400)"
        echo "#   perftest rc=$grc: ${table:-$(tail -3 "$d/perftest.log" 2>/dev/null | tr '\n' ' ' | cut -c1-200)}"
        [ "$status" = "not ok" ] && echo "#   why: $why (logs in $d)"
    }
    printf '%-10s %-3s %-66s %-6s %7s ms\n' "$boot" "$id" "$desc" "$outcome" "$ms" >>"$summary"
}

# ---- one boot --------------------------------------------------------------------------

run_boot() {
    local boot=$1 kargs s tb
    kargs=$(kargs_of "$boot")
    matrix
    rm -rf "$SHARE/run"
    mkdir -p "$SHARE/run" "$OUT/$boot"
    cp "$here/guest-perftest.sh" "$here/lib-guest.sh" "$SHARE/"
    : >"$SHARE/run/steps"
    for s in "${steps[@]}"; do
        IFS='|' read -r id kind verb params desc <<<"$s"
        read -r size iters rxd <<<"$params"
        echo "$id $kind $verb -s $size -n $iters ${rxd:+-r $rxd}" >>"$SHARE/run/steps"
    done
    echo "# boot $boot: ${kargs:-(no extra kernel args)}"
    tb=$(now_ms)
    # shellcheck disable=SC2086
    timeout 600 "$SIWVM_SCRIPTS/boot.sh" siwrun=guest-perftest.sh $kargs \
        </dev/null >"$OUT/$boot/console.log" 2>&1 &
    qpid=$!
    wait_for 120 test -e "$SHARE/run/up" || echo "# guest did not start its script within 120 s"
    echo "# guest up after $(( $(now_ms) - tb )) ms"
    for s in "${steps[@]}"; do
        if ! kill -0 "$qpid" 2>/dev/null && [ ! -e "$SHARE/run/done.${s%%|*}" ]; then
            tap "not ok" "$boot/${s%%|*}: guest not running (see $OUT/$boot/console.log)"
            printf '%-10s %-3s %-66s %-6s %7s ms\n' "$boot" "${s%%|*}" "guest not running" FAIL 0 >>"$summary"
            failed_any=1
            continue
        fi
        run_step "$boot" "$s"
    done
    wait_for 60 bash -c "! kill -0 $qpid 2>/dev/null" || kill "$qpid" 2>/dev/null
    wait "$qpid" 2>/dev/null
    qpid=
    cp "$SHARE/run/dmesg" "$OUT/$boot/dmesg" 2>/dev/null
    echo "# boot $boot took $(( $(now_ms) - tb )) ms"
}

# ---- main ------------------------------------------------------------------------------

matrix
total=0
for b in $BOOTS; do total=$((total + ${#steps[@]})); done
if [ ! -x "$PT" ]; then echo "Bail out! $PT not built"; exit 1; fi
for tool in qemu-system-x86_64 socat; do
    command -v $tool >/dev/null || { echo "1..0 # SKIP $tool not installed"; exit 0; }
done
if [ ! -f "$SIWVM/vmlinux" ] || [ ! -f "$SIWVM/initrd.img" ]; then
    echo "1..0 # SKIP no siw guest in $SIWVM (run $SIWVM_SCRIPTS/build-guest.sh)"
    exit 0
fi
echo "1..$total"
echo "# output in $OUT"
t_all=$(now_ms)
for b in $BOOTS; do run_boot "$b"; done
echo "#"
echo "# summary (boot, step, combination, outcome, time; all in $(( ($(now_ms) - t_all) / 1000 )) s):"
sed 's/^/# /' "$summary"
[ -z "${failed_any:-}" ]
