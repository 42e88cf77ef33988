/*
 * read_hint.c - a Read announced before it comes.  An MPI rendezvous by
 * RDMA Read (ob1's RGET) leaves the sender idle for two small hops (about
 * 12 us on loopback) between posting its header and the Read Request's
 * arrival, and then puts one CRC32c pass over the whole message on the
 * critical path before the Response's first byte leaves (RFC 5044 4.4).
 * Told which Read to expect, the responder computes the payload CRC of
 * each Response segment in progress passes that have nothing else to do;
 * the FPDU's CRC is then the header's CRC shifted over the payload and
 * combined with it (CRC32c is linear over GF(2)), one 32x32 product.
 *
 * Safety: a precomputed CRC is right only while the bytes are unchanged,
 * and a wrong one makes the peer end the connection.  So a hint is used
 * only by a Read of exactly its STag, address and length, only once, and
 * only while its MR's hint generation is the one it was made at:
 * siwarp_mr_drop_hints (the caller's "these bytes may change from now",
 * e.g. when its send completes) and a new hint on the same MR move that
 * generation on, and a deregistered MR is no longer found by its STag.
 * A Read that takes a hint owns it until its Response is all queued.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "crc32c.h"
#include "read_hint.h"

/* Too short to be worth it: the Response is a segment or two. */
#define SWP_READ_HINT_MIN 32768u

static bool hint_live(struct siwarp_ctx *ctx, const struct swp_read_hint *h)
{
    struct siwarp_mr *mr = swp_mem_lookup(ctx, h->stag);

    return mr && mr->valid && mr->hint_gen == h->gen;
}

static void hint_unlink(struct swp_read_hint *h)
{
    swp_list_del(&h->link);     /* harmless when not linked (a self loop) */
}

static void hint_free(struct swp_read_hint *h)
{
    if (h) {
        hint_unlink(h);
        free(h);
    }
}

int siwarp_qp_read_hint(struct siwarp_qp *qp, struct siwarp_mr *mr, const void *addr,
                        size_t len)
{
    struct siwarp_ctx *ctx;
    struct swp_read_hint *h;
    struct siwarp_sge range;
    uint32_t seg, nseg;
    int rc = 0;

    if (!qp || !mr || !addr || len == 0 || len > UINT32_MAX)
        return -EINVAL;
    ctx = qp->ctx;
    if (ctx->hw)
        return -EOPNOTSUPP;     /* the RNIC computes its CRCs itself */
    range = (struct siwarp_sge){ (void *)addr, (uint32_t)len, mr->stag };
    swp_lock(ctx);
    /* valid, the QP's PD, readable by the peer, [addr, addr + len) in mr */
    if (swp_mem_check_local(ctx, qp->pd, &range, SIWARP_ACCESS_REMOTE_READ) < 0) {
        rc = -EINVAL;
        goto out;
    }
    /* nothing to precompute without CRC; with markers the CRC covers
     * them too, and they fall where the stream puts them */
    if (qp->state != SIWARP_QPS_RTS || !qp->nego.crc || qp->nego.markers_tx ||
        qp->nego.mulpdu <= SWP_HDR_TAGGED) {
        rc = -EOPNOTSUPP;
        goto out;
    }
    if (len < SWP_READ_HINT_MIN) {
        rc = -ERANGE;
        goto out;
    }
    if (qp->read_hint) {
        if (hint_live(ctx, qp->read_hint)) {
            rc = -EBUSY;        /* the first announced Read keeps its hint */
            goto out;
        }
        hint_free(qp->read_hint);
        qp->read_hint = NULL;
    }
    /* as swp_tx_max_payload cuts a Response without markers; a segment
     * cut otherwise is computed as usual (swp_read_hint_crc) */
    seg = qp->nego.mulpdu - SWP_HDR_TAGGED;
    nseg = (uint32_t)((len + seg - 1) / seg);
    h = malloc(sizeof(*h) + (size_t)nseg * sizeof(h->crc[0]));
    if (!h) {
        rc = -ENOMEM;
        goto out;
    }
    h->qp = qp;
    h->stag = mr->stag;
    h->gen = mr->hint_gen = ++ctx->hint_seq;    /* voids older hints on mr */
    h->addr = addr;
    h->len = (uint32_t)len;
    h->seg = seg;
    h->nseg = nseg;
    h->done = 0;
    h->ops_ready = false;
    qp->read_hint = h;
    swp_list_add_tail(&ctx->hints, &h->link);
out:
    swp_unlock(ctx);
    return rc;
}

