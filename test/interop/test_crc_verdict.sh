#!/bin/sh
# test_crc_verdict.sh - crc_verdict (lib-host.sh): what the mixed-cluster
# jobs print when a rank reports an MPA CRC error.  Wireshark's dissectors
# must find every CRC of a sound capture good and name the one FPDU of a
# capture whose CRC octet was changed, the capture kept in both cases;
# without a CRC error in the log the capture is deleted.  The capture is
# siw talking to siw (../shared/iwarp-traces/rping-crc.pcap).
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
pcap=${SIWARP_TRACE_PCAP:-$top_srcdir/../shared/iwarp-traces/rping-crc.pcap}
[ -f "$pcap" ] || pcap=/work/shared/iwarp-traces/rping-crc.pcap
if ! command -v tshark >/dev/null; then echo "1..0 # SKIP no tshark (wireshark)"; exit 0; fi
if [ ! -f "$pcap" ]; then echo "1..0 # SKIP no capture of siw (../shared/iwarp-traces)"; exit 0; fi
command -v python3 >/dev/null || { echo "1..0 # SKIP no python3"; exit 0; }
. "$here/lib-host.sh"
tmp=$(mktemp -d /tmp/crcv.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cap_pid=
echo "1..3"
bad=0
# the last octet of the capture's longest segment (an FPDU's CRC) changed
cp "$pcap" "$tmp/good.pcap"
python3 - "$tmp/good.pcap" "$tmp/bad.pcap" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
off, best = 24, (0, 0)
while off + 16 <= len(d):
    incl = struct.unpack_from('<I', d, off + 8)[0]
    if incl > best[1]:
        best = (off + 16, incl)
    off += 16 + incl
d[best[0] + best[1] - 1] ^= 0x5a
open(sys.argv[2], 'wb').write(d)
PY
echo "siwarp: ... CRC error: received 0x5c2a8470, computed 0xf1703250" >"$tmp/crc.log"
echo "pingpong: ok" >"$tmp/fine.log"

# check N WHAT LOG CAPTURE CONDITION: crc_verdict LOG CAPTURE, its output
# in $out, must meet CONDITION (a shell test)
check() {
    out=$(crc_verdict "$3" "$4")
    if eval "$5"; then echo "ok $1 - $2"; else echo "not ok $1 - $2"; bad=1; fi
    [ -z "$out" ] || echo "$out" | sed 's/^/# /'
}
check 1 "a sound capture: every CRC good, the capture kept" "$tmp/crc.log" "$tmp/good.pcap" \
    'echo "$out" | grep -q "badcrc=0" && echo "$out" | grep -qE "goodcrc=[1-9]" && [ -f "$tmp/good.pcap" ]'
check 2 "one CRC octet changed: one bad CRC, its frame named, the capture kept" \
    "$tmp/crc.log" "$tmp/bad.pcap" \
    'echo "$out" | grep -q "badcrc=1" && echo "$out" | grep -q "^#     Frame" && [ -f "$tmp/bad.pcap" ]'
check 3 "no CRC error in the log: nothing printed, the capture deleted" \
    "$tmp/fine.log" "$tmp/good.pcap" '[ -z "$out" ] && [ ! -f "$tmp/good.pcap" ]'
exit $bad
