/*
 * test_rx_spec.c - the speculative multi-FPDU read of Read Responses
 * (common/qp_rx_direct.c).  A raw peer answers a Read of the QP with
 * hand-built 64 KiB Read Response segments, written in two or three pieces
 * cut at every interesting octet (inside a predicted header, payload,
 * trailer, and on each boundary), so that the QP's readv ends there.  The
 * stream also leaves the prediction: a Send between two segments, a
 * segment shorter than the one before, a bad CRC or a wrong tagged offset
 * in a predicted FPDU.  Every case checks the data in the sink, the
 * completions, that nothing outside the registered region was touched,
 * and, through the QP's counters, that the predicted path really ran.
 * With CRC on, segments are read this way only below swp_rx_bulk_min_crc
 * (by default no segment is: qp_rx.c), so the CRC cases lower it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "swp.h"

#define ACC_ALL (SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_READ)
#define REGION  (256u << 10)
#define CANARY  4096u
#define SEG     65000u                    /* the raw peer's segment payload */
#define READ_LEN (3 * SEG + 12345u)       /* 4 segments, the last one short */

struct peer {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
    int raw;
    uint8_t *map, *region;
    struct siwarp_mr *mr;
    bool crc;
};

static void peer_setup(struct peer *p, bool crc)
{
    struct siwarp_qp_init_attr a = { 0 };
    struct swp_nego n;
    int sv[2];

    memset(p, 0, sizeof(*p));
    p->crc = crc;
    swp_rx_bulk_min_crc = 61440;
    ASSERT_OK(siwarp_ctx_create(&p->ctx));
    ASSERT_OK(siwarp_alloc_pd(p->ctx, &p->pd));
    ASSERT_OK(siwarp_create_cq(p->ctx, 64, &p->cq));
    a.send_cq = a.recv_cq = p->cq;
    a.max_send_wr = a.max_recv_wr = 16;
    a.max_sge = 2;
    ASSERT_OK(siwarp_create_qp(p->pd, &a, &p->qp));
    ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    p->raw = sv[1];
    ASSERT_OK(fcntl(p->raw, F_SETFL, O_NONBLOCK));
    memset(&n, 0, sizeof(n));
    n.mpa_rev = 2;
    n.crc = crc;
    n.ird = n.ord = 4;
    n.mulpdu = 65535;
    n.max_rx_ulpdu = 65535;           /* big FPDUs, as between two siwarp ends */
    n.initiator = true;
    n.peer_is_siwarp = true;
    ASSERT_OK(swp_qp_attach_fd(p->qp, sv[0], &n));
    p->map = mmap(NULL, REGION + 2 * CANARY, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                  -1, 0);
    ASSERT(p->map != MAP_FAILED);
    memset(p->map, 0xa5, REGION + 2 * CANARY);
    p->region = p->map + CANARY;
    memset(p->region, 0, REGION);
    ASSERT_OK(siwarp_reg_mr(p->pd, p->region, REGION, ACC_ALL, &p->mr));
}

static void peer_teardown(struct peer *p)
{
    siwarp_destroy_qp(p->qp);
    siwarp_dereg_mr(p->mr);
    siwarp_destroy_cq(p->cq);
    siwarp_dealloc_pd(p->pd);
    siwarp_ctx_destroy(p->ctx);
    close(p->raw);
    munmap(p->map, REGION + 2 * CANARY);
}

static void canaries_intact(struct peer *p)
{
    for (size_t i = 0; i < CANARY; i++) {
        ASSERT_EQ(p->map[i], 0xa5);
        ASSERT_EQ(p->map[CANARY + REGION + i], 0xa5);
    }
}

static uint8_t pattern(size_t i)
{
    return (uint8_t)(i * 7 + (i >> 8) + 1);
}

/* ---- the stream the raw peer sends ------------------------------------------- */

struct stream {
    uint8_t *b;
    size_t len, cap;
};

static void put_fpdu(struct peer *p, struct stream *s, const uint8_t *ulpdu, uint32_t len,
                     bool bad_crc)
{
    uint32_t pad = swp_mpa_pad(len), n = 2 + len + pad, crc;
    uint8_t *f;

    ASSERT(s->len + n + 4 <= s->cap);
    f = s->b + s->len;
    swp_put16(f, (uint16_t)len);
    memcpy(f + 2, ulpdu, len);
    memset(f + 2 + len, 0, pad);
    crc = p->crc ? swp_crc32c(0, f, n) : 0;
    if (bad_crc)
        crc ^= 0x100;
    swp_mpa_put_crc(f + n, crc);
    s->len += n + 4;
}

