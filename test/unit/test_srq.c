/*
 * test_srq.c - shared receive queues.  Raw peers write hand-built FPDUs to
 * several QPs of one context that share an SRQ, so segments of different
 * QPs' messages can be interleaved at will.  Checked: WQEs go to QPs in
 * posting order, a message's later segments land in the WQE its first
 * segment took (RFC 5041 5.3), an empty SRQ at a new message is a
 * Terminate "no buffer available" (RFC 5041 7.2) that kills only that QP,
 * an error flushes only the WQE that QP held, and the API's refusals.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "swp.h"

#define NQP   3
#define NBUF  8
#define BUFSZ 4096

struct rig {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_srq *srq;
    struct siwarp_qp *qp[NQP];
    int raw[NQP];                  /* the test's end of each socketpair */
    uint32_t msn[NQP];             /* next Send MSN per raw peer */
    uint8_t *buf;                  /* NBUF receive buffers of BUFSZ */
    struct siwarp_mr *mr;
};

static void rig_setup(struct rig *r, uint32_t srq_max)
{
    struct siwarp_srq_init_attr sa = { .max_wr = srq_max, .max_sge = 2 };
    struct siwarp_qp_init_attr a = { 0 };
    struct swp_nego n;

    memset(r, 0, sizeof(*r));
    ASSERT_OK(siwarp_ctx_create(&r->ctx));
    ASSERT_OK(siwarp_alloc_pd(r->ctx, &r->pd));
    ASSERT_OK(siwarp_create_cq(r->ctx, 64, &r->cq));
    ASSERT_OK(siwarp_create_srq(r->pd, &sa, &r->srq));
    r->buf = calloc(NBUF, BUFSZ);
    ASSERT(r->buf);
    ASSERT_OK(siwarp_reg_mr(r->pd, r->buf, NBUF * BUFSZ, SIWARP_ACCESS_LOCAL_WRITE, &r->mr));
    a.send_cq = a.recv_cq = r->cq;
    a.max_send_wr = 8;
    a.max_sge = 1;
    a.srq = r->srq;
    memset(&n, 0, sizeof(n));
    n.mpa_rev = 2;
    n.crc = true;
    n.ird = n.ord = 4;
    n.mulpdu = 16384;
    n.max_rx_ulpdu = 16384;
    n.initiator = true;
    for (int i = 0; i < NQP; i++) {
        int sv[2];
        ASSERT_OK(siwarp_create_qp(r->pd, &a, &r->qp[i]));
        ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
        r->raw[i] = sv[1];
        r->msn[i] = 1;
        ASSERT_OK(swp_qp_attach_fd(r->qp[i], sv[0], &n));
    }
}

/* Release what rig_setup made (what the case destroyed itself is NULL). */
static void rig_teardown(struct rig *r)
{
    for (int i = 0; i < NQP; i++) {
        if (r->qp[i])
            ASSERT_OK(siwarp_destroy_qp(r->qp[i]));
        close(r->raw[i]);
    }
    if (r->srq)
        ASSERT_OK(siwarp_destroy_srq(r->srq));
    ASSERT_OK(siwarp_dereg_mr(r->mr));
    ASSERT_OK(siwarp_destroy_cq(r->cq));
    ASSERT_OK(siwarp_dealloc_pd(r->pd));
    siwarp_ctx_destroy(r->ctx);
    free(r->buf);
}

/* Post buffer k (of BUFSZ bytes) with wr_id 100 + k. */
static void post_buf(struct rig *r, int k)
{
    struct siwarp_sge s = { r->buf + (size_t)k * BUFSZ, BUFSZ, siwarp_mr_stag(r->mr) };
    struct siwarp_recv_wr wr = { .wr_id = 100 + (uint64_t)k, .sg_list = &s, .num_sge = 1 };
    ASSERT_OK(siwarp_post_srq_recv(r->srq, &wr, NULL));
}

/* One Send segment from raw peer q: len bytes of value `fill` at offset mo
 * of its current message; `last` ends the message (and its MSN). */
