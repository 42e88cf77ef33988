/*
 * read_hint.h - a Read announced before it comes (siwarp_qp_read_hint):
 * the CRCs of its Response's payload, computed while the responder would
 * only wait, and how the transmit path uses them.  Used by progress.c
 * (idle passes), qp_rx_ops.c (the Read Request), qp_tx_ops.c (the
 * Response), qp.c (flush and destroy).
 */
#ifndef SWP_READ_HINT_H
#define SWP_READ_HINT_H

#include "swp.h"

struct swp_read_hint {
    struct swp_list link;        /* ctx->hints while CRCs are left to compute */
    struct siwarp_qp *qp;
    uint32_t stag;
    uint64_t gen;                /* the MR's hint_gen when it was made */
    const uint8_t *addr;
    uint32_t len;
    uint32_t seg;                /* payload octets per Response segment */
    uint32_t nseg, done;         /* segments; payload CRCs computed so far */
    bool ops_ready;
    uint32_t op_full, op_last;   /* x^(8 seg), x^(8 last) mod P: CRC shifts */
    uint32_t crc[];              /* the payload CRC32c of each segment */
};

/* In a progress pass that moved nothing: up to two steps of the oldest
 * hints with work left (a step: a hint's shift operators, or one
 * segment's CRC).  Returns 1 if it did any, 0 if none was left. */
int swp_read_hint_step(struct siwarp_ctx *ctx);

/* A Read Request for (stag, to, len) came and passed its checks: if it is
 * the one qp's hint announced, the irqe takes the hint (r->hint);
 * otherwise r->hint is NULL and the hint waits for its own Read. */
void swp_read_hint_take(struct siwarp_qp *qp, struct swp_irqe *r, uint32_t stag, uint64_t to,
                        uint32_t len);

/* The Response segment of r at payload offset off, plen octets: true, with
 * its payload CRC and the shift over plen octets, when they were computed
 * for exactly that segment. */
bool swp_read_hint_crc(const struct swp_irqe *r, uint32_t off, uint32_t plen, uint32_t *pcrc,
                       uint32_t *op);

/* r's Response is all queued: its hint goes. */
void swp_read_hint_retire(struct swp_irqe *r);

/* The QP flushes or goes: its hint and those of unanswered Reads go. */
void swp_read_hint_flush(struct siwarp_qp *qp);

#endif