/* A Read Response segment: payload octets [off, off + len) of the Read,
 * placed at sink TO region + off + to_skew. */
static void put_rresp(struct peer *p, struct stream *s, uint32_t off, uint32_t len, bool last,
                      bool bad_crc, int to_skew)
{
    static uint8_t u[SWP_HDR_TAGGED + 65535];
    uint32_t h = swp_ddp_build_tagged(u, SWP_OP_READ_RESP, last, siwarp_mr_stag(p->mr),
                                      (uintptr_t)p->region + off + (int64_t)to_skew);

    for (uint32_t i = 0; i < len; i++)
        u[h + i] = pattern(off + i);
    put_fpdu(p, s, u, h + len, bad_crc);
}

static void put_send(struct peer *p, struct stream *s, uint32_t msn, uint32_t len)
{
    uint8_t u[SWP_HDR_UNTAGGED + 512];
    uint32_t h = swp_ddp_build_untagged(u, SWP_OP_SEND, true, SWP_QN_SEND, msn, 0, 0);

    memset(u + h, 0x5e, len);
    put_fpdu(p, s, u, h + len, false);
}

/* The Read of READ_LEN octets into the start of the region, and the raw
 * peer's view of it: one Read Request, which it drains. */
static void post_read(struct peer *p)
{
    struct siwarp_sge sge = { p->region, READ_LEN, siwarp_mr_stag(p->mr) };
    struct siwarp_send_wr w = { .wr_id = 11, .sg_list = &sge, .num_sge = 1,
                                .opcode = SIWARP_WR_READ, .send_flags = SIWARP_SEND_SIGNALED };
    uint8_t in[4096];
    struct pollfd pf = { p->raw, POLLIN, 0 };

    w.rdma.remote_addr = 0x10000;
    w.rdma.rkey = 0x1234;
    ASSERT_OK(siwarp_post_send(p->qp, &w, NULL));
    for (int i = 0; i < 10; i++)
        siwarp_progress(p->ctx);
    ASSERT(poll(&pf, 1, 1000) == 1);
    ssize_t n = read(p->raw, in, sizeof(in));
    ASSERT(n >= 2);
    ASSERT_EQ(swp_ctrl_opcode((const struct swp_ctrl *)(in + 2)), SWP_OP_READ_REQ);
}

/* Write s->b[from, to) and let the QP take all of it.  The raw end does
 * not block: a write larger than the socket buffer goes in pieces, with the
 * QP reading in between (both ends are this one thread). */
static void feed(struct peer *p, const struct stream *s, size_t from, size_t to)
{
    for (int spins = 0; from < to; spins++) {
        ssize_t n = write(p->raw, s->b + from, to - from);
        ASSERT(n > 0 || errno == EAGAIN);
        if (spins >= 1000) {
            struct siwarp_qp_attr at;
            siwarp_query_qp(p->qp, &at);
            FAIL("the QP stopped reading at octet %zu of %zu: state %s, %s", from, to,
                 siwarp_qp_state_str(at.state), at.error_str);
        }
        if (n > 0)
            from += (size_t)n;
        for (int i = 0; i < 4; i++)
            siwarp_progress(p->ctx);
    }
    for (int i = 0; i < 4; i++)
        siwarp_progress(p->ctx);
}

static struct siwarp_wc wait_wc(struct peer *p)
{
    struct siwarp_wc wc;

    for (int i = 0; i < 2000; i++) {
        if (siwarp_poll_cq(p->cq, 1, &wc) == 1)
            return wc;
        siwarp_wait(p->ctx, 1);
    }
    FAIL("no completion");
    return wc;
}

static void read_landed(struct peer *p)
{
    struct siwarp_wc wc = wait_wc(p);

    ASSERT_EQ(wc.wr_id, 11);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, SIWARP_WC_READ);
    for (uint32_t i = 0; i < READ_LEN; i++)
        if (p->region[i] != pattern(i))
            FAIL("sink octet %u is 0x%02x, not 0x%02x", i, p->region[i], pattern(i));
    for (uint32_t i = READ_LEN; i < REGION; i++)
        ASSERT_EQ(p->region[i], 0);
    canaries_intact(p);
}

