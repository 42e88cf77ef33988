/*
 * btl_siwarp.h - Open MPI BTL over libsiwarp (software iWARP).
 *
 * One component, one module.  The module owns one siwarp context, one PD, one
 * CQ shared by every QP, one siwarp listener and one plain-TCP fallback
 * listener per selected interface address.  Endpoints connect lazily.
 *
 * Wire formats owned by this component (all big-endian, no bitfields):
 *   - mca_btl_siwarp_hdr_t       8 bytes at the head of every RDMAP Send
 *   - mca_btl_siwarp_tcp_hdr_t  24 bytes framing each message on a TCP
 *                                fallback connection
 *   - mca_btl_siwarp_conn_pd_t   MPA private data (and fallback HELLO body)
 *   - mca_btl_siwarp_modex_addr_t one per published address
 */
#ifndef MCA_BTL_SIWARP_H
#define MCA_BTL_SIWARP_H

#include "opal_config.h"

#include <stdint.h>
#include <pthread.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <net/if.h>

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_list.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/base/btl_base_error.h"
#include "opal/mca/rcache/rcache.h"
#include "btl_siwarp_compat.h"
#include "opal/util/proc.h"

#include <siwarp/siwarp.h>

#include "btl_siwarp_eptab.h"
#include "btl_siwarp_regtab.h"
#include "btl_siwarp_ifnear.h"

/* the per-message path, grouped in .text.hot: see common/swp.h */
#ifndef SWP_HOT
#define SWP_HOT __attribute__((hot))
#endif

BEGIN_C_DECLS

/* Open MPI compiles BTL_VERBOSE out of non-debug builds; ours follows
 * btl_base_verbose (>= 20) in every build. */
#undef BTL_VERBOSE
#define BTL_VERBOSE(args)                                                          \
    do {                                                                           \
        if (opal_btl_base_framework.framework_verbose >= 20) {                     \
            mca_btl_base_err("[%s]%s siwarp: ", opal_process_info.nodename,        \
                             OPAL_NAME_PRINT(OPAL_PROC_MY_NAME));                  \
            mca_btl_base_err args;                                                 \
            mca_btl_base_err("\n");                                                \
        }                                                                          \
    } while (0)

#define MCA_BTL_SIWARP_MAX_ADDRS 16
/* Control receives per connection, reserved for explicit CREDIT messages.
 * One is enough: a CREDIT is sent only when the peer owes nothing back yet
 * and it hands the peer AM credits, so the peer's next message -- every
 * message carries owed control credits -- returns it before we can owe
 * credit_threshold more.  With a shared receive queue each one costs a
 * full eager buffer per peer. */
#define MCA_BTL_SIWARP_CTRL_CREDITS 1

/* ---- wire formats ------------------------------------------------------- */

/* Header of every RDMAP Send between two siwarp BTLs (and of a DATA frame
 * on a fallback connection, where the credit fields are unused). */
enum {
    MCA_BTL_SIWARP_MSG_AM     = 1,   /* active message for `tag`, uses a credit */
    MCA_BTL_SIWARP_MSG_CREDIT = 2,   /* credit return only, uses a ctrl credit */
    MCA_BTL_SIWARP_MSG_ATOMIC = 3,   /* atomic request, body atomic_req_t, uses a credit */
    MCA_BTL_SIWARP_MSG_ATOMIC_RESP = 4,  /* its answer, body atomic_resp_t, uses a credit */
};

/* BTL atomics carried as messages and executed by the target's BTL with
 * the CPU's atomic instructions (btl_siwarp_atomic.c): toward every peer,
 * whatever the transport (iWARP Sends, verbs devices, the TCP fallback). */
