/*
 * btl_siwarp_endpoint.h - one peer process.
 *
 * State table (one setter, mca_btl_siwarp_ep_set_state, logs old => new):
 *   CLOSED     -> CONNECTING (first use), CONNECTED (incoming accepted)
 *   CONNECTING -> CONNECTED, CLOSED (simultaneous connect: wait for the
 *                 peer's connection), FAILED
 *   CONNECTED  -> FAILED, CLOSED (orderly hang-up with nothing outstanding)
 *   FAILED     -> (terminal)
 * The transport (iWARP QP or framed TCP socket) is chosen when connecting.
 *
 * While CONNECTING, the iWARP QP is either our own attempt (qp_accepted 0)
 * or one we accepted (qp_accepted 1), or there is none (await_incoming).
 * A peer makes one attempt at a time, but an attempt it gave up (MPA Reply
 * timeout while we did not progress; it then tries our next address) can
 * still be queued at our listener next to its live one, in any order.  So
 * a QP we accepted is never traded for another request (that closed the
 * live connection under the peer's first Sends), and an accepted QP that
 * dies before we use it was the given-up attempt: we connect ourselves.
 *
 * Flow control (iWARP only; RFC 5040 has no receiver-not-ready retry, so a
 * Send without a posted receive is fatal): each side grants the peer
 * rq_grant AM receives and ctrl_credits control receives, posted to the
 * module's shared receive queue (btl_siwarp_srq.c) or, without one, to the
 * QP (rq_grant = rq_depth).  An AM Send consumes one
 * send_credit; an explicit CREDIT message consumes one ctrl credit.  Every
 * message carries the receives re-posted since the last message
 * (credits / ctrl_credits).  A CREDIT message is sent only when owed AM
 * credits reach credit_threshold, so credit messages never answer each
 * other.
 */
#ifndef MCA_BTL_SIWARP_ENDPOINT_H
#define MCA_BTL_SIWARP_ENDPOINT_H

#include "btl_siwarp.h"
#include "btl_siwarp_frag.h"

BEGIN_C_DECLS

typedef enum {
    MCA_BTL_SIWARP_EP_CLOSED,
    MCA_BTL_SIWARP_EP_CONNECTING,
    MCA_BTL_SIWARP_EP_CONNECTED,
    MCA_BTL_SIWARP_EP_FAILED,
    MCA_BTL_SIWARP_EP_NUM_STATES
} mca_btl_siwarp_ep_state_t;

typedef enum {
    MCA_BTL_SIWARP_TR_NONE,
    MCA_BTL_SIWARP_TR_SELF,     /* this process: put, get and atomics run here */
    MCA_BTL_SIWARP_TR_IWARP,
    MCA_BTL_SIWARP_TR_TCP,
} mca_btl_siwarp_transport_t;

struct mca_btl_base_endpoint_t {
    opal_list_item_t super;
    opal_list_item_t active_item;       /* on module->active while busy */
    int on_active;
    mca_btl_siwarp_module_t *module;
    opal_proc_t *proc;
    opal_process_name_t name;

    mca_btl_siwarp_modex_addr_t *addrs; /* peer's published addresses */
    int num_addrs;
    int local;                          /* shares our network stack: loopback reaches it */
    int addr_idx;                       /* next address to try */

    mca_btl_siwarp_ep_state_t state;
    mca_btl_siwarp_transport_t transport;
    int await_incoming;                 /* lost a simultaneous connect */
    int qp_accepted;                    /* qp came from siwarp_accept */
    uint64_t deadline_ms;               /* await_incoming / fallback handshake:
                                           give up at this CLOCK_MONOTONIC ms */
    int warned_fallback;
    int had_traffic;
    int peer_rq;                        /* rq_depth from an incoming request */
    int rq_grant;                       /* AM credits we granted on qp */
    int credit_threshold;               /* owed credits that make a CREDIT */
    int credit_returned;                /* credits CREDIT messages returned
                                           since rq_grant last grew */

