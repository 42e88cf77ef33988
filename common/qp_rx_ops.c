/*
 * qp_rx_ops.c - what each received RDMAP message means (RFC 5040 4, RFC
 * 5041 5): for every opcode, the header check that picks the segment's
 * target before a byte of payload is placed (a posted receive, a tagged
 * buffer named by its STag, the requester's Read sink, or a receive
 * handler in place), and the completion once its CRC was verified.
 * qp_rx.c's engine frames the byte stream into FPDUs and calls these
 * through swp_rx_ops[].  None of them reads the socket, except
 * rx_hdr_send through swp_rx_stage_rest (a Send a read cut).
 */
#include <stdlib.h>
#include <string.h>

#include "read_hint.h"
#include "swp.h"

/* the longest Send handed to a receive handler in place at any alignment
 * (rx_hdr_send); longer ones only 8-aligned */
#define SWP_RX_INLINE_UNALIGNED_MAX 2048

/* ---- header handlers: validate, choose the target ---------------------------- */

static const struct swp_ddp_untagged_hdr *rx_uhdr(const struct swp_rx *rx)
{
    return (const struct swp_ddp_untagged_hdr *)(rx->hdr + SWP_MPA_HDR_LEN);
}

static const struct swp_ddp_tagged_hdr *rx_thdr(const struct swp_rx *rx)
{
    return (const struct swp_ddp_tagged_hdr *)(rx->hdr + SWP_MPA_HDR_LEN);
}

/* RFC 5041 5.3 / 7.2: queue number, then MSN, checked for every untagged
 * segment in that order. */
SWP_HOT
uint32_t swp_rx_check_untagged(struct siwarp_qp *qp, unsigned qn_expected)
{
    const struct swp_ddp_untagged_hdr *u = rx_uhdr(&qp->rx);
    uint32_t qn = swp_get32(u->qn);

    if (qn != qn_expected)
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_INV_QN);
    if (swp_get32(u->msn) != qp->rx.msn[qn])
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_MSN_RANGE);
    return 0;
}

static uint32_t rx_hdr_write(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;
    const struct swp_ddp_tagged_hdr *t = rx_thdr(rx);
    uint8_t *dst = NULL;
    uint32_t term;

    rx->place_niov = 0;
    if (rx->seg_len == 0)      /* zero-length Write: nothing to place, no STag */
        return 0;
    term = swp_mem_check_remote(qp->ctx, qp->pd, swp_get32(t->stag), swp_get64(t->to),
                                rx->seg_len, SIWARP_ACCESS_REMOTE_WRITE, SWP_TERM_LAYER_DDP, &dst);
    if (term)
        return term;
    swp_rx_place_one(qp, dst, rx->seg_len, swp_get32(t->stag));
    return 0;
}

static uint32_t rx_hdr_read_resp(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;
    const struct swp_ddp_tagged_hdr *t = rx_thdr(rx);
    uint32_t idx, stag = swp_get32(t->stag);
    uint64_t to = swp_get64(t->to);
    struct swp_swqe *w;

    /* RFC 5040 4.5: a Read Response answers the oldest outstanding Read */
    if (!swp_ring_count(&qp->orqr))
        return SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_UNEXP_OPCODE);
    idx = qp->orq[qp->orqr.head & qp->orqr.mask];
    rx->place_niov = 0;
    if (idx == SWP_ORQ_RTR)
        return rx->seg_len == 0 ? 0
                                : SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_TAGGED, SWP_DDP_EC_T_BASE_BOUNDS);
    w = &qp->sq[idx & qp->sqr.mask];
    if (w->opcode != SIWARP_WR_READ)       /* RFC 7306: an atomic is answered */
        return SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_UNEXP_OPCODE);
    if (rx->seg_len == 0 && w->len == 0)
        return 0;
    if (stag != w->sge[0].lkey)
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_TAGGED, SWP_DDP_EC_T_INV_STAG);
    /* The sink is named by the first SGE's STag and address; the message
     * continues through the WR's SGL at rising offsets (RFC 5040 4.5:
     * Read Response segments carry the sink TO of each byte). */
    if (to != (uintptr_t)w->sge[0].addr + w->sent || w->sent + rx->seg_len > w->len)
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_TAGGED, SWP_DDP_EC_T_BASE_BOUNDS);
    if (swp_rx_place_sgl(qp, w->sge, w->num_sge, w->sent, rx->seg_len, false) < 0)
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_TAGGED, SWP_DDP_EC_T_INV_STAG);
    return 0;
}

