/*
 * btl_siwarp_endpoint.c - per-peer connection state: creation, connecting
 * (iWARP or the fallback), failure.  The passive side (a peer's connection
 * request, which of two crossing connections survives) is
 * btl_siwarp_ep_accept.c; the endpoint's QP, its
 * credit grant and the connection private data are btl_siwarp_ep_qp.c, the
 * iWARP data path btl_siwarp_datapath.c, the plain-TCP fallback transport
 * btl_siwarp_fallback.c.
 */
#include "btl_siwarp.h"
#include "btl_siwarp_endpoint.h"
#include "btl_siwarp_frag.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "opal/util/show_help.h"
#include "opal/util/output.h"

static void ep_construct(mca_btl_siwarp_endpoint_t *ep)
{
    OBJ_CONSTRUCT(&ep->active_item, opal_list_item_t);
    OBJ_CONSTRUCT(&ep->pending, opal_list_t);
    OBJ_CONSTRUCT(&ep->tx_queue, opal_list_t);
    OBJ_CONSTRUCT(&ep->gets_inflight, opal_list_t);
    OBJ_CONSTRUCT(&ep->atomics, opal_list_t);
    ep->atomic_id = 1;
    ep->on_active = 0;
    ep->module = NULL;
    ep->proc = NULL;
    ep->addrs = NULL;
    ep->num_addrs = ep->addr_idx = 0;
    ep->state = MCA_BTL_SIWARP_EP_CLOSED;
    ep->transport = MCA_BTL_SIWARP_TR_NONE;
    ep->await_incoming = ep->warned_fallback = ep->had_traffic = 0;
    ep->qp_accepted = 0;
    ep->deadline_ms = 0;
    ep->peer_rq = 0;
    ep->rq_grant = ep->credit_threshold = ep->credit_returned = 0;
    ep->qp = NULL;
    ep->recv_frags = NULL;
    ep->num_recv_frags = 0;
    ep->send_credits = ep->send_ctrl = ep->owed_credits = ep->owed_ctrl = 0;
    ep->sq_free = ep->credit_inflight = ep->outstanding = 0;
    ep->rfc7306 = 0;
    ep->fd = -1;
    ep->tcp_connected = 0;
    ep->tx_epoch = ~0u;     /* no progress call yet: the first frame leaves at once */
    ep->tx_held = ep->on_held = 0;
    ep->held_next = NULL;
    ep->rx_hdr_got = ep->rx_left = ep->rx_len = 0;
    ep->rx_dst = ep->rx_buf = ep->rx_stage = NULL;
    ep->rx_head = ep->rx_tail = 0;
    ep->rx_in_frame = ep->rx_direct = 0;
    ep->rx_get = NULL;
    ep->tcp_auth_wait = 0;
    ep->rx_bytes = ep->rx_stall_bytes = ep->rx_stall_since = 0;
    memset(ep->auth_key, 0, sizeof(ep->auth_key));
    ep->auth_out_attempt = ep->auth_in_attempt = 0;
    ep->auth_ok = ep->auth_peer_gates = ep->auth_kick = 0;
    ep->kick_next = NULL;
    ep->auth_chl_deadline = 0;
    ep->auth_answer_state = MCA_BTL_SIWARP_ANSWER_NONE;
    ep->auth_answered = 0;
}

static void ep_destruct(mca_btl_siwarp_endpoint_t *ep)
{
    memset(ep->auth_key, 0, sizeof(ep->auth_key));
    OBJ_DESTRUCT(&ep->active_item);
    OBJ_DESTRUCT(&ep->pending);
    OBJ_DESTRUCT(&ep->tx_queue);
    OBJ_DESTRUCT(&ep->gets_inflight);
    OBJ_DESTRUCT(&ep->atomics);
    free(ep->addrs);
    free(ep->rx_buf);
    free(ep->rx_stage);
}

OBJ_CLASS_INSTANCE(mca_btl_siwarp_endpoint_t, opal_list_item_t, ep_construct, ep_destruct);

static const char *const ep_state_name[MCA_BTL_SIWARP_EP_NUM_STATES] = {
    [MCA_BTL_SIWARP_EP_CLOSED] = "CLOSED",
    [MCA_BTL_SIWARP_EP_CONNECTING] = "CONNECTING",
    [MCA_BTL_SIWARP_EP_CONNECTED] = "CONNECTED",
    [MCA_BTL_SIWARP_EP_FAILED] = "FAILED",
};

