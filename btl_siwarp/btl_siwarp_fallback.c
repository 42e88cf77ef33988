/*
 * btl_siwarp_fallback.c - plain framed TCP for peers that cannot speak
 * iWARP with us (MPA disabled with btl_siwarp_mpa=0, MPA rejected, or a
 * revision the peer does not speak).
 *
 * Frames: mca_btl_siwarp_tcp_hdr_t then `len` body bytes (received in
 * btl_siwarp_fallback_rx.c).  Active messages travel as DATA frames; put is
 * a PUT frame written straight into the target address; get is a GET_REQ
 * answered by a GET_RESP.  PUT and GET_REQ carry the target's registration
 * handle: before touching memory the target checks it against the
 * registrations it handed out (module->regtab: handle valid -> rights ->
 * bounds, with overflow), exactly what an RNIC checks for RDMA Write and
 * Read.  A peer that names anything else is refused with a message and the
 * endpoint fails; nothing is written or read.  TCP is a byte stream in
 * order, so a put completes when its last byte is handed to the kernel, and
 * a later FIN cannot overtake it - the same guarantee RDMAP gives.
 *
 * Handshake: the initiator sends HELLO (conn_pd); the acceptor answers
 * HELLO_ACK with reason OK, DUP (simultaneous connect lost by the initiator)
 * or UNKNOWN; with OK the initiator's next frame is AUTH, and the acceptor
 * reads nothing else before it checked it.  The proofs are the iWARP ones
 * (btl_siwarp_auth.c); a HELLO that proves nothing is closed without an
 * answer.  The rule is the iWARP one: the lower process name keeps its
 * outgoing connection.
 */
#include "btl_siwarp.h"
#include "btl_siwarp_endpoint.h"
#include "btl_siwarp_frag.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/uio.h>

#include "opal/util/output.h"

#define HELLO_LEN MCA_BTL_SIWARP_TCP_HELLO_LEN

/* Test hook, never set in production: SIWARP_BTL_TEST_HOSTILE makes this
 * process a hostile fallback peer - "below" shifts every PUT / GET_REQ
 * target address 2 MiB down, "stag" names a handle we never got, "wrap"
 * picks an address whose end wraps around 2^64.  test/mpi/mpi_hostile.c
 * checks the peer refuses and its memory stays untouched. */
enum { HOSTILE_OFF = 0, HOSTILE_BELOW, HOSTILE_STAG, HOSTILE_WRAP };
static int hostile_mode(void)
{
    static int mode = -1;
    if (mode < 0) {
        const char *e = getenv("SIWARP_BTL_TEST_HOSTILE");
        mode = HOSTILE_OFF;
        if (e && 0 == strcmp(e, "below")) {
            mode = HOSTILE_BELOW;
        } else if (e && 0 == strcmp(e, "stag")) {
            mode = HOSTILE_STAG;
        } else if (e && 0 == strcmp(e, "wrap")) {
            mode = HOSTILE_WRAP;
        }
    }
    return mode;
}

static void hostile_target(uint32_t *stag, uint64_t *addr)
{
    switch (hostile_mode()) {
    case HOSTILE_BELOW:
        *addr -= 2u << 20;
        break;
    case HOSTILE_STAG:
        *stag ^= 0x5a5a5a00u;
        break;
    case HOSTILE_WRAP:
        *addr = UINT64_MAX - 15;
        break;
    default:
        break;
    }
}

static void set_sock_opts(int fd, int nonblock)
{
    int one = 1;
    int fl = fcntl(fd, F_GETFL);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (mca_btl_siwarp_component.tcp_congestion && mca_btl_siwarp_component.tcp_congestion[0]) {
        /* as libsiwarp's sockets (tcp_cc.c); none taken: the default stays */
        (void) siwarp_sock_set_congestion(fd, mca_btl_siwarp_component.tcp_congestion, NULL, 0);
    }
    if (fl >= 0) {
        fcntl(fd, F_SETFL, nonblock ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK));
    }
    /* a dead host or link fails the connection, as on libsiwarp's own */
    (void) siwarp_sock_set_llp_timeout(fd, mca_btl_siwarp_component.llp_timeout);
}

/* The non-blocking connect on fd is through. */
static int tcp_connected_now(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLOUT};
    int err = 0;
    socklen_t elen = sizeof(err);

    return 1 == poll(&pfd, 1, 0) && (pfd.revents & POLLOUT) &&
           0 == getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) && 0 == err;
}

