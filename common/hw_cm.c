/*
 * hw_cm.c - connection management of the verbs backend over librdmacm:
 * connect (address and route resolution, then rdma_connect with the MPA
 * private data), listen, connection requests, accept / reject, and the
 * event channel, polled by siwarp_progress / siwarp_wait through the
 * context's epoll fd (siwarp_ctx_fd) and handled with the context locked.
 *
 * On iWARP rdma_cm adds no header to the private data (unlike IB's CM):
 * what the application passes is what the MPA Request / Reply carries after
 * the RNIC's MPA v2 IRD/ORD block.  MPA revision, CRC, markers and the
 * peer-to-peer RTR are the RNIC's choice (kernel siw: module parameters)
 * and are not visible here.
 *
 * Listeners and requests are structs of this file handed out as
 * struct siwarp_listener / siwarp_conn_req; a registry tells the public
 * entry points (cm_listen.c) whether a pointer is one of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "hw_int.h"

#define SWP_HW_BACKLOG 128

struct swp_hw_obj {
    int kind;                           /* SWP_HW_LISTENER / SWP_HW_REQ; first */
    struct swp_list reg;                /* the registry */
};

struct swp_hw_listener {
    struct swp_hw_obj o;
    struct siwarp_ctx *ctx;
    struct rdma_cm_id *id;
    struct siwarp_conn_param param;     /* accept's defaults */
    uint8_t pd[SWP_HW_MAX_PD];
    struct swp_list ready;              /* requests not yet taken */
};

struct swp_hw_req {
    struct swp_hw_obj o;
    struct siwarp_ctx *ctx;
    struct swp_hw_listener *l;          /* NULL once taken */
    struct swp_list link;               /* l->ready */
    struct rdma_cm_id *id;
    struct siwarp_conn_param lparam;
    uint8_t lpd[SWP_HW_MAX_PD];
    uint8_t pd[SWP_HW_MAX_PD];
    uint16_t pd_len;
    uint16_t ird, ord;                  /* the initiator's */
    struct sockaddr_storage peer;
    bool dead;                          /* the initiator went away */
};

/* ---- registry ------------------------------------------------------------------ */

static pthread_mutex_t swp_hw_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct swp_list swp_hw_reg = { &swp_hw_reg, &swp_hw_reg };
static int swp_hw_nreg;

static void swp_hw_register(struct swp_hw_obj *o, int kind)
{
    o->kind = kind;
    pthread_mutex_lock(&swp_hw_reg_lock);
    swp_list_add_tail(&swp_hw_reg, &o->reg);
    __atomic_add_fetch(&swp_hw_nreg, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&swp_hw_reg_lock);
}

static void swp_hw_unregister(struct swp_hw_obj *o)
{
    pthread_mutex_lock(&swp_hw_reg_lock);
    swp_list_del(&o->reg);
    __atomic_sub_fetch(&swp_hw_nreg, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&swp_hw_reg_lock);
}

bool swp_hw_owns(const void *p)
{
    bool found = false;

    if (!p || __atomic_load_n(&swp_hw_nreg, __ATOMIC_ACQUIRE) == 0)
        return false;
    pthread_mutex_lock(&swp_hw_reg_lock);
    for (struct swp_list *l = swp_hw_reg.next; l != &swp_hw_reg && !found; l = l->next)
        found = (const void *)swp_container_of(l, struct swp_hw_obj, reg) == p;
    pthread_mutex_unlock(&swp_hw_reg_lock);
    return found;
}

static void swp_hw_req_free(struct swp_hw_req *r, bool reject)
{
    if (r->l)
        swp_list_del(&r->link);
    if (r->id) {
        if (reject && !r->dead)
            rdma_reject(r->id, NULL, 0);
        rdma_destroy_id(r->id);
    }
    swp_hw_unregister(&r->o);
    free(r);
}

