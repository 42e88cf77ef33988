/*
 * iwarp_wire.h - every on-wire structure of MPA (RFC 5044, RFC 6581),
 * DDP (RFC 5041) and RDMAP (RFC 5040, with the RFC 7306 extensions), with
 * byte-order accessors.
 *
 * This is the only file that knows raw header bits.  All multi-byte fields
 * are big-endian on the wire; they are stored here as uint8_t arrays or as
 * uint16_t/uint32_t/uint64_t that must be converted with the swp_get / swp_put
 * helpers below.  Masks are given in wire order of the byte they apply to.
 */
#ifndef SWP_IWARP_WIRE_H
#define SWP_IWARP_WIRE_H

#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>

/* ---- byte-order helpers (unaligned safe) -------------------------------- */

/* Network order through memcpy and htonl/ntohl: one load or store and a
 * bswap each.  Spelled byte by byte, GCC merged the five fields of an
 * untagged header into a 64-bit shift-and-or chain (~90 instructions to
 * build 18 octets, on every Send). */
static inline uint16_t swp_get16(const void *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return ntohs(v);
}

static inline uint32_t swp_get32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return ntohl(v);
}

static inline uint64_t swp_get64(const void *p)
{
    const uint8_t *b = p;
    return ((uint64_t)swp_get32(b) << 32) | swp_get32(b + 4);
}

static inline void swp_put16(void *p, uint16_t v)
{
    v = htons(v);
    memcpy(p, &v, sizeof(v));
}

static inline void swp_put32(void *p, uint32_t v)
{
    v = htonl(v);
    memcpy(p, &v, sizeof(v));
}

static inline void swp_put64(void *p, uint64_t v)
{
    swp_put32(p, (uint32_t)(v >> 32));
    swp_put32((uint8_t *)p + 4, (uint32_t)v);
}

/* ---- MPA request / reply frames (RFC 5044 section 7.1) ------------------ */

#define SWP_MPA_KEY_LEN        16
#define SWP_MPA_KEY_REQ        "MPA ID Req Frame"
#define SWP_MPA_KEY_REP        "MPA ID Rep Frame"
#define SWP_MPA_MAX_PD         512     /* RFC 5044 7.1: private data <= 512 */

/* flags byte */
#define SWP_MPA_FLAG_M         0x80    /* markers wanted */
#define SWP_MPA_FLAG_C         0x40    /* CRC wanted */
#define SWP_MPA_FLAG_R         0x20    /* reject (reply only) */
#define SWP_MPA_FLAG_ENH       0x10    /* RFC 6581 enhanced (rev 2) setup */
#define SWP_MPA_FLAG_RSVD      0x0f

#define SWP_MPA_REV1           1
#define SWP_MPA_REV2           2

struct swp_mpa_rr {
    uint8_t key[SWP_MPA_KEY_LEN];
    uint8_t flags;
    uint8_t rev;
    uint8_t pd_len[2];
};
_Static_assert(sizeof(struct swp_mpa_rr) == 20, "MPA req/rep header is 20 bytes");

/* RFC 6581 section 5: the first 4 private-data bytes of a rev 2 frame. */
struct swp_mpa_v2_ird_ord {
    uint8_t ird[2];
    uint8_t ord[2];
};
_Static_assert(sizeof(struct swp_mpa_v2_ird_ord) == 4, "IRD/ORD block is 4 bytes");

#define SWP_MPA_V2_IRD_P2P       0x8000  /* IRD word: peer-to-peer mode */
#define SWP_MPA_V2_IRD_SEND_RTR  0x4000  /* IRD word: zero-length Send RTR */
#define SWP_MPA_V2_ORD_WRITE_RTR 0x8000  /* ORD word: zero-length Write RTR */
#define SWP_MPA_V2_ORD_READ_RTR  0x4000  /* ORD word: zero-length Read RTR */
#define SWP_MPA_V2_IRD_ORD_MASK  0x3fff

/* ---- MPA FPDU (RFC 5044 section 4) -------------------------------------- */

#define SWP_MPA_HDR_LEN        2       /* ULPDU_Length */
#define SWP_MPA_CRC_LEN        4
#define SWP_MPA_MARKER_LEN     4
#define SWP_MPA_MARKER_PERIOD  512     /* RFC 5044 4.3: every 512 octets */

/* RFC 5044 4.3: marker = 16 reserved bits + 16-bit FPDUPTR. */
struct swp_mpa_marker {
    uint8_t rsvd[2];
    uint8_t fpduptr[2];
};
_Static_assert(sizeof(struct swp_mpa_marker) == 4, "marker is 4 bytes");

