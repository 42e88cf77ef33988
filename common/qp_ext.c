/*
 * qp_ext.c - the RFC 7306 RDMAP extensions on a QP: Atomic Requests and
 * Responses, and Immediate Data.  Both directions are here: what a posted
 * WR needs (verbs.c calls swp_ext_post_check / swp_ext_post_fill), the
 * FPDUs qp_tx_ops.c's swp_tx_fill queues, the header checks and
 * completions qp_rx_ops.c's opcode table calls, and the atomic itself.
 *
 * Only a QP that negotiated RFC 7306 (nego.rfc7306, mpa.h) sends or takes
 * these opcodes; to any other, one is an unexpected opcode (RFC 5040 4.3).
 * An atomic is Read-like: its request goes on untagged queue 1 with the Read
 * Requests, holds an ORQ slot at the requester and an IRQ slot at the
 * responder (so IRD/ORD bound Reads and atomics together), and is answered
 * in order; the answer goes on queue 3.
 */
#include <stdlib.h>
#include <string.h>

#include "qp_tx.h"

/* ---- the atomic itself ------------------------------------------------------ */

/* RFC 7306 FetchAdd with an Add Mask: the mask's set bits are the top bits
 * of the fields the 64 bits are cut into; a carry out of a field's top bit
 * is dropped.  Clearing the top bits before the add keeps every carry in
 * its field; xor puts the top bits (and the carries into them) back. */
static uint64_t swp_masked_add(uint64_t old, uint64_t add, uint64_t mask)
{
    return ((old & ~mask) + (add & ~mask)) ^ ((old ^ add) & mask);
}