static void swp_hw_param_fix(struct siwarp_conn_param *p, const struct siwarp_conn_param *in,
                             uint8_t *pd_store)
{
    if (in)
        *p = *in;
    else
        siwarp_conn_param_default(p);
    if (p->private_data_len)
        memcpy(pd_store, p->private_data, p->private_data_len);
    p->private_data = pd_store;
    if (p->timeout_ms <= 0)
        p->timeout_ms = 10000;
}

static uint8_t swp_hw_depth(uint32_t want, int dev_max)
{
    uint32_t m = dev_max > 0 ? (uint32_t)dev_max : 1;
    if (want > m)
        want = m;
    return (uint8_t)(want > 255 ? 255 : want);
}

/* ---- events ------------------------------------------------------------------------ */

static void swp_hw_qp_event(struct siwarp_qp *qp, struct rdma_cm_event *e)
{
    struct swp_hw_qp *q = qp->hw;
    struct swp_hw_ctx *h = swp_hwc(qp->ctx);
    int rc;

    switch (e->event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (e->id->verbs != h->verbs) {
            swp_hw_qp_fail(qp, -ENODEV, "connect: the route leaves through %s, not %s",
                           e->id->verbs ? ibv_get_device_name(e->id->verbs->device) : "no RDMA device",
                           h->name);
            break;
        }
        if (rdma_resolve_route(q->id, SWP_HW_RESOLVE_MS))
            swp_hw_qp_fail(qp, -errno, "connect: rdma_resolve_route: %s", strerror(errno));
        break;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: {
        struct rdma_conn_param cp;

        if (swp_hw_qp_realize(qp, q->id) < 0)
            break;
        memset(&cp, 0, sizeof(cp));
        cp.private_data = q->param.private_data_len ? q->pd : NULL;
        cp.private_data_len = (uint8_t)q->param.private_data_len;
        cp.responder_resources = swp_hw_depth(q->param.ird, h->attr.max_qp_rd_atom);
        cp.initiator_depth = swp_hw_depth(q->param.ord, h->attr.max_qp_init_rd_atom);
        cp.retry_count = 7;
        cp.rnr_retry_count = 7;
        qp->nego.ird = cp.responder_resources;
        qp->nego.ord = cp.initiator_depth;
        if (rdma_connect(q->id, &cp)) {
            rc = errno ? -errno : -ECONNREFUSED;
            swp_hw_qp_fail(qp, rc, "connect: rdma_connect: %s", strerror(-rc));
        }
        break;
    }
    case RDMA_CM_EVENT_ESTABLISHED:
        SWP_DBG("qp %p: %s established on %s", (void *)qp, q->how, h->name);
        swp_hw_qp_established(qp, &e->param.conn);
        break;
    case RDMA_CM_EVENT_REJECTED:
        if (e->param.conn.private_data_len) {
            uint16_t n = e->param.conn.private_data_len;
            if (n > sizeof(qp->nego.peer_pd))
                n = sizeof(qp->nego.peer_pd);
            memcpy(qp->nego.peer_pd, e->param.conn.private_data, n);
            qp->nego.peer_pd_len = n;
        }
        /* iw_cm: a refused TCP connect is -ECONNREFUSED, an MPA Reject
         * (siw) -ECONNRESET */
        if (e->status == -ECONNREFUSED && !e->param.conn.private_data_len)
            swp_hw_qp_fail(qp, -ECONNREFUSED, "connection refused (%s)", h->name);
        else
            swp_hw_qp_fail(qp, -ECONNABORTED, "MPA Reject from the peer (%s, status %d)",
                           h->name, e->status);
        break;
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
        swp_hw_qp_fail(qp, -EHOSTUNREACH, "connect: %s (status %d)", rdma_event_str(e->event),
                       e->status);
        break;
    case RDMA_CM_EVENT_UNREACHABLE:
        swp_hw_qp_fail(qp, e->status == -ETIMEDOUT || !e->status ? -ETIMEDOUT : e->status,
                       "%s: peer unreachable (status %d)", q->how, e->status);
        break;
    case RDMA_CM_EVENT_CONNECT_ERROR:
        swp_hw_qp_fail(qp, e->status < 0 ? e->status : -EPROTO, "%s: connection error (status %d)",
                       q->how, e->status);
        break;
    case RDMA_CM_EVENT_DISCONNECTED:
        if (!q->disconnected) {
            q->disconnected = true;
            rdma_disconnect(q->id);
        }
        /* rdma_cm cannot tell the peer's orderly close from an abort: as
         * on the software backend (swp_qp_llp_closed), the close itself is
         * no error; work it cut off completes flushed, which the consumer
         * sees (the BTL fails a peer only with work in flight) */
        if (qp->state == SIWARP_QPS_CLOSING)
            swp_hw_qp_fail(qp, 0, "disconnected");
        else
            swp_hw_qp_fail(qp, 0, "connection closed by the peer");
        break;
    case RDMA_CM_EVENT_DEVICE_REMOVAL:
        swp_hw_qp_fail(qp, -ENODEV, "verbs device %s removed", h->name);
        break;
    default:
        SWP_DBG("qp %p: rdma_cm event %s ignored", (void *)qp, rdma_event_str(e->event));
        break;
    }
}

