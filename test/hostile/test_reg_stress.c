/*
 * test_reg_stress.c - memory registration under churn: buffers malloc'd,
 * freed, mmap'd and munmap'd between transfers over a siwarp QP pair
 * (socketpair, no MPA), random sizes and alignments, a fresh registration
 * for every buffer and a deregistration before it is released.  Every RDMA
 * Write, Read and Send is verified byte for byte, and a stale STag whose
 * address has been handed out again is refused.  Bounded to ~5 s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "qp_pair.h"
#include "swp.h"

#define ACC (SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_READ)

static void pair_setup(struct swp_test_pair *p, bool crc, bool markers)
{
    const struct swp_test_pair_opts o = { .cqe = 256, .depth = 64, .ird_ord = 8,
                                          .mulpdu = 16000, .crc = crc, .markers = markers };
    swp_test_pair_setup(p, &o);
}

static struct siwarp_wc wait_wc(struct swp_test_pair *p, int side)
{
    struct siwarp_wc wc;

    for (int i = 0; i < 200000; i++) {
        int n = siwarp_poll_cq(p->cq[side], 1, &wc);
        ASSERT(n >= 0);
        if (n == 1)
            return wc;
        if (i > 100)
            siwarp_wait(p->ctx, 1);
    }
    FAIL("no completion on side %d", side);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* A buffer from malloc or mmap at a random alignment. */
struct buf {
    uint8_t *base, *p;
    size_t maplen, len;
    bool mapped;
    struct siwarp_mr *mr;
};

static void buf_get(struct swp_test_pair *pr, struct buf *b, size_t len)
{
    size_t skew = rnd() % 64;

    b->len = len;
    b->mapped = rnd() & 1;
    if (b->mapped) {
        b->maplen = (len + skew + 4095) & ~(size_t)4095;
        b->base = mmap(NULL, b->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT(b->base != MAP_FAILED);
    } else {
        b->base = malloc(len + skew);
        ASSERT(b->base != NULL);
    }
    b->p = b->base + skew;
    ASSERT_OK(siwarp_reg_mr(pr->pd, b->p, len, ACC, &b->mr));
}

static void buf_put(struct buf *b)
{
    ASSERT_OK(siwarp_dereg_mr(b->mr));
    if (b->mapped)
        ASSERT_OK(munmap(b->base, b->maplen));
    else
        free(b->base);
    memset(b, 0, sizeof(*b));
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed + i * 131 + (i >> 8));
}

static void post(struct swp_test_pair *p, int side, enum siwarp_wr_opcode op, struct buf *l, size_t len,
                 struct buf *r)
{
    struct siwarp_sge s = { l->p, (uint32_t)len, siwarp_mr_stag(l->mr) };
    struct siwarp_send_wr w = { .wr_id = op, .sg_list = &s, .num_sge = 1, .opcode = op,
                                .send_flags = SIWARP_SEND_SIGNALED };

    if (r) {
        w.rdma.rkey = siwarp_mr_stag(r->mr);
        w.rdma.remote_addr = (uintptr_t)r->p;
    }
    ASSERT_OK(siwarp_post_send(p->qp[side], &w, NULL));
}

static void post_recv(struct swp_test_pair *p, int side, struct buf *b, size_t len)
{
    struct siwarp_sge s = { b->p, (uint32_t)len, siwarp_mr_stag(b->mr) };
    struct siwarp_recv_wr r = { .wr_id = 99, .sg_list = &s, .num_sge = 1 };

    ASSERT_OK(siwarp_post_recv(p->qp[side], &r, NULL));
}

static void expect(struct siwarp_wc wc, enum siwarp_wc_opcode op, uint32_t len)
{
    if (wc.status != SIWARP_WC_SUCCESS)
        FAIL("completion %s: %s", siwarp_wc_status_str(wc.status), siwarp_term_str(wc.vendor_err));
    ASSERT_EQ(wc.opcode, op);
    if (op == SIWARP_WC_RECV)
        ASSERT_EQ(wc.byte_len, len);
}

