/*
 * qp_tx_ops.c - what each outgoing RDMAP message is (RFC 5040 4, RFC 5041
 * 5): a Send or Write WQE cut into DDP segments, a Read Request, a Read
 * Response answering the peer's oldest Read, and the RFC 6581 peer-to-peer
 * start-up (the RTR and, toward a stock siw responder, the zero-length
 * Write that nudges it).  swp_tx_fill picks what goes next, in the order
 * the RFCs require; qp_tx.c frames and writes it.
 */
#include <string.h>
#include <sys/uio.h>

#include "qp_tx.h"
#include "read_hint.h"

/* iovecs for bytes [off, off + len) of a WQE's payload: its inline copy,
 * or its SGL (checked when the WR was posted) */
SWP_HOT
static uint32_t tx_gather(struct siwarp_qp *qp, const struct swp_swqe *w, uint64_t off,
                          uint32_t len, struct iovec *iov, uint32_t max)
{
    int n;

    if (w->inline_buf) {
        iov[0].iov_base = w->inline_buf + off;
        iov[0].iov_len = len;
        return len ? 1 : 0;
    }
    n = swp_sgl_iov(qp, w->sge, w->num_sge, off, len, iov, NULL, max, true);
    return n > 0 ? (uint32_t)n : 0;   /* -E2BIG cannot be: num_sge <= max, checked at post */
}

/* One FPDU of a Send or Write WQE.  Returns false when out of room. */
SWP_HOT
static bool tx_segment(struct siwarp_qp *qp, struct swp_swqe *w)
{
    bool tagged = w->opcode == SIWARP_WR_WRITE;
    uint32_t hdrlen = tagged ? SWP_HDR_TAGGED : SWP_HDR_UNTAGGED;
    uint64_t left = w->len - w->sent;
    uint32_t plen = (uint32_t)(left < swp_tx_max_payload(qp, hdrlen) ? left : swp_tx_max_payload(qp, hdrlen));
    struct iovec pl[SWP_MAX_SGE];
    uint32_t npl;
    bool last = w->sent + plen == w->len;
    uint8_t *h;

    if (!swp_tx_room(qp, plen, w->num_sge + 1))
        return false;
    npl = tx_gather(qp, w, w->sent, plen, pl, SWP_MAX_SGE);
    h = swp_tx_fpdu_hdr(&qp->tx);
    if (tagged) {
        swp_ddp_build_tagged(h + SWP_MPA_HDR_LEN, SWP_OP_WRITE, last, w->rkey,
                             w->raddr + w->sent);
    } else {
        swp_ddp_build_untagged(h + SWP_MPA_HDR_LEN, swp_tx_send_op(w->opcode), last,
                               SWP_QN_SEND, qp->tx_msn[SWP_QN_SEND], (uint32_t)w->sent,
                               swp_tx_send_inv(w->opcode) ? w->inv_stag : 0);
    }
    swp_tx_fpdu(qp, h, hdrlen, pl, npl, plen);
    w->sent += plen;
    if (last) {
        if (!tagged)
            qp->tx_msn[SWP_QN_SEND]++;
        w->segmented = true;
        w->done_at = qp->tx.queued;
    }
    return true;
}

/* RFC 5040 4.4: the Read Request, untagged on queue 1. */
static bool tx_read_req(struct siwarp_qp *qp, uint32_t sink_stag, uint64_t sink_to,
                        uint32_t len, uint32_t src_stag, uint64_t src_to)
{
    uint8_t *h;
    struct swp_rdmap_read_req *rr;

    if (!swp_tx_room(qp, 0, 0) || swp_ring_count(&qp->orqr) > qp->orqr.mask)
        return false;
    h = swp_tx_fpdu_hdr(&qp->tx);
    swp_ddp_build_untagged(h + SWP_MPA_HDR_LEN, SWP_OP_READ_REQ, true, SWP_QN_READ_REQ,
                           qp->tx_msn[SWP_QN_READ_REQ]++, 0, 0);
    rr = (struct swp_rdmap_read_req *)(h + SWP_MPA_HDR_LEN + SWP_HDR_UNTAGGED);
    swp_put32(rr->sink_stag, sink_stag);
    swp_put64(rr->sink_to, sink_to);
    swp_put32(rr->size, len);
    swp_put32(rr->src_stag, src_stag);
    swp_put64(rr->src_to, src_to);
    swp_tx_fpdu(qp, h, SWP_HDR_READ_REQ, NULL, 0, 0);
    return true;
}