SWP_HOT
static uint32_t rx_hdr_send(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;
    const struct swp_ddp_untagged_hdr *u = rx_uhdr(rx);
    uint32_t term = swp_rx_check_untagged(qp, SWP_QN_SEND);
    uint32_t mo = swp_get32(u->mo);
    struct swp_rwqe *w;

    if (term)
        return term;
    rx->place_niov = 0;
    if (swp_rx_is_rtr(qp, SIWARP_RTR_SEND) && mo == 0)
        return 0;               /* RFC 6581 6: a zero-length Send RTR uses no buffer */
    /* RFC 5041 7.2: no buffer for this MSN (an empty RQ, or an empty SRQ at
     * a message's first segment) */
    w = swp_recv_wqe_peek(qp);
    if (!w)
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_NO_BUF);
    /* TCP delivers in order, so segments of a message arrive at rising,
     * contiguous offsets */
    if (mo != rx->recv_got)
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_INV_MO);
    if ((uint64_t)mo + rx->seg_len > w->len)
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_TOO_LONG);
    /* A whole message (MO 0, L set) whose payload and trailer sit in this
     * read (or are read behind it now) goes to the recv CQ's handler where
     * it lies, as if placed in the buffer just checked and the buffer given
     * back at once: the buffer stays posted.  The CRC is checked before the
     * handler sees a byte (swp_rx_fpdu_done), as a CQ entry would wait for
     * it.  Never with markers: they may sit inside the payload. */
    if (qp->rcq->recv_fn && mo == 0 && rx->last && rx->seg_len <= qp->rcq->recv_max &&
        !qp->nego.markers_rx) {
        uint32_t rest = rx->seg_len + swp_mpa_pad(rx->ulpdu_len) + SWP_MPA_CRC_LEN;
        /* A longer one that lies unaligned goes to the buffer: a consumer
         * that reads headers in place (the BTL) would copy it to align it,
         * and that copy plus the CRC pass here cost more than the copy to
         * the buffer with the CRC folded in.  One cut by the read is
         * aligned as it moves. */
        bool aligned = ((uintptr_t)rx->inl & 7) == 0 || rx->seg_len <= SWP_RX_INLINE_UNALIGNED_MAX;
        if (rx->inl_avail >= rest ? aligned : swp_rx_stage_rest(qp, rest)) {
            rx->cur_inline = true;
            return 0;
        }
    }
    if (swp_rx_place_sgl(qp, w->sge, w->num_sge, mo, rx->seg_len, w->mr_gen == qp->ctx->mr_gen) < 0) {
        /* the application deregistered a buffer it had posted: a local
         * protection error, reported to the peer as a catastrophic one */
        return SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_CATASTROPHIC, SWP_RDMAP_EC_CATA_STREAM);
    }
    swp_recv_wqe_take(qp);
    rx->cur_is_recv = true;
    return 0;
}

static uint32_t rx_hdr_read_req(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;
    const struct swp_ddp_untagged_hdr *u = rx_uhdr(rx);
    const struct swp_rdmap_read_req *rr =
        (const struct swp_rdmap_read_req *)(rx->hdr + SWP_MPA_HDR_LEN + SWP_HDR_UNTAGGED);
    uint32_t term = swp_rx_check_untagged(qp, SWP_QN_READ_REQ);
    uint32_t size = swp_get32(rr->size);
    uint8_t *src = NULL;

    if (term)
        return term;
    rx->place_niov = 0;
    /* RFC 5040 4.4: a Read Request is one whole segment at offset 0 */
    if (swp_get32(u->mo) != 0)
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_INV_MO);
    if (!rx->last || rx->seg_len != 0)
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_TOO_LONG);
    /* RFC 5040 6.5: more outstanding Reads than the IRD we advertised */
    if (swp_irq_outstanding(qp) >= qp->nego.ird || swp_irq_outstanding(qp) > qp->irqr.mask)
        return SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_CATA_STREAM);
    if (size) {
        term = swp_mem_check_remote(qp->ctx, qp->pd, swp_get32(rr->src_stag),
                                    swp_get64(rr->src_to), size, SIWARP_ACCESS_REMOTE_READ,
                                    SWP_TERM_LAYER_RDMAP, &src);
        if (term)
            return term;
    }
    return 0;
}

static uint32_t rx_hdr_term(struct siwarp_qp *qp)
{
    uint32_t term = swp_rx_check_untagged(qp, SWP_QN_TERMINATE);

    qp->rx.place_niov = 0;
    if (term)
        return term;
    if (qp->rx.seg_len > SWP_TERM_MAX_LEN - SWP_HDR_TERMINATE)
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_TOO_LONG);
    return 0;
}

/* ---- segment completion (after the CRC was verified) ------------------------- */

static void rx_done_write(struct siwarp_qp *qp)
{
    if (swp_rx_is_rtr(qp, SIWARP_RTR_WRITE) && qp->rtr_wait_rx) {
        qp->rtr_wait_rx = false;
        swp_tx_rtr_settle(qp);
    }
}

