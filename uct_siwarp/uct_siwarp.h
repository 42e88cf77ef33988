/*
 * uct_siwarp.h - the siwarp UCT transport: a UCX transport over libsiwarp
 * (RDMA Write / Read, RFC 7306 atomics, Sends for active messages), laid
 * out as UCX's own tcp and rc transports: md (registration, rkeys), iface
 * (capabilities, progress, event fd), cm (connections), ep (am/put/get,
 * flush, fence, pending), amo (atomics).
 */
#ifndef UCT_SIWARP_H
#define UCT_SIWARP_H

#include <netinet/in.h>
#include <net/if.h>

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/datastruct/queue.h>
#include <ucs/datastruct/list.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>

#include <siwarp/siwarp.h>

#include "auth.h"     /* common/: the handshake primitives */

#define UCT_SIWARP_NAME          "siwarp"
#define UCT_SIWARP_CONFIG_PREFIX "SIWARP_"

/* Every AM travels as one Send: this prefix, then UCT's payload (for short
 * and zcopy, the 8-octet or max_hdr header first).  8 octets so that the
 * payload handed to the AM handler is 8-aligned in the receive buffer. */
typedef struct uct_siwarp_am_hdr {
    uint8_t  am_id;
    uint8_t  pad[7];
} uct_siwarp_am_hdr_t;

/* What the two MPA private data blocks carry (RFC 5044 7.1: up to 512
 * octets of opaque ULP data).  Little-endian host order: both ends are this
 * module on the same architecture (the magic tells anything else apart).
 * One connection carries both directions (uct_siwarp_conn.c), so each end
 * names to the other its credit word (where the other end reports the AMs
 * it consumed) and a word to Read for flush; the Request also names the
 * initiator's own iface (its listener), with src_mac proving that the
 * initiator holds that iface's secret.  nonce and mac authenticate the
 * connection (uct_siwarp_auth.c). */
#define UCT_SIWARP_PD_MAGIC   0x34435455u   /* "UTC4": one connection both ways, LEFT, challenges */
#define UCT_SIWARP_FIN_MAGIC  0x4e494655u   /* "UFIN" */
#define UCT_SIWARP_SECRET_LEN 16
#define UCT_SIWARP_NONCE_LEN  16
#define UCT_SIWARP_MAC_LEN    32            /* HMAC-SHA256 */
typedef struct uct_siwarp_conn_pd {
    uint32_t magic;
    uint32_t credit_stag;   /* the sender's credit word */
    uint64_t credit_addr;
    uint64_t flush_addr;    /* a word of its iface the other end may Read */
    uint32_t flush_stag;
    uint32_t src_ipv4;      /* Request: the initiator iface's listener, network order */
    uint16_t src_port;      /* Request: network order */
    uint16_t rx_depth;      /* receive buffers this end posted for the other */
    uint32_t flags;         /* UCT_SIWARP_PD_F_* */
    uint8_t  nonce[UCT_SIWARP_NONCE_LEN];
    uint8_t  src_mac[UCT_SIWARP_MAC_LEN];   /* Request: HMAC(initiator's secret, ...) */
    uint8_t  mac[UCT_SIWARP_MAC_LEN];       /* last: covers everything before */
} uct_siwarp_conn_pd_t;
_Static_assert(sizeof(uct_siwarp_conn_pd_t) == 120, "MPA private data of uct_siwarp");

/* conn_pd flags: the challenge round of a verbs acceptor
 * (uct_siwarp_challenge.c) */
#define UCT_SIWARP_PD_F_CHALLENGE 0x1u   /* MPA Reject: nonce is the challenge */
#define UCT_SIWARP_PD_F_ANSWER    0x2u   /* MPA Request: nonce is the challenge answered */

