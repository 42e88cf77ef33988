/*
 * test_cm_patience.c - an initiator and a peer that does not progress for a
 * while (an MPI rank computing, blocked in its runtime, or stopped in a
 * debugger): its kernel takes our TCP connection at once, and it reads our
 * MPA Request only when it next progresses.
 *   - reply_wait_ms < 0: the initiator waits for the Reply without bound,
 *     keepalive on (a dead host still fails it), and connects when the
 *     peer answers; reply_wait_ms > 0 bounds the wait instead of
 *     timeout_ms.
 *   - A Request that leaves late (the initiator itself did not progress
 *     after connect()) and finds the connection closed is sent again at
 *     the same MPA revision: the listener gave up waiting for it, it did
 *     not refuse rev 2 (which a close before the Reply otherwise means,
 *     RFC 5044 7.1).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "mpa.h"
#include "swp.h"

struct env {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
};

static struct siwarp_qp *small_qp(struct siwarp_pd *pd, struct siwarp_cq *cq)
{
    struct siwarp_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .max_send_wr = 8,
                                     .max_recv_wr = 8, .max_sge = 1 };
    struct siwarp_qp *qp;

    ASSERT_OK(siwarp_create_qp(pd, &a, &qp));
    return qp;
}

static void env_init(struct env *e)
{
    ASSERT_OK(siwarp_ctx_create(&e->ctx));
    ASSERT_OK(siwarp_alloc_pd(e->ctx, &e->pd));
    ASSERT_OK(siwarp_create_cq(e->ctx, 64, &e->cq));
    e->qp = small_qp(e->pd, e->cq);
}

static void env_fini(struct env *e)
{
    ASSERT_OK(siwarp_destroy_qp(e->qp));
    ASSERT_OK(siwarp_destroy_cq(e->cq));
    ASSERT_OK(siwarp_dealloc_pd(e->pd));
    siwarp_ctx_destroy(e->ctx);
}

static struct sockaddr_in loopback(void)
{
    struct sockaddr_in sin;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return sin;
}

static enum siwarp_qp_state qp_state(struct siwarp_qp *qp, struct siwarp_qp_attr *a)
{
    ASSERT_OK(siwarp_query_qp(qp, a));
    return a->state;
}

/* Progress ctx for ms (no early end). */
static void progress_for(struct siwarp_ctx *ctx, int ms)
{
    uint64_t end = swp_now_ns() + (uint64_t)ms * 1000000ull;

    while (swp_now_ns() < end)
        siwarp_wait(ctx, 10);
}

/* ---- the peer that answers late ------------------------------------------------- */

/* A software listener in a context of its own that the test progresses only
 * when the "rank" comes back; the initiator's context is progressed
 * meanwhile, as a rank in MPI_Recv would. */
static void busy_peer(int reply_wait_ms, int busy_ms, bool want_connected)
{
    struct env i;
    struct siwarp_ctx *pctx;
    struct siwarp_pd *ppd;
    struct siwarp_cq *pcq;
    struct siwarp_qp *pqp;
    struct siwarp_listener *l;
    struct siwarp_conn_req *req;
    struct siwarp_conn_param p;
    struct siwarp_qp_attr a;
    struct sockaddr_in at = loopback();
    struct sockaddr_storage ss;
    uint64_t t0;

    env_init(&i);
    ASSERT_OK(siwarp_ctx_create(&pctx));
    ASSERT_OK(siwarp_alloc_pd(pctx, &ppd));
    ASSERT_OK(siwarp_create_cq(pctx, 64, &pcq));
    siwarp_conn_param_default(&p);
    p.timeout_ms = 60000;           /* the busy side's listener is patient */
    ASSERT_OK(siwarp_listen(pctx, (struct sockaddr *)&at, sizeof(at), &p, &l));
    ASSERT_OK(siwarp_listener_addr(l, &ss));
    memcpy(&at, &ss, sizeof(at));

    siwarp_conn_param_default(&p);
    p.timeout_ms = 200;
    p.reply_wait_ms = reply_wait_ms;
    t0 = swp_now_ns();
    ASSERT_OK(siwarp_connect(i.qp, (struct sockaddr *)&at, sizeof(at), &p));
    progress_for(i.ctx, busy_ms);   /* the peer is away */
    if (!want_connected) {
        ASSERT_EQ(qp_state(i.qp, &a), SIWARP_QPS_ERROR);
        ASSERT_EQ(a.error, -ETIMEDOUT);
        ASSERT(strstr(a.error_str, "MPA Reply"));
        {
            char within[32];    /* the bound that ended it, as set */
            snprintf(within, sizeof(within), "within %d ms",
                     reply_wait_ms > 0 ? reply_wait_ms : p.timeout_ms);
            ASSERT(strstr(a.error_str, within));
        }
        goto out;
    }
    ASSERT_EQ(qp_state(i.qp, &a), SIWARP_QPS_CONNECTING);
    if (reply_wait_ms < 0) {
        /* a dead host would still be noticed: keepalive on the socket */
        int on = 0, idle = 0;
        socklen_t sl = sizeof(on);
        ASSERT_OK(getsockopt(i.qp->pl.fd, SOL_SOCKET, SO_KEEPALIVE, &on, &sl));
        ASSERT_EQ(on, 1);
        sl = sizeof(idle);
        ASSERT_OK(getsockopt(i.qp->pl.fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, &sl));
        ASSERT_EQ(idle, 15);        /* half of the default 30 s LLP timeout */
    }
    /* the peer comes back */
    ASSERT_OK(siwarp_get_conn_request_wait(l, 2000, &req));
    pqp = small_qp(ppd, pcq);
    ASSERT_OK(siwarp_accept(req, pqp, NULL));
    ASSERT_OK(siwarp_connect_wait(i.qp, 2000));
    ASSERT_EQ(qp_state(i.qp, &a), SIWARP_QPS_RTS);
    ASSERT_EQ(a.mpa_rev, 2);
    ASSERT(swp_now_ns() - t0 >= (uint64_t)busy_ms * 1000000ull);
    ASSERT_OK(siwarp_destroy_qp(pqp));
out:
    siwarp_listener_destroy(l);
    ASSERT_OK(siwarp_destroy_cq(pcq));
    ASSERT_OK(siwarp_dealloc_pd(ppd));
    siwarp_ctx_destroy(pctx);
    env_fini(&i);
}

