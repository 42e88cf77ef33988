#!/bin/sh
# extract-streams.sh PCAP... - write each TCP connection of each capture as
# two byte streams, for test_traces (the receive-path parser over siw's own
# FPDUs).  Needs tshark.  Output in $OUTDIR (default test/interop/traces):
#   NAME.sN.a  bytes sent by the side that opened the connection
#   NAME.sN.b  bytes sent by the other side
# The committed fixtures were made with:
#   test/interop/extract-streams.sh ../shared/iwarp-traces/rping-crc.pcap \
#       ../shared/iwarp-traces/rping-nocrc.pcap
set -eu
OUTDIR=${OUTDIR:-$(cd "$(dirname "$0")" && pwd)/traces}
mkdir -p "$OUTDIR"
for pcap in "$@"; do
    name=$(basename "$pcap" .pcap)
    for s in $(tshark -r "$pcap" -T fields -e tcp.stream 2>/dev/null | sort -nu); do
        # follow,tcp,raw: "Node 0"/"Node 1" header, then hex lines; lines of
        # node 1 (the side that did not send first) start with a tab.
        tshark -r "$pcap" -q -z "follow,tcp,raw,$s" 2>/dev/null | awk -v a="$OUTDIR/$name.s$s.a.hex" \
            -v b="$OUTDIR/$name.s$s.b.hex" '
            /^====/ { body = !body; next }
            !body || /^Follow:|^Filter:|^Node [01]:/ { next }
            /^\t/ { sub(/^\t/, ""); print >> b; next }
            { print >> a }'
        for d in a b; do
            xxd -r -p "$OUTDIR/$name.s$s.$d.hex" >"$OUTDIR/$name.s$s.$d" 2>/dev/null || : >"$OUTDIR/$name.s$s.$d"
            rm -f "$OUTDIR/$name.s$s.$d.hex"
        done
    done
done