/* allowed[old] is a bit mask of the states reachable from old */
static const unsigned ep_state_allowed[MCA_BTL_SIWARP_EP_NUM_STATES] = {
    [MCA_BTL_SIWARP_EP_CLOSED] = 1u << MCA_BTL_SIWARP_EP_CONNECTING
                               | 1u << MCA_BTL_SIWARP_EP_CONNECTED
                               | 1u << MCA_BTL_SIWARP_EP_FAILED,
    [MCA_BTL_SIWARP_EP_CONNECTING] = 1u << MCA_BTL_SIWARP_EP_CONNECTED
                                   | 1u << MCA_BTL_SIWARP_EP_CLOSED
                                   | 1u << MCA_BTL_SIWARP_EP_FAILED
                                   | 1u << MCA_BTL_SIWARP_EP_CONNECTING,
    [MCA_BTL_SIWARP_EP_CONNECTED] = 1u << MCA_BTL_SIWARP_EP_FAILED
                                  | 1u << MCA_BTL_SIWARP_EP_CLOSED,
    [MCA_BTL_SIWARP_EP_FAILED] = 0,
};

void mca_btl_siwarp_ep_set_state(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_ep_state_t s)
{
    if (!(ep_state_allowed[ep->state] & (1u << s))) {
        BTL_ERROR(("siwarp: endpoint %s: illegal state change %s => %s",
                   OPAL_NAME_PRINT(ep->name), ep_state_name[ep->state], ep_state_name[s]));
        return;
    }
    BTL_VERBOSE(("endpoint %s: %s => %s", OPAL_NAME_PRINT(ep->name),
                 ep_state_name[ep->state], ep_state_name[s]));
    ep->state = s;
}

const char *mca_btl_siwarp_ep_peer_host(const mca_btl_siwarp_endpoint_t *ep)
{
    const char *h = ep->proc ? opal_get_proc_hostname(ep->proc) : NULL;
    return h ? h : "unknown";
}

void mca_btl_siwarp_ep_activate(mca_btl_siwarp_endpoint_t *ep)
{
    if (!ep->on_active) {
        opal_list_append(&ep->module->active, &ep->active_item);
        ep->on_active = 1;
    }
}

/* The address part of ss, into buf (INET6_ADDRSTRLEN octets). */
static const char *sockaddr_host(const struct sockaddr_storage *ss, char *buf)
{
    if (AF_INET == ss->ss_family) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *) ss)->sin_addr, buf, INET6_ADDRSTRLEN);
    } else if (AF_INET6 == ss->ss_family) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) ss)->sin6_addr, buf,
                  INET6_ADDRSTRLEN);
    }
    return buf;
}

/* ---- creation ------------------------------------------------------------ */

/* Try first the peer's addresses on the network of our nearest interface,
 * then on any of our networks, then routed ones; within each, the order
 * the peer published (its nearest first).  (btl_siwarp_ifnear.c) */
static void order_peer_addrs(const mca_btl_siwarp_module_t *m, mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_modex_addr_t was[MCA_BTL_SIWARP_MAX_ADDRS];
    int key[MCA_BTL_SIWARP_MAX_ADDRS] = { 0 }, perm[MCA_BTL_SIWARP_MAX_ADDRS];
    int n = ep->num_addrs;

    if (n < 2 || n > MCA_BTL_SIWARP_MAX_ADDRS) {
        return;     /* more than we publish ourselves: leave them as they came */
    }
    for (int i = 0; i < n; i++) {
        key[i] = mca_btl_siwarp_ifnear_score(m->nets, m->num_listen, ep->addrs[i].family,
                                             ep->addrs[i].addr);
    }
    mca_btl_siwarp_ifnear_sort(key, n, perm);
    memcpy(was, ep->addrs, (size_t) n * sizeof(was[0]));
    for (int i = 0; i < n; i++) {
        ep->addrs[i] = was[perm[i]];
    }
}

mca_btl_siwarp_endpoint_t *mca_btl_siwarp_ep_create(mca_btl_siwarp_module_t *m,
                                                    opal_proc_t *proc)
{
    mca_btl_siwarp_modex_addr_t *data = NULL;
    size_t size = 0;
    int rc;

    OPAL_MODEX_RECV(rc, &mca_btl_siwarp_component.super.btl_version, &proc->proc_name,
                    (void **) &data, &size);
    if (OPAL_SUCCESS != rc || NULL == data || 0 == size ||
        0 != size % sizeof(*data)) {
        BTL_VERBOSE(("no usable modex from %s (rc %d, %zu bytes)",
                     OPAL_NAME_PRINT(proc->proc_name), rc, size));
        free(data);
        return NULL;
    }

    mca_btl_siwarp_endpoint_t *ep = OBJ_NEW(mca_btl_siwarp_endpoint_t);
    if (NULL == ep) {
        free(data);
        return NULL;
    }
    ep->module = m;
    ep->proc = proc;
    ep->name = proc->proc_name;
    ep->addrs = data;
    ep->num_addrs = (int) (size / sizeof(*data));
    if (mca_btl_siwarp_component.if_near) {
        order_peer_addrs(m, ep);
    }
    ep->local = mca_btl_siwarp_stack_shared(proc);
    /* the pair's key, from what the peer published: a process of another
     * job connected by the runtime (spawn, accept/connect) is readable now */
    if (OPAL_SUCCESS != mca_btl_siwarp_auth_ep_init(ep) ||
        0 != mca_btl_siwarp_eptab_add(&m->procs, &ep->name, ep)) {
        OBJ_RELEASE(ep);
        return NULL;
    }
    opal_list_append(&m->endpoints, &ep->super);
    return ep;
}

