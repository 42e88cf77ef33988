/*
 * qp.c - queue pair objects, the QP state table and its one setter, error
 * handling (Terminate + flush) and the socket event handler.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "read_hint.h"
#include "swp.h"

#define SWP_TERM_LINGER_MS 2000   /* how long a Terminate may take to leave */

static const struct {
    const char *name;
    unsigned next;               /* bitmask of allowed next states */
} swp_qp_states[] = {
#define B(s) (1u << SIWARP_QPS_##s)
    [SIWARP_QPS_IDLE]       = { "IDLE",       B(CONNECTING) | B(ERROR) },
    [SIWARP_QPS_CONNECTING] = { "CONNECTING", B(RTS) | B(ERROR) | B(TERMINATE) },
    [SIWARP_QPS_RTS]        = { "RTS",        B(CLOSING) | B(TERMINATE) | B(ERROR) },
    [SIWARP_QPS_CLOSING]    = { "CLOSING",    B(TERMINATE) | B(ERROR) },
    [SIWARP_QPS_TERMINATE]  = { "TERMINATE",  B(ERROR) },
    [SIWARP_QPS_ERROR]      = { "ERROR",      0 },
#undef B
};

const char *siwarp_qp_state_str(enum siwarp_qp_state s)
{
    if ((unsigned)s < sizeof(swp_qp_states) / sizeof(swp_qp_states[0]))
        return swp_qp_states[s].name;
    return "UNKNOWN";
}

int swp_qp_set_state(struct siwarp_qp *qp, enum siwarp_qp_state next)
{
    if (qp->state == next)
        return 0;
    if (!(swp_qp_states[qp->state].next & (1u << next))) {
        SWP_DBG("qp %p: refused state change %s => %s", (void *)qp,
                swp_qp_states[qp->state].name, swp_qp_states[next].name);
        return -EINVAL;
    }
    SWP_DBG("qp %p: %s => %s", (void *)qp, swp_qp_states[qp->state].name,
            swp_qp_states[next].name);
    qp->state = next;
    return 0;
}

