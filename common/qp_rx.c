/*
 * qp_rx.c - the receive engine: a resumable FPDU parser (RFC 5044 4) that
 * validates every DDP/RDMAP header (RFC 5041, RFC 5040) before a byte is
 * placed, then places payload straight into the target: from the staging
 * buffer for small segments, or with readv() directly from the socket into
 * the registered buffer for large ones.  Every state lives in struct swp_rx,
 * so the parser can be fed one byte at a time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "swp.h"

/* Segments from this size on are read one readv() each, straight into the
 * target; smaller ones (eager MPI messages, an MSS-sized stream from a
 * peer on a 1500-byte MTU) are staged, 64-256 KiB per recv() (see
 * SWP_RX_STAGE), and copied out, or handed to a receive handler in place.
 * A syscall costs about 1 us on the VMs this runs on, and with CRC on the
 * copy rides on the CRC pass (crc32c-bench: copy+crc within 5% of
 * crc alone), so staging wins up to what staging holds: against 8 KiB,
 * MPI bandwidth rose 70% at 8 KiB, 40-55% at 16 KiB, 20% at 32 KiB (loopback
 * and veth), 48-56 KiB ping-pong latency fell 16%.  With CRC off the copy
 * is a pass of its own and breaks even with a syscall at about 32 KiB
 * (56 KiB staged: bandwidth -5%).  Never with markers: they sit inside the
 * payload. */
#define SWP_RX_BULK_MIN      32768
#define SWP_RX_BULK_MIN_CRC  61440
/* the largest FPDU (up to its CRC) checked in one pass: a 2 KiB payload
 * (the BTL's inline receives) with headers and pad */
#define SWP_RX_CRC_WHOLE_MAX 2304
#define SWP_RX_HDR_MIN    (SWP_MPA_HDR_LEN + (uint32_t)sizeof(struct swp_ctrl))
/* the longest Send handed to a receive handler in place at any alignment
 * (rx_hdr_send); longer ones only 8-aligned */
#define SWP_RX_INLINE_UNALIGNED_MAX 2048

/* reads per progress call, for fairness between QPs (tests lower it) */
int swp_rx_budget = 64;

int swp_rx_init(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;

    if (!qp->ctx->rx_stage) {
        qp->ctx->rx_stage = malloc(SWP_RX_STAGE_SKEW + SWP_RX_STAGE);
        if (!qp->ctx->rx_stage)
            return -ENOMEM;
    }
    memset(rx, 0, sizeof(*rx));
    rx->buf = qp->ctx->rx_stage + SWP_RX_STAGE_SKEW;
    rx->buf_size = SWP_RX_STAGE;
    rx->state = SWP_RX_HDR;
    rx->hdr_want = SWP_RX_HDR_MIN;
    return 0;
}

/* ---- placement targets ------------------------------------------------------ */

static void rx_place_one(struct swp_rx *rx, uint8_t *dst, uint32_t len)
{
    rx->place_iov[0].iov_base = dst;
    rx->place_iov[0].iov_len = len;
    rx->place_niov = len ? 1 : 0;
    rx->place_idx = rx->place_off = 0;
}

/* Target iovecs for bytes [off, off + len) of an SGL, at most max of them.
 * Unless `checked` (a receive WQE checked at post, and no MR deregistered
 * or invalidated since: ctx->mr_gen), each SGE touched is checked again
 * (valid, same PD, local write, bounds): its MR may have gone since the WR
 * was posted.  The number of iovecs, -EACCES, or -E2BIG. */
SWP_HOT
int swp_rx_sgl_iov(struct siwarp_qp *qp, const struct siwarp_sge *sge, uint32_t num_sge,
                   uint64_t off, uint32_t len, struct iovec *iov, uint32_t max, bool checked)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < num_sge && len; i++) {
        const struct siwarp_sge *s = &sge[i];
        uint32_t take;
        if (off >= s->length) {
            off -= s->length;
            continue;
        }
        if (n == max)
            return -E2BIG;
        if (!checked && swp_mem_check_local(qp->ctx, qp->pd, s, SIWARP_ACCESS_LOCAL_WRITE) < 0)
            return -EACCES;
        take = s->length - (uint32_t)off;
        if (take > len)
            take = len;
        iov[n].iov_base = (uint8_t *)s->addr + off;
        iov[n].iov_len = take;
        n++;
        len -= take;
        off = 0;
    }
    return (int)n;
}

