/*
 * test_integ_errors.c - two-process tests of the unhappy paths: MPA reject
 * with private data, connection loss and local error with work outstanding
 * (flushed completions), Reads beyond the ORD queueing, remote access
 * errors (Terminate codes at both ends), and Send with Invalidate making a
 * later Write to the invalidated STag fail.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "integ.h"
#include "swp.h"          /* SWP_TERM */

#define MiB (1u << 20)

/* what the server tells the client in the MPA Reply private data */
struct xinfo {
    uint64_t addr;
    uint64_t len;
    uint32_t stag;
    uint32_t stag2;       /* a second MR, for invalidation */
    uint64_t addr2;
};

static int get_xinfo(struct integ_ep *e, struct xinfo *x)
{
    struct siwarp_qp_attr a;

    INTEG_CHECK_RC(siwarp_query_qp(e->qp, &a));
    if (a.peer_private_data_len != sizeof(*x)) {
        INTEG_FAIL("peer private data is %u bytes, expected %zu",
                   a.peer_private_data_len, sizeof(*x));
        return -1;
    }
    memcpy(x, a.peer_private_data, sizeof(*x));
    return 0;
}

static struct xinfo my_xinfo(struct integ_ep *e)
{
    struct xinfo x = { (uint64_t)(uintptr_t)e->buf, e->len, integ_lkey(e), 0, 0 };
    return x;
}

static int post_recvs(struct integ_ep *e, int n, size_t each)
{
    for (int i = 0; i < n; i++) {
        struct siwarp_sge sge = { e->buf + (size_t)i * each, (uint32_t)each, integ_lkey(e) };
        struct siwarp_recv_wr wr = { .wr_id = 1000 + (uint64_t)i, .sg_list = &sge,
                                     .num_sge = 1 }, *bad;
        INTEG_CHECK_RC(siwarp_post_recv(e->qp, &wr, &bad));
    }
    return 0;
}

/* Collect n completions; count those with status st.  Fails on timeout. */
static int collect(struct integ_ep *e, int n, enum siwarp_wc_status st, int *nst,
                   struct siwarp_wc *first_err)
{
    struct siwarp_wc wc;
    int got = 0;

    *nst = 0;
    while (got < n) {
        int rc = integ_poll1(e, &wc, integ_timeout_ms());
        if (rc < 0) {
            INTEG_FAIL("got %d of %d completions before timeout", got, n);
            return -1;
        }
        if (wc.status == st)
            (*nst)++;
        if (first_err && wc.status != SIWARP_WC_SUCCESS && first_err->wr_id == 0)
            *first_err = wc;
        got++;
    }
    return 0;
}

static int wait_pipe(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    char c;

    if (poll(&p, 1, integ_timeout_ms()) != 1 || read(fd, &c, 1) != 1) {
        INTEG_FAIL("peer never signalled on the side pipe");
        return -1;
    }
    return 0;
}

/* ---- MPA reject ------------------------------------------------------------ */

static const char reject_pd[] = "siwarp-test: rejected on purpose";

static int reject_server(const struct integ_cfg *c, void *arg, int afd)
{
    struct integ_ep e;
    struct siwarp_conn_req *req = NULL;
    uint16_t port;
    int rc = -1;

    (void)arg;
    if (integ_ep_init(&e, 4096, 16, 16) < 0 || integ_listen(&e, c, &port) < 0 ||
        integ_announce(afd, port) < 0)
        goto out;
    if (siwarp_get_conn_request_wait(e.l, integ_timeout_ms(), &req) < 0) {
        INTEG_FAIL("no connection request");
        goto out;
    }
    if (siwarp_reject(req, reject_pd, sizeof(reject_pd)) < 0) {
        INTEG_FAIL("siwarp_reject failed");
        goto out;
    }
    /* the listener keeps serving: the client's second attempt is accepted */
    if (integ_accept(&e, c, NULL, 0) < 0)
        goto out;
    if (integ_wait_state(&e, -1, integ_timeout_ms(), NULL) < 0)
        goto out;
    rc = 0;
out:
    integ_ep_fini(&e);
    return rc;
}

