/*
 * hw_verbs.c - the verbs backend's device, PD, MR and CQ: each libsiwarp
 * object of a verbs context wraps the libibverbs object in its `hw`
 * pointer; polling translates ibv_wc into siwarp_wc.  QPs and posting:
 * hw_qp.c; connections: hw_cm.c.
 *
 *  - STag: an MR's STag is its rkey.  Local SGEs name an MR by that STag
 *    too; iWARP RNICs (siw, cxgb4, irdma) give lkey == rkey, and where a
 *    provider does not, the lkey is looked up at post time.
 *  - Access: iWARP places an RDMA Read Response through the sink's STag
 *    (RFC 5040 4.4), so the sink needs REMOTE_WRITE: LOCAL_WRITE asks for it.
 *  - Registration pins the pages (ibv_reg_mr), unlike the software backend.
 */
#include <fcntl.h>
#include <inttypes.h>
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

    if ((rc = swp_rdma_core_load()) < 0 || (rc = swp_hw_find(dev, name, sizeof(name))) < 0)
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
    ctx->hw = h;
    if ((rc = swp_hw_async_open(ctx)) < 0)
        goto err;
    pthread_mutex_init(&ctx->lock, NULL);
    swp_list_init(&ctx->qps);
    swp_list_init(&ctx->timers);
    swp_list_init(&ctx->tx_held);
    swp_list_init(&ctx->hints);
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

    swp_hw_async_close(ctx);
    close(ctx->epfd);
    rdma_destroy_event_channel(h->ech);
    rdma_free_devices(h->devs);
    swp_qpn_map_free(&h->qpns);
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
    if (n > 0) {
        /* CQ pointers may be stale after sleeping: poll again, locked */
        n = epoll_wait(ctx->epfd, ev, 16, 0);
        /* the device's events first: a QP it failed gets that cause
         * before the connection's close names another */
        for (int i = 0; i < n; i++)
            if (ev[i].data.ptr == swp_hw_async_tag)
                handled += swp_hw_async_progress(ctx);
    }
    handled += swp_hw_cm_progress(ctx);
    for (int i = 0; i < n; i++)
        if (ev[i].data.ptr && ev[i].data.ptr != swp_hw_async_tag) {
            swp_hw_cq_events(ev[i].data.ptr);
            handled++;
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
    if (access & SIWARP_ACCESS_REMOTE_ATOMIC)
        return -EOPNOTSUPP;     /* no RFC 7306 on a verbs device (hw_qp.c) */
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
uint32_t swp_hw_lkey(struct swp_hw_ctx *h, uint32_t stag)
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

/* the QP whose verbs QP has that number (swp_hw_qp_bind), or NULL */
static struct siwarp_qp *swp_hw_qp_of(struct siwarp_ctx *ctx, uint32_t qpn)
{
    return swp_qpn_map_get(&swp_hwc(ctx)->qpns, qpn);
}

/* A verbs completion as libsiwarp's, into w; 0 if it is dropped (its QP
 * is gone, or the device completed that WR already: swp_hw_wc_twice),
 * else 1. */
static int swp_hw_wc_of(struct siwarp_ctx *ctx, const struct ibv_wc *iwc, struct siwarp_wc *w)
{
    struct siwarp_qp *qp = swp_hw_qp_of(ctx, iwc->qp_num);

    if (!qp)
        return 0;
    memset(w, 0, sizeof(*w));
    w->wr_id = iwc->wr_id;
    w->status = (unsigned)iwc->status < sizeof(swp_hw_status) ?
                swp_hw_status[iwc->status] : SIWARP_WC_GENERAL_ERR;
    if (iwc->status != IBV_WC_SUCCESS && iwc->status != IBV_WC_GENERAL_ERR &&
        w->status == SIWARP_WC_SUCCESS)
        w->status = SIWARP_WC_GENERAL_ERR;      /* a hole in the table */
    w->opcode = swp_hw_opcode(iwc->opcode);
    w->byte_len = iwc->byte_len;
    if (iwc->wc_flags & IBV_WC_WITH_INV) {
        w->wc_flags |= SIWARP_WC_WITH_INV;
        w->invalidated_stag = iwc->invalidated_rkey;
    }
    w->vendor_err = iwc->status == IBV_WC_SUCCESS ? 0 : iwc->vendor_err;
    w->qp = qp;
    if (swp_hw_wc_twice(qp->hw, w)) {
        SWP_DBG("qp %p (verbs): the device completed Read wr_id %#" PRIx64
                " twice, flushed; the second completion dropped", (void *)qp, w->wr_id);
        return 0;
    }
    return 1;
}

/* Locked, when a QP's verbs QP was just destroyed: everything its CQ
 * holds moves to cq's ring, translated while the QPs it names are known
 * by number.  The device may give that QP's number to the next QP made
 * (siw does at once), and a completion of the old one still queued --
 * the flush of its receive buffers -- would be taken for the new one's. */
void swp_hw_cq_stash(struct siwarp_cq *cq)
{
    struct swp_hw_cq *c = cq->hw;
    struct ibv_wc iw[16];
    struct siwarp_wc w;
    int k;

    do {
        k = ibv_poll_cq(c->cq, 16, iw);
        for (int i = 0; i < k; i++)
            if (swp_hw_wc_of(cq->ctx, &iw[i], &w))
                swp_cq_push(cq, &w);      /* a failure is counted (overflows) */
    } while (k == 16);
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
            got += swp_hw_wc_of(cq->ctx, &iw[i], &wc[got]);
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
    for (int i = got; i < got + k; i++)
        if (wc[i].status != SIWARP_WC_SUCCESS) {
            /* the device may have said why: on the QP before the
             * consumer asks (hw_async.c) */
            swp_hw_async_progress(cq->ctx);
            break;
        }
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
