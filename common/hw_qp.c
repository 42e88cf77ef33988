/*
 * hw_qp.c - QPs of the verbs backend: a siwarp_qp whose `hw` is a
 * struct swp_hw_qp, the verbs QP created by rdma_cm on connect / accept
 * (hw_cm.c), and the translation of posted work.
 *
 *  - SGEs name MRs by STag (the rkey); lkey is looked up where it differs.
 *  - Opcodes by table: Send / Send with SE / Send with Invalidate / Write /
 *    Read; SIGNALED, FENCE, INLINE map to the IBV_SEND_* flags.
 *  - Inline sends beyond what the provider inlines go through a per-QP
 *    registered bounce ring (one slot per send WR).
 *  - Work posted before the QP is connected waits here (struct swp_hw_pend)
 *    and is posted once rdma_cm created the QP (receives) or the connection
 *    is established (sends); on failure it completes flushed, as does work
 *    posted in ERROR.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw_int.h"

/* ---- QP ---------------------------------------------------------------------------- */

int swp_hw_create_qp(struct siwarp_pd *pd, const struct siwarp_qp_init_attr *attr,
                     struct siwarp_qp **out)
{
    struct swp_hw_ctx *h = swp_hwc(pd->ctx);
    struct siwarp_qp *qp;
    struct swp_hw_qp *q;

    if (!attr || !out || !attr->send_cq || !attr->recv_cq)
        return -EINVAL;
    if (attr->send_cq->ctx != pd->ctx || attr->recv_cq->ctx != pd->ctx)
        return -EINVAL;
    if (attr->max_send_wr == 0 || attr->max_send_wr > (uint32_t)h->attr.max_qp_wr ||
        attr->max_recv_wr > (uint32_t)h->attr.max_qp_wr || attr->max_sge > SWP_MAX_SGE ||
        attr->max_sge > (uint32_t)h->attr.max_sge)
        return -EINVAL;
    qp = calloc(1, sizeof(*qp));
    q = calloc(1, sizeof(*q));
    if (!qp || !q) {
        free(qp);
        free(q);
        return -ENOMEM;
    }
    q->kind = SWP_HW_QP;
    q->qp = qp;
    swp_list_init(&q->pend_send);
    swp_list_init(&q->pend_recv);
    qp->ctx = pd->ctx;
    qp->hw = q;
    qp->pd = pd;
    qp->scq = attr->send_cq;
    qp->rcq = attr->recv_cq;
    qp->init = *attr;
    if (qp->init.max_sge == 0)
        qp->init.max_sge = 1;
    qp->pl.fd = -1;                  /* siwarp_qp_fd: no socket of ours */
    qp->state = SIWARP_QPS_IDLE;
    swp_list_init(&qp->link);
    swp_qp_link(qp);
    *out = qp;
    return 0;
}

static void swp_hw_pend_free(struct swp_hw_pend *p)
{
    swp_list_del(&p->link);
    free(p->inline_copy);
    free(p);
}

/* Complete work that never reached the verbs QP with a flush status. */
static void swp_hw_flush_pending(struct siwarp_qp *qp)
{
    struct swp_hw_qp *q = qp->hw;
    struct siwarp_wc wc;

    while (!swp_list_empty(&q->pend_send)) {
        struct swp_hw_pend *p = swp_container_of(q->pend_send.next, struct swp_hw_pend, link);
        memset(&wc, 0, sizeof(wc));
        wc.wr_id = p->s.wr_id;
        wc.status = SIWARP_WC_WR_FLUSH_ERR;
        wc.opcode = p->s.opcode == SIWARP_WR_WRITE ? SIWARP_WC_WRITE :
                    p->s.opcode == SIWARP_WR_READ ? SIWARP_WC_READ : SIWARP_WC_SEND;
        wc.qp = qp;
        swp_cq_push(qp->scq, &wc);
        swp_hw_pend_free(p);
    }
    while (!swp_list_empty(&q->pend_recv)) {
        struct swp_hw_pend *p = swp_container_of(q->pend_recv.next, struct swp_hw_pend, link);
        memset(&wc, 0, sizeof(wc));
        wc.wr_id = p->r.wr_id;
        wc.status = SIWARP_WC_WR_FLUSH_ERR;
        wc.opcode = SIWARP_WC_RECV;
        wc.qp = qp;
        swp_cq_push(qp->rcq, &wc);
        swp_hw_pend_free(p);
    }
    q->npend_send = q->npend_recv = 0;
}

