/*
 * qp_tx.c - the transmit engine: turns send WQEs, inbound Read Requests,
 * the P2P RTR and Terminates into MPA FPDUs (RFC 5044 4) and writes them
 * with one sendmsg per batch.  Payload is never copied: the iovec points at
 * the application's registered memory, headers, pads, CRCs and markers live
 * in tx->hdrs.  Partial writes resume from the iovec cursor.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "swp.h"

#define SWP_MARKER_FPDU_CAP 4096   /* payload cap per FPDU when markers are on */
#define SWP_TX_COPY_MAX     256    /* payloads up to this are copied, not gathered */

uint32_t swp_fpdu_wire_len(uint32_t ulpdu_len, bool crc)
{
    /* RFC 5044 4.1: the CRC field is always present; zero when CRC is off */
    (void)crc;
    return SWP_MPA_HDR_LEN + ulpdu_len + swp_mpa_pad(ulpdu_len) + SWP_MPA_CRC_LEN;
}

SWP_HOT
static uint8_t *tx_space(struct swp_tx *tx, uint32_t n)
{
    uint8_t *p;

    if (tx->hdrs_used + n > SWP_TX_HDRS)
        return NULL;
    p = tx->hdrs + tx->hdrs_used;
    tx->hdrs_used += n;
    return p;
}

SWP_HOT
static void tx_iov(struct swp_tx *tx, const void *p, size_t n)
{
    struct iovec *last = tx->niov ? &tx->iov[tx->niov - 1] : NULL;

    if (!n)
        return;
    if (last && (const uint8_t *)last->iov_base + last->iov_len == (const uint8_t *)p) {
        last->iov_len += n;       /* adjacent header bytes merge */
    } else {
        tx->iov[tx->niov].iov_base = (void *)p;
        tx->iov[tx->niov].iov_len = n;
        tx->niov++;
    }
    tx->pending += n;
    tx->queued += n;
}

/* RFC 5044 4.3: a marker sits at every 512th octet of the stream counted
 * from the first FPDU; its FPDUPTR is the distance back to the ULPDU_Length
 * field of the FPDU it falls in (0 when it immediately precedes one). */
static void tx_marker(struct siwarp_qp *qp, uint16_t ptr, bool crc)
{
    struct swp_tx *tx = &qp->tx;
    uint8_t *m = tx_space(tx, SWP_MPA_MARKER_LEN);

    /* space was reserved by the caller's worst-case estimate */
    swp_put16(m, 0);
    swp_put16(m + 2, ptr);
    if (crc)
        tx->crc = swp_crc32c(tx->crc, m, SWP_MPA_MARKER_LEN);
    tx_iov(tx, m, SWP_MPA_MARKER_LEN);
    tx->stream_off += SWP_MPA_MARKER_LEN;
}

SWP_HOT
static void tx_emit(struct siwarp_qp *qp, const uint8_t *p, size_t n, bool crc)
{
    struct swp_tx *tx = &qp->tx;
    bool do_crc = crc && qp->nego.crc;

    if (!qp->nego.markers_tx) {
        if (do_crc)
            tx->crc = swp_crc32c(tx->crc, p, n);
        tx_iov(tx, p, n);
        tx->stream_off += n;
        return;
    }
    while (n) {
        size_t room;
        if (tx->stream_off % SWP_MPA_MARKER_PERIOD == 0)
            tx_marker(qp, (uint16_t)(tx->stream_off - tx->fpdu_start), do_crc);
        room = SWP_MPA_MARKER_PERIOD - tx->stream_off % SWP_MPA_MARKER_PERIOD;
        if (room > n)
            room = n;
        if (do_crc)
            tx->crc = swp_crc32c(tx->crc, p, room);
        tx_iov(tx, p, room);
        tx->stream_off += room;
        p += room;
        n -= room;
    }
}

/*
 * The most bytes one sendmsg gathers now: SWP_TX_BATCH_FIRST after the
 * stream was idle, twice that with each batch written since, up to
 * SWP_TX_BATCH.  Every FPDU's CRC (RFC 5044 4.4) is computed as it joins
 * the batch, before the sendmsg, so a 1 MiB Read Response built as one
 * batch kept the peer waiting for 1 MiB of CRC passes (15 us here) before
 * its first byte: a ping-pong of 1 MiB took 30 us longer with CRC than
 * without.  Small first batches put the first bytes on the wire at once
 * and later CRCs run while the peer reads; a stream that stays busy soon
 * gathers SWP_TX_BATCH again, as sendmsg calls cost.
 */
