/*
 * uct_siwarp_conn.c - one iWARP connection between two ifaces, used both
 * ways.
 *
 * UCT's connect-to-iface model lets each end's ep connect to the other's
 * listener, which makes two TCP connections per pair of processes, one per
 * direction.  On loopback that costs a ping-pong about half again over one
 * socket (contrib/probes/tcp-two-sockets.c): every message then travels on
 * a socket of its own, and the TCP ACK that a reply would have carried
 * goes as a segment of its own.  So the connection belongs to the iface,
 * and an ep sends on a connection to its peer iface that is already there
 * whichever end opened it (uct_siwarp_conn_find): the one the peer opened
 * to send to us, in the usual order of UCP's wireup, where an ep to the
 * initiator is made when its first message has arrived.  Two eps made at
 * the same moment (ucx_perftest's, which exchange addresses first) open
 * two; the pair keeps the one that the iface with the lower address opened
 * (uct_siwarp_conn_merge_target), and the other end's ep moves to it once
 * a flush Read proved that all it sent on its own arrived
 * (uct_siwarp_ep_merge_progress): no message overtakes an earlier one.
 * The end that moved does not close the connection it left: an ep of the
 * lower end may already send on it (taken as the peer's connection before
 * the twin was opened, by a second ep of that end).  It says so with a
 * Send that is no AM (UCT_SIWARP_AM_LEFT), and the lower end, which alone
 * knows whether an ep of its own is on it, closes it once none is
 * (uct_siwarp_conn_retire).  Neither end puts an ep on it again.
 *
 * Each end posts its receive buffers before the connection comes up and
 * names its credit word in the MPA private data.  iWARP has no
 * receiver-not-ready retry: a Send that finds no posted buffer is fatal to
 * the stream (RFC 5041 7.2, DDP untagged buffer error), so a sender sends
 * at most the peer's rx_depth AMs beyond what the peer reported consumed.
 * The receiver reports with an RDMA Write of its 64-bit consumed count into
 * the sender's credit word: a Write needs no receive buffer at the sender.
 *
 * A connection outlives the ep that sent on it while the peer may still
 * send: it closes when it fails (the peer closed, the link failed) or when
 * the iface closes; a later ep to the same peer takes it again.
 */
#include "uct_siwarp.h"

#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

#include <ucs/time/time.h>

/* Send queue slots beyond the ep's tx_depth: credit Writes and the first
 * Send, unsignaled, which an ep's accounting does not see. */
#define UCT_SIWARP_CONN_SQ_SPARE 16

static int uct_siwarp_conn_post_recv(uct_siwarp_conn_t *conn, unsigned idx)
{
    size_t seg = conn->iface->config.seg_size;
    struct siwarp_sge sge = {
        .addr   = (char*)conn->bufs + idx * seg,
        .length = (uint32_t)seg,
        .lkey   = siwarp_mr_stag(conn->bufs_mr),
    };
    struct siwarp_recv_wr wr = { .wr_id = idx, .sg_list = &sge, .num_sge = 1 };
    struct siwarp_recv_wr *bad;

    return siwarp_post_recv(conn->qp, &wr, &bad);
}

/* A QP with its receive buffers posted and its credit word registered,
 * not connected yet.  NULL on failure (said in the log). */