/* The P2P start-up (RFC 6581 6) on a timer, every SWP_RTR_RETRY_MS:
 * - held work must not wait forever: a responder that never gets the RTR,
 *   or an initiator whose Read RTR is never answered, fails the QP once the
 *   MPA timeout (conn_param.timeout_ms) has passed (nothing is in flight, so
 *   TCP's own timers would never fire);
 * - stock siw 6.1 as responder may leave the RTR unread in its socket until
 *   more bytes arrive (shared/siw-vm/README): toward a non-siwarp peer the
 *   initiator sends a zero-length RDMA Write -- it names no buffer, places
 *   nothing and needs no ORD slot (RFC 5040: no STag is validated for a
 *   zero-length Write) -- until the Read RTR is answered, or for a Write
 *   RTR (which has no answer) until any byte came from the peer. */
static bool tx_rtr_nudge_due(const struct siwarp_qp *qp)
{
    return qp->nego.initiator && !qp->nego.peer_is_siwarp && qp->rtr_retries < SWP_RTR_RETRIES &&
           (qp->nego.rtr == SIWARP_RTR_READ ? qp->rtr_wait_resp : qp->rx.stream_off == 0);
}

static void tx_rtr_tick(struct swp_timer *t)
{
    struct siwarp_qp *qp = swp_container_of(t, struct siwarp_qp, rtr_timer);
    bool held = qp->rtr_wait_rx || qp->rtr_wait_resp;
    bool nudge = tx_rtr_nudge_due(qp);

    if (qp->state != SIWARP_QPS_RTS || (!held && !nudge))
        return;
    if (held && swp_now_ns() >= qp->rtr_deadline_ns) {
        swp_qp_fatal(qp, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_NO_MATCHING_RTR), NULL, 0,
                     -ETIMEDOUT, "peer-to-peer start-up: %s within %d ms",
                     qp->rtr_wait_rx ? "no RTR from the peer" : "Read RTR not answered",
                     qp->cm.param.timeout_ms > 0 ? qp->cm.param.timeout_ms : SWP_RTR_TIMEOUT_MS);
        return;
    }
    swp_timer_arm(qp->ctx, &qp->rtr_timer, SWP_RTR_RETRY_MS, tx_rtr_tick);
    if (nudge && !qp->rtr_pending_tx) {
        qp->rtr_retries++;
        SWP_DBG("qp %p: RTR unanswered after %d ms, nudging", (void *)qp,
                qp->rtr_retries * SWP_RTR_RETRY_MS);
        qp->rtr_nudge = true;
        swp_tx_progress(qp);
    }
}

/* Start-up is over once nothing is held and no nudge is due: the timer
 * goes at once rather than at its next tick.  An armed timer sends every
 * progress call through epoll_wait (swp_progress_direct steps aside for
 * timers), and a responder's timer used to stay armed for the first
 * 100 ms of every connection: 0 B and 1 B MPI ping-pongs measured in that
 * window were 15-25% slower than later ones. */
void swp_tx_rtr_settle(struct siwarp_qp *qp)
{
    if (!qp->rtr_pending_tx && !qp->rtr_wait_rx && !qp->rtr_wait_resp &&
        !tx_rtr_nudge_due(qp))
        swp_timer_cancel(&qp->rtr_timer);
}