/* Challenges an acceptor keeps out at once (the oldest makes room) */
#define UCT_SIWARP_CHALLENGES 64
typedef struct uct_siwarp_challenge {
    uint8_t    nonce[UCT_SIWARP_NONCE_LEN];
    ucs_time_t expires;                  /* 0: free or spent */
} uct_siwarp_challenge_t;

/* The initiator's first Send on a connection: the proof of step 3. */
typedef struct uct_siwarp_auth_fin {
    uint32_t magic;
    uint8_t  mac[UCT_SIWARP_MAC_LEN];
} UCS_S_PACKED uct_siwarp_auth_fin_t;

/* Device and iface addresses: IPv4 address of the device, then the port of
 * the iface's listener and the depth of each accepted QP's receive queue
 * (the credits a new ep starts with). */
typedef struct uct_siwarp_dev_addr {
    uint32_t ipv4;                  /* network order */
} UCS_S_PACKED uct_siwarp_dev_addr_t;

typedef struct uct_siwarp_iface_addr {
    uint16_t port;                  /* network order */
    uint16_t rx_depth;
    uint8_t  flags;                 /* UCT_SIWARP_IFACE_F_* */
    uint8_t  secret[UCT_SIWARP_SECRET_LEN];   /* the key of its connections */
} UCS_S_PACKED uct_siwarp_iface_addr_t;

/* The iface runs libsiwarp's software stack: its listener understands the
 * reserved MPA bits that offer large FPDUs and RFC 7306 (an RNIC's may
 * refuse them, so an initiator offers them only to such a peer). */
#define UCT_SIWARP_IFACE_F_SOFT 0x01

typedef struct uct_siwarp_md_config {
    uct_md_config_t super;
} uct_siwarp_md_config_t;

typedef struct uct_siwarp_md {
    uct_md_t          super;
    struct siwarp_ctx *ctx;
    struct siwarp_pd  *pd;
    unsigned          pt_users;     /* ifaces that asked for the progress thread */
} uct_siwarp_md_t;

/* libsiwarp's software stack, not a verbs device */
static inline int uct_siwarp_md_is_soft(const uct_siwarp_md_t *md)
{
    return !strcmp(siwarp_ctx_backend(md->ctx), "soft");
}

typedef struct uct_siwarp_iface_config {
    uct_iface_config_t super;
    size_t             seg_size;
    unsigned           rx_queue_len;
    unsigned           tx_queue_len;
    unsigned           max_iov;
    int                atomics;
    int                crc;
    double             llp_timeout;
    double             stall_timeout;
    int                progress_thread;
    unsigned long      tx_coalesce;      /* UCS_ULUNITS_AUTO: by progress_thread */
} uct_siwarp_iface_config_t;

/* UCX_SIWARP_TX_COALESCE=auto with the progress thread */
#define UCT_SIWARP_TX_COALESCE_AUTO 16

/* wr_id of the connection's own WRs (credit Writes, the first Send): no
 * op's address */
#define UCT_SIWARP_WRID_CONN ((uint64_t)1)

/* am_id of a Send that is not an AM for UCT (UCT's ids are below
 * UCT_AM_ID_MAX): the sender's ep moved off this connection to its twin
 * and sends nothing more on it (uct_siwarp_conn.c, "two eps at once") */
#define UCT_SIWARP_AM_LEFT 0xff

/* Kinds of signaled work request, named by the op in its wr_id. */
enum {
    UCT_SIWARP_OP_TX,        /* zcopy Send / Write / Read: a completion to call */
    UCT_SIWARP_OP_FLUSH,     /* the Read that proves remote placement */
    UCT_SIWARP_OP_AMO,       /* fetching atomic: result to store */
    UCT_SIWARP_OP_AMO_POST,  /* non-fetching atomic */
    UCT_SIWARP_OP_GET_BCOPY, /* Read into a bounce buffer, then unpacked */
    UCT_SIWARP_OP_FLUSH_WAIT,/* no WR: a flush that waits for earlier ones (ep->flush_wait) */
};

