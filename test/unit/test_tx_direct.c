/*
 * test_tx_direct.c - qp_tx.c's direct path: a lone small Send or RDMA
 * Write posted on an idle QP is framed and written at post time, without a
 * WQE.  A raw socket
 * plays the peer and reads what goes on the wire: every frame is checked
 * field by field against RFC 5041/5040/5044 (not against the library's own
 * builders), the completion must be there before any progress call, and
 * the cases the direct path must leave to the general one (a short write,
 * a fenced Send behind a Read, a post while earlier work waits) keep the
 * stream in order.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "qp_pair.h"
#include "swp.h"

/* qp[0] is ours; raw is the peer's end of the connection */
struct rig {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
    int raw;
};

static uint32_t crc32c_bitwise(const uint8_t *p, size_t n)
{
    uint32_t crc = ~0u;

    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
    }
    return ~crc;
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v;

    memcpy(&v, p, 4);
    return ntohl(v);
}

/* sndbuf > 0: small socket buffers, so that the socket fills */
static void rig_setup(struct rig *r, bool crc, uint32_t coalesce, int sndbuf)
{
    struct siwarp_qp_init_attr a = { 0 };
    struct swp_nego n;
    int fd[2];

    ASSERT_OK(siwarp_ctx_create(&r->ctx));
    ASSERT_OK(siwarp_alloc_pd(r->ctx, &r->pd));
    ASSERT_OK(siwarp_create_cq(r->ctx, 4096, &r->cq));
    a.send_cq = a.recv_cq = r->cq;
    a.max_send_wr = 1024;
    a.max_recv_wr = 16;
    a.max_sge = 4;
    a.max_inline = 65536;
    a.tx_coalesce = coalesce;
    ASSERT_OK(siwarp_create_qp(r->pd, &a, &r->qp));
    swp_test_tcp_pair(fd);
    if (sndbuf) {
        ASSERT_OK(setsockopt(fd[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)));
        ASSERT_OK(setsockopt(fd[1], SOL_SOCKET, SO_RCVBUF, &sndbuf, sizeof(sndbuf)));
    }
    memset(&n, 0, sizeof(n));
    n.mpa_rev = 2;
    n.crc = crc;
    n.ird = n.ord = 16;
    n.mulpdu = 65000;
    n.max_rx_ulpdu = 65535;
    n.initiator = true;
    ASSERT_OK(swp_qp_attach_fd(r->qp, fd[0], &n));
    r->raw = fd[1];
}

static void rig_teardown(struct rig *r)
{
    close(r->raw);
    siwarp_destroy_qp(r->qp);
    siwarp_destroy_cq(r->cq);
    siwarp_dealloc_pd(r->pd);
    siwarp_ctx_destroy(r->ctx);
}

/* Read exactly n bytes from the raw end, progressing the QP meanwhile;
 * fails after ~5 s. */