mca_btl_siwarp_endpoint_t *mca_btl_siwarp_ep_create_self(mca_btl_siwarp_module_t *m,
                                                         opal_proc_t *proc)
{
    mca_btl_siwarp_endpoint_t *ep = OBJ_NEW(mca_btl_siwarp_endpoint_t);

    if (NULL == ep) {
        return NULL;
    }
    ep->module = m;
    ep->proc = proc;
    ep->name = proc->proc_name;
    ep->transport = MCA_BTL_SIWARP_TR_SELF;
    ep->state = MCA_BTL_SIWARP_EP_CONNECTED;     /* nothing to set up */
    if (0 != mca_btl_siwarp_eptab_add(&m->procs, &ep->name, ep)) {
        OBJ_RELEASE(ep);
        return NULL;
    }
    opal_list_append(&m->endpoints, &ep->super);
    return ep;
}

mca_btl_siwarp_endpoint_t *mca_btl_siwarp_ep_lookup(mca_btl_siwarp_module_t *m,
                                                    const opal_process_name_t *name,
                                                    int create)
{
    /* by hash: a list walk here made connecting N peers O(N^2) */
    mca_btl_siwarp_endpoint_t *ep = mca_btl_siwarp_eptab_find(&m->procs, name);

    if (ep || !create) {
        return ep;
    }
    /* a peer connecting before ob1 added it (lazy add_procs) */
    opal_proc_t *proc = opal_proc_for_name(*name);
    return proc ? mca_btl_siwarp_ep_create(m, proc) : NULL;
}

/* ---- connecting ------------------------------------------------------------ */

static int addr_usable(mca_btl_siwarp_endpoint_t *ep, const mca_btl_siwarp_modex_addr_t *a)
{
    if (a->loopback && !ep->local) {
        return 0;
    }
    for (int i = 0; i < ep->module->num_listen; i++) {
        if (ep->module->modex[i].family == a->family) {
            return 1;
        }
    }
    return 0;
}

/* Next address to try, or NULL.  Loopback first for a peer on this node. */
const mca_btl_siwarp_modex_addr_t *mca_btl_siwarp_ep_next_addr(mca_btl_siwarp_endpoint_t *ep)
{
    int local = ep->local;
    /* indexes 0..n-1: loopback pass, n..2n-1: the rest */
    while (ep->addr_idx < 2 * ep->num_addrs) {
        int pass = ep->addr_idx / ep->num_addrs;
        const mca_btl_siwarp_modex_addr_t *a = &ep->addrs[ep->addr_idx % ep->num_addrs];
        ep->addr_idx++;
        if (!addr_usable(ep, a)) {
            continue;
        }
        if (local ? (pass == 0) == !!a->loopback : pass == 1) {
            return a;
        }
    }
    return NULL;
}

void mca_btl_siwarp_modex_to_sockaddr(const mca_btl_siwarp_modex_addr_t *a, uint16_t port_be,
                                      struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
    if (4 == a->family) {
        struct sockaddr_in *in = (struct sockaddr_in *) ss;
        in->sin_family = AF_INET;
        in->sin_port = port_be;
        memcpy(&in->sin_addr, a->addr, 4);
        *len = sizeof(*in);
    } else {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ss;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = port_be;
        memcpy(&in6->sin6_addr, a->addr, 16);
        *len = sizeof(*in6);
    }
}

/* The first peer this process reaches over plain framed TCP is said once,
 * on the process's own stderr (the daemon forwards it), the others at
 * verbose level 20.  Not a help text: Open MPI 4.1.4 relays an
 * application's help text to mpirun through PMIx's log, and now and then
 * mpirun cannot unpack it ("Data unpack would read past end of buffer")
 * and then reports a rank that finished as one that "exited improperly",
 * failing a job that ran to its end (run-mpi-tests' btl_siwarp_mpa=0
 * case, once in a CI run) -- not what a warning may cost. */
void mca_btl_siwarp_ep_show_fallback(mca_btl_siwarp_endpoint_t *ep, const char *why)
{
    static int said;

    if (ep->warned_fallback) {
        return;
    }
    ep->warned_fallback = 1;
    if (!said) {
        said = 1;
        opal_output(0, "btl siwarp: WARNING: %s: traffic to %s on %s goes over plain framed "
                    "TCP, not iWARP (%s); put/get to such peers are emulated over TCP.  "
                    "btl_siwarp_fallback=error makes this an error; btl_base_verbose 20 "
                    "names every such peer", opal_process_info.nodename,
                    OPAL_NAME_PRINT(ep->name), mca_btl_siwarp_ep_peer_host(ep), why);
    } else {
        BTL_VERBOSE(("plain framed TCP to %s on %s too: %s", OPAL_NAME_PRINT(ep->name),
                     mca_btl_siwarp_ep_peer_host(ep), why));
    }
}