    /* iWARP */
    struct siwarp_qp *qp;
    mca_btl_siwarp_frag_t **recv_frags; /* rq_depth + ctrl_credits */
    int num_recv_frags;
    int32_t send_credits;               /* AM receives posted at the peer */
    int32_t send_ctrl;                  /* control receives posted at the peer */
    int32_t owed_credits;               /* AM receives we re-posted, unreported */
    int32_t owed_ctrl;
    int32_t sq_free;                    /* free send-queue slots */
    int32_t credit_inflight;            /* our CREDIT messages not completed */
    int32_t outstanding;                /* posted WRs not completed */

    /* TCP fallback */
    int fd;
    int tcp_connected;                  /* socket connected, HELLO sent */
    uint64_t tcp_started_ms;            /* this attempt's connect() */
    int tcp_hello_late;                 /* the HELLO left after half of connect_timeout */
    int tcp_late_retried;               /* ... and the peer had closed: tried once more */
    opal_list_t tx_queue;               /* frames partly / not yet written */
    unsigned tx_epoch;                  /* module->polls at the last frame sent at once */
    int tx_held;                        /* frames held for the next progress call */
    int on_held;                        /* on module->tcp_held */
    struct mca_btl_base_endpoint_t *held_next; /* next on module->tcp_held */
    mca_btl_siwarp_tcp_hdr_t rx_hdr;    /* the frame being received */
    size_t rx_hdr_got;                  /* handshake: header bytes in */
    uint8_t *rx_dst;                    /* where the body goes */
    size_t rx_left;
    size_t rx_len;
    uint8_t *rx_stage;                  /* what the socket gave, not yet taken */
    size_t rx_head, rx_tail;
    int rx_in_frame;                    /* rx_hdr parsed, its body not all in */
    int rx_direct;                      /* the body goes to rx_dst (PUT, GET_RESP) */
    uint8_t *rx_buf;                    /* DATA bodies staged unaligned */
    uint64_t rx_small[2];               /* GET_REQ bodies */
    uint64_t rx_hs[sizeof(mca_btl_siwarp_conn_pd_t) / 8]; /* HELLO_ACK / AUTH bodies */
    int tcp_auth_wait;                  /* accepted: the AUTH frame is due first */
    uint64_t rx_bytes;                  /* read from the socket, ever */
    uint64_t rx_stall_bytes;            /* ... at the last look inside a frame */
    uint64_t rx_stall_since;            /* coarse ms of that look */
    mca_btl_siwarp_frag_t *rx_get;      /* GET_RESP target */
    opal_list_t gets_inflight;          /* our GET_REQs awaiting data */

    /* atomics (btl_siwarp_atomic.c), either transport */
    opal_list_t atomics;                /* our requests awaiting their answer */
    uint64_t atomic_id;                 /* the next request's id */
    int rfc7306;                        /* this connection negotiated RFC 7306
                                           (btl_siwarp_ratomic.c) */

    opal_list_t pending;                /* frags waiting for connection, credits, SQ */

