/*
 * swp.h - libsiwarp internals shared between files.  Nothing here is
 * public; the public API is include/siwarp/siwarp.h.
 */
#ifndef SWP_SWP_H
#define SWP_SWP_H

/* SWP_HOT marks the per-message path: receive, completion, post, transmit
 * and CRC.  GCC puts such functions in .text.hot, which the linker lays out
 * as one run, so a hop's code spans about 5 pages instead of 14.  Where a
 * syscall empties the TLB (page table isolation without PCID, as on the
 * guests measured here: about 21 cycles for each page touched after every
 * recv and send) that is part of a hop's cost (README, "Per hop"). */
#define SWP_HOT __attribute__((hot))

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "siwarp/siwarp.h"
#include "iwarp_wire.h"

/* ---- small lists ---------------------------------------------------------- */

struct swp_list {
    struct swp_list *next, *prev;
};

static inline void swp_list_init(struct swp_list *l) { l->next = l->prev = l; }
static inline bool swp_list_empty(const struct swp_list *l) { return l->next == l; }
static inline void swp_list_add_tail(struct swp_list *l, struct swp_list *n)
{
    n->prev = l->prev;
    n->next = l;
    l->prev->next = n;
    l->prev = n;
}
static inline void swp_list_del(struct swp_list *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->next = n->prev = n;
}
#define swp_container_of(p, type, member) \
    ((type *)((char *)(p) - offsetof(type, member)))

/* ---- logging -------------------------------------------------------------- */

/* Debug trace to stderr when SIWARP_DEBUG is set in the environment. */
void swp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern int swp_debug;
#define SWP_DBG(...) do { if (swp_debug) swp_log(__VA_ARGS__); } while (0)

uint64_t swp_now_ns(void);
#include "timeline.h"

/* ---- CRC32c (crc32c.c) ---------------------------------------------------- */

/* crc is the running value as returned by a previous call, starting from 0;
 * the result is the final CRC (pre/post inversion handled inside). */
uint32_t swp_crc32c(uint32_t crc, const void *buf, size_t len);
uint32_t swp_crc32c_portable(uint32_t crc, const void *buf, size_t len);
const char *swp_crc32c_name(void);
/* Copy src to dst and fold the bytes into crc in one pass. */
uint32_t swp_crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len);

/* ---- progress engine (progress.c) ----------------------------------------- */

struct swp_pollable;
typedef void (*swp_poll_fn)(struct swp_pollable *p, uint32_t events);

struct swp_pollable {
    int fd;
    uint32_t events;      /* EPOLLIN / EPOLLOUT currently armed */
    bool added;           /* fd is in the epoll set */
    bool parked;          /* out of the set while the fast path reads it */
    swp_poll_fn fn;
};

struct swp_timer;
typedef void (*swp_timer_fn)(struct swp_timer *t);
struct swp_timer {
    struct swp_list link;
    uint64_t deadline_ns;
    swp_timer_fn fn;
    bool armed;
};

int  swp_poll_add(struct siwarp_ctx *ctx, struct swp_pollable *p, int fd,
                  uint32_t events, swp_poll_fn fn);
int  swp_poll_mod(struct siwarp_ctx *ctx, struct swp_pollable *p, uint32_t events);
void swp_poll_del(struct siwarp_ctx *ctx, struct swp_pollable *p);
/* every parked QP socket back into the epoll set; 0 or -errno */
int  swp_ctx_unpark(struct siwarp_ctx *ctx);
/* the context's fd handed out: from now on it must see every socket */
int  swp_ctx_export_fd(struct siwarp_ctx *ctx);
void swp_timer_arm(struct siwarp_ctx *ctx, struct swp_timer *t, uint64_t after_ms,
                   swp_timer_fn fn);
void swp_timer_cancel(struct swp_timer *t);
/* wake up pollers of the ctx fd (a completion was queued outside progress) */
void swp_ctx_kick(struct siwarp_ctx *ctx);
/* qp.c: keepalive and TCP_USER_TIMEOUT on a socket for an LLP timeout of
 * ms (0: the default, < 0: none); returns the timeout it stands for */
int swp_sock_set_llp_timeout(int fd, int ms);
/* ... on the QP's socket, per conn_param.llp_timeout_ms, unless it has it
 * already (llp_preset_ms) */
void swp_qp_set_llp_timeout(struct siwarp_qp *qp);
int  swp_progress_locked(struct siwarp_ctx *ctx, int timeout_ms);
/* One non-blocking pass over every socket, listeners included: never the
 * busy-poll fast path. */
int  swp_progress_all_locked(struct siwarp_ctx *ctx);
/* Progress (lock held) until done(arg) or timeout_ms (-1: no limit):
 * 0, -ETIMEDOUT, or a progress error. */
int  swp_progress_until(struct siwarp_ctx *ctx, int timeout_ms, bool (*done)(void *arg), void *arg);

/* ---- memory: PD, MR, STag table (mem.c) ----------------------------------- */

struct siwarp_pd {
    struct siwarp_ctx *ctx;
    void *hw;                 /* verbs backend object, NULL in software */
    uint32_t id;
    uint32_t refs;        /* MRs + QPs */
};

struct siwarp_mr {
    struct siwarp_pd *pd;
    void *hw;
    uint8_t *addr;
    uint64_t len;
    int access;
    uint32_t stag;
    bool valid;           /* false after invalidation */
    uint64_t hint_gen;    /* read_hint.c: a hint made at another value is void */
};

/* Result of a remote access check: 0, or a Terminate code for the sender
 * (swp_term_code built with SWP_TERM()). */
#define SWP_TERM(layer, etype, code) \
    ((uint32_t)(((layer) & 0xf) << 12 | ((etype) & 0xf) << 8 | ((code) & 0xff)))