uct_siwarp_conn_t *uct_siwarp_conn_new(uct_siwarp_iface_t *iface, int initiator)
{
    /* A verbs device cannot hold an accepted connection back until its
     * first Send proved the key (siwarp_qp_verify_first_send is
     * -EOPNOTSUPP there): the proof lands in one more receive buffer and
     * uct_siwarp_conn_recv checks it before any AM reaches UCT.  Its RNIC
     * would place the RDMA Writes of a replayed request before that, so
     * such an acceptor takes only answers to a challenge of its own
     * (uct_siwarp_challenge.c). */
    unsigned nbufs = iface->config.rx_depth +
                     ((!initiator && !uct_siwarp_md_is_soft(iface->md)) ? 1 : 0);
    size_t bytes   = (size_t)nbufs * iface->config.seg_size;
    uct_siwarp_conn_t *conn;
    int rc;

    conn = ucs_calloc(1, sizeof(*conn), "siwarp conn");
    if (conn == NULL) {
        ucs_error("siwarp: no memory for a connection");
        return NULL;
    }
    conn->iface     = iface;
    conn->initiator = initiator;
    conn->state     = UCT_SIWARP_CONN_CONNECTING;
    conn->nbufs     = nbufs;
    if (nbufs > iface->config.rx_depth) {
        conn->fin_due      = 1;
        iface->conns_dirty = 1;
        conn->fin_deadline = ucs_get_time() +
                             ucs_time_from_msec(iface->config.stall_timeout_ms);
    }
    ucs_list_add_tail(&iface->conns, &conn->list);

    conn->credit_word = ucs_calloc(1, 64, "siwarp credit word");  /* a cache line of its own */
    conn->bufs        = ucs_malloc(bytes, "siwarp rx bufs");
    if ((conn->credit_word == NULL) || (conn->bufs == NULL)) {
        ucs_error("siwarp: no memory for a connection's receive buffers");
        goto err;
    }
    rc = siwarp_reg_mr(iface->md->pd, conn->credit_word, sizeof(uint64_t),
                       SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE, &conn->credit_mr);
    if (rc < 0) {
        ucs_error("siwarp: registering the credit word: %s", strerror(-rc));
        goto err;
    }
    rc = siwarp_reg_mr(iface->md->pd, conn->bufs, bytes, SIWARP_ACCESS_LOCAL_WRITE,
                       &conn->bufs_mr);
    if (rc < 0) {
        ucs_error("siwarp: registering receive buffers: %s", strerror(-rc));
        goto err;
    }
    if (uct_siwarp_conn_new_qp(conn) < 0) {
        goto err;
    }
    return conn;

err:
    uct_siwarp_conn_destroy(conn);
    return NULL;
}

/* The connection's QP with every receive buffer posted: at creation, and
 * again for the Request that answers a challenge (the refused QP goes to
 * conn->old_qp, out of the way of completions still to be polled, and is
 * destroyed at the next reap).  0, or a negative errno (said in the log). */
int uct_siwarp_conn_new_qp(uct_siwarp_conn_t *conn)
{
    uct_siwarp_iface_t *iface = conn->iface;
    struct siwarp_qp_init_attr attr = {
        .send_cq     = iface->cq,
        .recv_cq     = iface->cq,
        .max_send_wr = iface->config.tx_depth + UCT_SIWARP_CONN_SQ_SPARE,
        .max_recv_wr = conn->nbufs,
        .max_sge     = iface->config.max_iov,
        .max_inline  = (uint32_t)iface->config.seg_size,
        .tx_coalesce = iface->config.tx_coalesce,
    };
    unsigned i;
    int rc;

    if (conn->qp != NULL) {
        ucs_assert(conn->old_qp == NULL);
        siwarp_qp_set_context(conn->qp, NULL);     /* its completions are dropped */
        conn->old_qp       = conn->qp;
        conn->qp           = NULL;
        iface->conns_dirty = 1;
    }
    rc = siwarp_create_qp(iface->md->pd, &attr, &conn->qp);
    if (rc < 0) {
        ucs_error("siwarp: siwarp_create_qp: %s", strerror(-rc));
        conn->qp = NULL;
        return rc;
    }
    siwarp_qp_set_context(conn->qp, conn);
    for (i = 0; i < conn->nbufs; i++) {
        rc = uct_siwarp_conn_post_recv(conn, i);
        if (rc < 0) {
            ucs_error("siwarp: posting receive buffers: %s", strerror(-rc));
            return rc;
        }
    }
    return 0;
}

/* Closes the connection and drops its completions still queued. */
void uct_siwarp_conn_destroy(uct_siwarp_conn_t *conn)
{
    ucs_assert(conn->ep == NULL);
    ucs_list_del(&conn->list);
    if (conn->old_qp != NULL) {
        siwarp_destroy_qp(conn->old_qp);
    }
    if (conn->qp != NULL) {
        siwarp_destroy_qp(conn->qp);
    }
    if (conn->bufs_mr != NULL) {
        siwarp_dereg_mr(conn->bufs_mr);
    }
    if (conn->credit_mr != NULL) {
        siwarp_dereg_mr(conn->credit_mr);
    }
    ucs_free(conn->bufs);
    ucs_free(conn->credit_word);
    ucs_free(conn);
}