static inline uint32_t swp_mpa_pad(uint32_t ulpdu_len)
{
    /* RFC 5044 4.2: pad so ULPDU_Length + ULPDU + PAD is a multiple of 4 */
    return (4u - ((ulpdu_len + SWP_MPA_HDR_LEN) & 3u)) & 3u;
}

/* ---- DDP / RDMAP control (RFC 5041 section 5, RFC 5040 section 4) -------- */

/* byte 0: DDP control */
#define SWP_DDP_FLAG_T         0x80    /* tagged */
#define SWP_DDP_FLAG_L         0x40    /* last segment of message */
#define SWP_DDP_RSVD_MASK      0x3c
#define SWP_DDP_DV_MASK        0x03
#define SWP_DDP_VERSION        1       /* RFC 5041 5.1 */
/* byte 1: RDMAP control */
#define SWP_RDMAP_RV_MASK      0xc0
#define SWP_RDMAP_RV_SHIFT     6
#define SWP_RDMAP_VERSION      1       /* RFC 5040 4.2 */
#define SWP_RDMAP_RSVD_MASK    0x30
#define SWP_RDMAP_OPCODE_MASK  0x0f

/* RFC 5040 4.3 opcodes, and RFC 7306 5.1's four (used only on a stream
 * that negotiated RFC 7306: see mpa.h) */
enum swp_rdmap_opcode {
    SWP_OP_WRITE          = 0x0,
    SWP_OP_READ_REQ       = 0x1,
    SWP_OP_READ_RESP      = 0x2,
    SWP_OP_SEND           = 0x3,
    SWP_OP_SEND_INV       = 0x4,
    SWP_OP_SEND_SE        = 0x5,
    SWP_OP_SEND_SE_INV    = 0x6,
    SWP_OP_TERMINATE      = 0x7,
    SWP_OP_IMM            = 0x8,   /* RFC 7306: Immediate Data */
    SWP_OP_IMM_SE         = 0x9,   /* RFC 7306: Immediate Data with SE */
    SWP_OP_ATOMIC_REQ     = 0xa,   /* RFC 7306: Atomic Request */
    SWP_OP_ATOMIC_RESP    = 0xb,   /* RFC 7306: Atomic Response */
    SWP_OP_MAX            = 0xc
};

/* RFC 5040 5.1 untagged queue numbers.  RFC 7306: Immediate Data goes on
 * queue 0 with the Sends, an Atomic Request on queue 1 with the Read
 * Requests (one IRD/ORD bounds both), an Atomic Response on queue 3. */
#define SWP_QN_SEND            0
#define SWP_QN_READ_REQ        1
#define SWP_QN_TERMINATE       2
#define SWP_QN_ATOMIC_RESP     3
#define SWP_QN_COUNT           4

struct swp_ctrl {
    uint8_t ddp;
    uint8_t rdmap;
};
_Static_assert(sizeof(struct swp_ctrl) == 2, "control is 2 bytes");

static inline uint8_t swp_ctrl_ddp(int tagged, int last)
{
    return (uint8_t)((tagged ? SWP_DDP_FLAG_T : 0) | (last ? SWP_DDP_FLAG_L : 0) |
                     SWP_DDP_VERSION);
}

static inline uint8_t swp_ctrl_rdmap(unsigned opcode)
{
    return (uint8_t)((SWP_RDMAP_VERSION << SWP_RDMAP_RV_SHIFT) |
                     (opcode & SWP_RDMAP_OPCODE_MASK));
}

static inline int swp_ctrl_tagged(const struct swp_ctrl *c) { return !!(c->ddp & SWP_DDP_FLAG_T); }
static inline int swp_ctrl_last(const struct swp_ctrl *c) { return !!(c->ddp & SWP_DDP_FLAG_L); }
static inline unsigned swp_ctrl_dv(const struct swp_ctrl *c) { return c->ddp & SWP_DDP_DV_MASK; }
static inline unsigned swp_ctrl_rv(const struct swp_ctrl *c) { return (c->rdmap & SWP_RDMAP_RV_MASK) >> SWP_RDMAP_RV_SHIFT; }
static inline unsigned swp_ctrl_opcode(const struct swp_ctrl *c) { return c->rdmap & SWP_RDMAP_OPCODE_MASK; }

/* RFC 5041 5.2: tagged buffer header (Write, Read Response). */
struct swp_ddp_tagged_hdr {
    struct swp_ctrl ctrl;
    uint8_t stag[4];
    uint8_t to[8];
};
_Static_assert(sizeof(struct swp_ddp_tagged_hdr) == 14, "tagged hdr is 14 bytes");