uint64_t swp_atomic_exec(uint64_t *t, unsigned op, uint64_t data, uint64_t data_mask,
                         uint64_t cmp, uint64_t cmp_mask)
{
    uint64_t old;

    if (op == SWP_ATOMIC_FETCH_ADD) {
        if (!data_mask)
            return __atomic_fetch_add(t, data, __ATOMIC_SEQ_CST);
        old = __atomic_load_n(t, __ATOMIC_RELAXED);
        while (!__atomic_compare_exchange_n(t, &old, swp_masked_add(old, data, data_mask), false,
                                            __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
            ;
        return old;
    }
    /* CmpSwap: compare the bits of Compare Mask, swap in those of Swap Mask */
    if (data_mask == UINT64_MAX && cmp_mask == UINT64_MAX) {
        old = cmp;
        __atomic_compare_exchange_n(t, &old, data, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return old;
    }
    old = __atomic_load_n(t, __ATOMIC_RELAXED);
    while (((old ^ cmp) & cmp_mask) == 0 &&
           !__atomic_compare_exchange_n(t, &old, (old & ~data_mask) | (data & data_mask), false,
                                        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        ;
    return old;
}

/* ---- posting ------------------------------------------------------------------ */

static bool swp_wr_is_atomic(enum siwarp_wr_opcode op)
{
    return op >= SIWARP_WR_ATOMIC_FETCH_ADD && op <= SIWARP_WR_ATOMIC_MASKED_CMP_SWP;
}

bool swp_wr_is_ext(enum siwarp_wr_opcode op)
{
    return op >= SIWARP_WR_ATOMIC_FETCH_ADD && op <= SIWARP_WR_IMM_DATA_SE;
}

bool swp_wr_awaits_response(enum siwarp_wr_opcode op)
{
    return op == SIWARP_WR_READ || swp_wr_is_atomic(op);
}

int swp_ext_post_check(struct siwarp_qp *qp, const struct siwarp_send_wr *wr)
{
    if (!qp->nego.rfc7306)
        return -EOPNOTSUPP;
    if (wr->send_flags & (SIWARP_SEND_INLINE | SIWARP_SEND_UNREGISTERED))
        return -EINVAL;
    if (!swp_wr_is_atomic(wr->opcode))
        return wr->num_sge == 0 ? 0 : -EINVAL;      /* Immediate Data: no payload */
    /* RFC 7306: the target is one naturally aligned 64-bit word; the
     * original value comes back into one local SGE */
    if (wr->atomic.remote_addr & (SWP_ATOMIC_LEN - 1) || wr->num_sge != 1 ||
        wr->sg_list[0].length < SWP_ATOMIC_LEN)
        return -EINVAL;
    return swp_mem_check_local(qp->ctx, qp->pd, &wr->sg_list[0], SIWARP_ACCESS_LOCAL_WRITE);
}

/* The wire form of each atomic WR opcode (RFC 7306): its operation, and
 * whether the WR's masks apply or the unmasked ones (FetchAdd: no field
 * boundaries; CmpSwap: compare and swap every bit). */
static const struct {
    unsigned op;
    bool masked;
} swp_amo_wr[] = {
    [SIWARP_WR_ATOMIC_FETCH_ADD - SIWARP_WR_ATOMIC_FETCH_ADD]        = { SWP_ATOMIC_FETCH_ADD, false },
    [SIWARP_WR_ATOMIC_CMP_SWP - SIWARP_WR_ATOMIC_FETCH_ADD]          = { SWP_ATOMIC_CMP_SWAP, false },
    [SIWARP_WR_ATOMIC_MASKED_FETCH_ADD - SIWARP_WR_ATOMIC_FETCH_ADD] = { SWP_ATOMIC_FETCH_ADD, true },
    [SIWARP_WR_ATOMIC_MASKED_CMP_SWP - SIWARP_WR_ATOMIC_FETCH_ADD]   = { SWP_ATOMIC_CMP_SWAP, true },
};

int swp_ext_post_fill(struct siwarp_qp *qp, struct swp_swqe *w, uint32_t slot,
                      const struct siwarp_send_wr *wr)
{
    struct swp_amo *a;
    bool masked;

    if (!swp_wr_is_atomic(wr->opcode)) {
        w->raddr = wr->imm_data;    /* Immediate Data names no remote buffer */
        return 0;
    }
    if (!qp->amo) {
        qp->amo = malloc((size_t)(qp->sqr.mask + 1) * sizeof(*qp->amo));
        if (!qp->amo)
            return -ENOMEM;
    }
    a = &qp->amo[slot];
    w->raddr = wr->atomic.remote_addr;
    w->rkey = wr->atomic.rkey;
    w->len = SWP_ATOMIC_LEN;
    a->op = swp_amo_wr[wr->opcode - SIWARP_WR_ATOMIC_FETCH_ADD].op;
    masked = swp_amo_wr[wr->opcode - SIWARP_WR_ATOMIC_FETCH_ADD].masked;
    if (a->op == SWP_ATOMIC_FETCH_ADD) {
        a->data = wr->atomic.compare_add;
        a->data_mask = masked ? wr->atomic.compare_add_mask : 0;
        a->cmp = a->cmp_mask = 0;                   /* unused by FetchAdd */
    } else {
        a->data = wr->atomic.swap;
        a->data_mask = masked ? wr->atomic.swap_mask : UINT64_MAX;
        a->cmp = wr->atomic.compare_add;
        a->cmp_mask = masked ? wr->atomic.compare_add_mask : UINT64_MAX;
    }
    return 0;
}

/* ---- transmit ------------------------------------------------------------------ */

/* RFC 7306: an Atomic Request, untagged on queue 1 (as a Read Request). */
bool swp_tx_atomic_req(struct siwarp_qp *qp, const struct swp_swqe *w, uint32_t req_id)
{
    const struct swp_amo *a = &qp->amo[(uint32_t)(w - qp->sq)];
    struct swp_rdmap_atomic_req *r;
    uint8_t *h;

    if (!swp_tx_room(qp, 0, 0))
        return false;
    h = swp_tx_fpdu_hdr(&qp->tx);
    swp_ddp_build_untagged(h + SWP_MPA_HDR_LEN, SWP_OP_ATOMIC_REQ, true, SWP_QN_READ_REQ,
                           qp->tx_msn[SWP_QN_READ_REQ]++, 0, 0);
    r = (struct swp_rdmap_atomic_req *)(h + SWP_MPA_HDR_LEN + SWP_HDR_UNTAGGED);
    swp_put32(r->opcode, a->op);            /* the 28 reserved bits zero */
    swp_put32(r->req_id, req_id);
    swp_put32(r->stag, w->rkey);
    swp_put64(r->to, w->raddr);
    swp_put64(r->data, a->data);
    swp_put64(r->data_mask, a->data_mask);
    swp_put64(r->cmp, a->cmp);
    swp_put64(r->cmp_mask, a->cmp_mask);
    swp_tx_fpdu(qp, h, SWP_HDR_ATOMIC_REQ, NULL, 0, 0);
    return true;
}

/* RFC 7306: the Atomic Response to the oldest request served, queue 3. */
bool swp_tx_atomic_resp(struct siwarp_qp *qp, struct swp_irqe *r)
{
    struct swp_rdmap_atomic_resp *a;
    uint8_t *h;

    if (!swp_tx_room(qp, 0, 0))
        return false;
    h = swp_tx_fpdu_hdr(&qp->tx);
    swp_ddp_build_untagged(h + SWP_MPA_HDR_LEN, SWP_OP_ATOMIC_RESP, true, SWP_QN_ATOMIC_RESP,
                           qp->tx_msn[SWP_QN_ATOMIC_RESP]++, 0, 0);
    a = (struct swp_rdmap_atomic_resp *)(h + SWP_MPA_HDR_LEN + SWP_HDR_UNTAGGED);
    swp_put32(a->req_id, r->req_id);
    swp_put64(a->orig, r->orig);
    swp_tx_fpdu(qp, h, SWP_HDR_ATOMIC_RESP, NULL, 0, 0);
    r->done_at = qp->tx.queued;
    qp->irqr.head++;
    return true;
}

/* RFC 7306: Immediate Data, untagged on queue 0 (as a Send). */
bool swp_tx_imm(struct siwarp_qp *qp, struct swp_swqe *w)
{
    struct swp_rdmap_imm *d;
    uint8_t *h;

    if (!swp_tx_room(qp, 0, 0))
        return false;
    h = swp_tx_fpdu_hdr(&qp->tx);
    swp_ddp_build_untagged(h + SWP_MPA_HDR_LEN,
                           w->opcode == SIWARP_WR_IMM_DATA_SE ? SWP_OP_IMM_SE : SWP_OP_IMM, true,
                           SWP_QN_SEND, qp->tx_msn[SWP_QN_SEND]++, 0, 0);
    d = (struct swp_rdmap_imm *)(h + SWP_MPA_HDR_LEN + SWP_HDR_UNTAGGED);
    swp_put64(d->data, w->raddr);      /* the Immediate Data (swp_ext_post_fill) */
    swp_tx_fpdu(qp, h, SWP_HDR_IMM, NULL, 0, 0);
    w->segmented = true;
    w->done_at = qp->tx.queued;
    return true;
}

/* ---- receive: header checks ------------------------------------------------------ */

#define T_UNEXPECTED SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_UNEXP_OPCODE)
#define T_TOO_LONG   SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_TOO_LONG)
#define T_INV_MO     SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_INV_MO)

/* What every RFC 7306 message shares (a stream that did not negotiate RFC
 * 7306 refused its opcodes already, swp_ddp_check_ctrl): its queue and MSN
 * (RFC 5041 5.3), and one whole segment whose header is all of it. */
static uint32_t rx_ext_common(struct siwarp_qp *qp, unsigned qn)
{
    const struct swp_ddp_untagged_hdr *u =
        (const struct swp_ddp_untagged_hdr *)(qp->rx.hdr + SWP_MPA_HDR_LEN);
    uint32_t term;

    qp->rx.place_niov = 0;
    term = swp_rx_check_untagged(qp, qn);
    if (term)
        return term;
    if (swp_get32(u->mo) != 0)
        return T_INV_MO;
    if (!qp->rx.last || qp->rx.seg_len != 0)
        return T_TOO_LONG;
    return 0;
}

static const void *rx_ext_hdr(const struct siwarp_qp *qp)
{
    return qp->rx.hdr + SWP_MPA_HDR_LEN + SWP_HDR_UNTAGGED;
}

uint32_t swp_rx_hdr_imm(struct siwarp_qp *qp)
{
    uint32_t term = rx_ext_common(qp, SWP_QN_SEND);

    if (term)
        return term;
    /* RFC 7306: Immediate Data consumes an untagged buffer (RFC 5041 7.2:
     * none posted is "no buffer available") */
    if (!swp_recv_wqe_peek(qp))
        return SWP_TERM(SWP_TERM_LAYER_DDP, SWP_DDP_ET_UNTAGGED, SWP_DDP_EC_U_NO_BUF);
    swp_recv_wqe_take(qp);
    return 0;
}

/* The responder's checks, in the fixed order STag valid -> PD -> rights ->
 * bounds (offset wrap included) -> alignment; a failure is a Terminate and
 * nothing is executed (the atomic runs only in swp_rx_done_atomic_req,
 * after the CRC). */
uint32_t swp_rx_hdr_atomic_req(struct siwarp_qp *qp)
{
    const struct swp_rdmap_atomic_req *a = rx_ext_hdr(qp);
    uint32_t term = rx_ext_common(qp, SWP_QN_READ_REQ);
    unsigned op = swp_atomic_req_op(a);
    uint8_t *t = NULL;

    if (term)
        return term;
    if (op != SWP_ATOMIC_FETCH_ADD && op != SWP_ATOMIC_CMP_SWAP)
        return T_UNEXPECTED;
    /* RFC 5040 6.5 and RFC 7306: Reads and atomics together beyond the IRD
     * we advertised */
    if (swp_irq_outstanding(qp) >= qp->nego.ird || swp_irq_outstanding(qp) > qp->irqr.mask)
        return SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_OP, SWP_RDMAP_EC_CATA_STREAM);
    term = swp_mem_check_remote(qp->ctx, qp->pd, swp_get32(a->stag), swp_get64(a->to),
                                SWP_ATOMIC_LEN, SIWARP_ACCESS_REMOTE_ATOMIC, SWP_TERM_LAYER_RDMAP,
                                &t);
    if (term)
        return term;
    /* a misaligned target cannot be updated atomically: it is outside
     * what the STag offers an atomic */
    if ((uintptr_t)t & (SWP_ATOMIC_LEN - 1))
        return SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_PROT, SWP_RDMAP_EC_BASE_BOUNDS);
    return 0;
}

/* RFC 7306: the response answers our oldest outstanding request, which
 * must be an atomic and carry the same Request Identifier. */
uint32_t swp_rx_hdr_atomic_resp(struct siwarp_qp *qp)
{
    const struct swp_rdmap_atomic_resp *a = rx_ext_hdr(qp);
    uint32_t term = rx_ext_common(qp, SWP_QN_ATOMIC_RESP);
    uint32_t idx;

    if (term)
        return term;
    if (!swp_ring_count(&qp->orqr))
        return T_UNEXPECTED;
    idx = qp->orq[qp->orqr.head & qp->orqr.mask];
    if (idx == SWP_ORQ_RTR || !swp_wr_is_atomic(qp->sq[idx & qp->sqr.mask].opcode) ||
        swp_get32(a->req_id) != qp->orqr.head)
        return T_UNEXPECTED;
    return 0;
}

/* ---- receive: completions ---------------------------------------------------------- */

void swp_rx_done_imm(struct siwarp_qp *qp)
{
    const struct swp_rdmap_imm *d = rx_ext_hdr(qp);
    struct siwarp_wc wc;

    memset(&wc, 0, sizeof(wc));
    wc.opcode = SIWARP_WC_RECV;
    wc.status = SIWARP_WC_SUCCESS;
    wc.qp = qp;
    wc.wc_flags = SIWARP_WC_WITH_IMM;
    if (qp->rx.op == SWP_OP_IMM_SE)
        wc.wc_flags |= SIWARP_WC_SOLICITED;
    wc.imm_data = swp_get64(d->data);
    wc.wr_id = swp_recv_wqe_peek(qp)->wr_id;
    swp_recv_wqe_done(qp);
    qp->rx.msn[SWP_QN_SEND]++;
    swp_rx_deliver(qp, &wc, NULL);
}

void swp_rx_done_atomic_req(struct siwarp_qp *qp)
{
    const struct swp_rdmap_atomic_req *a = rx_ext_hdr(qp);
    struct swp_irqe *r = &qp->irq[qp->irqr.tail & qp->irqr.mask];
    uint8_t *t = NULL;
    uint32_t term;

    qp->rx.msn[SWP_QN_READ_REQ]++;
    /* checked by swp_rx_hdr_atomic_req, looked up again: the region may
     * have gone while the CRC was still on its way */
    term = swp_mem_check_remote(qp->ctx, qp->pd, swp_get32(a->stag), swp_get64(a->to),
                                SWP_ATOMIC_LEN, SIWARP_ACCESS_REMOTE_ATOMIC, SWP_TERM_LAYER_RDMAP, &t);
    if (term) {
        swp_qp_fatal(qp, term, qp->rx.hdr, SWP_MPA_HDR_LEN + SWP_HDR_ATOMIC_REQ, -EPROTO,
                     "Atomic Request: its target went before the request was whole");
        return;
    }
    memset(r, 0, sizeof(*r));
    r->atomic = true;
    r->req_id = swp_get32(a->req_id);
    r->orig = swp_atomic_exec((uint64_t *)(void *)t, swp_atomic_req_op(a), swp_get64(a->data),
                              swp_get64(a->data_mask), swp_get64(a->cmp),
                              swp_get64(a->cmp_mask));
    qp->irqr.tail++;
}

void swp_rx_done_atomic_resp(struct siwarp_qp *qp)
{
    const struct swp_rdmap_atomic_resp *a = rx_ext_hdr(qp);
    uint32_t idx = qp->orq[qp->orqr.head & qp->orqr.mask];
    struct swp_swqe *w = &qp->sq[idx & qp->sqr.mask];
    uint64_t orig = swp_get64(a->orig);

    qp->rx.msn[SWP_QN_ATOMIC_RESP]++;
    /* the SGE was checked at post (LOCAL_WRITE, 8 octets); host order */
    memcpy(w->sge[0].addr, &orig, sizeof(orig));
    w->sent = SWP_ATOMIC_LEN;
    w->complete = true;
    qp->orqr.head++;
    swp_sq_retire(qp);
}
