/*
 * test_rx_cuts.c - a foreign sender's stream, cut anywhere.
 *
 * A raw peer plays another iWARP implementation: it sends Sends and RDMA
 * Writes, and answers the QP's Read Requests with Read Responses, whose
 * segments it slips between the segments of its Sends and Writes (Linux
 * siw alternates whole messages, siw_activate_tx; a receiver has to take
 * either).  Its FPDUs are cut the way such a peer cuts them: to fit a
 * 1,500-octet MTU's 1,448-octet segments (siw's FPDUs on Ethernet), a
 * jumbo frame's 8,948, the largest ULPDU MPA can frame, or at random
 * lengths; its CRCs (RFC 5044 4.4) come from a table CRC32c of this
 * file's own, not from libsiwarp's engines.  The bytes go to the QP in
 * writes of random length, from one octet to 256 KiB, with progress calls
 * between them at random, so that the QP's reads end anywhere: inside a
 * header, a payload, a pad or a CRC, one octet after a Send's header, in
 * the middle of a Read Response whose next segments the QP predicted.
 *
 * Receive side as btl_siwarp runs it (an SRQ and a receive handler that
 * takes messages in place) and as a plain verbs consumer does (the QP's
 * own receive queue, completions from the CQ), CRC on and off, and with
 * large segments read straight into their target with CRC on.  Every
 * Send must complete, in order, with its length and its octets; every
 * Write and Read must place its octets exactly; no CRC error, no
 * Terminate, no flush.  The control: with the CRC of one FPDU in 500
 * spoiled on purpose the QP must report the CRC error (crc_error_seen).
 * Each run prints what it exercised (messages handed over in place,
 * octets read straight into place, predicted segments taken and not).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "raw_peer.h"
#include "swp.h"

#define NBUF      32              /* receive buffers */
#define BUF_SZ    66048
#define MAX_SEND  66000
#define WAREA     (256u * 1024)   /* RDMA Write target */
#define ORD       4               /* Reads outstanding at most (raw_peer's IRD/ORD) */
#define READ_MAX  (512u * 1024)
#define MAX_MSGS  4096
#define ULPDU_MAX 65535u          /* the QP takes what MPA can frame (RFC 5044 4.1) */

/* ---- an independent CRC32c (Castagnoli, reflected 0x82f63b78) ---------- */

static uint32_t crc_tab[256];

static void crc_tab_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
        crc_tab[i] = c;
    }
}

