/*
 * siwarp.h - public API of libsiwarp, a user-space iWARP (RDMA over TCP)
 * stack.  Shaped after libibverbs + librdmacm so that an RDMA programmer
 * finds the usual objects: context, protection domain, memory region named by
 * an STag, reliable-connected queue pair, completion queue.
 *
 * Conventions: every function returning int returns 0 (or a count) on
 * success and a negative errno value on failure.  -EAGAIN means "nothing yet,
 * call again after progress".  No function calls exit() or prints unless
 * the context was created with a log callback or SIWARP_DEBUG is set.
 *
 * Threading: every entry point takes the context lock, so one context may be
 * used from several threads (for example an application thread posting and a
 * progress thread polling).  Callbacks are never invoked with the lock held.
 */
#ifndef SIWARP_SIWARP_H
#define SIWARP_SIWARP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

struct siwarp_ctx;
struct siwarp_pd;
struct siwarp_mr;
struct siwarp_cq;
struct siwarp_qp;
struct siwarp_srq;
struct siwarp_listener;
struct siwarp_conn_req;

/* ---- context ------------------------------------------------------------ */

int  siwarp_ctx_create(struct siwarp_ctx **ctx);
void siwarp_ctx_destroy(struct siwarp_ctx *ctx);
/* Advance every connection and listener of the context without blocking.
 * Returns the number of events handled (>= 0) or a negative errno. */
int  siwarp_progress(struct siwarp_ctx *ctx);
/* As siwarp_progress, but one pass over every socket of the context,
 * listeners included.  siwarp_progress on a context with a few connected
 * queue pairs reads their sockets directly and looks at listeners only
 * every 64th call; this is for a caller about to act on what the
 * listeners hold (say, before connecting to a peer that may have asked
 * first).  It costs an epoll_wait more. */
int  siwarp_progress_all(struct siwarp_ctx *ctx);
/* Block up to timeout_ms (-1: forever) until something may be progressed,
 * then progress.  Returns as siwarp_progress. */
int  siwarp_wait(struct siwarp_ctx *ctx, int timeout_ms);
/* A file descriptor that polls readable when siwarp_progress has work.
 * Asking for it keeps every socket of the context in its epoll set from
 * then on; a context whose fd nobody asked for lets busy-polled sockets
 * out of the set, which makes each arriving segment cheaper. */
int  siwarp_ctx_fd(struct siwarp_ctx *ctx);
/* One thread at a time (on = true): the caller promises that calls on this
 * context and on everything made from it (PDs, MRs, CQs, SRQs, QPs,
 * listeners) never overlap, as under MPI_THREAD_SINGLE, FUNNELED or
 * SERIALIZED, and the library stops taking its lock.  Calls may still
 * come from different threads in turn.  off (the default) makes every
 * call thread-safe again.  Set it while no other thread uses the context:
 * -EBUSY if one sleeps in siwarp_wait / siwarp_cq_wait or a progress thread
 * runs, or (off) while a
 * CQ has a receive handler; 0, or -EINVAL. */
int  siwarp_ctx_set_single_thread(struct siwarp_ctx *ctx, bool on);
/* Spin, then sleep, while a transfer waits on the kernel.  Once spin_us of
 * non-blocking progress calls in a row moved nothing while some transfer is
 * in flight (a send blocked on a full socket, an RDMA Read awaiting its
 * response, a Read Response to write, an FPDU half received), the next
 * non-blocking call sleeps until a socket is ready, up to wait_us.  A busy
 * poller (an MPI progress loop) thus gives its CPU back during large
 * transfers and still spins for small messages.  wait_us 0 (the default)
 * turns it off; at most 60 s.  Software backend only; 0 or -EINVAL. */
int  siwarp_ctx_set_idle_wait(struct siwarp_ctx *ctx, uint32_t spin_us, uint32_t wait_us);
/* on: the idle wait above also sleeps when nothing is in flight -- a
 * process waiting for a peer's next message sleeps in epoll instead of
 * spinning, which is what a core shared by more processes than it can run
 * at once wants (the peer that must send gets the CPU, and the message
 * wakes the sleeper).  off (the default): a quiet peer finds a spinning
 * poller.  Software backend only; 0 or -EINVAL. */
int  siwarp_ctx_set_idle_quiet(struct siwarp_ctx *ctx, bool on);
/* A peer that stops inside an FPDU it began (its length or part of its
 * payload sent, the rest never, its TCP connection kept alive: keepalive
 * and TCP_USER_TIMEOUT cannot see it) fails its QP with -ETIMEDOUT once
 * nothing more of the FPDU came for ms and nothing waits in the socket.
 * Looked at every 50 ms of progress (at least every 64th call).  Also a
 * legitimate peer that does not progress (a sender computing with half an
 * FPDU in user space) looks so: keep it well above the longest such
 * pause.  0: the default, 300000; <0: off; at most 3600000.  0, -EINVAL,
 * or -EOPNOTSUPP on a verbs device (the RNIC's own timers rule there). */
