/*
 * uct_siwarp_ep.c - an endpoint: what it sends on its connection to the
 * peer iface (uct_siwarp_conn.c); active messages as Sends, put as RDMA
 * Write, get as RDMA Read (RFC 5040 4.3, 4.4), flush, fence and the
 * pending queue.
 */
#include "uct_siwarp.h"

#include <uct/base/uct_iov.inl>

#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

static uct_siwarp_iface_t *ep_iface(uct_siwarp_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_siwarp_iface_t);
}

/* Signaled WRs of the ep (and those an earlier ep left on its connection)
 * not completed yet: the send queue slots it holds */
static uint64_t ep_outstanding(const uct_siwarp_ep_t *ep)
{
    return ep->tx_posted - ep->tx_completed;
}

static int ep_tx_free(uct_siwarp_ep_t *ep)
{
    return ep_outstanding(ep) < ep_iface(ep)->config.tx_depth;
}

void uct_siwarp_ep_set_failed(uct_siwarp_ep_t *ep, ucs_status_t status)
{
    if (ep->state != UCT_SIWARP_EP_FAILED) {
        ep->state       = UCT_SIWARP_EP_FAILED;
        ep->fail_status = status;
        ep_iface(ep)->eps_dirty = 1;       /* to be reported */
    }
}

/* Does the ep need the iface's progress to look at it? */
int uct_siwarp_ep_needs_progress(const uct_siwarp_ep_t *ep)
{
    return (ep->merge_to != NULL) || (ep->state == UCT_SIWARP_EP_CONNECTING) ||
           !ucs_queue_is_empty(&ep->pending_q) ||
           ((ep->state == UCT_SIWARP_EP_FAILED) && !ep->fail_reported);
}

/* UCP may destroy an ep from its error handler: call it outside any loop
 * over completions, one ep per pass. */
unsigned uct_siwarp_ep_report_failures(uct_siwarp_iface_t *iface)
{
    uct_siwarp_ep_t *ep;
    ucs_status_t status;

    ucs_list_for_each(ep, &iface->eps, list) {
        if ((ep->state == UCT_SIWARP_EP_FAILED) && !ep->fail_reported) {
            ep->fail_reported = 1;
            status = uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                             ep->fail_status);
            if (status != UCS_OK) {
                /* nobody above asked for error handling (Open MPI's pml ucx,
                 * UCP_ERR_HANDLING_MODE_NONE): what waits on this peer would
                 * wait forever, so end the process, as UCX's ud transport does */
                ucs_fatal("siwarp: connection to %s on %s failed (%s), and no error "
                          "handler takes it", ep->conn->peer, iface->if_name,
                          ucs_status_string(ep->fail_status));
            }
            return 1;
        }
    }
    return 0;
}

int uct_siwarp_ep_has_room(uct_siwarp_ep_t *ep)
{
    return ep_tx_free(ep) && (ep->merge_to == NULL) &&
           (ep->dispatching || ucs_queue_is_empty(&ep->pending_q));
}

/* Post one WR.  Every WR is signaled, so that each send queue slot comes
 * back through a completion; a lone one that libsiwarp completed within the
 * post (SIWARP_SEND_COMPLETE_AT_POST) returns 1 and leaves nothing behind.
 * Returns UCS_OK (done at post), UCS_INPROGRESS (a completion will come),
 * UCS_ERR_NO_RESOURCE, or an error. */
ucs_status_t uct_siwarp_ep_post(uct_siwarp_ep_t *ep, struct siwarp_send_wr *wr)
{
    struct siwarp_send_wr *bad;
    int rc;

    if (ep->state == UCT_SIWARP_EP_FAILED) {
        return ep->fail_status;
    }
    if (!uct_siwarp_ep_has_room(ep)) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* nothing goes before the connection is up: its first Send is the
     * proof of the key (uct_siwarp_auth.c), posted when it comes up */
    if (ep->state != UCT_SIWARP_EP_CONNECTED) {
        rc = uct_siwarp_ep_check_connected(ep);
        if (rc == 0) {
            return UCS_ERR_NO_RESOURCE;
        } else if (rc < 0) {
            return ep->fail_status;
        }
    }
    wr->send_flags |= SIWARP_SEND_SIGNALED;
    if (ep->fence) {
        /* RFC 5040 6.4: a fenced WR waits until the Reads before it have
         * completed; Sends and Writes are already ordered on the stream */
        wr->send_flags |= SIWARP_SEND_FENCE;
    }
    rc = siwarp_post_send(ep->conn->qp, wr, &bad);
    if (rc < 0) {
        if (rc == -ENOMEM) {
            return UCS_ERR_NO_RESOURCE;
        }
        ucs_error("siwarp: siwarp_post_send: %s", strerror(-rc));
        return uct_siwarp_status(rc);
    }
    ep->fence    = 0;
    /* a Read's response comes only after everything before it on the
     * stream was placed (uct_siwarp_ep_flush), and so does an RFC 7306
     * atomic's (libsiwarp's responder executes it in stream order; atomics
     * are offered only to such a peer): each is a flush of its own */
    ep->unflushed = !((wr->opcode >= SIWARP_WR_READ) &&
                      (wr->opcode <= SIWARP_WR_ATOMIC_MASKED_CMP_SWP));
    if (rc == 1) {
        return UCS_OK;
    }
    ep->tx_posted++;
    return UCS_INPROGRESS;
}

