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