static struct stream stream_new(void)
{
    struct stream s = { malloc(READ_LEN + 4096), 0, READ_LEN + 4096 };

    ASSERT(s.b);
    return s;
}

/* The Read answered as a responder normally does, the stream cut at c1
 * and c2: every octet arrives, the Read completes with the right data. */
static void straight(bool crc, size_t c2, uint64_t *hits)
{
    struct peer p;
    struct stream s = stream_new();

    peer_setup(&p, crc);
    post_read(&p);
    for (uint32_t off = 0; off < READ_LEN; off += SEG)
        put_rresp(&p, &s, off, READ_LEN - off < SEG ? READ_LEN - off : SEG,
                  off + SEG >= READ_LEN, false, 0);
    /* the first header and a little payload first: staged and parsed, so
     * the next read is a direct one; it finds more than it asked for, and
     * the reads after it predict */
    feed(&p, &s, 0, 120);
    feed(&p, &s, 120, c2 < s.len ? c2 : s.len);
    feed(&p, &s, c2 < s.len ? c2 : s.len, s.len);
    read_landed(&p);
    ASSERT_EQ(p.qp->rx.spec_misses, 0);
    *hits += p.qp->rx.spec_hits;
    free(s.b);
    peer_teardown(&p);
}

/* Cut points around each boundary of the 2nd and 3rd FPDUs (the first
 * predicted ones), and through their payloads. */
static void straight_all_cuts(bool crc)
{
    const size_t fpdu = 2 + SWP_HDR_TAGGED + SEG + swp_mpa_pad(SWP_HDR_TAGGED + SEG) + 4;
    uint64_t hits = 0;

    for (size_t k = 1; k <= 3; k++) {
        size_t b = k * fpdu;                       /* start of FPDU k + 1 */
        for (size_t d = 0; d <= 24; d++)           /* into its header and payload */
            straight(crc, b + d, &hits);
        for (size_t d = 1; d <= 8; d++)            /* the trailer before it */
            straight(crc, b - d, &hits);
        straight(crc, b + 4096, &hits);
        straight(crc, b + SEG / 2, &hits);
    }
    /* the predicted path ran: a bug that never predicts fails here */
    ASSERT(hits >= 50);
}

TEST(read_response_predicted_every_cut_crc) { straight_all_cuts(true); }
TEST(read_response_predicted_every_cut_nocrc) { straight_all_cuts(false); }

/* Cut points across the first FPDU that leaves the prediction. */
static const size_t cuts[] = { 0, 1, 15, 16, 17, 40, 4096, 40000 };

/* A Send between the second and third segment: the bytes read into the
 * sink for the predicted third segment are the Send's and those after it;
 * they must be re-parsed and both messages delivered.  (Predictions start
 * once a read found the socket holding more than it asked for: here the
 * read of the first segment's rest.) */
static void interleaved(bool crc, size_t cut)
{
    struct peer p;
    struct stream s = stream_new();
    struct siwarp_sge rs;
    static uint8_t rbuf[1024];
    struct siwarp_mr *rmr;

    peer_setup(&p, crc);
    ASSERT_OK(siwarp_reg_mr(p.pd, rbuf, sizeof(rbuf), SIWARP_ACCESS_LOCAL_WRITE, &rmr));
    memset(rbuf, 0, sizeof(rbuf));
    rs.addr = rbuf;
    rs.length = sizeof(rbuf);
    rs.lkey = siwarp_mr_stag(rmr);
    struct siwarp_recv_wr r = { .wr_id = 22, .sg_list = &rs, .num_sge = 1 };
    ASSERT_OK(siwarp_post_recv(p.qp, &r, NULL));
    post_read(&p);
    put_rresp(&p, &s, 0, SEG, false, false, 0);
    put_rresp(&p, &s, SEG, SEG, false, false, 0);
    size_t first = s.len;
    put_send(&p, &s, 1, 300);
    for (uint32_t off = 2 * SEG; off < READ_LEN; off += SEG)
        put_rresp(&p, &s, off, READ_LEN - off < SEG ? READ_LEN - off : SEG,
                  off + SEG >= READ_LEN, false, 0);
    feed(&p, &s, 0, 120);
    feed(&p, &s, 120, first + cut);
    feed(&p, &s, first + cut, s.len);
    struct siwarp_wc a = wait_wc(&p), b = wait_wc(&p);
    struct siwarp_wc *recv = a.wr_id == 22 ? &a : &b;
    ASSERT_EQ(recv->wr_id, 22);
    ASSERT_EQ(recv->status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(recv->byte_len, 300);
    for (int i = 0; i < 300; i++)
        ASSERT_EQ(rbuf[i], 0x5e);
    ASSERT_EQ(rbuf[300], 0);
    struct siwarp_wc *rd = a.wr_id == 11 ? &a : &b;
    ASSERT_EQ(rd->wr_id, 11);
    ASSERT_EQ(rd->status, SIWARP_WC_SUCCESS);
    for (uint32_t i = 0; i < READ_LEN; i++)
        if (p.region[i] != pattern(i))
            FAIL("cut %zu: sink octet %u is 0x%02x, not 0x%02x", cut, i, p.region[i], pattern(i));
    canaries_intact(&p);
    if (cut >= 16)      /* the Send's header was read as a predicted one */
        ASSERT(p.qp->rx.spec_misses >= 1);
    siwarp_dereg_mr(rmr);
    free(s.b);
    peer_teardown(&p);
}

TEST(send_between_read_response_segments)
{
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        if (cuts[i] <= 40)
            interleaved(true, cuts[i]);
    }
    interleaved(false, 16);
}

