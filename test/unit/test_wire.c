/*
 * test_wire.c - DDP/RDMAP headers against fixed byte vectors laid out by
 * hand from RFC 5041 5.1-5.3, RFC 5040 4.2-4.8 and RFC 7306, parsed back;
 * the opcode table; Terminate text; the RFC 7306 atomic arithmetic.
 */
#include <string.h>

#include "harness.h"
#include "swp.h"

/* RFC 5041 5.2 + RFC 5040 4.2: T=1 L=1 DV=1 | RV=1 opcode 0 (Write),
 * STag 0x11223344, TO 0x0102030405060708 */
static const uint8_t write_hdr[14] = {
    0xc1, 0x40, 0x11, 0x22, 0x33, 0x44,
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
};

/* RFC 5041 5.3 + RFC 5040 4.4: T=0 L=0 DV=1 | RV=1 Send with SE and
 * Invalidate (6), Invalidate STag 0xaabbccdd, QN 0, MSN 7, MO 0x10000 */
static const uint8_t send_se_inv_hdr[18] = {
    0x01, 0x46, 0xaa, 0xbb, 0xcc, 0xdd,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x01, 0x00, 0x00,
};

/* RFC 5040 4.4: Read Request on QN 1, MSN 1; sink STag 0x100, sink TO
 * 0x2000, size 0x3000, source STag 0x400, source TO 0x5000 */
static const uint8_t read_req_hdr[46] = {
    0x41, 0x41, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x01, 0x00,  0, 0, 0, 0, 0x00, 0x00, 0x20, 0x00,
    0x00, 0x00, 0x30, 0x00,  0x00, 0x00, 0x04, 0x00,  0, 0, 0, 0, 0x00, 0x00, 0x50, 0x00,
};

TEST(tagged_header_bytes)
{
    uint8_t h[SWP_HDR_MAX];
    ASSERT_EQ(swp_ddp_build_tagged(h, SWP_OP_WRITE, true, 0x11223344, 0x0102030405060708ull), 14);
    ASSERT_MEM_EQ(h, write_hdr, sizeof(write_hdr));
    const struct swp_ddp_tagged_hdr *t = (const void *)write_hdr;
    ASSERT(swp_ctrl_tagged(&t->ctrl) && swp_ctrl_last(&t->ctrl));
    ASSERT_EQ(swp_ctrl_dv(&t->ctrl), 1);
    ASSERT_EQ(swp_ctrl_rv(&t->ctrl), 1);
    ASSERT_EQ(swp_ctrl_opcode(&t->ctrl), SWP_OP_WRITE);
    ASSERT_EQ(swp_get32(t->stag), 0x11223344);
    ASSERT_EQ(swp_get64(t->to), 0x0102030405060708ull);
    ASSERT_EQ(swp_ddp_check_ctrl(&t->ctrl, false), 0);
}

TEST(untagged_header_bytes)
{
    uint8_t h[SWP_HDR_MAX];
    ASSERT_EQ(swp_ddp_build_untagged(h, SWP_OP_SEND_SE_INV, false, 0, 7, 0x10000, 0xaabbccdd), 18);
    ASSERT_MEM_EQ(h, send_se_inv_hdr, sizeof(send_se_inv_hdr));
    const struct swp_ddp_untagged_hdr *u = (const void *)send_se_inv_hdr;
    ASSERT(!swp_ctrl_tagged(&u->ctrl) && !swp_ctrl_last(&u->ctrl));
    ASSERT_EQ(swp_get32(u->inv_stag), 0xaabbccdd);
    ASSERT_EQ(swp_get32(u->msn), 7);
    ASSERT_EQ(swp_get32(u->mo), 0x10000);
    ASSERT_EQ(swp_ddp_check_ctrl(&u->ctrl, false), 0);
}

