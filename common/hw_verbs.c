/*
 * hw_verbs.c - the verbs backend's device, PD, MR, CQ and QP: each libsiwarp
 * object of a verbs context wraps the libibverbs object in its `hw`
 * pointer, and the data path translates work requests and completions.
 *
 *  - STag: an MR's STag is its rkey.  Local SGEs name an MR by that STag
 *    too; iWARP RNICs (siw, cxgb4, irdma) give lkey == rkey, and where a
 *    provider does not, the lkey is looked up at post time.
 *  - Access: iWARP places an RDMA Read Response through the sink's STag
 *    (RFC 5040 4.4), so the sink needs REMOTE_WRITE: LOCAL_WRITE asks for it.
 *  - Registration pins the pages (ibv_reg_mr), unlike the software backend.
 *  - Inline sends beyond what the provider inlines go through a per-QP
 *    registered bounce ring (one slot per send WR).
 *  - Work posted before the QP is connected waits here (struct swp_hw_pend)
 *    and is posted once rdma_cm created the QP (receives) or the connection
 *    is established (sends); on failure it completes flushed.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "hw_int.h"

/* ---- context ---------------------------------------------------------------- */

static int swp_hw_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) ? -errno : 0;
}

/* Is there a device of that name (or, dev NULL, an iWARP one) at all?
 * Asked through libibverbs first: librdmacm prints to stderr when the
 * machine has no RDMA device, and "auto" must stay quiet there. */
static int swp_hw_find(const char *dev, char *name, size_t len)
{
    struct ibv_device **l;
    int n, rc = -ENODEV;

    l = ibv_get_device_list(&n);
    if (!l) {
        SWP_DBG("no verbs device %s: %s", dev ? dev : "(auto)", strerror(errno));
        return -ENODEV;
    }
    for (int i = 0; i < n; i++) {
        const char *nm = ibv_get_device_name(l[i]);
        if (dev && strcmp(dev, nm))
            continue;
        if (l[i]->transport_type != IBV_TRANSPORT_IWARP) {
            if (dev)
                SWP_DBG("verbs device %s is not iWARP (transport %d)", nm,
                        (int)l[i]->transport_type);
            continue;
        }
        snprintf(name, len, "%s", nm);
        rc = 0;
        break;
    }
    if (rc < 0) {
        char have[256] = "";
        for (int i = 0; i < n; i++)
            snprintf(have + strlen(have), sizeof(have) - strlen(have), " %s%s",
                     ibv_get_device_name(l[i]),
                     l[i]->transport_type == IBV_TRANSPORT_IWARP ? "(iWARP)" : "");
        SWP_DBG("no iWARP verbs device%s%s; verbs devices:%s", dev ? " named " : "",
                dev ? dev : "", n ? have : " none");
    }
    ibv_free_device_list(l);
    return rc;
}

int swp_hw_ctx_create(const char *dev, struct siwarp_ctx **out)
{
    struct siwarp_ctx *ctx = NULL;
    struct swp_hw_ctx *h;
    char name[IBV_SYSFS_NAME_MAX];
    struct epoll_event ev = { .events = EPOLLIN };
    int n = 0, rc;

    if ((rc = swp_hw_find(dev, name, sizeof(name))) < 0)
        return rc;
    h = calloc(1, sizeof(*h));
    ctx = calloc(1, sizeof(*ctx));
    if (!h || !ctx) {
        rc = -ENOMEM;
        goto err;
    }
    ctx->epfd = ctx->kickfd = -1;
    snprintf(h->name, sizeof(h->name), "%s", name);
    swp_list_init(&h->mrs);
    /* rdma_cm's own device contexts: PDs, CQs and QPs must live on them */
    h->devs = rdma_get_devices(&n);
    for (int i = 0; h->devs && i < n; i++)
        if (!strcmp(ibv_get_device_name(h->devs[i]->device), name))
            h->verbs = h->devs[i];
    rc = -ENODEV;
    if (!h->verbs) {
        SWP_DBG("rdma_cm does not know verbs device %s", name);
        goto err;
    }
    if ((rc = -ibv_query_device(h->verbs, &h->attr)) < 0)
        goto err;
    h->ech = rdma_create_event_channel();
    if (!h->ech) {
        rc = -errno;
        goto err;
    }
    if ((rc = swp_hw_nonblock(h->ech->fd)) < 0)
        goto err;
    ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (ctx->epfd < 0) {
        rc = -errno;
        goto err;
    }
    ev.data.ptr = NULL;                     /* NULL: the rdma_cm channel */
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, h->ech->fd, &ev) < 0) {
        rc = -errno;
        goto err;
    }
    pthread_mutex_init(&ctx->lock, NULL);
    swp_list_init(&ctx->qps);
    swp_list_init(&ctx->timers);
    ctx->hw = h;
    SWP_DBG("ctx %p on verbs device %s (max_qp_wr %d, max_sge %d, max_qp_rd_atom %d)",
            (void *)ctx, name, h->attr.max_qp_wr, h->attr.max_sge, h->attr.max_qp_rd_atom);
    *out = ctx;
    return 0;