/* The responder cuts its segments differently from the prediction (a
 * short one in the middle): the read must fall back and still place
 * every octet where its header says. */
static void uneven(bool crc, size_t cut)
{
    struct peer p;
    struct stream s = stream_new();
    const uint32_t sizes[] = { SEG, SEG, 30000, READ_LEN - 2 * SEG - 30000 };
    size_t first = 0;

    peer_setup(&p, crc);
    post_read(&p);
    for (uint32_t i = 0, off = 0; i < 4; off += sizes[i], i++) {
        put_rresp(&p, &s, off, sizes[i], i == 3, false, 0);
        if (i == 1)
            first = s.len;
    }
    feed(&p, &s, 0, 120);
    feed(&p, &s, 120, first + cut);
    feed(&p, &s, first + cut, s.len);
    read_landed(&p);
    if (cut >= 16)
        ASSERT(p.qp->rx.spec_misses >= 1);
    free(s.b);
    peer_teardown(&p);
}

TEST(read_response_segments_not_as_predicted)
{
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
        uneven(true, cuts[i]);
    uneven(false, 40000);
}

/* A predicted FPDU that is broken is judged like any other: a bad CRC
 * (RFC 5044 8) or an offset outside the Read (RFC 5041 7.2) ends the
 * stream, and nothing outside the registered region is touched. */
static void broken(bool bad_crc, int skew, uint32_t want_term)
{
    struct peer p;
    struct stream s = stream_new();
    struct siwarp_qp_attr at;

    peer_setup(&p, true);
    post_read(&p);
    /* the third segment is the first one predicted (see interleaved) */
    put_rresp(&p, &s, 0, SEG, false, false, 0);
    put_rresp(&p, &s, SEG, SEG, false, false, 0);
    put_rresp(&p, &s, 2 * SEG, SEG, false, bad_crc, skew);
    put_rresp(&p, &s, 3 * SEG, READ_LEN - 3 * SEG, true, false, 0);
    feed(&p, &s, 0, 120);
    feed(&p, &s, 120, s.len);
    for (int i = 0; i < 1000; i++) {
        siwarp_query_qp(p.qp, &at);
        if (at.state == SIWARP_QPS_ERROR)
            break;
        siwarp_wait(p.ctx, 1);
    }
    ASSERT_EQ(at.state, SIWARP_QPS_ERROR);
    ASSERT_EQ(at.term_sent, want_term);
    if (bad_crc)        /* taken as predicted, then judged by its CRC */
        ASSERT_EQ(p.qp->rx.spec_hits, 1);
    struct siwarp_wc wc = wait_wc(&p);
    ASSERT_EQ(wc.wr_id, 11);
    ASSERT(wc.status != SIWARP_WC_SUCCESS);
    canaries_intact(&p);
    for (uint32_t i = READ_LEN; i < REGION; i++)
        ASSERT_EQ(p.region[i], 0);
    free(s.b);
    peer_teardown(&p);
}

TEST(predicted_fpdu_with_bad_crc)
{
    broken(true, 0, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_CRC));
}

TEST(predicted_fpdu_at_wrong_offset)
{
    broken(false, 8, SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_TAGGED, SWP_DDP_EC_T_BASE_BOUNDS));
}

SWP_TEST_MAIN()
