/*
 * uct_siwarp_cm.c - connections.  Each ep connects to its peer iface's
 * listener: one iWARP connection per direction, as UCT's connect-to-iface
 * model has it (the receiving iface needs no ep of its own).  The accepting
 * side keeps an "rx conn": the QP, its receive buffers, and the credit
 * count it writes back to the initiator.
 *
 * iWARP has no receiver-not-ready retry: a Send that finds no posted buffer
 * is fatal to the stream (RFC 5041 7.2, DDP untagged buffer error), so an
 * initiator sends at most rx_depth AMs beyond what the receiver reported
 * consumed.  The receiver reports with an RDMA Write of its 64-bit consumed
 * count into the initiator's credit word (named in the MPA Request's
 * private data): a Write needs no receive buffer at the initiator.
 */
#include "uct_siwarp.h"

#include <ucs/time/time.h>

#include <errno.h>
#include <string.h>

/* peer_flags: the peer iface address's UCT_SIWARP_IFACE_F_* (initiator),
 * or UCT_SIWARP_IFACE_F_SOFT for a listener, which answers only what a
 * request asks. */
void uct_siwarp_conn_param(uct_siwarp_iface_t *iface, struct siwarp_conn_param *p,
                           unsigned peer_flags)
{
    int soft = !!(peer_flags & UCT_SIWARP_IFACE_F_SOFT);

    siwarp_conn_param_default(p);
    p->llp_timeout_ms = iface->config.llp_timeout_ms;
    /* Between two software stacks, FPDUs of 64 KiB instead of the MSS: one
     * header, CRC and read per 64 KiB on the veth pair (MSS 1448), as the
     * BTL does (btl_siwarp_big_fpdu). */
    p->big_fpdu = soft ? 65535 : 0;
    /* RFC 7306 likewise only toward a software peer (the private data's
     * magic is checked too) */
    p->rfc7306 = (iface->config.atomics && soft) ? 1 : -1;
    /* Toward a verbs device only the Read RTR: stock siw 6.1 as responder
     * can leave a Write RTR unread and never reach RTS (the BTL's
     * btl_siwarp_rtr read, test/interop/HW.md) */
    if (!soft) {
        p->rtr = SIWARP_RTR_READ;
    }
}

ucs_status_t uct_siwarp_listen(uct_siwarp_iface_t *iface)
{
    struct siwarp_conn_param p;
    struct sockaddr_storage ss;
    struct sockaddr_in sin = iface->addr;
    int rc;

    uct_siwarp_conn_param(iface, &p, UCT_SIWARP_IFACE_F_SOFT);
    sin.sin_port = 0;
    rc = siwarp_listen(iface->md->ctx, (struct sockaddr*)&sin, sizeof(sin), &p,
                       &iface->listener);
    if (rc < 0) {
        ucs_error("siwarp: siwarp_listen on %s: %s", iface->if_name, strerror(-rc));
        return uct_siwarp_status(rc);
    }
    rc = siwarp_listener_addr(iface->listener, &ss);
    if (rc < 0) {
        ucs_error("siwarp: siwarp_listener_addr: %s", strerror(-rc));
        return uct_siwarp_status(rc);
    }
    iface->addr.sin_port = ((struct sockaddr_in*)&ss)->sin_port;
    return UCS_OK;
}

void uct_siwarp_rx_conn_destroy(uct_siwarp_rx_conn_t *rx)
{
    ucs_list_del(&rx->list);
    if (rx->qp != NULL) {
        siwarp_destroy_qp(rx->qp);
    }
    if (rx->bufs_mr != NULL) {
        siwarp_dereg_mr(rx->bufs_mr);
    }
    ucs_free(rx->bufs);
    ucs_free(rx);
}