static void rx_done_read_resp(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;
    uint32_t idx = qp->orq[qp->orqr.head & qp->orqr.mask];
    struct swp_swqe *w;

    if (idx == SWP_ORQ_RTR) {
        if (rx->last) {
            qp->orqr.head++;
            if (qp->rtr_wait_resp) {
                qp->rtr_wait_resp = false;
                swp_tx_rtr_settle(qp);
            }
        }
        return;
    }
    w = &qp->sq[idx & qp->sqr.mask];
    w->sent += rx->seg_len;
    if (!rx->last)
        return;
    if (w->sent != w->len) {
        /* a short Read Response: the peer ended the message early */
        w->status = SIWARP_WC_REM_OP_ERR;
    }
    w->complete = true;
    SWP_TL(SWP_TL_RX_READ_DONE, w->len);
    qp->orqr.head++;
    swp_sq_retire(qp);
}

/* A received message to its consumer: the recv CQ's handler (in order
 * with every other message, whether it lies in staging or in a WQE), or
 * the CQ itself. */
SWP_HOT
void swp_rx_deliver(struct siwarp_qp *qp, const struct siwarp_wc *wc, const uint8_t *data)
{
    struct siwarp_cq *cq = qp->rcq;

    if (!cq->recv_fn || wc->status != SIWARP_WC_SUCCESS) {
        swp_cq_push(cq, wc);
        return;
    }
    qp->ctx->in_recv_handler++;
    cq->recv_fn(cq->recv_arg, wc, data);
    qp->ctx->in_recv_handler--;
}

/* ---- the first Send, verified before anything else is taken ------------------ */

/* Only a whole plain Send (no Invalidate: that would act on our STags) of
 * at most verify_max octets, into the QP's own buffer; everything else is
 * refused before a byte is placed. */
uint32_t swp_rx_verify_hdr(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;
    uint32_t term;

    if (rx->op != SWP_OP_SEND && rx->op != SWP_OP_SEND_SE)
        return SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_PROT, SWP_RDMAP_EC_ACCESS);
    term = swp_rx_check_untagged(qp, SWP_QN_SEND);
    if (term)
        return term;
    if (swp_get32(rx_uhdr(rx)->mo) != 0 || !rx->last || rx->seg_len > qp->verify_max)
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_TOO_LONG);
    swp_rx_place_one(qp, qp->verify_buf, rx->seg_len, 0);
    rx->cur_verify = true;
    return 0;
}

/* The Send to verify is in, its CRC checked: the application's verdict. */
static void rx_done_verify(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;

    rx->cur_verify = false;
    qp->rx.msn[SWP_QN_SEND]++;
    swp_timer_cancel(&qp->verify_timer);
    if (qp->verify_fn(qp->verify_arg, qp, qp->verify_buf, rx->seg_len) != 0) {
        swp_qp_fatal(qp, SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_PROT,
                                  SWP_RDMAP_EC_ACCESS),
                     rx->hdr, SWP_MPA_HDR_LEN + SWP_HDR_UNTAGGED, -EACCES,
                     "the peer's first Send failed verification");
        return;
    }
    qp->verify_pending = false;
}

SWP_HOT
static void rx_done_send(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;
    const struct swp_ddp_untagged_hdr *u = rx_uhdr(rx);
    struct siwarp_wc wc;
    unsigned op = rx->op;
    bool inl = rx->cur_inline;

    SWP_TL(SWP_TL_RX_SEND, rx->copied);
    if (rx->cur_verify) {
        rx_done_verify(qp);
        return;
    }

    if (!rx->cur_is_recv && !inl) {  /* the zero-length Send RTR */
        qp->rx.msn[SWP_QN_SEND]++;
        qp->rtr_wait_rx = false;
        swp_tx_rtr_settle(qp);
        return;
    }
    rx->recv_got += rx->seg_len;
    if (!rx->last)
        return;
    memset(&wc, 0, sizeof(wc));
    wc.opcode = SIWARP_WC_RECV;
    wc.status = SIWARP_WC_SUCCESS;
    wc.byte_len = rx->recv_got;
    wc.qp = qp;
    if (op == SWP_OP_SEND_SE || op == SWP_OP_SEND_SE_INV)
        wc.wc_flags |= SIWARP_WC_SOLICITED;
    if (inl) {
        wc.wc_flags |= SIWARP_WC_INLINE;
    } else {
        wc.wr_id = swp_recv_wqe_peek(qp)->wr_id;
        swp_recv_wqe_done(qp);
    }
    qp->rx.msn[SWP_QN_SEND]++;
    rx->recv_got = 0;
    rx->cur_is_recv = false;
    rx->cur_inline = false;
    if (op == SWP_OP_SEND_INV || op == SWP_OP_SEND_SE_INV) {
        /* RFC 5040 6.2: invalidate when the message is delivered */
        uint32_t stag = swp_get32(u->inv_stag);
        uint32_t term = swp_mem_invalidate_remote(qp->ctx, qp->pd, stag);
        if (term) {
            wc.status = SIWARP_WC_REM_OP_ERR;
            wc.vendor_err = term;
            swp_cq_push(qp->rcq, &wc);
            swp_qp_fatal(qp, term, rx->hdr, SWP_MPA_HDR_LEN + SWP_HDR_UNTAGGED, -EPROTO,
                         "peer asked to invalidate STag 0x%08x, which cannot be invalidated", stag);
            return;
        }
        wc.wc_flags |= SIWARP_WC_WITH_INV;
        wc.invalidated_stag = stag;
    }
    swp_rx_deliver(qp, &wc, inl ? rx->inl : NULL);
}

