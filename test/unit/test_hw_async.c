/*
 * test_hw_async.c - a verbs device's asynchronous events become the cause
 * a QP reports (hw_async.c).
 *
 * A fake device (hw_rig.h) stands in for rdma-core: its libibverbs
 * functions are the backend's dlopen'ed pointers (hw_dl.h swp_rc), so
 * this file sets ibv_get_async_event to hand out scripted events and
 * ibv_modify_qp to record what the backend asks of the QP.  What must
 * hold: a QP the device failed for an access error, a refused request or
 * a fatal error goes to ERROR with that cause named (not "connection
 * closed"); a cause given by the close alone (no errno) gives way to the
 * device's, a specific one stays; events of QPs no longer known, and
 * events that are not failures, are acknowledged and change nothing;
 * every event is acknowledged; the device's own failure fails every QP;
 * and a poll that meets a failed completion has the cause on the QP
 * before it returns.
 */
#include <errno.h>
#include <string.h>

#include "config.h"     /* HAVE_VERBS */
#include "harness.h"

#ifdef HAVE_VERBS
#include "hw_rig.h"
/* the members of swp_rc, not hw_dl.h's redirections to them */
#undef ibv_get_async_event
#undef ibv_ack_async_event
#undef ibv_event_type_str
#undef ibv_modify_qp

static struct {
    struct ibv_async_event ev[8];
    int n, next, acks, modify_err;
} dev;

static int fake_get_async_event(struct ibv_context *c, struct ibv_async_event *e)
{
    (void)c;
    if (dev.next == dev.n) {
        errno = EAGAIN;
        return -1;
    }
    *e = dev.ev[dev.next++];
    return 0;
}

static void fake_ack_async_event(struct ibv_async_event *e)
{
    (void)e;
    dev.acks++;
}

static const char *fake_event_type_str(enum ibv_event_type t)
{
    (void)t;
    return "an event";
}

static int fake_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *at, int mask)
{
    (void)qp;
    if ((mask & IBV_QP_STATE) && at->qp_state == IBV_QPS_ERR)
        dev.modify_err++;
    return 0;
}

static void qp_event(struct rig *r, enum ibv_event_type t)
{
    dev.ev[dev.n].event_type = t;
    dev.ev[dev.n].element.qp = &r->ibqp;
    dev.n++;
}

static void rig_up(struct rig *r, uint32_t qpn)
{
    hw_rig_init(r);
    memset(&dev, 0, sizeof(dev));
    swp_rc.ibv_get_async_event = fake_get_async_event;
    swp_rc.ibv_ack_async_event = fake_ack_async_event;
    swp_rc.ibv_event_type_str = fake_event_type_str;
    swp_rc.ibv_modify_qp = fake_modify_qp;
    r->ibqp.qp_num = qpn;
    ASSERT_OK(swp_qpn_map_put(&r->h.qpns, qpn, &r->qp));
    swp_list_add_tail(&r->ctx.qps, &r->qp.link);
}

static void rig_down(struct rig *r)
{
    swp_qpn_map_free(&r->h.qpns);
}

TEST(access_error_is_the_cause)
{
    struct rig r;

    rig_up(&r, 17);
    qp_event(&r, IBV_EVENT_QP_ACCESS_ERR);
    ASSERT_EQ(swp_hw_async_progress(&r.ctx), 1);
    ASSERT_EQ(r.qp.state, SIWARP_QPS_ERROR);
    ASSERT_EQ(r.qp.error, -EACCES);
    ASSERT(strstr(r.qp.error_str, "IBV_EVENT_QP_ACCESS_ERR"));
    ASSERT(strstr(r.qp.error_str, "STag"));
    ASSERT_EQ(dev.modify_err, 1);      /* the device flushes what is posted */
    ASSERT_EQ(dev.acks, 1);
    ASSERT_EQ(swp_hw_async_progress(&r.ctx), 0);
    rig_down(&r);
}

TEST(request_and_fatal_errors_are_causes)
{
    static const struct { enum ibv_event_type t; const char *name; } c[] = {
        { IBV_EVENT_QP_REQ_ERR, "IBV_EVENT_QP_REQ_ERR" },
        { IBV_EVENT_QP_FATAL, "IBV_EVENT_QP_FATAL" },
    };
    for (unsigned i = 0; i < 2; i++) {
        struct rig r;
        rig_up(&r, 5);
        qp_event(&r, c[i].t);
        ASSERT_EQ(swp_hw_async_progress(&r.ctx), 1);
        ASSERT_EQ(r.qp.state, SIWARP_QPS_ERROR);
        ASSERT_EQ(r.qp.error, -EPROTO);
        ASSERT(strstr(r.qp.error_str, c[i].name));
        rig_down(&r);
    }
}

/* The close came first ("connection closed by the peer", no errno): the
 * device's event names the cause instead.  A cause with an errno stays. */
TEST(the_event_replaces_a_bare_close_only)
{
    struct rig r;

    rig_up(&r, 9);
    swp_hw_qp_fail(&r.qp, 0, "connection closed by the peer");
    qp_event(&r, IBV_EVENT_QP_FATAL);
    swp_hw_async_progress(&r.ctx);
    ASSERT_EQ(r.qp.error, -EPROTO);
    ASSERT(strstr(r.qp.error_str, "IBV_EVENT_QP_FATAL"));
    rig_down(&r);

    rig_up(&r, 9);
    swp_hw_qp_fail(&r.qp, -ECANCELED, "moved to error by the application");
    qp_event(&r, IBV_EVENT_QP_ACCESS_ERR);
    swp_hw_async_progress(&r.ctx);
    ASSERT_EQ(r.qp.error, -ECANCELED);
    ASSERT(!strcmp(r.qp.error_str, "moved to error by the application"));
    ASSERT_EQ(dev.acks, 1);
    rig_down(&r);
}

