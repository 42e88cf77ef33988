/*
 * siwarp-perftest.c - perftest's -R (rdma_cm) protocol over libsiwarp, both
 * roles, for ib_write_bw, ib_read_bw and ib_send_bw, so that siwarp can be
 * checked against Linux kernel siw running the real perftest.
 *
 * The exchange (perftest 6.06, the order as in the captures; C = client,
 * S = server; every control message is a Send on the control connection,
 * the client speaks first and the server answers with a message of the
 * same size -- perftest's ctx_xchg_data / ctx_hand_shake):
 *   C connects the control QP to S's port (perftest -p, default 18515)
 *   version string, 16 bytes ("6.06" NUL-padded)
 *   cycle buffer (page size), 4 bytes BE;  cache line size, 4 bytes BE
 *   MTU as text, 2 bytes ("3": IBV_MTU_1024)
 *   dest (56 bytes, zeros): S listens for the data connection
 *   C connects the data QP to the same port
 *   dest (zeros): the data connection is up on both sides
 *   dest x PRE (S's buffer rkey/vaddr, or for send the credit buffer)
 *   -- the test on the data QP --
 *   write/read: dest, then C's bw report (5 x 8 bytes), S prints it
 *   dest: close
 * PRE is 3 for write and read, 4 for send (send's server posts its receives
 * before the last one).  In send_bw over iWARP (no RNR retry) the receiver
 * grants credits: an RDMA Write of its receive count (a host-order u32) to
 * the credit buffer the sender advertised; the sender keeps fewer than
 * rx_depth Sends beyond that count (perftest's send_rcredit).
 *
 * Usage: siwarp-perftest -t write|read|send [-s size] [-n iters] [-p port]
 *        [-r rx_depth] [-T sec] [--crc|--no-crc] [--p2p read|write|both|none]
 *        [--dev NAME] [-v] [server-address]
 * Without an address it is the server.  Ends with "siwarp-perftest: OK ..."
 * (exit 0) or "siwarp-perftest: FAIL ..." (exit 1).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "siwarp-perftest.h"

#define PT_VERSION       "6.06"   /* what we claim: the formats below are 6.06's */
#define PT_VERSION_LEN   16       /* sizeof(perftest_parameters.version) */
#define PT_MIN_PEER_VER  5.33     /* 8-byte iters in the report, 2-byte MTU */
#define PT_CACHE_LINE    64
#define PT_MTU_TEXT      "3"      /* enum ibv_mtu 3 = 1024, what siw reports */

uint64_t pt_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

const char *pt_verb_name(enum pt_verb v)
{
    static const char *const names[] = { [PT_WRITE] = "write", [PT_READ] = "read",
                                         [PT_SEND] = "send" };
    return names[v];
}

static void qp_diag(FILE *f, const char *name, struct siwarp_qp *qp)
{
    struct siwarp_qp_attr at;

    if (!qp || siwarp_query_qp(qp, &at))
        return;
    fprintf(f, " [%s qp %s", name, siwarp_qp_state_str(at.state));
    if (at.error_str[0])
        fprintf(f, ", %s", at.error_str);
    if (at.term_sent)
        fprintf(f, ", Terminate sent: %s", siwarp_term_str(at.term_sent));
    if (at.term_recv)
        fprintf(f, ", Terminate received: %s", siwarp_term_str(at.term_recv));
    fprintf(f, "]");
}

/* Print the cause with what both QPs recorded; returns 1 (the exit code). */
int pt_fail(struct pt *p, const char *fmt, ...)
{
    char msg[300];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    printf("siwarp-perftest: FAIL %s %s: %s", pt_verb_name(p->o->verb),
           p->o->server ? "server" : "client", msg);
    qp_diag(stdout, "control", p->ctrl.qp);
    qp_diag(stdout, "data", p->data.qp);
    printf(" after %llu ms\n", (unsigned long long)((pt_now_us() - p->t0) / 1000));
    fflush(stdout);
    return 1;
}

/* Wait for a completion of `want` on c's CQ; successful completions of other
 * kinds (our signaled Sends) are skipped.  0, -ECONNRESET (flushed: the
 * peer went away), -ETIMEDOUT or -EIO (error status, in *out). */
