/*
 * cm_listen.c - the passive side of connection setup (RFC 5044 section 7.1,
 * RFC 6581): a listening socket in the context's epoll set, accepted TCP
 * connections reading their MPA Request in the background, each with its
 * own timeout, and a queue of complete requests the application takes with
 * siwarp_get_conn_request, then accepts onto a QP or rejects.
 *
 * A peer that says nothing, stops mid-header, sends a wrong key or a
 * private-data length over 512 costs one socket until its timer fires or
 * its bytes arrive; nothing here ever blocks, so other connections proceed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* accept4 */
#endif
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mpa.h"
#include "swp.h"

#define SWP_LISTEN_BACKLOG    128
#define SWP_LISTEN_MAX_PENDING 1024   /* connections still reading a Request */
#define SWP_LISTEN_ACCEPT_BURST 64

struct siwarp_listener {
    struct siwarp_ctx *ctx;
    struct swp_pollable pl;
    struct siwarp_conn_param param;       /* defaults for accept, timeout */
    uint8_t pd[SWP_MPA_MAX_PD];
    struct swp_list pending;              /* reading their Request */
    struct swp_list ready;                /* complete, not yet taken */
    uint32_t npending;
    uint64_t dropped;                     /* bad or silent peers */
    /* set on the listening socket, so every accepted one has them */
    char tcp_cc[SWP_TCP_CC_MAX];          /* the ctx's list when it was set */
    int llp_ms;                           /* swp_sock_set_llp_timeout's answer */
};

enum swp_req_state { SWP_REQ_READING, SWP_REQ_READY, SWP_REQ_TAKEN };

struct siwarp_conn_req {
    struct swp_list link;
    struct siwarp_ctx *ctx;
    struct siwarp_listener *l;            /* NULL once taken by the application */
    enum swp_req_state state;
    struct swp_pollable pl;
    struct swp_timer timer;
    struct siwarp_conn_param lparam;      /* the listener's parameters */
    int llp_ms;                           /* the LLP timeout the socket inherited */
    uint8_t lpd[SWP_MPA_MAX_PD];
    struct sockaddr_storage peer;
    socklen_t peer_len;
    uint8_t in[SWP_MPA_RR_MAX_LEN];
    uint32_t in_got;
    struct swp_mpa_rr_info info;          /* valid in READY / TAKEN; points into in[] */
};

static const char *req_peer(struct siwarp_conn_req *r, char *buf, size_t len)
{
    return swp_cm_addr_str((const struct sockaddr *)&r->peer, buf, len);
}

static void req_free(struct siwarp_conn_req *r)
{
    swp_timer_cancel(&r->timer);
    if (r->pl.fd >= 0) {
        swp_poll_del(r->ctx, &r->pl);
        close(r->pl.fd);
        r->pl.fd = -1;
    }
    free(r);
}

/* Drop a connection that is still on the listener's pending list. */
static void req_drop(struct siwarp_conn_req *r, const char *why)
{
    char peer[64];

    SWP_DBG("listener %p: dropping %s: %s", (void *)r->l, req_peer(r, peer, sizeof(peer)), why);
    r->l->dropped++;
    r->l->npending--;
    swp_list_del(&r->link);
    req_free(r);
}

/* Best effort: a Reject is at most 532 bytes on a fresh socket, it fits in
 * the send buffer.  Half-close so the peer reads it before our FIN. */
static void req_send_reject(int fd, const struct swp_mpa_rr_info *info,
                            const struct siwarp_conn_param *ours, const void *pd, uint16_t pd_len)
{
    uint8_t out[SWP_MPA_RR_MAX_LEN];
    int n = swp_mpa_build_reject(out, sizeof(out), info, ours, pd, pd_len);

    if (n > 0) {
        ssize_t rc = send(fd, out, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)rc;
        shutdown(fd, SHUT_WR);
    }
}

static void req_timeout(struct swp_timer *t)
{
    struct siwarp_conn_req *r = swp_container_of(t, struct siwarp_conn_req, timer);
    char why[96];

    snprintf(why, sizeof(why), "no complete MPA Request within %d ms (%u bytes)",
             r->lparam.timeout_ms, r->in_got);
    req_drop(r, why);
}

