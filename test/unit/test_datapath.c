/*
 * test_datapath.c - the QP data path (qp_tx.c, qp_rx.c, mem.c) driven over
 * a socketpair, without MPA setup: two siwarp QPs talking to each other in
 * every framing mode, and a raw peer that sends hand-built (and broken)
 * FPDUs and reads the Terminate that must come back.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "qp_pair.h"
#include "qp_tx.h"
#include "swp.h"

/* What a case creates through these helpers is released by pair_teardown:
 * the MRs reg() made and the case did not unreg(), the QPs, CQs, PD, the
 * context, and the socketpair's ends no QP took over (pair_attach). */
#define PAIR_MRS 16
struct pair {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq[2];
    struct siwarp_qp *qp[2];
    int fd[2];
    int fd_owned[2];                /* ours to close: no QP took it */
    struct siwarp_mr *mrs[PAIR_MRS];
};

static struct swp_nego nego_default(bool crc, bool markers)
{
    struct swp_nego n;
    memset(&n, 0, sizeof(n));
    n.mpa_rev = 2;
    n.crc = crc;
    n.markers_tx = n.markers_rx = markers;
    n.ird = n.ord = 16;
    n.mulpdu = 65000;
    n.max_rx_ulpdu = 65535;
    return n;
}

static void pair_make_qps(struct pair *p)
{
    struct siwarp_qp_init_attr a = { 0 };

    memset(p, 0, sizeof(*p));
    ASSERT_OK(siwarp_ctx_create(&p->ctx));
    ASSERT_OK(siwarp_alloc_pd(p->ctx, &p->pd));
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(siwarp_create_cq(p->ctx, 4096, &p->cq[i]));
        a.send_cq = a.recv_cq = p->cq[i];
        a.max_send_wr = 512;
        a.max_recv_wr = 512;
        a.max_sge = 4;
        a.max_inline = 256;
        ASSERT_OK(siwarp_create_qp(p->pd, &a, &p->qp[i]));
    }
    ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p->fd));
    p->fd_owned[0] = p->fd_owned[1] = 1;
}

/* qp takes over the socketpair's end `side` (it closes it when destroyed) */
static void pair_attach(struct pair *p, struct siwarp_qp *qp, int side, struct swp_nego *n)
{
    ASSERT_OK(swp_qp_attach_fd(qp, p->fd[side], n));
    p->fd_owned[side] = 0;
}

static void pair_setup(struct pair *p, struct swp_nego n)
{
    pair_make_qps(p);
    n.initiator = true;
    pair_attach(p, p->qp[0], 0, &n);
    n.initiator = false;
    pair_attach(p, p->qp[1], 1, &n);
}

static void pair_teardown(struct pair *p)
{
    for (int i = 0; i < PAIR_MRS; i++)
        if (p->mrs[i])
            ASSERT_OK(siwarp_dereg_mr(p->mrs[i]));
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(siwarp_destroy_qp(p->qp[i]));
        ASSERT_OK(siwarp_destroy_cq(p->cq[i]));
        if (p->fd_owned[i])
            close(p->fd[i]);
    }
    ASSERT_OK(siwarp_dealloc_pd(p->pd));
    siwarp_ctx_destroy(p->ctx);
}

/* Progress until cq has a completion; fail after ~10 s. */
static struct siwarp_wc poll_wc(struct pair *p, int side)
{
    struct siwarp_wc wc;
    for (int i = 0; i < 2000000; i++) {
        int n = siwarp_poll_cq(p->cq[side], 1, &wc);
        ASSERT(n >= 0);
        if (n == 1)
            return wc;
        if (i > 1000)
            siwarp_wait(p->ctx, 5);
    }
    FAIL("no completion on side %d", side);
    return wc;
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        b[i] = (uint8_t)(x >> 16);
    }
}

static struct siwarp_mr *reg(struct pair *p, void *b, size_t n, int acc)
{
    struct siwarp_mr *mr;
    ASSERT_OK(siwarp_reg_mr(p->pd, b, n, acc, &mr));
    for (int i = 0; i < PAIR_MRS; i++) {
        if (!p->mrs[i]) {
            p->mrs[i] = mr;
            return mr;
        }
    }
    FAIL("more than %d MRs in one pair", PAIR_MRS);
    return mr;
}

/* deregister an MR reg() made; siwarp_dereg_mr's result */
static int unreg(struct pair *p, struct siwarp_mr *mr)
{
    for (int i = 0; i < PAIR_MRS; i++)
        if (p->mrs[i] == mr)
            p->mrs[i] = NULL;
    return siwarp_dereg_mr(mr);
}

#define ACC_ALL (SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_READ)

static const size_t sizes[] = { 0, 1, 3, 4095, 4096, 65537, (1u << 20) + 7, 8u << 20 };

static void run_send(struct swp_nego n)
{
    struct pair p;
    pair_setup(&p, n);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t sz = sizes[k];
        uint8_t *s = malloc(sz + 1), *r = calloc(1, sz + 1);
        struct siwarp_mr *ms = reg(&p, s, sz + 1, 0), *mr = reg(&p, r, sz + 1, ACC_ALL);
        struct siwarp_sge ss = { s, (uint32_t)sz, siwarp_mr_stag(ms) };
        struct siwarp_sge rs = { r, (uint32_t)sz + 1, siwarp_mr_stag(mr) };
        struct siwarp_recv_wr rw = { .wr_id = 100 + k, .sg_list = &rs, .num_sge = 1 };
        struct siwarp_send_wr sw = { .wr_id = k, .sg_list = &ss, .num_sge = 1,
                                     .opcode = SIWARP_WR_SEND, .send_flags = SIWARP_SEND_SIGNALED };
        fill(s, sz, (unsigned)k);
        ASSERT_OK(siwarp_post_recv(p.qp[1], &rw, NULL));
        ASSERT_OK(siwarp_post_send(p.qp[0], &sw, NULL));
        struct siwarp_wc wc = poll_wc(&p, 1);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(wc.opcode, SIWARP_WC_RECV);
        ASSERT_EQ(wc.wr_id, 100 + k);
        ASSERT_EQ(wc.byte_len, sz);
        ASSERT_MEM_EQ(r, s, sz);
        ASSERT_EQ(r[sz], 0);
        wc = poll_wc(&p, 0);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(wc.wr_id, k);
        unreg(&p, ms);
        unreg(&p, mr);
        free(s);
        free(r);
    }
    pair_teardown(&p);
}

TEST(send_all_sizes_crc) { run_send(nego_default(true, false)); }
TEST(send_all_sizes_nocrc) { run_send(nego_default(false, false)); }
TEST(send_all_sizes_markers_crc) { run_send(nego_default(true, true)); }
TEST(send_all_sizes_markers_nocrc) { run_send(nego_default(false, true)); }
TEST(send_small_mulpdu)
{
    struct swp_nego n = nego_default(true, false);
    n.mulpdu = 1448 - 8;     /* a veth path's MSS */
    run_send(n);
}