int  siwarp_ctx_set_rx_stall(struct siwarp_ctx *ctx, int ms);
/* A progress thread for one-sided peers (software backend).  iWARP's
 * responder work -- placing RDMA Writes, answering RDMA Reads, executing
 * RFC 7306 atomics -- happens in progress; a process that computes without
 * calling the library leaves its peers' Reads, flushes and atomics waiting.
 * This thread serves the context while the application does not: it stays
 * asleep while the application's own siwarp_progress / siwarp_poll_cq /
 * siwarp_wait calls, on any context of the process that has a thread,
 * came within away_us (0: 200), so a busy-polling application pays only
 * the context lock and a wake-up of the thread at intervals that grow from
 * away_us to 2 ms; otherwise it sleeps in epoll until a socket has work; after
 * serving something it keeps polling for 50 us, for the next operation of
 * a burst (a wake-up from epoll costs more on a busy core), so a stream of
 * one-sided operations shares the application's core with it.
 * Completions it produces wait in their CQs; if siwarp_ctx_fd was handed
 * out, the thread also makes that fd readable for them and never drains it
 * itself.  The context must not be single-thread (-EINVAL), and stays so
 * while the thread runs.  0; -EINVAL; -EALREADY (one runs); -EOPNOTSUPP on
 * a verbs device (the device serves its peers itself); or the negative
 * errno of pthread_create.  siwarp_ctx_destroy stops it. */
int  siwarp_ctx_start_progress_thread(struct siwarp_ctx *ctx, uint32_t away_us);
/* Stop and join the thread.  0, or -EINVAL (none runs). */
int  siwarp_ctx_stop_progress_thread(struct siwarp_ctx *ctx);
/* Run the thread on these CPUs: cpus is a cpu_set_t of size bytes, as
 * pthread_setaffinity_np takes it.  Until then it runs where the thread
 * that started it was bound.  0; -EINVAL (no thread runs, no set); or the
 * negative errno of pthread_setaffinity_np (-EINVAL: no allowed CPU). */
int  siwarp_ctx_set_progress_thread_cpus(struct siwarp_ctx *ctx, const void *cpus, size_t size);
struct siwarp_progress_thread_stats {
    uint64_t passes;        /* progress passes the thread made */
    uint64_t served;        /* events those passes handled */
    uint64_t yields;        /* times it let the application's own calls be */
    uint64_t served_by_others;  /* passes the application made on it while idle
                                   on another context with a thread */
};
/* What the thread did so far (tests, tuning).  0, or -EINVAL (none runs). */
int  siwarp_ctx_progress_thread_stats(struct siwarp_ctx *ctx,
                                      struct siwarp_progress_thread_stats *st);
/* TCP congestion control for the context's connections from now on: a
 * comma-separated list ("reno,cubic"), tried in order on each socket; the
 * first the kernel takes wins, and if it takes none (a name it lacks, or
 * one not in net.ipv4.tcp_allowed_congestion_control for an unprivileged
 * process) the socket keeps the system default.  "" restores the default,
 * which SIWARP_TCP_CONGESTION sets for every new context.  Names are at
 * most 15 characters of [A-Za-z0-9_-], the list at most 63.  0, -EINVAL,
 * or -EOPNOTSUPP on a verbs device. */
int  siwarp_ctx_set_tcp_congestion(struct siwarp_ctx *ctx, const char *list);
/* The same for one socket (libsiwarp's users with sockets of their own):
 * 0 and the name taken in chosen (cap bytes), -ENOENT when none was taken
 * (the socket keeps its default), -EINVAL for a malformed list, or another
 * negative errno from setsockopt. */
int  siwarp_sock_set_congestion(int fd, const char *list, char *chosen, size_t cap);
/* 0 if list is well formed ("" included), else -EINVAL. */
int  siwarp_tcp_congestion_check(const char *list);
/* Dead-peer detection on one socket as libsiwarp's own connections have it
 * (conn_param.llp_timeout_ms): TCP keepalive and TCP_USER_TIMEOUT sized so
 * that a dead host or link fails the socket with ETIMEDOUT within about ms
 * (0: the default 30000; negative: both off).  Returns the timeout set. */
int  siwarp_sock_set_llp_timeout(int fd, int ms);
/* Create a context on a backend.  dev: NULL or "auto" (the first verbs
 * device of transport iWARP if there is one, else software), "soft"
 * (software), or a verbs device name ("siw0", "cxgb4_0", ...): -ENODEV if
 * there is no such iWARP device or libsiwarp was built without rdma-core
 * (SIWARP_DEBUG=1 logs why and which devices exist).  siwarp_ctx_create
 * takes dev from the SIWARP_DEVICE environment variable (unset: "soft").
 *
 * On a verbs device every object of the context is a thin adapter over
 * libibverbs + librdmacm, so the RNIC (or kernel siw) does the protocol:
 *  - siwarp_reg_mr pins the memory (ibv_reg_mr); the STag is the MR's rkey.
 *    LOCAL_WRITE also grants REMOTE_WRITE (an iWARP Read sink needs it).
 *  - MPA revision, CRC, markers, P2P and the RTR are decided by the RNIC /
 *    kernel; conn_param passes private data (up to 255 bytes) and IRD/ORD,
 *    and siwarp_query_qp / siwarp_conn_req_param report 0 for the rest.
 *  - An RDMA Read scatters into one SGE; siwarp_invalidate_stag and the
 *    SIWARP_WC_SOLICITED flag are not available (-EOPNOTSUPP / never set).
 *  - siwarp_qp_fd is -1; siwarp_cq_fd is the CQ's completion channel. */
int  siwarp_ctx_create_dev(const char *dev, struct siwarp_ctx **ctx);
/* "soft", or the verbs device name the context runs on. */
const char *siwarp_ctx_backend(const struct siwarp_ctx *ctx);

/* ---- protection domain and memory regions ------------------------------- */