static void swp_hw_conn_request(struct swp_hw_listener *l, struct rdma_cm_event *e)
{
    struct swp_hw_ctx *h = swp_hwc(l->ctx);
    struct swp_hw_req *r;
    uint16_t n = e->param.conn.private_data_len;

    if (e->id->verbs != h->verbs || !(r = calloc(1, sizeof(*r)))) {
        SWP_DBG("connection request on %s refused (listener on %s)",
                e->id->verbs ? ibv_get_device_name(e->id->verbs->device) : "?", h->name);
        rdma_reject(e->id, NULL, 0);
        rdma_destroy_id(e->id);
        return;
    }
    r->ctx = l->ctx;
    r->l = l;
    r->id = e->id;
    r->id->context = r;
    if (n > sizeof(r->pd))
        n = sizeof(r->pd);
    if (n && e->param.conn.private_data)
        memcpy(r->pd, e->param.conn.private_data, n);
    r->pd_len = n;
    r->ird = e->param.conn.responder_resources;
    r->ord = e->param.conn.initiator_depth;
    memcpy(&r->peer, rdma_get_peer_addr(e->id), sizeof(struct sockaddr_in6));
    r->lparam = l->param;
    memcpy(r->lpd, l->pd, sizeof(r->lpd));
    r->lparam.private_data = r->lpd;
    swp_hw_register(&r->o, SWP_HW_REQ);
    swp_list_add_tail(&l->ready, &r->link);
}

int swp_hw_cm_progress(struct siwarp_ctx *ctx)
{
    struct swp_hw_ctx *h = swp_hwc(ctx);
    struct rdma_cm_event *ev, e;
    uint8_t pd[SWP_HW_MAX_PD];
    int n = 0;

    while (rdma_get_cm_event(h->ech, &ev) == 0) {
        void *c;

        /* copy, ack, then act: rdma_destroy_id waits for acks */
        e = *ev;
        if (e.param.conn.private_data && e.param.conn.private_data_len) {
            memcpy(pd, e.param.conn.private_data, e.param.conn.private_data_len);
            e.param.conn.private_data = pd;
        }
        rdma_ack_cm_event(ev);
        n++;
        c = e.event == RDMA_CM_EVENT_CONNECT_REQUEST ? e.listen_id->context : e.id->context;
        if (!c)
            continue;
        switch (*(int *)c) {
        case SWP_HW_QP:
            swp_hw_qp_event(((struct swp_hw_qp *)c)->qp, &e);
            break;
        case SWP_HW_LISTENER:
            if (e.event == RDMA_CM_EVENT_CONNECT_REQUEST)
                swp_hw_conn_request(c, &e);
            break;
        case SWP_HW_REQ: {
            struct swp_hw_req *r = c;
            /* the initiator gave up before accept / reject */
            if (e.event == RDMA_CM_EVENT_DISCONNECTED || e.event == RDMA_CM_EVENT_CONNECT_ERROR) {
                r->dead = true;
                if (r->l)
                    swp_hw_req_free(r, false);
            }
            break;
        }
        }
    }
    return n;
}