int pt_wait_wc(struct pt *p, struct pt_conn *c, enum siwarp_wc_opcode want,
               struct siwarp_wc *out, int timeout_ms)
{
    uint64_t deadline = pt_now_us() + (uint64_t)timeout_ms * 1000u;
    struct siwarp_wc wc;

    (void)p;
    for (;;) {
        int n = siwarp_poll_cq(c->cq, 1, &wc);
        if (n < 0)
            return n;
        if (n == 1) {
            if (wc.status == SIWARP_WC_WR_FLUSH_ERR) {
                *out = wc;
                return -ECONNRESET;
            }
            if (wc.status != SIWARP_WC_SUCCESS) {
                *out = wc;
                return -EIO;
            }
            if (wc.opcode == want) {
                *out = wc;
                return 0;
            }
            continue;
        }
        uint64_t t = pt_now_us();
        if (t >= deadline)
            return -ETIMEDOUT;
        uint64_t left_ms = (deadline - t) / 1000u + 1;
        siwarp_cq_wait(c->cq, (int)(left_ms > 200 ? 200 : left_ms));
    }
}

int pt_wc_fail(struct pt *p, int rc, const struct siwarp_wc *wc, const char *what)
{
    if (rc == -EIO)
        return pt_fail(p, "%s: completion status %s (vendor_err 0x%x)", what,
                       siwarp_wc_status_str(wc->status), wc->vendor_err);
    if (rc == -ECONNRESET)
        return pt_fail(p, "%s: work flushed (connection closed by the peer)", what);
    return pt_fail(p, "%s: %s", what, strerror(-rc));
}

/* ---- the control connection ---------------------------------------------------- */

static int ctrl_post_recv(struct pt *p)
{
    struct siwarp_sge s = { p->ctrl_rx, sizeof(p->ctrl_rx), siwarp_mr_stag(p->ctrl_mr) };
    struct siwarp_recv_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1 };
    return siwarp_post_recv(p->ctrl.qp, &w, NULL);
}

static int ctrl_send(struct pt *p, const void *msg, uint32_t len, const char *what)
{
    struct siwarp_sge s = { (void *)msg, len, 0 };
    struct siwarp_send_wr w = { .wr_id = 2, .sg_list = &s, .num_sge = 1,
                                .opcode = SIWARP_WR_SEND,
                                .send_flags = SIWARP_SEND_INLINE | SIWARP_SEND_SIGNALED };
    int rc = siwarp_post_send(p->ctrl.qp, &w, NULL);
    return rc ? pt_fail(p, "control: post %s: %s", what, strerror(-rc)) : 0;
}

/* The peer's message: exactly `len` bytes (perftest's fixed-size records;
 * another size means we are out of step with it), then the receive is
 * posted again before anything of ours goes out. */
static int ctrl_recv(struct pt *p, void *msg, uint32_t len, const char *what)
{
    struct siwarp_wc wc;
    int rc = pt_wait_wc(p, &p->ctrl, SIWARP_WC_RECV, &wc, p->o->timeout_s * 1000);

    if (rc) {
        char w[96];
        snprintf(w, sizeof(w), "control: waiting for the peer's %s", what);
        return pt_wc_fail(p, rc, &wc, w);
    }
    if (wc.byte_len != len)
        return pt_fail(p, "control: the peer's %s is %u bytes, perftest sends %u "
                       "(out of step with the peer's exchange)", what, wc.byte_len, len);
    memcpy(msg, p->ctrl_rx, len);
    if ((rc = ctrl_post_recv(p)))
        return pt_fail(p, "control: post receive: %s", strerror(-rc));
    return 0;
}

/* a fresh control QP (connect retry) needs its receive again */
static int ctrl_arm(struct pt *p)
{
    int rc = ctrl_post_recv(p);
    return rc ? pt_fail(p, "control: post receive: %s", strerror(-rc)) : 0;
}

/* One ctx_xchg_data round: the client sends first, the server answers. */
static int xchg(struct pt *p, const void *mine, void *theirs, uint32_t len, const char *what)
{
    if (p->o->server)
        return ctrl_recv(p, theirs, len, what) || ctrl_send(p, mine, len, what);
    return ctrl_send(p, mine, len, what) || ctrl_recv(p, theirs, len, what);
}

