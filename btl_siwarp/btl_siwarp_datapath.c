/*
 * btl_siwarp_datapath.c - the iWARP data path of an endpoint: RDMAP Send,
 * Write and Read work requests with send credits, the queue of what waits
 * for a credit or an SQ slot, and their completions (received Sends handed
 * to ob1, receive buffers re-posted, credits returned).
 */
#include "btl_siwarp.h"
#include "btl_siwarp_endpoint.h"
#include "btl_siwarp_frag.h"

#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

#include "opal/util/output.h"

/* ---- the iWARP data path ---------------------------------------------------- */

static void fill_credits(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_hdr_t *hdr)
{
    int32_t c = ep->owed_credits > 0xffff ? 0xffff : ep->owed_credits;
    int32_t cc = ep->owed_ctrl > 0xffff ? 0xffff : ep->owed_ctrl;
    hdr->credits = htons((uint16_t) c);
    hdr->ctrl_credits = htons((uint16_t) cc);
    hdr->reserved = 0;
    ep->owed_credits -= c;
    ep->owed_ctrl -= cc;
}

static void unfill_credits(mca_btl_siwarp_endpoint_t *ep, const mca_btl_siwarp_hdr_t *hdr)
{
    ep->owed_credits += ntohs(hdr->credits);
    ep->owed_ctrl += ntohs(hdr->ctrl_credits);
}

/* Post one frag on the QP.  OPAL_ERR_RESOURCE_BUSY: no credit / SQ slot.
 * 1: a Send that completed within the post (libsiwarp wrote it whole to an
 * idle socket, SIWARP_SEND_COMPLETE_AT_POST): it took no SQ slot and no
 * completion will come; the caller completes the frag (send_done_now). */
