/*
 * test_fault_lib.c - libsiwarp under link faults injected by
 * contrib/fault-proxy between two endpoints of one process (two contexts,
 * one thread progressing both) over loopback:
 *
 *   client QP --TCP--> fault-proxy --TCP--> server QP (listener)
 *
 * Cases: a bit flip with CRC on (Terminate 0x2002, both QPs to ERROR,
 * posted work flushed, nothing reported received), a bit flip with CRC off
 * (silently delivered: see the case's comment), a connection reset and a
 * FIN mid-transfer (LLP error completions), a stall longer than the LLP
 * timeout (the sender's QP errors in bounded, measured time) and a per-chunk
 * delay (transfers complete, data intact).
 *
 * The proxy binary is $FAULT_PROXY, else SWP_BUILDDIR/contrib/fault-proxy.
 * Its readiness (the port line) comes through a pipe, never a sleep.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "siwarp/siwarp.h"

#ifndef SWP_BUILDDIR
#define SWP_BUILDDIR "."
#endif

#define KiB (1u << 10)
#define MiB (1u << 20)

/* ---- time and data ---------------------------------------------------------- */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (uint8_t) (x >> 16);
    }
}

/* ---- the proxy --------------------------------------------------------------- */

static pid_t proxy_pid = -1;
static char proxy_ctl[108];

/* Start fault-proxy in front of 127.0.0.1:target; returns its port. */
static uint16_t proxy_start(uint16_t target, const char *rcvbuf)
{
    const char *bin = getenv("FAULT_PROXY");
    char path[512], tgt[64];
    int pfd[2];
    char line[128];
    size_t got = 0;

    if (!bin) {
        snprintf(path, sizeof(path), "%s/contrib/fault-proxy", SWP_BUILDDIR);
        bin = path;
    }
    if (access(bin, X_OK) != 0) {
        SKIP("fault proxy %s not built", bin);
    }
    snprintf(proxy_ctl, sizeof(proxy_ctl), "/tmp/swp-fault-%d.sock", (int) getpid());
    snprintf(tgt, sizeof(tgt), "127.0.0.1:%u", target);
    ASSERT_OK(pipe(pfd));
    proxy_pid = fork();
    ASSERT(proxy_pid >= 0);
    if (proxy_pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        if (rcvbuf) {
            execl(bin, bin, "-l", "127.0.0.1:0", "-t", tgt, "-c", proxy_ctl, "-s", "7",
                  "-r", rcvbuf, (char *) NULL);
        } else {
            execl(bin, bin, "-l", "127.0.0.1:0", "-t", tgt, "-c", proxy_ctl, "-s", "7",
                  (char *) NULL);
        }
        _exit(127);
    }
    close(pfd[1]);
    while (got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
        struct pollfd p = { pfd[0], POLLIN, 0 };
        ssize_t r;
        if (poll(&p, 1, 10000) <= 0) {
            FAIL("fault-proxy did not announce its port within 10 s");
        }
        r = read(pfd[0], line + got, sizeof(line) - 1 - got);
        if (r <= 0) {
            FAIL("fault-proxy exited before announcing its port");
        }
        got += (size_t) r;
    }
    line[got] = 0;
    close(pfd[0]);
    unsigned port = 0;
    if (sscanf(line, "fault-proxy: listening on port %u", &port) != 1 || port == 0) {
        FAIL("unexpected line from fault-proxy: %s", line);
    }
    return (uint16_t) port;
}

/* One command; the reply line goes to *reply if given.  Fails unless "ok". */
static void proxy_cmd(const char *cmd, char *reply, size_t rlen)
{
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    char buf[512];
    size_t got = 0;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    ASSERT(fd >= 0);
    strcpy(un.sun_path, proxy_ctl);
    ASSERT_OK(connect(fd, (struct sockaddr *) &un, sizeof(un)) < 0 ? -errno : 0);
    ASSERT((size_t) write(fd, cmd, strlen(cmd)) == strlen(cmd));
    ASSERT(write(fd, "\n", 1) == 1);
    while (got < sizeof(buf) - 1 && !memchr(buf, '\n', got)) {
        struct pollfd p = { fd, POLLIN, 0 };
        ssize_t r;
        if (poll(&p, 1, 10000) <= 0 || (r = read(fd, buf + got, sizeof(buf) - 1 - got)) <= 0) {
            FAIL("no reply from fault-proxy to '%s'", cmd);
        }
        got += (size_t) r;
    }
    buf[got] = 0;
    close(fd);
    if (strncmp(buf, "ok", 2) != 0) {
        FAIL("fault-proxy refused '%s': %s", cmd, buf);
    }
    if (reply) {
        snprintf(reply, rlen, "%s", buf);
    }
    fprintf(stderr, "# proxy: %s -> %s", cmd, buf);
}