static void churn(bool crc, bool markers, double seconds)
{
    struct swp_test_pair p;
    uint64_t end;
    unsigned iters = 0;
    uint64_t bytes = 0;

    pair_setup(&p, crc, markers);
    end = swp_now_ns() + (uint64_t)(seconds * 1e9);
    while (swp_now_ns() < end && iters < 20000) {
        /* sizes: mostly small, sometimes up to 256 KiB */
        size_t len = (rnd() & 3) ? 1 + rnd() % 4096 : 1 + rnd() % (256 * 1024);
        struct buf a, b, c;
        uint32_t seed = rnd();

        buf_get(&p, &a, len);           /* side 0 source / Read sink */
        buf_get(&p, &b, len);           /* side 1 Write target / Read source */
        fill(a.p, len, seed);
        memset(b.p, 0, len);

        /* RDMA Write 0 -> 1, then a Send orders after it (RFC 5040 5.5) */
        buf_get(&p, &c, 16);
        post_recv(&p, 1, &c, 16);
        post(&p, 0, SIWARP_WR_WRITE, &a, len, &b);
        post(&p, 0, SIWARP_WR_SEND, &a, len < 16 ? len : 16, NULL);
        expect(wait_wc(&p, 0), SIWARP_WC_WRITE, 0);
        expect(wait_wc(&p, 0), SIWARP_WC_SEND, 0);
        expect(wait_wc(&p, 1), SIWARP_WC_RECV, (uint32_t)(len < 16 ? len : 16));
        ASSERT_MEM_EQ(b.p, a.p, len);
        ASSERT_MEM_EQ(c.p, a.p, len < 16 ? len : 16);
        buf_put(&c);

        /* the source goes away and comes back elsewhere before the Read */
        buf_put(&a);
        buf_get(&p, &a, len);
        memset(a.p, 0xee, len);
        fill(b.p, len, seed ^ 0x5a5a);
        post(&p, 0, SIWARP_WR_READ, &a, len, &b);
        expect(wait_wc(&p, 0), SIWARP_WC_READ, 0);
        ASSERT_MEM_EQ(a.p, b.p, len);

        /* a Send of the whole buffer into a fresh receive buffer */
        buf_put(&b);
        buf_get(&p, &b, len);
        memset(b.p, 0, len);
        post_recv(&p, 1, &b, len);
        fill(a.p, len, seed + 7);
        post(&p, 0, SIWARP_WR_SEND, &a, len, NULL);
        expect(wait_wc(&p, 0), SIWARP_WC_SEND, 0);
        expect(wait_wc(&p, 1), SIWARP_WC_RECV, (uint32_t)len);
        ASSERT_MEM_EQ(b.p, a.p, len);

        buf_put(&a);
        buf_put(&b);
        bytes += 3 * len;
        iters++;
    }
    struct siwarp_qp_attr at;
    ASSERT_OK(siwarp_query_qp(p.qp[0], &at));
    ASSERT_EQ(at.state, SIWARP_QPS_RTS);
    ASSERT_OK(siwarp_query_qp(p.qp[1], &at));
    ASSERT_EQ(at.state, SIWARP_QPS_RTS);
    fprintf(stderr, "# churn crc=%d markers=%d: %u iterations, %llu bytes verified\n",
            crc, markers, iters, (unsigned long long)bytes);
    ASSERT(iters >= 20);
    swp_test_pair_teardown(&p);
}

/* Minimal reproducer: with markers on, a small RDMA Write whose FPDU
 * starts at a marker position (here the very first FPDU of the stream)
 * must arrive intact.  (Regression: the small-payload copy in swp_tx_fpdu
 * assumed the payload lies right behind the header in tx->hdrs, but the
 * marker emitted first sits there: the FPDU went out as header, marker,
 * payload minus its last 4 bytes -- with a CRC computed over exactly those
 * bytes, so the receiver placed corrupted data without noticing.) */