/* A follow-up WR posted from a completion (the steps of an XOR): it takes
 * the slot its predecessor just gave back, ahead of the pending queue. */
ucs_status_t uct_siwarp_ep_post_internal(uct_siwarp_ep_t *ep, struct siwarp_send_wr *wr)
{
    ucs_status_t status;
    int dispatching = ep->dispatching;

    ep->dispatching = 1;
    status = uct_siwarp_ep_post(ep, wr);
    ep->dispatching = dispatching;
    return status;
}

/* Connected yet?  1: yes; 0: not yet; <0: failed (the ep is marked). */
int uct_siwarp_ep_check_connected(uct_siwarp_ep_t *ep)
{
    int rc;

    if (ep->state == UCT_SIWARP_EP_CONNECTED) {
        return 1;
    }
    if (ep->state == UCT_SIWARP_EP_FAILED) {
        return -ECONNABORTED;
    }
    rc = uct_siwarp_conn_check_up(ep->conn);    /* a failure marks the ep through it */
    if (rc > 0) {
        ep->state = UCT_SIWARP_EP_CONNECTED;
    }
    return rc;
}

/* Post the Read of the peer iface's flush word (uct_siwarp_ep_flush says
 * why it proves placement) on the ep's connection, completing comp;
 * direct: past uct_siwarp_ep_post's room check (an ep being merged).
 * UCS_INPROGRESS when posted. */
