/*
 * test_verify_first.c - siwarp_qp_verify_first_send: a QP that checks the
 * peer's first Send before it takes anything else.  Two software QPs over a
 * socketpair (qp[0] the initiator, qp[1] the verifying responder): a good
 * token lets the data behind it through without using a receive WQE; a bad
 * token, a Write or a Read before the token, a long or segmented first
 * Send, and silence each fail the QP with nothing placed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "swp.h"

#define ACC_ALL (SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_READ)
#define TOKEN "open sesame, 32 octets of proof"     /* 32 with the NUL */
#define BUF 4096

struct vpair {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq[2];
    struct siwarp_qp *qp[2];
    struct siwarp_mr *mr[2];
    uint8_t buf[2][BUF];           /* [0] source, [1] target region */
    int calls;                     /* verifier calls */
    uint32_t last_len;
};

static int verifier(void *arg, struct siwarp_qp *qp, const void *data, uint32_t len)
{
    struct vpair *p = arg;

    p->calls++;
    p->last_len = len;
    ASSERT(qp == p->qp[1]);
    return len == sizeof(TOKEN) && 0 == memcmp(data, TOKEN, sizeof(TOKEN)) ? 0 : -1;
}

static void setup(struct vpair *p, uint32_t max_len, int timeout_ms)
{
    struct siwarp_qp_init_attr a = { 0 };
    struct swp_nego n;
    int fd[2];

    memset(p, 0, sizeof(*p));
    ASSERT_OK(siwarp_ctx_create(&p->ctx));
    ASSERT_OK(siwarp_alloc_pd(p->ctx, &p->pd));
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(siwarp_create_cq(p->ctx, 64, &p->cq[i]));
        a.send_cq = a.recv_cq = p->cq[i];
        a.max_send_wr = a.max_recv_wr = 16;
        a.max_sge = 1;
        a.max_inline = 64;
        ASSERT_OK(siwarp_create_qp(p->pd, &a, &p->qp[i]));
        ASSERT_OK(siwarp_reg_mr(p->pd, p->buf[i], BUF, ACC_ALL, &p->mr[i]));
    }
    ASSERT_OK(siwarp_qp_verify_first_send(p->qp[1], verifier, p, max_len, timeout_ms));
    ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd));
    memset(&n, 0, sizeof(n));
    n.mpa_rev = 2;
    n.crc = true;
    n.ird = n.ord = 16;
    n.mulpdu = 65000;
    n.max_rx_ulpdu = 65535;
    n.initiator = true;
    ASSERT_OK(swp_qp_attach_fd(p->qp[0], fd[0], &n));
    n.initiator = false;
    ASSERT_OK(swp_qp_attach_fd(p->qp[1], fd[1], &n));
    memset(p->buf[1], 0xee, BUF);
}

static void teardown(struct vpair *p)
{
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(siwarp_destroy_qp(p->qp[i]));
        ASSERT_OK(siwarp_dereg_mr(p->mr[i]));
        ASSERT_OK(siwarp_destroy_cq(p->cq[i]));
    }
    ASSERT_OK(siwarp_dealloc_pd(p->pd));
    siwarp_ctx_destroy(p->ctx);
}

static void post_send(struct vpair *p, const void *data, uint32_t len)
{
    struct siwarp_sge sge = { .addr = (void *)data, .length = len, .lkey = 0 };
    struct siwarp_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
                                 .opcode = SIWARP_WR_SEND,
                                 .send_flags = SIWARP_SEND_INLINE }, *bad;
    ASSERT_OK(siwarp_post_send(p->qp[0], &wr, &bad));
}

static void post_rdma(struct vpair *p, enum siwarp_wr_opcode op, uint32_t len)
{
    struct siwarp_sge sge = { .addr = p->buf[0], .length = len,
                              .lkey = siwarp_mr_stag(p->mr[0]) };
    struct siwarp_send_wr wr = { .wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = op }, *bad;

    wr.rdma.remote_addr = (uintptr_t)p->buf[1];
    wr.rdma.rkey = siwarp_mr_stag(p->mr[1]);
    ASSERT_OK(siwarp_post_send(p->qp[0], &wr, &bad));
}

static void post_recv(struct vpair *p)
{
    struct siwarp_sge sge = { .addr = p->buf[1], .length = BUF,
                              .lkey = siwarp_mr_stag(p->mr[1]) };
    struct siwarp_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;
    ASSERT_OK(siwarp_post_recv(p->qp[1], &wr, &bad));
}

static enum siwarp_qp_state qp1_state(struct vpair *p, struct siwarp_qp_attr *attr)
{
    ASSERT_OK(siwarp_query_qp(p->qp[1], attr));
    return attr->state;
}

