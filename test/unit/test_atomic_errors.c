/*
 * test_atomic_errors.c - a raw peer sends hand-built RFC 7306 FPDUs to a
 * siwarp QP.  Every violation of an Atomic Request must come back as its
 * exact Terminate, checked in the fixed order (STag valid -> PD -> remote
 * atomic right -> bounds with wrap -> alignment), with nothing executed:
 * the registered region keeps its pattern and the canaries around it hold.
 * Also the requester's side: what siwarp puts on the wire for an atomic,
 * and responses that answer nothing.
 */
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "raw_peer.h"
#include "swp.h"

#define ACC_ATOMIC (ACC_ALL | SIWARP_ACCESS_REMOTE_ATOMIC)

/* The Terminates expected, as literal numbers: the first two octets of the
 * Terminate control field, layer << 4 | error type then the error code
 * (test_wire.c's terminate_wire_octets ties them to the octets).  RFC 7306
 * registered no error codes of its own: an atomic is refused with RFC
 * 5040's and RFC 5041's (IANA "RDMAP Errors" / "DDP Errors", RFC 6580). */
#define W_INV_STAG     0x0100u   /* RDMAP, remote protection, invalid STag */
#define W_BOUNDS       0x0101u   /* RDMAP, remote protection, base or bounds */
#define W_ACCESS       0x0102u   /* RDMAP, remote protection, access rights */
#define W_STAG_STREAM  0x0103u   /* RDMAP, remote protection, STag not of this stream */
#define W_TO_WRAP      0x0104u   /* RDMAP, remote protection, tagged offset wrap */
#define W_UNEXP        0x0206u   /* RDMAP, remote operation, unexpected opcode */
#define W_CATA_STREAM  0x0207u   /* RDMAP, remote operation, catastrophic (stream) */
#define W_INV_QN       0x1201u   /* DDP, untagged, invalid queue number */
#define W_NO_BUF       0x1202u   /* DDP, untagged, no buffer available */
#define W_MSN_RANGE    0x1203u   /* DDP, untagged, MSN out of range */
#define W_TOO_LONG     0x1205u   /* DDP, untagged, message too long */
#define W_CRC          0x2002u   /* LLP (MPA), CRC error */

/* A raw peer whose QP agreed on RFC 7306 (or not); the region holds a
 * pattern, and amr grants atomics over all of it. */
static struct siwarp_mr *setup(struct peer *p, bool rfc7306)
{
    struct siwarp_mr *amr;

    peer_setup(p, true, false);
    p->qp->nego.rfc7306 = rfc7306;
    for (uint32_t i = 0; i < REGION; i++)
        p->region[i] = (uint8_t)(i * 7 + 1);
    ASSERT_OK(siwarp_reg_mr(p->pd, p->region, REGION, ACC_ATOMIC, &amr));
    peer_keep_mr(p, amr);
    return amr;
}

static void region_intact(struct peer *p)
{
    for (uint32_t i = 0; i < REGION; i++)
        ASSERT_EQ(p->region[i], (uint8_t)(i * 7 + 1));
}

static uint32_t atomic_req(uint8_t *u, uint32_t msn, unsigned op, uint32_t stag, uint64_t to,
                           uint64_t data)
{
    struct swp_rdmap_atomic_req *a = (struct swp_rdmap_atomic_req *)(u + SWP_HDR_UNTAGGED);

    untagged(u, SWP_OP_ATOMIC_REQ, true, SWP_QN_READ_REQ, msn, 0);
    memset(a, 0, sizeof(*a));
    swp_put32(a->opcode, op);
    swp_put32(a->req_id, msn);
    swp_put32(a->stag, stag);
    swp_put64(a->to, to);
    swp_put64(a->data, data);
    return SWP_HDR_ATOMIC_REQ;
}

/* One FetchAdd of 1 at (stag, to): the exact Terminate, nothing executed. */
static void refused(struct peer *p, uint32_t stag, uint64_t to, uint32_t want)
{
    uint8_t u[SWP_HDR_ATOMIC_REQ];

    raw_fpdu(p, u, atomic_req(u, 1, SWP_ATOMIC_FETCH_ADD, stag, to, 1), false);
    expect_term(p, want);
    region_intact(p);
}