static ucs_status_t uct_siwarp_ep_flush_read(uct_siwarp_ep_t *ep, uct_completion_t *comp,
                                             int direct)
{
    uct_siwarp_iface_t *iface = ep_iface(ep);
    struct siwarp_sge sge     = { .length = 8, .lkey = siwarp_mr_stag(iface->words_mr) };
    struct siwarp_send_wr wr  = { .sg_list = &sge, .num_sge = 1, .opcode = SIWARP_WR_READ };
    struct siwarp_send_wr *bad;
    uct_siwarp_op_t *op;
    ucs_status_t status;

    op = uct_siwarp_op_get(iface, ep, UCT_SIWARP_OP_FLUSH, comp);
    if (op == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    sge.addr            = op->slot;
    wr.wr_id            = (uintptr_t)op;
    wr.rdma.remote_addr = ep->conn->peer_flush_addr;   /* known once connected */
    wr.rdma.rkey        = ep->conn->peer_flush_stag;
    if (direct) {
        wr.send_flags = SIWARP_SEND_SIGNALED;
        status = (siwarp_post_send(ep->conn->qp, &wr, &bad) < 0) ? UCS_ERR_NO_RESOURCE :
                 UCS_INPROGRESS;
        if (status == UCS_INPROGRESS) {
            ep->tx_posted++;
        }
    } else {
        status = uct_siwarp_ep_post(ep, &wr);
    }
    if (status != UCS_INPROGRESS) {
        uct_siwarp_op_put(iface, op);
        return status;
    }
    ep->unflushed = 0;
    return UCS_INPROGRESS;
}

/* The ep sends on conn from now on.  WRs an ep that left posted there
 * (conn->orphans) still hold send queue slots: they count as this one's
 * outstanding WRs, and complete first (the queue completes in order), so a
 * flush waits for them too (uct_siwarp_conn_handle). */
static void uct_siwarp_ep_attach(uct_siwarp_ep_t *ep, uct_siwarp_conn_t *conn)
{
    conn->ep       = ep;
    ep->conn       = conn;
    ep->tx_posted += conn->orphans;
    conn->orphans  = 0;
}

/* Move the ep to the connection its peer opened (uct_siwarp_conn.c):
 * once nothing is outstanding and a flush Read on the old connection
 * proved that all sent on it was placed, so that nothing sent on the new
 * one can overtake it.  Until then it takes no new work (has_room). */
unsigned uct_siwarp_ep_merge_progress(uct_siwarp_ep_t *ep)
{
    uct_siwarp_conn_t *old = ep->conn;

    if ((ep->state == UCT_SIWARP_EP_FAILED) || ep_outstanding(ep) ||
        ep->xor_inflight) {
        return 0;
    }
    if ((old->state == UCT_SIWARP_CONN_UP) && ep->unflushed) {
        /* posted past has_room, which holds back everything else; on
         * failure tried again at the next progress */
        return uct_siwarp_ep_flush_read(ep, NULL, 1) == UCS_INPROGRESS;
    }
    /* nothing of the ep is in flight on the old connection.  One that is
     * up stays: an ep of the peer may send on it, and the peer closes it
     * when none does (uct_siwarp_conn.c); one that never came up cannot
     * carry a peer's ep (the peer takes only verified connections) */
    if (old->state == UCT_SIWARP_CONN_UP) {
        int rc = uct_siwarp_conn_send_left(old);

        if (rc == -EAGAIN || rc == -ENOMEM) {
            return 0;      /* no receive buffer or send slot yet: next progress */
        } else if (rc < 0) {
            uct_siwarp_conn_set_failed(old, rc, "telling the peer that the ep moved");
            return 0;      /* the ep failed with it */
        }
    }
    ucs_debug("siwarp: ep %p to %s moves to the connection the peer opened", ep, old->peer);
    old->ep      = NULL;
    uct_siwarp_ep_attach(ep, ep->merge_to);
    ep->merge_to = NULL;
    ep->state    = UCT_SIWARP_EP_CONNECTED;
    if (old->state != UCT_SIWARP_CONN_UP) {
        uct_siwarp_conn_destroy(old);
    }
    return 1;
}

/* The ep's connection ended (uct_siwarp_conn_set_failed said why). */
void uct_siwarp_ep_conn_failed(uct_siwarp_ep_t *ep)
{
    uct_siwarp_conn_t *conn = ep->conn;
    int idle = !ep_outstanding(ep) &&
               ucs_queue_is_empty(&ep->pending_q);

    if (ep->state == UCT_SIWARP_EP_FAILED) {
        return;
    }
    if ((conn->error == 0) && idle) {
        /* the peer closed an idle connection in order (its iface closed, a
         * process that ended): nothing was lost, and a process still
         * running its own shutdown must not die of it; what is posted
         * later fails */
        uct_siwarp_ep_set_failed(ep, UCS_ERR_CONNECTION_RESET);
        ep->fail_reported = 1;
        return;
    }
    if (ep->state == UCT_SIWARP_EP_CONNECTING) {
        uct_siwarp_ep_set_failed(ep, ((conn->error == -EACCES) || (conn->error == -EPROTO)) ?
                                     UCS_ERR_UNREACHABLE : uct_siwarp_status(conn->error));
    } else if ((conn->error == -EPROTO) || (conn->error == -EIO)) {
        uct_siwarp_ep_set_failed(ep, UCS_ERR_IO_ERROR);
    } else {
        uct_siwarp_ep_set_failed(ep, (conn->error == 0) ? UCS_ERR_CONNECTION_RESET :
                                     UCS_ERR_ENDPOINT_TIMEOUT);
    }
}

/* Flushes waiting for WRs already posted (a Read last, which proves the
 * rest): complete those whose WRs have all completed.  The send queue
 * completes in order, so a count is enough. */
static void uct_siwarp_ep_flush_wait_done(uct_siwarp_ep_t *ep)
{
    uct_siwarp_iface_t *iface = ep_iface(ep);
    uct_siwarp_op_t *op;

    while (((op = ep->flush_wait) != NULL) && (op->wait_seq <= ep->tx_completed)) {
        ep->flush_wait = op->next;
        if (ep->flush_wait == NULL) {
            ep->flush_wait_tail = NULL;
        }
        uct_invoke_completion(op->comp, (ep->state == UCT_SIWARP_EP_FAILED) ?
                                        ep->fail_status : UCS_OK);
        uct_siwarp_op_put(iface, op);
    }
}

/* A send queue slot of the ep's connection came back: its own WR's, or
 * one an earlier ep left there (counted in at uct_siwarp_ep_attach). */
void uct_siwarp_ep_slot_back(uct_siwarp_ep_t *ep)
{
    ep->tx_completed++;
    if (ep->flush_wait != NULL) {
        uct_siwarp_ep_flush_wait_done(ep);
    }
}

void uct_siwarp_ep_tx_done(uct_siwarp_ep_t *ep, const struct siwarp_wc *wc)
{
    uct_siwarp_iface_t *iface = ep_iface(ep);
    uct_siwarp_op_t *op       = (uct_siwarp_op_t*)(uintptr_t)wc->wr_id;
    ucs_status_t status       = UCS_OK;

    if (wc->status != SIWARP_WC_SUCCESS) {
        status = (wc->status == SIWARP_WC_REM_ACCESS_ERR) ? UCS_ERR_INVALID_ADDR :
                 UCS_ERR_CONNECTION_RESET;
        if (ep->state != UCT_SIWARP_EP_FAILED) {
            ucs_error("siwarp: %s on %s: %s%s%s", (op && op->kind == UCT_SIWARP_OP_FLUSH) ?
                      "flush" : "work request", iface->if_name,
                      siwarp_wc_status_str(wc->status), wc->vendor_err ? ": " : "",
                      wc->vendor_err ? siwarp_term_str(wc->vendor_err) : "");
        }
        uct_siwarp_ep_set_failed(ep, status);
    }
    uct_siwarp_ep_slot_back(ep);   /* after the failure is noted: flushes see it */
    if (op == NULL) {
        return;
    }
    if ((op->kind == UCT_SIWARP_OP_AMO) || (op->kind == UCT_SIWARP_OP_AMO_POST)) {
        if ((status == UCS_OK) && op->xor.active && uct_siwarp_amo_xor_continue(op)) {
            return;                   /* its next step is posted */
        }
        if (op->xor.counted) {
            op->xor.counted = 0;
            ep->xor_inflight--;
        }
        if (status == UCS_OK) {
            uct_siwarp_amo_done(op);
        }
    } else if ((op->kind == UCT_SIWARP_OP_GET_BCOPY) && (status == UCS_OK)) {
        op->unpack_cb(op->unpack_arg, op->bounce, op->length);
    }
    if (op->comp != NULL) {
        uct_invoke_completion(op->comp, status);
    }
    uct_siwarp_op_put(iface, op);
}

/* ---- active messages ------------------------------------------------------ */

static ucs_status_t uct_siwarp_ep_am_credit(uct_siwarp_ep_t *ep)
{
    return uct_siwarp_conn_has_credit(ep->conn) ? UCS_OK : UCS_ERR_NO_RESOURCE;
}

static ucs_status_t uct_siwarp_ep_am_send(uct_siwarp_ep_t *ep, struct siwarp_sge *sge, int nsge,
                                          int send_flags, uct_siwarp_op_t *op)
{
    struct siwarp_send_wr wr = {
        .wr_id      = (uintptr_t)op,
        .sg_list    = sge,
        .num_sge    = nsge,
        .opcode     = SIWARP_WR_SEND,
        .send_flags = send_flags | SIWARP_SEND_COMPLETE_AT_POST,
    };
    ucs_status_t status;

    status = uct_siwarp_ep_am_credit(ep);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_siwarp_ep_post(ep, &wr);
    if ((status == UCS_OK) || (status == UCS_INPROGRESS)) {
        ep->conn->am_sent++;
    }
    return status;
}

ucs_status_t uct_siwarp_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                    const void *payload, unsigned length)
{
    uct_siwarp_ep_t *ep = ucs_derived_of(tl_ep, uct_siwarp_ep_t);
    struct {
        uct_siwarp_am_hdr_t am;
        uint64_t            header;
    } h = { .am = { .am_id = id }, .header = header };
    struct siwarp_sge sge[2] = {
        { .addr = &h,             .length = sizeof(h) },
        { .addr = (void*)payload, .length = length },
    };
    ucs_status_t status;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_LENGTH(sizeof(header) + length, 0,
                     ep_iface(ep)->config.seg_size - sizeof(uct_siwarp_am_hdr_t), "am_short");
    status = uct_siwarp_ep_am_send(ep, sge, length ? 2 : 1, SIWARP_SEND_INLINE, NULL);
    return (status == UCS_INPROGRESS) ? UCS_OK : status;   /* the payload was copied */
}