/* Six times timeout_ms: the old rule failed it after one. */
TEST(reply_wait_unbounded_outlasts_a_busy_peer) { busy_peer(-1, 1200, true); }
/* reply_wait_ms > 0 is the bound, not timeout_ms */
TEST(reply_wait_bounded_fails_after_it)         { busy_peer(500, 900, false); }
TEST(reply_wait_bounded_long_enough)            { busy_peer(3000, 600, true); }
/* 0: timeout_ms, as before */
TEST(reply_wait_default_is_timeout_ms)          { busy_peer(0, 600, false); }

/* ---- a Request that leaves late ------------------------------------------------- */

/* A raw listener with an accept queue of one, kept full, so that the
 * initiator's SYN is dropped and its connect completes only at the SYN's
 * retransmission (a second): the initiator then learns of the connection
 * late.  The first connection is closed unread (a listener that gave up
 * waiting for the Request); the next one's Request is recorded. */
struct late_srv {
    int lfd, filler;
    struct sockaddr_in at;
    int closed_unread, requests;
    uint8_t rev;
    pthread_t th;
};

static void *late_srv_main(void *arg)
{
    struct late_srv *s = arg;
    uint8_t b[SWP_MPA_RR_MAX_LEN];

    usleep(200000);                 /* the initiator's SYN meets a full queue */
    close(accept(s->lfd, NULL, NULL));      /* the filler, freeing the queue */
    for (;;) {
        int fd = accept(s->lfd, NULL, NULL);
        size_t got = 0;

        if (fd < 0)
            return NULL;
        if (!s->closed_unread) {
            s->closed_unread = 1;
            close(fd);
            continue;
        }
        while (got < 20) {
            ssize_t r = recv(fd, b + got, 20 - got, 0);
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        if (got == 20 && memcmp(b, SWP_MPA_KEY_REQ, 16) == 0) {
            s->rev = b[17];
            s->requests++;
        }
        pause();                    /* silent: the test ends it */
    }
}

TEST(late_request_retried_at_the_same_revision)
{
    struct env e;
    struct late_srv s;
    struct siwarp_conn_param p;
    struct siwarp_qp_attr a;
    socklen_t sl = sizeof(s.at);

    memset(&s, 0, sizeof(s));
    s.at = loopback();
    s.lfd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT(s.lfd >= 0);
    ASSERT_OK(bind(s.lfd, (struct sockaddr *)&s.at, sizeof(s.at)));
    ASSERT_OK(listen(s.lfd, 0));
    ASSERT_OK(getsockname(s.lfd, (struct sockaddr *)&s.at, &sl));
    s.filler = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_OK(connect(s.filler, (struct sockaddr *)&s.at, sizeof(s.at)));

    env_init(&e);
    siwarp_conn_param_default(&p);
    p.timeout_ms = 1000;            /* late: the Request leaves after 500 ms */
    p.reply_wait_ms = 2000;
    ASSERT_OK(siwarp_connect(e.qp, (struct sockaddr *)&s.at, sizeof(s.at), &p));
    ASSERT_OK(pthread_create(&s.th, NULL, late_srv_main, &s));
    usleep(1500000);                /* the initiator is away: no progress */
    progress_for(e.ctx, 1000);
    ASSERT_EQ(s.closed_unread, 1);
    ASSERT_EQ(s.requests, 1);
    ASSERT_EQ(s.rev, 2);            /* cm_fallback alone would have sent rev 1 */
    ASSERT_EQ(qp_state(e.qp, &a), SIWARP_QPS_CONNECTING);
    pthread_cancel(s.th);
    ASSERT_OK(pthread_join(s.th, NULL));
    close(s.filler);
    close(s.lfd);
    env_fini(&e);
}

SWP_TEST_MAIN()
