/*
 * test_read_hint.c - read_hint.c: a Read announced with siwarp_qp_read_hint
 * is answered with Response CRCs computed in idle progress passes.  The
 * requester checks every FPDU's CRC (RFC 5044 4.4), so a wrong combined
 * CRC fails the Read; hint_segs_used says the precomputed ones were taken.
 * The safety rules: only the announced Read (exact STag, address, length)
 * uses them, only once, never after siwarp_mr_drop_hints or a newer hint
 * on the MR, never after the MR is gone.  And the negative control: bytes
 * changed under a live hint (a broken promise) reach the peer as a CRC
 * error, which shows the precomputed CRCs are the ones on the wire.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "harness.h"
#include "qp_pair.h"
#include "read_hint.h"
#include "swp.h"

#define ACC_ALL (SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_READ)
#define MULPDU 65000u
#define SEG (MULPDU - SWP_HDR_TAGGED)         /* Response payload per FPDU */
#define LEN (5 * SEG + 4099)                  /* five full segments and a short one */

struct rig {
    struct swp_test_pair p;
    uint8_t *loc, *rem;
    struct siwarp_mr *ml, *mr;
};

static void fill(uint8_t *b, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 1;

    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        b[i] = (uint8_t)(x >> 16);
    }
}

static void rig_setup(struct rig *r, bool crc, bool markers)
{
    struct swp_test_pair_opts o = { .cqe = 64, .depth = 16, .ird_ord = 4, .mulpdu = MULPDU,
                                    .crc = crc, .markers = markers };

    swp_test_pair_setup(&r->p, &o);
    r->loc = calloc(1, LEN + 64);
    r->rem = malloc(LEN + 64);
    ASSERT(r->loc && r->rem);
    fill(r->rem, LEN + 64, 1);
    ASSERT_OK(siwarp_reg_mr(r->p.pd, r->loc, LEN + 64, ACC_ALL, &r->ml));
    ASSERT_OK(siwarp_reg_mr(r->p.pd, r->rem, LEN + 64, ACC_ALL, &r->mr));
}

static void rig_teardown(struct rig *r)
{
    if (r->mr)
        ASSERT_OK(siwarp_dereg_mr(r->mr));
    ASSERT_OK(siwarp_dereg_mr(r->ml));
    swp_test_pair_teardown(&r->p);
    free(r->loc);
    free(r->rem);
}

/* idle passes: each computes one step of an open hint */
static void idle_passes(struct rig *r, int n)
{
    for (int i = 0; i < n; i++)
        ASSERT(siwarp_progress(r->p.ctx) >= 0);
}

/* qp[0] reads len octets at rem + off into loc; the completion's status */
static enum siwarp_wc_status read_back(struct rig *r, size_t off, uint32_t len)
{
    struct siwarp_sge s = { r->loc, len, siwarp_mr_stag(r->ml) };
    struct siwarp_send_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
                                .opcode = SIWARP_WR_READ, .send_flags = SIWARP_SEND_SIGNALED };
    struct siwarp_wc wc;

    w.rdma.remote_addr = (uintptr_t)(r->rem + off);
    w.rdma.rkey = siwarp_mr_stag(r->mr);
    memset(r->loc, 0, LEN + 64);
    ASSERT_OK(siwarp_post_send(r->p.qp[0], &w, NULL));
    for (int i = 0; i < 2000000; i++) {
        int n = siwarp_poll_cq(r->p.cq[0], 1, &wc);
        ASSERT(n >= 0);
        if (n == 1)
            return wc.status;
        if (i > 1000)
            siwarp_wait(r->p.ctx, 5);
    }
    FAIL("the Read never completed");
    return SIWARP_WC_GENERAL_ERR;
}

/* RFC 5044 4.4 via linearity: CRC(h || p) = CRC(h) * x^(8|p|) + CRC(p) */
TEST(crc_of_a_concatenation_from_its_parts)
{
    static uint8_t buf[16 + 70000];
    const size_t plens[] = { 1, 3, 4, 1024, 4099, SEG, 70000 };

    fill(buf, sizeof(buf), 3);
    for (size_t i = 0; i < sizeof(plens) / sizeof(plens[0]); i++) {
        size_t pl = plens[i];
        uint32_t h = swp_crc32c(0, buf, 16), p = swp_crc32c(0, buf + 16, pl);
        ASSERT_EQ(swp_crc_multmodp(swp_crc_xnmodp(8 * pl), h) ^ p, swp_crc32c(0, buf, 16 + pl));
    }
}