static void req_complete(struct siwarp_conn_req *r)
{
    struct siwarp_listener *l = r->l;
    int rc = swp_mpa_parse_rr(r->in, r->in_got, false, &r->info);

    if (rc == -EPROTONOSUPPORT) {
        /* RFC 5044 7.1: a revision we cannot interoperate with: close */
        req_drop(r, "unsupported MPA revision");
        return;
    }
    if (rc < 0) {
        /* parsable header, bad contents (enhanced frame without IRD/ORD):
         * RFC 5044 7.1.1, answer with a Reject */
        struct swp_mpa_rr_info ri;

        memset(&ri, 0, sizeof(ri));
        ri.rev = r->in[17];
        req_send_reject(r->pl.fd, &ri, NULL, NULL, 0);
        req_drop(r, "malformed MPA Request");
        return;
    }
    swp_timer_cancel(&r->timer);
    /* Nothing more is expected before our Reply (RFC 5044 7.1: the initiator
     * waits for it); stop watching until the application decides. */
    swp_poll_del(r->ctx, &r->pl);
    swp_list_del(&r->link);
    l->npending--;
    r->state = SWP_REQ_READY;
    swp_list_add_tail(&l->ready, &r->link);
    swp_ctx_kick(r->ctx);
}

/* Read the Request: the 20-byte header, then exactly its private data. */
static void req_io(struct swp_pollable *p, uint32_t events)
{
    struct siwarp_conn_req *r = swp_container_of(p, struct siwarp_conn_req, pl);

    (void)events;
    switch (swp_cm_read_rr(r->pl.fd, r->in, &r->in_got, false)) {
    case 0:
        return;
    case 1:
        req_complete(r);
        return;
    case -EPROTO:
        req_drop(r, "not an MPA Request (wrong key)");
        return;
    case -EMSGSIZE:
        /* RFC 5044 7.1: private data over 512: reject the frame */
        req_drop(r, "MPA Request private data length over 512");
        return;
    case -ECONNRESET:
        req_drop(r, "peer closed before a complete MPA Request");
        return;
    default:
        req_drop(r, "TCP error while reading the MPA Request");
        return;
    }
}

static void listener_io(struct swp_pollable *p, uint32_t events)
{
    struct siwarp_listener *l = swp_container_of(p, struct siwarp_listener, pl);

    (void)events;
    for (int i = 0; i < SWP_LISTEN_ACCEPT_BURST; i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        struct siwarp_conn_req *r;
        int fd = accept4(l->pl.fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return;     /* EAGAIN, or out of fds: retried on the next event */
        }
        if (l->npending >= SWP_LISTEN_MAX_PENDING) {
            l->dropped++;
            close(fd);
            continue;
        }
        r = calloc(1, sizeof(*r));
        if (!r) {
            close(fd);
            continue;
        }
        /* TCP_NODELAY, keepalive and the congestion control come from
         * the listening socket; only a list changed since is set here */
        if (strcmp(l->tcp_cc, l->ctx->tcp_cc) != 0)
            swp_tcp_cc_apply(l->ctx, fd);
        r->ctx = l->ctx;
        r->l = l;
        r->state = SWP_REQ_READING;
        r->lparam = l->param;
        r->llp_ms = l->llp_ms;
        memcpy(r->lpd, l->pd, l->param.private_data_len);
        r->lparam.private_data = r->lpd;
        memcpy(&r->peer, &ss, sl);
        r->peer_len = sl;
        if (swp_poll_add(l->ctx, &r->pl, fd, EPOLLIN | EPOLLRDHUP, req_io) < 0) {
            close(fd);
            free(r);
            continue;
        }
        swp_list_add_tail(&l->pending, &r->link);
        l->npending++;
        swp_timer_arm(l->ctx, &r->timer, (uint64_t)l->param.timeout_ms, req_timeout);
        /* The initiator writes its Request as soon as TCP connects, so by
         * the time we accept it is usually waiting: read it now rather than
         * on the next epoll pass (r may be gone after this) */
        req_io(&r->pl, EPOLLIN);
    }
}

/* ---- public ------------------------------------------------------------------------ */