static void raw_read(struct rig *r, uint8_t *b, size_t n)
{
    size_t got = 0;

    for (int i = 0; got < n && i < 50000; i++) {
        ssize_t k = recv(r->raw, b + got, n - got, 0);
        if (k > 0) {
            got += (size_t)k;
            continue;
        }
        ASSERT(k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
        (void)siwarp_progress(r->ctx);
        usleep(100);
    }
    ASSERT_EQ(got, n);
}

/* Nothing more on the wire for 50 ms (the QP progressed meanwhile)? */
static bool raw_quiet(struct rig *r)
{
    uint8_t b;

    for (int i = 0; i < 50; i++) {
        (void)siwarp_progress(r->ctx);
        if (recv(r->raw, &b, 1, MSG_PEEK) == 1)
            return false;
        usleep(1000);
    }
    return true;
}

/* Read one untagged Send FPDU and check it: RFC 5044 4.1 (raw_read_fpdu), RFC 5041
 * 5.1/5.3 (T 0, L 1, DV 1, QN 0, the expected MSN, MO 0), RFC 5040 4.3
 * (RV 1 and the opcode; Invalidate STag in the ULP field).  Returns the
 * payload length and copies the payload to pl. */
/* Read one FPDU into f (RFC 5044 4.1: ULPDU_Length, the ULPDU, pad to a
 * 4-octet boundary, all zero, then CRC32c of all before it or zero);
 * returns ULPDU_Length, at least hdrlen. */
#define FPDU_MAX (2 + 65535 + 3 + 4)

static uint32_t raw_read_fpdu(struct rig *r, bool crc, uint32_t hdrlen, uint8_t *f)
{
    uint32_t ulpdu, pad;

    raw_read(r, f, 2);
    ulpdu = (uint32_t)f[0] << 8 | f[1];
    ASSERT(ulpdu >= hdrlen && ulpdu + 2 + 3 + 4 <= FPDU_MAX);
    pad = (4 - (ulpdu + 2) % 4) % 4;
    raw_read(r, f + 2, ulpdu + pad + 4);
    for (uint32_t i = 0; i < pad; i++)
        ASSERT_EQ(f[2 + ulpdu + i], 0);
    ASSERT_EQ(swp_mpa_get_crc(f + 2 + ulpdu + pad), crc ? crc32c_bitwise(f, 2 + ulpdu + pad) : 0);
    return ulpdu;
}

static uint32_t raw_read_send(struct rig *r, bool crc, unsigned opcode, uint32_t msn,
                              uint32_t inv, uint8_t *pl)
{
    static uint8_t f[FPDU_MAX];
    uint32_t plen = raw_read_fpdu(r, crc, 18, f) - 18;

    ASSERT_EQ(f[2], 0x41);                                  /* T 0, L 1, DV 1 */
    ASSERT_EQ(f[3], 0x40 | opcode);                         /* RV 1 */
    ASSERT_EQ(get32(f + 4), inv);         /* Invalidate STag */
    ASSERT_EQ(get32(f + 8), 0);           /* QN 0 */
    ASSERT_EQ(get32(f + 12), msn);
    ASSERT_EQ(get32(f + 16), 0);          /* MO 0 */
    memcpy(pl, f + 20, plen);
    return plen;
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* Every Send opcode, 0 B up to the largest the direct path takes, one and
 * two SGEs, registered and INLINE, CRC on and off: each frame is a single
 * well-formed FPDU and its completion is in the CQ as post_send returns. */
static void frames(bool crc)
{
    static const uint32_t sizes[] = { 0, 1, 2, 5, 255, 256, 257, 1000, 1999 };
    static const struct { enum siwarp_wr_opcode wr; unsigned op; } ops[] = {
        { SIWARP_WR_SEND, 3 }, { SIWARP_WR_SEND_INV, 4 },
        { SIWARP_WR_SEND_SE, 5 }, { SIWARP_WR_SEND_SE_INV, 6 },
    };
    static uint8_t src[2048], got[4096];
    struct rig r;
    struct siwarp_mr *mr;
    uint32_t msn = 1;

    rig_setup(&r, crc, 0, 0);
    ASSERT_OK(siwarp_reg_mr(r.pd, src, sizeof(src), 0, &mr));
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
            for (int v = 0; v < 3; v++) {
                uint32_t sz = sizes[s], a = v == 1 ? sz / 3 : sz;
                struct siwarp_sge sge[2] = { { src, a, siwarp_mr_stag(mr) },
                                             { src + a, sz - a, siwarp_mr_stag(mr) } };
                struct siwarp_send_wr wr = {
                    .wr_id = msn, .sg_list = sge, .num_sge = v == 1 ? 2 : 1,
                    .opcode = ops[o].wr, .send_flags = SIWARP_SEND_SIGNALED,
                    .invalidate_stag = 0x1234500u + msn,
                };
                struct siwarp_wc wc;
                uint32_t inv = ops[o].op == 4 || ops[o].op == 6 ? wr.invalidate_stag : 0;

                if (v == 2) {
                    if (sz > 256)
                        continue;
                    wr.send_flags |= SIWARP_SEND_INLINE;
                    sge[0].lkey = 0;
                }
                fill(src, sz, msn);
                ASSERT_OK(siwarp_post_send(r.qp, &wr, NULL));
                /* the completion came with the post: no WQE waited for
                 * progress.  A Send went whole onto an idle socket. */
                ASSERT_EQ(siwarp_poll_cq(r.cq, 1, &wc), 1);
                ASSERT_EQ(wc.wr_id, msn);
                ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
                ASSERT_EQ(wc.opcode, SIWARP_WC_SEND);
                ASSERT_EQ(wc.byte_len, sz);
                if (v == 2)
                    memset(src, 0xee, sz);  /* INLINE: the buffer is ours again */
                else
                    ASSERT_EQ(r.qp->sqr.tail, 0);   /* no WQE was made */
                ASSERT_EQ(raw_read_send(&r, crc, ops[o].op, msn, inv, got), sz);
                if (v == 2)
                    fill(src, sz, msn);
                ASSERT_MEM_EQ(got, src, sz);
                msn++;
            }
        }
    }
    ASSERT(raw_quiet(&r));
    siwarp_dereg_mr(mr);
    rig_teardown(&r);
}