static int reject_client(const struct integ_cfg *c, void *arg, uint16_t port)
{
    struct integ_ep e, e2;
    struct siwarp_qp_attr a;
    struct sockaddr_storage ss;
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    int rc;

    (void)arg;
    if (integ_ep_init(&e, 4096, 16, 16) < 0)
        return -1;
    memset(&ss, 0, sizeof(ss));
    s4->sin_family = AF_INET;
    s4->sin_port = htons(port);
    s4->sin_addr.s_addr = htonl(0x7f000001);
    INTEG_CHECK_RC(siwarp_connect(e.qp, (struct sockaddr *)&ss, sizeof(*s4), &c->cp));
    rc = siwarp_connect_wait(e.qp, integ_timeout_ms());
    INTEG_CHECK_RC(siwarp_query_qp(e.qp, &a));
    if (rc >= 0 || a.state == SIWARP_QPS_RTS) {
        INTEG_FAIL("connect to a rejecting server: rc %d, state %s", rc,
                   siwarp_qp_state_str(a.state));
        return -1;
    }
    if (rc != -ECONNABORTED || a.error != -ECONNABORTED) {
        INTEG_FAIL("connect after an MPA Reject: rc %d, error %d; -ECONNABORTED expected",
                   rc, a.error);
        return -1;
    }
    if (a.peer_private_data_len != sizeof(reject_pd) ||
        memcmp(a.peer_private_data, reject_pd, sizeof(reject_pd)) != 0) {
        INTEG_FAIL("reject private data: %u bytes '%.*s', expected %zu bytes '%s'",
                   a.peer_private_data_len, (int)a.peer_private_data_len,
                   (const char *)a.peer_private_data, sizeof(reject_pd), reject_pd);
        return -1;
    }
    integ_ep_fini(&e);
    if (integ_ep_init(&e2, 4096, 16, 16) < 0 || integ_connect(&e2, c, port) < 0)
        return -1;
    siwarp_disconnect(e2.qp);
    integ_ep_fini(&e2);
    return 0;
}

TEST(mpa_reject_private_data_v2)
{
    struct integ_cfg c;

    integ_cfg_default(&c);
    ASSERT_OK(integ_pair(&c, reject_server, reject_client, NULL));
}

TEST(mpa_reject_private_data_v1)
{
    struct integ_cfg c;

    integ_cfg_default(&c);
    c.cp.mpa_rev = 1;
    ASSERT_OK(integ_pair(&c, reject_server, reject_client, NULL));
}

/* ---- flush with work outstanding -------------------------------------------- */

struct side_pipe {
    int s2c[2], c2s[2];
};

static int make_pipes(struct side_pipe *p)
{
    return pipe(p->s2c) == 0 && pipe(p->c2s) == 0 ? 0 : -1;
}

/* The server stops progressing, so the client's 64 MiB of Writes cannot all
 * leave; the client moves its QP to ERROR: every posted receive and every
 * Write not yet completed must complete with WR_FLUSH_ERR. */
static int flush_local_server(const struct integ_cfg *c, void *arg, int afd)
{
    struct side_pipe *sp = arg;
    struct integ_ep e;
    struct xinfo x;
    uint16_t port;
    int rc = -1, nflush;

    if (integ_ep_init(&e, 4 * MiB, 16, 16) < 0 || integ_listen(&e, c, &port) < 0 ||
        integ_announce(afd, port) < 0)
        goto out;
    if (post_recvs(&e, 4, 64) < 0)
        goto out;
    x = my_xinfo(&e);
    if (integ_accept(&e, c, &x, sizeof(x)) < 0)
        goto out;
    if (wait_pipe(sp->c2s[0]) < 0)     /* no progress until the client is done */
        goto out;
    if (integ_wait_state(&e, -1, integ_timeout_ms(), NULL) < 0)
        goto out;
    if (collect(&e, 4, SIWARP_WC_WR_FLUSH_ERR, &nflush, NULL) < 0)
        goto out;
    if (nflush != 4) {
        INTEG_FAIL("server: %d of 4 posted receives flushed", nflush);
        goto out;
    }
    rc = 0;
out:
    integ_ep_fini(&e);
    return rc;
}