/* ---- active side ---------------------------------------------------------------------- */

int swp_hw_connect(struct siwarp_qp *qp, const struct sockaddr *addr, socklen_t len,
                   const struct siwarp_conn_param *param)
{
    struct swp_hw_qp *q = qp->hw;
    int rc;

    if ((addr->sa_family != AF_INET && addr->sa_family != AF_INET6) ||
        len > sizeof(qp->cm.peer))
        return -EINVAL;
    if (param && param->private_data_len > SWP_HW_MAX_PD)
        return -EMSGSIZE;
    swp_lock(qp->ctx);
    if (qp->state != SIWARP_QPS_IDLE || q->id) {
        swp_unlock(qp->ctx);
        return -EISCONN;
    }
    swp_hw_param_fix(&q->param, param, q->pd);
    q->how = "connect";
    memset(&qp->cm.peer, 0, sizeof(qp->cm.peer));
    memcpy(&qp->cm.peer, addr, len);
    if (rdma_create_id(swp_hwc(qp->ctx)->ech, &q->id, q, RDMA_PS_TCP)) {
        rc = -errno;
        q->id = NULL;
        goto out;
    }
    if (rdma_resolve_addr(q->id, NULL, (struct sockaddr *)addr, SWP_HW_RESOLVE_MS)) {
        rc = -errno;
        rdma_destroy_id(q->id);
        q->id = NULL;
        goto out;
    }
    rc = swp_qp_set_state(qp, SIWARP_QPS_CONNECTING);
out:
    swp_unlock(qp->ctx);
    return rc;
}

int swp_hw_connect_wait(struct siwarp_qp *qp, int timeout_ms)
{
    uint64_t deadline = swp_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
    int rc = 0;

    for (;;) {
        int left = -1;

        swp_lock(qp->ctx);
        swp_hw_cm_progress(qp->ctx);
        if (qp->state != SIWARP_QPS_CONNECTING) {
            if (qp->state != SIWARP_QPS_RTS)
                rc = qp->error ? qp->error :
                     (qp->state == SIWARP_QPS_IDLE ? -ENOTCONN : -ECONNABORTED);
            swp_unlock(qp->ctx);
            return rc;
        }
        swp_unlock(qp->ctx);
        if (timeout_ms >= 0) {
            uint64_t now = swp_now_ns();
            if (now >= deadline)
                return -ETIMEDOUT;
            left = (int)((deadline - now) / 1000000ull) + 1;
        }
        if ((rc = swp_hw_wait_fd(qp->ctx, -1, left)) < 0)
            return rc;
        rc = 0;
    }
}

/* ---- passive side ---------------------------------------------------------------------- */

