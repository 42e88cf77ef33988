/*
 * test_recv_handler.c - siwarp_cq_set_recv_handler: Sends handed to the
 * consumer from inside progress.  A small message that came whole in one
 * read arrives where the library read it and leaves the posted buffer
 * posted; any other lands in that buffer; both in arrival order.  The
 * protocol rules hold as without a handler: a message with a bad CRC never
 * reaches it (RFC 5044 4.4), a Send with no buffer posted or too long for
 * it is still the Terminate RFC 5041 7.2 names.  Two QPs over a socketpair
 * (qp_pair.h); qp[1]'s CQ has the handler.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "qp_pair.h"
#include "swp.h"

#define ACC_ALL (SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_READ)
#define MAXMSG 64
#define BUF 4096

/* What the handler saw, message by message. */
struct seen {
    int n;
    struct siwarp_wc wc[MAXMSG];
    uint8_t data[MAXMSG][BUF];      /* a copy of the inline payload (up to BUF) */
    uint32_t sum[MAXMSG];           /* CRC32c of all of it */
    bool inl[MAXMSG];
    bool aligned[MAXMSG];
    int depth, max_depth;           /* a handler called from within itself */
    /* what the handler tried from inside progress */
    struct swp_test_pair *p;
    int progress_rc, destroy_rc, poll_rc;
    bool echo;                      /* send each message back on qp[1] */
    uint8_t *echo_buf;              /* BUF octets for each message echoed */
    struct siwarp_mr *echo_mr;
};

static void on_recv(void *arg, const struct siwarp_wc *wc, const void *data)
{
    struct seen *s = arg;
    struct siwarp_wc none;

    ASSERT(s->n < MAXMSG);
    if (++s->depth > s->max_depth)
        s->max_depth = s->depth;
    s->wc[s->n] = *wc;
    s->inl[s->n] = data != NULL;
    if (data) {
        memcpy(s->data[s->n], data, wc->byte_len < BUF ? wc->byte_len : BUF);
        s->sum[s->n] = swp_crc32c(0, data, wc->byte_len);
        s->aligned[s->n] = ((uintptr_t)data & 7) == 0;
    }
    s->n++;
    if (!s->p) {
        s->depth--;
        return;
    }
    s->progress_rc = siwarp_progress(s->p->ctx);
    s->destroy_rc = siwarp_destroy_qp(s->p->qp[1]);
    s->poll_rc = siwarp_poll_cq(s->p->cq[1], 1, &none);
    if (s->echo && data) {
        uint8_t *eb = s->echo_buf + (size_t)(s->n - 1) * BUF;  /* one per message */
        memcpy(eb, data, wc->byte_len);
        struct siwarp_sge sge = { eb, wc->byte_len, siwarp_mr_stag(s->echo_mr) };
        struct siwarp_send_wr sw = { .wr_id = 77, .sg_list = &sge, .num_sge = 1,
                                     .opcode = SIWARP_WR_SEND };
        ASSERT_OK(siwarp_post_send(s->p->qp[1], &sw, NULL));
    }
    s->depth--;
}

static void pair_setup(struct swp_test_pair *p, bool markers)
{
    const struct swp_test_pair_opts o = { .cqe = 256, .depth = 64, .ird_ord = 16,
                                          .mulpdu = 65000, .crc = true, .markers = markers };
    swp_test_pair_setup(p, &o);
    ASSERT_OK(siwarp_ctx_set_single_thread(p->ctx, true));
}

/* The pair with on_recv as qp[1]'s handler, for messages up to max_len. */
static void handler_setup(struct swp_test_pair *p, bool markers, struct seen *s, uint32_t max_len)
{
    pair_setup(p, markers);
    ASSERT_OK(siwarp_cq_set_recv_handler(p->cq[1], on_recv, s, max_len));
}

static struct siwarp_mr *reg(struct swp_test_pair *p, void *buf, size_t len)
{
    struct siwarp_mr *mr;
    ASSERT_OK(siwarp_reg_mr(p->pd, buf, len, ACC_ALL, &mr));
    return mr;
}

