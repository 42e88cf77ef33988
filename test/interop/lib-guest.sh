# lib-guest.sh - shell helpers the guest scripts share.  The runners copy it
# into the 9p share next to the guest script, which sources it as
# /mnt/host/lib-guest.sh (POSIX sh only).

# wait_file FILE TENTHS: true once FILE exists, false after TENTHS/10 s
wait_file() {
    i=0
    while [ ! -e "$1" ]; do
        i=$((i + 1))
        [ $i -gt "$2" ] && return 1
        sleep 0.1
    done
    return 0
}

# listening PORT: a kernel (siw / rdma_cm) listener on the TCP port; siw's
# listener is a kernel socket and shows in /proc/net/tcp like any other
listening() {
    grep -q ":$(printf '%04X' "$1") 00000000:0000 0A" /proc/net/tcp 2>/dev/null
}

# serve ID PID PORT TRIES GRACE NOTE: PID is a peer server just started in
# the background.  Wait (TRIES x 50 ms) until it listens on PORT, tell the
# host ($R/ready.ID), then let it run until it exits -- or, once the host
# side has finished ($R/fin.ID, e.g. siw refused the connection below the
# tool), GRACE tenths of a second more, then stop it and log NOTE.  Returns
# the server's exit status.
serve() {
    i=0
    while ! listening "$3" && [ $i -lt "$4" ] && kill -0 "$2" 2>/dev/null; do
        sleep 0.05; i=$((i + 1))
    done
    : >"$R/ready.$1"
    fin_seen=0
    while kill -0 "$2" 2>/dev/null; do
        if [ $fin_seen = 0 ] && [ -e "$R/fin.$1" ]; then fin_seen=1; j=0; fi
        if [ $fin_seen = 1 ]; then
            j=$((j + 1))
            [ $j -gt "$5" ] && { kill "$2" 2>/dev/null; echo "$6" >>"/tmp/out.$1"; }
        fi
        sleep 0.1
    done
    wait "$2"
}

# rping_server_rc RC OUT: the exit status to judge a stock `rping -s` by.
# Debian 12's rping (rdma-core 44) has a teardown race of its own: after
# the client's DISCONNECTED event the main thread destroys the event
# channel while the CM thread loops back into rdma_get_cm_event(), which
# fails with EBADF, and the CM thread calls exit(-1) -- status 255 after a
# session that ended normally.  (Later rdma-core wakes that thread through
# an eventfd instead.)  Status 255 counts as 0 only when OUT is that and
# nothing else: the DISCONNECT event, the server's end-of-session line for
# state 10 (DISCONNECTED), the EBADF line, and ping data.  Any other line
# (a failed completion, bogus data, a failed post) keeps the 255.
rping_server_rc() {
    if [ "$1" = 255 ] &&
       grep -qx 'server DISCONNECT EVENT\.\.\.' "$2" &&
       grep -qx 'wait for RDMA_READ_ADV state 10' "$2" &&
       grep -qx 'rdma_get_cm_event: Bad file descriptor' "$2" &&
       ! grep -vx -e 'server DISCONNECT EVENT\.\.\.' \
             -e 'wait for RDMA_READ_ADV state 10' \
             -e 'rdma_get_cm_event: Bad file descriptor' \
             -e 'server ping data: .*' "$2" >/dev/null; then
        echo "(rping's own exit race after a normal end, rdma-core 44: status 255 read as 0)" >>"$2"
        echo 0
    else
        echo "$1"
    fi
}

# launch_agent READY DONE: the launch agent of a host+guest mpirun, as ssh
# would run orted: socat on TCP 2222 runs each connection's one command
# line detached.  READY once it listens; runs until DONE exists (20 min at
# most); its logs go to $R/agent.log and $R/agent.out.
# socat -t 30: once the host's side has sent its line and closed, socat by
# default gives the script 0.5 s before it ends it, which under TCG was
# sometimes too short to start orted (the host's mpirun then waited for
# it until its timeout, "date: write error: Broken pipe" on the console).
launch_agent() {
    cat >/tmp/agent.sh <<'AGENT'
#!/bin/sh
read -r cmd
export HOME=/root
setsid sh -c "$cmd" </dev/null >>/tmp/agent.out 2>&1 &
echo "$(date +%T) $cmd" >>/tmp/agent.log
AGENT
    chmod +x /tmp/agent.sh
    socat -t 30 TCP-LISTEN:2222,reuseaddr,fork EXEC:/tmp/agent.sh &
    apid=$!
    i=0
    while ! listening 2222 && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
    : >"$1"
    wait_file "$2" 12000
    kill $apid 2>/dev/null
    cp /tmp/agent.log /tmp/agent.out "$R/" 2>/dev/null
}