static int flush_local_client(const struct integ_cfg *c, void *arg, uint16_t port)
{
    struct side_pipe *sp = arg;
    struct integ_ep e;
    struct xinfo x;
    struct siwarp_qp_attr a;
    struct siwarp_wc wc;
    int nrecv = 0, nsend = 0, nflush_s = 0, nok = 0;

    if (integ_ep_init(&e, 4 * MiB, 64, 16) < 0 || integ_connect(&e, c, port) < 0 ||
        get_xinfo(&e, &x) < 0)
        return -1;
    if (post_recvs(&e, 8, 64) < 0)
        return -1;
    for (int i = 0; i < 16; i++) {
        struct siwarp_sge sge = { e.buf, 4 * MiB, integ_lkey(&e) };
        struct siwarp_send_wr wr = { .wr_id = 1 + (uint64_t)i, .sg_list = &sge,
                                     .num_sge = 1, .opcode = SIWARP_WR_WRITE,
                                     .send_flags = SIWARP_SEND_SIGNALED }, *bad;
        wr.rdma.remote_addr = x.addr;
        wr.rdma.rkey = x.stag;
        INTEG_CHECK_RC(siwarp_post_send(e.qp, &wr, &bad));
    }
    /* progress a bit so some bytes are in flight, then pull the plug */
    for (int i = 0; i < 1000; i++)
        siwarp_progress(e.ctx);
    INTEG_CHECK_RC(siwarp_qp_to_error(e.qp));
    for (int got = 0; got < 24; got++) {
        if (integ_poll1(&e, &wc, integ_timeout_ms()) < 0) {
            INTEG_FAIL("after qp_to_error: %d of 24 completions (%d recv, %d send)",
                       got, nrecv, nsend);
            return -1;
        }
        if (wc.opcode == SIWARP_WC_RECV || wc.wr_id >= 1000) {
            nrecv++;
            if (wc.status != SIWARP_WC_WR_FLUSH_ERR) {
                INTEG_FAIL("posted receive %llu completed with %s, not WR_FLUSH_ERR",
                           (unsigned long long)wc.wr_id, siwarp_wc_status_str(wc.status));
                return -1;
            }
        } else {
            nsend++;
            if (wc.status == SIWARP_WC_WR_FLUSH_ERR)
                nflush_s++;
            else if (wc.status == SIWARP_WC_SUCCESS && nflush_s == 0)
                nok++;
            else {
                INTEG_FAIL("Write %llu completed with %s (after %d flushed)",
                           (unsigned long long)wc.wr_id, siwarp_wc_status_str(wc.status),
                           nflush_s);
                return -1;
            }
        }
    }
    if (nrecv != 8 || nsend != 16 || nflush_s == 0) {
        INTEG_FAIL("%d recv / %d send completions, %d sends flushed (%d ok): expected "
                   "8 / 16 and at least one flushed", nrecv, nsend, nflush_s, nok);
        return -1;
    }
    if (integ_poll1(&e, &wc, 200) != -ETIMEDOUT) {
        INTEG_FAIL("extra completion after the flush (wr_id %llu)",
                   (unsigned long long)wc.wr_id);
        return -1;
    }
    INTEG_CHECK_RC(siwarp_query_qp(e.qp, &a));
    if (a.state != SIWARP_QPS_ERROR) {
        INTEG_FAIL("state %s after qp_to_error, expected ERROR", siwarp_qp_state_str(a.state));
        return -1;
    }
    /* posting on an ERROR QP is refused or completes flushed, never hangs */
    fprintf(stderr, "# %d Writes completed, %d flushed\n", nok, nflush_s);
    if (write(sp->c2s[1], "x", 1) != 1)
        return -1;
    integ_ep_fini(&e);
    return 0;
}