TEST(direct_send_frames_crc) { frames(true); }
TEST(direct_send_frames_no_crc) { frames(false); }

/* Read one tagged RDMA Write FPDU and check it: RFC 5041 5.2 (T 1, L 1, DV 1, the sink STag and tagged
 * offset), RFC 5040 4.3 (RV 1, opcode 0).  Returns the payload length. */
static uint32_t raw_read_write(struct rig *r, bool crc, uint32_t stag, uint64_t to, uint8_t *pl)
{
    static uint8_t f[FPDU_MAX];
    uint32_t plen = raw_read_fpdu(r, crc, 14, f) - 14;

    ASSERT_EQ(f[2], 0xc1);                                  /* T 1, L 1, DV 1 */
    ASSERT_EQ(f[3], 0x40);                                  /* RV 1, RDMA Write */
    ASSERT_EQ(get32(f + 4), stag);
    ASSERT_EQ(get32(f + 8), (uint32_t)(to >> 32));
    ASSERT_EQ(get32(f + 12), (uint32_t)to);
    memcpy(pl, f + 16, plen);
    return plen;
}

/* RDMA Writes take the direct path too (a UCX put_short): registered and
 * INLINE, CRC on and off, each one tagged FPDU on the wire and its
 * completion in the CQ as post_send returns; a Send between them still
 * carries the next MSN (Writes have none, RFC 5041 5.3). */
static void write_frames(bool crc)
{
    static const uint32_t sizes[] = { 0, 1, 7, 8, 256, 1000, 1999 };
    static uint8_t src[2048], got[4096];
    struct rig r;
    struct siwarp_mr *mr;
    struct siwarp_wc wc;
    uint32_t msn = 1;

    rig_setup(&r, crc, 0, 0);
    ASSERT_OK(siwarp_reg_mr(r.pd, src, sizeof(src), 0, &mr));
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        for (int v = 0; v < 2; v++) {
            uint32_t sz = sizes[s];
            uint64_t to = 0x123456789a00ull + s * 4096 + v;
            struct siwarp_sge sge = { src, sz, v ? 0 : siwarp_mr_stag(mr) };
            struct siwarp_send_wr wr = {
                .wr_id = 100 + s, .sg_list = &sge, .num_sge = 1, .opcode = SIWARP_WR_WRITE,
                .send_flags = SIWARP_SEND_SIGNALED | (v ? SIWARP_SEND_INLINE : 0),
                .rdma = { .remote_addr = to, .rkey = 0xabcd00u + (uint32_t)s },
            };
            struct siwarp_sge ssge = { src, 4, siwarp_mr_stag(mr) };
            struct siwarp_send_wr send = { .wr_id = 1, .sg_list = &ssge, .num_sge = 1,
                                           .opcode = SIWARP_WR_SEND };

            if (v && sz > 256)
                continue;
            fill(src, sz, (unsigned)s);
            ASSERT_OK(siwarp_post_send(r.qp, &wr, NULL));
            ASSERT_EQ(siwarp_poll_cq(r.cq, 1, &wc), 1);
            ASSERT_EQ(wc.wr_id, 100 + s);
            ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
            ASSERT_EQ(wc.opcode, SIWARP_WC_WRITE);
            ASSERT_EQ(wc.byte_len, sz);
            ASSERT_EQ(raw_read_write(&r, crc, wr.rdma.rkey, to, got), sz);
            ASSERT_MEM_EQ(got, src, sz);
            /* only the direct path completes a flagged WR within the post
             * (the general one queues a WQE and completes it later) */
            wr.send_flags |= SIWARP_SEND_COMPLETE_AT_POST;
            ASSERT_EQ(siwarp_post_send(r.qp, &wr, NULL), 1);
            ASSERT_EQ(siwarp_poll_cq(r.cq, 1, &wc), 0);
            if (v)
                memset(src, 0xee, sz);      /* INLINE: the buffer is ours again */
            ASSERT_EQ(raw_read_write(&r, crc, wr.rdma.rkey, to, got), sz);
            if (v)
                fill(src, sz, (unsigned)s);
            ASSERT_MEM_EQ(got, src, sz);
            ASSERT_OK(siwarp_post_send(r.qp, &send, NULL));
            ASSERT_EQ(raw_read_send(&r, crc, 3, msn++, 0, got), 4);
        }
    }
    ASSERT(raw_quiet(&r));
    siwarp_dereg_mr(mr);
    rig_teardown(&r);
}

