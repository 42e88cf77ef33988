/*
 * verbs.c - public entry points that are not owned by one layer: context
 * life cycle, posting work.  Argument checks only, then hand off.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>

#include "swp.h"

static void swp_kick_drain(struct swp_pollable *p, uint32_t events)
{
    struct siwarp_ctx *ctx = swp_container_of(p, struct siwarp_ctx, kick);
    uint64_t v;
    ssize_t rc;

    (void)events;
    /* A progress thread leaves the kick to the application that may sleep
     * on the exported fd: it is the application's news (progress_thread.c) */
    if (ctx->fd_exported && swp_pt_is_self(ctx))
        return;
    rc = read(p->fd, &v, sizeof(v));
    (void)rc;
    ctx->kicked = false;
}

int siwarp_ctx_create(struct siwarp_ctx **out)
{
    struct siwarp_ctx *ctx;
    int rc;

    if (!out)
        return -EINVAL;
    if (swp_ctx_env_dev()) return siwarp_ctx_create_dev(swp_ctx_env_dev(), out);
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return -ENOMEM;
    swp_debug = getenv("SIWARP_DEBUG") != NULL;
    ctx->direct_poll = !getenv("SIWARP_DIRECT_POLL") || atoi(getenv("SIWARP_DIRECT_POLL")) != 0;
    swp_tcp_cc_init(ctx);
    /* Pick the CRC32c engine now: the choice times two engines over a
     * 48 KiB buffer once a process, and at first use it would land inside
     * the first connection's handshake (time to first message). */
    (void)swp_crc32c_name();
    pthread_mutex_init(&ctx->lock, NULL);
    swp_list_init(&ctx->qps);
    swp_list_init(&ctx->timers);
    swp_list_init(&ctx->tx_held);
    swp_list_init(&ctx->hints);
    swp_list_init(&ctx->pt_link);
    if (getrandom(&ctx->rng, sizeof(ctx->rng), 0) != sizeof(ctx->rng))
        ctx->rng = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    ctx->rng |= 1;
    ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
    ctx->kickfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ctx->epfd < 0 || ctx->kickfd < 0) {
        rc = -errno;
        goto err;
    }
    rc = swp_poll_add(ctx, &ctx->kick, ctx->kickfd, EPOLLIN, swp_kick_drain);
    if (rc < 0)
        goto err;
    *out = ctx;
    return 0;
err:
    if (ctx->epfd >= 0)
        close(ctx->epfd);
    if (ctx->kickfd >= 0)
        close(ctx->kickfd);
    free(ctx);
    return rc;
}