static void swp_hw_release_id(struct siwarp_qp *qp)
{
    struct swp_hw_qp *q = qp->hw;

    if (!q->id)
        return;
    if (q->ibqp) {
        swp_qpn_map_del(&swp_hwc(qp->ctx)->qpns, q->ibqp->qp_num);
        rdma_destroy_qp(q->id);
        q->ibqp = NULL;
        /* none of its completions may outlive its number (swp_hw_cq_stash) */
        swp_hw_cq_stash(qp->scq);
        if (qp->rcq != qp->scq)
            swp_hw_cq_stash(qp->rcq);
    }
    rdma_destroy_id(q->id);
    q->id = NULL;
}

int swp_hw_destroy_qp(struct siwarp_qp *qp)
{
    struct swp_hw_qp *q = qp->hw;
    struct siwarp_ctx *ctx = qp->ctx;

    swp_lock(ctx);
    if (q->id && !q->disconnected &&
        (qp->state == SIWARP_QPS_RTS || qp->state == SIWARP_QPS_CLOSING))
        rdma_disconnect(q->id);
    q->disconnected = true;
    swp_hw_release_id(qp);
    while (!swp_list_empty(&q->pend_send))
        swp_hw_pend_free(swp_container_of(q->pend_send.next, struct swp_hw_pend, link));
    while (!swp_list_empty(&q->pend_recv))
        swp_hw_pend_free(swp_container_of(q->pend_recv.next, struct swp_hw_pend, link));
    swp_qp_unlink(qp);              /* its CQEs still in a verbs CQ are dropped */
    swp_cq_purge_qp(qp->scq, qp);
    swp_cq_purge_qp(qp->rcq, qp);
    qp->pd->refs--;
    qp->scq->refs--;
    qp->rcq->refs--;
    swp_unlock(ctx);
    if (q->bounce_mr)
        ibv_dereg_mr(q->bounce_mr);
    free(q->bounce);
    free(q);
    free(qp);
    return 0;
}

int swp_hw_query_qp(struct siwarp_qp *qp, struct siwarp_qp_attr *a)
{
    struct swp_hw_qp *q = qp->hw;

    if (!a)
        return -EINVAL;
    memset(a, 0, sizeof(*a));
    swp_lock(qp->ctx);
    /* MPA revision, CRC, markers, P2P and the RTR are negotiated by the
     * RNIC (siw: module parameters) and rdma_cm does not report them: 0 */
    a->state = qp->state;
    a->ird = qp->nego.ird;
    a->ord = qp->nego.ord;
    memcpy(a->peer_private_data, qp->nego.peer_pd, qp->nego.peer_pd_len);
    a->peer_private_data_len = qp->nego.peer_pd_len;
    a->error = qp->error;
    memcpy(a->error_str, qp->error_str, sizeof(a->error_str));
    if (q->id) {
        memcpy(&a->local, rdma_get_local_addr(q->id), sizeof(struct sockaddr_in6));
        memcpy(&a->peer, rdma_get_peer_addr(q->id), sizeof(struct sockaddr_in6));
    } else {
        memcpy(&a->peer, &qp->cm.peer, sizeof(a->peer));
    }
    swp_unlock(qp->ctx);
    return 0;
}

/* Locked.  Record the cause, move to ERROR, flush. */
void swp_hw_qp_fail(struct siwarp_qp *qp, int err, const char *fmt, ...)
{
    struct swp_hw_qp *q = qp->hw;
    struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };
    va_list ap;

    if (qp->state == SIWARP_QPS_ERROR)
        return;
    if (!qp->error && !qp->error_str[0]) {
        qp->error = err;
        va_start(ap, fmt);
        vsnprintf(qp->error_str, sizeof(qp->error_str), fmt, ap);
        va_end(ap);
    }
    SWP_DBG("qp %p (verbs): %s", (void *)qp, qp->error_str);
    swp_qp_set_state(qp, SIWARP_QPS_ERROR);
    if (q->ibqp)
        ibv_modify_qp(q->ibqp, &at, IBV_QP_STATE);   /* the RNIC flushes */
    swp_hw_flush_pending(qp);
}