enum siwarp_access {
    SIWARP_ACCESS_LOCAL_WRITE  = 1 << 0,
    SIWARP_ACCESS_REMOTE_WRITE = 1 << 1,
    SIWARP_ACCESS_REMOTE_READ  = 1 << 2,
    /* RFC 7306 atomics may target the region (needs LOCAL_WRITE, as in
     * verbs).  A verbs device refuses it (-EOPNOTSUPP): see "RFC 7306". */
    SIWARP_ACCESS_REMOTE_ATOMIC = 1 << 3,
};

int  siwarp_alloc_pd(struct siwarp_ctx *ctx, struct siwarp_pd **pd);
int  siwarp_dealloc_pd(struct siwarp_pd *pd);   /* -EBUSY while MRs/QPs use it */

/* Register [addr, addr+length).  Remote peers address it with the STag and a
 * tagged offset equal to the virtual address (as ibv_reg_mr).  The STag is
 * a 24-bit index plus an 8-bit key drawn at random; a re-registered index
 * never reuses the key it had just before. */
int  siwarp_reg_mr(struct siwarp_pd *pd, void *addr, size_t length,
                   int access, struct siwarp_mr **mr);
int  siwarp_dereg_mr(struct siwarp_mr *mr);
uint32_t siwarp_mr_stag(const struct siwarp_mr *mr);
/* Invalidate locally (as an IBV_WR_LOCAL_INV).  The MR stays allocated. */
int  siwarp_invalidate_stag(struct siwarp_pd *pd, uint32_t stag);

/* ---- completion queues -------------------------------------------------- */

enum siwarp_wc_status {
    SIWARP_WC_SUCCESS = 0,
    SIWARP_WC_LOC_LEN_ERR,      /* receive buffer too small, SGE too long */
    SIWARP_WC_LOC_PROT_ERR,     /* local STag / rights / bounds */
    SIWARP_WC_WR_FLUSH_ERR,     /* QP left RTS with this WR outstanding */
    SIWARP_WC_REM_ACCESS_ERR,   /* peer refused our STag access (Terminate) */
    SIWARP_WC_REM_OP_ERR,       /* peer reported an operation error */
    SIWARP_WC_REM_ABORT_ERR,    /* peer sent a Terminate for this WR */
    SIWARP_WC_LLP_ERR,          /* TCP lost or MPA (CRC / framing) error */
    SIWARP_WC_GENERAL_ERR,
};

enum siwarp_wc_opcode {
    SIWARP_WC_SEND,
    SIWARP_WC_WRITE,
    SIWARP_WC_READ,
    SIWARP_WC_RECV,
    /* A QP on an SRQ left full operation and takes no more of the SRQ's
     * WQEs (as IBV_EVENT_QP_LAST_WQE_REACHED): once per QP, on its recv
     * CQ after every completion of its receives; wr_id 0, status
     * SIWARP_WC_WR_FLUSH_ERR.  Without it a QP that was only receiving
     * would fail silently: an SRQ's WQEs are no QP's to flush. */
    SIWARP_WC_SRQ_LAST,
    SIWARP_WC_FETCH_ADD,        /* RFC 7306 FetchAdd, masked or not */
    SIWARP_WC_COMP_SWAP,        /* RFC 7306 CmpSwap, masked or not */
};

enum siwarp_wc_flags {
    SIWARP_WC_WITH_INV   = 1 << 0,  /* RECV of a Send with Invalidate */
    SIWARP_WC_SOLICITED  = 1 << 1,  /* RECV of a Send with Solicited Event */
    SIWARP_WC_INLINE     = 1 << 2,  /* RECV handed over in place: no WQE used */
    SIWARP_WC_WITH_IMM   = 1 << 3,  /* RECV of RFC 7306 Immediate Data: imm_data */
};

struct siwarp_wc {
    uint64_t wr_id;
    enum siwarp_wc_status status;
    enum siwarp_wc_opcode opcode;
    uint32_t byte_len;
    uint32_t wc_flags;
    uint32_t invalidated_stag;
    uint32_t vendor_err;      /* Terminate layer<<12 | etype<<8 | code, or 0 */
    struct siwarp_qp *qp;
    uint64_t imm_data;        /* SIWARP_WC_WITH_IMM: the 8 octets, as posted */
};

/* cqe is the initial size: a CQ grows rather than lose a completion. */
int  siwarp_create_cq(struct siwarp_ctx *ctx, int cqe, struct siwarp_cq **cq);
int  siwarp_destroy_cq(struct siwarp_cq *cq);   /* -EBUSY while QPs use it */
/* Progress the context, then return up to n completions (0 if none). */
int  siwarp_poll_cq(struct siwarp_cq *cq, int n, struct siwarp_wc *wc);
/* Pollable fd: readable when siwarp_poll_cq may return completions. */
int  siwarp_cq_fd(const struct siwarp_cq *cq);
/* Block up to timeout_ms until the CQ has a completion; 0 when it has, -ETIMEDOUT. */
int  siwarp_cq_wait(struct siwarp_cq *cq, int timeout_ms);
const char *siwarp_wc_status_str(enum siwarp_wc_status s);