int swp_hw_listen(struct siwarp_ctx *ctx, const struct sockaddr *addr, socklen_t len,
                  const struct siwarp_conn_param *param, struct siwarp_listener **out)
{
    struct swp_hw_listener *l;
    int rc;

    if (!addr || !out || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) ||
        (addr->sa_family == AF_INET && len < sizeof(struct sockaddr_in)) ||
        (addr->sa_family == AF_INET6 && len < sizeof(struct sockaddr_in6)))
        return -EINVAL;
    if (param && param->private_data_len > SWP_HW_MAX_PD)
        return -EMSGSIZE;
    l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    l->o.kind = SWP_HW_LISTENER;
    l->ctx = ctx;
    swp_list_init(&l->ready);
    swp_hw_param_fix(&l->param, param, l->pd);
    swp_lock(ctx);
    if (rdma_create_id(swp_hwc(ctx)->ech, &l->id, l, RDMA_PS_TCP)) {
        rc = -errno;
        goto err;
    }
    if (rdma_bind_addr(l->id, (struct sockaddr *)addr) || rdma_listen(l->id, SWP_HW_BACKLOG)) {
        rc = -errno;
        rdma_destroy_id(l->id);
        goto err;
    }
    if (l->id->verbs && l->id->verbs != swp_hwc(ctx)->verbs) {
        SWP_DBG("listen: the address belongs to %s, not %s",
                ibv_get_device_name(l->id->verbs->device), swp_hwc(ctx)->name);
        rdma_destroy_id(l->id);
        rc = -EADDRNOTAVAIL;
        goto err;
    }
    swp_unlock(ctx);
    swp_hw_register(&l->o, SWP_HW_LISTENER);
    *out = (struct siwarp_listener *)l;
    return 0;
err:
    swp_unlock(ctx);
    free(l);
    return rc;
}

int swp_hw_listener_destroy(struct siwarp_listener *sl)
{
    struct swp_hw_listener *l = (struct swp_hw_listener *)sl;
    struct siwarp_ctx *ctx = l->ctx;

    swp_lock(ctx);
    swp_hw_unregister(&l->o);
    while (!swp_list_empty(&l->ready))
        swp_hw_req_free(swp_container_of(l->ready.next, struct swp_hw_req, link), true);
    rdma_destroy_id(l->id);
    swp_unlock(ctx);
    free(l);
    return 0;
}

int swp_hw_listener_addr(const struct siwarp_listener *sl, struct sockaddr_storage *ss)
{
    const struct swp_hw_listener *l = (const struct swp_hw_listener *)sl;
    struct sockaddr *a;

    if (!ss)
        return -EINVAL;
    memset(ss, 0, sizeof(*ss));
    a = rdma_get_local_addr(l->id);
    memcpy(ss, a, a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                          : sizeof(struct sockaddr_in));
    return 0;
}

static struct swp_hw_req *swp_hw_pop(struct swp_hw_listener *l)
{
    struct swp_hw_req *r;

    if (swp_list_empty(&l->ready))
        return NULL;
    r = swp_container_of(l->ready.next, struct swp_hw_req, link);
    swp_list_del(&r->link);
    r->l = NULL;
    return r;
}

int swp_hw_get_conn_request(struct siwarp_listener *sl, struct siwarp_conn_req **req)
{
    struct swp_hw_listener *l = (struct swp_hw_listener *)sl;
    struct swp_hw_req *r;

    if (!req)
        return -EINVAL;
    swp_lock(l->ctx);
    if (swp_list_empty(&l->ready))
        swp_hw_cm_progress(l->ctx);
    r = swp_hw_pop(l);
    swp_unlock(l->ctx);
    *req = (struct siwarp_conn_req *)r;
    return r ? 0 : -EAGAIN;
}

int swp_hw_get_conn_request_wait(struct siwarp_listener *sl, int timeout_ms,
                                 struct siwarp_conn_req **req)
{
    struct swp_hw_listener *l = (struct swp_hw_listener *)sl;
    uint64_t deadline = swp_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000ull;
    int rc;

    if (!req)
        return -EINVAL;
    for (;;) {
        int left = -1;

        if ((rc = swp_hw_get_conn_request(sl, req)) != -EAGAIN)
            return rc;
        if (timeout_ms >= 0) {
            uint64_t now = swp_now_ns();
            if (now >= deadline)
                return -ETIMEDOUT;
            left = (int)((deadline - now) / 1000000ull) + 1;
        }
        if ((rc = swp_hw_wait_fd(l->ctx, -1, left)) < 0)
            return rc;
    }
}