enum {
    MCA_BTL_SIWARP_AOP_NOP   = 0,    /* nothing: a flush's round trip */
    MCA_BTL_SIWARP_AOP_ADD   = 1,
    MCA_BTL_SIWARP_AOP_AND   = 2,
    MCA_BTL_SIWARP_AOP_OR    = 3,
    MCA_BTL_SIWARP_AOP_XOR   = 4,
    MCA_BTL_SIWARP_AOP_LAND  = 5,
    MCA_BTL_SIWARP_AOP_LOR   = 6,
    MCA_BTL_SIWARP_AOP_LXOR  = 7,
    MCA_BTL_SIWARP_AOP_SWAP  = 8,
    MCA_BTL_SIWARP_AOP_MIN   = 9,
    MCA_BTL_SIWARP_AOP_MAX   = 10,
    MCA_BTL_SIWARP_AOP_CSWAP = 11,
    MCA_BTL_SIWARP_AOP_COUNT
};
#define MCA_BTL_SIWARP_AF_32BIT 0x01    /* a 4-byte operand, else 8 */
#define MCA_BTL_SIWARP_AF_FLOAT 0x02    /* float (32BIT) or double */
#define MCA_BTL_SIWARP_AF_FETCH 0x04    /* the answer carries the old value */
typedef struct mca_btl_siwarp_atomic_req_t {
    uint8_t  op;             /* MCA_BTL_SIWARP_AOP_* */
    uint8_t  flags;          /* MCA_BTL_SIWARP_AF_* */
    uint16_t reserved;       /* zero */
    uint32_t stag;           /* the target's registration handle */
    uint64_t addr;           /* target address, aligned (btl_siwarp_atomic.c) */
    uint64_t operand;        /* the value (CSWAP: the value stored) */
    uint64_t compare;        /* CSWAP only */
    uint64_t id;             /* echoed in the answer */
} mca_btl_siwarp_atomic_req_t;
_Static_assert(sizeof(mca_btl_siwarp_atomic_req_t) == 40, "atomic request is 40 bytes");
typedef struct mca_btl_siwarp_atomic_resp_t {
    uint64_t id;
    uint64_t value;          /* the old value (AF_FETCH), else zero */
} mca_btl_siwarp_atomic_resp_t;
_Static_assert(sizeof(mca_btl_siwarp_atomic_resp_t) == 16, "atomic answer is 16 bytes");

typedef struct mca_btl_siwarp_hdr_t {
    uint8_t  type;           /* MCA_BTL_SIWARP_MSG_* */
    uint8_t  tag;            /* BTL active-message tag (AM only) */
    uint16_t credits;        /* receive buffers the sender re-posted for us */
    uint16_t ctrl_credits;   /* control receive buffers re-posted */
    uint16_t reserved;       /* zero */
} mca_btl_siwarp_hdr_t;
_Static_assert(sizeof(mca_btl_siwarp_hdr_t) == 8, "BTL header is 8 bytes");

/* Frame header on a plain-TCP fallback connection. */
enum {
    MCA_BTL_SIWARP_TCP_HELLO     = 1,  /* body: conn_pd; initiator -> acceptor */
    MCA_BTL_SIWARP_TCP_HELLO_ACK = 2,  /* body: conn_pd; acceptor -> initiator */
    MCA_BTL_SIWARP_TCP_DATA      = 3,  /* body: hdr + payload */
    MCA_BTL_SIWARP_TCP_PUT       = 4,  /* stag, arg: target handle, address; body: data */
    MCA_BTL_SIWARP_TCP_GET_REQ   = 5,  /* stag: source handle; arg: token;
                                          body: be64 addr, be64 len */
    MCA_BTL_SIWARP_TCP_GET_RESP  = 6,  /* arg: token; body: data */
    MCA_BTL_SIWARP_TCP_AUTH      = 7,  /* body: auth; initiator -> acceptor, right
                                          after HELLO_ACK, before any other frame */
    MCA_BTL_SIWARP_TCP_OP_MAX
};

/* PUT and GET_REQ name the target's registration handle, so the target
 * checks handle, rights and bounds before it touches memory (regtab). */
typedef struct mca_btl_siwarp_tcp_hdr_t {
    uint32_t len;            /* body bytes following this header */
    uint8_t  op;             /* MCA_BTL_SIWARP_TCP_* */
    uint8_t  reserved[3];    /* zero */
    uint32_t stag;           /* PUT, GET_REQ: the target's handle; else zero */
    uint32_t reserved2;      /* zero */
    uint64_t arg;
} mca_btl_siwarp_tcp_hdr_t;
_Static_assert(sizeof(mca_btl_siwarp_tcp_hdr_t) == 24, "TCP frame header is 24 bytes");

