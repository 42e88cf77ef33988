/*
 * test_handshake_race.c - the first FPDU in the same TCP segment as the
 * end of the MPA handshake.
 *
 * Linux siw 6.1 as responder sends its MPA Reply before it hands the socket
 * to the QP; an FPDU arriving in between sits unread (siw-vm README).  These
 * tests make the worst case certain instead of likely: a raw peer writes the
 * last handshake frame and the first FPDU(s) with one send() over loopback
 * (one segment), and siwarp must process them at once:
 *   - responder: MPA Request + Send, before the Reply even exists;
 *   - responder, P2P: Request + Write RTR + Send, and Request + Read RTR +
 *     Send (the Read RTR must be answered with a zero-length Read Response);
 *   - initiator: the responder's MPA Reply + Send.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "mpa.h"
#include "swp.h"

#define PAYLOAD "first FPDU, same segment as the handshake"

struct side {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
    struct siwarp_mr *mr;
    char rbuf[128];
};

static void side_init(struct side *s)
{
    struct siwarp_qp_init_attr a = { 0 };
    struct siwarp_sge sge;
    struct siwarp_recv_wr rw = { .wr_id = 77, .sg_list = &sge, .num_sge = 1 };

    memset(s, 0, sizeof(*s));
    ASSERT_OK(siwarp_ctx_create(&s->ctx));
    ASSERT_OK(siwarp_alloc_pd(s->ctx, &s->pd));
    ASSERT_OK(siwarp_create_cq(s->ctx, 16, &s->cq));
    a.send_cq = a.recv_cq = s->cq;
    a.max_send_wr = a.max_recv_wr = 8;
    a.max_sge = 1;
    ASSERT_OK(siwarp_create_qp(s->pd, &a, &s->qp));
    ASSERT_OK(siwarp_reg_mr(s->pd, s->rbuf, sizeof(s->rbuf), SIWARP_ACCESS_LOCAL_WRITE, &s->mr));
    sge = (struct siwarp_sge){ s->rbuf, sizeof(s->rbuf), siwarp_mr_stag(s->mr) };
    ASSERT_OK(siwarp_post_recv(s->qp, &rw, NULL));
}

/* Append one FPDU (ULPDU = hdr + payload) to out; returns the new length. */
static size_t fpdu(uint8_t *out, size_t at, const uint8_t *hdr, uint32_t hlen,
                   const void *pl, uint32_t plen, bool crc)
{
    uint8_t *f = out + at;
    uint32_t ulen = hlen + plen, framed = SWP_MPA_HDR_LEN + ulen + swp_mpa_pad(ulen);

    swp_put16(f, (uint16_t)ulen);
    memcpy(f + 2, hdr, hlen);
    if (plen)
        memcpy(f + 2 + hlen, pl, plen);
    memset(f + 2 + ulen, 0, framed - 2 - ulen);
    swp_mpa_put_crc(f + framed, crc ? swp_crc32c(0, f, framed) : 0);
    return at + framed + SWP_MPA_CRC_LEN;
}

static size_t send_fpdu(uint8_t *out, size_t at, uint32_t msn, bool crc)
{
    uint8_t h[SWP_HDR_MAX];
    uint32_t hl = swp_ddp_build_untagged(h, SWP_OP_SEND, true, SWP_QN_SEND, msn, 0, 0);
    return fpdu(out, at, h, hl, PAYLOAD, sizeof(PAYLOAD), crc);
}

/* Progress until the receive completes; check what arrived. */
static void expect_recv(struct side *s)
{
    struct siwarp_wc wc;
    int n = 0;

    for (int i = 0; i < 500 && n == 0; i++) {
        n = siwarp_poll_cq(s->cq, 1, &wc);
        ASSERT(n >= 0);
        if (n == 0)
            siwarp_cq_wait(s->cq, 10);
    }
    if (n == 0) {
        struct siwarp_qp_attr at;
        siwarp_query_qp(s->qp, &at);
        FAIL("the first FPDU was not processed within 5 s (QP %s, %s)",
             siwarp_qp_state_str(at.state), at.error_str);
    }
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, SIWARP_WC_RECV);
    ASSERT_EQ(wc.wr_id, 77);
    ASSERT_EQ(wc.byte_len, sizeof(PAYLOAD));
    ASSERT_MEM_EQ(s->rbuf, PAYLOAD, sizeof(PAYLOAD));
}

/* Read exactly n bytes from a blocking socket, 5 s at most. */
static void read_n(int fd, uint8_t *b, size_t n)
{
    size_t got = 0;
    struct pollfd p = { fd, POLLIN, 0 };

    while (got < n) {
        ASSERT(poll(&p, 1, 5000) == 1);
        ssize_t r = recv(fd, b + got, n - got, 0);
        ASSERT(r > 0);
        got += (size_t)r;
    }
}