static void post_recv(struct swp_test_pair *p, int qp, uint64_t wr_id, void *buf, uint32_t len,
                      struct siwarp_mr *mr)
{
    struct siwarp_sge sge = { buf, len, siwarp_mr_stag(mr) };
    struct siwarp_recv_wr rw = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
    ASSERT_OK(siwarp_post_recv(p->qp[qp], &rw, NULL));
}

/* A Send of len bytes from buf on qp[0]. */
static void send_msg(struct swp_test_pair *p, void *buf, uint32_t len, struct siwarp_mr *mr,
                     enum siwarp_wr_opcode op, uint32_t inv)
{
    struct siwarp_sge sge = { buf, len, siwarp_mr_stag(mr) };
    struct siwarp_send_wr sw = { .wr_id = len, .sg_list = &sge, .num_sge = 1, .opcode = op,
                                 .invalidate_stag = inv };
    ASSERT_OK(siwarp_post_send(p->qp[0], &sw, NULL));
}

/* Progress through qp[1]'s CQ until the handler saw want messages (or
 * qp[1] left RTS); the CQ itself must stay empty of receives. */
static void pump(struct swp_test_pair *p, struct seen *s, int want)
{
    struct siwarp_wc wc;

    for (int i = 0; i < 200000 && s->n < want; i++) {
        int got = siwarp_poll_cq(p->cq[1], 1, &wc);
        ASSERT(got >= 0);
        if (got)
            ASSERT(wc.opcode != SIWARP_WC_RECV || wc.status != SIWARP_WC_SUCCESS);
        if (p->qp[1]->state != SIWARP_QPS_RTS)
            break;
    }
}

static void fill(uint8_t *b, uint32_t len, int seed)
{
    for (uint32_t i = 0; i < len; i++)
        b[i] = (uint8_t)(seed * 31 + i * 7);
}