#define SWP_TERM_LAYER(t)  (((t) >> 12) & 0xf)
#define SWP_TERM_ETYPE(t)  (((t) >> 8) & 0xf)
#define SWP_TERM_CODE(t)   ((t) & 0xff)

/* Check a remote tagged access in the order STag valid -> PD -> rights ->
 * bounds (with overflow).  On success *dst points at the first byte.  The
 * `tagged_layer` selects which layer reports: DDP for placement (Write,
 * Read Response), RDMAP for a Read Request source.  Returns 0 or a term code. */
uint32_t swp_mem_check_remote(struct siwarp_ctx *ctx, struct siwarp_pd *pd,
                              uint32_t stag, uint64_t to, uint64_t len, int access,
                              int layer, uint8_t **dst);
/* The MR an STag names now (index and key), or NULL. */
struct siwarp_mr *swp_mem_lookup(struct siwarp_ctx *ctx, uint32_t stag);
/* Local SGE check: lkey valid, same PD, rights, bounds.  0 or -EINVAL/-EACCES. */
int swp_mem_check_local(struct siwarp_ctx *ctx, struct siwarp_pd *pd,
                        const struct siwarp_sge *sge, int access);
/* Remote invalidate (Send with Invalidate), RFC 5040 6.2: 0 or term code. */
uint32_t swp_mem_invalidate_remote(struct siwarp_ctx *ctx, struct siwarp_pd *pd, uint32_t stag);
void swp_mem_fini(struct siwarp_ctx *ctx);

/* ---- completion queue (cq.c) ---------------------------------------------- */

struct siwarp_cq {
    struct siwarp_ctx *ctx;
    void *hw;
    struct siwarp_wc *ring;
    uint32_t size, head, count;
    uint32_t refs;
    uint64_t overflows;
    siwarp_recv_handler_fn recv_fn;      /* siwarp_cq_set_recv_handler */
    void *recv_arg;
    uint32_t recv_max;                   /* longest message handed over in place */
};
int swp_cq_push(struct siwarp_cq *cq, const struct siwarp_wc *wc);
void swp_cq_purge_qp(struct siwarp_cq *cq, const struct siwarp_qp *qp);

/* ---- QP work queues ------------------------------------------------------- */

#define SWP_MAX_SGE 16
#define SWP_SGE_INLINE 2             /* SGEs a send WQE holds itself */

struct swp_swqe {
    uint64_t wr_id;
    enum siwarp_wr_opcode opcode;
    int flags;                       /* SIWARP_SEND_* */
    uint32_t inv_stag;
    uint64_t raddr;                  /* RFC 7306 Immediate Data: the 8 octets
                                      * (it names no remote buffer) */
    uint32_t rkey;
    uint32_t num_sge;
    uint64_t len;                    /* total bytes */
    struct siwarp_sge *sge;          /* sge_inline, or init.max_sge entries in
                                      * qp->sq_sge when that is more */
    uint8_t *inline_buf;             /* owned copy for SIWARP_SEND_INLINE */
    /* progress */
    uint64_t sent;                   /* payload bytes segmented into FPDUs */
    uint64_t done_at;                /* tx byte count at which it is on the wire */
    bool segmented;                  /* all FPDUs (or the Read Request) queued */
    bool complete;                   /* may be retired (read: response arrived) */
    uint32_t status;                 /* enum siwarp_wc_status for completion */
    uint32_t vendor_err;
    /* the SGEs on the WQE's own cache lines (128 bytes in all): no second
     * array, whose first page was one more fault for every new QP */
    struct siwarp_sge sge_inline[SWP_SGE_INLINE];
};

struct swp_rwqe {
    uint64_t wr_id;
    uint32_t num_sge;
    uint64_t len;
    struct siwarp_sge *sge;          /* init.max_sge entries in qp->rq_sge */
    uint64_t mr_gen;                 /* ctx->mr_gen when its SGL was checked */
};

/* The operands of a posted RFC 7306 atomic, in wire terms (qp_ext.c). */
struct swp_amo {
    unsigned op;                     /* SWP_ATOMIC_* */
    uint64_t data, data_mask, cmp, cmp_mask;
};

/* Check a receive WR's SGL against pd (lkey, rights, bounds) and copy it
 * into w (w->sge has room for max_sge).  0, -EINVAL or -EMSGSIZE. */
int swp_rwqe_fill(struct siwarp_ctx *ctx, struct siwarp_pd *pd, uint32_t max_sge,
                  struct swp_rwqe *w, const struct siwarp_recv_wr *wr);

/* An inbound RDMA Read Request being served (RFC 5040 4.4, 5.2), or an
 * executed RFC 7306 atomic whose response is due. */
struct swp_irqe {
    uint32_t sink_stag;
    uint32_t len;
    uint64_t sink_to;
    uint8_t *src;                    /* validated source bytes */
    uint32_t sent;
    uint32_t req_id;                 /* atomic: Request Identifier */
    uint64_t done_at;                /* tx.queued after its last FPDU */
    uint64_t orig;                   /* atomic: the target's value before */
    struct swp_read_hint *hint;      /* read_hint.c: its payload CRCs, or NULL */
    bool atomic;
};

/* A ring of fixed-size entries; size is a power of two. */
struct swp_ring {
    uint32_t head, tail, mask;       /* head: oldest, tail: next free */
};
static inline uint32_t swp_ring_count(const struct swp_ring *r) { return r->tail - r->head; }

/* ---- negotiated connection parameters ------------------------------------- */

