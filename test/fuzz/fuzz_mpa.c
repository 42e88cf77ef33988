/*
 * fuzz_mpa.c - libFuzzer harness for MPA Request/Reply parsing and the
 * connection-setup negotiation (mpa.c: swp_mpa_parse_rr_hdr,
 * swp_mpa_parse_rr, swp_mpa_nego_responder / _initiator, the reply and
 * reject builders).
 *
 * Input: two bytes choosing our side's parameters, one byte for the MSS,
 * then the frame.  Bit 0 of the first byte says whether the frame is read
 * as a Request (we are the responder) or as a Reply (we are the initiator).
 *
 * Invariants (abort() = a finding):
 *   - the parsers never read past `len` (ASan) and a parsed frame's private
 *     data lies inside it, at most 512 bytes;
 *   - header and full parser agree on the frame length;
 *   - responder: an accepted Request gives a Reply that parses back, and an
 *     initiator that sent exactly that Request accepts the Reply and agrees
 *     on CRC, markers, P2P and the RTR type; neither side may send ULPDUs
 *     larger than the other accepts, nor issue more Reads than the other's
 *     IRD; a refusal with send_reject gives a parsable Reject;
 *   - initiator: an accepted Reply never enables P2P or markers we did not
 *     ask for, and its RTR is exactly one type we offered.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpa.h"

static void die(const char *what, long v)
{
    fprintf(stderr, "fuzz_mpa: invariant violated: %s (%ld)\n", what, v);
    abort();
}

static void ours_from(uint8_t a, uint8_t b, struct siwarp_conn_param *p)
{
    static const uint32_t big[4] = { 0, 2048, 32768, 65535 };

    siwarp_conn_param_default(p);
    p->mpa_rev = (a & 0x02) ? 1 : 2;
    p->crc = !!(a & 0x04);
    p->markers = !!(a & 0x08);
    p->p2p = !!(a & 0x10);
    p->rtr = (a >> 5) & 7;
    p->ird = (uint16_t)(b & 0x0f) * 5;
    p->ord = (uint16_t)(b >> 4) * 5;
    p->big_fpdu = big[(b >> 2) & 3];
    if (b & 1) {
        p->private_data = "ours";
        p->private_data_len = 4;
    }
    swp_mpa_param_fixup(p);
}

static void check_info(const uint8_t *in, size_t len, const struct swp_mpa_rr_info *ri)
{
    if (ri->pd_len > SWP_MPA_MAX_PD)
        die("private data longer than 512", ri->pd_len);
    if (ri->pd < in || ri->pd + ri->pd_len > in + len)
        die("private data outside the frame", (long)(ri->pd - in));
    if (ri->rev != 1 && ri->rev != 2)
        die("accepted revision", ri->rev);
    if (ri->rtr & ~(SIWARP_RTR_SEND | SIWARP_RTR_WRITE | SIWARP_RTR_READ))
        die("RTR bits", ri->rtr);
    if (ri->ird > SWP_MPA_IRD_ORD_MAX || ri->ord > SWP_MPA_IRD_ORD_MAX)
        die("IRD/ORD over 14 bits", ri->ird);
    if (!ri->enhanced && (ri->p2p || ri->rtr || ri->ird || ri->ord))
        die("IRD/ORD/P2P set without the enhanced block", ri->flags);
}

/* We are the responder and `in` is a Request. */
static void responder(const struct siwarp_conn_param *ours, const uint8_t *in, size_t len,
                      uint32_t mss)
{
    struct swp_mpa_rr_info req, rep;
    struct swp_nego rsp, ini;
    struct siwarp_conn_param sent;
    uint8_t out[SWP_MPA_RR_MAX_LEN];
    const char *why = NULL;
    bool send_reject;
    int rc, n;

    if (swp_mpa_parse_rr(in, len, false, &req) < 0)
        return;
    check_info(in, len, &req);
    if (req.reply || req.reject)
        die("request parsed as reply / reject", req.flags);
    rc = swp_mpa_nego_responder(ours, &req, mss, &rsp, &send_reject, &why);
    if (rc < 0) {
        if (!why)
            die("refusal without a reason", rc);
        if (send_reject) {
            n = swp_mpa_build_reject(out, sizeof(out), &req, ours, "no", 2);
            if (n < 0 || swp_mpa_parse_rr(out, (size_t)n, true, &rep) < 0 || !rep.reject)
                die("reject does not parse back", n);
        }
        return;
    }
    n = swp_mpa_build_reply(out, sizeof(out), &rsp, &req, ours->big_fpdu,
                            ours->private_data, ours->private_data_len);
    if (n < 0)
        die("cannot build the reply to an accepted request", n);
    if (swp_mpa_parse_rr(out, (size_t)n, true, &rep) < 0)
        die("our reply does not parse", n);
    check_info(out, (size_t)n, &rep);
    if (rep.reject)
        die("accepting reply carries Reject", rep.flags);

    /* an initiator that sent exactly this request */
    memset(&sent, 0, sizeof(sent));
    sent.mpa_rev = req.rev;
    sent.crc = req.crc;
    sent.markers = req.markers;
    sent.p2p = req.p2p;
    sent.rtr = req.rtr;
    sent.ird = req.ird;
    sent.ord = req.ord;
    sent.big_fpdu = swp_mpa_big_limit(req.big_class);
    sent.timeout_ms = 1000;
    {
        /* only if a siwarp initiator with these parameters sends these
         * RTR offers (it may narrow them, e.g. to the Read RTR alone) */
        uint8_t again[SWP_MPA_RR_MAX_LEN];
        struct swp_mpa_rr_info r2;
        int m = swp_mpa_build_request(again, sizeof(again), &sent);
        if (m < 0 || swp_mpa_parse_rr(again, (size_t)m, false, &r2) < 0 ||
            r2.rtr != req.rtr || r2.p2p != req.p2p)
            return;
    }
    rc = swp_mpa_nego_initiator(&sent, &rep, mss, &ini, &why);
    if (rc < 0) {
        fprintf(stderr, "initiator refuses the reply: %s\n", why);
        die("initiator refuses the reply to its own request", rc);
    }
    if (ini.crc != rsp.crc || ini.markers_tx != rsp.markers_rx || ini.markers_rx != rsp.markers_tx || ini.p2p != rsp.p2p ||
        ini.rtr != rsp.rtr || ini.mpa_rev != rsp.mpa_rev)
        die("initiator and responder disagree", 0);
    if (rsp.p2p && (!rsp.rtr || (rsp.rtr & (rsp.rtr - 1)) || !(rsp.rtr & req.rtr)))
        die("responder picked an RTR type not offered", rsp.rtr);
    if (ini.mulpdu > rsp.max_rx_ulpdu || rsp.mulpdu > ini.max_rx_ulpdu)
        die("a side may send FPDUs larger than its peer accepts", (long)ini.mulpdu);
    if (ini.mulpdu == 0 || rsp.mulpdu == 0 || ini.mulpdu > SWP_MPA_ULPDU_MAX ||
        rsp.mulpdu > SWP_MPA_ULPDU_MAX)
        die("MULPDU out of range", (long)rsp.mulpdu);
    if (req.enhanced && (ini.ord > rsp.ird || rsp.ord > ini.ird))
        die("ORD above the peer's IRD", ini.ord);
    if (ini.peer_pd_len != ours->private_data_len ||
        (ini.peer_pd_len && memcmp(ini.peer_pd, ours->private_data, ini.peer_pd_len)))
        die("reply private data not delivered intact", ini.peer_pd_len);
    if (rsp.peer_pd_len != req.pd_len ||
        (req.pd_len && memcmp(rsp.peer_pd, req.pd, req.pd_len)))
        die("request private data not delivered intact", rsp.peer_pd_len);
}