/* The current segment's target: bytes [off, off + len) of an SGL.  0, or
 * -EACCES. */
SWP_HOT
static int rx_place_sgl(struct siwarp_qp *qp, const struct siwarp_sge *sge, uint32_t num_sge,
                        uint64_t off, uint32_t len, bool checked)
{
    struct swp_rx *rx = &qp->rx;
    int n = swp_rx_sgl_iov(qp, sge, num_sge, off, len, rx->place_iov, SWP_MAX_SGE, checked);

    if (n < 0)
        return -EACCES;
    rx->place_niov = (uint32_t)n;
    rx->place_idx = rx->place_off = 0;
    return 0;
}

/* Copy n staged bytes into the target (or discard them), folding the CRC. */
SWP_HOT
static void rx_place_copy(struct siwarp_qp *qp, const uint8_t *src, uint32_t n)
{
    struct swp_rx *rx = &qp->rx;
    bool crc = qp->nego.crc && !rx->crc_checked;

    rx->copied += n;
    while (n) {
        uint32_t take = n;
        if (rx->place_idx < rx->place_niov) {
            struct iovec *v = &rx->place_iov[rx->place_idx];
            if (take > v->iov_len - rx->place_off)
                take = (uint32_t)(v->iov_len - rx->place_off);
            uint8_t *dst = (uint8_t *)v->iov_base + rx->place_off;
            if (crc)
                rx->crc = swp_crc32c_copy(rx->crc, dst, src, take);
            else
                memcpy(dst, src, take);
            rx->place_off += take;
            if (rx->place_off == v->iov_len) {
                rx->place_idx++;
                rx->place_off = 0;
            }
        } else if (crc) {
            rx->crc = swp_crc32c(rx->crc, src, take);
        }
        src += take;
        n -= take;
    }
}

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
static uint32_t rx_check_untagged(struct siwarp_qp *qp, unsigned qn_expected)
{
    const struct swp_ddp_untagged_hdr *u = rx_uhdr(&qp->rx);
    uint32_t qn = swp_get32(u->qn);

    if (qn != qn_expected)
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_INV_QN);
    if (swp_get32(u->msn) != qp->rx.msn[qn])
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_MSN_RANGE);
    return 0;
}

static bool rx_is_rtr(struct siwarp_qp *qp, int type)
{
    return qp->rtr_wait_rx && qp->nego.rtr == type && qp->rx.seg_len == 0 && qp->rx.last;
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
    rx_place_one(rx, dst, rx->seg_len);
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
    if (rx->seg_len == 0 && w->len == 0)
        return 0;
    if (stag != w->sge[0].lkey)
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_TAGGED, SWP_DDP_EC_T_INV_STAG);
    /* The sink is named by the first SGE's STag and address; the message
     * continues through the WR's SGL at rising offsets (RFC 5040 4.5:
     * Read Response segments carry the sink TO of each byte). */
    if (to != (uintptr_t)w->sge[0].addr + w->sent || w->sent + rx->seg_len > w->len)
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_TAGGED, SWP_DDP_EC_T_BASE_BOUNDS);
    if (rx_place_sgl(qp, w->sge, w->num_sge, w->sent, rx->seg_len, false) < 0)
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_TAGGED, SWP_DDP_EC_T_INV_STAG);
    return 0;
}

/* How much a read of the staging buffer asks for (see SWP_RX_STAGE). */
static uint32_t rx_read_size(const struct swp_rx *rx)
{
    return rx->seg_len >= SWP_RX_READ_BIG_SEG ? rx->buf_size : SWP_RX_READ;
}

/*
 * The Send whose header was just read could go to the recv CQ's handler in
 * place, but the read ended inside it (in a stream of eager messages, one
 * a read).  Its staged part moves to the front of the staging buffer, its
 * payload 8-aligned, and the socket is read behind it: the read the next
 * pass would have made anyway.  When all of the message is there the
 * handler gets it in place; otherwise (the rest is still on its way) it
 * is parsed from where it now lies into a receive buffer, as before.  So
 * the message is not copied into that buffer, with its CRC, only for the
 * consumer to copy it out again; the part staged before moves instead.
 * Only in the context's staging buffer (not the spill buffer of
 * qp_rx_direct.c), where everything before the header has been parsed
 * and nothing lies behind the bytes at hand.
 */