TEST(direct_write_frames_crc) { write_frames(true); }
TEST(direct_write_frames_no_crc) { write_frames(false); }

/* Past what is copied behind the header, up to one FPDU: gathered from
 * the caller's buffers by one sendmsg, the CRC read over them in place.
 * Sends and Writes, one to three SGEs, registered and INLINE, CRC on and
 * off: one well-formed FPDU each, completed within a flagged post (which
 * only the direct path does), an INLINE buffer free at once. */
static void large_frames(bool crc)
{
    static const uint32_t sizes[] = { 1999, 2000, 2048, 4097, 16384, 16497, 40000, 64982 };
    static uint8_t src[65536], got[65536];
    struct rig r;
    struct siwarp_mr *mr;
    struct siwarp_wc wc;
    uint32_t msn = 1;
    int rc;

    rig_setup(&r, crc, 0, 0);
    ASSERT_OK(siwarp_reg_mr(r.pd, src, sizeof(src), 0, &mr));
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        for (int v = 0; v < 8; v++) {
            bool write = v & 1, inl = v & 2, three = v & 4;
            uint32_t sz = write ? sizes[s] - 4 : sizes[s];   /* within one FPDU either way */
            uint32_t a = three ? sz / 3 : sz, b = three ? sz / 5 : 0;
            uint32_t lkey = inl ? 0 : siwarp_mr_stag(mr);
            struct siwarp_sge sge[3] = { { src, a, lkey }, { src + a, b, lkey },
                                         { src + a + b, sz - a - b, lkey } };
            struct siwarp_send_wr wr = {
                .wr_id = msn, .sg_list = sge, .num_sge = three ? 3 : 1,
                .opcode = write ? SIWARP_WR_WRITE : SIWARP_WR_SEND,
                .send_flags = SIWARP_SEND_SIGNALED | SIWARP_SEND_COMPLETE_AT_POST |
                              (inl ? SIWARP_SEND_INLINE : 0),
                .rdma = { .remote_addr = 0x7000000000ull + s, .rkey = 0x5500u + (uint32_t)s },
            };

            fill(src, sz, msn + (unsigned)v);
            rc = siwarp_post_send(r.qp, &wr, NULL);
            if (rc != 1)
                fprintf(stderr, "# %u B (%s%s%s): post returned %d\n", sz,
                        write ? "Write" : "Send", inl ? ", INLINE" : "", three ? ", 3 SGEs" : "", rc);
            /* up to what loopback's socket takes whole (UCX's largest
             * eager message, 16497 B, is in); beyond, a short write may
             * leave the rest for the engine */
            if (sz <= 16497)
                ASSERT_EQ(rc, 1);
            ASSERT(rc == 0 || rc == 1);
            if (rc == 1)
                ASSERT_EQ(siwarp_poll_cq(r.cq, 1, &wc), 0);
            if (inl)
                memset(src, 0xee, sz);      /* INLINE: the buffer is ours again */
            if (write) {
                ASSERT_EQ(raw_read_write(&r, crc, wr.rdma.rkey, wr.rdma.remote_addr, got), sz);
            } else {
                ASSERT_EQ(raw_read_send(&r, crc, 3, msn++, 0, got), sz);
            }
            if (inl)
                fill(src, sz, (uint32_t)wr.wr_id + (unsigned)v);
            ASSERT_MEM_EQ(got, src, sz);
            for (int k = 0; rc == 0 && k < 1000; k++) {
                (void)siwarp_progress(r.ctx);     /* a short write completes later */
                rc = siwarp_poll_cq(r.cq, 1, &wc);
            }
            ASSERT_EQ(rc, 1);
        }
    }
    ASSERT(raw_quiet(&r));
    siwarp_dereg_mr(mr);
    rig_teardown(&r);
}

TEST(direct_large_frames_crc) { large_frames(true); }
TEST(direct_large_frames_no_crc) { large_frames(false); }

/* A large direct frame the socket takes only in part: its rest is kept
 * (the INLINE buffer is overwritten at once), later posts queue behind
 * it, and the peer reads every frame whole and in order. */