static uint32_t ref_crc32c(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;

    while (n--)
        c = crc_tab[(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

/* ---- what the messages carry -------------------------------------------- */

static uint8_t send_octet(uint32_t id, uint32_t k)
{
    return (uint8_t)(id * 131u + k * 7u + (k >> 9));
}

static uint8_t read_octet(uint32_t id, uint32_t k)
{
    return (uint8_t)(id * 29u + k * 3u + (k >> 11) + 5u);
}

/* Read n's length: one in four up to READ_MAX, the others up to 64 KiB */
static uint32_t read_len(uint32_t id)
{
    return (id * 7919u) % (id % 4 ? 65536u : READ_MAX) + 1;
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint32_t rnd_upto(uint64_t *s, uint32_t n)      /* 0..n-1 */
{
    return (uint32_t)(rnd(s) % n);
}

/* ---- the run ------------------------------------------------------------ */

struct owed {                     /* a Read Response the raw peer owes */
    uint32_t stag, len, off, id;
    uint64_t to;
};

struct run {
    struct peer p;
    uint64_t rng;
    bool handler, crc, burst;
    uint32_t mss;                 /* FPDU length limit; 0: random lengths */
    uint32_t spoil_every;         /* spoil one FPDU's CRC in this many (0: none) */
    /* receive side */
    uint8_t *bufs, *warea, *shadow, *sink;
    struct siwarp_mr *buf_mr, *w_mr, *sink_mr;
    uint32_t send_len[MAX_MSGS];
    uint32_t sends_made, sends_done, in_place;
    uint32_t reads_posted, reads_done, nreads;
    /* the raw peer's transmit side */
    uint8_t *out;
    size_t out_len, out_off, out_cap;
    int kind;                     /* current send-queue message: 0 none, 1 Send, 2 Write */
    uint32_t len, off, id, woff;
    struct owed owed[ORD];
    int nowed;
    uint32_t nmsgs, msgs_made, fpdus, resp_between;
    uint8_t in[8192];             /* what the QP sent: Read Requests */
    size_t in_len;
    bool crc_error;
};

/* A completion in error: what the QP said when it failed. */
static void fail_wc(struct run *r, const char *what, uint32_t id, const struct siwarp_wc *wc)
{
    struct siwarp_qp_attr at;
    char term[128] = "none";

    if (siwarp_query_qp(r->p.qp, &at) == 0 && at.term_sent)
        swp_term_str(at.term_sent, term, sizeof(term));
    FAIL("%s %u: %s (Terminate sent: %s; after %u FPDUs)", what, id,
         siwarp_wc_status_str(wc->status), term, r->fpdus);
}

static void post_buf(struct run *r, uint32_t i)
{
    struct siwarp_sge s = { r->bufs + (size_t)i * BUF_SZ, BUF_SZ, siwarp_mr_stag(r->buf_mr) };
    struct siwarp_recv_wr w = { .wr_id = i + 1, .sg_list = &s, .num_sge = 1 };

    if (r->p.srq)
        ASSERT_OK(siwarp_post_srq_recv(r->p.srq, &w, NULL));
    else
        ASSERT_OK(siwarp_post_recv(r->p.qp, &w, NULL));
}

/* One Send arrived: the next one in order, with its length and octets. */
static void check_send(struct run *r, const struct siwarp_wc *wc, const uint8_t *data)
{
    uint32_t id = r->sends_done;

    if (wc->status != SIWARP_WC_SUCCESS)
        fail_wc(r, "Send", id, wc);
    ASSERT(id < r->sends_made);
    if (!data) {
        ASSERT(wc->wr_id >= 1 && wc->wr_id <= NBUF);
        data = r->bufs + (size_t)(wc->wr_id - 1) * BUF_SZ;
    }
    if (wc->byte_len != r->send_len[id])
        FAIL("Send %u: %u octets, %u sent", id, wc->byte_len, r->send_len[id]);
    for (uint32_t k = 0; k < wc->byte_len; k++)
        if (data[k] != send_octet(id, k))
            FAIL("Send %u (%u octets%s): octet %u is 0x%02x, 0x%02x sent", id, wc->byte_len,
                 wc->wr_id ? "" : ", in place", k, data[k], send_octet(id, k));
    if (wc->wr_id)
        post_buf(r, (uint32_t)(wc->wr_id - 1));
    else
        r->in_place++;
    r->sends_done++;
}

static void on_recv(void *arg, const struct siwarp_wc *wc, const void *data)
{
    check_send(arg, wc, data);
}

static void check_read(struct run *r, const struct siwarp_wc *wc)
{
    uint32_t id = (uint32_t)(wc->wr_id - 0x10000);
    const uint8_t *s = r->sink + (size_t)(id % ORD) * READ_MAX;
    uint32_t len = read_len(id);

    if (wc->status != SIWARP_WC_SUCCESS)
        fail_wc(r, "Read", id, wc);
    ASSERT_EQ(id, r->reads_done);
    for (uint32_t k = 0; k < len; k++)
        if (s[k] != read_octet(id, k))
            FAIL("Read %u (%u octets): octet %u is 0x%02x, 0x%02x sent", id, len, k, s[k],
                 read_octet(id, k));
    r->reads_done++;
}

static void poll_cq(struct run *r)
{
    struct siwarp_wc wc[16];
    int n;

    while ((n = siwarp_poll_cq(r->p.cq, 16, wc)) > 0) {
        for (int i = 0; i < n; i++) {
            if (wc[i].opcode == SIWARP_WC_READ || wc[i].wr_id >= 0x10000)
                check_read(r, &wc[i]);
            else
                check_send(r, &wc[i], NULL);
        }
    }
    ASSERT(n >= 0);
}

/* Post the next Read while fewer than ORD are out: its length from its
 * number, into sink slot id % ORD. */
static void maybe_read(struct run *r)
{
    uint32_t id = r->reads_posted;

    if (id >= r->nreads || id - r->reads_done >= ORD || rnd_upto(&r->rng, 4))
        return;
    uint32_t len = read_len(id);
    uint8_t *s = r->sink + (size_t)(id % ORD) * READ_MAX;
    memset(s, 0, READ_MAX);
    struct siwarp_sge sge = { s, len, siwarp_mr_stag(r->sink_mr) };
    struct siwarp_send_wr w = { .wr_id = 0x10000 + id, .sg_list = &sge, .num_sge = 1,
                                .opcode = SIWARP_WR_READ, .send_flags = SIWARP_SEND_SIGNALED };
    w.rdma.remote_addr = 0x7f0000000000ull + (uint64_t)id * 0x100000;
    w.rdma.rkey = 0xabc000 + id;
    ASSERT_OK(siwarp_post_send(r->p.qp, &w, NULL));
    r->reads_posted++;
}

/* Parse what the QP sent: Read Requests become owed Responses. */
static void take_requests(struct run *r)
{
    ssize_t n = read(r->p.raw, r->in + r->in_len, sizeof(r->in) - r->in_len);

    if (n > 0)
        r->in_len += (size_t)n;
    for (;;) {
        if (r->in_len < 2)
            return;
        uint32_t ulen = swp_get16(r->in);
        size_t flen = 2 + ulen + swp_mpa_pad(ulen) + 4;
        if (r->in_len < flen)
            return;
        const uint8_t *u = r->in + 2;
        const struct swp_ctrl *c = (const struct swp_ctrl *)u;
        unsigned op = swp_ctrl_opcode(c);
        if (op == SWP_OP_TERMINATE && r->spoil_every) {
            r->crc_error = true;        /* the control case expects it */
            r->in_len = 0;
            return;
        }
        if (op == SWP_OP_TERMINATE) {
            uint32_t term = 0;
            char what[128];
            swp_rdmap_parse_term(u, ulen, &term);
            FAIL("the QP sent a Terminate: %s (after %u FPDUs)",
                 swp_term_str(term, what, sizeof(what)), r->fpdus);
        }
        ASSERT_EQ(op, SWP_OP_READ_REQ);
        if (r->crc)
            ASSERT_EQ(swp_mpa_get_crc(r->in + flen - 4), ref_crc32c(r->in, flen - 4));
        const struct swp_rdmap_read_req *q = (const void *)(u + SWP_HDR_UNTAGGED);
        ASSERT(r->nowed < ORD);
        struct owed *o = &r->owed[r->nowed++];
        o->stag = swp_get32(q->sink_stag);
        o->to = swp_get64(q->sink_to);
        o->len = swp_get32(q->size);
        o->id = swp_get32(q->src_stag) - 0xabc000;
        o->off = 0;
        memmove(r->in, r->in + flen, r->in_len - flen);
        r->in_len -= flen;
    }
}

/* Append one FPDU (RFC 5044 4.1: ULPDU_Length, ULPDU, pad, CRC). */
static void put_fpdu(struct run *r, const uint8_t *hdr, uint32_t hlen, const uint8_t *pl,
                     uint32_t plen)
{
    uint32_t ulen = hlen + plen, pad = swp_mpa_pad(ulen), flen = 2 + ulen + pad + 4;

    if (r->out_len + flen > r->out_cap) {
        r->out_cap = 2 * (r->out_len + flen);
        r->out = realloc(r->out, r->out_cap);
        ASSERT(r->out);
    }
    uint8_t *f = r->out + r->out_len;
    swp_put16(f, (uint16_t)ulen);
    memcpy(f + 2, hdr, hlen);
    memcpy(f + 2 + hlen, pl, plen);
    memset(f + 2 + ulen, 0, pad);
    uint32_t crc = r->crc ? ref_crc32c(f, 2 + ulen + pad) : 0;
    if (r->spoil_every && rnd_upto(&r->rng, r->spoil_every) == 0)
        crc ^= r->crc ? 0x400u : 0;
    swp_mpa_put_crc(f + 2 + ulen + pad, crc);
    r->out_len += flen;
    r->fpdus++;
}

/* Payload octets in the next FPDU with a header of hlen octets. */
static uint32_t seg_room(struct run *r, uint32_t hlen)
{
    uint32_t ulpdu = r->mss ? r->mss - 2 - 4 - 3
                   : rnd_upto(&r->rng, 4) ? 1 + rnd_upto(&r->rng, 2048)
                   : 1 + rnd_upto(&r->rng, ULPDU_MAX);

    if (ulpdu > ULPDU_MAX)
        ulpdu = ULPDU_MAX;
    return ulpdu > hlen ? ulpdu - hlen : 1;
}

static void next_response_fpdu(struct run *r)
{
    struct owed *o = &r->owed[0];
    uint8_t h[SWP_HDR_TAGGED], pl[ULPDU_MAX];
    uint32_t take = seg_room(r, SWP_HDR_TAGGED);

    if (take > o->len - o->off)
        take = o->len - o->off;
    for (uint32_t k = 0; k < take; k++)
        pl[k] = read_octet(o->id, o->off + k);
    bool last = o->off + take == o->len;
    tagged(h, SWP_OP_READ_RESP, last, o->stag, o->to + o->off);
    put_fpdu(r, h, SWP_HDR_TAGGED, pl, take);
    o->off += take;
    if (last) {
        memmove(&r->owed[0], &r->owed[1], sizeof(r->owed[0]) * (size_t)--r->nowed);
    }
}

static void start_message(struct run *r)
{
    uint32_t pick = rnd_upto(&r->rng, 100);

    r->off = 0;
    if (pick < 75) {
        r->kind = 1;
        r->id = r->sends_made++;
        r->len = pick < 25 ? rnd_upto(&r->rng, 257)
               : pick < 45 ? rnd_upto(&r->rng, 8193)
               : rnd_upto(&r->rng, MAX_SEND + 1);
        r->send_len[r->id] = r->len;
    } else {
        r->kind = 2;
        r->len = 1 + rnd_upto(&r->rng, 70000);
        r->woff = rnd_upto(&r->rng, WAREA - r->len + 1);
        r->id = r->msgs_made;
    }
    r->msgs_made++;
}

static void next_sq_fpdu(struct run *r)
{
    uint8_t h[SWP_HDR_TAGGED > SWP_HDR_UNTAGGED ? SWP_HDR_TAGGED : SWP_HDR_UNTAGGED];
    uint8_t pl[ULPDU_MAX];
    uint32_t hlen = r->kind == 1 ? SWP_HDR_UNTAGGED : SWP_HDR_TAGGED;
    uint32_t take = seg_room(r, hlen);

    if (take > r->len - r->off)
        take = r->len - r->off;
    bool last = r->off + take == r->len;
    if (r->kind == 1) {
        for (uint32_t k = 0; k < take; k++)
            pl[k] = send_octet(r->id, r->off + k);
        /* MSNs from 1 (RFC 5041 5.1) */
        untagged(h, r->id % 5 == 4 ? SWP_OP_SEND_SE : SWP_OP_SEND, last, SWP_QN_SEND, r->id + 1,
                 r->off);
    } else {
        for (uint32_t k = 0; k < take; k++) {
            pl[k] = send_octet(r->id + 7777, r->off + k);
            r->shadow[r->woff + r->off + k] = pl[k];
        }
        tagged(h, SWP_OP_WRITE, last, siwarp_mr_stag(r->w_mr),
               (uint64_t)(uintptr_t)(r->warea + r->woff + r->off));
    }
    put_fpdu(r, h, hlen, pl, take);
    r->off += take;
    if (last)
        r->kind = 0;
}

/* Build FPDUs until 512 KiB wait to be written or nothing can go yet. */
static void generate(struct run *r)
{
    while (r->out_len - r->out_off < 524288) {
        bool can_start = r->msgs_made < r->nmsgs && r->sends_made - r->sends_done < NBUF - 1;
        /* a Response between SQ FPDUs one time in three; on odd seeds a
         * Response once begun mostly runs on (so the QP's predictions of
         * its next segments mostly hold) */
        bool respond = r->nowed && (!r->kind || rnd_upto(&r->rng, 3) == 0 ||
                                    (r->burst && r->owed[0].off && rnd_upto(&r->rng, 8)));
        if (respond) {
            r->resp_between += r->kind != 0;
            next_response_fpdu(r);
        } else if (r->kind) {
            next_sq_fpdu(r);
        } else if (can_start) {
            start_message(r);
            next_sq_fpdu(r);
        } else {
            return;
        }
    }
}

/* Write a random-length piece of what is built: 1-16, 1-1,500, up to 64
 * KiB or up to 256 KiB octets (the QP then finds more than it asked for,
 * and predicts). */
static void write_some(struct run *r)
{
    size_t left = r->out_len - r->out_off, want;
    uint32_t pick = rnd_upto(&r->rng, 10);

    if (!left)
        return;
    want = pick < 2 ? 1 + rnd_upto(&r->rng, 16) : pick < 5 ? 1 + rnd_upto(&r->rng, 1500)
         : pick < 8 ? 1 + rnd_upto(&r->rng, 65536) : 1 + rnd_upto(&r->rng, 262144);
    if (want > left)
        want = left;
    ssize_t n = write(r->p.raw, r->out + r->out_off, want);
    if (n < 0) {
        ASSERT(errno == EAGAIN || errno == EWOULDBLOCK);
        return;
    }
    r->out_off += (size_t)n;
    if (r->out_off == r->out_len)
        r->out_off = r->out_len = 0;
}

static bool qp_failed(struct run *r)
{
    struct siwarp_qp_attr at;

    ASSERT_OK(siwarp_query_qp(r->p.qp, &at));
    return at.state == SIWARP_QPS_ERROR;
}

static void run_setup(struct run *r, bool handler, bool crc, uint32_t mss, uint64_t seed)
{
    memset(r, 0, sizeof(*r));
    r->handler = handler;
    r->crc = crc;
    r->mss = mss;
    r->rng = seed * 0x9e3779b97f4a7c15ull + 1;
    r->burst = seed & 1;
    r->nmsgs = 400;
    r->nreads = 100;
    peer_setup_rx(&r->p, crc, handler ? NBUF : 0, ULPDU_MAX);
    r->bufs = calloc(NBUF, BUF_SZ);
    r->warea = calloc(1, WAREA);
    r->shadow = calloc(1, WAREA);
    r->sink = calloc(ORD, READ_MAX);
    ASSERT(r->bufs && r->warea && r->shadow && r->sink);
    ASSERT_OK(siwarp_reg_mr(r->p.pd, r->bufs, (size_t)NBUF * BUF_SZ, SIWARP_ACCESS_LOCAL_WRITE,
                            &r->buf_mr));
    ASSERT_OK(siwarp_reg_mr(r->p.pd, r->warea, WAREA,
                            SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE, &r->w_mr));
    ASSERT_OK(siwarp_reg_mr(r->p.pd, r->sink, (size_t)ORD * READ_MAX, SIWARP_ACCESS_LOCAL_WRITE,
                            &r->sink_mr));
    peer_keep_mr(&r->p, r->buf_mr);
    peer_keep_mr(&r->p, r->w_mr);
    peer_keep_mr(&r->p, r->sink_mr);
    if (handler) {
        ASSERT_OK(siwarp_ctx_set_single_thread(r->p.ctx, true));
        ASSERT_OK(siwarp_cq_set_recv_handler(r->p.cq, on_recv, r, BUF_SZ));
    }
    for (uint32_t i = 0; i < NBUF; i++)
        post_buf(r, i);
    ASSERT_OK(fcntl(r->p.raw, F_SETFL, fcntl(r->p.raw, F_GETFL) | O_NONBLOCK));
}

static void run_teardown(struct run *r)
{
    if (r->handler)
        ASSERT_OK(siwarp_cq_set_recv_handler(r->p.cq, NULL, NULL, 0));
    peer_teardown(&r->p);
    free(r->bufs);
    free(r->warea);
    free(r->shadow);
    free(r->sink);
    free(r->out);
}

/* Run the stream to its end (or to the QP's failure); bounded in steps. */
static void pump(struct run *r)
{
    for (long step = 0; step < 1000000; step++) {
        maybe_read(r);
        take_requests(r);
        generate(r);
        write_some(r);
        for (uint32_t k = rnd_upto(&r->rng, 3); k; k--)
            siwarp_progress(r->p.ctx);
        poll_cq(r);
        if (qp_failed(r)) {
            poll_cq(r);
            return;
        }
        if (r->msgs_made == r->nmsgs && !r->kind && !r->nowed && r->out_len == 0 &&
            r->sends_done == r->sends_made && r->reads_done == r->nreads)
            return;
    }
    FAIL("stream not done after 1,000,000 steps: %u of %u Sends, %u of %u Reads", r->sends_done,
         r->sends_made, r->reads_done, r->nreads);
}

static void cuts(bool handler, bool crc, uint32_t mss)
{
    struct run *r = calloc(1, sizeof(*r));

    ASSERT(r);
    crc_tab_init();
    ASSERT_EQ(ref_crc32c((const uint8_t *)"123456789", 9), 0xe3069283u);   /* RFC 3720 B.4 */
    for (uint64_t seed = 1; seed <= 3; seed++) {
        run_setup(r, handler, crc, mss, seed + mss);
        pump(r);
        if (qp_failed(r))
            FAIL("seed %llu: the QP failed after %u Sends, %u Writes and Reads, %u FPDUs",
                 (unsigned long long)seed, r->sends_done, r->msgs_made - r->sends_made, r->fpdus);
        ASSERT_EQ(memcmp(r->warea, r->shadow, WAREA), 0);
        canaries_intact(&r->p);
        printf("# seed %llu: %u Sends (%u in place), %u Writes, %u Reads, %u FPDUs, %u Read "
               "Response segments inside a Send or Write; %llu octets read straight into "
               "place, predicted segments %llu taken, %llu not\n", (unsigned long long)seed,
               r->sends_done, r->in_place, r->msgs_made - r->sends_made, r->reads_done, r->fpdus,
               r->resp_between, (unsigned long long)r->p.qp->rx.direct,
               (unsigned long long)r->p.qp->rx.spec_hits,
               (unsigned long long)r->p.qp->rx.spec_misses);
        run_teardown(r);
    }
    free(r);
}

/* FPDU lengths: Linux siw's on a 1,500-octet MTU, on a jumbo frame, the
 * largest MPA allows, and random (mostly short). */
#define SIW_MTU 1448u
#define JUMBO   8948u
#define LARGEST (ULPDU_MAX + 9u)

TEST(btl_style_crc_siw_mtu)     { cuts(true, true, SIW_MTU); }
TEST(btl_style_crc_jumbo)       { cuts(true, true, JUMBO); }
TEST(btl_style_crc_largest)     { cuts(true, true, LARGEST); }
TEST(btl_style_crc_random)      { cuts(true, true, 0); }
TEST(btl_style_nocrc_siw_mtu)   { cuts(true, false, SIW_MTU); }
TEST(btl_style_nocrc_largest)   { cuts(true, false, LARGEST); }
TEST(btl_style_nocrc_random)    { cuts(true, false, 0); }
TEST(verbs_style_crc_siw_mtu)   { cuts(false, true, SIW_MTU); }
TEST(verbs_style_crc_random)    { cuts(false, true, 0); }
TEST(verbs_style_nocrc_largest) { cuts(false, false, LARGEST); }

/* Large segments read straight into their target with CRC on too (as
 * swp_rx_bulk_min_crc allows; the default keeps them staged), and the
 * Read Response segments behind one predicted (qp_rx_direct.c). */
TEST(direct_reads_crc_largest)
{
    swp_rx_bulk_min_crc = 4096;
    cuts(true, true, LARGEST);
}
TEST(direct_reads_crc_random)
{
    swp_rx_bulk_min_crc = 4096;
    cuts(false, true, 0);
}

/* The control: the same streams with one FPDU's CRC in 500 spoiled; the QP
 * must catch it (RFC 5044 8: a CRC error is fatal to the stream). */
TEST(crc_error_seen)
{
    struct run *r = calloc(1, sizeof(*r));

    ASSERT(r);
    crc_tab_init();
    run_setup(r, true, true, SIW_MTU, 99);
    r->spoil_every = 500;
    for (long step = 0; step < 1000000 && !qp_failed(r); step++) {
        maybe_read(r);
        take_requests(r);
        generate(r);
        write_some(r);
        siwarp_progress(r->p.ctx);
        struct siwarp_wc wc;
        while (siwarp_poll_cq(r->p.cq, 1, &wc) > 0)
            ;
    }
    ASSERT(qp_failed(r));
    struct siwarp_qp_attr at;
    ASSERT_OK(siwarp_query_qp(r->p.qp, &at));
    ASSERT_EQ(at.term_sent, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_CRC));
    for (int i = 0; i < 200 && !r->crc_error; i++) {
        siwarp_progress(r->p.ctx);
        take_requests(r);           /* the Terminate reaches the peer */
    }
    ASSERT(r->crc_error);
    run_teardown(r);
    free(r);
}

SWP_TEST_MAIN()
