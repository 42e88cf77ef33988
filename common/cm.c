/*
 * cm.c - the connection state machine of a QP (RFC 5044 section 7,
 * RFC 6581): non-blocking TCP connect, MPA Request out, MPA Reply in,
 * negotiation, fallbacks (rev 1, no markers), timeouts; and on the passive
 * side the Reply out once the application accepted.  The listener and the
 * request queue live in cm_listen.c.
 *
 * Every step resumes from counters in qp->cm (out_done, in_got), so a frame
 * may arrive or leave in any number of pieces.  The Reply is read header
 * first and then exactly its private data: no FPDU byte is ever consumed
 * here, the data path finds the stream positioned at the first FPDU.
 *
 * States (enum swp_cm_state), initiator:
 *   TCP_CONNECTING -> SEND_REQ -> WAIT_REP -> DONE        (or FAILED)
 *                      ^------------------------ fallback: fresh TCP connection
 * responder (after siwarp_accept):
 *   SEND_REP -> DONE                                      (or FAILED)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mpa.h"
#include "swp.h"

#define SWP_CM_MAX_TRIES 2      /* fallbacks: rev 1, then no markers (or both) */

const char *swp_cm_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
    char a[INET6_ADDRSTRLEN] = "?";

    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const void *)sa;
        inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
        snprintf(buf, len, "%s:%u", a, ntohs(s4->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const void *)sa;
        inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
        snprintf(buf, len, "[%s]:%u", a, ntohs(s6->sin6_port));
    } else {
        snprintf(buf, len, "(family %d)", sa->sa_family);
    }
    return buf;
}

uint32_t swp_cm_mss(int fd)
{
    int mss = 0;
    socklen_t sl = sizeof(mss);

    if (getsockopt(fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &sl) < 0 || mss <= 0)
        return SWP_MPA_DEFAULT_MSS;
    return (uint32_t)mss;
}

static const char *cm_peer(struct siwarp_qp *qp, char *buf, size_t len)
{
    return swp_cm_addr_str((const struct sockaddr *)&qp->cm.peer, buf, len);
}

/* ---- endings ------------------------------------------------------------------ */

