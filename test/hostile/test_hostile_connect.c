/*
 * test_hostile_connect.c - siwarp_connect against raw-socket responders
 * that answer the MPA Request wrongly (RFC 5044 7.1, RFC 6581 9), beyond
 * test/unit/test_mpa.c (a plain Reject, a silent responder, v1 and markers
 * fallbacks).  For each: the exact error and error string, the QP in ERROR,
 * no descriptor left behind; and siwarp-to-siwarp FPDU size negotiation
 * over loopback.
 */
#include <pthread.h>

#include "hostile.h"

enum mode { M_REJECT_V1, M_WRONG_KEY, M_REV3, M_PD_FFFF, M_CLOSE_MID_REPLY, M_REPLY_P2P_UNASKED };

struct rsrv {
    int lfd;
    struct sockaddr_in at;
    enum mode mode;
    int requests;
    uint8_t last_rev;
    pthread_t th;
};

static int read_req(int fd, uint8_t *b)
{
    size_t got = 0, want = 20;

    while (got < want) {
        ssize_t r = recv(fd, b + got, want - got, 0);
        if (r <= 0)
            return -1;
        got += (size_t)r;
        if (got == 20)
            want = 20 + swp_get16(b + 18);
        if (want > SWP_MPA_RR_MAX_LEN)
            return -1;
    }
    return (int)got;
}

static void *rsrv_main(void *arg)
{
    struct rsrv *s = arg;

    for (;;) {
        uint8_t b[SWP_MPA_RR_MAX_LEN], out[SWP_MPA_RR_MAX_LEN];
        int fd = accept(s->lfd, NULL, NULL), n = 0;

        if (fd < 0)
            return NULL;
        if (read_req(fd, b) < 0) {
            close(fd);
            continue;
        }
        s->requests++;
        s->last_rev = b[17];
        switch (s->mode) {
        case M_REJECT_V1:
            /* a rev 1 peer rejecting in rev 1, with its reason */
            n = swp_mpa_build_rr(out, sizeof(out), true, 1, SWP_MPA_FLAG_R, 0, 0, "no room", 7);
            break;
        case M_WRONG_KEY:
            n = swp_mpa_build_rr(out, sizeof(out), true, 2, SWP_MPA_FLAG_ENH, 1, 1, NULL, 0);
            memcpy(out, SWP_MPA_KEY_REQ, SWP_MPA_KEY_LEN);   /* a Request key */
            break;
        case M_REV3:
            n = swp_mpa_build_rr(out, sizeof(out), true, 2, SWP_MPA_FLAG_ENH, 1, 1, NULL, 0);
            out[17] = 3;
            break;
        case M_PD_FFFF:
            n = swp_mpa_build_rr(out, sizeof(out), true, 2, SWP_MPA_FLAG_ENH, 1, 1, NULL, 0);
            swp_put16(out + 18, 0xffff);
            break;
        case M_CLOSE_MID_REPLY:
            n = swp_mpa_build_rr(out, sizeof(out), true, 2, SWP_MPA_FLAG_ENH, 1, 1, "abcdefgh", 8);
            n -= 5;
            break;
        case M_REPLY_P2P_UNASKED:
            n = swp_mpa_build_rr(out, sizeof(out), true, 2, SWP_MPA_FLAG_ENH,
                                 SWP_MPA_V2_IRD_P2P | 1, SWP_MPA_V2_ORD_WRITE_RTR | 1, NULL, 0);
            break;
        }
        if (n > 0 && send(fd, out, (size_t)n, MSG_NOSIGNAL) < 0)
            n = 0;
        shutdown(fd, SHUT_WR);
        /* wait for the initiator to close, so its side sees no reset first */
        while (recv(fd, b, sizeof(b), 0) > 0)
            ;
        close(fd);
    }
}

