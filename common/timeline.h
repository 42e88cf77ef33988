/*
 * timeline.h - time marks on the data path, for finding where the
 * microseconds of a message go (contrib/probes/timeline.py puts the marks
 * of two processes on one time line and splits a rendezvous or eager
 * ping-pong into its steps).
 *
 * Compiled in only by `configure --enable-timeline` (SWP_TIMELINE); in
 * every other build each mark is empty and costs nothing.  A build with
 * marks records nothing either unless SIWARP_TIMELINE names a file prefix:
 * then each process keeps up to 2 M marks (32 MiB) and writes them to
 * PREFIX.PID at exit, as struct swp_tl_mark records behind a
 * struct swp_tl_file header.
 */
#ifndef SWP_TIMELINE_H
#define SWP_TIMELINE_H

#include <stdint.h>

enum swp_tl_event {
    SWP_TL_POST = 1,            /* siwarp_post_send: arg = opcode << 24 | length (< 16 MiB) */
    SWP_TL_RX_SEND = 2,         /* a Send (its last segment) parsed and delivered */
    SWP_TL_RX_READ_REQ = 4,     /* a Read Request parsed: arg = its length */
    SWP_TL_TX_READ_RESP = 5,    /* the first segment of a Read Response built */
    SWP_TL_TX_WRITE = 6,        /* a batch write returned: arg = octets written */
    SWP_TL_RX_DIRECT = 7,       /* a read straight into the target returned: octets */
    SWP_TL_RX_READ_DONE = 8,    /* the last segment of a Read Response placed */
    SWP_TL_RX_RECV = 9,         /* a read into the staging buffer returned: octets */
    SWP_TL_TX_DIRECT = 11,      /* a direct-path send returned: octets, or < 0 */
};

struct swp_tl_mark {
    uint64_t t;                 /* TSC ticks, or CLOCK_MONOTONIC ns (swp_tl_file) */
    uint32_t event;             /* enum swp_tl_event */
    uint32_t arg;
};

struct swp_tl_file {
    char magic[8];              /* "SWPTL1\0\0" */
    uint64_t marks;
    uint64_t dropped;           /* marks beyond the buffer */
    double ns_per_tick;         /* > 0: t counts TSC ticks, which every core of
                                   the host shares; 0: t is CLOCK_MONOTONIC ns */
};

#ifdef SWP_TIMELINE
void swp_tl_mark(enum swp_tl_event event, uint64_t arg);
#define SWP_TL(event, arg) swp_tl_mark((event), (uint64_t)(arg))
#else
#define SWP_TL(event, arg) ((void)0)
#endif

#endif