TEST(atomic_invalid_stag)
{
    struct peer p;
    struct siwarp_mr *amr = setup(&p, true);
    refused(&p, siwarp_mr_stag(amr) ^ 0x100, (uintptr_t)p.region, W_INV_STAG);
    peer_teardown(&p);
}

TEST(atomic_invalidated_stag)
{
    struct peer p;
    struct siwarp_mr *amr = setup(&p, true);
    ASSERT_OK(siwarp_invalidate_stag(p.pd, siwarp_mr_stag(amr)));
    refused(&p, siwarp_mr_stag(amr), (uintptr_t)p.region, W_INV_STAG);
    peer_teardown(&p);
}

TEST(atomic_other_pd)
{
    struct peer p;
    struct siwarp_mr *m2;
    setup(&p, true);
    ASSERT_OK(siwarp_reg_mr(p.pd2, p.region, REGION, ACC_ATOMIC, &m2));
    peer_keep_mr(&p, m2);
    refused(&p, siwarp_mr_stag(m2), (uintptr_t)p.region, W_STAG_STREAM);
    peer_teardown(&p);
}

/* read, write, local write: everything but the atomic right */
TEST(atomic_no_atomic_right)
{
    struct peer p;
    setup(&p, true);
    refused(&p, siwarp_mr_stag(p.mr), (uintptr_t)p.region, W_ACCESS);
    peer_teardown(&p);
}

TEST(atomic_beyond_end)
{
    struct peer p;
    struct siwarp_mr *amr = setup(&p, true);
    refused(&p, siwarp_mr_stag(amr), (uintptr_t)p.region + REGION, W_BOUNDS);
    peer_teardown(&p);
}

TEST(atomic_before_start)
{
    struct peer p;
    struct siwarp_mr *amr = setup(&p, true);
    refused(&p, siwarp_mr_stag(amr), (uintptr_t)p.region - 8, W_BOUNDS);
    peer_teardown(&p);
}

TEST(atomic_offset_wraps)
{
    struct peer p;
    struct siwarp_mr *amr = setup(&p, true);
    refused(&p, siwarp_mr_stag(amr), UINT64_MAX - 7, W_TO_WRAP);
    peer_teardown(&p);
}

/* A target not 8-aligned is refused as outside what the STag offers an
 * atomic; this code is siwarp's choice (qp_ext.c), not one RFC 7306 names. */
TEST(atomic_misaligned)
{
    struct peer p;
    struct siwarp_mr *amr = setup(&p, true);
    refused(&p, siwarp_mr_stag(amr), (uintptr_t)p.region + 4, W_BOUNDS);
    peer_teardown(&p);
}

/* The order: each earlier check wins over every later one. */
TEST(atomic_check_order)
{
    struct peer p;
    struct siwarp_mr *amr, *m2;
    amr = setup(&p, true);
    /* bad STag, misaligned and out of bounds: the STag */
    refused(&p, siwarp_mr_stag(amr) ^ 0x100, UINT64_MAX - 3, W_INV_STAG);
    peer_teardown(&p);
    amr = setup(&p, true);
    ASSERT_OK(siwarp_reg_mr(p.pd2, p.region, REGION, SIWARP_ACCESS_REMOTE_READ, &m2));
    peer_keep_mr(&p, m2);
    /* other PD and no atomic right: the PD */
    refused(&p, siwarp_mr_stag(m2), (uintptr_t)p.region + 3, W_STAG_STREAM);
    peer_teardown(&p);
    setup(&p, true);
    /* no atomic right, beyond the end and misaligned: the right */
    refused(&p, siwarp_mr_stag(p.mr), (uintptr_t)p.region + REGION + 1, W_ACCESS);
    peer_teardown(&p);
    amr = setup(&p, true);
    /* misaligned across the end: bounds before alignment (same code, but
     * the region's last word must not be touched either) */
    refused(&p, siwarp_mr_stag(amr), (uintptr_t)p.region + REGION - 4,
            W_BOUNDS);
    peer_teardown(&p);
}

/* RFC 5040 4.3: on a stream that did not agree on RFC 7306 its opcodes are
 * unexpected, the atomic is not executed. */