SWP_HOT
static uint64_t tx_batch_cap(const struct swp_tx *tx)
{
    return (uint64_t)SWP_TX_BATCH_FIRST << tx->ramp;
}

/* Is there room for one more FPDU with this payload and this many pieces? */
SWP_HOT
static bool tx_room(struct siwarp_qp *qp, uint32_t plen, uint32_t pieces)
{
    struct swp_tx *tx = &qp->tx;
    uint32_t markers = qp->nego.markers_tx ? plen / SWP_MPA_MARKER_PERIOD + 3 : 0;
    uint32_t iovs = 3 + pieces + 2 * markers;
    uint32_t bytes = SWP_MPA_HDR_LEN + SWP_HDR_MAX + 3 + SWP_MPA_CRC_LEN +
                     SWP_MPA_MARKER_LEN * markers + (plen <= SWP_TX_COPY_MAX ? plen : 0);

    if (tx->niov && tx->pending >= tx_batch_cap(tx))
        return false;
    return tx->niov + iovs <= SWP_TX_IOV && tx->hdrs_used + bytes <= SWP_TX_HDRS;
}

/* Header space for one FPDU: the caller builds the DDP/RDMAP header at
 * the returned pointer + 2. */
SWP_HOT
static uint8_t *tx_fpdu_hdr(struct swp_tx *tx)
{
    return tx_space(tx, SWP_MPA_HDR_LEN + SWP_HDR_MAX);
}

/* Emit one FPDU: ULPDU_Length, header (already at h + 2), payload pieces,
 * pad, CRC (RFC 5044 4.1 - 4.4). */
SWP_HOT
static void tx_fpdu(struct siwarp_qp *qp, uint8_t *h, uint32_t hdrlen,
                    const struct iovec *pl, uint32_t npl, uint32_t plen)
{
    struct swp_tx *tx = &qp->tx;
    uint32_t ulpdu = hdrlen + plen;
    uint32_t pad = swp_mpa_pad(ulpdu);
    uint8_t *t;

    /* give back the unused part of the header reservation */
    tx->hdrs_used -= SWP_HDR_MAX - hdrlen;
    swp_put16(h, (uint16_t)ulpdu);
    /* A marker that falls where this FPDU starts leads it: FPDUPTR 0, and
     * it is the FPDU's first octets for the CRC (RFC 5044 4.3, 4.4; this is
     * also how Wireshark checks it) */
    tx->crc = 0;
    if (qp->nego.markers_tx && tx->stream_off % SWP_MPA_MARKER_PERIOD == 0)
        tx_marker(qp, 0, qp->nego.crc);
    tx->fpdu_start = tx->stream_off;
    if (!qp->nego.markers_tx && plen <= SWP_TX_COPY_MAX && tx->hdrs_used + plen + 8 <= SWP_TX_HDRS) {
        /* small payload: copy it behind the header so the whole FPDU is one
         * contiguous iovec (cheaper than gathering three).  Not with
         * markers: the marker just emitted at an FPDU start sits in hdrs
         * right behind the header, where the copy must go. */
        uint8_t *c = tx_space(tx, plen + pad);
        for (uint32_t i = 0; i < npl; i++) {
            memcpy(c, pl[i].iov_base, pl[i].iov_len);
            c += pl[i].iov_len;
        }
        memset(c, 0, pad);
        /* one CRC pass over the whole FPDU up to its CRC field */
        tx_emit(qp, h, SWP_MPA_HDR_LEN + hdrlen + plen + pad, true);
    } else {
        tx_emit(qp, h, SWP_MPA_HDR_LEN + hdrlen, true);
        for (uint32_t i = 0; i < npl; i++)
            tx_emit(qp, pl[i].iov_base, pl[i].iov_len, true);
        if (pad) {
            t = tx_space(tx, pad);
            memset(t, 0, pad);
            tx_emit(qp, t, pad, true);
        }
    }
    t = tx_space(tx, SWP_MPA_CRC_LEN);
    /* RFC 5044 4.4: CRC32c of everything before it; zero if not negotiated */
    swp_mpa_put_crc(t, qp->nego.crc ? tx->crc : 0);
    tx_emit(qp, t, SWP_MPA_CRC_LEN, false);
}

