/*
 * mpa.c - MPA Request/Reply frames, connection-setup negotiation, MULPDU and
 * marker arithmetic.  Pure functions: no sockets, no allocation.
 *
 * RFC 5044 section 7.1 defines the frames and the M/C/R flags; RFC 6581
 * (section 7) adds revision 2, the enhanced flag, the IRD/ORD words at the
 * head of the private data and the peer-to-peer RTR handshake.
 */
#include <errno.h>
#include <string.h>

#include "mpa.h"

/* ---- frames ----------------------------------------------------------------- */

static bool swp_mpa_has_block(int rev, uint8_t flags)
{
    /* RFC 6581 7.1: the IRD/ORD words exist in revision 2 frames that carry
     * the enhanced flag (siw parses them only then, too). */
    return rev == SWP_MPA_REV2 && (flags & SWP_MPA_FLAG_ENH);
}

int swp_mpa_build_rr(uint8_t *out, size_t outlen, bool reply, int rev,
                     uint8_t flags, uint16_t ird_word, uint16_t ord_word,
                     const void *pd, uint16_t pd_len)
{
    struct swp_mpa_rr *h = (struct swp_mpa_rr *)out;
    uint32_t block = swp_mpa_has_block(rev, flags) ? SWP_MPA_V2_BLOCK_LEN : 0;
    uint32_t total_pd = block + pd_len;

    if (rev != SWP_MPA_REV1 && rev != SWP_MPA_REV2)
        return -EINVAL;
    if (pd_len && !pd)
        return -EINVAL;
    if (total_pd > SWP_MPA_MAX_PD)          /* RFC 5044 7.1: at most 512 */
        return -EMSGSIZE;
    if (outlen < SWP_MPA_RR_HDR_LEN + total_pd)
        return -ENOSPC;
    if (!reply)
        flags &= (uint8_t)~SWP_MPA_FLAG_R;  /* R exists in replies only */

    memcpy(h->key, reply ? SWP_MPA_KEY_REP : SWP_MPA_KEY_REQ, SWP_MPA_KEY_LEN);
    h->flags = flags;
    h->rev = (uint8_t)rev;
    swp_put16(h->pd_len, (uint16_t)total_pd);
    if (block) {
        struct swp_mpa_v2_ird_ord *b = (void *)(out + SWP_MPA_RR_HDR_LEN);
        swp_put16(b->ird, ird_word);
        swp_put16(b->ord, ord_word);
    }
    if (pd_len)
        memcpy(out + SWP_MPA_RR_HDR_LEN + block, pd, pd_len);
    return (int)(SWP_MPA_RR_HDR_LEN + total_pd);
}

int swp_mpa_parse_rr_hdr(const uint8_t *in, size_t len, bool reply)
{
    const struct swp_mpa_rr *h = (const struct swp_mpa_rr *)in;
    uint16_t pd_len;

    if (len < SWP_MPA_RR_HDR_LEN)
        return -EAGAIN;
    /* RFC 5044 7.1: a frame with the wrong key is not an MPA frame. */
    if (memcmp(h->key, reply ? SWP_MPA_KEY_REP : SWP_MPA_KEY_REQ, SWP_MPA_KEY_LEN))
        return -EPROTO;
    pd_len = swp_get16(h->pd_len);
    if (pd_len > SWP_MPA_MAX_PD)            /* RFC 5044 7.1 */
        return -EMSGSIZE;
    return (int)(SWP_MPA_RR_HDR_LEN + pd_len);
}

static int swp_mpa_rtr_from_words(uint16_t ird_word, uint16_t ord_word)
{
    int rtr = 0;

    /* RFC 6581 7.1.1: B (IRD word) = zero-length Send; C and D (ORD word) =
     * zero-length RDMA Write and RDMA Read. */
    if (ird_word & SWP_MPA_V2_IRD_SEND_RTR)
        rtr |= SIWARP_RTR_SEND;
    if (ord_word & SWP_MPA_V2_ORD_WRITE_RTR)
        rtr |= SIWARP_RTR_WRITE;
    if (ord_word & SWP_MPA_V2_ORD_READ_RTR)
        rtr |= SIWARP_RTR_READ;
    return rtr;
}

static void swp_mpa_rtr_to_words(int rtr, bool p2p, uint16_t *ird_word, uint16_t *ord_word)
{
    if (p2p)
        *ird_word |= SWP_MPA_V2_IRD_P2P;
    if (rtr & SIWARP_RTR_SEND)
        *ird_word |= SWP_MPA_V2_IRD_SEND_RTR;
    if (rtr & SIWARP_RTR_WRITE)
        *ord_word |= SWP_MPA_V2_ORD_WRITE_RTR;
    if (rtr & SIWARP_RTR_READ)
        *ord_word |= SWP_MPA_V2_ORD_READ_RTR;
}