/* Receive handler: instead of queueing a CQ entry for each Send received
 * on a QP whose recv CQ this is, progress calls fn(arg, wc, data), in
 * arrival order.  A message of up to max_len octets that came whole within
 * one read (or whose rest was already in the socket when a read ended
 * inside it: the library reads it behind the part it has) is handed over
 * where it lies, in the library's staging buffer (one longer than 2 KiB
 * only where it lies 8-aligned):
 * data points at it (valid only during the call), no receive WQE was used
 * (one that could have taken it must still be posted), wc->wr_id is 0 and
 * wc->wc_flags has SIWARP_WC_INLINE.  Any other lands in a posted receive
 * buffer as usual and data is NULL: wc is the entry the CQ would have had.
 * Failed receive completions (flushes) still go to the CQ.  Saves a
 * receive buffer, a copy and a CQ round trip per small message.
 *   The handler runs inside progress: it may post sends and receives and
 * poll CQs, but a progress call made from it reads no socket, and
 * siwarp_destroy_qp says -EBUSY.  The context must be single-thread
 * (siwarp_ctx_set_single_thread) for as long as a handler is set.  fn NULL
 * removes it.  0; -EINVAL (no CQ, or a context that is not single-thread);
 * -EOPNOTSUPP on a hardware context. */
typedef void (*siwarp_recv_handler_fn)(void *arg, const struct siwarp_wc *wc, const void *data);
int  siwarp_cq_set_recv_handler(struct siwarp_cq *cq, siwarp_recv_handler_fn fn, void *arg,
                                uint32_t max_len);

/* ---- queue pairs -------------------------------------------------------- */

struct siwarp_sge {
    void    *addr;
    uint32_t length;
    uint32_t lkey;       /* STag of a local MR covering [addr, addr+length) */
};

enum siwarp_wr_opcode {
    SIWARP_WR_SEND,
    SIWARP_WR_SEND_SE,
    SIWARP_WR_SEND_INV,
    SIWARP_WR_SEND_SE_INV,
    SIWARP_WR_WRITE,
    SIWARP_WR_READ,
    /* RFC 7306 (see "RFC 7306" below): */
    SIWARP_WR_ATOMIC_FETCH_ADD,        /* *t += compare_add */
    SIWARP_WR_ATOMIC_CMP_SWP,          /* if (*t == compare_add) *t = swap */
    SIWARP_WR_ATOMIC_MASKED_FETCH_ADD, /* add field by field: compare_add_mask bits
                                          mark each field's top bit, whose carry
                                          is dropped (0: one 64-bit field) */
    SIWARP_WR_ATOMIC_MASKED_CMP_SWP,   /* if (((*t ^ compare_add) & compare_add_mask)
                                          == 0) *t = (*t & ~swap_mask) |
                                          (swap & swap_mask) */
    SIWARP_WR_IMM_DATA,                /* Immediate Data: imm_data, no payload */
    SIWARP_WR_IMM_DATA_SE,             /* ... with Solicited Event */
};

enum siwarp_send_flags {
    SIWARP_SEND_SIGNALED = 1 << 0,
    SIWARP_SEND_FENCE    = 1 << 1,  /* wait for prior Reads to complete */
    SIWARP_SEND_INLINE   = 1 << 2,  /* copy payload at post time; lkey ignored */
    /* The SGEs name plain memory of this process, not registered regions:
     * no lkey is checked (as a privileged local STag in RDMA verbs).  Send
     * and Write only; the memory must stay valid and unchanged until the WR
     * completes.  Software backend only (-EOPNOTSUPP on a verbs device,
     * where the RNIC reads memory by itself). */
    SIWARP_SEND_UNREGISTERED = 1 << 3,
    /* If the WR completes before siwarp_post_send returns -- a small Send
     * on an idle QP goes to the socket whole, the payload copied -- no
     * completion is queued for it, signaled or not, and siwarp_post_send
     * returns 1 instead of 0: the caller completes it there and then (as
     * an Open MPI BTL's btl_send returning 1).  Otherwise the WR completes
     * as usual.  A verbs device never completes at post (returns 0). */
    SIWARP_SEND_COMPLETE_AT_POST = 1 << 4,
    /* On a QP with send coalescing (qp_init_attr.tx_coalesce), the WR may
     * wait for the next post or progress call even as the first since the
     * last one: for a caller that knows more follows at once (a put that
     * its caller flushes next: the Write and the flush's Read then leave
     * in one sendmsg).  Ignored without coalescing and on a verbs device. */
    SIWARP_SEND_HOLD = 1 << 5,
    /* The opposite: on a QP with send coalescing, the WR goes to the socket
     * at once (with whatever is held before it), even as the second post
     * since the last progress call.  For a message the peer waits on and
     * that no burst follows: an MPI rendezvous header posted right after
     * the previous message's FIN, which coalescing held until the next
     * progress call (1-2 us later).  Ignored without coalescing and on a
     * verbs device. */
    SIWARP_SEND_PROMPT = 1 << 6,
};

struct siwarp_send_wr {
    uint64_t wr_id;
    struct siwarp_send_wr *next;
    struct siwarp_sge *sg_list;      /* a Read scatters into all of them */
    int num_sge;
    enum siwarp_wr_opcode opcode;
    int send_flags;
    uint32_t invalidate_stag;          /* SEND_INV / SEND_SE_INV */
    struct {
        uint64_t remote_addr;          /* tagged offset at the peer */
        uint32_t rkey;                 /* peer STag */
    } rdma;
    /* SIWARP_WR_ATOMIC_*: the target is the 8-aligned u64 at tagged offset
     * remote_addr of STag rkey (registered SIWARP_ACCESS_REMOTE_ATOMIC);
     * its value before the operation is stored, in host byte order, into
     * the WR's one SGE (8 octets, LOCAL_WRITE).  Operands are host order. */
    struct {
        uint64_t remote_addr;
        uint32_t rkey;
        uint64_t compare_add;          /* FetchAdd: addend; CmpSwap: compare */
        uint64_t swap;                 /* CmpSwap: new value */
        uint64_t compare_add_mask;     /* MASKED_*: see the opcodes */
        uint64_t swap_mask;            /* MASKED_CMP_SWP */
    } atomic;
    uint64_t imm_data;                 /* SIWARP_WR_IMM_DATA[_SE] */
};

