/*
 * btl_siwarp_srq.c - one pool of eager receive buffers for every peer: a
 * libsiwarp shared receive queue (SRQ) per module.
 *
 * iWARP has no receiver-not-ready retry (RFC 5040: a Send that finds no
 * buffer is fatal to the connection), so per-peer credits stay the flow
 * control and the pool guarantees them: every credit granted to a peer
 * (AM credits in the connection's private data, plus the control credits)
 * is backed by a buffer posted to the SRQ, i.e.
 *     sum of grants over every QP ever created  <=  buffers posted.
 * A buffer a message consumed goes back to the SRQ and its credit back to
 * the peer that sent the message (wc.qp names it), exactly as with per-peer
 * receive queues.  Grants are never taken back while the module lives: a QP
 * abandoned after a lost simultaneous connect may still hold credits the
 * peer could use, so its share stays promised until finalize -- unless the
 * QP never reached full operation and never took a buffer (a refused or
 * lost connect).
 *
 * Share: btl_siwarp_srq_size buffers divided among the job's other
 * processes, clamped to [btl_siwarp_srq_min_credits, btl_siwarp_rq_depth];
 * when the division gives less than the minimum the pool grows by the
 * minimum for each further peer, so memory per peer tends to
 * (min credits + control credits) buffers.
 *
 * Demand: a peer that keeps us sending explicit CREDIT messages streams
 * one way faster than its credits come back; once such messages returned
 * MCA_BTL_SIWARP_SRQ_GROW_AFTER times its grant, the grant doubles (up to
 * rq_depth) while the pool stays within btl_siwarp_srq_max buffers.  Credits
 * only grow (taking some back would need the peer's consent), so a peer
 * that once streamed keeps its buffers until finalize.
 *
 * On a verbs device libsiwarp has no SRQ (siwarp_create_srq: -EOPNOTSUPP):
 * the module then posts rq_depth buffers per QP, as before the pool.
 */
#include "btl_siwarp.h"
#include "btl_siwarp_endpoint.h"
#include "btl_siwarp_frag.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


/* Other processes in the job (PMIx job size - 1), at least 1. */
static int job_peers(void)
{
    opal_process_name_t wildcard = { .jobid = OPAL_PROC_MY_NAME.jobid,
                                     .vpid = OPAL_VPID_WILDCARD };
    uint32_t size = 0, *p = &size;
    int rc;

    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_JOB_SIZE, &wildcard, &p, OPAL_UINT32);
    if (OPAL_SUCCESS != rc || size < 2) {
        return 1;
    }
    return (int) size - 1;
}

int mca_btl_siwarp_srq_init(mca_btl_siwarp_module_t *m)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;
    struct siwarp_srq_init_attr attr = { .max_wr = 1, .max_sge = 1 };
    int rc;

    m->srq = NULL;
    m->srq_posted = m->srq_granted = 0;
    m->srq_frags = NULL;
    if (0 == c->srq_size) {
        return OPAL_SUCCESS;            /* per-peer receive queues asked for */
    }
    rc = siwarp_create_srq(m->pd, &attr, &m->srq);
    if (-EOPNOTSUPP == rc) {
        BTL_VERBOSE(("no shared receive queue on %s: receive buffers per peer",
                     siwarp_ctx_backend(m->ctx)));
        m->srq = NULL;
        return OPAL_SUCCESS;
    }
    if (rc < 0) {
        BTL_ERROR(("siwarp: siwarp_create_srq: %s", strerror(-rc)));
        m->srq = NULL;
        return mca_btl_siwarp_errno_to_opal(rc);
    }
    m->srq_peers = job_peers();
    return OPAL_SUCCESS;
}

/* Post n more pool buffers. */
static int srq_grow(mca_btl_siwarp_module_t *m, int n)
{
    mca_btl_siwarp_frag_t **frags;
    int rc;

    rc = siwarp_resize_srq(m->srq, (uint32_t) (m->srq_posted + n));
    if (rc < 0) {
        return mca_btl_siwarp_errno_to_opal(rc);
    }
    frags = realloc(m->srq_frags, (size_t) (m->srq_posted + n) * sizeof(*frags));
    if (NULL == frags) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    m->srq_frags = frags;
    for (int i = 0; i < n; i++) {
        mca_btl_siwarp_frag_t *frag = mca_btl_siwarp_frag_alloc_eager(m);
        if (NULL == frag) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        frag->type = MCA_BTL_SIWARP_FRAG_RECV;
        frag->on_srq = 1;
        rc = mca_btl_siwarp_srq_repost(m, frag);
        if (OPAL_SUCCESS != rc) {
            frag->on_srq = 0;
            frag->type = MCA_BTL_SIWARP_FRAG_SEND;
            mca_btl_siwarp_frag_return(frag);
            return rc;
        }
        m->srq_frags[m->srq_posted++] = frag;
    }
    return OPAL_SUCCESS;
}