/* get_bcopy reads into registered bounce buffers of the iface: UCP puts
 * its small gets (the "rma" lane) only on a transport that has get_bcopy,
 * and otherwise emulates them with active messages that the target's UCP
 * must progress, which an RDMA Read does not need. */
#define UCT_SIWARP_GET_BCOPY_MAX   4096
#define UCT_SIWARP_BOUNCE_COUNT    32

typedef struct uct_siwarp_ep uct_siwarp_ep_t;

/* Free pieces of one registered area (AMO/flush slots, get_bcopy bounce
 * buffers), handed to ops and back. */
typedef struct uct_siwarp_pool {
    void     **free;
    unsigned count;
} uct_siwarp_pool_t;

typedef struct uct_siwarp_op {
    struct uct_siwarp_op *next;        /* free list */
    uct_siwarp_ep_t      *ep;
    uint64_t             ep_gen;       /* ep->gen at post: an ep that left is not its ep */
    uct_completion_t     *comp;
    void                 *result;      /* AMO: where the fetched value goes */
    unsigned             kind;
    int                  live;         /* taken and not yet put back (a completion may come) */
    unsigned             shift;        /* AMO: 0, or 32 for the high half */
    int                  is32;
    uint64_t             *slot;        /* AMO / FLUSH: registered 8 octets */
    void                 *bounce;      /* GET_BCOPY: registered buffer */
    uct_unpack_callback_t unpack_cb;   /* GET_BCOPY: the caller's unpacker */
    void                 *unpack_arg;
    size_t               length;
    uint64_t             wait_seq;     /* FLUSH_WAIT: ep->tx_completed that ends it */
    struct {                           /* XOR as read, then CmpSwap until it held */
        int      active;
        int      counted;              /* in its ep's xor_inflight */
        uint64_t operand;              /* shifted into its half */
        uint64_t expect;               /* the word the CmpSwap compares with */
        uint64_t addr;
        uint32_t rkey;
    } xor;
    uint8_t              hdr[];        /* AM zcopy: prefix + user header */
} uct_siwarp_op_t;

typedef struct uct_siwarp_iface {
    uct_base_iface_t       super;
    uct_siwarp_md_t        *md;
    struct siwarp_cq       *cq;          /* sends and receives of every QP */
    struct siwarp_listener *listener;
    struct sockaddr_in     addr;         /* device address, listener port */
    char                   if_name[IFNAMSIZ];
    int                    is_loopback;
    double                 link_bw;      /* bytes/s, uct_siwarp_iface_query */
    uint64_t               *words;       /* the flush word, then AMO slots */
    struct siwarp_mr       *words_mr;
    void                   *bounce;      /* UCT_SIWARP_BOUNCE_COUNT get_bcopy buffers */
    struct siwarp_mr       *bounce_mr;
    uct_siwarp_pool_t      bounces;      /* of bounce */
    unsigned               num_slots;
    uct_siwarp_pool_t      slots;        /* words[1 .. num_slots] */
    void                   *tx_buf;      /* bcopy staging (copied at post) */
    uct_siwarp_op_t        *free_ops;
    uint64_t               ep_gen;       /* the last uct_siwarp_ep_t.gen given */
    size_t                 op_size;
    ucs_list_link_t        eps;
    ucs_list_link_t        conns;        /* uct_siwarp_conn_t, both roles */
    /* Progress walks eps and conns only while one may need it (an ep
     * connecting, merging, with pending requests or an unreported failure;
     * a conn failed without an ep or awaiting its proof): a job with
     * thousands of peers must not pay for them on every call */
    int                    eps_dirty;
    int                    conns_dirty;
    int                    event_fd;
    uint8_t                secret[UCT_SIWARP_SECRET_LEN];   /* uct_siwarp_auth.c */
    int                    challenge;    /* challenge every Request (uct_siwarp_challenge.c) */
    uct_siwarp_challenge_t challenges[UCT_SIWARP_CHALLENGES];
    struct {
        size_t   seg_size;               /* Send payload incl. the prefix */
        unsigned rx_depth;
        unsigned tx_depth;
        unsigned max_iov;
        int      atomics;
        int      crc;                    /* ask for MPA CRC (UCX_SIWARP_CRC) */
        int      llp_timeout_ms;
        int      stall_timeout_ms;   /* a first message owed, a message begun */
        unsigned tx_coalesce;            /* qp_init_attr.tx_coalesce */
    } config;
    int                    pt_user;   /* counted in md->pt_users */
    unsigned               verified;       /* accepted connections verified, ever */
    unsigned               verified_seen;  /* ... when eps last looked for a merge */
} uct_siwarp_iface_t;