/* MPA private data in Request / Reply / Reject, and body of HELLO(_ACK).
 * Every field up to mac is covered by mac, an HMAC-SHA256 under the pair's
 * key (btl_siwarp_auth.c has the handshake message by message). */
#define MCA_BTL_SIWARP_CONN_MAGIC   0x53574254u    /* "SWBT" */
#define MCA_BTL_SIWARP_CONN_VERSION 5   /* 2: 24-byte TCP frame header with stag;
                                           3: one control credit, rq_depth per peer;
                                           4: authenticated: peer name, attempt,
                                              nonce, mac; the AUTH first message;
                                           5: max_send */
#define MCA_BTL_SIWARP_NONCE_LEN    16
#define MCA_BTL_SIWARP_MAC_LEN      32  /* HMAC-SHA256 */
enum {
    MCA_BTL_SIWARP_CONN_OK       = 0,
    MCA_BTL_SIWARP_CONN_DUP      = 1,  /* simultaneous connect: use the other one */
    MCA_BTL_SIWARP_CONN_UNKNOWN  = 2,  /* acceptor has no such peer, or the request
                                          proved nothing: carries no mac */
    MCA_BTL_SIWARP_CONN_CHALLENGE = 3, /* reject: the acceptor (a verbs device, which
                                          cannot hold the first message back) wants
                                          a request over its nonce first;
                                          request: answers that challenge */
};
typedef struct mca_btl_siwarp_conn_pd_t {
    uint32_t magic;
    uint8_t  version;
    uint8_t  reason;          /* MCA_BTL_SIWARP_CONN_* */
    uint16_t rq_depth;        /* AM receive credits the sender grants this peer */
    uint32_t jobid;           /* opal_process_name_t of the sender */
    uint32_t vpid;
    uint32_t peer_jobid;      /* ... and of the process it is meant for */
    uint32_t peer_vpid;
    uint32_t max_send;        /* the sender's btl_max_send_size: the longest
                                 Send it posts and the size of the receive
                                 buffers it posts (both ends must agree) */
    uint32_t reserved;        /* 0 */
    uint64_t attempt;         /* request: the initiator's connection attempt to
                                 this peer, rising from 1; reply: echoed */
    uint8_t  nonce[MCA_BTL_SIWARP_NONCE_LEN];   /* fresh: the sender's */
    uint8_t  mac[MCA_BTL_SIWARP_MAC_LEN];
} mca_btl_siwarp_conn_pd_t;
_Static_assert(sizeof(mca_btl_siwarp_conn_pd_t) == 88, "conn private data is 88 bytes");

/* The initiator's first message on a connection (an RDMAP Send, or an
 * AUTH frame on the fallback): its proof of the pair's key over both
 * nonces.  The acceptor takes nothing else before it checked it. */
#define MCA_BTL_SIWARP_AUTH_MAGIC   0x53574155u    /* "SWAU" */
typedef struct mca_btl_siwarp_auth_t {
    uint32_t magic;
    uint32_t reserved;        /* zero */
    uint8_t  mac[MCA_BTL_SIWARP_MAC_LEN];
} mca_btl_siwarp_auth_t;
_Static_assert(sizeof(mca_btl_siwarp_auth_t) == 40, "auth message is 40 bytes");

/* Modex: one record per published interface address. */
#define MCA_BTL_SIWARP_ADDR_F_IWARP 0x01    /* iwarp_port is a siwarp listener */
#define MCA_BTL_SIWARP_ADDR_F_SOFT  0x02    /* ... on siwarp's software stack, which
                                               takes big FPDUs (btl_siwarp_big_fpdu) */
typedef struct mca_btl_siwarp_modex_addr_t {
    uint8_t  family;          /* 4 or 6 */
    uint8_t  flags;           /* MCA_BTL_SIWARP_ADDR_F_* */
    uint16_t iwarp_port;      /* network order */
    uint16_t tcp_port;        /* network order: fallback listener */
    uint8_t  loopback;
    uint8_t  reserved;
    uint8_t  addr[16];
} mca_btl_siwarp_modex_addr_t;
_Static_assert(sizeof(mca_btl_siwarp_modex_addr_t) == 24, "modex record is 24 bytes");