struct swp_nego {
    int mpa_rev;
    bool crc, p2p;
    bool markers_tx, markers_rx;   /* RFC 5044 7.1: markers per direction */
    int rtr;                  /* one SIWARP_RTR_* bit, or 0 */
    bool initiator;
    uint16_t ird, ord;
    uint32_t mulpdu;          /* max ULPDU we send */
    uint32_t max_rx_ulpdu;    /* max ULPDU we accept */
    bool peer_is_siwarp;
    bool rfc7306;             /* both ends take the RFC 7306 opcodes (mpa.h) */
    uint8_t peer_pd[SWP_MPA_MAX_PD];
    uint16_t peer_pd_len;
    /* stream octet offsets of the first FPDU, for marker placement
     * (RFC 5044 4.3: markers start with the first FPDU of full operation) */
};

/* ---- transmit cursor (qp_tx.c) -------------------------------------------- */

#define SWP_TX_IOV   512
#define SWP_TX_HDRS  16384
/* Bytes gathered per sendmsg at most.  Each FPDU's CRC is computed as it
 * joins the batch and the kernel copies the batch afterwards, so a batch
 * that outgrows the core's L2 (2 MiB on the Xeon measured) is read from
 * L3 a second time: 1 MiB instead of 4 moved 4 MiB messages 9-10% faster
 * (loopback and veth), 1 MiB unchanged (contrib/PERFORMANCE.md). */
#define SWP_TX_BATCH (1u << 20)
#define SWP_TX_BATCH_FIRST 262144u   /* ... in the first batch after the stream
                                        was idle (qp_tx.h swp_tx_batch_cap) */

struct swp_tx {
    /* iov and hdrs: 24 KiB in the QP's block (qp.c swp_qp_alloc), not
     * zeroed: written before they are read */
    struct iovec *iov;               /* SWP_TX_IOV: pending bytes, in stream order */
    uint32_t niov, iov_done;         /* iov[iov_done..niov) still to write */
    uint64_t pending;                /* bytes still in iov[] */
    uint8_t *hdrs;                   /* SWP_TX_HDRS: headers, pads, CRCs, markers of
                                      * pending FPDUs */
    uint32_t hdrs_used;
    uint64_t queued;                 /* stream bytes ever queued */
    uint64_t written;                /* stream bytes ever written */
    uint64_t stream_off;             /* octets since the first FPDU (markers) */
    uint64_t fpdu_start;             /* stream_off of the current FPDU */
    uint32_t crc;                    /* running CRC of the FPDU being built */
    uint8_t *tail;                   /* owned copy of bytes left at a fatal error */
    uint64_t topped_up;              /* bytes queued while the socket was full */
    uint32_t ramp;                   /* batches written since the stream was
                                        last idle (tx_batch_cap) */
};

/* An ORQ slot held by the zero-length Read of the P2P RTR (RFC 6581 6) */
#define SWP_ORQ_RTR UINT32_MAX

/* ---- receive cursor (qp_rx.c) --------------------------------------------- */

enum swp_rx_state {
    SWP_RX_HDR,        /* collecting ULPDU_Length + DDP/RDMAP header */
    SWP_RX_PAYLOAD,    /* placing payload */
    SWP_RX_TRAILER,    /* pad + CRC */
};

/* Staging buffer size.  One buffer per context, shared by its QPs: a QP's
 * swp_rx_progress parses everything it staged before it returns (or dies
 * with its QP), so no QP keeps bytes there between calls.  A read asks for
 * SWP_RX_READ octets, or for all of the buffer after a Send segment of
 * SWP_RX_READ_BIG_SEG octets or more: a stream of such messages then has
 * one cut by the end of a read in eight instead of one in two (each costs
 * qp_rx.c's swp_rx_stage_rest a move), while smaller messages keep the
 * smaller reads, after which their credits go back sooner (4-8 KiB MPI
 * bandwidth fell 7% with every read asking 256 KiB). */
#define SWP_RX_STAGE 262144
#define SWP_RX_READ 65536
#define SWP_RX_READ_BIG_SEG 16384
/* Reads land this far into the staging allocation: an FPDU at the start of
 * a read then has its Send payload (20 octets of MPA and DDP/RDMAP header
 * in) 8-aligned, so a receive handler can read it in place. */
#define SWP_RX_STAGE_SKEW 4
#define SWP_RX_LOOKAHEAD 64      /* staged behind a large segment: the next
                                    header (any header fits) and a few bytes */
/* Where qp_rx.c (swp_rx_stage_rest) moves the staged part of a Send to read
 * its rest behind it: room for the header octets before it, and its
 * payload 8-aligned, as at the start of a read. */
#define SWP_RX_REST_AT 60
_Static_assert((SWP_RX_STAGE_SKEW + SWP_RX_REST_AT) % 8 == 0, "a moved Send payload is 8-aligned");
/* A speculative read (qp_rx_direct.c) asks for at most this many FPDUs
 * beyond the current segment, each at most SWP_RX_SPEC_FPDU_MAX octets on
 * the wire (ULPDU_Length 65535, pad, CRC).  What it read in the wrong places
 * is gathered into the context's spill buffer (allocated at the first
 * speculation). */
#define SWP_RX_SPEC_FPDUS    2
#define SWP_RX_SPEC_FPDU_MAX (SWP_MPA_HDR_LEN + 65535u + 3u + SWP_MPA_CRC_LEN)
#define SWP_RX_SPILL         (SWP_RX_SPEC_FPDUS * SWP_RX_SPEC_FPDU_MAX + SWP_RX_LOOKAHEAD)