static void send_seg(struct rig *r, int q, uint32_t mo, uint32_t len, uint8_t fill, bool last)
{
    uint8_t f[2 + SWP_HDR_UNTAGGED + BUFSZ + 8];
    uint32_t h = swp_ddp_build_untagged(f + 2, SWP_OP_SEND, last, SWP_QN_SEND, r->msn[q], mo, 0);
    uint32_t ulen = h + len, pad = swp_mpa_pad(ulen), n;

    swp_put16(f, (uint16_t)ulen);
    memset(f + 2 + h, fill, len);
    memset(f + 2 + ulen, 0, pad);
    n = 2 + ulen + pad;
    swp_mpa_put_crc(f + n, swp_crc32c(0, f, n));
    n += 4;
    ASSERT_EQ(write(r->raw[q], f, n), (ssize_t)n);
    if (last)
        r->msn[q]++;
}

static struct siwarp_wc wait_wc(struct rig *r)
{
    struct siwarp_wc wc;
    for (int i = 0; i < 5000; i++) {
        if (siwarp_poll_cq(r->cq, 1, &wc) == 1)
            return wc;
        siwarp_wait(r->ctx, 2);
    }
    FAIL("no completion");
}

static void no_wc(struct rig *r)
{
    struct siwarp_wc wc;
    for (int i = 0; i < 20; i++)
        siwarp_wait(r->ctx, 1);
    ASSERT_EQ(siwarp_poll_cq(r->cq, 1, &wc), 0);
}

/* The QP left full operation: its last word on the SRQ. */
static void expect_last(struct rig *r, int q)
{
    struct siwarp_wc wc = wait_wc(r);
    ASSERT_EQ(wc.opcode, SIWARP_WC_SRQ_LAST);
    ASSERT_EQ(wc.status, SIWARP_WC_WR_FLUSH_ERR);
    ASSERT(wc.qp == r->qp[q]);
    ASSERT_EQ(wc.wr_id, 0);
}

static void expect_recv(struct rig *r, int q, uint64_t wr_id, uint32_t len)
{
    struct siwarp_wc wc = wait_wc(r);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, SIWARP_WC_RECV);
    ASSERT(wc.qp == r->qp[q]);
    ASSERT_EQ(wc.wr_id, wr_id);
    ASSERT_EQ(wc.byte_len, len);
}

static enum siwarp_qp_state qp_state(struct rig *r, int q, struct siwarp_qp_attr *at)
{
    ASSERT_OK(siwarp_query_qp(r->qp[q], at));
    return at->state;
}

static void wait_error(struct rig *r, int q, struct siwarp_qp_attr *at)
{
    for (int i = 0; i < 5000 && qp_state(r, q, at) != SIWARP_QPS_ERROR; i++)
        siwarp_wait(r->ctx, 2);
    ASSERT_EQ(at->state, SIWARP_QPS_ERROR);
}

static uint32_t srq_posted(struct rig *r)
{
    struct siwarp_srq_attr sa;
    ASSERT_OK(siwarp_query_srq(r->srq, &sa));
    return sa.posted;
}

/* Two QPs draw from one SRQ in the order their messages arrive, and each
 * completion names its QP. */
TEST(srq_shared_by_two_qps)
{
    struct rig r;
    rig_setup(&r, NBUF);
    for (int k = 0; k < 3; k++)
        post_buf(&r, k);
    send_seg(&r, 1, 0, 10, 0xb1, true);
    expect_recv(&r, 1, 100, 10);
    send_seg(&r, 0, 0, 20, 0xa1, true);
    expect_recv(&r, 0, 101, 20);
    send_seg(&r, 1, 0, 30, 0xb2, true);
    expect_recv(&r, 1, 102, 30);
    ASSERT_EQ(r.buf[0], 0xb1);
    ASSERT_EQ(r.buf[BUFSZ + 19], 0xa1);
    ASSERT_EQ(r.buf[BUFSZ + 20], 0);
    ASSERT_EQ(r.buf[2 * BUFSZ], 0xb2);
    ASSERT_EQ(srq_posted(&r), 0);
    struct siwarp_qp_attr at;
    ASSERT_EQ(qp_state(&r, 0, &at), SIWARP_QPS_RTS);
    ASSERT_EQ(at.srq_wqes, 1);
    ASSERT_EQ(qp_state(&r, 1, &at), SIWARP_QPS_RTS);
    ASSERT_EQ(at.srq_wqes, 2);
    rig_teardown(&r);
}

/* RFC 5041 5.3: QP 0's message starts, QP 1 takes the next WQE with a whole
 * message, then QP 0's second segment must land in QP 0's WQE, after its
 * first segment, and not in a WQE of its own. */