TEST(recv_handler_small_sends_arrive_in_place_and_the_buffer_stays_posted)
{
    static uint8_t tx[BUF], rx[BUF];
    static struct seen s;
    struct swp_test_pair p;

    handler_setup(&p, false, &s, 256);
    struct siwarp_mr *mt = reg(&p, tx, sizeof(tx)), *mr = reg(&p, rx, sizeof(rx));
    memset(rx, 0xee, sizeof(rx));
    post_recv(&p, 1, 42, rx, sizeof(rx), mr);
    /* one at a time: each is the first FPDU of its read */
    for (int i = 0; i < 20; i++) {
        uint32_t len = 1 + (uint32_t)i * 13;
        fill(tx, len, i);
        send_msg(&p, tx, len, mt, SIWARP_WR_SEND, 0);
        pump(&p, &s, i + 1);
        ASSERT_EQ(s.n, i + 1);
        ASSERT(s.inl[i]);
        ASSERT(s.aligned[i]);
        ASSERT_EQ(s.wc[i].wr_id, 0);
        ASSERT_EQ(s.wc[i].byte_len, len);
        ASSERT_EQ(s.wc[i].status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(s.wc[i].opcode, SIWARP_WC_RECV);
        ASSERT(s.wc[i].wc_flags & SIWARP_WC_INLINE);
        ASSERT(s.wc[i].qp == p.qp[1]);
        ASSERT_MEM_EQ(s.data[i], tx, len);
    }
    ASSERT_EQ(rx[0], 0xee);             /* the buffer was never written */
    /* still posted: a message over the limit lands in it */
    fill(tx, 1000, 99);
    send_msg(&p, tx, 1000, mt, SIWARP_WR_SEND_SE, 0);
    pump(&p, &s, 21);
    ASSERT_EQ(s.n, 21);
    ASSERT(!s.inl[20]);
    ASSERT_EQ(s.wc[20].wr_id, 42);
    ASSERT_EQ(s.wc[20].byte_len, 1000);
    ASSERT(!(s.wc[20].wc_flags & SIWARP_WC_INLINE));
    ASSERT(s.wc[20].wc_flags & SIWARP_WC_SOLICITED);
    ASSERT_MEM_EQ(rx, tx, 1000);
}

TEST(recv_handler_keeps_arrival_order_between_inline_and_buffered)
{
    static uint8_t tx[MAXMSG][BUF], rx[MAXMSG][BUF];
    static struct seen s;
    struct swp_test_pair p;
    const int n = 40;

    handler_setup(&p, false, &s, 512);
    struct siwarp_mr *mt = reg(&p, tx, sizeof(tx)), *mr = reg(&p, rx, sizeof(rx));
    for (int i = 0; i < n; i++)
        post_recv(&p, 1, 100 + (uint64_t)i, rx[i], BUF, mr);
    /* all posted before any is read: many FPDUs a read, at every offset */
    for (int i = 0; i < n; i++) {
        uint32_t len = i % 3 == 2 ? 3000 : 4 + (uint32_t)i * 9;
        fill(tx[i], len, i);
        tx[i][0] = (uint8_t)i;
        send_msg(&p, tx[i], len, mt, SIWARP_WR_SEND, 0);
    }
    pump(&p, &s, n);
    ASSERT_EQ(s.n, n);
    int buffered = 0;
    for (int i = 0; i < n; i++) {
        uint32_t len = i % 3 == 2 ? 3000 : 4 + (uint32_t)i * 9;
        ASSERT_EQ(s.wc[i].byte_len, len);
        if (s.inl[i]) {
            ASSERT(len <= 512);
            ASSERT_MEM_EQ(s.data[i], tx[i], len);
        } else {
            /* buffers are taken in posting order by the messages that
             * needed one */
            ASSERT_EQ(s.wc[i].wr_id, 100 + (uint64_t)buffered);
            ASSERT_MEM_EQ(rx[buffered], tx[i], len);
            buffered++;
        }
    }
    ASSERT(buffered >= n / 3);              /* every 3000-byte one, at least */
}

/* A Send FPDU with the given MSN built by hand, for bytes the test writes
 * on qp[0]'s socket itself. */
static uint32_t raw_send_fpdu(uint8_t *f, uint32_t msn, const uint8_t *payload, uint32_t len,
                              bool bad_crc)
{
    struct swp_ddp_untagged_hdr *u = (struct swp_ddp_untagged_hdr *)(f + SWP_MPA_HDR_LEN);
    uint32_t ulpdu = SWP_HDR_UNTAGGED + len, n, crc;

    memset(f, 0, SWP_MPA_HDR_LEN + SWP_HDR_UNTAGGED);
    swp_put16(f, (uint16_t)ulpdu);
    u->ctrl.ddp = swp_ctrl_ddp(0, 1);
    u->ctrl.rdmap = swp_ctrl_rdmap(SWP_OP_SEND);
    swp_put32(u->qn, SWP_QN_SEND);
    swp_put32(u->msn, msn);
    swp_put32(u->mo, 0);
    memcpy(f + SWP_MPA_HDR_LEN + SWP_HDR_UNTAGGED, payload, len);
    n = SWP_MPA_HDR_LEN + ulpdu;
    memset(f + n, 0, swp_mpa_pad(ulpdu));
    n += swp_mpa_pad(ulpdu);
    crc = swp_crc32c(0, f, n) ^ (bad_crc ? 0x100u : 0);
    swp_mpa_put_crc(f + n, crc);
    return n + SWP_MPA_CRC_LEN;
}

static void raw_write(struct swp_test_pair *p, const uint8_t *b, size_t n)
{
    ASSERT_EQ(write(p->qp[0]->pl.fd, b, n), (ssize_t)n);
}

TEST(recv_handler_takes_a_buffer_for_a_message_split_across_reads)
{
    static uint8_t rx[BUF], f[BUF], msg[100];
    static struct seen s;
    struct swp_test_pair p;
    uint32_t n;

    handler_setup(&p, false, &s, 1024);
    post_recv(&p, 1, 7, rx, sizeof(rx), reg(&p, rx, sizeof(rx)));
    fill(msg, sizeof(msg), 3);
    n = raw_send_fpdu(f, 1, msg, sizeof(msg), false);
    raw_write(&p, f, 40);                   /* header and part of the payload */
    for (int i = 0; i < 50; i++)
        (void)siwarp_progress(p.ctx);
    ASSERT_EQ(s.n, 0);
    raw_write(&p, f + 40, n - 40);
    pump(&p, &s, 1);
    ASSERT_EQ(s.n, 1);
    ASSERT(!s.inl[0]);
    ASSERT_EQ(s.wc[0].wr_id, 7);
    ASSERT_MEM_EQ(rx, msg, sizeof(msg));
}

TEST(recv_handler_never_sees_a_message_with_a_bad_crc)
{
    static uint8_t rx[BUF], f[BUF], msg[64];
    static struct seen s;
    struct swp_test_pair p;
    struct siwarp_qp_attr attr;
    struct siwarp_wc wc;

    handler_setup(&p, false, &s, 1024);
    post_recv(&p, 1, 9, rx, sizeof(rx), reg(&p, rx, sizeof(rx)));
    fill(msg, sizeof(msg), 5);
    raw_write(&p, f, raw_send_fpdu(f, 1, msg, sizeof(msg), true));
    for (int i = 0; i < 200000 && p.qp[1]->state == SIWARP_QPS_RTS; i++)
        (void)siwarp_progress(p.ctx);
    ASSERT_EQ(s.n, 0);
    ASSERT_OK(siwarp_query_qp(p.qp[1], &attr));
    ASSERT_EQ(attr.term_sent, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_CRC));
    /* the posted buffer comes back flushed, through the CQ */
    int got = 0;
    for (int i = 0; i < 1000 && !got; i++)
        got = siwarp_poll_cq(p.cq[1], 1, &wc);
    ASSERT_EQ(got, 1);
    ASSERT_EQ(wc.wr_id, 9);
    ASSERT_EQ(wc.status, SIWARP_WC_WR_FLUSH_ERR);
    ASSERT_EQ(s.n, 0);
}