int siwarp_listen(struct siwarp_ctx *ctx, const struct sockaddr *addr, socklen_t len,
                  const struct siwarp_conn_param *param, struct siwarp_listener **out)
{
    struct siwarp_listener *l;
    int fd, one = 1, rc;

    if (!ctx || !addr || !out)
        return -EINVAL;
    if (ctx->hw) return swp_hw_listen(ctx, addr, len, param, out);
    if ((addr->sa_family != AF_INET && addr->sa_family != AF_INET6) ||
        (addr->sa_family == AF_INET && len < sizeof(struct sockaddr_in)) ||
        (addr->sa_family == AF_INET6 && len < sizeof(struct sockaddr_in6)))
        return -EINVAL;
    if (param && param->private_data_len > SWP_MPA_MAX_PD)
        return -EMSGSIZE;
    l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    if (param) {
        l->param = *param;
    } else {
        siwarp_conn_param_default(&l->param);
        l->param.rtr = SIWARP_RTR_WRITE | SIWARP_RTR_READ;   /* responder accepts */
    }
    swp_mpa_param_fixup(&l->param);
    if (l->param.private_data_len)
        memcpy(l->pd, l->param.private_data, l->param.private_data_len);
    l->param.private_data = l->pd;
    swp_list_init(&l->pending);
    swp_list_init(&l->ready);
    l->ctx = ctx;
    l->pl.fd = -1;

    fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        rc = -errno;
        goto err_free;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    /* Linux copies these to every socket accept() returns: set once here,
     * not on each connection (2 syscalls for every one accepted, 5 more
     * for each that becomes a QP) */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    swp_lock(ctx);
    swp_tcp_cc_apply(ctx, fd);
    memcpy(l->tcp_cc, ctx->tcp_cc, sizeof(l->tcp_cc));
    swp_unlock(ctx);
    l->llp_ms = swp_sock_set_llp_timeout(fd, l->param.llp_timeout_ms);
    if (bind(fd, addr, len) < 0 || listen(fd, SWP_LISTEN_BACKLOG) < 0) {
        rc = -errno;
        goto err_close;
    }
    swp_lock(ctx);
    rc = swp_poll_add(ctx, &l->pl, fd, EPOLLIN, listener_io);
    swp_unlock(ctx);
    if (rc < 0)
        goto err_close;
    *out = l;
    return 0;
err_close:
    close(fd);
err_free:
    free(l);
    return rc;
}

int siwarp_listener_destroy(struct siwarp_listener *l)
{
    struct siwarp_ctx *ctx;

    if (!l)
        return -EINVAL;
    if (swp_hw_owns(l)) return swp_hw_listener_destroy(l);
    ctx = l->ctx;
    swp_lock(ctx);
    while (!swp_list_empty(&l->pending)) {
        struct siwarp_conn_req *r = swp_container_of(l->pending.next, struct siwarp_conn_req, link);
        swp_list_del(&r->link);
        req_free(r);
    }
    while (!swp_list_empty(&l->ready)) {
        struct siwarp_conn_req *r = swp_container_of(l->ready.next, struct siwarp_conn_req, link);
        swp_list_del(&r->link);
        req_free(r);
    }
    swp_poll_del(ctx, &l->pl);
    close(l->pl.fd);
    swp_unlock(ctx);
    free(l);
    return 0;
}

int siwarp_listener_addr(const struct siwarp_listener *l, struct sockaddr_storage *ss)
{
    socklen_t sl = sizeof(*ss);

    if (!l || !ss)
        return -EINVAL;
    if (swp_hw_owns(l)) return swp_hw_listener_addr(l, ss);
    memset(ss, 0, sizeof(*ss));
    if (getsockname(l->pl.fd, (struct sockaddr *)ss, &sl) < 0)
        return -errno;
    return 0;
}

static struct siwarp_conn_req *listener_pop(struct siwarp_listener *l)
{
    struct siwarp_conn_req *r;

    if (swp_list_empty(&l->ready))
        return NULL;
    r = swp_container_of(l->ready.next, struct siwarp_conn_req, link);
    swp_list_del(&r->link);
    r->state = SWP_REQ_TAKEN;
    r->l = NULL;
    return r;
}

int siwarp_get_conn_request(struct siwarp_listener *l, struct siwarp_conn_req **req)
{
    int rc;

    if (!l || !req)
        return -EINVAL;
    if (swp_hw_owns(l)) return swp_hw_get_conn_request(l, req);
    swp_lock(l->ctx);
    if (swp_list_empty(&l->ready)) {
        /* the caller asks about this listener: look at its socket now,
         * not at the busy-poll fast path's next periodic pass */
        rc = swp_progress_all_locked(l->ctx);
        if (rc < 0) {
            swp_unlock(l->ctx);
            return rc;
        }
    }
    *req = listener_pop(l);
    swp_unlock(l->ctx);
    return *req ? 0 : -EAGAIN;
}

int siwarp_take_conn_request(struct siwarp_listener *l, struct siwarp_conn_req **req)
{
    if (!l || !req)
        return -EINVAL;
    if (swp_hw_owns(l)) return swp_hw_get_conn_request(l, req);
    swp_lock(l->ctx);
    *req = listener_pop(l);
    swp_unlock(l->ctx);
    return *req ? 0 : -EAGAIN;
}

struct listener_wait {
    struct siwarp_listener *l;
    struct siwarp_conn_req *req;
};

static bool listener_has_request(void *arg)
{
    struct listener_wait *w = arg;
    return (w->req = listener_pop(w->l)) != NULL;
}

int siwarp_get_conn_request_wait(struct siwarp_listener *l, int timeout_ms,
                                 struct siwarp_conn_req **req)
{
    struct listener_wait w = { l, NULL };
    int rc;