err:
    if (ctx && ctx->epfd >= 0)
        close(ctx->epfd);
    if (h && h->ech)
        rdma_destroy_event_channel(h->ech);
    if (h && h->devs)
        rdma_free_devices(h->devs);
    free(h);
    free(ctx);
    return rc;
}

void swp_hw_ctx_destroy(struct siwarp_ctx *ctx)
{
    struct swp_hw_ctx *h = swp_hwc(ctx);

    close(ctx->epfd);
    rdma_destroy_event_channel(h->ech);
    rdma_free_devices(h->devs);
    pthread_mutex_destroy(&ctx->lock);
    free(h);
    free(ctx);
}

const char *swp_hw_ctx_name(const struct siwarp_ctx *ctx)
{
    return swp_hwc(ctx)->name;
}

int swp_hw_wait_fd(struct siwarp_ctx *ctx, int fd, int timeout_ms)
{
    struct pollfd p[2] = { { swp_hwc(ctx)->ech->fd, POLLIN, 0 }, { fd, POLLIN, 0 } };
    int n = poll(p, fd >= 0 ? 2 : 1, timeout_ms);
    return n < 0 ? (errno == EINTR ? 0 : -errno) : n;
}

int swp_hw_progress(struct siwarp_ctx *ctx, int timeout_ms)
{
    struct epoll_event ev[16];
    int n, handled = 0;

    /* never sleep holding the lock: other threads post and poll */
    n = epoll_wait(ctx->epfd, ev, 16, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -errno;
    swp_lock(ctx);
    handled += swp_hw_cm_progress(ctx);
    if (n > 0) {
        /* CQ pointers may be stale after sleeping: poll again, locked */
        n = epoll_wait(ctx->epfd, ev, 16, 0);
        for (int i = 0; i < n; i++)
            if (ev[i].data.ptr) {
                swp_hw_cq_events(ev[i].data.ptr);
                handled++;
            }
    }
    swp_unlock(ctx);
    return handled;
}

/* ---- PD and MR ------------------------------------------------------------------ */

int swp_hw_alloc_pd(struct siwarp_ctx *ctx, struct siwarp_pd **out)
{
    struct siwarp_pd *pd;

    if (!out)
        return -EINVAL;
    pd = calloc(1, sizeof(*pd));
    if (!pd)
        return -ENOMEM;
    pd->ctx = ctx;
    pd->hw = ibv_alloc_pd(swp_hwc(ctx)->verbs);
    if (!pd->hw) {
        int rc = errno ? -errno : -ENOMEM;
        free(pd);
        return rc;
    }
    *out = pd;
    return 0;
}

int swp_hw_dealloc_pd(struct siwarp_pd *pd)
{
    int rc;

    if (pd->refs)
        return -EBUSY;
    if ((rc = ibv_dealloc_pd(pd->hw)) != 0)
        return -rc;
    free(pd);
    return 0;
}

int swp_hw_reg_mr(struct siwarp_pd *pd, void *addr, size_t length, int access,
                  struct siwarp_mr **out)
{
    struct swp_hw_ctx *h = swp_hwc(pd->ctx);
    struct siwarp_mr *mr;
    struct swp_hw_mr *m;
    int ia = 0, rc;

    if (!out || (!addr && length))
        return -EINVAL;
    if (access & ~(SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE |
                   SIWARP_ACCESS_REMOTE_READ))
        return -EINVAL;
    if ((access & SIWARP_ACCESS_REMOTE_WRITE) && !(access & SIWARP_ACCESS_LOCAL_WRITE))
        return -EINVAL;
    /* an iWARP Read Response is placed through the sink's STag */
    if (access & SIWARP_ACCESS_LOCAL_WRITE)
        ia |= IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    if (access & SIWARP_ACCESS_REMOTE_WRITE)
        ia |= IBV_ACCESS_REMOTE_WRITE;
    if (access & SIWARP_ACCESS_REMOTE_READ)
        ia |= IBV_ACCESS_REMOTE_READ;
    mr = calloc(1, sizeof(*mr));
    m = calloc(1, sizeof(*m));
    if (!mr || !m) {
        rc = -ENOMEM;
        goto err;
    }
    /* pins the pages until dereg */
    m->mr = ibv_reg_mr(pd->hw, addr ? addr : (void *)m, length ? length : 1, ia);
    if (!m->mr) {
        rc = errno ? -errno : -ENOMEM;
        SWP_DBG("ibv_reg_mr(%p, %zu) on %s: %s", addr, length, h->name, strerror(-rc));
        goto err;
    }
    m->owner = mr;
    swp_list_init(&m->link);
    mr->pd = pd;
    mr->hw = m;
    mr->addr = addr;
    mr->len = length;
    mr->access = access;
    mr->stag = m->mr->rkey;
    mr->valid = true;
    swp_lock(pd->ctx);
    if (m->mr->lkey != m->mr->rkey) {
        swp_list_add_tail(&h->mrs, &m->link);
        h->nmrs_lkey++;
    }
    pd->refs++;
    swp_unlock(pd->ctx);
    *out = mr;
    return 0;
err:
    free(m);
    free(mr);
    return rc;
}

int swp_hw_dereg_mr(struct siwarp_mr *mr)
{
    struct swp_hw_mr *m = mr->hw;
    struct siwarp_ctx *ctx = mr->pd->ctx;
    int rc;

    swp_lock(ctx);
    if (!swp_list_empty(&m->link)) {
        swp_list_del(&m->link);
        swp_hwc(ctx)->nmrs_lkey--;
    }
    swp_unlock(ctx);
    if ((rc = ibv_dereg_mr(m->mr)) != 0)
        return -rc;
    swp_lock(ctx);
    mr->pd->refs--;
    swp_unlock(ctx);
    free(m);
    free(mr);
    return 0;
}

int swp_hw_invalidate_stag(struct siwarp_pd *pd, uint32_t stag)
{
    (void)pd;
    (void)stag;
    /* a Local Invalidate is a send-queue WR on verbs, and plain MRs of
     * ibv_reg_mr cannot be invalidated on most RNICs */
    return -EOPNOTSUPP;
}

/* The lkey of the MR whose STag (rkey) an SGE names. */
static uint32_t swp_hw_lkey(struct swp_hw_ctx *h, uint32_t stag)
{
    if (h->nmrs_lkey == 0)
        return stag;
    for (struct swp_list *l = h->mrs.next; l != &h->mrs; l = l->next) {
        struct swp_hw_mr *m = swp_container_of(l, struct swp_hw_mr, link);
        if (m->mr->rkey == stag)
            return m->mr->lkey;
    }
    return stag;
}

/* ---- CQ -------------------------------------------------------------------------- */

int swp_hw_create_cq(struct siwarp_ctx *ctx, int cqe, struct siwarp_cq **out)
{
    struct swp_hw_ctx *h = swp_hwc(ctx);
    struct epoll_event ev = { .events = EPOLLIN };
    struct siwarp_cq *cq;
    struct swp_hw_cq *c;
    int rc = -ENOMEM;

    if (!out || cqe <= 0 || cqe > (1 << 22))
        return -EINVAL;
    cq = calloc(1, sizeof(*cq));
    c = calloc(1, sizeof(*c));
    if (!cq || !c)
        goto err;
    /* the software ring holds completions made here (flushes of work that
     * never reached the verbs QP) and those cq_wait has taken out */
    cq->ring = calloc((size_t)cqe, sizeof(*cq->ring));
    if (!cq->ring)
        goto err;
    cq->size = (uint32_t)cqe;
    cq->ctx = ctx;
    cq->hw = c;
    c->ch = ibv_create_comp_channel(h->verbs);
    if (!c->ch || (rc = swp_hw_nonblock(c->ch->fd)) < 0)
        goto err_errno;
    if (cqe > h->attr.max_cqe)
        cqe = h->attr.max_cqe;
    c->cq = ibv_create_cq(h->verbs, cqe, cq, c->ch, 0);
    if (!c->cq)
        goto err_errno;
    if ((rc = ibv_req_notify_cq(c->cq, 0)) != 0) {
        rc = -rc;
        goto err;
    }
    c->armed = true;
    ev.data.ptr = cq;
    if (epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, c->ch->fd, &ev) < 0)
        goto err_errno;
    *out = cq;
    return 0;
err_errno:
    rc = errno ? -errno : -ENOMEM;
err:
    if (c && c->cq)
        ibv_destroy_cq(c->cq);
    if (c && c->ch)
        ibv_destroy_comp_channel(c->ch);
    if (cq)
        free(cq->ring);
    free(c);
    free(cq);
    return rc;
}

