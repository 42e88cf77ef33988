/*
 * test_idle_wait.c - siwarp_ctx_set_idle_wait (progress.c): a busy poller
 * sleeps only while a transfer waits on the kernel (or, quiet, whenever it
 * has nothing to do), and a socket becoming ready ends the sleep at once.  Two contexts joined by a socketpair; the
 * peer runs in a thread that starts late, so the first side has to wait.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "swp.h"

#define ACC_ALL (SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_READ)
#define BIG     (8u << 20)

struct side {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
    uint8_t *buf;
    struct siwarp_mr *mr;
};

struct link {
    struct side s[2];
    pthread_t peer;
    unsigned peer_delay_ms;
    volatile int stop;
};

static void side_make(struct side *s, int fd, bool initiator)
{
    struct siwarp_qp_init_attr a = { 0 };
    struct swp_nego n = { 0 };

    ASSERT_OK(siwarp_ctx_create(&s->ctx));
    ASSERT_OK(siwarp_alloc_pd(s->ctx, &s->pd));
    ASSERT_OK(siwarp_create_cq(s->ctx, 256, &s->cq));
    a.send_cq = a.recv_cq = s->cq;
    a.max_send_wr = a.max_recv_wr = 16;
    a.max_sge = 1;
    ASSERT_OK(siwarp_create_qp(s->pd, &a, &s->qp));
    s->buf = calloc(1, BIG);
    ASSERT(s->buf);
    ASSERT_OK(siwarp_reg_mr(s->pd, s->buf, BIG, ACC_ALL, &s->mr));
    n.mpa_rev = 2;
    n.crc = true;
    n.ird = n.ord = 4;
    n.mulpdu = 65000;
    n.max_rx_ulpdu = 65535;
    n.initiator = initiator;
    ASSERT_OK(swp_qp_attach_fd(s->qp, fd, &n));
}

static void side_free(struct side *s)
{
    ASSERT_OK(siwarp_destroy_qp(s->qp));
    ASSERT_OK(siwarp_dereg_mr(s->mr));
    ASSERT_OK(siwarp_destroy_cq(s->cq));
    ASSERT_OK(siwarp_dealloc_pd(s->pd));
    siwarp_ctx_destroy(s->ctx);
    free(s->buf);
}

/* Release both sides (the peer thread stopped). */
static void link_free(struct link *l)
{
    side_free(&l->s[0]);
    side_free(&l->s[1]);
}

static void link_make(struct link *l)
{
    int fd[2];

    memset(l, 0, sizeof(*l));
    ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd));
    side_make(&l->s[0], fd[0], true);
    side_make(&l->s[1], fd[1], false);
}

/* The peer: idle for peer_delay_ms (its socket fills or its answer is
 * late), then a plain busy poller until told to stop. */
static void *peer_main(void *arg)
{
    struct link *l = arg;
    struct timespec d = { .tv_sec = l->peer_delay_ms / 1000,
                          .tv_nsec = (long)(l->peer_delay_ms % 1000) * 1000000L };

    nanosleep(&d, NULL);
    while (!l->stop)
        siwarp_progress(l->s[1].ctx);
    return NULL;
}

static void peer_start(struct link *l, unsigned delay_ms)
{
    l->peer_delay_ms = delay_ms;
    ASSERT_OK(pthread_create(&l->peer, NULL, peer_main, l));
}