void swp_tx_rtr_start(struct siwarp_qp *qp)
{
    int ms = qp->cm.param.timeout_ms > 0 ? qp->cm.param.timeout_ms : SWP_RTR_TIMEOUT_MS;

    if (!qp->rtr_pending_tx && !qp->rtr_wait_rx)
        return;
    qp->rtr_deadline_ns = swp_now_ns() + (uint64_t)ms * 1000000ull;
    swp_timer_arm(qp->ctx, &qp->rtr_timer, SWP_RTR_RETRY_MS, tx_rtr_tick);
}

/* A zero-length tagged RDMA Write (STag 0): the Write RTR and the nudge. */
static bool tx_zero_write(struct siwarp_qp *qp)
{
    uint8_t *h;

    if (!swp_tx_room(qp, 0, 0))
        return false;
    h = swp_tx_fpdu_hdr(&qp->tx);
    swp_ddp_build_tagged(h + SWP_MPA_HDR_LEN, SWP_OP_WRITE, true, 0, 0);
    swp_tx_fpdu(qp, h, SWP_HDR_TAGGED, NULL, 0, 0);
    return true;
}

/* P2P ready-to-receive (RFC 6581 6): a zero-length Write, Read or Send. */
static bool tx_rtr(struct siwarp_qp *qp)
{
    uint8_t *h;

    if (qp->nego.rtr == SIWARP_RTR_READ) {
        if (!tx_read_req(qp, 0, 0, 0, 0, 0))
            return false;
        qp->orq[qp->orqr.tail++ & qp->orqr.mask] = SWP_ORQ_RTR;
        /* the response proves the peer reads FPDUs: nothing else goes out
         * before it (RFC 6581 6 lets the initiator wait) -- unless the peer
         * is siwarp, which reads every FPDU as it arrives.  Only the
         * responder must wait for the RTR; holding the initiator's first
         * message for the response cost it a round trip, which on an
         * oversubscribed node is a wait for the peer to be scheduled. */
        qp->rtr_wait_resp = !qp->nego.peer_is_siwarp;
        return true;
    }
    if (qp->nego.rtr == SIWARP_RTR_WRITE)
        return tx_zero_write(qp);
    /* the zero-length Send RTR */
    if (!swp_tx_room(qp, 0, 0))
        return false;
    h = swp_tx_fpdu_hdr(&qp->tx);
    swp_ddp_build_untagged(h + SWP_MPA_HDR_LEN, SWP_OP_SEND, true, SWP_QN_SEND,
                           qp->tx_msn[SWP_QN_SEND]++, 0, 0);
    swp_tx_fpdu(qp, h, SWP_HDR_UNTAGGED, NULL, 0, 0);
    return true;
}

/* One Read Response FPDU for the oldest inbound Read (RFC 5040 4.5). */
static bool tx_read_resp(struct siwarp_qp *qp, struct swp_irqe *r)
{
    uint32_t left = r->len - r->sent;
    uint32_t plen = left < swp_tx_max_payload(qp, SWP_HDR_TAGGED) ? left
                                                              : swp_tx_max_payload(qp, SWP_HDR_TAGGED);
    struct iovec pl;
    uint32_t pcrc, op;
    uint8_t *h;

    if (!swp_tx_room(qp, plen, 1))
        return false;
    if (r->sent == 0)
        SWP_TL(SWP_TL_TX_READ_RESP, r->len);
    h = swp_tx_fpdu_hdr(&qp->tx);
    swp_ddp_build_tagged(h + SWP_MPA_HDR_LEN, SWP_OP_READ_RESP, plen == left, r->sink_stag,
                         r->sink_to + r->sent);
    pl.iov_base = plen ? r->src + r->sent : NULL;   /* a zero-length Read has no source */
    pl.iov_len = plen;
    if (r->hint && swp_read_hint_crc(r, r->sent, plen, &pcrc, &op)) {
        swp_tx_fpdu_crc(qp, h, SWP_HDR_TAGGED, &pl, plen, pcrc, op);
        qp->ctx->hint_segs_used++;
    } else {
        swp_tx_fpdu(qp, h, SWP_HDR_TAGGED, &pl, plen ? 1 : 0, plen);
    }
    r->sent += plen;
    if (r->sent == r->len) {
        r->done_at = qp->tx.queued;
        if (r->hint)
            swp_read_hint_retire(r);
        qp->irqr.head++;
    }
    return true;
}