TEST(markers_small_write_intact)
{
    struct swp_test_pair p;
    struct buf a, b, c;

    pair_setup(&p, true, true);
    for (size_t len = 1; len <= 600; len += (len < 40 ? 1 : 97)) {
        buf_get(&p, &a, len);
        buf_get(&p, &b, len);
        buf_get(&p, &c, 16);
        fill(a.p, len, (uint32_t)len);
        memset(b.p, 0, len);
        post_recv(&p, 1, &c, 16);
        post(&p, 0, SIWARP_WR_WRITE, &a, len, &b);
        post(&p, 0, SIWARP_WR_SEND, &a, len < 16 ? len : 16, NULL);
        expect(wait_wc(&p, 0), SIWARP_WC_WRITE, 0);
        expect(wait_wc(&p, 0), SIWARP_WC_SEND, 0);
        expect(wait_wc(&p, 1), SIWARP_WC_RECV, (uint32_t)(len < 16 ? len : 16));
        if (memcmp(b.p, a.p, len))
            FAIL("Write of %zu bytes placed corrupted data", len);
        if (memcmp(c.p, a.p, len < 16 ? len : 16))
            FAIL("Send after a Write of %zu bytes placed corrupted data", len);
        buf_put(&a);
        buf_put(&b);
        buf_put(&c);
    }
    swp_test_pair_teardown(&p);
}

TEST(churn_crc) { churn(true, false, 2.0); }
TEST(churn_plain) { churn(false, false, 1.5); }
TEST(churn_markers_crc) { churn(true, true, 1.5); }

/* A buffer is deregistered and freed; the allocator hands out the same
 * address again and it is registered anew.  A Write with the old STag must
 * be refused (DDP tagged "invalid STag"), the new buffer untouched. */
TEST(stale_stag_after_address_reuse)
{
    struct swp_test_pair p;
    struct buf a, b;
    uint32_t old_stag = 0;
    uint8_t *old_base;
    struct siwarp_qp_attr at;
    size_t len = 3000;
    int reused = 0;

    pair_setup(&p, true, false);
    buf_get(&p, &a, len);
    fill(a.p, len, 1);
    for (int tries = 0; tries < 50 && !reused; tries++) {
        buf_get(&p, &b, len);
        old_stag = siwarp_mr_stag(b.mr);
        old_base = b.base;
        buf_put(&b);
        buf_get(&p, &b, len);
        reused = b.base == old_base;     /* same address handed out again */
        if (!reused)
            buf_put(&b);
    }
    if (!reused)
        SKIP("allocator never reused the address");
    ASSERT(siwarp_mr_stag(b.mr) != old_stag);
    memset(b.p, 0, len);
    struct siwarp_sge s = { a.p, (uint32_t)len, siwarp_mr_stag(a.mr) };
    struct siwarp_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = SIWARP_WR_WRITE };
    w.rdma.rkey = old_stag;
    w.rdma.remote_addr = (uintptr_t)b.p;
    ASSERT_OK(siwarp_post_send(p.qp[0], &w, NULL));
    for (int i = 0; i < 2000; i++) {
        ASSERT_OK(siwarp_query_qp(p.qp[1], &at));
        if (at.state == SIWARP_QPS_ERROR)
            break;
        siwarp_wait(p.ctx, 1);
    }
    ASSERT_EQ(at.state, SIWARP_QPS_ERROR);
    ASSERT_EQ(at.term_sent, SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_TAGGED, SWP_DDP_EC_T_INV_STAG));
    for (size_t i = 0; i < len; i++)
        ASSERT_EQ(b.p[i], 0);
    buf_put(&a);
    buf_put(&b);
    swp_test_pair_teardown(&p);
}

SWP_TEST_MAIN()
