/*
 * test_peer_close.c - a peer's orderly close is reported as a close.  A
 * QP on one end of a loopback TCP connection, a raw socket on the other
 * that closes (FIN).  Reading the end of stream is a clean close; so is a
 * write of ours that reaches the closed socket and draws its kernel's
 * reset: the error hides the FIN behind it, but the peer reset nothing.
 * A real reset (SO_LINGER 0) still says so.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "qp_pair.h"
#include "swp.h"

struct one {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
    int raw;
};

static void setup(struct one *o)
{
    struct siwarp_qp_init_attr a = { 0 };
    struct swp_nego n;
    int fd[2];

    memset(o, 0, sizeof(*o));
    ASSERT_OK(siwarp_ctx_create(&o->ctx));
    ASSERT_OK(siwarp_alloc_pd(o->ctx, &o->pd));
    ASSERT_OK(siwarp_create_cq(o->ctx, 64, &o->cq));
    a.send_cq = a.recv_cq = o->cq;
    a.max_send_wr = a.max_recv_wr = 8;
    a.max_sge = 1;
    a.max_inline = 64;
    ASSERT_OK(siwarp_create_qp(o->pd, &a, &o->qp));
    swp_test_tcp_pair(fd);
    swp_test_nego(&n, &(struct swp_test_pair_opts){ .ird_ord = 4, .mulpdu = 16000, .crc = true },
                  true);
    ASSERT_OK(swp_qp_attach_fd(o->qp, fd[0], &n));
    o->raw = fd[1];
}

static void teardown(struct one *o)
{
    ASSERT_OK(siwarp_destroy_qp(o->qp));
    ASSERT_OK(siwarp_destroy_cq(o->cq));
    ASSERT_OK(siwarp_dealloc_pd(o->pd));
    siwarp_ctx_destroy(o->ctx);
}

static void post_inline(struct one *o)
{
    static const char msg[] = "after the peer left";
    struct siwarp_sge s = { (void *)msg, sizeof(msg), 0 };
    struct siwarp_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
                                .opcode = SIWARP_WR_SEND, .send_flags = SIWARP_SEND_INLINE }, *bad;
    (void)siwarp_post_send(o->qp, &w, &bad);
}

static void until_error(struct one *o, struct siwarp_qp_attr *at)
{
    for (int i = 0; i < 2000; i++) {
        siwarp_wait(o->ctx, 1);
        ASSERT_OK(siwarp_query_qp(o->qp, at));
        if (at->state == SIWARP_QPS_ERROR)
            return;
    }
    FAIL("the QP never left %s", siwarp_qp_state_str(at->state));
}

/* the kernel has the raw end's reset for our socket (or it is gone) */
static void until_reset_back(struct one *o)
{
    struct pollfd p = { siwarp_qp_fd(o->qp), POLLIN, 0 };

    for (int i = 0; i < 100; i++) {
        if (poll(&p, 1, 10) > 0 && (p.revents & (POLLERR | POLLHUP)))
            return;
    }
}

TEST(fin_read_is_a_close)
{
    struct one o;
    struct siwarp_qp_attr at;

    setup(&o);
    close(o.raw);
    until_error(&o, &at);
    ASSERT_EQ(at.error, 0);
    ASSERT(strstr(at.error_str, "peer closed the connection") != NULL);
    teardown(&o);
}

TEST(write_after_peer_close_is_a_close)
{
    struct one o;
    struct siwarp_qp_attr at;

    setup(&o);
    close(o.raw);
    /* the FIN is in our socket, unread: the first Send goes out and the
     * closed end answers it with a reset; the second one meets it */
    post_inline(&o);
    until_reset_back(&o);
    post_inline(&o);
    until_error(&o, &at);
    if (strstr(at.error_str, "reset") || strstr(at.error_str, "lost"))
        FAIL("an orderly close reported as \"%s\"", at.error_str);
    ASSERT(strstr(at.error_str, "peer closed the connection") != NULL);
    teardown(&o);
}

TEST(real_reset_is_a_reset)
{
    struct one o;
    struct siwarp_qp_attr at;
    struct linger l = { 1, 0 };

    setup(&o);
    ASSERT_OK(setsockopt(o.raw, SOL_SOCKET, SO_LINGER, &l, sizeof(l)));
    close(o.raw);           /* an RST, no FIN */
    until_error(&o, &at);
    ASSERT_EQ(at.error, -ECONNRESET);
    ASSERT(strstr(at.error_str, "reset") != NULL);
    teardown(&o);
}

SWP_TEST_MAIN()
