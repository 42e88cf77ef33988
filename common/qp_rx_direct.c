/*
 * qp_rx_direct.c - large segments read from the socket straight into their
 * target, and a Read Response read several FPDUs at a time.
 *
 * A large segment's payload is read with one recvmsg() into the registered
 * buffer, with its trailer and a small lookahead (the next header) behind
 * it: the payload is copied once, by the kernel.
 *
 * With 64 KiB FPDUs that is still one read per 64 KiB, where a plain TCP
 * stream reads 256 KiB and more per call.  For a Read Response the
 * requester can tell what most likely comes next: the responder's next
 * segment of the same Read, at the next sink offset (RFC 5040 4.5: each
 * segment carries the sink TO of its first byte, and the data of one Read
 * arrives in order), as long as the one before it.  So the read also asks
 * for up to SWP_RX_SPEC_FPDUS predicted FPDUs: each header and trailer into
 * a small buffer, each payload into the sink where it would go.  Only while
 * the receiver is behind, that is when the last direct read got all it
 * asked for: a receiver that keeps up gains nothing from larger reads and
 * would only poll more, and on loopback each empty poll takes the socket
 * lock that the sender's transmit needs for the receive side.
 *
 * Measured on loopback, alternating with the build before.  2-rank MPI
 * bandwidth (ob1's RDMA Read rendezvous): 1 MiB 6.1-6.2 -> 7.4-8.0 GB/s,
 * 256 KiB 5.1-5.4 -> 6.5-6.6, 1 MiB bi-bandwidth 6.6-7.0 -> 8.4; 64 KiB
 * unchanged.  siwarp-perf's Read (a requester that polls in a tight loop)
 * 7.1-7.4 -> 6.7-7.1; predicting always, without the "behind" rule, it fell
 * to 4.9-5.3.
 *
 * Each predicted header is then parsed like any other, with every check of
 * qp_rx.c.  Only if it names that very segment (a Read Response of the
 * predicted length, placed where its payload already is) does its payload
 * count as placed, and its CRC is checked as usual.  Otherwise the stream
 * took another turn: a Send came between the segments, or the responder
 * cut them differently.  Then every octet read after that header is copied
 * to the context's spill buffer and parsed from there.  The stray octets
 * left in the sink lie inside the Read's own sink, beyond what has arrived
 * for it; the sink is defined only when the Read completes, and the Read's
 * real segments overwrite them.  Never for a Write: its target is memory
 * the peer exposed, where nothing beyond the message may be touched.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "swp.h"

#define RX_IOV_MAX 64    /* iovecs in one read */

/* One FPDU predicted behind the current segment. */
struct rx_spec {
    uint8_t hdr[SWP_MPA_HDR_LEN + SWP_HDR_TAGGED];
    uint8_t trailer[3 + SWP_MPA_CRC_LEN];
    uint32_t len;                 /* payload octets */
    uint32_t trailer_len;         /* pad + CRC */
    uint32_t iov_first, niov;     /* its payload in the read's iovecs */
};

struct rx_read {
    struct iovec iov[RX_IOV_MAX];
    uint32_t n;
    struct rx_spec spec[SWP_RX_SPEC_FPDUS];
    uint32_t nspec;
};

static void rx_iov(struct rx_read *r, void *p, size_t len)
{
    r->iov[r->n].iov_base = p;
    r->iov[r->n].iov_len = len;
    r->n++;
}

/* Predict the Read Response segments behind the current one: the same
 * Read, at the next sink offsets, each as long as the current one (the
 * last one as long as what remains).  Nothing is predicted while the
 * receiver keeps up, when the Read ends with this segment, for the
 * zero-length Read of an RTR, or where the sink fails a check (its real
 * header then meets the same check).  Markers never get here: rx->bulk is
 * off with them. */