ucs_status_t uct_siwarp_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id, const uct_iov_t *iov,
                                        size_t iovcnt)
{
    uct_siwarp_ep_t *ep       = ucs_derived_of(tl_ep, uct_siwarp_ep_t);
    uct_siwarp_iface_t *iface = ep_iface(ep);
    uct_siwarp_am_hdr_t h     = { .am_id = id };
    struct siwarp_sge sge[iface->config.max_iov];
    ucs_status_t status;
    size_t i, total = 0;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)iface->config.max_iov - 1, "am_short_iov");
    sge[0].addr   = &h;
    sge[0].length = sizeof(h);
    for (i = 0; i < iovcnt; i++) {
        sge[1 + i].addr   = iov[i].buffer;
        sge[1 + i].length = (uint32_t)uct_iov_get_length(&iov[i]);
        total            += sge[1 + i].length;
    }
    UCT_CHECK_LENGTH(total, 0, iface->config.seg_size - sizeof(h), "am_short_iov");
    status = uct_siwarp_ep_am_send(ep, sge, 1 + (int)iovcnt, SIWARP_SEND_INLINE, NULL);
    return (status == UCS_INPROGRESS) ? UCS_OK : status;   /* the payload was copied */
}

ssize_t uct_siwarp_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id, uct_pack_callback_t pack_cb,
                               void *arg, unsigned flags)
{
    uct_siwarp_ep_t *ep       = ucs_derived_of(tl_ep, uct_siwarp_ep_t);
    uct_siwarp_iface_t *iface = ep_iface(ep);
    uct_siwarp_am_hdr_t *hdr  = iface->tx_buf;
    struct siwarp_sge sge     = { .addr = iface->tx_buf };
    ucs_status_t status;
    size_t length;

    UCT_CHECK_AM_ID(id);
    /* resources first: a packed message cannot be taken back */
    if ((uct_siwarp_ep_am_credit(ep) != UCS_OK) || !uct_siwarp_ep_has_room(ep)) {
        return UCS_ERR_NO_RESOURCE;
    }
    memset(hdr, 0, sizeof(*hdr));
    hdr->am_id = id;
    length     = pack_cb(hdr + 1, arg);
    ucs_assertv(length <= iface->config.seg_size - sizeof(*hdr), "am_bcopy packed %zu", length);
    sge.length = (uint32_t)(sizeof(*hdr) + length);
    status     = uct_siwarp_ep_am_send(ep, &sge, 1, SIWARP_SEND_INLINE, NULL);
    if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
        return status;
    }
    return length;
}