static void dest_to_wire(const struct pt_dest *d, struct pt_wire_dest *w)
{
    memset(w, 0, sizeof(*w));
    w->out_reads = htobe32(d->out_reads);
    w->qpn = htobe32(d->qpn);
    w->psn = htobe32(d->psn);
    w->rkey = htobe32(d->rkey);
    w->vaddr = htobe64(d->vaddr);
}

/* ctx_hand_shake: exchange dest records.  zero: the records perftest sends
 * around the data connection set-up carry nothing (memset 0). */
static int handshake(struct pt *p, bool zero, const char *what)
{
    struct pt_wire_dest mine, theirs;
    struct pt_dest none = { 0 };

    dest_to_wire(zero ? &none : &p->mine, &mine);
    if (xchg(p, &mine, &theirs, sizeof(mine), what))
        return 1;
    if (!zero) {
        p->peer.out_reads = be32toh(theirs.out_reads);
        p->peer.qpn = be32toh(theirs.qpn);
        p->peer.psn = be32toh(theirs.psn);
        p->peer.rkey = be32toh(theirs.rkey);
        p->peer.vaddr = be64toh(theirs.vaddr);
    }
    return 0;
}

static uint64_t dbl_to_be(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof(u));
    return htobe64(u);
}

static double be_to_dbl(uint64_t be)
{
    uint64_t u = be64toh(be);
    double d;
    memcpy(&d, &u, sizeof(d));
    return d;
}

/* xchg_bw_reports: the client's numbers go to the server, which prints them
 * as its result; what the server sends back is not meaningful (perftest's
 * server sends an uninitialised struct, the captures show stack addresses). */
static int xchg_report(struct pt *p)
{
    const struct pt_report *r = &p->result;
    uint64_t mine[5] = { htobe64(r->size), htobe64(r->iters), dbl_to_be(r->bw_peak),
                         dbl_to_be(r->bw_avg), dbl_to_be(r->msg_rate) };
    uint64_t theirs[5];
    static const char *const what[5] = { "report size", "report iters", "report bw_peak",
                                         "report bw_avg", "report msgRate" };

    if (p->o->server)
        memset(mine, 0, sizeof(mine));
    for (int i = 0; i < 5; i++)
        if (xchg(p, &mine[i], &theirs[i], 8, what[i]))
            return 1;
    if (p->o->server) {
        p->result.size = be64toh(theirs[0]);
        p->result.iters = be64toh(theirs[1]);
        p->result.bw_peak = be_to_dbl(theirs[2]);
        p->result.bw_avg = be_to_dbl(theirs[3]);
        p->result.msg_rate = be_to_dbl(theirs[4]);
    }
    return 0;
}

/* version, cycle buffer, cache line, MTU (exchange_versions, check_sys_data,
 * check_mtu).  The peer's version decides the formats: below 5.33 perftest
 * uses 4-byte iters and other MTU sizes, which we do not speak. */
static int xchg_params(struct pt *p)
{
    char ver[PT_VERSION_LEN] = PT_VERSION, rver[PT_VERSION_LEN];
    uint32_t cb = htobe32(p->cycle_buffer), cl = htobe32(PT_CACHE_LINE), rcb, rcl;
    char mtu[2] = PT_MTU_TEXT, rmtu[2];

    if (xchg(p, ver, rver, sizeof(ver), "version"))
        return 1;
    memcpy(p->peer_version, rver, sizeof(rver));
    p->peer_version[sizeof(rver)] = 0;
    if (atof(p->peer_version) < PT_MIN_PEER_VER)
        return pt_fail(p, "peer perftest version \"%s\" is older than %.2f, whose formats "
                       "this tool speaks", p->peer_version, PT_MIN_PEER_VER);
    if (xchg(p, &cb, &rcb, 4, "cycle buffer") || xchg(p, &cl, &rcl, 4, "cache line size") ||
        xchg(p, mtu, rmtu, 2, "MTU"))
        return 1;
    /* perftest takes the larger of both: the peer cycles its RDMA addresses
     * within that many bytes of the advertised vaddr */
    if (be32toh(rcb) > p->cycle_buffer)
        p->cycle_buffer = be32toh(rcb);
    p->cache_line = be32toh(rcl) > PT_CACHE_LINE ? be32toh(rcl) : PT_CACHE_LINE;
    if (p->cycle_buffer > (1u << 24) || p->cache_line > 4096)
        return pt_fail(p, "implausible peer cycle buffer %u / cache line %u",
                       be32toh(rcb), be32toh(rcl));
    printf("siwarp-perftest: peer version %s, cycle buffer %u, cache line %u, mtu \"%.1s\"\n",
           p->peer_version, p->cycle_buffer, p->cache_line, rmtu);
    return 0;
}

