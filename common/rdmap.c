/*
 * rdmap.c - RDMAP Terminate messages (RFC 5040 4.8, 7) and the text of
 * every error a Terminate can carry.
 */
#include <stdio.h>
#include <string.h>

#include "swp.h"

uint32_t swp_rdmap_build_term(uint8_t *h, uint32_t msn, uint32_t term,
                              const uint8_t *bad_hdr, uint32_t bad_hdr_len)
{
    struct swp_rdmap_term *t = (struct swp_rdmap_term *)(h + SWP_HDR_UNTAGGED);
    uint32_t len;

    /* RFC 5040 5.3 / 4.8: Terminate goes on untagged queue 2, one segment */
    swp_ddp_build_untagged(h, SWP_OP_TERMINATE, true, SWP_QN_TERMINATE, msn, 0, 0);
    t->layer_etype = (uint8_t)(SWP_TERM_LAYER(term) << 4 | SWP_TERM_ETYPE(term));
    t->ecode = (uint8_t)SWP_TERM_CODE(term);
    t->flags = 0;
    t->rsvd = 0;
    len = SWP_HDR_TERMINATE;
    /* bad_hdr is the offending FPDU from its ULPDU_Length field on: the
     * length is the "DDP Segment Length" (M), followed by the DDP header (D)
     * and, for a Read Request, the RDMAP header (R).  An LLP error carries
     * none: its header cannot be trusted (RFC 5040 4.8). */
    if (bad_hdr && bad_hdr_len >= SWP_MPA_HDR_LEN + sizeof(struct swp_ctrl) &&
        SWP_TERM_LAYER(term) != SWP_TERM_LAYER_LLP) {
        const struct swp_ctrl *c = (const struct swp_ctrl *)(bad_hdr + SWP_MPA_HDR_LEN);
        uint32_t want = SWP_MPA_HDR_LEN +
                        (swp_ctrl_tagged(c) ? SWP_HDR_TAGGED : SWP_HDR_UNTAGGED);
        if (!swp_ctrl_tagged(c) && swp_ctrl_opcode(c) == SWP_OP_READ_REQ &&
            bad_hdr_len >= SWP_MPA_HDR_LEN + SWP_HDR_READ_REQ) {
            want = SWP_MPA_HDR_LEN + SWP_HDR_READ_REQ;
            t->flags |= SWP_TERM_FLAG_R;
        }
        if (bad_hdr_len >= want) {
            t->flags |= SWP_TERM_FLAG_M | SWP_TERM_FLAG_D;
            memcpy(h + len, bad_hdr, want);
            len += want;
        } else {
            t->flags &= (uint8_t)~SWP_TERM_FLAG_R;
        }
    }
    return len;
}

int swp_rdmap_parse_term(const uint8_t *h, uint32_t len, uint32_t *term)
{
    const struct swp_rdmap_term *t;

    if (len < SWP_HDR_TERMINATE)
        return -EPROTO;
    t = (const struct swp_rdmap_term *)(h + SWP_HDR_UNTAGGED);
    *term = SWP_TERM(t->layer_etype >> 4, t->layer_etype & 0xf, t->ecode);
    return 0;
}

static const char *swp_term_layer_str(unsigned layer)
{
    switch (layer) {
    case SWP_TERM_LAYER_RDMAP: return "RDMAP";
    case SWP_TERM_LAYER_DDP:   return "DDP";
    case SWP_TERM_LAYER_LLP:   return "MPA";
    default:                   return "unknown layer";
    }
}

static const char *swp_term_code_str(uint32_t term)
{
    unsigned layer = SWP_TERM_LAYER(term), et = SWP_TERM_ETYPE(term), ec = SWP_TERM_CODE(term);

    if (layer == SWP_TERM_LAYER_RDMAP) {
        if (et == SWP_RDMAP_ET_CATASTROPHIC)
            return "local catastrophic error";
        switch (ec) {
        case SWP_RDMAP_EC_INV_STAG:        return "invalid STag";
        case SWP_RDMAP_EC_BASE_BOUNDS:     return "base or bounds violation";
        case SWP_RDMAP_EC_ACCESS:          return "access rights violation";
        case SWP_RDMAP_EC_STAG_STREAM:     return "STag not associated with RDMAP stream";
        case SWP_RDMAP_EC_TO_WRAP:         return "tagged offset wrap";
        case SWP_RDMAP_EC_INV_RDMAP_VER:   return "invalid RDMAP version";
        case SWP_RDMAP_EC_UNEXP_OPCODE:    return "unexpected opcode";
        case SWP_RDMAP_EC_CATA_STREAM:     return "catastrophic error, localized to stream";
        case SWP_RDMAP_EC_CATA_GLOBAL:     return "catastrophic error, global";
        case SWP_RDMAP_EC_CANT_INVALIDATE: return "STag cannot be invalidated";
        default:                           return "unspecified error";
        }
    }
    if (layer == SWP_TERM_LAYER_DDP) {
        if (et == SWP_DDP_ET_CATASTROPHIC)
            return "local catastrophic error";
        if (et == SWP_DDP_ET_TAGGED) {
            switch (ec) {
            case SWP_DDP_EC_T_INV_STAG:    return "tagged: invalid STag";
            case SWP_DDP_EC_T_BASE_BOUNDS: return "tagged: base or bounds violation";
            case SWP_DDP_EC_T_STAG_STREAM: return "tagged: STag not associated with stream";
            case SWP_DDP_EC_T_TO_WRAP:     return "tagged: tagged offset wrap";
            case SWP_DDP_EC_T_INV_DDP_VER: return "tagged: invalid DDP version";
            }
        } else if (et == SWP_DDP_ET_UNTAGGED) {
            switch (ec) {
            case SWP_DDP_EC_U_INV_QN:      return "untagged: invalid queue number";
            case SWP_DDP_EC_U_NO_BUF:      return "untagged: no receive buffer (invalid MSN)";
            case SWP_DDP_EC_U_MSN_RANGE:   return "untagged: MSN out of range";
            case SWP_DDP_EC_U_INV_MO:      return "untagged: invalid message offset";
            case SWP_DDP_EC_U_TOO_LONG:    return "untagged: message too long for receive buffer";
            case SWP_DDP_EC_U_INV_DDP_VER: return "untagged: invalid DDP version";
            }
        }
        return "unknown DDP error";
    }
    if (layer == SWP_TERM_LAYER_LLP) {
        switch (ec) {
        case SWP_LLP_EC_TCP_LOST:        return "TCP connection lost";
        case SWP_LLP_EC_CRC:             return "CRC error";
        case SWP_LLP_EC_MARKER:          return "marker and ULPDU length mismatch";
        case SWP_LLP_EC_BAD_RR:          return "invalid MPA request or reply frame";
        case SWP_LLP_EC_LOCAL_CATA:      return "local catastrophic error";
        case SWP_LLP_EC_INSUFF_IRD:      return "insufficient IRD resources";
        case SWP_LLP_EC_NO_MATCHING_RTR: return "no matching RTR";
        }
    }
    return "unknown error";
}

const char *swp_term_str(uint32_t term, char *buf, size_t len)
{
    snprintf(buf, len, "%s: %s (layer %u, type %u, code 0x%02x)",
             swp_term_layer_str(SWP_TERM_LAYER(term)), swp_term_code_str(term),
             SWP_TERM_LAYER(term), SWP_TERM_ETYPE(term), SWP_TERM_CODE(term));
    return buf;
}

const char *siwarp_term_str(uint32_t term)
{
    static __thread char buf[128];
    return swp_term_str(term, buf, sizeof(buf));
}