static int uct_siwarp_rx_post(uct_siwarp_rx_conn_t *rx, unsigned idx)
{
    size_t seg = rx->iface->config.seg_size;
    struct siwarp_sge sge = {
        .addr   = (char*)rx->bufs + idx * seg,
        .length = (uint32_t)seg,
        .lkey   = siwarp_mr_stag(rx->bufs_mr),
    };
    struct siwarp_recv_wr wr = { .wr_id = idx, .sg_list = &sge, .num_sge = 1 };
    struct siwarp_recv_wr *bad;

    return siwarp_post_recv(rx->qp, &wr, &bad);
}

/* Tell the initiator how many AMs were consumed once a quarter of its
 * window was; the count is monotonic, so a lost race only delays it. */
static void uct_siwarp_rx_report(uct_siwarp_rx_conn_t *rx)
{
    struct siwarp_sge sge = { .addr = &rx->report_src, .length = 8 };
    struct siwarp_send_wr wr = {
        .sg_list    = &sge,
        .num_sge    = 1,
        .opcode     = SIWARP_WR_WRITE,
        .send_flags = SIWARP_SEND_INLINE,
    };
    struct siwarp_send_wr *bad;
    unsigned threshold = ucs_max(1, rx->iface->config.rx_depth / 4);
    int rc;

    if (rx->consumed - rx->reported < threshold) {
        return;
    }
    rx->report_src      = rx->consumed;
    wr.rdma.remote_addr = rx->credit_addr;
    wr.rdma.rkey        = rx->credit_stag;
    rc = siwarp_post_send(rx->qp, &wr, &bad);
    if (rc < 0) {
        /* send queue full: the next consumed AM tries again */
        ucs_debug("siwarp: credit report deferred: %s", strerror(-rc));
        return;
    }
    rx->reported = rx->consumed;
}

unsigned uct_siwarp_rx_handle(uct_siwarp_rx_conn_t *rx, const struct siwarp_wc *wc)
{
    uct_siwarp_iface_t *iface = rx->iface;
    const uct_siwarp_am_hdr_t *hdr;
    char *buf;
    int rc;

    if (wc->status != SIWARP_WC_SUCCESS) {
        /* the initiator closed (its ep was destroyed) or the link failed:
         * the receive WRs flush; the first one takes the connection down */
        if (!rx->failed) {
            ucs_debug("siwarp: rx conn %p closed: %s", rx, siwarp_wc_status_str(wc->status));
            rx->failed = 1;   /* destroyed after this poll batch (uct_siwarp_rx_reap) */
        }
        return 0;
    }
    if (rx->failed) {
        return 0;
    }
    if (wc->opcode != SIWARP_WC_RECV) {
        return 0;                              /* a credit Write that was signaled */
    }
    if ((wc->wr_id >= rx->nbufs) ||
        (wc->byte_len < sizeof(uct_siwarp_am_hdr_t))) {
        ucs_error("siwarp: malformed active message (%u bytes) from a peer: closing it",
                  wc->byte_len);
        siwarp_qp_to_error(rx->qp);
        rx->failed = 1;
        return 0;
    }
    buf = (char*)rx->bufs + wc->wr_id * iface->config.seg_size;
    if (rx->fin_due) {
        /* a verbs device delivered the first Send: step 3 of
         * uct_siwarp_auth.c before anything is handed to UCT */
        if (uct_siwarp_auth_verify_first(rx, rx->qp, buf, wc->byte_len) < 0) {
            siwarp_qp_to_error(rx->qp);
            rx->failed = 1;
            return 0;
        }
        rx->fin_due = 0;
        rc = uct_siwarp_rx_post(rx, (unsigned)wc->wr_id);   /* not an AM: no credit */
        if (rc < 0) {
            ucs_error("siwarp: reposting a receive buffer: %s", strerror(-rc));
        }
        return 1;
    }
    hdr = (const uct_siwarp_am_hdr_t*)buf;
    if (hdr->am_id >= UCT_AM_ID_MAX) {
        ucs_error("siwarp: active message id %u from a peer is out of range: closing it",
                  hdr->am_id);
        siwarp_qp_to_error(rx->qp);
        rx->failed = 1;
        return 0;
    }
    uct_iface_invoke_am(&iface->super, hdr->am_id, buf + sizeof(*hdr),
                        wc->byte_len - sizeof(*hdr), 0);
    /* the buffer goes back before the credit that lets the peer fill it */
    rc = uct_siwarp_rx_post(rx, (unsigned)wc->wr_id);
    if (rc < 0) {
        ucs_error("siwarp: reposting a receive buffer: %s", strerror(-rc));
        return 1;
    }
    rx->consumed++;
    uct_siwarp_rx_report(rx);
    return 1;
}