/* What this end tells the other in its MPA Request or Reply (the caller
 * signs it): its credit word, its iface's flush word and listener, and
 * the receive buffers posted for the other end. */
void uct_siwarp_conn_pd_fill(uct_siwarp_conn_t *conn, uct_siwarp_conn_pd_t *pd)
{
    uct_siwarp_iface_t *iface = conn->iface;

    memset(pd, 0, sizeof(*pd));
    pd->magic       = UCT_SIWARP_PD_MAGIC;
    pd->credit_stag = siwarp_mr_stag(conn->credit_mr);
    pd->credit_addr = (uintptr_t)conn->credit_word;
    pd->flush_stag  = siwarp_mr_stag(iface->words_mr);
    pd->flush_addr  = (uintptr_t)&iface->words[0];
    pd->src_ipv4    = iface->addr.sin_addr.s_addr;
    pd->src_port    = iface->addr.sin_port;
    pd->rx_depth    = (uint16_t)iface->config.rx_depth;
}

/* The connection is over: an ep sending on it learns why.  error 0 is an
 * orderly close by the peer (its iface closed). */
void uct_siwarp_conn_set_failed(uct_siwarp_conn_t *conn, int error, const char *why)
{
    if (conn->state == UCT_SIWARP_CONN_FAILED) {
        return;
    }
    if ((error != 0) && (why != NULL)) {
        if (conn->ep != NULL) {
            ucs_error("siwarp: connection to %s on %s: %s", conn->peer, conn->iface->if_name,
                      why);
        } else {
            /* no ep of ours sends on it: the peer's own ep reports */
            ucs_debug("siwarp: connection from %s on %s: %s", conn->peer,
                      conn->iface->if_name, why);
        }
    }
    conn->error = error;
    conn->state = UCT_SIWARP_CONN_FAILED;
    conn->iface->conns_dirty = 1;
    if (conn->ep != NULL) {
        uct_siwarp_ep_conn_failed(conn->ep);
    }
}

/* The receive WRs flushed: why did the connection end? */
static void uct_siwarp_conn_closed(uct_siwarp_conn_t *conn, const struct siwarp_wc *wc)
{
    struct siwarp_qp_attr attr;
    char why[160];

    if (siwarp_query_qp(conn->qp, &attr) < 0) {
        attr.error        = -EIO;
        attr.error_str[0] = '\0';
    }
    ucs_snprintf_safe(why, sizeof(why), "%s%s%s", siwarp_wc_status_str(wc->status),
                      attr.error_str[0] ? ": " : "", attr.error_str);
    uct_siwarp_conn_set_failed(conn, attr.error, why);
}

/* Tell the sender how many AMs were consumed once a quarter of its window
 * was; the count is monotonic, so a lost race only delays it. */
void uct_siwarp_conn_report(uct_siwarp_conn_t *conn)
{
    struct siwarp_sge sge = { .addr = &conn->report_src, .length = 8 };
    struct siwarp_send_wr wr = {
        .wr_id      = UCT_SIWARP_WRID_CONN,
        .sg_list    = &sge,
        .num_sge    = 1,
        .opcode     = SIWARP_WR_WRITE,
        .send_flags = SIWARP_SEND_INLINE,
    };
    struct siwarp_send_wr *bad;
    unsigned threshold = ucs_max(1, conn->iface->config.rx_depth / 4);
    int rc;

    if (conn->consumed - conn->reported < threshold) {
        return;
    }
    conn->report_src    = conn->consumed;
    wr.rdma.remote_addr = conn->peer_credit_addr;
    wr.rdma.rkey        = conn->peer_credit_stag;
    rc = siwarp_post_send(conn->qp, &wr, &bad);
    if (rc < 0) {
        /* send queue full: the next consumed AM tries again */
        ucs_debug("siwarp: credit report deferred: %s", strerror(-rc));
        return;
    }
    conn->reported = conn->consumed;
}