static uint32_t swp_pow2(uint32_t n)
{
    uint32_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

/* A new QP holds its PD and CQs and joins its context's list (both backends). */
void swp_qp_link(struct siwarp_qp *qp)
{
    swp_lock(qp->ctx);
    qp->pd->refs++;
    qp->scq->refs++;
    qp->rcq->refs++;
    if (qp->srq)
        qp->srq->refs++;
    swp_list_add_tail(&qp->ctx->qps, &qp->link);
    qp->ctx->nqps++;
    swp_unlock(qp->ctx);
}

/* Locked: the QP leaves its context's list (both backends); a stall sweep
 * that was to start at it starts at the next. */
void swp_qp_unlink(struct siwarp_qp *qp)
{
    struct siwarp_ctx *ctx = qp->ctx;

    if (ctx->stall_cursor == &qp->link)
        ctx->stall_cursor = qp->link.next;
    swp_list_del(&qp->link);
    ctx->nqps--;
}

/* Offsets of a QP's rings in its one block of memory (swp_qp_alloc). */
struct swp_qp_layout {
    size_t sq, sq_sge, rq, rq_sge, orq, irq, tx, total;
    uint32_t sq_n, rq_n;
};

#define SWP_QP_ORQ_IRQ 128      /* the largest IRD/ORD we negotiate (RFC 6581 5) */

static size_t swp_qp_take(size_t *at, size_t bytes)
{
    size_t off = (*at + 63) & ~(size_t)63;      /* each ring on its own cache lines */

    *at = off + bytes;
    return off;
}

static void swp_qp_plan(const struct siwarp_qp_init_attr *attr, struct swp_qp_layout *l)
{
    uint32_t sge = attr->max_sge ? attr->max_sge : 1;
    size_t at = sizeof(struct siwarp_qp);

    l->sq_n = swp_pow2(attr->max_send_wr);
    /* a QP on an SRQ keeps an empty one-slot RQ: post_recv refuses it */
    l->rq_n = attr->srq ? 1 : swp_pow2(attr->max_recv_wr ? attr->max_recv_wr : 1);
    /* Order matters: every ring is used from its first slot on, and each
     * ring's first page is a page fault when the connection starts.  The
     * small rings and the transmit iovecs go right behind the QP, on the
     * pages it already touches; the Read queues, unused by most
     * connections, go last. */
    l->orq = swp_qp_take(&at, SWP_QP_ORQ_IRQ * sizeof(uint32_t));
    l->rq = swp_qp_take(&at, l->rq_n * sizeof(struct swp_rwqe));
    l->rq_sge = swp_qp_take(&at, (size_t)l->rq_n * sge * sizeof(struct siwarp_sge));
    l->tx = swp_qp_take(&at, SWP_TX_IOV * sizeof(struct iovec) + SWP_TX_HDRS);
    l->sq = swp_qp_take(&at, l->sq_n * sizeof(struct swp_swqe));
    /* up to SWP_SGE_INLINE SGEs live in the WQE (sq_sge stays NULL) */
    l->sq_sge = sge > SWP_SGE_INLINE
                ? swp_qp_take(&at, (size_t)l->sq_n * sge * sizeof(struct siwarp_sge)) : 0;
    l->irq = swp_qp_take(&at, SWP_QP_ORQ_IRQ * sizeof(struct swp_irqe));
    l->total = at;
}

/* The QP and all its rings in one block.
 *
 * Page faults are dear here: 10-14 us each on this kind of virtual
 * machine.  8 ranks connecting all to all on 2 cores spent a quarter of
 * their CPU time before the first message faulting in QP memory, much of
 * it zeroed rings and separately allocated ones, each starting on a page
 * of its own.  Only the QP itself is zeroed: every ring entry is written
 * when it is posted or received, and nothing reads a slot outside
 * [head, tail). */
static struct siwarp_qp *swp_qp_alloc(const struct siwarp_qp_init_attr *attr)
{
    struct swp_qp_layout l;
    struct siwarp_qp *qp;
    uint8_t *b;

    swp_qp_plan(attr, &l);
    b = malloc(l.total);
    if (!b)
        return NULL;
    qp = (struct siwarp_qp *)b;
    memset(qp, 0, sizeof(*qp));
    qp->orq = (uint32_t *)(b + l.orq);
    qp->orqr.mask = SWP_QP_ORQ_IRQ - 1;
    qp->rq = (struct swp_rwqe *)(b + l.rq);
    qp->rqr.mask = l.rq_n - 1;
    qp->rq_sge = (struct siwarp_sge *)(b + l.rq_sge);
    qp->sq_sge = l.sq_sge ? (struct siwarp_sge *)(b + l.sq_sge) : NULL;
    qp->sq = (struct swp_swqe *)(b + l.sq);
    qp->sqr.mask = l.sq_n - 1;
    qp->tx.iov = (struct iovec *)(b + l.tx);
    qp->tx.hdrs = (uint8_t *)(qp->tx.iov + SWP_TX_IOV);
    qp->irq = (struct swp_irqe *)(b + l.irq);
    qp->irqr.mask = SWP_QP_ORQ_IRQ - 1;
    return qp;
}

int siwarp_create_qp(struct siwarp_pd *pd, const struct siwarp_qp_init_attr *attr,
                     struct siwarp_qp **out)
{
    struct siwarp_qp *qp;
    int rc = -ENOMEM;

    if (!pd || !attr || !out || !attr->send_cq || !attr->recv_cq)
        return -EINVAL;
    if (attr->srq && pd->ctx->hw)
        return -EOPNOTSUPP;
    if (pd->ctx->hw) return swp_hw_create_qp(pd, attr, out);
    /* receive WQEs are checked against the QP's PD when placing */
    if (attr->srq && attr->srq->pd != pd)
        return -EINVAL;
    if (attr->max_send_wr == 0 || attr->max_send_wr > (1u << 20) ||
        attr->max_recv_wr > (1u << 20) || attr->max_sge > SWP_MAX_SGE)
        return -EINVAL;
    qp = swp_qp_alloc(attr);
    if (!qp)
        return -ENOMEM;
    qp->ctx = pd->ctx;
    qp->pd = pd;
    qp->scq = attr->send_cq;
    qp->rcq = attr->recv_cq;
    qp->srq = attr->srq;
    qp->init = *attr;
    if (qp->init.max_sge == 0)
        qp->init.max_sge = 1;
    qp->pl.fd = -1;
    swp_list_init(&qp->link);
    swp_list_init(&qp->tx_held_link);
    qp->tx_epoch = UINT64_MAX;      /* the first post goes out at once */
    /* A WQE gets its slice of sq_sge / rq_sge when it is posted (verbs.c),
     * not here: that would walk every slot of both rings. */
    rc = swp_rx_init(qp);
    if (rc < 0)
        goto err;
    for (int i = 0; i < SWP_QN_COUNT; i++) {
        qp->tx_msn[i] = 1;      /* RFC 5041 5.3: MSN starts at 1 */
        qp->rx.msn[i] = 1;
    }

    swp_qp_link(qp);
    *out = qp;
    return 0;
err:
    free(qp);
    return rc;
}

static void swp_qp_close_fd(struct siwarp_qp *qp)
{
    if (qp->pl.fd >= 0) {
        swp_poll_del(qp->ctx, &qp->pl);
        close(qp->pl.fd);
        qp->pl.fd = -1;
        qp->addr_known = false;
    }
    swp_timer_cancel(&qp->close_timer);
    swp_timer_cancel(&qp->rtr_timer);
    swp_timer_cancel(&qp->verify_timer);
}

int siwarp_destroy_qp(struct siwarp_qp *qp)
{
    struct siwarp_ctx *ctx;

    if (!qp)
        return -EINVAL;
    if (qp->ctx->hw) return swp_hw_destroy_qp(qp);
    ctx = qp->ctx;
    if (ctx->in_recv_handler)
        return -EBUSY;          /* the handler's caller is reading a QP */
    swp_lock(ctx);
    swp_cm_fini(qp);
    swp_qp_close_fd(qp);
    swp_qp_unlink(qp);
    swp_list_del(&qp->tx_held_link);
    swp_cq_purge_qp(qp->scq, qp);
    swp_cq_purge_qp(qp->rcq, qp);
    swp_read_hint_flush(qp);
    qp->pd->refs--;
    qp->scq->refs--;
    qp->rcq->refs--;
    if (qp->srq)
        qp->srq->refs--;
    swp_unlock(ctx);
    /* only WQEs still queued own a copy (retire and flush free theirs);
     * walking the whole ring would fault in pages no WQE ever used */
    for (uint32_t i = qp->sqr.head; i != qp->sqr.tail; i++)
        free(qp->sq[i & qp->sqr.mask].inline_buf);
    free(qp->tx.tail);
    free(qp->amo);
    free(qp->verify_buf);
    free(qp);               /* the rings live in the same block (swp_qp_alloc) */
    return 0;
}

int siwarp_qp_verify_first_send(struct siwarp_qp *qp, siwarp_verify_fn fn, void *arg,
                                uint32_t max_len, int timeout_ms)
{
    uint8_t *buf;
    int rc = 0;

    if (!qp || !fn || max_len == 0 || max_len > SIWARP_VERIFY_MAX_LEN || timeout_ms < 0)
        return -EINVAL;
    if (qp->ctx->hw)
        return -EOPNOTSUPP;
    buf = malloc(max_len);
    if (!buf)
        return -ENOMEM;
    swp_lock(qp->ctx);
    if (qp->state != SIWARP_QPS_IDLE || qp->verify_buf) {
        rc = -EINVAL;
    } else {
        qp->verify_fn = fn;
        qp->verify_arg = arg;
        qp->verify_buf = buf;
        qp->verify_max = max_len;
        qp->verify_timeout_ms = timeout_ms ? timeout_ms : 10000;
        qp->verify_pending = true;
    }
    swp_unlock(qp->ctx);
    if (rc < 0)
        free(buf);
    return rc;
}

static void swp_qp_verify_expired(struct swp_timer *t)
{
    struct siwarp_qp *qp = swp_container_of(t, struct siwarp_qp, verify_timer);

    if (qp->verify_pending)
        swp_qp_fatal(qp, 0, NULL, 0, -ETIMEDOUT,
                     "the peer's first Send did not come within %d ms", qp->verify_timeout_ms);
}

void swp_qp_verify_arm(struct siwarp_qp *qp)
{
    if (qp->verify_pending)
        swp_timer_arm(qp->ctx, &qp->verify_timer, (uint64_t)qp->verify_timeout_ms,
                      swp_qp_verify_expired);
}

static void swp_wc_fill(struct siwarp_wc *wc, struct siwarp_qp *qp, uint64_t wr_id,
                        enum siwarp_wc_opcode op, enum siwarp_wc_status st, uint32_t len)
{
    memset(wc, 0, sizeof(*wc));
    wc->wr_id = wr_id;
    wc->opcode = op;
    wc->status = st;
    wc->byte_len = len;
    wc->qp = qp;
}

static enum siwarp_wc_opcode swp_wc_op(enum siwarp_wr_opcode op)
{
    switch (op) {
    case SIWARP_WR_WRITE: return SIWARP_WC_WRITE;
    case SIWARP_WR_READ:  return SIWARP_WC_READ;
    case SIWARP_WR_ATOMIC_FETCH_ADD:
    case SIWARP_WR_ATOMIC_MASKED_FETCH_ADD: return SIWARP_WC_FETCH_ADD;
    case SIWARP_WR_ATOMIC_CMP_SWP:
    case SIWARP_WR_ATOMIC_MASKED_CMP_SWP:   return SIWARP_WC_COMP_SWAP;
    default:              return SIWARP_WC_SEND;
    }
}

/* A Send that went out whole as it was posted (qp_tx.c, swp_tx_direct_send):
 * the SQ was empty, so its completion is next in posting order. */
void swp_sq_complete_now(struct siwarp_qp *qp, uint64_t wr_id, enum siwarp_wr_opcode op,
                         uint32_t len)
{
    struct siwarp_wc wc;

    swp_wc_fill(&wc, qp, wr_id, swp_wc_op(op), SIWARP_WC_SUCCESS, len);
    swp_cq_push(qp->scq, &wc);
}

/* Retire send WQEs from the head, in order (verbs: completions of one
 * send queue come in posting order). */
SWP_HOT
void swp_sq_retire(struct siwarp_qp *qp)
{
    while (qp->sqr.head != qp->sqr.tail) {
        struct swp_swqe *w = &qp->sq[qp->sqr.head & qp->sqr.mask];
        if (!w->complete && !(w->segmented && !swp_wr_awaits_response(w->opcode) &&
                              qp->tx.written >= w->done_at))
            break;
        if (w->status != SIWARP_WC_SUCCESS || (w->flags & SIWARP_SEND_SIGNALED) ||
            qp->init.sq_sig_all) {
            struct siwarp_wc wc;
            swp_wc_fill(&wc, qp, w->wr_id, swp_wc_op(w->opcode), w->status,
                        (uint32_t)w->len);
            wc.vendor_err = w->vendor_err;
            swp_cq_push(qp->scq, &wc);
        }
        free(w->inline_buf);
        w->inline_buf = NULL;
        qp->sqr.head++;
    }
    if (qp->sq_cur - qp->sqr.head > qp->sqr.tail - qp->sqr.head)
        qp->sq_cur = qp->sqr.head;
    /* Empty, nothing half written: the next WQE goes to slot 0 again, on
     * pages that are already warm.  Left to walk on, the ring (512 slots
     * of 128 octets in the BTL) faulted in a page every 32 messages per
     * connection for its first 512 -- 10 us each on this VM.  No index into
     * the SQ outlives its WQE (the ORQ names a Read only while it is
     * posted), so nothing else needs renumbering. */
    if (qp->sqr.head == qp->sqr.tail && qp->sq_cur == qp->sqr.tail && qp->tx.pending == 0)
        qp->sqr.head = qp->sqr.tail = qp->sq_cur = 0;
}

void swp_qp_flush(struct siwarp_qp *qp)
{
    struct siwarp_wc wc;

    /* work already fully on the wire completes normally first */
    swp_sq_retire(qp);
    while (qp->sqr.head != qp->sqr.tail) {
        struct swp_swqe *w = &qp->sq[qp->sqr.head & qp->sqr.mask];
        enum siwarp_wc_status st = w->status ? w->status : SIWARP_WC_WR_FLUSH_ERR;
        swp_wc_fill(&wc, qp, w->wr_id, swp_wc_op(w->opcode), st, 0);
        wc.vendor_err = w->vendor_err;
        swp_cq_push(qp->scq, &wc);
        free(w->inline_buf);
        w->inline_buf = NULL;
        qp->sqr.head++;
    }
    qp->sq_cur = qp->sqr.head;
    swp_recv_flush(qp);
    qp->orqr.head = qp->orqr.tail;
    swp_read_hint_flush(qp);
    qp->irqr.head = qp->irq_wr = qp->irqr.tail;
    swp_ctx_kick(qp->ctx);
}

static void swp_qp_set_error(struct siwarp_qp *qp, int err, const char *why)
{
    if (!qp->error) {
        qp->error = err;
        snprintf(qp->error_str, sizeof(qp->error_str), "%s", why);
    }
}

/* Enter ERROR: flush everything, close the socket unless a Terminate is
 * still on its way out. */
static void swp_qp_enter_error(struct siwarp_qp *qp)
{
    swp_qp_set_state(qp, SIWARP_QPS_ERROR);
    swp_qp_flush(qp);
    if (qp->tx.pending == 0)
        swp_qp_close_fd(qp);
}

static void swp_qp_linger_expired(struct swp_timer *t)
{
    struct siwarp_qp *qp = swp_container_of(t, struct siwarp_qp, close_timer);
    swp_qp_close_fd(qp);
}

void swp_qp_fatal(struct siwarp_qp *qp, uint32_t term, const uint8_t *bad_hdr,
                  uint32_t bad_hdr_len, int err, const char *fmt, ...)
{
    char why[128];
    va_list ap;

    if (qp->state == SIWARP_QPS_ERROR || qp->state == SIWARP_QPS_TERMINATE)
        return;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    swp_qp_set_error(qp, err, why);
    SWP_DBG("qp %p: fatal: %s", (void *)qp, why);
    if (term && qp->pl.fd >= 0 && qp->state != SIWARP_QPS_CONNECTING) {
        qp->term_sent = term;
        swp_qp_set_state(qp, SIWARP_QPS_TERMINATE);
        swp_tx_queue_terminate(qp, term, bad_hdr, bad_hdr_len);
        swp_tx_progress(qp);
    }
    swp_qp_enter_error(qp);
    if (qp->pl.fd >= 0) {
        /* the Terminate is still leaving: stop reading, bound the wait */
        swp_poll_mod(qp->ctx, &qp->pl, EPOLLOUT);
        swp_timer_arm(qp->ctx, &qp->close_timer, SWP_TERM_LINGER_MS, swp_qp_linger_expired);
    }
}

/* Terminate received (RFC 5040 4.8): the oldest incomplete WR carries the
 * reason, the rest is flushed, and no Terminate goes back. */
void swp_qp_term_received(struct siwarp_qp *qp, uint32_t term)
{
    char buf[128];

    qp->term_recv = term;
    if (qp->sqr.head != qp->sq_cur || qp->sqr.head != qp->sqr.tail) {
        swp_sq_retire(qp);
        if (qp->sqr.head != qp->sqr.tail) {
            struct swp_swqe *w = &qp->sq[qp->sqr.head & qp->sqr.mask];
            bool prot = (SWP_TERM_LAYER(term) == SWP_TERM_LAYER_RDMAP &&
                         SWP_TERM_ETYPE(term) == SWP_RDMAP_ET_REMOTE_PROT) ||
                        (SWP_TERM_LAYER(term) == SWP_TERM_LAYER_DDP &&
                         SWP_TERM_ETYPE(term) == SWP_DDP_ET_TAGGED);
            w->status = prot ? SIWARP_WC_REM_ACCESS_ERR : SIWARP_WC_REM_ABORT_ERR;
            w->vendor_err = term;
        }
    }
    swp_qp_set_error(qp, -ECONNABORTED, swp_term_str(term, buf, sizeof(buf)));
    swp_qp_set_state(qp, SIWARP_QPS_TERMINATE);
    qp->tx.pending = 0;     /* RFC 5040 5.5: nothing more may be sent */
    qp->tx.niov = qp->tx.iov_done = 0;
    swp_qp_enter_error(qp);
}

/* Orderly end of stream from the peer, or a TCP error. */
void swp_qp_llp_closed(struct siwarp_qp *qp, int err, bool clean)
{
    bool in_flight;

    if (qp->state == SIWARP_QPS_ERROR)
        return;
    /* A write of ours that reached the socket of a peer that had closed in
     * order draws a reset from its kernel; Linux reports that reset, in
     * CLOSE_WAIT (our end had the peer's FIN), as EPIPE, and a reset out of
     * the blue as ECONNRESET.  The first is the peer's close: said so,
     * clean at an FPDU boundary, not "connection reset by peer". */
    if (!clean && err == -EPIPE)
        clean = qp->rx.state == SWP_RX_HDR && qp->rx.hdr_got == 0 && qp->rx.marker_got == 0;
    /* A peer that closes while our work is in flight (sent but not done, or
     * a Read unanswered) failed that work at the lower layer, however
     * cleanly the stream ended; only an idle connection closes cleanly. */
    swp_sq_retire(qp);
    in_flight = qp->sqr.head != qp->sqr.tail;
    if (clean && !in_flight)
        swp_qp_set_error(qp, 0, "peer closed the connection");
    else if (clean)
        swp_qp_set_error(qp, -ECONNRESET, "peer closed the connection with work in flight");
    else
        swp_qp_set_error(qp, err, err == -ECONNRESET ? "connection reset by peer"
                                                     : "TCP connection lost");
    qp->tx.pending = 0;
    qp->tx.niov = qp->tx.iov_done = 0;
    if (in_flight) {
        struct swp_swqe *w = &qp->sq[qp->sqr.head & qp->sqr.mask];
        w->status = SIWARP_WC_LLP_ERR;
        w->vendor_err = SWP_TERM(SWP_TERM_LAYER_LLP, 0, SWP_LLP_EC_TCP_LOST);
    }
    swp_qp_enter_error(qp);
}

/* A peer that dies or a link that goes down without a FIN or RST must not
 * hang the QP: TCP_USER_TIMEOUT bounds how long sent data may stay
 * unacknowledged, keepalive probes an idle connection.  Both end in a TCP
 * error, which flushes the QP with SIWARP_WC_LLP_ERR. */
int swp_sock_set_llp_timeout(int fd, int ms)
{
    int one = 1, zero = 0, idle, intvl, cnt = 3;
    unsigned int uto;

    if (ms == 0)
        ms = 30000;
    if (ms < 0) {
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &zero, sizeof(zero));
        setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &zero, sizeof(zero));
        return -1;
    }
    idle = ms / 2000 > 0 ? ms / 2000 : 1;          /* half the budget idle */
    intvl = (ms / 1000 - idle) / cnt > 0 ? (ms / 1000 - idle) / cnt : 1;
    uto = (unsigned int)ms;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, sizeof(uto));
    return ms;
}