static void run_rdma(struct swp_nego n, bool read)
{
    struct pair p;
    pair_setup(&p, n);
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t sz = sizes[k];
        /* Write: 0 -> 1.  Read: 0 reads from 1. */
        uint8_t *loc = calloc(1, sz + 1), *rem = calloc(1, sz + 1);
        struct siwarp_mr *ml = reg(&p, loc, sz + 1, ACC_ALL), *mr = reg(&p, rem, sz + 1, ACC_ALL);
        struct siwarp_sge ls = { loc, (uint32_t)sz, siwarp_mr_stag(ml) };
        struct siwarp_send_wr w = { .wr_id = k, .sg_list = &ls, .num_sge = 1,
                                    .opcode = read ? SIWARP_WR_READ : SIWARP_WR_WRITE,
                                    .send_flags = SIWARP_SEND_SIGNALED };
        w.rdma.remote_addr = (uintptr_t)rem;
        w.rdma.rkey = siwarp_mr_stag(mr);
        fill(read ? rem : loc, sz, (unsigned)k + 7);
        ASSERT_OK(siwarp_post_send(p.qp[0], &w, NULL));
        struct siwarp_wc wc = poll_wc(&p, 0);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(wc.opcode, read ? SIWARP_WC_READ : SIWARP_WC_WRITE);
        if (!read) {
            /* ordering: a Send after the Write arrives after its data */
            uint8_t tok = 0;
            struct siwarp_mr *mt = reg(&p, &tok, 1, ACC_ALL);
            struct siwarp_sge ts = { &tok, 1, siwarp_mr_stag(mt) };
            struct siwarp_recv_wr rw = { .wr_id = 9, .sg_list = &ts, .num_sge = 1 };
            struct siwarp_send_wr sw = { .wr_id = 10, .opcode = SIWARP_WR_SEND };
            ASSERT_OK(siwarp_post_recv(p.qp[1], &rw, NULL));
            ASSERT_OK(siwarp_post_send(p.qp[0], &sw, NULL));
            wc = poll_wc(&p, 1);
            ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
            unreg(&p, mt);
        }
        ASSERT_MEM_EQ(loc, rem, sz);
        ASSERT_EQ(loc[sz], 0);
        ASSERT_EQ(rem[sz], 0);
        unreg(&p, ml);
        unreg(&p, mr);
        free(loc);
        free(rem);
    }
    pair_teardown(&p);
}

/* A stream of large segments is read straight into its target with CRC
 * off (or with CRC on below swp_rx_bulk_min_crc): only the staged
 * lookahead behind each FPDU is copied (qp_rx.c: rx_direct).  With CRC on
 * and the default threshold every segment is staged, its copy out of
 * staging carrying the CRC pass: nothing is read straight. */
static void large_segments(bool crc, uint32_t bulk_min_crc)
{
    struct pair p;
    struct swp_nego n = nego_default(crc, false);
    const size_t sz = 8u << 20;
    bool direct = !crc || bulk_min_crc <= 61440;
    swp_rx_bulk_min_crc = bulk_min_crc;
    pair_setup(&p, n);
    uint8_t *s = malloc(sz), *r = calloc(1, sz);
    struct siwarp_mr *ms = reg(&p, s, sz, 0), *mr = reg(&p, r, sz, ACC_ALL);
    fill(s, sz, 77);
    for (int rep = 0; rep < 4; rep++) {
        struct siwarp_sge ss = { s, (uint32_t)sz, siwarp_mr_stag(ms) };
        struct siwarp_send_wr w = { .wr_id = 1, .sg_list = &ss, .num_sge = 1,
                                    .opcode = SIWARP_WR_WRITE, .send_flags = SIWARP_SEND_SIGNALED,
                                    .rdma = { (uint64_t)(uintptr_t)r, siwarp_mr_stag(mr) } };
        ASSERT_OK(siwarp_post_send(p.qp[0], &w, NULL));
        struct siwarp_wc wc = poll_wc(&p, 0);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        while (p.qp[1]->rx.copied + p.qp[1]->rx.direct < (rep + 1) * sz)
            ASSERT(siwarp_wait(p.ctx, 100) >= 0);
    }
    ASSERT_MEM_EQ(s, r, sz);
    fprintf(stderr, "# copied %llu direct %llu\n", (unsigned long long)p.qp[1]->rx.copied,
             (unsigned long long)p.qp[1]->rx.direct);
    if (direct)
        ASSERT(p.qp[1]->rx.copied * 50 < p.qp[1]->rx.direct);   /* under 2% copied */
    else
        ASSERT_EQ(p.qp[1]->rx.direct, 0);
    free(s);
    free(r);
    pair_teardown(&p);
}

TEST(large_segments_placed_without_staging_copy_nocrc) { large_segments(false, 65536); }
TEST(large_segments_placed_without_staging_copy_below_threshold) { large_segments(true, 61440); }
TEST(large_segments_staged_with_crc) { large_segments(true, 65536); }

/* MSS-sized segments (1448 octets, a 1500-byte MTU) are not read one
 * syscall each: they are staged in bulk and copied. */
TEST(small_segments_staged_in_bulk)
{
    struct pair p;
    struct swp_nego n = nego_default(true, false);
    const size_t sz = 4u << 20;
    n.mulpdu = 1448 - SWP_MPA_HDR_LEN - SWP_MPA_CRC_LEN;
    pair_setup(&p, n);
    uint8_t *s = malloc(sz), *r = calloc(1, sz);
    struct siwarp_mr *ms = reg(&p, s, sz, 0), *mr = reg(&p, r, sz, ACC_ALL);
    fill(s, sz, 78);
    struct siwarp_sge ss = { s, (uint32_t)sz, siwarp_mr_stag(ms) };
    struct siwarp_send_wr w = { .wr_id = 1, .sg_list = &ss, .num_sge = 1,
                                .opcode = SIWARP_WR_WRITE, .send_flags = SIWARP_SEND_SIGNALED,
                                .rdma = { (uint64_t)(uintptr_t)r, siwarp_mr_stag(mr) } };
    ASSERT_OK(siwarp_post_send(p.qp[0], &w, NULL));
    ASSERT_EQ(poll_wc(&p, 0).status, SIWARP_WC_SUCCESS);
    while (p.qp[1]->rx.copied + p.qp[1]->rx.direct < sz)
        ASSERT(siwarp_wait(p.ctx, 100) >= 0);
    ASSERT_MEM_EQ(s, r, sz);
    fprintf(stderr, "# copied %llu direct %llu\n", (unsigned long long)p.qp[1]->rx.copied,
            (unsigned long long)p.qp[1]->rx.direct);
    ASSERT(p.qp[1]->rx.direct * 4 < p.qp[1]->rx.copied);
    free(s);
    free(r);
    pair_teardown(&p);
}

/* Send 4 x sz one at a time (each after the socket ran dry, as in a
 * ping-pong) and return how many payload octets the receiver read straight
 * into the target (rx.direct); *copied gets those staged and copied. */
static uint64_t sends_one_at_a_time(bool crc, uint32_t sz, uint64_t *copied)
{
    struct pair p;
    uint64_t direct;
    pair_setup(&p, nego_default(crc, false));
    uint8_t *s = malloc(sz), *r = malloc(sz);
    struct siwarp_mr *ms = reg(&p, s, sz, 0), *mr = reg(&p, r, sz, ACC_ALL);
    for (int i = 0; i < 4; i++) {
        struct siwarp_sge ss = { s, sz, siwarp_mr_stag(ms) };
        struct siwarp_sge rs = { r, sz, siwarp_mr_stag(mr) };
        struct siwarp_recv_wr rw = { .wr_id = 100 + i, .sg_list = &rs, .num_sge = 1 };
        struct siwarp_send_wr sw = { .wr_id = i, .sg_list = &ss, .num_sge = 1,
                                     .opcode = SIWARP_WR_SEND, .send_flags = SIWARP_SEND_SIGNALED };
        fill(s, sz, 40 + i);
        memset(r, 0, sz);
        ASSERT_OK(siwarp_post_recv(p.qp[1], &rw, NULL));
        ASSERT_OK(siwarp_post_send(p.qp[0], &sw, NULL));
        ASSERT_EQ(poll_wc(&p, 1).byte_len, sz);
        ASSERT_EQ(poll_wc(&p, 0).status, SIWARP_WC_SUCCESS);
        ASSERT_MEM_EQ(r, s, sz);
    }
    fprintf(stderr, "# CRC %s, %u B: copied %llu direct %llu\n", crc ? "on" : "off", sz,
            (unsigned long long)p.qp[1]->rx.copied, (unsigned long long)p.qp[1]->rx.direct);
    *copied = p.qp[1]->rx.copied;
    direct = p.qp[1]->rx.direct;
    unreg(&p, ms);
    unreg(&p, mr);
    free(s);
    free(r);
    pair_teardown(&p);
    return direct;
}