/* RFC 5041 5.3: untagged buffer header (Send*, Read Request, Terminate).
 * The 4 "RDMAP ULP reserved" bytes carry the Invalidate STag for the
 * Send-with-Invalidate opcodes (RFC 5040 4.4). */
struct swp_ddp_untagged_hdr {
    struct swp_ctrl ctrl;
    uint8_t inv_stag[4];
    uint8_t qn[4];
    uint8_t msn[4];
    uint8_t mo[4];
};
_Static_assert(sizeof(struct swp_ddp_untagged_hdr) == 18, "untagged hdr is 18 bytes");

/* RFC 5040 4.4: RDMA Read Request payload follows the untagged header. */
struct swp_rdmap_read_req {
    uint8_t sink_stag[4];
    uint8_t sink_to[8];
    uint8_t size[4];
    uint8_t src_stag[4];
    uint8_t src_to[8];
};
_Static_assert(sizeof(struct swp_rdmap_read_req) == 28, "read request is 28 bytes");

/* RFC 7306: the Atomic Request fields after the untagged header.  The
 * first word is 28 reserved bits and the 4-bit atomic operation code. */
struct swp_rdmap_atomic_req {
    uint8_t opcode[4];     /* reserved << 4 | SWP_ATOMIC_* */
    uint8_t req_id[4];     /* Request Identifier, echoed by the response */
    uint8_t stag[4];       /* Remote STag */
    uint8_t to[8];         /* Remote Tagged Offset of the 8-octet target */
    uint8_t data[8];       /* Add Data (FetchAdd) or Swap Data (CmpSwap) */
    uint8_t data_mask[8];  /* Add Mask or Swap Mask */
    uint8_t cmp[8];        /* Compare Data (CmpSwap; zero for FetchAdd) */
    uint8_t cmp_mask[8];   /* Compare Mask (CmpSwap; zero for FetchAdd) */
};
_Static_assert(sizeof(struct swp_rdmap_atomic_req) == 52, "atomic request is 52 bytes");

#define SWP_ATOMIC_OP_MASK     0x0000000fu
#define SWP_ATOMIC_FETCH_ADD   0x0     /* RFC 7306: FetchAdd */
#define SWP_ATOMIC_CMP_SWAP    0x2     /* RFC 7306: CmpSwap */
#define SWP_ATOMIC_LEN         8       /* the target is one naturally aligned u64 */

static inline unsigned swp_atomic_req_op(const struct swp_rdmap_atomic_req *a)
{
    return swp_get32(a->opcode) & SWP_ATOMIC_OP_MASK;
}

/* RFC 7306: the Atomic Response fields after the untagged header. */
struct swp_rdmap_atomic_resp {
    uint8_t req_id[4];     /* Original Request Identifier */
    uint8_t orig[8];       /* Original Remote Data Value */
};
_Static_assert(sizeof(struct swp_rdmap_atomic_resp) == 12, "atomic response is 12 bytes");

/* RFC 7306: the Immediate Data after the untagged header. */
struct swp_rdmap_imm {
    uint8_t data[8];
};
_Static_assert(sizeof(struct swp_rdmap_imm) == 8, "immediate data is 8 bytes");

/* RFC 5040 4.8: Terminate control field, after the untagged header. */
struct swp_rdmap_term {
    uint8_t layer_etype;   /* layer << 4 | error type */
    uint8_t ecode;
    uint8_t flags;         /* M D R bits, then reserved */
    uint8_t rsvd;
};
_Static_assert(sizeof(struct swp_rdmap_term) == 4, "terminate control is 4 bytes");

#define SWP_TERM_FLAG_M        0x80    /* DDP segment length valid */
#define SWP_TERM_FLAG_D        0x40    /* DDP header included */
#define SWP_TERM_FLAG_R        0x20    /* RDMAP header included */

/* RFC 5040 7.1 layers */
enum swp_term_layer {
    SWP_TERM_LAYER_RDMAP = 0,
    SWP_TERM_LAYER_DDP   = 1,
    SWP_TERM_LAYER_LLP   = 2,   /* MPA / TCP */
};