/* iovecs for bytes [off, off + len) of a WQE's payload */
SWP_HOT
static uint32_t tx_gather(const struct swp_swqe *w, uint64_t off, uint32_t len,
                          struct iovec *iov, uint32_t max)
{
    uint32_t n = 0;

    if (w->inline_buf) {
        iov[0].iov_base = w->inline_buf + off;
        iov[0].iov_len = len;
        return len ? 1 : 0;
    }
    for (uint32_t i = 0; i < w->num_sge && len && n < max; i++) {
        const struct siwarp_sge *s = &w->sge[i];
        if (off >= s->length) {
            off -= s->length;
            continue;
        }
        uint32_t take = s->length - (uint32_t)off;
        if (take > len)
            take = len;
        iov[n].iov_base = (uint8_t *)s->addr + off;
        iov[n].iov_len = take;
        n++;
        len -= take;
        off = 0;
    }
    return n;
}

static uint32_t tx_max_payload(struct siwarp_qp *qp, uint32_t hdrlen)
{
    uint32_t m = qp->nego.mulpdu - hdrlen;

    if (qp->nego.markers_tx && m > SWP_MARKER_FPDU_CAP)
        m = SWP_MARKER_FPDU_CAP;
    return m;
}

/* One FPDU of a Send or Write WQE.  Returns false when out of room. */
SWP_HOT
static bool tx_segment(struct siwarp_qp *qp, struct swp_swqe *w)
{
    bool tagged = w->opcode == SIWARP_WR_WRITE;
    uint32_t hdrlen = tagged ? SWP_HDR_TAGGED : SWP_HDR_UNTAGGED;
    uint64_t left = w->len - w->sent;
    uint32_t plen = (uint32_t)(left < tx_max_payload(qp, hdrlen) ? left : tx_max_payload(qp, hdrlen));
    struct iovec pl[SWP_MAX_SGE];
    uint32_t npl;
    bool last = w->sent + plen == w->len;
    uint8_t *h;

    if (!tx_room(qp, plen, w->num_sge + 1))
        return false;
    npl = tx_gather(w, w->sent, plen, pl, SWP_MAX_SGE);
    h = tx_fpdu_hdr(&qp->tx);
    if (tagged) {
        swp_ddp_build_tagged(h + SWP_MPA_HDR_LEN, SWP_OP_WRITE, last, w->rkey,
                             w->raddr + w->sent);
    } else {
        static const unsigned ops[] = {
            [SIWARP_WR_SEND] = SWP_OP_SEND, [SIWARP_WR_SEND_SE] = SWP_OP_SEND_SE,
            [SIWARP_WR_SEND_INV] = SWP_OP_SEND_INV, [SIWARP_WR_SEND_SE_INV] = SWP_OP_SEND_SE_INV,
        };
        bool inv = w->opcode == SIWARP_WR_SEND_INV || w->opcode == SIWARP_WR_SEND_SE_INV;
        swp_ddp_build_untagged(h + SWP_MPA_HDR_LEN, ops[w->opcode], last, SWP_QN_SEND,
                               qp->tx_msn[SWP_QN_SEND], (uint32_t)w->sent,
                               inv ? w->inv_stag : 0);
    }
    tx_fpdu(qp, h, hdrlen, pl, npl, plen);
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

    if (!tx_room(qp, 0, 0) || swp_ring_count(&qp->orqr) > qp->orqr.mask)
        return false;
    h = tx_fpdu_hdr(&qp->tx);
    swp_ddp_build_untagged(h + SWP_MPA_HDR_LEN, SWP_OP_READ_REQ, true, SWP_QN_READ_REQ,
                           qp->tx_msn[SWP_QN_READ_REQ]++, 0, 0);
    rr = (struct swp_rdmap_read_req *)(h + SWP_MPA_HDR_LEN + SWP_HDR_UNTAGGED);
    swp_put32(rr->sink_stag, sink_stag);
    swp_put64(rr->sink_to, sink_to);
    swp_put32(rr->size, len);
    swp_put32(rr->src_stag, src_stag);
    swp_put64(rr->src_to, src_to);
    tx_fpdu(qp, h, SWP_HDR_READ_REQ, NULL, 0, 0);
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

    if (!tx_room(qp, 0, 0))
        return false;
    h = tx_fpdu_hdr(&qp->tx);
    swp_ddp_build_tagged(h + SWP_MPA_HDR_LEN, SWP_OP_WRITE, true, 0, 0);
    tx_fpdu(qp, h, SWP_HDR_TAGGED, NULL, 0, 0);
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
    if (!tx_room(qp, 0, 0))
        return false;
    h = tx_fpdu_hdr(&qp->tx);
    swp_ddp_build_untagged(h + SWP_MPA_HDR_LEN, SWP_OP_SEND, true, SWP_QN_SEND,
                           qp->tx_msn[SWP_QN_SEND]++, 0, 0);
    tx_fpdu(qp, h, SWP_HDR_UNTAGGED, NULL, 0, 0);
    return true;
}

