/*
 * btl_siwarp_ep_qp.c - an endpoint's iWARP queue pair: the connection
 * parameters and private data it is set up with, its receive buffers and
 * credit grant, and its end (destroyed at once when it never carried
 * traffic, else kept with its buffers until finalize).
 */
#include "btl_siwarp.h"
#include "btl_siwarp_endpoint.h"
#include "btl_siwarp_frag.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "opal/util/output.h"

/* An outgoing QP abandoned after a lost simultaneous connect, or a failed
 * one: its receive buffers stay allocated until finalize so that a late
 * completion naming them never touches recycled memory. */
typedef struct {
    opal_list_item_t super;
    struct siwarp_qp *qp;
    mca_btl_siwarp_frag_t **frags;
    int num_frags;
} mca_btl_siwarp_grave_t;
static OBJ_CLASS_INSTANCE(mca_btl_siwarp_grave_t, opal_list_item_t, NULL, NULL);

/* ---- connection private data -------------------------------------------- */

void mca_btl_siwarp_fill_conn_pd(mca_btl_siwarp_conn_pd_t *pd, int reason)
{
    opal_process_name_t me = OPAL_PROC_MY_NAME;

    memset(pd, 0, sizeof(*pd));
    pd->magic = htonl(MCA_BTL_SIWARP_CONN_MAGIC);
    pd->version = MCA_BTL_SIWARP_CONN_VERSION;
    pd->reason = (uint8_t) reason;
    pd->rq_depth = htons((uint16_t) mca_btl_siwarp_component.rq_depth);
    pd->max_send = htonl((uint32_t) mca_btl_siwarp_param_module.btl_max_send_size);
    pd->jobid = htonl(me.jobid);
    pd->vpid = htonl(me.vpid);
}

int mca_btl_siwarp_parse_conn_pd(const void *data, size_t len, mca_btl_siwarp_conn_pd_t *out,
                                 mca_btl_siwarp_conn_pd_t *wire)
{
    if (NULL == data || len < sizeof(*out)) {
        return OPAL_ERR_BAD_PARAM;
    }
    memcpy(out, data, sizeof(*out));
    if (NULL != wire) {
        memcpy(wire, data, sizeof(*wire));
    }
    if (ntohl(out->magic) != MCA_BTL_SIWARP_CONN_MAGIC ||
        out->version != MCA_BTL_SIWARP_CONN_VERSION) {
        return OPAL_ERR_BAD_PARAM;
    }
    out->rq_depth = ntohs(out->rq_depth);
    out->jobid = ntohl(out->jobid);
    out->vpid = ntohl(out->vpid);
    out->max_send = ntohl(out->max_send);
    if (0 == out->rq_depth) {
        return OPAL_ERR_BAD_PARAM;
    }
    return OPAL_SUCCESS;
}

/* Both ends post receive buffers of their own btl_max_send_size and send up
 * to it, so a connection is only sound where the two agree: a Send longer
 * than the peer's buffer would end the connection with a DDP Terminate
 * (RFC 5041 7.2, untagged message too long) in the middle of the job.  An
 * acceptor compares the request's max_send with its own before it takes
 * the connection and fails the endpoint with a message naming the
 * parameter.  OPAL_SUCCESS or OPAL_ERR_BAD_PARAM (endpoint failed). */
int mca_btl_siwarp_ep_check_max_send(mca_btl_siwarp_endpoint_t *ep,
                                     const mca_btl_siwarp_conn_pd_t *pd)
{
    size_t mine = ep->module->super.btl_max_send_size;
    char why[256];

    if (pd->max_send == mine) {
        return OPAL_SUCCESS;
    }
    snprintf(why, sizeof(why),
             "btl_siwarp_max_send_size differs: %u octets at the peer, %zu here; each end "
             "posts receive buffers of its own size and sends up to it, so it must be the "
             "same on every rank", pd->max_send, mine);
    mca_btl_siwarp_ep_fail(ep, why, 1);
    return OPAL_ERR_BAD_PARAM;
}