static bool rx_stage_rest(struct siwarp_qp *qp, uint32_t rest)
{
    struct swp_rx *rx = &qp->rx;
    uint8_t *at = rx->buf + SWP_RX_REST_AT;
    /* the header octets of this read, not yet counted as taken */
    uint32_t hdr_here = (uint32_t)(rx->inl - rx->buf) - rx->buf_head;
    uint32_t have = rx->inl_avail;

    if (rx->buf != qp->ctx->rx_stage + SWP_RX_STAGE_SKEW ||
        SWP_RX_REST_AT + rest + SWP_RX_LOOKAHEAD > rx->buf_size)
        return false;
    memmove(at, rx->inl, have);
    while (have < rest) {
        /* the rest and what a read at the top of rx_progress would ask
         * for: the messages behind this one are then whole in staging,
         * not each cut by a short read for the one before */
        uint32_t room = rx->buf_size - SWP_RX_REST_AT - have;
        uint32_t ask = rest - have > rx_read_size(rx) ? rest - have : rx_read_size(rx);
        ssize_t got = recv(qp->pl.fd, at + have, ask < room ? ask : room, MSG_DONTWAIT);
        if (got > 0)
            have += (uint32_t)got;
        else if (got == 0 || errno != EINTR)
            break;      /* not there yet, or the stream ended: the next read says */
    }
    rx->buf_head = SWP_RX_REST_AT - hdr_here;
    rx->buf_tail = SWP_RX_REST_AT + have;
    rx->inl = at;
    rx->inl_avail = have;
    return have >= rest;
}

