/*
 * test_park.c - busy-polled sockets leave the context's epoll set
 * (progress.c, "parking") and come back whenever something relies on
 * epoll: a sleep, or a context fd handed out.  Whether a socket is in the
 * set is read from the kernel (/proc/self/fdinfo of the epoll fd), not
 * from the library's own bookkeeping.  Two QPs over a socketpair, no MPA
 * setup (as test_datapath.c).
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "qp_pair.h"
#include "swp.h"

#define ACC_ALL (SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_READ)

/* Is fd registered in the epoll set epfd?  fdinfo lists one "tfd:" line
 * per registered fd. */
static bool in_set(int epfd, int fd)
{
    char path[64], line[256];
    bool found = false;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
    f = fopen(path, "r");
    ASSERT(f != NULL);
    while (fgets(line, sizeof(line), f)) {
        int tfd;
        if (sscanf(line, "tfd: %d", &tfd) == 1 && tfd == fd)
            found = true;
    }
    fclose(f);
    return found;
}

static void spin(struct swp_test_pair *p, int n)
{
    for (int i = 0; i < n; i++)
        ASSERT(siwarp_progress(p->ctx) >= 0);
}

struct msg {
    uint8_t s[32], r[32];
    struct siwarp_mr *ms, *mr;
};

static void msg_setup(struct swp_test_pair *p, struct msg *m)
{
    memset(m, 0, sizeof(*m));
    ASSERT_OK(siwarp_reg_mr(p->pd, m->s, sizeof(m->s), ACC_ALL, &m->ms));
    ASSERT_OK(siwarp_reg_mr(p->pd, m->r, sizeof(m->r), ACC_ALL, &m->mr));
}

static void msg_teardown(struct msg *m)
{
    ASSERT_OK(siwarp_dereg_mr(m->ms));
    ASSERT_OK(siwarp_dereg_mr(m->mr));
}

/* qp[0] sends 32 bytes of value v to a receive posted on qp[1]. */
static void msg_post(struct swp_test_pair *p, struct msg *m, int v)
{
    struct siwarp_sge rs = { m->r, sizeof(m->r), siwarp_mr_stag(m->mr) };
    struct siwarp_recv_wr rw = { .wr_id = 100 + (uint64_t)v, .sg_list = &rs, .num_sge = 1 };
    struct siwarp_sge ss = { m->s, sizeof(m->s), siwarp_mr_stag(m->ms) };
    struct siwarp_send_wr sw = { .wr_id = (uint64_t)v, .sg_list = &ss, .num_sge = 1,
                                 .opcode = SIWARP_WR_SEND };

    memset(m->s, v, sizeof(m->s));
    ASSERT_OK(siwarp_post_recv(p->qp[1], &rw, NULL));
    ASSERT_OK(siwarp_post_send(p->qp[0], &sw, NULL));
}