/* Progress until qp[1] leaves RTS or ms pass. */
static void run_until_error(struct vpair *p, int ms)
{
    struct timespec t0, t;
    struct siwarp_qp_attr attr;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        siwarp_progress(p->ctx);
        if (qp1_state(p, &attr) != SIWARP_QPS_RTS)
            return;
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

static void expect_failed(struct vpair *p, int err)
{
    struct siwarp_qp_attr attr;
    enum siwarp_qp_state s = qp1_state(p, &attr);

    ASSERT(s == SIWARP_QPS_ERROR || s == SIWARP_QPS_TERMINATE);
    ASSERT_EQ(attr.error, err);
    for (int i = 0; i < BUF; i++)       /* nothing placed */
        ASSERT_EQ(p->buf[1][i], 0xee);
}

/* qp[1] refused a segment before any token: the verifier never ran */
static void refused_unverified(struct vpair *p)
{
    run_until_error(p, 2000);
    ASSERT_EQ(p->calls, 0);
    expect_failed(p, -EPROTO);
}

TEST(good_token_then_data)
{
    struct vpair p;
    struct siwarp_wc wc;
    const char msg[] = "the first real message";
    int n = 0;

    setup(&p, 64, 0);
    post_recv(&p);
    post_send(&p, TOKEN, sizeof(TOKEN));
    post_send(&p, msg, sizeof(msg));
    for (int i = 0; i < 1000 && n == 0; i++)
        n = siwarp_poll_cq(p.cq[1], 1, &wc);
    ASSERT_EQ(n, 1);
    ASSERT_EQ(p.calls, 1);
    ASSERT_EQ(p.last_len, sizeof(TOKEN));
    /* the token took no WQE: the one posted holds the data */
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(wc.wr_id, 7);
    ASSERT_EQ(wc.byte_len, sizeof(msg));
    ASSERT_MEM_EQ(p.buf[1], msg, sizeof(msg));
    teardown(&p);
}

TEST(bad_token_places_nothing)
{
    struct vpair p;
    struct siwarp_qp_attr attr;
    const char msg[] = "must never land";

    setup(&p, 64, 0);
    post_recv(&p);
    post_send(&p, "a stranger's 32 octets of guess", 32);
    post_send(&p, msg, sizeof(msg));
    run_until_error(&p, 2000);
    ASSERT_EQ(p.calls, 1);
    expect_failed(&p, -EACCES);
    /* the initiator hears why: a Terminate, remote protection */
    for (int i = 0; i < 1000; i++)
        siwarp_progress(p.ctx);
    ASSERT_OK(siwarp_query_qp(p.qp[0], &attr));
    ASSERT(attr.term_recv != 0);
    teardown(&p);
}

TEST(write_before_token_refused)
{
    struct vpair p;

    setup(&p, 64, 0);
    memset(p.buf[0], 0x11, BUF);
    post_rdma(&p, SIWARP_WR_WRITE, 512);
    post_send(&p, TOKEN, sizeof(TOKEN));
    refused_unverified(&p);
    teardown(&p);
}

TEST(read_before_token_refused)
{
    struct vpair p;

    setup(&p, 64, 0);
    memset(p.buf[0], 0x11, BUF);
    post_rdma(&p, SIWARP_WR_READ, 512);
    refused_unverified(&p);
    /* and nothing of the target came back into the requester's buffer */
    for (int i = 0; i < 512; i++)
        ASSERT_EQ(p.buf[0][i], 0x11);
    teardown(&p);
}

TEST(long_first_send_refused)
{
    struct vpair p;
    static uint8_t big[48];

    setup(&p, 16, 0);
    post_recv(&p);
    memset(big, 0x33, sizeof(big));
    post_send(&p, big, sizeof(big));
    refused_unverified(&p);
    teardown(&p);
}

TEST(silence_times_out)
{
    struct vpair p;

    setup(&p, 64, 150);
    run_until_error(&p, 3000);
    expect_failed(&p, -ETIMEDOUT);
    teardown(&p);
}

TEST(arguments)
{
    struct vpair p;

    setup(&p, 64, 0);
    /* already connected, and already armed */
    ASSERT_EQ(siwarp_qp_verify_first_send(p.qp[1], verifier, &p, 64, 0), -EINVAL);
    ASSERT_EQ(siwarp_qp_verify_first_send(p.qp[0], verifier, &p, 64, 0), -EINVAL);
    ASSERT_EQ(siwarp_qp_verify_first_send(NULL, verifier, &p, 64, 0), -EINVAL);
    ASSERT_EQ(siwarp_qp_verify_first_send(p.qp[0], NULL, &p, 64, 0), -EINVAL);
    ASSERT_EQ(siwarp_qp_verify_first_send(p.qp[0], verifier, &p, 0, 0), -EINVAL);
    ASSERT_EQ(siwarp_qp_verify_first_send(p.qp[0], verifier, &p, SIWARP_VERIFY_MAX_LEN + 1, 0),
              -EINVAL);
    teardown(&p);
}

SWP_TEST_MAIN()