/* Registration handle handed to peers: the STag, and what an origin needs
 * to choose RFC 7306 atomics safely (btl_siwarp_ratomic.c): the region's
 * bounds -- a 4-byte operand is reached through the 8-byte word around
 * it, which must lie inside the region or the target would answer with a
 * Terminate -- and whether the region carries the remote-atomic right. */
#define MCA_BTL_SIWARP_HANDLE_RFC7306 0x1u  /* MR registered SIWARP_ACCESS_REMOTE_ATOMIC */
struct mca_btl_base_registration_handle_t {
    uint32_t stag;
    uint32_t flags;              /* MCA_BTL_SIWARP_HANDLE_* */
    uint64_t base;               /* first byte of the region */
    uint64_t len;                /* its length */
};

typedef struct mca_btl_siwarp_reg_t {
    mca_rcache_base_registration_t base;
    struct siwarp_mr *mr;
    size_t len;                  /* bytes the MR covers, for the counters */
    mca_btl_base_registration_handle_t handle;
} mca_btl_siwarp_reg_t;

/* ---- component and module ----------------------------------------------- */

enum mca_btl_siwarp_fallback {
    MCA_BTL_SIWARP_FALLBACK_TCP   = 0,
    MCA_BTL_SIWARP_FALLBACK_ERROR = 1,
};

typedef struct mca_btl_siwarp_component_t {
    mca_btl_base_component_3_0_0_t super;

    /* MCA parameters */
    char *if_include;
    char *if_exclude;
    char *tcp_congestion;    /* congestion controls asked for, "" = system default */
    int   port_min;
    int   port_range;
    int   rq_depth;
    int   srq_size;          /* 0: per-peer receive queues */
    int   srq_min_credits;
    int   srq_max;           /* buffers the pool may grow to on demand */
    int   credit_threshold;
    int   tx_coalesce;
    int   idle_spin_us;
    int   idle_wait_us;              /* -1: 0, or MCA_BTL_SIWARP_OVERSUB_WAIT_US under idle_quiet */
    int   idle_quiet;                /* 1: the back-off where Open MPI yields when idle */
    int   sq_depth;
    int   max_inline;
    int   free_list_num;
    int   free_list_max;
    int   free_list_inc;
    int   mpa;
    int   mpa_rev;
    int   crc;
    int   markers;
    int   p2p;
    int   rtr;               /* enum value, see btl_siwarp_component.c */
    int   mulpdu;
    int   ird_ord;
    int   connect_timeout;   /* ms */
    int   llp_timeout;       /* ms, dead-link detection (0: library default) */
    int   stall_timeout;     /* ms: a connected peer stopped inside an FPDU or frame,
                                or an accepted one that owes its first message */
    int   big_fpdu;          /* larger FPDUs between siwarp peers (0: off) */
    int   progress_thread;
    int   progress_thread_place;     /* 1: on a core the rank is not bound to (topo.c) */
    int   if_near;           /* 1: addresses ordered by nearness (btl_siwarp_ifnear.c) */
    int   fallback;          /* enum mca_btl_siwarp_fallback */
    int   disable_loopback;
    int   rx_inline;         /* longest Send to ob1 from libsiwarp's staging */
    int   read_hint;         /* announce ob1's RGET Reads (btl_siwarp_rdma.c) */
    int   rfc7306;           /* RFC 7306 atomics with siwarp peers (0: off) */

    /* Registrations through the rcache, read as MPI_T performance
     * variables (btl_siwarp_rdma.c mca_btl_siwarp_reg_pvars_register) */
    unsigned long reg_bytes;       /* bytes registered now */
    unsigned long reg_count;       /* registrations now */
    unsigned long reg_bytes_peak;  /* most bytes registered at once */
    size_t rcache_limit;           /* above it unused ones go first (0: none) */

    struct mca_btl_siwarp_module_t *module;
} mca_btl_siwarp_component_t;

OPAL_MODULE_DECLSPEC extern mca_btl_siwarp_component_t mca_btl_siwarp_component;