/* ---- QPs and connections ------------------------------------------------------- */

static int make_qp(struct pt *p, struct pt_conn *c, uint32_t sq, uint32_t rq)
{
    struct siwarp_qp_init_attr *a = &c->attr;
    int rc;

    if ((rc = siwarp_create_cq(p->ctx, (int)(sq + rq + 8), &c->cq)))
        return rc;
    memset(a, 0, sizeof(*a));
    a->send_cq = a->recv_cq = c->cq;
    a->max_send_wr = sq;
    a->max_recv_wr = rq;
    a->max_sge = 1;
    a->max_inline = 64;
    return siwarp_create_qp(p->pd, a, &c->qp);
}

static void print_connected(struct pt *p, const char *name, struct siwarp_qp *qp)
{
    struct siwarp_qp_attr at;
    static const char *const rtr[] = { "none", "send", "write", "?", "read" };

    siwarp_query_qp(qp, &at);
    printf("siwarp-perftest: %s connected rev=%d crc=%d p2p=%d rtr=%s ird=%u ord=%u "
           "peer_pd_len=%u at %llu ms\n", name, at.mpa_rev, at.crc, at.p2p,
           at.rtr >= 0 && at.rtr <= 4 ? rtr[at.rtr] : "?", at.ird, at.ord,
           at.peer_private_data_len, (unsigned long long)((pt_now_us() - p->t0) / 1000));
}

/* perftest's client retries its connect (retry_rdma_connect: 10 tries, 100
 * ms apart): its server answers the "data listener ready" record before it
 * has called rdma_listen, so the first try may find nobody listening (through
 * qemu's port forward: accepted, then closed).  Each try on a fresh QP. */
#define PT_CONNECT_TRIES    10
#define PT_CONNECT_RETRY_US 100000

static int client_connect(struct pt *p, struct pt_conn *c, const struct sockaddr *sa,
                          socklen_t sl, const char *name)
{
    struct siwarp_conn_param cp = p->o->cp;
    int rc = 0;

    /* the data QP of a Read test needs Read credits; perftest's read server
     * offers out_reads (128 on siw) */
    if (c == &p->data && p->o->verb == PT_READ && cp.ord < 128)
        cp.ord = cp.ird = 128;
    for (int t = 1; t <= PT_CONNECT_TRIES; t++) {
        if (t > 1) {
            struct siwarp_qp_attr at;
            siwarp_query_qp(c->qp, &at);
            printf("siwarp-perftest: %s connect try %d failed (%s), again in %d ms\n", name,
                   t - 1, at.error_str[0] ? at.error_str : strerror(-rc),
                   PT_CONNECT_RETRY_US / 1000);
            siwarp_destroy_qp(c->qp);
            c->qp = NULL;
            for (uint64_t end = pt_now_us() + PT_CONNECT_RETRY_US; pt_now_us() < end;)
                siwarp_wait(p->ctx, 10);
            if ((rc = siwarp_create_qp(p->pd, &c->attr, &c->qp)))
                return pt_fail(p, "%s: create QP: %s", name, strerror(-rc));
            if (c->arm && c->arm(p))
                return 1;
        }
        if ((rc = siwarp_connect(c->qp, sa, sl, &cp)))
            return pt_fail(p, "%s: connect: %s", name, strerror(-rc));
        rc = siwarp_connect_wait(c->qp, p->o->timeout_s * 1000);
        if (!rc)
            break;
        /* only a peer that is not there (yet) is worth another try */
        if (rc != -ECONNREFUSED && rc != -ECONNRESET && rc != -ECONNABORTED)
            return pt_fail(p, "%s: connect: %s", name, strerror(-rc));
    }
    if (rc)
        return pt_fail(p, "%s: connect: %s after %d tries", name, strerror(-rc),
                       PT_CONNECT_TRIES);
    print_connected(p, name, c->qp);
    return 0;
}