SWP_HOT
static int iwarp_post(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_frag_t *frag)
{
    struct siwarp_send_wr wr, fence, *bad;
    struct siwarp_sge sge, sgl[2];
    int slots = MCA_BTL_SIWARP_FRAG_PUT == frag->type ? 2 : 1;
    int rc;

    if (ep->sq_free < slots) {
        return OPAL_ERR_RESOURCE_BUSY;
    }
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uint64_t) (uintptr_t) frag;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = SIWARP_SEND_SIGNALED;

    switch (frag->type) {
    case MCA_BTL_SIWARP_FRAG_SEND:
        if (ep->send_credits <= 0) {
            return OPAL_ERR_RESOURCE_BUSY;
        }
        frag->hdr->type = frag->msg_type;
        frag->hdr->tag = frag->tag;
        fill_credits(ep, frag->hdr);
        sge.addr = frag->hdr;
        sge.length = (uint32_t) (sizeof(mca_btl_siwarp_hdr_t) + frag->segments[0].seg_len);
        sge.lkey = frag->lkey;
        wr.opcode = SIWARP_WR_SEND;
        wr.send_flags |= SIWARP_SEND_COMPLETE_AT_POST;
        if (frag->base.des_flags & MCA_BTL_DES_FLAGS_SIGNAL) {
            /* the PML's mark for a message the peer waits on (ob1: the
             * rendezvous headers, ACK, FIN): not held for coalescing.  A
             * FIN from a completion and the next message's header from
             * the application are two posts before progress runs again,
             * and the header, on the critical path, waited for it. */
            wr.send_flags |= SIWARP_SEND_PROMPT;
        }
        if (2 == frag->base.des_segment_count) {
            /* in place (prepare_src): headers here, data in the user's memory */
            sgl[0] = sge;
            sgl[1].addr = frag->segments[1].seg_addr.pval;
            sgl[1].length = (uint32_t) frag->segments[1].seg_len;
            sgl[1].lkey = 0;
            wr.sg_list = sgl;
            wr.num_sge = 2;
            wr.send_flags |= SIWARP_SEND_UNREGISTERED;
        }
        break;
    case MCA_BTL_SIWARP_FRAG_RATOMIC:
        /* a Read-like request: held, as a get, until the peer proved the key */
        if (ep->qp_accepted && !__atomic_load_n(&ep->auth_ok, __ATOMIC_ACQUIRE)) {
            return OPAL_ERR_RESOURCE_BUSY;
        }
        mca_btl_siwarp_ratomic_wr(frag, &wr, &sge);
        break;
    case MCA_BTL_SIWARP_FRAG_GET:
    case MCA_BTL_SIWARP_FRAG_PUT:
        if (ep->qp_accepted && !__atomic_load_n(&ep->auth_ok, __ATOMIC_ACQUIRE)) {
            /* a get's Read, or the zero-length one behind a put's Write,
             * draws a Read Response, which the QP refuses before the
             * peer's first Send proved the key (auth_verify_qp kicks) */
            return OPAL_ERR_RESOURCE_BUSY;
        }
        sge.addr = frag->local_address;
        sge.length = (uint32_t) frag->rdma_size;
        sge.lkey = frag->local_stag;
        wr.opcode = MCA_BTL_SIWARP_FRAG_PUT == frag->type ? SIWARP_WR_WRITE : SIWARP_WR_READ;
        wr.rdma.remote_addr = frag->remote_address;
        wr.rdma.rkey = frag->remote_stag;
        if (0 == frag->rdma_size) {
            wr.num_sge = 0;
        }
        if (MCA_BTL_SIWARP_FRAG_PUT == frag->type) {
            /* A Write completes when its bytes have left; a put completes
             * when they are placed (osc/rdma hands the target's memory to
             * other ranks once its put is done).  So the Write goes
             * unsignaled (wr_id 0: only a flush reports it) and a
             * zero-length Read behind it carries the completion: the
             * responder answers a Read only after handling the Writes
             * before it in the stream (RFC 5040 5.5), and a zero-length
             * one names no buffer (RFC 5040 4.4).  (Tried: completing a
             * put at its Write and fencing once per peer in btl_flush.
             * test/mpi/mpi_rma.c then lost accumulate updates under
             * osc/rdma 4.1, cause not found; so every put keeps its Read.) */
            memset(&fence, 0, sizeof(fence));
            fence.wr_id = wr.wr_id;
            fence.opcode = SIWARP_WR_READ;
            fence.send_flags = SIWARP_SEND_SIGNALED;
            wr.wr_id = 0;
            wr.send_flags = 0;
            wr.next = &fence;
        }
        break;
    default:
        return OPAL_ERR_BAD_PARAM;
    }

    frag->endpoint = ep;
    rc = siwarp_post_send(ep->qp, &wr, &bad);
    if (rc < 0) {
        if (MCA_BTL_SIWARP_FRAG_SEND == frag->type) {
            unfill_credits(ep, frag->hdr);
        }
        if (-EAGAIN == rc || -ENOMEM == rc) {
            return OPAL_ERR_RESOURCE_BUSY;
        }
        BTL_ERROR(("siwarp: siwarp_post_send to %s: %s", OPAL_NAME_PRINT(ep->name),
                   strerror(-rc)));
        return mca_btl_siwarp_errno_to_opal(rc);
    }
    if (MCA_BTL_SIWARP_FRAG_SEND == frag->type) {
        ep->send_credits--;
    }
    ep->had_traffic = 1;
    if (1 == rc) {
        return 1;
    }
    ep->sq_free -= slots;
    ep->outstanding++;
    return OPAL_SUCCESS;
}

/* A Send frag that completed within its post (iwarp_post returned 1).  To
 * btl_send's caller the 1 says so (BTL API: no callback then, unless the
 * descriptor asks for one always); the frag goes back if the BTL owns it. */
static int send_done_now(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_frag_t *frag)
{
    int flags = frag->base.des_flags;

    if ((flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK) && frag->base.des_cbfunc) {
        frag->base.des_cbfunc(&ep->module->super, ep, &frag->base, OPAL_SUCCESS);
    }
    if (flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) {
        mca_btl_siwarp_frag_return(frag);
    }
    return 1;
}

/* Explicit credit return, when the peer may be starving and we have no
 * AM Send to carry the credits. */