    /* authentication (btl_siwarp_auth.c): the initiator role's attempt
     * (out_*) and the acceptor role's (in_*) may overlap in a
     * simultaneous connect, so each keeps its own */
    uint8_t auth_key[32];               /* the pair's key */
    uint64_t auth_out_attempt;          /* our last attempt to this peer */
    uint8_t auth_out_nonce[MCA_BTL_SIWARP_NONCE_LEN];
    uint8_t auth_fin[MCA_BTL_SIWARP_MAC_LEN]; /* initiator: the proof to send;
                                           acceptor: the proof expected */
    uint64_t auth_in_attempt;           /* the peer's last attempt that proved the key */
    int auth_ok;                        /* acceptor: the first message proved it */
    int auth_kick;                      /* ... just now: gets and puts held may go;
                                           set: on module->auth_kicked */
    struct mca_btl_base_endpoint_t *kick_next; /* next on module->auth_kicked */
    int auth_peer_gates;                /* initiator: the peer's software stack holds
                                           our first Send for its check: send it */
    struct sockaddr_storage auth_from;  /* acceptor: where the attempt came from */
    /* the challenge round of an acceptor on a verbs device (btl_siwarp_auth.c) */
    uint8_t auth_chl[MCA_BTL_SIWARP_NONCE_LEN]; /* acceptor: our challenge out */
    uint64_t auth_chl_deadline;         /* ... valid until (ms); 0: none out */
    uint8_t auth_answer[MCA_BTL_SIWARP_NONCE_LEN]; /* initiator: the challenge to answer */
    int auth_answer_state;              /* initiator: MCA_BTL_SIWARP_ANSWER_* */
    int auth_answered;                  /* acceptor: the request just checked answered
                                           our challenge: proven, no first message due */
};
enum {
    MCA_BTL_SIWARP_ANSWER_NONE = 0,
    MCA_BTL_SIWARP_ANSWER_DUE,          /* the next request answers auth_answer */
    MCA_BTL_SIWARP_ANSWER_SENT,         /* it went: another challenge is a failure */
};
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;
typedef mca_btl_base_endpoint_t mca_btl_siwarp_endpoint_t;
OBJ_CLASS_DECLARATION(mca_btl_siwarp_endpoint_t);

mca_btl_siwarp_endpoint_t *mca_btl_siwarp_ep_create(mca_btl_siwarp_module_t *m,
                                                    opal_proc_t *proc);
/* The endpoint for this process itself: osc/rdma reads the rank -> node
 * map, lock words and windows of every rank through the RDMA BTL, its own
 * included (when it leads its node), so the BTL reaches itself for put,
 * get and atomics, done in place (btl_siwarp_rdma.c, btl_siwarp_atomic.c).
 * Sends to it are refused: btl self carries them. */
mca_btl_siwarp_endpoint_t *mca_btl_siwarp_ep_create_self(mca_btl_siwarp_module_t *m,
                                                         opal_proc_t *proc);
/* btl_siwarp_stack.c: publish this process's network-stack identity; does
 * `proc` share it (its loopback addresses reach it)? */
int  mca_btl_siwarp_stack_publish(void);
int  mca_btl_siwarp_stack_shared(opal_proc_t *proc);
/* NULL (osc/rdma passes none for itself at times) or the self endpoint */
static inline int mca_btl_siwarp_ep_is_self(const mca_btl_siwarp_endpoint_t *ep)
{
    return NULL == ep || MCA_BTL_SIWARP_TR_SELF == ep->transport;
}
mca_btl_siwarp_endpoint_t *mca_btl_siwarp_ep_lookup(mca_btl_siwarp_module_t *m,
                                                    const opal_process_name_t *name,
                                                    int create);
void mca_btl_siwarp_ep_release(mca_btl_siwarp_endpoint_t *ep);
void mca_btl_siwarp_ep_set_state(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_ep_state_t s);
/* Queue or start a send / put / get frag; returns OPAL_SUCCESS, an error,
 * or 1 for a Send that completed at once (btl_send's meaning of 1: the
 * frag is done, returned if the BTL owns it, no callback unless always). */
int  mca_btl_siwarp_ep_submit(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_frag_t *frag);
/* Try to post a send right now; OPAL_ERR_RESOURCE_BUSY if it would queue,
 * 1 as mca_btl_siwarp_ep_submit. */
int  mca_btl_siwarp_ep_try_send_now(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_frag_t *frag);
/* 1 when a Send submitted now would be handed to the kernel within the
 * call: not held back by send coalescing for the next progress call, not
 * queued behind other work.  btl_sendi reports its message complete to
 * ob1 at once, and the process may then leave MPI for good (compute,
 * block in the runtime): such a message must not wait on our next
 * progress call, so sendi takes only those that go now. */