static unsigned uct_siwarp_conn_recv(uct_siwarp_conn_t *conn, const struct siwarp_wc *wc)
{
    uct_siwarp_iface_t *iface = conn->iface;
    const uct_siwarp_am_hdr_t *hdr;
    char *buf;
    int rc;

    if (wc->status != SIWARP_WC_SUCCESS) {
        if (conn->initiator && (conn->state == UCT_SIWARP_CONN_CONNECTING) &&
            (conn->ep != NULL)) {
            /* refused, perhaps with a challenge to answer: its ep's
             * progress asks uct_siwarp_conn_check_up, which says why */
            conn->iface->eps_dirty = 1;
            return 0;
        }
        /* the peer closed or the link failed: the receive WRs flush, and
         * the first one takes the connection down */
        uct_siwarp_conn_closed(conn, wc);
        return 0;
    }
    if (conn->state == UCT_SIWARP_CONN_FAILED) {
        return 0;
    }
    if (wc->wr_id >= conn->nbufs) {
        siwarp_qp_to_error(conn->qp);
        uct_siwarp_conn_set_failed(conn, -EPROTO, "a receive completion names no buffer");
        return 0;
    }
    buf = (char*)conn->bufs + wc->wr_id * iface->config.seg_size;
    if (conn->fin_due) {
        /* a verbs device delivered the first Send: step 3 of
         * uct_siwarp_auth.c before anything is handed to UCT */
        if (uct_siwarp_auth_verify_first(conn, conn->qp, buf, wc->byte_len) < 0) {
            siwarp_qp_to_error(conn->qp);
            uct_siwarp_conn_set_failed(conn, -EACCES, NULL);
            return 0;
        }
        conn->fin_due = 0;
        rc = uct_siwarp_conn_post_recv(conn, (unsigned)wc->wr_id);   /* not an AM: no credit */
        if (rc < 0) {
            ucs_error("siwarp: reposting a receive buffer: %s", strerror(-rc));
        }
        return 1;
    }
    if (wc->byte_len < sizeof(uct_siwarp_am_hdr_t)) {
        siwarp_qp_to_error(conn->qp);
        uct_siwarp_conn_set_failed(conn, -EPROTO, "a malformed active message: closed it");
        return 0;
    }
    hdr = (const uct_siwarp_am_hdr_t*)buf;
    if (hdr->am_id == UCT_SIWARP_AM_LEFT) {
        /* the peer's ep moved to the twin; ours decides (above) */
        conn->peer_left = 1;
        conn->consumed++;
        uct_siwarp_conn_retire(conn);
        if (conn->state != UCT_SIWARP_CONN_FAILED) {
            rc = uct_siwarp_conn_post_recv(conn, (unsigned)wc->wr_id);
            if (rc < 0) {
                ucs_error("siwarp: reposting a receive buffer: %s", strerror(-rc));
            }
        }
        return 1;
    }
    if (hdr->am_id >= UCT_AM_ID_MAX) {
        siwarp_qp_to_error(conn->qp);
        uct_siwarp_conn_set_failed(conn, -EPROTO,
                                   "an active message id out of range: closed it");
        return 0;
    }
    uct_iface_invoke_am(&iface->super, hdr->am_id, buf + sizeof(*hdr),
                        wc->byte_len - sizeof(*hdr), 0);
    /* the buffer goes back before the credit that lets the peer fill it */
    rc = uct_siwarp_conn_post_recv(conn, (unsigned)wc->wr_id);
    if (rc < 0) {
        ucs_error("siwarp: reposting a receive buffer: %s", strerror(-rc));
        return 1;
    }
    conn->consumed++;
    uct_siwarp_conn_report(conn);
    return 1;
}

