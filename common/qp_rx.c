/*
 * qp_rx.c - the receive engine: a resumable FPDU parser (RFC 5044 4) that
 * validates every DDP/RDMAP header (RFC 5041, RFC 5040) before a byte is
 * placed, then places payload straight into the target: from the staging
 * buffer for small segments, or with readv() directly from the socket into
 * the registered buffer for large ones.  Every state lives in struct swp_rx,
 * so the parser can be fed one byte at a time.  What each opcode's header
 * allows and what its completion does is in qp_rx_ops.c (swp_rx_ops[]).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
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
 * payload.
 *
 * With CRC on, staging wins for every segment now that the staging buffer
 * holds four of the largest (the threshold of 61,440 dates from a 64 KiB
 * buffer): a segment read straight into its target needs a CRC pass of its
 * own afterwards, one copied out of staging has it in the copy.  On the AMD
 * host (2026-12-07, 4 alternating rounds each): 128 KiB-1 MiB ping-pong
 * 5-13% faster (256 KiB 86.1 -> 74.6 us), bandwidth and bi-bandwidth 128
 * KiB-4 MiB unchanged, 2-4 MiB latency unchanged, 64 KiB bandwidth +60% (an
 * eager Send of 64 KiB now reaches the BTL in place); with CRC off no
 * change (+-2%), so that threshold stays.  So with CRC on no segment is
 * read straight: swp_rx_bulk_min_crc is above the largest ULPDU.  Tests
 * lower it to reach that path (qp_rx_direct.c), which CRC-off streams
 * take. */
#define SWP_RX_BULK_MIN      32768
uint32_t swp_rx_bulk_min_crc = 65536;
/* the largest FPDU (up to its CRC) checked in one pass: a 2 KiB payload
 * (the BTL's inline receives) with headers and pad */
#define SWP_RX_CRC_WHOLE_MAX 2304
#define SWP_RX_HDR_MIN    (SWP_MPA_HDR_LEN + (uint32_t)sizeof(struct swp_ctrl))

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

void swp_rx_place_one(struct siwarp_qp *qp, uint8_t *dst, uint32_t len, uint32_t key)
{
    struct swp_rx *rx = &qp->rx;

    rx->place_iov[0].iov_base = dst;
    rx->place_iov[0].iov_len = len;
    rx->place_key[0] = key;
    rx->place_niov = len ? 1 : 0;
    rx->place_idx = rx->place_off = 0;
    rx->place_gen = qp->ctx->mr_gen;
}

/* The iovecs for bytes [off, off + len) of an SGL, at most max of them: a
 * segment's target here, a Send's or Write's payload in qp_tx_ops.c.
 * Unless `checked` (a receive WQE checked at post, and no MR deregistered
 * or invalidated since: ctx->mr_gen), each SGE touched is checked again
 * (valid, same PD, local write, bounds): its MR may have gone since the WR
 * was posted.  The number of iovecs, -EACCES, or -E2BIG. */
SWP_HOT
int swp_sgl_iov(struct siwarp_qp *qp, const struct siwarp_sge *sge, uint32_t num_sge,
                   uint64_t off, uint32_t len, struct iovec *iov, uint32_t *keys, uint32_t max,
                   bool checked)
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
        if (keys)
            keys[n] = s->lkey;
        n++;
        len -= take;
        off = 0;
    }
    return (int)n;
}

/* The current segment's target: bytes [off, off + len) of an SGL.  0, or
 * -EACCES. */
SWP_HOT
int swp_rx_place_sgl(struct siwarp_qp *qp, const struct siwarp_sge *sge, uint32_t num_sge,
                     uint64_t off, uint32_t len, bool checked)
{
    struct swp_rx *rx = &qp->rx;
    int n = swp_sgl_iov(qp, sge, num_sge, off, len, rx->place_iov, rx->place_key, SWP_MAX_SGE,
                        checked);

    if (n < 0)
        return -EACCES;
    rx->place_niov = (uint32_t)n;
    rx->place_idx = rx->place_off = 0;
    rx->place_gen = qp->ctx->mr_gen;
    return 0;
}

/* A segment's payload that continues in a later progress call, with an MR
 * deregistered or invalidated since its target was checked (ctx->mr_gen):
 * every piece still to be placed must lie in a valid MR of this PD under
 * the STag it was checked by, or the rest would land in memory the
 * application has taken back (a verbs device stops its DMA at
 * deregistration too).  0, or the Terminate: an invalid STag for a
 * tagged segment (RFC 5041 7.2), a local protection error reported as
 * catastrophic for a Send, as at its header (qp_rx_ops.c). */