static void rsrv_start(struct rsrv *s, enum mode mode)
{
    socklen_t sl = sizeof(s->at);

    memset(s, 0, sizeof(*s));
    s->mode = mode;
    s->at = h_loopback(0);
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT(s->lfd >= 0);
    ASSERT_OK(bind(s->lfd, (struct sockaddr *)&s->at, sizeof(s->at)));
    ASSERT_OK(listen(s->lfd, 8));
    ASSERT_OK(getsockname(s->lfd, (struct sockaddr *)&s->at, &sl));
    ASSERT_OK(pthread_create(&s->th, NULL, rsrv_main, s));
}

/* Connect with `p` (NULL: defaults); expect error `want` and a substring of
 * the error string.  Checks descriptors and returns the QP attributes. */
static struct siwarp_qp_attr connect_fails(enum mode mode, struct siwarp_conn_param *p,
                                           int want, const char *why, struct rsrv *s)
{
    struct henv e;
    struct siwarp_qp *qp;
    struct siwarp_qp_attr qa;
    int fds;

    h_env(&e, 0);
    rsrv_start(s, mode);
    fds = h_count_fds();
    qp = h_qp(&e);
    ASSERT_OK(siwarp_connect(qp, (struct sockaddr *)&s->at, sizeof(s->at), p));
    ASSERT_EQ(siwarp_connect_wait(qp, 5000), want);
    ASSERT_OK(siwarp_query_qp(qp, &qa));
    ASSERT_EQ(qa.state, SIWARP_QPS_ERROR);
    ASSERT_EQ(qa.error, want);
    if (!strstr(qa.error_str, why))
        FAIL("error string \"%s\" does not mention \"%s\"", qa.error_str, why);
    ASSERT(strstr(qa.error_str, "127.0.0.1:"));     /* names the peer */
    ASSERT_EQ(siwarp_qp_fd(qp), -1);                 /* socket closed with the error */
    ASSERT_OK(siwarp_destroy_qp(qp));
    /* the raw server thread closes its end once it sees ours closed */
    ASSERT_EQ(h_wait_fds(&e, fds, 1000), fds);
    h_fini(&e);
    /* the thread is done with *s (the caller reads its counts) before the
     * caller's frame can go: it is in accept, a cancellation point */
    pthread_cancel(s->th);
    ASSERT_OK(pthread_join(s->th, NULL));
    close(s->lfd);
    return qa;
}

TEST(reply_reject_rev1_with_reason)
{
    struct rsrv s;
    struct siwarp_conn_param p;
    struct siwarp_qp_attr qa;

    /* rev 2 refused by a rev 1 Reject: one fallback to rev 1, refused again */
    siwarp_conn_param_default(&p);
    qa = connect_fails(M_REJECT_V1, &p, -ECONNABORTED, "Reject", &s);   /* since eb2242d */
    ASSERT_EQ(s.requests, 2);
    ASSERT_EQ(s.last_rev, 1);
    ASSERT_EQ(qa.peer_private_data_len, 7);          /* the peer's reason */
    ASSERT_MEM_EQ(qa.peer_private_data, "no room", 7);
}

TEST(reply_wrong_key)
{
    struct rsrv s;
    struct siwarp_conn_param p;

    siwarp_conn_param_default(&p);
    connect_fails(M_WRONG_KEY, &p, -EPROTO, "wrong key", &s);
    ASSERT_EQ(s.requests, 1);                        /* no fallback for garbage */
}

TEST(reply_rev3)
{
    struct rsrv s, s2;
    struct siwarp_conn_param p;

    /* RFC 5044 7.1: an unknown revision; with v1_fallback one retry in
     * rev 1, answered with rev 3 again: then it fails */
    siwarp_conn_param_default(&p);
    connect_fails(M_REV3, &p, -EPROTO, "revision 3", &s);
    ASSERT_EQ(s.requests, 2);
    ASSERT_EQ(s.last_rev, 1);
    p.v1_fallback = 0;
    connect_fails(M_REV3, &p, -EPROTO, "revision 3", &s2);
    ASSERT_EQ(s2.requests, 1);
}

TEST(reply_pd_len_ffff)
{
    struct rsrv s;
    struct siwarp_conn_param p;

    siwarp_conn_param_default(&p);
    connect_fails(M_PD_FFFF, &p, -EPROTO, "over 512", &s);
}