int siwarp_sock_set_llp_timeout(int fd, int ms)
{
    return swp_sock_set_llp_timeout(fd, ms);
}

/* The LLP timeout, in ms (<= 0: off): conn_param.llp_timeout_ms. */
static int swp_qp_llp_ms(const struct siwarp_qp *qp)
{
    return qp->cm.param.llp_timeout_ms ? qp->cm.param.llp_timeout_ms : 30000;
}

/* An accepted socket comes with its listener's options (Linux copies them
 * to the child): five syscalls a connection saved when they already say
 * what this QP wants. */
void swp_qp_set_llp_timeout(struct siwarp_qp *qp)
{
    int ms = swp_qp_llp_ms(qp);

    if (ms < 0)
        ms = -1;
    if (ms == qp->llp_preset_ms || (ms < 0 && qp->llp_preset_ms == 0))
        return;
    swp_sock_set_llp_timeout(qp->pl.fd, ms);
    qp->llp_preset_ms = ms < 0 ? 0 : ms;    /* done once, also when applied early */
}

/* A peer that announced an FPDU (its length, or part of its payload) and
 * stopped sending it, its TCP connection kept alive, is caught by neither
 * keepalive nor TCP_USER_TIMEOUT.  Progress sweeps the QPs every
 * SWP_STALL_SWEEP_MS (no timer stays armed: an armed timer takes the busy
 * poll off its fast path): one inside an FPDU that read nothing more of it
 * for siwarp_ctx_set_rx_stall's time, with nothing waiting in the socket
 * (else we are the slow one), fails with -ETIMEDOUT.
 * A pass looks at a slice of the QPs, on from where the last one stopped,
 * sized so that each QP is seen at least every quarter of that time: a
 * process with tens of thousands of QPs paid a walk of all of them every
 * 50 ms (the scale study), while the default time is 5 minutes. */