static uint32_t rx_place_recheck(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;

    rx->place_gen = qp->ctx->mr_gen;
    for (uint32_t i = rx->place_idx; i < rx->place_niov; i++) {
        /* valid, this PD, in bounds; its rights cannot have changed */
        const struct siwarp_sge piece = { rx->place_iov[i].iov_base,
                                          (uint32_t)rx->place_iov[i].iov_len,
                                          rx->place_key[i] };

        if (rx->place_key[i] && swp_mem_check_local(qp->ctx, qp->pd, &piece, 0) < 0)
            return rx->op == SWP_OP_WRITE || rx->op == SWP_OP_READ_RESP
                       ? SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_TAGGED, SWP_DDP_EC_T_INV_STAG)
                       : SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_CATASTROPHIC,
                                  SWP_RDMAP_EC_CATA_STREAM);
    }
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
bool swp_rx_stage_rest(struct siwarp_qp *qp, uint32_t rest)
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
        term = swp_ddp_check_ctrl(c, qp->nego.rfc7306);
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
    if (qp->rtr_wait_rx && !swp_rx_is_rtr(qp, SIWARP_RTR_WRITE) &&
        !(swp_rx_is_rtr(qp, SIWARP_RTR_READ) && rx->op == SWP_OP_READ_REQ) &&
        !(swp_rx_is_rtr(qp, SIWARP_RTR_SEND) && rx->op == SWP_OP_SEND) &&
        rx->op != SWP_OP_TERMINATE)
        return rx_fatal(qp, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_NO_MATCHING_RTR),
                        "an FPDU before the peer-to-peer RTR");
    /* siwarp_qp_verify_first_send: nothing but the RTR, a Terminate and
     * the one Send to verify before that Send passed */
    if (qp->verify_pending && rx->op != SWP_OP_TERMINATE && !swp_rx_is_rtr(qp, qp->nego.rtr)) {
        term = swp_rx_verify_hdr(qp);
        if (term)
            return rx_fatal(qp, term, "a segment before the first Send was verified");
    } else {
        term = swp_rx_ops[rx->op].hdr(qp);
    }
    if (term == SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_NO_BUF))
        return rx_fatal(qp, term, qp->srq ? "a Send with no buffer left in the shared receive queue"
                                          : "a Send with no receive buffer posted");
    if (term)
        return rx_fatal(qp, term, swp_opinfo[rx->op].name);
    rx->payload_left = rx->seg_len;
    rx->bulk = rx->seg_len >= (qp->nego.crc ? swp_rx_bulk_min_crc : SWP_RX_BULK_MIN) &&
               !qp->nego.markers_rx && !rx->cur_inline;
    rx->trailer_want = swp_mpa_pad(rx->ulpdu_len) + SWP_MPA_CRC_LEN;
    rx->trailer_got = 0;
    rx->state = rx->payload_left ? SWP_RX_PAYLOAD : SWP_RX_TRAILER;
    return 0;
}

/* RFC 5044 4.4 / 8: a CRC mismatch is fatal to the stream.  The message
 * names the FPDU (f: its first octet, ULPDU_Length) by what its header
 * says and where it began in the stream, so that a capture of the
 * connection finds it: a CRC the peer computed over other bytes than it
 * sent and bytes damaged on the way look alike from here. */
static int rx_crc_error(struct siwarp_qp *qp, const uint8_t *f, uint32_t got, uint32_t computed)
{
    const struct swp_ctrl *c = (const struct swp_ctrl *)(f + SWP_MPA_HDR_LEN);
    unsigned op = swp_ctrl_opcode(c);
    const char *name = op < SWP_OP_MAX ? swp_opinfo[op].name : "unknown opcode";
    char what[80];

    if (swp_ctrl_tagged(c)) {
        const struct swp_ddp_tagged_hdr *t = (const void *)c;
        snprintf(what, sizeof(what), "%s TO 0x%" PRIx64, name, swp_get64(t->to));
    } else {
        const struct swp_ddp_untagged_hdr *u = (const void *)c;
        snprintf(what, sizeof(what), "%s MSN %u MO %u", name, swp_get32(u->msn),
                 swp_get32(u->mo));
    }
    swp_qp_fatal(qp, SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_CRC), NULL, 0, -EBADMSG,
                 "CRC error: received 0x%08x, computed 0x%08x (%s, %u B at octet %" PRIu64 ")",
                 got, computed, what, swp_get16(f), qp->rx.fpdu_start);
    return -EBADMSG;
}

SWP_HOT
int swp_rx_fpdu_done(struct siwarp_qp *qp)
{
    struct swp_rx *rx = &qp->rx;
    uint32_t pad = rx->trailer_want - SWP_MPA_CRC_LEN;

    if (qp->nego.crc && swp_mpa_get_crc(rx->trailer + pad) != rx->crc)
        return rx_crc_error(qp, rx->hdr, swp_mpa_get_crc(rx->trailer + pad), rx->crc);
    rx->state = SWP_RX_HDR;
    rx->hdr_got = 0;
    rx->hdr_phase = 0;
    rx->hdr_want = SWP_RX_HDR_MIN;
    rx->crc_checked = false;
    swp_rx_ops[rx->op].done(qp);
    return 0;
}

/* A marker (RFC 5044 4.3): check its FPDUPTR against where we are. */
static int rx_marker(struct siwarp_qp *qp, const uint8_t **p, uint32_t *avail)
{
    struct swp_rx *rx = &qp->rx;
    uint32_t take = SWP_MPA_MARKER_LEN - rx->marker_got;
    bool at_boundary = rx->state == SWP_RX_HDR && rx->hdr_got == 0;
    /* a marker leading an FPDU belongs to it (see qp_tx.c: swp_tx_fpdu); one
     * inside the CRC field is not covered */
    bool in_crc = !(rx->state == SWP_RX_TRAILER &&
                    rx->trailer_got >= rx->trailer_want - SWP_MPA_CRC_LEN);

    if (take > *avail)
        take = *avail;
    memcpy(rx->marker + rx->marker_got, *p, take);
    rx->marker_got += take;
    rx->stream_off += take;
    qp->ctx->moved += take;
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
        return rx_crc_error(qp, p, swp_mpa_get_crc(p + covered), c);
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
        qp->ctx->moved += take;
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
        if (rx->place_gen != qp->ctx->mr_gen && rx->state == SWP_RX_PAYLOAD &&
            rx->place_idx < rx->place_niov) {
            uint32_t term = rx_place_recheck(qp);
            if (term)
                return rx_fatal(qp, term, "a segment whose target was deregistered or "
                                          "invalidated while its payload arrived");
        }
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
                SWP_TL(SWP_TL_RX_RECV, got);
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