static void uct_siwarp_accept_one(uct_siwarp_iface_t *iface, struct siwarp_conn_req *req)
{
    struct siwarp_qp_init_attr attr = {
        .send_cq     = iface->cq,
        .recv_cq     = iface->cq,
        .max_send_wr = 64,
        .max_recv_wr = iface->config.rx_depth,
        .max_sge     = 1,
        .max_inline  = 64,
    };
    uct_siwarp_conn_pd_t rep = {
        .magic = UCT_SIWARP_PD_MAGIC,
        .stag  = siwarp_mr_stag(iface->words_mr),
        .addr  = (uintptr_t)&iface->words[0],
    };
    struct siwarp_conn_param p;
    struct sockaddr_storage peer;
    uct_siwarp_conn_pd_t cpd;
    uct_siwarp_rx_conn_t *rx;
    char from[48];
    unsigned i;
    int rc;

    rc = siwarp_conn_req_param(req, &p, &peer);
    if (rc < 0) {
        goto reject;
    }
    uct_siwarp_auth_peer_str(&peer, from, sizeof(from));
    if (p.private_data_len == sizeof(cpd)) {
        memcpy(&cpd, p.private_data, sizeof(cpd));
    }
    if ((p.private_data_len != sizeof(cpd)) || (cpd.magic != UCT_SIWARP_PD_MAGIC)) {
        uct_siwarp_auth_warn(iface, from, "its MPA Request is not from a uct_siwarp ep "
                             "of this version");
        goto reject;
    }
    /* before anything is created: a stranger costs one hash */
    if (uct_siwarp_auth_check_request(iface, &cpd) < 0) {
        uct_siwarp_auth_warn(iface, from, "its MPA Request is not signed with this iface's "
                             "key (a process that was not given the iface address)");
        goto reject;
    }
    if (uct_siwarp_auth_sign_reply(iface, &cpd, &rep) < 0) {
        ucs_error("siwarp: no random nonce for a connection: %s", strerror(errno));
        goto reject;
    }
    rx = ucs_calloc(1, sizeof(*rx), "siwarp rx conn");
    if (rx == NULL) {
        goto reject;
    }
    /* A verbs device cannot hold the connection back until its first Send
     * proved the key (siwarp_qp_verify_first_send is -EOPNOTSUPP there):
     * the proof lands in one more receive buffer and uct_siwarp_rx_handle
     * checks it before any AM reaches UCT.  What it cannot stop: an RNIC
     * places RDMA Writes and answers Reads of a replayed request before
     * the missing proof fails the connection (the BTL's challenge round,
     * btl_siwarp_auth.c, closes that gap). */
    rx->nbufs       = iface->config.rx_depth;
    if (!uct_siwarp_md_is_soft(iface->md)) {
        rx->nbufs++;
        rx->fin_due      = 1;
        rx->fin_deadline = ucs_get_time() +
                           ucs_time_from_msec(iface->config.llp_timeout_ms);
    }
    attr.max_recv_wr = rx->nbufs;
    rx->conn_kind   = UCT_SIWARP_CONN_RX;
    rx->iface       = iface;
    rx->credit_stag = cpd.stag;
    rx->credit_addr = cpd.addr;
    rx->req         = cpd;
    rx->rep         = rep;
    ucs_strncpy_safe(rx->peer, from, sizeof(rx->peer));
    ucs_list_add_tail(&iface->rx_conns, &rx->list);
    rx->bufs = ucs_malloc(rx->nbufs * iface->config.seg_size, "siwarp rx bufs");
    if (rx->bufs == NULL) {
        goto err;
    }
    rc = siwarp_reg_mr(iface->md->pd, rx->bufs, rx->nbufs * iface->config.seg_size,
                       SIWARP_ACCESS_LOCAL_WRITE, &rx->bufs_mr);
    if (rc < 0) {
        ucs_error("siwarp: registering receive buffers: %s", strerror(-rc));
        goto err;
    }
    rc = siwarp_create_qp(iface->md->pd, &attr, &rx->qp);
    if (rc < 0) {
        ucs_error("siwarp: siwarp_create_qp (accept): %s", strerror(-rc));
        goto err;
    }
    siwarp_qp_set_context(rx->qp, &rx->conn_kind);
    /* step 3: nothing of the connection is placed or delivered before its
     * first Send proved the key over this Reply's fresh nonce */
    rc = rx->fin_due ? 0 :
         siwarp_qp_verify_first_send(rx->qp, uct_siwarp_auth_verify_first, rx,
                                     sizeof(uct_siwarp_auth_fin_t), iface->config.llp_timeout_ms);
    if (rc < 0) {
        ucs_error("siwarp: siwarp_qp_verify_first_send: %s", strerror(-rc));
        goto err;
    }
    for (i = 0; i < rx->nbufs; i++) {
        rc = uct_siwarp_rx_post(rx, i);
        if (rc < 0) {
            ucs_error("siwarp: posting receive buffers: %s", strerror(-rc));
            goto err;
        }
    }
    uct_siwarp_conn_param(iface, &p, UCT_SIWARP_IFACE_F_SOFT);
    p.private_data     = &rep;
    p.private_data_len = sizeof(rep);
    rc = siwarp_accept(req, rx->qp, &p);
    if (rc < 0) {
        ucs_error("siwarp: siwarp_accept: %s", strerror(-rc));
        uct_siwarp_rx_conn_destroy(rx);
    }
    return;

err:
    uct_siwarp_rx_conn_destroy(rx);
reject:
    ucs_debug("siwarp: rejecting a connection request on %s", iface->if_name);
    siwarp_reject(req, NULL, 0);
}