/* ---- iWARP QP setup ------------------------------------------------------ */

/* The connection parameters every connection and listener of this
 * process uses, from the MCA parameters. */
void mca_btl_siwarp_conn_param(struct siwarp_conn_param *p)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;

    siwarp_conn_param_default(p);
    p->mpa_rev = c->mpa_rev;
    p->crc = c->crc;
    p->markers = c->markers;
    p->p2p = c->p2p != 0;       /* auto: an initiator drops it per peer */
    p->rtr = c->rtr;
    p->ird = p->ord = (uint16_t) c->ird_ord;
    p->mulpdu = (uint32_t) c->mulpdu;
    /* auto: a listener answers a big-FPDU request with 65535 (only siwarp
     * asks); an initiator asks only a peer known to be siwarp (start_iwarp) */
    p->big_fpdu = c->big_fpdu < 0 ? 65535 : (uint32_t) c->big_fpdu;
    /* RFC 7306: a responder takes a siwarp peer's offer unless it is off
     * here; an initiator offers it per peer (start_iwarp) */
    p->rfc7306 = c->rfc7306 ? 0 : -1;
    p->v1_fallback = 1;
    p->markers_fallback = 1;
    p->timeout_ms = c->connect_timeout;
    p->llp_timeout_ms = c->llp_timeout;
    /* Our peers are the job's processes, at addresses the runtime gave us.
     * One whose kernel took our connection but that does not answer is
     * alive and not in MPI (computing, blocked in the runtime -- a parent
     * inside MPI_Comm_spawn --, or stopped in a debugger): wait for it as
     * btl tcp does, with keepalive at btl_siwarp_llp_timeout for a host
     * or link that dies meanwhile.  Giving up after connect_timeout failed
     * the job whenever a rank stayed out of MPI longer than that (three
     * addresses: 30 s) while a peer made first contact. */
    p->reply_wait_ms = -1;
}

void mca_btl_siwarp_ep_conn_param(mca_btl_siwarp_endpoint_t *ep, struct siwarp_conn_param *p,
                                  mca_btl_siwarp_conn_pd_t *pd, int reason)
{
    mca_btl_siwarp_conn_param(p);
    mca_btl_siwarp_fill_conn_pd(pd, reason);
    pd->rq_depth = htons((uint16_t) ep->rq_grant);     /* what ep_qp_create posted */
    p->private_data = pd;
    p->private_data_len = sizeof(*pd);
}

int mca_btl_siwarp_ep_post_recv_frag(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_frag_t *frag)
{
    struct siwarp_sge sge = {
        .addr = frag->hdr,
        .length = (uint32_t) ep->module->frag_size,
        .lkey = frag->lkey,
    };
    struct siwarp_recv_wr wr = {
        .wr_id = (uint64_t) (uintptr_t) frag, .next = NULL, .sg_list = &sge, .num_sge = 1,
    };
    struct siwarp_recv_wr *bad;
    return siwarp_post_recv(ep->qp, &wr, &bad);
}

/* The AM credits the peer of a new QP gets: rq_depth with per-QP receives,
 * else its share of the SRQ, posted before the grant leaves in the MPA
 * private data.  Owed credits go back in an explicit CREDIT message at half
 * the grant, rounded up, at most (and at most btl_siwarp_credit_threshold):
 * with a threshold above the grant a peer sending one way would wait
 * forever.  Rounded up: a grant of 3 returns at 2, so that a peer sending
 * back to us about as often as we send to it carries the credits itself
 * (at 1 every Send not answered at once cost a CREDIT message). */
void mca_btl_siwarp_ep_set_grant(mca_btl_siwarp_endpoint_t *ep, int grant)
{
    ep->rq_grant = grant;
    ep->credit_threshold = (grant + 1) / 2;
    if (ep->credit_threshold > mca_btl_siwarp_component.credit_threshold) {
        ep->credit_threshold = mca_btl_siwarp_component.credit_threshold;
    }
}