enum { UCT_SIWARP_EP_CONNECTING, UCT_SIWARP_EP_CONNECTED, UCT_SIWARP_EP_FAILED };

typedef struct uct_siwarp_conn uct_siwarp_conn_t;

struct uct_siwarp_ep {
    uct_base_ep_t     super;
    uct_siwarp_conn_t *conn;             /* the connection it sends on */
    uct_siwarp_conn_t *merge_to;         /* the one it moves to (uct_siwarp_conn.c) */
    int               state;
    ucs_list_link_t   list;
    ucs_queue_head_t  pending_q;
    int               unflushed;         /* posted since the last flush Read */
    int               fence;             /* next WR waits for earlier Reads */
    int               dispatching;       /* pending requests are being called */
    unsigned          xor_inflight;      /* XORs whose CmpSwap is yet to come */
    ucs_status_t      fail_status;       /* FAILED: why */
    int               fail_reported;     /* uct_iface_handle_ep_err called */
    uint64_t          gen;               /* unique in its iface (uct_siwarp_op_t.ep_gen) */
    uint64_t          tx_posted;         /* signaled WRs posted, ever (tx_depth at */
    uint64_t          tx_completed;      /* most outstanding), and completed */
    uct_siwarp_op_t   *flush_wait;       /* FLUSH_WAIT ops, oldest first (op->next) */
    uct_siwarp_op_t   *flush_wait_tail;
};

/* One iWARP connection between two ifaces, carrying AMs, Writes and Reads
 * both ways (uct_siwarp_conn.c).  The iface owns it; at most one ep of
 * each end sends on it at a time. */
enum { UCT_SIWARP_CONN_CONNECTING, UCT_SIWARP_CONN_UP, UCT_SIWARP_CONN_FAILED };

struct uct_siwarp_conn {
    uct_siwarp_iface_t *iface;
    struct siwarp_qp  *qp;
    ucs_list_link_t   list;              /* iface->conns */
    uct_siwarp_ep_t   *ep;               /* the ep sending on it, or NULL */
    unsigned          orphans;           /* WRs of eps that left, not yet completed */
    int               initiator;
    int               state;
    int               verified;          /* acceptor: the first Send proved the key */
    int               error;             /* FAILED: 0 for an orderly close by the peer */
    int               left;              /* our ep moved off it: no ep of ours takes it */
    int               peer_left;         /* the peer's did (UCT_SIWARP_AM_LEFT): it closes
                                          * once none of ours sends on it */
    struct sockaddr_in peer_addr;        /* the peer iface's listener */
    uint8_t           peer_secret[UCT_SIWARP_SECRET_LEN];
    int               peer_known;        /* acceptor: src_mac checked with peer_secret */
    /* receiving: AMs from the peer */
    void              *bufs;
    struct siwarp_mr  *bufs_mr;
    uint64_t          consumed;          /* AMs handed to UCT, ever */
    uint64_t          reported;          /* last value written to the peer */
    uint64_t          report_src;        /* inline source of that Write */
    uint32_t          peer_credit_stag;  /* where reports go: the peer's credit word */
    uint64_t          peer_credit_addr;
    /* sending: the peer's receive buffers and words */
    uint64_t          *credit_word;      /* written by the peer: AMs it consumed */
    struct siwarp_mr  *credit_mr;
    uint64_t          am_sent;
    unsigned          peer_rx_depth;
    uint32_t          peer_flush_stag;
    uint64_t          peer_flush_addr;
    int               rfc7306;
    unsigned          nbufs;             /* rx_depth, +1 for the proof on a verbs device */
    int               fin_due;           /* verbs acceptor: the proof is checked here */
    int               answered;          /* initiator: it answered a challenge */
    unsigned          peer_flags;        /* initiator: the iface address's flags */
    struct siwarp_qp  *old_qp;           /* the QP a challenge refused: destroyed at reap */
    ucs_time_t        fin_deadline;      /* ... and must come by then */
    uct_siwarp_conn_pd_t req, rep;       /* the MPA exchange */
    char              peer[48];          /* address:port, for messages */
};