static void proxy_stop(void)
{
    int st;
    if (proxy_pid > 0) {
        proxy_cmd("quit", NULL, 0);
        waitpid(proxy_pid, &st, 0);
        ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        proxy_pid = -1;
    }
}

/* ---- two endpoints in one process ------------------------------------------- */

struct side {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
    struct siwarp_mr *mr;
    struct siwarp_listener *l;
    uint8_t *buf;
    size_t len;
};

struct pair {
    struct side s, c;          /* server (behind the proxy), client */
    uint16_t proxy_port;
};

static void side_init(struct side *x, size_t len)
{
    struct siwarp_qp_init_attr qa = { 0 };

    ASSERT_OK(siwarp_ctx_create(&x->ctx));
    ASSERT_OK(siwarp_alloc_pd(x->ctx, &x->pd));
    ASSERT_OK(siwarp_create_cq(x->ctx, 256, &x->cq));
    x->len = len;
    x->buf = malloc(len);
    ASSERT(x->buf);
    memset(x->buf, 0xEE, len);
    ASSERT_OK(siwarp_reg_mr(x->pd, x->buf, len,
                            SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE |
                            SIWARP_ACCESS_REMOTE_READ, &x->mr));
    qa.send_cq = qa.recv_cq = x->cq;
    qa.max_send_wr = 64;
    qa.max_recv_wr = 64;
    qa.max_sge = 2;
    qa.max_inline = 64;
    qa.sq_sig_all = 1;
    ASSERT_OK(siwarp_create_qp(x->pd, &qa, &x->qp));
}

/* Progress both contexts, sleeping in poll() on their fds up to ms. */
static void pump(struct pair *p, int ms)
{
    struct pollfd f[2] = {
        { siwarp_ctx_fd(p->s.ctx), POLLIN, 0 },
        { siwarp_ctx_fd(p->c.ctx), POLLIN, 0 },
    };
    poll(f, 2, ms);
    siwarp_progress(p->s.ctx);
    siwarp_progress(p->c.ctx);
}

static enum siwarp_qp_state qp_state(struct siwarp_qp *qp, struct siwarp_qp_attr *a)
{
    struct siwarp_qp_attr tmp;
    if (!a) {
        a = &tmp;
    }
    ASSERT_OK(siwarp_query_qp(qp, a));
    return a->state;
}

/* Listener, proxy in front of it, client connects through the proxy,
 * server accepts; both reach RTS.  Receives on the server are posted by the
 * caller afterwards (before any Send is posted). */
