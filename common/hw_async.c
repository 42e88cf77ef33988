/*
 * hw_async.c - what a verbs device reports on its own: the asynchronous
 * events of its QPs, CQs, ports and of itself (ibv_get_async_event).
 *
 * Why: when the peer sends what this end must refuse -- an RDMA Write or
 * Read naming an STag this end never exposed, or beyond its bounds or
 * rights (RFC 5040 7.2: the responder answers with a Terminate), a request
 * it cannot serve -- the device takes the QP to ERROR on its own, and all
 * user space saw was its work requests flushed and, later, the connection
 * closed: a rank printed "connection closed by the peer" where the peer
 * had broken the protocol.  Kernel siw raises IB_EVENT_QP_ACCESS_ERR,
 * QP_REQ_ERR or QP_FATAL for those (siw_qp_rx.c, siw_qp_tx.c) as it sends
 * its Terminate; RNICs do the same.  The event becomes the QP's recorded
 * cause (siwarp_qp_attr error and error_str), which the BTL and uct_siwarp
 * print when a connection fails.  A cause recorded before without an
 * errno (the close) gives way to it; a more specific one stays.
 *
 * What stays invisible: a Terminate the peer sends.  siw takes it in the
 * kernel (its log says "got TERMINATE" with layer, type and code) and
 * closes; no event comes.
 *
 * The device's async fd is non-blocking and in the context's epoll set
 * (swp_hw_progress drains it when it is readable), and a poll that finds a
 * completion in error drains it too, so that the cause is on the QP by the
 * time its consumer asks why.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

#include "hw_int.h"

/* the epoll tag of the async fd (CQs are tagged with themselves, the
 * rdma_cm channel with NULL) */
static char swp_hw_async_tag_obj;
void *const swp_hw_async_tag = &swp_hw_async_tag_obj;

const char *swp_hw_async_cause(int event, int *err)
{
    /* each fits siwarp_qp_attr error_str (128 octets; test_hw_async) */
    switch (event) {
    case IBV_EVENT_QP_ACCESS_ERR:
        *err = -EACCES;
        return "the device refused the peer's access to an STag, out of its bounds or rights "
               "(IBV_EVENT_QP_ACCESS_ERR) with a Terminate";
    case IBV_EVENT_QP_REQ_ERR:
        *err = -EPROTO;
        return "the device refused a request of the peer, such as a Read of an STag it does "
               "not have (IBV_EVENT_QP_REQ_ERR)";
    case IBV_EVENT_QP_FATAL:
        *err = -EPROTO;
        return "the device ended the QP on a protocol error, such as a bad STag "
               "(IBV_EVENT_QP_FATAL); its log says more (siw: dmesg)";
    case IBV_EVENT_DEVICE_FATAL:
        *err = -ENODEV;
        return "the verbs device failed (IBV_EVENT_DEVICE_FATAL)";
    default:
        *err = 0;
        return NULL;        /* not a failure: established, drained, port state */
    }
}

int swp_hw_async_open(struct siwarp_ctx *ctx)
{
    struct ibv_context *v = swp_hwc(ctx)->verbs;
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = swp_hw_async_tag };
    int fl = fcntl(v->async_fd, F_GETFL);

    if (fl < 0 || fcntl(v->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -errno;
    return epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, v->async_fd, &ev) < 0 ? -errno : 0;
}

void swp_hw_async_close(struct siwarp_ctx *ctx)
{
    epoll_ctl(ctx->epfd, EPOLL_CTL_DEL, swp_hwc(ctx)->verbs->async_fd, NULL);
}

/* Record the event's cause on qp: fail it, or, if it failed already with
 * no errno (the close), name the cause instead. */
static void swp_hw_async_qp(struct siwarp_qp *qp, int err, const char *why)
{
    if (qp->state != SIWARP_QPS_ERROR) {
        swp_hw_qp_fail(qp, err, "%s", why);
    } else if (!qp->error) {
        qp->error = err;
        snprintf(qp->error_str, sizeof(qp->error_str), "%s", why);
    }
}

/* The QP of an event's verbs QP (NULL: destroyed, or not ours) */
static struct siwarp_qp *swp_hw_async_qp_of(struct siwarp_ctx *ctx, const struct ibv_qp *ibqp)
{
    return ibqp ? swp_qpn_map_get(&swp_hwc(ctx)->qpns, ibqp->qp_num) : NULL;
}

int swp_hw_async_progress(struct siwarp_ctx *ctx)
{
    struct swp_hw_ctx *h = swp_hwc(ctx);
    struct ibv_async_event e;
    int n = 0;

    while (ibv_get_async_event(h->verbs, &e) == 0) {
        int err;
        const char *why = swp_hw_async_cause(e.event_type, &err);
        struct siwarp_qp *qp;

        n++;
        switch (e.event_type) {
        case IBV_EVENT_QP_ACCESS_ERR:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_FATAL:
            qp = swp_hw_async_qp_of(ctx, e.element.qp);
            SWP_DBG("verbs device %s: %s on QP %u%s", h->name, ibv_event_type_str(e.event_type),
                    e.element.qp ? e.element.qp->qp_num : 0, qp ? "" : " (not ours any more)");
            if (qp)
                swp_hw_async_qp(qp, err, why);
            break;
        case IBV_EVENT_DEVICE_FATAL:
            swp_log("verbs device %s: %s", h->name, why);
            for (struct swp_list *l = ctx->qps.next; l != &ctx->qps; l = l->next)
                swp_hw_async_qp(swp_container_of(l, struct siwarp_qp, link), err, why);
            break;
        case IBV_EVENT_CQ_ERR:
            /* a CQ overrun: completions are lost, so its QPs cannot be
             * trusted; siwarp sizes CQs for every WR it lets be posted */
            swp_log("verbs device %s: %s (a completion queue overran)", h->name,
                    ibv_event_type_str(e.event_type));
            break;
        default:
            SWP_DBG("verbs device %s: %s", h->name, ibv_event_type_str(e.event_type));
            break;
        }
        ibv_ack_async_event(&e);
    }
    return n;
}