extern uct_component_t uct_siwarp_component;

ucs_status_t uct_siwarp_status(int rc);

/* conn */
uct_siwarp_conn_t *uct_siwarp_conn_new(uct_siwarp_iface_t *iface, int initiator);
void uct_siwarp_conn_destroy(uct_siwarp_conn_t *conn);
int uct_siwarp_conn_new_qp(uct_siwarp_conn_t *conn);
void uct_siwarp_conn_pd_fill(uct_siwarp_conn_t *conn, uct_siwarp_conn_pd_t *pd);
unsigned uct_siwarp_conn_handle(uct_siwarp_conn_t *conn, const struct siwarp_wc *wc);
void uct_siwarp_conn_set_failed(uct_siwarp_conn_t *conn, int error, const char *why);
void uct_siwarp_conn_reap(uct_siwarp_iface_t *iface);
uct_siwarp_conn_t *uct_siwarp_conn_find(uct_siwarp_iface_t *iface, const struct sockaddr_in *peer,
                                        const uint8_t *peer_secret);
void uct_siwarp_conn_report(uct_siwarp_conn_t *conn);
uct_siwarp_conn_t *uct_siwarp_conn_merge_target(uct_siwarp_conn_t *conn);
/* May one more Send go (an AM, or UCT_SIWARP_AM_LEFT)?  At most the peer's
 * rx_depth beyond what it reported consumed: the peer's Write of its count
 * lands in credit_word at any progress (uct_siwarp_conn.c). */
static inline int uct_siwarp_conn_has_credit(const uct_siwarp_conn_t *conn)
{
    uint64_t consumed = *(const volatile uint64_t*)conn->credit_word;

    return conn->am_sent - consumed < conn->peer_rx_depth;
}
int uct_siwarp_conn_send_own(uct_siwarp_conn_t *conn, const void *buf, uint32_t len);
int uct_siwarp_conn_send_left(uct_siwarp_conn_t *conn);
void uct_siwarp_conn_retire(uct_siwarp_conn_t *conn);

/* cm */
ucs_status_t uct_siwarp_listen(uct_siwarp_iface_t *iface);
unsigned uct_siwarp_accept_progress(uct_siwarp_iface_t *iface);
ucs_status_t uct_siwarp_connect(uct_siwarp_iface_t *iface, const struct sockaddr_in *peer,
                                const uct_siwarp_iface_addr_t *ia, uct_siwarp_conn_t **conn_p);
/* peer_flags: UCT_SIWARP_IFACE_F_* of the peer (an initiator), SOFT for a listener */
void uct_siwarp_conn_param(uct_siwarp_iface_t *iface, struct siwarp_conn_param *p,
                           unsigned peer_flags);
int  uct_siwarp_conn_check_up(uct_siwarp_conn_t *conn);
int  uct_siwarp_ep_check_connected(uct_siwarp_ep_t *ep);

/* auth */
int  uct_siwarp_auth_sign_request(const uint8_t *secret, const uint8_t *own_secret,
                                  uct_siwarp_conn_pd_t *req);
