/*
 * siwarp-perftest.h - shared between siwarp-perftest-main.c (options),
 * siwarp-perftest.c (the control connection and the order of perftest's
 * exchange) and siwarp-perftest-data.c (the data connection's buffers and
 * the test).
 *
 * What the peer is: perftest 6.06 (Debian 12's perftest 4.5+0.17) run with
 * -R, i.e. rdma_cm for both its control connection and its data connection.
 * rdma_cm on iWARP adds nothing to the MPA private data (siw-vm README), so
 * a plain siwarp QP talks to it.  Everything below about perftest's format
 * was read off ../shared/iwarp-traces/rping-*.pcap (siw to siw, port 18515)
 * and checked against perftest's sources.
 */
#ifndef SIWARP_PERFTEST_H
#define SIWARP_PERFTEST_H

#include <stdbool.h>
#include <stdint.h>

#include "siwarp/siwarp.h"

enum pt_verb { PT_WRITE, PT_READ, PT_SEND };

/* perftest's "pingpong_dest" as its rdma_write_keys() puts it in a Send on
 * the control connection: every integer big-endian, 56 bytes with the
 * compiler's padding before vaddr (the capture shows garbage there at
 * times).  Only out_reads, rkey and vaddr matter on iWARP (rdma_cm, not the
 * qpn/psn, connects the QPs). */
struct pt_wire_dest {
    uint32_t lid;
    uint32_t out_reads;
    uint32_t qpn;
    uint32_t psn;
    uint32_t rkey;
    uint32_t pad;            /* alignment hole of the C struct; ignored */
    uint64_t vaddr;
    uint8_t  gid[16];
    uint32_t srqn;
    uint32_t gid_index;
};
_Static_assert(sizeof(struct pt_wire_dest) == 56, "perftest pingpong_dest is 56 bytes");

/* host-order view of the same */
struct pt_dest {
    uint32_t out_reads, qpn, psn, rkey;
    uint64_t vaddr;
};

/* perftest's bw_report_data as xchg_bw_reports() sends it to a peer of
 * version >= 5.33: five separate 8-byte Sends (size, iters, bw_peak,
 * bw_avg, msgRate_avg), integers big-endian, doubles byte-swapped (so also
 * big-endian on a little-endian host).  MB/s means 2^20 bytes per second,
 * msgRate Mpps. */
struct pt_report {
    uint64_t size, iters;
    double bw_peak, bw_avg, msg_rate;
};

struct pt_opts {
    bool server;
    const char *host;           /* client: the perftest server */
    const char *port;           /* perftest's -p, default 18515 */
    const char *dev;            /* --dev: siwarp_ctx_create_dev */
    enum pt_verb verb;
    uint32_t size;              /* -s, must match the peer's */
    uint32_t iters;             /* -n, must match the peer's for send */
    uint32_t rx_depth;          /* -r: send window / receives posted */
    uint32_t tx_depth;          /* -t: work in flight */
    int timeout_s;              /* -T: bound of every wait */
    int verbose;
    struct siwarp_conn_param cp;
};

struct pt;
struct pt_conn {
    struct siwarp_qp *qp;
    struct siwarp_cq *cq;
    struct siwarp_qp_init_attr attr;    /* to create it again (connect retry) */
    int (*arm)(struct pt *p);           /* receives to post on a fresh QP */
};

struct pt {
    struct pt_opts *o;
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_listener *l;
    struct pt_conn ctrl, data;
    struct siwarp_mr *ctrl_mr;
    uint8_t ctrl_rx[64];        /* the one receive of the control QP */
    char peer_version[17];
    uint32_t cycle_buffer;      /* max of both sides (perftest check_sys_data) */
    uint32_t cache_line;
    struct pt_dest mine, peer;
    /* data buffers (siwarp-perftest-data.c) */
    uint8_t *buf;               /* slots or the exposed region, then a guard */
    uint64_t buf_len, region_len, slot_len;
    uint32_t nslots;
    uint64_t recv_posted;       /* send server: receives posted so far */
    struct siwarp_mr *buf_mr;
    uint32_t *credit;           /* send: [0] we write from, [1] the peer writes */
    struct siwarp_mr *credit_mr;
    struct pt_report result;    /* ours (client) or the peer's (server) */
    char data_note[256];        /* what the data check found */
    uint64_t t0;
};

/* siwarp-perftest.c */
int pt_run(struct pt *p, const struct sockaddr *sa, socklen_t sl);
/* release whatever pt_run and main created, on success or failure */
void pt_release(struct pt *p);
uint64_t pt_now_us(void);
int pt_fail(struct pt *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *pt_verb_name(enum pt_verb v);
int pt_wait_wc(struct pt *p, struct pt_conn *c, enum siwarp_wc_opcode want,
               struct siwarp_wc *out, int timeout_ms);
int pt_wc_fail(struct pt *p, int rc, const struct siwarp_wc *wc, const char *what);

/* siwarp-perftest-data.c */
int pt_data_setup(struct pt *p);
int pt_data_server_arm(struct pt *p);
int pt_data_run_client(struct pt *p);
int pt_data_run_server(struct pt *p);
int pt_data_check_server(struct pt *p);

#endif