int swp_hw_destroy_cq(struct siwarp_cq *cq)
{
    struct swp_hw_cq *c = cq->hw;
    int rc;

    if (cq->refs)
        return -EBUSY;
    swp_lock(cq->ctx);
    epoll_ctl(cq->ctx->epfd, EPOLL_CTL_DEL, c->ch->fd, NULL);
    swp_unlock(cq->ctx);
    if ((rc = ibv_destroy_cq(c->cq)) != 0)
        return -rc;
    ibv_destroy_comp_channel(c->ch);
    free(cq->ring);
    free(c);
    free(cq);
    return 0;
}

/* Consume the channel's events (the fd stops polling readable); the CQ is
 * re-armed when a poll finds it empty.  Locked. */
void swp_hw_cq_events(struct siwarp_cq *cq)
{
    struct swp_hw_cq *c = cq->hw;
    struct ibv_cq *ev_cq;
    void *ev_ctx;

    while (ibv_get_cq_event(c->ch, &ev_cq, &ev_ctx) == 0) {
        ibv_ack_cq_events(ev_cq, 1);
        c->armed = false;
    }
}

/* ibv_wc_status -> siwarp_wc_status; unlisted ones are GENERAL_ERR */
static const unsigned char swp_hw_status[] = {
    [IBV_WC_SUCCESS]            = SIWARP_WC_SUCCESS,
    [IBV_WC_LOC_LEN_ERR]        = SIWARP_WC_LOC_LEN_ERR,
    [IBV_WC_LOC_QP_OP_ERR]      = SIWARP_WC_GENERAL_ERR,
    [IBV_WC_LOC_EEC_OP_ERR]     = SIWARP_WC_GENERAL_ERR,
    [IBV_WC_LOC_PROT_ERR]       = SIWARP_WC_LOC_PROT_ERR,
    [IBV_WC_WR_FLUSH_ERR]       = SIWARP_WC_WR_FLUSH_ERR,
    [IBV_WC_MW_BIND_ERR]        = SIWARP_WC_LOC_PROT_ERR,
    [IBV_WC_BAD_RESP_ERR]       = SIWARP_WC_REM_OP_ERR,
    [IBV_WC_LOC_ACCESS_ERR]     = SIWARP_WC_LOC_PROT_ERR,
    [IBV_WC_REM_INV_REQ_ERR]    = SIWARP_WC_REM_OP_ERR,
    [IBV_WC_REM_ACCESS_ERR]     = SIWARP_WC_REM_ACCESS_ERR,
    [IBV_WC_REM_OP_ERR]         = SIWARP_WC_REM_OP_ERR,
    [IBV_WC_RETRY_EXC_ERR]      = SIWARP_WC_LLP_ERR,
    [IBV_WC_RNR_RETRY_EXC_ERR]  = SIWARP_WC_LLP_ERR,
    [IBV_WC_LOC_RDD_VIOL_ERR]   = SIWARP_WC_LOC_PROT_ERR,
    [IBV_WC_REM_INV_RD_REQ_ERR] = SIWARP_WC_REM_OP_ERR,
    [IBV_WC_REM_ABORT_ERR]      = SIWARP_WC_REM_ABORT_ERR,
    [IBV_WC_INV_EECN_ERR]       = SIWARP_WC_GENERAL_ERR,
    [IBV_WC_INV_EEC_STATE_ERR]  = SIWARP_WC_GENERAL_ERR,
    [IBV_WC_FATAL_ERR]          = SIWARP_WC_LLP_ERR,
    [IBV_WC_RESP_TIMEOUT_ERR]   = SIWARP_WC_LLP_ERR,
    [IBV_WC_GENERAL_ERR]        = SIWARP_WC_GENERAL_ERR,
};