static int server_accept(struct pt *p, struct pt_conn *c, const char *name)
{
    struct siwarp_conn_req *req;
    struct siwarp_conn_param asked, cp = p->o->cp;
    struct sockaddr_storage peer;
    char host[64] = "?";
    int rc;

    if ((rc = siwarp_get_conn_request_wait(p->l, p->o->timeout_s * 1000, &req)))
        return pt_fail(p, "%s: no connection request: %s", name, strerror(-rc));
    siwarp_conn_req_param(req, &asked, &peer);
    getnameinfo((struct sockaddr *)&peer, sizeof(peer), host, sizeof(host), NULL, 0,
                NI_NUMERICHOST);
    printf("siwarp-perftest: %s request from %s rev=%d crc=%d p2p=%d rtr_offered=0x%x "
           "ird=%u ord=%u pd_len=%u\n", name, host, asked.mpa_rev, asked.crc, asked.p2p,
           asked.rtr, asked.ird, asked.ord, asked.private_data_len);
    /* grant the Reads the peer's ORD asks for (128 from perftest on siw) */
    if (asked.ord > cp.ird)
        cp.ird = asked.ord > 128 ? 128 : asked.ord;
    if ((rc = siwarp_accept(req, c->qp, &cp)))
        return pt_fail(p, "%s: accept: %s", name, strerror(-rc));
    for (uint64_t end = pt_now_us() + (uint64_t)p->o->timeout_s * 1000000u;;) {
        struct siwarp_qp_attr at;
        siwarp_query_qp(c->qp, &at);
        if (at.state == SIWARP_QPS_RTS)
            break;
        if (at.state != SIWARP_QPS_CONNECTING)
            return pt_fail(p, "%s: accept ended in state %s", name,
                           siwarp_qp_state_str(at.state));
        if (pt_now_us() >= end)
            return pt_fail(p, "%s: accept did not complete", name);
        siwarp_wait(p->ctx, 50);
    }
    print_connected(p, name, c->qp);
    return 0;
}

/* Orderly close of both QPs.  The peer goes first: siw completes a Send only
 * once it is through the socket, and a QP that sees our FIN before then
 * flushes it -- perftest then fails its last exchange with "Bad wc status"
 * although we received the message.  So wait (bounded) until the peer has
 * closed a connection, then close ours and let the FINs leave. */
static void close_all(struct pt *p)
{
    struct pt_conn *cs[2] = { &p->data, &p->ctrl };

    for (uint64_t end = pt_now_us() + 3000000u; pt_now_us() < end;) {
        struct siwarp_qp_attr a, b;
        if (siwarp_query_qp(p->ctrl.qp, &a) || siwarp_query_qp(p->data.qp, &b) ||
            a.state != SIWARP_QPS_RTS || b.state != SIWARP_QPS_RTS)
            break;
        siwarp_wait(p->ctx, 50);
    }
    for (int i = 0; i < 2; i++)
        if (cs[i]->qp)
            siwarp_disconnect(cs[i]->qp);
    for (uint64_t end = pt_now_us() + 2000000u; pt_now_us() < end;) {
        int open = 0;
        for (int i = 0; i < 2; i++) {
            struct siwarp_qp_attr at;
            if (cs[i]->qp && !siwarp_query_qp(cs[i]->qp, &at) &&
                at.state != SIWARP_QPS_ERROR && at.state != SIWARP_QPS_IDLE)
                open++;
        }
        if (!open)
            break;
        siwarp_wait(p->ctx, 50);
    }
}

/* QPs before their CQs, MRs before the PD (which they hold), the context
 * last; each only if it was made.  A failed exit releases as much. */
void pt_release(struct pt *p)
{
    struct pt_conn *cs[2] = { &p->data, &p->ctrl };

    if (p->l)
        siwarp_listener_destroy(p->l);
    for (int i = 0; i < 2; i++) {
        if (cs[i]->qp)
            siwarp_destroy_qp(cs[i]->qp);
        if (cs[i]->cq)
            siwarp_destroy_cq(cs[i]->cq);
        cs[i]->qp = NULL;
        cs[i]->cq = NULL;
    }
    if (p->credit_mr)
        siwarp_dereg_mr(p->credit_mr);
    if (p->buf_mr)
        siwarp_dereg_mr(p->buf_mr);
    if (p->ctrl_mr)
        siwarp_dereg_mr(p->ctrl_mr);
    if (p->pd)
        siwarp_dealloc_pd(p->pd);
    siwarp_ctx_destroy(p->ctx);
    free(p->credit);
    free(p->buf);
    p->l = NULL;
    p->credit_mr = p->buf_mr = p->ctrl_mr = NULL;
    p->pd = NULL;
    p->ctx = NULL;
    p->credit = NULL;
    p->buf = NULL;
}