struct swp_rx {
    enum swp_rx_state state;
    uint8_t *buf;                    /* the context's staging buffer */
    uint32_t buf_size, buf_head, buf_tail;
    uint8_t hdr[SWP_MPA_HDR_LEN + SWP_HDR_MAX];
    uint32_t hdr_got, hdr_want;
    int hdr_phase;                   /* 0: length+ctrl, 1: DDP header, 2: full */
    uint32_t ulpdu_len;
    uint32_t payload_left;
    uint8_t *place;                  /* where the next payload byte goes, or NULL */
    struct iovec place_iov[SWP_MAX_SGE];
    uint32_t place_key[SWP_MAX_SGE]; /* the STag each piece was checked under (0: ours) */
    uint64_t place_gen;              /* ctx->mr_gen when they were checked */
    uint32_t place_niov, place_idx, place_off;
    uint8_t trailer[8];
    uint32_t trailer_got, trailer_want;
    uint32_t crc;
    bool crc_checked;                /* the current FPDU's CRC was checked whole
                                        before parsing (rx_crc_whole) */
    uint64_t stream_off;             /* octets read since first FPDU (markers) */
    uint64_t fpdu_start;             /* stream_off at current FPDU start */
    uint8_t marker[SWP_MPA_MARKER_LEN];
    uint32_t marker_got;
    bool lead_marker;                /* a marker led the FPDU being parsed */
    uint32_t seg_len;                /* payload bytes of the current segment */
    unsigned op;                     /* opcode of the current segment */
    bool last;                       /* L flag of the current segment */
    uint64_t copied, direct;         /* payload octets placed from staging /
                                        read straight into the target */
    uint64_t spec_hits, spec_misses; /* predicted FPDUs that were / were not
                                        what came (qp_rx_direct.c) */
    bool behind;                     /* the last direct read got all it asked */
    bool bulk;                       /* the current (or last) segment is large:
                                        read headers with a small lookahead so
                                        payload goes straight to its target */
    /* current untagged message per queue: RFC 5041 5.3 */
    uint32_t msn[SWP_QN_COUNT];      /* next expected MSN per QN */
    uint32_t recv_got;               /* bytes placed into the current receive WQE */
    bool cur_is_recv;
    /* the payload of the segment whose header was just read, and how many
     * octets follow it in the current read: a Send that lies whole in it
     * goes to the recv CQ's handler in place (cur_inline) */
    const uint8_t *inl;
    uint32_t inl_avail;
    bool cur_inline;
    bool cur_verify;                 /* the Send being read is the one to verify */
};

/* ---- shared receive queue (srq.c) ------------------------------------------- */

struct siwarp_srq {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct swp_rwqe *rq;  struct swp_ring rqr;   /* posted, oldest first */
    struct siwarp_sge *sge;                      /* max_sge per ring slot */
    uint32_t max_wr, max_sge;
    uint32_t refs;                               /* QPs attached */
};

/* The WQE the current untagged Send segment of qp lands in, without taking
 * it: the one its message already holds, else the RQ's (or SRQ's) oldest.
 * NULL: no buffer. */
struct swp_rwqe *swp_recv_wqe_peek(struct siwarp_qp *qp);
/* The segment passed its checks: a QP on an SRQ now owns the WQE until the
 * message's last segment (RFC 5041 5.3: later segments of the MSN land in
 * the same buffer, whatever other QPs take meanwhile). */
void swp_recv_wqe_take(struct siwarp_qp *qp);
/* The message is delivered: release the WQE (RQ: advance; SRQ: unbind). */
void swp_recv_wqe_done(struct siwarp_qp *qp);
/* Flush what qp holds: its RQ, or the SRQ WQE its message had taken, then
 * (once) SIWARP_WC_SRQ_LAST.  The QP is in ERROR. */
void swp_recv_flush(struct siwarp_qp *qp);

/* ---- connection manager (cm.c) -------------------------------------------- */

enum swp_cm_state {
    SWP_CM_IDLE,
    SWP_CM_TCP_CONNECTING,     /* initiator: non-blocking connect */
    SWP_CM_SEND_REQ,           /* initiator: writing MPA Request */
    SWP_CM_WAIT_REP,           /* initiator: reading MPA Reply */
    SWP_CM_WAIT_REQ,           /* responder: reading MPA Request (listener side) */
    SWP_CM_WAIT_ACCEPT,        /* responder: request handed to the application */
    SWP_CM_SEND_REP,           /* responder: writing MPA Reply */
    SWP_CM_RTR_WAIT,           /* P2P: waiting for the peer's RTR */
    SWP_CM_DONE,
    SWP_CM_FAILED,
};

struct swp_cm {
    enum swp_cm_state state;
    struct siwarp_conn_param param;
    uint8_t out[sizeof(struct swp_mpa_rr) + SWP_MPA_MAX_PD];
    uint32_t out_len, out_done;
    uint8_t in[sizeof(struct swp_mpa_rr) + SWP_MPA_MAX_PD];
    uint32_t in_got;
    struct swp_timer timer;
    struct sockaddr_storage peer;
    socklen_t peer_len;
    int tries;                 /* fallbacks taken (v1, no markers) */
    uint64_t started_ns;       /* this attempt's connect() */
    bool req_late;             /* our Request left late (cm_send_req) */
    bool late_retried;         /* ... and a fresh attempt was made for it */
    uint8_t user_pd[SWP_MPA_MAX_PD];
};

/* ---- QP --------------------------------------------------------------------- */

struct siwarp_qp {
    struct siwarp_ctx *ctx;
    void *hw;
    struct siwarp_pd *pd;
    struct siwarp_cq *scq, *rcq;
    struct swp_list link;            /* ctx->qps */
    void *user;
    enum siwarp_qp_state state;
    struct swp_pollable pl;          /* the TCP socket */
    /* its two addresses, read once (siwarp_query_qp is polled while a
     * connection is made: two syscalls a call were most of its cost) */
    struct sockaddr_storage addr_local, addr_peer;
    bool addr_known;                 /* cleared whenever pl.fd is closed */
    int llp_preset_ms;               /* LLP timeout the socket has already (inherited
                                      * from its listener), 0: none */
    struct swp_cm cm;
    struct swp_nego nego;
    struct siwarp_qp_init_attr init;