SWP_HOT
static uint32_t rx_hdr_send(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;
    const struct swp_ddp_untagged_hdr *u = rx_uhdr(rx);
    uint32_t term = rx_check_untagged(qp, SWP_QN_SEND);
    uint32_t mo = swp_get32(u->mo);
    struct swp_rwqe *w;

    if (term)
        return term;
    rx->place_niov = 0;
    if (rx_is_rtr(qp, SIWARP_RTR_SEND) && mo == 0)
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
        if (rx->inl_avail >= rest ? aligned : rx_stage_rest(qp, rest)) {
            rx->cur_inline = true;
            return 0;
        }
    }
    if (rx_place_sgl(qp, w->sge, w->num_sge, mo, rx->seg_len, w->mr_gen == qp->ctx->mr_gen) < 0) {
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
    uint32_t term = rx_check_untagged(qp, SWP_QN_READ_REQ);
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
    uint32_t term = rx_check_untagged(qp, SWP_QN_TERMINATE);

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
    if (rx_is_rtr(qp, SIWARP_RTR_WRITE) && qp->rtr_wait_rx) {
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
    qp->orqr.head++;
    swp_sq_retire(qp);
}

/* A received message to its consumer: the recv CQ's handler (in order
 * with every other message, whether it lies in staging or in a WQE), or
 * the CQ itself. */
SWP_HOT
static void rx_deliver(struct siwarp_qp *qp, const struct siwarp_wc *wc, const uint8_t *data)
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

SWP_HOT
static void rx_done_send(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;
    const struct swp_ddp_untagged_hdr *u = rx_uhdr(rx);
    struct siwarp_wc wc;
    unsigned op = rx->op;
    bool inl = rx->cur_inline;

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
    rx_deliver(qp, &wc, inl ? rx->inl : NULL);
}

static void rx_done_read_req(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;
    const struct swp_rdmap_read_req *rr =
        (const struct swp_rdmap_read_req *)(rx->hdr + SWP_MPA_HDR_LEN + SWP_HDR_UNTAGGED);
    struct swp_irqe *r = &qp->irq[qp->irqr.tail & qp->irqr.mask];
    uint32_t size = swp_get32(rr->size);

    qp->rx.msn[SWP_QN_READ_REQ]++;
    if (rx_is_rtr(qp, SIWARP_RTR_READ) && size == 0 && qp->rtr_wait_rx) {
        qp->rtr_wait_rx = false;     /* answered below with a zero-length response */
        swp_tx_rtr_settle(qp);
    }
    r->sink_stag = swp_get32(rr->sink_stag);
    r->sink_to = swp_get64(rr->sink_to);
    r->len = size;
    r->sent = 0;
    r->src = NULL;
    if (size)
        swp_mem_check_remote(qp->ctx, qp->pd, swp_get32(rr->src_stag), swp_get64(rr->src_to),
                             size, SIWARP_ACCESS_REMOTE_READ, SWP_TERM_LAYER_RDMAP, &r->src);
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
static const struct {
    uint32_t (*hdr)(struct siwarp_qp *qp);
    void (*done)(struct siwarp_qp *qp);
} rx_ops[SWP_OP_MAX] = {
    [SWP_OP_WRITE]       = { rx_hdr_write,     rx_done_write },
    [SWP_OP_READ_REQ]    = { rx_hdr_read_req,  rx_done_read_req },
    [SWP_OP_READ_RESP]   = { rx_hdr_read_resp, rx_done_read_resp },
    [SWP_OP_SEND]        = { rx_hdr_send,      rx_done_send },
    [SWP_OP_SEND_INV]    = { rx_hdr_send,      rx_done_send },
    [SWP_OP_SEND_SE]     = { rx_hdr_send,      rx_done_send },
    [SWP_OP_SEND_SE_INV] = { rx_hdr_send,      rx_done_send },
    [SWP_OP_TERMINATE]   = { rx_hdr_term,      rx_done_term },
};

static int rx_fatal(struct siwarp_qp *qp, uint32_t term, const char *what)
{
    char buf[128];

    swp_qp_fatal(qp, term, qp->rx.hdr, qp->rx.hdr_got, -EPROTO, "received %s: %s", what,
                 swp_term_str(term, buf, sizeof(buf)));
    return -EPROTO;
}

/* Called whenever the header buffer reaches hdr_want bytes.  Three steps:
 * ULPDU_Length + control (4 bytes), then the DDP header the T flag implies
 * (so a Terminate can copy it, RFC 5040 4.8), then the opcode's full header. */
SWP_HOT
static int rx_hdr_step(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;
    const struct swp_ctrl *c = (const struct swp_ctrl *)(rx->hdr + SWP_MPA_HDR_LEN);
    uint32_t term, hdr_len;

    if (rx->hdr_phase == 0) {
        rx->ulpdu_len = swp_get16(rx->hdr);
        /* RFC 5044 4.1: the ULPDU must hold a DDP header and may not exceed
         * what this end can take */
        if (rx->ulpdu_len < sizeof(struct swp_ctrl) || rx->ulpdu_len > qp->nego.max_rx_ulpdu)
            return rx_fatal(qp, SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_CATASTROPHIC,
                                         SWP_DDP_EC_CATASTROPHIC), "an FPDU with a bad ULPDU length");
        rx->hdr_phase = 1;
        hdr_len = swp_ctrl_tagged(c) ? SWP_HDR_TAGGED : SWP_HDR_UNTAGGED;
        if (rx->ulpdu_len >= hdr_len) {
            rx->hdr_want = SWP_MPA_HDR_LEN + hdr_len;
            if (rx->hdr_got < rx->hdr_want)
                return 0;
        }
    }
    if (rx->hdr_phase == 1) {
        term = swp_ddp_check_ctrl(c);
        if (term)
            return rx_fatal(qp, term, "a bad DDP/RDMAP control field");
        rx->op = swp_ctrl_opcode(c);
        rx->last = swp_ctrl_last(c);
        hdr_len = swp_opinfo[rx->op].hdr_len;
        if (rx->ulpdu_len < hdr_len)
            return rx_fatal(qp, SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_CATASTROPHIC,
                                         SWP_DDP_EC_CATASTROPHIC), "an FPDU shorter than its header");
        rx->hdr_phase = 2;
        rx->hdr_want = SWP_MPA_HDR_LEN + hdr_len;
        if (rx->hdr_got < rx->hdr_want)
            return 0;
    }
    rx->seg_len = rx->ulpdu_len - (rx->hdr_want - SWP_MPA_HDR_LEN);
    /* RFC 6581 6: in P2P mode the responder takes nothing before the RTR */
    if (qp->rtr_wait_rx && !rx_is_rtr(qp, SIWARP_RTR_WRITE) &&
        !(rx_is_rtr(qp, SIWARP_RTR_READ) && rx->op == SWP_OP_READ_REQ) &&
        !(rx_is_rtr(qp, SIWARP_RTR_SEND) && rx->op == SWP_OP_SEND) &&
        rx->op != SWP_OP_TERMINATE)
        return rx_fatal(qp, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_NO_MATCHING_RTR),
                        "an FPDU before the peer-to-peer RTR");
    term = rx_ops[rx->op].hdr(qp);
    if (term == SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_NO_BUF))
        return rx_fatal(qp, term, qp->srq ? "a Send with no buffer left in the shared receive queue"
                                          : "a Send with no receive buffer posted");
    if (term)
        return rx_fatal(qp, term, swp_opinfo[rx->op].name);
    rx->payload_left = rx->seg_len;
    rx->bulk = rx->seg_len >= (qp->nego.crc ? SWP_RX_BULK_MIN_CRC : SWP_RX_BULK_MIN) &&
               !qp->nego.markers_rx && !rx->cur_inline;
    rx->trailer_want = swp_mpa_pad(rx->ulpdu_len) + SWP_MPA_CRC_LEN;
    rx->trailer_got = 0;
    rx->state = rx->payload_left ? SWP_RX_PAYLOAD : SWP_RX_TRAILER;
    return 0;
}

