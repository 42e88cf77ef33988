# guest-perftest.sh - runs inside the siw guest (siwrun=guest-perftest.sh),
# driven by the host through files in the 9p share (/mnt/host/run), as
# guest-interop.sh but for perftest with -R (rdma_cm) on port 18515:
#
#   run/up           guest: the script has started
#   run/steps        written by the host before boot, one step a line:
#                    ID KIND VERB PERFTEST-ARGS...
#                    KIND gs: `ib_VERB_bw -R` server on 10.0.2.15:18515 for a
#                             siwarp-perftest client on the host (hostfwd);
#                    KIND gc: `ib_VERB_bw -R 10.0.2.100` client of a
#                             siwarp-perftest server on the host (guestfwd).
#   run/ready.ID     guest: the perftest server of step ID listens
#   run/go.ID        host:  the siwarp-perftest server of step ID listens
#   run/fin.ID       host:  the siwarp side of step ID has finished
#   run/out.ID       guest: perftest's output;  run/done.ID: its exit status
#
# Every wait has a deadline and perftest runs under timeout(1).
R=/mnt/host/run
STEP_TIMEOUT=${STEP_TIMEOUT:-40}
echo "SIWPT: siw params: $(cd /sys/module/siw/parameters 2>/dev/null && for p in *; do printf '%s=%s ' "$p" "$(cat "$p")"; done)"
echo "SIWPT: $(ib_write_bw --version 2>&1 | head -1)"
[ -d "$R" ] && : >"$R/up"

. /mnt/host/lib-guest.sh     # wait_file, listening

while read -r id kind verb args; do
    [ -n "$id" ] || continue
    case $id in \#*) continue ;; esac
    t0=$(cut -d' ' -f1 /proc/uptime)
    case $kind in
    gs)
        # shellcheck disable=SC2086
        timeout "$STEP_TIMEOUT" "ib_${verb}_bw" -R -d siw0 -p 18515 -F $args >/tmp/out.$id 2>&1 &
        serve "$id" $! 18515 200 30 "SIWPT: perftest server stopped after the host finished"
        rc=$?
        ;;
    gc)
        if wait_file "$R/go.$id" 600; then
            # shellcheck disable=SC2086
            timeout "$STEP_TIMEOUT" "ib_${verb}_bw" -R -d siw0 -p 18515 -F $args 10.0.2.100 >/tmp/out.$id 2>&1
            rc=$?
        else
            echo "SIWPT: host server never became ready" >/tmp/out.$id
            rc=125
        fi
        ;;
    *)
        echo "SIWPT: unknown step kind $kind" >/tmp/out.$id
        rc=126
        ;;
    esac
    t1=$(cut -d' ' -f1 /proc/uptime)
    cp /tmp/out.$id "$R/out.$id"
    echo "$rc $t0 $t1" >"$R/done.$id.tmp" && mv "$R/done.$id.tmp" "$R/done.$id"
    echo "SIWPT: step $id ($kind $verb) rc=$rc"
done <"$R/steps"
dmesg | grep -iE 'siw|iwarp' | tail -40 >"$R/dmesg"
sync
echo "SIWPT: all steps done"