int swp_hw_qp_to_error(struct siwarp_qp *qp)
{
    struct swp_hw_qp *q = qp->hw;

    swp_lock(qp->ctx);
    if (q->id && !q->disconnected &&
        (qp->state == SIWARP_QPS_RTS || qp->state == SIWARP_QPS_CLOSING)) {
        q->disconnected = true;
        rdma_disconnect(q->id);
    }
    swp_hw_qp_fail(qp, -ECANCELED, "moved to error by the application");
    swp_unlock(qp->ctx);
    return 0;
}

int swp_hw_disconnect(struct siwarp_qp *qp)
{
    struct swp_hw_qp *q = qp->hw;

    swp_lock(qp->ctx);
    if (qp->state == SIWARP_QPS_RTS) {
        swp_qp_set_state(qp, SIWARP_QPS_CLOSING);
        if (!q->disconnected) {
            q->disconnected = true;
            rdma_disconnect(q->id);     /* graceful: iw_cm closes after the SQ */
        }
    } else if (qp->state != SIWARP_QPS_ERROR) {
        swp_hw_qp_fail(qp, 0, "disconnected");
    }
    swp_unlock(qp->ctx);
    return 0;
}

/* ---- posting --------------------------------------------------------------------- */

static const struct {
    enum ibv_wr_opcode op;
    unsigned flags;
} swp_hw_wr[] = {
    [SIWARP_WR_SEND]        = { IBV_WR_SEND, 0 },
    [SIWARP_WR_SEND_SE]     = { IBV_WR_SEND, IBV_SEND_SOLICITED },
    [SIWARP_WR_SEND_INV]    = { IBV_WR_SEND_WITH_INV, 0 },
    [SIWARP_WR_SEND_SE_INV] = { IBV_WR_SEND_WITH_INV, IBV_SEND_SOLICITED },
    [SIWARP_WR_WRITE]       = { IBV_WR_RDMA_WRITE, 0 },
    [SIWARP_WR_READ]        = { IBV_WR_RDMA_READ, 0 },
};

static int swp_hw_check_send(struct siwarp_qp *qp, const struct siwarp_send_wr *wr,
                             uint64_t *lenp)
{
    uint64_t len = 0;

    /* RFC 7306 atomics and Immediate Data: iWARP RNICs and siw do not
     * offer them (siw reports atomic_cap 0) */
    if (swp_wr_is_ext(wr->opcode))
        return -EOPNOTSUPP;
    if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->init.max_sge ||
        (wr->num_sge && !wr->sg_list) || (unsigned)wr->opcode > SIWARP_WR_READ)
        return -EINVAL;
    if (wr->opcode == SIWARP_WR_READ && (wr->send_flags & SIWARP_SEND_INLINE))
        return -EINVAL;
    /* the RNIC reads the SGEs itself: they must be registered */
    if (wr->send_flags & SIWARP_SEND_UNREGISTERED)
        return -EOPNOTSUPP;
    /* iWARP RNICs scatter a Read Response into one SGE (max_sge_rd) */
    if (wr->opcode == SIWARP_WR_READ && wr->num_sge > 1)
        return -EOPNOTSUPP;
    for (int i = 0; i < wr->num_sge; i++)
        len += wr->sg_list[i].length;
    if (len > UINT32_MAX)
        return -EMSGSIZE;
    if ((wr->send_flags & SIWARP_SEND_INLINE) && len > qp->init.max_inline)
        return -EINVAL;
    *lenp = len;
    return 0;
}