int  uct_siwarp_auth_check_src(const uint8_t *peer_secret, const uct_siwarp_conn_pd_t *req);
int  uct_siwarp_auth_check_request(const uct_siwarp_iface_t *iface,
                                   const uct_siwarp_conn_pd_t *req);
int  uct_siwarp_auth_sign_reply(const uct_siwarp_iface_t *iface, const uct_siwarp_conn_pd_t *req,
                                uct_siwarp_conn_pd_t *rep);
int  uct_siwarp_auth_check_reply(const uint8_t *secret, const uct_siwarp_conn_pd_t *req,
                                 const uct_siwarp_conn_pd_t *rep);
void uct_siwarp_auth_fin(const uint8_t *secret, const uct_siwarp_conn_pd_t *req,
                         const uct_siwarp_conn_pd_t *rep, uct_siwarp_auth_fin_t *fin);
int  uct_siwarp_auth_verify_first(void *arg, struct siwarp_qp *qp, const void *data,
                                  uint32_t len);
void uct_siwarp_auth_warn(const uct_siwarp_iface_t *iface, const char *peer, const char *why);
void uct_siwarp_auth_mac(const uint8_t *secret, const char label[4], const void *a,
                         size_t alen, const void *b, size_t blen,
                         uint8_t mac[UCT_SIWARP_MAC_LEN]);
void uct_siwarp_auth_sign_request_macs(const uint8_t *secret, const uint8_t *own_secret,
                                       uct_siwarp_conn_pd_t *req);

/* challenge */
void uct_siwarp_challenge_init(uct_siwarp_iface_t *iface);
int  uct_siwarp_challenge_issue(uct_siwarp_iface_t *iface, const uct_siwarp_conn_pd_t *req,
                                uct_siwarp_conn_pd_t *rej);
int  uct_siwarp_challenge_spend(uct_siwarp_iface_t *iface, const uct_siwarp_conn_pd_t *req);
int  uct_siwarp_challenge_answer(uct_siwarp_conn_t *conn, const uct_siwarp_conn_pd_t *rej);

/* ep */
UCS_CLASS_DECLARE_NEW_FUNC(uct_siwarp_ep_t, uct_ep_t, const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_siwarp_ep_t, uct_ep_t);
ucs_status_t uct_siwarp_ep_am_short(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                                    const void *payload, unsigned length);
ucs_status_t uct_siwarp_ep_am_short_iov(uct_ep_h tl_ep, uint8_t id, const uct_iov_t *iov,
                                        size_t iovcnt);
ssize_t uct_siwarp_ep_am_bcopy(uct_ep_h tl_ep, uint8_t id, uct_pack_callback_t pack_cb,
                               void *arg, unsigned flags);
ucs_status_t uct_siwarp_ep_am_zcopy(uct_ep_h tl_ep, uint8_t id, const void *header,
                                    unsigned header_length, const uct_iov_t *iov,
                                    size_t iovcnt, unsigned flags, uct_completion_t *comp);
ucs_status_t uct_siwarp_ep_put_short(uct_ep_h tl_ep, const void *buffer, unsigned length,
                                     uint64_t remote_addr, uct_rkey_t rkey);
ssize_t uct_siwarp_ep_put_bcopy(uct_ep_h tl_ep, uct_pack_callback_t pack_cb, void *arg,
                                uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_siwarp_ep_put_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                     uint64_t remote_addr, uct_rkey_t rkey,
                                     uct_completion_t *comp);
ucs_status_t uct_siwarp_ep_get_bcopy(uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                                     void *arg, size_t length, uint64_t remote_addr,
                                     uct_rkey_t rkey, uct_completion_t *comp);
ucs_status_t uct_siwarp_ep_get_zcopy(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                                     uint64_t remote_addr, uct_rkey_t rkey,
                                     uct_completion_t *comp);