/* The fallback to plain TCP is refused (btl_siwarp_fallback=error) for
 * ep: the help text, and one line in this process's own stderr -- ORTE's
 * show_help relay (Open MPI 4.1.4 with PMIx 4) loses a message now and
 * then when the process aborts right after it, and then nothing would
 * say which peer could not be reached. */
void mca_btl_siwarp_ep_refuse_fallback(const mca_btl_siwarp_endpoint_t *ep, const char *why)
{
    opal_show_help("help-mpi-btl-siwarp.txt", "fallback refused", true,
                   opal_process_info.nodename, OPAL_NAME_PRINT(ep->name),
                   mca_btl_siwarp_ep_peer_host(ep), why);
    opal_output(0, "btl siwarp: %s: no iWARP with %s on %s (%s), and the TCP fallback is "
                "refused (btl_siwarp_fallback=error)", opal_process_info.nodename,
                OPAL_NAME_PRINT(ep->name), mca_btl_siwarp_ep_peer_host(ep), why);
}

/* Switch this endpoint to framed TCP, or fail it if fallback is an error. */
static int start_fallback(mca_btl_siwarp_endpoint_t *ep, const char *why)
{
    if (MCA_BTL_SIWARP_FALLBACK_ERROR == mca_btl_siwarp_component.fallback) {
        mca_btl_siwarp_ep_refuse_fallback(ep, why);
        mca_btl_siwarp_ep_fail(ep, why, 0);
        return OPAL_ERR_UNREACH;
    }
    mca_btl_siwarp_ep_show_fallback(ep, why);
    ep->transport = MCA_BTL_SIWARP_TR_TCP;
    ep->addr_idx = 0;
    return mca_btl_siwarp_tcp_connect(ep);
}

static int start_iwarp(mca_btl_siwarp_endpoint_t *ep)
{
    const mca_btl_siwarp_modex_addr_t *a;
    struct siwarp_conn_param p;
    mca_btl_siwarp_conn_pd_t pd;
    struct sockaddr_storage ss;
    socklen_t len;
    int rc;

    while (NULL != (a = mca_btl_siwarp_ep_next_addr(ep))) {
        if (!(a->flags & MCA_BTL_SIWARP_ADDR_F_IWARP)) {
            continue;
        }
        rc = mca_btl_siwarp_ep_qp_create(ep);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
        mca_btl_siwarp_modex_to_sockaddr(a, a->iwarp_port, &ss, &len);
        mca_btl_siwarp_ep_conn_param(ep, &p, &pd, MCA_BTL_SIWARP_CONN_OK);
        mca_btl_siwarp_auth_sign_request(ep, &pd);
        /* a software peer holds our first Send for its check: the proof;
         * unless this request answers its challenge, which proves it */
        ep->auth_peer_gates = (a->flags & MCA_BTL_SIWARP_ADDR_F_SOFT) &&
                              MCA_BTL_SIWARP_ANSWER_SENT != ep->auth_answer_state;
        if (mca_btl_siwarp_component.big_fpdu < 0 && !(a->flags & MCA_BTL_SIWARP_ADDR_F_SOFT)) {
            p.big_fpdu = 0;     /* an RNIC: nothing in the reserved MPA bits */
        }
        /* RFC 7306 atomics: only a siwarp peer knows the MPA flag bits that
         * offer them, and only the software stack executes them */
        p.rfc7306 = mca_btl_siwarp_component.rfc7306 && ep->module->inplace &&
                    (a->flags & MCA_BTL_SIWARP_ADDR_F_SOFT);
        if (mca_btl_siwarp_component.p2p < 0 && (a->flags & MCA_BTL_SIWARP_ADDR_F_SOFT) &&
            ep->module->inplace) {
            /* software on both ends: no RTR, so the responder's first
             * message need not wait for ours (RFC 6581 is the initiator's
             * to ask for; a responder follows the Request) */
            p.p2p = 0;
        }
        rc = siwarp_connect(ep->qp, (struct sockaddr *) &ss, len, &p);
        mca_btl_siwarp_auth_test_record("iwarp", (struct sockaddr *) &ss, &pd);
        if (0 == rc) {
            ep->transport = MCA_BTL_SIWARP_TR_IWARP;
            return OPAL_SUCCESS;
        }
        BTL_VERBOSE(("siwarp_connect to %s: %s", OPAL_NAME_PRINT(ep->name),
                     strerror(-rc)));
        mca_btl_siwarp_ep_qp_abandon(ep);
    }
    return OPAL_ERR_UNREACH;
}