struct siwarp_recv_wr {
    uint64_t wr_id;
    struct siwarp_recv_wr *next;
    struct siwarp_sge *sg_list;
    int num_sge;
};

struct siwarp_qp_init_attr {
    struct siwarp_cq *send_cq;
    struct siwarp_cq *recv_cq;
    uint32_t max_send_wr;
    uint32_t max_recv_wr;
    uint32_t max_sge;           /* per WR, both queues */
    uint32_t max_inline;        /* bytes copied at post for SIWARP_SEND_INLINE */
    int sq_sig_all;
    /* Send coalescing (software backend; 0: off).  The first post after a
     * progress call goes to the socket at once; later posts made before the
     * next siwarp_progress / siwarp_poll_cq / siwarp_wait wait for it, up to
     * tx_coalesce of them (the next post writes them all): one sendmsg then
     * carries many FPDUs.
     * Costs latency only to the second and later WRs of a burst, until the
     * application next polls -- or until siwarp_flush_held, which a caller
     * that may stop calling the library for a while (an MPI progress call
     * about to return) uses so that nothing it posted waits on it;
     * siwarp_qp_send_goes_now tells beforehand whether a post would wait. */
    uint32_t tx_coalesce;
    /* NULL, or a shared receive queue of the same PD: untagged messages
     * then land in the SRQ's buffers and siwarp_post_recv refuses the QP
     * (-EINVAL).  Software backend only (-EOPNOTSUPP on a verbs device). */
    struct siwarp_srq *srq;
};

enum siwarp_qp_state {
    SIWARP_QPS_IDLE,        /* created, not connected */
    SIWARP_QPS_CONNECTING,  /* TCP / MPA exchange in progress */
    SIWARP_QPS_RTS,         /* full operation */
    SIWARP_QPS_CLOSING,     /* orderly close in progress */
    SIWARP_QPS_TERMINATE,   /* Terminate sent or received */
    SIWARP_QPS_ERROR,       /* all work flushed */
};

enum siwarp_rtr {
    SIWARP_RTR_SEND  = 1 << 0,
    SIWARP_RTR_WRITE = 1 << 1,
    SIWARP_RTR_READ  = 1 << 2,
};

/* Connection parameters for connect, accept and listen. */
struct siwarp_conn_param {
    int      mpa_rev;        /* 2 (RFC 6581 enhanced) or 1; default 2 */
    int      crc;            /* ask for CRC32c (used if either side asks) */
    int      markers;        /* ask the peer to send us markers every 512 octets
                                (RFC 5044 7.1: per direction; a peer asking
                                for them gets them) */
    int      p2p;            /* RFC 6581 peer-to-peer mode */
    int      rtr;            /* RTR types offered (initiator) / accepted (responder) */
    uint16_t ird, ord;       /* inbound / outbound RDMA Read depth */
    uint32_t mulpdu;         /* 0: derived from the path MSS */
    uint32_t big_fpdu;       /* >0: offer FPDUs up to this size to a siwarp peer */
    int      v1_fallback;    /* initiator retries with rev 1 if rev 2 refused */
    int      markers_fallback; /* initiator retries without markers if refused */
    int      timeout_ms;     /* MPA exchange timeout; 0: default 10000 */
    int      llp_timeout_ms; /* dead-peer detection once connected (TCP keepalive
                                and TCP_USER_TIMEOUT); 0: default 30000, <0: off
                                (a live peer that stops inside an FPDU:
                                siwarp_ctx_set_rx_stall) */
    const void *private_data;
    uint16_t private_data_len;
    /* RFC 7306 (atomics, Immediate Data) with a siwarp peer.  Initiator:
     * nonzero offers it in the MPA Request (mpa.h: reserved flag bits no
     * other peer sends), so leave it 0 toward siw or an RNIC.  Responder:
     * an offer is accepted unless this is negative. */
    int      rfc7306;
    /* Initiator, software stack: how long the MPA Reply may take once the
     * Request is in the peer's socket.  0: timeout_ms.  Negative: as long
     * as the TCP connection lives -- the LLP timeout's keepalive is on the
     * socket from then, so a dead host or link still fails it
     * (-ETIMEDOUT).  For peers known to be ours that may not progress for
     * a while: an MPI rank computing, blocked in its runtime, or stopped in
     * a debugger reads our Request only when it next progresses, and its
     * kernel has already accepted the connection. */
    int      reply_wait_ms;
};
void siwarp_conn_param_default(struct siwarp_conn_param *p);

/* What was negotiated, and what went wrong. */
struct siwarp_qp_attr {
    enum siwarp_qp_state state;
    int      mpa_rev;
    int      crc, p2p;
    int      markers;            /* markers in either direction */
    int      rtr;                /* RTR type used (one bit) or 0 */
    uint16_t ird, ord;           /* negotiated */
    uint32_t mulpdu;             /* largest ULPDU we send */
    int      peer_is_siwarp;
    uint8_t  peer_private_data[512];
    uint16_t peer_private_data_len;
    int      error;              /* negative errno of the cause, 0 if none */
    uint32_t term_sent;          /* layer<<12 | etype<<8 | code; 0 if none */
    uint32_t term_recv;
    char     error_str[128];     /* human-readable cause */
    struct sockaddr_storage local, peer;
    uint64_t srq_wqes;           /* receive WQEs taken from its SRQ, ever */
    int      rfc7306;            /* both ends speak RFC 7306: atomics and
                                    Immediate Data may be posted; outstanding
                                    atomics share ird / ord with Reads */
};