static void rx_predict(struct siwarp_qp *qp, struct rx_read *r)
{
    struct swp_rx *rx = &qp->rx;
    struct swp_swqe *w;
    uint32_t idx;
    uint64_t off;

    if (!rx->behind || rx->op != SWP_OP_READ_RESP || rx->last || !swp_ring_count(&qp->orqr))
        return;
    idx = qp->orq[qp->orqr.head & qp->orqr.mask];
    if (idx == SWP_ORQ_RTR)
        return;
    w = &qp->sq[idx & qp->sqr.mask];
    off = w->sent + rx->seg_len;        /* w->sent: the segments before this one */
    if (off >= w->len)
        return;
    if (!qp->ctx->rx_spill && !(qp->ctx->rx_spill = malloc(SWP_RX_SPILL)))
        return;                         /* then one segment per read, as before */
    while (r->nspec < SWP_RX_SPEC_FPDUS && off < w->len) {
        struct rx_spec *s = &r->spec[r->nspec];
        uint32_t len = w->len - off < rx->seg_len ? (uint32_t)(w->len - off) : rx->seg_len;
        uint32_t ulpdu = SWP_HDR_TAGGED + len;
        int n;

        /* room for header, payload, trailer, and the lookahead after them */
        if (r->n + 3 > RX_IOV_MAX)
            break;
        rx_iov(r, s->hdr, sizeof(s->hdr));
        n = swp_sgl_iov(qp, w->sge, w->num_sge, off, len, &r->iov[r->n], NULL,
                        RX_IOV_MAX - r->n - 2, false);
        if (n <= 0) {
            r->n--;
            break;
        }
        s->iov_first = r->n;
        s->niov = (uint32_t)n;
        r->n += (uint32_t)n;
        s->len = len;
        s->trailer_len = swp_mpa_pad(ulpdu) + SWP_MPA_CRC_LEN;
        rx_iov(r, s->trailer, s->trailer_len);
        off += len;
        r->nspec++;
    }
}

/* n payload octets of the current segment arrived where the placement
 * cursor points: fold them into the CRC and move the cursor past them. */
static void rx_placed(struct siwarp_qp *qp, uint32_t n)
{
    struct swp_rx *rx = &qp->rx;

    rx->payload_left -= n;
    rx->direct += n;
    rx->stream_off += n;
    qp->ctx->moved += n;
    while (n) {
        struct iovec *v = &rx->place_iov[rx->place_idx];
        uint32_t take = (uint32_t)(v->iov_len - rx->place_off);
        if (take > n)
            take = n;
        if (qp->nego.crc)
            rx->crc = swp_crc32c(rx->crc, (uint8_t *)v->iov_base + rx->place_off, take);
        rx->place_off += take;
        if (rx->place_off == v->iov_len) {
            rx->place_idx++;
            rx->place_off = 0;
        }
        n -= take;
    }
    if (rx->payload_left == 0) {
        rx->state = SWP_RX_TRAILER;
        rx->trailer_got = 0;
    }
}

/* n octets of the current segment's trailer (pad, CRC) arrived at src:
 * 0, or the CRC check's error once the trailer is whole. */
static int rx_trailer(struct siwarp_qp *qp, const uint8_t *src, uint32_t n)
{
    struct swp_rx *rx = &qp->rx;
    uint32_t pad = rx->trailer_want - SWP_MPA_CRC_LEN;

    if (src != rx->trailer + rx->trailer_got)
        memcpy(rx->trailer + rx->trailer_got, src, n);
    if (qp->nego.crc && rx->trailer_got < pad) {
        /* the pad is covered by the CRC, the CRC field is not */
        uint32_t in_pad = pad - rx->trailer_got < n ? pad - rx->trailer_got : n;
        rx->crc = swp_crc32c(rx->crc, rx->trailer + rx->trailer_got, in_pad);
    }
    rx->trailer_got += n;
    rx->stream_off += n;
    qp->ctx->moved += n;
    return rx->trailer_got == rx->trailer_want ? swp_rx_fpdu_done(qp) : 0;
}

/* The stream left the prediction: gather the n octets read from iovec
 * first on (in stream order) and parse them. */
static int rx_spill(struct siwarp_qp *qp, const struct rx_read *r, uint32_t first, size_t n)
{
    uint8_t *spill = qp->ctx->rx_spill;
    size_t got = 0;

    for (uint32_t i = first; i < r->n && got < n; i++) {
        size_t take = r->iov[i].iov_len < n - got ? r->iov[i].iov_len : n - got;
        memcpy(spill + got, r->iov[i].iov_base, take);
        got += take;
    }
    return swp_rx_parse(qp, spill, (uint32_t)got);
}