int swp_mpa_parse_rr(const uint8_t *in, size_t len, bool reply,
                     struct swp_mpa_rr_info *info)
{
    const struct swp_mpa_rr *h = (const struct swp_mpa_rr *)in;
    int total = swp_mpa_parse_rr_hdr(in, len, reply);
    uint32_t off = SWP_MPA_RR_HDR_LEN;
    uint16_t pd_len;

    if (total == -EAGAIN)
        return -EPROTO;                     /* short frame */
    if (total < 0)
        return total;
    if ((size_t)total != len)
        return -EPROTO;

    memset(info, 0, sizeof(*info));
    info->reply = reply;
    info->rev = h->rev;
    info->flags = h->flags;
    /* RFC 5044 7.1: rev 1; RFC 6581 7.1: rev 2.  Anything else cannot
     * interoperate: the receiver closes the connection. */
    if (h->rev != SWP_MPA_REV1 && h->rev != SWP_MPA_REV2)
        return -EPROTONOSUPPORT;
    info->markers = !!(h->flags & SWP_MPA_FLAG_M);
    info->crc = !!(h->flags & SWP_MPA_FLAG_C);
    info->reject = reply && (h->flags & SWP_MPA_FLAG_R);
    info->enhanced = swp_mpa_has_block(h->rev, h->flags);

    /* siwarp signalling in the reserved bits (see mpa.h). */
    if ((h->flags & SWP_MPA_SIWARP_BITS) == SWP_MPA_RFC7306_OFFER) {
        /* a request: the RFC 7306 offer; a reply: siw echoing it */
        if (!reply) {
            info->siwarp = info->rfc7306 = true;
            info->big_class = (h->flags & SWP_MPA_BIG_MASK) >> SWP_MPA_BIG_SHIFT;
        }
    } else if (reply) {
        if (h->flags & SWP_MPA_SIWARP_REPLY) {
            info->siwarp = true;
            info->big_class = (h->flags & SWP_MPA_BIG_MASK) >> SWP_MPA_BIG_SHIFT;
        }
    } else if (!(h->flags & SWP_MPA_SIWARP_REPLY)) {
        info->big_class = (h->flags & SWP_MPA_BIG_MASK) >> SWP_MPA_BIG_SHIFT;
        info->siwarp = info->big_class != 0;
    }

    pd_len = swp_get16(h->pd_len);
    if (info->enhanced) {
        const struct swp_mpa_v2_ird_ord *b = (const void *)(in + off);
        uint16_t iw, ow;

        if (pd_len < SWP_MPA_V2_BLOCK_LEN)  /* RFC 6581 7.1: block is mandatory */
            return -EPROTO;
        iw = swp_get16(b->ird);
        ow = swp_get16(b->ord);
        info->ird = iw & SWP_MPA_V2_IRD_ORD_MASK;
        info->ord = ow & SWP_MPA_V2_IRD_ORD_MASK;
        info->p2p = !!(iw & SWP_MPA_V2_IRD_P2P);
        info->rtr = swp_mpa_rtr_from_words(iw, ow);
        off += SWP_MPA_V2_BLOCK_LEN;
        pd_len -= SWP_MPA_V2_BLOCK_LEN;
    }
    info->pd = in + off;
    info->pd_len = pd_len;
    return 0;
}

/* ---- big FPDUs between siwarp peers ------------------------------------------ */

uint32_t swp_mpa_big_limit(unsigned cls)
{
    /* class 1..5: 2 KiB .. 32 KiB; 6 and 7: the 16-bit maximum */
    if (cls == 0)
        return 0;
    if (cls >= 6)
        return SWP_MPA_ULPDU_MAX;
    return 1024u << cls;
}

unsigned swp_mpa_big_class(uint32_t bytes)
{
    unsigned k;

    for (k = 6; k > 0; k--)
        if (swp_mpa_big_limit(k) <= bytes)
            return k;
    return 0;
}

/* ---- MULPDU and markers ----------------------------------------------------- */

