/*
 * qp_tx.c - the transmit engine: frames what qp_tx_ops.c puts out (send
 * WQEs, inbound Read Requests, the P2P RTR) and Terminates into MPA FPDUs
 * (RFC 5044 4) and writes them with one sendmsg per batch.  Payload is
 * never copied: the iovec points at the application's registered memory,
 * headers, pads, CRCs and markers live in tx->hdrs.  Partial writes resume
 * from the iovec cursor.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "crc32c.h"
#include "qp_tx.h"

uint32_t swp_fpdu_wire_len(uint32_t ulpdu_len, bool crc)
{
    /* RFC 5044 4.1: the CRC field is always present; zero when CRC is off */
    (void)crc;
    return SWP_MPA_HDR_LEN + ulpdu_len + swp_mpa_pad(ulpdu_len) + SWP_MPA_CRC_LEN;
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
    uint8_t *m = swp_tx_space(tx, SWP_MPA_MARKER_LEN);

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

/* Emit one FPDU: ULPDU_Length, header (already at h + 2), payload pieces,
 * pad, CRC (RFC 5044 4.1 - 4.4).  known, if not NULL, is the payload's
 * CRC32c and x^(8 plen) mod P (read_hint.c): the payload is then not
 * read.  CRC32c being linear, the CRC of header || payload is the
 * header's shifted over the payload (times x^(8 plen)) plus the
 * payload's; the pad is folded in as usual.  Never with markers, which
 * the CRC covers too (siwarp_qp_read_hint refuses them). */
SWP_HOT
static void tx_fpdu(struct siwarp_qp *qp, uint8_t *h, uint32_t hdrlen, const struct iovec *pl,
                    uint32_t npl, uint32_t plen, const uint32_t known[2])
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
        uint8_t *c = swp_tx_space(tx, plen + pad);
        for (uint32_t i = 0; i < npl; i++) {
            memcpy(c, pl[i].iov_base, pl[i].iov_len);
            c += pl[i].iov_len;
        }
        memset(c, 0, pad);
        /* one CRC pass over the whole FPDU up to its CRC field */
        tx_emit(qp, h, SWP_MPA_HDR_LEN + hdrlen + plen + pad, true);
    } else {
        tx_emit(qp, h, SWP_MPA_HDR_LEN + hdrlen, true);
        if (known && qp->nego.crc && !qp->nego.markers_tx)
            tx->crc = swp_crc_multmodp(known[1], tx->crc) ^ known[0];
        else
            known = NULL;
        for (uint32_t i = 0; i < npl; i++)
            tx_emit(qp, pl[i].iov_base, pl[i].iov_len, !known);
        if (pad) {
            t = swp_tx_space(tx, pad);
            memset(t, 0, pad);
            tx_emit(qp, t, pad, true);
        }
    }
    t = swp_tx_space(tx, SWP_MPA_CRC_LEN);
    /* RFC 5044 4.4: CRC32c of everything before it; zero if not negotiated */
    swp_mpa_put_crc(t, qp->nego.crc ? tx->crc : 0);
    tx_emit(qp, t, SWP_MPA_CRC_LEN, false);
}

SWP_HOT
void swp_tx_fpdu(struct siwarp_qp *qp, uint8_t *h, uint32_t hdrlen,
                    const struct iovec *pl, uint32_t npl, uint32_t plen)
{
    tx_fpdu(qp, h, hdrlen, pl, npl, plen, NULL);
}

SWP_HOT
void swp_tx_fpdu_crc(struct siwarp_qp *qp, uint8_t *h, uint32_t hdrlen, const struct iovec *pl,
                     uint32_t plen, uint32_t pcrc, uint32_t op)
{
    const uint32_t known[2] = { pcrc, op };

    tx_fpdu(qp, h, hdrlen, pl, 1, plen, known);
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
    swp_tx_fill(qp);
    return 0;
}

