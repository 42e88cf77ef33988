/*
 * test_hostile_listen.c - raw-socket peers misbehaving against a siwarp
 * listener (RFC 5044 7.1, RFC 6581), beyond what test/unit/test_mpa.c
 * covers (garbage key, private-data length 1000, rev 3, enhanced frame
 * without its block, one silent and one half-header peer).
 *
 * For every case: the exact outcome (connection closed before the timeout,
 * Reject, or the Terminate the RFCs name), no descriptor left behind
 * (/proc/self/fd counted before and after), and a healthy siwarp client is
 * still connected and accepted afterwards.
 */
#include <pthread.h>

#include "hostile.h"

#define TMO 5000        /* listener MPA timeout where the case must not wait for it */

/* A frame the listener must drop without answering, long before TMO. */
static void dropped_early(const uint8_t *f, size_t n, bool close_after)
{
    struct henv e;
    struct siwarp_conn_req *req;
    int fds, fd, ms;

    h_env(&e, TMO);
    fds = h_count_fds();
    fd = h_raw_connect(&e.at);
    h_send_all(fd, f, n);
    if (close_after) {
        close(fd);
        /* the listener notices the close and frees its socket */
        ASSERT_EQ(h_wait_fds(&e, fds, 2000), fds);
    } else {
        uint8_t b[64];
        ms = h_wait_closed(&e, fd, 2000);
        ASSERT(ms >= 0);
        ASSERT(ms < TMO / 2);
        ASSERT(recv(fd, b, sizeof(b), MSG_DONTWAIT) <= 0);   /* no Reply, no Reject */
        close(fd);
        ASSERT_EQ(h_wait_fds(&e, fds, 1000), fds);
    }
    ASSERT_EQ(siwarp_get_conn_request(e.l, &req), -EAGAIN);
    ASSERT(h_healthy(&e, 2000) < 1000);
    ASSERT_EQ(h_count_fds(), fds);
    h_fini(&e);
}

TEST(request_with_reply_key)
{
    uint8_t f[sizeof(h_siw_req)];

    memcpy(f, h_siw_req, sizeof(f));
    memcpy(f, SWP_MPA_KEY_REP, SWP_MPA_KEY_LEN);      /* a Reply sent as Request */
    dropped_early(f, sizeof(f), false);
}

TEST(request_key_last_byte_wrong)
{
    uint8_t f[sizeof(h_siw_req)];

    memcpy(f, h_siw_req, sizeof(f));
    f[15] ^= 0x01;                                      /* "MPA ID Req Framd" */
    dropped_early(f, sizeof(f), false);
}

TEST(request_pd_len_513)
{
    uint8_t f[20 + 513];

    memset(f, 0, sizeof(f));
    memcpy(f, h_siw_req, 20);
    swp_put16(f + 18, 513);
    dropped_early(f, sizeof(f), false);
}

TEST(request_pd_len_ffff)
{
    uint8_t f[20];

    memcpy(f, h_siw_req, 20);
    swp_put16(f + 18, 0xffff);
    dropped_early(f, sizeof(f), false);
}

TEST(truncated_header_then_close)
{
    dropped_early(h_siw_req, 11, true);
}

TEST(close_mid_private_data)
{
    uint8_t f[20 + 50];

    memset(f, 0x33, sizeof(f));
    memcpy(f, h_siw_req, 20);
    f[16] = 0;                              /* rev 2 without the enhanced block */
    swp_put16(f + 18, 100);                 /* announces 100, sends 50 */
    dropped_early(f, sizeof(f), true);
}

/* Says nothing / stops mid-header: dropped after the listener's timeout,
 * not before, not much after. */
TEST(silent_and_stalled_peers_dropped_after_timeout)
{
    struct henv e;
    int fds, silent, stalled, ms1, ms2;

    h_env(&e, 300);
    fds = h_count_fds();
    silent = h_raw_connect(&e.at);
    stalled = h_raw_connect(&e.at);
    h_send_all(stalled, h_siw_req, 19);
    ASSERT(h_healthy(&e, 2000) < 250);          /* not held up by them */
    ms1 = h_wait_closed(&e, silent, 3000);
    ms2 = h_wait_closed(&e, stalled, 1000);
    ASSERT(ms1 >= 0 && ms2 >= 0);
    ASSERT(ms1 < 1500);
    close(silent);
    close(stalled);
    ASSERT_EQ(h_wait_fds(&e, fds, 1000), fds);
    ASSERT(h_healthy(&e, 2000) < 1000);
    h_fini(&e);
}

/* 200 connections stall mid-header at once.  The listener keeps serving a
 * healthy client meanwhile and drops them all after its timeout. */