SWP_HOT
static void maybe_send_credit(mca_btl_siwarp_endpoint_t *ep)
{
    struct siwarp_send_wr wr, *bad;
    struct siwarp_sge sge;
    mca_btl_siwarp_frag_t *frag;
    int threshold = ep->credit_threshold;

    if (MCA_BTL_SIWARP_TR_IWARP != ep->transport ||
        MCA_BTL_SIWARP_EP_CONNECTED != ep->state ||
        ep->owed_credits < threshold || ep->send_ctrl <= 0 || ep->sq_free <= 0) {
        return;
    }
    if (!opal_list_is_empty(&ep->pending) && ep->send_credits > 0) {
        return;     /* a queued Send will carry them */
    }
    frag = mca_btl_siwarp_frag_alloc_eager(ep->module);
    if (NULL == frag) {
        return;
    }
    ep->credit_returned += ep->owed_credits;
    if (NULL != ep->module->srq &&
        ep->credit_returned >= MCA_BTL_SIWARP_SRQ_GROW_AFTER * ep->rq_grant &&
        ep->credit_returned >= MCA_BTL_SIWARP_SRQ_GROW_MIN) {
        /* the peer streams one way: more buffers for it, owed at once */
        int extra = mca_btl_siwarp_srq_more(ep->module, ep->rq_grant);
        ep->credit_returned = 0;
        ep->owed_credits += extra;
        mca_btl_siwarp_ep_set_grant(ep, ep->rq_grant + extra);
    }
    frag->type = MCA_BTL_SIWARP_FRAG_CREDIT;
    frag->endpoint = ep;
    frag->hdr->type = MCA_BTL_SIWARP_MSG_CREDIT;
    frag->hdr->tag = 0;
    fill_credits(ep, frag->hdr);
    sge.addr = frag->hdr;
    sge.length = sizeof(mca_btl_siwarp_hdr_t);
    sge.lkey = frag->lkey;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = (uint64_t) (uintptr_t) frag;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = SIWARP_WR_SEND;
    wr.send_flags = SIWARP_SEND_SIGNALED;
    if (siwarp_post_send(ep->qp, &wr, &bad) < 0) {
        unfill_credits(ep, frag->hdr);
        mca_btl_siwarp_frag_return(frag);
        return;
    }
    ep->send_ctrl--;
    ep->sq_free--;
    ep->outstanding++;
}

SWP_HOT
void mca_btl_siwarp_ep_progress_pending(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_frag_t *frag;
    int rc;

    if (MCA_BTL_SIWARP_EP_CONNECTED != ep->state) {
        return;
    }
    while (NULL != (frag = (mca_btl_siwarp_frag_t *) opal_list_get_first(&ep->pending)) &&
           &frag->base.super.super != opal_list_get_end(&ep->pending)) {
        if (MCA_BTL_SIWARP_TR_TCP == ep->transport) {
            opal_list_remove_first(&ep->pending);
            rc = mca_btl_siwarp_tcp_submit(ep, frag);
        } else {
            rc = iwarp_post(ep, frag);
            if (OPAL_ERR_RESOURCE_BUSY == rc) {
                break;
            }
            opal_list_remove_first(&ep->pending);
            if (1 == rc) {
                /* queued earlier, so btl_send said 0: the callback is due */
                mca_btl_siwarp_frag_complete(ep->module, frag, OPAL_SUCCESS);
                continue;
            }
        }
        if (OPAL_SUCCESS != rc) {
            mca_btl_siwarp_frag_complete(ep->module, frag, rc);
            mca_btl_siwarp_ep_fail(ep, "posting a work request failed", 2);
            return;
        }
    }
    maybe_send_credit(ep);
}