typedef struct mca_btl_siwarp_listen_t {
    struct sockaddr_storage addr;
    struct siwarp_listener *listener;   /* NULL when MPA is disabled */
    int tcp_fd;                         /* plain-TCP fallback listener */
    char name[IF_NAMESIZE];             /* the interface's */
} mca_btl_siwarp_listen_t;

/* A connection accepted on a fallback listener, its HELLO not all in
 * (btl_siwarp_fallback.c). */
#define MCA_BTL_SIWARP_TCP_PENDING_MAX 64
/* HELLO and HELLO_ACK: a frame header and a conn_pd body */
#define MCA_BTL_SIWARP_TCP_HELLO_LEN \
    (sizeof(mca_btl_siwarp_tcp_hdr_t) + sizeof(mca_btl_siwarp_conn_pd_t))
typedef struct mca_btl_siwarp_tcp_pending_t {
    int fd;
    size_t got;
    uint64_t deadline_ms;
    struct sockaddr_storage from;       /* for the warning of a failed check */
    uint8_t buf[MCA_BTL_SIWARP_TCP_HELLO_LEN];
} mca_btl_siwarp_tcp_pending_t;

typedef struct mca_btl_siwarp_module_t {
    mca_btl_base_module_t super;

    struct siwarp_ctx *ctx;
    struct siwarp_pd  *pd;
    struct siwarp_cq  *cq;

    mca_btl_siwarp_listen_t listen[MCA_BTL_SIWARP_MAX_ADDRS];
    mca_btl_siwarp_ifnear_net_t nets[MCA_BTL_SIWARP_MAX_ADDRS];
                                     /* listen[i]'s network and nearness */
    int num_listen;
    unsigned polls;                  /* progress calls, to pace listener checks */
    uint64_t tcp_looked_ms;          /* last look at the fallback listeners, oversubscribed */
    int oversub_seen;                /* mca_btl_siwarp_oversub_backoff ran */
    mca_btl_siwarp_tcp_pending_t tcp_pending[MCA_BTL_SIWARP_TCP_PENDING_MAX];
    int tcp_npending;
    struct mca_btl_base_endpoint_t *tcp_held;
                                     /* fallback endpoints whose frames wait for the
                                        next flush, linked by held_next: the flush
                                        visits only them */
    int connecting;                  /* an endpoint was connecting at the last progress call */
    struct mca_btl_base_endpoint_t *auth_kicked;
                                     /* endpoints whose accepted QP's peer proved the
                                        key just now, linked by kick_next: a lock-free
                                        stack (libsiwarp's verifier may run in the
                                        progress thread), so progress visits only them */
    mca_btl_siwarp_modex_addr_t modex[MCA_BTL_SIWARP_MAX_ADDRS];

    opal_list_t endpoints;          /* every endpoint we know */
    opal_hash_table_t procs;        /* the same endpoints by peer name (eptab) */
    opal_list_t active;             /* endpoints with work pending (connecting, tcp) */
    opal_list_t graveyard;          /* abandoned QPs and their receive buffers */
    opal_free_list_t eager_frags;   /* registered buffers: sends and receives */
    opal_free_list_t rdma_frags;    /* put/get descriptors, no buffer */
    mca_rcache_base_module_t *rcache;
    mca_btl_siwarp_regtab_t regtab; /* every MR we handed out: fallback checks */
    int regtab_ready;
    mca_btl_base_module_error_cb_fn_t error_cb;
    opal_recursive_mutex_t lock;

    size_t frag_size;               /* header + max_send_size */
    uint8_t *rx_align;              /* frag_size: an inline message made 8-aligned */
    int in_recv_handler;            /* inside libsiwarp's receive handler: no
                                       QP may be destroyed (it says -EBUSY) */

    /* shared receive queue (btl_siwarp_srq.c); NULL: receives per QP */
    struct siwarp_srq *srq;
    int srq_peers;                  /* other processes in the job */
    int srq_posted;                 /* buffers posted (srq_frags) */
    int srq_granted;                /* credits promised to peers, <= srq_posted */
    struct mca_btl_siwarp_frag_t **srq_frags;
    int inplace;                    /* software backend: Sends gather the
                                       user's buffer (SIWARP_SEND_UNREGISTERED) */

    int thread_running;             /* libsiwarp's progress thread serves m->ctx */
    int finalizing;
} mca_btl_siwarp_module_t;