TEST(read_request_bytes)
{
    uint8_t h[SWP_HDR_MAX];
    swp_ddp_build_untagged(h, SWP_OP_READ_REQ, true, SWP_QN_READ_REQ, 1, 0, 0);
    struct swp_rdmap_read_req *rr = (void *)(h + SWP_HDR_UNTAGGED);
    swp_put32(rr->sink_stag, 0x100);
    swp_put64(rr->sink_to, 0x2000);
    swp_put32(rr->size, 0x3000);
    swp_put32(rr->src_stag, 0x400);
    swp_put64(rr->src_to, 0x5000);
    ASSERT_MEM_EQ(h, read_req_hdr, sizeof(read_req_hdr));
    ASSERT_EQ(swp_opinfo[SWP_OP_READ_REQ].hdr_len, 46);
}

/* RFC 7306: Atomic Request (CmpSwap) on QN 1, MSN 2; request id 9,
 * STag 0x11223344, TO 0x1000, swap 0x0102030405060708 under mask ~0,
 * compare 5 under mask 0xff */
static const uint8_t atomic_req_hdr[70] = {
    0x41, 0x4a, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x02,  0x00, 0x00, 0x00, 0x09,  0x11, 0x22, 0x33, 0x44,
    0, 0, 0, 0, 0x00, 0x00, 0x10, 0x00,
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0, 0, 0, 0, 0, 0, 0, 5,
    0, 0, 0, 0, 0, 0, 0, 0xff,
};

/* RFC 7306: Atomic Response on QN 3, MSN 1: request id 9, original value
 * 0xfedcba9876543210 */
static const uint8_t atomic_resp_hdr[30] = {
    0x41, 0x4b, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x09,  0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10,
};

TEST(atomic_request_response_bytes)
{
    uint8_t h[SWP_HDR_MAX];
    swp_ddp_build_untagged(h, SWP_OP_ATOMIC_REQ, true, SWP_QN_READ_REQ, 2, 0, 0);
    struct swp_rdmap_atomic_req *a = (void *)(h + SWP_HDR_UNTAGGED);
    swp_put32(a->opcode, SWP_ATOMIC_CMP_SWAP);
    swp_put32(a->req_id, 9);
    swp_put32(a->stag, 0x11223344);
    swp_put64(a->to, 0x1000);
    swp_put64(a->data, 0x0102030405060708ull);
    swp_put64(a->data_mask, UINT64_MAX);
    swp_put64(a->cmp, 5);
    swp_put64(a->cmp_mask, 0xff);
    ASSERT_MEM_EQ(h, atomic_req_hdr, sizeof(atomic_req_hdr));
    /* the 28 reserved bits above the operation code are not part of it */
    const struct swp_rdmap_atomic_req *r = (const void *)(atomic_req_hdr + SWP_HDR_UNTAGGED);
    ASSERT_EQ(swp_atomic_req_op(r), SWP_ATOMIC_CMP_SWAP);
    uint8_t v[sizeof(atomic_req_hdr)];
    memcpy(v, atomic_req_hdr, sizeof(v));
    v[SWP_HDR_UNTAGGED] = 0xf0;
    ASSERT_EQ(swp_atomic_req_op((const void *)(v + SWP_HDR_UNTAGGED)), SWP_ATOMIC_CMP_SWAP);
    /* RFC 7306's opcodes only on a stream that negotiated it */
    ASSERT_EQ(swp_ddp_check_ctrl((const struct swp_ctrl *)atomic_req_hdr, true), 0);
    ASSERT_EQ(swp_ddp_check_ctrl((const struct swp_ctrl *)atomic_req_hdr, false),
              SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_UNEXP_OPCODE));

    swp_ddp_build_untagged(h, SWP_OP_ATOMIC_RESP, true, SWP_QN_ATOMIC_RESP, 1, 0, 0);
    struct swp_rdmap_atomic_resp *p = (void *)(h + SWP_HDR_UNTAGGED);
    swp_put32(p->req_id, 9);
    swp_put64(p->orig, 0xfedcba9876543210ull);
    ASSERT_MEM_EQ(h, atomic_resp_hdr, sizeof(atomic_resp_hdr));
}