int siwarp_ctx_set_single_thread(struct siwarp_ctx *ctx, bool on)
{
    int rc = 0;

    if (!ctx)
        return -EINVAL;
    /* the real lock either way: a thread of the old mode may be inside */
    pthread_mutex_lock(&ctx->lock);
    if (ctx->sleepers || (on && ctx->pt))
        rc = -EBUSY;            /* it would wake up to a context nobody locks */
    else if (!on && ctx->recv_handlers)
        rc = -EBUSY;            /* siwarp_cq_set_recv_handler needs it on */
    else
        ctx->single_thread = on;
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

void siwarp_ctx_destroy(struct siwarp_ctx *ctx)
{
    if (!ctx)
        return;
    if (ctx->hw) { swp_hw_ctx_destroy(ctx); return; }
    swp_pt_stop(ctx);
    swp_mem_fini(ctx);
    free(ctx->rx_stage);
    free(ctx->rx_spill);
    close(ctx->kickfd);
    close(ctx->epfd);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

void siwarp_conn_param_default(struct siwarp_conn_param *p)
{
    memset(p, 0, sizeof(*p));
    p->mpa_rev = 2;
    p->crc = 1;
    p->p2p = 1;
    p->rtr = SIWARP_RTR_READ | SIWARP_RTR_WRITE;
    p->ird = 16;
    p->ord = 16;
    p->v1_fallback = 1;
    p->markers_fallback = 1;
    p->timeout_ms = 10000;
}

static int swp_check_send_wr(struct siwarp_qp *qp, const struct siwarp_send_wr *wr)
{
    if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->init.max_sge || (wr->num_sge && !wr->sg_list))
        return -EINVAL;
    if ((unsigned)wr->opcode > SIWARP_WR_IMM_DATA_SE)
        return -EINVAL;
    if (swp_wr_is_ext(wr->opcode))
        return swp_ext_post_check(qp, wr);      /* RFC 7306 (qp_ext.c) */
    /* a Read's SGE is the sink named in the Read Request: it needs an STag */
    if (wr->opcode == SIWARP_WR_READ &&
        (wr->send_flags & (SIWARP_SEND_INLINE | SIWARP_SEND_UNREGISTERED)))
        return -EINVAL;
    return 0;
}

SWP_HOT
static int swp_post_one_send(struct siwarp_qp *qp, const struct siwarp_send_wr *wr)
{
    struct swp_swqe *w;
    uint64_t len = 0;
    int rc = swp_check_send_wr(qp, wr);

    if (rc < 0)
        return rc;
    if (swp_ring_count(&qp->sqr) > qp->sqr.mask)
        return -ENOMEM;
    for (int i = 0; i < wr->num_sge; i++)
        len += wr->sg_list[i].length;
    /* RDMAP carries a 32-bit Read size and DDP a 32-bit message offset */
    if (len > UINT32_MAX)
        return -EMSGSIZE;
    if ((wr->send_flags & SIWARP_SEND_INLINE) && len > qp->init.max_inline)
        return -EINVAL;
    if (!(wr->send_flags & (SIWARP_SEND_INLINE | SIWARP_SEND_UNREGISTERED)) &&
        !swp_wr_is_ext(wr->opcode)) {
        int access = wr->opcode == SIWARP_WR_READ ? SIWARP_ACCESS_LOCAL_WRITE : 0;
        for (int i = 0; i < wr->num_sge; i++) {
            if (wr->sg_list[i].length == 0)
                continue;
            rc = swp_mem_check_local(qp->ctx, qp->pd, &wr->sg_list[i], access);
            if (rc < 0)
                return rc;
        }
    }
    uint32_t slot = qp->sqr.tail & qp->sqr.mask;
    w = &qp->sq[slot];
    memset(w, 0, sizeof(*w));
    w->sge = qp->sq_sge ? qp->sq_sge + (size_t)slot * qp->init.max_sge : w->sge_inline;
    w->wr_id = wr->wr_id;
    w->opcode = wr->opcode;
    w->flags = wr->send_flags;
    w->inv_stag = wr->invalidate_stag;
    w->raddr = wr->rdma.remote_addr;
    w->rkey = wr->rdma.rkey;
    w->len = len;
    w->num_sge = (uint32_t)wr->num_sge;
    if (wr->num_sge)     /* sg_list may be NULL with no SGEs */
        memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(w->sge[0]));
    if (swp_wr_is_ext(wr->opcode) && (rc = swp_ext_post_fill(qp, w, slot, wr)) < 0)
        return rc;
    if (wr->send_flags & SIWARP_SEND_INLINE) {
        uint64_t off = 0;
        w->inline_buf = malloc(len ? len : 1);
        if (!w->inline_buf)
            return -ENOMEM;
        for (int i = 0; i < wr->num_sge; i++) {
            memcpy(w->inline_buf + off, wr->sg_list[i].addr, wr->sg_list[i].length);
            off += wr->sg_list[i].length;
        }
    }
    qp->sqr.tail++;
    return 0;
}

SWP_HOT
int siwarp_post_send(struct siwarp_qp *qp, struct siwarp_send_wr *wr,
                     struct siwarp_send_wr **bad_wr)
{
    int rc = 0;