SWP_HOT
int mca_btl_siwarp_ep_submit(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_frag_t *frag)
{
    int rc;

    frag->endpoint = ep;
    if (OPAL_UNLIKELY(MCA_BTL_SIWARP_TR_SELF == ep->transport)) {
        return OPAL_ERR_UNREACH;    /* btl self carries messages to ourselves */
    }
    switch (ep->state) {
    case MCA_BTL_SIWARP_EP_FAILED:
        return OPAL_ERR_UNREACH;
    case MCA_BTL_SIWARP_EP_CLOSED:
        opal_list_append(&ep->pending, &frag->base.super.super);
        rc = mca_btl_siwarp_ep_start_connect(ep);
        if (MCA_BTL_SIWARP_EP_FAILED == ep->state) {
            return OPAL_SUCCESS;    /* frag already completed with an error */
        }
        (void) rc;
        return OPAL_SUCCESS;
    case MCA_BTL_SIWARP_EP_CONNECTING:
        opal_list_append(&ep->pending, &frag->base.super.super);
        return OPAL_SUCCESS;
    default:
        break;
    }
    if (!opal_list_is_empty(&ep->pending)) {
        /* keep order: put before FIN, sends in sequence */
        opal_list_append(&ep->pending, &frag->base.super.super);
        mca_btl_siwarp_ep_progress_pending(ep);
        return OPAL_SUCCESS;
    }
    if (MCA_BTL_SIWARP_TR_TCP == ep->transport) {
        return mca_btl_siwarp_tcp_submit(ep, frag);
    }
    rc = iwarp_post(ep, frag);
    if (OPAL_ERR_RESOURCE_BUSY == rc) {
        opal_list_append(&ep->pending, &frag->base.super.super);
        return OPAL_SUCCESS;
    }
    if (1 == rc) {
        return send_done_now(ep, frag);
    }
    return rc;
}

SWP_HOT
int mca_btl_siwarp_ep_send_goes_now(mca_btl_siwarp_endpoint_t *ep)
{
    if (MCA_BTL_SIWARP_TR_TCP == ep->transport) {
        return mca_btl_siwarp_tcp_goes_now(ep);
    }
    return siwarp_qp_send_goes_now(ep->qp);
}

SWP_HOT
int mca_btl_siwarp_ep_try_send_now(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_frag_t *frag)
{
    int rc;

    if (MCA_BTL_SIWARP_EP_CONNECTED != ep->state || !opal_list_is_empty(&ep->pending)) {
        return OPAL_ERR_RESOURCE_BUSY;
    }
    frag->endpoint = ep;
    if (MCA_BTL_SIWARP_TR_TCP == ep->transport) {
        return mca_btl_siwarp_tcp_submit(ep, frag);
    }
    rc = iwarp_post(ep, frag);
    return 1 == rc ? send_done_now(ep, frag) : rc;
}

/* ---- completions ------------------------------------------------------------- */

/* A received BTL message: credits, then ob1's callback.  -1 if it is
 * malformed (the endpoint has failed then). */
SWP_HOT
static int deliver(mca_btl_siwarp_module_t *m, mca_btl_siwarp_endpoint_t *ep,
                   mca_btl_siwarp_hdr_t *hdr, uint32_t byte_len)
{
    if (MCA_BTL_SIWARP_EP_CONNECTING == ep->state) {
        /* a Send can complete before we noticed our accepted QP reach RTS */
        BTL_VERBOSE(("a message from %s came before its connection was seen up",
                     OPAL_NAME_PRINT(ep->name)));
        mca_btl_siwarp_ep_progress_connect(ep);
    }
    if (byte_len < sizeof(*hdr) || hdr->type < MCA_BTL_SIWARP_MSG_AM ||
        hdr->type > MCA_BTL_SIWARP_MSG_ATOMIC_RESP) {
        BTL_ERROR(("siwarp: malformed message from %s (%u bytes, type %u)",
                   OPAL_NAME_PRINT(ep->name), byte_len,
                   byte_len < sizeof(*hdr) ? 0 : hdr->type));
        mca_btl_siwarp_ep_fail(ep, "malformed BTL message", 2);
        return -1;
    }
    ep->send_credits += ntohs(hdr->credits);
    ep->send_ctrl += ntohs(hdr->ctrl_credits);

    if (MCA_BTL_SIWARP_MSG_AM == hdr->type) {
        mca_btl_base_segment_t seg = {
            .seg_addr.pval = hdr + 1,
            .seg_len = byte_len - sizeof(*hdr),
        };

        mca_btl_siwarp_deliver_am(&m->super, ep, hdr->tag, &seg);
    } else if (MCA_BTL_SIWARP_MSG_CREDIT != hdr->type) {
        int rc = mca_btl_siwarp_atomic_recv(ep, hdr, byte_len);
        if (rc < 0) {
            if (-1 == rc) {
                BTL_ERROR(("siwarp: malformed atomic message from %s (%u bytes)",
                           OPAL_NAME_PRINT(ep->name), byte_len));
            }
            mca_btl_siwarp_ep_fail(ep, -1 == rc ? "malformed atomic message"
                                                : "refused a remote atomic", 2);
            return -1;
        }
    }
    return 0;
}