TEST(srq_multi_segment_stays_in_one_wqe)
{
    struct rig r;
    rig_setup(&r, NBUF);
    for (int k = 0; k < 3; k++)
        post_buf(&r, k);
    send_seg(&r, 0, 0, 100, 0xa1, false);
    send_seg(&r, 1, 0, 50, 0xb1, true);
    expect_recv(&r, 1, 101, 50);
    send_seg(&r, 2, 0, 7, 0xc1, true);
    expect_recv(&r, 2, 102, 7);
    send_seg(&r, 0, 100, 60, 0xa2, true);
    expect_recv(&r, 0, 100, 160);
    ASSERT_EQ(r.buf[99], 0xa1);
    ASSERT_EQ(r.buf[100], 0xa2);
    ASSERT_EQ(r.buf[159], 0xa2);
    ASSERT_EQ(r.buf[160], 0);
    ASSERT_EQ(r.buf[BUFSZ], 0xb1);
    ASSERT_EQ(r.buf[BUFSZ + 50], 0);
    for (int q = 0; q < NQP; q++) {
        struct siwarp_qp_attr at;
        ASSERT_EQ(qp_state(&r, q, &at), SIWARP_QPS_RTS);
    }
    rig_teardown(&r);
}

/* RFC 5041 7.2: a new message and no buffer is a DDP untagged-buffer error,
 * "invalid MSN - no buffer available"; only that QP dies and the SRQ keeps
 * serving the others. */
TEST(srq_empty_terminates_no_buf)
{
    struct rig r;
    struct siwarp_qp_attr at;
    uint8_t in[512];
    ssize_t got;
    uint32_t term = 0, want = SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED,
                                       SWP_DDP_EC_U_NO_BUF);
    rig_setup(&r, NBUF);
    send_seg(&r, 0, 0, 10, 0xa1, true);
    wait_error(&r, 0, &at);
    ASSERT_EQ(at.term_sent, want);
    ASSERT(strstr(at.error_str, "no buffer") != NULL);
    /* the Terminate on the wire carries the same code */
    struct pollfd pf = { r.raw[0], POLLIN, 0 };
    ASSERT(poll(&pf, 1, 2000) == 1);
    got = read(r.raw[0], in, sizeof(in));
    ASSERT(got > 2 + SWP_HDR_TERMINATE);
    ASSERT_EQ(swp_ctrl_opcode((const struct swp_ctrl *)(in + 2)), SWP_OP_TERMINATE);
    ASSERT_OK(swp_rdmap_parse_term(in + 2, swp_get16(in), &term));
    ASSERT_EQ(term, want);
    expect_last(&r, 0);
    post_buf(&r, 0);
    send_seg(&r, 1, 0, 10, 0xb1, true);
    expect_recv(&r, 1, 100, 10);
    ASSERT_EQ(qp_state(&r, 1, &at), SIWARP_QPS_RTS);
    rig_teardown(&r);
}

/* A QP that dies flushes the WQE its message had taken (to its own recv
 * CQ) and nothing else: the SRQ's other WQEs stay for the other QPs. */
TEST(srq_error_flushes_only_the_taken_wqe)
{
    struct rig r;
    struct siwarp_qp_attr at;
    struct siwarp_wc wc;
    rig_setup(&r, NBUF);
    for (int k = 0; k < 4; k++)
        post_buf(&r, k);
    send_seg(&r, 0, 0, 100, 0xa1, false);
    send_seg(&r, 0, 99, 10, 0xa2, true);      /* wrong MO: fatal */
    wait_error(&r, 0, &at);
    ASSERT_EQ(at.term_sent, SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED,
                                     SWP_DDP_EC_U_INV_MO));
    wc = wait_wc(&r);
    ASSERT_EQ(wc.status, SIWARP_WC_WR_FLUSH_ERR);
    ASSERT(wc.qp == r.qp[0]);
    ASSERT_EQ(wc.wr_id, 100);
    expect_last(&r, 0);
    no_wc(&r);
    ASSERT_EQ(srq_posted(&r), 3);
    send_seg(&r, 2, 0, 5, 0xc1, true);
    expect_recv(&r, 2, 101, 5);
    rig_teardown(&r);
}