/* One Read Response FPDU for the oldest inbound Read (RFC 5040 4.5). */
static bool tx_read_resp(struct siwarp_qp *qp, struct swp_irqe *r)
{
    uint32_t left = r->len - r->sent;
    uint32_t plen = left < tx_max_payload(qp, SWP_HDR_TAGGED) ? left
                                                              : tx_max_payload(qp, SWP_HDR_TAGGED);
    struct iovec pl;
    uint8_t *h;

    if (!tx_room(qp, plen, 1))
        return false;
    h = tx_fpdu_hdr(&qp->tx);
    swp_ddp_build_tagged(h + SWP_MPA_HDR_LEN, SWP_OP_READ_RESP, plen == left, r->sink_stag,
                         r->sink_to + r->sent);
    pl.iov_base = plen ? r->src + r->sent : NULL;   /* a zero-length Read has no source */
    pl.iov_len = plen;
    tx_fpdu(qp, h, SWP_HDR_TAGGED, &pl, plen ? 1 : 0, plen);
    r->sent += plen;
    if (r->sent == r->len) {
        r->done_at = qp->tx.queued;
        qp->irqr.head++;
    }
    return true;
}

SWP_HOT
static void tx_fill(struct siwarp_qp *qp)
{
    if (qp->term_pending) {
        /* a Terminate is the last FPDU of the stream (RFC 5040 5.5) */
        uint8_t *h;
        if (!tx_room(qp, 0, 0))
            return;
        h = tx_fpdu_hdr(&qp->tx);
        memcpy(h + SWP_MPA_HDR_LEN, qp->term_msg, qp->term_len);
        qp->tx.hdrs_used += qp->term_len > SWP_HDR_MAX ? qp->term_len - SWP_HDR_MAX : 0;
        tx_fpdu(qp, h, qp->term_len, NULL, 0, 0);
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
            if (!tx_read_resp(qp, &qp->irq[qp->irqr.head & qp->irqr.mask]))
                return;
            continue;
        }
        /* P2P responder: nothing of ours goes out before the peer's RTR;
         * initiator: nothing before the Read RTR is answered */
        if (qp->rtr_wait_rx || qp->rtr_wait_resp || !w)
            return;
        if (w->opcode == SIWARP_WR_READ) {
            /* RFC 5040 6.4 / verbs read fence, and the negotiated ORD */
            if (swp_ring_count(&qp->orqr) >= qp->nego.ord || qp->nego.ord == 0)
                return;
            if (!tx_read_req(qp, w->sge[0].lkey, (uintptr_t)w->sge[0].addr, (uint32_t)w->len,
                             w->rkey, w->raddr))
                return;
            qp->orq[qp->orqr.tail++ & qp->orqr.mask] = qp->sq_cur;
            w->segmented = true;
            qp->sq_cur++;
            continue;
        }
        if ((w->flags & SIWARP_SEND_FENCE) && !w->sent && swp_ring_count(&qp->orqr))
            return;
        if (!tx_segment(qp, w))
            return;
        if (w->segmented)
            qp->sq_cur++;
    }
}

int swp_tx_queue_terminate(struct siwarp_qp *qp, uint32_t term, const uint8_t *hdr,
                           uint32_t hdr_len)
{
    struct swp_tx *tx = &qp->tx;

    qp->term_len = swp_rdmap_build_term(qp->term_msg, qp->tx_msn[SWP_QN_TERMINATE]++, term,
                                        hdr, hdr_len);
    qp->term_pending = true;
    if (tx->pending) {
        /* An FPDU may be half written: keep the unwritten bytes (copied, as
         * the application owns the memory once its WRs are flushed) so the
         * stream stays framed up to the Terminate. */
        uint8_t *copy = malloc(tx->pending);
        size_t off = 0;
        if (!copy) {
            tx->pending = 0;
            tx->niov = tx->iov_done = 0;
            qp->term_pending = false;
            return -ENOMEM;
        }
        for (uint32_t i = tx->iov_done; i < tx->niov; i++) {
            memcpy(copy + off, tx->iov[i].iov_base, tx->iov[i].iov_len);
            off += tx->iov[i].iov_len;
        }
        free(tx->tail);
        tx->tail = copy;
        tx->niov = 1;
        tx->iov_done = 0;
        tx->iov[0].iov_base = copy;
        tx->iov[0].iov_len = off;
        tx->hdrs_used = 0;
    }
    tx_fill(qp);
    return 0;
}