/* Take predicted FPDU j, whose first octet is the next one read; *left
 * octets of the read remain.  1: stop (the read ended in it, or left the
 * prediction and was parsed); 0: go on with the next; or an error. */
static int rx_spec_take(struct siwarp_qp *qp, const struct rx_read *r, uint32_t j, size_t *left)
{
    struct swp_rx *rx = &qp->rx;
    const struct rx_spec *s = &r->spec[j];
    uint32_t n;
    int rc;

    if (*left < sizeof(s->hdr)) {
        /* the read ended inside the header: stage it, as a lookahead */
        memcpy(rx->buf, s->hdr, *left);
        rx->buf_head = 0;
        rx->buf_tail = (uint32_t)*left;
        *left = 0;
        return 1;
    }
    rc = swp_rx_parse(qp, s->hdr, sizeof(s->hdr));
    if (rc < 0)
        return rc;
    *left -= sizeof(s->hdr);
    if (rx->state != SWP_RX_PAYLOAD || rx->op != SWP_OP_READ_RESP || rx->seg_len != s->len ||
        rx->place_niov != s->niov || rx->place_idx != 0 || rx->place_off != 0 ||
        rx->place_iov[0].iov_base != r->iov[s->iov_first].iov_base) {
        rx->spec_misses++;
        rc = rx_spill(qp, r, s->iov_first, *left);
        *left = 0;
        return rc < 0 ? rc : 1;
    }
    rx->spec_hits++;
    n = *left < s->len ? (uint32_t)*left : s->len;
    rx_placed(qp, n);
    *left -= n;
    if (rx->payload_left)
        return 1;
    n = *left < s->trailer_len ? (uint32_t)*left : s->trailer_len;
    rc = rx_trailer(qp, s->trailer, n);
    *left -= n;
    if (rc < 0)
        return rc;
    return rx->state == SWP_RX_HDR ? 0 : 1;
}

ssize_t swp_rx_direct(struct siwarp_qp *qp, bool *full)
{
    struct swp_rx *rx = &qp->rx;
    struct rx_read r;
    uint32_t want = rx->payload_left, n;
    size_t asked = 0, left;
    ssize_t got;
    int rc;

    r.n = r.nspec = 0;
    for (uint32_t i = rx->place_idx; i < rx->place_niov && want; i++) {
        size_t off = i == rx->place_idx ? rx->place_off : 0;
        size_t len = rx->place_iov[i].iov_len - off;
        if (len > want)
            len = want;
        rx_iov(&r, (uint8_t *)rx->place_iov[i].iov_base + off, len);
        want -= (uint32_t)len;
    }
    rx_iov(&r, rx->trailer, rx->trailer_want);
    rx_predict(qp, &r);
    rx->buf_head = rx->buf_tail = 0;
    rx_iov(&r, rx->buf, SWP_RX_LOOKAHEAD);
    for (uint32_t i = 0; i < r.n; i++)
        asked += r.iov[i].iov_len;
    /* MSG_DONTWAIT: a read that asks past what has come must not wait for
     * it, whatever the descriptor's mode */
    struct msghdr msg = { .msg_iov = r.iov, .msg_iovlen = r.n };
    got = recvmsg(qp->pl.fd, &msg, MSG_DONTWAIT);
    if (got <= 0)
        return got == 0 ? 0 : -errno;
    SWP_TL(SWP_TL_RX_DIRECT, got);
    *full = (size_t)got == asked;
    rx->behind = *full;
    left = (size_t)got;

    n = left < rx->payload_left ? (uint32_t)left : rx->payload_left;
    rx_placed(qp, n);
    left -= n;
    if (rx->payload_left)
        return got;
    n = left < rx->trailer_want ? (uint32_t)left : rx->trailer_want;
    rc = rx_trailer(qp, rx->trailer, n);
    left -= n;
    if (rc < 0)
        return rc;
    if (rx->state != SWP_RX_HDR)
        return got;
    for (uint32_t j = 0; j < r.nspec && left; j++) {
        rc = rx_spec_take(qp, &r, j, &left);
        if (rc < 0)
            return rc;
        if (rc > 0)
            return got;
    }
    /* what remains is lookahead, already in the staging buffer */
    rx->buf_tail = (uint32_t)left;
    return got;
}