static int swp_hw_post_one_send(struct siwarp_qp *qp, const struct siwarp_send_wr *wr,
                                uint64_t len)
{
    struct swp_hw_qp *q = qp->hw;
    struct swp_hw_ctx *h = swp_hwc(qp->ctx);
    struct ibv_sge sge[SWP_MAX_SGE];
    struct ibv_send_wr w, *bad;
    int rc;

    memset(&w, 0, sizeof(w));
    w.wr_id = wr->wr_id;
    w.opcode = swp_hw_wr[wr->opcode].op;
    w.send_flags = swp_hw_wr[wr->opcode].flags;
    if (wr->send_flags & SIWARP_SEND_SIGNALED)
        w.send_flags |= IBV_SEND_SIGNALED;
    if (wr->send_flags & SIWARP_SEND_FENCE)
        w.send_flags |= IBV_SEND_FENCE;
    w.sg_list = sge;
    w.num_sge = wr->num_sge;
    for (int i = 0; i < wr->num_sge; i++) {
        sge[i].addr = (uintptr_t)wr->sg_list[i].addr;
        sge[i].length = wr->sg_list[i].length;
        sge[i].lkey = swp_hw_lkey(h, wr->sg_list[i].lkey);
    }
    if (wr->send_flags & SIWARP_SEND_INLINE) {
        if (len <= q->max_inline) {
            w.send_flags |= IBV_SEND_INLINE;
        } else {
            /* the provider inlines less: copy into this WR's bounce slot */
            uint8_t *slot = q->bounce + (size_t)q->bounce_next * qp->init.max_inline;
            uint64_t off = 0;
            q->bounce_next = (q->bounce_next + 1) % qp->init.max_send_wr;
            for (int i = 0; i < wr->num_sge; i++) {
                memcpy(slot + off, wr->sg_list[i].addr, wr->sg_list[i].length);
                off += wr->sg_list[i].length;
            }
            sge[0].addr = (uintptr_t)slot;
            sge[0].length = (uint32_t)len;
            sge[0].lkey = q->bounce_mr->lkey;
            w.num_sge = len ? 1 : 0;
        }
    }
    if (wr->opcode == SIWARP_WR_SEND_INV || wr->opcode == SIWARP_WR_SEND_SE_INV)
        w.invalidate_rkey = wr->invalidate_stag;
    if (wr->opcode == SIWARP_WR_WRITE || wr->opcode == SIWARP_WR_READ) {
        w.wr.rdma.remote_addr = wr->rdma.remote_addr;
        w.wr.rdma.rkey = wr->rdma.rkey;
    }
    bad = &w;
    errno = 0;
    rc = ibv_post_send(q->ibqp, &w, &bad);
    return swp_hw_post_result(rc, errno, bad);
}

static int swp_hw_pend_send(struct siwarp_qp *qp, const struct siwarp_send_wr *wr,
                            uint64_t len)
{
    struct swp_hw_qp *q = qp->hw;
    struct swp_hw_pend *p;

    if (q->npend_send >= qp->init.max_send_wr)
        return -ENOMEM;
    p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->send = true;
    p->s = *wr;
    p->s.next = NULL;
    p->s.sg_list = p->sge;
    if (wr->num_sge)
        memcpy(p->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(p->sge[0]));
    if (wr->send_flags & SIWARP_SEND_INLINE) {
        uint64_t off = 0;
        p->inline_copy = malloc(len ? len : 1);
        if (!p->inline_copy) {
            free(p);
            return -ENOMEM;
        }
        for (int i = 0; i < wr->num_sge; i++) {
            memcpy(p->inline_copy + off, wr->sg_list[i].addr, wr->sg_list[i].length);
            off += wr->sg_list[i].length;
        }
        p->s.num_sge = len ? 1 : 0;
        p->sge[0].addr = p->inline_copy;
        p->sge[0].length = (uint32_t)len;
    }
    swp_list_add_tail(&q->pend_send, &p->link);
    q->npend_send++;
    return 0;
}

int swp_hw_post_send(struct siwarp_qp *qp, struct siwarp_send_wr *wr,
                     struct siwarp_send_wr **bad_wr)
{
    int rc = 0;