uint32_t swp_mpa_mulpdu(uint32_t mss, bool markers, bool crc)
{
    uint32_t overhead, mulpdu;

    (void)crc;      /* RFC 5044 4.1: the CRC field is always present */
    if (mss < 64)
        mss = SWP_MPA_DEFAULT_MSS;
    /* RFC 5044 (MULPDU from EMSS): EMSS minus 2 octets ULPDU_Length, 4 CRC,
     * the pad that keeps the FPDU 4-aligned (EMSS mod 4) and, with markers,
     * 4 octets per 512 octets of segment (rounded up). */
    overhead = SWP_MPA_HDR_LEN + SWP_MPA_CRC_LEN + (mss & 3u);
    if (markers)
        overhead += SWP_MPA_MARKER_LEN *
                    ((mss + SWP_MPA_MARKER_PERIOD - 1) / SWP_MPA_MARKER_PERIOD);
    mulpdu = mss - overhead;
    return mulpdu > SWP_MPA_ULPDU_MAX ? SWP_MPA_ULPDU_MAX : mulpdu;
}

uint64_t swp_mpa_marker_next(uint64_t stream_off)
{
    /* RFC 5044 4.3: a marker every 512 octets of the FPDU stream, counted
     * from the first octet of the first FPDU (offset 0).  Returns the stream
     * offset of the first marker at or after stream_off. */
    return (stream_off + SWP_MPA_MARKER_PERIOD - 1) & ~(uint64_t)(SWP_MPA_MARKER_PERIOD - 1);
}

/* ---- negotiation -------------------------------------------------------------- */

void swp_mpa_param_fixup(struct siwarp_conn_param *p)
{
    if (p->mpa_rev == 0)
        p->mpa_rev = SWP_MPA_REV2;
    if (p->timeout_ms <= 0)
        p->timeout_ms = SWP_MPA_DEFAULT_TIMEOUT_MS;
    if (p->ird > SWP_MPA_IRD_ORD_MAX)
        p->ird = SWP_MPA_IRD_ORD_MAX;
    if (p->ord > SWP_MPA_IRD_ORD_MAX)
        p->ord = SWP_MPA_IRD_ORD_MAX;
    if (p->private_data_len && !p->private_data)
        p->private_data_len = 0;
}

static uint16_t swp_min16(uint16_t a, uint16_t b) { return a < b ? a : b; }

/* What an initiator offers: the Read RTR whenever it is allowed.  It is the
 * only RTR with an answer, so the initiator learns when the responder reads
 * FPDUs (stock siw 6.1 can leave the first FPDU after its Reply unread, and
 * picks Write if offered); Chelsio and irdma expect Read too. */
static int swp_mpa_initiator_rtr(int rtr)
{
    if (!rtr || (rtr & SIWARP_RTR_READ))
        return SIWARP_RTR_READ;
    return rtr;
}

int swp_mpa_build_request(uint8_t *out, size_t outlen, const struct siwarp_conn_param *p)
{
    uint8_t flags = 0;
    uint16_t iw = 0, ow = 0;
    int rev = p->mpa_rev ? p->mpa_rev : SWP_MPA_REV2;

    if (p->markers)
        flags |= SWP_MPA_FLAG_M;
    if (p->crc)
        flags |= SWP_MPA_FLAG_C;
    if (rev == SWP_MPA_REV2) {
        int rtr = swp_mpa_initiator_rtr(p->rtr);

        flags |= SWP_MPA_FLAG_ENH;
        iw = p->ird & SWP_MPA_V2_IRD_ORD_MASK;
        ow = p->ord & SWP_MPA_V2_IRD_ORD_MASK;
        /* RFC 6581 7.1.1: P2P with the RTR types the initiator can send */
        if (p->p2p)
            swp_mpa_rtr_to_words(rtr, true, &iw, &ow);
    }
    if (p->big_fpdu && !p->markers)
        flags |= (uint8_t)(swp_mpa_big_class(p->big_fpdu) << SWP_MPA_BIG_SHIFT);
    if (p->rfc7306 > 0)
        flags |= SWP_MPA_RFC7306_OFFER;     /* class 7: we take any ULPDU */
    return swp_mpa_build_rr(out, outlen, false, rev, flags, iw, ow,
                            p->private_data, p->private_data_len);
}

/* RTR preference of a responder: Write needs nothing from us, Read costs a
 * zero-length Read Response, Send consumes a posted receive. */