int  mca_btl_siwarp_ep_send_goes_now(mca_btl_siwarp_endpoint_t *ep);
void mca_btl_siwarp_ep_progress_pending(mca_btl_siwarp_endpoint_t *ep);
/* First use of a CLOSED endpoint: connect over iWARP, or the fallback. */
int  mca_btl_siwarp_ep_start_connect(mca_btl_siwarp_endpoint_t *ep);
int  mca_btl_siwarp_ep_progress_connect(mca_btl_siwarp_endpoint_t *ep);
int  mca_btl_siwarp_progress_listeners(mca_btl_siwarp_module_t *m, int look_tcp);
void mca_btl_siwarp_ep_connected(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_transport_t tr,
                                 int peer_rq_depth);
/* show: 1 report unreachable, 2 report connection lost, 0 reported already
 * (PML not told), MCA_BTL_SIWARP_FAIL_REPORTED reported already, tell the PML */
#define MCA_BTL_SIWARP_FAIL_REPORTED 3
void mca_btl_siwarp_ep_fail(mca_btl_siwarp_endpoint_t *ep, const char *why, int show);
void mca_btl_siwarp_ep_activate(mca_btl_siwarp_endpoint_t *ep);
/* Completion of one CQ entry. */
int  mca_btl_siwarp_ep_handle_wc(mca_btl_siwarp_module_t *m, struct siwarp_wc *wc);
void mca_btl_siwarp_recv_handler(void *arg, const struct siwarp_wc *wc, const void *data);
/* Post one eager receive buffer on the endpoint's own QP (no SRQ). */
int  mca_btl_siwarp_ep_post_recv_frag(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_frag_t *frag);
/* Set the AM credits granted to the peer, and the threshold at which owed
 * ones go back in an explicit CREDIT message. */
void mca_btl_siwarp_ep_set_grant(mca_btl_siwarp_endpoint_t *ep, int grant);
/* Incoming iWARP connection request. */
void mca_btl_siwarp_ep_handle_conn_req(mca_btl_siwarp_module_t *m, struct siwarp_conn_req *req);
/* Connect decision shared by both transports: 1 = accept the incoming one. */
int  mca_btl_siwarp_ep_accept_incoming(mca_btl_siwarp_endpoint_t *ep);
/* Lost a simultaneous connect: wait for the peer's connection, at most
 * btl_siwarp_connect_timeout ms (then the peer is reported and failed). */
void mca_btl_siwarp_ep_await_incoming(mca_btl_siwarp_endpoint_t *ep);
uint64_t mca_btl_siwarp_now_ms(void);
/* the same to a few ms, without a syscall (CLOCK_MONOTONIC_COARSE) */
uint64_t mca_btl_siwarp_now_coarse_ms(void);
void mca_btl_siwarp_ep_show_fallback(mca_btl_siwarp_endpoint_t *ep, const char *why);
void mca_btl_siwarp_ep_refuse_fallback(const mca_btl_siwarp_endpoint_t *ep, const char *why);
const char *mca_btl_siwarp_ep_peer_host(const mca_btl_siwarp_endpoint_t *ep);
void mca_btl_siwarp_modex_to_sockaddr(const mca_btl_siwarp_modex_addr_t *a, uint16_t port_be,
                                      struct sockaddr_storage *ss, socklen_t *len);
const mca_btl_siwarp_modex_addr_t *mca_btl_siwarp_ep_next_addr(mca_btl_siwarp_endpoint_t *ep);
void mca_btl_siwarp_graveyard_clear(mca_btl_siwarp_module_t *m);
void mca_btl_siwarp_fill_conn_pd(mca_btl_siwarp_conn_pd_t *pd, int reason);
struct siwarp_conn_param;
void mca_btl_siwarp_conn_param(struct siwarp_conn_param *p);
/* out: host order; wire (NULL: not wanted): the bytes as they came, which
 * the proofs cover */
int  mca_btl_siwarp_ep_check_max_send(mca_btl_siwarp_endpoint_t *ep,
                                      const mca_btl_siwarp_conn_pd_t *pd);