TEST(reply_truncated_then_closed)
{
    struct rsrv s;
    struct siwarp_conn_param p;

    siwarp_conn_param_default(&p);
    p.v1_fallback = 0;
    connect_fails(M_CLOSE_MID_REPLY, &p, -ECONNRESET, "closed", &s);
}

TEST(reply_p2p_not_requested)
{
    struct rsrv s;
    struct siwarp_conn_param p;

    siwarp_conn_param_default(&p);
    p.p2p = 0;
    connect_fails(M_REPLY_P2P_UNASKED, &p, -EPROTO, "peer-to-peer", &s);
}

/* Two siwarp peers over loopback (MSS ~65483): the initiator offers big
 * FPDUs, the responder says it takes 4 KiB.  The initiator must not send
 * FPDUs larger than that: a 60000-byte Write has to arrive intact.
 * (Found by fuzz_mpa: the MSS-derived MULPDU was never capped by the
 * class the siwarp peer announced.) */
TEST(big_fpdu_responder_limit_below_mss)
{
    struct henv e;
    struct siwarp_conn_req *req;
    struct siwarp_conn_param p, rp;
    struct siwarp_qp *a, *b;
    struct siwarp_qp_attr qa, qb;
    struct siwarp_mr *ma, *mb;
    struct siwarp_wc wc;
    static uint8_t src[60000], dst[60000];

    h_env(&e, 2000);
    a = h_qp(&e);
    b = h_qp(&e);
    siwarp_conn_param_default(&p);
    p.big_fpdu = 65535;
    p.crc = 0;
    ASSERT_OK(siwarp_connect(a, (struct sockaddr *)&e.at, sizeof(e.at), &p));
    ASSERT_OK(siwarp_get_conn_request_wait(e.l, 2000, &req));
    siwarp_conn_param_default(&rp);
    rp.crc = 0;
    rp.big_fpdu = 4096;
    ASSERT_OK(siwarp_accept(req, b, &rp));
    ASSERT_OK(siwarp_connect_wait(a, 2000));
    ASSERT_OK(siwarp_query_qp(a, &qa));
    ASSERT(qa.peer_is_siwarp);
    if (qa.mulpdu > 4096)
        FAIL("initiator MULPDU %u exceeds the 4096 the responder announced", qa.mulpdu);
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(i * 13 + 5);
    ASSERT_OK(siwarp_reg_mr(e.pd, src, sizeof(src), 0, &ma));
    ASSERT_OK(siwarp_reg_mr(e.pd, dst, sizeof(dst), SIWARP_ACCESS_LOCAL_WRITE |
                            SIWARP_ACCESS_REMOTE_WRITE, &mb));
    struct siwarp_sge s = { src, sizeof(src), siwarp_mr_stag(ma) };
    struct siwarp_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
                                .opcode = SIWARP_WR_WRITE, .send_flags = SIWARP_SEND_SIGNALED };
    w.rdma.rkey = siwarp_mr_stag(mb);
    w.rdma.remote_addr = (uintptr_t)dst;
    ASSERT_OK(siwarp_post_send(a, &w, NULL));
    for (int i = 0; i < 2000 && siwarp_poll_cq(e.cq, 1, &wc) == 0; i++)
        siwarp_wait(e.ctx, 2);
    for (int i = 0; i < 200 && dst[sizeof(dst) - 1] != src[sizeof(src) - 1]; i++)
        siwarp_wait(e.ctx, 2);
    ASSERT_OK(siwarp_query_qp(b, &qb));
    if (qb.state != SIWARP_QPS_RTS)
        FAIL("responder: %s (term_sent 0x%04x)", qb.error_str, qb.term_sent);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_MEM_EQ(dst, src, sizeof(src));
    siwarp_destroy_qp(a);
    siwarp_destroy_qp(b);
    siwarp_dereg_mr(ma);
    siwarp_dereg_mr(mb);
    h_fini(&e);
}

SWP_TEST_MAIN()