/* A first segment with a bad MO takes no WQE from the SRQ. */
TEST(srq_bad_first_segment_takes_no_wqe)
{
    struct rig r;
    struct siwarp_qp_attr at;
    rig_setup(&r, NBUF);
    post_buf(&r, 0);
    send_seg(&r, 0, 8, 10, 0xa1, true);
    wait_error(&r, 0, &at);
    ASSERT_EQ(at.term_sent, SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED,
                                     SWP_DDP_EC_U_INV_MO));
    expect_last(&r, 0);
    no_wc(&r);
    ASSERT_EQ(srq_posted(&r), 1);
    ASSERT_EQ(at.srq_wqes, 0);
    rig_teardown(&r);
}

TEST(srq_destroy_with_qps_is_busy)
{
    struct rig r;
    rig_setup(&r, NBUF);
    ASSERT_EQ(siwarp_destroy_srq(r.srq), -EBUSY);
    ASSERT_EQ(siwarp_dealloc_pd(r.pd), -EBUSY);
    for (int q = 0; q < NQP; q++) {
        ASSERT_EQ(siwarp_destroy_srq(r.srq), -EBUSY);
        ASSERT_OK(siwarp_destroy_qp(r.qp[q]));
        r.qp[q] = NULL;
    }
    ASSERT_OK(siwarp_destroy_srq(r.srq));
    r.srq = NULL;
    rig_teardown(&r);
}

TEST(srq_qp_refuses_post_recv)
{
    struct rig r;
    struct siwarp_sge s;
    struct siwarp_recv_wr wr = { .wr_id = 1, .sg_list = &s, .num_sge = 1 };
    rig_setup(&r, NBUF);
    s = (struct siwarp_sge){ r.buf, BUFSZ, siwarp_mr_stag(r.mr) };
    ASSERT_EQ(siwarp_post_recv(r.qp[0], &wr, NULL), -EINVAL);
    rig_teardown(&r);
}

TEST(srq_other_pd_refused)
{
    struct rig r;
    struct siwarp_pd *pd2;
    struct siwarp_qp *qp;
    struct siwarp_qp_init_attr a = { 0 };
    rig_setup(&r, NBUF);
    ASSERT_OK(siwarp_alloc_pd(r.ctx, &pd2));
    a.send_cq = a.recv_cq = r.cq;
    a.max_send_wr = 4;
    a.srq = r.srq;
    ASSERT_EQ(siwarp_create_qp(pd2, &a, &qp), -EINVAL);
    ASSERT_OK(siwarp_dealloc_pd(pd2));
    rig_teardown(&r);
}

TEST(srq_post_checks)
{
    struct rig r;
    struct siwarp_sge s[3];
    struct siwarp_recv_wr wr = { .wr_id = 1, .sg_list = s, .num_sge = 3 };
    struct siwarp_recv_wr *bad = NULL;
    rig_setup(&r, 2);
    for (int i = 0; i < 3; i++)
        s[i] = (struct siwarp_sge){ r.buf, 16, siwarp_mr_stag(r.mr) };
    ASSERT_EQ(siwarp_post_srq_recv(r.srq, &wr, &bad), -EINVAL);   /* max_sge 2 */
    ASSERT(bad == &wr);
    wr.num_sge = 1;
    s[0].lkey ^= 0xff;                                            /* wrong key */
    ASSERT(siwarp_post_srq_recv(r.srq, &wr, NULL) < 0);
    ASSERT_EQ(srq_posted(&r), 0);
    rig_teardown(&r);
}

/* max_wr is a hard limit; growing keeps posted WQEs in their order. */
TEST(srq_full_then_resize_keeps_order)
{
    struct rig r;
    struct siwarp_sge s;
    struct siwarp_recv_wr wr = { .wr_id = 999, .sg_list = &s, .num_sge = 1 };
    struct siwarp_srq_attr sa;
    rig_setup(&r, 3);
    s = (struct siwarp_sge){ r.buf, BUFSZ, siwarp_mr_stag(r.mr) };
    for (int k = 0; k < 3; k++)
        post_buf(&r, k);
    ASSERT_EQ(siwarp_post_srq_recv(r.srq, &wr, NULL), -ENOMEM);
    send_seg(&r, 0, 0, 1, 1, true);        /* head moves: wrap-around on resize */
    expect_recv(&r, 0, 100, 1);
    post_buf(&r, 3);
    ASSERT_EQ(siwarp_resize_srq(r.srq, 2), -EINVAL);
    ASSERT_OK(siwarp_resize_srq(r.srq, 7));
    for (int k = 4; k < 8; k++)
        post_buf(&r, k);
    ASSERT_OK(siwarp_query_srq(r.srq, &sa));
    ASSERT_EQ(sa.max_wr, 7);
    ASSERT_EQ(sa.posted, 7);
    ASSERT_EQ(sa.qps, NQP);
    ASSERT_EQ(siwarp_post_srq_recv(r.srq, &wr, NULL), -ENOMEM);
    for (int k = 1; k < 8; k++) {
        send_seg(&r, k % NQP, 0, 2, (uint8_t)k, true);
        expect_recv(&r, k % NQP, 100 + (uint64_t)k, 2);
        ASSERT_EQ(r.buf[(size_t)k * BUFSZ], k);
    }
    rig_teardown(&r);
}