/* the test hook SIWARP_BTL_TEST_RECORD (btl_siwarp_auth.c) */
static void test_record_hello(int fd, const mca_btl_siwarp_conn_pd_t *pd)
{
    struct sockaddr_storage to;
    socklen_t tl = sizeof(to);

    if (0 == getpeername(fd, (struct sockaddr *) &to, &tl)) {
        mca_btl_siwarp_auth_test_record("tcp", (struct sockaddr *) &to, pd);
    }
}

/* A handshake frame: header and body, whole or not at all (the few bytes
 * fit the buffer of a socket that has sent nothing else yet). */
static int hs_send(int fd, int op, const void *body, size_t len)
{
    mca_btl_siwarp_tcp_hdr_t h = {.len = htonl((uint32_t) len), .op = (uint8_t) op};
    uint8_t buf[HELLO_LEN];

    memcpy(buf, &h, sizeof(h));
    memcpy(buf + sizeof(h), body, len);
    return send(fd, buf, sizeof(h) + len, MSG_NOSIGNAL) == (ssize_t) (sizeof(h) + len) ? 0 : -1;
}

void mca_btl_siwarp_tcp_close(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_frag_t *frag;

    if (ep->fd >= 0) {
        close(ep->fd);
        ep->fd = -1;
    }
    ep->tcp_connected = 0;
    mca_btl_siwarp_tcp_rx_reset(ep);
    while (NULL != (frag = (mca_btl_siwarp_frag_t *) opal_list_remove_first(&ep->tx_queue))) {
        mca_btl_siwarp_frag_complete(ep->module, frag, OPAL_ERR_UNREACH);
    }
    while (NULL != (frag = (mca_btl_siwarp_frag_t *) opal_list_remove_first(&ep->gets_inflight))) {
        mca_btl_siwarp_frag_complete(ep->module, frag, OPAL_ERR_UNREACH);
    }
}

/* ---- connect (initiator) --------------------------------------------------- */

int mca_btl_siwarp_tcp_connect(mca_btl_siwarp_endpoint_t *ep)
{
    const mca_btl_siwarp_modex_addr_t *a;
    struct sockaddr_storage ss;
    socklen_t len;

    while (NULL != (a = mca_btl_siwarp_ep_next_addr(ep))) {
        int fd = socket(4 == a->family ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            continue;
        }
        set_sock_opts(fd, 1);
        mca_btl_siwarp_modex_to_sockaddr(a, a->tcp_port, &ss, &len);
        if (0 == connect(fd, (struct sockaddr *) &ss, len) || EINPROGRESS == errno) {
            ep->fd = fd;
            ep->tcp_connected = 0;
            mca_btl_siwarp_tcp_rx_reset(ep);
            ep->transport = MCA_BTL_SIWARP_TR_TCP;
            /* the TCP connect, bounded like the MPA exchange's; the
             * HELLO_ACK, from a peer whose kernel took the connection, as
             * long as the connection lives (as libsiwarp's reply_wait_ms) */
            ep->tcp_started_ms = mca_btl_siwarp_now_ms();
            ep->deadline_ms = ep->tcp_started_ms +
                              (uint64_t) mca_btl_siwarp_component.connect_timeout;
            mca_btl_siwarp_ep_activate(ep);
            if (tcp_connected_now(fd)) {
                /* the HELLO now, not at a progress call that an application
                 * computing after its send makes only much later */
                (void) mca_btl_siwarp_tcp_progress_connect(ep);
            }
            return MCA_BTL_SIWARP_EP_FAILED == ep->state ? OPAL_ERR_UNREACH : OPAL_SUCCESS;
        }
        close(fd);
    }
    mca_btl_siwarp_ep_fail(ep, "no published address accepted a TCP connection", 1);
    return OPAL_ERR_UNREACH;
}

/* The handshake reply's header, exactly (nothing beyond it is read: what
 * follows is the connection's, fallback_rx.c): 2 when it is in, 0 for later,
 * -1 on EOF / error (errno set, 0 for EOF). */
static int rx_fill(mca_btl_siwarp_endpoint_t *ep)
{
    ssize_t n;

    while (ep->rx_hdr_got < sizeof(ep->rx_hdr)) {
        n = recv(ep->fd, (uint8_t *) &ep->rx_hdr + ep->rx_hdr_got,
                 sizeof(ep->rx_hdr) - ep->rx_hdr_got, 0);
        if (n > 0) {
            ep->rx_hdr_got += (size_t) n;
            continue;
        }
        if (0 == n) {
            errno = 0;
            return -1;
        }
        return (EAGAIN == errno || EWOULDBLOCK == errno || EINTR == errno) ? 0 : -1;
    }
    return 2;   /* header complete: caller sets up the body */
}