/* Fill SGEs from a UCT iov: the lkey of each entry's registration, or, for
 * memory that came without one, libsiwarp's unregistered Send / Write. */
static int uct_siwarp_iov_sges(const uct_iov_t *iov, size_t iovcnt, struct siwarp_sge *sge,
                               int *unregistered, size_t *total)
{
    size_t i;
    int n = 0;

    *total = 0;
    for (i = 0; i < iovcnt; i++) {
        size_t len = uct_iov_get_length(&iov[i]);

        if (len == 0) {
            continue;
        }
        sge[n].addr   = iov[i].buffer;
        sge[n].length = (uint32_t)len;
        if (iov[i].memh != UCT_MEM_HANDLE_NULL) {
            sge[n].lkey = siwarp_mr_stag((struct siwarp_mr*)iov[i].memh);
        } else {
            sge[n].lkey   = 0;
            *unregistered = 1;
        }
        *total += len;
        n++;
    }
    return n;
}

ucs_status_t uct_siwarp_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                                    unsigned header_length, const uct_iov_t *iov,
                                    size_t iovcnt, unsigned flags, uct_completion_t *comp)
{
    uct_siwarp_ep_t *ep       = ucs_derived_of(tl_ep, uct_siwarp_ep_t);
    uct_siwarp_iface_t *iface = ep_iface(ep);
    struct siwarp_sge sge[iface->config.max_iov];
    uct_siwarp_am_hdr_t *hdr;
    uct_siwarp_op_t *op;
    ucs_status_t status;
    int unregistered = 1, n;
    size_t total;

    UCT_CHECK_AM_ID(id);
    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)iface->config.max_iov - 1, "am_zcopy");
    UCT_CHECK_LENGTH(header_length, 0, 128, "am_zcopy header");
    n = 1 + uct_siwarp_iov_sges(iov, iovcnt, &sge[1], &unregistered, &total);
    UCT_CHECK_LENGTH(header_length + total, 0,
                     iface->config.seg_size - sizeof(*hdr), "am_zcopy");
    op = uct_siwarp_op_get(iface, ep, UCT_SIWARP_OP_TX, comp);
    if (op == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    hdr = (uct_siwarp_am_hdr_t*)op->hdr;
    memset(hdr, 0, sizeof(*hdr));
    hdr->am_id = id;
    memcpy(hdr + 1, header, header_length);
    sge[0].addr   = op->hdr;
    sge[0].length = sizeof(*hdr) + header_length;
    /* the header lives in unregistered memory: the whole Send goes so (soft
     * backend; the iface does not offer am_zcopy on a verbs device) */
    status = uct_siwarp_ep_am_send(ep, sge, n, SIWARP_SEND_UNREGISTERED, op);
    if (status != UCS_INPROGRESS) {
        uct_siwarp_op_put(iface, op);
    }
    return status;
}

/* ---- RDMA Write and Read --------------------------------------------------- */

/* put short and bcopy: one RDMA Write whose payload libsiwarp copies at
 * post time, so UCT may count it done on return (local completion). */