/* Slide the unwritten rest of the batch to the front of iov[] and hdrs[],
 * so swp_tx_fill can append behind it.  The live header bytes are contiguous:
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

    if (tx->tail || tx->pending >= swp_tx_batch_cap(tx) || qp->state != SIWARP_QPS_RTS)
        return;
    uint64_t before = tx->queued;

    tx_compact(tx);
    swp_tx_fill(qp);
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
            swp_tx_fill(qp);
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
        if (n > 0)
            SWP_TL(SWP_TL_TX_WRITE, n);
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
        qp->ctx->moved += (uint64_t)n;
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
        if (tx->pending == 0)
            swp_tx_batch_written(tx);
        while (qp->irq_wr != qp->irqr.head &&
               qp->irq[qp->irq_wr & qp->irqr.mask].done_at <= tx->written)
            qp->irq_wr++;
        swp_sq_retire(qp);
    }
}

/* The largest payload swp_tx_direct_send copies behind its header: the
 * whole FPDU (pad and CRC included) fits one SWP_TX_LINEAR_MAX write, as
 * the general path would have copied it anyway.  Larger ones are
 * gathered. */
#define SWP_TX_DIRECT_MAX \
    (SWP_TX_LINEAR_MAX - SWP_MPA_HDR_LEN - SWP_HDR_UNTAGGED - 3 - SWP_MPA_CRC_LEN)

/* Is the QP's transmit side idle, so that a Send posted now is the next
 * FPDU of the stream and nothing can come between it and the socket? */
static bool tx_idle(const struct siwarp_qp *qp)
{
    return qp->state == SIWARP_QPS_RTS && qp->pl.fd >= 0 && !swp_tx_has_work(qp) &&
           !qp->tx.tail && !qp->nego.markers_tx && !qp->rtr_wait_rx && !qp->rtr_wait_resp;
}

/*
 * A lone Send or RDMA Write of one FPDU posted on an idle QP: framed
 * straight into the header area and written by one send() (or, past
 * SWP_TX_DIRECT_MAX, gathered by one sendmsg), without a WQE -- every hop
 * of an MPI ping-pong, a UCX put_short, a UCX active message.  The general path (post a
 * WQE, swp_tx_fill picks it, tx_segment frames it, the write loop retires
 * it) ran ~1,500 instructions from siwarp_post_send to send() here.  The
 * frame is the one the general path builds: one FPDU, Last set; for a
 * Send untagged, QN 0, the next MSN, MO 0 (RFC 5041 5.1-5.3), for a Write
 * tagged with the sink STag and tagged offset (RFC 5041 5.2, RFC 5040
 * 4.3); pad and CRC (RFC 5044 4.1-4.4).  Returns 0, having changed
 * nothing, when the WR is not such a message or anything is waiting (then
 * the general path decides, errors included).  A short write:
 * tx_direct_write.
 * Returns 0 (not taken), 1 (taken; its completion is queued or due), or 2
 * (taken and complete, no completion queued: SIWARP_SEND_COMPLETE_AT_POST).
 */
/* The frame of a direct post is on its way: account for it in the stream
 * and write it (iov[0..niov), total octets).  If the socket takes less
 * than all, the rest is kept in a buffer of its own -- the caller's
 * buffers are free when the post returns -- and becomes the engine's
 * pending batch behind a WQE, fully segmented, that completes once it is
 * written, as any other.  A socket error shows again on the engine's
 * write, which fails the QP. */