static int peer_speaks_iwarp(const mca_btl_siwarp_endpoint_t *ep)
{
    for (int i = 0; i < ep->num_addrs; i++) {
        if (ep->addrs[i].flags & MCA_BTL_SIWARP_ADDR_F_IWARP) {
            return 1;
        }
    }
    return 0;
}

/* Will this peer's request come without RFC 6581's RTR, as ours to it
 * would (start_iwarp)?  Judged by our own btl_siwarp_p2p, which a job
 * shares. */
static int peer_skips_rtr(const mca_btl_siwarp_endpoint_t *ep)
{
    if (0 == mca_btl_siwarp_component.p2p) {
        return 1;
    }
    if (mca_btl_siwarp_component.p2p > 0 || !ep->module->inplace) {
        return 0;
    }
    for (int i = 0; i < ep->num_addrs; i++) {
        if ((ep->addrs[i].flags & MCA_BTL_SIWARP_ADDR_F_IWARP) &&
            !(ep->addrs[i].flags & MCA_BTL_SIWARP_ADDR_F_SOFT)) {
            return 0;
        }
    }
    return 1;
}

int mca_btl_siwarp_ep_start_connect(mca_btl_siwarp_endpoint_t *ep)
{
    int rc;

    if (mca_btl_siwarp_component.mpa && peer_skips_rtr(ep)) {
        /* This peer may have asked first: a rank that got here earlier
         * (left MPI_Init first, computed less) connected to us, and its
         * request waits in the kernel's accept queue or, read already, in
         * the listener's.  Answer it rather than cross it with a
         * connection of ours, which one end would then reject and the
         * other abandon: a wasted TCP connection and MPA exchange on both
         * sides.  One pass over every socket reads what has arrived
         * (siwarp_progress alone, with a few peers connected, may look at
         * the listeners only every 64th call); once per peer.  Not in
         * P2P mode: answering would make us the responder that waits for
         * the peer's RTR, which a peer computing right after its first
         * sends does not send within btl_siwarp_connect_timeout (the
         * connect_race test of run-mpi-tests.sh, 1 launch in 3); our own
         * Request waits for the peer's next progress instead. */
        (void) siwarp_progress_all(ep->module->ctx);
        (void) mca_btl_siwarp_progress_listeners(ep->module, 0);
        if (MCA_BTL_SIWARP_EP_CLOSED != ep->state) {
            return MCA_BTL_SIWARP_EP_FAILED == ep->state ? OPAL_ERR_UNREACH : OPAL_SUCCESS;
        }
    }
    mca_btl_siwarp_ep_set_state(ep, MCA_BTL_SIWARP_EP_CONNECTING);
    mca_btl_siwarp_ep_activate(ep);
    ep->addr_idx = 0;
    ep->await_incoming = 0;
    if (!mca_btl_siwarp_component.mpa) {
        return start_fallback(ep, "MPA is disabled here (btl_siwarp_mpa=0)");
    }
    if (!peer_speaks_iwarp(ep)) {
        return start_fallback(ep, "MPA is disabled at the peer (btl_siwarp_mpa=0)");
    }
    rc = start_iwarp(ep);
    if (OPAL_SUCCESS != rc) {
        mca_btl_siwarp_ep_fail(ep, "no published address accepted a connection", 1);
    }
    return rc;
}