static int qp_grant(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_module_t *m = ep->module;
    int grant = mca_btl_siwarp_component.rq_depth, rc;

    if (NULL != m->srq) {
        rc = mca_btl_siwarp_srq_reserve(m, &grant);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
    }
    mca_btl_siwarp_ep_set_grant(ep, grant);
    ep->credit_returned = 0;
    return OPAL_SUCCESS;
}

/* Create the QP and back every credit with a posted receive (in the
 * module's SRQ or on the QP) before any MPA exchange, so no Send can ever
 * arrive without a buffer. */
int mca_btl_siwarp_ep_qp_create(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_module_t *m = ep->module;
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;
    int nrecv = c->rq_depth + MCA_BTL_SIWARP_CTRL_CREDITS;
    struct siwarp_qp_init_attr attr = {
        .send_cq = m->cq, .recv_cq = m->cq,
        .max_send_wr = (uint32_t) c->sq_depth,
        .max_recv_wr = (uint32_t) nrecv,
        .max_sge = 2,
        /* the first message, the proof of the key, goes inline */
        .max_inline = (uint32_t) (c->max_inline > (int) sizeof(mca_btl_siwarp_auth_t)
                                  ? c->max_inline : (int) sizeof(mca_btl_siwarp_auth_t)),
        .sq_sig_all = 0,
        .tx_coalesce = (uint32_t) c->tx_coalesce,
        .srq = m->srq,
    };
    int rc, i;

    rc = qp_grant(ep);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    if (NULL != m->srq) {
        attr.max_recv_wr = 0;
        nrecv = 0;
    }
    rc = siwarp_create_qp(m->pd, &attr, &ep->qp);
    if (rc < 0) {
        BTL_ERROR(("siwarp: siwarp_create_qp: %s", strerror(-rc)));
        ep->qp = NULL;
        return mca_btl_siwarp_errno_to_opal(rc);
    }
    siwarp_qp_set_context(ep->qp, ep);
    /* + 1: with an SRQ nrecv is 0, and calloc(0) may return NULL */
    ep->recv_frags = calloc((size_t) nrecv + 1, sizeof(*ep->recv_frags));
    if (NULL == ep->recv_frags) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto err_qp;
    }
    for (i = 0; i < nrecv; i++) {
        mca_btl_siwarp_frag_t *frag = mca_btl_siwarp_frag_alloc_eager(m);
        if (NULL == frag) {
            rc = OPAL_ERR_OUT_OF_RESOURCE;
            goto err_frags;
        }
        frag->type = MCA_BTL_SIWARP_FRAG_RECV;
        frag->endpoint = ep;
        ep->recv_frags[i] = frag;
        ep->num_recv_frags = i + 1;
        rc = mca_btl_siwarp_ep_post_recv_frag(ep, frag);
        if (rc < 0) {
            BTL_ERROR(("siwarp: siwarp_post_recv before connect: %s", strerror(-rc)));
            rc = mca_btl_siwarp_errno_to_opal(rc);
            goto err_frags;
        }
    }
    ep->sq_free = c->sq_depth;
    ep->owed_credits = ep->owed_ctrl = 0;
    ep->outstanding = 0;
    ep->credit_inflight = 0;
    return OPAL_SUCCESS;

err_frags:
    for (i = 0; i < ep->num_recv_frags; i++) {
        ep->recv_frags[i]->type = MCA_BTL_SIWARP_FRAG_SEND;
        mca_btl_siwarp_frag_return(ep->recv_frags[i]);
    }
    free(ep->recv_frags);
    ep->recv_frags = NULL;
    ep->num_recv_frags = 0;
err_qp:
    siwarp_destroy_qp(ep->qp);
    ep->qp = NULL;
    return rc;
}