/* Slide the unwritten rest of the batch to the front of iov[] and hdrs[],
 * so tx_fill can append behind it.  The live header bytes are contiguous:
 * hdrs is filled in stream order, so they run from the lowest hdrs address
 * a live iovec points at to hdrs_used. */
static void tx_compact(struct swp_tx *tx)
{
    uint8_t *lo = tx->hdrs + tx->hdrs_used;
    size_t shift;

    for (uint32_t i = tx->iov_done; i < tx->niov; i++) {
        uint8_t *b = tx->iov[i].iov_base;
        if (b >= tx->hdrs && b < lo)
            lo = b;
    }
    shift = (size_t)(lo - tx->hdrs);
    if (shift) {
        memmove(tx->hdrs, lo, tx->hdrs_used - shift);
        for (uint32_t i = tx->iov_done; i < tx->niov; i++) {
            uint8_t *b = tx->iov[i].iov_base;
            if (b >= lo && b < tx->hdrs + tx->hdrs_used)
                tx->iov[i].iov_base = b - shift;
        }
        tx->hdrs_used -= (uint32_t)shift;
    }
    if (tx->iov_done) {
        memmove(tx->iov, tx->iov + tx->iov_done, (tx->niov - tx->iov_done) * sizeof(tx->iov[0]));
        tx->niov -= tx->iov_done;
        tx->iov_done = 0;
    }
}

/* The socket is full: build the next FPDUs now, while we would only wait.
 * Their CRC32c (RFC 5044 4.4), the sender's one pass over the payload, is
 * then off the critical path instead of stalling the stream once per batch. */
static void tx_top_up(struct siwarp_qp *qp)
{
    struct swp_tx *tx = &qp->tx;

    if (tx->tail || tx->pending >= tx_batch_cap(tx) || qp->state != SIWARP_QPS_RTS)
        return;
    uint64_t before = tx->queued;

    tx_compact(tx);
    tx_fill(qp);
    tx->topped_up += tx->queued - before;
}

/* A batch of at most this many bytes is copied and written with send().
 * On this machine's kernel (6.18) a sendmsg costs about 100 ns more than a
 * send of the same bytes, with one iovec as with four (copy_msghdr_from_user
 * and import_iovec against a single user range): measured on a busy-polled
 * loopback ping-pong from 64 B to 4 KiB, while copying the pieces of a
 * small FPDU into one buffer costs far less.  A ping-pong's every hop is
 * such a batch. */
#define SWP_TX_LINEAR_MAX 2048

/* Write what iov[iov_done..niov) holds: sendmsg's answer, or send()'s for
 * a small batch.  A short write is fine either way: the caller advances the
 * iovecs by what was written, and they still point at the bytes. */
