/*
 * siwarp-rping.c - rping's exchange (librdmacm/examples/rping.c) over
 * libsiwarp, in both roles, so that siwarp can be checked against Linux
 * kernel siw running the real rping.
 *
 * The exchange, per ping (rping.c's "ping/pong loop"):
 *   client: Send {buf, rkey, size} of its source buffer ("start" buffer)
 *   server: RDMA Read of the source, then Send "go ahead" (16 bytes)
 *   client: Send {buf, rkey, size} of its sink buffer
 *   server: RDMA Write of what it read (strlen + 1 bytes) into the sink,
 *           then Send "go ahead"
 *   client: compares sink and source (-V)
 * The advertisement is struct rping_rdma_info: be64 buf, be32 rkey, be32
 * size.  rdma_cm on iWARP adds nothing to the MPA private data (siw-vm
 * README), so a siwarp QP talks to rping directly.
 *
 * Usage: siwarp-rping -s|-c [-a addr] [-p port] [-C count] [-S size] [-vVq]
 *        [--crc|--no-crc] [--mpa 1|2] [--p2p read|write|both|none]
 *        [--markers] [--no-markers-fallback] [--no-v1-fallback]
 *        [--ird N] [--ord N] [--pd TEXT] [-T seconds] [--dev NAME] [--bad-rkey]
 * --bad-rkey (client): the source buffer is advertised under an STag this
 * end never registered, so that the server's RDMA Read must be refused
 * (RFC 5040 7.2: a Terminate) -- to see how each end reports it.
 * Prints one "siwarp-rping: connected ..." line with what was negotiated and
 * ends with "siwarp-rping: OK ..." or "siwarp-rping: FAIL ..." (exit 0 / 1).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "siwarp/siwarp.h"

#define RPING_MSG_FMT   "rdma-ping-%d: "
#define RPING_MIN_SIZE  26          /* rping.c: sizeof("2147483647") + sizeof(fmt) */
#define RPING_MAX_SIZE  65535
#define RPING_BUF_MAX   (64 * 1024)

struct rping_rdma_info {            /* rping.c, network byte order */
    uint64_t buf;
    uint32_t rkey;
    uint32_t size;
};

struct opts {
    bool server;
    const char *addr;
    const char *port;
    const char *dev;                /* --dev: siwarp_ctx_create_dev */
    int count, size, verbose, validate, quiet;
    int timeout_s;
    struct siwarp_conn_param cp;
    bool markers_asked;
    bool bad_rkey;                  /* --bad-rkey */
};