/* ---- cross-file functions ----------------------------------------------- */

/* btl_siwarp_module.c: the module's functions, copied into each module */
extern const mca_btl_base_module_t mca_btl_siwarp_module_template;
/* btl_siwarp_params.c: register the MCA parameters; check their values.
 * Open MPI's base BTL parameters are registered into mca_btl_siwarp_param_module. */
extern mca_btl_base_module_t mca_btl_siwarp_param_module;
int  mca_btl_siwarp_params_register(void);
int  mca_btl_siwarp_params_verify(void);
int  mca_btl_siwarp_module_init(mca_btl_siwarp_module_t *m);
int  mca_btl_siwarp_progress_module(mca_btl_siwarp_module_t *m);
int  mca_btl_siwarp_errno_to_opal(int err);

mca_btl_base_registration_handle_t *
mca_btl_siwarp_register_mem(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                            void *base, size_t size, uint32_t flags);
int  mca_btl_siwarp_deregister_mem(mca_btl_base_module_t *btl,
                                   mca_btl_base_registration_handle_t *handle);
int  mca_btl_siwarp_put(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                        void *local_address, uint64_t remote_address,
                        mca_btl_base_registration_handle_t *local_handle,
                        mca_btl_base_registration_handle_t *remote_handle, size_t size,
                        int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                        void *cbcontext, void *cbdata);
int  mca_btl_siwarp_get(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                        void *local_address, uint64_t remote_address,
                        mca_btl_base_registration_handle_t *local_handle,
                        mca_btl_base_registration_handle_t *remote_handle, size_t size,
                        int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                        void *cbcontext, void *cbdata);
int  mca_btl_siwarp_rcache_init(mca_btl_siwarp_module_t *m);
/* MPI_T performance variables of the registrations (at component registration). */
int  mca_btl_siwarp_reg_pvars_register(void);

/* btl_siwarp_auth.c: this process's secret, drawn and published through
 * the modex at component init, wiped at close */
int  mca_btl_siwarp_auth_init(void);
void mca_btl_siwarp_auth_fini(void);

/* btl_siwarp_srq.c: the shared pool of eager receive buffers */
int  mca_btl_siwarp_srq_init(mca_btl_siwarp_module_t *m);
/* Credits for a new QP's peer, backed by buffers posted to the SRQ. */
int  mca_btl_siwarp_srq_reserve(mca_btl_siwarp_module_t *m, int *grant);
/* More credits for a peer holding `grant` that streams one way: how many
 * more were posted for it (0: at rq_depth, or the pool at srq_max).  Asked
 * once explicit CREDIT messages returned GROW_AFTER times the grant (and at
 * least GROW_MIN credits) since the last growth: a few one-way messages
 * (a rendezvous, a barrier) are no stream. */
/* Credits a peer gets at least (btl_siwarp_srq_min_credits=0): with 3 and
 * explicit returns at 2 owed, a peer that also sends to us carries them
 * back with its own Sends, and one that streams still has one in hand when
 * they come; (3 + 1 control) buffers of 64 KiB keep a peer within 256 KiB. */
#define MCA_BTL_SIWARP_SRQ_MIN_AUTO   3
#define MCA_BTL_SIWARP_SRQ_GROW_AFTER 4
#define MCA_BTL_SIWARP_SRQ_GROW_MIN   64
int  mca_btl_siwarp_srq_more(mca_btl_siwarp_module_t *m, int grant);
/* The grant of a QP that is not (and will not be) in full operation and
 * never took a buffer is free again. */
void mca_btl_siwarp_srq_release(mca_btl_siwarp_module_t *m, int grant);
int  mca_btl_siwarp_srq_repost(mca_btl_siwarp_module_t *m, struct mca_btl_siwarp_frag_t *frag);
void mca_btl_siwarp_srq_fini(mca_btl_siwarp_module_t *m);
int  mca_btl_siwarp_flush(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep);

/* component.c: a shared core's back-off (btl_siwarp_idle_quiet) */
#define MCA_BTL_SIWARP_OVERSUB_WAIT_US 1000
void mca_btl_siwarp_oversub_backoff(mca_btl_siwarp_module_t *m);