static enum siwarp_wc_opcode swp_hw_opcode(enum ibv_wc_opcode op)
{
    if (op & IBV_WC_RECV)
        return SIWARP_WC_RECV;
    return op == IBV_WC_RDMA_WRITE ? SIWARP_WC_WRITE :
           op == IBV_WC_RDMA_READ ? SIWARP_WC_READ : SIWARP_WC_SEND;
}

static struct siwarp_qp *swp_hw_qp_of(struct siwarp_ctx *ctx, uint32_t qpn)
{
    for (struct swp_list *l = ctx->qps.next; l != &ctx->qps; l = l->next) {
        struct siwarp_qp *qp = swp_container_of(l, struct siwarp_qp, link);
        struct swp_hw_qp *q = qp->hw;
        if (q->ibqp && q->ibqp->qp_num == qpn)
            return qp;
    }
    return NULL;
}

/* Poll the verbs CQ into wc[]; completions of destroyed QPs are dropped. */
static int swp_hw_poll_verbs(struct siwarp_cq *cq, int n, struct siwarp_wc *wc)
{
    struct swp_hw_cq *c = cq->hw;
    struct ibv_wc iw[16];
    int got = 0;

    while (got < n) {
        int want = n - got > 16 ? 16 : n - got;
        int k = ibv_poll_cq(c->cq, want, iw);
        if (k < 0)
            return got ? got : -EIO;
        for (int i = 0; i < k; i++) {
            struct siwarp_qp *qp = swp_hw_qp_of(cq->ctx, iw[i].qp_num);
            struct siwarp_wc *w = &wc[got];
            if (!qp)
                continue;
            memset(w, 0, sizeof(*w));
            w->wr_id = iw[i].wr_id;
            w->status = (unsigned)iw[i].status < sizeof(swp_hw_status) ?
                        swp_hw_status[iw[i].status] : SIWARP_WC_GENERAL_ERR;
            if (iw[i].status != IBV_WC_SUCCESS && iw[i].status != IBV_WC_GENERAL_ERR &&
                w->status == SIWARP_WC_SUCCESS)
                w->status = SIWARP_WC_GENERAL_ERR;      /* a hole in the table */
            w->opcode = swp_hw_opcode(iw[i].opcode);
            w->byte_len = iw[i].byte_len;
            if (iw[i].wc_flags & IBV_WC_WITH_INV) {
                w->wc_flags |= SIWARP_WC_WITH_INV;
                w->invalidated_stag = iw[i].invalidated_rkey;
            }
            w->vendor_err = iw[i].status == IBV_WC_SUCCESS ? 0 : iw[i].vendor_err;
            w->qp = qp;
            got++;
        }
        if (k < want)
            break;
    }
    return got;
}

