# guest-hw.sh - runs inside the siw guest (siwrun=guest-hw.sh): libsiwarp's
# verbs backend over the guest's siw0 (contrib/siwarp-rping --dev siw0,
# shared in bin/), against rping and against itself, and the mixed cases
# with a siwarp-rping on the host using the software backend.  Driven by
# run-hw.sh through files in /mnt/host/run:
#   up                guest: started
#   ready.ID          guest: the siw0 server of mixed step ID listens
#   go.ID             host:  the software server of mixed step ID listens
#   out.ID / done.ID  guest: output; "rc t0 t1" (seconds of guest uptime)
R=/mnt/host/run
B=/mnt/host/bin/siwarp-rping
T=${STEP_TIMEOUT:-40}
: >"$R/up"
echo "SIWHW: siw params: $(cd /sys/module/siw/parameters 2>/dev/null && for p in *; do printf '%s=%s ' "$p" "$(cat "$p")"; done)"
ibv_devinfo -d siw0 2>&1 | grep -E 'hca_id|transport' >"$R/devinfo"

up() { cut -d' ' -f1 /proc/uptime; }
. /mnt/host/lib-guest.sh     # wait_file, listening, rping_server_rc
wait_listen() {  # PORT PID
    i=0
    while ! listening "$1" && [ $i -lt 200 ] && kill -0 "$2" 2>/dev/null; do
        sleep 0.05; i=$((i + 1))
    done
}
finish() {  # ID RC T0
    cp "/tmp/out.$1" "$R/out.$1"
    echo "$2 $3 $(up)" >"$R/done.$1.tmp" && mv "$R/done.$1.tmp" "$R/done.$1"
    echo "SIWHW: step $1 rc=$2"
}

# pair ID PORT "SERVER CMD" "CLIENT CMD": server in the background, then
# the client; rc 0 only if both exit 0
pair() {
    id=$1 port=$2; t0=$(up)
    # shellcheck disable=SC2086
    timeout "$T" $3 >"/tmp/out.$id.s" 2>&1 &
    spid=$!
    wait_listen "$port" $spid
    # shellcheck disable=SC2086
    timeout "$T" $4 >"/tmp/out.$id.c" 2>&1
    crc=$?
    wait $spid
    src=$?
    case $3 in "rping -s "*) src=$(rping_server_rc $src "/tmp/out.$id.s") ;; esac
    { echo "== server: $3 (rc $src)"; cat "/tmp/out.$id.s"; echo "== client: $4 (rc $crc)"; cat "/tmp/out.$id.c"; } >"/tmp/out.$id"
    finish "$id" $(( src != 0 || crc != 0 )) "$t0"
}

A=10.0.2.15
pair h01 7174 "$B -s --dev siw0 -a $A -p 7174 -C 3 -T 20" "rping -c -a $A -p 7174 -C 3 -v -V -S 64"
pair h02 7175 "rping -s -a $A -p 7175 -C 3 -v -S 64" "$B -c --dev siw0 -a $A -p 7175 -C 3 -V -S 64 -T 20"
pair h03 7176 "$B -s --dev siw0 -a $A -p 7176 -C 2 -T 20" "rping -c -a $A -p 7176 -C 2 -V -S 65000"
pair h04 7177 "rping -s -a $A -p 7177 -C 2 -S 65000" "$B -c --dev siw0 -a $A -p 7177 -C 2 -V -S 65000 -T 20"
pair h05 7178 "$B -s --dev siw0 -a $A -p 7178 -C 20 -T 20 --pd hw-reply-pd" "$B -c --dev siw0 -a $A -p 7178 -C 20 -V -S 4000 -T 20 --pd hw-request-pd"

# h06: mixed, siw0 server here, software client on the host (hostfwd)
id=h06; t0=$(up)
timeout "$T" $B -s --dev siw0 -a $A -p 7174 -C 3 -T 30 >/tmp/out.$id 2>&1 &
spid=$!
wait_listen 7174 $spid
: >"$R/ready.$id"
wait $spid
finish $id $? "$t0"

# h07: mixed, siw0 client here, software server on the host (guestfwd)
id=h07; t0=$(up)
if wait_file "$R/go.$id" 600; then
    timeout "$T" $B -c --dev siw0 -a 10.0.2.100 -p 7174 -C 3 -V -S 64 -T 20 >/tmp/out.$id 2>&1
    rc=$?
else
    echo "SIWHW: host server never became ready" >/tmp/out.$id; rc=125
fi
finish $id $rc "$t0"

# h08: mixed, large pings both ways through the guest server
id=h08; t0=$(up)
timeout "$T" $B -s --dev siw0 -a $A -p 7174 -C 2 -T 30 >/tmp/out.$id 2>&1 &
spid=$!
wait_listen 7174 $spid
: >"$R/ready.$id"
wait $spid
finish $id $? "$t0"

# h09: mixed, siw0 client here advertising an STag it does not have; the
# host server's RDMA Read must be refused, and this end must say why
id=h09; t0=$(up)
if wait_file "$R/go.$id" 600; then
    timeout "$T" $B -c --dev siw0 -a 10.0.2.100 -p 7174 -C 1 -S 64 -T 10 --bad-rkey >/tmp/out.$id 2>&1
    rc=$?
else
    echo "SIWHW: host server never became ready" >/tmp/out.$id; rc=125
fi
finish $id $rc "$t0"

dmesg | grep -iE 'siw|iwarp' | tail -40 >"$R/dmesg"
sync
echo "SIWHW: all steps done"