SWP_HOT
static int tx_direct_write(struct siwarp_qp *qp, const struct siwarp_send_wr *wr, uint64_t len,
                           const struct iovec *iov, int niov, uint32_t total)
{
    struct swp_tx *tx = &qp->tx;
    struct swp_swqe *w;
    uint8_t *rest;
    size_t skip, off = 0;
    ssize_t n;

    if (wr->opcode != SIWARP_WR_WRITE)
        qp->tx_msn[SWP_QN_SEND]++;     /* RFC 5041 5.3: untagged queue 0's MSN */
    qp->tx_epoch = qp->ctx->epoch;
    qp->tx_held = 0;
    tx->fpdu_start = tx->stream_off;
    tx->stream_off += total;
    tx->queued += total;
    do {
        if (niov == 1) {
            n = send(qp->pl.fd, iov[0].iov_base, total, MSG_NOSIGNAL | MSG_DONTWAIT);
        } else {
            struct msghdr msg = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)niov };
            n = sendmsg(qp->pl.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
    } while (n < 0 && errno == EINTR);
    SWP_TL(SWP_TL_TX_DIRECT, n);
    if (n == (ssize_t)total) {
        tx->written += total;
        qp->ctx->moved += total;
        if (wr->send_flags & SIWARP_SEND_COMPLETE_AT_POST)
            return 2;
        if ((wr->send_flags & SIWARP_SEND_SIGNALED) || qp->init.sq_sig_all)
            swp_sq_complete_now(qp, wr->wr_id, wr->opcode, (uint32_t)len);
        return 1;
    }

    n = n > 0 ? n : 0;
    rest = malloc(total - (size_t)n);
    if (!rest) {
        /* part of an FPDU is on the stream and the rest cannot be kept */
        swp_qp_conn_failed(qp, -ENOMEM, "no memory for the rest of a frame");
        return 1;
    }
    skip = (size_t)n;
    for (int i = 0; i < niov; i++) {
        size_t l = iov[i].iov_len;
        if (skip >= l) {
            skip -= l;
            continue;
        }
        memcpy(rest + off, (const uint8_t *)iov[i].iov_base + skip, l - skip);
        off += l - skip;
        skip = 0;
    }
    w = &qp->sq[qp->sqr.tail & qp->sqr.mask];
    memset(w, 0, sizeof(*w));
    w->sge = w->sge_inline;
    w->wr_id = wr->wr_id;
    w->opcode = wr->opcode;
    w->flags = wr->send_flags;
    w->inv_stag = wr->invalidate_stag;
    w->len = w->sent = len;
    w->segmented = true;
    w->done_at = tx->queued;
    w->inline_buf = rest;              /* freed when the WQE retires */
    qp->sqr.tail++;
    qp->sq_cur = qp->sqr.tail;
    tx->written += (uint64_t)n;
    qp->ctx->moved += (uint64_t)n;
    tx->iov[0].iov_base = rest;
    tx->iov[0].iov_len = total - (size_t)n;
    tx->niov = 1;
    tx->iov_done = 0;
    tx->pending = total - (uint64_t)n;
    tx->hdrs_used = 0;
    swp_tx_progress(qp);
    return 1;
}