static void pair_up(struct pair *p, size_t len, int crc, int llp_ms, const char *rcvbuf)
{
    struct sockaddr_in a = { .sin_family = AF_INET };
    struct sockaddr_storage ss;
    struct siwarp_conn_param cp;
    struct siwarp_conn_req *req = NULL;
    uint64_t t0;

    memset(p, 0, sizeof(*p));
    side_init(&p->s, len);
    side_init(&p->c, len);
    siwarp_conn_param_default(&cp);
    cp.crc = crc;
    cp.llp_timeout_ms = llp_ms;
    cp.mulpdu = 8192;          /* a fixed FPDU layout: flip offsets land alike everywhere */
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_OK(siwarp_listen(p->s.ctx, (struct sockaddr *) &a, sizeof(a), &cp, &p->s.l));
    ASSERT_OK(siwarp_listener_addr(p->s.l, &ss));
    p->proxy_port = proxy_start(ntohs(((struct sockaddr_in *) &ss)->sin_port), rcvbuf);
    a.sin_port = htons(p->proxy_port);
    ASSERT_OK(siwarp_connect(p->c.qp, (struct sockaddr *) &a, sizeof(a), &cp));
    t0 = now_ms();
    while (!req) {
        int rc = siwarp_get_conn_request(p->s.l, &req);
        if (rc == -EAGAIN) {
            ASSERT(now_ms() - t0 < 10000);
            pump(p, 10);
            continue;
        }
        ASSERT_OK(rc);
    }
    ASSERT_OK(siwarp_accept(req, p->s.qp, &cp));
    while (qp_state(p->s.qp, NULL) != SIWARP_QPS_RTS ||
           qp_state(p->c.qp, NULL) != SIWARP_QPS_RTS) {
        ASSERT(now_ms() - t0 < 10000);
        ASSERT(qp_state(p->s.qp, NULL) <= SIWARP_QPS_RTS);
        ASSERT(qp_state(p->c.qp, NULL) <= SIWARP_QPS_RTS);
        pump(p, 10);
    }
}

static void post_recv(struct side *x, uint64_t id, size_t off, size_t len)
{
    struct siwarp_sge sge = { x->buf + off, (uint32_t) len, siwarp_mr_stag(x->mr) };
    struct siwarp_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;
    ASSERT_OK(siwarp_post_recv(x->qp, &wr, &bad));
}

static void post_send(struct side *x, uint64_t id, size_t off, size_t len)
{
    struct siwarp_sge sge = { x->buf + off, (uint32_t) len, siwarp_mr_stag(x->mr) };
    struct siwarp_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
                                 .opcode = SIWARP_WR_SEND,
                                 .send_flags = SIWARP_SEND_SIGNALED }, *bad;
    ASSERT_OK(siwarp_post_send(x->qp, &wr, &bad));
}

/* RDMA Write of the client's buf[0..len) to the server's buf[0..len). */
static void post_write(struct pair *p, uint64_t id, size_t len)
{
    struct siwarp_sge sge = { p->c.buf, (uint32_t) len, siwarp_mr_stag(p->c.mr) };
    struct siwarp_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1,
                                 .opcode = SIWARP_WR_WRITE,
                                 .send_flags = SIWARP_SEND_SIGNALED }, *bad;
    wr.rdma.remote_addr = (uint64_t) (uintptr_t) p->s.buf;
    wr.rdma.rkey = siwarp_mr_stag(p->s.mr);
    ASSERT_OK(siwarp_post_send(p->c.qp, &wr, &bad));
}

/* Collect completions from both CQs until want_s / want_c arrived or ms
 * passed; returns the counts in *ns / *nc. */
static void collect(struct pair *p, struct siwarp_wc *ws, int want_s, int *ns,
                    struct siwarp_wc *wc, int want_c, int *nc, int ms)
{
    uint64_t t0 = now_ms();
    *ns = *nc = 0;
    while ((*ns < want_s || *nc < want_c) && now_ms() - t0 < (uint64_t) ms) {
        int r;
        if (*ns < want_s && (r = siwarp_poll_cq(p->s.cq, want_s - *ns, ws + *ns)) > 0) {
            *ns += r;
        }
        if (*nc < want_c && (r = siwarp_poll_cq(p->c.cq, want_c - *nc, wc + *nc)) > 0) {
            *nc += r;
        }
        pump(p, 10);
    }
}

static void wait_state(struct pair *p, struct side *x, enum siwarp_qp_state st, int ms,
                       struct siwarp_qp_attr *a)
{
    uint64_t t0 = now_ms();
    while (qp_state(x->qp, a) != st) {
        if (now_ms() - t0 > (uint64_t) ms) {
            FAIL("QP still %s after %d ms, wanted %s (error: %s)",
                 siwarp_qp_state_str(a->state), ms, siwarp_qp_state_str(st), a->error_str);
        }
        pump(p, 10);
    }
}