TEST(atomic_not_negotiated)
{
    struct peer p;
    struct siwarp_mr *amr = setup(&p, false);
    refused(&p, siwarp_mr_stag(amr), (uintptr_t)p.region, W_UNEXP);
    peer_teardown(&p);
}

/* Atomic operation code 1 is no operation: FetchAdd is 0, CmpSwap 2 (the
 * codes Wireshark's RFC 7306 dissector decodes). */
TEST(atomic_reserved_operation)
{
    struct peer p;
    struct siwarp_mr *amr = setup(&p, true);
    uint8_t u[SWP_HDR_ATOMIC_REQ];
    raw_fpdu(&p, u, atomic_req(u, 1, 1, siwarp_mr_stag(amr), (uintptr_t)p.region, 1), false);
    expect_term(&p, W_UNEXP);
    region_intact(&p);
    peer_teardown(&p);
}

/* RFC 5041 5.3: queue 1 and its MSN; one segment, no payload */
TEST(atomic_wrong_queue_msn_payload)
{
    struct peer p;
    struct siwarp_mr *amr = setup(&p, true);
    uint8_t u[SWP_HDR_ATOMIC_REQ + 8];
    atomic_req(u, 1, SWP_ATOMIC_FETCH_ADD, siwarp_mr_stag(amr), (uintptr_t)p.region, 1);
    swp_put32(u + 6, SWP_QN_SEND);
    raw_fpdu(&p, u, SWP_HDR_ATOMIC_REQ, false);
    expect_term(&p, W_INV_QN);
    region_intact(&p);

    peer_teardown(&p);
    amr = setup(&p, true);
    raw_fpdu(&p, u, atomic_req(u, 2, SWP_ATOMIC_FETCH_ADD, siwarp_mr_stag(amr), (uintptr_t)p.region, 1),
             false);
    expect_term(&p, W_MSN_RANGE);
    region_intact(&p);

    peer_teardown(&p);
    amr = setup(&p, true);
    atomic_req(u, 1, SWP_ATOMIC_FETCH_ADD, siwarp_mr_stag(amr), (uintptr_t)p.region, 1);
    memset(u + SWP_HDR_ATOMIC_REQ, 0, 8);
    raw_fpdu(&p, u, SWP_HDR_ATOMIC_REQ + 8, false);
    expect_term(&p, W_TOO_LONG);
    region_intact(&p);
    peer_teardown(&p);
}

/* A bad CRC: the atomic was whole and valid, but is never executed. */
TEST(atomic_bad_crc_not_executed)
{
    struct peer p;
    struct siwarp_mr *amr = setup(&p, true);
    uint8_t u[SWP_HDR_ATOMIC_REQ];
    raw_fpdu(&p, u, atomic_req(u, 1, SWP_ATOMIC_FETCH_ADD, siwarp_mr_stag(amr), (uintptr_t)p.region, 1),
             true);
    expect_term(&p, W_CRC);
    region_intact(&p);
    peer_teardown(&p);
}

/* RFC 5040 6.5 / RFC 7306: more Reads and atomics outstanding than the IRD
 * (4).  The raw peer reads nothing and the QP's socket buffer is as small
 * as it gets, so the responses back up; the one beyond the IRD gets the
 * Terminate and is not executed: the counter shows each one before it. */
TEST(atomic_flood_beyond_ird)
{
    struct peer p;
    struct siwarp_mr *amr = setup(&p, true);
    uint8_t u[SWP_HDR_ATOMIC_REQ];
    struct siwarp_qp_attr at;
    uint64_t *ctr = (uint64_t *)(void *)p.region, before = *ctr;
    int one = 1;
    uint32_t i;

    ASSERT_OK(setsockopt(siwarp_qp_fd(p.qp), SOL_SOCKET, SO_SNDBUF, &one, sizeof(one)));
    ASSERT_OK(setsockopt(p.raw, SOL_SOCKET, SO_RCVBUF, &one, sizeof(one)));
    for (i = 1; i <= 4096; i++) {
        raw_fpdu(&p, u, atomic_req(u, i, SWP_ATOMIC_FETCH_ADD, siwarp_mr_stag(amr),
                                   (uintptr_t)ctr, 1), false);
        siwarp_progress(p.ctx);
        siwarp_query_qp(p.qp, &at);
        if (at.state == SIWARP_QPS_ERROR || at.state == SIWARP_QPS_TERMINATE)
            break;
    }
    ASSERT(i <= 4096);
    ASSERT_EQ(at.term_sent, W_CATA_STREAM);
    ASSERT_EQ(*ctr - before, i - 1);
    ASSERT(i - 1 >= 4);
    peer_teardown(&p);
}