static void peer_stop(struct link *l)
{
    l->stop = 1;
    pthread_join(l->peer, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Busy-poll side 0's CQ (as an MPI progress loop does) for one completion. */
static struct siwarp_wc busy_poll(struct link *l)
{
    struct siwarp_wc wc;
    int n;

    while ((n = siwarp_poll_cq(l->s[0].cq, 1, &wc)) == 0)
        ;
    ASSERT_EQ(n, 1);
    return wc;
}

static void run_op(enum siwarp_wr_opcode op)
{
    struct link l;
    struct side *a, *b;
    struct siwarp_sge sge;
    struct siwarp_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1, .opcode = op,
                                 .send_flags = SIWARP_SEND_SIGNALED };
    struct siwarp_wc wc;
    double t0;

    link_make(&l);
    a = &l.s[0];
    b = &l.s[1];
    for (uint32_t i = 0; i < BIG; i++)
        (op == SIWARP_WR_READ ? b : a)->buf[i] = (uint8_t)(i * 7 + (i >> 13));
    sge = (struct siwarp_sge){ a->buf, BIG, siwarp_mr_stag(a->mr) };
    wr.rdma.remote_addr = (uintptr_t)b->buf;
    wr.rdma.rkey = siwarp_mr_stag(b->mr);
    /* busy polls first, as a running MPI job has made: the fast path
     * parks the socket out of the epoll set (progress.c), and the sleep
     * must put it back, or nothing could wake it */
    for (int i = 0; i < 200; i++)
        ASSERT(siwarp_progress(a->ctx) >= 0);
    ASSERT_EQ(a->ctx->parked, 1);
    /* spin 0, sleep up to 10 s: only a socket becoming ready can end the
     * sleep in time, so a finish well under 10 s proves the wake-up */
    ASSERT_OK(siwarp_ctx_set_idle_wait(a->ctx, 0, 10000000));
    peer_start(&l, 100);
    t0 = now_s();
    ASSERT_OK(siwarp_post_send(a->qp, &wr, NULL));
    wc = busy_poll(&l);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    if (op == SIWARP_WR_WRITE) {
        /* a Write completes once written to the socket; a Read behind it
         * completes only after the peer placed it (RFC 5040 5.5 ordering) */
        uint8_t one;
        struct siwarp_mr *m1;
        ASSERT_OK(siwarp_reg_mr(a->pd, &one, 1, ACC_ALL, &m1));
        sge = (struct siwarp_sge){ &one, 1, siwarp_mr_stag(m1) };
        wr.opcode = SIWARP_WR_READ;
        ASSERT_OK(siwarp_post_send(a->qp, &wr, NULL));
        wc = busy_poll(&l);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        siwarp_dereg_mr(m1);
    }
    double took = now_s() - t0;
    peer_stop(&l);
    ASSERT_MEM_EQ(a->buf, b->buf, BIG);
    ASSERT(a->ctx->idle_sleeps >= 1);   /* it did sleep while the peer was away */
    ASSERT(took < 5.0);
    link_free(&l);
}

TEST(read_requester_sleeps_and_wakes_on_the_response) { run_op(SIWARP_WR_READ); }
TEST(blocked_writer_sleeps_and_wakes_on_socket_space) { run_op(SIWARP_WR_WRITE); }

/* Nothing in flight: a quiet peer must find us spinning, never asleep. */
TEST(quiet_connection_never_sleeps)
{
    struct link l;

    link_make(&l);
    ASSERT_OK(siwarp_ctx_set_idle_wait(l.s[0].ctx, 0, 100000));
    for (int i = 0; i < 50; i++)
        ASSERT(siwarp_progress(l.s[0].ctx) >= 0);
    ASSERT_EQ(l.s[0].ctx->idle_sleeps, 0);
    link_free(&l);
}

/* The peer of the quiet case: away for peer_delay_ms, then one Send and a
 * busy poll until told to stop. */
static void *late_sender_main(void *arg)
{
    struct link *l = arg;
    struct timespec d = { .tv_sec = 0, .tv_nsec = (long)l->peer_delay_ms * 1000000L };
    struct siwarp_sge sge = { l->s[1].buf, 64, siwarp_mr_stag(l->s[1].mr) };
    struct siwarp_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1,
                                 .opcode = SIWARP_WR_SEND };

    nanosleep(&d, NULL);
    ASSERT_OK(siwarp_post_send(l->s[1].qp, &wr, NULL));
    while (!l->stop)
        siwarp_progress(l->s[1].ctx);
    return NULL;
}

/* siwarp_ctx_set_idle_quiet: nothing in flight, and still the poller
 * sleeps (a shared core's back-off); the message it waits for wakes it
 * long before its 10 s bound. */
TEST(quiet_mode_sleeps_with_nothing_in_flight_and_a_message_wakes_it)
{
    struct link l;
    struct siwarp_sge sge;
    struct siwarp_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
    struct siwarp_wc wc;
    double t0;

    link_make(&l);
    sge = (struct siwarp_sge){ l.s[0].buf, 64, siwarp_mr_stag(l.s[0].mr) };
    ASSERT_OK(siwarp_post_recv(l.s[0].qp, &rwr, NULL));
    ASSERT_OK(siwarp_ctx_set_idle_wait(l.s[0].ctx, 0, 10000000));
    ASSERT_OK(siwarp_ctx_set_idle_quiet(l.s[0].ctx, true));
    l.peer_delay_ms = 50;
    t0 = now_s();
    ASSERT_OK(pthread_create(&l.peer, NULL, late_sender_main, &l));
    wc = busy_poll(&l);
    peer_stop(&l);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(wc.wr_id, 1);
    ASSERT(l.s[0].ctx->idle_sleeps >= 1);
    ASSERT(now_s() - t0 < 5.0);
    ASSERT_EQ(siwarp_ctx_set_idle_quiet(NULL, true), -EINVAL);
    link_free(&l);
}

/* Off by default: a context nobody configured spins as before. */
TEST(default_is_off)
{
    struct link l;
    struct siwarp_sge sge;
    struct siwarp_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
                                 .opcode = SIWARP_WR_READ, .send_flags = SIWARP_SEND_SIGNALED };

    link_make(&l);
    sge = (struct siwarp_sge){ l.s[0].buf, 4096, siwarp_mr_stag(l.s[0].mr) };
    wr.rdma.remote_addr = (uintptr_t)l.s[1].buf;
    wr.rdma.rkey = siwarp_mr_stag(l.s[1].mr);
    peer_start(&l, 50);
    ASSERT_OK(siwarp_post_send(l.s[0].qp, &wr, NULL));
    (void)busy_poll(&l);
    peer_stop(&l);
    ASSERT_EQ(l.s[0].ctx->idle_sleeps, 0);
    link_free(&l);
}

TEST(bad_arguments)
{
    struct siwarp_ctx *ctx;

    ASSERT_EQ(siwarp_ctx_set_idle_wait(NULL, 0, 100), -EINVAL);
    ASSERT_OK(siwarp_ctx_create(&ctx));
    ASSERT_EQ(siwarp_ctx_set_idle_wait(ctx, 0, 60000001), -EINVAL);
    ASSERT_OK(siwarp_ctx_set_idle_wait(ctx, 20, 200));
    ASSERT_OK(siwarp_ctx_set_idle_wait(ctx, 20, 0));
    siwarp_ctx_destroy(ctx);
}

SWP_TEST_MAIN()