void swp_qp_stall_sweep(struct siwarp_ctx *ctx)
{
    uint64_t now = swp_now_ns();
    int ms = ctx->rx_stall_ms ? ctx->rx_stall_ms : SWP_RX_STALL_DEFAULT_MS;
    uint64_t quarter_passes, budget;
    struct swp_list *l;

    if (now < ctx->stall_next_ns || ms < 0 || swp_list_empty(&ctx->qps))
        return;
    ctx->stall_next_ns = now + SWP_STALL_SWEEP_MS * 1000000ull;
    quarter_passes = (uint64_t)ms / 4 / SWP_STALL_SWEEP_MS;
    budget = quarter_passes > 1 ? (ctx->nqps + quarter_passes - 1) / quarter_passes : ctx->nqps;
    if (budget < SWP_STALL_SWEEP_MIN)
        budget = SWP_STALL_SWEEP_MIN;
    if (budget > ctx->nqps)
        budget = ctx->nqps;         /* a pass sees each QP once at most */
    l = ctx->stall_cursor ? ctx->stall_cursor : ctx->qps.next;
    for (; budget > 0; budget--, l = l->next) {
        struct siwarp_qp *qp;
        struct swp_rx *rx;
        int waiting = 0;

        if (l == &ctx->qps) {
            l = l->next;            /* past the head: round again */
            if (l == &ctx->qps)
                break;
        }
        qp = swp_container_of(l, struct siwarp_qp, link);
        rx = &qp->rx;

        if (qp->state != SIWARP_QPS_RTS || qp->pl.fd < 0)
            continue;
        if (!(rx->state != SWP_RX_HDR || rx->hdr_got > 0) || rx->stream_off != qp->rx_stall_off) {
            qp->rx_stall_off = rx->stream_off;
            qp->rx_stall_since_ns = now;
            continue;
        }
        if (now - qp->rx_stall_since_ns >= (uint64_t)ms * 1000000ull &&
            ioctl(qp->pl.fd, FIONREAD, &waiting) == 0 && waiting == 0)
            swp_qp_fatal(qp, 0, NULL, 0, -ETIMEDOUT,
                         "the peer stopped inside an FPDU: nothing more of it for %d ms", ms);
    }
    ctx->stall_cursor = l == &ctx->qps ? NULL : l;
}

