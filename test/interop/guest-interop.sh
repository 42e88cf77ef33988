# guest-interop.sh - runs inside the siw guest (siwrun=guest-interop.sh),
# driven by the host through files in the 9p share (/mnt/host/run):
#
#   run/up           guest: the script has started
#   run/steps        written by the host before boot, one step a line:
#                    ID KIND RPING-ARGS...
#                    KIND gs: `rping -s` on 10.0.2.15:7174 for a siwarp client
#                             on the host (hostfwd 127.0.0.1:17174);
#                    KIND gc: `rping -c` to 10.0.2.100:7174, a siwarp server on
#                             the host (guestfwd -> 127.0.0.1:27174).
#   run/ready.ID     guest: the rping server of step ID listens
#   run/go.ID        host:  the siwarp server of step ID listens
#   run/fin.ID       host:  the siwarp side of step ID has finished
#   run/out.ID       guest: rping's output;  run/done.ID: its exit status
#   run/next.ID      host:  step ID is judged, go on
#   run/again.ID     host:  run step ID once more (it failed; the host has
#                    cleared its ready/go/fin/done/out files)
#
# The guest never waits unboundedly: every wait has a deadline, and rping
# runs under timeout(1).  Waiting here is polling with short sleeps, which
# is fine inside the guest; the host waits for these files as conditions.
R=/mnt/host/run
STEP_TIMEOUT=${STEP_TIMEOUT:-40}
echo "SIWIOP: siw params: $(cd /sys/module/siw/parameters 2>/dev/null && for p in *; do printf '%s=%s ' "$p" "$(cat "$p")"; done)"
[ -d "$R" ] && : >"$R/up"
echo "SIWIOP: siwfix=$(for x in $(cat /proc/cmdline); do case $x in siwfix=*) echo "${x#*=}";; esac; done)"

. /mnt/host/lib-guest.sh     # wait_file, listening, rping_server_rc

# run_one ID KIND ARGS...: one step, its result in $R/out.ID and $R/done.ID
run_one() {
    id=$1 kind=$2
    shift 2
    t0=$(cut -d' ' -f1 /proc/uptime)
    case $kind in
    gs)
        # shellcheck disable=SC2086
        timeout "$STEP_TIMEOUT" rping -s -a 10.0.2.15 -p 7174 "$@" >/tmp/out.$id 2>&1 </dev/null &
        # rping -s exits when its client disconnects
        serve "$id" $! 7174 100 20 "SIWIOP: rping -s stopped after the host finished"
        rc=$(rping_server_rc $? "/tmp/out.$id")
        ;;
    gc)
        if wait_file "$R/go.$id" 600; then
            # shellcheck disable=SC2086
            timeout "$STEP_TIMEOUT" rping -c -a 10.0.2.100 -p 7174 "$@" >/tmp/out.$id 2>&1 </dev/null
            rc=$?
        else
            echo "SIWIOP: host server never became ready" >/tmp/out.$id
            rc=125
        fi
        ;;
    *)
        echo "SIWIOP: unknown step kind $kind" >/tmp/out.$id
        rc=126
        ;;
    esac
    t1=$(cut -d' ' -f1 /proc/uptime)
    cp /tmp/out.$id "$R/out.$id"
    echo "$rc $t0 $t1" >"$R/done.$id.tmp" && mv "$R/done.$id.tmp" "$R/done.$id"
    echo "SIWIOP: step $id ($kind) rc=$rc"
}

while read -r id kind args; do
    [ -n "$id" ] || continue
    case $id in \#*) continue ;; esac
    # shellcheck disable=SC2086
    while :; do
        run_one "$id" "$kind" $args
        # wait for the host's verdict (bounded: a host that went away
        # must not keep the guest up): again.ID runs the step once more
        i=0
        while [ ! -e "$R/next.$id" ] && [ ! -e "$R/again.$id" ] && [ $i -lt 1200 ]; do
            sleep 0.1; i=$((i + 1))
        done
        [ -e "$R/again.$id" ] || break
        rm -f "$R/again.$id"
        echo "SIWIOP: step $id once more"
    done
done <"$R/steps"
dmesg | grep -iE 'siw|iwarp' | tail -40 >"$R/dmesg"
sync
echo "SIWIOP: all steps done"