/* Three 30,000-octet Sends written at once: the first read (SWP_RX_READ,
 * 64 KiB) holds two of them whole and the start of the third.  Its rest is
 * read behind it, and all three reach the handler in place, 8-aligned.
 * With the third one's CRC broken, the first two still arrive, and the
 * third never does: the stream ends with the Terminate RFC 5044 4.4
 * names, whatever moved in the staging buffer. */
static void cut_by_a_read(bool bad_crc)
{
    enum { LEN = 30000, N = 3 };
    static uint8_t rx[LEN], f[N * (LEN + 64)], msg[N][LEN];
    static struct seen s;
    struct swp_test_pair p;
    struct siwarp_qp_attr attr;
    uint32_t n = 0;

    memset(&s, 0, sizeof(s));
    handler_setup(&p, false, &s, LEN);
    post_recv(&p, 1, 3, rx, sizeof(rx), reg(&p, rx, sizeof(rx)));
    for (int i = 0; i < N; i++) {
        fill(msg[i], LEN, 40 + i);
        n += raw_send_fpdu(f + n, (uint32_t)i + 1, msg[i], LEN, bad_crc && i == N - 1);
    }
    ASSERT(2 * (n / N) < SWP_RX_READ && n > SWP_RX_READ);
    raw_write(&p, f, n);
    for (int i = 0; i < 200000 && s.n < N && p.qp[1]->state == SIWARP_QPS_RTS; i++)
        (void)siwarp_progress(p.ctx);
    ASSERT_EQ(s.n, bad_crc ? N - 1 : N);
    for (int i = 0; i < s.n; i++) {
        ASSERT(s.inl[i]);
        ASSERT(s.aligned[i]);
        ASSERT_EQ(s.wc[i].byte_len, LEN);
        ASSERT_EQ(s.sum[i], swp_crc32c(0, msg[i], LEN));
    }
    ASSERT_OK(siwarp_query_qp(p.qp[1], &attr));
    ASSERT_EQ(attr.term_sent, bad_crc ? SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_CRC) : 0);
}

TEST(recv_handler_reads_the_rest_of_a_message_a_read_cut)
{
    cut_by_a_read(false);
}

TEST(recv_handler_never_sees_a_cut_message_with_a_bad_crc)
{
    cut_by_a_read(true);
}

/* Behind a 28-octet FPDU a payload lies 4 octets off 8-alignment: up to
 * 2 KiB it is still handed over in place (the consumer aligns a copy),
 * a longer one goes to the buffer, where the copy carries the CRC. */