int siwarp_ctx_set_rx_stall(struct siwarp_ctx *ctx, int ms)
{
    if (!ctx || ms > 3600000)
        return -EINVAL;
    if (ctx->hw)
        return -EOPNOTSUPP;
    swp_lock(ctx);
    ctx->rx_stall_ms = ms < 0 ? -1 : ms;
    swp_unlock(ctx);
    return 0;
}

int swp_qp_established(struct siwarp_qp *qp)
{
    int rc = swp_qp_set_state(qp, SIWARP_QPS_RTS);

    if (rc < 0)
        return rc;
    swp_qp_set_llp_timeout(qp);
    /* MPA rev 1 carries no IRD/ORD (RFC 6581 1): assume a modest depth */
    if (qp->nego.mpa_rev == 1 && qp->nego.ird == 0 && qp->nego.ord == 0)
        qp->nego.ird = qp->nego.ord = 16;
    if (qp->nego.ord > 128)
        qp->nego.ord = 128;
    if (qp->nego.ird > 128)
        qp->nego.ird = 128;
    if (qp->nego.max_rx_ulpdu == 0)
        qp->nego.max_rx_ulpdu = 65535;
    if (qp->nego.mulpdu == 0)
        qp->nego.mulpdu = 1024;
    swp_poll_mod(qp->ctx, &qp->pl, EPOLLIN);
    swp_qp_verify_arm(qp);
    swp_tx_rtr_start(qp);
    /* work posted while connecting goes out now */
    swp_tx_progress(qp);
    return 0;
}