int  siwarp_create_qp(struct siwarp_pd *pd, const struct siwarp_qp_init_attr *attr,
                      struct siwarp_qp **qp);
/* Closes the connection (without flushing into the CQs) and removes the
 * QP's completions still queued in its CQs. */
int  siwarp_destroy_qp(struct siwarp_qp *qp);
int  siwarp_query_qp(struct siwarp_qp *qp, struct siwarp_qp_attr *attr);
/* Move to ERROR: sends a Terminate if `term` is nonzero, flushes all work. */
int  siwarp_qp_to_error(struct siwarp_qp *qp);
/* Orderly close: waits for the send queue to drain, then closes the socket. */
int  siwarp_disconnect(struct siwarp_qp *qp);
int  siwarp_qp_fd(const struct siwarp_qp *qp);   /* the TCP socket, or -1 */
void *siwarp_qp_get_context(const struct siwarp_qp *qp);
void  siwarp_qp_set_context(struct siwarp_qp *qp, void *user);

/* Check the peer's first message before the QP takes anything else of it
 * (an authentication token, say).  Set on an IDLE QP before siwarp_accept
 * or siwarp_connect.  Once connected, the peer's first Send (after a P2P
 * RTR) must be one whole message of at most max_len octets (at most 4096):
 * the library reads it into a buffer of its own -- no receive WQE is
 * used, nothing is placed in application memory, no completion is queued
 * -- and, its CRC checked, calls fn(arg, qp, data, len).  fn returning 0
 * lets the QP carry on (the message is consumed); nonzero fails the QP
 * (Terminate: RDMAP remote protection error, state ERROR, error -EACCES).
 * Until fn accepted, any other segment (a Write, a Read Request or
 * Response, a Send with Invalidate, a longer or segmented Send) fails the
 * QP the same way before a byte of it is placed, and so does silence:
 * without a first Send within timeout_ms of RTS (0: 10000) the QP fails
 * with -ETIMEDOUT.  The library does not hold back the application's own
 * sends: an application that must not talk to an unverified peer posts
 * nothing before fn accepted.  fn runs inside progress (with the context
 * lock held unless the context is single-thread) and must not call
 * libsiwarp for this context.  0; -EINVAL (no fn, max_len 0 or too big,
 * QP not IDLE); -ENOMEM; -EOPNOTSUPP on a verbs device. */
typedef int (*siwarp_verify_fn)(void *arg, struct siwarp_qp *qp, const void *data,
                                uint32_t len);
#define SIWARP_VERIFY_MAX_LEN 4096
int  siwarp_qp_verify_first_send(struct siwarp_qp *qp, siwarp_verify_fn fn, void *arg,
                                 uint32_t max_len, int timeout_ms);

/* A Read announced: the peer is expected to read [addr, addr + len) of mr,
 * which must lie in mr and allow remote reads, with one RDMA Read of
 * exactly that range.  The caller promises that those bytes do not change
 * until it calls siwarp_mr_drop_hints(mr); until then, in progress passes
 * that find nothing else to do, the library computes the CRC32c of each
 * Response segment's payload, so that the Response's CRCs need no pass
 * over the data when the Read comes.  Only that Read, and only once, uses
 * them; any other Read is answered as usual.  One announced Read per QP
 * at a time, and one per MR: a later hint on the same MR voids an
 * earlier one.  0; -EINVAL (bad arguments, range not in mr, no remote
 * read right); -EBUSY (the QP's announced Read has not come yet);
 * -ERANGE (under 32 KiB: not worth it); -EOPNOTSUPP (not connected, CRC
 * off, markers on, verbs device); -ENOMEM.  Ignoring the result is fine:
 * the Read is answered either way. */
int  siwarp_qp_read_hint(struct siwarp_qp *qp, struct siwarp_mr *mr, const void *addr,
                         size_t len);
/* The bytes of mr may change from now: every hint on it is void.  0 or
 * -EINVAL. */
int  siwarp_mr_drop_hints(struct siwarp_mr *mr);
/* Read Response segments ctx sent with CRCs computed ahead, ever. */
uint64_t siwarp_ctx_read_hint_segments(struct siwarp_ctx *ctx);

/* Work is queued when it cannot go out at once (socket full, Reads beyond
 * the negotiated ORD, a fence, a P2P RTR pending); -ENOMEM only when the
 * send queue (max_send_wr) is full.  Posting before the QP is connected is
 * allowed: receives should be posted before connect/accept.  Returns 0, 1
 * for a lone WR flagged SIWARP_SEND_COMPLETE_AT_POST that completed within
 * the call, or a negative errno. */
int  siwarp_post_send(struct siwarp_qp *qp, struct siwarp_send_wr *wr,
                      struct siwarp_send_wr **bad_wr);
/* 1 when a Send posted on qp now would be handed to the kernel within the
 * post, as far as the library can know: the QP is connected, nothing of it
 * waits to be written (queued work, a P2P RTR pending) and coalescing
 * would not hold it back (tx_coalesce 0, or the first post since the last
 * progress call).  0 when it would wait for a later progress call.  The
 * kernel may still take only part of it when the socket is full.  A
 * caller that reports a message complete at post (an MPI inline send) and
 * whose process may then stop calling the library asks first: a message it
 * declared sent must not sit in user space.  Always 1 on a verbs device
 * (the device sends what is posted); 0 for NULL. */