/* One completion of the connection's QP. */
unsigned uct_siwarp_conn_handle(uct_siwarp_conn_t *conn, const struct siwarp_wc *wc)
{
    /* the ep sending on it (not one that reserved it for a merge) */
    uct_siwarp_ep_t *ep = ((conn->ep != NULL) && (conn->ep->conn == conn)) ? conn->ep : NULL;
    uct_siwarp_op_t *op;

    if (wc->opcode == SIWARP_WC_RECV) {
        return uct_siwarp_conn_recv(conn, wc);
    }
    if (wc->wr_id == UCT_SIWARP_WRID_CONN) {
        /* a credit Write or the first Send: unsignaled, seen only failed */
        if (wc->status != SIWARP_WC_SUCCESS) {
            uct_siwarp_conn_set_failed(conn, -EIO, siwarp_wc_status_str(wc->status));
        }
        return 0;
    }
    op = (uct_siwarp_op_t*)(uintptr_t)wc->wr_id;
    if ((op != NULL) && !op->live) {
        /* a completion of work whose completion was already handled (ops
         * are kept on the iface's free list, never freed, so this read is
         * safe): the device reported one WR twice.  Counting it would give
         * back a send queue slot twice and call the caller's completion a
         * second time, on memory the caller may have reused. */
        ucs_warn("siwarp: connection to %s on %s: a second completion of one work "
                 "request (%s, kind %u) ignored", conn->peer, conn->iface->if_name,
                 siwarp_wc_status_str(wc->status), op->kind);
        return 0;
    }
    if ((ep != NULL) && ((op == NULL) || (op->ep_gen == ep->gen))) {
        uct_siwarp_ep_tx_done(ep, wc);
        return 1;
    }
    /* work of an ep that was destroyed before it completed: its slot comes
     * back, its completion and follow-up steps go with the ep (the caller
     * may have freed what they name) */
    if (ep != NULL) {
        uct_siwarp_ep_slot_back(ep);
    } else if (conn->orphans > 0) {
        conn->orphans--;
        uct_siwarp_conn_retire(conn);
    }
    if (op != NULL) {
        uct_siwarp_op_put(conn->iface, op);
    }
    return 1;
}

/* Destroy the connections that ended and that no ep sends on: after a poll
 * batch, since later entries of the batch may name their QP. */
void uct_siwarp_conn_reap(uct_siwarp_iface_t *iface)
{
    uct_siwarp_conn_t *conn, *tmp;

    if (!iface->conns_dirty) {
        return;
    }
    iface->conns_dirty = 0;
    ucs_list_for_each_safe(conn, tmp, &iface->conns, list) {
        if (conn->old_qp != NULL) {
            siwarp_destroy_qp(conn->old_qp);    /* a challenge refused it */
            conn->old_qp = NULL;
        }
        if (conn->fin_due && (conn->state != UCT_SIWARP_CONN_FAILED)) {
            if (ucs_get_time() > conn->fin_deadline) {
                uct_siwarp_auth_warn(iface, conn->peer, "its first message did not come");
                uct_siwarp_conn_set_failed(conn, -ETIMEDOUT, NULL);
            } else {
                iface->conns_dirty = 1;     /* its deadline is still to watch */
            }
        }
        if ((conn->state == UCT_SIWARP_CONN_FAILED) && (conn->ep == NULL)) {
            uct_siwarp_conn_destroy(conn);
        }
    }
}

/* A working connection to the iface listening at peer whose secret is
 * peer_secret, that no ep sends on: ours from before, or one it opened to
 * us.  For the latter, the Request must have proved peer_secret (src_mac)
 * and the first Send the key of this iface (uct_siwarp_auth.c, step 4). */
static uct_siwarp_conn_t *uct_siwarp_conn_lookup(uct_siwarp_iface_t *iface,
                                                 const struct sockaddr_in *peer,
                                                 const uint8_t *peer_secret, int accepted_only)
{
    struct siwarp_qp_attr attr;
    uct_siwarp_conn_t *conn;

    ucs_list_for_each(conn, &iface->conns, list) {
        if ((conn->ep != NULL) || (conn->state == UCT_SIWARP_CONN_FAILED) ||
            conn->left || conn->peer_left || (accepted_only && conn->initiator) ||
            (conn->peer_addr.sin_addr.s_addr != peer->sin_addr.s_addr) ||
            (conn->peer_addr.sin_port != peer->sin_port)) {
            continue;
        }
        if (!conn->initiator) {
            if (!conn->verified) {
                continue;
            }
            if (!conn->peer_known) {
                if (uct_siwarp_auth_check_src(peer_secret, &conn->req) < 0) {
                    continue;
                }
                memcpy(conn->peer_secret, peer_secret, sizeof(conn->peer_secret));
                conn->peer_known = 1;
                if (siwarp_query_qp(conn->qp, &attr) == 0) {
                    conn->rfc7306 = attr.rfc7306;
                }
            }
        }
        if (memcmp(conn->peer_secret, peer_secret, sizeof(conn->peer_secret)) != 0) {
            continue;      /* another process now listens at that port */
        }
        return conn;
    }
    return NULL;
}