/* ---- the whole exchange, in perftest's order -------------------------------------- */

int pt_run(struct pt *p, const struct sockaddr *sa, socklen_t sl)
{
    struct pt_opts *o = p->o;
    int pre = o->verb == PT_SEND ? 4 : 3;
    int rc;

    if ((rc = make_qp(p, &p->ctrl, 8, 2)) || (rc = make_qp(p, &p->data, o->tx_depth + 8,
                                                           o->rx_depth + 2)))
        return pt_fail(p, "create QPs: %s", strerror(-rc));
    if ((rc = siwarp_reg_mr(p->pd, p->ctrl_rx, sizeof(p->ctrl_rx), SIWARP_ACCESS_LOCAL_WRITE,
                            &p->ctrl_mr)))
        return pt_fail(p, "register control buffer: %s", strerror(-rc));
    if ((rc = ctrl_post_recv(p)))
        return pt_fail(p, "control: post receive: %s", strerror(-rc));
    p->ctrl.arm = ctrl_arm;
    if (o->server) {
        if ((rc = siwarp_listen(p->ctx, sa, sl, &o->cp, &p->l)))
            return pt_fail(p, "listen: %s", strerror(-rc));
        printf("siwarp-perftest: listening\n");
        fflush(stdout);
        if (server_accept(p, &p->ctrl, "control"))
            return 1;
        p->t0 = pt_now_us();
    } else if (client_connect(p, &p->ctrl, sa, sl, "control")) {
        return 1;
    }
    if (xchg_params(p) || pt_data_setup(p))
        return 1;

    /* the data connection: the server answers the first zero record once it
     * listens (we listen already), the second once both sides are up */
    if (handshake(p, true, "dest (data listener ready)"))
        return 1;
    if (o->server ? server_accept(p, &p->data, "data")
                  : client_connect(p, &p->data, sa, sl, "data"))
        return 1;
    if (handshake(p, true, "dest (data connected)"))
        return 1;
    for (int i = 0; i < pre; i++) {
        if (o->server && o->verb == PT_SEND && i == pre - 1 && pt_data_server_arm(p))
            return 1;
        if (handshake(p, false, "dest"))
            return 1;
    }
    printf("siwarp-perftest: peer dest out_reads=%u qpn=%u psn=0x%06x rkey=0x%08x "
           "vaddr=0x%llx\n", p->peer.out_reads, p->peer.qpn, p->peer.psn, p->peer.rkey,
           (unsigned long long)p->peer.vaddr);

    if (o->server ? pt_data_run_server(p) : pt_data_run_client(p))
        return 1;
    if (o->verb != PT_SEND && (handshake(p, false, "dest (test done)") || xchg_report(p)))
        return 1;
    /* the client's report says what it did: our region was sized for -s */
    if (o->server && o->verb != PT_SEND &&
        (p->result.size != o->size || p->result.iters != o->iters))
        return pt_fail(p, "the peer reports %llu x %llu bytes, we were told %u x %u",
                       (unsigned long long)p->result.iters,
                       (unsigned long long)p->result.size, o->iters, o->size);
    if (handshake(p, false, "dest (close)"))
        return 1;
    if (o->server && pt_data_check_server(p))
        return 1;
    close_all(p);
    printf("siwarp-perftest: OK %s %s %llu x %llu bytes %.2f MB/s %.4f Mpps%s in %llu ms\n",
           pt_verb_name(o->verb), o->server ? "server" : "client",
           (unsigned long long)p->result.iters, (unsigned long long)p->result.size,
           p->result.bw_avg, p->result.msg_rate,
           o->server && o->verb != PT_SEND ? " (the peer's report)" : "", (unsigned long long)((pt_now_us() - p->t0) / 1000));
    if (p->data_note[0])
        printf("siwarp-perftest: data %s\n", p->data_note);
    return 0;
}