int  mca_btl_siwarp_parse_conn_pd(const void *data, size_t len, mca_btl_siwarp_conn_pd_t *out,
                                 mca_btl_siwarp_conn_pd_t *wire);

/* btl_siwarp_auth.c: the handshake's proofs (see there), all over the
 * wire form of the private data */
int  mca_btl_siwarp_auth_ep_init(mca_btl_siwarp_endpoint_t *ep);
/* initiator: a new attempt, pd (wire form, filled) gets name, attempt,
 * nonce and mac */
void mca_btl_siwarp_auth_sign_request(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_conn_pd_t *pd);
/* acceptor: OPAL_SUCCESS if the request proves the key and is new */
int  mca_btl_siwarp_auth_check_request(mca_btl_siwarp_endpoint_t *ep,
                                       const mca_btl_siwarp_conn_pd_t *pd);
/* acceptor: sign its answer to the request pd_in; with OK, the proof
 * the initiator's first message must carry is set in ep->auth_fin */
void mca_btl_siwarp_auth_sign_reply(mca_btl_siwarp_endpoint_t *ep, const mca_btl_siwarp_conn_pd_t *pd_in,
                                    mca_btl_siwarp_conn_pd_t *pd);
/* initiator: OPAL_SUCCESS if the answer proves the key over our nonce;
 * with OK, the proof to send is set in ep->auth_fin */
int  mca_btl_siwarp_auth_check_reply(mca_btl_siwarp_endpoint_t *ep,
                                     const mca_btl_siwarp_conn_pd_t *pd);
/* acceptor on a verbs device: instead of accepting the request pd_in, sign
 * a CHALLENGE reject pd (filled with that reason) and remember its nonce */
void mca_btl_siwarp_auth_challenge(mca_btl_siwarp_endpoint_t *ep, const mca_btl_siwarp_conn_pd_t *pd_in,
                                   mca_btl_siwarp_conn_pd_t *pd);
/* initiator: a reject pd (wire form) is a CHALLENGE proven by the peer's key
 * over our request's nonce: 1 and the next request answers it; 0 if not a
 * challenge; OPAL_ERR_AUTHENTICATION_FAILED for a bad or repeated one */
int  mca_btl_siwarp_auth_take_challenge(mca_btl_siwarp_endpoint_t *ep,
                                        const mca_btl_siwarp_conn_pd_t *pd);
/* acceptor: must this request be challenged before a QP accepts it?  (A
 * verbs device places and delivers before the BTL sees a message, so it
 * cannot check a first message; SIWARP_BTL_TEST_CHALLENGE=1 makes the
 * software stack do the same, for tests.) */
int  mca_btl_siwarp_auth_must_challenge(const mca_btl_siwarp_endpoint_t *ep);
void mca_btl_siwarp_auth_fin_msg(const mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_auth_t *a);
int  mca_btl_siwarp_auth_check_fin(mca_btl_siwarp_endpoint_t *ep, const void *data, size_t len);
/* A warning, at most a few a minute, that a connection from `from` was
 * refused for `why`. */
void mca_btl_siwarp_auth_warn(const struct sockaddr *from, const char *why);
/* test hook (SIWARP_BTL_TEST_RECORD): log a request sent to `to` */
void mca_btl_siwarp_auth_test_record(const char *kind, const struct sockaddr *to,
                                     const mca_btl_siwarp_conn_pd_t *pd);
/* the module's progress: pending work of each kicked endpoint may go */
void mca_btl_siwarp_auth_kick_drain(mca_btl_siwarp_module_t *m);
/* a released endpoint leaves the kicked stack */
void mca_btl_siwarp_auth_kick_forget(mca_btl_siwarp_endpoint_t *ep);
/* libsiwarp's verifier of an accepted QP's first Send */
int  mca_btl_siwarp_auth_verify_qp(void *arg, struct siwarp_qp *qp, const void *data, uint32_t len);

