/*
 * cq.c - completion queues: a ring of work completions filled by the data
 * path and drained by siwarp_poll_cq.  The pollable fd is the context's
 * epoll fd: completions only appear through progress, and locally
 * generated ones (flushes) kick the context's eventfd.
 */
#include <stdlib.h>

#include "swp.h"

int siwarp_create_cq(struct siwarp_ctx *ctx, int cqe, struct siwarp_cq **out)
{
    struct siwarp_cq *cq;

    uint32_t size = 1;

    if (!ctx || !out || cqe <= 0 || cqe > (1 << 22))
        return -EINVAL;
    if (ctx->hw) return swp_hw_create_cq(ctx, cqe, out);
    /* a power of two: ring positions are masked, never divided (a 32-bit
     * div is ~25 cycles, three of them per small message) */
    while (size < (uint32_t)cqe)
        size <<= 1;
    cq = calloc(1, sizeof(*cq));
    if (!cq)
        return -ENOMEM;
    cq->ring = calloc(size, sizeof(*cq->ring));
    if (!cq->ring) {
        free(cq);
        return -ENOMEM;
    }
    cq->ctx = ctx;
    cq->size = size;
    *out = cq;
    return 0;
}

int siwarp_destroy_cq(struct siwarp_cq *cq)
{
    if (!cq)
        return -EINVAL;
    if (cq->ctx->hw) return swp_hw_destroy_cq(cq);
    if (cq->refs)
        return -EBUSY;
    if (cq->recv_fn)
        cq->ctx->recv_handlers--;
    free(cq->ring);
    free(cq);
    return 0;
}

/* A full CQ grows instead of dropping the completion: every completion
 * stands for a WR the application posted, so the ring can never need more
 * than the WRs outstanding, and a lost completion would hang the caller.
 * -ENOMEM only if memory runs out (the completion is then lost, counted). */
SWP_HOT
int swp_cq_push(struct siwarp_cq *cq, const struct siwarp_wc *wc)
{
    if (cq->count == cq->size) {
        uint32_t nsize = cq->size * 2;
        struct siwarp_wc *ring = malloc((size_t)nsize * sizeof(*ring));

        if (!ring) {
            cq->overflows++;
            return -ENOMEM;
        }
        for (uint32_t i = 0; i < cq->count; i++)
            ring[i] = cq->ring[(cq->head + i) & (cq->size - 1)];
        free(cq->ring);
        cq->ring = ring;
        cq->head = 0;
        cq->size = nsize;
        SWP_DBG("cq %p grew to %u entries", (void *)cq, nsize);
    }
    cq->ring[(cq->head + cq->count) & (cq->size - 1)] = *wc;
    cq->count++;
    cq->ctx->cq_pushes++;
    return 0;
}

/* Drop the completions of a QP being destroyed: wc.qp would dangle. */
void swp_cq_purge_qp(struct siwarp_cq *cq, const struct siwarp_qp *qp)
{
    uint32_t kept = 0;

    for (uint32_t i = 0; i < cq->count; i++) {
        struct siwarp_wc wc = cq->ring[(cq->head + i) & (cq->size - 1)];
        if (wc.qp != qp)
            cq->ring[(cq->head + kept++) & (cq->size - 1)] = wc;
    }
    cq->count = kept;
}

SWP_HOT
static int swp_cq_drain(struct siwarp_cq *cq, int n, struct siwarp_wc *wc)
{
    int i;

    for (i = 0; i < n && cq->count; i++) {
        wc[i] = cq->ring[cq->head];
        cq->head = (cq->head + 1) & (cq->size - 1);
        cq->count--;
    }
    /* Empty: start over at slot 0.  A busy poller drains the ring every
     * few completions, so they keep landing on its first, warm pages; a
     * head that walked on would touch every page of the ring in turn
     * (6,144 entries in the BTL: 8 ranks all to all took ~600 page faults,
     * 10 us each on this VM, in their first few hundred exchanges). */
    if (cq->count == 0)
        cq->head = 0;
    return i;
}

SWP_HOT
int siwarp_poll_cq(struct siwarp_cq *cq, int n, struct siwarp_wc *wc)
{
    int got;

    if (!cq || n < 0 || (n && !wc))
        return -EINVAL;
    if (cq->ctx->hw) return swp_hw_poll_cq(cq, n, wc);
    swp_lock(cq->ctx);
    swp_app_progress(cq->ctx);
    got = swp_cq_drain(cq, n, wc);
    if (got < n) {
        int rc = swp_progress_locked(cq->ctx, 0);
        if (rc < 0 && got == 0) {
            swp_unlock(cq->ctx);
            return rc;
        }
        got += swp_cq_drain(cq, n - got, wc + got);
    }
    swp_unlock(cq->ctx);
    swp_app_idle(cq->ctx, got == 0);
    return got;
}

int siwarp_cq_set_recv_handler(struct siwarp_cq *cq, siwarp_recv_handler_fn fn, void *arg,
                               uint32_t max_len)
{
    struct siwarp_ctx *ctx;
    int rc = 0;

    if (!cq)
        return -EINVAL;
    if (cq->ctx->hw)
        return -EOPNOTSUPP;
    ctx = cq->ctx;
    swp_lock(ctx);
    if (fn && !ctx->single_thread) {
        rc = -EINVAL;           /* a handler re-enters the library unlocked */
    } else if (ctx->in_recv_handler) {
        rc = -EBUSY;
    } else {
        ctx->recv_handlers += (fn != NULL) - (cq->recv_fn != NULL);
        cq->recv_fn = fn;
        cq->recv_arg = fn ? arg : NULL;
        cq->recv_max = fn ? max_len : 0;
    }
    swp_unlock(ctx);
    return rc;
}

int siwarp_cq_fd(const struct siwarp_cq *cq)
{
    if (cq && cq->ctx->hw) return swp_hw_cq_fd(cq);
    /* the context's fd: handing it out keeps every socket in its set */
    return cq ? swp_ctx_export_fd(cq->ctx) : -EINVAL;
}

static bool swp_cq_nonempty(void *arg)
{
    return ((struct siwarp_cq *)arg)->count > 0;
}

int siwarp_cq_wait(struct siwarp_cq *cq, int timeout_ms)
{
    int rc;

    if (!cq)
        return -EINVAL;
    if (cq->ctx->hw) return swp_hw_cq_wait(cq, timeout_ms);
    swp_lock(cq->ctx);
    rc = swp_progress_until(cq->ctx, timeout_ms, swp_cq_nonempty, cq);
    swp_unlock(cq->ctx);
    return rc;
}

const char *siwarp_wc_status_str(enum siwarp_wc_status s)
{
    static const char *const names[] = {
        [SIWARP_WC_SUCCESS] = "success",
        [SIWARP_WC_LOC_LEN_ERR] = "local length error",
        [SIWARP_WC_LOC_PROT_ERR] = "local protection error",
        [SIWARP_WC_WR_FLUSH_ERR] = "work request flushed",
        [SIWARP_WC_REM_ACCESS_ERR] = "remote access error",
        [SIWARP_WC_REM_OP_ERR] = "remote operation error",
        [SIWARP_WC_REM_ABORT_ERR] = "remote abort (Terminate received)",
        [SIWARP_WC_LLP_ERR] = "lower layer (TCP/MPA) error",
        [SIWARP_WC_GENERAL_ERR] = "general error",
    };
    if ((unsigned)s < sizeof(names) / sizeof(names[0]) && names[s])
        return names[s];
    return "unknown status";
}