static void cm_fail(struct siwarp_qp *qp, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void cm_fail(struct siwarp_qp *qp, int err, const char *fmt, ...)
{
    char why[128], peer[64];
    char msg[sizeof(why) + sizeof(peer) + 8];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    snprintf(msg, sizeof(msg), "%s: %s", cm_peer(qp, peer, sizeof(peer)), why);
    SWP_DBG("qp %p: connection failed: %s", (void *)qp, msg);
    swp_timer_cancel(&qp->cm.timer);
    qp->cm.state = SWP_CM_FAILED;
    swp_qp_conn_failed(qp, err, msg);
}

static void cm_done(struct siwarp_qp *qp)
{
    int rc;

    swp_timer_cancel(&qp->cm.timer);
    qp->cm.state = SWP_CM_DONE;
    /* RFC 6581 7.1.1: P2P start-up.  The data path sends / awaits the RTR. */
    if (qp->nego.p2p && qp->nego.rtr) {
        qp->rtr_pending_tx = qp->nego.initiator;
        qp->rtr_wait_rx = !qp->nego.initiator;
    }
    rc = swp_qp_established(qp);
    if (rc < 0)
        cm_fail(qp, rc, "cannot enter RTS");
}

static void cm_timeout(struct swp_timer *t)
{
    struct siwarp_qp *qp = swp_container_of(t, struct siwarp_qp, cm.timer);
    static const char *what[] = {
        [SWP_CM_TCP_CONNECTING] = "TCP connection not established",
        [SWP_CM_SEND_REQ] = "MPA Request could not be sent",
        [SWP_CM_WAIT_REP] = "no complete MPA Reply received",
        [SWP_CM_SEND_REP] = "MPA Reply could not be sent",
    };
    const char *w = (unsigned)qp->cm.state < sizeof(what) / sizeof(what[0]) &&
                    what[qp->cm.state] ? what[qp->cm.state] : "MPA exchange incomplete";

    cm_fail(qp, -ETIMEDOUT, "%s within %d ms", w,
            qp->cm.state == SWP_CM_WAIT_REP && qp->cm.param.reply_wait_ms > 0
                ? qp->cm.param.reply_wait_ms : qp->cm.param.timeout_ms);
}

/* ---- socket plumbing ------------------------------------------------------------ */

static void cm_close_fd(struct siwarp_qp *qp)
{
    if (qp->pl.fd >= 0) {
        swp_poll_del(qp->ctx, &qp->pl);
        close(qp->pl.fd);
        qp->pl.fd = -1;
        qp->addr_known = false;
    }
}

static void cm_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Write what is left of cm.out: 0 when all is out, -EAGAIN, or an error. */
static int cm_write_out(struct siwarp_qp *qp)
{
    struct swp_cm *cm = &qp->cm;

    while (cm->out_done < cm->out_len) {
        ssize_t n = send(qp->pl.fd, cm->out + cm->out_done, cm->out_len - cm->out_done,
                         MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return -EAGAIN;
            return -errno;
        }
        cm->out_done += (uint32_t)n;
    }
    return 0;
}

/* ---- initiator ------------------------------------------------------------------- */

static void cm_send_req(struct siwarp_qp *qp);

static int cm_start_attempt(struct siwarp_qp *qp)
{
    struct swp_cm *cm = &qp->cm;
    int fd, rc;

    fd = socket(cm->peer.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    cm_nodelay(fd);
    swp_tcp_cc_apply(qp->ctx, fd);
    qp->llp_preset_ms = 0;      /* a fresh socket: no keepalive yet */
    cm->in_got = 0;
    cm->out_len = cm->out_done = 0;
    cm->started_ns = swp_now_ns();
    cm->req_late = false;
    rc = connect(fd, (struct sockaddr *)&cm->peer, cm->peer_len);
    if (rc < 0 && errno != EINPROGRESS) {
        rc = -errno;
        close(fd);
        return rc;
    }
    rc = swp_poll_add(qp->ctx, &qp->pl, fd, EPOLLOUT, swp_qp_io);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    cm->state = SWP_CM_TCP_CONNECTING;
    /* The Request goes out in the next progress call, even when the
     * connect is through at once: sent now, a peer answering while we do
     * not progress (an application computing after its send) would, in
     * RFC 6581 P2P mode, wait for our RTR in vain.  Sent late, it may find
     * the peer's listener gone: cm_retry_late. */
    swp_timer_arm(qp->ctx, &cm->timer, (uint64_t)cm->param.timeout_ms, cm_timeout);
    return 0;
}

/* The peer closed before its Reply, and our Request had left late: its
 * listener most likely gave up waiting for it (cm_listen.c: timeout_ms from
 * its accept) -- not a refusal of our MPA revision or markers, which
 * cm_fallback would infer.  One fresh attempt with the same parameters. */
static bool cm_retry_late(struct siwarp_qp *qp)
{
    struct swp_cm *cm = &qp->cm;

    if (cm->late_retried)
        return false;
    cm->late_retried = true;
    SWP_DBG("qp %p: our MPA Request left late and the peer closed; connecting again", (void *)qp);
    cm_close_fd(qp);
    return cm_start_attempt(qp) == 0;
}

/* Did the Request leave later than a listener with our timeout_ms would
 * wait for it (half of it, for one with a shorter one)? */
static bool cm_req_was_late(const struct swp_cm *cm)
{
    return swp_now_ns() - cm->started_ns > (uint64_t)cm->param.timeout_ms * 1000000u / 2;
}

/* Peer refused what we asked for: try again on a fresh TCP connection with
 * less (RFC 6581 9: rev 1; RFC 5044 7.1: no markers) if allowed.  Returns
 * true if a retry was started. */
static bool cm_fallback(struct siwarp_qp *qp, bool rejected, bool rev_refused)
{
    struct swp_cm *cm = &qp->cm;
    const char *what = NULL;

    if (cm->tries >= SWP_CM_MAX_TRIES)
        return false;
    if (cm->param.markers && cm->param.markers_fallback && (rejected || rev_refused)) {
        cm->param.markers = 0;
        what = "without markers";
    } else if (cm->param.mpa_rev == SWP_MPA_REV2 && cm->param.v1_fallback && rev_refused) {
        cm->param.mpa_rev = SWP_MPA_REV1;
        cm->param.p2p = 0;      /* RFC 6581 P2P needs rev 2 */
        what = "with MPA revision 1";
    }
    if (!what)
        return false;
    cm->tries++;
    SWP_DBG("qp %p: retrying %s", (void *)qp, what);
    cm_close_fd(qp);
    if (cm_start_attempt(qp) < 0)
        return false;
    return true;
}

static void cm_tcp_connected(struct siwarp_qp *qp)
{
    int err = 0, n;
    socklen_t sl = sizeof(err);

    if (getsockopt(qp->pl.fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
        err = errno;
    if (err) {
        cm_fail(qp, -err, "TCP connect failed: %s", strerror(err));
        return;
    }
    n = swp_mpa_build_request(qp->cm.out, sizeof(qp->cm.out), &qp->cm.param);
    if (n < 0) {
        cm_fail(qp, n, "cannot build MPA Request");
        return;
    }
    qp->cm.out_len = (uint32_t)n;
    qp->cm.out_done = 0;
    qp->cm.state = SWP_CM_SEND_REQ;
    cm_send_req(qp);
}

static void cm_send_req(struct siwarp_qp *qp)
{
    int rc = cm_write_out(qp);

    if (rc == -EAGAIN) {
        swp_poll_mod(qp->ctx, &qp->pl, EPOLLOUT);
        return;
    }
    if (rc < 0) {
        if (cm_req_was_late(&qp->cm) && cm_retry_late(qp))
            return;
        if (!cm_fallback(qp, false, true))
            cm_fail(qp, rc, "sending MPA Request: %s", strerror(-rc));
        return;
    }
    qp->cm.req_late = cm_req_was_late(&qp->cm);
    qp->cm.state = SWP_CM_WAIT_REP;
    if (qp->cm.param.reply_wait_ms < 0) {
        /* No timer: the peer is alive (its kernel took the connection) and
         * answers when it next progresses.  Keepalive at the LLP timeout
         * from now on tells a dead host or link from a busy peer. */
        swp_timer_cancel(&qp->cm.timer);
        swp_qp_set_llp_timeout(qp);
    } else {
        /* The Reply gets its own time from now.  The Request goes out in
         * the first progress call after the TCP connect; an application
         * that did not progress for longer than that (busy computing)
         * would otherwise time out in that same call, blaming a peer that
         * has not yet seen the Request, and retry on a fresh connection. */
        swp_timer_arm(qp->ctx, &qp->cm.timer,
                      (uint64_t)(qp->cm.param.reply_wait_ms ? qp->cm.param.reply_wait_ms
                                                            : qp->cm.param.timeout_ms),
                      cm_timeout);
    }
    swp_poll_mod(qp->ctx, &qp->pl, EPOLLIN | EPOLLRDHUP);
}

static void cm_got_reply(struct siwarp_qp *qp)
{
    struct swp_cm *cm = &qp->cm;
    struct swp_mpa_rr_info rep;
    const char *why;
    int rc;

    rc = swp_mpa_parse_rr(cm->in, cm->in_got, true, &rep);
    if (rc == -EPROTONOSUPPORT) {
        if (!cm_fallback(qp, false, true))
            cm_fail(qp, -EPROTO, "MPA Reply revision %u not supported", cm->in[17]);
        return;
    }
    if (rc < 0) {
        cm_fail(qp, -EPROTO, "malformed MPA Reply");
        return;
    }
    rc = swp_mpa_nego_initiator(&cm->param, &rep, swp_cm_mss(qp->pl.fd), &qp->nego, &why);
    if (rc == -ECONNREFUSED || rc == -EOPNOTSUPP) {
        /* a rev 1 Reject to our rev 2 Request: the peer wants rev 1 */
        bool rev_refused = rc == -ECONNREFUSED && rep.rev < cm->param.mpa_rev;
        bool markers_refused = rc == -ECONNREFUSED;

        if (cm_fallback(qp, markers_refused && cm->param.markers, rev_refused))
            return;
        /* the Reject's private data is the peer application's reason */
        memcpy(qp->nego.peer_pd, rep.pd, rep.pd_len);
        qp->nego.peer_pd_len = rep.pd_len;
    }
    if (rc == -ECONNREFUSED) {
        /* an MPA Reject is not a TCP refusal: callers fall back differently */
        cm_fail(qp, -ECONNABORTED, "%s%s", why,
                cm->param.markers ? " (we asked for markers, which siw and most RNICs refuse;"
                                    " set markers_fallback to retry without)" : "");
        return;
    }
    if (rc < 0) {
        cm_fail(qp, rc, "%s", why);
        return;
    }
    cm_done(qp);
}

/* Read an MPA Request or Reply (RFC 5044 7.1) without ever consuming a byte
 * past it: the 20-byte header first, then exactly its private data.
 * Resumes from *got.  1: complete; 0: need more; -EPROTO: wrong key;
 * -EMSGSIZE: private data over 512; -ECONNRESET: closed; else -errno. */
int swp_cm_read_rr(int fd, uint8_t *in, uint32_t *got, bool reply)
{
    for (;;) {
        uint32_t want = SWP_MPA_RR_HDR_LEN;
        ssize_t n;

        if (*got >= SWP_MPA_RR_HDR_LEN) {
            int total = swp_mpa_parse_rr_hdr(in, *got, reply);
            if (total < 0)
                return total == -EPROTO ? -EPROTO : -EMSGSIZE;
            want = (uint32_t)total;
            if (*got == want)
                return 1;
        }
        n = recv(fd, in + *got, want - *got, 0);
        if (n > 0) {
            *got += (uint32_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        return n == 0 ? -ECONNRESET : -errno;
    }
}

/* Read the Reply: the 20-byte header first, then exactly its private data. */
static void cm_read_reply(struct siwarp_qp *qp)
{
    struct swp_cm *cm = &qp->cm;
    int rc = swp_cm_read_rr(qp->pl.fd, cm->in, &cm->in_got, true);

    switch (rc) {
    case 0:
        return;
    case 1:
        cm_got_reply(qp);
        return;
    case -EPROTO:
        /* RFC 5044 7.1: not an MPA Reply */
        cm_fail(qp, -EPROTO, "MPA Reply with a wrong key");
        return;
    case -EMSGSIZE:
        cm_fail(qp, -EPROTO, "MPA Reply private data length %u over 512", swp_get16(cm->in + 18));
        return;
    }
    /* closed or reset before a full Reply: a rev 1 peer closes on rev 2
     * (RFC 5044 7.1), so may a peer refusing markers -- and a listener
     * that waited for a Request we sent late */
    if (cm->in_got == 0 && cm->req_late && cm_retry_late(qp))
        return;
    if (cm_fallback(qp, cm->param.markers != 0, true))
        return;
    if (rc == -ECONNRESET)
        cm_fail(qp, -ECONNRESET, "peer closed the connection after %u of the MPA Reply bytes",
                cm->in_got);
    else
        cm_fail(qp, rc, "reading MPA Reply: %s", strerror(-rc));
}

void swp_cm_io(struct siwarp_qp *qp, uint32_t events)
{
    struct swp_cm *cm = &qp->cm;
    int rc;

    switch (cm->state) {
    case SWP_CM_TCP_CONNECTING:
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
            cm_tcp_connected(qp);
        break;
    case SWP_CM_SEND_REQ:
        cm_send_req(qp);
        break;
    case SWP_CM_WAIT_REP:
        cm_read_reply(qp);
        break;
    case SWP_CM_SEND_REP:
        rc = cm_write_out(qp);
        if (rc == -EAGAIN)
            break;
        if (rc < 0) {
            cm_fail(qp, rc, "sending MPA Reply: %s", strerror(-rc));
            break;
        }
        cm_done(qp);
        break;
    default:
        /* no handshake in progress: stop the events */
        swp_poll_mod(qp->ctx, &qp->pl, 0);
        break;
    }
}

int swp_cm_connect(struct siwarp_qp *qp, const struct sockaddr *addr, socklen_t len,
                   const struct siwarp_conn_param *param)
{
    struct swp_cm *cm = &qp->cm;
    int rc;

    if (!addr || (addr->sa_family == AF_INET && len < sizeof(struct sockaddr_in)) ||
        (addr->sa_family == AF_INET6 && len < sizeof(struct sockaddr_in6)) ||
        (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) ||
        len > sizeof(cm->peer))
        return -EINVAL;
    if (qp->state != SIWARP_QPS_IDLE || qp->pl.fd >= 0)
        return -EISCONN;
    if (param && param->private_data_len > SWP_MPA_MAX_PD - SWP_MPA_V2_BLOCK_LEN &&
        param->mpa_rev != SWP_MPA_REV1)
        return -EMSGSIZE;
    if (param && param->private_data_len > SWP_MPA_MAX_PD)
        return -EMSGSIZE;

    memset(cm, 0, sizeof(*cm));
    if (param)
        cm->param = *param;
    else
        siwarp_conn_param_default(&cm->param);
    swp_mpa_param_fixup(&cm->param);
    if (cm->param.mpa_rev != SWP_MPA_REV1 && cm->param.mpa_rev != SWP_MPA_REV2)
        return -EINVAL;
    /* keep our own copy: the caller's buffer need not outlive the call */
    if (cm->param.private_data_len)
        memcpy(cm->user_pd, cm->param.private_data, cm->param.private_data_len);
    cm->param.private_data = cm->user_pd;
    memcpy(&cm->peer, addr, len);
    cm->peer_len = len;
    memset(&qp->nego, 0, sizeof(qp->nego));
    qp->rtr_pending_tx = qp->rtr_wait_rx = false;

    rc = swp_qp_set_state(qp, SIWARP_QPS_CONNECTING);
    if (rc < 0)
        return rc;
    rc = cm_start_attempt(qp);
    if (rc < 0) {
        char peer[64];
        char msg[128];
        snprintf(msg, sizeof(msg), "%s: cannot start TCP connect: %s",
                 cm_peer(qp, peer, sizeof(peer)), strerror(-rc));
        cm->state = SWP_CM_FAILED;
        swp_qp_conn_failed(qp, rc, msg);
        return rc;
    }
    return 0;
}

/* ---- responder ------------------------------------------------------------------- */

int swp_cm_start_reply(struct siwarp_qp *qp, int fd, const struct sockaddr *peer,
                       socklen_t peer_len, const uint8_t *rep, uint32_t rep_len,
                       int timeout_ms, int llp_timeout_ms, int llp_preset_ms)
{
    struct swp_cm *cm = &qp->cm;
    struct swp_nego nego = qp->nego;    /* filled by the caller */
    int rc;

    memset(cm, 0, sizeof(*cm));
    qp->nego = nego;
    cm->param.timeout_ms = timeout_ms > 0 ? timeout_ms : SWP_MPA_DEFAULT_TIMEOUT_MS;
    cm->param.llp_timeout_ms = llp_timeout_ms;      /* the accept's, not a default */
    qp->llp_preset_ms = llp_preset_ms;
    if (peer_len > sizeof(cm->peer))
        peer_len = sizeof(cm->peer);
    memcpy(&cm->peer, peer, peer_len);
    cm->peer_len = peer_len;
    memcpy(cm->out, rep, rep_len);
    cm->out_len = rep_len;
    cm->state = SWP_CM_SEND_REP;
    qp->rtr_pending_tx = qp->rtr_wait_rx = false;

    rc = swp_qp_set_state(qp, SIWARP_QPS_CONNECTING);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    /* Not reading yet: FPDUs that arrive before the Reply is fully out wait
     * in the socket; swp_qp_established arms EPOLLIN and, epoll being
     * level-triggered, the data path sees them at once (no siw-6.1 race). */
    rc = swp_poll_add(qp->ctx, &qp->pl, fd, 0, swp_qp_io);
    if (rc < 0) {
        close(fd);
        cm_fail(qp, rc, "cannot poll the accepted socket");
        return rc;
    }
    rc = cm_write_out(qp);
    if (rc == 0) {
        cm_done(qp);
        return qp->state == SIWARP_QPS_ERROR ? qp->error : 0;
    }
    if (rc != -EAGAIN) {
        cm_fail(qp, rc, "sending MPA Reply: %s", strerror(-rc));
        return rc;
    }
    swp_poll_mod(qp->ctx, &qp->pl, EPOLLOUT);
    swp_timer_arm(qp->ctx, &cm->timer, (uint64_t)cm->param.timeout_ms, cm_timeout);
    return 0;
}

void swp_cm_fini(struct siwarp_qp *qp)
{
    swp_timer_cancel(&qp->cm.timer);
    if (qp->cm.state != SWP_CM_DONE)
        qp->cm.state = SWP_CM_IDLE;
}

/* ---- public: active side ------------------------------------------------------------ */

int siwarp_connect(struct siwarp_qp *qp, const struct sockaddr *addr, socklen_t len,
                   const struct siwarp_conn_param *param)
{
    int rc;

    if (!qp || !addr)
        return -EINVAL;
    if (qp->ctx->hw) return swp_hw_connect(qp, addr, len, param);
    swp_lock(qp->ctx);
    rc = swp_cm_connect(qp, addr, len, param);
    swp_unlock(qp->ctx);
    return rc;
}

static bool cm_settled(void *arg)
{
    return ((struct siwarp_qp *)arg)->state != SIWARP_QPS_CONNECTING;
}

int siwarp_connect_wait(struct siwarp_qp *qp, int timeout_ms)
{
    int rc;

    if (!qp)
        return -EINVAL;
    if (qp->ctx->hw) return swp_hw_connect_wait(qp, timeout_ms);
    swp_lock(qp->ctx);
    rc = swp_progress_until(qp->ctx, timeout_ms, cm_settled, qp);
    if (rc == 0 && qp->state != SIWARP_QPS_RTS)
        rc = qp->error ? qp->error : (qp->state == SIWARP_QPS_IDLE ? -ENOTCONN : -ECONNABORTED);
    swp_unlock(qp->ctx);
    return rc;
}