static int rx_crc_error(struct siwarp_qp *qp, uint32_t got, uint32_t computed)
{
    /* RFC 5044 4.4 / 8: a CRC mismatch is fatal to the stream */
    swp_qp_fatal(qp, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_CRC), NULL, 0, -EBADMSG,
                 "CRC error: received 0x%08x, computed 0x%08x", got, computed);
    return -EBADMSG;
}

SWP_HOT
int swp_rx_fpdu_done(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;
    uint32_t pad = rx->trailer_want - SWP_MPA_CRC_LEN;

    if (qp->nego.crc && swp_mpa_get_crc(rx->trailer + pad) != rx->crc)
        return rx_crc_error(qp, swp_mpa_get_crc(rx->trailer + pad), rx->crc);
    rx->state = SWP_RX_HDR;
    rx->hdr_got = 0;
    rx->hdr_phase = 0;
    rx->hdr_want = SWP_RX_HDR_MIN;
    rx->crc_checked = false;
    rx_ops[rx->op].done(qp);
    return 0;
}

/* A marker (RFC 5044 4.3): check its FPDUPTR against where we are. */
static int rx_marker(struct siwarp_qp *qp, const uint8_t **p, uint32_t *avail)
{
    struct swp_rx *rx = &qp->rx;
    uint32_t take = SWP_MPA_MARKER_LEN - rx->marker_got;
    bool at_boundary = rx->state == SWP_RX_HDR && rx->hdr_got == 0;
    /* a marker leading an FPDU belongs to it (see qp_tx.c: tx_fpdu); one
     * inside the CRC field is not covered */
    bool in_crc = !(rx->state == SWP_RX_TRAILER &&
                    rx->trailer_got >= rx->trailer_want - SWP_MPA_CRC_LEN);

    if (take > *avail)
        take = *avail;
    memcpy(rx->marker + rx->marker_got, *p, take);
    rx->marker_got += take;
    rx->stream_off += take;
    *p += take;
    *avail -= take;
    if (rx->marker_got < SWP_MPA_MARKER_LEN)
        return 0;
    rx->marker_got = 0;
    uint64_t moff = rx->stream_off - SWP_MPA_MARKER_LEN;
    uint16_t want = at_boundary ? 0 : (uint16_t)(moff - rx->fpdu_start);
    if (swp_get16(rx->marker + 2) != want) {
        swp_qp_fatal(qp, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_MARKER), NULL, 0, -EPROTO,
                     "marker FPDUPTR %u where %u was expected", swp_get16(rx->marker + 2), want);
        return -EPROTO;
    }
    if (at_boundary) {
        rx->crc = 0;
        rx->lead_marker = true;
    }
    if (in_crc && qp->nego.crc)
        rx->crc = swp_crc32c(rx->crc, rx->marker, SWP_MPA_MARKER_LEN);
    return 0;
}