SWP_HOT
int swp_tx_direct_send(struct siwarp_qp *qp, const struct siwarp_send_wr *wr)
{
    struct siwarp_ctx *ctx = qp->ctx;
    bool tagged = wr->opcode == SIWARP_WR_WRITE;
    uint32_t hdrlen = tagged ? SWP_HDR_TAGGED : SWP_HDR_UNTAGGED;
    struct iovec iov[SWP_MAX_SGE + 2];
    uint64_t len = 0;
    uint32_t ulpdu, pad, crc;
    uint8_t *f = qp->tx.hdrs, *c;
    int niov = 0;

    if (wr->opcode > SIWARP_WR_WRITE || wr->num_sge < 0 ||
        (uint32_t)wr->num_sge > qp->init.max_sge || wr->num_sge > SWP_MAX_SGE ||
        (wr->num_sge && !wr->sg_list) || !tx_idle(qp))
        return 0;
    /* RFC 5040 6.4 / verbs: a fenced Send waits for the Reads before it.
     * A posted Read keeps its WQE in the SQ (not idle) until answered; the
     * P2P RTR's Read (RFC 6581 6) sits in the ORQ without one. */
    if ((wr->send_flags & SIWARP_SEND_FENCE) && swp_ring_count(&qp->orqr))
        return 0;
    /* a second post before progress ran (or SIWARP_SEND_HOLD, which
     * siwarp_post_send makes look like one): swp_tx_post may hold it back */
    if (qp->init.tx_coalesce && qp->tx_epoch == ctx->epoch)
        return 0;
    for (int i = 0; i < wr->num_sge; i++)
        len += wr->sg_list[i].length;
    if (len > swp_tx_max_payload(qp, hdrlen) ||
        ((wr->send_flags & SIWARP_SEND_INLINE) && len > qp->init.max_inline))
        return 0;
    if (!(wr->send_flags & (SIWARP_SEND_INLINE | SIWARP_SEND_UNREGISTERED))) {
        for (int i = 0; i < wr->num_sge; i++)
            if (wr->sg_list[i].length &&
                swp_mem_check_local(ctx, qp->pd, &wr->sg_list[i], 0) < 0)
                return 0;
    }

    ulpdu = hdrlen + (uint32_t)len;
    pad = swp_mpa_pad(ulpdu);
    swp_put16(f, (uint16_t)ulpdu);
    if (tagged) {
        /* RFC 5040 4.3: one tagged DDP segment, last flag set, placed at
         * the peer's STag and tagged offset */
        swp_ddp_build_tagged(f + SWP_MPA_HDR_LEN, SWP_OP_WRITE, true, wr->rdma.rkey,
                             wr->rdma.remote_addr);
    } else {
        swp_ddp_build_untagged(f + SWP_MPA_HDR_LEN, swp_tx_send_op(wr->opcode), true,
                               SWP_QN_SEND, qp->tx_msn[SWP_QN_SEND], 0,
                               swp_tx_send_inv(wr->opcode) ? wr->invalidate_stag : 0);
    }
    c = f + SWP_MPA_HDR_LEN + hdrlen;
    /* RFC 5044 4.4: CRC32c of everything before the CRC field; zero if not
     * negotiated. */
    if (len > SWP_TX_DIRECT_MAX) {
        /* Too big to copy behind the header (the general path would copy
         * an INLINE payload into a buffer of its own, then read it again
         * for the CRC): the CRC reads the caller's bytes where they are,
         * and one sendmsg gathers header, payload, pad and CRC. */
        crc = qp->nego.crc ? swp_crc32c(0, f, (size_t)(c - f)) : 0;
        iov[niov].iov_base = f;
        iov[niov++].iov_len = (size_t)(c - f);
        for (int i = 0; i < wr->num_sge; i++) {
            if (!wr->sg_list[i].length)
                continue;
            if (qp->nego.crc)
                crc = swp_crc32c(crc, wr->sg_list[i].addr, wr->sg_list[i].length);
            iov[niov].iov_base = wr->sg_list[i].addr;
            iov[niov++].iov_len = wr->sg_list[i].length;
        }
        memset(c, 0, pad);
        if (qp->nego.crc)
            crc = swp_crc32c(crc, c, pad);
        swp_mpa_put_crc(c + pad, crc);
        iov[niov].iov_base = c;
        iov[niov++].iov_len = pad + SWP_MPA_CRC_LEN;
        return tx_direct_write(qp, wr, len, iov, niov,
                               SWP_MPA_HDR_LEN + ulpdu + pad + SWP_MPA_CRC_LEN);
    }
    /* A payload past SWP_TX_COPY_MAX is copied by the CRC pass itself (one
     * read of the application's bytes); a smaller one is copied first and
     * the whole frame checked in one call, cheaper than three. */
    if (qp->nego.crc && len > SWP_TX_COPY_MAX) {
        crc = swp_crc32c(0, f, (size_t)(c - f));
        for (int i = 0; i < wr->num_sge; i++) {
            if (wr->sg_list[i].length)
                crc = swp_crc32c_copy(crc, c, wr->sg_list[i].addr, wr->sg_list[i].length);
            c += wr->sg_list[i].length;
        }
        memset(c, 0, pad);
        crc = swp_crc32c(crc, c, pad);
        c += pad;
    } else {
        for (int i = 0; i < wr->num_sge; i++) {
            if (wr->sg_list[i].length)
                memcpy(c, wr->sg_list[i].addr, wr->sg_list[i].length);
            c += wr->sg_list[i].length;
        }
        memset(c, 0, pad);
        c += pad;
        crc = qp->nego.crc ? swp_crc32c(0, f, (size_t)(c - f)) : 0;
    }
    swp_mpa_put_crc(c, crc);
    iov[0].iov_base = f;
    iov[0].iov_len = (size_t)(c - f) + SWP_MPA_CRC_LEN;
    return tx_direct_write(qp, wr, len, iov, 1, (uint32_t)iov[0].iov_len);
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

/* siwarp_qp_send_goes_now: a post now reaches swp_tx_progress (or the
 * direct path) with nothing ahead of it.  The markers the direct path
 * does not frame are no reason to wait: the general path writes them. */
bool swp_tx_goes_now(const struct siwarp_qp *qp)
{
    return qp->state == SIWARP_QPS_RTS && qp->pl.fd >= 0 && !swp_tx_has_work(qp) &&
           !qp->tx.tail && !qp->rtr_wait_rx && !qp->rtr_wait_resp &&
           (!qp->init.tx_coalesce || qp->tx_epoch != qp->ctx->epoch);
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