static ucs_status_t uct_siwarp_ep_write_inline(uct_siwarp_ep_t *ep, void *buf, size_t length,
                                               uint64_t remote_addr, uct_rkey_t rkey)
{
    struct siwarp_sge sge    = { .addr = buf, .length = (uint32_t)length };
    struct siwarp_send_wr wr = {
        .sg_list    = &sge,
        .num_sge    = 1,
        .opcode     = SIWARP_WR_WRITE,
        /* a put is made visible by the flush that follows it: with send
         * coalescing the Write waits for it, and both leave in one sendmsg */
        .send_flags = SIWARP_SEND_INLINE | SIWARP_SEND_COMPLETE_AT_POST | SIWARP_SEND_HOLD,
    };
    ucs_status_t status;

    wr.rdma.remote_addr = remote_addr;
    wr.rdma.rkey        = (uint32_t)rkey;
    status = uct_siwarp_ep_post(ep, &wr);
    return (status == UCS_INPROGRESS) ? UCS_OK : status;
}

ucs_status_t uct_siwarp_ep_put_short(uct_ep_h tl_ep, const void *buffer, unsigned length,
                                     uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_siwarp_ep_t *ep = ucs_derived_of(tl_ep, uct_siwarp_ep_t);

    UCT_CHECK_LENGTH(length, 0, ep_iface(ep)->config.seg_size, "put_short");
    return uct_siwarp_ep_write_inline(ep, (void*)buffer, length, remote_addr, rkey);
}

ssize_t uct_siwarp_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb, void *arg,
                                uint64_t remote_addr, uct_rkey_t rkey)
{
    uct_siwarp_ep_t *ep       = ucs_derived_of(tl_ep, uct_siwarp_ep_t);
    uct_siwarp_iface_t *iface = ep_iface(ep);
    ucs_status_t status;
    size_t length;

    if (!uct_siwarp_ep_has_room(ep)) {
        return UCS_ERR_NO_RESOURCE;      /* a packed buffer cannot be taken back */
    }
    length = pack_cb(iface->tx_buf, arg);
    status = uct_siwarp_ep_write_inline(ep, iface->tx_buf, length, remote_addr, rkey);
    return (status == UCS_OK) ? (ssize_t)length : status;
}

static ucs_status_t uct_siwarp_ep_rdma_zcopy(uct_siwarp_ep_t *ep, int opcode, const uct_iov_t *iov,
                                             size_t iovcnt, uint64_t remote_addr,
                                             uct_rkey_t rkey, uct_completion_t *comp)
{
    uct_siwarp_iface_t *iface = ep_iface(ep);
    struct siwarp_sge sge[iface->config.max_iov];
    struct siwarp_send_wr wr = { .sg_list = sge, .opcode = opcode };
    uct_siwarp_op_t *op;
    ucs_status_t status;
    int unregistered = 0;
    size_t total;

    UCT_CHECK_IOV_SIZE(iovcnt, (size_t)iface->config.max_iov, "put/get_zcopy");
    wr.num_sge = uct_siwarp_iov_sges(iov, iovcnt, sge, &unregistered, &total);
    if (unregistered) {
        if (opcode == SIWARP_WR_READ) {
            /* a Read places into the local MR named by the lkey */
            ucs_error("siwarp: get_zcopy into memory without a registration");
            return UCS_ERR_INVALID_PARAM;
        }
        wr.send_flags |= SIWARP_SEND_UNREGISTERED;
    }
    if (wr.num_sge == 0) {
        return UCS_OK;
    }
    op = uct_siwarp_op_get(iface, ep, UCT_SIWARP_OP_TX, comp);
    if (op == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    wr.wr_id            = (uintptr_t)op;
    wr.rdma.remote_addr = remote_addr;
    wr.rdma.rkey        = (uint32_t)rkey;
    if (opcode == SIWARP_WR_WRITE) {
        wr.send_flags |= SIWARP_SEND_COMPLETE_AT_POST;
    }
    status = uct_siwarp_ep_post(ep, &wr);
    if (status != UCS_INPROGRESS) {
        uct_siwarp_op_put(iface, op);
    }
    return status;
}

ucs_status_t uct_siwarp_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                     uint64_t remote_addr, uct_rkey_t rkey,
                                     uct_completion_t *comp)
{
    return uct_siwarp_ep_rdma_zcopy(ucs_derived_of(tl_ep, uct_siwarp_ep_t), SIWARP_WR_WRITE,
                                    iov, iovcnt, remote_addr, rkey, comp);
}