static void pair_down(struct pair *p)
{
    proxy_stop();
    siwarp_destroy_qp(p->s.qp);
    siwarp_destroy_qp(p->c.qp);
    siwarp_listener_destroy(p->s.l);
    siwarp_dereg_mr(p->s.mr);
    siwarp_dereg_mr(p->c.mr);
    siwarp_destroy_cq(p->s.cq);
    siwarp_destroy_cq(p->c.cq);
    siwarp_dealloc_pd(p->s.pd);
    siwarp_dealloc_pd(p->c.pd);
    siwarp_ctx_destroy(p->s.ctx);
    siwarp_ctx_destroy(p->c.ctx);
    free(p->s.buf);
    free(p->c.buf);
}

static void show_wc(const char *who, const struct siwarp_wc *w)
{
    fprintf(stderr, "# %s wc id %llu op %d status %s vendor_err 0x%04x len %u\n", who,
            (unsigned long long) w->wr_id, w->opcode, siwarp_wc_status_str(w->status),
            w->vendor_err, w->byte_len);
}

/* ---- cases ------------------------------------------------------------------- */

#define XFER   (2 * MiB)      /* one Write */
#define NRECV  4               /* server receives posted */
#define RSLOT  (64 * KiB)      /* each receive's slot, after the Write's area */

/* The Write's data lands in s.buf[0..XFER); a Send after it tells the server
 * it is complete.  The flip is placed 1 MiB into the client->server stream,
 * well inside the Write. */