static void msg_check(struct msg *m, const struct siwarp_wc *wc, int v)
{
    uint8_t want[32];

    ASSERT_EQ(wc->status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(wc->wr_id, 100 + (uint64_t)v);
    ASSERT_EQ(wc->byte_len, sizeof(want));
    memset(want, v, sizeof(want));
    ASSERT_MEM_EQ(m->r, want, sizeof(want));
}

static void pair_setup(struct swp_test_pair *p)
{
    const struct swp_test_pair_opts o = { .cqe = 64, .depth = 64, .ird_ord = 16,
                                          .mulpdu = 65000, .crc = true };
    swp_test_pair_setup(p, &o);
}

/* After a few hundred busy polls both QP sockets are out of the set (the
 * wake-up eventfd stays), and messages still flow through the fast path. */
TEST(busy_polled_sockets_leave_the_epoll_set)
{
    struct swp_test_pair p;
    struct siwarp_wc wc;
    struct msg m;
    int fd0, fd1;

    pair_setup(&p);
    msg_setup(&p, &m);
    fd0 = siwarp_qp_fd(p.qp[0]);
    fd1 = siwarp_qp_fd(p.qp[1]);
    ASSERT(in_set(p.ctx->epfd, fd0) && in_set(p.ctx->epfd, fd1));
    spin(&p, 200);
    ASSERT(!in_set(p.ctx->epfd, fd0));
    ASSERT(!in_set(p.ctx->epfd, fd1));
    ASSERT(in_set(p.ctx->epfd, p.ctx->kickfd));
    for (int v = 1; v <= 50; v++) {
        int n = 0;
        msg_post(&p, &m, v);
        for (int i = 0; i < 100000 && n == 0; i++)
            ASSERT((n = siwarp_poll_cq(p.cq[1], 1, &wc)) >= 0);
        ASSERT_EQ(n, 1);
        msg_check(&m, &wc, v);
    }
    ASSERT(!in_set(p.ctx->epfd, fd1));
    msg_teardown(&m);
    swp_test_pair_teardown(&p);
}

/* A blocking wait must not sleep in a set that lacks the sockets: with a
 * message already queued on qp[1]'s socket, siwarp_cq_wait returns it at
 * once, and the sockets are back in the set. */
TEST(a_sleep_puts_the_sockets_back)
{
    struct swp_test_pair p;
    struct siwarp_wc wc;
    struct msg m;

    pair_setup(&p);
    msg_setup(&p, &m);
    spin(&p, 200);
    ASSERT(!in_set(p.ctx->epfd, siwarp_qp_fd(p.qp[1])));
    msg_post(&p, &m, 7);
    ASSERT_OK(siwarp_cq_wait(p.cq[1], 3000));
    ASSERT_EQ(siwarp_poll_cq(p.cq[1], 1, &wc), 1);
    msg_check(&m, &wc, 7);
    ASSERT(in_set(p.ctx->epfd, siwarp_qp_fd(p.qp[1])));
    msg_teardown(&m);
    swp_test_pair_teardown(&p);
}

/* Whoever asks for the fd may poll it without calling the library: the
 * sockets go back at once and never leave again, and poll() on the fd
 * sees a message arrive. */
TEST(a_handed_out_fd_sees_every_socket)
{
    struct swp_test_pair p;
    struct pollfd pf;
    struct siwarp_wc wc;
    struct msg m;
    int n = 0;

    pair_setup(&p);
    msg_setup(&p, &m);
    spin(&p, 200);
    ASSERT(!in_set(p.ctx->epfd, siwarp_qp_fd(p.qp[1])));
    pf.fd = siwarp_cq_fd(p.cq[1]);
    pf.events = POLLIN;
    ASSERT_EQ(pf.fd, p.ctx->epfd);
    ASSERT(in_set(pf.fd, siwarp_qp_fd(p.qp[0])) && in_set(pf.fd, siwarp_qp_fd(p.qp[1])));
    spin(&p, 200);
    ASSERT(in_set(pf.fd, siwarp_qp_fd(p.qp[1])));
    msg_post(&p, &m, 9);
    ASSERT_EQ(poll(&pf, 1, 3000), 1);
    for (int i = 0; i < 100000 && n == 0; i++)
        ASSERT((n = siwarp_poll_cq(p.cq[1], 1, &wc)) >= 0);
    ASSERT_EQ(n, 1);
    msg_check(&m, &wc, 9);
    msg_teardown(&m);
    swp_test_pair_teardown(&p);
}

/* A thread asleep in the set (a progress thread) must keep its sockets:
 * another thread busy-polling meanwhile does not park them, so a message
 * nobody else reads wakes the sleeper. */
TEST(no_parking_under_a_sleeping_thread)
{
    struct swp_test_pair p;
    struct swp_test_sleeper s;
    struct siwarp_wc wc;
    struct msg m;

    pair_setup(&p);
    msg_setup(&p, &m);
    spin(&p, 200);
    swp_test_sleeper_start(&s, &p, 10000);
    spin(&p, 200);              /* a busy poller on the same context */
    ASSERT(in_set(p.ctx->epfd, siwarp_qp_fd(p.qp[1])));
    msg_post(&p, &m, 5);        /* written at once; nobody polls after it */
    ASSERT_OK(swp_test_sleeper_join(&s));   /* woken by the arrival, not timed out */
    ASSERT_EQ(siwarp_poll_cq(p.cq[1], 1, &wc), 1);
    msg_check(&m, &wc, 5);
    msg_teardown(&m);
    swp_test_pair_teardown(&p);
}

/* A client in a context of its own connects to a listener of p's context
 * and progresses until its MPA Request is on the wire: the request then
 * waits in the listener's socket. */
struct client {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
};

static void client_connect(struct client *c, const struct sockaddr_storage *ss)
{
    struct siwarp_qp_init_attr a;
    struct timespec d = { 0, 1000000L };

    memset(&a, 0, sizeof(a));
    ASSERT_OK(siwarp_ctx_create(&c->ctx));
    ASSERT_OK(siwarp_alloc_pd(c->ctx, &c->pd));
    ASSERT_OK(siwarp_create_cq(c->ctx, 16, &c->cq));
    a.send_cq = a.recv_cq = c->cq;
    a.max_send_wr = a.max_recv_wr = 8;
    a.max_sge = 1;
    ASSERT_OK(siwarp_create_qp(c->pd, &a, &c->qp));
    ASSERT_OK(siwarp_connect(c->qp, (const struct sockaddr *)ss, sizeof(struct sockaddr_in), NULL));
    for (int i = 0; i < 50; i++) {      /* the Request goes out once connected */
        ASSERT(siwarp_progress(c->ctx) >= 0);
        nanosleep(&d, NULL);
    }
}

static void client_teardown(struct client *c)
{
    ASSERT_OK(siwarp_destroy_qp(c->qp));
    ASSERT_OK(siwarp_destroy_cq(c->cq));
    ASSERT_OK(siwarp_dealloc_pd(c->pd));
    siwarp_ctx_destroy(c->ctx);
}

/* With a few QPs connected, siwarp_progress reads their sockets directly
 * and looks at listeners only every 64th pass.  A caller asking about a
 * listener must not depend on that: siwarp_get_conn_request and
 * siwarp_progress_all look at once (the BTL's first send to a peer that
 * asked first relies on it). */
TEST(listeners_are_seen_beside_the_busy_poll_fast_path)
{
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    struct sockaddr_storage ss;
    struct siwarp_listener *l;
    struct siwarp_conn_req *req;
    struct swp_test_pair p;
    struct client c1, c2;

    pair_setup(&p);
    spin(&p, 200);
    ASSERT_OK(siwarp_listen(p.ctx, (struct sockaddr *)&sin, sizeof(sin), NULL, &l));
    ASSERT_OK(siwarp_listener_addr(l, &ss));
    spin(&p, 200);              /* the listener's socket joins the fast path's set */

    client_connect(&c1, &ss);
    p.ctx->polls = 1;           /* the fast path's periodic epoll pass is not due */
    ASSERT(siwarp_progress(p.ctx) >= 0);
    ASSERT_EQ(siwarp_take_conn_request(l, &req), -EAGAIN);  /* not looked at */
    p.ctx->polls = 1;
    ASSERT_OK(siwarp_get_conn_request(l, &req));
    ASSERT_OK(siwarp_reject(req, NULL, 0));

    client_connect(&c2, &ss);
    p.ctx->polls = 1;
    ASSERT(siwarp_progress_all(p.ctx) > 0);
    ASSERT_OK(siwarp_take_conn_request(l, &req));
    ASSERT_OK(siwarp_reject(req, NULL, 0));

    ASSERT_OK(siwarp_listener_destroy(l));
    client_teardown(&c1);
    client_teardown(&c2);
    swp_test_pair_teardown(&p);
}

SWP_TEST_MAIN()