SWP_HOT
static ssize_t tx_write(int fd, struct swp_tx *tx)
{
    const struct iovec *v = &tx->iov[tx->iov_done];
    size_t cnt = tx->niov - tx->iov_done;

    if (cnt == 1)
        return send(fd, v->iov_base, v->iov_len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (tx->pending <= SWP_TX_LINEAR_MAX) {
        uint8_t lin[SWP_TX_LINEAR_MAX];
        size_t off = 0, i;

        /* pending is the sum of these lengths; checked all the same,
         * since a wrong sum would write past lin */
        for (i = 0; i < cnt && off + v[i].iov_len <= sizeof(lin); i++) {
            memcpy(lin + off, v[i].iov_base, v[i].iov_len);
            off += v[i].iov_len;
        }
        if (i == cnt)
            return send(fd, lin, off, MSG_NOSIGNAL | MSG_DONTWAIT);
    }

    struct msghdr msg = { 0 };

    msg.msg_iov = (struct iovec *)v;
    msg.msg_iovlen = cnt > 1024 ? 1024 : cnt;
    return sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static bool tx_drained(struct siwarp_qp *qp)
{
    return qp->tx.pending == 0 && qp->sq_cur == qp->sqr.tail && !swp_ring_count(&qp->irqr) &&
           !swp_ring_count(&qp->orqr);
}

SWP_HOT
int swp_tx_progress(struct siwarp_qp *qp)
{
    struct swp_tx *tx = &qp->tx;

    if (qp->pl.fd < 0)
        return -ENOTCONN;
    for (;;) {
        ssize_t n;

        if (tx->pending == 0) {
            tx->niov = tx->iov_done = 0;
            tx->hdrs_used = 0;
            swp_sq_retire(qp);
            tx_fill(qp);
            if (tx->pending == 0) {
                tx->ramp = 0;
                if (qp->state == SIWARP_QPS_CLOSING && !qp->closing && tx_drained(qp)) {
                    qp->closing = true;
                    shutdown(qp->pl.fd, SHUT_WR);
                }
                if (qp->pl.events & EPOLLOUT)
                    swp_poll_mod(qp->ctx, &qp->pl, EPOLLIN);
                return 0;
            }
        }
        n = tx_write(qp->pl.fd, tx);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                tx_top_up(qp);
                swp_poll_mod(qp->ctx, &qp->pl,
                             (qp->state == SIWARP_QPS_RTS || qp->state == SIWARP_QPS_CLOSING
                                  ? EPOLLIN : 0) | EPOLLOUT);
                return -EAGAIN;
            }
            int err = -errno;
            swp_qp_llp_closed(qp, err, false);
            return err;
        }
        tx->written += (uint64_t)n;
        tx->pending -= (uint64_t)n;
        while (n > 0) {
            struct iovec *v = &tx->iov[tx->iov_done];
            if ((size_t)n >= v->iov_len) {
                n -= (ssize_t)v->iov_len;
                tx->iov_done++;
            } else {
                v->iov_base = (uint8_t *)v->iov_base + n;
                v->iov_len -= (size_t)n;
                n = 0;
            }
        }
        if (tx->pending == 0 && tx->tail) {
            free(tx->tail);
            tx->tail = NULL;
        }
        if (tx->pending == 0 && tx_batch_cap(tx) < SWP_TX_BATCH)
            tx->ramp++;
        while (qp->irq_wr != qp->irqr.head &&
               qp->irq[qp->irq_wr & qp->irqr.mask].done_at <= tx->written)
            qp->irq_wr++;
        swp_sq_retire(qp);
    }
}

/* After a post: write now, or hold the WR back for one sendmsg with its
 * neighbours.  On loopback and veth a sendmsg also runs the receiver's TCP
 * input in the sender's context, so a burst of small Sends written one by
 * one spends most of its time in per-call overhead.  Only the second and
 * later posts between two progress calls are held (a lone post, as in a
 * ping-pong, goes out at once), and never more than init.tx_coalesce:
 * the post after that writes them all. */
SWP_HOT
void swp_tx_post(struct siwarp_qp *qp)
{
    struct siwarp_ctx *ctx = qp->ctx;

    if (qp->init.tx_coalesce && !qp->tx.pending) {
        if (qp->tx_epoch != ctx->epoch) {
            qp->tx_epoch = ctx->epoch;      /* first post since progress ran */
        } else if (++qp->tx_held <= qp->init.tx_coalesce) {
            if (swp_list_empty(&qp->tx_held_link)) {
                /* the first WR held in this context makes the CQ fd
                 * readable: an application that sleeps on it after posting
                 * wakes up, polls, and so flushes (never a hang) */
                if (swp_list_empty(&ctx->tx_held))
                    swp_ctx_kick(ctx);
                swp_list_add_tail(&ctx->tx_held, &qp->tx_held_link);
            }
            return;
        }
    }
    qp->tx_held = 0;
    swp_list_del(&qp->tx_held_link);
    swp_tx_progress(qp);
}

/* Progress: write every held WR (called before the sockets are polled). */
void swp_tx_flush_held(struct siwarp_ctx *ctx)
{
    while (!swp_list_empty(&ctx->tx_held)) {
        struct siwarp_qp *qp = swp_container_of(ctx->tx_held.next, struct siwarp_qp,
                                                tx_held_link);
        swp_list_del(&qp->tx_held_link);
        qp->tx_held = 0;
        if (qp->state == SIWARP_QPS_RTS || qp->state == SIWARP_QPS_CLOSING)
            swp_tx_progress(qp);
    }
}