/* The buffer's credit is owed back to the peer: it was re-posted, or
 * (inline) never taken. */
SWP_HOT
static void owe_credit(mca_btl_siwarp_endpoint_t *ep, const mca_btl_siwarp_hdr_t *hdr)
{
    if (MCA_BTL_SIWARP_MSG_CREDIT != hdr->type) {
        ep->owed_credits++;     /* AM and atomics use AM credits */
    } else {
        ep->owed_ctrl++;
    }
    mca_btl_siwarp_ep_progress_pending(ep);
}

SWP_HOT
static void handle_recv(mca_btl_siwarp_module_t *m, mca_btl_siwarp_endpoint_t *ep,
                        mca_btl_siwarp_frag_t *frag, uint32_t byte_len)
{
    mca_btl_siwarp_hdr_t *hdr = frag->hdr;
    int rc;

    if (deliver(m, ep, hdr, byte_len) < 0) {
        if (frag->on_srq) {
            (void) mca_btl_siwarp_srq_repost(m, frag);
        }
        return;
    }
    if (frag->on_srq) {
        /* back to the pool at once, whatever became of the peer */
        rc = mca_btl_siwarp_srq_repost(m, frag);
        if (OPAL_SUCCESS != rc) {
            mca_btl_siwarp_ep_fail(ep, "re-posting a shared receive failed", 2);
            return;
        }
        if (MCA_BTL_SIWARP_EP_FAILED == ep->state || NULL == ep->qp) {
            return;
        }
    } else if (MCA_BTL_SIWARP_EP_FAILED == ep->state || NULL == ep->qp || frag->endpoint != ep) {
        return;
    } else {
        rc = mca_btl_siwarp_ep_post_recv_frag(ep, frag);
    }
    if (rc < 0) {
        mca_btl_siwarp_ep_fail(ep, "re-posting a receive failed", 2);
        return;
    }
    owe_credit(ep, hdr);
}

/* libsiwarp's receive handler (siwarp_cq_set_recv_handler, set when
 * btl_siwarp_rx_inline is not 0): every Send received, in order.  One that
 * lies whole in the library's staging buffer comes as data and took no
 * receive buffer; ob1 reads its headers in place, so a message that does
 * not start 8-aligned (one FPDU after another of odd length in a read) is
 * copied to an aligned buffer first. */
SWP_HOT
void mca_btl_siwarp_recv_handler(void *arg, const struct siwarp_wc *wc, const void *data)
{
    mca_btl_siwarp_module_t *m = (mca_btl_siwarp_module_t *) arg;
    mca_btl_siwarp_endpoint_t *ep;
    mca_btl_siwarp_hdr_t *hdr;

    m->in_recv_handler++;
    if (NULL == data) {
        struct siwarp_wc copy = *wc;
        (void) mca_btl_siwarp_ep_handle_wc(m, &copy);
        m->in_recv_handler--;
        return;
    }
    ep = (mca_btl_siwarp_endpoint_t *) siwarp_qp_get_context(wc->qp);
    if (NULL != ep && ep->qp == wc->qp) {      /* else an abandoned QP's */
        hdr = (mca_btl_siwarp_hdr_t *) data;
        if ((uintptr_t) data & 7) {
            /* the library checked the length against a posted buffer, so
             * it fits one of ours */
            memcpy(m->rx_align, data, wc->byte_len);
            hdr = (mca_btl_siwarp_hdr_t *) m->rx_align;
        }
        if (0 == deliver(m, ep, hdr, wc->byte_len) &&
            MCA_BTL_SIWARP_EP_FAILED != ep->state && NULL != ep->qp) {
            owe_credit(ep, hdr);
        }
    }
    m->in_recv_handler--;
}

/* An unsuccessful completion, flushes included: a flush means the QP left
 * RTS (peer hung up, link dead after llp_timeout, Terminate), so unless we
 * failed the endpoint ourselves it is lost now.  It is reported (and ob1
 * told) when work was in flight or the error is not a plain flush; a peer
 * that closed an idle connection -- as every peer does at MPI_Finalize --
 * is only marked failed. */
