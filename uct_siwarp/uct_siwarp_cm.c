/*
 * uct_siwarp_cm.c - connection establishment: the iface's listener and
 * what it accepts, an ep's connect to a peer iface's listener, and the
 * MPA exchange that authenticates both (uct_siwarp_auth.c).  What a
 * connection is and how both ends use it: uct_siwarp_conn.c.
 */
#include "uct_siwarp.h"


#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

/* peer_flags: the peer iface address's UCT_SIWARP_IFACE_F_* (initiator),
 * or UCT_SIWARP_IFACE_F_SOFT for a listener, which answers only what a
 * request asks. */
void uct_siwarp_conn_param(uct_siwarp_iface_t *iface, struct siwarp_conn_param *p,
                           unsigned peer_flags)
{
    int soft = !!(peer_flags & UCT_SIWARP_IFACE_F_SOFT);

    siwarp_conn_param_default(p);
    p->llp_timeout_ms = iface->config.llp_timeout_ms;
    /* A peer iface whose kernel took our connection is alive; without a
     * progress thread it reads our Request only when its process next
     * progresses the worker, which a process computing does not.  Wait as
     * long as the connection lives (keepalive at the LLP timeout), as UCX's
     * tcp transport waits for its peer. */
    p->reply_wait_ms  = -1;
    p->crc            = iface->config.crc;
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

/* What a connection negotiated, in one line for either end: an ep of this
 * process may move to the connection the peer opened (crossed eps), and
 * then that one, accepted, is the only one the process uses; the tests read
 * "up (MPA CRC on|off" from whichever end. */
static void uct_siwarp_conn_log_up(const uct_siwarp_conn_t *conn,
                                   const struct siwarp_qp_attr *attr, int accepted)
{
    ucs_debug("siwarp: connection %s %s on %s up (MPA CRC %s, RFC 7306 %s)%s",
              accepted ? "from" : "to", conn->peer, conn->iface->if_name,
              attr->crc ? "on" : "off", attr->rfc7306 ? "on" : "off",
              accepted ? ", accepted" : "");
}

static void uct_siwarp_accept_one(uct_siwarp_iface_t *iface, struct siwarp_conn_req *req)
{
    struct siwarp_conn_param p;
    struct siwarp_qp_attr attr;
    struct sockaddr_storage peer;
    uct_siwarp_conn_pd_t cpd, rep;
    uct_siwarp_conn_t *conn;
    char from[48];
    int rc;

    rc = siwarp_conn_req_param(req, &p, &peer);
    if (rc < 0) {
        goto reject;
    }
    swp_auth_addr_str((const struct sockaddr*)&peer, from, sizeof(from));
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
    if (cpd.rx_depth == 0) {
        uct_siwarp_auth_warn(iface, from, "its MPA Request offers no receive buffers");
        goto reject;
    }
    if (iface->challenge) {
        /* a verbs acceptor takes only a Request that answers a challenge
         * of its own (uct_siwarp_challenge.c); a first one draws one */
        if (!(cpd.flags & UCT_SIWARP_PD_F_ANSWER)) {
            if (uct_siwarp_challenge_issue(iface, &cpd, &rep) < 0) {
                ucs_error("siwarp: no random nonce for a challenge: %s", strerror(errno));
                goto reject;
            }
            ucs_debug("siwarp: challenging a connection request from %s on %s", from,
                      iface->if_name);
            siwarp_reject(req, &rep, sizeof(rep));
            return;
        }
        if (uct_siwarp_challenge_spend(iface, &cpd) < 0) {
            uct_siwarp_auth_warn(iface, from, "its MPA Request answers no live challenge of "
                                 "this iface (a replayed request?)");
            goto reject;
        }
    }
    conn = uct_siwarp_conn_new(iface, 0);
    if (conn == NULL) {
        goto reject;
    }
    conn->req                     = cpd;
    conn->peer_addr.sin_family    = AF_INET;
    conn->peer_addr.sin_addr.s_addr = cpd.src_ipv4;
    conn->peer_addr.sin_port      = cpd.src_port;
    conn->peer_credit_stag        = cpd.credit_stag;
    conn->peer_credit_addr        = cpd.credit_addr;
    conn->peer_flush_stag         = cpd.flush_stag;
    conn->peer_flush_addr         = cpd.flush_addr;
    conn->peer_rx_depth           = cpd.rx_depth;
    ucs_snprintf_safe(conn->peer, sizeof(conn->peer), "%s:%u",
                      inet_ntoa(conn->peer_addr.sin_addr), ntohs(cpd.src_port));
    uct_siwarp_conn_pd_fill(conn, &rep);
    if (uct_siwarp_auth_sign_reply(iface, &cpd, &rep) < 0) {
        ucs_error("siwarp: no random nonce for a connection: %s", strerror(errno));
        goto err;
    }
    conn->rep = rep;
    /* step 3: nothing of the connection is placed or delivered before its
     * first Send proved the key over this Reply's fresh nonce */
    rc = conn->fin_due ? 0 :     /* a verbs device: uct_siwarp_conn_new says how */
         siwarp_qp_verify_first_send(conn->qp, uct_siwarp_auth_verify_first, conn,
                                     sizeof(uct_siwarp_auth_fin_t),
                                     iface->config.stall_timeout_ms);
    if (rc < 0) {
        ucs_error("siwarp: siwarp_qp_verify_first_send: %s", strerror(-rc));
        goto err;
    }
    uct_siwarp_conn_param(iface, &p, UCT_SIWARP_IFACE_F_SOFT);
    p.private_data     = &rep;
    p.private_data_len = sizeof(rep);
    rc = siwarp_accept(req, conn->qp, &p);
    if (rc < 0) {
        ucs_error("siwarp: siwarp_accept: %s", strerror(-rc));
        uct_siwarp_conn_destroy(conn);
        return;
    }
    /* posting is allowed from here; this end sends only once verified */
    conn->state = UCT_SIWARP_CONN_UP;
    if (ucs_log_is_enabled(UCS_LOG_LEVEL_DEBUG) && (siwarp_query_qp(conn->qp, &attr) == 0)) {
        uct_siwarp_conn_log_up(conn, &attr, 1);
    }
    return;

err:
    uct_siwarp_conn_destroy(conn);
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

/* A new connection to the iface listening at peer (ia: its iface
 * address), asynchronous: uct_siwarp_conn_check_up tells when it is up. */
ucs_status_t uct_siwarp_connect(uct_siwarp_iface_t *iface, const struct sockaddr_in *peer,
                                const uct_siwarp_iface_addr_t *ia, uct_siwarp_conn_t **conn_p)
{
    struct siwarp_conn_param p;
    uct_siwarp_conn_t *conn;
    int rc;

    conn = uct_siwarp_conn_new(iface, 1);
    if (conn == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    conn->peer_addr     = *peer;
    conn->peer_rx_depth = ia->rx_depth;
    conn->peer_flags    = ia->flags;
    memcpy(conn->peer_secret, ia->secret, sizeof(conn->peer_secret));
    ucs_snprintf_safe(conn->peer, sizeof(conn->peer), "%s:%u", inet_ntoa(peer->sin_addr),
                      ntohs(peer->sin_port));
    uct_siwarp_conn_pd_fill(conn, &conn->req);
    /* signed with the key the peer's iface address carries (step 1 of
     * uct_siwarp_auth.c); kept for the check of its Reply */
    rc = uct_siwarp_auth_sign_request(conn->peer_secret, iface->secret, &conn->req);
    if (rc < 0) {
        ucs_error("siwarp: no random nonce for a connection: %s", strerror(-rc));
        goto err;
    }
    uct_siwarp_conn_param(iface, &p, ia->flags);
    p.private_data     = &conn->req;
    p.private_data_len = sizeof(conn->req);
    rc = siwarp_connect(conn->qp, (const struct sockaddr*)peer, sizeof(*peer), &p);
    if (rc < 0) {
        ucs_error("siwarp: siwarp_connect to %s: %s", conn->peer, strerror(-rc));
        goto err;
    }
    *conn_p = conn;
    return UCS_OK;

err:
    uct_siwarp_conn_destroy(conn);
    return uct_siwarp_status(rc);
}

/* Step 3 of uct_siwarp_auth.c: the first WR on the QP, before anything an
 * ep posts.  Unsignaled (the connection's own, UCT_SIWARP_WRID_CONN). */
static int uct_siwarp_conn_send_fin(uct_siwarp_conn_t *conn)
{
    uct_siwarp_auth_fin_t fin;

    uct_siwarp_auth_fin(conn->peer_secret, &conn->req, &conn->rep, &fin);
    return uct_siwarp_conn_send_own(conn, &fin, sizeof(fin));
}

/* Connect again with a Request that answers rej, the challenge of the
 * Reject that refused the first.  0: under way; <0: failed (marked). */
static int uct_siwarp_conn_answer(uct_siwarp_conn_t *conn, const uct_siwarp_conn_pd_t *rej)
{
    struct siwarp_conn_param p;
    int rc = uct_siwarp_challenge_answer(conn, rej);

    if (rc == -EPROTO) {
        uct_siwarp_conn_set_failed(conn, -ECONNREFUSED, "refused (an MPA Reject that is no "
                                   "challenge)");
        return -ECONNREFUSED;
    } else if (rc < 0) {
        uct_siwarp_conn_set_failed(conn, rc, conn->answered ?
                                   "it challenged our answer to its challenge" :
                                   "its challenge is not signed with the key of the iface "
                                   "address this ep was given: not that iface");
        return rc;
    }
    ucs_debug("siwarp: %s challenged the connection request; answering", conn->peer);
    rc = uct_siwarp_conn_new_qp(conn);
    if (rc < 0) {
        uct_siwarp_conn_set_failed(conn, rc, "a new QP for the answer to its challenge");
        return rc;
    }
    uct_siwarp_conn_param(conn->iface, &p, conn->peer_flags);
    p.private_data     = &conn->req;
    p.private_data_len = sizeof(conn->req);
    rc = siwarp_connect(conn->qp, (const struct sockaddr*)&conn->peer_addr,
                        sizeof(conn->peer_addr), &p);
    if (rc < 0) {
        uct_siwarp_conn_set_failed(conn, rc, "connecting again with the answer to its "
                                   "challenge");
        return rc;
    }
    return 0;
}

/* Up yet?  1: RTS, the peer's words known and whether RFC 7306 was
 * negotiated; 0: not yet; <0: failed (the connection is marked, and the
 * ep on it with it). */
int uct_siwarp_conn_check_up(uct_siwarp_conn_t *conn)
{
    struct siwarp_qp_attr attr;
    uct_siwarp_conn_pd_t rep;
    char why[160];
    int rc;

    if (conn->state == UCT_SIWARP_CONN_UP) {
        return 1;
    }
    if (conn->state == UCT_SIWARP_CONN_FAILED) {
        return -ECONNABORTED;
    }
    rc = siwarp_query_qp(conn->qp, &attr);
    if (rc < 0) {
        return rc;
    }
    if (attr.state == SIWARP_QPS_CONNECTING || attr.state == SIWARP_QPS_IDLE) {
        return 0;
    }
    if (attr.state != SIWARP_QPS_RTS) {
        rc = attr.error ? attr.error : -EIO;
        if (attr.peer_private_data_len == sizeof(rep)) {
            /* an MPA Reject with our private data: a verbs acceptor's
             * challenge (uct_siwarp_challenge.c) */
            memcpy(&rep, attr.peer_private_data, sizeof(rep));
            return uct_siwarp_conn_answer(conn, &rep);
        }
        ucs_snprintf_safe(why, sizeof(why), "connecting failed: %s",
                          attr.error_str[0] ? attr.error_str : strerror(-rc));
        uct_siwarp_conn_set_failed(conn, rc, why);
        return rc;
    }
    if (attr.peer_private_data_len != sizeof(rep)) {
        ucs_snprintf_safe(why, sizeof(why), "its MPA Reply carries %u octets of private "
                          "data, not %zu", attr.peer_private_data_len, sizeof(rep));
        uct_siwarp_conn_set_failed(conn, -EPROTO, why);
        return -EPROTO;
    }
    memcpy(&rep, attr.peer_private_data, sizeof(rep));
    if ((rep.magic != UCT_SIWARP_PD_MAGIC) || (rep.rx_depth == 0)) {
        uct_siwarp_conn_set_failed(conn, -EPROTO, "its MPA Reply is not from a uct_siwarp "
                                   "iface of this version");
        return -EPROTO;
    }
    if (uct_siwarp_auth_check_reply(conn->peer_secret, &conn->req, &rep) < 0) {
        uct_siwarp_conn_set_failed(conn, -EACCES, "its MPA Reply is not signed with the key "
                                   "of the iface address this ep was given: not that iface");
        return -EACCES;
    }
    conn->rep = rep;
    rc = uct_siwarp_conn_send_fin(conn);
    if (rc < 0) {
        ucs_snprintf_safe(why, sizeof(why), "posting its first Send: %s", strerror(-rc));
        uct_siwarp_conn_set_failed(conn, rc, why);
        return rc;
    }
    conn->peer_credit_stag = rep.credit_stag;
    conn->peer_credit_addr = rep.credit_addr;
    conn->peer_flush_stag  = rep.flush_stag;
    conn->peer_flush_addr  = rep.flush_addr;
    conn->peer_rx_depth    = ucs_min(conn->peer_rx_depth, rep.rx_depth);
    conn->rfc7306          = attr.rfc7306;
    conn->state            = UCT_SIWARP_CONN_UP;
    uct_siwarp_conn_log_up(conn, &attr, 0);
    return 1;
}