/* RFC 7306: Immediate Data with SE (9) on QN 0, MSN 4, 8 octets */
TEST(immediate_data_bytes)
{
    static const uint8_t want[26] = {
        0x41, 0x49, 0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 4,  0, 0, 0, 0,
        0xde, 0xad, 0xbe, 0xef, 0x00, 0x11, 0x22, 0x33,
    };
    uint8_t h[SWP_HDR_MAX];
    swp_ddp_build_untagged(h, SWP_OP_IMM_SE, true, SWP_QN_SEND, 4, 0, 0);
    swp_put64(h + SWP_HDR_UNTAGGED, 0xdeadbeef00112233ull);
    ASSERT_MEM_EQ(h, want, sizeof(want));
}

/* RFC 7306 FetchAdd and CmpSwap, masked and not, on edge values */
TEST(atomic_arithmetic)
{
    uint64_t t = UINT64_MAX;
    ASSERT_EQ(swp_atomic_exec(&t, SWP_ATOMIC_FETCH_ADD, 1, 0, 0, 0), (long long)UINT64_MAX);
    ASSERT_EQ(t, 0);                                   /* wraps at 2^64 */
    t = 0x00ff00ff00ff00ffull;
    /* fields of 8 bits (top bit of each set in the mask): no carry crosses */
    ASSERT_EQ(swp_atomic_exec(&t, SWP_ATOMIC_FETCH_ADD, 0x0101010101010101ull,
                              0x8080808080808080ull, 0, 0), (long long)0x00ff00ff00ff00ffull);
    ASSERT_EQ(t, 0x0100010001000100ull);
    /* two 32-bit halves: the low half wraps alone */
    t = 0x00000001ffffffffull;
    swp_atomic_exec(&t, SWP_ATOMIC_FETCH_ADD, 0x0000000100000002ull, 0x8000000080000000ull, 0, 0);
    ASSERT_EQ(t, 0x0000000200000001ull);
    /* CmpSwap: equal swaps, different does not, old value returned */
    t = 7;
    ASSERT_EQ(swp_atomic_exec(&t, SWP_ATOMIC_CMP_SWAP, 9, UINT64_MAX, 7, UINT64_MAX), 7);
    ASSERT_EQ(t, 9);
    ASSERT_EQ(swp_atomic_exec(&t, SWP_ATOMIC_CMP_SWAP, 1, UINT64_MAX, 7, UINT64_MAX), 9);
    ASSERT_EQ(t, 9);
    /* masked: compare only the low byte, swap only the high byte */
    t = 0x1100000000000042ull;
    ASSERT_EQ(swp_atomic_exec(&t, SWP_ATOMIC_CMP_SWAP, 0xaa00000000000000ull,
                              0xff00000000000000ull, 0x7700000000000042ull, 0xff),
              (long long)0x1100000000000042ull);
    ASSERT_EQ(t, 0xaa00000000000042ull);
    ASSERT_EQ(swp_atomic_exec(&t, SWP_ATOMIC_CMP_SWAP, 0, UINT64_MAX, 0x43, 0xff),
              (long long)0xaa00000000000042ull);
    ASSERT_EQ(t, 0xaa00000000000042ull);              /* low byte differs: kept */
}

/* RFC 5040 5.1 / 4.3 and RFC 7306: each opcode's DDP model, queue and
 * header length */
TEST(opcode_table)
{
    static const struct { unsigned op; bool tagged; uint8_t qn; uint32_t len; } t[] = {
        { SWP_OP_WRITE, true, 0, 14 },      { SWP_OP_READ_REQ, false, 1, 46 },
        { SWP_OP_READ_RESP, true, 0, 14 },  { SWP_OP_SEND, false, 0, 18 },
        { SWP_OP_SEND_INV, false, 0, 18 },  { SWP_OP_SEND_SE, false, 0, 18 },
        { SWP_OP_SEND_SE_INV, false, 0, 18 }, { SWP_OP_TERMINATE, false, 2, 22 },
        { SWP_OP_IMM, false, 0, 26 },       { SWP_OP_IMM_SE, false, 0, 26 },
        { SWP_OP_ATOMIC_REQ, false, 1, 70 }, { SWP_OP_ATOMIC_RESP, false, 3, 30 },
    };
    ASSERT_EQ(SWP_OP_MAX, 12);
    for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        ASSERT_EQ(swp_opinfo[t[i].op].tagged, t[i].tagged);
        ASSERT_EQ(swp_opinfo[t[i].op].hdr_len, t[i].len);
        if (!t[i].tagged)
            ASSERT_EQ(swp_opinfo[t[i].op].qn, t[i].qn);
    }
}

