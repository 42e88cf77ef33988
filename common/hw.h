/*
 * hw.h - the verbs backend: libsiwarp objects as thin adapters over
 * libibverbs + librdmacm (an iWARP RNIC, or Linux kernel siw).
 *
 * A context created on a verbs device (siwarp_ctx_create_dev) sets
 * ctx->hw; every object under it (pd, mr, cq, qp) keeps its verbs object
 * in its `hw` pointer, and each public entry point hands such an object to
 * the swp_hw_* function of the same name in its first line.  Listeners and
 * connection requests of a verbs context are private structs of hw_cm.c,
 * recognised by swp_hw_owns() (a registry: nothing is dereferenced).
 *
 * hw_verbs.c + hw_cm.c implement this with rdma-core; hw_stub.c, built
 * without it, fails every call with -ENODEV.  Conventions as everywhere in
 * libsiwarp: 0 or a negative errno.
 */
#ifndef SWP_HW_H
#define SWP_HW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "siwarp/siwarp.h"

/* backend.c: SIWARP_DEVICE when it names a verbs device ("auto" or a
 * name), else NULL (unset, empty, "soft", or inside siwarp_ctx_create_dev). */
const char *swp_ctx_env_dev(void);

/* context (hw_verbs.c).  dev: a device name, or NULL for the first iWARP
 * device; -ENODEV when there is none (or it is not iWARP). */
int  swp_hw_ctx_create(const char *dev, struct siwarp_ctx **ctx);
void swp_hw_ctx_destroy(struct siwarp_ctx *ctx);
const char *swp_hw_ctx_name(const struct siwarp_ctx *ctx);
int  swp_hw_progress(struct siwarp_ctx *ctx, int timeout_ms);

/* pd, mr */
int  swp_hw_alloc_pd(struct siwarp_ctx *ctx, struct siwarp_pd **pd);
int  swp_hw_dealloc_pd(struct siwarp_pd *pd);
int  swp_hw_reg_mr(struct siwarp_pd *pd, void *addr, size_t length, int access,
                   struct siwarp_mr **mr);
int  swp_hw_dereg_mr(struct siwarp_mr *mr);
int  swp_hw_invalidate_stag(struct siwarp_pd *pd, uint32_t stag);

/* cq */
int  swp_hw_create_cq(struct siwarp_ctx *ctx, int cqe, struct siwarp_cq **cq);
int  swp_hw_destroy_cq(struct siwarp_cq *cq);
int  swp_hw_poll_cq(struct siwarp_cq *cq, int n, struct siwarp_wc *wc);
int  swp_hw_cq_fd(const struct siwarp_cq *cq);
int  swp_hw_cq_wait(struct siwarp_cq *cq, int timeout_ms);

/* qp */
int  swp_hw_create_qp(struct siwarp_pd *pd, const struct siwarp_qp_init_attr *attr,
                      struct siwarp_qp **qp);
int  swp_hw_destroy_qp(struct siwarp_qp *qp);
int  swp_hw_query_qp(struct siwarp_qp *qp, struct siwarp_qp_attr *attr);
int  swp_hw_qp_to_error(struct siwarp_qp *qp);
int  swp_hw_disconnect(struct siwarp_qp *qp);
int  swp_hw_post_send(struct siwarp_qp *qp, struct siwarp_send_wr *wr,
                      struct siwarp_send_wr **bad_wr);
int  swp_hw_post_recv(struct siwarp_qp *qp, struct siwarp_recv_wr *wr,
                      struct siwarp_recv_wr **bad_wr);

/* connection management (hw_cm.c) */
bool swp_hw_owns(const void *listener_or_req);
int  swp_hw_connect(struct siwarp_qp *qp, const struct sockaddr *addr, socklen_t len,
                    const struct siwarp_conn_param *param);
int  swp_hw_connect_wait(struct siwarp_qp *qp, int timeout_ms);
int  swp_hw_listen(struct siwarp_ctx *ctx, const struct sockaddr *addr, socklen_t len,
                   const struct siwarp_conn_param *param, struct siwarp_listener **l);
int  swp_hw_listener_destroy(struct siwarp_listener *l);
int  swp_hw_listener_addr(const struct siwarp_listener *l, struct sockaddr_storage *ss);
int  swp_hw_get_conn_request(struct siwarp_listener *l, struct siwarp_conn_req **req);
int  swp_hw_get_conn_request_wait(struct siwarp_listener *l, int timeout_ms,
                                  struct siwarp_conn_req **req);
int  swp_hw_conn_req_param(const struct siwarp_conn_req *req, struct siwarp_conn_param *p,
                           struct sockaddr_storage *peer);
int  swp_hw_accept(struct siwarp_conn_req *req, struct siwarp_qp *qp,
                   const struct siwarp_conn_param *param);
int  swp_hw_reject(struct siwarp_conn_req *req, const void *pd, uint16_t pd_len);

#endif /* SWP_HW_H */