/* RFC 5040 7.2: RDMAP error types and codes */
enum swp_term_rdmap_etype {
    SWP_RDMAP_ET_CATASTROPHIC = 0,
    SWP_RDMAP_ET_REMOTE_PROT  = 1,
    SWP_RDMAP_ET_REMOTE_OP    = 2,
};
enum swp_term_rdmap_ecode {
    SWP_RDMAP_EC_INV_STAG        = 0x00,
    SWP_RDMAP_EC_BASE_BOUNDS     = 0x01,
    SWP_RDMAP_EC_ACCESS          = 0x02,
    SWP_RDMAP_EC_STAG_STREAM     = 0x03,
    SWP_RDMAP_EC_TO_WRAP         = 0x04,
    SWP_RDMAP_EC_INV_RDMAP_VER   = 0x05,
    SWP_RDMAP_EC_UNEXP_OPCODE    = 0x06,
    SWP_RDMAP_EC_CATA_STREAM     = 0x07,
    SWP_RDMAP_EC_CATA_GLOBAL     = 0x08,
    SWP_RDMAP_EC_CANT_INVALIDATE = 0x09,
    SWP_RDMAP_EC_UNSPECIFIED     = 0xff,
};

/* RFC 5041 7.2: DDP error types and codes */
enum swp_term_ddp_etype {
    SWP_DDP_ET_CATASTROPHIC = 0,
    SWP_DDP_ET_TAGGED       = 1,
    SWP_DDP_ET_UNTAGGED     = 2,
};
enum swp_term_ddp_ecode {
    /* tagged buffer errors */
    SWP_DDP_EC_T_INV_STAG     = 0x00,
    SWP_DDP_EC_T_BASE_BOUNDS  = 0x01,
    SWP_DDP_EC_T_STAG_STREAM  = 0x02,
    SWP_DDP_EC_T_TO_WRAP      = 0x03,
    SWP_DDP_EC_T_INV_DDP_VER  = 0x04,
    /* untagged buffer errors */
    SWP_DDP_EC_U_INV_QN       = 0x01,
    SWP_DDP_EC_U_NO_BUF       = 0x02,   /* invalid MSN: no buffer available */
    SWP_DDP_EC_U_MSN_RANGE    = 0x03,   /* invalid MSN: MSN range */
    SWP_DDP_EC_U_INV_MO       = 0x04,
    SWP_DDP_EC_U_TOO_LONG     = 0x05,   /* message too long for buffer */
    SWP_DDP_EC_U_INV_DDP_VER  = 0x06,
    /* catastrophic */
    SWP_DDP_EC_CATASTROPHIC   = 0x00,
};

/* RFC 5044 8 and RFC 6581 8: LLP (MPA) error codes, error type 0. */
enum swp_term_llp_ecode {
    SWP_LLP_EC_TCP_LOST        = 0x01,
    SWP_LLP_EC_CRC             = 0x02,
    SWP_LLP_EC_MARKER          = 0x03,   /* marker and ULPDU length mismatch */
    SWP_LLP_EC_BAD_RR          = 0x04,   /* invalid request / reply frame */
    SWP_LLP_EC_LOCAL_CATA      = 0x05,
    SWP_LLP_EC_INSUFF_IRD      = 0x06,
    SWP_LLP_EC_NO_MATCHING_RTR = 0x07,
};

/* header lengths, ULPDU_Length field excluded */
#define SWP_HDR_TAGGED         ((uint32_t)sizeof(struct swp_ddp_tagged_hdr))
#define SWP_HDR_UNTAGGED       ((uint32_t)sizeof(struct swp_ddp_untagged_hdr))
#define SWP_HDR_READ_REQ       (SWP_HDR_UNTAGGED + (uint32_t)sizeof(struct swp_rdmap_read_req))
#define SWP_HDR_TERMINATE      (SWP_HDR_UNTAGGED + (uint32_t)sizeof(struct swp_rdmap_term))
#define SWP_HDR_IMM            (SWP_HDR_UNTAGGED + (uint32_t)sizeof(struct swp_rdmap_imm))
#define SWP_HDR_ATOMIC_REQ     (SWP_HDR_UNTAGGED + (uint32_t)sizeof(struct swp_rdmap_atomic_req))
#define SWP_HDR_ATOMIC_RESP    (SWP_HDR_UNTAGGED + (uint32_t)sizeof(struct swp_rdmap_atomic_resp))
#define SWP_HDR_MAX            SWP_HDR_ATOMIC_REQ

/* Terminate may carry: DDP segment length (2) + the offending DDP/RDMAP
 * header (at most 46 bytes, a Read Request; the reservation is for the
 * longest header).  RFC 5040 4.8. */
#define SWP_TERM_MAX_LEN       (SWP_HDR_TERMINATE + 2 + SWP_HDR_MAX)

#endif /* SWP_IWARP_WIRE_H */