/* With CRC on, a segment that fits the staging buffer (an eager MPI
 * message) is read whole by one recv and copied out with the CRC pass,
 * rather than read by a lookahead and a readv: a syscall costs more than
 * the copy (qp_rx.c: SWP_RX_BULK_MIN_CRC). */
TEST(medium_segments_staged_with_crc)
{
    uint64_t copied, direct = sends_one_at_a_time(true, 48 * 1024, &copied);
    ASSERT_EQ(direct, 0);
    ASSERT_EQ(copied, 4 * 48 * 1024);
}

/* With CRC off the copy is a pass of its own: from 32 KiB a segment goes
 * straight into its target (qp_rx.c: SWP_RX_BULK_MIN), below it is staged. */
TEST(medium_segments_direct_without_crc)
{
    uint64_t copied, direct = sends_one_at_a_time(false, 48 * 1024, &copied);
    ASSERT(direct > 2 * 48 * 1024);     /* all but the first (read whole: no segment before it) */
    direct = sends_one_at_a_time(false, 16 * 1024, &copied);
    ASSERT_EQ(direct, 0);
    ASSERT_EQ(copied, 4 * 16 * 1024);
}

/* While the socket is full the sender appends the next FPDUs behind the
 * unwritten rest of its batch (qp_tx.c: tx_top_up), sliding that rest to
 * the front of its iovec and header arrays.  Mixed traffic with markers
 * and CRC: a header, marker or copied small payload moved wrongly shows as
 * a CRC error, a bad marker or wrong data. */
TEST(sender_tops_up_a_full_socket)
{
    struct pair p;
    const size_t big = 6u << 20;
    uint8_t small[3][100], got[3][100];
    pair_setup(&p, nego_default(true, true));
    uint8_t *s = malloc(big), *r = calloc(1, big);
    struct siwarp_mr *ms = reg(&p, s, big, 0), *mr = reg(&p, r, big, ACC_ALL);
    struct siwarp_mr *mg = reg(&p, got, sizeof(got), ACC_ALL), *mm = reg(&p, small, sizeof(small), 0);
    fill(s, big, 91);
    fill(&small[0][0], sizeof(small), 92);
    for (int i = 0; i < 3; i++) {
        struct siwarp_sge gs = { got[i], sizeof(got[i]), siwarp_mr_stag(mg) };
        struct siwarp_recv_wr rw = { .wr_id = 20 + i, .sg_list = &gs, .num_sge = 1 };
        ASSERT_OK(siwarp_post_recv(p.qp[1], &rw, NULL));
    }
    for (int i = 0; i < 3; i++) {
        /* Send i (i + 37 bytes, copied into the header area), then a third
         * of the big buffer by Write */
        struct siwarp_sge ss = { small[i], (uint32_t)(i + 37), siwarp_mr_stag(mm) };
        struct siwarp_send_wr sw = { .wr_id = 10 + i, .sg_list = &ss, .num_sge = 1,
                                     .opcode = SIWARP_WR_SEND };
        size_t off = i * (big / 3);
        struct siwarp_sge bs = { s + off, (uint32_t)(big / 3), siwarp_mr_stag(ms) };
        struct siwarp_send_wr ww = { .wr_id = 1, .sg_list = &bs, .num_sge = 1,
                                     .opcode = SIWARP_WR_WRITE,
                                     .rdma = { (uint64_t)(uintptr_t)(r + off), siwarp_mr_stag(mr) } };
        ASSERT_OK(siwarp_post_send(p.qp[0], &sw, NULL));
        ASSERT_OK(siwarp_post_send(p.qp[0], &ww, NULL));
    }
    for (int i = 0; i < 3; i++) {
        struct siwarp_wc wc = poll_wc(&p, 1);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(wc.wr_id, 20 + i);
        ASSERT_EQ(wc.byte_len, i + 37);
        ASSERT_MEM_EQ(got[i], small[i], i + 37);
    }
    /* every payload byte placed: the Writes and the three Sends */
    while (p.qp[1]->rx.copied + p.qp[1]->rx.direct < big + 37 + 38 + 39)
        ASSERT(siwarp_wait(p.ctx, 100) >= 0);
    ASSERT_MEM_EQ(s, r, big);
    fprintf(stderr, "# topped up %llu bytes\n", (unsigned long long)p.qp[0]->tx.topped_up);
    ASSERT(p.qp[0]->tx.topped_up > 0);
    free(s);
    free(r);
    pair_teardown(&p);
}

/* A stream that was idle starts with a small batch (qp_tx.c:
 * tx_batch_cap): a 1 MiB Write posted on an idle QP whose socket fills
 * has at most SWP_TX_BATCH_FIRST octets (and the FPDU that crossed it)
 * built ahead of what was written, not all of it, each with its CRC
 * computed before the peer sees a byte.  Then every octet arrives, and
 * the stream, idle again, starts over small. */
TEST(first_batch_after_idle_is_small)
{
    struct pair p;
    const size_t big = 1u << 20;
    pair_setup(&p, nego_default(true, false));
    uint8_t *s = malloc(big), *r = calloc(1, big);
    struct siwarp_mr *ms = reg(&p, s, big, 0), *mr = reg(&p, r, big, ACC_ALL);
    struct swp_tx *tx = &p.qp[0]->tx;
    fill(s, big, 93);
    struct siwarp_sge bs = { s, (uint32_t)big, siwarp_mr_stag(ms) };
    struct siwarp_send_wr ww = { .wr_id = 1, .sg_list = &bs, .num_sge = 1,
                                 .opcode = SIWARP_WR_WRITE,
                                 .rdma = { (uint64_t)(uintptr_t)r, siwarp_mr_stag(mr) } };
    ASSERT_OK(siwarp_post_send(p.qp[0], &ww, NULL));
    ASSERT(tx->written < big);              /* the socket filled */
    ASSERT(tx->queued - tx->written <= SWP_TX_BATCH_FIRST + SWP_RX_SPEC_FPDU_MAX);
    while (p.qp[1]->rx.copied + p.qp[1]->rx.direct < big)
        ASSERT(siwarp_wait(p.ctx, 100) >= 0);
    ASSERT_MEM_EQ(s, r, big);
    for (int i = 0; i < 100 && tx->ramp; i++)
        (void)siwarp_progress(p.ctx);
    ASSERT_EQ(tx->ramp, 0);
    free(s);
    free(r);
    pair_teardown(&p);
}

/* Each batch written whole lets the next double (qp_tx.h:
 * swp_tx_batch_written), from SWP_TX_BATCH_FIRST up to SWP_TX_BATCH and no
 * further: a batch past the L2 cache has its CRC'd bytes read twice from
 * memory. */