int  siwarp_qp_send_goes_now(struct siwarp_qp *qp);
/* Write now every Send that coalescing holds back on the context's QPs
 * (qp_init_attr.tx_coalesce), reading no socket: one sendmsg per QP.  For
 * a caller about to stop progressing for a while.  0, or -EINVAL; a no-op
 * on a verbs device. */
int  siwarp_flush_held(struct siwarp_ctx *ctx);
int  siwarp_post_recv(struct siwarp_qp *qp, struct siwarp_recv_wr *wr,
                      struct siwarp_recv_wr **bad_wr);

/* ---- RFC 7306: atomics and Immediate Data ----------------------------------
 * Between two siwarp ends that negotiated it (conn_param.rfc7306;
 * siwarp_qp_attr.rfc7306 says whether they did), the SIWARP_WR_ATOMIC_*
 * and SIWARP_WR_IMM_DATA* opcodes may be posted; otherwise -- before the
 * connection is up, toward any other peer, on a verbs device -- posting one
 * returns -EOPNOTSUPP.  Other post errors: -EINVAL for an atomic whose
 * remote_addr is not 8-aligned or whose WR has not exactly one SGE of at
 * least 8 octets; the SGE's lkey, rights and bounds as for a Read.
 *  - Atomics are Read-like: each waits for its Atomic Response, which
 *    completes it (SIWARP_WC_FETCH_ADD / SIWARP_WC_COMP_SWAP, byte_len 8)
 *    after the original value was stored into the SGE.  Reads and atomics
 *    together are bounded by the negotiated ORD: beyond it a WR stays
 *    queued until a response frees a slot (never -EAGAIN), and the peer
 *    answers more than its IRD with a Terminate.  Responses are taken in
 *    request order.
 *  - The responder executes each atomic with the CPU's atomic instructions
 *    on the 8-octet target, so it is atomic against the responder's own
 *    __atomic / C11 atomics on that word and against other QPs' atomics.
 *    Checks, in order, each failure a Terminate with nothing executed:
 *    STag valid, PD, SIWARP_ACCESS_REMOTE_ATOMIC, bounds (offset wrap
 *    included), 8-octet alignment -- all RDMAP remote protection errors:
 *    invalid STag; STag not associated with the stream; access rights;
 *    tagged offset wrap; base or bounds for a target outside the region
 *    or not 8-aligned in memory.  More
 *    outstanding Reads and atomics than the IRD is a remote operation
 *    error (catastrophic, localized to the stream).  The requester's WR
 *    completes with SIWARP_WC_REM_ACCESS_ERR (protection) or
 *    SIWARP_WC_REM_ABORT_ERR and vendor_err naming the Terminate
 *    (siwarp_term_str); the QP goes to ERROR as for any Terminate.
 *  - Immediate Data consumes a posted receive (no payload is placed) and
 *    completes it as SIWARP_WC_RECV with SIWARP_WC_WITH_IMM, byte_len 0 and
 *    imm_data; SIWARP_WR_IMM_DATA_SE adds SIWARP_WC_SOLICITED. */

/* The atomics applications ask for, as RFC 7306 operations.  RFC 7306 has
 * FetchAdd and CmpSwap (and their masked forms) on one 8-aligned 64-bit
 * word; siwarp_atomic_prep fills wr->opcode and wr->atomic (remote_addr
 * rounded down to its word, compare_add, swap, both masks) for op on a
 * 4- or 8-byte operand at remote_addr (compare: CSWAP only).  A 4-byte
 * operand acts on its half of the word through the masks, the other half
 * untouched; the fetched word holds the old operand at bit *shift (0 or 32;
 * NULL: not wanted).  The caller sets wr_id, the SGE, rkey and flags.
 * Returns 0; -EINVAL for a width other than 4 or 8 or a remote_addr not
 * aligned to it; -EOPNOTSUPP for an op outside the enum (wr untouched).
 * XOR, MIN, MAX and floating point have no RFC 7306 form. */
enum siwarp_atomic_op {
    SIWARP_AOP_ADD,
    SIWARP_AOP_CSWAP,
    SIWARP_AOP_SWAP,
    SIWARP_AOP_AND,
    SIWARP_AOP_OR,
};
int siwarp_atomic_prep(struct siwarp_send_wr *wr, enum siwarp_atomic_op op, unsigned width,
                       uint64_t remote_addr, uint64_t operand, uint64_t compare,
                       unsigned *shift);

/* ---- shared receive queue ---------------------------------------------- */

/* One pool of receive buffers for many QPs, as ibv_create_srq.  A Send's
 * first segment takes the SRQ's oldest WQE for that QP, the rest of the
 * message lands in the same WQE (RFC 5041 5.3: one untagged buffer per
 * (QN, MSN)), and its completion goes to the QP's recv CQ with wc.qp naming
 * the QP.  iWARP has no receiver-not-ready retry: a Send that finds the SRQ
 * empty is fatal to its QP (Terminate: DDP untagged buffer error, no buffer
 * available; RFC 5041 7.2), so the application's flow control must keep
 * enough buffers posted for every peer.  An error on one QP flushes only
 * the WQE that QP had taken; the SRQ and its other QPs carry on.
 * Software backend only: -EOPNOTSUPP on a verbs device. */
