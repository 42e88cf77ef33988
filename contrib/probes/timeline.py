#!/usr/bin/env python3
"""timeline.py A B: where the microseconds of a 2-rank ping-pong go.

A and B are the files two processes wrote with a libsiwarp built by
`configure --enable-timeline` and run with SIWARP_TIMELINE=PREFIX
(common/timeline.h).  Their marks share the host's TSC (or CLOCK_MONOTONIC), so they are put
on one time line and split into the steps of each message:

  rendezvous by RDMA Read (ob1's RGET): the sender's header Send is posted,
  parsed at the receiver, which posts the Read; the Read Request reaches
  the sender, which builds the Response, writes it; the receiver reads it
  and the Read completes; then the receiver's next post (ob1's FIN).

  eager Sends (a payload of --eager octets or more): the Send is posted,
  written, read and delivered at the peer, which posts its reply.

Prints the median and quartiles of each step over all messages found.
"""
import argparse
import bisect
import statistics
import struct
import sys

POST, RX_SEND, RX_READ_REQ, TX_READ_RESP, TX_WRITE, RX_DIRECT, RX_READ_DONE, RX_RECV, \
    TX_DIRECT = 1, 2, 4, 5, 6, 7, 8, 9, 11
OP_SEND, OP_READ = 0, 5


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, n, dropped, ns_per_tick = struct.unpack_from("<8sQQd", data, 0)
    if not magic.startswith(b"SWPTL2"):
        sys.exit("%s: not a timeline file" % path)
    if dropped:
        print("# %s: %d marks dropped (buffer full)" % (path, dropped))
    return ns_per_tick, [struct.unpack_from("<QII", data, 32 + 16 * i) for i in range(n)]


def at(marks, t):
    """index of the first mark of one process (sorted by time) at or after t"""
    return bisect.bisect_left(marks, t, key=lambda m: m[0])


def after(marks, t, pred, limit=None):
    """the first mark of one process at or after t that satisfies pred"""
    for m in marks[at(marks, t):]:
        if limit is not None and m[0] > limit:
            return None
        if pred(m):
            return m
    return None


def before(marks, t, pred):
    """the last mark of one process before t that satisfies pred, among the
    64 before it"""
    i = at(marks, t)
    for m in reversed(marks[max(0, i - 64):i]):
        if pred(m):
            return m
    return None


def is_post(op, minlen=0):
    return lambda m: m[1] == POST and m[2] >> 24 == op and (m[2] & 0xffffff) >= minlen


def report(title, steps):
    print(title)
    for name, v in steps.items():
        if len(v) >= 4:
            q = statistics.quantiles(v, n=4)
            print("  %-38s %6.2f us  (%.2f-%.2f, %d)" % (name, statistics.median(v), q[0], q[2], len(v)))


def rget(ranks, us):
    names = ["header posted -> parsed at the receiver", "parsed -> Read posted",
             "Read posted -> Request parsed at the sender", "Request parsed -> Response built",
             "built -> first write returned", "first -> last write of it returned",
             "last write -> Read complete at the receiver", "first read of data -> Read complete",
             "Read complete -> next post (FIN)", "header posted -> Read complete"]
    steps = {n: [] for n in names}
    for r in (0, 1):
        me, peer = ranks[r], ranks[1 - r]
        for rd in filter(is_post(OP_READ), me):
            t = rd[0]
            parsed = before(me, t, lambda m: m[1] == RX_SEND)
            hdr = parsed and before(peer, parsed[0], is_post(OP_SEND))
            req = after(peer, t, lambda m: m[1] == RX_READ_REQ)
            done = after(me, t, lambda m: m[1] == RX_READ_DONE)
            if not (parsed and hdr and req and done):
                continue
            built = after(peer, req[0], lambda m: m[1] == TX_READ_RESP, done[0])
            # the writes that carried the Response: up to the one that
            # brought the octets written to its length (a small Send may
            # follow it before the Read completes)
            writes, sent = [], 0
            for m in peer[at(peer, req[0]):at(peer, done[0] + 1)]:
                if m[1] == TX_WRITE and sent < req[2]:
                    writes.append(m)
                    sent += m[2]
            first = after(me, t, lambda m: m[1] in (RX_RECV, RX_DIRECT) and m[2] > 4096, done[0])
            nxt = after(me, done[0], lambda m: m[1] == POST)
            if not (built and writes and nxt):
                continue
            vals = [us(hdr[0], parsed[0]), us(parsed[0], t), us(t, req[0]), us(req[0], built[0]),
                    us(built[0], writes[0][0]), us(writes[0][0], writes[-1][0]),
                    us(writes[-1][0], done[0]), us(first[0], done[0]) if first else None,
                    us(done[0], nxt[0]), us(hdr[0], done[0])]
            for n, v in zip(names, vals):
                if v is not None:
                    steps[n].append(v)
    return steps


def eager(ranks, minlen, us):
    names = ["Send posted -> first write returned", "first -> last write returned",
             "last write -> delivered at the peer", "peer's first read -> delivered",
             "delivered -> peer's next post", "Send posted -> delivered"]
    steps = {n: [] for n in names}
    for r in (0, 1):
        me, peer = ranks[r], ranks[1 - r]
        for p in filter(is_post(OP_SEND, minlen), me):
            got = after(peer, p[0], lambda m: m[1] == RX_SEND)
            if not got:
                continue
            writes = [m for m in me if p[0] <= m[0] <= got[0] and m[1] in (TX_WRITE, TX_DIRECT) and m[2] < 1 << 31]
            reads = [m for m in peer if p[0] <= m[0] <= got[0] and m[1] in (RX_RECV, RX_DIRECT)]
            nxt = after(peer, got[0], lambda m: m[1] == POST)
            if not (writes and reads and nxt):
                continue
            vals = [us(p[0], writes[0][0]), us(writes[0][0], writes[-1][0]), us(writes[-1][0], got[0]),
                    us(reads[0][0], got[0]), us(got[0], nxt[0]), us(p[0], got[0])]
            for n, v in zip(names, vals):
                steps[n].append(v)
    return steps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs=2)
    ap.add_argument("--eager", type=int, default=1024,
                    help="smallest Send payload counted as an eager message (octets)")
    a = ap.parse_args()
    loaded = [load(f) for f in a.files]
    rates = [r for r, _ in loaded]
    if (rates[0] > 0) != (rates[1] > 0):
        sys.exit("one file counts TSC ticks, the other nanoseconds")
    scale = (rates[0] + rates[1]) / 2 if rates[0] > 0 else 1.0
    us = lambda a, b: (b - a) * scale / 1000.0
    ranks = [sorted(m) for _, m in loaded]
    report("rendezvous by RDMA Read, per message:", rget(ranks, us))
    report("eager Sends of %d octets or more, per message:" % a.eager, eager(ranks, a.eager, us))


if __name__ == "__main__":
    main()