    /* WQEs carry a pointer to their SGEs: sized by init.max_sge, not
     * SWP_MAX_SGE, they keep a deep queue small (memory per peer) */
    struct siwarp_sge *sq_sge, *rq_sge;
    struct swp_swqe *sq;  struct swp_ring sqr;   /* posted sends, oldest first */
    uint32_t sq_cur;                             /* index of WQE being transmitted */
    struct swp_rwqe *rq;  struct swp_ring rqr;   /* posted receives */
    uint32_t *orq;        struct swp_ring orqr;  /* our outstanding Reads and atomics:
                                                    sq idx, or SWP_ORQ_RTR */
    struct swp_amo *amo;                         /* atomic operands per SQ slot,
                                                    allocated by the first atomic */
    struct swp_irqe *irq; struct swp_ring irqr;  /* peer Reads we serve */
    struct swp_read_hint *read_hint;             /* a Read announced (read_hint.c) */
    uint32_t irq_wr;      /* oldest irq entry whose response is not all written */
    struct siwarp_srq *srq;                      /* NULL: receives come from rq */
    struct swp_rwqe srq_wqe;                     /* taken from srq by the message */
    bool srq_bound;                              /* ... being received now */
    uint64_t srq_taken;                          /* WQEs ever taken from srq */
    bool srq_last;                               /* SIWARP_WC_SRQ_LAST queued */
    struct siwarp_sge srq_sge[SWP_MAX_SGE];
    uint32_t tx_msn[SWP_QN_COUNT];               /* next MSN we send per QN */

    struct swp_tx tx;
    struct swp_rx rx;

    bool rtr_pending_tx;        /* P2P initiator: send the RTR first */
    bool rtr_wait_rx;           /* P2P responder: hold sends until RTR */
    bool rtr_wait_resp;         /* P2P initiator: hold sends until the Read
                                   RTR's response shows the peer reads */
    int rtr_retries;
    bool rtr_nudge;             /* send a zero-length Write (tx_rtr_tick) */
    uint64_t rtr_deadline_ns;   /* held P2P work fails after this */
    struct swp_timer rtr_timer;
    bool term_pending;          /* a Terminate waits to be queued in tx */
    uint8_t term_msg[SWP_TERM_MAX_LEN];
    uint32_t term_len;
    bool closing;
    uint32_t term_sent, term_recv;
    int error;
    char error_str[128];
    struct swp_timer close_timer;    /* bounds the wait for a Terminate to leave */
    /* send coalescing (init.tx_coalesce): WRs held back since the last
     * sendmsg, the progress epoch of that sendmsg, and ctx->tx_held */
    uint32_t tx_held;
    uint64_t tx_epoch;
    struct swp_list tx_held_link;
    /* siwarp_qp_verify_first_send: the peer's first Send is read into
     * verify_buf and checked by verify_fn before anything else of the
     * peer is taken (qp_rx_ops.c swp_rx_verify_hdr) */
    siwarp_verify_fn verify_fn;
    void *verify_arg;
    uint8_t *verify_buf;             /* verify_max octets */
    uint32_t verify_max;
    int verify_timeout_ms;
    bool verify_pending;             /* armed, not passed yet */
    struct swp_timer verify_timer;   /* from RTS: the first Send's deadline */
    /* a peer that stops inside an FPDU (qp.c swp_qp_stall_sweep): the
     * stream offset at the last sweep, and since when it stands inside an
     * FPDU without moving */
    uint64_t rx_stall_off;
    uint64_t rx_stall_since_ns;
};

/* qp.c: state table and the one setter */
int  swp_qp_set_state(struct siwarp_qp *qp, enum siwarp_qp_state next);
/* Protocol violation: queue a Terminate with `term` (SWP_TERM code),
 * record why, move to TERMINATE and then ERROR.  `bad_hdr`, if not NULL, is
 * the offending DDP/RDMAP header copied into the Terminate (RFC 5040 4.8). */
