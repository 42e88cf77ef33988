/*
 * qp_tx.h - the transmit engine's framing helpers, shared by qp_tx.c (FPDU
 * framing, batching, writing) and qp_tx_ops.c (what each outgoing message
 * is: Send and Write segments, Read Requests and Responses, the RFC 6581
 * RTR).  Private to those two files.
 */
#ifndef SWP_QP_TX_H
#define SWP_QP_TX_H

#include "swp.h"

#define SWP_MARKER_FPDU_CAP 4096   /* payload cap per FPDU when markers are on */
#define SWP_TX_COPY_MAX     256    /* payloads up to this are copied, not gathered */

static inline uint8_t *swp_tx_space(struct swp_tx *tx, uint32_t n)
{
    uint8_t *p;

    if (tx->hdrs_used + n > SWP_TX_HDRS)
        return NULL;
    p = tx->hdrs + tx->hdrs_used;
    tx->hdrs_used += n;
    return p;
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
 * gathers SWP_TX_BATCH again, as sendmsg calls cost, and no more, so that
 * the bytes a CRC pass brought into the cache are still there when the
 * kernel copies them.
 */
static inline uint64_t swp_tx_batch_cap(const struct swp_tx *tx)
{
    return (uint64_t)SWP_TX_BATCH_FIRST << tx->ramp;
}

/* A whole batch was written: the next may be twice as large, up to
 * SWP_TX_BATCH. */
static inline void swp_tx_batch_written(struct swp_tx *tx)
{
    if (swp_tx_batch_cap(tx) < SWP_TX_BATCH)
        tx->ramp++;
}

/* Is there room for one more FPDU with this payload and this many pieces? */
static inline bool swp_tx_room(struct siwarp_qp *qp, uint32_t plen, uint32_t pieces)
{
    struct swp_tx *tx = &qp->tx;
    uint32_t markers = qp->nego.markers_tx ? plen / SWP_MPA_MARKER_PERIOD + 3 : 0;
    uint32_t iovs = 3 + pieces + 2 * markers;
    uint32_t bytes = SWP_MPA_HDR_LEN + SWP_HDR_MAX + 3 + SWP_MPA_CRC_LEN +
                     SWP_MPA_MARKER_LEN * markers + (plen <= SWP_TX_COPY_MAX ? plen : 0);

    if (tx->niov && tx->pending >= swp_tx_batch_cap(tx))
        return false;
    return tx->niov + iovs <= SWP_TX_IOV && tx->hdrs_used + bytes <= SWP_TX_HDRS;
}

/* Header space for one FPDU: the caller builds the DDP/RDMAP header at
 * the returned pointer + 2. */
static inline uint8_t *swp_tx_fpdu_hdr(struct swp_tx *tx)
{
    return swp_tx_space(tx, SWP_MPA_HDR_LEN + SWP_HDR_MAX);
}

/* RFC 5040 4.3: the RDMAP opcode of each Send work request */
static inline unsigned swp_tx_send_op(enum siwarp_wr_opcode op)
{
    static const unsigned ops[] = {
        [SIWARP_WR_SEND] = SWP_OP_SEND, [SIWARP_WR_SEND_SE] = SWP_OP_SEND_SE,
        [SIWARP_WR_SEND_INV] = SWP_OP_SEND_INV, [SIWARP_WR_SEND_SE_INV] = SWP_OP_SEND_SE_INV,
    };
    return ops[op];
}

static inline bool swp_tx_send_inv(enum siwarp_wr_opcode op)
{
    return op == SIWARP_WR_SEND_INV || op == SIWARP_WR_SEND_SE_INV;
}

static inline uint32_t swp_tx_max_payload(struct siwarp_qp *qp, uint32_t hdrlen)
{
    uint32_t m = qp->nego.mulpdu - hdrlen;

    if (qp->nego.markers_tx && m > SWP_MARKER_FPDU_CAP)
        m = SWP_MARKER_FPDU_CAP;
    return m;
}

/* qp_tx.c: emit one FPDU -- ULPDU_Length, the header already built at h + 2,
 * the payload pieces, pad, CRC (RFC 5044 4.1 - 4.4) */
void swp_tx_fpdu(struct siwarp_qp *qp, uint8_t *h, uint32_t hdrlen, const struct iovec *pl,
                 uint32_t npl, uint32_t plen);
/* the same for one payload piece whose CRC32c is known, with op =
 * x^(8 plen) mod P (read_hint.c): the payload is not read */
void swp_tx_fpdu_crc(struct siwarp_qp *qp, uint8_t *h, uint32_t hdrlen, const struct iovec *pl,
                     uint32_t plen, uint32_t pcrc, uint32_t op);
/* qp_tx_ops.c: queue as many FPDUs as the batch has room for */
void swp_tx_fill(struct siwarp_qp *qp);

#endif