/* RFC 5040 4.8: Terminate control, then the DDP segment length and the
 * offending header (M, D, R bits) */
TEST(terminate_bytes_and_roundtrip)
{
    uint8_t h[SWP_TERM_MAX_LEN], bad[2 + 46];
    uint32_t term = SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_PROT, SWP_RDMAP_EC_ACCESS);
    uint32_t got = 0;

    swp_put16(bad, 46);
    memcpy(bad + 2, read_req_hdr, 46);
    uint32_t len = swp_rdmap_build_term(h, 1, term, bad, sizeof(bad));
    ASSERT_EQ(len, 22 + 48);
    static const uint8_t want[22] = {
        0x41, 0x47, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0,
        0x01, 0x02, 0xe0, 0x00,          /* layer 0 / etype 1, code 2, M D R */
    };
    ASSERT_MEM_EQ(h, want, sizeof(want));
    ASSERT_MEM_EQ(h + 22, bad, sizeof(bad));
    ASSERT_OK(swp_rdmap_parse_term(h, len, &got));
    ASSERT_EQ(got, term);
    ASSERT(strstr(siwarp_term_str(got), "access rights") != NULL);
    /* an LLP error copies no header */
    len = swp_rdmap_build_term(h, 2, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_CRC), bad, sizeof(bad));
    ASSERT_EQ(len, 22);
    ASSERT_EQ(h[20], 0);
    ASSERT_EQ(SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_CRC), SIWARP_TERM_CRC);
    ASSERT(strstr(siwarp_term_str(SIWARP_TERM_CRC), "CRC") != NULL);
    ASSERT_EQ(swp_rdmap_parse_term(h, 21, &got), -EPROTO);
}

/* The numbers themselves, as literals, so that renumbering an enum fails
 * here even where every other test compares name to name.  The Terminate
 * layer / error type / error code triples are those of the IANA "RDMAP
 * Errors" and "DDP Errors" registries (RFC 6580, filled from RFC 5040 and
 * RFC 5041; RFC 7306 registered no new ones, so an atomic violation is
 * reported with these); the LLP codes are RFC 5044's and RFC 6581's. */