TEST(flush_on_local_error_with_work_outstanding)
{
    struct integ_cfg c;
    struct side_pipe sp;

    ASSERT_OK(make_pipes(&sp));
    integ_cfg_default(&c);
    ASSERT_OK(integ_pair(&c, flush_local_server, flush_local_client, &sp));
}

/* The server closes (orderly disconnect) while both sides have receives
 * posted: both sets complete with WR_FLUSH_ERR. */
static int flush_close_server(const struct integ_cfg *c, void *arg, int afd)
{
    struct side_pipe *sp = arg;
    struct integ_ep e;
    uint16_t port;
    int rc = -1, nflush;

    if (integ_ep_init(&e, 4096, 16, 16) < 0 || integ_listen(&e, c, &port) < 0 ||
        integ_announce(afd, port) < 0 || post_recvs(&e, 4, 64) < 0 ||
        integ_accept(&e, c, NULL, 0) < 0)
        goto out;
    if (wait_pipe(sp->c2s[0]) < 0)
        goto out;
    if (siwarp_disconnect(e.qp) < 0) {
        INTEG_FAIL("siwarp_disconnect failed");
        goto out;
    }
    if (collect(&e, 4, SIWARP_WC_WR_FLUSH_ERR, &nflush, NULL) < 0)
        goto out;
    if (nflush != 4) {
        INTEG_FAIL("server: %d of 4 receives flushed after its own disconnect", nflush);
        goto out;
    }
    rc = 0;
out:
    integ_ep_fini(&e);
    return rc;
}

static int flush_close_client(const struct integ_cfg *c, void *arg, uint16_t port)
{
    struct side_pipe *sp = arg;
    struct integ_ep e;
    struct siwarp_qp_attr a;
    int nflush;

    if (integ_ep_init(&e, 4096, 16, 16) < 0 || integ_connect(&e, c, port) < 0 ||
        post_recvs(&e, 6, 64) < 0)
        return -1;
    if (write(sp->c2s[1], "x", 1) != 1)
        return -1;
    if (collect(&e, 6, SIWARP_WC_WR_FLUSH_ERR, &nflush, NULL) < 0)
        return -1;
    if (nflush != 6) {
        INTEG_FAIL("client: %d of 6 receives flushed after the peer closed", nflush);
        return -1;
    }
    INTEG_CHECK_RC(siwarp_query_qp(e.qp, &a));
    if (a.state == SIWARP_QPS_RTS) {
        INTEG_FAIL("client QP still RTS after the peer closed");
        return -1;
    }
    integ_ep_fini(&e);
    return 0;
}

TEST(flush_on_peer_close)
{
    struct integ_cfg c;
    struct side_pipe sp;

    ASSERT_OK(make_pipes(&sp));
    integ_cfg_default(&c);
    ASSERT_OK(integ_pair(&c, flush_close_server, flush_close_client, &sp));
}

/* ---- Reads beyond the ORD ------------------------------------------------------ */

#define NREADS 32
#define RSZ    65536

static int ord_server(const struct integ_cfg *c, void *arg, int afd)
{
    struct integ_ep e;
    struct xinfo x;
    struct siwarp_qp_attr a;
    uint16_t port;
    int rc = -1;

    (void)arg;
    if (integ_ep_init(&e, NREADS * RSZ, 16, 16) < 0)
        goto out;
    integ_fill(e.buf, e.len, 77, 0);
    x = my_xinfo(&e);
    if (integ_listen(&e, c, &port) < 0 || integ_announce(afd, port) < 0 ||
        integ_accept(&e, c, &x, sizeof(x)) < 0)
        goto out;
    if (integ_wait_state(&e, -1, integ_timeout_ms(), &a) < 0)
        goto out;
    if (a.term_sent || a.term_recv) {
        INTEG_FAIL("server: Terminate sent %#x (%s) / received %#x during the Reads",
                   a.term_sent, siwarp_term_str(a.term_sent), a.term_recv);
        goto out;
    }
    rc = 0;
out:
    integ_ep_fini(&e);
    return rc;
}