/*
 * An FPDU that lies whole in the bytes at hand has its CRC checked in one
 * pass before any of it is parsed (RFC 5044 4.4 covers everything from
 * ULPDU_Length to the pad): one call instead of one per piece (header,
 * payload, pad), each of which pays for the code's pages again after the
 * read's syscall.  Only small FPDUs: for a larger one going to a receive
 * buffer, the CRC folded into that copy costs less than a pass of its own.
 * Never with markers, which the CRC covers where they fall.
 */
SWP_HOT
static int rx_crc_whole(struct siwarp_qp *qp, const uint8_t *p, uint32_t avail)
{
    struct swp_rx *rx = &qp->rx;
    uint32_t ulpdu = swp_get16(p);
    uint32_t covered = SWP_MPA_HDR_LEN + ulpdu + swp_mpa_pad(ulpdu);
    uint32_t c;

    if (covered > SWP_RX_CRC_WHOLE_MAX || avail < covered + SWP_MPA_CRC_LEN)
        return 0;
    c = swp_crc32c(0, p, covered);
    if (c != swp_mpa_get_crc(p + covered))
        return rx_crc_error(qp, swp_mpa_get_crc(p + covered), c);
    rx->crc = c;
    rx->crc_checked = true;
    return 0;
}

/* Parse staged bytes. */
SWP_HOT
static int rx_consume(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;

    while (rx->buf_head < rx->buf_tail) {
        const uint8_t *p = rx->buf + rx->buf_head;
        uint32_t avail = rx->buf_tail - rx->buf_head, take;
        int rc = 0;

        if (qp->state != SIWARP_QPS_RTS && qp->state != SIWARP_QPS_CLOSING)
            return -EPROTO;
        if (qp->nego.markers_rx) {
            if (rx->marker_got || rx->stream_off % SWP_MPA_MARKER_PERIOD == 0) {
                uint32_t before = avail;
                rc = rx_marker(qp, &p, &avail);
                rx->buf_head += before - avail;
                if (rc < 0)
                    return rc;
                continue;
            }
            uint32_t room = SWP_MPA_MARKER_PERIOD - rx->stream_off % SWP_MPA_MARKER_PERIOD;
            if (avail > room)
                avail = room;
        }
        switch (rx->state) {
        case SWP_RX_HDR:
            if (rx->hdr_got == 0) {
                rx->fpdu_start = rx->stream_off;
                if (!rx->lead_marker)
                    rx->crc = 0;
                rx->lead_marker = false;
                if (qp->nego.crc && !qp->nego.markers_rx && avail >= SWP_MPA_HDR_LEN) {
                    rc = rx_crc_whole(qp, p, avail);
                    if (rc < 0)
                        return rc;
                }
            }
            take = rx->hdr_want - rx->hdr_got;
            if (take > avail)
                take = avail;
            memcpy(rx->hdr + rx->hdr_got, p, take);
            if (qp->nego.crc && !rx->crc_checked)
                rx->crc = swp_crc32c(rx->crc, p, take);
            rx->hdr_got += take;
            if (rx->hdr_got == rx->hdr_want) {
                rx->inl = p + take;
                rx->inl_avail = avail - take;
                rc = rx_hdr_step(qp);
            }
            break;
        case SWP_RX_PAYLOAD:
            take = rx->payload_left < avail ? rx->payload_left : avail;
            rx_place_copy(qp, p, take);
            rx->payload_left -= take;
            if (rx->payload_left == 0)
                rx->state = SWP_RX_TRAILER;
            break;
        case SWP_RX_TRAILER:
        default: {
            uint32_t pad = rx->trailer_want - SWP_MPA_CRC_LEN;
            take = rx->trailer_want - rx->trailer_got;
            if (take > avail)
                take = avail;
            if (qp->nego.crc && !rx->crc_checked && rx->trailer_got < pad) {
                /* the pad is covered by the CRC, the CRC field is not */
                uint32_t in_pad = pad - rx->trailer_got < take ? pad - rx->trailer_got : take;
                rx->crc = swp_crc32c(rx->crc, p, in_pad);
            }
            memcpy(rx->trailer + rx->trailer_got, p, take);
            rx->trailer_got += take;
            if (rx->trailer_got == rx->trailer_want)
                rc = swp_rx_fpdu_done(qp);
            break;
        }
        }
        rx->buf_head += take;
        rx->stream_off += take;
        if (rc < 0)
            return rc;
    }
    rx->buf_head = rx->buf_tail = 0;
    return 0;
}

