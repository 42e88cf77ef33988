/*
 * qp_pair.h - the fixture of the data-path tests: two software QPs of one
 * context joined by a socketpair and attached as if MPA had negotiated
 * (no MPA frames on the wire), qp[0] the initiator.
 */
#ifndef SWP_TEST_QP_PAIR_H
#define SWP_TEST_QP_PAIR_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "siwarp/siwarp.h"

struct swp_test_pair {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq[2];
    struct siwarp_qp *qp[2];
};

struct swp_test_pair_opts {
    int cqe;                /* entries per CQ */
    uint32_t depth;         /* max_send_wr and max_recv_wr */
    uint32_t ird_ord;       /* as MPA would have agreed them */
    uint32_t mulpdu;
    int sndbuf;             /* qp[0]'s SO_SNDBUF and qp[1]'s SO_RCVBUF; 0: default */
    bool crc, markers;
    bool rfc7306;           /* as if both ends had agreed on RFC 7306 */
    bool tcp;               /* TCP over loopback instead of a socketpair */
};

/* Fails the test case on any error. */
void swp_test_pair_setup(struct swp_test_pair *p, const struct swp_test_pair_opts *o);

/* What MPA would have agreed for o (the depth, cqe, sndbuf and tcp
 * fields aside), for a test that attaches QPs of its own with
 * swp_qp_attach_fd. */
struct swp_nego;
void swp_test_nego(struct swp_nego *n, const struct swp_test_pair_opts *o, bool initiator);

/* Release what swp_test_pair_setup made; the case deregisters its MRs
 * first.  Fails the test case on any error. */
void swp_test_pair_teardown(struct swp_test_pair *p);

/* A connected TCP pair over loopback, both ends non-blocking with
 * TCP_NODELAY: for tests that need TCP's short writes (a unix socket
 * refuses a write whole).  Fails the test case on any error. */
void swp_test_tcp_pair(int fd[2]);

/* A thread asleep in siwarp_cq_wait(p->cq[1], timeout_ms), as a progress
 * thread would be; start returns once it has had 100 ms to get there, join
 * returns the wait's result. */
struct swp_test_sleeper {
    struct swp_test_pair *p;
    int timeout_ms;
    int rc;
    pthread_t thread;
};
void swp_test_sleeper_start(struct swp_test_sleeper *s, struct swp_test_pair *p, int timeout_ms);
int swp_test_sleeper_join(struct swp_test_sleeper *s);

#endif