/* Outgoing QP left CONNECTING: decide between retry, fallback and failure. */
static void iwarp_connect_failed(mca_btl_siwarp_endpoint_t *ep, struct siwarp_qp_attr *attr)
{
    mca_btl_siwarp_conn_pd_t pd, wire;
    char why[192];
    int err = attr->error, chl = 0;
    int parsed = OPAL_SUCCESS == mca_btl_siwarp_parse_conn_pd(attr->peer_private_data,
                                                              attr->peer_private_data_len,
                                                              &pd, &wire);

    if (parsed) {
        chl = mca_btl_siwarp_auth_take_challenge(ep, &wire);
    }
    if (1 == chl) {
        /* the acceptor (a verbs device) wants a request over its nonce:
         * the same address again, this time answering */
        BTL_VERBOSE(("%s challenges us; connecting again with the answer",
                     OPAL_NAME_PRINT(ep->name)));
        mca_btl_siwarp_ep_qp_abandon(ep);
        ep->addr_idx--;         /* ep_next_addr moved past the one it took */
        if (OPAL_SUCCESS != start_iwarp(ep)) {
            mca_btl_siwarp_ep_fail(ep, "no published address accepted a connection", 1);
        }
        return;
    }
    if (chl < 0) {
        mca_btl_siwarp_ep_qp_abandon(ep);
        mca_btl_siwarp_ep_fail(ep, "the peer's challenge did not prove the job's key, "
                               "or it challenged our answer", 1);
        return;
    }
    if (parsed && MCA_BTL_SIWARP_CONN_DUP == pd.reason &&
        OPAL_SUCCESS == mca_btl_siwarp_auth_check_reply(ep, &wire)) {
        /* simultaneous connect lost: the peer's connection to us is the one */
        BTL_VERBOSE(("%s keeps its own connection; waiting for it",
                     OPAL_NAME_PRINT(ep->name)));
        mca_btl_siwarp_ep_qp_abandon(ep);
        mca_btl_siwarp_ep_await_incoming(ep);
        return;
    }
    mca_btl_siwarp_ep_qp_abandon(ep);
    if (-ECONNREFUSED == err || -EHOSTUNREACH == err || -ENETUNREACH == err ||
        -ETIMEDOUT == err || -EADDRNOTAVAIL == err) {
        /* TCP did not get through: another address, or unreachable */
        if (OPAL_SUCCESS == start_iwarp(ep)) {
            return;
        }
        snprintf(why, sizeof(why), "%s", attr->error_str[0] ? attr->error_str : strerror(-err));
        mca_btl_siwarp_ep_fail(ep, why, 1);
        return;
    }
    /* TCP got through but MPA did not: the peer cannot speak iWARP with us */
    snprintf(why, sizeof(why), "MPA negotiation failed: %s",
             attr->error_str[0] ? attr->error_str : (err ? strerror(-err) : "rejected"));
    start_fallback(ep, why);
}

/* A QP we accepted left CONNECTING for an error, or died as we looked at
 * it: the peer had given up that attempt (its MPA Reply timer fired while
 * we did not progress, or it closed it), and its next attempt may have been
 * refused as a duplicate of this one -- the peer then waits for us.  So
 * connect ourselves; should the peer be connecting too, the usual
 * simultaneous-connect rule picks one.  Nothing was posted on the QP yet
 * (still CONNECTING), so nothing is lost. */
static void iwarp_accepted_failed(mca_btl_siwarp_endpoint_t *ep, const struct siwarp_qp_attr *attr)
{
    BTL_VERBOSE(("the connection accepted from %s ended before use (%s); connecting ourselves",
                 OPAL_NAME_PRINT(ep->name), attr->error_str[0] ? attr->error_str : "closed"));
    mca_btl_siwarp_ep_qp_abandon(ep);
    ep->addr_idx = 0;
    if (OPAL_SUCCESS != start_iwarp(ep)) {
        mca_btl_siwarp_ep_fail(ep, "no published address accepted a connection", 1);
    }
}

/* Test hook, never set in production: SIWARP_BTL_TEST_ACCEPT_STALL_MS=N
 * sleeps N ms when an accepted connection is first seen up, so that the
 * peer's first Send is surely waiting in the socket by then
 * (run-mpi-tests.sh: first_contact_stall). */
static void test_accept_stall(void)
{
    static int ms = -1;
    if (ms < 0) {
        const char *e = getenv("SIWARP_BTL_TEST_ACCEPT_STALL_MS");
        ms = e ? atoi(e) : 0;
        ms = ms < 0 || ms > 10000 ? 0 : ms;
    }
    if (ms > 0) {
        usleep((useconds_t) ms * 1000u);
    }
}