/* topo.c: the progress thread on the nearest core the rank is not bound to */
void mca_btl_siwarp_topo_place_thread(mca_btl_siwarp_module_t *m);
/* mca_btl_siwarp_ifnear() of interface ifname for this rank's binding, from
 * Open MPI's topology; -1 when the topology or the binding is unknown. */
int mca_btl_siwarp_topo_if_near(const char *ifname);

/* btl_siwarp_atomic.c: BTL atomics (btl_atomic_op / _fop / _cswap) */
#define MCA_BTL_SIWARP_ATOMIC_FLAGS                                                     \
    (MCA_BTL_ATOMIC_SUPPORTS_ADD | MCA_BTL_ATOMIC_SUPPORTS_AND | MCA_BTL_ATOMIC_SUPPORTS_OR | \
     MCA_BTL_ATOMIC_SUPPORTS_XOR | MCA_BTL_ATOMIC_SUPPORTS_LAND |                        \
     MCA_BTL_ATOMIC_SUPPORTS_LOR | MCA_BTL_ATOMIC_SUPPORTS_LXOR |                        \
     MCA_BTL_ATOMIC_SUPPORTS_SWAP | MCA_BTL_ATOMIC_SUPPORTS_MIN |                        \
     MCA_BTL_ATOMIC_SUPPORTS_MAX | MCA_BTL_ATOMIC_SUPPORTS_32BIT |                       \
     MCA_BTL_ATOMIC_SUPPORTS_FLOAT | MCA_BTL_ATOMIC_SUPPORTS_CSWAP |                     \
     MCA_BTL_ATOMIC_SUPPORTS_GLOB)
int  mca_btl_siwarp_atomic_op(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                              uint64_t remote_address,
                              mca_btl_base_registration_handle_t *remote_handle,
                              mca_btl_base_atomic_op_t op, uint64_t operand, int flags,
                              int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                              void *cbcontext, void *cbdata);
int  mca_btl_siwarp_atomic_fop(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                               void *local_address, uint64_t remote_address,
                               mca_btl_base_registration_handle_t *local_handle,
                               mca_btl_base_registration_handle_t *remote_handle,
                               mca_btl_base_atomic_op_t op, uint64_t operand, int flags,
                               int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                               void *cbcontext, void *cbdata);
/* btl_siwarp_ratomic.c: the same atomics as RFC 7306 Atomic Requests
 * toward a siwarp peer that negotiated them, executed by the target's
 * libsiwarp (also while the target computes, with the progress thread).
 * try: OPAL_ERR_NOT_AVAILABLE when this one cannot go that way (the
 * caller then sends it as a BTL message); wr: the work request of a
 * queued RATOMIC frag; store: its fetched value to the caller's buffer. */
struct siwarp_send_wr;
struct siwarp_sge;
struct mca_btl_siwarp_frag_t;
int  mca_btl_siwarp_ratomic_try(struct mca_btl_base_endpoint_t *ep, int op, int flags,
                                void *local_address, uint64_t remote_address,
                                const mca_btl_base_registration_handle_t *remote_handle,
                                uint64_t operand, uint64_t compare,
                                mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                void *cbdata);
void mca_btl_siwarp_ratomic_wr(struct mca_btl_siwarp_frag_t *frag, struct siwarp_send_wr *wr,
                               struct siwarp_sge *sge);
void mca_btl_siwarp_ratomic_store(struct mca_btl_siwarp_frag_t *frag);
/* test hook (SIWARP_BTL_TEST_HOSTILE_ATOMIC, btl_siwarp_atomic.c): forge
 * an atomic's target as a hostile peer would */
void mca_btl_siwarp_atomic_test_forge(uint32_t *stag, uint64_t *addr);
int  mca_btl_siwarp_atomic_cswap(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                                 void *local_address, uint64_t remote_address,
                                 mca_btl_base_registration_handle_t *local_handle,
                                 mca_btl_base_registration_handle_t *remote_handle,
                                 uint64_t compare, uint64_t value, int flags, int order,
                                 mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                 void *cbdata);

END_C_DECLS
#endif /* MCA_BTL_SIWARP_H */