    if (!qp || !wr)
        return -EINVAL;
#ifdef SWP_TIMELINE
    for (const struct siwarp_send_wr *x = wr; x; x = x->next) {
        uint64_t len = 0;
        for (int i = 0; i < x->num_sge && x->sg_list; i++)
            len += x->sg_list[i].length;
        SWP_TL(SWP_TL_POST, ((uint64_t)x->opcode << 24) | (len < 0xffffffu ? len : 0xffffffu));
    }
#endif
    if (qp->ctx->hw) return swp_hw_post_send(qp, wr, bad_wr);
    swp_lock(qp->ctx);
    /* a sender that posts and seldom progresses (UCP's eager sends complete
     * at post) is no less in the library than one that polls: a progress
     * thread that took it for away woke on every credit and ACK and fought
     * it for the lock (tag_bw 16 KiB: 3,700 context switches in 0.23 s) */
    swp_app_progress(qp->ctx);
    /* SIWARP_SEND_HOLD: as if a post had gone before it in this epoch, so
     * that the direct path declines it and swp_tx_post holds it back
     * (coalescing only) */
    if ((wr->send_flags & SIWARP_SEND_HOLD) && qp->init.tx_coalesce)
        qp->tx_epoch = qp->ctx->epoch;
    /* SIWARP_SEND_PROMPT: as if it were the first post of this epoch, so
     * that the direct path takes it and swp_tx_post writes it now */
    else if (wr->send_flags & SIWARP_SEND_PROMPT)
        qp->tx_epoch = UINT64_MAX;
    if (!wr->next && (rc = swp_tx_direct_send(qp, wr)) > 0) {
        swp_unlock(qp->ctx);
        return rc == 2 ? 1 : 0;
    }
    for (; wr; wr = wr->next) {
        rc = swp_post_one_send(qp, wr);
        if (rc < 0) {
            if (bad_wr)
                *bad_wr = wr;
            break;
        }
    }
    if (qp->state == SIWARP_QPS_RTS || qp->state == SIWARP_QPS_CLOSING)
        swp_tx_post(qp);
    else if (qp->state == SIWARP_QPS_ERROR)
        swp_qp_flush(qp);     /* verbs: work posted in ERROR completes flushed */
    swp_unlock(qp->ctx);
    return rc;
}

SWP_HOT
int siwarp_qp_send_goes_now(struct siwarp_qp *qp)
{
    int now;

    if (!qp)
        return 0;
    if (qp->ctx->hw)
        return 1;
    swp_lock(qp->ctx);
    now = swp_tx_goes_now(qp);
    swp_unlock(qp->ctx);
    return now;
}

SWP_HOT
int siwarp_flush_held(struct siwarp_ctx *ctx)
{
    if (!ctx)
        return -EINVAL;
    if (ctx->hw)
        return 0;
    swp_lock(ctx);
    if (!swp_list_empty(&ctx->tx_held))
        swp_tx_flush_held(ctx);
    swp_unlock(ctx);
    return 0;
}

SWP_HOT
int swp_rwqe_fill(struct siwarp_ctx *ctx, struct siwarp_pd *pd, uint32_t max_sge,
                  struct swp_rwqe *w, const struct siwarp_recv_wr *wr)
{
    uint64_t len = 0;
    int rc;

    if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge || (wr->num_sge && !wr->sg_list))
        return -EINVAL;
    for (int i = 0; i < wr->num_sge; i++) {
        len += wr->sg_list[i].length;
        if (wr->sg_list[i].length &&
            (rc = swp_mem_check_local(ctx, pd, &wr->sg_list[i], SIWARP_ACCESS_LOCAL_WRITE)) < 0)
            return rc;
    }
    if (len > UINT32_MAX)
        return -EMSGSIZE;
    w->wr_id = wr->wr_id;
    w->num_sge = (uint32_t)wr->num_sge;
    w->len = len;
    w->mr_gen = ctx->mr_gen;
    if (wr->num_sge)
        memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(w->sge[0]));
    return 0;
}

int siwarp_post_recv(struct siwarp_qp *qp, struct siwarp_recv_wr *wr,
                     struct siwarp_recv_wr **bad_wr)
{
    int rc = 0;

    if (!qp || !wr)
        return -EINVAL;
    if (qp->ctx->hw) return swp_hw_post_recv(qp, wr, bad_wr);
    if (qp->srq)
        return -EINVAL;         /* verbs: a QP on an SRQ has no receive queue */
    swp_lock(qp->ctx);
    for (; wr; wr = wr->next) {
        uint32_t slot = qp->rqr.tail & qp->rqr.mask;
        qp->rq[slot].sge = qp->rq_sge + (size_t)slot * qp->init.max_sge;
        rc = swp_ring_count(&qp->rqr) > qp->rqr.mask ? -ENOMEM
             : swp_rwqe_fill(qp->ctx, qp->pd, qp->init.max_sge, &qp->rq[slot], wr);
        if (rc < 0) {
            if (bad_wr)
                *bad_wr = wr;
            break;
        }
        qp->rqr.tail++;
    }
    if (qp->state == SIWARP_QPS_ERROR)
        swp_qp_flush(qp);
    swp_unlock(qp->ctx);
    return rc;
}