int mca_btl_siwarp_ep_progress_connect(mca_btl_siwarp_endpoint_t *ep)
{
    struct siwarp_qp_attr attr;
    mca_btl_siwarp_conn_pd_t pd, wire;
    int rc;

    if (MCA_BTL_SIWARP_EP_CONNECTING != ep->state) {
        return 0;
    }
    if (ep->await_incoming && mca_btl_siwarp_now_ms() >= ep->deadline_ms) {
        int waited = mca_btl_siwarp_component.connect_timeout;
        BTL_ERROR(("siwarp: %s kept its own connection after a simultaneous connect, "
                   "but it did not arrive within %d ms", OPAL_NAME_PRINT(ep->name), waited));
        opal_show_help("help-mpi-btl-siwarp.txt", "connect timeout", true,
                       opal_process_info.nodename, OPAL_NAME_PRINT(ep->name),
                       mca_btl_siwarp_ep_peer_host(ep), waited);
        mca_btl_siwarp_ep_fail(ep, "the peer's connection never arrived",
                               MCA_BTL_SIWARP_FAIL_REPORTED);
        return 1;
    }
    if (MCA_BTL_SIWARP_TR_TCP == ep->transport) {
        return mca_btl_siwarp_tcp_progress_connect(ep);
    }
    if (NULL == ep->qp) {
        return 0;           /* awaiting the peer's connection */
    }
    rc = siwarp_query_qp(ep->qp, &attr);
    if (rc < 0) {
        return 0;
    }
    switch (attr.state) {
    case SIWARP_QPS_IDLE:
    case SIWARP_QPS_CONNECTING:
        return 0;
    case SIWARP_QPS_RTS:
        if (ep->qp_accepted) {
            /* An attempt the peer gave up reaches RTS here all the same (our
             * Reply went out), and its end of stream waits in the socket.
             * Let the library read the socket once before Sends go on it:
             * a given-up attempt then shows as closed, not as a connection
             * lost with work in flight.  That pass runs the receive
             * handler: a Send from this peer already waiting completes the
             * connection there (deliver()), and its credits are counted
             * from then on; nothing is left to do here. */
            struct siwarp_qp *qp = ep->qp;
            test_accept_stall();
            (void) siwarp_progress(ep->module->ctx);
            if (MCA_BTL_SIWARP_EP_CONNECTING != ep->state || qp != ep->qp) {
                return 1;
            }
            if (siwarp_query_qp(ep->qp, &attr) < 0 || SIWARP_QPS_RTS != attr.state) {
                iwarp_accepted_failed(ep, &attr);
                return 1;
            }
        }
        if (OPAL_SUCCESS != mca_btl_siwarp_parse_conn_pd(attr.peer_private_data,
                                                         attr.peer_private_data_len, &pd, &wire)) {
            if (0 == ep->peer_rq) {
                mca_btl_siwarp_ep_fail(ep, "peer sent no siwarp BTL private data", 1);
                return 1;
            }
            pd.rq_depth = (uint16_t) ep->peer_rq;
        }
        if (!ep->qp_accepted) {
            if (OPAL_SUCCESS != mca_btl_siwarp_auth_check_reply(ep, &wire)) {
                mca_btl_siwarp_ep_fail(ep, "the peer's MPA Reply did not prove the job's key", 1);
                return 1;
            }
            rc = ep->auth_peer_gates ? mca_btl_siwarp_ep_send_auth(ep) : 0;
            if (rc < 0) {
                mca_btl_siwarp_ep_fail(ep, "could not send the first message (the proof)", 1);
                return 1;
            }
        }
        if (opal_btl_base_framework.framework_verbose >= 20) {
            char here[INET6_ADDRSTRLEN] = "?", there[INET6_ADDRSTRLEN] = "?";
            BTL_VERBOSE(("%s connected: MPA rev %d crc %d markers %d rtr %d mulpdu %u, "
                         "local %s peer %s", OPAL_NAME_PRINT(ep->name), attr.mpa_rev,
                         attr.crc, attr.markers, attr.rtr, attr.mulpdu,
                         sockaddr_host(&attr.local, here), sockaddr_host(&attr.peer, there)));
        }
        ep->rfc7306 = attr.rfc7306;
        mca_btl_siwarp_ep_connected(ep, MCA_BTL_SIWARP_TR_IWARP, pd.rq_depth);
        return 1;
    default:
        if (ep->qp_accepted) {
            iwarp_accepted_failed(ep, &attr);
        } else {
            iwarp_connect_failed(ep, &attr);
        }
        return 1;
    }
}

void mca_btl_siwarp_ep_connected(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_transport_t tr,
                                 int peer_rq_depth)
{
    BTL_VERBOSE(("connected to %s over %s", OPAL_NAME_PRINT(ep->name),
                 MCA_BTL_SIWARP_TR_IWARP == tr ? "iWARP" : "framed TCP"));
    ep->transport = tr;
    if (MCA_BTL_SIWARP_TR_IWARP != tr) {
        ep->rfc7306 = 0;
    }
    ep->await_incoming = 0;
    ep->send_credits = peer_rq_depth;
    ep->send_ctrl = MCA_BTL_SIWARP_CTRL_CREDITS;
    mca_btl_siwarp_ep_set_state(ep, MCA_BTL_SIWARP_EP_CONNECTED);
    mca_btl_siwarp_ep_progress_pending(ep);
}

uint64_t mca_btl_siwarp_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

uint64_t mca_btl_siwarp_now_coarse_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

/* ---- failure ------------------------------------------------------------- */

static void report_qp_error(mca_btl_siwarp_endpoint_t *ep, const char *why)
{
    struct siwarp_qp_attr attr;
    const char *host = opal_process_info.nodename;
    const char *peer_host = mca_btl_siwarp_ep_peer_host(ep);

    if (ep->qp && 0 == siwarp_query_qp(ep->qp, &attr)) {
        if (attr.term_recv) {
            opal_show_help("help-mpi-btl-siwarp.txt", "terminate received", true, host,
                           OPAL_NAME_PRINT(ep->name), peer_host, attr.term_recv,
                           siwarp_term_str(attr.term_recv));
            return;
        }
        if (attr.term_sent && strstr(siwarp_term_str(attr.term_sent), "CRC")) {
            opal_show_help("help-mpi-btl-siwarp.txt", "crc error", true, host,
                           OPAL_NAME_PRINT(ep->name), peer_host,
                           siwarp_term_str(attr.term_sent));
            return;
        }
        if (attr.term_sent) {
            opal_show_help("help-mpi-btl-siwarp.txt", "terminate sent", true, host,
                           OPAL_NAME_PRINT(ep->name), peer_host, attr.term_sent,
                           siwarp_term_str(attr.term_sent));
            return;
        }
        if (attr.error_str[0]) {
            why = attr.error_str;
        }
    }
    opal_show_help("help-mpi-btl-siwarp.txt", "peer hung up", true, host,
                   OPAL_NAME_PRINT(ep->name), peer_host, why);
}