TEST(batch_doubles_up_to_cap)
{
    struct swp_tx tx;
    uint64_t want = SWP_TX_BATCH_FIRST;

    memset(&tx, 0, sizeof(tx));
    for (int i = 0; i < 40; i++) {
        ASSERT_EQ(swp_tx_batch_cap(&tx), want);
        swp_tx_batch_written(&tx);
        want = want * 2 > SWP_TX_BATCH ? SWP_TX_BATCH : want * 2;
    }
    ASSERT_EQ(swp_tx_batch_cap(&tx), (uint64_t)SWP_TX_BATCH);
}

TEST(write_all_sizes_crc) { run_rdma(nego_default(true, false), false); }
TEST(write_all_sizes_markers) { run_rdma(nego_default(true, true), false); }
TEST(read_all_sizes_crc) { run_rdma(nego_default(true, false), true); }
TEST(read_all_sizes_nocrc_markers) { run_rdma(nego_default(false, true), true); }

static void run_p2p(int rtr)
{
    struct swp_nego n = nego_default(true, false);
    n.p2p = true;
    n.rtr = rtr;
    run_rdma(n, true);
    run_send(n);
}
TEST(p2p_read_rtr) { run_p2p(SIWARP_RTR_READ); }
TEST(p2p_write_rtr) { run_p2p(SIWARP_RTR_WRITE); }
TEST(p2p_send_rtr) { run_p2p(SIWARP_RTR_SEND); }

TEST(sgl_send_and_inline)
{
    struct pair p;
    uint8_t a[100], b[5000], c[1], r1[3000], r2[3000];
    pair_setup(&p, nego_default(true, false));
    fill(a, sizeof(a), 1);
    fill(b, sizeof(b), 2);
    c[0] = 0x5a;
    struct siwarp_mr *m = reg(&p, a, sizeof(a), 0), *mb = reg(&p, b, sizeof(b), 0);
    struct siwarp_mr *mc = reg(&p, c, 1, 0), *m1 = reg(&p, r1, sizeof(r1), ACC_ALL);
    struct siwarp_mr *m2 = reg(&p, r2, sizeof(r2), ACC_ALL);
    struct siwarp_sge sg[3] = { { a, 100, siwarp_mr_stag(m) }, { b, 5000, siwarp_mr_stag(mb) },
                                { c, 1, siwarp_mr_stag(mc) } };
    struct siwarp_sge rg[2] = { { r1, 3000, siwarp_mr_stag(m1) }, { r2, 3000, siwarp_mr_stag(m2) } };
    struct siwarp_recv_wr rw = { .wr_id = 1, .sg_list = rg, .num_sge = 2 };
    struct siwarp_send_wr sw = { .wr_id = 2, .sg_list = sg, .num_sge = 3, .opcode = SIWARP_WR_SEND_SE };
    ASSERT_OK(siwarp_post_recv(p.qp[1], &rw, NULL));
    ASSERT_OK(siwarp_post_send(p.qp[0], &sw, NULL));
    struct siwarp_wc wc = poll_wc(&p, 1);
    ASSERT_EQ(wc.byte_len, 5101);
    ASSERT(wc.wc_flags & SIWARP_WC_SOLICITED);
    ASSERT_MEM_EQ(r1, a, 100);
    ASSERT_MEM_EQ(r1 + 100, b, 2900);
    ASSERT_MEM_EQ(r2, b + 2900, 2100);
    ASSERT_EQ(r2[2100], 0x5a);
    /* inline: the buffer may change right after post */
    uint8_t msg[64];
    fill(msg, sizeof(msg), 9);
    uint8_t want[64];
    memcpy(want, msg, 64);
    struct siwarp_sge is = { msg, 64, 0 };
    struct siwarp_send_wr iw = { .wr_id = 3, .sg_list = &is, .num_sge = 1, .opcode = SIWARP_WR_SEND,
                                 .send_flags = SIWARP_SEND_INLINE | SIWARP_SEND_SIGNALED };
    struct siwarp_recv_wr rw2 = { .wr_id = 4, .sg_list = rg, .num_sge = 1 };
    ASSERT_OK(siwarp_post_recv(p.qp[1], &rw2, NULL));
    ASSERT_OK(siwarp_post_send(p.qp[0], &iw, NULL));
    memset(msg, 0, sizeof(msg));
    wc = poll_wc(&p, 1);
    ASSERT_EQ(wc.byte_len, 64);
    ASSERT_MEM_EQ(r1, want, 64);
    pair_teardown(&p);
}

TEST(read_into_sgl)
{
    struct pair p;
    static uint8_t rem[70000], a[1000], b[65536], c[3001];
    pair_setup(&p, nego_default(true, false));
    fill(rem, sizeof(rem), 11);
    struct siwarp_mr *mr = reg(&p, rem, sizeof(rem), ACC_ALL);
    struct siwarp_mr *ma = reg(&p, a, sizeof(a), ACC_ALL), *mb = reg(&p, b, sizeof(b), ACC_ALL);
    struct siwarp_mr *mc = reg(&p, c, sizeof(c), ACC_ALL);
    struct siwarp_sge sg[3] = { { a, 1000, siwarp_mr_stag(ma) }, { b, 65536, siwarp_mr_stag(mb) },
                                { c, 3000, siwarp_mr_stag(mc) } };
    struct siwarp_send_wr w = { .wr_id = 1, .sg_list = sg, .num_sge = 3, .opcode = SIWARP_WR_READ,
                                .send_flags = SIWARP_SEND_SIGNALED };
    w.rdma.remote_addr = (uintptr_t)rem + 5;
    w.rdma.rkey = siwarp_mr_stag(mr);
    ASSERT_OK(siwarp_post_send(p.qp[0], &w, NULL));
    struct siwarp_wc wc = poll_wc(&p, 0);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_MEM_EQ(a, rem + 5, 1000);
    ASSERT_MEM_EQ(b, rem + 1005, 65536);
    ASSERT_MEM_EQ(c, rem + 66541, 3000);
    ASSERT_EQ(c[3000], 0);
    pair_teardown(&p);
}

