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