struct siwarp_srq_init_attr {
    uint32_t max_wr;            /* WQEs that may be posted at once */
    uint32_t max_sge;           /* per WR */
};

struct siwarp_srq_attr {
    uint32_t max_wr;
    uint32_t max_sge;
    uint32_t posted;            /* WQEs posted and not yet taken by a QP */
    uint32_t qps;               /* QPs attached */
};

int  siwarp_create_srq(struct siwarp_pd *pd, const struct siwarp_srq_init_attr *attr,
                       struct siwarp_srq **srq);
/* -EBUSY while a QP uses it.  WQEs still posted are dropped (no completion). */
int  siwarp_destroy_srq(struct siwarp_srq *srq);
/* -ENOMEM when max_wr WQEs are posted already. */
int  siwarp_post_srq_recv(struct siwarp_srq *srq, struct siwarp_recv_wr *wr,
                          struct siwarp_recv_wr **bad_wr);
/* Grow to max_wr (as ibv_modify_srq with IBV_SRQ_MAX_WR); posted WQEs stay
 * in order.  -EINVAL below the current size. */
int  siwarp_resize_srq(struct siwarp_srq *srq, uint32_t max_wr);
int  siwarp_query_srq(struct siwarp_srq *srq, struct siwarp_srq_attr *attr);

/* ---- connection management ---------------------------------------------- */

/* Start an active connection; completes asynchronously: the QP moves to RTS
 * or ERROR.  siwarp_connect_wait blocks until then.  On failure
 * siwarp_query_qp's error says why: -ECONNREFUSED (TCP refused),
 * -ECONNABORTED (MPA Reject; peer_private_data holds the Reject's private
 * data), -ETIMEDOUT, -EPROTO (malformed or incompatible MPA Reply). */
int  siwarp_connect(struct siwarp_qp *qp, const struct sockaddr *addr, socklen_t len,
                    const struct siwarp_conn_param *param);
int  siwarp_connect_wait(struct siwarp_qp *qp, int timeout_ms);

/* Passive side: listen on addr (port 0: pick one).  Incoming connections are
 * accepted and their MPA Request read in the background (with the timeout in
 * param); complete requests are returned by siwarp_get_conn_request. */
int  siwarp_listen(struct siwarp_ctx *ctx, const struct sockaddr *addr, socklen_t len,
                   const struct siwarp_conn_param *param, struct siwarp_listener **l);
int  siwarp_listener_destroy(struct siwarp_listener *l);
int  siwarp_listener_addr(const struct siwarp_listener *l, struct sockaddr_storage *ss);
/* Returns 0 and a request, or -EAGAIN.  Non-blocking; when none was read
 * yet, makes one siwarp_progress_all pass. */
int  siwarp_get_conn_request(struct siwarp_listener *l, struct siwarp_conn_req **req);
/* The same without progressing the ctx: a request that an earlier
 * siwarp_progress, siwarp_poll_cq, ... has read, or -EAGAIN.  For a caller
 * that progresses anyway: one pass over the sockets instead of two. */
int  siwarp_take_conn_request(struct siwarp_listener *l, struct siwarp_conn_req **req);
/* Block up to timeout_ms for a request. */
int  siwarp_get_conn_request_wait(struct siwarp_listener *l, int timeout_ms,
                                  struct siwarp_conn_req **req);
/* What the initiator asked for.  p->private_data points into the request
 * and stays valid until the request is consumed by accept or reject. */
int  siwarp_conn_req_param(const struct siwarp_conn_req *req, struct siwarp_conn_param *p,
                           struct sockaddr_storage *peer);
/* Accept onto qp (which must be IDLE and created in the listener's context,
 * else -EINVAL): sends the MPA Reply; the QP moves to RTS once the Reply is
 * out (in P2P mode it sends nothing before the peer's RTR).  Consumes req. */
int  siwarp_accept(struct siwarp_conn_req *req, struct siwarp_qp *qp,
                   const struct siwarp_conn_param *param);
/* Reject with optional private data.  Consumes req. */
int  siwarp_reject(struct siwarp_conn_req *req, const void *pd, uint16_t pd_len);

/* ---- diagnostics -------------------------------------------------------- */

/* Terminate codes as reported in siwarp_wc.vendor_err and siwarp_qp_attr
 * term_sent / term_recv: layer << 12 | error type << 8 | error code
 * (RFC 5040 7). */
#define SIWARP_TERM_LAYER(t)   (((t) >> 12) & 0xf)   /* 0 RDMAP, 1 DDP, 2 MPA */
#define SIWARP_TERM_ETYPE(t)   (((t) >> 8) & 0xf)
#define SIWARP_TERM_CODE(t)    ((t) & 0xff)
#define SIWARP_TERM_CRC        0x2002u   /* MPA: CRC error (RFC 5044 8) */

const char *siwarp_qp_state_str(enum siwarp_qp_state s);
/* Decode a Terminate code (layer<<12 | etype<<8 | code) into text, held in
 * a per-thread buffer that the next call overwrites. */
const char *siwarp_term_str(uint32_t term);
/* Which CRC32c engine is in use: "hybrid" (AVX-512 carry-less folding
 * with crc32 instruction streams beside it), "vpclmul" (the folding alone),
 * "pclmul", "sse4.2" or "portable"; SIWARP_CRC32C=name forces one. */
const char *siwarp_crc32c_impl(void);

#ifdef __cplusplus
}
#endif
#endif /* SIWARP_SIWARP_H */