/* ---- the requester's side ------------------------------------------------------------- */

/* siwarp posts one CmpSwap toward the raw peer; the Atomic Request FPDU
 * it put on the wire, read back by the raw peer. */
static void post_cmp_swap(struct peer *p, uint64_t *res, struct siwarp_mr **rmr, uint8_t *req)
{
    struct siwarp_sge s;
    struct siwarp_send_wr wr = { .wr_id = 77, .opcode = SIWARP_WR_ATOMIC_MASKED_CMP_SWP,
                                 .num_sge = 1, .send_flags = SIWARP_SEND_SIGNALED };
    uint8_t in[256];
    ssize_t got = 0, n;

    ASSERT_OK(siwarp_reg_mr(p->pd, res, 8, SIWARP_ACCESS_LOCAL_WRITE, rmr));
    peer_keep_mr(p, *rmr);
    s = (struct siwarp_sge){ res, 8, siwarp_mr_stag(*rmr) };
    wr.sg_list = &s;
    wr.atomic.remote_addr = 0x1000;
    wr.atomic.rkey = 0xabcd01;
    wr.atomic.compare_add = 5;
    wr.atomic.swap = 6;
    wr.atomic.compare_add_mask = 0xff;
    wr.atomic.swap_mask = 0xf0f0;
    ASSERT_OK(siwarp_post_send(p->qp, &wr, NULL));
    const uint32_t want = 2 + SWP_HDR_ATOMIC_REQ + swp_mpa_pad(SWP_HDR_ATOMIC_REQ) + 4;
    for (int i = 0; i < 1000 && got < (ssize_t)want; i++) {
        siwarp_progress(p->ctx);
        struct pollfd pf = { p->raw, POLLIN, 0 };
        if (poll(&pf, 1, 2) > 0 && (n = read(p->raw, in + got, sizeof(in) - (size_t)got)) > 0)
            got += n;
    }
    ASSERT_EQ(got, want);
    ASSERT_EQ(swp_get16(in), SWP_HDR_ATOMIC_REQ);
    ASSERT_EQ(swp_mpa_get_crc(in + want - 4), swp_crc32c(0, in, want - 4));
    memcpy(req, in + 2, SWP_HDR_ATOMIC_REQ);
}

TEST(requester_wire_and_response)
{
    struct peer p;
    struct siwarp_mr *rmr;
    uint64_t res = 0;
    uint8_t req[SWP_HDR_ATOMIC_REQ], u[SWP_HDR_ATOMIC_RESP];
    struct siwarp_wc wc;
    setup(&p, true);
    post_cmp_swap(&p, &res, &rmr, req);
    const struct swp_ddp_untagged_hdr *h = (const void *)req;
    const struct swp_rdmap_atomic_req *a = (const void *)(req + SWP_HDR_UNTAGGED);
    ASSERT_EQ(swp_ctrl_opcode(&h->ctrl), SWP_OP_ATOMIC_REQ);
    ASSERT(swp_ctrl_last(&h->ctrl) && !swp_ctrl_tagged(&h->ctrl));
    ASSERT_EQ(swp_get32(h->qn), SWP_QN_READ_REQ);
    ASSERT_EQ(swp_get32(h->msn), 1);
    ASSERT_EQ(swp_get32(h->mo), 0);
    ASSERT_EQ(swp_get32(a->opcode), SWP_ATOMIC_CMP_SWAP);    /* reserved bits zero */
    ASSERT_EQ(swp_get32(a->stag), 0xabcd01);
    ASSERT_EQ(swp_get64(a->to), 0x1000);
    ASSERT_EQ(swp_get64(a->data), 6);
    ASSERT_EQ(swp_get64(a->data_mask), 0xf0f0);
    ASSERT_EQ(swp_get64(a->cmp), 5);
    ASSERT_EQ(swp_get64(a->cmp_mask), 0xff);
    /* the answer: on queue 3, echoing the Request Identifier */
    untagged(u, SWP_OP_ATOMIC_RESP, true, SWP_QN_ATOMIC_RESP, 1, 0);
    memcpy(u + SWP_HDR_UNTAGGED, a->req_id, 4);
    swp_put64(u + SWP_HDR_UNTAGGED + 4, 0x1122334455667788ull);
    raw_fpdu(&p, u, sizeof(u), false);
    for (int i = 0; i < 1000 && siwarp_poll_cq(p.cq, 1, &wc) == 0; i++)
        siwarp_wait(p.ctx, 2);
    ASSERT_EQ(wc.wr_id, 77);
    ASSERT_EQ(wc.status, SIWARP_WC_SUCCESS);
    ASSERT_EQ(wc.opcode, SIWARP_WC_COMP_SWAP);
    ASSERT_EQ(res, 0x1122334455667788ull);
    peer_teardown(&p);
}