TEST(terminate_code_points)
{
    /* RFC 5040 Terminate header: layer */
    ASSERT_EQ(SWP_TERM_LAYER_RDMAP, 0);
    ASSERT_EQ(SWP_TERM_LAYER_DDP, 1);
    ASSERT_EQ(SWP_TERM_LAYER_LLP, 2);
    /* RDMAP error types and codes */
    ASSERT_EQ(SWP_RDMAP_ET_CATASTROPHIC, 0);
    ASSERT_EQ(SWP_RDMAP_ET_REMOTE_PROT, 1);
    ASSERT_EQ(SWP_RDMAP_ET_REMOTE_OP, 2);
    ASSERT_EQ(SWP_RDMAP_EC_INV_STAG, 0x00);
    ASSERT_EQ(SWP_RDMAP_EC_BASE_BOUNDS, 0x01);
    ASSERT_EQ(SWP_RDMAP_EC_ACCESS, 0x02);
    ASSERT_EQ(SWP_RDMAP_EC_STAG_STREAM, 0x03);
    ASSERT_EQ(SWP_RDMAP_EC_TO_WRAP, 0x04);
    ASSERT_EQ(SWP_RDMAP_EC_INV_RDMAP_VER, 0x05);
    ASSERT_EQ(SWP_RDMAP_EC_UNEXP_OPCODE, 0x06);
    ASSERT_EQ(SWP_RDMAP_EC_CATA_STREAM, 0x07);
    ASSERT_EQ(SWP_RDMAP_EC_CATA_GLOBAL, 0x08);
    ASSERT_EQ(SWP_RDMAP_EC_CANT_INVALIDATE, 0x09);
    ASSERT_EQ(SWP_RDMAP_EC_UNSPECIFIED, 0xff);
    /* DDP error types and codes */
    ASSERT_EQ(SWP_DDP_ET_CATASTROPHIC, 0);
    ASSERT_EQ(SWP_DDP_ET_TAGGED, 1);
    ASSERT_EQ(SWP_DDP_ET_UNTAGGED, 2);
    ASSERT_EQ(SWP_DDP_EC_CATASTROPHIC, 0x00);
    ASSERT_EQ(SWP_DDP_EC_T_INV_STAG, 0x00);
    ASSERT_EQ(SWP_DDP_EC_T_BASE_BOUNDS, 0x01);
    ASSERT_EQ(SWP_DDP_EC_T_STAG_STREAM, 0x02);
    ASSERT_EQ(SWP_DDP_EC_T_TO_WRAP, 0x03);
    ASSERT_EQ(SWP_DDP_EC_T_INV_DDP_VER, 0x04);
    ASSERT_EQ(SWP_DDP_EC_U_INV_QN, 0x01);
    ASSERT_EQ(SWP_DDP_EC_U_NO_BUF, 0x02);
    ASSERT_EQ(SWP_DDP_EC_U_MSN_RANGE, 0x03);
    ASSERT_EQ(SWP_DDP_EC_U_INV_MO, 0x04);
    ASSERT_EQ(SWP_DDP_EC_U_TOO_LONG, 0x05);
    ASSERT_EQ(SWP_DDP_EC_U_INV_DDP_VER, 0x06);
    /* MPA (LLP) errors, error type 0: RFC 5044 1-5, RFC 6581 6-7 */
    ASSERT_EQ(SWP_LLP_EC_TCP_LOST, 0x01);
    ASSERT_EQ(SWP_LLP_EC_CRC, 0x02);
    ASSERT_EQ(SWP_LLP_EC_MARKER, 0x03);
    ASSERT_EQ(SWP_LLP_EC_BAD_RR, 0x04);
    ASSERT_EQ(SWP_LLP_EC_LOCAL_CATA, 0x05);
    ASSERT_EQ(SWP_LLP_EC_INSUFF_IRD, 0x06);
    ASSERT_EQ(SWP_LLP_EC_NO_MATCHING_RTR, 0x07);
    /* Terminate control: header-copied bits M, D, R from the top */
    ASSERT_EQ(SWP_TERM_FLAG_M, 0x80);
    ASSERT_EQ(SWP_TERM_FLAG_D, 0x40);
    ASSERT_EQ(SWP_TERM_FLAG_R, 0x20);
}

/* Each atomic violation's Terminate as its first two octets on the wire
 * (layer << 4 | error type, then the code): the same number as the word
 * test_atomic_errors.c expects, so that test pins the wire too. */