TEST(direct_large_short_write_keeps_order)
{
    static uint8_t src[40000], got[65536], want[8][40000];
    struct rig r;
    struct siwarp_wc wc;
    unsigned done = 0;

    rig_setup(&r, true, 0, 8192);
    for (uint32_t i = 0; i < 8; i++) {
        struct siwarp_sge sge = { src, sizeof(src), 0 };
        struct siwarp_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
                                     .opcode = SIWARP_WR_SEND,
                                     .send_flags = SIWARP_SEND_SIGNALED | SIWARP_SEND_INLINE };

        fill(src, sizeof(src), 40 + i);
        memcpy(want[i], src, sizeof(src));
        ASSERT_OK(siwarp_post_send(r.qp, &wr, NULL));
        memset(src, 0xee, sizeof(src));
    }
    for (uint32_t i = 0; i < 8; i++) {
        ASSERT_EQ(raw_read_send(&r, true, 3, i + 1, 0, got), sizeof(src));
        ASSERT_MEM_EQ(got, want[i], sizeof(src));
    }
    for (int k = 0; k < 1000 && done < 8; k++) {
        (void)siwarp_progress(r.ctx);
        while (siwarp_poll_cq(r.cq, 1, &wc) == 1) {
            ASSERT_EQ(wc.wr_id, done);
            ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
            done++;
        }
    }
    ASSERT_EQ(done, 8);
    ASSERT(raw_quiet(&r));
    rig_teardown(&r);
}

/* Unsignaled: no completion, the frame all the same. */
TEST(direct_send_unsignaled_has_no_completion)
{
    static uint8_t src[64], got[4096];
    struct rig r;
    struct siwarp_mr *mr;
    struct siwarp_wc wc;

    rig_setup(&r, true, 0, 0);
    ASSERT_OK(siwarp_reg_mr(r.pd, src, sizeof(src), 0, &mr));
    fill(src, sizeof(src), 9);
    struct siwarp_sge sge = { src, sizeof(src), siwarp_mr_stag(mr) };
    struct siwarp_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
                                 .opcode = SIWARP_WR_SEND };
    ASSERT_OK(siwarp_post_send(r.qp, &wr, NULL));
    ASSERT_EQ(raw_read_send(&r, true, 3, 1, 0, got), sizeof(src));
    ASSERT_MEM_EQ(got, src, sizeof(src));
    ASSERT_EQ(siwarp_poll_cq(r.cq, 1, &wc), 0);
    siwarp_dereg_mr(mr);
    rig_teardown(&r);
}

/* A bad lkey is the general path's error, as before: -EINVAL or whatever
 * it returns, nothing on the wire, no completion. */
TEST(direct_send_bad_lkey_is_refused)
{
    static uint8_t src[64];
    struct rig r;
    struct siwarp_mr *mr;
    struct siwarp_wc wc;
    struct siwarp_send_wr *bad = NULL;

    rig_setup(&r, true, 0, 0);
    ASSERT_OK(siwarp_reg_mr(r.pd, src, sizeof(src), 0, &mr));
    struct siwarp_sge sge = { src, sizeof(src), siwarp_mr_stag(mr) ^ 0x100 };
    struct siwarp_send_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1,
                                 .opcode = SIWARP_WR_SEND, .send_flags = SIWARP_SEND_SIGNALED };
    ASSERT(siwarp_post_send(r.qp, &wr, &bad) < 0);
    ASSERT(bad == &wr);
    ASSERT(raw_quiet(&r));
    ASSERT_EQ(siwarp_poll_cq(r.cq, 1, &wc), 0);
    ASSERT_EQ(r.qp->tx_msn[SWP_QN_SEND], 1);
    siwarp_dereg_mr(mr);
    rig_teardown(&r);
}

/* The peer stops reading: Sends go direct until the socket takes one only
 * in part (or not at all); from then on they queue behind it.  Once the
 * peer reads, every frame arrives whole and in order, with consecutive
 * MSNs, and the completions come in posting order. */