/* Fail every queued frag and tell the PML.  show: 1 unreachable (connect),
 * 2 connection lost, 0 already reported. */
void mca_btl_siwarp_ep_fail(mca_btl_siwarp_endpoint_t *ep, const char *why, int show)
{
    mca_btl_siwarp_module_t *m = ep->module;
    mca_btl_siwarp_frag_t *frag;
    char info[512], cause[160];
    struct siwarp_qp_attr attr;

    if (MCA_BTL_SIWARP_EP_FAILED == ep->state) {
        return;
    }
    /* the decoded cause, read before the QP is moved to error below */
    snprintf(cause, sizeof(cause), "%s", why);
    if (ep->qp && 0 == siwarp_query_qp(ep->qp, &attr)) {
        if (attr.term_recv || attr.term_sent) {
            snprintf(cause, sizeof(cause), "%s (Terminate %s: %s)",
                     attr.error_str[0] ? attr.error_str : why,
                     attr.term_recv ? "received" : "sent",
                     siwarp_term_str(attr.term_recv ? attr.term_recv : attr.term_sent));
        } else if (attr.error_str[0]) {
            snprintf(cause, sizeof(cause), "%s", attr.error_str);
        }
    }
    snprintf(info, sizeof(info), "siwarp connection from %s to %s on %s failed: %s",
             opal_process_info.nodename, OPAL_NAME_PRINT(ep->name),
             mca_btl_siwarp_ep_peer_host(ep), cause);
    if (!m->finalizing && 0 != show) {
        if (1 == show) {
            opal_show_help("help-mpi-btl-siwarp.txt", "unreachable peer", true,
                           opal_process_info.nodename, OPAL_NAME_PRINT(ep->name),
                           mca_btl_siwarp_ep_peer_host(ep), why);
        } else {
            report_qp_error(ep, why);
        }
        /* one plain line on stderr too: Open MPI 4.1's help relay can drop
         * the message above when the job aborts right after it */
        BTL_ERROR(("%s", info));
    }
    mca_btl_siwarp_ep_set_state(ep, MCA_BTL_SIWARP_EP_FAILED);
    if (ep->qp) {
        siwarp_qp_to_error(ep->qp);     /* posted work completes with flush status */
    }
    if (MCA_BTL_SIWARP_TR_TCP == ep->transport) {
        mca_btl_siwarp_tcp_close(ep);
    }
    /* tell the PML first: failing a queued frag makes ob1 abort at once */
    if (m->error_cb && !m->finalizing && ep->proc && 0 != show) {
        m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_NONFATAL, ep->proc, info);
    }
    while (NULL != (frag = (mca_btl_siwarp_frag_t *) opal_list_remove_first(&ep->pending))) {
        mca_btl_siwarp_frag_complete(m, frag, OPAL_ERR_UNREACH);
    }
    mca_btl_siwarp_atomic_fail_all(ep, OPAL_ERR_UNREACH);
}

void mca_btl_siwarp_ep_release(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_frag_t *frag;

    if (ep->on_active) {
        opal_list_remove_item(&ep->module->active, &ep->active_item);
        ep->on_active = 0;
    }
    while (NULL != (frag = (mca_btl_siwarp_frag_t *) opal_list_remove_first(&ep->pending))) {
        mca_btl_siwarp_frag_complete(ep->module, frag, OPAL_ERR_UNREACH);
    }
    mca_btl_siwarp_atomic_fail_all(ep, OPAL_ERR_UNREACH);
    if (MCA_BTL_SIWARP_TR_TCP == ep->transport) {
        mca_btl_siwarp_tcp_close(ep);
    }
    mca_btl_siwarp_ep_qp_abandon(ep);
    mca_btl_siwarp_auth_kick_forget(ep);
    mca_btl_siwarp_tcp_held_forget(ep);
    /* the name free again: a peer that reconnects (connect/disconnect
     * cycles, a respawned rank) gets a new endpoint */
    (void) mca_btl_siwarp_eptab_remove(&ep->module->procs, &ep->name, ep);
    opal_list_remove_item(&ep->module->endpoints, &ep->super);
    OBJ_RELEASE(ep);
}