int siwarp_mr_drop_hints(struct siwarp_mr *mr)
{
    struct siwarp_ctx *ctx;

    if (!mr)
        return -EINVAL;
    ctx = mr->pd->ctx;
    if (ctx->hw)
        return 0;
    swp_lock(ctx);
    mr->hint_gen = ++ctx->hint_seq;
    swp_unlock(ctx);
    return 0;
}

uint64_t siwarp_ctx_read_hint_segments(struct siwarp_ctx *ctx)
{
    uint64_t n;

    if (!ctx)
        return 0;
    swp_lock(ctx);
    n = ctx->hint_segs_used;
    swp_unlock(ctx);
    return n;
}

static int hint_step1(struct siwarp_ctx *ctx)
{
    while (!swp_list_empty(&ctx->hints)) {
        struct swp_read_hint *h = swp_container_of(ctx->hints.next, struct swp_read_hint, link);
        uint32_t off;

        if (!hint_live(ctx, h)) {
            /* the bytes may have changed, or gone: never read them again */
            h->qp->read_hint = NULL;
            hint_free(h);
            continue;
        }
        if (!h->ops_ready) {
            uint32_t last = h->len - (h->nseg - 1) * h->seg;
            h->op_full = swp_crc_xnmodp(8 * (size_t)h->seg);
            h->op_last = last == h->seg ? h->op_full : swp_crc_xnmodp(8 * (size_t)last);
            h->ops_ready = true;
            return 1;
        }
        off = h->done * h->seg;
        h->crc[h->done] = swp_crc32c(0, h->addr + off,
                                     h->len - off < h->seg ? h->len - off : h->seg);
        if (++h->done == h->nseg)
            hint_unlink(h);     /* complete: it waits on its QP for the Read */
        return 1;
    }
    return 0;
}

/* Two segments (about 128 KiB, 2 us of CRC here) per pass that found
 * nothing: a Read Request that comes meanwhile waits that long at most,
 * and its Response would have needed those CRCs anyway.  One a pass left
 * 256 KiB Responses with 1-3 of 5 segments computed when the Request
 * came; four were slower than two (mpi-bench lat, 4-5 alternating rounds:
 * contrib/PERFORMANCE.md). */
#define SWP_READ_HINT_SEGS_PER_PASS 2

int swp_read_hint_step(struct siwarp_ctx *ctx)
{
    int n = 0;

    while (n < SWP_READ_HINT_SEGS_PER_PASS && hint_step1(ctx))
        n++;
    return n > 0;
}

void swp_read_hint_take(struct siwarp_qp *qp, struct swp_irqe *r, uint32_t stag, uint64_t to,
                        uint32_t len)
{
    struct swp_read_hint *h = qp->read_hint;

    r->hint = NULL;
    if (!h || h->stag != stag || (uintptr_t)h->addr != to || h->len != len)
        return;
    qp->read_hint = NULL;
    if (!hint_live(qp->ctx, h)) {
        hint_free(h);
        return;
    }
    hint_unlink(h);             /* what is not computed now is computed inline */
    r->hint = h;
}

bool swp_read_hint_crc(const struct swp_irqe *r, uint32_t off, uint32_t plen, uint32_t *pcrc,
                       uint32_t *op)
{
    const struct swp_read_hint *h = r->hint;
    uint32_t i;

    if (!h || !h->ops_ready || off % h->seg)
        return false;
    i = off / h->seg;
    if (i >= h->done || plen != (i + 1 < h->nseg ? h->seg : h->len - off))
        return false;
    *pcrc = h->crc[i];
    *op = i + 1 < h->nseg ? h->op_full : h->op_last;
    return true;
}

void swp_read_hint_retire(struct swp_irqe *r)
{
    hint_free(r->hint);
    r->hint = NULL;
}

void swp_read_hint_flush(struct siwarp_qp *qp)
{
    for (uint32_t i = qp->irqr.head; i != qp->irqr.tail; i++)
        swp_read_hint_retire(&qp->irq[i & qp->irqr.mask]);
    hint_free(qp->read_hint);
    qp->read_hint = NULL;
}
