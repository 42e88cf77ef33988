/*
 * hw_stub.c - the verbs backend when libsiwarp is built without rdma-core
 * (no libibverbs-dev / librdmacm-dev at configure time): there is no verbs
 * device, so a verbs context is never created and no object reaches the
 * other functions; they fail with -ENODEV all the same.
 */
#include "swp.h"

int swp_hw_ctx_create(const char *dev, struct siwarp_ctx **ctx)
{
    (void)ctx;
    SWP_DBG("verbs device %s: libsiwarp was built without rdma-core "
            "(libibverbs-dev, librdmacm-dev)", dev ? dev : "auto");
    return -ENODEV;
}

void swp_hw_ctx_destroy(struct siwarp_ctx *ctx) { (void)ctx; }
const char *swp_hw_ctx_name(const struct siwarp_ctx *ctx) { (void)ctx; return "none"; }
bool swp_hw_owns(const void *p) { (void)p; return false; }

#define STUB(name, ...) int swp_hw_##name(__VA_ARGS__) { return -ENODEV; }
#pragma GCC diagnostic ignored "-Wunused-parameter"
STUB(progress, struct siwarp_ctx *ctx, int timeout_ms)
STUB(alloc_pd, struct siwarp_ctx *ctx, struct siwarp_pd **pd)
STUB(dealloc_pd, struct siwarp_pd *pd)
STUB(reg_mr, struct siwarp_pd *pd, void *addr, size_t length, int access, struct siwarp_mr **mr)
STUB(dereg_mr, struct siwarp_mr *mr)
STUB(invalidate_stag, struct siwarp_pd *pd, uint32_t stag)
STUB(create_cq, struct siwarp_ctx *ctx, int cqe, struct siwarp_cq **cq)
STUB(destroy_cq, struct siwarp_cq *cq)
STUB(poll_cq, struct siwarp_cq *cq, int n, struct siwarp_wc *wc)
STUB(cq_fd, const struct siwarp_cq *cq)
STUB(cq_wait, struct siwarp_cq *cq, int timeout_ms)
STUB(create_qp, struct siwarp_pd *pd, const struct siwarp_qp_init_attr *attr,
     struct siwarp_qp **qp)
STUB(destroy_qp, struct siwarp_qp *qp)
STUB(query_qp, struct siwarp_qp *qp, struct siwarp_qp_attr *attr)
STUB(qp_to_error, struct siwarp_qp *qp)
STUB(disconnect, struct siwarp_qp *qp)
STUB(post_send, struct siwarp_qp *qp, struct siwarp_send_wr *wr, struct siwarp_send_wr **bad)
STUB(post_recv, struct siwarp_qp *qp, struct siwarp_recv_wr *wr, struct siwarp_recv_wr **bad)
STUB(connect, struct siwarp_qp *qp, const struct sockaddr *addr, socklen_t len,
     const struct siwarp_conn_param *param)
STUB(connect_wait, struct siwarp_qp *qp, int timeout_ms)
STUB(listen, struct siwarp_ctx *ctx, const struct sockaddr *addr, socklen_t len,
     const struct siwarp_conn_param *param, struct siwarp_listener **l)
STUB(listener_destroy, struct siwarp_listener *l)
STUB(listener_addr, const struct siwarp_listener *l, struct sockaddr_storage *ss)
STUB(get_conn_request, struct siwarp_listener *l, struct siwarp_conn_req **req)
STUB(get_conn_request_wait, struct siwarp_listener *l, int timeout_ms,
     struct siwarp_conn_req **req)
STUB(conn_req_param, const struct siwarp_conn_req *req, struct siwarp_conn_param *p,
     struct sockaddr_storage *peer)
STUB(accept, struct siwarp_conn_req *req, struct siwarp_qp *qp,
     const struct siwarp_conn_param *param)
STUB(reject, struct siwarp_conn_req *req, const void *pd, uint16_t pd_len)