static int swp_hw_drain(struct siwarp_cq *cq, int n, struct siwarp_wc *wc)
{
    int i;

    for (i = 0; i < n && cq->count; i++) {
        wc[i] = cq->ring[cq->head];
        cq->head = (cq->head + 1) % cq->size;
        cq->count--;
    }
    return i;
}

/* Locked: ring first, then the verbs CQ; an empty CQ is re-armed (and
 * polled once more: a completion may have come before the arm). */
static int swp_hw_poll_locked(struct siwarp_cq *cq, int n, struct siwarp_wc *wc)
{
    struct swp_hw_cq *c = cq->hw;
    int got = swp_hw_drain(cq, n, wc), k;

    if (got == n)
        return got;
    k = swp_hw_poll_verbs(cq, n - got, wc + got);
    if (k < 0)
        return got ? got : k;
    got += k;
    if (got < n) {
        swp_hw_cq_events(cq);
        if (!c->armed && ibv_req_notify_cq(c->cq, 0) == 0) {
            c->armed = true;
            k = swp_hw_poll_verbs(cq, n - got, wc + got);
            if (k > 0)
                got += k;
        }
    }
    return got;
}

int swp_hw_poll_cq(struct siwarp_cq *cq, int n, struct siwarp_wc *wc)
{
    int got;

    if (n < 0 || (n && !wc))
        return -EINVAL;
    swp_lock(cq->ctx);
    got = swp_hw_poll_locked(cq, n, wc);
    /* an idle poll also serves connection events, as the software
     * backend's poll progresses the whole context */
    if (got == 0)
        swp_hw_cm_progress(cq->ctx);
    swp_unlock(cq->ctx);
    return got;
}