    if (!wr)
        return -EINVAL;
    swp_lock(qp->ctx);
    for (; wr; wr = wr->next) {
        uint64_t len;

        if ((rc = swp_hw_check_send(qp, wr, &len)) < 0)
            break;
        if (qp->state == SIWARP_QPS_IDLE || qp->state == SIWARP_QPS_CONNECTING)
            rc = swp_hw_pend_send(qp, wr, len);
        else if (qp->state == SIWARP_QPS_RTS || qp->state == SIWARP_QPS_CLOSING)
            rc = swp_hw_post_one_send(qp, wr, len);
        else {
            /* verbs: work posted in ERROR completes flushed */
            rc = swp_hw_pend_send(qp, wr, len);
            swp_hw_flush_pending(qp);
        }
        if (rc < 0)
            break;
    }
    if (rc < 0 && bad_wr)
        *bad_wr = wr;
    swp_unlock(qp->ctx);
    return rc;
}

static int swp_hw_post_one_recv(struct siwarp_qp *qp, const struct siwarp_recv_wr *wr)
{
    struct swp_hw_ctx *h = swp_hwc(qp->ctx);
    struct ibv_sge sge[SWP_MAX_SGE];
    struct ibv_recv_wr w = { .wr_id = wr->wr_id, .sg_list = sge, .num_sge = wr->num_sge }, *bad;
    int rc;

    for (int i = 0; i < wr->num_sge; i++) {
        sge[i].addr = (uintptr_t)wr->sg_list[i].addr;
        sge[i].length = wr->sg_list[i].length;
        sge[i].lkey = swp_hw_lkey(h, wr->sg_list[i].lkey);
    }
    bad = &w;
    errno = 0;
    rc = ibv_post_recv(swp_hwq(qp)->ibqp, &w, &bad);
    return swp_hw_post_result(rc, errno, bad);
}

int swp_hw_post_recv(struct siwarp_qp *qp, struct siwarp_recv_wr *wr,
                     struct siwarp_recv_wr **bad_wr)
{
    struct swp_hw_qp *q = qp->hw;
    int rc = 0;

    if (!wr)
        return -EINVAL;
    swp_lock(qp->ctx);
    for (; wr; wr = wr->next) {
        rc = -EINVAL;
        if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->init.max_sge ||
            (wr->num_sge && !wr->sg_list))
            break;
        if (q->ibqp && qp->state != SIWARP_QPS_ERROR) {
            if ((rc = swp_hw_post_one_recv(qp, wr)) < 0)
                break;
            continue;
        }
        struct swp_hw_pend *p;
        rc = -ENOMEM;
        if (q->npend_recv >= (qp->init.max_recv_wr ? qp->init.max_recv_wr : 1) ||
            !(p = calloc(1, sizeof(*p))))
            break;
        p->r = *wr;
        p->r.next = NULL;
        p->r.sg_list = p->sge;
        if (wr->num_sge)
            memcpy(p->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(p->sge[0]));
        swp_list_add_tail(&q->pend_recv, &p->link);
        q->npend_recv++;
        rc = 0;
        if (qp->state == SIWARP_QPS_ERROR)
            swp_hw_flush_pending(qp);
    }
    if (rc < 0 && bad_wr)
        *bad_wr = wr;
    swp_unlock(qp->ctx);
    return rc;
}

/* ---- connection hand-over (from hw_cm.c, locked) -------------------------------- */

/* rdma_cm has an id for the QP (route resolved, or a request to accept):
 * create the verbs QP on it and post the receives that waited. */