TEST(direct_send_short_write_keeps_order)
{
    enum { SZ = 1500, MAXN = 4000, AFTER = 20 };
    static uint8_t got[4096];
    uint8_t *src = malloc((size_t)MAXN * SZ);  /* each Send's own: queued ones are read late */
    struct rig r;
    struct siwarp_mr *mr;
    int n = 0, full_at = -1;

    ASSERT(src != NULL);
    rig_setup(&r, true, 0, 8192);
    ASSERT_OK(siwarp_reg_mr(r.pd, src, (size_t)MAXN * SZ, 0, &mr));
    for (; n < MAXN && (full_at < 0 || n < full_at + AFTER); n++) {
        uint8_t *b = src + (size_t)n * SZ;
        struct siwarp_sge sge = { b, SZ - (uint32_t)(n % 7), siwarp_mr_stag(mr) };
        struct siwarp_send_wr wr = { .wr_id = (uint64_t)n, .sg_list = &sge, .num_sge = 1,
                                     .opcode = SIWARP_WR_SEND,
                                     .send_flags = SIWARP_SEND_SIGNALED };
        fill(b, SZ, (unsigned)n);
        ASSERT_OK(siwarp_post_send(r.qp, &wr, NULL));
        if (full_at < 0 && r.qp->tx.pending) {
            full_at = n;
            /* the short write left a WQE behind, with the frame's rest */
            ASSERT_EQ(r.qp->sqr.tail - r.qp->sqr.head, 1);
        }
    }
    ASSERT(full_at >= 0);
    fprintf(stderr, "# socket full at Send %d of %d\n", full_at, n);
    for (int i = 0; i < n; i++) {
        uint32_t len = SZ - (uint32_t)(i % 7);
        ASSERT_EQ(raw_read_send(&r, true, 3, (uint32_t)i + 1, 0, got), len);
        ASSERT_MEM_EQ(got, src + (size_t)i * SZ, len);
    }
    for (int i = 0; i < n; i++) {
        struct siwarp_wc wc;
        int k = 0;
        for (int t = 0; t < 10000 && (k = siwarp_poll_cq(r.cq, 1, &wc)) == 0; t++)
            (void)siwarp_progress(r.ctx);
        ASSERT_EQ(k, 1);
        ASSERT_EQ(wc.wr_id, (uint64_t)i);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    }
    ASSERT(raw_quiet(&r));
    siwarp_dereg_mr(mr);
    rig_teardown(&r);
    free(src);
}

/* SIWARP_SEND_COMPLETE_AT_POST: a Send that goes whole onto an idle socket
 * makes siwarp_post_send return 1 and queues no completion, signaled or
 * not; once the socket is full, flagged Sends return 0 and complete
 * through the CQ as any other, in posting order. */
TEST(complete_at_post_returns_one_and_queues_nothing)
{
    enum { SZ = 1000, MAXN = 4000 };
    static uint8_t got[4096];
    uint8_t *src = malloc((size_t)MAXN * SZ);
    struct rig r;
    struct siwarp_mr *mr;
    struct siwarp_wc wc;
    int n = 0, at_post = 0, queued = 0;
    uint64_t first_queued = 0;

    ASSERT(src != NULL);
    rig_setup(&r, true, 0, 8192);
    ASSERT_OK(siwarp_reg_mr(r.pd, src, (size_t)MAXN * SZ, 0, &mr));
    for (; n < MAXN && queued < 10; n++) {
        uint8_t *b = src + (size_t)n * SZ;
        struct siwarp_sge sge = { b, SZ, siwarp_mr_stag(mr) };
        struct siwarp_send_wr wr = { .wr_id = (uint64_t)n, .sg_list = &sge, .num_sge = 1,
                                     .opcode = SIWARP_WR_SEND,
                                     .send_flags = SIWARP_SEND_SIGNALED |
                                                   SIWARP_SEND_COMPLETE_AT_POST };
        int rc;

        fill(b, SZ, (unsigned)n);
        rc = siwarp_post_send(r.qp, &wr, NULL);
        ASSERT(rc == 0 || rc == 1);
        if (rc == 1) {
            ASSERT_EQ(queued, 0);           /* none at post once one queued */
            at_post++;
        } else if (queued++ == 0) {
            first_queued = (uint64_t)n;
        }
        if (n == 0) {
            ASSERT_EQ(rc, 1);               /* an idle QP */
            ASSERT_EQ(siwarp_poll_cq(r.cq, 1, &wc), 0);
        }
    }
    ASSERT(at_post > 0 && queued == 10);
    fprintf(stderr, "# %d Sends complete at post, then %d queued\n", at_post, queued);
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(raw_read_send(&r, true, 3, (uint32_t)i + 1, 0, got), SZ);
        ASSERT_MEM_EQ(got, src + (size_t)i * SZ, SZ);
    }
    for (int i = 0; i < queued; i++) {
        int k = 0;
        for (int t = 0; t < 10000 && (k = siwarp_poll_cq(r.cq, 1, &wc)) == 0; t++)
            (void)siwarp_progress(r.ctx);
        ASSERT_EQ(k, 1);
        ASSERT_EQ(wc.wr_id, first_queued + (uint64_t)i);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    }
    ASSERT(raw_quiet(&r));
    ASSERT_EQ(siwarp_poll_cq(r.cq, 1, &wc), 0);
    siwarp_dereg_mr(mr);
    rig_teardown(&r);
    free(src);
}