/* One handshake frame (header, then exactly its body into rx_hs; nothing
 * beyond is read: what follows is the connection's, fallback_rx.c): 1 when
 * it is in, 0 for later, -1 on EOF / error (errno set, 0 for EOF), 2 for a
 * frame other than op with len bytes. */
static int hs_read(mca_btl_siwarp_endpoint_t *ep, int op, size_t len)
{
    int rc;

    if (ep->rx_hdr_got < sizeof(ep->rx_hdr)) {
        rc = rx_fill(ep);
        if (rc <= 0) {
            return rc;
        }
        if (op != ep->rx_hdr.op || len != ntohl(ep->rx_hdr.len) || len > sizeof(ep->rx_hs)) {
            return 2;
        }
        ep->rx_dst = (uint8_t *) ep->rx_hs;
        ep->rx_left = len;
    }
    rc = mca_btl_siwarp_tcp_rx_body(ep);
    if (1 == rc) {
        mca_btl_siwarp_tcp_rx_reset(ep);
    }
    return rc;
}

/* An accepted connection whose AUTH frame failed, or never came within
 * btl_siwarp_stall_timeout: nothing of it was taken; it fails as any
 * connection lost (the request had proved the key: no stranger gets here). */
static void auth_failed(mca_btl_siwarp_endpoint_t *ep, const char *why)
{
    mca_btl_siwarp_auth_warn((const struct sockaddr *) &ep->auth_from, why);
    ep->tcp_auth_wait = 0;
    mca_btl_siwarp_ep_fail(ep, why, 2);
}

/* Acceptor: the initiator's AUTH frame, its first, read before any other
 * (we may send meanwhile: a GET_REQ's answer comes behind the AUTH).
 * 1 once it is in and right, 0 for later, -1 when it failed. */
static int auth_progress(mca_btl_siwarp_endpoint_t *ep)
{
    int rc;

    if (mca_btl_siwarp_now_ms() >= ep->deadline_ms) {
        auth_failed(ep, "its proof of the job's key did not come within "
                        "btl_siwarp_stall_timeout");
        return -1;
    }
    rc = hs_read(ep, MCA_BTL_SIWARP_TCP_AUTH, sizeof(mca_btl_siwarp_auth_t));
    if (rc < 0 || 2 == rc) {
        auth_failed(ep, rc < 0 ? "it closed the connection before its proof"
                               : "its first frame was not the proof of the job's key");
        return -1;
    }
    if (0 == rc) {
        return 0;
    }
    if (OPAL_SUCCESS != mca_btl_siwarp_auth_check_fin(ep, ep->rx_hs, sizeof(mca_btl_siwarp_auth_t))) {
        auth_failed(ep, "its first frame did not prove the job's key");
        return -1;
    }
    ep->tcp_auth_wait = 0;
    ep->auth_ok = 1;
    return 1;
}

