#!/usr/bin/env python3
"""mpa-crc-check.py - which side is wrong about an MPA CRC error.

    mpa-crc-check.py CAPTURE [--octet N] [--from ADDR]

Reassembles every TCP stream of a full-payload capture (tshark's "follow"),
parses each direction that starts with an MPA Request or Reply (RFC 5044
7.1) as FPDUs without markers (siw and RNICs refuse them), and recomputes
every FPDU's CRC32c over the bytes on the wire (RFC 5044 4.4).  A mismatch
means the sender put bytes on the wire that its CRC did not cover; no
mismatch, while a receiver reported a CRC error on that stream, means the
receiver checked other bytes than the wire's.

Octets are counted from the direction's first FPDU, as libsiwarp's
receiver counts them (markers are placed so).  --octet N: only FPDUs
within 64 KiB of octet N are checked (the receiver's error message names
it; a pure-Python CRC runs at a few MB/s).  --from ADDR: only directions sent by ADDR (an IP address).
Exit status: 0 no mismatch, 1 a mismatch, 2 nothing parsed as MPA.
"""
import argparse
import struct
import subprocess
import sys

POLY = 0x82F63B78           # CRC32c, reflected (RFC 3385, used by RFC 5044)
TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ POLY if _c & 1 else _c >> 1
    TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for x in data:
        c = TABLE[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def tshark(*args):
    return subprocess.run(['tshark', *args], capture_output=True, text=True,
                          check=True).stdout


def directions(capture):
    """(stream, sender 'addr:port', bytes) for each direction of each stream"""
    ids = sorted({int(x) for x in tshark('-r', capture, '-T', 'fields',
                                          '-e', 'tcp.stream').split()})
    for s in ids:
        nodes, data = [], [bytearray(), bytearray()]
        for line in tshark('-r', capture, '-q', '-z',
                           'follow,tcp,raw,%d' % s).splitlines():
            if line.startswith('Node '):
                nodes.append(line.split(': ', 1)[1])
            elif line and all(ch in '0123456789abcdef' for ch in line.strip()):
                data[1 if line.startswith('\t') else 0] += bytes.fromhex(line.strip())
        for d in (0, 1):
            yield s, nodes[d] if d < len(nodes) else '?', bytes(data[d])


def check(stream, sender, b, octet):
    """FPDUs checked and mismatches of one direction; None if not MPA"""
    if len(b) < 20 or not b.startswith(b'MPA ID Re'):
        return None
    first = 20 + struct.unpack('>H', b[18:20])[0]   # key, flags, rev, PD length, PD
    off = first
    checked = bad = 0
    while off + 2 <= len(b):
        ulpdu = struct.unpack('>H', b[off:off + 2])[0]
        end = off + 2 + ulpdu + (-(2 + ulpdu)) % 4
        if end + 4 > len(b):
            break
        if octet is None or abs(off - first - octet) <= 65536:
            wire = struct.unpack('>I', b[end:end + 4])[0]
            mine = crc32c(b[off:end])
            # the CRC field as sent: either byte order counts as a match
            if mine not in (wire, struct.unpack('<I', b[end:end + 4])[0]):
                bad += 1
                print('stream %d from %s: FPDU at octet %d (ULPDU %d, control %s):'
                      ' CRC on the wire %08x, its bytes give %08x'
                      % (stream, sender, off - first, ulpdu, b[off + 2:off + 4].hex(), wire,
                         mine))
            checked += 1
        off = end + 4
    return checked, bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('capture')
    ap.add_argument('--octet', type=int)
    ap.add_argument('--from', dest='sender')
    a = ap.parse_args()
    parsed = mismatches = 0
    for stream, sender, b in directions(a.capture):
        if a.sender and not sender.startswith(a.sender + ':'):
            continue
        r = check(stream, sender, b, a.octet)
        if r is None:
            continue
        parsed += 1
        mismatches += r[1]
        print('stream %d from %s: %d octets, %d FPDUs checked, %d CRC mismatches'
              % (stream, sender, len(b), r[0], r[1]))
    if not parsed:
        print('no direction of the capture starts with an MPA Request or Reply')
        return 2
    return 1 if mismatches else 0


if __name__ == '__main__':
    sys.exit(main())