/* We are the initiator, `ours` is what we sent, `in` is the Reply. */
static void initiator(const struct siwarp_conn_param *ours, const uint8_t *in, size_t len,
                      uint32_t mss)
{
    struct swp_mpa_rr_info rep;
    struct swp_nego ini;
    const char *why = NULL;
    int offered = 0, rc;
    uint8_t req[SWP_MPA_RR_MAX_LEN];
    struct swp_mpa_rr_info ri;
    int m = swp_mpa_build_request(req, sizeof(req), ours);

    /* what we offered is what our own Request carried */
    if (m > 0 && swp_mpa_parse_rr(req, (size_t)m, false, &ri) == 0)
        offered = ri.rtr;

    if (swp_mpa_parse_rr(in, len, true, &rep) < 0)
        return;
    check_info(in, len, &rep);
    rc = swp_mpa_nego_initiator(ours, &rep, mss, &ini, &why);
    if (rc < 0) {
        if (!why)
            die("refusal without a reason", rc);
        if (rep.reject && rc != -ECONNREFUSED)
            die("Reject not reported as ECONNREFUSED", rc);
        return;
    }
    if (rep.reject)
        die("accepted a Reject", rep.flags);
    if (ini.p2p && !ours->p2p)
        die("P2P enabled without asking", 0);
    /* RFC 5044 7.1: we receive markers exactly when we asked, and send
     * them exactly when the Reply asked */
    if (ini.markers_rx != !!ours->markers)
        die("received markers differ from what we asked", ini.markers_rx);
    if (ini.markers_tx != rep.markers)
        die("sent markers differ from what the Reply asked", ini.markers_tx);
    if (ini.mpa_rev > ours->mpa_rev)
        die("revision above ours", ini.mpa_rev);
    if (ini.p2p && (!ini.rtr || (ini.rtr & (ini.rtr - 1)) || !(ini.rtr & offered)))
        die("RTR not exactly one offered type", ini.rtr);
    if (ini.crc != (rep.crc || ours->crc))
        die("CRC not the OR of both sides", ini.crc);
    if (rep.enhanced && ini.ord > rep.ird)
        die("ORD above the peer's IRD", ini.ord);
    if (ini.mulpdu == 0 || ini.mulpdu > SWP_MPA_ULPDU_MAX || ini.max_rx_ulpdu > SWP_MPA_ULPDU_MAX)
        die("MULPDU out of range", (long)ini.mulpdu);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct siwarp_conn_param ours;
    uint32_t mss;
    int hdr, full;
    struct swp_mpa_rr_info ri;

    if (size < 3)
        return 0;
    ours_from(data[0], data[1], &ours);
    mss = 64u + (uint32_t)data[2] * 256u;   /* up to 65344 (loopback: 65483) */
    bool reply = data[0] & 1;
    data += 3;
    size -= 3;

    /* the header parser and the full parser agree */
    hdr = swp_mpa_parse_rr_hdr(data, size, reply);
    full = swp_mpa_parse_rr(data, size, reply, &ri);
    if (hdr >= 0 && (size_t)hdr == size && full == -EPROTO && !(size >= 18 &&
        data[17] == 2 && (data[16] & SWP_MPA_FLAG_ENH)))
        die("header accepts a frame the full parser calls malformed", hdr);
    if (full == 0 && (hdr < 0 || (size_t)hdr != size))
        die("full parser accepts a frame of another length", hdr);
    if (hdr > (int)SWP_MPA_RR_MAX_LEN)
        die("frame length over 532", hdr);

    if (reply)
        initiator(&ours, data, size, mss);
    else
        responder(&ours, data, size, mss);
    return 0;
}