TEST(send_with_invalidate)
{
    struct pair p;
    uint8_t buf[4096], dst[64];
    pair_setup(&p, nego_default(true, false));
    struct siwarp_mr *target = reg(&p, buf, sizeof(buf), ACC_ALL);
    struct siwarp_mr *md = reg(&p, dst, sizeof(dst), ACC_ALL);
    struct siwarp_sge rs = { dst, sizeof(dst), siwarp_mr_stag(md) };
    struct siwarp_recv_wr rw = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 };
    struct siwarp_send_wr sw = { .wr_id = 2, .opcode = SIWARP_WR_SEND_SE_INV,
                                 .invalidate_stag = siwarp_mr_stag(target) };
    ASSERT_OK(siwarp_post_recv(p.qp[1], &rw, NULL));
    ASSERT_OK(siwarp_post_send(p.qp[0], &sw, NULL));
    struct siwarp_wc wc = poll_wc(&p, 1);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT(wc.wc_flags & SIWARP_WC_WITH_INV);
    ASSERT(wc.wc_flags & SIWARP_WC_SOLICITED);
    ASSERT_EQ(wc.invalidated_stag, siwarp_mr_stag(target));
    /* a Write to the invalidated STag is refused with DDP "invalid STag" */
    uint8_t src[16] = { 1 };
    struct siwarp_mr *ms = reg(&p, src, sizeof(src), 0);
    struct siwarp_sge ss = { src, sizeof(src), siwarp_mr_stag(ms) };
    struct siwarp_send_wr ww = { .wr_id = 3, .sg_list = &ss, .num_sge = 1, .opcode = SIWARP_WR_WRITE,
                                 .send_flags = SIWARP_SEND_SIGNALED };
    ww.rdma.remote_addr = (uintptr_t)buf;
    ww.rdma.rkey = siwarp_mr_stag(target);
    memset(buf, 0, sizeof(buf));
    ASSERT_OK(siwarp_post_send(p.qp[0], &ww, NULL));
    struct siwarp_qp_attr at;
    for (int i = 0; i < 2000; i++) {
        siwarp_wait(p.ctx, 5);
        siwarp_query_qp(p.qp[0], &at);
        if (at.state == SIWARP_QPS_ERROR)
            break;
    }
    ASSERT_EQ(at.state, SIWARP_QPS_ERROR);
    ASSERT_EQ(at.term_recv, SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_TAGGED, SWP_DDP_EC_T_INV_STAG));
    siwarp_query_qp(p.qp[1], &at);
    ASSERT_EQ(at.state, SIWARP_QPS_ERROR);
    ASSERT_EQ(at.term_sent, SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_TAGGED, SWP_DDP_EC_T_INV_STAG));
    for (size_t i = 0; i < sizeof(buf); i++)
        ASSERT_EQ(buf[i], 0);
    pair_teardown(&p);
}

TEST(read_fence_and_ord)
{
    struct pair p;
    struct swp_nego n = nego_default(true, false);
    n.ord = n.ird = 2;
    pair_setup(&p, n);
    enum { N = 9, SZ = 100000 };
    uint8_t *rem = malloc(SZ), *loc = calloc(N, SZ);
    fill(rem, SZ, 3);
    struct siwarp_mr *mr = reg(&p, rem, SZ, ACC_ALL), *ml = reg(&p, loc, (size_t)N * SZ, ACC_ALL);
    struct siwarp_sge sg[N];
    struct siwarp_send_wr w[N];
    for (int i = 0; i < N; i++) {
        sg[i] = (struct siwarp_sge){ loc + (size_t)i * SZ, SZ, siwarp_mr_stag(ml) };
        memset(&w[i], 0, sizeof(w[i]));
        w[i].wr_id = (uint64_t)i;
        w[i].sg_list = &sg[i];
        w[i].num_sge = 1;
        w[i].opcode = SIWARP_WR_READ;
        w[i].send_flags = SIWARP_SEND_SIGNALED | (i == 5 ? SIWARP_SEND_FENCE : 0);
        w[i].rdma.remote_addr = (uintptr_t)rem;
        w[i].rdma.rkey = siwarp_mr_stag(mr);
        w[i].next = i + 1 < N ? &w[i + 1] : NULL;
    }
    ASSERT_OK(siwarp_post_send(p.qp[0], &w[0], NULL));
    for (int i = 0; i < N; i++) {
        struct siwarp_wc wc = poll_wc(&p, 0);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(wc.wr_id, i);   /* completions in posting order */
        ASSERT_MEM_EQ(loc + (size_t)i * SZ, rem, SZ);
    }
    free(rem);
    free(loc);
    pair_teardown(&p);
}

TEST(close_flushes_outstanding_work)
{
    struct pair p;
    uint8_t b[64];
    pair_setup(&p, nego_default(true, false));
    struct siwarp_mr *m = reg(&p, b, sizeof(b), ACC_ALL);
    struct siwarp_sge s = { b, sizeof(b), siwarp_mr_stag(m) };
    struct siwarp_recv_wr rw[3] = { { .wr_id = 1, .sg_list = &s, .num_sge = 1 },
                                    { .wr_id = 2, .sg_list = &s, .num_sge = 1 },
                                    { .wr_id = 3, .sg_list = &s, .num_sge = 1 } };
    rw[0].next = &rw[1];
    rw[1].next = &rw[2];
    ASSERT_OK(siwarp_post_recv(p.qp[1], rw, NULL));
    ASSERT_OK(siwarp_disconnect(p.qp[0]));
    for (int i = 1; i <= 3; i++) {
        struct siwarp_wc wc = poll_wc(&p, 1);
        ASSERT_EQ(wc.status, SIWARP_WC_WR_FLUSH_ERR);
        ASSERT_EQ(wc.wr_id, i);
    }
    struct siwarp_qp_attr at;
    siwarp_query_qp(p.qp[1], &at);
    ASSERT_EQ(at.state, SIWARP_QPS_ERROR);
    /* posting after the fact completes flushed, never hangs */
    struct siwarp_send_wr sw = { .wr_id = 7, .opcode = SIWARP_WR_SEND };
    ASSERT_OK(siwarp_post_send(p.qp[1], &sw, NULL));
    struct siwarp_wc wc = poll_wc(&p, 1);
    ASSERT_EQ(wc.status, SIWARP_WC_WR_FLUSH_ERR);
    ASSERT_EQ(wc.wr_id, 7);
    pair_teardown(&p);
}

/* A CQ smaller than the work in flight grows instead of losing completions;
 * destroying a QP removes its queued completions. */
TEST(cq_grows_and_destroy_purges)
{
    struct pair p;
    struct siwarp_cq *small;
    struct siwarp_qp *qp;
    struct siwarp_qp_init_attr a = { 0 };
    pair_make_qps(&p);
    ASSERT_OK(siwarp_create_cq(p.ctx, 2, &small));
    a.send_cq = a.recv_cq = small;
    a.max_send_wr = a.max_recv_wr = 64;
    a.max_sge = 1;
    ASSERT_OK(siwarp_create_qp(p.pd, &a, &qp));
    struct swp_nego n = nego_default(true, false);
    n.initiator = true;
    pair_attach(&p, qp, 0, &n);
    pair_attach(&p, p.qp[1], 1, &n);
    uint8_t b[8];
    struct siwarp_mr *m = reg(&p, b, sizeof(b), ACC_ALL);
    struct siwarp_sge s = { b, 8, siwarp_mr_stag(m) };
    struct siwarp_recv_wr rw[40];
    for (int i = 0; i < 40; i++) {
        rw[i] = (struct siwarp_recv_wr){ .wr_id = (uint64_t)i, .sg_list = &s, .num_sge = 1 };
        ASSERT_OK(siwarp_post_recv(p.qp[1], &rw[i], NULL));
    }
    for (int i = 0; i < 40; i++) {
        struct siwarp_send_wr w = { .wr_id = (uint64_t)i, .sg_list = &s, .num_sge = 1,
                                    .opcode = SIWARP_WR_SEND, .send_flags = SIWARP_SEND_SIGNALED };
        ASSERT_OK(siwarp_post_send(qp, &w, NULL));
    }
    for (int i = 0; i < 20; i++)
        siwarp_progress(p.ctx);
    ASSERT(small->count >= 40 && small->size >= 40);
    ASSERT_EQ(small->overflows, 0);
    struct siwarp_wc wc[64];
    int got = siwarp_poll_cq(small, 10, wc);
    ASSERT_EQ(got, 10);
    for (int i = 0; i < 10; i++)
        ASSERT_EQ(wc[i].wr_id, i);
    ASSERT_OK(siwarp_destroy_qp(qp));
    ASSERT_EQ(small->count, 0);
    ASSERT_OK(siwarp_destroy_cq(small));
    pair_teardown(&p);
}