/* RFC 5040 6.4 / verbs: a fenced Send waits for the Read before it.  The
 * peer never answers the Read Request, so the Send must stay off the wire
 * however idle the socket is; an unfenced one goes (behind it in the SQ). */
TEST(direct_send_fenced_waits_for_read)
{
    static uint8_t src[64], sink[64], hdr[2 + 46 + 4];
    struct rig r;
    struct siwarp_mr *ms, *mk;
    struct siwarp_wc wc;

    rig_setup(&r, true, 0, 0);
    ASSERT_OK(siwarp_reg_mr(r.pd, src, sizeof(src), 0, &ms));
    ASSERT_OK(siwarp_reg_mr(r.pd, sink, sizeof(sink), SIWARP_ACCESS_LOCAL_WRITE, &mk));
    struct siwarp_sge rs = { sink, sizeof(sink), siwarp_mr_stag(mk) };
    struct siwarp_send_wr rd = { .wr_id = 1, .sg_list = &rs, .num_sge = 1,
                                 .opcode = SIWARP_WR_READ, .send_flags = SIWARP_SEND_SIGNALED,
                                 .rdma = { 0x1000, 0x4242 } };
    ASSERT_OK(siwarp_post_send(r.qp, &rd, NULL));
    /* the Read Request: 18 octets of untagged header and 28 of request */
    raw_read(&r, hdr, sizeof(hdr));
    ASSERT_EQ(hdr[1], 46);
    ASSERT_EQ(hdr[3], 0x40 | 1);                            /* Read Request */
    struct siwarp_sge ss = { src, sizeof(src), siwarp_mr_stag(ms) };
    struct siwarp_send_wr sw = { .wr_id = 2, .sg_list = &ss, .num_sge = 1,
                                 .opcode = SIWARP_WR_SEND,
                                 .send_flags = SIWARP_SEND_SIGNALED | SIWARP_SEND_FENCE };
    ASSERT_OK(siwarp_post_send(r.qp, &sw, NULL));
    ASSERT(raw_quiet(&r));
    ASSERT_EQ(siwarp_poll_cq(r.cq, 1, &wc), 0);
    siwarp_dereg_mr(ms);
    siwarp_dereg_mr(mk);
    rig_teardown(&r);
}

/* With coalescing on, the first post goes direct and later ones before
 * progress are held (qp_tx.c: swp_tx_post); a held WR is queued work, so a
 * post after it must not overtake it: the wire carries them in order. */
TEST(direct_send_never_overtakes_held_work)
{
    static uint8_t src[4][32], got[4096];
    struct rig r;
    struct siwarp_mr *mr;
    struct siwarp_wc wc;

    rig_setup(&r, true, 2, 0);
    ASSERT_OK(siwarp_reg_mr(r.pd, src, sizeof(src), 0, &mr));
    for (int i = 0; i < 4; i++) {
        struct siwarp_sge sge = { src[i], sizeof(src[i]), siwarp_mr_stag(mr) };
        struct siwarp_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
                                     .opcode = SIWARP_WR_SEND,
                                     .send_flags = SIWARP_SEND_SIGNALED };
        fill(src[i], sizeof(src[i]), 100u + (unsigned)i);
        ASSERT_OK(siwarp_post_send(r.qp, &wr, NULL));
        if (i == 0) {
            ASSERT_EQ(siwarp_poll_cq(r.cq, 1, &wc), 1);     /* went direct */
            ASSERT_EQ(wc.wr_id, 0);
        }
    }
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(raw_read_send(&r, true, 3, (uint32_t)i + 1, 0, got), sizeof(src[i]));
        ASSERT_MEM_EQ(got, src[i], sizeof(src[i]));
    }
    for (int i = 1; i < 4; i++) {
        int k = 0;
        for (int t = 0; t < 10000 && (k = siwarp_poll_cq(r.cq, 1, &wc)) == 0; t++)
            (void)siwarp_progress(r.ctx);
        ASSERT_EQ(k, 1);
        ASSERT_EQ(wc.wr_id, (uint64_t)i);
    }
    siwarp_dereg_mr(mr);
    rig_teardown(&r);
}