static void flip_case(struct pair *p, int crc)
{
    struct siwarp_wc ws[16], wc[16];
    struct siwarp_qp_attr as, ac;
    int ns, nc;
    char st[512];

    pair_up(p, XFER + NRECV * RSLOT, crc, 0, NULL);
    for (int i = 0; i < NRECV; i++) {
        post_recv(&p->s, 100 + (uint64_t) i, XFER + (size_t) i * RSLOT, RSLOT);
    }
    fill(p->c.buf, XFER + RSLOT, 1);
    proxy_cmd("flip 1048576 1 up", NULL, 0);
    post_write(p, 1, XFER);
    post_send(&p->c, 2, XFER, 64);
    if (crc) {
        /* the receiver: Terminate MPA/CRC sent, ERROR, every receive flushed */
        collect(p, ws, NRECV, &ns, wc, 2, &nc, 20000);
        proxy_cmd("stats", st, sizeof(st));
        ASSERT(strstr(st, "flips=1"));
        for (int i = 0; i < ns; i++) {
            show_wc("server", &ws[i]);
            /* nothing is ever reported as received */
            ASSERT(ws[i].status != SIWARP_WC_SUCCESS);
            ASSERT(ws[i].opcode == SIWARP_WC_RECV);
        }
        ASSERT_EQ(ns, NRECV);
        wait_state(p, &p->s, SIWARP_QPS_ERROR, 10000, &as);
        fprintf(stderr, "# server: %s, term_sent 0x%04x (%s), error '%s'\n",
                siwarp_qp_state_str(as.state), as.term_sent, siwarp_term_str(as.term_sent),
                as.error_str);
        ASSERT_EQ(as.term_sent, SIWARP_TERM_CRC);
        ASSERT(strstr(siwarp_term_str(as.term_sent), "CRC") != NULL);
        /* the sender: the Terminate arrives through the proxy, its QP errors */
        wait_state(p, &p->c, SIWARP_QPS_ERROR, 10000, &ac);
        fprintf(stderr, "# client: %s, term_recv 0x%04x, error '%s'\n",
                siwarp_qp_state_str(ac.state), ac.term_recv, ac.error_str);
        ASSERT_EQ(ac.term_recv, SIWARP_TERM_CRC);
        for (int i = 0; i < nc; i++) {
            show_wc("client", &wc[i]);
        }
        ASSERT_EQ(nc, 2);
        /* work posted after the error completes at once with flush status */
        post_recv(&p->s, 200, XFER, RSLOT);
        post_send(&p->c, 201, XFER, 64);
        collect(p, ws, 1, &ns, wc, 1, &nc, 5000);
        ASSERT_EQ(ns, 1);
        ASSERT_EQ(nc, 1);
        ASSERT_EQ(ws[0].status, SIWARP_WC_WR_FLUSH_ERR);
        ASSERT_EQ(wc[0].status, SIWARP_WC_WR_FLUSH_ERR);
    } else {
        /* CRC off: the flip happens after the sender's TCP checksum was
         * computed and before the receiver's was checked (the proxy
         * re-sends the bytes on a new TCP connection; on loopback the
         * checksum is not even computed).  Nothing below MPA can see it,
         * and MPA without CRC has nothing to check payload bytes against:
         * siwarp delivers the corrupted data and reports success.  This is
         * what MPA CRC is for (RFC 5044 6: TCP's 16-bit checksum is weak
         * and does not cover middleboxes or host memory); the assertion
         * below documents the silent corruption so that a change in it is
         * noticed. */
        long first = -1, nbad = 0;
        collect(p, ws, 1, &ns, wc, 2, &nc, 20000);
        ASSERT_EQ(ns, 1);
        ASSERT_EQ(nc, 2);
        show_wc("server", &ws[0]);
        ASSERT_EQ(ws[0].status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(wc[0].status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(wc[1].status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(qp_state(p->s.qp, &as), SIWARP_QPS_RTS);
        ASSERT_EQ(as.term_sent, 0);
        proxy_cmd("stats", st, sizeof(st));
        ASSERT(strstr(st, "flips=1"));
        for (size_t i = 0; i < XFER; i++) {
            if (p->s.buf[i] != p->c.buf[i]) {
                nbad++;
                if (first < 0) {
                    first = (long) i;
                }
            }
        }
        fprintf(stderr, "# CRC off: %ld byte(s) differ, first at %ld (%02x vs %02x)\n",
                nbad, first, first >= 0 ? p->s.buf[first] : 0,
                first >= 0 ? p->c.buf[first] : 0);
        ASSERT_EQ(nbad, 1);
        /* exactly one bit differs */
        uint8_t x = p->s.buf[first] ^ p->c.buf[first];
        ASSERT(x && !(x & (x - 1)));
    }
    pair_down(p);
}

TEST(flip_crc_on_terminate_crc_both_error_all_flushed)
{
    struct pair p;
    flip_case(&p, 1);
}

TEST(flip_crc_off_goes_undetected_one_bit_silently_wrong)
{
    struct pair p;
    flip_case(&p, 0);
}

/* The proxy ends the connection 1 MiB into a 4 MiB Write. */
/* The Write is far larger than the kernel can buffer between us and the
 * proxy, so it is still on its way when the connection drops (a Write
 * completes once TCP took all of it). */
#define DROP_W (32 * MiB)

static void drop_case(const char *how)
{
    struct pair p;
    struct siwarp_wc ws[16], wc[16];
    struct siwarp_qp_attr as, ac;
    int ns, nc, llp = 0;
    char cmd[64];
    uint64_t t0;

    pair_up(&p, DROP_W + NRECV * RSLOT, 1, 0, NULL);
    for (int i = 0; i < NRECV; i++) {
        post_recv(&p.s, 100 + (uint64_t) i, DROP_W + (size_t) i * RSLOT, RSLOT);
    }
    fill(p.c.buf, DROP_W, 2);
    snprintf(cmd, sizeof(cmd), "drop %s 1048576 up", how);
    proxy_cmd(cmd, NULL, 0);
    t0 = now_ms();
    post_write(&p, 1, DROP_W);
    post_send(&p.c, 2, 0, 64);
    collect(&p, ws, NRECV, &ns, wc, 2, &nc, 20000);
    fprintf(stderr, "# drop %s: completions after %llu ms\n", how,
            (unsigned long long) (now_ms() - t0));
    for (int i = 0; i < ns; i++) {
        show_wc("server", &ws[i]);
        ASSERT(ws[i].status != SIWARP_WC_SUCCESS);
    }
    for (int i = 0; i < nc; i++) {
        show_wc("client", &wc[i]);
        ASSERT(wc[i].status != SIWARP_WC_SUCCESS);
        llp += wc[i].status == SIWARP_WC_LLP_ERR;
    }
    ASSERT_EQ(ns, NRECV);
    ASSERT_EQ(nc, 2);
    /* the WR on the wire fails at the lower layer, the rest is flushed */
    ASSERT_EQ(wc[0].wr_id, 1);
    ASSERT_EQ(wc[0].status, SIWARP_WC_LLP_ERR);
    ASSERT_EQ(wc[1].status, SIWARP_WC_WR_FLUSH_ERR);
    ASSERT_EQ(llp, 1);
    wait_state(&p, &p.s, SIWARP_QPS_ERROR, 5000, &as);
    wait_state(&p, &p.c, SIWARP_QPS_ERROR, 5000, &ac);
    fprintf(stderr, "# server error %d '%s', client error %d '%s'\n", as.error, as.error_str,
            ac.error, ac.error_str);
    ASSERT(ac.error < 0);
    /* a FIN in the middle of an FPDU is not an orderly close either */
    ASSERT(as.error < 0 || strcmp(how, "rst") != 0);
    ASSERT(now_ms() - t0 < 10000);
    pair_down(&p);
}

TEST(drop_rst_mid_transfer_llp_error)
{
    drop_case("rst");
}

TEST(drop_fin_mid_transfer_llp_error)
{
    drop_case("fin");
}

/* Forwarding stops for good 1 MiB into a 64 MiB Write (the proxy's receive
 * buffer is small, so the sender soon faces a zero window).  With
 * llp_timeout_ms = 3000 the sender's TCP_USER_TIMEOUT must end the
 * connection: the QP errors with LLP_ERR within a bound (measured). */
TEST(stall_beyond_llp_timeout_sender_errors_in_bounded_time)
{
    struct pair p;
    struct siwarp_wc ws[8], wc[8];
    struct siwarp_qp_attr as, ac;
    const int llp = 3000;
    int ns, nc;
    uint64_t t0, t_err;
    char st[512];

    pair_up(&p, 64 * MiB, 1, llp, "65536");
    /* one Send through first: the P2P RTR exchange is over, data flows */
    post_recv(&p.s, 99, 0, 64);
    post_send(&p.c, 98, 0, 64);
    collect(&p, ws, 1, &ns, wc, 1, &nc, 10000);
    ASSERT_EQ(ns, 1);
    ASSERT_EQ(nc, 1);
    ASSERT_EQ(ws[0].status, SIWARP_WC_SUCCESS);
    post_recv(&p.s, 100, 0, 64);
    fill(p.c.buf, 1 * MiB, 3);
    proxy_cmd("stall forever", NULL, 0);
    t0 = now_ms();
    post_write(&p, 1, 64 * MiB);
    collect(&p, ws, 0, &ns, wc, 1, &nc, 4 * llp + 20000);
    t_err = now_ms() - t0;
    proxy_cmd("stats", st, sizeof(st));
    ASSERT_EQ(nc, 1);
    show_wc("client", &wc[0]);
    ASSERT_EQ(wc[0].status, SIWARP_WC_LLP_ERR);
    ASSERT_EQ(qp_state(p.c.qp, &ac), SIWARP_QPS_ERROR);
    fprintf(stderr, "# stall: sender QP in ERROR %llu ms after the stall (llp_timeout_ms "
            "%d): '%s'\n", (unsigned long long) t_err, llp, ac.error_str);
    /* TCP_USER_TIMEOUT counts from the last ACK that moved the window; the
     * zero-window probes then need up to one more backoff interval */
    ASSERT(t_err >= (uint64_t) llp - 500);
    ASSERT(t_err <= (uint64_t) 4 * llp);
    /* The receiver sits idle behind a live proxy whose kernel still answers
     * its keepalives, so it cannot tell; once forwarding resumes the proxy
     * finds the sender's socket gone and passes the reset on. */
    qp_state(p.s.qp, &as);
    fprintf(stderr, "# receiver during the stall: %s\n", siwarp_qp_state_str(as.state));
    proxy_cmd("resume", NULL, 0);
    t0 = now_ms();
    collect(&p, ws, 1, &ns, wc, 0, &nc, 10000);
    ASSERT_EQ(ns, 1);
    ASSERT(ws[0].status != SIWARP_WC_SUCCESS);
    wait_state(&p, &p.s, SIWARP_QPS_ERROR, 10000, &as);
    fprintf(stderr, "# receiver in ERROR %llu ms after resume: '%s'\n",
            (unsigned long long) (now_ms() - t0), as.error_str);
    pair_down(&p);
}

/* The proxy stalls right after the MPA exchange, before the responder's
 * answer to the P2P RTR reaches the initiator.  The initiator's QP is RTS
 * but holds its sends until the RTR is answered; nothing is in flight and
 * the proxy's kernel answers keepalives, so no TCP timer can fire.  The
 * RTR wait is bounded by conn_param.timeout_ms (10 s default): then the QP
 * errors and the Send is flushed.  (Found by this test; fixed in qp_tx.c.) */
TEST(stall_during_p2p_rtr_exchange_held_send_completes_in_bounded_time)
{
    struct pair p;
    struct siwarp_wc ws[4], wc[4];
    int ns, nc;
    uint64_t t0;

    pair_up(&p, 1 * MiB, 1, 3000, NULL);
    proxy_cmd("stall forever", NULL, 0);
    t0 = now_ms();
    post_send(&p.c, 1, 0, 64);
    collect(&p, ws, 0, &ns, wc, 1, &nc, 30000);
    fprintf(stderr, "# held Send: %d completion(s) after %llu ms\n", nc,
            (unsigned long long) (now_ms() - t0));
    ASSERT_EQ(nc, 1);
    ASSERT(wc[0].status != SIWARP_WC_SUCCESS);
    ASSERT(now_ms() - t0 < 20000);
    pair_down(&p);
}

/* 20 ms per 16 KiB chunk both ways, llp_timeout_ms 3000: slow, never an
 * error, every byte right (Write + Sends of several sizes, both ways). */
TEST(delay_per_chunk_transfers_complete_intact)
{
    struct pair p;
    struct siwarp_wc ws[16], wc[16];
    const size_t sizes[] = { 0, 1, 4095, 16385, 60000 };
    const int nsz = (int) (sizeof(sizes) / sizeof(sizes[0]));
    const size_t W = 1 * MiB, R0 = W;       /* recv slots after the Write area */
    int ns, nc;
    uint64_t t0;

    pair_up(&p, W + 8 * RSLOT, 1, 3000, NULL);
    proxy_cmd("delay 20", NULL, 0);
    for (int i = 0; i < nsz; i++) {
        post_recv(&p.s, 100 + (uint64_t) i, R0 + (size_t) i * RSLOT, RSLOT);
    }
    fill(p.c.buf, W + 8 * RSLOT, 4);
    t0 = now_ms();
    post_write(&p, 1, W);
    for (int i = 0; i < nsz; i++) {
        post_send(&p.c, 10 + (uint64_t) i, R0 + (size_t) i * RSLOT, sizes[i]);
    }
    collect(&p, ws, nsz, &ns, wc, nsz + 1, &nc, 60000);
    fprintf(stderr, "# delay: %d + %d completions in %llu ms\n", ns, nc,
            (unsigned long long) (now_ms() - t0));
    ASSERT_EQ(ns, nsz);
    ASSERT_EQ(nc, nsz + 1);
    for (int i = 0; i < nc; i++) {
        ASSERT_EQ(wc[i].status, SIWARP_WC_SUCCESS);
    }
    for (int i = 0; i < ns; i++) {
        ASSERT_EQ(ws[i].status, SIWARP_WC_SUCCESS);
        ASSERT_EQ(ws[i].wr_id, 100 + (uint64_t) i);
        ASSERT_EQ(ws[i].byte_len, sizes[i]);
        ASSERT_MEM_EQ(p.s.buf + R0 + (size_t) i * RSLOT, p.c.buf + R0 + (size_t) i * RSLOT,
                      sizes[i]);
    }
    ASSERT_MEM_EQ(p.s.buf, p.c.buf, W);
    /* 1 MiB at 16 KiB / 20 ms cannot be faster than ~1.2 s: the delay applied */
    ASSERT(now_ms() - t0 >= 1000);
    ASSERT_EQ(qp_state(p.s.qp, NULL), SIWARP_QPS_RTS);
    ASSERT_EQ(qp_state(p.c.qp, NULL), SIWARP_QPS_RTS);
    pair_down(&p);
}

SWP_TEST_MAIN()