uct_siwarp_conn_t *uct_siwarp_conn_find(uct_siwarp_iface_t *iface, const struct sockaddr_in *peer,
                                        const uint8_t *peer_secret)
{
    return uct_siwarp_conn_lookup(iface, peer, peer_secret, 0);
}

static uct_siwarp_conn_t *uct_siwarp_conn_find_accepted(uct_siwarp_iface_t *iface,
                                                        const struct sockaddr_in *peer,
                                                        const uint8_t *peer_secret)
{
    return uct_siwarp_conn_lookup(iface, peer, peer_secret, 1);
}

/* (address, port) as one number, to order two ifaces */
static uint64_t uct_siwarp_addr_rank(const struct sockaddr_in *sin)
{
    return ((uint64_t)ntohl(sin->sin_addr.s_addr) << 16) | ntohs(sin->sin_port);
}

/* conn, which this iface opened, has a twin the peer opened to us: the
 * one to keep when the peer's address is the lower.  NULL: keep conn. */
uct_siwarp_conn_t *uct_siwarp_conn_merge_target(uct_siwarp_conn_t *conn)
{
    uct_siwarp_iface_t *iface = conn->iface;

    if (!conn->initiator || (conn->state == UCT_SIWARP_CONN_FAILED) ||
        (uct_siwarp_addr_rank(&conn->peer_addr) >= uct_siwarp_addr_rank(&iface->addr))) {
        return NULL;
    }
    return uct_siwarp_conn_find_accepted(iface, &conn->peer_addr, conn->peer_secret);
}

/* A Send of the connection's own (the proof of step 3 of
 * uct_siwarp_auth.c, UCT_SIWARP_AM_LEFT): inline, unsignaled
 * (UCT_SIWARP_WRID_CONN), seen only if it fails.  What the post said. */
int uct_siwarp_conn_send_own(uct_siwarp_conn_t *conn, const void *buf, uint32_t len)
{
    struct siwarp_sge sge = { .addr = (void*)buf, .length = len };
    struct siwarp_send_wr wr = {
        .wr_id      = UCT_SIWARP_WRID_CONN,
        .sg_list    = &sge,
        .num_sge    = 1,
        .opcode     = SIWARP_WR_SEND,
        .send_flags = SIWARP_SEND_INLINE,
    };
    struct siwarp_send_wr *bad;

    return siwarp_post_send(conn->qp, &wr, &bad);
}

/* Tell the peer that our ep moved off conn (UCT_SIWARP_AM_LEFT): a Send,
 * so it takes one of the peer's receive buffers like an AM.  Unsignaled,
 * the connection's own; a failure shows as the connection's.  0 when
 * posted, -EAGAIN while the peer has no buffer for it, or what the post
 * said. */
int uct_siwarp_conn_send_left(uct_siwarp_conn_t *conn)
{
    uct_siwarp_am_hdr_t hdr = { .am_id = UCT_SIWARP_AM_LEFT };
    int rc;

    if (!uct_siwarp_conn_has_credit(conn)) {
        return -EAGAIN;
    }
    rc = uct_siwarp_conn_send_own(conn, &hdr, sizeof(hdr));
    if (rc < 0) {
        return rc;
    }
    conn->am_sent++;
    conn->left = 1;
    return 0;
}

/* The peer left conn: close it once no ep of ours sends on it and no WR
 * an ep of ours left there is still out (the orderly close tells the
 * peer, which destroys its side as a connection without an ep). */
void uct_siwarp_conn_retire(uct_siwarp_conn_t *conn)
{
    if (conn->peer_left && (conn->ep == NULL) && (conn->orphans == 0) &&
        (conn->state != UCT_SIWARP_CONN_FAILED)) {
        ucs_debug("siwarp: connection from %s on %s: the peer moved to its twin, closed",
                  conn->peer, conn->iface->if_name);
        uct_siwarp_conn_set_failed(conn, 0, NULL);   /* reaped after this poll batch */
    }
}
