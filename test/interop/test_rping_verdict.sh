#!/bin/sh
# test_rping_verdict.sh - rping_server_rc (lib-guest.sh): how the interop
# runs judge a stock `rping -s`.  Status 255 is forgiven only for rping's
# own exit race after a normal end of session; every other failure stays.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib-guest.sh"
tmp=$(mktemp -d /tmp/rpv.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0 bad=0
echo "1..7"
# check NAME RC WANT LINES...: OUT holds LINES; rping_server_rc RC OUT = WANT
check() {
    name=$1 rc=$2 want=$3
    shift 3
    printf '%s\n' "$@" >"$tmp/out"
    got=$(rping_server_rc "$rc" "$tmp/out")
    n=$((n + 1))
    if [ "$got" = "$want" ]; then
        echo "ok $n - $name (status $rc -> $got)"
    else
        echo "not ok $n - $name: status $rc -> $got, want $want"
        sed 's/^/#   /' "$tmp/out"
        bad=1
    fi
}
D='server DISCONNECT EVENT...'
W='wait for RDMA_READ_ADV state 10'
E='rdma_get_cm_event: Bad file descriptor'
P0='server ping data: rdma-ping-0: ABCDEFG'
P1='server ping data: rdma-ping-1: BCDEFGH'
check "exit race after a normal end is read as 0" 255 0 "$D" "$W" "$E" "$P0" "$P1"
grep -q "exit race" "$tmp/out" && echo "ok 2 - the output says why" ||
    { echo "not ok 2 - no note in the output"; bad=1; }
n=2
check "a clean end stays 0" 0 0 "$D" "$W" "$P0"
check "a failed completion keeps 255" 255 255 "$D" "$W" "$E" "cq completion failed status 5" "$P0"
check "an end in state ERROR (11) keeps 255" 255 255 "$D" "wait for RDMA_READ_ADV state 11" "$E"
check "255 without the EBADF line stays" 255 255 "$D" "$W" "$P0"
check "another status with the signature stays" 124 124 "$D" "$W" "$E"
exit $bad