int swp_hw_cq_fd(const struct siwarp_cq *cq)
{
    return ((const struct swp_hw_cq *)cq->hw)->ch->fd;
}

int swp_hw_cq_wait(struct siwarp_cq *cq, int timeout_ms)
{
    uint64_t deadline = swp_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
    int fd = swp_hw_cq_fd(cq), rc;

    for (;;) {
        struct siwarp_wc wc;
        int left = -1;

        swp_lock(cq->ctx);
        swp_hw_cm_progress(cq->ctx);
        rc = cq->count ? 1 : swp_hw_poll_locked(cq, 1, &wc);
        if (rc == 1 && !cq->count) {
            /* keep it for siwarp_poll_cq: in front, it came first */
            cq->head = (cq->head + cq->size - 1) % cq->size;
            cq->ring[cq->head] = wc;
            cq->count = 1;
        }
        swp_unlock(cq->ctx);
        if (rc != 0)
            return rc < 0 ? rc : 0;
        if (timeout_ms >= 0) {
            uint64_t now = swp_now_ns();
            if (now >= deadline)
                return -ETIMEDOUT;
            left = (int)((deadline - now + 999999) / 1000000);
        }
        if ((rc = swp_hw_wait_fd(cq->ctx, fd, left)) < 0)
            return rc;
    }
}

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
    swp_lock(pd->ctx);
    pd->refs++;
    qp->scq->refs++;
    qp->rcq->refs++;
    swp_list_add_tail(&pd->ctx->qps, &qp->link);
    swp_unlock(pd->ctx);
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
    if (q->ibqp)
        rdma_destroy_qp(q->id);
    q->ibqp = NULL;
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
    swp_list_del(&qp->link);        /* its CQEs still in a verbs CQ are dropped */
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

    if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->init.max_sge ||
        (wr->num_sge && !wr->sg_list) || (unsigned)wr->opcode > SIWARP_WR_READ)
        return -EINVAL;
    if (wr->opcode == SIWARP_WR_READ && (wr->send_flags & SIWARP_SEND_INLINE))
        return -EINVAL;
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
    rc = ibv_post_send(q->ibqp, &w, &bad);
    return rc ? -rc : 0;
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
    rc = ibv_post_recv(swp_hwq(qp)->ibqp, &w, &bad);
    return rc ? -rc : 0;
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