static int ord_client(const struct integ_cfg *c, void *arg, uint16_t port)
{
    struct integ_ep e;
    struct xinfo x;
    struct siwarp_qp_attr a;
    struct siwarp_wc wc;

    (void)arg;
    if (integ_ep_init(&e, NREADS * RSZ, 64, 16) < 0 || integ_connect(&e, c, port) < 0 ||
        get_xinfo(&e, &x) < 0)
        return -1;
    INTEG_CHECK_RC(siwarp_query_qp(e.qp, &a));
    if (a.ord > 2 || a.ord == 0) {
        INTEG_FAIL("negotiated ORD %u with ord = ird = 2 asked", a.ord);
        return -1;
    }
    /* all at once: the library must hold Reads beyond the ORD back */
    for (int i = 0; i < NREADS; i++) {
        struct siwarp_sge sge = { e.buf + (size_t)i * RSZ, RSZ, integ_lkey(&e) };
        struct siwarp_send_wr wr = { .wr_id = 1 + (uint64_t)i, .sg_list = &sge,
                                     .num_sge = 1, .opcode = SIWARP_WR_READ,
                                     .send_flags = SIWARP_SEND_SIGNALED }, *bad;
        wr.rdma.remote_addr = x.addr + (uint64_t)i * RSZ;
        wr.rdma.rkey = x.stag;
        INTEG_CHECK_RC(siwarp_post_send(e.qp, &wr, &bad));
    }
    for (int i = 0; i < NREADS; i++) {
        if (integ_poll1(&e, &wc, integ_timeout_ms()) < 0) {
            siwarp_query_qp(e.qp, &a);
            INTEG_FAIL("%d of %d Reads completed (ORD %u; QP %s, term recv %#x)", i,
                       NREADS, a.ord, siwarp_qp_state_str(a.state), a.term_recv);
            return -1;
        }
        if (wc.status != SIWARP_WC_SUCCESS || wc.wr_id != 1 + (uint64_t)i) {
            INTEG_FAIL("Read completion %d: wr_id %llu status %s vendor_err %#x (%s)", i,
                       (unsigned long long)wc.wr_id, siwarp_wc_status_str(wc.status),
                       wc.vendor_err, siwarp_term_str(wc.vendor_err));
            return -1;
        }
    }
    long long bad = integ_check(e.buf, e.len, 77, 0);
    if (bad >= 0) {
        INTEG_FAIL("Read data wrong at offset %lld (Read %lld)", bad, bad / RSZ);
        return -1;
    }
    siwarp_disconnect(e.qp);
    integ_ep_fini(&e);
    return 0;
}

TEST(reads_beyond_ord_queue)
{
    struct integ_cfg c;

    integ_cfg_default(&c);
    c.cp.ird = c.cp.ord = 2;
    ASSERT_OK(integ_pair(&c, ord_server, ord_client, NULL));
}

TEST(reads_beyond_ord_queue_p2p_read)
{
    struct integ_cfg c;

    integ_cfg_default(&c);
    c.cp.ird = c.cp.ord = 1;
    c.cp.p2p = 1;
    c.cp.rtr = SIWARP_RTR_READ;
    ASSERT_OK(integ_pair(&c, ord_server, ord_client, NULL));
}

/* ---- remote access errors ------------------------------------------------------ */

enum bad_kind { BAD_WRITE_KEY, BAD_WRITE_BOUNDS, BAD_READ_KEY, BAD_WRITE_INVALIDATED };

struct bad_case {
    enum bad_kind kind;
    uint32_t term;          /* expected Terminate code */
};