TEST(recv_handler_gets_a_long_unaligned_message_in_a_buffer)
{
    static uint8_t rx[BUF], f[3 * BUF], msg[3][3000];
    static struct seen s;
    const uint32_t len[3] = { 4, 2048, 3000 };
    struct swp_test_pair p;
    uint32_t n = 0;

    handler_setup(&p, false, &s, BUF);
    post_recv(&p, 1, 11, rx, sizeof(rx), reg(&p, rx, sizeof(rx)));
    for (int i = 0; i < 3; i++) {
        fill(msg[i], len[i], 60 + i);
        n += raw_send_fpdu(f + n, (uint32_t)i + 1, msg[i], len[i], false);
        ASSERT_EQ(n % 8, 4);            /* each one puts the next off by 4 */
    }
    raw_write(&p, f, n);
    pump(&p, &s, 3);
    ASSERT_EQ(s.n, 3);
    ASSERT(s.inl[0] && s.aligned[0]);
    ASSERT(s.inl[1] && !s.aligned[1]);
    ASSERT_MEM_EQ(s.data[1], msg[1], len[1]);
    ASSERT(!s.inl[2]);
    ASSERT_EQ(s.wc[2].wr_id, 11);
    ASSERT_MEM_EQ(rx, msg[2], len[2]);
}

/* RFC 5041 7.2 with a handler set: an inline delivery still needs a buffer
 * that could have taken the message. */
static void expect_terminate(uint32_t posted_len, uint32_t send_len, uint32_t term)
{
    static uint8_t tx[BUF], rx[BUF];
    static struct seen s;
    struct swp_test_pair p;
    struct siwarp_qp_attr attr;

    struct siwarp_mr *mrx = NULL, *mtx;

    memset(&s, 0, sizeof(s));
    handler_setup(&p, false, &s, 1024);
    if (posted_len)
        post_recv(&p, 1, 1, rx, posted_len, mrx = reg(&p, rx, sizeof(rx)));
    send_msg(&p, tx, send_len, mtx = reg(&p, tx, sizeof(tx)), SIWARP_WR_SEND, 0);
    pump(&p, &s, 1);
    ASSERT_EQ(s.n, 0);
    ASSERT_OK(siwarp_query_qp(p.qp[1], &attr));
    ASSERT_EQ(attr.term_sent, term);
    if (mrx)
        ASSERT_OK(siwarp_dereg_mr(mrx));
    ASSERT_OK(siwarp_dereg_mr(mtx));
    ASSERT_OK(siwarp_cq_set_recv_handler(p.cq[1], NULL, NULL, 0));
    swp_test_pair_teardown(&p);
}

TEST(recv_handler_send_with_no_buffer_posted_is_still_terminated)
{
    expect_terminate(0, 8, SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_NO_BUF));
}

TEST(recv_handler_send_too_long_for_the_buffer_is_still_terminated)
{
    expect_terminate(16, 64, SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_TOO_LONG));
}

TEST(recv_handler_may_post_but_not_progress_or_destroy)
{
    static uint8_t tx[2][BUF], rx[BUF], back[2][BUF], echo[2][BUF];
    static struct seen s;
    struct swp_test_pair p;
    struct siwarp_wc wc;
    int got = 0;

    pair_setup(&p, false);
    s.p = &p;
    s.echo = true;
    s.echo_mr = reg(&p, echo, sizeof(echo));
    s.progress_rc = s.destroy_rc = s.poll_rc = 12345;
    ASSERT_OK(siwarp_cq_set_recv_handler(p.cq[1], on_recv, &s, 1024));
    post_recv(&p, 1, 1, rx, sizeof(rx), reg(&p, rx, sizeof(rx)));
    struct siwarp_mr *mb = reg(&p, back, sizeof(back)), *mt = reg(&p, tx, sizeof(tx));
    /* two messages in one read: a progress call inside the first's handler
     * that read on would hand over the second from within it */
    for (int i = 0; i < 2; i++) {
        post_recv(&p, 0, 2 + (uint64_t)i, back[i], BUF, mb);
        fill(tx[i], 300, 8 + i);
    }
    s.echo_buf = echo[0];
    send_msg(&p, tx[0], 300, mt, SIWARP_WR_SEND, 0);
    send_msg(&p, tx[1], 300, mt, SIWARP_WR_SEND, 0);
    for (int i = 0; i < 200000 && s.n < 2; i++)
        (void)siwarp_poll_cq(p.cq[1], 1, &wc);
    ASSERT_EQ(s.n, 2);
    ASSERT_EQ(s.max_depth, 1);
    ASSERT(s.inl[0] && s.inl[1]);
    ASSERT_EQ(s.progress_rc, 0);            /* read no socket */
    ASSERT_EQ(s.destroy_rc, -EBUSY);
    ASSERT_EQ(s.poll_rc, 0);
    ASSERT_EQ(p.qp[1]->state, SIWARP_QPS_RTS);
    /* the echoes the handler posted arrive at qp[0], whose CQ has none */
    for (int i = 0; i < 200000 && got < 2; i++) {
        if (siwarp_poll_cq(p.cq[0], 1, &wc) == 1 && wc.opcode == SIWARP_WC_RECV) {
            ASSERT_EQ(wc.wr_id, 2 + (uint64_t)got);
            ASSERT_EQ(wc.byte_len, 300);
            got++;
        }
        (void)siwarp_poll_cq(p.cq[1], 1, &wc);
    }
    ASSERT_EQ(got, 2);
    ASSERT_MEM_EQ(back[0], tx[0], 300);
    ASSERT_MEM_EQ(back[1], tx[1], 300);
    /* progress is whole again once the handler returned */
    ASSERT(siwarp_progress(p.ctx) >= 0);
}