SWP_HOT
void swp_tx_fill(struct siwarp_qp *qp)
{
    if (qp->term_pending) {
        /* a Terminate is the last FPDU of the stream (RFC 5040 5.5) */
        uint8_t *h;
        if (!swp_tx_room(qp, 0, 0))
            return;
        h = swp_tx_fpdu_hdr(&qp->tx);
        memcpy(h + SWP_MPA_HDR_LEN, qp->term_msg, qp->term_len);
        qp->tx.hdrs_used += qp->term_len > SWP_HDR_MAX ? qp->term_len - SWP_HDR_MAX : 0;
        swp_tx_fpdu(qp, h, qp->term_len, NULL, 0, 0);
        qp->term_pending = false;
        return;
    }
    if (qp->state != SIWARP_QPS_RTS && qp->state != SIWARP_QPS_CLOSING)
        return;
    if (qp->rtr_pending_tx) {
        if (!tx_rtr(qp))
            return;
        qp->rtr_pending_tx = false;
        swp_tx_rtr_settle(qp);      /* a Write or Send RTR toward siwarp: done */
    }
    if (qp->rtr_nudge && !(qp->sq_cur != qp->sqr.tail &&
                           qp->sq[qp->sq_cur & qp->sqr.mask].sent &&
                           !qp->sq[qp->sq_cur & qp->sqr.mask].segmented)) {
        /* between messages only, never inside one */
        if (!tx_zero_write(qp))
            return;
        qp->rtr_nudge = false;
    }
    for (;;) {
        /* Read Responses first, at message boundaries of the SQ */
        struct swp_swqe *w = qp->sq_cur != qp->sqr.tail ? &qp->sq[qp->sq_cur & qp->sqr.mask] : NULL;
        bool mid_msg = w && w->sent && !w->segmented;

        if (!mid_msg && swp_ring_count(&qp->irqr)) {
            struct swp_irqe *r = &qp->irq[qp->irqr.head & qp->irqr.mask];
            if (!(r->atomic ? swp_tx_atomic_resp(qp, r) : tx_read_resp(qp, r)))
                return;
            continue;
        }
        /* P2P responder: nothing of ours goes out before the peer's RTR;
         * initiator: nothing before the Read RTR is answered */
        if (qp->rtr_wait_rx || qp->rtr_wait_resp || !w)
            return;
        if (swp_wr_awaits_response(w->opcode)) {
            /* RFC 5040 6.4 / verbs read fence, and the negotiated ORD,
             * which bounds Reads and RFC 7306 atomics together */
            if (swp_ring_count(&qp->orqr) >= qp->nego.ord || qp->nego.ord == 0)
                return;
            if (w->opcode == SIWARP_WR_READ
                    ? !tx_read_req(qp, w->sge[0].lkey, (uintptr_t)w->sge[0].addr,
                                   (uint32_t)w->len, w->rkey, w->raddr)
                    : !swp_tx_atomic_req(qp, w, qp->orqr.tail))
                return;
            qp->orq[qp->orqr.tail++ & qp->orqr.mask] = qp->sq_cur;
            w->segmented = true;
            qp->sq_cur++;
            continue;
        }
        if ((w->flags & SIWARP_SEND_FENCE) && !w->sent && swp_ring_count(&qp->orqr))
            return;
        if (!(swp_wr_is_ext(w->opcode) ? swp_tx_imm(qp, w) : tx_segment(qp, w)))
            return;
        if (w->segmented)
            qp->sq_cur++;
    }
}
