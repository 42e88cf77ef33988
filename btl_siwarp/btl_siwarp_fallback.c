/*
 * btl_siwarp_fallback.c - plain framed TCP for peers that cannot speak
 * iWARP with us (MPA disabled with btl_siwarp_mpa=0, MPA rejected, or a
 * revision the peer does not speak).
 *
 * Frames: mca_btl_siwarp_tcp_hdr_t then `len` body bytes.  Active messages
 * travel as DATA frames; put is a PUT frame written straight into the target
 * address; get is a GET_REQ answered by a GET_RESP.  PUT and GET_REQ carry
 * the target's registration handle: before touching memory the target checks
 * it against the registrations it handed out (module->regtab: handle valid ->
 * rights -> bounds, with overflow), exactly what an RNIC checks for RDMA
 * Write and Read.  A peer that names anything else is refused with a
 * message and the endpoint fails; nothing is written or read.  TCP is a byte stream in
 * order, so a put completes when its last byte is handed to the kernel, and a
 * later FIN cannot overtake it - the same guarantee RDMAP gives.
 *
 * Handshake: the initiator sends HELLO (conn_pd); the acceptor answers
 * HELLO_ACK with reason OK, DUP (simultaneous connect lost by the initiator)
 * or UNKNOWN.  The rule is the iWARP one: the lower process name keeps its
 * outgoing connection.
 */
#include "btl_siwarp.h"
#include "btl_siwarp_endpoint.h"
#include "btl_siwarp_frag.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/uio.h>

#include "opal/util/output.h"
#include "opal/util/show_help.h"

#define HELLO_TIMEOUT_SEC 5
#define HELLO_LEN (sizeof(mca_btl_siwarp_tcp_hdr_t) + sizeof(mca_btl_siwarp_conn_pd_t))

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
}

static void hello_frame(uint8_t buf[HELLO_LEN], int op, int reason)
{
    mca_btl_siwarp_tcp_hdr_t h = {.len = htonl(sizeof(mca_btl_siwarp_conn_pd_t)),
                                  .op = (uint8_t) op};
    mca_btl_siwarp_conn_pd_t pd;
    mca_btl_siwarp_fill_conn_pd(&pd, reason);
    memcpy(buf, &h, sizeof(h));
    memcpy(buf + sizeof(h), &pd, sizeof(pd));
}

static void rx_reset(mca_btl_siwarp_endpoint_t *ep)
{
    ep->rx_hdr_got = 0;
    ep->rx_left = 0;
    ep->rx_dst = NULL;
    ep->rx_get = NULL;
}

void mca_btl_siwarp_tcp_close(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_frag_t *frag;

    if (ep->fd >= 0) {
        close(ep->fd);
        ep->fd = -1;
    }
    ep->tcp_connected = 0;
    rx_reset(ep);
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
            rx_reset(ep);
            ep->transport = MCA_BTL_SIWARP_TR_TCP;
            /* TCP connect plus HELLO / HELLO_ACK, bounded like the MPA exchange */
            ep->deadline_ms = mca_btl_siwarp_now_ms() +
                              (uint64_t) mca_btl_siwarp_component.connect_timeout;
            mca_btl_siwarp_ep_activate(ep);
            return OPAL_SUCCESS;
        }
        close(fd);
    }
    mca_btl_siwarp_ep_fail(ep, "no published address accepted a TCP connection", 1);
    return OPAL_ERR_UNREACH;
}

/* Read into the rx cursor; returns 1 when `want` bytes of the current frame
 * body are in, 0 for later, -1 on EOF / error (errno set, 0 for EOF). */
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

static int rx_body(mca_btl_siwarp_endpoint_t *ep)
{
    ssize_t n;

    while (ep->rx_left > 0) {
        n = recv(ep->fd, ep->rx_dst, ep->rx_left, 0);
        if (n > 0) {
            ep->rx_dst += n;
            ep->rx_left -= (size_t) n;
            continue;
        }
        if (0 == n) {
            errno = 0;
            return -1;
        }
        return (EAGAIN == errno || EWOULDBLOCK == errno || EINTR == errno) ? 0 : -1;
    }
    return 1;
}