static void hinted_read(int steps, uint64_t want_used)
{
    struct rig r;

    rig_setup(&r, true, false);
    ASSERT_OK(siwarp_qp_read_hint(r.p.qp[1], r.mr, r.rem, LEN));
    ASSERT(r.p.qp[1]->read_hint != NULL);
    idle_passes(&r, steps);
    ASSERT_EQ(read_back(&r, 0, LEN), SIWARP_WC_SUCCESS);
    ASSERT_MEM_EQ(r.loc, r.rem, LEN);
    ASSERT_EQ(r.p.ctx->hint_segs_used, want_used);
    ASSERT(r.p.qp[1]->read_hint == NULL);       /* taken, and gone with its Response */
    ASSERT(swp_list_empty(&r.p.ctx->hints));
    /* a second Read of the same range computes its CRCs as usual */
    ASSERT_EQ(read_back(&r, 0, LEN), SIWARP_WC_SUCCESS);
    ASSERT_MEM_EQ(r.loc, r.rem, LEN);
    ASSERT_EQ(r.p.ctx->hint_segs_used, want_used);
    rig_teardown(&r);
}

/* two steps a pass: the shift operators and a segment, then two segments */
TEST(announced_read_uses_every_precomputed_crc) { hinted_read(20, 6); }
TEST(announced_read_uses_what_was_computed_in_time) { hinted_read(1, 1); }
TEST(announced_read_before_any_pass_computes_as_usual) { hinted_read(0, 0); }

TEST(another_read_leaves_the_hint_for_its_own)
{
    struct rig r;

    rig_setup(&r, true, false);
    ASSERT_OK(siwarp_qp_read_hint(r.p.qp[1], r.mr, r.rem, LEN));
    idle_passes(&r, 20);
    /* same STag, another start; same start, another length */
    ASSERT_EQ(read_back(&r, 64, LEN - 64), SIWARP_WC_SUCCESS);
    ASSERT_MEM_EQ(r.loc, r.rem + 64, LEN - 64);
    ASSERT_EQ(read_back(&r, 0, LEN - 1), SIWARP_WC_SUCCESS);
    ASSERT_MEM_EQ(r.loc, r.rem, LEN - 1);
    ASSERT_EQ(r.p.ctx->hint_segs_used, 0);
    ASSERT(r.p.qp[1]->read_hint != NULL);
    ASSERT_EQ(read_back(&r, 0, LEN), SIWARP_WC_SUCCESS);
    ASSERT_EQ(r.p.ctx->hint_segs_used, 6);
    rig_teardown(&r);
}

/* the caller's "the bytes may change now": the Read after the change must
 * carry the new bytes' CRCs, or the requester fails it */
TEST(dropped_hint_is_not_used_after_the_bytes_change)
{
    struct rig r;

    rig_setup(&r, true, false);
    ASSERT_OK(siwarp_qp_read_hint(r.p.qp[1], r.mr, r.rem, LEN));
    idle_passes(&r, 20);
    ASSERT_OK(siwarp_mr_drop_hints(r.mr));
    fill(r.rem, LEN, 2);
    ASSERT_EQ(read_back(&r, 0, LEN), SIWARP_WC_SUCCESS);
    ASSERT_MEM_EQ(r.loc, r.rem, LEN);
    ASSERT_EQ(r.p.ctx->hint_segs_used, 0);
    /* a dropped hint frees the QP for the next one */
    ASSERT_OK(siwarp_qp_read_hint(r.p.qp[1], r.mr, r.rem, LEN));
    rig_teardown(&r);
}

