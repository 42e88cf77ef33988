/*
 * hw_int.h - what hw_verbs.c, hw_qp.c and hw_cm.c share: the verbs objects
 * behind a libsiwarp object of a verbs context.  Only those files include it.
 */
#ifndef SWP_HW_INT_H
#define SWP_HW_INT_H

#include "swp.h"
#include "hw.h"
#include "hw_dl.h"      /* rdma-core's headers, and its functions by dlopen */
#include "qpn_map.h"

/* rdma_conn_param.private_data_len is 8 bits */
#define SWP_HW_MAX_PD  255
#define SWP_HW_RESOLVE_MS 5000

/* id->context of every rdma_cm_id points at one of these, first member */
enum swp_hw_kind { SWP_HW_QP = 1, SWP_HW_LISTENER, SWP_HW_REQ };

struct swp_hw_ctx {
    struct ibv_context **devs;          /* rdma_get_devices(), kept open */
    struct ibv_context *verbs;          /* ours, shared with rdma_cm */
    struct ibv_device_attr attr;
    struct rdma_event_channel *ech;     /* non-blocking; in ctx->epfd */
    char name[IBV_SYSFS_NAME_MAX];
    struct swp_list mrs;                /* MRs whose lkey != rkey */
    uint32_t nmrs_lkey;
    struct swp_qpn_map qpns;            /* verbs QP number -> its siwarp_qp */
};

struct swp_hw_mr {
    struct ibv_mr *mr;
    struct siwarp_mr *owner;
    struct swp_list link;               /* ctx mrs, only when lkey != rkey */
};

struct swp_hw_cq {
    struct ibv_cq *cq;
    struct ibv_comp_channel *ch;        /* non-blocking; fd in ctx->epfd */
    bool armed;                         /* ibv_req_notify_cq outstanding */
};

/* Work posted while there is no verbs QP in RTS yet (siwarp allows posting
 * before connect / accept): kept here and posted once it can be. */
struct swp_hw_pend {
    struct swp_list link;
    bool send;
    struct siwarp_send_wr s;            /* s.sg_list / r.sg_list -> sge */
    struct siwarp_recv_wr r;
    struct siwarp_sge sge[SWP_MAX_SGE];
    uint8_t *inline_copy;               /* SIWARP_SEND_INLINE payload */
};

struct swp_hw_qp {
    int kind;                           /* SWP_HW_QP */
    struct siwarp_qp *qp;
    struct rdma_cm_id *id;              /* NULL until connect / accept */
    struct ibv_qp *ibqp;                /* id->qp once created */
    struct swp_list pend_send, pend_recv;
    uint32_t npend_send, npend_recv;
    struct siwarp_conn_param param;     /* connect's, private data copied */
    uint8_t pd[SWP_HW_MAX_PD];
    uint32_t max_inline;                /* what the provider inlines */
    struct ibv_mr *bounce_mr;           /* inline beyond the provider's limit */
    uint8_t *bounce;
    uint32_t bounce_next;
    bool disconnected;                  /* rdma_disconnect done */
    /* the last send-side completion was a flushed Read with this wr_id
     * (swp_hw_wc_twice) */
    bool flushed_read;
    uint64_t flushed_read_id;
    const char *how;                    /* "connect" / "accept": for messages */
};

static inline struct swp_hw_ctx *swp_hwc(const struct siwarp_ctx *c) { return c->hw; }
static inline struct swp_hw_qp *swp_hwq(const struct siwarp_qp *q) { return q->hw; }

/*
 * What a provider's ibv_post_send / ibv_post_recv returned, as 0 (the WR
 * is on the device's queue and will complete) or a negative errno (it is
 * not, and never completes).  The verbs API returns 0 or an errno value
 * and sets *bad_wr to the first WR not posted; providers differ.  libsiw
 * (rdma-core's providers/siw) returns a negative errno when its queue is
 * full, and -1 with errno set when the doorbell system call that follows
 * failed (the kernel QP no longer in RTS: closing, or terminating after a
 * Terminate).  In that case it has already written every WR into its
 * user-mapped queue and leaves *bad_wr NULL: the WRs are posted, and the
 * kernel completes them, flushed, when the QP reaches ERROR.  Read as a
 * failure, the caller would free what such a WR names and meet its
 * completion later.  bad is what the provider left in bad_wr, which the
 * caller sets to its one WR before the call, so a provider that fails
 * without touching it has not posted it.  err: errno after the call.
 */
static inline int swp_hw_post_result(int rc, int err, const void *bad)
{
    if (rc == 0 || bad == NULL)
        return 0;
    if (rc > 0)
        return -rc;
    if (rc == -1)
        return err > 0 ? -err : -EIO;
    return rc;
}

/*
 * Is this send-side completion the device's second one for a WR it just
 * completed?  Kernel siw (6.1, siw_qp.c) flushes a Read twice when the QP
 * fails between the Read's activation and its transmission: activation
 * copies it into the ORQ (outstanding Read queue) and marks the send WQE
 * queued; siw_sq_flush then completes the ORQ copy, and the queued WQE
 * again.  The two come one after the other, both flushed Reads with the
 * same wr_id.  Passed on, the consumer would give back its slot twice and
 * call its completion twice (uct_check on siw0: UCX's "comp->count > 0"
 * abort, 3 runs in 5).  So a flushed Read whose wr_id equals that of the
 * QP's previous send-side completion, itself a flushed Read, is dropped.
 * Receives do not break the pair (the RQ is flushed on its own); any
 * other send-side completion does.  Updates q; true: drop w.
 */
static inline bool swp_hw_wc_twice(struct swp_hw_qp *q, const struct siwarp_wc *w)
{
    bool flushed_read = w->status == SIWARP_WC_WR_FLUSH_ERR && w->opcode == SIWARP_WC_READ;

    if (w->opcode == SIWARP_WC_RECV)
        return false;
    if (flushed_read && q->flushed_read && q->flushed_read_id == w->wr_id) {
        q->flushed_read = false;
        return true;
    }
    q->flushed_read = flushed_read;
    q->flushed_read_id = w->wr_id;
    return false;
}

/* hw_verbs.c */
uint32_t swp_hw_lkey(struct swp_hw_ctx *h, uint32_t stag);   /* STag -> lkey */
void swp_hw_cq_events(struct siwarp_cq *cq);
void swp_hw_cq_stash(struct siwarp_cq *cq);
/* wait up to timeout_ms for the event channel or fd (may be -1); unlocked */
int  swp_hw_wait_fd(struct siwarp_ctx *ctx, int fd, int timeout_ms);

/* hw_qp.c */
int  swp_hw_qp_realize(struct siwarp_qp *qp, struct rdma_cm_id *id);
void swp_hw_qp_established(struct siwarp_qp *qp, const struct rdma_conn_param *cp);
void swp_hw_qp_fail(struct siwarp_qp *qp, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* hw_cm.c: handle every rdma_cm event queued; called locked */
int  swp_hw_cm_progress(struct siwarp_ctx *ctx);

/* hw_async.c: the device's asynchronous events */
extern void *const swp_hw_async_tag;               /* the async fd's epoll tag */
/* the QP's cause for a failure event (negative errno in *err), or NULL
 * for an event that is not one */
const char *swp_hw_async_cause(int event, int *err);
int  swp_hw_async_open(struct siwarp_ctx *ctx);     /* into ctx->epfd */
void swp_hw_async_close(struct siwarp_ctx *ctx);
int  swp_hw_async_progress(struct siwarp_ctx *ctx); /* locked: drain; events taken */

#endif /* SWP_HW_INT_H */