/* A WQE gets its SGE slice when posted (the ring is not walked at create,
 * so its pages stay untouched), and destroy frees the inline copies of the
 * WQEs still queued, and only those: under LeakSanitizer with
 * SWP_TEST_LEAKS=1 (contrib/ci-sanitizers.sh) a missed copy fails the case. */
/* A QP never connected: its work queues only. */
static struct siwarp_qp *queue_only_qp(struct pair *p, uint32_t max_sge, uint32_t max_inline)
{
    struct siwarp_qp *qp;
    struct siwarp_qp_init_attr a = { 0 };
    pair_make_qps(p);
    a.send_cq = a.recv_cq = p->cq[0];
    a.max_send_wr = 4;
    a.max_recv_wr = 4;
    a.max_sge = max_sge;
    a.max_inline = max_inline;
    ASSERT_OK(siwarp_create_qp(p->pd, &a, &qp));
    return qp;
}

TEST(queued_wqes_own_their_slices_and_copies)
{
    struct pair p;
    struct siwarp_qp *qp = queue_only_qp(&p, 2, 16);
    uint8_t b[3][2][5];
    for (int i = 0; i < 3; i++) {
        struct siwarp_sge sg[2];
        for (int k = 0; k < 2; k++) {
            memset(b[i][k], 'a' + i * 2 + k, sizeof(b[i][k]));
            sg[k] = (struct siwarp_sge){ b[i][k], sizeof(b[i][k]), 0 };
        }
        struct siwarp_send_wr w = { .wr_id = (uint64_t)i, .sg_list = sg, .num_sge = 2,
                                    .opcode = SIWARP_WR_SEND,
                                    .send_flags = SIWARP_SEND_INLINE };
        ASSERT_OK(siwarp_post_send(qp, &w, NULL));
        struct swp_swqe *q = &qp->sq[i];
        ASSERT(q->sge == q->sge_inline);        /* 2 SGEs: in the WQE itself */
        ASSERT_EQ(q->sge[1].length, 5);
        ASSERT(q->inline_buf && q->inline_buf[0] == 'a' + i * 2 && q->inline_buf[9] == 'b' + i * 2);
    }
    struct siwarp_recv_wr rw = { .wr_id = 9, .sg_list = NULL, .num_sge = 0 };
    ASSERT_OK(siwarp_post_recv(qp, &rw, NULL));
    ASSERT(qp->rq[0].sge == qp->rq_sge);
    ASSERT_OK(siwarp_destroy_qp(qp));
    pair_teardown(&p);
}

/* More SGEs than a WQE holds: each WQE's slice of the QP's SGE array,
 * filled from the work request. */
TEST(wqe_sges_beyond_inline_in_the_array)
{
    struct pair p;
    struct siwarp_qp *qp = queue_only_qp(&p, SWP_SGE_INLINE + 1, 0);
    ASSERT(qp->sq_sge != NULL);
    uint8_t b[SWP_SGE_INLINE + 1][4];
    struct siwarp_sge sg[SWP_SGE_INLINE + 1];
    for (int k = 0; k <= SWP_SGE_INLINE; k++)
        sg[k] = (struct siwarp_sge){ b[k], (uint32_t)(k + 1), 0 };
    for (int i = 0; i < 2; i++) {
        struct siwarp_send_wr w = { .wr_id = (uint64_t)i, .sg_list = sg,
                                    .num_sge = SWP_SGE_INLINE + 1,
                                    .opcode = SIWARP_WR_SEND,
                                    .send_flags = SIWARP_SEND_UNREGISTERED };
        ASSERT_OK(siwarp_post_send(qp, &w, NULL));
        struct swp_swqe *q = &qp->sq[i];
        ASSERT(q->sge == qp->sq_sge + (size_t)i * (SWP_SGE_INLINE + 1));
        for (int k = 0; k <= SWP_SGE_INLINE; k++) {
            ASSERT(q->sge[k].addr == b[k]);
            ASSERT_EQ(q->sge[k].length, (uint32_t)(k + 1));
        }
    }
    ASSERT_OK(siwarp_destroy_qp(qp));
    pair_teardown(&p);
}

/* ---- send coalescing (init.tx_coalesce) ---------------------------------------- */

static struct siwarp_qp *coalesce_qp(struct pair *p, uint32_t coalesce)
{
    struct siwarp_qp *qp;
    struct siwarp_qp_init_attr a = { .send_cq = p->cq[0], .recv_cq = p->cq[0],
                                     .max_send_wr = 64, .max_recv_wr = 1, .max_sge = 1,
                                     .tx_coalesce = coalesce };
    struct swp_nego n = nego_default(false, false);
    n.initiator = true;
    ASSERT_OK(siwarp_create_qp(p->pd, &a, &qp));
    pair_attach(p, qp, 0, &n);
    return qp;
}

static void post8(struct siwarp_qp *qp, struct siwarp_sge *s, uint64_t id)
{
    struct siwarp_send_wr w = { .wr_id = id, .sg_list = s, .num_sge = 1,
                                .opcode = SIWARP_WR_SEND, .send_flags = SIWARP_SEND_SIGNALED };
    ASSERT_OK(siwarp_post_send(qp, &w, NULL));
}

/* bytes the raw peer could read now, in whole 8-byte Send FPDUs */
static long fpdus_waiting(int fd)
{
    static uint8_t sink[65536];
    ssize_t n = recv(fd, sink, sizeof(sink), MSG_PEEK | MSG_DONTWAIT);
    return n < 0 ? 0 : n / (long)swp_fpdu_wire_len(SWP_HDR_UNTAGGED + 8, false);
}

/* The first post after progress leaves at once; later ones wait for the
 * next progress call, at most tx_coalesce of them; the one after writes
 * them all.  A raw peer counts what is on the wire. */
TEST(tx_coalesce_holds_a_burst_until_progress)
{
    struct pair p;
    uint8_t b[8] = "abcdefg";
    pair_make_qps(&p);
    struct siwarp_qp *qp = coalesce_qp(&p, 4);
    struct siwarp_mr *m = reg(&p, b, sizeof(b), 0);
    struct siwarp_sge s = { b, 8, siwarp_mr_stag(m) };
    struct siwarp_wc wc[16];

    post8(qp, &s, 1);
    ASSERT_EQ(fpdus_waiting(p.fd[1]), 1);
    for (int i = 2; i <= 5; i++)
        post8(qp, &s, (uint64_t)i);
    ASSERT_EQ(fpdus_waiting(p.fd[1]), 1);           /* four held */
    ASSERT_EQ(siwarp_poll_cq(p.cq[0], 16, wc), 5);   /* progress flushes them */
    ASSERT_EQ(fpdus_waiting(p.fd[1]), 5);
    post8(qp, &s, 6);                                /* a new burst: at once */
    ASSERT_EQ(fpdus_waiting(p.fd[1]), 6);
    for (int i = 7; i <= 11; i++)
        post8(qp, &s, (uint64_t)i);                  /* 7-10 held, 11 writes all */
    ASSERT_EQ(fpdus_waiting(p.fd[1]), 11);
    ASSERT_OK(siwarp_destroy_qp(qp));
    pair_teardown(&p);
}