void swp_qp_fatal(struct siwarp_qp *qp, uint32_t term, const uint8_t *bad_hdr,
                  uint32_t bad_hdr_len, int err, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Complete every outstanding WQE with SIWARP_WC_WR_FLUSH_ERR. */
void swp_qp_flush(struct siwarp_qp *qp);
/* Called by cm.c once MPA negotiation succeeded: switch to FPDU mode. */
int  swp_qp_established(struct siwarp_qp *qp);
/* Called by cm.c when the connection could not be set up. */
void swp_qp_conn_failed(struct siwarp_qp *qp, int err, const char *why);
void swp_qp_io(struct swp_pollable *p, uint32_t events);
void swp_sq_retire(struct siwarp_qp *qp);
void swp_sq_complete_now(struct siwarp_qp *qp, uint64_t wr_id, enum siwarp_wr_opcode op,
                         uint32_t len);
int  swp_qp_attach_fd(struct siwarp_qp *qp, int fd, const struct swp_nego *nego);
void swp_qp_link(struct siwarp_qp *qp);
void swp_qp_term_received(struct siwarp_qp *qp, uint32_t term);
void swp_qp_llp_closed(struct siwarp_qp *qp, int err, bool clean);

/* qp_tx.c */
int  swp_tx_progress(struct siwarp_qp *qp);    /* 0, -EAGAIN, or fatal error */
void swp_tx_post(struct siwarp_qp *qp);        /* after a post: send or coalesce */
/* a lone small Send on an idle QP, framed and written at once: 0 not
 * taken, 1 taken, 2 taken and complete (SIWARP_SEND_COMPLETE_AT_POST) */
int  swp_tx_direct_send(struct siwarp_qp *qp, const struct siwarp_send_wr *wr);
void swp_tx_flush_held(struct siwarp_ctx *ctx); /* progress: send coalesced WRs */
bool swp_tx_goes_now(const struct siwarp_qp *qp); /* siwarp_qp_send_goes_now */
/* P2P start-up (qp_tx.c): the RTR timer ticks every SWP_RTR_RETRY_MS */
#define SWP_RTR_RETRY_MS   100
#define SWP_RTR_RETRIES    30       /* nudges, during the first 3 s */
#define SWP_RTR_TIMEOUT_MS 10000    /* when conn_param.timeout_ms is unset */
void swp_tx_rtr_start(struct siwarp_qp *qp);   /* P2P start-up timer */
void swp_tx_rtr_settle(struct siwarp_qp *qp);  /* ... gone once start-up is over */
int  swp_tx_queue_terminate(struct siwarp_qp *qp, uint32_t term, const uint8_t *hdr,
                            uint32_t hdr_len);
uint32_t swp_fpdu_wire_len(uint32_t ulpdu_len, bool crc);

/* qp_rx.c */
int  swp_rx_progress(struct siwarp_qp *qp);    /* 0, -EAGAIN, or fatal error */
/* Point the QP's parser at the context's staging buffer (allocated by the
 * first QP): 0 or -ENOMEM. */
int  swp_rx_init(struct siwarp_qp *qp);
extern int swp_rx_budget;
/* segments from this size on are read straight into their target when CRC
 * is on: by default none (qp_rx.c); tests lower it */
extern uint32_t swp_rx_bulk_min_crc;
int  swp_sgl_iov(struct siwarp_qp *qp, const struct siwarp_sge *sge, uint32_t num_sge,
                    uint64_t off, uint32_t len, struct iovec *iov, uint32_t *keys,
                    uint32_t max, bool checked);
int  swp_rx_fpdu_done(struct siwarp_qp *qp);    /* 0, or -EBADMSG (CRC) */
int  swp_rx_parse(struct siwarp_qp *qp, const uint8_t *p, uint32_t n);
/* The current segment's target, for the header checks of qp_rx_ops.c:
 * len octets at dst (NULL: discard them) in the MR of STag key (0: a
 * buffer of the library's), or bytes [off, off + len) of an SGL (0, or
 * -EACCES).  swp_rx_stage_rest: read the rest of a Send the last read cut
 * behind its staged part; true when all of it is there. */
void swp_rx_place_one(struct siwarp_qp *qp, uint8_t *dst, uint32_t len, uint32_t key);
int  swp_rx_place_sgl(struct siwarp_qp *qp, const struct siwarp_sge *sge, uint32_t num_sge,
                      uint64_t off, uint32_t len, bool checked);
bool swp_rx_stage_rest(struct siwarp_qp *qp, uint32_t rest);

/* qp_rx_ops.c: per RDMAP opcode, the header check (0 or an RFC 5040
 * Terminate code, SWP_TERM) and the completion after the CRC. */
struct swp_rx_op {
    uint32_t (*hdr)(struct siwarp_qp *qp);
    void (*done)(struct siwarp_qp *qp);
};
extern const struct swp_rx_op swp_rx_ops[SWP_OP_MAX];
/* RFC 5041 5.3: queue number, then MSN, of the untagged segment received */
uint32_t swp_rx_check_untagged(struct siwarp_qp *qp, unsigned qn_expected);
/* a received message's completion to the recv CQ, or its handler */
void swp_rx_deliver(struct siwarp_qp *qp, const struct siwarp_wc *wc, const uint8_t *data);

/* qp_ext.c: RFC 7306 (atomics, Immediate Data) */
bool swp_wr_is_ext(enum siwarp_wr_opcode op);
bool swp_wr_awaits_response(enum siwarp_wr_opcode op);   /* Read or atomic */
int  swp_ext_post_check(struct siwarp_qp *qp, const struct siwarp_send_wr *wr);
int  swp_ext_post_fill(struct siwarp_qp *qp, struct swp_swqe *w, uint32_t slot,
                       const struct siwarp_send_wr *wr);
bool swp_tx_atomic_req(struct siwarp_qp *qp, const struct swp_swqe *w, uint32_t req_id);
bool swp_tx_atomic_resp(struct siwarp_qp *qp, struct swp_irqe *r);
bool swp_tx_imm(struct siwarp_qp *qp, struct swp_swqe *w);
uint32_t swp_rx_hdr_imm(struct siwarp_qp *qp);
uint32_t swp_rx_hdr_atomic_req(struct siwarp_qp *qp);
uint32_t swp_rx_hdr_atomic_resp(struct siwarp_qp *qp);
void swp_rx_done_imm(struct siwarp_qp *qp);
void swp_rx_done_atomic_req(struct siwarp_qp *qp);
void swp_rx_done_atomic_resp(struct siwarp_qp *qp);
/* Execute an RFC 7306 atomic on *t with the CPU's atomic instructions;
 * returns the value before.  FetchAdd: data is added field by field, the
 * fields' top bits set in data_mask (0: plain add).  CmpSwap: if the bits
 * of cmp_mask equal cmp's, those of data_mask are taken from data. */
uint64_t swp_atomic_exec(uint64_t *t, unsigned op, uint64_t data, uint64_t data_mask,
                         uint64_t cmp, uint64_t cmp_mask);
/* The header check of a segment that comes while the peer's first Send is
 * still to be verified (siwarp_qp_verify_first_send): 0, or a Terminate
 * code.  And the verification itself once that Send is in. */
uint32_t swp_rx_verify_hdr(struct siwarp_qp *qp);
/* qp.c: RTS reached with a verification pending: arm its deadline */
void swp_qp_verify_arm(struct siwarp_qp *qp);
/* qp.c: fail the QPs whose peer stopped inside an FPDU for
 * ctx->rx_stall_ms; looks at most every SWP_STALL_SWEEP_MS (progress.c
 * calls it) */
#define SWP_STALL_SWEEP_MS 50
#define SWP_STALL_SWEEP_MIN 64          /* QPs a pass looks at, at least */
#define SWP_RX_STALL_DEFAULT_MS 300000
void swp_qp_stall_sweep(struct siwarp_ctx *ctx);
void swp_qp_unlink(struct siwarp_qp *qp);

/* Is the segment being received the peer-to-peer RTR of this type (RFC
 * 6581 6: a zero-length message of the negotiated kind, while one is due)? */
static inline bool swp_rx_is_rtr(const struct siwarp_qp *qp, int type)
{
    return qp->rtr_wait_rx && qp->nego.rtr == type && qp->rx.seg_len == 0 && qp->rx.last;
}

/* qp_rx_direct.c: read the current large segment's payload straight into
 * its target (and, for a Read Response, the segments predicted behind it).
 * Octets read, 0 at end of stream, or a negative errno; *full says every
 * octet asked for came. */
ssize_t swp_rx_direct(struct siwarp_qp *qp, bool *full);

/* cm.c */
int  swp_cm_connect(struct siwarp_qp *qp, const struct sockaddr *addr, socklen_t len,
                    const struct siwarp_conn_param *param);
void swp_cm_fini(struct siwarp_qp *qp);
void swp_cm_io(struct siwarp_qp *qp, uint32_t events);  /* events while connecting */
int  swp_cm_read_rr(int fd, uint8_t *in, uint32_t *got, bool reply);

/* ---- MPA (mpa.c) ------------------------------------------------------------ */

/* Build an MPA Request/Reply frame into out (>= 20 + 512 bytes).
 * For rev 2 the IRD/ORD block is prepended to the user private data. */
int swp_mpa_build_rr(uint8_t *out, size_t outlen, bool reply, int rev,
                     uint8_t flags, uint16_t ird_word, uint16_t ord_word,
                     const void *pd, uint16_t pd_len);
/* Parse the first 20 bytes; returns the total frame length, or a negative
 * errno (-EPROTO for a wrong key, -EMSGSIZE for private data over 512). */
int swp_mpa_parse_rr_hdr(const uint8_t *in, size_t len, bool reply);
/* Markers: number of marker octets that a stream segment [off, off+len)
 * (counted in FPDU-stream octets excluding markers) must carry. */
uint64_t swp_mpa_marker_next(uint64_t stream_off);
uint32_t swp_mpa_mulpdu(uint32_t mss, bool markers, bool crc);
/* RFC 5044 4.4: the CRC field's byte order on the wire.  The CRC32c value
 * goes out least significant byte first, as siw (and iSCSI's digest) send it
 * and as Wireshark checks it (verified against the siw captures). */
static inline void swp_mpa_put_crc(uint8_t *p, uint32_t crc)
{
    p[0] = (uint8_t)crc;
    p[1] = (uint8_t)(crc >> 8);
    p[2] = (uint8_t)(crc >> 16);
    p[3] = (uint8_t)(crc >> 24);
}
static inline uint32_t swp_mpa_get_crc(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- DDP / RDMAP helpers (ddp.c, rdmap.c) ---------------------------------- */

struct swp_opinfo {
    const char *name;
    uint32_t hdr_len;           /* DDP + RDMAP header, MPA length excluded */
    bool tagged;
    uint8_t qn;                 /* untagged queue */
    bool has_payload;
};
extern const struct swp_opinfo swp_opinfo[SWP_OP_MAX];

/* Validate DDP/RDMAP control bytes of a received header (RFC 5041 5.1,
 * RFC 5040 4.2); rfc7306: the stream negotiated RFC 7306's opcodes.  0 or
 * a term code. */
uint32_t swp_ddp_check_ctrl(const struct swp_ctrl *c, bool rfc7306);
/* Build headers.  Return header length. */
uint32_t swp_ddp_build_tagged(uint8_t *h, unsigned op, bool last, uint32_t stag, uint64_t to);
uint32_t swp_ddp_build_untagged(uint8_t *h, unsigned op, bool last, uint32_t qn,
                                uint32_t msn, uint32_t mo, uint32_t inv_stag);
/* Terminate: build the payload-carrying header, parse one. */
uint32_t swp_rdmap_build_term(uint8_t *h, uint32_t msn, uint32_t term,
                              const uint8_t *bad_hdr, uint32_t bad_hdr_len);
int swp_rdmap_parse_term(const uint8_t *h, uint32_t len, uint32_t *term);
const char *swp_term_str(uint32_t term, char *buf, size_t len);

/* ---- context ------------------------------------------------------------------ */

struct swp_stag_ent {
    struct siwarp_mr *mr;
    uint8_t key;
    uint32_t next_free;
};

#define SWP_TCP_CC_MAX 64                /* a congestion control list, with its NUL */

/* tcp_cc.c */
void swp_tcp_cc_init(struct siwarp_ctx *ctx);
void swp_tcp_cc_apply(struct siwarp_ctx *ctx, int fd);

struct siwarp_ctx {
    pthread_mutex_t lock;
    bool single_thread;                  /* siwarp_ctx_set_single_thread: no locking */
    void *hw;                            /* verbs backend (swp_hw_*), or NULL */
    int epfd;
    int kickfd;                          /* eventfd in epfd */
    bool kicked;                         /* kickfd written and not drained yet */
    struct swp_pollable kick;
    struct swp_list qps;
    struct swp_list timers;
    uint32_t next_pd;
    struct swp_stag_ent *stags;
    uint32_t nstags, stag_free;
    uint64_t mr_gen;                 /* bumped whenever an MR is deregistered or
                                        invalidated: a receive WQE checked at
                                        this generation needs no check again */
    uint64_t rng;
    uint64_t polls;                      /* busy polls, for the direct path */
    uint64_t epoch;                      /* progress calls, for send coalescing */
    struct swp_list tx_held;             /* QPs with coalesced sends to flush */
    bool direct_poll;                    /* SIWARP_DIRECT_POLL, default on */
    bool fd_exported;                    /* siwarp_ctx_fd/cq_fd asked: never park */
    uint32_t parked;                     /* QP sockets parked out of epfd */
    uint32_t sleepers;                   /* threads in epoll_wait, unlocked */
    uint32_t in_recv_handler;            /* a CQ's receive handler is running */
    uint32_t recv_handlers;              /* CQs with one set */
    uint8_t *rx_stage;                   /* SWP_RX_STAGE bytes (+ SWP_RX_STAGE_SKEW): struct swp_rx */
    uint8_t *rx_spill;                   /* SWP_RX_SPILL bytes, or NULL */
    /* siwarp_ctx_set_idle_wait: spin this long without moving a byte while
     * a transfer is in flight, then sleep up to wait_ns (0: never) */
    uint64_t idle_spin_ns, idle_wait_ns;
    bool idle_quiet;                     /* siwarp_ctx_set_idle_quiet: sleep with nothing in flight too */
    uint64_t idle_since_ns;              /* first idle poll of this run, 0: busy */
    uint64_t stall_next_ns;              /* next swp_qp_stall_sweep */
    struct swp_list *stall_cursor;       /* where the next sweep starts (NULL: the head) */
    uint32_t nqps;                       /* on qps */
    int rx_stall_ms;                     /* siwarp_ctx_set_rx_stall; <0: off */
    uint64_t idle_sleeps;                /* times it slept (tests, tuning) */
    char tcp_cc[SWP_TCP_CC_MAX];         /* tcp_cc.c: congestion controls to ask for */
    uint64_t cq_pushes;                  /* completions queued, ever (progress_thread.c) */
    uint64_t moved;                      /* stream octets read and written, ever (same) */
    struct swp_pthread *pt;              /* siwarp_ctx_start_progress_thread, or NULL */
    struct swp_list pt_link;             /* swp_pt_all: contexts with a thread */
    uint32_t idle_calls;                 /* application passes in a row that found nothing */
    struct swp_list hints;               /* read_hint.c: hints with CRCs left to compute */
    uint64_t hint_seq;                   /* read_hint.c: last generation handed out */
    uint64_t hint_segs_used;             /* Response segments sent with a precomputed CRC */
};

/* progress_thread.c: the application's own progress calls note the time,
 * so that a progress thread stays out of its way (one branch when no
 * thread runs). */
void swp_pt_app_seen(void);
static inline void swp_app_progress(struct siwarp_ctx *ctx)
{
    if (ctx->pt)
        swp_pt_app_seen();
}
bool swp_pt_is_self(const struct siwarp_ctx *ctx);
void swp_pt_serve_others(struct siwarp_ctx *ctx);

/* After an application's progress call on ctx (unlocked): one that found
 * nothing, every SWP_PT_SERVE_EVERY-th in a row, also serves the process's
 * other contexts with a thread (progress_thread.c).  One branch without. */
#define SWP_PT_SERVE_EVERY 4
static inline void swp_app_idle(struct siwarp_ctx *ctx, bool idle)
{
    if (!ctx->pt)
        return;
    if (!idle)
        ctx->idle_calls = 0;
    else if ((++ctx->idle_calls % SWP_PT_SERVE_EVERY) == 0)
        swp_pt_serve_others(ctx);
}
void swp_pt_stop(struct siwarp_ctx *ctx);

/* Reads we owe the peer (RFC 5040 6.5: what the IRD bounds): a Read stays
 * outstanding until its last response byte is written to the socket, not
 * merely queued for writing. */
static inline uint32_t swp_irq_outstanding(const struct siwarp_qp *qp)
{
    return qp->irqr.tail - qp->irq_wr;
}

/* Has swp_tx_progress anything to do: bytes to write, a WQE to segment or
 * retire, a Read Response, a Terminate or an RTR to queue?  The busy-poll
 * pass asks before calling it, so that a pass that only received (every
 * hop of a ping-pong) does not run the transmit engine for nothing. */
static inline bool swp_tx_has_work(const struct siwarp_qp *qp)
{
    return qp->tx.pending || qp->sqr.head != qp->sqr.tail || swp_ring_count(&qp->irqr) ||
           qp->term_pending || qp->rtr_pending_tx || qp->rtr_nudge;
}

/* The context lock, unless the caller said one thread at a time calls in
 * (siwarp_ctx_set_single_thread): an uncontended lock and unlock, a call
 * into libc each, cost a hop 3-4 pairs of them (~60 ns a hop measured). */
static inline void swp_lock(struct siwarp_ctx *c)
{
    if (!c->single_thread)
        pthread_mutex_lock(&c->lock);
}

static inline void swp_unlock(struct siwarp_ctx *c)
{
    if (!c->single_thread)
        pthread_mutex_unlock(&c->lock);
}
uint32_t swp_rand32(struct siwarp_ctx *ctx);

#include "hw.h"   /* the verbs backend (swp_hw_*) */

#endif /* SWP_SWP_H */