struct rp {
    struct opts *o;
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
    struct siwarp_listener *l;       /* server */
    struct siwarp_mr *recv_mr, *rdma_mr, *start_mr;
    struct rping_rdma_info recv_buf;
    char *rdma_buf, *start_buf;
    uint64_t t0;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static const char *rtr_name(int rtr)
{
    switch (rtr) {
    case SIWARP_RTR_READ: return "read";
    case SIWARP_RTR_WRITE: return "write";
    case SIWARP_RTR_SEND: return "send";
    case 0: return "none";
    default: return "several";
    }
}

static int fail(struct rp *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print the cause, with what the QP recorded (error text, Terminates). */
static int fail(struct rp *r, const char *fmt, ...)
{
    struct siwarp_qp_attr at;
    char msg[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    printf("siwarp-rping: FAIL %s", msg);
    if (r->qp && siwarp_query_qp(r->qp, &at) == 0) {
        printf(" [qp %s", siwarp_qp_state_str(at.state));
        if (at.error_str[0])
            printf(", %s", at.error_str);
        if (at.term_sent)
            printf(", Terminate sent: %s", siwarp_term_str(at.term_sent));
        if (at.term_recv)
            printf(", Terminate received: %s", siwarp_term_str(at.term_recv));
        printf("]");
    }
    printf(" after %llu ms\n", (unsigned long long)(now_ms() - r->t0));
    fflush(stdout);
    return 1;
}

static int post_recv(struct rp *r)
{
    struct siwarp_sge s = { &r->recv_buf, sizeof(r->recv_buf), siwarp_mr_stag(r->recv_mr) };
    struct siwarp_recv_wr w = { .wr_id = 1, .sg_list = &s, .num_sge = 1 };
    return siwarp_post_recv(r->qp, &w, NULL);
}

/* Send the advertisement {buf, rkey, size} (inline: the struct is reused). */
static int send_info(struct rp *r, const void *buf, uint32_t rkey, uint32_t size)
{
    struct rping_rdma_info info = { htobe64((uint64_t)(uintptr_t)buf), htobe32(rkey),
                                    htobe32(size) };
    struct siwarp_sge s = { &info, sizeof(info), 0 };
    struct siwarp_send_wr w = { .wr_id = 2, .sg_list = &s, .num_sge = 1,
                                .opcode = SIWARP_WR_SEND, .send_flags = SIWARP_SEND_INLINE };
    return siwarp_post_send(r->qp, &w, NULL);
}

/* Wait for a completion of `want` (other successful ones are skipped).
 * Returns 0, -ECONNRESET when the work was flushed (peer went away),
 * -ETIMEDOUT, or -EIO for an error completion. */
static int wait_wc(struct rp *r, enum siwarp_wc_opcode want, struct siwarp_wc *out)
{
    uint64_t deadline = now_ms() + (uint64_t)r->o->timeout_s * 1000u;
    struct siwarp_wc wc;

    for (;;) {
        int n = siwarp_poll_cq(r->cq, 1, &wc);
        if (n < 0)
            return n;
        if (n == 1) {
            if (wc.status == SIWARP_WC_WR_FLUSH_ERR)
                return -ECONNRESET;
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
        uint64_t t = now_ms();
        if (t >= deadline)
            return -ETIMEDOUT;
        siwarp_cq_wait(r->cq, (int)(deadline - t > 200 ? 200 : deadline - t));
    }
}

static int wc_fail(struct rp *r, int rc, const struct siwarp_wc *wc, const char *what)
{
    if (rc == -EIO)
        return fail(r, "%s: completion status %s", what, siwarp_wc_status_str(wc->status));
    if (rc == -ECONNRESET)
        return fail(r, "%s: connection closed by the peer", what);
    return fail(r, "%s: %s", what, strerror(-rc));
}

static void print_connected(struct rp *r)
{
    struct siwarp_qp_attr at;

    siwarp_query_qp(r->qp, &at);
    printf("siwarp-rping: connected rev=%d crc=%d markers=%d p2p=%d rtr=%s ird=%u ord=%u "
           "mulpdu=%u peer_pd_len=%u in %llu ms\n",
           at.mpa_rev, at.crc, at.markers, at.p2p, rtr_name(at.rtr), at.ird, at.ord,
           at.mulpdu, at.peer_private_data_len, (unsigned long long)(now_ms() - r->t0));
    if (at.peer_private_data_len) {
        printf("siwarp-rping: peer private data \"");
        for (unsigned i = 0; i < at.peer_private_data_len; i++) {
            uint8_t c = at.peer_private_data[i];
            printf(c >= 32 && c < 127 ? "%c" : "\\x%02x", c);
        }
        printf("\"\n");
    }
    if (r->o->markers_asked && !at.markers)
        printf("siwarp-rping: note: the peer refused markers (MPA Reject); "
               "connected without markers (markers_fallback)\n");
    fflush(stdout);
}

static int setup(struct rp *r)
{
    struct siwarp_qp_init_attr a = { 0 };
    int acc = SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_READ | SIWARP_ACCESS_REMOTE_WRITE;
    int rc;

    if (r->o->dev) {
        if ((rc = siwarp_ctx_create_dev(r->o->dev, &r->ctx))) {
            fprintf(stderr, "siwarp-rping: device %s: %s (SIWARP_DEBUG=1 lists the verbs "
                    "devices)\n", r->o->dev, strerror(-rc));
            return rc;
        }
        printf("siwarp-rping: backend %s\n", siwarp_ctx_backend(r->ctx));
    }
    if ((!r->ctx && (rc = siwarp_ctx_create(&r->ctx))) || (rc = siwarp_alloc_pd(r->ctx, &r->pd)) ||
        (rc = siwarp_create_cq(r->ctx, 64, &r->cq)))
        return rc;
    a.send_cq = a.recv_cq = r->cq;
    a.max_send_wr = 16;
    a.max_recv_wr = 4;
    a.max_sge = 1;
    a.max_inline = 64;
    if ((rc = siwarp_create_qp(r->pd, &a, &r->qp)))
        return rc;
    r->rdma_buf = calloc(1, RPING_BUF_MAX);
    r->start_buf = calloc(1, RPING_BUF_MAX);
    if (!r->rdma_buf || !r->start_buf)
        return -ENOMEM;
    if ((rc = siwarp_reg_mr(r->pd, &r->recv_buf, sizeof(r->recv_buf),
                            SIWARP_ACCESS_LOCAL_WRITE, &r->recv_mr)) ||
        (rc = siwarp_reg_mr(r->pd, r->rdma_buf, RPING_BUF_MAX, acc, &r->rdma_mr)) ||
        (rc = siwarp_reg_mr(r->pd, r->start_buf, RPING_BUF_MAX, acc, &r->start_mr)))
        return rc;
    return 0;
}

/* Release everything setup and the run created, in reverse order, on
 * every path (LeakSanitizer: nothing left at exit). */
static void teardown(struct rp *r)
{
    if (r->qp)
        siwarp_destroy_qp(r->qp);
    if (r->l)
        siwarp_listener_destroy(r->l);
    if (r->start_mr)
        siwarp_dereg_mr(r->start_mr);
    if (r->rdma_mr)
        siwarp_dereg_mr(r->rdma_mr);
    if (r->recv_mr)
        siwarp_dereg_mr(r->recv_mr);
    free(r->start_buf);
    free(r->rdma_buf);
    if (r->cq)
        siwarp_destroy_cq(r->cq);
    if (r->pd)
        siwarp_dealloc_pd(r->pd);
    if (r->ctx)
        siwarp_ctx_destroy(r->ctx);
    memset(r, 0, sizeof(*r));
}

static int resolve(const struct opts *o, struct sockaddr_storage *ss, socklen_t *sl)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *res;
    const char *host = o->addr;
    int rc;

    if (o->server && !host)
        hints.ai_flags |= AI_PASSIVE;
    if (!o->server && !host)
        host = "127.0.0.1";
    rc = getaddrinfo(host, o->port, &hints, &res);
    if (rc) {
        fprintf(stderr, "siwarp-rping: %s: %s\n", host ? host : "*", gai_strerror(rc));
        return -EINVAL;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *sl = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

/* ---- client: rping_test_client ------------------------------------------- */

static int run_client(struct rp *r, const struct sockaddr *sa, socklen_t sl)
{
    struct opts *o = r->o;
    struct siwarp_wc wc;
    int start = 65, ping, rc;

    if ((rc = post_recv(r)))
        return fail(r, "post_recv: %s", strerror(-rc));
    if ((rc = siwarp_connect(r->qp, sa, sl, &o->cp)))
        return fail(r, "connect: %s", strerror(-rc));
    rc = siwarp_connect_wait(r->qp, o->timeout_s * 1000);
    if (rc) {
        struct siwarp_qp_attr at;

        siwarp_query_qp(r->qp, &at);
        if (o->markers_asked && strstr(at.error_str, "Reject"))
            printf("siwarp-rping: the peer refused markers (MPA Reject) and "
                   "markers_fallback is off\n");
        return fail(r, "connect: %s", strerror(-rc));
    }
    print_connected(r);

    for (ping = 0; !o->count || ping < o->count; ping++) {
        int cc = snprintf(r->start_buf, (size_t)o->size, RPING_MSG_FMT, ping);
        unsigned char c = (unsigned char)start;
        for (int i = cc; i < o->size; i++) {
            r->start_buf[i] = (char)c;
            if (++c > 122)
                c = 65;
        }
        if (++start > 122)
            start = 65;
        r->start_buf[o->size - 1] = 0;
        memset(r->rdma_buf, 0, (size_t)o->size);

        uint32_t src_key = siwarp_mr_stag(r->start_mr) ^ (o->bad_rkey ? 0x00ffff00u : 0);
        if ((rc = send_info(r, r->start_buf, src_key, (uint32_t)o->size)))
            return fail(r, "ping %d: post source advertisement: %s", ping, strerror(-rc));
        if ((rc = wait_wc(r, SIWARP_WC_RECV, &wc)))
            return wc_fail(r, rc, &wc, "waiting for the go-ahead after the RDMA Read");
        if (wc.byte_len != sizeof(struct rping_rdma_info))
            return fail(r, "ping %d: go-ahead of %u bytes, want 16", ping, wc.byte_len);
        if ((rc = post_recv(r)))
            return fail(r, "post_recv: %s", strerror(-rc));
        if ((rc = send_info(r, r->rdma_buf, siwarp_mr_stag(r->rdma_mr), (uint32_t)o->size)))
            return fail(r, "ping %d: post sink advertisement: %s", ping, strerror(-rc));
        if ((rc = wait_wc(r, SIWARP_WC_RECV, &wc)))
            return wc_fail(r, rc, &wc, "waiting for the go-ahead after the RDMA Write");
        if (wc.byte_len != sizeof(struct rping_rdma_info))
            return fail(r, "ping %d: go-ahead of %u bytes, want 16", ping, wc.byte_len);
        if ((rc = post_recv(r)))
            return fail(r, "post_recv: %s", strerror(-rc));
        if (o->validate && memcmp(r->start_buf, r->rdma_buf, (size_t)o->size))
            return fail(r, "ping %d: data mismatch", ping);
        if (o->verbose)
            printf("ping data: %s\n", r->rdma_buf);
    }
    siwarp_disconnect(r->qp);
    /* let the FIN leave: the QP reaches ERROR once both sides closed */
    for (uint64_t end = now_ms() + 2000; now_ms() < end;) {
        struct siwarp_qp_attr at;
        siwarp_query_qp(r->qp, &at);
        if (at.state == SIWARP_QPS_ERROR || at.state == SIWARP_QPS_IDLE)
            break;
        siwarp_wait(r->ctx, 50);
    }
    printf("siwarp-rping: OK client %d pings of %d bytes%s in %llu ms\n", ping, o->size,
           o->validate ? " verified" : "", (unsigned long long)(now_ms() - r->t0));
    return 0;
}

/* ---- server: rping_test_server -------------------------------------------- */

static int run_server(struct rp *r, const struct sockaddr *sa, socklen_t sl)
{
    struct opts *o = r->o;
    struct siwarp_conn_req *req;
    struct siwarp_conn_param asked;
    struct siwarp_wc wc;
    int rc, pings = 0;

    if ((rc = siwarp_listen(r->ctx, sa, sl, &o->cp, &r->l)))
        return fail(r, "listen: %s", strerror(-rc));
    printf("siwarp-rping: listening\n");
    fflush(stdout);
    if ((rc = siwarp_get_conn_request_wait(r->l, o->timeout_s * 1000, &req)))
        return fail(r, "no connection request: %s", strerror(-rc));
    r->t0 = now_ms();
    siwarp_conn_req_param(req, &asked, NULL);
    printf("siwarp-rping: request rev=%d crc=%d markers=%d p2p=%d rtr_offered=0x%x ird=%u ord=%u "
           "pd_len=%u\n", asked.mpa_rev, asked.crc, asked.markers, asked.p2p, asked.rtr,
           asked.ird, asked.ord, asked.private_data_len);
    if ((rc = post_recv(r))) {
        siwarp_reject(req, NULL, 0);
        return fail(r, "post_recv: %s", strerror(-rc));
    }
    if ((rc = siwarp_accept(req, r->qp, &o->cp)))
        return fail(r, "accept: %s", strerror(-rc));
    for (;;) {
        struct siwarp_qp_attr at;
        siwarp_query_qp(r->qp, &at);
        if (at.state != SIWARP_QPS_CONNECTING)
            break;
        if (now_ms() - r->t0 > (uint64_t)o->timeout_s * 1000u)
            return fail(r, "accept did not complete");
        siwarp_wait(r->ctx, 50);
    }
    print_connected(r);

    for (;;) {
        struct siwarp_sge s = { r->rdma_buf, 0, siwarp_mr_stag(r->rdma_mr) };
        struct siwarp_send_wr w = { .wr_id = 3, .sg_list = &s, .num_sge = 1,
                                    .send_flags = SIWARP_SEND_SIGNALED };
        uint32_t len;

        /* the client's source advertisement, or its disconnect */
        rc = wait_wc(r, SIWARP_WC_RECV, &wc);
        if (rc == -ECONNRESET)
            break;
        if (rc)
            return wc_fail(r, rc, &wc, "waiting for the source advertisement");
        if (wc.byte_len != sizeof(struct rping_rdma_info))
            return fail(r, "received bogus data, size %u", wc.byte_len);
        len = be32toh(r->recv_buf.size);
        if (len > RPING_BUF_MAX)
            return fail(r, "source of %u bytes is over %u", len, RPING_BUF_MAX);
        w.opcode = SIWARP_WR_READ;
        w.rdma.remote_addr = be64toh(r->recv_buf.buf);
        w.rdma.rkey = be32toh(r->recv_buf.rkey);
        s.length = len;
        if ((rc = post_recv(r)))
            return fail(r, "post_recv: %s", strerror(-rc));
        if ((rc = siwarp_post_send(r->qp, &w, NULL)))
            return fail(r, "post RDMA Read: %s", strerror(-rc));
        if ((rc = wait_wc(r, SIWARP_WC_READ, &wc)))
            return wc_fail(r, rc, &wc, "RDMA Read");
        r->rdma_buf[len ? len - 1 : 0] = 0;
        if (o->verbose)
            printf("server ping data: %s\n", r->rdma_buf);
        if ((rc = send_info(r, r->rdma_buf, 0, 0)))
            return fail(r, "post go-ahead: %s", strerror(-rc));

        if ((rc = wait_wc(r, SIWARP_WC_RECV, &wc)))
            return wc_fail(r, rc, &wc, "waiting for the sink advertisement");
        if (wc.byte_len != sizeof(struct rping_rdma_info))
            return fail(r, "received bogus data, size %u", wc.byte_len);
        w.opcode = SIWARP_WR_WRITE;
        w.rdma.remote_addr = be64toh(r->recv_buf.buf);
        w.rdma.rkey = be32toh(r->recv_buf.rkey);
        s.length = (uint32_t)strlen(r->rdma_buf) + 1;
        if ((rc = post_recv(r)))
            return fail(r, "post_recv: %s", strerror(-rc));
        if ((rc = siwarp_post_send(r->qp, &w, NULL)))
            return fail(r, "post RDMA Write: %s", strerror(-rc));
        if ((rc = wait_wc(r, SIWARP_WC_WRITE, &wc)))
            return wc_fail(r, rc, &wc, "RDMA Write");
        if ((rc = send_info(r, r->rdma_buf, 0, 0)))
            return fail(r, "post go-ahead: %s", strerror(-rc));
        pings++;
    }
    if (o->count && pings != o->count)
        return fail(r, "client disconnected after %d pings, expected %d", pings, o->count);
    printf("siwarp-rping: OK server %d pings in %llu ms\n", pings,
           (unsigned long long)(now_ms() - r->t0));
    return 0;
}

/* ---- options ----------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
        "usage: siwarp-rping -s|-c [-a addr] [-p port] [-C count] [-S size] [-v] [-V] [-T sec]\n"
        "  --crc / --no-crc           ask for CRC32c (default: ask)\n"
        "  --mpa 1|2                  MPA revision (default 2)\n"
        "  --p2p read|write|both|none RFC 6581 peer-to-peer RTR offered (client) or\n"
        "                             accepted (server); default both\n"
        "  --markers                  ask for markers; --no-markers-fallback: fail if refused\n"
        "  --no-v1-fallback           do not retry with MPA revision 1\n"
        "  --ird N --ord N            inbound / outbound RDMA Read depth (default 16)\n"
        "  --pd TEXT                  private data of the Request / Reply\n"
        "  --dev NAME                 backend: soft, auto or a verbs device (siw0);\n"
        "                             default: SIWARP_DEVICE, else soft\n"
        "  --bad-rkey                 (client) advertise an STag this end does not have:\n"
        "                             the server's RDMA Read must be refused\n");
}

enum { O_CRC = 256, O_NOCRC, O_MPA, O_P2P, O_MARKERS, O_NOMFB, O_NOV1, O_IRD, O_ORD, O_PD, O_DEV,
       O_BADKEY };

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {
        { "crc", no_argument, 0, O_CRC }, { "no-crc", no_argument, 0, O_NOCRC },
        { "mpa", required_argument, 0, O_MPA }, { "p2p", required_argument, 0, O_P2P },
        { "markers", no_argument, 0, O_MARKERS },
        { "no-markers-fallback", no_argument, 0, O_NOMFB },
        { "no-v1-fallback", no_argument, 0, O_NOV1 },
        { "ird", required_argument, 0, O_IRD }, { "ord", required_argument, 0, O_ORD },
        { "pd", required_argument, 0, O_PD }, { "help", no_argument, 0, 'h' },
        { "dev", required_argument, 0, O_DEV }, { "bad-rkey", no_argument, 0, O_BADKEY },
        { 0, 0, 0, 0 }
    };
    int c, side = -1;

    memset(o, 0, sizeof(*o));
    o->port = "7174";
    o->size = 64;
    o->timeout_s = 20;
    siwarp_conn_param_default(&o->cp);
    while ((c = getopt_long(argc, argv, "sca:p:C:S:vVqT:h", lo, NULL)) != -1) {
        switch (c) {
        case 's': side = 1; break;
        case 'c': side = 0; break;
        case 'a': o->addr = optarg; break;
        case 'p': o->port = optarg; break;
        case 'C': o->count = atoi(optarg); break;
        case 'S': o->size = atoi(optarg); break;
        case 'v': o->verbose++; break;
        case 'V': o->validate++; break;
        case 'q': o->quiet++; break;
        case 'T': o->timeout_s = atoi(optarg); break;
        case O_CRC: o->cp.crc = 1; break;
        case O_NOCRC: o->cp.crc = 0; break;
        case O_MPA: o->cp.mpa_rev = atoi(optarg); break;
        case O_P2P:
            if (!strcmp(optarg, "none")) {
                o->cp.p2p = 0;
                o->cp.rtr = 0;
            } else {
                o->cp.p2p = 1;
                o->cp.rtr = !strcmp(optarg, "read") ? SIWARP_RTR_READ :
                            !strcmp(optarg, "write") ? SIWARP_RTR_WRITE :
                            !strcmp(optarg, "both") ? SIWARP_RTR_READ | SIWARP_RTR_WRITE : -1;
                if (o->cp.rtr < 0)
                    return -1;
            }
            break;
        case O_MARKERS: o->cp.markers = 1; o->markers_asked = true; break;
        case O_NOMFB: o->cp.markers_fallback = 0; break;
        case O_NOV1: o->cp.v1_fallback = 0; break;
        case O_IRD: o->cp.ird = (uint16_t)atoi(optarg); break;
        case O_ORD: o->cp.ord = (uint16_t)atoi(optarg); break;
        case O_PD:
            o->cp.private_data = optarg;
            o->cp.private_data_len = (uint16_t)strlen(optarg);
            break;
        case O_DEV: o->dev = optarg; break;
        case O_BADKEY: o->bad_rkey = true; break;
        default: return -1;
        }
    }
    if (side < 0 || optind != argc)
        return -1;
    o->server = side == 1;
    if (o->bad_rkey && o->server)
        return -1;
    if (o->size < RPING_MIN_SIZE || o->size > RPING_MAX_SIZE) {
        fprintf(stderr, "siwarp-rping: invalid size %d (valid range is %d to %d)\n",
                o->size, RPING_MIN_SIZE, RPING_MAX_SIZE);
        return -1;
    }
    if (o->cp.mpa_rev != 1 && o->cp.mpa_rev != 2)
        return -1;
    if (o->count < 0 || o->timeout_s <= 0)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    struct rp r;
    struct sockaddr_storage ss;
    socklen_t sl;
    int rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (parse(argc, argv, &o)) {
        usage();
        return 2;
    }
    memset(&r, 0, sizeof(r));
    r.o = &o;
    r.t0 = now_ms();
    if (resolve(&o, &ss, &sl))
        return 2;
    rc = setup(&r);
    if (rc)
        rc = fail(&r, "setup: %s", strerror(-rc));
    else
        rc = o.server ? run_server(&r, (struct sockaddr *)&ss, sl)
                      : run_client(&r, (struct sockaddr *)&ss, sl);
    teardown(&r);
    return rc ? 1 : 0;
}