/* A destroyed QP's number is no longer in the map; events that are not
 * failures leave the QP alone; each is acknowledged all the same. */
TEST(other_events_change_nothing)
{
    struct rig r;
    struct ibv_qp gone = { .qp_num = 4242 };

    rig_up(&r, 3);
    dev.ev[dev.n].event_type = IBV_EVENT_QP_FATAL;
    dev.ev[dev.n++].element.qp = &gone;
    qp_event(&r, IBV_EVENT_COMM_EST);
    qp_event(&r, IBV_EVENT_SQ_DRAINED);
    dev.ev[dev.n++].event_type = IBV_EVENT_PORT_ACTIVE;
    dev.ev[dev.n++].event_type = IBV_EVENT_PORT_ERR;
    ASSERT_EQ(swp_hw_async_progress(&r.ctx), 5);
    ASSERT_EQ(dev.acks, 5);
    ASSERT_EQ(r.qp.state, SIWARP_QPS_RTS);
    ASSERT_EQ(r.qp.error, 0);
    ASSERT_EQ(dev.modify_err, 0);
    rig_down(&r);
}

TEST(device_fatal_fails_every_qp)
{
    struct rig r, r2;

    rig_up(&r, 1);
    hw_rig_init(&r2);                  /* a second QP, on the same context */
    r2.qp.ctx = &r.ctx;
    swp_list_add_tail(&r.ctx.qps, &r2.qp.link);
    dev.ev[dev.n++].event_type = IBV_EVENT_DEVICE_FATAL;
    ASSERT_EQ(swp_hw_async_progress(&r.ctx), 1);
    ASSERT_EQ(r.qp.state, SIWARP_QPS_ERROR);
    ASSERT_EQ(r2.qp.state, SIWARP_QPS_ERROR);
    ASSERT_EQ(r.qp.error, -ENODEV);
    ASSERT_EQ(r2.qp.error, -ENODEV);
    ASSERT(strstr(r2.qp.error_str, "IBV_EVENT_DEVICE_FATAL"));
    rig_down(&r);
}

/* A poll that meets a failed completion drains the device's events
 * first: the cause is on the QP when the consumer asks. */
static struct ibv_wc scripted_wc;

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
    (void)cq;
    if (n < 1 || scripted_wc.qp_num == 0)
        return 0;
    wc[0] = scripted_wc;
    scripted_wc.qp_num = 0;
    return 1;
}

TEST(a_failed_completion_brings_the_cause_with_it)
{
    struct rig r;
    struct ibv_cq icq;
    struct swp_hw_cq hc;
    struct siwarp_cq cq;
    struct siwarp_wc wc;
    struct siwarp_qp_attr at;

    rig_up(&r, 21);
    memset(&icq, 0, sizeof(icq));
    memset(&hc, 0, sizeof(hc));
    memset(&cq, 0, sizeof(cq));
    icq.context = &r.ibctx;
    r.ibctx.ops.poll_cq = fake_poll_cq;
    hc.cq = &icq;
    cq.ctx = &r.ctx;
    cq.hw = &hc;
    scripted_wc.qp_num = 21;
    scripted_wc.wr_id = 0x77;
    scripted_wc.status = IBV_WC_WR_FLUSH_ERR;
    scripted_wc.opcode = IBV_WC_RDMA_WRITE;
    qp_event(&r, IBV_EVENT_QP_ACCESS_ERR);
    ASSERT_EQ(swp_hw_poll_cq(&cq, 1, &wc), 1);
    ASSERT_EQ(wc.status, SIWARP_WC_WR_FLUSH_ERR);
    ASSERT_EQ(dev.acks, 1);
    ASSERT_OK(siwarp_query_qp(&r.qp, &at));
    ASSERT_EQ(at.state, SIWARP_QPS_ERROR);
    ASSERT_EQ(at.error, -EACCES);
    ASSERT(strstr(at.error_str, "IBV_EVENT_QP_ACCESS_ERR"));
    rig_down(&r);
}

TEST(which_events_are_failures)
{
    int err;

    ASSERT(swp_hw_async_cause(IBV_EVENT_QP_ACCESS_ERR, &err) && err == -EACCES);
    ASSERT(swp_hw_async_cause(IBV_EVENT_QP_REQ_ERR, &err) && err == -EPROTO);
    ASSERT(swp_hw_async_cause(IBV_EVENT_QP_FATAL, &err) && err == -EPROTO);
    ASSERT(swp_hw_async_cause(IBV_EVENT_DEVICE_FATAL, &err) && err == -ENODEV);
    ASSERT(!swp_hw_async_cause(IBV_EVENT_COMM_EST, &err) && err == 0);
    ASSERT(!swp_hw_async_cause(IBV_EVENT_SQ_DRAINED, &err));
    ASSERT(!swp_hw_async_cause(IBV_EVENT_PORT_ERR, &err));
    ASSERT(!swp_hw_async_cause(IBV_EVENT_CQ_ERR, &err));
    /* whole in a QP's error_str */
    static const int fail_events[] = { IBV_EVENT_QP_ACCESS_ERR, IBV_EVENT_QP_REQ_ERR,
                                       IBV_EVENT_QP_FATAL, IBV_EVENT_DEVICE_FATAL };
    for (unsigned i = 0; i < 4; i++)
        ASSERT(strlen(swp_hw_async_cause(fail_events[i], &err)) <
               sizeof(((struct siwarp_qp_attr *)0)->error_str));
}

#else
TEST(verbs_backend_async_events)
{
    SKIP("libsiwarp built without rdma-core: no verbs backend");
}
#endif

SWP_TEST_MAIN()