ucs_status_t uct_siwarp_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req,
                                       unsigned flags);
void uct_siwarp_ep_pending_purge(uct_ep_h tl_ep, uct_pending_purge_callback_t cb, void *arg);
ucs_status_t uct_siwarp_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp);
ucs_status_t uct_siwarp_ep_fence(uct_ep_h tl_ep, unsigned flags);
unsigned uct_siwarp_ep_progress_pending(uct_siwarp_ep_t *ep);
int uct_siwarp_ep_needs_progress(const uct_siwarp_ep_t *ep);
void uct_siwarp_ep_slot_back(uct_siwarp_ep_t *ep);
void uct_siwarp_ep_tx_done(uct_siwarp_ep_t *ep, const struct siwarp_wc *wc);
void uct_siwarp_ep_conn_failed(uct_siwarp_ep_t *ep);
unsigned uct_siwarp_ep_merge_progress(uct_siwarp_ep_t *ep);
void uct_siwarp_ep_set_failed(uct_siwarp_ep_t *ep, ucs_status_t status);
unsigned uct_siwarp_ep_report_failures(uct_siwarp_iface_t *iface);
ucs_status_t uct_siwarp_ep_post(uct_siwarp_ep_t *ep, struct siwarp_send_wr *wr);
ucs_status_t uct_siwarp_ep_post_internal(uct_siwarp_ep_t *ep, struct siwarp_send_wr *wr);
int uct_siwarp_ep_has_room(uct_siwarp_ep_t *ep);

/* iface: ops and slots */
uct_siwarp_op_t *uct_siwarp_op_get(uct_siwarp_iface_t *iface, uct_siwarp_ep_t *ep,
                                   unsigned kind, uct_completion_t *comp);
void uct_siwarp_op_put(uct_siwarp_iface_t *iface, uct_siwarp_op_t *op);

/* amo */
ucs_status_t uct_siwarp_ep_atomic_cswap64(uct_ep_h tl_ep, uint64_t compare, uint64_t swap,
                                          uint64_t remote_addr, uct_rkey_t rkey,
                                          uint64_t *result, uct_completion_t *comp);
ucs_status_t uct_siwarp_ep_atomic_cswap32(uct_ep_h tl_ep, uint32_t compare, uint32_t swap,
                                          uint64_t remote_addr, uct_rkey_t rkey,
                                          uint32_t *result, uct_completion_t *comp);
ucs_status_t uct_siwarp_ep_atomic64_post(uct_ep_h tl_ep, unsigned opcode, uint64_t value,
                                         uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_siwarp_ep_atomic32_post(uct_ep_h tl_ep, unsigned opcode, uint32_t value,
                                         uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_siwarp_ep_atomic64_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                          uint64_t value, uint64_t *result,
                                          uint64_t remote_addr, uct_rkey_t rkey,
                                          uct_completion_t *comp);
ucs_status_t uct_siwarp_ep_atomic32_fetch(uct_ep_h tl_ep, uct_atomic_op_t opcode,
                                          uint32_t value, uint32_t *result,
                                          uint64_t remote_addr, uct_rkey_t rkey,
                                          uct_completion_t *comp);
void uct_siwarp_amo_done(uct_siwarp_op_t *op);
int  uct_siwarp_amo_xor_continue(uct_siwarp_op_t *op);

#define UCT_SIWARP_AMO_OPS (UCS_BIT(UCT_ATOMIC_OP_ADD) | UCS_BIT(UCT_ATOMIC_OP_AND) | \
                            UCS_BIT(UCT_ATOMIC_OP_OR) | UCS_BIT(UCT_ATOMIC_OP_XOR))
#define UCT_SIWARP_AMO_FOPS (UCT_SIWARP_AMO_OPS | UCS_BIT(UCT_ATOMIC_OP_SWAP) | \
                             UCS_BIT(UCT_ATOMIC_OP_CSWAP))

#endif