/* A response must answer the oldest outstanding atomic, by its identifier,
 * on queue 3: anything else is an unexpected opcode and places nothing. */
static void bad_response(bool post, int how)
{
    struct peer p;
    struct siwarp_mr *rmr;
    uint64_t res = 0x5a5a;
    uint8_t req[SWP_HDR_ATOMIC_REQ], u[SWP_HDR_ATOMIC_RESP];
    setup(&p, true);
    if (post)
        post_cmp_swap(&p, &res, &rmr, req);
    else
        memset(req, 0, sizeof(req));
    untagged(u, SWP_OP_ATOMIC_RESP, true, SWP_QN_ATOMIC_RESP, 1, 0);
    swp_put32(u + SWP_HDR_UNTAGGED, swp_get32(req + SWP_HDR_UNTAGGED + 4) + (how == 1));
    swp_put64(u + SWP_HDR_UNTAGGED + 4, 1);
    if (how == 2)
        swp_put32(u + 6, SWP_QN_READ_REQ);
    raw_fpdu(&p, u, sizeof(u), false);
    expect_term(&p, how == 2 ? W_INV_QN : W_UNEXP);
    ASSERT_EQ(res, 0x5a5a);
    peer_teardown(&p);
}

TEST(response_unsolicited)        { bad_response(false, 0); }
TEST(response_wrong_identifier)   { bad_response(true, 1); }
TEST(response_wrong_queue)        { bad_response(true, 2); }

/* An atomic is outstanding: a Read Response does not answer it. */
TEST(read_response_for_an_atomic)
{
    struct peer p;
    struct siwarp_mr *rmr;
    uint64_t res = 0x5a5a;
    uint8_t req[SWP_HDR_ATOMIC_REQ], u[SWP_HDR_TAGGED + 8];
    setup(&p, true);
    post_cmp_swap(&p, &res, &rmr, req);
    uint32_t h = tagged(u, SWP_OP_READ_RESP, true, siwarp_mr_stag(rmr), (uintptr_t)&res);
    memset(u + h, 0x11, 8);
    raw_fpdu(&p, u, h + 8, false);
    expect_term(&p, W_UNEXP);
    ASSERT_EQ(res, 0x5a5a);
    peer_teardown(&p);
}

/* Immediate Data needs a posted receive like a Send (RFC 5041 7.2). */
TEST(immediate_data_without_receive)
{
    struct peer p;
    uint8_t u[SWP_HDR_IMM];
    setup(&p, true);
    untagged(u, SWP_OP_IMM, true, SWP_QN_SEND, 1, 0);
    swp_put64(u + SWP_HDR_UNTAGGED, 7);
    raw_fpdu(&p, u, sizeof(u), false);
    expect_term(&p, W_NO_BUF);
    peer_teardown(&p);
}

TEST(immediate_data_not_negotiated)
{
    struct peer p;
    uint8_t u[SWP_HDR_IMM];
    setup(&p, false);
    untagged(u, SWP_OP_IMM_SE, true, SWP_QN_SEND, 1, 0);
    raw_fpdu(&p, u, sizeof(u), false);
    expect_term(&p, W_UNEXP);
    peer_teardown(&p);
}

SWP_TEST_MAIN()