    if (!l || !req)
        return -EINVAL;
    if (swp_hw_owns(l)) return swp_hw_get_conn_request_wait(l, timeout_ms, req);
    swp_lock(l->ctx);
    rc = swp_progress_until(l->ctx, timeout_ms, listener_has_request, &w);
    *req = w.req;
    swp_unlock(l->ctx);
    return rc;
}

int siwarp_conn_req_param(const struct siwarp_conn_req *r, struct siwarp_conn_param *p,
                          struct sockaddr_storage *peer)
{
    if (!r)
        return -EINVAL;
    if (swp_hw_owns(r)) return swp_hw_conn_req_param(r, p, peer);
    if (p) {
        memset(p, 0, sizeof(*p));
        p->mpa_rev = r->info.rev;
        p->crc = r->info.crc;
        p->markers = r->info.markers;
        p->p2p = r->info.p2p;
        p->rtr = r->info.rtr;                   /* offered */
        p->ird = r->info.ird;
        p->ord = r->info.ord;
        p->big_fpdu = swp_mpa_big_limit(r->info.big_class);
        p->rfc7306 = r->info.rfc7306;           /* offered */
        p->timeout_ms = r->lparam.timeout_ms;
        p->private_data = r->info.pd;           /* valid until req is consumed */
        p->private_data_len = r->info.pd_len;
    }
    if (peer) {
        memset(peer, 0, sizeof(*peer));
        memcpy(peer, &r->peer, r->peer_len);
    }
    return 0;
}

int siwarp_accept(struct siwarp_conn_req *r, struct siwarp_qp *qp,
                  const struct siwarp_conn_param *param)
{
    struct siwarp_conn_param ours;
    uint8_t rep[SWP_MPA_RR_MAX_LEN];
    struct siwarp_ctx *ctx;
    bool send_reject;
    const char *why;
    int rc, n = 0, fd;

    if (qp && (qp->ctx->hw || swp_hw_owns(r))) return swp_hw_accept(r, qp, param);
    if (!r || !qp || qp->ctx != r->ctx || r->state != SWP_REQ_TAKEN)
        return -EINVAL;
    if (param && param->private_data_len > SWP_MPA_MAX_PD)
        return -EMSGSIZE;
    ctx = r->ctx;
    swp_lock(ctx);
    if (qp->state != SIWARP_QPS_IDLE || qp->pl.fd >= 0) {
        swp_unlock(ctx);
        return -EISCONN;
    }
    ours = param ? *param : r->lparam;
    swp_mpa_param_fixup(&ours);
    fd = r->pl.fd;
    rc = swp_mpa_nego_responder(&ours, &r->info, swp_cm_mss(fd), &qp->nego,
                                &send_reject, &why);
    if (rc == 0) {
        n = swp_mpa_build_reply(rep, sizeof(rep), &qp->nego, &r->info, ours.big_fpdu,
                                ours.private_data, ours.private_data_len);
        if (n < 0) {
            rc = n;
            why = "accept private data too long for the reply";
            send_reject = true;
        }
    }
    if (rc < 0) {
        char peer[64];

        SWP_DBG("accept from %s refused: %s", req_peer(r, peer, sizeof(peer)), why);
        if (send_reject)
            req_send_reject(fd, &r->info, &ours, NULL, 0);
        memset(&qp->nego, 0, sizeof(qp->nego));
        req_free(r);
        swp_unlock(ctx);
        return rc;
    }
    r->pl.fd = -1;      /* the socket moves to the QP */
    rc = swp_cm_start_reply(qp, fd, (const struct sockaddr *)&r->peer, r->peer_len,
                            rep, (uint32_t)n, ours.timeout_ms, ours.llp_timeout_ms,
                            r->llp_ms);
    req_free(r);
    swp_unlock(ctx);
    return rc;
}

int siwarp_reject(struct siwarp_conn_req *r, const void *pd, uint16_t pd_len)
{
    struct siwarp_ctx *ctx;

    if (swp_hw_owns(r)) return swp_hw_reject(r, pd, pd_len);
    if (!r || r->state != SWP_REQ_TAKEN || (pd_len && !pd))
        return -EINVAL;
    if (pd_len > SWP_MPA_MAX_PD - (r->info.enhanced ? SWP_MPA_V2_BLOCK_LEN : 0))
        return -EMSGSIZE;
    ctx = r->ctx;
    swp_lock(ctx);
    /* RFC 5044 7.1.1: Reply with the Reject flag, then close */
    req_send_reject(r->pl.fd, &r->info, &r->lparam, pd, pd_len);
    req_free(r);
    swp_unlock(ctx);
    return 0;
}