static int bad_server(const struct integ_cfg *c, void *arg, int afd)
{
    struct bad_case *bc = arg;
    struct integ_ep e;
    struct siwarp_mr *mr2 = NULL;
    struct xinfo x;
    struct siwarp_qp_attr a;
    struct siwarp_wc wc;
    uint16_t port;
    int rc = -1, nflush, nrecv = 2;

    if (integ_ep_init(&e, 1 * MiB, 16, 16) < 0)
        goto out;
    x = my_xinfo(&e);
    INTEG_CHECK_RC(siwarp_reg_mr(e.pd, e.buf + 512 * 1024, 4096,
                                 SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE, &mr2));
    x.stag2 = siwarp_mr_stag(mr2);
    x.addr2 = (uint64_t)(uintptr_t)(e.buf + 512 * 1024);
    if (integ_listen(&e, c, &port) < 0 || integ_announce(afd, port) < 0 ||
        post_recvs(&e, nrecv, 64) < 0 || integ_accept(&e, c, &x, sizeof(x)) < 0)
        goto out;
    if (bc->kind == BAD_WRITE_INVALIDATED) {
        /* first the Send with Invalidate */
        if (integ_poll1(&e, &wc, integ_timeout_ms()) < 0) {
            INTEG_FAIL("no Send with Invalidate arrived");
            goto out;
        }
        if (wc.status != SIWARP_WC_SUCCESS || !(wc.wc_flags & SIWARP_WC_WITH_INV) ||
            wc.invalidated_stag != x.stag2) {
            INTEG_FAIL("Send+Inv completion: status %s flags %#x invalidated %#x "
                       "(expected WITH_INV of %#x)", siwarp_wc_status_str(wc.status),
                       wc.wc_flags, wc.invalidated_stag, x.stag2);
            goto out;
        }
        nrecv--;
    }
    if (integ_wait_state(&e, SIWARP_QPS_ERROR, integ_timeout_ms(), &a) < 0)
        goto out;
    if (a.term_sent != bc->term) {
        INTEG_FAIL("server sent Terminate %#x (%s), expected %#x (%s)", a.term_sent,
                   siwarp_term_str(a.term_sent), bc->term, siwarp_term_str(bc->term));
        goto out;
    }
    if (collect(&e, nrecv, SIWARP_WC_WR_FLUSH_ERR, &nflush, NULL) < 0 || nflush != nrecv) {
        INTEG_FAIL("server: %d of %d posted receives flushed", nflush, nrecv);
        goto out;
    }
    if (integ_check_byte(e.buf + 4096, 64, 0) >= 0 ||
        integ_check_byte(e.buf + e.len - 16, 16, 0) >= 0 ||
        integ_check_byte(e.buf + 512 * 1024, 64, 0) >= 0) {
        INTEG_FAIL("memory changed by a refused access");
        goto out;
    }
    rc = 0;
out:
    if (mr2)
        siwarp_dereg_mr(mr2);
    integ_ep_fini(&e);
    return rc;
}