int mca_btl_siwarp_tcp_progress_connect(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_conn_pd_t pd;
    uint8_t hello[HELLO_LEN];
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
        hello_frame(hello, MCA_BTL_SIWARP_TCP_HELLO, MCA_BTL_SIWARP_CONN_OK);
        if (send(ep->fd, hello, sizeof(hello), MSG_NOSIGNAL) != (ssize_t) sizeof(hello)) {
            mca_btl_siwarp_ep_fail(ep, "sending the TCP hello failed", 1);
            return 1;
        }
        ep->tcp_connected = 1;
        rx_reset(ep);
    }
    if (ep->rx_hdr_got < sizeof(ep->rx_hdr)) {
        rc = rx_fill(ep);
        if (rc < 0) {
            mca_btl_siwarp_ep_fail(ep, errno ? strerror(errno)
                                   : "peer closed the connection during the handshake", 1);
            return 1;
        }
        if (0 == rc) {
            return 0;
        }
        if (MCA_BTL_SIWARP_TCP_HELLO_ACK != ep->rx_hdr.op ||
            sizeof(pd) != ntohl(ep->rx_hdr.len)) {
            mca_btl_siwarp_ep_fail(ep, "bad TCP handshake reply", 1);
            return 1;
        }
        ep->rx_dst = (uint8_t *) ep->rx_small;
        ep->rx_left = sizeof(pd);
    }
    rc = rx_body(ep);
    if (rc < 0) {
        mca_btl_siwarp_ep_fail(ep, "peer closed the connection during the handshake", 1);
        return 1;
    }
    if (0 == rc) {
        return 0;
    }
    rx_reset(ep);
    if (OPAL_SUCCESS != mca_btl_siwarp_parse_conn_pd(ep->rx_small, sizeof(pd), &pd)) {
        mca_btl_siwarp_ep_fail(ep, "bad TCP handshake reply", 1);
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
        mca_btl_siwarp_ep_fail(ep, "peer does not know this process", 1);
        return 1;
    }
    mca_btl_siwarp_ep_connected(ep, MCA_BTL_SIWARP_TR_TCP, pd.rq_depth);
    return 1;
}

/* ---- accept (acceptor) ------------------------------------------------------- */

void mca_btl_siwarp_tcp_accept(mca_btl_siwarp_module_t *m, int listen_fd)
{
    for (;;) {
        uint8_t buf[HELLO_LEN];
        mca_btl_siwarp_tcp_hdr_t h;
        mca_btl_siwarp_conn_pd_t pd;
        mca_btl_siwarp_endpoint_t *ep;
        opal_process_name_t name;
        struct timeval tv = {.tv_sec = HELLO_TIMEOUT_SEC};
        int reason, fd;

        fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            return;     /* EAGAIN or a transient error */
        }
        /* the hello is 40 bytes sent right after connect: read it blocking */
        set_sock_opts(fd, 0);
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (recv(fd, buf, sizeof(buf), MSG_WAITALL) != (ssize_t) sizeof(buf)) {
            close(fd);
            continue;
        }
        memcpy(&h, buf, sizeof(h));
        if (MCA_BTL_SIWARP_TCP_HELLO != h.op || sizeof(pd) != ntohl(h.len) ||
            OPAL_SUCCESS != mca_btl_siwarp_parse_conn_pd(buf + sizeof(h), sizeof(pd), &pd)) {
            BTL_VERBOSE(("dropping a TCP connection without a valid hello"));
            close(fd);
            continue;
        }
        name.jobid = pd.jobid;
        name.vpid = pd.vpid;
        ep = mca_btl_siwarp_ep_lookup(m, &name, 1);
        if (NULL == ep) {
            reason = MCA_BTL_SIWARP_CONN_UNKNOWN;
        } else if (!mca_btl_siwarp_ep_accept_incoming(ep)) {
            reason = MCA_BTL_SIWARP_CONN_DUP;
        } else {
            reason = MCA_BTL_SIWARP_CONN_OK;
        }
        hello_frame(buf, MCA_BTL_SIWARP_TCP_HELLO_ACK, reason);
        if (send(fd, buf, sizeof(buf), MSG_NOSIGNAL) != (ssize_t) sizeof(buf) ||
            MCA_BTL_SIWARP_CONN_OK != reason) {
            close(fd);
            continue;
        }
        set_sock_opts(fd, 1);
        if (MCA_BTL_SIWARP_EP_CLOSED == ep->state) {
            mca_btl_siwarp_ep_set_state(ep, MCA_BTL_SIWARP_EP_CONNECTING);
        }
        if (!ep->warned_fallback) {
            mca_btl_siwarp_ep_show_fallback(ep, "the peer connected over plain TCP");
        }
        ep->fd = fd;
        ep->tcp_connected = 1;
        rx_reset(ep);
        mca_btl_siwarp_ep_activate(ep);
        mca_btl_siwarp_ep_connected(ep, MCA_BTL_SIWARP_TR_TCP, pd.rq_depth);
    }
}