static int swp_mpa_pick_rtr(int offered, int accepted)
{
    static const int order[] = { SIWARP_RTR_WRITE, SIWARP_RTR_READ, SIWARP_RTR_SEND };

    for (unsigned i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        if (offered & accepted & order[i])
            return order[i];
    return 0;
}

static void swp_mpa_nego_common(struct swp_nego *nego, const struct siwarp_conn_param *ours,
                                const struct swp_mpa_rr_info *peer, uint32_t mss)
{
    uint32_t base = ours->mulpdu ? ours->mulpdu : swp_mpa_mulpdu(mss, nego->markers_tx, nego->crc);

    if (base > SWP_MPA_ULPDU_MAX)
        base = SWP_MPA_ULPDU_MAX;
    nego->mulpdu = base;
    /* Anything a standard peer may legally send (MULPDU is its own choice). */
    nego->max_rx_ulpdu = SWP_MPA_ULPDU_MAX;
    nego->peer_is_siwarp = peer->siwarp;
    if (peer->siwarp && !nego->markers_tx && !nego->markers_rx && ours->big_fpdu) {
        /* an initiator that offered RFC 7306 announced class 7 */
        uint32_t mine = nego->initiator && ours->rfc7306 > 0
                            ? SWP_MPA_ULPDU_MAX
                            : swp_mpa_big_limit(swp_mpa_big_class(ours->big_fpdu));
        uint32_t theirs = swp_mpa_big_limit(peer->big_class);

        if (mine)
            nego->max_rx_ulpdu = mine;      /* what we told the peer */
        if (theirs) {
            uint32_t send = theirs < ours->big_fpdu ? theirs : ours->big_fpdu;
            if (send > nego->mulpdu)
                nego->mulpdu = send;
        }
    }
    /* A siwarp peer that announced a class takes ULPDUs up to that size and
     * no more, whatever our MSS or big_fpdu would allow. */
    if (peer->siwarp && !nego->markers_tx && !nego->markers_rx) {
        uint32_t theirs = swp_mpa_big_limit(peer->big_class);

        if (theirs && nego->mulpdu > theirs)
            nego->mulpdu = theirs;
    }
    memcpy(nego->peer_pd, peer->pd, peer->pd_len);
    nego->peer_pd_len = peer->pd_len;
}

int swp_mpa_nego_responder(const struct siwarp_conn_param *ours,
                           const struct swp_mpa_rr_info *req, uint32_t mss,
                           struct swp_nego *nego, bool *send_reject, const char **why)
{
    int our_rev = ours->mpa_rev ? ours->mpa_rev : SWP_MPA_REV2;

    memset(nego, 0, sizeof(*nego));
    *send_reject = false;
    /* RFC 5044 7.1: a revision we cannot speak closes the connection.  A
     * rev 2 responder answers rev 1 in rev 1 (RFC 6581 section 9, siw does). */
    if (req->rev > our_rev) {
        *why = "request revision not supported";
        return -EPROTONOSUPPORT;
    }
    nego->mpa_rev = req->rev;
    nego->initiator = false;
    /* RFC 5044 7.1: M says "send me markers", each direction on its own: a
     * peer that demands them gets them; our Reply's M asks for ours. */
    nego->markers_tx = req->markers;
    nego->markers_rx = ours->markers != 0;
    /* RFC 5044 7.1: CRC is used if either side sets C. */
    nego->crc = req->crc || ours->crc;

    if (req->enhanced) {
        /* RFC 6581 7.1.2, lenient: never issue more Reads than the peer can
         * take; our IRD stays what we can serve (the initiator clamps its
         * ORD to it when it reads the Reply). */
        nego->ird = ours->ird & SWP_MPA_V2_IRD_ORD_MASK;
        nego->ord = swp_min16(ours->ord & SWP_MPA_V2_IRD_ORD_MASK, req->ird);
        if (req->p2p) {
            int accepted = ours->rtr ? ours->rtr : (SIWARP_RTR_WRITE | SIWARP_RTR_READ);

            /* RFC 6581 7.1.1: the responder picks exactly one offered RTR
             * type; none acceptable -> refuse the connection. */
            nego->rtr = swp_mpa_pick_rtr(req->rtr, accepted);
            if (!nego->rtr) {
                *send_reject = true;
                *why = "no matching RTR type (LLP error 0x07)";
                return -EPROTO;
            }
            nego->p2p = true;
        }
    } else {
        /* rev 1: no IRD/ORD exchange; the ULP agreed on them out of band */
        nego->ird = ours->ird;
        nego->ord = ours->ord;
    }
    /* mpa.h: a siwarp initiator's offer, accepted unless we refuse it */
    nego->rfc7306 = req->rfc7306 && ours->rfc7306 >= 0;
    swp_mpa_nego_common(nego, ours, req, mss);
    if (req->rfc7306 && !nego->rfc7306)
        nego->peer_is_siwarp = false;   /* our reply will not say siwarp */
    *why = NULL;
    return 0;
}

int swp_mpa_build_reply(uint8_t *out, size_t outlen, const struct swp_nego *nego,
                        const struct swp_mpa_rr_info *req, uint32_t our_big_fpdu,
                        const void *pd, uint16_t pd_len)
{
    uint8_t flags = 0;
    uint16_t iw = 0, ow = 0;

    if (nego->markers_rx)
        flags |= SWP_MPA_FLAG_M;
    if (nego->crc)
        flags |= SWP_MPA_FLAG_C;
    if (req->enhanced) {
        flags |= SWP_MPA_FLAG_ENH;
        iw = nego->ird;
        ow = nego->ord;
        if (nego->p2p)
            swp_mpa_rtr_to_words(nego->rtr, true, &iw, &ow);
    }
    /* a refused RFC 7306 offer gets a plain reply (mpa.h) */
    if (req->siwarp && (!req->rfc7306 || nego->rfc7306)) {
        flags |= SWP_MPA_SIWARP_REPLY;
        if (our_big_fpdu && !nego->markers_tx && !nego->markers_rx)
            flags |= (uint8_t)(swp_mpa_big_class(our_big_fpdu) << SWP_MPA_BIG_SHIFT);
    }
    return swp_mpa_build_rr(out, outlen, true, nego->mpa_rev, flags, iw, ow, pd, pd_len);
}

int swp_mpa_build_reject(uint8_t *out, size_t outlen, const struct swp_mpa_rr_info *req,
                         const struct siwarp_conn_param *ours, const void *pd, uint16_t pd_len)
{
    uint8_t flags = SWP_MPA_FLAG_R;
    uint16_t iw = 0, ow = 0;
    int rev = req->rev == SWP_MPA_REV2 ? SWP_MPA_REV2 : SWP_MPA_REV1;

    if (req->enhanced) {
        flags |= SWP_MPA_FLAG_ENH;
        iw = ours ? (ours->ird & SWP_MPA_V2_IRD_ORD_MASK) : 0;
        ow = ours ? (ours->ord & SWP_MPA_V2_IRD_ORD_MASK) : 0;
    }
    return swp_mpa_build_rr(out, outlen, true, rev, flags, iw, ow, pd, pd_len);
}

int swp_mpa_nego_initiator(const struct siwarp_conn_param *sent,
                           const struct swp_mpa_rr_info *rep, uint32_t mss,
                           struct swp_nego *nego, const char **why)
{
    int rev = sent->mpa_rev ? sent->mpa_rev : SWP_MPA_REV2;

    memset(nego, 0, sizeof(*nego));
    if (rep->reject) {
        *why = "peer rejected the connection (MPA Reply with Reject flag)";
        return -ECONNREFUSED;
    }
    /* RFC 6581 9: a responder may answer a rev 2 Request in rev 1; it may
     * never answer above the revision we asked for. */
    if (rep->rev > rev) {
        *why = "reply revision higher than requested";
        return -EPROTO;
    }
    /* RFC 5044 7.1: M in the Reply asks us for markers; the peer sends us
     * markers because we asked (it would have rejected otherwise). */
    nego->mpa_rev = rep->rev;
    nego->initiator = true;
    nego->markers_tx = rep->markers;
    nego->markers_rx = sent->markers != 0;
    nego->crc = rep->crc || sent->crc;      /* RFC 5044 7.1 */

    if (rep->enhanced) {
        /* RFC 6581 7.1.2, lenient: our ORD never exceeds the peer's IRD */
        nego->ird = sent->ird & SWP_MPA_V2_IRD_ORD_MASK;
        nego->ord = swp_min16(sent->ord & SWP_MPA_V2_IRD_ORD_MASK, rep->ird);
        if (sent->p2p && rep->p2p) {
            int offered = swp_mpa_initiator_rtr(sent->rtr);

            /* RFC 6581 7.1.1: exactly one RTR type, one that we offered */
            if (!rep->rtr || (rep->rtr & (rep->rtr - 1)) || !(rep->rtr & offered)) {
                *why = "reply RTR type not one of those offered (LLP error 0x07)";
                return -EPROTO;
            }
            nego->p2p = true;
            nego->rtr = rep->rtr;
        } else if (!sent->p2p && rep->p2p) {
            *why = "peer-to-peer mode in reply but not requested";
            return -EPROTO;
        }
        /* requested P2P, reply without it: the responder expects no RTR */
    } else {
        /* rev 1 (or rev 2 without the enhanced flag): no IRD/ORD words */
        nego->ird = sent->ird;
        nego->ord = sent->ord;
    }
    /* mpa.h: a siwarp reply to our offer accepts RFC 7306 */
    nego->rfc7306 = sent->rfc7306 > 0 && rep->siwarp;
    swp_mpa_nego_common(nego, sent, rep, mss);
    *why = NULL;
    return 0;
}