int swp_hw_qp_realize(struct siwarp_qp *qp, struct rdma_cm_id *id)
{
    struct swp_hw_qp *q = qp->hw;
    struct ibv_qp_init_attr ia;
    int rc;

    if (id->verbs != swp_hwc(qp->ctx)->verbs) {
        swp_hw_qp_fail(qp, -ENODEV, "%s: the address is on verbs device %s, not %s", q->how,
                       id->verbs ? ibv_get_device_name(id->verbs->device) : "(none)",
                       swp_hwc(qp->ctx)->name);
        return -ENODEV;
    }
    memset(&ia, 0, sizeof(ia));
    ia.send_cq = ((struct swp_hw_cq *)qp->scq->hw)->cq;
    ia.recv_cq = ((struct swp_hw_cq *)qp->rcq->hw)->cq;
    ia.qp_type = IBV_QPT_RC;
    ia.sq_sig_all = qp->init.sq_sig_all;
    ia.cap.max_send_wr = qp->init.max_send_wr;
    ia.cap.max_recv_wr = qp->init.max_recv_wr ? qp->init.max_recv_wr : 1;
    ia.cap.max_send_sge = qp->init.max_sge;
    ia.cap.max_recv_sge = qp->init.max_sge;
    ia.cap.max_inline_data = qp->init.max_inline;
    rc = rdma_create_qp(id, qp->pd->hw, &ia);
    if (rc && qp->init.max_inline) {
        /* the provider inlines less than asked: bounce the rest */
        ia.cap.max_inline_data = 0;
        rc = rdma_create_qp(id, qp->pd->hw, &ia);
    }
    if (rc) {
        rc = errno ? -errno : -EINVAL;
        swp_hw_qp_fail(qp, rc, "%s: rdma_create_qp: %s", q->how, strerror(-rc));
        return rc;
    }
    rc = swp_qpn_map_put(&swp_hwc(qp->ctx)->qpns, id->qp->qp_num, qp);
    if (rc < 0) {
        rdma_destroy_qp(id);
        swp_hw_qp_fail(qp, rc, "%s: no memory to index its verbs QP", q->how);
        return rc;
    }
    q->ibqp = id->qp;
    q->max_inline = ia.cap.max_inline_data;
    if (q->max_inline < qp->init.max_inline) {
        size_t sz = (size_t)qp->init.max_send_wr * qp->init.max_inline;
        q->bounce = malloc(sz);
        q->bounce_mr = q->bounce ? ibv_reg_mr(qp->pd->hw, q->bounce, sz,
                                              IBV_ACCESS_LOCAL_WRITE) : NULL;
        if (!q->bounce_mr) {
            swp_hw_qp_fail(qp, -ENOMEM, "%s: no bounce buffer for inline sends", q->how);
            return -ENOMEM;
        }
    }
    SWP_DBG("qp %p: verbs QP %u on %s (inline %u)", (void *)qp, q->ibqp->qp_num,
            swp_hwc(qp->ctx)->name, q->max_inline);
    while (!swp_list_empty(&q->pend_recv)) {
        struct swp_hw_pend *p = swp_container_of(q->pend_recv.next, struct swp_hw_pend, link);
        if ((rc = swp_hw_post_one_recv(qp, &p->r)) < 0) {
            swp_hw_qp_fail(qp, rc, "%s: posting a receive: %s", q->how, strerror(-rc));
            return rc;
        }
        swp_hw_pend_free(p);
        q->npend_recv--;
    }
    return 0;
}

/* ESTABLISHED: record what rdma_cm reports, post the sends that waited. */
void swp_hw_qp_established(struct siwarp_qp *qp, const struct rdma_conn_param *cp)
{
    struct swp_hw_qp *q = qp->hw;
    int rc;

    if (cp) {
        if (cp->private_data && cp->private_data_len) {
            uint16_t n = cp->private_data_len;
            if (n > sizeof(qp->nego.peer_pd))
                n = sizeof(qp->nego.peer_pd);
            /* an active side gets the Reply's bytes; a passive side's
             * event repeats nothing: keep what the request carried */
            memcpy(qp->nego.peer_pd, cp->private_data, n);
            qp->nego.peer_pd_len = n;
        }
        if (cp->responder_resources || cp->initiator_depth) {
            qp->nego.ird = cp->responder_resources;
            qp->nego.ord = cp->initiator_depth;
        }
    }
    if (swp_qp_set_state(qp, SIWARP_QPS_RTS) < 0)
        return;
    while (!swp_list_empty(&q->pend_send)) {
        struct swp_hw_pend *p = swp_container_of(q->pend_send.next, struct swp_hw_pend, link);
        uint64_t len = 0;
        for (int i = 0; i < p->s.num_sge; i++)
            len += p->sge[i].length;
        if (p->inline_copy && len > q->max_inline && !q->bounce_mr) {
            rc = -EINVAL;
        } else {
            rc = swp_hw_post_one_send(qp, &p->s, len);
        }
        if (rc < 0) {
            swp_hw_qp_fail(qp, rc, "posting a send queued before the connection: %s",
                           strerror(-rc));
            return;
        }
        swp_hw_pend_free(p);
        q->npend_send--;
    }
}