/* siwarp responds; the raw initiator sends Request + FPDUs in one send(). */
static void responder_case(bool p2p, int rtr, bool crc)
{
    struct side s;
    struct siwarp_conn_param lp, cp;
    struct siwarp_listener *l;
    struct siwarp_conn_req *req;
    struct sockaddr_in sin = { .sin_family = AF_INET };
    struct sockaddr_storage ss;
    uint8_t out[2048], in[600];
    size_t len;
    int fd, one = 1, n;

    side_init(&s);
    siwarp_conn_param_default(&lp);
    lp.crc = crc;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_OK(siwarp_listen(s.ctx, (struct sockaddr *)&sin, sizeof(sin), &lp, &l));
    ASSERT_OK(siwarp_listener_addr(l, &ss));

    /* the raw initiator */
    memset(&cp, 0, sizeof(cp));
    cp.mpa_rev = 2;
    cp.crc = crc;
    cp.p2p = p2p;
    cp.rtr = rtr;
    cp.ird = cp.ord = 4;
    n = swp_mpa_build_request(out, sizeof(out), &cp);
    ASSERT(n > 0);
    len = (size_t)n;
    if (p2p && rtr == SIWARP_RTR_WRITE) {
        uint8_t h[SWP_HDR_MAX];
        uint32_t hl = swp_ddp_build_tagged(h, SWP_OP_WRITE, true, 0, 0);
        len = fpdu(out, len, h, hl, NULL, 0, crc);
    } else if (p2p && rtr == SIWARP_RTR_READ) {
        uint8_t h[SWP_HDR_MAX];
        uint32_t hl = swp_ddp_build_untagged(h, SWP_OP_READ_REQ, true, SWP_QN_READ_REQ, 1, 0, 0);
        memset(h + hl, 0, sizeof(struct swp_rdmap_read_req));    /* zero-length Read */
        len = fpdu(out, len, h, hl + (uint32_t)sizeof(struct swp_rdmap_read_req), NULL, 0, crc);
    }
    len = send_fpdu(out, len, 1, crc);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT(fd >= 0);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ASSERT_OK(connect(fd, (struct sockaddr *)&ss, sizeof(struct sockaddr_in)));
    ASSERT_EQ(send(fd, out, len, 0), (ssize_t)len);     /* one segment on lo */

    ASSERT_OK(siwarp_get_conn_request_wait(l, 5000, &req));
    ASSERT_OK(siwarp_accept(req, s.qp, &lp));
    expect_recv(&s);

    /* what siwarp answered: the Reply, then (Read RTR) a zero-length Read Response */
    read_n(fd, in, SWP_MPA_RR_HDR_LEN);
    n = swp_mpa_parse_rr_hdr(in, SWP_MPA_RR_HDR_LEN, true);
    ASSERT(n >= (int)SWP_MPA_RR_HDR_LEN);
    read_n(fd, in + SWP_MPA_RR_HDR_LEN, (size_t)n - SWP_MPA_RR_HDR_LEN);
    struct swp_mpa_rr_info rep;
    ASSERT_OK(swp_mpa_parse_rr(in, (size_t)n, true, &rep));
    ASSERT_EQ(rep.p2p, p2p);
    if (p2p)
        ASSERT_EQ(rep.rtr, rtr);
    if (p2p && rtr == SIWARP_RTR_READ) {
        uint8_t f[2 + SWP_HDR_TAGGED + 4];
        read_n(fd, f, sizeof(f));
        ASSERT_EQ(swp_get16(f), SWP_HDR_TAGGED);
        const struct swp_ctrl *c = (const struct swp_ctrl *)(f + 2);
        ASSERT_EQ(swp_ctrl_opcode(c), SWP_OP_READ_RESP);
        ASSERT(swp_ctrl_last(c));
    }
    close(fd);
    siwarp_listener_destroy(l);
}

TEST(responder_request_and_send_in_one_segment) { responder_case(false, 0, true); }
TEST(responder_request_and_send_in_one_segment_nocrc) { responder_case(false, 0, false); }
TEST(responder_p2p_write_rtr_and_send_in_one_segment) { responder_case(true, SIWARP_RTR_WRITE, true); }
TEST(responder_p2p_read_rtr_and_send_in_one_segment) { responder_case(true, SIWARP_RTR_READ, true); }

/* siwarp initiates; the raw responder sends Reply + Send in one send(). */
TEST(initiator_reply_and_send_in_one_segment)
{
    struct side s;
    struct siwarp_conn_param cp;
    struct sockaddr_in sin = { .sin_family = AF_INET };
    socklen_t sl = sizeof(sin);
    uint8_t in[600], out[2048];
    size_t got = 0, len;
    int lfd, fd, n, one = 1;

    side_init(&s);
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_OK(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)));
    ASSERT_OK(listen(lfd, 1));
    ASSERT_OK(getsockname(lfd, (struct sockaddr *)&sin, &sl));
    siwarp_conn_param_default(&cp);
    cp.p2p = 0;
    cp.crc = 1;
    ASSERT_OK(siwarp_connect(s.qp, (struct sockaddr *)&sin, sizeof(sin), &cp));
    fd = accept(lfd, NULL, NULL);
    ASSERT(fd >= 0);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* read the whole Request while siwarp progresses */
    for (int i = 0; i < 500; i++) {
        siwarp_progress(s.ctx);
        ssize_t r = recv(fd, in + got, sizeof(in) - got, MSG_DONTWAIT);
        if (r > 0)
            got += (size_t)r;
        n = swp_mpa_parse_rr_hdr(in, got, false);
        if (n > 0 && got >= (size_t)n)
            break;
        siwarp_wait(s.ctx, 10);
    }
    struct swp_mpa_rr_info req;
    ASSERT(n > 0);
    ASSERT_EQ(got, (size_t)n);
    ASSERT_OK(swp_mpa_parse_rr(in, got, false, &req));
    /* Reply: rev 2, enhanced, CRC, IRD/ORD 4 */
    n = swp_mpa_build_rr(out, sizeof(out), true, 2, SWP_MPA_FLAG_ENH | SWP_MPA_FLAG_C, 4, 4, NULL, 0);
    ASSERT(n > 0);
    len = send_fpdu(out, (size_t)n, 1, true);
    ASSERT_EQ(send(fd, out, len, 0), (ssize_t)len);
    ASSERT_OK(siwarp_connect_wait(s.qp, 5000));
    expect_recv(&s);
    close(fd);
    close(lfd);
}

SWP_TEST_MAIN()