int mca_btl_siwarp_tcp_progress_connect(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_conn_pd_t pd, wire;
    mca_btl_siwarp_auth_t a;
    int rc;

    if (ep->fd < 0) {
        return 0;       /* awaiting the peer's connection */
    }
    if (mca_btl_siwarp_now_ms() >= ep->deadline_ms) {
        char why[96];
        snprintf(why, sizeof(why), "no TCP handshake within %d ms (btl_siwarp_connect_timeout)",
                 mca_btl_siwarp_component.connect_timeout);
        mca_btl_siwarp_ep_fail(ep, why, 1);
        return 1;
    }
    if (!ep->tcp_connected) {
        struct pollfd pfd = {.fd = ep->fd, .events = POLLOUT};
        int err = 0;
        socklen_t elen = sizeof(err);

        if (poll(&pfd, 1, 0) <= 0) {
            return 0;
        }
        if (getsockopt(ep->fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || 0 != err) {
            BTL_VERBOSE(("TCP connect to %s: %s", OPAL_NAME_PRINT(ep->name),
                         strerror(err)));
            close(ep->fd);
            ep->fd = -1;
            return OPAL_SUCCESS == mca_btl_siwarp_tcp_connect(ep) ? 0 : 1;
        }
        mca_btl_siwarp_fill_conn_pd(&pd, MCA_BTL_SIWARP_CONN_OK);
        mca_btl_siwarp_auth_sign_request(ep, &pd);
        test_record_hello(ep->fd, &pd);
        if (hs_send(ep->fd, MCA_BTL_SIWARP_TCP_HELLO, &pd, sizeof(pd)) < 0) {
            mca_btl_siwarp_ep_fail(ep, "sending the TCP hello failed", 1);
            return 1;
        }
        ep->tcp_connected = 1;
        ep->tcp_hello_late = mca_btl_siwarp_now_ms() - ep->tcp_started_ms >
                             (uint64_t) mca_btl_siwarp_component.connect_timeout / 2;
        ep->deadline_ms = UINT64_MAX;   /* keepalive decides from here */
        mca_btl_siwarp_tcp_rx_reset(ep);
    }
    rc = hs_read(ep, MCA_BTL_SIWARP_TCP_HELLO_ACK, sizeof(pd));
    if (rc < 0 && 0 == ep->rx_hdr_got && ep->tcp_hello_late && !ep->tcp_late_retried) {
        /* our HELLO left late and the peer had closed: its listener gave
         * up waiting for it (connect_timeout), it did not refuse us */
        BTL_VERBOSE(("our TCP hello to %s left late and the peer had closed; connecting again",
                     OPAL_NAME_PRINT(ep->name)));
        ep->tcp_late_retried = 1;
        close(ep->fd);
        ep->fd = -1;
        ep->tcp_connected = 0;
        ep->addr_idx--;         /* the same address: ep_next_addr moved past it */
        return OPAL_SUCCESS == mca_btl_siwarp_tcp_connect(ep) ? 0 : 1;
    }
    if (rc < 0) {
        mca_btl_siwarp_ep_fail(ep, errno ? strerror(errno)
                               : "peer closed the connection during the handshake", 1);
        return 1;
    }
    if (0 == rc) {
        return 0;
    }
    if (1 != rc ||
        OPAL_SUCCESS != mca_btl_siwarp_parse_conn_pd(ep->rx_hs, sizeof(pd), &pd, &wire)) {
        mca_btl_siwarp_ep_fail(ep, "bad TCP handshake reply", 1);
        return 1;
    }
    if (MCA_BTL_SIWARP_CONN_UNKNOWN == pd.reason) {
        mca_btl_siwarp_ep_fail(ep, "peer does not know this process", 1);
        return 1;
    }
    if (OPAL_SUCCESS != mca_btl_siwarp_auth_check_reply(ep, &wire)) {
        mca_btl_siwarp_ep_fail(ep, "the peer's TCP handshake reply did not prove the job's key", 1);
        return 1;
    }
    if (MCA_BTL_SIWARP_CONN_DUP == pd.reason) {
        close(ep->fd);
        ep->fd = -1;
        ep->tcp_connected = 0;
        mca_btl_siwarp_ep_await_incoming(ep);
        return 1;
    }
    if (MCA_BTL_SIWARP_CONN_OK != pd.reason) {
        mca_btl_siwarp_ep_fail(ep, "bad TCP handshake reply", 1);
        return 1;
    }
    mca_btl_siwarp_auth_fin_msg(ep, &a);
    if (hs_send(ep->fd, MCA_BTL_SIWARP_TCP_AUTH, &a, sizeof(a)) < 0) {
        mca_btl_siwarp_ep_fail(ep, "sending the TCP handshake's proof failed", 1);
        return 1;
    }
    mca_btl_siwarp_ep_connected(ep, MCA_BTL_SIWARP_TR_TCP, pd.rq_depth);
    return 1;
}

/* ---- accept (acceptor) ------------------------------------------------------- */

/* An accepted connection whose HELLO is all in: check its proof, answer
 * it, and with OK hand the socket to the endpoint, connected, which reads
 * the AUTH frame before anything else.  A HELLO that proves nothing is closed
 * unanswered: one hash spent, a warning naming the source. */
static void accept_hello(mca_btl_siwarp_module_t *m, int fd, const uint8_t *buf,
                         const struct sockaddr_storage *from)
{
    mca_btl_siwarp_tcp_hdr_t h;
    mca_btl_siwarp_conn_pd_t pd, wire, ack;
    mca_btl_siwarp_endpoint_t *ep;
    opal_process_name_t name;
    const char *why = NULL;
    int reason, rc;

    memcpy(&h, buf, sizeof(h));
    if (MCA_BTL_SIWARP_TCP_HELLO != h.op || sizeof(pd) != ntohl(h.len) ||
        OPAL_SUCCESS != mca_btl_siwarp_parse_conn_pd(buf + sizeof(h), sizeof(pd), &pd, &wire)) {
        why = "no valid hello of this version";
    } else {
        name.jobid = pd.jobid;
        name.vpid = pd.vpid;
        ep = mca_btl_siwarp_ep_lookup(m, &name, 1);
        if (NULL == ep) {
            why = "its hello names no process this one knows";
        } else if (OPAL_SUCCESS != (rc = mca_btl_siwarp_auth_check_request(ep, &wire))) {
            why = OPAL_ERR_PERM == rc ? "a hello played again"
                                      : "its hello did not prove the job's key";
        }
    }
    if (why) {
        mca_btl_siwarp_auth_warn((const struct sockaddr *) from, why);
        close(fd);
        return;
    }
    if (OPAL_SUCCESS != mca_btl_siwarp_ep_check_max_send(ep, &pd)) {
        close(fd);              /* the endpoint failed, saying why */
        return;
    }
    reason = mca_btl_siwarp_ep_accept_incoming(ep) ? MCA_BTL_SIWARP_CONN_OK
                                                   : MCA_BTL_SIWARP_CONN_DUP;
    mca_btl_siwarp_fill_conn_pd(&ack, reason);
    mca_btl_siwarp_auth_sign_reply(ep, &wire, &ack);
    if (hs_send(fd, MCA_BTL_SIWARP_TCP_HELLO_ACK, &ack, sizeof(ack)) < 0 ||
        MCA_BTL_SIWARP_CONN_OK != reason) {
        close(fd);
        return;
    }
    if (MCA_BTL_SIWARP_EP_CLOSED == ep->state) {
        mca_btl_siwarp_ep_set_state(ep, MCA_BTL_SIWARP_EP_CONNECTING);
    }
    if (!ep->warned_fallback) {
        mca_btl_siwarp_ep_show_fallback(ep, "the peer connected over plain TCP");
    }
    ep->transport = MCA_BTL_SIWARP_TR_TCP;
    ep->fd = fd;
    ep->tcp_connected = 1;
    ep->tcp_auth_wait = 1;
    ep->auth_ok = 0;
    ep->auth_from = *from;
    ep->peer_rq = pd.rq_depth;
    ep->deadline_ms = mca_btl_siwarp_now_ms() + (uint64_t) mca_btl_siwarp_component.stall_timeout;
    mca_btl_siwarp_tcp_rx_reset(ep);
    mca_btl_siwarp_ep_activate(ep);
    /* up at once, as an accepted iWARP QP: we may send; what the peer sends
     * is read only behind its AUTH frame (mca_btl_siwarp_tcp_progress) */
    mca_btl_siwarp_ep_connected(ep, MCA_BTL_SIWARP_TR_TCP, pd.rq_depth);
}

/* Take every waiting connection; their HELLOs are read by
 * mca_btl_siwarp_tcp_accept_progress.  Nothing here waits for a peer:
 * reading the HELLO blocking (up to 5 s) stalled this process while the
 * peer waited for our own HELLO's answer, and three ranks connecting all
 * to all over the fallback ran into each other's waits until their
 * connect timeout. */
void mca_btl_siwarp_tcp_accept(mca_btl_siwarp_module_t *m, int listen_fd)
{
    for (;;) {
        mca_btl_siwarp_tcp_pending_t *p;
        struct sockaddr_storage from;
        socklen_t flen = sizeof(from);
        int fd = accept4(listen_fd, (struct sockaddr *) &from, &flen, SOCK_CLOEXEC | SOCK_NONBLOCK);

        if (fd < 0) {
            return;     /* EAGAIN or a transient error */
        }
        if (m->tcp_npending == MCA_BTL_SIWARP_TCP_PENDING_MAX) {
            BTL_VERBOSE(("dropping a TCP connection: %d handshakes are pending already",
                         MCA_BTL_SIWARP_TCP_PENDING_MAX));
            close(fd);
            continue;
        }
        set_sock_opts(fd, 1);
        p = &m->tcp_pending[m->tcp_npending++];
        p->fd = fd;
        p->got = 0;
        p->from = from;
        /* its HELLO, like the MPA Request, within btl_siwarp_connect_timeout */
        p->deadline_ms = mca_btl_siwarp_now_ms() + (uint64_t) mca_btl_siwarp_component.connect_timeout;
    }
}

int mca_btl_siwarp_tcp_accept_progress(mca_btl_siwarp_module_t *m)
{
    uint64_t now = mca_btl_siwarp_now_ms();
    int count = 0;

    for (int i = 0; i < m->tcp_npending;) {
        mca_btl_siwarp_tcp_pending_t *p = &m->tcp_pending[i];
        uint8_t buf[HELLO_LEN];
        struct sockaddr_storage from = p->from;
        ssize_t n = recv(p->fd, p->buf + p->got, sizeof(p->buf) - p->got, 0);
        int fd = p->fd;

        if (n > 0) {
            p->got += (size_t) n;
        }
        if (p->got == sizeof(p->buf)) {
            memcpy(buf, p->buf, sizeof(buf));
            *p = m->tcp_pending[--m->tcp_npending];
            accept_hello(m, fd, buf, &from);
            count++;
            continue;
        }
        const char *why = NULL;
        if (0 == n) {
            why = "the peer closed it";
        } else if (n < 0 && EAGAIN != errno && EWOULDBLOCK != errno && EINTR != errno) {
            why = strerror(errno);
        } else if (now >= p->deadline_ms) {
            why = "no hello in time";
        }
        if (why) {
            BTL_VERBOSE(("dropping a TCP connection before its hello: %s", why));
            close(fd);
            *p = m->tcp_pending[--m->tcp_npending];
            continue;
        }
        i++;
    }
    return count;
}

void mca_btl_siwarp_tcp_accept_fini(mca_btl_siwarp_module_t *m)
{
    while (m->tcp_npending > 0) {
        close(m->tcp_pending[--m->tcp_npending].fd);
    }
}

/* ---- transmit ---------------------------------------------------------------- */

static void tx_done(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_frag_t *frag)
{
    switch (frag->type) {
    case MCA_BTL_SIWARP_FRAG_GET:
        opal_list_append(&ep->gets_inflight, &frag->base.super.super);
        break;
    case MCA_BTL_SIWARP_FRAG_PUT:
        /* written is not placed: the put completes with the answer to a
         * NOP atomic behind it (btl_siwarp_atomic.c) */
        if (OPAL_SUCCESS != mca_btl_siwarp_atomic_fence(ep, frag)) {
            mca_btl_siwarp_frag_complete(ep->module, frag, OPAL_ERR_OUT_OF_RESOURCE);
        }
        break;
    default:
        mca_btl_siwarp_frag_complete(ep->module, frag, OPAL_SUCCESS);
        break;
    }
}

/* Write queued frames, as many as fit one writev (TX_IOV iovecs); 0 ok
 * (maybe partial), -1 connection lost. */
#define TX_IOV 64

/* Test hook, never set in production: SIWARP_BTL_TEST_STALL_FRAME=1 makes
 * this process write its first DATA frame of 2 KiB or more only half and
 * then nothing more on that connection, which it keeps open: the peer
 * must cut it off after btl_siwarp_llp_timeout (run-mpi-tests.sh: stall).
 * 1: write nothing now. */
static int test_stall_frame(mca_btl_siwarp_endpoint_t *ep)
{
    static int on = -1, stalled_fd = -1;
    mca_btl_siwarp_frag_t *frag;
    struct iovec iov[2];

    if (on < 0) {
        const char *e = getenv("SIWARP_BTL_TEST_STALL_FRAME");
        on = e && '1' == e[0];
    }
    if (!on) {
        return 0;
    }
    if (stalled_fd >= 0) {
        return ep->fd == stalled_fd;
    }
    frag = (mca_btl_siwarp_frag_t *) opal_list_get_first(&ep->tx_queue);
    if (MCA_BTL_SIWARP_TCP_DATA != frag->tcp_hdr.op || frag->tx_done || frag->tx_total < 2048 ||
        2 != frag->iov_cnt) {
        return 0;
    }
    iov[0] = frag->iov[0];
    iov[1].iov_base = frag->iov[1].iov_base;
    iov[1].iov_len = frag->iov[1].iov_len / 2;
    if (writev(ep->fd, iov, 2) > 0) {
        stalled_fd = ep->fd;
        BTL_ERROR(("siwarp: test hook: stalling inside a frame to %s", OPAL_NAME_PRINT(ep->name)));
    }
    return 1;
}

static int tx_flush(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_frag_t *frag;

    if (!opal_list_is_empty(&ep->tx_queue) && test_stall_frame(ep)) {
        return 0;
    }
    while (!opal_list_is_empty(&ep->tx_queue)) {
        struct iovec iov[TX_IOV];
        size_t want = 0, left;
        int cnt = 0;
        ssize_t n;

        OPAL_LIST_FOREACH(frag, &ep->tx_queue, mca_btl_siwarp_frag_t) {
            size_t skip = frag->tx_done;
            if (cnt + frag->iov_cnt > TX_IOV) {
                break;
            }
            for (int i = 0; i < frag->iov_cnt; i++) {
                if (skip >= frag->iov[i].iov_len) {
                    skip -= frag->iov[i].iov_len;
                    continue;
                }
                iov[cnt].iov_base = (uint8_t *) frag->iov[i].iov_base + skip;
                iov[cnt].iov_len = frag->iov[i].iov_len - skip;
                want += iov[cnt].iov_len;
                skip = 0;
                cnt++;
            }
        }
        n = cnt ? writev(ep->fd, iov, cnt) : 0;
        if (n < 0) {
            if (EAGAIN == errno || EWOULDBLOCK == errno || EINTR == errno) {
                return 0;
            }
            return -1;
        }
        /* count the bytes into the frames first: a completion below may
         * queue and flush more, and that flush must start where this
         * writev ended */
        left = (size_t) n;
        OPAL_LIST_FOREACH(frag, &ep->tx_queue, mca_btl_siwarp_frag_t) {
            size_t take = frag->tx_total - frag->tx_done;
            if (0 == left) {
                break;
            }
            if (take > left) {
                take = left;
            }
            frag->tx_done += take;
            left -= take;
        }
        /* then hand the finished frames back in order */
        while (!opal_list_is_empty(&ep->tx_queue)) {
            frag = (mca_btl_siwarp_frag_t *) opal_list_get_first(&ep->tx_queue);
            if (frag->tx_done < frag->tx_total) {
                break;
            }
            opal_list_remove_first(&ep->tx_queue);
            tx_done(ep, frag);
        }
        if ((size_t) n < want) {
            return 0;               /* the socket is full */
        }
    }
    return 0;
}

int mca_btl_siwarp_tcp_submit(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_frag_t *frag)
{
    mca_btl_siwarp_tcp_hdr_t *h = &frag->tcp_hdr;
    size_t body;

    memset(h, 0, sizeof(*h));
    frag->iov[0].iov_base = h;
    frag->iov[0].iov_len = sizeof(*h);
    frag->iov_cnt = 2;
    switch (frag->type) {
    case MCA_BTL_SIWARP_FRAG_SEND:
        if (2 == frag->base.des_segment_count) {
            /* an in-place frag (made for iWARP) fits the eager buffer:
             * gather it there, the framing below sends one body */
            memcpy((char *) frag->segments[0].seg_addr.pval + frag->segments[0].seg_len,
                   frag->segments[1].seg_addr.pval, frag->segments[1].seg_len);
            frag->segments[0].seg_len += frag->segments[1].seg_len;
            frag->base.des_segment_count = 1;
        }
        frag->hdr->type = frag->msg_type;
        frag->hdr->tag = frag->tag;
        frag->hdr->credits = frag->hdr->ctrl_credits = frag->hdr->reserved = 0;
        body = sizeof(mca_btl_siwarp_hdr_t) + frag->segments[0].seg_len;
        h->op = MCA_BTL_SIWARP_TCP_DATA;
        frag->iov[1].iov_base = frag->hdr;
        break;
    case MCA_BTL_SIWARP_FRAG_PUT: {
        uint32_t stag = frag->remote_stag;
        uint64_t addr = frag->remote_address;
        hostile_target(&stag, &addr);
        body = frag->rdma_size;
        h->op = MCA_BTL_SIWARP_TCP_PUT;
        h->stag = htonl(stag);
        h->arg = htobe64(addr);
        frag->iov[1].iov_base = frag->local_address;
        break;
    }
    case MCA_BTL_SIWARP_FRAG_GET: {
        uint32_t stag = frag->remote_stag;
        uint64_t addr = frag->remote_address;
        hostile_target(&stag, &addr);
        body = sizeof(frag->tcp_body);
        h->op = MCA_BTL_SIWARP_TCP_GET_REQ;
        h->stag = htonl(stag);
        h->arg = htobe64((uint64_t) (uintptr_t) frag);
        frag->tcp_body[0] = htobe64(addr);
        frag->tcp_body[1] = htobe64((uint64_t) frag->rdma_size);
        frag->iov[1].iov_base = frag->tcp_body;
        break;
    }
    case MCA_BTL_SIWARP_FRAG_GET_RESP:
        body = frag->rdma_size;
        h->op = MCA_BTL_SIWARP_TCP_GET_RESP;
        h->arg = htobe64(frag->remote_address);     /* the requester's token */
        frag->iov[1].iov_base = frag->local_address;
        break;
    default:
        return OPAL_ERR_BAD_PARAM;
    }
    if (body > UINT32_MAX) {
        return OPAL_ERR_BAD_PARAM;
    }
    h->len = htonl((uint32_t) body);
    frag->iov[1].iov_len = body;
    frag->tx_total = sizeof(*h) + body;
    frag->tx_done = 0;
    frag->endpoint = ep;
    ep->had_traffic = 1;
    opal_list_append(&ep->tx_queue, &frag->base.super.super);
    /* As the iWARP path does (libsiwarp's swp_tx_post): the first frame
     * since the last progress call leaves at once (a ping-pong's), the
     * next btl_siwarp_tx_coalesce wait for that call, which writes them
     * with one writev, and the one after that writes them all. */
    if (ep->tx_epoch != ep->module->polls) {
        ep->tx_epoch = ep->module->polls;
        ep->tx_held = 0;
    } else if (++ep->tx_held <= mca_btl_siwarp_component.tx_coalesce) {
        if (!ep->on_held) {
            ep->held_next = ep->module->tcp_held;
            ep->module->tcp_held = ep;
            ep->on_held = 1;
        }
        return OPAL_SUCCESS;
    } else {
        ep->tx_held = 0;
    }
    if (tx_flush(ep) < 0) {
        /* the frag is on tx_queue: the failure path completes it */
        mca_btl_siwarp_ep_fail(ep, strerror(errno), 2);
    }
    return OPAL_SUCCESS;
}

/* ---- progress ------------------------------------------------------------------ */

SWP_HOT
int mca_btl_siwarp_tcp_goes_now(mca_btl_siwarp_endpoint_t *ep)
{
    return ep->fd >= 0 && opal_list_is_empty(&ep->tx_queue) &&
           (0 == mca_btl_siwarp_component.tx_coalesce || ep->tx_epoch != ep->module->polls);
}

void mca_btl_siwarp_tcp_flush_held(mca_btl_siwarp_module_t *m)
{
    mca_btl_siwarp_endpoint_t *ep = m->tcp_held, *next;

    /* only the endpoints that held a frame: a walk of every endpoint here
     * cost each progress call after a coalesced send O(peers) */
    m->tcp_held = NULL;
    for (; ep; ep = next) {
        next = ep->held_next;
        ep->held_next = NULL;
        ep->on_held = 0;
        if (ep->tx_held && MCA_BTL_SIWARP_TR_TCP == ep->transport &&
            MCA_BTL_SIWARP_EP_CONNECTED == ep->state) {
            ep->tx_held = 0;
            if (tx_flush(ep) < 0) {
                mca_btl_siwarp_ep_fail(ep, strerror(errno), 2);
            }
        }
    }
}

/* Release: the held list must not keep a pointer to the endpoint.  The
 * list is short (endpoints that held a frame since the last progress
 * call). */
void mca_btl_siwarp_tcp_held_forget(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_endpoint_t **pp = &ep->module->tcp_held;

    if (!ep->on_held) {
        return;
    }
    while (*pp && *pp != ep) {
        pp = &(*pp)->held_next;
    }
    if (*pp) {
        *pp = ep->held_next;
    }
    ep->held_next = NULL;
    ep->on_held = 0;
}

/* A peer that began a frame and stopped sending it, its TCP connection
 * alive (keepalive cannot tell), is cut off once nothing more of it came
 * for btl_siwarp_stall_timeout and nothing waits in the socket (we may be
 * the slow one).  Looked at every 64th progress call. */
static int rx_stalled(mca_btl_siwarp_endpoint_t *ep)
{
    uint64_t now = mca_btl_siwarp_now_coarse_ms();
    int waiting = 0;

    if (!(ep->rx_in_frame || ep->rx_head != ep->rx_tail) || ep->rx_bytes != ep->rx_stall_bytes) {
        ep->rx_stall_bytes = ep->rx_bytes;
        ep->rx_stall_since = now;
        return 0;
    }
    return now - ep->rx_stall_since >= (uint64_t) mca_btl_siwarp_component.stall_timeout &&
           0 == ioctl(ep->fd, FIONREAD, &waiting) && 0 == waiting;
}

int mca_btl_siwarp_tcp_progress(mca_btl_siwarp_endpoint_t *ep)
{
    if (ep->fd < 0 || MCA_BTL_SIWARP_EP_CONNECTED != ep->state) {
        return 0;
    }
    if (ep->tcp_auth_wait && 1 != auth_progress(ep)) {
        /* nothing of the peer's is read before its proof; ours may go */
        if (MCA_BTL_SIWARP_EP_CONNECTED == ep->state && tx_flush(ep) < 0) {
            mca_btl_siwarp_ep_fail(ep, strerror(errno), 2);
        }
        return 0;
    }
    if (0 == (ep->module->polls & 63) && rx_stalled(ep)) {
        char why[128];
        snprintf(why, sizeof(why), "the peer stopped inside a frame: nothing more of it for "
                 "%d ms (btl_siwarp_stall_timeout)", mca_btl_siwarp_component.stall_timeout);
        mca_btl_siwarp_ep_fail(ep, why, 2);
        return 0;
    }
    if (tx_flush(ep) < 0) {
        mca_btl_siwarp_ep_fail(ep, strerror(errno), 2);
        return 0;
    }
    return mca_btl_siwarp_tcp_rx_progress(ep);
}