/* Off (0) every post is written at once. */
TEST(tx_coalesce_off_writes_every_post)
{
    struct pair p;
    uint8_t b[8] = "abcdefg";
    pair_make_qps(&p);
    struct siwarp_qp *qp = coalesce_qp(&p, 0);
    struct siwarp_mr *m = reg(&p, b, sizeof(b), 0);
    struct siwarp_sge s = { b, 8, siwarp_mr_stag(m) };
    for (int i = 1; i <= 8; i++) {
        post8(qp, &s, (uint64_t)i);
        ASSERT_EQ(fpdus_waiting(p.fd[1]), i);
    }
    ASSERT_OK(siwarp_destroy_qp(qp));
    pair_teardown(&p);
}

/* Held sends make the CQ fd readable, so a process that sleeps on it
 * after posting wakes and flushes; destroying a QP with held sends is
 * safe. */
TEST(tx_coalesce_held_sends_wake_the_cq_fd)
{
    struct pair p;
    uint8_t b[8] = "abcdefg";
    pair_make_qps(&p);
    struct siwarp_qp *qp = coalesce_qp(&p, 8);
    struct siwarp_mr *m = reg(&p, b, sizeof(b), 0);
    struct siwarp_sge s = { b, 8, siwarp_mr_stag(m) };
    struct siwarp_wc wc[4];

    post8(qp, &s, 1);
    while (siwarp_poll_cq(p.cq[0], 4, wc) > 0)
        ;                                   /* drain: the fd is quiet now */
    post8(qp, &s, 2);                       /* first of a burst: at once */
    post8(qp, &s, 3);                       /* held */
    struct pollfd pf = { .fd = siwarp_cq_fd(p.cq[0]), .events = POLLIN };
    ASSERT_EQ(poll(&pf, 1, 1000), 1);
    ASSERT_EQ(fpdus_waiting(p.fd[1]), 2);
    ASSERT(siwarp_poll_cq(p.cq[0], 4, wc) >= 1);
    ASSERT_EQ(fpdus_waiting(p.fd[1]), 3);
    post8(qp, &s, 4);
    post8(qp, &s, 5);                       /* held at destroy */
    ASSERT_OK(siwarp_destroy_qp(qp));
    siwarp_progress(p.ctx);                 /* must not touch the freed QP */
    pair_teardown(&p);
}

/* siwarp_qp_send_goes_now says beforehand whether a post would be held,
 * and siwarp_flush_held writes what is held without a progress pass (it
 * reads nothing: no completion is polled).  An MPI inline send relies on
 * both: a message ob1 reports sent must not wait in user space for a
 * progress call that may never come (MPI_Comm_spawn's hang). */
TEST(tx_coalesce_goes_now_and_flush_held)
{
    struct pair p;
    uint8_t b[8] = "abcdefg";
    pair_make_qps(&p);
    struct siwarp_qp *qp = coalesce_qp(&p, 4), *off;
    struct siwarp_mr *m = reg(&p, b, sizeof(b), 0);
    struct siwarp_sge s = { b, 8, siwarp_mr_stag(m) };

    ASSERT_EQ(siwarp_qp_send_goes_now(qp), 1);      /* first post: at once */
    post8(qp, &s, 1);
    ASSERT_EQ(fpdus_waiting(p.fd[1]), 1);
    ASSERT_EQ(siwarp_qp_send_goes_now(qp), 0);      /* the next would be held */
    post8(qp, &s, 2);
    post8(qp, &s, 3);
    ASSERT_EQ(fpdus_waiting(p.fd[1]), 1);
    ASSERT_EQ(siwarp_qp_send_goes_now(qp), 0);
    ASSERT_OK(siwarp_flush_held(p.ctx));
    ASSERT_EQ(fpdus_waiting(p.fd[1]), 3);            /* both held ones written */
    ASSERT_EQ(siwarp_qp_send_goes_now(qp), 0);      /* still no progress call */
    ASSERT_OK(siwarp_flush_held(p.ctx));            /* nothing held: a no-op */
    ASSERT_EQ(fpdus_waiting(p.fd[1]), 3);
    siwarp_progress(p.ctx);
    ASSERT_EQ(siwarp_qp_send_goes_now(qp), 1);      /* a new epoch */
    ASSERT_EQ(siwarp_qp_send_goes_now(NULL), 0);
    ASSERT_EQ(siwarp_flush_held(NULL), -EINVAL);
    ASSERT_OK(siwarp_destroy_qp(qp));

    /* coalescing off: every post goes now, but not on a QP not connected */
    struct pair p2;
    pair_make_qps(&p2);
    off = coalesce_qp(&p2, 0);
    m = reg(&p2, b, sizeof(b), 0);
    s.lkey = siwarp_mr_stag(m);
    ASSERT_EQ(siwarp_qp_send_goes_now(off), 1);
    post8(off, &s, 4);
    ASSERT_EQ(siwarp_qp_send_goes_now(off), 1);
    ASSERT_OK(siwarp_destroy_qp(off));
    struct siwarp_qp *idle;
    struct siwarp_qp_init_attr a = { .send_cq = p.cq[0], .recv_cq = p.cq[0],
                                     .max_send_wr = 4, .max_recv_wr = 1, .max_sge = 1 };
    ASSERT_OK(siwarp_create_qp(p.pd, &a, &idle));
    ASSERT_EQ(siwarp_qp_send_goes_now(idle), 0);
    ASSERT_OK(siwarp_destroy_qp(idle));
    pair_teardown(&p);
    pair_teardown(&p2);
}

/* Two QPs: a long coalesced stream arrives whole and in order. */
TEST(tx_coalesce_stream_in_order)
{
    enum { N = 300 };
    struct pair p;
    pair_make_qps(&p);
    struct siwarp_qp *qp = coalesce_qp(&p, 16);
    struct swp_nego n = nego_default(false, false);
    pair_attach(&p, p.qp[1], 1, &n);
    uint32_t *src = calloc(N, 4), *dst = calloc(N, 4);
    struct siwarp_mr *ms = reg(&p, src, N * 4, 0), *md = reg(&p, dst, N * 4, ACC_ALL);
    for (int i = 0; i < N; i++) {
        struct siwarp_sge rs = { dst + i, 4, siwarp_mr_stag(md) };
        struct siwarp_recv_wr rw = { .wr_id = (uint64_t)i, .sg_list = &rs, .num_sge = 1 };
        ASSERT_OK(siwarp_post_recv(p.qp[1], &rw, NULL));
    }
    for (int i = 0; i < N; i++) {
        struct siwarp_sge ss = { src + i, 4, siwarp_mr_stag(ms) };
        struct siwarp_send_wr w = { .wr_id = (uint64_t)i, .sg_list = &ss, .num_sge = 1,
                                    .opcode = SIWARP_WR_SEND };
        src[i] = 0x5a000000u + (uint32_t)i;
        ASSERT_OK(siwarp_post_send(qp, &w, NULL));
        if (i % 50 == 49)
            siwarp_progress(p.ctx);
    }
    for (int i = 0; i < N; i++) {
        struct siwarp_wc wc = poll_wc(&p, 1);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(wc.wr_id, i);
    }
    ASSERT_MEM_EQ(src, dst, N * 4);
    ASSERT_OK(siwarp_destroy_qp(qp));
    free(src);
    free(dst);
    pair_teardown(&p);
}

/* A batch of up to 2 KiB is copied into one buffer and written by send()
 * (qp_tx.c: tx_write); the iovecs still describe it, so a short write
 * resumes from them.  200 Sends posted without progress fill a 16 KiB
 * receive window over TCP, and the batch that meets it is written short
 * (a unix socket would refuse it whole).  Sends of two SGEs (an MPI
 * header and its data, as the BTL posts them) of 1 B to 1.9 KiB, CRC and
 * markers on: a piece copied out of order, or a short write taken as
 * whole, shows as a CRC error, a bad marker or wrong data. */