/* Put a QP in full operation on an already connected socket with the given
 * negotiated parameters, skipping MPA setup.  Used by tests that drive the
 * data path through a socketpair, and by a future in-kernel handoff. */
int swp_qp_attach_fd(struct siwarp_qp *qp, int fd, const struct swp_nego *nego)
{
    int rc;

    swp_lock(qp->ctx);
    qp->nego = *nego;
    rc = swp_poll_add(qp->ctx, &qp->pl, fd, EPOLLIN, swp_qp_io);
    if (rc == 0)
        rc = swp_qp_set_state(qp, SIWARP_QPS_CONNECTING);
    if (rc == 0) {
        if (nego->p2p && nego->rtr) {
            qp->rtr_pending_tx = nego->initiator;
            qp->rtr_wait_rx = !nego->initiator;
        }
        rc = swp_qp_established(qp);
    }
    swp_unlock(qp->ctx);
    return rc;
}

void swp_qp_conn_failed(struct siwarp_qp *qp, int err, const char *why)
{
    swp_qp_set_error(qp, err, why);
    swp_qp_enter_error(qp);
}

void swp_qp_io(struct swp_pollable *p, uint32_t events)
{
    struct siwarp_qp *qp = swp_container_of(p, struct siwarp_qp, pl);

    if (qp->state == SIWARP_QPS_CONNECTING) {
        swp_cm_io(qp, events);
        return;
    }
    if (qp->state == SIWARP_QPS_ERROR || qp->state == SIWARP_QPS_TERMINATE) {
        /* only a Terminate may still be leaving */
        if (qp->tx.pending && swp_tx_progress(qp) == -EAGAIN)
            return;
        swp_qp_close_fd(qp);
        return;
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
        swp_rx_progress(qp);
    if (qp->pl.fd >= 0 && (qp->state == SIWARP_QPS_RTS || qp->state == SIWARP_QPS_CLOSING))
        swp_tx_progress(qp);
}

int siwarp_query_qp(struct siwarp_qp *qp, struct siwarp_qp_attr *a)
{
    if (!qp || !a)
        return -EINVAL;
    if (qp->ctx->hw) return swp_hw_query_qp(qp, a);
    memset(a, 0, sizeof(*a));
    swp_lock(qp->ctx);
    a->state = qp->state;
    a->mpa_rev = qp->nego.mpa_rev;
    a->crc = qp->nego.crc;
    a->markers = qp->nego.markers_tx || qp->nego.markers_rx;
    a->p2p = qp->nego.p2p;
    a->rtr = qp->nego.rtr;
    a->ird = qp->nego.ird;
    a->ord = qp->nego.ord;
    a->mulpdu = qp->nego.mulpdu;
    a->peer_is_siwarp = qp->nego.peer_is_siwarp;
    a->rfc7306 = qp->nego.rfc7306;
    memcpy(a->peer_private_data, qp->nego.peer_pd, qp->nego.peer_pd_len);
    a->peer_private_data_len = qp->nego.peer_pd_len;
    a->error = qp->error;
    a->term_sent = qp->term_sent;
    a->term_recv = qp->term_recv;
    a->srq_wqes = qp->srq_taken;
    memcpy(a->error_str, qp->error_str, sizeof(a->error_str));
    if (qp->pl.fd >= 0) {
        if (!qp->addr_known) {
            /* until the socket is connected it has no peer: ask again */
            socklen_t ll = sizeof(qp->addr_local), pl = sizeof(qp->addr_peer);
            memset(&qp->addr_local, 0, sizeof(qp->addr_local));
            memset(&qp->addr_peer, 0, sizeof(qp->addr_peer));
            qp->addr_known =
                getsockname(qp->pl.fd, (struct sockaddr *)&qp->addr_local, &ll) == 0 &&
                getpeername(qp->pl.fd, (struct sockaddr *)&qp->addr_peer, &pl) == 0;
        }
        memcpy(&a->local, &qp->addr_local, sizeof(a->local));
        memcpy(&a->peer, &qp->addr_peer, sizeof(a->peer));
    } else {
        memcpy(&a->peer, &qp->cm.peer, sizeof(a->peer));
    }
    swp_unlock(qp->ctx);
    return 0;
}

int siwarp_qp_to_error(struct siwarp_qp *qp)
{
    if (!qp)
        return -EINVAL;
    if (qp->ctx->hw) return swp_hw_qp_to_error(qp);
    swp_lock(qp->ctx);
    if (qp->state != SIWARP_QPS_ERROR) {
        swp_qp_set_error(qp, -ECANCELED, "moved to error by the application");
        if (qp->state == SIWARP_QPS_RTS)
            swp_qp_fatal(qp, SWP_TERM(SWP_TERM_LAYER_RDMAP, SWP_RDMAP_ET_REMOTE_OP,
                                      SWP_RDMAP_EC_CATA_STREAM),
                         NULL, 0, -ECANCELED, "moved to error by the application");
        else
            swp_qp_enter_error(qp);
    }
    swp_unlock(qp->ctx);
    return 0;
}

int siwarp_disconnect(struct siwarp_qp *qp)
{
    if (!qp)
        return -EINVAL;
    if (qp->ctx->hw) return swp_hw_disconnect(qp);
    swp_lock(qp->ctx);
    if (qp->state == SIWARP_QPS_RTS) {
        swp_qp_set_state(qp, SIWARP_QPS_CLOSING);
        swp_tx_progress(qp);   /* shuts down the write side once drained */
    } else if (qp->state != SIWARP_QPS_ERROR) {
        swp_qp_set_error(qp, 0, "disconnected");
        swp_qp_enter_error(qp);
    }
    swp_unlock(qp->ctx);
    return 0;
}

int siwarp_qp_fd(const struct siwarp_qp *qp)
{
    return qp ? qp->pl.fd : -1;
}

SWP_HOT
void *siwarp_qp_get_context(const struct siwarp_qp *qp)
{
    return qp ? qp->user : NULL;
}

void siwarp_qp_set_context(struct siwarp_qp *qp, void *user)
{
    if (qp)
        qp->user = user;
}