int mca_btl_siwarp_srq_reserve(mca_btl_siwarp_module_t *m, int *grant)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;
    int share = c->srq_size / m->srq_peers - MCA_BTL_SIWARP_CTRL_CREDITS;
    int need, rc;

    if (share < c->srq_min_credits) {
        share = c->srq_min_credits;
    }
    if (share > c->rq_depth) {
        share = c->rq_depth;
    }
    need = m->srq_granted + share + MCA_BTL_SIWARP_CTRL_CREDITS;
    if (need > m->srq_posted) {
        rc = srq_grow(m, need - m->srq_posted);
        if (OPAL_SUCCESS != rc) {
            return rc;      /* nothing granted: the posted buffers stay spare */
        }
    }
    m->srq_granted = need;
    *grant = share;
    BTL_VERBOSE(("shared receive queue: %d credits granted (+%d control), %d of %d buffers "
                 "promised", share, MCA_BTL_SIWARP_CTRL_CREDITS, m->srq_granted,
                 m->srq_posted));
    return OPAL_SUCCESS;
}

int mca_btl_siwarp_srq_more(mca_btl_siwarp_module_t *m, int grant)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;
    int extra = grant;

    if (extra > c->rq_depth - grant) {
        extra = c->rq_depth - grant;
    }
    if (extra > c->srq_max - m->srq_granted) {
        extra = c->srq_max - m->srq_granted;
    }
    if (extra <= 0) {
        return 0;
    }
    if (m->srq_granted + extra > m->srq_posted &&
        OPAL_SUCCESS != srq_grow(m, m->srq_granted + extra - m->srq_posted)) {
        return 0;
    }
    m->srq_granted += extra;
    BTL_VERBOSE(("shared receive queue: a streaming peer's grant grows by %d to %d, %d of %d "
                 "buffers promised", extra, grant + extra, m->srq_granted, m->srq_posted));
    return extra;
}

void mca_btl_siwarp_srq_release(mca_btl_siwarp_module_t *m, int grant)
{
    m->srq_granted -= grant + MCA_BTL_SIWARP_CTRL_CREDITS;
}

SWP_HOT
int mca_btl_siwarp_srq_repost(mca_btl_siwarp_module_t *m, mca_btl_siwarp_frag_t *frag)
{
    struct siwarp_sge sge = {
        .addr = frag->hdr, .length = (uint32_t) m->frag_size, .lkey = frag->lkey,
    };
    struct siwarp_recv_wr wr = {
        .wr_id = (uint64_t) (uintptr_t) frag, .next = NULL, .sg_list = &sge, .num_sge = 1,
    };
    struct siwarp_recv_wr *bad;
    int rc;

    frag->endpoint = NULL;          /* the pool's: wc.qp names the sender */
    rc = siwarp_post_srq_recv(m->srq, &wr, &bad);
    if (rc < 0) {
        BTL_ERROR(("siwarp: siwarp_post_srq_recv: %s", strerror(-rc)));
        return mca_btl_siwarp_errno_to_opal(rc);
    }
    return OPAL_SUCCESS;
}

/* After every QP is destroyed. */
void mca_btl_siwarp_srq_fini(mca_btl_siwarp_module_t *m)
{
    if (NULL == m->srq) {
        return;
    }
    (void) siwarp_destroy_srq(m->srq);
    m->srq = NULL;
    for (int i = 0; i < m->srq_posted; i++) {
        m->srq_frags[i]->on_srq = 0;
        m->srq_frags[i]->type = MCA_BTL_SIWARP_FRAG_SEND;
        mca_btl_siwarp_frag_return(m->srq_frags[i]);
    }
    free(m->srq_frags);
    m->srq_frags = NULL;
    m->srq_posted = m->srq_granted = 0;
}