/* Nothing on the raw end for 20 ms, without progressing the QP */
static bool raw_silent(struct rig *r)
{
    uint8_t b;

    usleep(20000);
    return recv(r->raw, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

/* SIWARP_SEND_HOLD with coalescing: a Write waits, even as the first post
 * since progress ran, for the next progress call, and a Read posted behind
 * it waits with it; both then leave, in order (RFC 5040 5.5: the Read
 * Request after the Write).  Without coalescing the flag changes nothing. */
static void hold(uint32_t coalesce)
{
    static uint64_t src = 0x0102030405060708ull, dst;
    uint8_t got[28 + 52];
    struct siwarp_mr *mr;
    struct rig r;
    struct siwarp_sge sge = { &src, 8, 0 };
    struct siwarp_sge rsge = { &dst, 8, 0 };
    struct siwarp_send_wr w = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
                                .opcode = SIWARP_WR_WRITE,
                                .send_flags = SIWARP_SEND_SIGNALED | SIWARP_SEND_INLINE |
                                              SIWARP_SEND_HOLD };
    struct siwarp_send_wr rd = { .wr_id = 2, .sg_list = &rsge, .num_sge = 1,
                                 .opcode = SIWARP_WR_READ, .send_flags = SIWARP_SEND_SIGNALED };

    rig_setup(&r, true, coalesce, 0);
    ASSERT_OK(siwarp_reg_mr(r.pd, &dst, sizeof(dst), SIWARP_ACCESS_LOCAL_WRITE, &mr));
    rsge.lkey = siwarp_mr_stag(mr);
    w.rdma.remote_addr = 0x1000;
    w.rdma.rkey = 0x77;
    rd.rdma.remote_addr = 0x2000;
    rd.rdma.rkey = 0x78;
    (void)siwarp_progress(r.ctx);            /* the Write is the first post of an epoch */
    ASSERT(siwarp_post_send(r.qp, &w, NULL) >= 0);
    ASSERT_EQ(raw_silent(&r), coalesce != 0);
    ASSERT(siwarp_post_send(r.qp, &rd, NULL) >= 0);
    if (coalesce)
        ASSERT(raw_silent(&r));
    raw_read(&r, got, sizeof(got));           /* progresses: both leave */
    ASSERT_EQ(get32(got) >> 16, 22);          /* ULPDU_Length: 14 + 8 */
    ASSERT_EQ(got[3] & 0x0f, 0x0);            /* RDMA Write */
    ASSERT_EQ(got[2] & 0x80, 0x80);           /* tagged */
    ASSERT_EQ(got[28 + 3] & 0x0f, 0x1);       /* then the Read Request */
    siwarp_dereg_mr(mr);
    rig_teardown(&r);
}

TEST(hold_waits_for_the_next_progress_with_coalescing) { hold(4); }
TEST(hold_is_ignored_without_coalescing) { hold(0); }

/* SIWARP_SEND_PROMPT with coalescing: the second Send since progress ran,
 * which coalescing would hold (the silence checked first, without the
 * flag), leaves at once when flagged, behind the one held before it,
 * in order. */
TEST(prompt_goes_out_as_the_second_post)
{
    static uint8_t src[3][40], got[4096];
    struct siwarp_mr *mr;
    struct rig r;

    rig_setup(&r, true, 4, 0);
    ASSERT_OK(siwarp_reg_mr(r.pd, src, sizeof(src), 0, &mr));
    (void)siwarp_progress(r.ctx);
    for (int i = 0; i < 3; i++) {
        struct siwarp_sge sge = { src[i], sizeof(src[i]), siwarp_mr_stag(mr) };
        struct siwarp_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
                                     .opcode = SIWARP_WR_SEND,
                                     .send_flags = SIWARP_SEND_SIGNALED |
                                                   (i == 2 ? SIWARP_SEND_PROMPT : 0) };
        fill(src[i], sizeof(src[i]), 40u + (unsigned)i);
        ASSERT_OK(siwarp_post_send(r.qp, &wr, NULL));
        if (i == 0) {
            ASSERT_EQ(raw_read_send(&r, true, 3, 1, 0, got), sizeof(src[0]));   /* direct */
            ASSERT_MEM_EQ(got, src[0], sizeof(src[0]));
        } else if (i == 1) {
            ASSERT(raw_silent(&r));                                             /* held */
        }
    }
    /* no progress call since: the flagged Send wrote the held one and itself */
    for (int i = 1; i < 3; i++) {
        uint8_t f[2 + 18 + 40 + 4];       /* ULPDU_Length, header, payload, CRC */
        ASSERT_EQ(recv(r.raw, f, sizeof(f), MSG_DONTWAIT), (ssize_t)sizeof(f));
        ASSERT_EQ(get32(f + 12), (uint32_t)i + 1);          /* MSN */
        ASSERT_MEM_EQ(f + 20, src[i], sizeof(src[i]));
    }
    siwarp_dereg_mr(mr);
    rig_teardown(&r);
}

SWP_TEST_MAIN()