unsigned uct_siwarp_accept_progress(uct_siwarp_iface_t *iface)
{
    struct siwarp_conn_req *req;
    unsigned count = 0;

    while (siwarp_take_conn_request(iface->listener, &req) == 0) {
        uct_siwarp_accept_one(iface, req);
        count++;
    }
    return count;
}

static const char *ep_iface_name(uct_siwarp_ep_t *ep)
{
    return ucs_derived_of(ep->super.super.iface, uct_siwarp_iface_t)->if_name;
}

/* Destroy the rx conns whose connection ended: after a poll batch, since
 * later entries of the batch may name their QP. */
void uct_siwarp_rx_reap(uct_siwarp_iface_t *iface)
{
    uct_siwarp_rx_conn_t *rx, *tmp;

    ucs_list_for_each_safe(rx, tmp, &iface->rx_conns, list) {
        if (rx->fin_due && !rx->failed && (ucs_get_time() > rx->fin_deadline)) {
            uct_siwarp_auth_warn(iface, rx->peer, "its first message did not come");
            rx->failed = 1;
        }
        if (rx->failed) {
            uct_siwarp_rx_conn_destroy(rx);   /* drops its queued completions */
        }
    }
}

/* Step 3 of uct_siwarp_auth.c: the first WR on the QP, before anything
 * the ep posts, and outside the pending queue (which may hold requests
 * that waited for the connection).  Signaled, so its slot comes back. */