TEST(two_hundred_half_open)
{
    enum { N = 200 };
    struct henv e;
    int fds, fd[N], healthy_ms;
    uint64_t t0;

    h_env(&e, 500);
    fds = h_count_fds();
    t0 = swp_now_ns();
    for (int i = 0; i < N; i++) {
        fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        ASSERT(fd[i] >= 0);
        ASSERT(connect(fd[i], (struct sockaddr *)&e.at, sizeof(e.at)) == 0 ||
               errno == EINPROGRESS);
        if (i % 32 == 31)
            siwarp_progress(e.ctx);             /* keep the backlog moving */
    }
    for (int i = 0; i < N; i++) {
        struct pollfd p = { fd[i], POLLOUT, 0 };
        for (int k = 0; k < 300 && poll(&p, 1, 0) == 0; k++)
            siwarp_wait(e.ctx, 5);
        ASSERT(p.revents & POLLOUT);
        ASSERT_EQ(send(fd[i], h_siw_req, 7, MSG_NOSIGNAL), 7);
    }
    healthy_ms = h_healthy(&e, 2000);
    ASSERT(healthy_ms < 400);                   /* before the half-open ones time out */
    /* all 200 dropped after the 500 ms timeout, within a bounded time */
    for (int i = 0; i < N; i++) {
        int ms = h_wait_closed(&e, fd[i], 3000);
        ASSERT(ms >= 0);
        close(fd[i]);
    }
    ASSERT((swp_now_ns() - t0) / 1000000ull < 4000);
    ASSERT_EQ(h_wait_fds(&e, fds, 1000), fds);
    ASSERT(h_healthy(&e, 2000) < 1000);
    h_fini(&e);
}

/* RFC 5044 7.1: nothing may follow the Request before the Reply.  Bytes
 * that do are the first FPDU of the stream: here 0xee... decodes as a
 * tagged segment with DDP version 2, a DDP tagged "invalid DDP version"
 * Terminate (RFC 5041 7.2), and the QP goes to ERROR. */
TEST(garbage_after_request)
{
    struct henv e;
    struct siwarp_conn_req *req;
    struct siwarp_qp *qp;
    struct siwarp_qp_attr qa;
    uint8_t f[sizeof(h_siw_req) + 64], rep[24], t[64];
    int fds, fd;
    uint32_t term;

    h_env(&e, TMO);
    fds = h_count_fds();
    memcpy(f, h_siw_req, sizeof(h_siw_req));
    memset(f + sizeof(h_siw_req), 0xee, 64);
    fd = h_raw_connect(&e.at);
    h_send_all(fd, f, sizeof(f));
    ASSERT_OK(siwarp_get_conn_request_wait(e.l, 2000, &req));
    qp = h_qp(&e);
    ASSERT_OK(siwarp_accept(req, qp, NULL));
    h_read_full(&e, fd, rep, sizeof(rep));
    ASSERT_MEM_EQ(rep, SWP_MPA_KEY_REP, 16);
    for (int i = 0; i < 200; i++) {
        ASSERT_OK(siwarp_query_qp(qp, &qa));
        if (qa.state == SIWARP_QPS_ERROR)
            break;
        siwarp_wait(e.ctx, 5);
    }
    ASSERT_EQ(qa.state, SIWARP_QPS_ERROR);
    ASSERT_EQ(qa.term_sent, SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_TAGGED, SWP_DDP_EC_T_INV_DDP_VER));
    /* the Terminate on the wire: ULPDU_Length, untagged header on QN 2 */
    h_read_full(&e, fd, t, 2 + SWP_HDR_TERMINATE);
    ASSERT_EQ(swp_ctrl_opcode((const struct swp_ctrl *)(t + 2)), SWP_OP_TERMINATE);
    ASSERT_OK(swp_rdmap_parse_term(t + 2, swp_get16(t), &term));
    ASSERT_EQ(term, qa.term_sent);
    ASSERT(strstr(siwarp_term_str(term), "invalid DDP version"));
    ASSERT(h_wait_closed(&e, fd, 3000) >= 0);
    close(fd);
    ASSERT_OK(siwarp_destroy_qp(qp));
    ASSERT_EQ(h_wait_fds(&e, fds, 1000), fds);
    ASSERT(h_healthy(&e, 2000) < 1000);
    h_fini(&e);
}

/* RFC 6581 6 / 7.1.1: in P2P mode the responder takes nothing before the
 * initiator's RTR.  A raw initiator offering the Write RTR sends an RDMA
 * Write with payload instead: Terminate LLP "no matching RTR" (0x07). */