static int bad_client(const struct integ_cfg *c, void *arg, uint16_t port)
{
    struct bad_case *bc = arg;
    struct integ_ep e;
    struct xinfo x;
    struct siwarp_qp_attr a;
    struct siwarp_wc err = { 0 };
    struct siwarp_send_wr wr[3], *bad;
    struct siwarp_sge sge = { 0 }, rsge = { 0 };
    int nerr, nposted = 0;

    if (integ_ep_init(&e, 1 * MiB, 16, 16) < 0 || integ_connect(&e, c, port) < 0 ||
        get_xinfo(&e, &x) < 0)
        return -1;
    memset(wr, 0, sizeof(wr));
    memset(e.buf, 0x5a, 65536);
    sge.addr = e.buf;
    sge.lkey = integ_lkey(&e);
    if (bc->kind == BAD_WRITE_INVALIDATED) {
        sge.length = 16;
        wr[nposted].opcode = SIWARP_WR_SEND_INV;
        wr[nposted].invalidate_stag = x.stag2;
        wr[nposted].wr_id = 10;
        wr[nposted].sg_list = &sge;
        wr[nposted].num_sge = 1;
        wr[nposted].send_flags = SIWARP_SEND_SIGNALED;
        nposted++;
    }
    /* the offending operation, aimed at +4096 of the server's buffer */
    wr[nposted].wr_id = 20;
    wr[nposted].sg_list = &sge;
    wr[nposted].num_sge = 1;
    wr[nposted].send_flags = SIWARP_SEND_SIGNALED;
    sge.length = 64;
    switch (bc->kind) {
    case BAD_WRITE_KEY:
        wr[nposted].opcode = SIWARP_WR_WRITE;
        wr[nposted].rdma.rkey = x.stag ^ 0x5a;          /* right index, wrong key */
        wr[nposted].rdma.remote_addr = x.addr + 4096;
        break;
    case BAD_WRITE_BOUNDS:
        wr[nposted].opcode = SIWARP_WR_WRITE;
        wr[nposted].rdma.rkey = x.stag;
        wr[nposted].rdma.remote_addr = x.addr + x.len - 16;  /* 48 bytes past the end */
        break;
    case BAD_READ_KEY:
        wr[nposted].opcode = SIWARP_WR_READ;
        wr[nposted].rdma.rkey = x.stag ^ 0x5a;
        wr[nposted].rdma.remote_addr = x.addr + 4096;
        break;
    case BAD_WRITE_INVALIDATED:
        wr[nposted].opcode = SIWARP_WR_WRITE;
        wr[nposted].rdma.rkey = x.stag2;
        wr[nposted].rdma.remote_addr = x.addr2;
        break;
    }
    nposted++;
    /* then a Read that can only complete after the server saw the above */
    rsge.addr = e.buf + 8192;
    rsge.length = 4;
    rsge.lkey = integ_lkey(&e);
    wr[nposted].wr_id = 30;
    wr[nposted].opcode = SIWARP_WR_READ;
    wr[nposted].sg_list = &rsge;
    wr[nposted].num_sge = 1;
    wr[nposted].send_flags = SIWARP_SEND_SIGNALED;
    wr[nposted].rdma.rkey = x.stag;
    wr[nposted].rdma.remote_addr = x.addr;
    nposted++;
    for (int i = 0; i + 1 < nposted; i++)
        wr[i].next = &wr[i + 1];
    INTEG_CHECK_RC(siwarp_post_send(e.qp, wr, &bad));
    if (collect(&e, nposted, SIWARP_WC_SUCCESS, &nerr, &err) < 0)
        return -1;
    if (err.wr_id == 0) {
        INTEG_FAIL("all %d work requests completed successfully; the bad access went "
                   "unnoticed", nposted);
        return -1;
    }
    fprintf(stderr, "# first error completion: wr_id %llu status %s vendor_err %#x\n",
            (unsigned long long)err.wr_id, siwarp_wc_status_str(err.status), err.vendor_err);
    if (bc->kind == BAD_WRITE_INVALIDATED && nerr < 1) {
        INTEG_FAIL("the Send with Invalidate itself failed");
        return -1;
    }
    if (integ_wait_state(&e, SIWARP_QPS_ERROR, integ_timeout_ms(), &a) < 0)
        return -1;
    if (a.term_recv != bc->term) {
        INTEG_FAIL("client received Terminate %#x (%s), expected %#x (%s)", a.term_recv,
                   siwarp_term_str(a.term_recv), bc->term, siwarp_term_str(bc->term));
        return -1;
    }
    integ_ep_fini(&e);
    return 0;
}

static void run_bad(enum bad_kind k, uint32_t term)
{
    struct integ_cfg c;
    struct bad_case bc = { k, term };

    integ_cfg_default(&c);
    ASSERT_OK(integ_pair(&c, bad_server, bad_client, &bc));
}

/* RFC 5040 7: layer DDP (1), tagged buffer error (1), Invalid STag (0) */
TEST(remote_write_bad_stag_terminates)     { run_bad(BAD_WRITE_KEY, SWP_TERM(1, 1, 0)); }
/* ... Base or bounds violation (1) */
TEST(remote_write_out_of_bounds_terminates) { run_bad(BAD_WRITE_BOUNDS, SWP_TERM(1, 1, 1)); }
/* layer RDMAP (0), remote protection error (1), Invalid STag (0) */
TEST(remote_read_bad_stag_terminates)      { run_bad(BAD_READ_KEY, SWP_TERM(0, 1, 0)); }
/* Send with Invalidate, then a Write to the invalidated STag */
TEST(send_inv_then_write_terminates)       { run_bad(BAD_WRITE_INVALIDATED, SWP_TERM(1, 1, 0)); }

SWP_TEST_MAIN()