static void rx_done_read_req(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;
    const struct swp_rdmap_read_req *rr =
        (const struct swp_rdmap_read_req *)(rx->hdr + SWP_MPA_HDR_LEN + SWP_HDR_UNTAGGED);
    struct swp_irqe *r = &qp->irq[qp->irqr.tail & qp->irqr.mask];
    uint32_t size = swp_get32(rr->size);
    uint32_t term;

    SWP_TL(SWP_TL_RX_READ_REQ, size);
    qp->rx.msn[SWP_QN_READ_REQ]++;
    if (swp_rx_is_rtr(qp, SIWARP_RTR_READ) && size == 0 && qp->rtr_wait_rx) {
        qp->rtr_wait_rx = false;     /* answered below with a zero-length response */
        swp_tx_rtr_settle(qp);
    }
    r->atomic = false;          /* ring slots are not zeroed (qp.c) */
    r->sink_stag = swp_get32(rr->sink_stag);
    r->sink_to = swp_get64(rr->sink_to);
    r->len = size;
    r->sent = 0;
    r->src = NULL;
    r->hint = NULL;
    if (size) {
        /* checked by rx_hdr_read_req, looked up again: the region may have
         * gone while the CRC was still on its way (RFC 5040 7.2) */
        term = swp_mem_check_remote(qp->ctx, qp->pd, swp_get32(rr->src_stag),
                                    swp_get64(rr->src_to), size, SIWARP_ACCESS_REMOTE_READ,
                                    SWP_TERM_LAYER_RDMAP, &r->src);
        if (term) {
            swp_qp_fatal(qp, term, qp->rx.hdr, SWP_MPA_HDR_LEN + SWP_HDR_READ_REQ, -EPROTO,
                         "Read Request: its source STag 0x%08x went before the request was "
                         "whole", swp_get32(rr->src_stag));
            return;
        }
        if (qp->read_hint)
            swp_read_hint_take(qp, r, swp_get32(rr->src_stag), swp_get64(rr->src_to), size);
    }
    qp->irqr.tail++;
}

static void rx_done_term(struct siwarp_qp *qp)
{
    uint32_t term = 0;

    swp_rdmap_parse_term(qp->rx.hdr + SWP_MPA_HDR_LEN, SWP_HDR_TERMINATE, &term);
    qp->rx.msn[SWP_QN_TERMINATE]++;
    swp_qp_term_received(qp, term);
}

/* Opcode table: header check and completion per RDMAP opcode. */
const struct swp_rx_op swp_rx_ops[SWP_OP_MAX] = {
    [SWP_OP_WRITE]       = { rx_hdr_write,     rx_done_write },
    [SWP_OP_READ_REQ]    = { rx_hdr_read_req,  rx_done_read_req },
    [SWP_OP_READ_RESP]   = { rx_hdr_read_resp, rx_done_read_resp },
    [SWP_OP_SEND]        = { rx_hdr_send,      rx_done_send },
    [SWP_OP_SEND_INV]    = { rx_hdr_send,      rx_done_send },
    [SWP_OP_SEND_SE]     = { rx_hdr_send,      rx_done_send },
    [SWP_OP_SEND_SE_INV] = { rx_hdr_send,      rx_done_send },
    [SWP_OP_TERMINATE]   = { rx_hdr_term,      rx_done_term },
    /* RFC 7306, qp_ext.c */
    [SWP_OP_IMM]         = { swp_rx_hdr_imm,         swp_rx_done_imm },
    [SWP_OP_IMM_SE]      = { swp_rx_hdr_imm,         swp_rx_done_imm },
    [SWP_OP_ATOMIC_REQ]  = { swp_rx_hdr_atomic_req,  swp_rx_done_atomic_req },
    [SWP_OP_ATOMIC_RESP] = { swp_rx_hdr_atomic_resp, swp_rx_done_atomic_resp },
};