TEST(p2p_fpdu_before_rtr)
{
    static const uint8_t req_p2p[] = {
        'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ', 'F', 'r', 'a', 'm', 'e',
        0x10, 0x02, 0x00, 0x04, 0x80, 0x04, 0x80, 0x04,       /* P2P, Write RTR */
    };
    struct henv e;
    struct siwarp_conn_req *req;
    struct siwarp_qp *qp;
    struct siwarp_qp_attr qa;
    struct siwarp_mr *mr;
    static uint8_t region[4096];
    uint8_t rep[24], fpdu[2 + SWP_HDR_TAGGED + 8 + 4], t[2 + SWP_TERM_MAX_LEN + 8];
    int fds, fd;
    uint32_t term, len;

    h_env(&e, TMO);
    fds = h_count_fds();
    ASSERT_OK(siwarp_reg_mr(e.pd, region, sizeof(region), SIWARP_ACCESS_LOCAL_WRITE |
                            SIWARP_ACCESS_REMOTE_WRITE, &mr));
    fd = h_raw_connect(&e.at);
    h_send_all(fd, req_p2p, sizeof(req_p2p));
    ASSERT_OK(siwarp_get_conn_request_wait(e.l, 2000, &req));
    qp = h_qp(&e);
    ASSERT_OK(siwarp_accept(req, qp, NULL));
    h_read_full(&e, fd, rep, sizeof(rep));
    ASSERT_EQ(rep[16] & SWP_MPA_FLAG_R, 0);
    ASSERT_EQ(swp_get16(rep + 20) & SWP_MPA_V2_IRD_P2P, SWP_MPA_V2_IRD_P2P);
    ASSERT_EQ(swp_get16(rep + 22) & SWP_MPA_V2_ORD_WRITE_RTR, SWP_MPA_V2_ORD_WRITE_RTR);
    ASSERT_OK(siwarp_query_qp(qp, &qa));
    ASSERT(qa.p2p);
    ASSERT_EQ(qa.rtr, SIWARP_RTR_WRITE);
    /* a valid Write of 8 bytes into a valid region -- but no RTR first */
    swp_put16(fpdu, SWP_HDR_TAGGED + 8);
    swp_ddp_build_tagged(fpdu + 2, SWP_OP_WRITE, true, siwarp_mr_stag(mr), (uintptr_t)region);
    memset(fpdu + 2 + SWP_HDR_TAGGED, 0x77, 8);
    memset(fpdu + 2 + SWP_HDR_TAGGED + 8, 0, 4);       /* pad 0, CRC off: zero */
    h_send_all(fd, fpdu, sizeof(fpdu));
    for (int i = 0; i < 200; i++) {
        ASSERT_OK(siwarp_query_qp(qp, &qa));
        if (qa.state == SIWARP_QPS_ERROR)
            break;
        siwarp_wait(e.ctx, 5);
    }
    ASSERT_EQ(qa.state, SIWARP_QPS_ERROR);
    ASSERT_EQ(qa.term_sent, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_NO_MATCHING_RTR));
    ASSERT(strstr(qa.error_str, "RTR"));
    for (size_t i = 0; i < sizeof(region); i++)
        ASSERT_EQ(region[i], 0);                        /* nothing placed */
    h_read_full(&e, fd, t, 2);
    len = swp_get16(t);
    ASSERT_EQ(len, SWP_HDR_TERMINATE);                  /* LLP: no header copied */
    h_read_full(&e, fd, t + 2, len + swp_mpa_pad(len) + 4);
    ASSERT_OK(swp_rdmap_parse_term(t + 2, len, &term));
    ASSERT_EQ(term, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_NO_MATCHING_RTR));
    ASSERT(strstr(siwarp_term_str(term), "no matching RTR"));
    ASSERT(h_wait_closed(&e, fd, 3000) >= 0);
    close(fd);
    ASSERT_OK(siwarp_destroy_qp(qp));
    ASSERT_OK(siwarp_dereg_mr(mr));
    ASSERT_EQ(h_wait_fds(&e, fds, 1000), fds);
    ASSERT(h_healthy(&e, 2000) < 1000);
    h_fini(&e);
}

/* A request the application rejects, then the same peer keeps the socket
 * open: the listener closes its side (no descriptor kept). */
TEST(rejected_peer_lingers)
{
    struct henv e;
    struct siwarp_conn_req *req;
    struct swp_mpa_rr_info ri;
    uint8_t b[64];
    int fds, fd;

    h_env(&e, TMO);
    fds = h_count_fds();
    fd = h_raw_connect(&e.at);
    h_send_all(fd, h_siw_req, sizeof(h_siw_req));
    ASSERT_OK(siwarp_get_conn_request_wait(e.l, 2000, &req));
    ASSERT_OK(siwarp_reject(req, "full", 4));
    h_read_full(&e, fd, b, 20 + 4 + 4);
    ASSERT_OK(swp_mpa_parse_rr(b, 28, true, &ri));
    ASSERT(ri.reject);
    ASSERT_MEM_EQ(ri.pd, "full", 4);
    ASSERT(h_wait_closed(&e, fd, 1000) >= 0);
    ASSERT_EQ(h_count_fds(), fds + 1);                  /* only our raw socket */
    close(fd);
    ASSERT(h_healthy(&e, 2000) < 1000);
    ASSERT_EQ(h_count_fds(), fds);
    h_fini(&e);
}

SWP_TEST_MAIN()