TEST(small_batches_written_by_send_survive_short_writes)
{
    enum { N = 200, HDR = 16, MAXB = 1900 };
    struct pair p;
    struct swp_nego n = nego_default(true, true);
    int small = 16384;
    pair_make_qps(&p);
    close(p.fd[0]);
    close(p.fd[1]);
    swp_test_tcp_pair(p.fd);
    ASSERT_OK(setsockopt(p.fd[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)));
    ASSERT_OK(setsockopt(p.fd[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)));
    n.initiator = true;
    pair_attach(&p, p.qp[0], 0, &n);
    n.initiator = false;
    pair_attach(&p, p.qp[1], 1, &n);
    uint8_t *src = malloc((size_t)N * (HDR + MAXB)), *dst = calloc(N, HDR + MAXB);
    struct siwarp_mr *ms = reg(&p, src, (size_t)N * (HDR + MAXB), 0);
    struct siwarp_mr *md = reg(&p, dst, (size_t)N * (HDR + MAXB), ACC_ALL);
    fill(src, (size_t)N * (HDR + MAXB), 57);
    for (int i = 0; i < N; i++) {
        struct siwarp_sge rs = { dst + (size_t)i * (HDR + MAXB), HDR + MAXB, siwarp_mr_stag(md) };
        struct siwarp_recv_wr rw = { .wr_id = (uint64_t)i, .sg_list = &rs, .num_sge = 1 };
        ASSERT_OK(siwarp_post_recv(p.qp[1], &rw, NULL));
    }
    for (int i = 0; i < N; i++) {
        uint8_t *m = src + (size_t)i * (HDR + MAXB);
        struct siwarp_sge ss[2] = { { m, HDR, siwarp_mr_stag(ms) },
                                    { m + HDR, (uint32_t)(1 + i * 37 % MAXB), siwarp_mr_stag(ms) } };
        struct siwarp_send_wr w = { .wr_id = (uint64_t)i, .sg_list = ss, .num_sge = 2,
                                    .opcode = SIWARP_WR_SEND };
        ASSERT_OK(siwarp_post_send(p.qp[0], &w, NULL));
    }
    for (int i = 0; i < N; i++) {
        struct siwarp_wc wc = poll_wc(&p, 1);
        ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(wc.wr_id, i);
        ASSERT_EQ(wc.byte_len, HDR + 1 + i * 37 % MAXB);
        ASSERT_MEM_EQ(dst + (size_t)i * (HDR + MAXB), src + (size_t)i * (HDR + MAXB), wc.byte_len);
    }
    unreg(&p, ms);
    unreg(&p, md);
    free(src);
    free(dst);
    pair_teardown(&p);
}

/* SIWARP_SEND_UNREGISTERED: a Send (or Write) from plain memory, no STag
 * checked; without the flag the same post is refused; a Read never. */
TEST(send_unregistered_memory)
{
    struct pair p;
    pair_setup(&p, nego_default(true, false));
    uint8_t hdr[16], *body = malloc(5000), r[5016];
    memset(hdr, 0xab, sizeof(hdr));
    fill(body, 5000, 9);
    struct siwarp_mr *mh = reg(&p, hdr, sizeof(hdr), 0), *mr = reg(&p, r, sizeof(r), ACC_ALL);
    struct siwarp_sge sg[2] = { { hdr, sizeof(hdr), siwarp_mr_stag(mh) }, { body, 5000, 0 } };
    struct siwarp_sge rs = { r, sizeof(r), siwarp_mr_stag(mr) };
    struct siwarp_recv_wr rw = { .wr_id = 5, .sg_list = &rs, .num_sge = 1 };
    struct siwarp_send_wr sw = { .wr_id = 6, .sg_list = sg, .num_sge = 2,
                                 .opcode = SIWARP_WR_SEND, .send_flags = SIWARP_SEND_SIGNALED };
    ASSERT_EQ(siwarp_post_send(p.qp[0], &sw, NULL), -EINVAL);      /* lkey 0: no region */
    sw.send_flags |= SIWARP_SEND_UNREGISTERED;
    ASSERT_OK(siwarp_post_recv(p.qp[1], &rw, NULL));
    ASSERT_OK(siwarp_post_send(p.qp[0], &sw, NULL));
    struct siwarp_wc wc = poll_wc(&p, 1);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(wc.byte_len, 5016);
    ASSERT_MEM_EQ(r, hdr, sizeof(hdr));
    ASSERT_MEM_EQ(r + sizeof(hdr), body, 5000);
    ASSERT_EQ(poll_wc(&p, 0).status, SIWARP_WC_SUCCESS);
    struct siwarp_send_wr rd = { .wr_id = 7, .sg_list = sg, .num_sge = 1,
                                 .opcode = SIWARP_WR_READ,
                                 .send_flags = SIWARP_SEND_UNREGISTERED,
                                 .rdma = { (uint64_t)(uintptr_t)r, siwarp_mr_stag(mr) } };
    ASSERT_EQ(siwarp_post_send(p.qp[0], &rd, NULL), -EINVAL);
    free(body);
    pair_teardown(&p);
}

/* A post checks its SGEs' lkeys every time: rights, bounds, and an MR
 * invalidated or deregistered after an earlier post found it. */
TEST(post_checks_lkeys_after_dereg_and_invalidate)
{
    struct pair p;
    pair_setup(&p, nego_default(true, false));
    static uint8_t a[256], b[256];
    struct siwarp_mr *ma = reg(&p, a, sizeof(a), ACC_ALL), *mb = reg(&p, b, sizeof(b), 0);
    struct siwarp_sge s = { a, 64, siwarp_mr_stag(ma) };
    struct siwarp_recv_wr rw = { .wr_id = 1, .sg_list = &s, .num_sge = 1 };

    ASSERT_OK(siwarp_post_recv(p.qp[0], &rw, NULL));
    ASSERT_OK(siwarp_post_recv(p.qp[0], &rw, NULL));
    s.addr = a + 200;
    ASSERT_EQ(siwarp_post_recv(p.qp[0], &rw, NULL), -ERANGE);     /* past the end */
    s = (struct siwarp_sge){ b, 64, siwarp_mr_stag(mb) };
    ASSERT_EQ(siwarp_post_recv(p.qp[0], &rw, NULL), -EACCES);     /* no local write */
    ASSERT_EQ(siwarp_post_recv(p.qp[0], &rw, NULL), -EACCES);

    s = (struct siwarp_sge){ a, 64, siwarp_mr_stag(ma) };
    ASSERT_OK(siwarp_invalidate_stag(p.pd, siwarp_mr_stag(ma)));
    ASSERT_EQ(siwarp_post_recv(p.qp[0], &rw, NULL), -EINVAL);
    ASSERT_OK(unreg(&p, ma));

    struct siwarp_mr *m2 = reg(&p, a, sizeof(a), ACC_ALL);
    s.lkey = siwarp_mr_stag(m2);
    ASSERT_OK(siwarp_post_recv(p.qp[0], &rw, NULL));
    ASSERT_OK(unreg(&p, m2));
    ASSERT_EQ(siwarp_post_recv(p.qp[0], &rw, NULL), -EINVAL);
    ASSERT_OK(unreg(&p, mb));
    pair_teardown(&p);
}

SWP_TEST_MAIN()