/* The initiator's first message: the proof of the pair's key over both
 * nonces, inline and unsignaled (wr_id 0: only a flush completes it). */
int mca_btl_siwarp_ep_send_auth(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_auth_t a;
    struct siwarp_sge sge = {.addr = &a, .length = sizeof(a), .lkey = 0};
    struct siwarp_send_wr wr = {
        .wr_id = 0, .next = NULL, .sg_list = &sge, .num_sge = 1,
        .opcode = SIWARP_WR_SEND, .send_flags = SIWARP_SEND_INLINE,
    };
    struct siwarp_send_wr *bad;

    mca_btl_siwarp_auth_fin_msg(ep, &a);
    return siwarp_post_send(ep->qp, &wr, &bad);
}

/* Detach the QP from the endpoint; it and its buffers wait for finalize. */
void mca_btl_siwarp_ep_qp_abandon(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_grave_t *g;
    struct siwarp_qp_attr attr;
    int unused;

    if (NULL == ep->qp) {
        return;
    }
    /* an orderly close (FIN once the send queue drained): the peer sees a
     * clean end of stream, not a Terminate it would have to report -- this
     * runs for every connection at MPI_Finalize */
    siwarp_disconnect(ep->qp);
    /* Closed now, a QP out of full operation (a refused, given-up or lost
     * connect went straight to ERROR) takes no pool buffer any more; if it
     * never took one, no completion of it is pending either: its grant is
     * free again.  (Checked after the close: a progress thread may have
     * brought it to RTS meanwhile.) */
    unused = NULL != ep->module->srq && 0 == ep->num_recv_frags &&
             0 == siwarp_query_qp(ep->qp, &attr) && SIWARP_QPS_RTS != attr.state &&
             SIWARP_QPS_CLOSING != attr.state && 0 == attr.srq_wqes;
    if (unused && ep->rq_grant > 0) {
        mca_btl_siwarp_srq_release(ep->module, ep->rq_grant);
    }
    ep->rq_grant = 0;
    siwarp_qp_set_context(ep->qp, NULL);
    /* inside libsiwarp's receive handler (ob1's callback connecting to a
     * new peer, say) no QP can be destroyed: it waits for finalize */
    if (unused && !ep->module->in_recv_handler) {
        /* Nothing of ours is posted on it and nothing completed on it:
         * destroy it now (its completions, if any, go with it).  The QP
         * that replaces it -- a lost simultaneous connect accepts the
         * peer's at once -- then reuses its memory instead of faulting in
         * fresh pages; all-to-all start-up abandons one QP in three. */
        siwarp_destroy_qp(ep->qp);
        free(ep->recv_frags);
        ep->qp = NULL;
        ep->qp_accepted = 0;
        ep->recv_frags = NULL;
        return;
    }
    g = OBJ_NEW(mca_btl_siwarp_grave_t);
    g->qp = ep->qp;
    g->frags = ep->recv_frags;
    g->num_frags = ep->num_recv_frags;
    for (int i = 0; i < g->num_frags; i++) {
        g->frags[i]->endpoint = NULL;        /* completions naming it are stale */
    }
    opal_list_append(&ep->module->graveyard, &g->super);
    ep->qp = NULL;
    ep->qp_accepted = 0;
    ep->recv_frags = NULL;
    ep->num_recv_frags = 0;
}

void mca_btl_siwarp_graveyard_clear(mca_btl_siwarp_module_t *m)
{
    mca_btl_siwarp_grave_t *g;

    while (NULL != (g = (mca_btl_siwarp_grave_t *) opal_list_remove_first(&m->graveyard))) {
        siwarp_destroy_qp(g->qp);
        for (int i = 0; i < g->num_frags; i++) {
            g->frags[i]->type = MCA_BTL_SIWARP_FRAG_SEND;
            mca_btl_siwarp_frag_return(g->frags[i]);
        }
        free(g->frags);
        OBJ_RELEASE(g);
    }
}