TEST(recv_handler_send_with_invalidate_invalidates_in_place)
{
    static uint8_t tx[BUF], rx[BUF], target[64];
    static struct seen s;
    struct swp_test_pair p;

    handler_setup(&p, false, &s, 1024);
    struct siwarp_mr *victim = reg(&p, target, sizeof(target));
    uint32_t stag = siwarp_mr_stag(victim);
    post_recv(&p, 1, 1, rx, sizeof(rx), reg(&p, rx, sizeof(rx)));
    send_msg(&p, tx, 16, reg(&p, tx, sizeof(tx)), SIWARP_WR_SEND_INV, stag);
    pump(&p, &s, 1);
    ASSERT_EQ(s.n, 1);
    ASSERT(s.inl[0]);
    ASSERT(s.wc[0].wc_flags & SIWARP_WC_WITH_INV);
    ASSERT_EQ(s.wc[0].invalidated_stag, stag);
    /* RFC 5040 6.2: the STag is invalid now */
    struct siwarp_sge sge = { target, 8, stag };
    ASSERT(swp_mem_check_local(p.ctx, p.pd, &sge, SIWARP_ACCESS_LOCAL_WRITE) < 0);
}

TEST(recv_handler_with_markers_always_uses_a_buffer)
{
    static uint8_t tx[BUF], rx[BUF];
    static struct seen s;
    struct swp_test_pair p;

    handler_setup(&p, true, &s, 1024);
    post_recv(&p, 1, 5, rx, sizeof(rx), reg(&p, rx, sizeof(rx)));
    fill(tx, 32, 1);
    send_msg(&p, tx, 32, reg(&p, tx, sizeof(tx)), SIWARP_WR_SEND, 0);
    pump(&p, &s, 1);
    ASSERT_EQ(s.n, 1);
    ASSERT(!s.inl[0]);
    ASSERT_EQ(s.wc[0].wr_id, 5);
    ASSERT_MEM_EQ(rx, tx, 32);
}

TEST(recv_handler_needs_a_single_thread_context)
{
    static struct seen s;
    struct swp_test_pair p;
    const struct swp_test_pair_opts o = { .cqe = 64, .depth = 16, .ird_ord = 4,
                                          .mulpdu = 65000, .crc = true };

    swp_test_pair_setup(&p, &o);
    ASSERT_EQ(siwarp_cq_set_recv_handler(NULL, on_recv, &s, 64), -EINVAL);
    ASSERT_EQ(siwarp_cq_set_recv_handler(p.cq[1], on_recv, &s, 64), -EINVAL);
    ASSERT_OK(siwarp_ctx_set_single_thread(p.ctx, true));
    ASSERT_OK(siwarp_cq_set_recv_handler(p.cq[1], on_recv, &s, 64));
    ASSERT_EQ(siwarp_ctx_set_single_thread(p.ctx, false), -EBUSY);
    ASSERT_OK(siwarp_cq_set_recv_handler(p.cq[1], NULL, NULL, 0));
    ASSERT_OK(siwarp_ctx_set_single_thread(p.ctx, false));
}

SWP_TEST_MAIN()