static int uct_siwarp_ep_send_fin(uct_siwarp_ep_t *ep, const uct_siwarp_conn_pd_t *rep)
{
    uct_siwarp_auth_fin_t fin;
    struct siwarp_sge sge = { .addr = &fin, .length = sizeof(fin) };
    struct siwarp_send_wr wr = {
        .wr_id      = 0,               /* no op: uct_siwarp_ep_tx_done only counts it */
        .sg_list    = &sge,
        .num_sge    = 1,
        .opcode     = SIWARP_WR_SEND,
        .send_flags = SIWARP_SEND_INLINE | SIWARP_SEND_SIGNALED,
    };
    struct siwarp_send_wr *bad;
    int rc;

    uct_siwarp_auth_fin(ep->peer_secret, &ep->req, rep, &fin);
    rc = siwarp_post_send(ep->qp, &wr, &bad);
    if (rc < 0) {
        return rc;
    }
    ep->tx_avail--;
    return 0;
}

/* Connected yet?  1: RTS, the acceptor's flush word known and whether
 * RFC 7306 was negotiated; 0: not yet; <0: failed (the ep is marked). */
int uct_siwarp_ep_check_connected(uct_siwarp_ep_t *ep)
{
    struct siwarp_qp_attr attr;
    uct_siwarp_conn_pd_t rep;
    int rc;

    if (ep->state == UCT_SIWARP_EP_CONNECTED) {
        return 1;
    }
    if (ep->state == UCT_SIWARP_EP_FAILED) {
        return -ECONNABORTED;
    }
    rc = siwarp_query_qp(ep->qp, &attr);
    if (rc < 0) {
        return rc;
    }
    if (attr.state == SIWARP_QPS_CONNECTING || attr.state == SIWARP_QPS_IDLE) {
        return 0;
    }
    if (attr.state != SIWARP_QPS_RTS) {
        ucs_error("siwarp: connection on %s failed: %s", ep_iface_name(ep),
                  attr.error_str[0] ? attr.error_str : strerror(-attr.error));
        uct_siwarp_ep_set_failed(ep, uct_siwarp_status(attr.error ? attr.error : -EIO));
        return -ECONNABORTED;
    }
    if (attr.peer_private_data_len != sizeof(rep)) {
        ucs_error("siwarp: the peer's MPA Reply carries %u octets of private data, not %zu",
                  attr.peer_private_data_len, sizeof(rep));
        uct_siwarp_ep_set_failed(ep, UCS_ERR_UNREACHABLE);
        return -EPROTO;
    }
    memcpy(&rep, attr.peer_private_data, sizeof(rep));
    if (rep.magic != UCT_SIWARP_PD_MAGIC) {
        ucs_error("siwarp: the peer's MPA Reply is not from a uct_siwarp iface");
        uct_siwarp_ep_set_failed(ep, UCS_ERR_UNREACHABLE);
        return -EPROTO;
    }
    if (uct_siwarp_auth_check_reply(ep->peer_secret, &ep->req, &rep) < 0) {
        ucs_error("siwarp: the peer's MPA Reply on %s is not signed with the key of the "
                  "iface address this ep was given: not that iface", ep_iface_name(ep));
        uct_siwarp_ep_set_failed(ep, UCS_ERR_UNREACHABLE);
        return -EACCES;
    }
    rc = uct_siwarp_ep_send_fin(ep, &rep);
    if (rc < 0) {
        ucs_error("siwarp: posting the connection's first Send on %s: %s", ep_iface_name(ep),
                  strerror(-rc));
        uct_siwarp_ep_set_failed(ep, uct_siwarp_status(rc));
        return rc;
    }
    ep->peer_flush_stag = rep.stag;
    ep->peer_flush_addr = rep.addr;
    ep->rfc7306         = attr.rfc7306;
    ep->state           = UCT_SIWARP_EP_CONNECTED;
    return 1;
}
