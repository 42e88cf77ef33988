/*
 * srq.c - shared receive queues: one pool of posted receive buffers for
 * many QPs (verbs' SRQ), and the one place that says which receive WQE an
 * untagged Send segment lands in, for QPs with and without an SRQ.
 *
 * RFC 5041 5.3: an untagged message is placed by (QN, MSN, MO) into the
 * buffer its MSN names.  With a private RQ the MSN-th buffer is the RQ's
 * head; with an SRQ the first segment of a message takes the SRQ's oldest
 * WQE and the QP keeps it (qp->srq_wqe) until the message's last segment,
 * so segments of one message never spill into another buffer while other
 * QPs take WQEs in between.
 */
#include <stdlib.h>
#include <string.h>

#include "swp.h"

static uint32_t srq_pow2(uint32_t n)
{
    uint32_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

/* Ring and SGE arrays for n slots, the posted WQEs moved over in order. */
static int srq_realloc(struct siwarp_srq *srq, uint32_t n)
{
    struct swp_rwqe *rq = calloc(n, sizeof(*rq));
    struct siwarp_sge *sge = calloc((size_t)n * srq->max_sge, sizeof(*sge));
    uint32_t count = srq->rq ? swp_ring_count(&srq->rqr) : 0;

    if (!rq || !sge) {
        free(rq);
        free(sge);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        rq[i].sge = sge + (size_t)i * srq->max_sge;
    for (uint32_t i = 0; i < count; i++) {
        const struct swp_rwqe *o = &srq->rq[(srq->rqr.head + i) & srq->rqr.mask];
        rq[i].wr_id = o->wr_id;
        rq[i].num_sge = o->num_sge;
        rq[i].len = o->len;
        memcpy(rq[i].sge, o->sge, (size_t)o->num_sge * sizeof(*sge));
    }
    free(srq->rq);
    free(srq->sge);
    srq->rq = rq;
    srq->sge = sge;
    srq->rqr.head = 0;
    srq->rqr.tail = count;
    srq->rqr.mask = n - 1;
    return 0;
}

int siwarp_create_srq(struct siwarp_pd *pd, const struct siwarp_srq_init_attr *attr,
                      struct siwarp_srq **out)
{
    struct siwarp_srq *srq;
    int rc;

    if (!pd || !attr || !out)
        return -EINVAL;
    if (pd->ctx->hw)
        return -EOPNOTSUPP;     /* not mapped to ibv_create_srq (yet): see siwarp.h */
    if (attr->max_wr == 0 || attr->max_wr > (1u << 20) || attr->max_sge > SWP_MAX_SGE)
        return -EINVAL;
    srq = calloc(1, sizeof(*srq));
    if (!srq)
        return -ENOMEM;
    srq->ctx = pd->ctx;
    srq->pd = pd;
    srq->max_wr = attr->max_wr;
    srq->max_sge = attr->max_sge ? attr->max_sge : 1;
    rc = srq_realloc(srq, srq_pow2(attr->max_wr));
    if (rc < 0) {
        free(srq);
        return rc;
    }
    swp_lock(pd->ctx);
    pd->refs++;
    swp_unlock(pd->ctx);
    *out = srq;
    return 0;
}

int siwarp_destroy_srq(struct siwarp_srq *srq)
{
    struct siwarp_ctx *ctx;

    if (!srq)
        return -EINVAL;
    ctx = srq->ctx;
    swp_lock(ctx);
    if (srq->refs) {
        swp_unlock(ctx);
        return -EBUSY;
    }
    srq->pd->refs--;
    swp_unlock(ctx);
    free(srq->rq);
    free(srq->sge);
    free(srq);
    return 0;
}

SWP_HOT
int siwarp_post_srq_recv(struct siwarp_srq *srq, struct siwarp_recv_wr *wr,
                         struct siwarp_recv_wr **bad_wr)
{
    int rc = 0;

    if (!srq || !wr)
        return -EINVAL;
    swp_lock(srq->ctx);
    for (; wr; wr = wr->next) {
        struct swp_rwqe *w = &srq->rq[srq->rqr.tail & srq->rqr.mask];

        rc = swp_ring_count(&srq->rqr) >= srq->max_wr ? -ENOMEM
             : swp_rwqe_fill(srq->ctx, srq->pd, srq->max_sge, w, wr);
        if (rc < 0) {
            if (bad_wr)
                *bad_wr = wr;
            break;
        }
        srq->rqr.tail++;
    }
    swp_unlock(srq->ctx);
    return rc;
}

int siwarp_resize_srq(struct siwarp_srq *srq, uint32_t max_wr)
{
    int rc = 0;

    if (!srq || max_wr > (1u << 20))
        return -EINVAL;
    swp_lock(srq->ctx);
    if (max_wr < srq->max_wr) {
        rc = -EINVAL;
    } else {
        if (max_wr > srq->rqr.mask + 1)
            rc = srq_realloc(srq, srq_pow2(max_wr));
        if (rc == 0)
            srq->max_wr = max_wr;
    }
    swp_unlock(srq->ctx);
    return rc;
}

int siwarp_query_srq(struct siwarp_srq *srq, struct siwarp_srq_attr *a)
{
    if (!srq || !a)
        return -EINVAL;
    swp_lock(srq->ctx);
    a->max_wr = srq->max_wr;
    a->max_sge = srq->max_sge;
    a->posted = swp_ring_count(&srq->rqr);
    a->qps = srq->refs;
    swp_unlock(srq->ctx);
    return 0;
}

/* ---- the receive path's view (qp_rx.c, qp.c) ---------------------------------- */

SWP_HOT
struct swp_rwqe *swp_recv_wqe_peek(struct siwarp_qp *qp)
{
    struct siwarp_srq *srq = qp->srq;

    if (!srq)
        return qp->rqr.head == qp->rqr.tail ? NULL : &qp->rq[qp->rqr.head & qp->rqr.mask];
    if (qp->srq_bound)
        return &qp->srq_wqe;
    return srq->rqr.head == srq->rqr.tail ? NULL : &srq->rq[srq->rqr.head & srq->rqr.mask];
}

SWP_HOT
void swp_recv_wqe_take(struct siwarp_qp *qp)
{
    struct siwarp_srq *srq = qp->srq;
    const struct swp_rwqe *w;

    if (!srq || qp->srq_bound)
        return;
    w = &srq->rq[srq->rqr.head & srq->rqr.mask];
    qp->srq_wqe.wr_id = w->wr_id;
    qp->srq_wqe.num_sge = w->num_sge;
    qp->srq_wqe.len = w->len;
    qp->srq_wqe.sge = qp->srq_sge;
    memcpy(qp->srq_sge, w->sge, (size_t)w->num_sge * sizeof(qp->srq_sge[0]));
    qp->srq_bound = true;
    qp->srq_taken++;
    srq->rqr.head++;
}

SWP_HOT
void swp_recv_wqe_done(struct siwarp_qp *qp)
{
    if (qp->srq)
        qp->srq_bound = false;
    else
        qp->rqr.head++;
}

void swp_recv_flush(struct siwarp_qp *qp)
{
    struct siwarp_wc wc;

    memset(&wc, 0, sizeof(wc));
    wc.opcode = SIWARP_WC_RECV;
    wc.status = SIWARP_WC_WR_FLUSH_ERR;
    wc.qp = qp;
    /* an SRQ's unbound WQEs belong to no QP: they stay for the others */
    while (swp_recv_wqe_peek(qp) && (!qp->srq || qp->srq_bound)) {
        wc.wr_id = swp_recv_wqe_peek(qp)->wr_id;
        swp_cq_push(qp->rcq, &wc);
        swp_recv_wqe_done(qp);
    }
    if (qp->srq && !qp->srq_last) {
        wc.wr_id = 0;
        wc.opcode = SIWARP_WC_SRQ_LAST;
        swp_cq_push(qp->rcq, &wc);
        qp->srq_last = true;
    }
}
