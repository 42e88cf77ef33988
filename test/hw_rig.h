/*
 * hw_rig.h - a libsiwarp QP of a verbs context on no device at all, for
 * the unit tests of the verbs backend (test_hw_post, test_hw_async): the
 * objects hw_qp.c's realize and established leave behind, in RTS, with a
 * verbs context and QP whose ops and functions each test fills in.
 */
#ifndef SWP_TEST_HW_RIG_H
#define SWP_TEST_HW_RIG_H

#include <string.h>

#include "hw_int.h"

struct rig {
    struct ibv_context ibctx;
    struct ibv_qp ibqp;
    struct swp_hw_ctx h;
    struct swp_hw_qp q;
    struct siwarp_ctx ctx;
    struct siwarp_qp qp;
};

static inline void hw_rig_init(struct rig *r)
{
    memset(r, 0, sizeof(*r));
    r->ibqp.context = &r->ibctx;
    swp_list_init(&r->h.mrs);
    r->h.verbs = &r->ibctx;
    r->ctx.single_thread = true;
    r->ctx.hw = &r->h;
    swp_list_init(&r->ctx.qps);
    r->q.kind = SWP_HW_QP;
    r->q.qp = &r->qp;
    r->q.ibqp = &r->ibqp;
    swp_list_init(&r->q.pend_send);
    swp_list_init(&r->q.pend_recv);
    r->qp.ctx = &r->ctx;
    r->qp.hw = &r->q;
    r->qp.state = SIWARP_QPS_RTS;
    r->qp.init.max_send_wr = 4;
    r->qp.init.max_recv_wr = 4;
    r->qp.init.max_sge = 1;
}

#endif /* SWP_TEST_HW_RIG_H */