ucs_status_t uct_siwarp_ep_get_bcopy(uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                                     void *arg, size_t length, uint64_t remote_addr,
                                     uct_rkey_t rkey, uct_completion_t *comp)
{
    uct_siwarp_ep_t *ep       = ucs_derived_of(tl_ep, uct_siwarp_ep_t);
    uct_siwarp_iface_t *iface = ep_iface(ep);
    struct siwarp_sge sge     = { .length = (uint32_t)length,
                                  .lkey   = siwarp_mr_stag(iface->bounce_mr) };
    struct siwarp_send_wr wr  = { .sg_list = &sge, .num_sge = 1, .opcode = SIWARP_WR_READ };
    uct_siwarp_op_t *op;
    ucs_status_t status;

    UCT_CHECK_LENGTH(length, 0, UCT_SIWARP_GET_BCOPY_MAX, "get_bcopy");
    if (length == 0) {
        unpack_cb(arg, NULL, 0);
        return UCS_OK;
    }
    op = uct_siwarp_op_get(iface, ep, UCT_SIWARP_OP_GET_BCOPY, comp);
    if (op == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    op->unpack_cb       = unpack_cb;
    op->unpack_arg      = arg;
    op->length          = length;
    sge.addr            = op->bounce;
    wr.wr_id            = (uintptr_t)op;
    wr.rdma.remote_addr = remote_addr;
    wr.rdma.rkey        = (uint32_t)rkey;
    status = uct_siwarp_ep_post(ep, &wr);
    if (status != UCS_INPROGRESS) {
        uct_siwarp_op_put(iface, op);
    }
    return status;
}

ucs_status_t uct_siwarp_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                     uint64_t remote_addr, uct_rkey_t rkey,
                                     uct_completion_t *comp)
{
    return uct_siwarp_ep_rdma_zcopy(ucs_derived_of(tl_ep, uct_siwarp_ep_t), SIWARP_WR_READ,
                                    iov, iovcnt, remote_addr, rkey, comp);
}

/* ---- flush, fence, pending -------------------------------------------------- */

static ucs_status_t uct_siwarp_ep_flush_wait(uct_siwarp_ep_t *ep, uct_completion_t *comp)
{
    uct_siwarp_op_t *op = uct_siwarp_op_get(ep_iface(ep), ep, UCT_SIWARP_OP_FLUSH_WAIT, comp);

    if (op == NULL) {
        return UCS_ERR_NO_RESOURCE;
    }
    op->wait_seq = ep->tx_posted;
    op->next     = NULL;
    if (ep->flush_wait_tail != NULL) {
        ep->flush_wait_tail->next = op;
    } else {
        ep->flush_wait = op;
    }
    ep->flush_wait_tail = op;
    return UCS_INPROGRESS;
}

/* An RDMA Write completes locally once its data is handed to TCP, which is
 * not placement at the peer.  A flush therefore posts an 8-octet RDMA Read
 * of the peer iface's flush word: the peer answers a Read Request only after
 * what came before it on the stream (RFC 5040 5.5 ordering; the responder
 * processes the stream in order), and Read Responses come back in request
 * order, so the Read's completion proves every earlier Send, Write and
 * atomic of this ep was placed or executed remotely. */
ucs_status_t uct_siwarp_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    uct_siwarp_ep_t *ep = ucs_derived_of(tl_ep, uct_siwarp_ep_t);

    if (ep->state == UCT_SIWARP_EP_FAILED) {
        return (flags & UCT_FLUSH_FLAG_CANCEL) ? UCS_OK : ep->fail_status;
    }
    if ((!ucs_queue_is_empty(&ep->pending_q) && !ep->dispatching) || ep->xor_inflight ||
        (ep->merge_to != NULL)) {
        /* an XOR's CmpSwap is posted only when its read returns: the flush
         * Read must come after it (UCT retries from the pending queue) */
        return UCS_ERR_NO_RESOURCE;
    }
    if (!ep->unflushed) {
        if (!ep_outstanding(ep)) {
            return UCS_OK;
        }
        if (comp == NULL) {
            return UCS_INPROGRESS;     /* a Read already covers it all */
        }
        /* the last WR is a Read (a get, or a flush's): its completion
         * proves the rest, so wait for it instead of a second round trip
         * (osc ucx flushes after every get) */
        return uct_siwarp_ep_flush_wait(ep, comp);
    }
    return uct_siwarp_ep_flush_read(ep, comp, 0);
}

ucs_status_t uct_siwarp_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    ucs_derived_of(tl_ep, uct_siwarp_ep_t)->fence = 1;
    return UCS_OK;
}

ucs_status_t uct_siwarp_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req, unsigned flags)
{
    uct_siwarp_ep_t *ep = ucs_derived_of(tl_ep, uct_siwarp_ep_t);

    uct_pending_req_queue_push(&ep->pending_q, req);
    ep_iface(ep)->eps_dirty = 1;
    return UCS_OK;
}