/* Messages to several QPs in one stream of progress calls share the
 * context's staging buffer: each must still be parsed from its own bytes. */
TEST(shared_staging_many_qps_one_progress)
{
    struct rig r;
    int got[NQP] = { 0 };
    rig_setup(&r, NBUF);
    for (int k = 0; k < NBUF; k++)
        post_buf(&r, k);
    for (int i = 0; i < 2; i++)
        for (int q = 0; q < NQP; q++)
            send_seg(&r, q, 0, 1000 + (uint32_t)q, (uint8_t)(0x10 * q + i), true);
    for (int i = 0; i < 2 * NQP; i++) {
        struct siwarp_wc wc = wait_wc(&r);
        int q = 0;
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        while (q < NQP && wc.qp != r.qp[q])
            q++;
        ASSERT(q < NQP);
        ASSERT_EQ(wc.byte_len, 1000 + q);
        ASSERT_EQ(r.buf[(wc.wr_id - 100) * BUFSZ + 999], 0x10 * q + got[q]);
        got[q]++;
    }
    rig_teardown(&r);
}

TEST(srq_refused_on_bad_attr)
{
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_srq *srq;
    struct siwarp_srq_init_attr sa = { .max_wr = 0, .max_sge = 1 };
    ASSERT_OK(siwarp_ctx_create(&ctx));
    ASSERT_OK(siwarp_alloc_pd(ctx, &pd));
    ASSERT_EQ(siwarp_create_srq(pd, &sa, &srq), -EINVAL);
    sa.max_wr = 4;
    sa.max_sge = SWP_MAX_SGE + 1;
    ASSERT_EQ(siwarp_create_srq(pd, &sa, &srq), -EINVAL);
    sa.max_sge = 1;
    ASSERT_OK(siwarp_create_srq(pd, &sa, &srq));
    ASSERT_EQ(siwarp_dealloc_pd(pd), -EBUSY);
    ASSERT_OK(siwarp_destroy_srq(srq));
    ASSERT_OK(siwarp_dealloc_pd(pd));
    siwarp_ctx_destroy(ctx);
}

/* A QP that only receives and then loses its stream has no WQE of its own
 * to flush: SIWARP_WC_SRQ_LAST is how its user learns, once, after the
 * QP's other completions; a later post to the dead QP repeats nothing. */
TEST(srq_qp_closed_while_idle_says_last_once)
{
    struct rig r;
    struct siwarp_qp_attr at;
    struct siwarp_sge s;
    struct siwarp_send_wr wr = { .wr_id = 7, .sg_list = &s, .num_sge = 1,
                                 .opcode = SIWARP_WR_SEND };
    rig_setup(&r, NBUF);
    post_buf(&r, 0);
    send_seg(&r, 1, 0, 4, 0xb1, true);
    close(r.raw[1]);
    expect_recv(&r, 1, 100, 4);
    wait_error(&r, 1, &at);
    expect_last(&r, 1);
    s = (struct siwarp_sge){ r.buf, 1, siwarp_mr_stag(r.mr) };
    ASSERT_OK(siwarp_post_send(r.qp[1], &wr, NULL));
    struct siwarp_wc wc = wait_wc(&r);
    ASSERT_EQ(wc.opcode, SIWARP_WC_SEND);
    ASSERT_EQ(wc.status, SIWARP_WC_WR_FLUSH_ERR);
    no_wc(&r);
    ASSERT_EQ(qp_state(&r, 0, &at), SIWARP_QPS_RTS);
    rig_teardown(&r);
}

SWP_TEST_MAIN()