/* btl_siwarp_ep_qp.c: the endpoint's QP */
/* Create ep->qp with its receive buffers posted (ep->rq_grant of them). */
int  mca_btl_siwarp_ep_qp_create(mca_btl_siwarp_endpoint_t *ep);
/* Post the initiator's first message, the proof (0 or a negative errno). */
int  mca_btl_siwarp_ep_send_auth(mca_btl_siwarp_endpoint_t *ep);
/* Detach ep->qp: destroyed now if it never carried traffic, else kept with
 * its buffers in the module's graveyard until finalize. */
void mca_btl_siwarp_ep_qp_abandon(mca_btl_siwarp_endpoint_t *ep);
/* This process's connection parameters, with ep's private data (reason,
 * receive depth) in pd, which p then points at. */
void mca_btl_siwarp_ep_conn_param(mca_btl_siwarp_endpoint_t *ep, struct siwarp_conn_param *p,
                                  mca_btl_siwarp_conn_pd_t *pd, int reason);

/* btl_siwarp_fallback.c: framed TCP */
int  mca_btl_siwarp_tcp_connect(mca_btl_siwarp_endpoint_t *ep);
int  mca_btl_siwarp_tcp_progress_connect(mca_btl_siwarp_endpoint_t *ep);
void mca_btl_siwarp_tcp_accept(mca_btl_siwarp_module_t *m, int listen_fd);
int  mca_btl_siwarp_tcp_accept_progress(mca_btl_siwarp_module_t *m);
void mca_btl_siwarp_tcp_accept_fini(mca_btl_siwarp_module_t *m);
int  mca_btl_siwarp_tcp_submit(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_frag_t *frag);
int  mca_btl_siwarp_tcp_progress(mca_btl_siwarp_endpoint_t *ep);
int  mca_btl_siwarp_tcp_goes_now(mca_btl_siwarp_endpoint_t *ep);

/* btl_siwarp_atomic.c.  A received MSG_ATOMIC / MSG_ATOMIC_RESP (hdr and
 * len: the whole message): 0, -1 malformed, -2 refused access (reported);
 * the caller fails the endpoint on < 0. */
int  mca_btl_siwarp_atomic_recv(mca_btl_siwarp_endpoint_t *ep, const mca_btl_siwarp_hdr_t *hdr,
                                size_t len);
/* Queue one request (op MCA_BTL_SIWARP_AOP_*, flags MCA_BTL_SIWARP_AF_*),
 * completed through cbfunc when the answer comes; under the module lock. */
int  mca_btl_siwarp_atomic_submit(mca_btl_siwarp_endpoint_t *ep, int op, int flags,
                                  void *local_address, uint64_t remote_address,
                                  mca_btl_base_registration_handle_t *local_handle,
                                  uint32_t remote_stag, uint64_t operand, uint64_t compare,
                                  mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                  void *cbdata);
/* A fallback PUT frame is written: complete `put` when a NOP request sent
 * behind it is answered (the target has placed it then). */
int  mca_btl_siwarp_atomic_fence(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_frag_t *put);
/* Complete every request still awaiting its answer with `status`. */
void mca_btl_siwarp_atomic_fail_all(mca_btl_siwarp_endpoint_t *ep, int status);
/* Write every frame coalescing holds back (the endpoints on m->tcp_held). */
void mca_btl_siwarp_tcp_flush_held(mca_btl_siwarp_module_t *m);
/* a released endpoint leaves that list */
void mca_btl_siwarp_tcp_held_forget(mca_btl_siwarp_endpoint_t *ep);
void mca_btl_siwarp_tcp_close(mca_btl_siwarp_endpoint_t *ep);
/* btl_siwarp_fallback_rx.c */
int  mca_btl_siwarp_tcp_rx_progress(mca_btl_siwarp_endpoint_t *ep);
int  mca_btl_siwarp_tcp_rx_body(mca_btl_siwarp_endpoint_t *ep);
void mca_btl_siwarp_tcp_rx_reset(mca_btl_siwarp_endpoint_t *ep);

END_C_DECLS
#endif