static void wc_failed(mca_btl_siwarp_endpoint_t *ep, const struct siwarp_wc *wc, int was_send)
{
    struct siwarp_qp_attr attr;
    int busy = was_send || ep->outstanding || !opal_list_is_empty(&ep->pending);

    if (MCA_BTL_SIWARP_EP_FAILED == ep->state || ep->module->finalizing) {
        return;
    }
    if (MCA_BTL_SIWARP_EP_CONNECTED != ep->state) {
        /* a connect that failed (a lost simultaneous connect is rejected):
         * the connection logic decides (retry, wait, fallback) */
        return;
    }
    if (SIWARP_WC_WR_FLUSH_ERR == wc->status && ep->qp && 0 == siwarp_query_qp(ep->qp, &attr)) {
        if (SIWARP_QPS_ERROR != attr.state && SIWARP_QPS_TERMINATE != attr.state) {
            return;     /* flushed while the QP lives: nothing to report */
        }
        /* an idle connection that died (keepalive, reset, Terminate) is a
         * failure too; only an orderly close of an idle one is quiet */
        busy = busy || attr.error != 0 || attr.term_recv || attr.term_sent;
    }
    mca_btl_siwarp_ep_fail(ep, siwarp_wc_status_str(wc->status),
                           busy || SIWARP_WC_WR_FLUSH_ERR != wc->status ? 2 : 0);
}

SWP_HOT
int mca_btl_siwarp_ep_handle_wc(mca_btl_siwarp_module_t *m, struct siwarp_wc *wc)
{
    mca_btl_siwarp_frag_t *frag = (mca_btl_siwarp_frag_t *) (uintptr_t) wc->wr_id;
    mca_btl_siwarp_endpoint_t *ep;

    if (NULL == frag && SIWARP_WC_SRQ_LAST != wc->opcode) {
        /* unsignaled, flushed: a put's Write (its Read reports), or the
         * first message (the proof).  SRQ_LAST has wr_id 0 too. */
        return 0;
    }
    if (SIWARP_WC_SRQ_LAST == wc->opcode) {
        /* a QP on the SRQ left full operation (no frag): a peer that only
         * sent to us is lost, and this is the only completion that says so */
        ep = (mca_btl_siwarp_endpoint_t *) siwarp_qp_get_context(wc->qp);
        if (NULL != ep && ep->qp == wc->qp) {
            wc_failed(ep, wc, 0);
        }
        return 1;
    }
    ep = frag->endpoint;
    if (frag->on_srq) {
        /* a pool buffer: the QP that took it names the peer (NULL once the
         * QP was abandoned) */
        ep = wc->qp ? (mca_btl_siwarp_endpoint_t *) siwarp_qp_get_context(wc->qp) : NULL;
        if (NULL == ep || SIWARP_WC_SUCCESS != wc->status) {
            (void) mca_btl_siwarp_srq_repost(m, frag);
        }
    }
    if (NULL == ep) {
        return 0;           /* receive buffer of an abandoned QP */
    }
    if (MCA_BTL_SIWARP_FRAG_RECV == frag->type) {
        if (SIWARP_WC_SUCCESS != wc->status) {
            wc_failed(ep, wc, 0);
            return 1;
        }
        handle_recv(m, ep, frag, wc->byte_len);
        return 1;
    }

    ep->sq_free += MCA_BTL_SIWARP_FRAG_PUT == frag->type ? 2 : 1;
    ep->outstanding--;
    if (SIWARP_WC_SUCCESS != wc->status) {
        wc_failed(ep, wc, 1);
        mca_btl_siwarp_frag_complete(m, frag, OPAL_ERROR);
        return 1;
    }
    if (MCA_BTL_SIWARP_FRAG_CREDIT == frag->type) {
        mca_btl_siwarp_frag_return(frag);
    } else {
        mca_btl_siwarp_frag_complete(m, frag, OPAL_SUCCESS);
    }
    mca_btl_siwarp_ep_progress_pending(ep);
    return 1;
}