/* Parse n octets that sit outside the staging buffer (qp_rx_direct.c: what
 * a speculative read put in the wrong places, gathered).  The staging
 * buffer must be empty. */
int swp_rx_parse(struct siwarp_qp *qp, const uint8_t *p, uint32_t n)
{
    struct swp_rx *rx = &qp->rx;
    uint8_t *stage = rx->buf;
    int rc;

    rx->buf = (uint8_t *)p;
    rx->buf_head = 0;
    rx->buf_tail = n;
    rc = rx_consume(qp);
    rx->buf = stage;
    rx->buf_head = rx->buf_tail = 0;
    return rc;
}

SWP_HOT
static int rx_progress(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;
    bool short_read = false;

    for (int budget = swp_rx_budget; budget > 0; budget--) {
        ssize_t got;
        int rc;

        if (qp->pl.fd < 0 || (qp->state != SIWARP_QPS_RTS && qp->state != SIWARP_QPS_CLOSING))
            return 0;
        if (rx->buf_head < rx->buf_tail) {
            rc = rx_consume(qp);
            if (rc < 0)
                return rc;
            /* a read that did not fill the buffer drained the socket: skip
             * the recv that would only say EAGAIN (epoll is level-triggered
             * and the busy poller comes back anyway) */
            if (short_read)
                return 0;
            continue;
        }
        if (rx->state == SWP_RX_PAYLOAD && rx->bulk && rx->place_idx < rx->place_niov) {
            bool full = false;
            got = swp_rx_direct(qp, &full);
            /* and read again at once, even after a short read: in a
             * stream more has often come meanwhile (returning here instead
             * cost 15% of 64 KiB bandwidth) */
            short_read = !full;
        } else {
            /* after a large segment only a lookahead: the next payload
             * is read by rx_direct, not copied out of staging */
            uint32_t ask = rx->state == SWP_RX_PAYLOAD || !rx->bulk ? rx_read_size(rx)
                                                                    : SWP_RX_LOOKAHEAD;
            got = recv(qp->pl.fd, rx->buf, ask, MSG_DONTWAIT);
            if (got < 0)
                got = -errno;
            else if (got > 0) {
                rx->buf_head = 0;
                rx->buf_tail = (uint32_t)got;
                short_read = (uint32_t)got < ask;
            }
        }
        if (got == -EAGAIN || got == -EWOULDBLOCK)
            return -EAGAIN;
        if (got == -EINTR)
            continue;
        if (got == -EPROTO || got == -EBADMSG)
            return (int)got;
        if (got < 0) {
            swp_qp_llp_closed(qp, (int)got, false);
            return (int)got;
        }
        if (got == 0) {
            /* end of stream: clean only at an FPDU boundary */
            bool clean = rx->state == SWP_RX_HDR && rx->hdr_got == 0 && rx->marker_got == 0;
            swp_qp_llp_closed(qp, -ECONNRESET, clean);
            return -ENOTCONN;
        }
    }
    /* The budget may end right after a recv: parse what it staged now.
     * Bytes left in the staging buffer raise no epoll event (the socket
     * may be empty), so returning with them unparsed could stall the
     * stream for good (seen with > 4 QPs, where progress is epoll-driven). */
    if (rx->buf_head < rx->buf_tail)
        return rx_consume(qp);
    return 0;
}

SWP_HOT
int swp_rx_progress(struct siwarp_qp *qp)
{
    int rc = rx_progress(qp);

    /* Every return above has parsed all it staged, except when the QP died
     * (fatal error, Terminate, lost stream) halfway: the staging buffer is
     * the context's, and a dead QP's bytes are dropped, never left for the
     * next QP to find. */
    qp->rx.buf_head = qp->rx.buf_tail = 0;
    return rc;
}