/* ---- transmit ---------------------------------------------------------------- */

static void tx_done(mca_btl_siwarp_endpoint_t *ep, mca_btl_siwarp_frag_t *frag)
{
    switch (frag->type) {
    case MCA_BTL_SIWARP_FRAG_GET:
        opal_list_append(&ep->gets_inflight, &frag->base.super.super);
        break;
    default:
        mca_btl_siwarp_frag_complete(ep->module, frag, OPAL_SUCCESS);
        break;
    }
}

/* Write queued frames; 0 ok (maybe partial), -1 connection lost. */
static int tx_flush(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_frag_t *frag;

    while (!opal_list_is_empty(&ep->tx_queue)) {
        struct iovec iov[3];
        size_t skip;
        int cnt = 0;
        ssize_t n;

        frag = (mca_btl_siwarp_frag_t *) opal_list_get_first(&ep->tx_queue);
        skip = frag->tx_done;
        for (int i = 0; i < frag->iov_cnt; i++) {
            if (skip >= frag->iov[i].iov_len) {
                skip -= frag->iov[i].iov_len;
                continue;
            }
            iov[cnt].iov_base = (uint8_t *) frag->iov[i].iov_base + skip;
            iov[cnt].iov_len = frag->iov[i].iov_len - skip;
            skip = 0;
            cnt++;
        }
        n = cnt ? writev(ep->fd, iov, cnt) : 0;
        if (n < 0) {
            if (EAGAIN == errno || EWOULDBLOCK == errno || EINTR == errno) {
                return 0;
            }
            return -1;
        }
        frag->tx_done += (size_t) n;
        if (frag->tx_done < frag->tx_total) {
            return 0;
        }
        opal_list_remove_first(&ep->tx_queue);
        tx_done(ep, frag);
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
        frag->hdr->type = MCA_BTL_SIWARP_MSG_AM;
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
    if (tx_flush(ep) < 0) {
        /* the frag is on tx_queue: the failure path completes it */
        mca_btl_siwarp_ep_fail(ep, strerror(errno), 2);
    }
    return OPAL_SUCCESS;
}

/* ---- receive ------------------------------------------------------------------- */

/* May the peer put into / get from [addr, addr + len) through stag?  On no,
 * tell the user which peer asked for what, and fail the endpoint. */
static int access_ok(mca_btl_siwarp_endpoint_t *ep, const char *what, uint32_t stag,
                     uint64_t addr, uint64_t len, uint32_t access)
{
    int rc = mca_btl_siwarp_regtab_check(&ep->module->regtab, stag, addr, len, access);
    char detail[160];

    if (0 == rc) {
        return 1;
    }
    snprintf(detail, sizeof(detail), "%s of %" PRIu64 " bytes at 0x%" PRIx64
             " through handle 0x%08x", what, len, addr, stag);
    /* printed by this process directly: ORTE's show_help relay can lose the
     * message below when the job aborts right after it */
    BTL_ERROR(("siwarp: refused %s from %s: %s", detail, OPAL_NAME_PRINT(ep->name),
               mca_btl_siwarp_regtab_strerror(rc)));
    opal_show_help("help-mpi-btl-siwarp.txt", "remote access refused", true,
                   opal_process_info.nodename, OPAL_NAME_PRINT(ep->name),
                   mca_btl_siwarp_ep_peer_host(ep), detail,
                   mca_btl_siwarp_regtab_strerror(rc));
    return 0;
}

static int rx_setup(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_module_t *m = ep->module;
    size_t len = ntohl(ep->rx_hdr.len);
    uint64_t arg = be64toh(ep->rx_hdr.arg);
    mca_btl_siwarp_frag_t *frag;

    ep->rx_len = len;
    switch (ep->rx_hdr.op) {
    case MCA_BTL_SIWARP_TCP_DATA:
        if (len < sizeof(mca_btl_siwarp_hdr_t) || len > m->frag_size) {
            return -1;
        }
        if (NULL == ep->rx_buf && NULL == (ep->rx_buf = malloc(m->frag_size))) {
            return -1;
        }
        ep->rx_dst = ep->rx_buf;
        break;
    case MCA_BTL_SIWARP_TCP_PUT:
        /* the target must lie inside a registration we handed out */
        if (!access_ok(ep, "put", ntohl(ep->rx_hdr.stag), arg, len,
                       MCA_BTL_SIWARP_REGTAB_WRITE)) {
            return -2;
        }
        ep->rx_dst = (uint8_t *) (uintptr_t) arg;
        break;
    case MCA_BTL_SIWARP_TCP_GET_REQ:
        if (len != sizeof(ep->rx_small)) {
            return -1;
        }
        ep->rx_dst = (uint8_t *) ep->rx_small;
        break;
    case MCA_BTL_SIWARP_TCP_GET_RESP:
        ep->rx_get = NULL;
        OPAL_LIST_FOREACH(frag, &ep->gets_inflight, mca_btl_siwarp_frag_t) {
            if ((uint64_t) (uintptr_t) frag == arg) {
                ep->rx_get = frag;
                break;
            }
        }
        if (NULL == ep->rx_get || len != ep->rx_get->rdma_size) {
            return -1;
        }
        ep->rx_dst = ep->rx_get->local_address;
        break;
    default:
        return -1;
    }
    ep->rx_left = len;
    return 0;
}

static int rx_dispatch(mca_btl_siwarp_endpoint_t *ep)
{
    mca_btl_siwarp_module_t *m = ep->module;
    mca_btl_siwarp_frag_t *frag;

    switch (ep->rx_hdr.op) {
    case MCA_BTL_SIWARP_TCP_DATA: {
        mca_btl_siwarp_hdr_t *hdr = (mca_btl_siwarp_hdr_t *) ep->rx_buf;
        mca_btl_base_segment_t seg = {
            .seg_addr.pval = hdr + 1,
            .seg_len = ep->rx_len - sizeof(*hdr),
        };
        mca_btl_base_descriptor_t des;
        const mca_btl_active_message_callback_t *reg =
            mca_btl_base_active_message_trigger + hdr->tag;
        if (MCA_BTL_SIWARP_MSG_AM != hdr->type) {
            return -1;
        }
        memset(&des, 0, sizeof(des));
        des.des_segments = &seg;
        des.des_segment_count = 1;
        if (reg->cbfunc) {
            reg->cbfunc(&m->super, hdr->tag, &des, reg->cbdata);
        }
        break;
    }
    case MCA_BTL_SIWARP_TCP_PUT:
        break;
    case MCA_BTL_SIWARP_TCP_GET_REQ: {
        uint64_t addr = be64toh(ep->rx_small[0]);
        uint64_t len = be64toh(ep->rx_small[1]);
        if (len > UINT32_MAX) {
            return -1;
        }
        /* the source must lie inside a registration we handed out */
        if (!access_ok(ep, "get", ntohl(ep->rx_hdr.stag), addr, len,
                       MCA_BTL_SIWARP_REGTAB_READ)) {
            return -2;
        }
        frag = mca_btl_siwarp_frag_alloc_rdma(m);
        if (NULL == frag) {
            return -1;
        }
        frag->type = MCA_BTL_SIWARP_FRAG_GET_RESP;
        frag->remote_address = be64toh(ep->rx_hdr.arg);
        frag->local_address = (void *) (uintptr_t) addr;
        frag->rdma_size = len;
        mca_btl_siwarp_tcp_submit(ep, frag);
        break;
    }
    case MCA_BTL_SIWARP_TCP_GET_RESP:
        frag = ep->rx_get;
        opal_list_remove_item(&ep->gets_inflight, &frag->base.super.super);
        ep->rx_get = NULL;
        mca_btl_siwarp_frag_complete(m, frag, OPAL_SUCCESS);
        break;
    }
    return 0;
}

static void tcp_lost(mca_btl_siwarp_endpoint_t *ep, const char *why)
{
    if (opal_list_is_empty(&ep->tx_queue) && opal_list_is_empty(&ep->gets_inflight) &&
        opal_list_is_empty(&ep->pending)) {
        /* orderly hang-up with nothing outstanding (e.g. the peer finalized) */
        mca_btl_siwarp_tcp_close(ep);
        ep->transport = MCA_BTL_SIWARP_TR_NONE;
        mca_btl_siwarp_ep_set_state(ep, MCA_BTL_SIWARP_EP_CLOSED);
        return;
    }
    mca_btl_siwarp_ep_fail(ep, why, 2);
}

int mca_btl_siwarp_tcp_progress(mca_btl_siwarp_endpoint_t *ep)
{
    int rc, count = 0;

    if (ep->fd < 0 || MCA_BTL_SIWARP_EP_CONNECTED != ep->state) {
        return 0;
    }
    if (tx_flush(ep) < 0) {
        mca_btl_siwarp_ep_fail(ep, strerror(errno), 2);
        return 0;
    }
    while (MCA_BTL_SIWARP_EP_CONNECTED == ep->state && ep->fd >= 0) {
        if (ep->rx_hdr_got < sizeof(ep->rx_hdr)) {
            rc = rx_fill(ep);
            if (rc < 0) {
                tcp_lost(ep, errno ? strerror(errno) : "peer closed the connection");
                return count;
            }
            if (0 == rc) {
                return count;
            }
            rc = rx_setup(ep);
            if (-2 == rc) {
                /* reported with the peer's name; the PML must still learn */
                mca_btl_siwarp_ep_fail(ep, "remote access outside our registrations",
                                       MCA_BTL_SIWARP_FAIL_REPORTED);
                return count;
            }
            if (rc < 0) {
                BTL_ERROR(("siwarp: malformed TCP frame from %s (op %u, %u bytes)",
                           OPAL_NAME_PRINT(ep->name), ep->rx_hdr.op, ntohl(ep->rx_hdr.len)));
                mca_btl_siwarp_ep_fail(ep, "malformed frame on the TCP fallback connection", 2);
                return count;
            }
        }
        rc = rx_body(ep);
        if (rc < 0) {
            tcp_lost(ep, errno ? strerror(errno) : "peer closed the connection");
            return count;
        }
        if (0 == rc) {
            return count;
        }
        ep->rx_hdr_got = 0;
        rc = rx_dispatch(ep);
        if (-2 == rc) {
            mca_btl_siwarp_ep_fail(ep, "remote access outside our registrations",
                                   MCA_BTL_SIWARP_FAIL_REPORTED);
            return count;
        }
        if (rc < 0) {
            mca_btl_siwarp_ep_fail(ep, "malformed frame on the TCP fallback connection", 2);
            return count;
        }
        count++;
    }
    return count;
}