void uct_siwarp_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb, void *arg)
{
    uct_siwarp_ep_t *ep = ucs_derived_of(tl_ep, uct_siwarp_ep_t);
    uct_pending_req_priv_queue_t UCS_V_UNUSED *priv;
    uct_pending_purge_callback_t fn = (cb != NULL) ? cb :
                                      (uct_pending_purge_callback_t)ucs_empty_function;

    uct_pending_queue_purge(priv, &ep->pending_q, 1, fn, arg);
}

unsigned uct_siwarp_ep_progress_pending(uct_siwarp_ep_t *ep)
{
    uct_pending_req_priv_queue_t *priv;
    unsigned count = 0;

    if (ep->state == UCT_SIWARP_EP_CONNECTING) {
        uct_siwarp_ep_check_connected(ep);
    }
    ep->dispatching = 1;
    uct_pending_queue_dispatch(priv, &ep->pending_q, ep_tx_free(ep) && (++count > 0));
    ep->dispatching = 0;
    return count;
}

/* ---- create / destroy ------------------------------------------------------------ */

/* An ep sends on a working connection to the peer iface if there is one
 * (uct_siwarp_conn.c says why), else on a new one. */
static UCS_CLASS_INIT_FUNC(uct_siwarp_ep_t, const uct_ep_params_t *params)
{
    uct_siwarp_iface_t *iface = ucs_derived_of(params->iface, uct_siwarp_iface_t);
    const uct_siwarp_dev_addr_t *da;
    const uct_siwarp_iface_addr_t *ia;
    uct_siwarp_conn_t *conn;
    struct sockaddr_in sin;
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);
    UCT_EP_PARAMS_CHECK_DEV_IFACE_ADDRS(params);
    da = (const uct_siwarp_dev_addr_t*)params->dev_addr;
    ia = (const uct_siwarp_iface_addr_t*)params->iface_addr;
    if (ia->rx_depth == 0) {
        ucs_error("siwarp: the peer's iface address offers no receive buffers");
        return UCS_ERR_INVALID_ADDR;
    }

    memset((char*)self + sizeof(self->super), 0, sizeof(*self) - sizeof(self->super));
    self->gen      = ++iface->ep_gen;
    ucs_queue_head_init(&self->pending_q);

    memset(&sin, 0, sizeof(sin));
    sin.sin_family      = AF_INET;
    sin.sin_addr.s_addr = da->ipv4;
    sin.sin_port        = ia->port;
    conn = uct_siwarp_conn_find(iface, &sin, ia->secret);
    if (conn == NULL) {
        /* asynchronous: until it is up, operations get UCS_ERR_NO_RESOURCE
         * (uct_siwarp_ep_post) and the iface's progress completes it */
        status = uct_siwarp_connect(iface, &sin, ia, &conn);
        if (status != UCS_OK) {
            return status;
        }
    }
    uct_siwarp_ep_attach(self, conn);
    self->state = (conn->state == UCT_SIWARP_CONN_UP) ? UCT_SIWARP_EP_CONNECTED :
                  UCT_SIWARP_EP_CONNECTING;
    ucs_list_add_tail(&iface->eps, &self->list);
    iface->eps_dirty = 1;
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_siwarp_ep_t)
{
    uct_siwarp_iface_t *iface = ep_iface(self);
    uct_siwarp_conn_t *conn   = self->conn;

    uct_siwarp_ep_pending_purge(&self->super.super, NULL, NULL);
    ucs_list_del(&self->list);
    while (self->flush_wait != NULL) {
        /* UCT: a destroyed ep's flushes do not complete */
        uct_siwarp_op_t *op = self->flush_wait;

        self->flush_wait = op->next;
        uct_siwarp_op_put(iface, op);
    }
    if (self->merge_to != NULL) {
        self->merge_to->ep = NULL;
    }
    if (conn == NULL) {
        return;      /* its iface closed first and took the connection */
    }
    conn->ep = NULL;
    if (conn->state == UCT_SIWARP_CONN_FAILED) {
        uct_siwarp_conn_destroy(conn);
        return;
    }
    /* The connection stays for the peer's sends and a later ep, even with
     * this one's work in flight: it may carry the peer's ep too, which must
     * not fail because this side let go of its own (UCT drops what a
     * destroyed ep left unflushed; uct_siwarp_conn_handle frees it) */
    conn->orphans = (unsigned)ep_outstanding(self);
    uct_siwarp_conn_retire(conn);    /* unless the peer left it before */
}

UCS_CLASS_DEFINE(uct_siwarp_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_siwarp_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DEFINE_DELETE_FUNC(uct_siwarp_ep_t, uct_ep_t);