int swp_hw_conn_req_param(const struct siwarp_conn_req *sr, struct siwarp_conn_param *p,
                          struct sockaddr_storage *peer)
{
    const struct swp_hw_req *r = (const struct swp_hw_req *)sr;

    if (p) {
        /* revision, CRC, markers, P2P: the RNIC's business, not reported */
        memset(p, 0, sizeof(*p));
        p->ird = r->ird;
        p->ord = r->ord;
        p->timeout_ms = r->lparam.timeout_ms;
        p->private_data = r->pd_len ? r->pd : NULL;
        p->private_data_len = r->pd_len;
    }
    if (peer)
        memcpy(peer, &r->peer, sizeof(*peer));
    return 0;
}

int swp_hw_accept(struct siwarp_conn_req *sr, struct siwarp_qp *qp,
                  const struct siwarp_conn_param *param)
{
    struct swp_hw_req *r = (struct swp_hw_req *)sr;
    struct swp_hw_qp *q = qp->hw;
    struct swp_hw_ctx *h = swp_hwc(qp->ctx);
    struct siwarp_conn_param ours;
    struct rdma_conn_param cp;
    uint8_t pd[SWP_HW_MAX_PD];
    int rc;

    if (!swp_hw_owns(r) || r->ctx != qp->ctx || r->l)
        return -EINVAL;
    if (param && param->private_data_len > SWP_HW_MAX_PD)
        return -EMSGSIZE;
    swp_lock(qp->ctx);
    if (qp->state != SIWARP_QPS_IDLE || q->id) {
        swp_unlock(qp->ctx);
        return -EISCONN;
    }
    if (r->dead) {
        swp_hw_req_free(r, false);
        swp_unlock(qp->ctx);
        return -ECONNABORTED;
    }
    swp_hw_param_fix(&ours, param ? param : &r->lparam, pd);
    q->how = "accept";
    q->id = r->id;
    r->id = NULL;
    q->id->context = q;
    memcpy(&qp->cm.peer, &r->peer, sizeof(qp->cm.peer));
    memcpy(qp->nego.peer_pd, r->pd, r->pd_len);
    qp->nego.peer_pd_len = r->pd_len;
    swp_qp_set_state(qp, SIWARP_QPS_CONNECTING);
    rc = swp_hw_qp_realize(qp, q->id);
    if (rc == 0) {
        memset(&cp, 0, sizeof(cp));
        cp.private_data = ours.private_data_len ? pd : NULL;
        cp.private_data_len = (uint8_t)ours.private_data_len;
        cp.responder_resources = swp_hw_depth(ours.ird, h->attr.max_qp_rd_atom);
        cp.initiator_depth = swp_hw_depth(ours.ord < r->ird ? ours.ord : r->ird,
                                          h->attr.max_qp_init_rd_atom);
        cp.retry_count = 7;
        cp.rnr_retry_count = 7;
        qp->nego.ird = cp.responder_resources;
        qp->nego.ord = cp.initiator_depth;
        if (rdma_accept(q->id, &cp)) {
            rc = errno ? -errno : -ECONNABORTED;
            swp_hw_qp_fail(qp, rc, "accept: rdma_accept: %s", strerror(-rc));
        }
    }
    swp_hw_req_free(r, false);
    swp_unlock(qp->ctx);
    return rc;
}

int swp_hw_reject(struct siwarp_conn_req *sr, const void *pd, uint16_t pd_len)
{
    struct swp_hw_req *r = (struct swp_hw_req *)sr;
    struct siwarp_ctx *ctx = r->ctx;

    if (r->l || (pd_len && !pd))
        return -EINVAL;
    if (pd_len > SWP_HW_MAX_PD)
        return -EMSGSIZE;
    swp_lock(ctx);
    if (!r->dead)
        rdma_reject(r->id, pd, (uint8_t)pd_len);
    r->dead = true;
    swp_hw_req_free(r, false);
    swp_unlock(ctx);
    return 0;
}