TEST(terminate_wire_octets)
{
    static const struct { uint32_t term; uint8_t b0, b1; } t[] = {
        { SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_PROT, SWP_RDMAP_EC_INV_STAG), 0x01, 0x00 },
        { SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_PROT, SWP_RDMAP_EC_BASE_BOUNDS), 0x01, 0x01 },
        { SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_PROT, SWP_RDMAP_EC_ACCESS), 0x01, 0x02 },
        { SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_PROT, SWP_RDMAP_EC_STAG_STREAM), 0x01, 0x03 },
        { SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_PROT, SWP_RDMAP_EC_TO_WRAP), 0x01, 0x04 },
        { SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_UNEXP_OPCODE), 0x02, 0x06 },
        { SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_CATA_STREAM), 0x02, 0x07 },
        { SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_INV_QN), 0x12, 0x01 },
        { SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_NO_BUF), 0x12, 0x02 },
        { SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_MSN_RANGE), 0x12, 0x03 },
        { SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_TOO_LONG), 0x12, 0x05 },
        { SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_CRC), 0x20, 0x02 },
    };
    uint8_t h[SWP_TERM_MAX_LEN];
    uint32_t got;

    for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        ASSERT_EQ(swp_rdmap_build_term(h, 1, t[i].term, NULL, 0), SWP_HDR_TERMINATE);
        ASSERT_EQ(h[SWP_HDR_UNTAGGED], t[i].b0);
        ASSERT_EQ(h[SWP_HDR_UNTAGGED + 1], t[i].b1);
        ASSERT_EQ(t[i].term, (uint32_t)(t[i].b0 << 8 | t[i].b1));
        ASSERT_OK(swp_rdmap_parse_term(h, SWP_HDR_TERMINATE, &got));
        ASSERT_EQ(got, t[i].term);
    }
}

/* RFC 7306's code points as literals.  Checked against Wireshark's
 * RFC 7306 dissector (opcodes 0xa / 0xb, FetchAdd 0, CmpSwap 2, the
 * request and response field order and sizes) and against the IANA RDDP
 * registries; Immediate Data's opcodes 8 / 9 and queue 3 for the Atomic
 * Response (the Request shares queue 1 with Read Requests) as another
 * RFC 7306 implementation (urdma) has them. */
TEST(rfc7306_code_points)
{
    ASSERT_EQ(SWP_OP_IMM, 0x8);
    ASSERT_EQ(SWP_OP_IMM_SE, 0x9);
    ASSERT_EQ(SWP_OP_ATOMIC_REQ, 0xa);
    ASSERT_EQ(SWP_OP_ATOMIC_RESP, 0xb);
    ASSERT_EQ(SWP_QN_SEND, 0);
    ASSERT_EQ(SWP_QN_READ_REQ, 1);
    ASSERT_EQ(SWP_QN_TERMINATE, 2);
    ASSERT_EQ(SWP_QN_ATOMIC_RESP, 3);
    ASSERT_EQ(swp_opinfo[SWP_OP_IMM].qn, 0);
    ASSERT_EQ(swp_opinfo[SWP_OP_ATOMIC_REQ].qn, 1);
    ASSERT_EQ(swp_opinfo[SWP_OP_ATOMIC_RESP].qn, 3);
    ASSERT_EQ(SWP_ATOMIC_FETCH_ADD, 0x0);
    ASSERT_EQ(SWP_ATOMIC_CMP_SWAP, 0x2);
    ASSERT_EQ(SWP_ATOMIC_OP_MASK, 0xf);        /* 28 reserved bits, 4-bit code */
    ASSERT_EQ(sizeof(struct swp_rdmap_atomic_req), 52);
    ASSERT_EQ(sizeof(struct swp_rdmap_atomic_resp), 12);
    ASSERT_EQ(sizeof(struct swp_rdmap_imm), 8);
    /* the control octet of each, RV 1 in the top two bits */
    ASSERT_EQ(swp_ctrl_rdmap(SWP_OP_IMM), 0x48);
    ASSERT_EQ(swp_ctrl_rdmap(SWP_OP_IMM_SE), 0x49);
    ASSERT_EQ(swp_ctrl_rdmap(SWP_OP_ATOMIC_REQ), 0x4a);
    ASSERT_EQ(swp_ctrl_rdmap(SWP_OP_ATOMIC_RESP), 0x4b);
}

/* RFC 5044 4.2: ULPDU_Length + ULPDU + PAD is a multiple of 4 */
TEST(mpa_pad)
{
    for (uint32_t l = 0; l < 64; l++)
        ASSERT_EQ((2 + l + swp_mpa_pad(l)) % 4, 0);
    ASSERT_EQ(swp_mpa_pad(14), 0);
    ASSERT_EQ(swp_mpa_pad(15), 3);
    ASSERT_EQ(swp_fpdu_wire_len(18, false), 24);
}

SWP_TEST_MAIN()