TEST(newer_hint_on_the_mr_voids_the_older)
{
    struct rig r;
    struct swp_test_pair_opts o = { .cqe = 64, .depth = 16, .ird_ord = 4, .mulpdu = MULPDU,
                                    .crc = true };
    struct swp_test_pair q;

    rig_setup(&r, true, false);
    swp_test_pair_setup(&q, &o);        /* another context: its QPs may not use r's MR */
    ASSERT_OK(siwarp_qp_read_hint(r.p.qp[1], r.mr, r.rem, LEN));
    idle_passes(&r, 20);
    ASSERT_EQ(siwarp_qp_read_hint(r.p.qp[1], r.mr, r.rem, LEN), -EBUSY);
    ASSERT_EQ(siwarp_qp_read_hint(q.qp[1], r.mr, r.rem, LEN), -EINVAL);
    /* the same QP's other direction announces a Read of the same MR */
    ASSERT_OK(siwarp_qp_read_hint(r.p.qp[0], r.mr, r.rem, LEN));
    fill(r.rem, LEN, 5);
    ASSERT_EQ(read_back(&r, 0, LEN), SIWARP_WC_SUCCESS);
    ASSERT_MEM_EQ(r.loc, r.rem, LEN);
    ASSERT_EQ(r.p.ctx->hint_segs_used, 0);
    swp_test_pair_teardown(&q);
    rig_teardown(&r);
}

TEST(deregistered_mr_ends_its_hint)
{
    struct rig r;

    rig_setup(&r, true, false);
    ASSERT_OK(siwarp_qp_read_hint(r.p.qp[1], r.mr, r.rem, LEN));
    idle_passes(&r, 2);
    ASSERT_OK(siwarp_dereg_mr(r.mr));
    r.mr = NULL;
    free(r.rem);                /* the step must never read it again */
    r.rem = NULL;
    idle_passes(&r, 20);
    ASSERT(swp_list_empty(&r.p.ctx->hints));
    ASSERT(r.p.qp[1]->read_hint == NULL);
    rig_teardown(&r);
}

TEST(refused_where_it_cannot_apply)
{
    struct rig r, m, n;
    uint8_t small[64];
    struct siwarp_mr *ro;

    rig_setup(&r, true, false);
    ASSERT_EQ(siwarp_qp_read_hint(r.p.qp[1], r.mr, r.rem + 65, LEN), -EINVAL); /* past the MR */
    ASSERT_EQ(siwarp_qp_read_hint(r.p.qp[1], r.mr, r.rem, 0), -EINVAL);
    ASSERT_EQ(siwarp_qp_read_hint(NULL, r.mr, r.rem, LEN), -EINVAL);
    ASSERT_EQ(siwarp_qp_read_hint(r.p.qp[1], r.mr, r.rem, 32767), -ERANGE);
    ASSERT_OK(siwarp_reg_mr(r.p.pd, small, sizeof(small), SIWARP_ACCESS_LOCAL_WRITE, &ro));
    ASSERT_EQ(siwarp_qp_read_hint(r.p.qp[1], ro, small, sizeof(small)), -EINVAL);
    ASSERT_OK(siwarp_dereg_mr(ro));
    ASSERT_EQ(siwarp_mr_drop_hints(NULL), -EINVAL);
    rig_teardown(&r);
    rig_setup(&m, true, true);
    ASSERT_EQ(siwarp_qp_read_hint(m.p.qp[1], m.mr, m.rem, LEN), -EOPNOTSUPP);   /* markers */
    rig_teardown(&m);
    rig_setup(&n, false, false);
    ASSERT_EQ(siwarp_qp_read_hint(n.p.qp[1], n.mr, n.rem, LEN), -EOPNOTSUPP);   /* no CRC */
    rig_teardown(&n);
}

/* The negative control: bytes changed under a live hint (the promise
 * broken) go out with the old bytes' CRCs, and the requester's CRC check
 * fails the Read.  A hint that did nothing would pass here. */
TEST(broken_promise_reaches_the_peer_as_a_crc_error)
{
    struct rig r;

    rig_setup(&r, true, false);
    ASSERT_OK(siwarp_qp_read_hint(r.p.qp[1], r.mr, r.rem, LEN));
    idle_passes(&r, 20);
    r.rem[SEG + 5] ^= 0x40;
    ASSERT(read_back(&r, 0, LEN) != SIWARP_WC_SUCCESS);
    ASSERT(r.p.ctx->hint_segs_used >= 1);
    rig_teardown(&r);
}

/* Destroying a QP with an untaken hint, or with a taken one whose
 * Response never went out, frees them (the sanitizer build sees leaks). */
TEST(hints_go_with_their_qp)
{
    struct rig r;

    rig_setup(&r, true, false);
    ASSERT_OK(siwarp_qp_read_hint(r.p.qp[1], r.mr, r.rem, LEN));
    idle_passes(&r, 3);
    rig_teardown(&r);
}

SWP_TEST_MAIN()
