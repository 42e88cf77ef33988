/*
 * siwarp-perf - latency and bandwidth of libsiwarp Send, RDMA Write and
 * RDMA Read between two processes, in the manner of perftest's
 * ib_{send,write,read}_{lat,bw}; plus a plain TCP ping-pong / stream mode
 * (--tcp) for a side-by-side baseline.
 *
 *   siwarp-perf -s [-a ADDR] [-p PORT] [--crc] [--markers] [--once]
 *   siwarp-perf -c HOST [-p PORT] -t send|write|read|mix -m lat|bw
 *               [-z SIZE | -A [-M MAX]] [-n ITERS] [-w WINDOW]
 *               [--crc] [--markers] [--mpa 1|2] [--p2p read|write|none] [--json]
 *   siwarp-perf --tcp -s | --tcp -c HOST ...   plain TCP, busy-polling, TCP_NODELAY
 *
 * The client tells the server everything in the MPA Request private data
 * (test, mode, sizes, iterations, window, its buffer and STag); the server
 * answers with its own buffer and STag in the Reply.  The server prints
 * "listening port=N" on stdout once it listens (readiness for scripts).
 *
 * Data is verified on the first and on one extra, untimed last iteration
 * (which uses a second pattern so stale data cannot pass).  Latency: Send
 * ping-pong; Write ping-pong polling the last byte of the buffer (like
 * ib_write_lat); Read: one outstanding Read at a time.  Bandwidth: WINDOW
 * operations in flight; Sends flow-controlled by credits from the receiver;
 * Writes end with a DONE/ACK exchange so the time covers remote placement.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <setjmp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "siwarp/siwarp.h"

enum { T_SEND, T_WRITE, T_READ, T_MIX };
enum { M_LAT, M_BW };
enum { P2P_NONE, P2P_READ, P2P_WRITE };

struct opts {
    int server, once, tcp, json;
    const char *host, *bind_addr;
    uint16_t port;
    int test, mode, all;
    uint64_t size, max;
    uint32_t iters, window;
    int crc, markers, mpa, p2p;
    int timeout_s;
    uint32_t big_fpdu;      /* 0: FPDUs fit the MSS */
};

/* MPA private data of the Request (client) and the Reply (server), big-endian */
#define PERF_MAGIC 0x53575046u            /* "SWPF" */
struct perf_pd {
    uint32_t magic;
    uint8_t version, test, mode, all;
    uint32_t iters, window;
    uint64_t size, max;
    uint64_t addr;        /* receive area; the source area follows buf_unit(max) later */
    uint32_t stag;
    uint32_t inv1, inv2;  /* -t mix: STags the client may invalidate */
    uint32_t pad;
};

#define SEED_CLI  0x11c11c11ULL
#define SEED_SRV  0x5e575e57ULL
#define SEED_LAST 0x1a571a57ULL           /* the extra verification iteration */

static jmp_buf *srv_jmp;        /* server: a failed connection ends only that one */

static struct opts o = {
    .port = 18515, .test = T_SEND, .mode = M_LAT, .mpa = 2, .window = 64,
    .max = 64u << 20, .timeout_s = 600,
};

static const char *const test_name[] = { "send", "write", "read", "mix" };
static const char *const mode_name[] = { "lat", "bw" };

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fprintf(stderr, "siwarp-perf: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    if (srv_jmp)
        longjmp(*srv_jmp, 1);
    exit(1);
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* ---- data pattern: byte i of stream `seed` is a function of (seed, i) ------ */

static uint64_t mix64(uint64_t seed, uint64_t k)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ULL + k * 0xbf58476d1ce4e5b9ULL + 1;

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void pat_fill(uint8_t *p, uint64_t len, uint64_t seed)
{
    uint64_t i;

    for (i = 0; i + 8 <= len; i += 8) {
        uint64_t v = mix64(seed, i >> 3);
        memcpy(p + i, &v, 8);
    }
    if (i < len) {
        uint64_t v = mix64(seed, i >> 3);
        memcpy(p + i, &v, (size_t)(len - i));
    }
}

/* 0 if p[0..len) holds the pattern, else die with the offset */
static void pat_verify(const uint8_t *p, uint64_t len, uint64_t seed, const char *what)
{
    uint64_t i;

    for (i = 0; i + 8 <= len; i += 8) {
        uint64_t v = mix64(seed, i >> 3);
        if (memcmp(p + i, &v, 8) != 0)
            break;
    }
    for (; i < len; i++) {
        uint64_t v = mix64(seed, i >> 3);
        if (p[i] != (uint8_t)(v >> ((i & 7) * 8)))
            die("data verification failed: %s, byte %llu of %llu is 0x%02x, expected 0x%02x",
                what, (unsigned long long)i, (unsigned long long)len, p[i],
                (uint8_t)(v >> ((i & 7) * 8)));
    }
}

/* ---- sizes and iteration counts, computed alike on both sides ---------------- */

static int size_list(const struct perf_pd *pd, uint64_t *out)
{
    int n = 0;

    if (!pd->all) {
        out[n++] = pd->size;
        return n;
    }
    for (uint64_t s = 1; s <= pd->max && n < 40; s <<= 1)
        out[n++] = s;
    return n;
}

static uint32_t iters_for(const struct perf_pd *pd, uint64_t size)
{
    uint64_t n;

    if (pd->iters)
        return pd->iters;
    if (pd->mode == M_LAT)
        n = size ? (256ULL << 20) / size : 1000;     /* ~256 MiB per size */
    else
        n = size ? (1ULL << 30) / size : 100000;     /* ~1 GiB per size */
    if (n > (pd->mode == M_LAT ? 1000 : 20000))
        n = pd->mode == M_LAT ? 1000 : 20000;
    if (n < 8)
        n = 8;
    return (uint32_t)n;
}

static uint64_t buf_unit(uint64_t max)
{
    uint64_t u = max < 64 ? 64 : max;

    return (u + 4095) & ~4095ULL;
}

static void pd_hton(struct perf_pd *w, const struct perf_pd *h)
{
    *w = *h;
    w->magic = htonl(h->magic);
    w->iters = htonl(h->iters);
    w->window = htonl(h->window);
    w->size = htobe64(h->size);
    w->max = htobe64(h->max);
    w->addr = htobe64(h->addr);
    w->stag = htonl(h->stag);
    w->inv1 = htonl(h->inv1);
    w->inv2 = htonl(h->inv2);
}

static void pd_ntoh(struct perf_pd *h, const struct perf_pd *w)
{
    *h = *w;
    h->magic = ntohl(w->magic);
    h->iters = ntohl(w->iters);
    h->window = ntohl(w->window);
    h->size = be64toh(w->size);
    h->max = be64toh(w->max);
    h->addr = be64toh(w->addr);
    h->stag = ntohl(w->stag);
    h->inv1 = ntohl(w->inv1);
    h->inv2 = ntohl(w->inv2);
}

/* ---- results ----------------------------------------------------------------------- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int header_done;

static void report_lat(const char *label, uint64_t size, uint32_t n, double *t)
{
    double sum = 0;

    qsort(t, n, sizeof(*t), cmp_d);
    for (uint32_t i = 0; i < n; i++)
        sum += t[i];
    double med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    double p99 = t[(uint32_t)((n - 1) * 0.99)];
    if (o.json) {
        printf("{\"test\":\"%s\",\"mode\":\"lat\",\"bytes\":%llu,\"iters\":%u,"
               "\"t_min_us\":%.3f,\"t_median_us\":%.3f,\"t_avg_us\":%.3f,"
               "\"t_p99_us\":%.3f,\"t_max_us\":%.3f}\n", label,
               (unsigned long long)size, n, t[0], med, sum / n, p99, t[n - 1]);
    } else {
        if (!header_done++)
            printf(" %-10s %-12s %-12s %-12s %-12s %-12s %-12s\n", "#bytes",
                   "#iterations", "t_min[us]", "t_median[us]", "t_avg[us]",
                   "t_p99[us]", "t_max[us]");
        printf(" %-10llu %-12u %-12.2f %-12.2f %-12.2f %-12.2f %-12.2f\n",
               (unsigned long long)size, n, t[0], med, sum / n, p99, t[n - 1]);
    }
    fflush(stdout);
}

static void report_bw(const char *label, uint64_t size, uint32_t n, double us)
{
    double mbs = us > 0 ? (double)size * n / us : 0;          /* bytes/us = MB/s */
    double mpps = us > 0 ? n / us : 0;

    if (o.json) {
        printf("{\"test\":\"%s\",\"mode\":\"bw\",\"bytes\":%llu,\"iters\":%u,"
               "\"bw_MBps\":%.2f,\"msg_rate_Mpps\":%.6f}\n", label,
               (unsigned long long)size, n, mbs, mpps);
    } else {
        if (!header_done++)
            printf(" %-10s %-12s %-16s %-16s\n", "#bytes", "#iterations",
                   "BW average[MB/s]", "MsgRate[Mpps]");
        printf(" %-10llu %-12u %-16.2f %-16.6f\n", (unsigned long long)size, n, mbs, mpps);
    }
    fflush(stdout);
}

/* ---- command line ------------------------------------------------------------------- */

static uint64_t parse_size(const char *s)
{
    char *end;
    uint64_t v = strtoull(s, &end, 0);

    switch (*end) {
    case 'k': case 'K': v <<= 10; break;
    case 'm': case 'M': v <<= 20; break;
    case 'g': case 'G': v <<= 30; break;
    case 0: break;
    default: die("bad size '%s'", s);
    }
    return v;
}

static void usage(void)
{
    fprintf(stderr,
"usage: siwarp-perf -s [-a ADDR] [-p PORT] [--crc] [--markers] [--once] [--tcp]\n"
"       siwarp-perf -c HOST [-p PORT] [-t send|write|read|mix] [-m lat|bw]\n"
"                   [-z SIZE | -A [-M MAX]] [-n ITERS] [-w WINDOW] [--crc] [--markers]\n"
"                   [--mpa 1|2] [--p2p read|write|none] [--big-fpdu N] [--json] [--tcp]\n"
"  -p 0 on the server picks a free port; it prints 'listening port=N'.\n"
"  -n 0 (default) picks iterations per size; -A runs 1 B .. MAX (default 64M).\n"
"  --big-fpdu N: offer FPDUs up to N octets to a siwarp peer (2048..65535;\n"
"          the MPI BTL's default is 65535); without it FPDUs fit the MSS.\n"
"  --tcp: plain TCP ping-pong (lat) or stream (bw) with TCP_NODELAY, busy-poll.\n"
"  -t mix: one of each RDMAP opcode (Send, Send+SE, Send+Inv, Send+SE+Inv,\n"
"          Write, Read), for wire captures.\n");
    exit(2);
}

static void parse(int argc, char **argv)
{
    enum { O_CRC = 256, O_MARKERS, O_MPA, O_P2P, O_JSON, O_TCP, O_ONCE, O_TIMEOUT, O_BIG };
    static const struct option lo[] = {
        { "server", no_argument, NULL, 's' }, { "client", required_argument, NULL, 'c' },
        { "addr", required_argument, NULL, 'a' }, { "port", required_argument, NULL, 'p' },
        { "test", required_argument, NULL, 't' }, { "mode", required_argument, NULL, 'm' },
        { "size", required_argument, NULL, 'z' }, { "all", no_argument, NULL, 'A' },
        { "max", required_argument, NULL, 'M' }, { "iters", required_argument, NULL, 'n' },
        { "window", required_argument, NULL, 'w' }, { "crc", no_argument, NULL, O_CRC },
        { "markers", no_argument, NULL, O_MARKERS }, { "mpa", required_argument, NULL, O_MPA },
        { "p2p", required_argument, NULL, O_P2P }, { "json", no_argument, NULL, O_JSON },
        { "tcp", no_argument, NULL, O_TCP }, { "once", no_argument, NULL, O_ONCE },
        { "timeout", required_argument, NULL, O_TIMEOUT },
        { "big-fpdu", required_argument, NULL, O_BIG },
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
    };
    int c, have_size = 0;

    while ((c = getopt_long(argc, argv, "sc:a:p:t:m:z:AM:n:w:h", lo, NULL)) != -1) {
        switch (c) {
        case 's': o.server = 1; break;
        case 'c': o.host = optarg; break;
        case 'a': o.bind_addr = optarg; break;
        case 'p': o.port = (uint16_t)atoi(optarg); break;
        case 't':
            for (o.test = 0; o.test < 4 && strcmp(optarg, test_name[o.test]); o.test++)
                ;
            if (o.test == 4)
                die("-t: send, write, read or mix");
            break;
        case 'm':
            if (!strcmp(optarg, "lat")) o.mode = M_LAT;
            else if (!strcmp(optarg, "bw")) o.mode = M_BW;
            else die("-m: lat or bw");
            break;
        case 'z': o.size = parse_size(optarg); have_size = 1; break;
        case 'A': o.all = 1; break;
        case 'M': o.max = parse_size(optarg); break;
        case 'n': o.iters = (uint32_t)strtoul(optarg, NULL, 0); break;
        case 'w': o.window = (uint32_t)strtoul(optarg, NULL, 0); break;
        case O_CRC: o.crc = 1; break;
        case O_MARKERS: o.markers = 1; break;
        case O_MPA: o.mpa = atoi(optarg); if (o.mpa != 1 && o.mpa != 2) die("--mpa 1|2"); break;
        case O_P2P:
            if (!strcmp(optarg, "read")) o.p2p = P2P_READ;
            else if (!strcmp(optarg, "write")) o.p2p = P2P_WRITE;
            else if (!strcmp(optarg, "none")) o.p2p = P2P_NONE;
            else die("--p2p read|write|none");
            break;
        case O_JSON: o.json = 1; break;
        case O_TCP: o.tcp = 1; break;
        case O_ONCE: o.once = 1; break;
        case O_TIMEOUT: o.timeout_s = atoi(optarg); break;
        case O_BIG:
            o.big_fpdu = (uint32_t)strtoul(optarg, NULL, 0);
            if (o.big_fpdu < 2048 || o.big_fpdu > 65535)
                die("--big-fpdu: 2048..65535");
            break;
        default: usage();
        }
    }
    if (optind != argc || o.server == !!o.host)
        usage();
    if (!have_size)
        o.size = o.mode == M_LAT ? 8 : 65536;
    if (o.window < 1 || o.window > 1024)
        die("-w: 1..1024");
    if (!o.all)
        o.max = o.size;
    if (o.max > (1ULL << 30))
        die("sizes up to 1 GiB");
    if (o.test == T_WRITE && o.mode == M_LAT && !o.all && o.size == 0)
        die("write latency polls the last byte: size must be >= 1");
}

/* ---- addresses ------------------------------------------------------------------------ */

static socklen_t resolve(const char *host, uint16_t port, int passive, struct sockaddr_storage *ss)
{
    struct addrinfo hints = { 0 }, *ai;
    char ps[8];
    int rc;
    socklen_t len;

    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    snprintf(ps, sizeof(ps), "%u", port);
    rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc)
        die("%s: %s", host ? host : "(any)", gai_strerror(rc));
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return len;
}

static uint16_t ss_port(const struct sockaddr_storage *ss)
{
    return ntohs(ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
                                           : ((const struct sockaddr_in *)ss)->sin_port);
}

/* ---- libsiwarp endpoint ----------------------------------------------------------- */

#define CTRL_AREA   4096
#define CTRL_SLOT   64
#define CTRL_NRECV  32          /* recv slots 0..31, send slots 32..63 */
#define SIG_EVERY   16
#define CTRL_MAGIC  0x53574343u
enum { C_CREDIT = 1, C_DONE, C_ACK };
enum { WR_DATA = 1, WR_CTRL_RECV, WR_CTRL_SEND, WR_DATA_RECV };
#define WRID(k, n)  (((uint64_t)(n) << 8) | (k))

struct ctrl_msg {
    uint32_t magic, kind;
    uint64_t val;
};

struct ep {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *qp;
    struct siwarp_mr *mr, *inv1, *inv2;
    uint8_t *base, *rx, *tx;
    uint64_t unit;
    size_t len;
    uint32_t lkey;
    struct perf_pd me, peer;          /* host order */
    uint64_t peer_rx, peer_tx;
    struct siwarp_qp_attr attr;
    unsigned ctrl_next;
    uint64_t data_done;               /* data WRs completed (index of last + 1) */
    uint64_t nrecv, credits;
    uint32_t last_len, last_flags, last_inv;
    int done_msgs, acks;
    uint64_t done_size;
    int own_ctx;
    int passive;                      /* server after its schedule: flushes are normal */
};

static uint32_t credit_depth(const struct perf_pd *pd)
{
    uint32_t r = 2 * pd->window;
    return r < 2 ? 2 : r > 512 ? 512 : r;
}

/* ctx: the listener's context on the server (a QP accepted from a listener
 * must live in its context), NULL on the client: a context of our own */
static void ep_init(struct ep *e, uint64_t max, uint32_t window, struct siwarp_ctx *ctx)
{
    struct siwarp_qp_init_attr qa;
    int rc;

    memset(e, 0, sizeof(*e));
    e->unit = buf_unit(max);
    e->len = CTRL_AREA + 2 * e->unit;
    e->base = mmap(NULL, e->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (e->base == MAP_FAILED)
        die("mmap %zu bytes: %s", e->len, strerror(errno));
    e->rx = e->base + CTRL_AREA;
    e->tx = e->rx + e->unit;
    e->own_ctx = !ctx;
    e->ctx = ctx;
    if ((!ctx && (rc = siwarp_ctx_create(&e->ctx)) < 0) ||
        (rc = siwarp_alloc_pd(e->ctx, &e->pd)) < 0)
        die("context / PD: %s", strerror(-rc));
    rc = siwarp_reg_mr(e->pd, e->base, e->len, SIWARP_ACCESS_LOCAL_WRITE |
                       SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_READ, &e->mr);
    if (rc < 0)
        die("siwarp_reg_mr %zu bytes: %s", e->len, strerror(-rc));
    e->lkey = siwarp_mr_stag(e->mr);
    if ((rc = siwarp_create_cq(e->ctx, 8192, &e->cq)) < 0)
        die("siwarp_create_cq: %s", strerror(-rc));
    memset(&qa, 0, sizeof(qa));
    qa.send_cq = qa.recv_cq = e->cq;
    qa.max_send_wr = window + 2 * SIG_EVERY + 64;
    qa.max_recv_wr = 2 * window + CTRL_NRECV + 64;
    qa.max_sge = 1;
    if ((rc = siwarp_create_qp(e->pd, &qa, &e->qp)) < 0)
        die("siwarp_create_qp: %s", strerror(-rc));
}

static void ep_fini(struct ep *e)
{
    if (e->qp)
        siwarp_destroy_qp(e->qp);
    if (e->cq)
        siwarp_destroy_cq(e->cq);
    if (e->inv1)
        siwarp_dereg_mr(e->inv1);
    if (e->inv2)
        siwarp_dereg_mr(e->inv2);
    if (e->mr)
        siwarp_dereg_mr(e->mr);
    if (e->pd)
        siwarp_dealloc_pd(e->pd);
    if (e->ctx && e->own_ctx)
        siwarp_ctx_destroy(e->ctx);
    if (e->base)
        munmap(e->base, e->len);
    memset(e, 0, sizeof(*e));
}

static void post_recv(struct ep *e, uint64_t wr_id, void *addr, uint32_t len)
{
    struct siwarp_sge sge = { addr, len, e->lkey };
    struct siwarp_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;
    int rc = siwarp_post_recv(e->qp, &wr, &bad);

    if (rc < 0)
        die("siwarp_post_recv: %s", strerror(-rc));
}

static void post_ctrl_recv(struct ep *e, int slot)
{
    post_recv(e, WRID(WR_CTRL_RECV, slot), e->base + slot * CTRL_SLOT, CTRL_SLOT);
}

static void post_op(struct ep *e, enum siwarp_wr_opcode op, uint64_t idx, void *addr,
                    uint64_t len, uint64_t raddr, uint32_t inv, int flags)
{
    struct siwarp_sge sge = { addr, (uint32_t)len, e->lkey };
    struct siwarp_send_wr wr = { .wr_id = WRID(WR_DATA, idx), .sg_list = &sge,
                                 .num_sge = 1, .opcode = op, .send_flags = flags,
                                 .invalidate_stag = inv }, *bad;
    int rc;

    wr.rdma.remote_addr = raddr;
    wr.rdma.rkey = e->peer.stag;
    rc = siwarp_post_send(e->qp, &wr, &bad);
    if (rc < 0)
        die("siwarp_post_send (opcode %d, %llu bytes): %s", op, (unsigned long long)len,
            strerror(-rc));
}

static void send_ctrl(struct ep *e, uint32_t kind, uint64_t val)
{
    int slot = CTRL_NRECV + (int)(e->ctrl_next++ % CTRL_NRECV);
    struct ctrl_msg m = { CTRL_MAGIC, kind, val };
    struct siwarp_sge sge = { e->base + slot * CTRL_SLOT, sizeof(m), e->lkey };
    struct siwarp_send_wr wr = { .wr_id = WRID(WR_CTRL_SEND, slot), .sg_list = &sge,
                                 .num_sge = 1, .opcode = SIWARP_WR_SEND,
                                 .send_flags = SIWARP_SEND_SIGNALED }, *bad;
    int rc;

    memcpy(sge.addr, &m, sizeof(m));
    if ((rc = siwarp_post_send(e->qp, &wr, &bad)) < 0)
        die("siwarp_post_send (control): %s", strerror(-rc));
}

static void handle(struct ep *e, const struct siwarp_wc *wc)
{
    unsigned kind = (unsigned)(wc->wr_id & 0xff);
    uint64_t num = wc->wr_id >> 8;

    if (wc->status == SIWARP_WC_WR_FLUSH_ERR && e->passive)
        return;                 /* the client closed: our receives are flushed */
    if (wc->status != SIWARP_WC_SUCCESS) {
        siwarp_query_qp(e->qp, &e->attr);
        die("completion error: %s (wr kind %u #%llu, vendor_err %#x %s); QP %s: %s",
            siwarp_wc_status_str(wc->status), kind, (unsigned long long)num,
            wc->vendor_err, wc->vendor_err ? siwarp_term_str(wc->vendor_err) : "",
            siwarp_qp_state_str(e->attr.state), e->attr.error_str);
    }
    switch (kind) {
    case WR_DATA:
        e->data_done = num + 1;
        break;
    case WR_DATA_RECV:
        e->nrecv++;
        e->last_len = wc->byte_len;
        e->last_flags = wc->wc_flags;
        e->last_inv = wc->invalidated_stag;
        break;
    case WR_CTRL_RECV: {
        struct ctrl_msg m;
        memcpy(&m, e->base + num * CTRL_SLOT, sizeof(m));
        post_ctrl_recv(e, (int)num);
        if (m.magic != CTRL_MAGIC)
            die("bad control message");
        if (m.kind == C_CREDIT)
            e->credits += m.val;
        else if (m.kind == C_DONE)
            e->done_msgs++, e->done_size = m.val;
        else if (m.kind == C_ACK)
            e->acks++;
        break;
    }
    default:
        break;
    }
}

/* Poll and handle completions once; returns the number handled. */
static int poll_once(struct ep *e)
{
    struct siwarp_wc wc[16];
    int n = siwarp_poll_cq(e->cq, 16, wc);

    if (n < 0)
        die("siwarp_poll_cq: %s", strerror(-n));
    for (int i = 0; i < n; i++)
        handle(e, &wc[i]);
    return n;
}

/* Spin until *cond changes, checking the connection now and then. */
#define WAIT_UNTIL(e, cond) do { \
        unsigned spins_ = 0; \
        while (!(cond)) { \
            if (poll_once(e) == 0 && ++spins_ % 65536 == 0) check_alive(e); \
        } \
    } while (0)

static void check_alive(struct ep *e)
{
    siwarp_query_qp(e->qp, &e->attr);
    if (e->attr.state != SIWARP_QPS_RTS)
        die("connection left RTS (%s): %s", siwarp_qp_state_str(e->attr.state),
            e->attr.error_str);
}

static void conn_param(struct siwarp_conn_param *p)
{
    siwarp_conn_param_default(p);
    p->mpa_rev = o.mpa;
    p->crc = o.crc;
    p->markers = o.markers;
    p->p2p = o.p2p != P2P_NONE;
    p->rtr = o.p2p == P2P_READ ? SIWARP_RTR_READ : o.p2p == P2P_WRITE ? SIWARP_RTR_WRITE : 0;
    p->ird = p->ord = 64;
    p->big_fpdu = o.big_fpdu;
}

static void print_conn(struct ep *e, const char *who)
{
    struct siwarp_qp_attr *a = &e->attr;

    siwarp_query_qp(e->qp, a);
    fprintf(o.json ? stderr : stdout,
            "# %s: %s %s, MPA rev %d, CRC %s, markers %s, P2P %s%s, IRD/ORD %u/%u, "
            "MULPDU %u, CRC32c %s\n", who, test_name[e->me.test], mode_name[e->me.mode],
            a->mpa_rev, a->crc ? "on" : "off", a->markers ? "on" : "off",
            a->p2p ? "on" : "off", !a->p2p ? "" : a->rtr == SIWARP_RTR_READ ? " (Read RTR)" :
            a->rtr == SIWARP_RTR_WRITE ? " (Write RTR)" : " (?)", a->ird, a->ord, a->mulpdu,
            siwarp_crc32c_impl());
    fflush(stdout);
}

/* v(i): the last-byte marker of Write-latency iteration i, never 0 */
static uint8_t mark(uint32_t i) { return (uint8_t)(i % 255 + 1); }

static void sync_tx(struct ep *e, uint64_t s, uint64_t seed)
{
    pat_fill(e->tx, s, seed);
}

/* ---- client tests -------------------------------------------------------------------- */

static void run_lat(struct ep *e, uint64_t s, uint32_t n)
{
    double *t = calloc(n, sizeof(double));
    int test = e->me.test;
    volatile uint8_t *last = e->rx + (s ? s - 1 : 0);
    uint64_t raddr;

    if (!t)
        die("out of memory");
    for (uint32_t i = 0; i <= n; i++) {
        int flags = (i % SIG_EVERY == SIG_EVERY - 1 || i == n) ? SIWARP_SEND_SIGNALED : 0;
        uint64_t seed = i == n ? SEED_LAST : SEED_CLI;
        double t0;

        if (i == n && test != T_READ)
            sync_tx(e, s, SEED_LAST);
        if (test == T_WRITE)
            e->tx[s - 1] = mark(i);
        if (i == n && test == T_READ)
            memset(e->rx, 0, s);
        t0 = now_us();
        if (test == T_SEND) {
            uint64_t want = e->nrecv + 1;
            post_op(e, SIWARP_WR_SEND, i, e->tx, s, 0, 0, flags);
            WAIT_UNTIL(e, e->nrecv >= want);
            if (i < n)
                t[i] = now_us() - t0;
            if (e->last_len != s)
                die("Send latency: received %u bytes, expected %llu", e->last_len,
                    (unsigned long long)s);
            post_recv(e, WRID(WR_DATA_RECV, 0), e->rx, (uint32_t)e->unit);
            seed = i == n ? SEED_LAST : SEED_SRV;
        } else if (test == T_WRITE) {
            raddr = e->peer_rx;
            post_op(e, SIWARP_WR_WRITE, i, e->tx, s, raddr, 0, flags);
            WAIT_UNTIL(e, *last == mark(i));
            if (i < n)
                t[i] = now_us() - t0;
            seed = i == n ? SEED_LAST : SEED_SRV;
        } else {
            post_op(e, SIWARP_WR_READ, i, e->rx, s, e->peer_tx, 0, SIWARP_SEND_SIGNALED);
            WAIT_UNTIL(e, e->data_done >= (uint64_t)i + 1);
            if (i < n)
                t[i] = now_us() - t0;
            seed = SEED_SRV;
        }
        if (i == 0 || i == n)
            pat_verify(e->rx, test == T_WRITE ? s - 1 : s, seed, i ? "last iteration" :
                       "first iteration");
    }
    /* wait for the final signaled send completion so the SQ is empty */
    WAIT_UNTIL(e, e->data_done >= (uint64_t)n + 1);
    sync_tx(e, s, SEED_CLI);
    e->data_done = 0;
    report_lat(test_name[test], s, n, t);
    free(t);
}

static void run_bw(struct ep *e, uint64_t s, uint32_t n)
{
    int test = e->me.test;
    uint32_t win = e->me.window, sig;
    uint64_t posted = 0, R = credit_depth(&e->me), acked0 = e->credits;
    double t0, t1;

    if (test == T_READ && e->attr.ord && win > e->attr.ord)
        win = e->attr.ord;
    sig = win / 2 > SIG_EVERY ? SIG_EVERY : win / 2 ? win / 2 : 1;
    if (test == T_READ)
        memset(e->rx, 0, s);
    e->data_done = 0;
    t0 = now_us();
    while (test == T_SEND ? e->credits - acked0 < n : e->data_done < n) {
        while (posted < n && posted - e->data_done < win &&
               (test != T_SEND || posted - (e->credits - acked0) < R)) {
            int flags = (posted % sig == sig - 1 || posted == n - 1) ? SIWARP_SEND_SIGNALED : 0;
            if (test == T_SEND)
                post_op(e, SIWARP_WR_SEND, posted, e->tx, s, 0, 0, flags);
            else if (test == T_WRITE)
                post_op(e, SIWARP_WR_WRITE, posted, e->tx, s, e->peer_rx, 0, flags);
            else
                post_op(e, SIWARP_WR_READ, posted, e->rx, s, e->peer_tx, 0, flags);
            posted++;
        }
        poll_once(e);
    }
    if (test == T_WRITE) {
        int acks = e->acks;
        send_ctrl(e, C_DONE, s);
        WAIT_UNTIL(e, e->acks > acks);
    }
    t1 = now_us();
    WAIT_UNTIL(e, e->data_done >= n);
    if (test == T_READ)
        pat_verify(e->rx, s, SEED_SRV, "Read data");
    report_bw(test_name[test], s, n, t1 - t0);
}

static void run_mix(struct ep *e, uint64_t s)
{
    static const enum siwarp_wr_opcode ops[] = {
        SIWARP_WR_SEND, SIWARP_WR_SEND_SE, SIWARP_WR_SEND_INV, SIWARP_WR_SEND_SE_INV,
        SIWARP_WR_WRITE, SIWARP_WR_READ,
    };
    for (int i = 0; i < 6; i++) {
        uint32_t inv = ops[i] == SIWARP_WR_SEND_INV ? e->peer.inv1 :
                       ops[i] == SIWARP_WR_SEND_SE_INV ? e->peer.inv2 : 0;
        uint64_t raddr = ops[i] == SIWARP_WR_READ ? e->peer_tx : e->peer_rx;
        post_op(e, ops[i], (uint64_t)i, ops[i] == SIWARP_WR_READ ? e->rx : e->tx, s, raddr,
                inv, SIWARP_SEND_SIGNALED);
    }
    WAIT_UNTIL(e, e->data_done >= 6);
    pat_verify(e->rx, s, SEED_SRV, "mix Read");
    if (!o.json)
        printf(" mix: Send, Send+SE, Send+Inv, Send+SE+Inv, Write, Read of %llu bytes: ok\n",
               (unsigned long long)s);
}

static int rdma_client(void)
{
    struct ep e;
    struct perf_pd wire;
    struct siwarp_conn_param p;
    struct sockaddr_storage ss;
    socklen_t sl = resolve(o.host, o.port, 0, &ss);
    uint64_t sizes[40];
    int ns, rc;

    memset(&e.me, 0, sizeof(e.me));
    ep_init(&e, o.max, o.window, NULL);
    e.me.magic = PERF_MAGIC;
    e.me.version = 1;
    e.me.test = (uint8_t)o.test;
    e.me.mode = (uint8_t)o.mode;
    e.me.all = (uint8_t)o.all;
    e.me.iters = o.iters;
    e.me.window = o.window;
    e.me.size = o.size;
    e.me.max = o.max;
    e.me.addr = (uint64_t)(uintptr_t)e.rx;
    e.me.stag = e.lkey;
    pd_hton(&wire, &e.me);
    pat_fill(e.tx, e.unit, SEED_CLI);
    /* one receive queue: post control receives only where no data Send
     * can arrive (Send latency receives pongs; Send bandwidth only credits) */
    if (!(o.test == T_SEND && o.mode == M_LAT) && o.test != T_MIX)
        for (int i = 0; i < CTRL_NRECV; i++)
            post_ctrl_recv(&e, i);
    if (o.test == T_SEND && o.mode == M_LAT)
        for (int i = 0; i < 2; i++)
            post_recv(&e, WRID(WR_DATA_RECV, 0), e.rx, (uint32_t)e.unit);
    conn_param(&p);
    p.private_data = &wire;
    p.private_data_len = sizeof(wire);
    if ((rc = siwarp_connect(e.qp, (struct sockaddr *)&ss, sl, &p)) < 0)
        die("siwarp_connect: %s", strerror(-rc));
    if ((rc = siwarp_connect_wait(e.qp, 15000)) < 0) {
        siwarp_query_qp(e.qp, &e.attr);
        die("connect to %s port %u: %s (%s)", o.host, o.port, strerror(-rc), e.attr.error_str);
    }
    siwarp_query_qp(e.qp, &e.attr);
    if (e.attr.peer_private_data_len < sizeof(wire))
        die("server sent %u bytes of private data, expected %zu (not a siwarp-perf server?)",
            e.attr.peer_private_data_len, sizeof(wire));
    memcpy(&wire, e.attr.peer_private_data, sizeof(wire));
    pd_ntoh(&e.peer, &wire);
    if (e.peer.magic != PERF_MAGIC)
        die("bad magic in the server's private data");
    e.peer_rx = e.peer.addr;
    e.peer_tx = e.peer.addr + buf_unit(e.me.max);
    print_conn(&e, "client");
    ns = size_list(&e.me, sizes);
    for (int k = 0; k < ns; k++) {
        uint32_t n = iters_for(&e.me, sizes[k]);
        if (o.test == T_MIX)
            run_mix(&e, sizes[k]);
        else if (o.mode == M_BW)
            run_bw(&e, sizes[k], n);
        else if (o.test == T_WRITE && sizes[k] == 0)
            continue;
        else
            run_lat(&e, sizes[k], n);
    }
    siwarp_disconnect(e.qp);
    for (int i = 0; i < 200; i++) {             /* up to ~2 s for the close */
        siwarp_query_qp(e.qp, &e.attr);
        if (e.attr.state != SIWARP_QPS_RTS && e.attr.state != SIWARP_QPS_CLOSING)
            break;
        siwarp_wait(e.ctx, 10);
    }
    ep_fini(&e);
    return 0;
}

/* ---- server ------------------------------------------------------------------------ */

/* Serve peer-driven traffic (Reads, Writes, DONE messages, mix receives)
 * until the client disconnects. */
static void serve_passive(struct ep *e)
{
    unsigned spins = 0;

    e->passive = 1;
    for (;;) {
        int n = poll_once(e);
        if (e->done_msgs) {
            e->done_msgs--;
            pat_verify(e->rx, e->done_size, SEED_CLI, "Write bandwidth data");
            send_ctrl(e, C_ACK, e->done_size);
        }
        if (n == 0 && ++spins % 4096 == 0) {
            siwarp_query_qp(e->qp, &e->attr);
            if (e->attr.state != SIWARP_QPS_RTS)
                return;
            /* idle: stop burning the CPU, unless the client is reading:
             * the Read Responses we send complete nothing here, so the
             * quiet would be a busy test, and a sleeping responder adds
             * its wake-up to every Read it serves */
            if (spins > (1u << 20) && e->peer.test != T_READ && e->peer.test != T_MIX)
                siwarp_wait(e->ctx, 1);
        } else if (n) {
            spins = 0;
        }
    }
}

static void serve_send_lat(struct ep *e, uint64_t s, uint32_t n)
{
    for (uint32_t i = 0; i <= n; i++) {
        uint64_t want = e->nrecv + 1;
        WAIT_UNTIL(e, e->nrecv >= want);
        if (e->last_len != s)
            die("Send latency: received %u bytes, expected %llu", e->last_len,
                (unsigned long long)s);
        if (i == 0 || i == n)
            pat_verify(e->rx, s, i ? SEED_LAST : SEED_CLI, i ? "last Send" : "first Send");
        post_recv(e, WRID(WR_DATA_RECV, 0), e->rx, (uint32_t)e->unit);
        if (i == n)
            sync_tx(e, s, SEED_LAST);
        post_op(e, SIWARP_WR_SEND, i, e->tx, s, 0, 0,
                (i % SIG_EVERY == SIG_EVERY - 1 || i == n) ? SIWARP_SEND_SIGNALED : 0);
    }
    WAIT_UNTIL(e, e->data_done >= (uint64_t)n + 1);
    e->data_done = 0;
    sync_tx(e, s, SEED_SRV);
}

static void serve_write_lat(struct ep *e, uint64_t s, uint32_t n)
{
    volatile uint8_t *last = e->rx + s - 1;

    for (uint32_t i = 0; i <= n; i++) {
        WAIT_UNTIL(e, *last == mark(i));
        if (i == 0 || i == n)
            pat_verify(e->rx, s - 1, i ? SEED_LAST : SEED_CLI, i ? "last Write" : "first Write");
        if (i == n)
            sync_tx(e, s, SEED_LAST);
        e->tx[s - 1] = mark(i);
        post_op(e, SIWARP_WR_WRITE, i, e->tx, s, e->peer_rx, 0,
                (i % SIG_EVERY == SIG_EVERY - 1 || i == n) ? SIWARP_SEND_SIGNALED : 0);
    }
    WAIT_UNTIL(e, e->data_done >= (uint64_t)n + 1);
    e->data_done = 0;
    sync_tx(e, s, SEED_SRV);
}

static void serve_send_bw(struct ep *e, uint64_t s, uint32_t n)
{
    uint32_t R = credit_depth(&e->peer), C = R / 4 ? R / 4 : 1, since = 0;
    uint64_t base = e->nrecv;

    while (e->nrecv - base < n) {
        uint64_t got = e->nrecv;
        WAIT_UNTIL(e, e->nrecv > got);
        for (; got < e->nrecv; got++) {
            uint64_t k = got - base + 1;
            if (e->last_len != s)
                die("Send bandwidth: received %u bytes, expected %llu", e->last_len,
                    (unsigned long long)s);
            if (k == 1 || k == n)
                pat_verify(e->rx, s, SEED_CLI, k == 1 ? "first Send" : "last Send");
            post_recv(e, WRID(WR_DATA_RECV, 0), e->rx, (uint32_t)e->unit);
            if (++since >= C || k == n) {
                send_ctrl(e, C_CREDIT, since);
                since = 0;
            }
        }
    }
}

static struct ep *srv_ep;
static struct siwarp_ctx *siwarp_listener_ctx;    /* the server's one context */

static void serve_cleanup(void)
{
    if (srv_ep && srv_ep->ctx)
        ep_fini(srv_ep);
    srv_ep = NULL;
}

static void serve_one(struct siwarp_listener *l, struct siwarp_conn_req *req)
{
    struct siwarp_conn_param asked, p;
    struct sockaddr_storage peer;
    struct perf_pd wire, me;
    uint64_t sizes[40];
    static struct ep e;     /* static: still valid for cleanup after a longjmp */
    int rc, ns;
    char host[INET6_ADDRSTRLEN] = "?";

    (void)l;
    memset(&e, 0, sizeof(e));
    srv_ep = &e;
    if ((rc = siwarp_conn_req_param(req, &asked, &peer)) < 0 || !asked.private_data ||
        asked.private_data_len < sizeof(wire)) {
        fprintf(stderr, "siwarp-perf: connection request without siwarp-perf parameters; "
                "rejecting\n");
        siwarp_reject(req, "siwarp-perf: parameters missing", 31);
        return;
    }
    memcpy(&wire, asked.private_data, sizeof(wire));
    pd_ntoh(&e.peer, &wire);
    if (e.peer.magic != PERF_MAGIC || e.peer.test > T_MIX || e.peer.mode > M_BW ||
        e.peer.max > (1ULL << 30) || e.peer.window < 1 || e.peer.window > 1024) {
        siwarp_reject(req, "siwarp-perf: bad parameters", 27);
        return;
    }
    struct perf_pd peerpd = e.peer;
    ep_init(&e, peerpd.max, peerpd.window, siwarp_listener_ctx);
    e.peer = peerpd;
    e.me = e.peer;                     /* same test description, our own buffer */
    e.me.addr = (uint64_t)(uintptr_t)e.rx;
    e.me.stag = e.lkey;
    e.peer_rx = e.peer.addr;
    e.peer_tx = e.peer.addr + buf_unit(e.peer.max);
    pat_fill(e.tx, e.unit, SEED_SRV);
    if (e.peer.test == T_MIX) {
        int acc = SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE;
        if (siwarp_reg_mr(e.pd, e.tx, 4096, acc, &e.inv1) < 0 ||
            siwarp_reg_mr(e.pd, e.tx + 4096, 4096, acc, &e.inv2) < 0)
            die("registering the MRs to invalidate");
        e.me.inv1 = siwarp_mr_stag(e.inv1);
        e.me.inv2 = siwarp_mr_stag(e.inv2);
    }
    pd_hton(&me, &e.me);
    if (e.peer.test == T_WRITE || e.peer.test == T_READ)     /* DONE messages */
        for (int i = 0; i < CTRL_NRECV; i++)
            post_ctrl_recv(&e, i);
    /* the client may send as soon as it is connected: receives go first */
    int nrecv = e.peer.test == T_MIX ? 4 : e.peer.test != T_SEND ? 0 :
                e.peer.mode == M_LAT ? 2 : (int)credit_depth(&e.peer);
    for (int i = 0; i < nrecv; i++)
        post_recv(&e, WRID(WR_DATA_RECV, 0), e.rx, (uint32_t)e.unit);
    siwarp_conn_param_default(&p);
    p.mpa_rev = asked.mpa_rev;
    p.crc = o.crc;
    p.markers = o.markers;
    p.p2p = asked.p2p;
    p.rtr = SIWARP_RTR_READ | SIWARP_RTR_WRITE;
    p.ird = p.ord = 64;
    p.big_fpdu = o.big_fpdu;
    p.private_data = &me;
    p.private_data_len = sizeof(me);
    if ((rc = siwarp_accept(req, e.qp, &p)) < 0)
        die("siwarp_accept: %s", strerror(-rc));
    for (unsigned spins = 0;; spins++) {
        siwarp_query_qp(e.qp, &e.attr);
        if (e.attr.state == SIWARP_QPS_RTS)
            break;
        if (e.attr.state != SIWARP_QPS_CONNECTING && e.attr.state != SIWARP_QPS_IDLE)
            die("accepted connection went to %s: %s", siwarp_qp_state_str(e.attr.state),
                e.attr.error_str);
        if (spins > 1000)
            siwarp_wait(e.ctx, 10);
        else
            siwarp_progress(e.ctx);
    }
    if (peer.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&peer)->sin6_addr, host, sizeof(host));
    else
        inet_ntop(AF_INET, &((struct sockaddr_in *)&peer)->sin_addr, host, sizeof(host));
    fprintf(stderr, "siwarp-perf: client %s: %s %s, sizes %llu..%llu\n", host,
            test_name[e.peer.test], mode_name[e.peer.mode],
            (unsigned long long)(e.peer.all ? 1 : e.peer.size),
            (unsigned long long)e.peer.max);
    ns = size_list(&e.peer, sizes);
    for (int k = 0; k < ns; k++) {
        uint32_t n = iters_for(&e.peer, sizes[k]);
        if (e.peer.test == T_SEND && e.peer.mode == M_LAT)
            serve_send_lat(&e, sizes[k], n);
        else if (e.peer.test == T_WRITE && e.peer.mode == M_LAT && sizes[k])
            serve_write_lat(&e, sizes[k], n);
        else if (e.peer.test == T_SEND && e.peer.mode == M_BW)
            serve_send_bw(&e, sizes[k], n);
    }
    serve_passive(&e);
    if (e.peer.test == T_MIX) {
        if (e.nrecv != 4)
            die("mix: %llu of 4 Sends received", (unsigned long long)e.nrecv);
    }
    ep_fini(&e);
    srv_ep = NULL;
}

static int rdma_server(void)
{
    struct siwarp_ctx *ctx;
    struct siwarp_listener *l;
    struct siwarp_conn_param p;
    struct sockaddr_storage ss;
    socklen_t sl = resolve(o.bind_addr, o.port, 1, &ss);
    int rc;

    if ((rc = siwarp_ctx_create(&ctx)) < 0)
        die("siwarp_ctx_create: %s", strerror(-rc));
    siwarp_listener_ctx = ctx;
    conn_param(&p);
    p.rtr = SIWARP_RTR_READ | SIWARP_RTR_WRITE;
    if ((rc = siwarp_listen(ctx, (struct sockaddr *)&ss, sl, &p, &l)) < 0)
        die("siwarp_listen: %s", strerror(-rc));
    siwarp_listener_addr(l, &ss);
    printf("listening port=%u\n", ss_port(&ss));
    fflush(stdout);
    for (;;) {
        struct siwarp_conn_req *req = NULL;
        jmp_buf jb;

        rc = siwarp_get_conn_request_wait(l, 1000, &req);
        if (rc == -EAGAIN || rc == -ETIMEDOUT || (rc == 0 && !req))
            continue;
        if (rc < 0)
            die("siwarp_get_conn_request_wait: %s", strerror(-rc));
        srv_jmp = &jb;
        if (setjmp(jb) == 0)
            serve_one(l, req);
        else
            serve_cleanup();
        srv_jmp = NULL;
        if (o.once)
            break;
    }
    siwarp_listener_destroy(l);
    siwarp_ctx_destroy(ctx);
    return 0;
}

/* ---- plain TCP baseline --------------------------------------------------------------- */

static void tcp_setopts(int fd)
{
    int one = 1;

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* busy-polling full transfers */
static void tcp_xfer(int fd, uint8_t *p, uint64_t len, int out)
{
    while (len) {
        ssize_t n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
        if (n > 0) {
            p += n;
            len -= (uint64_t)n;
        } else if (n == 0) {
            die("TCP peer closed");
        } else if (errno != EAGAIN && errno != EINTR) {
            die("TCP %s: %s", out ? "send" : "recv", strerror(errno));
        }
    }
}

/* Untimed round trips before each TCP ping-pong size, as mpi-bench and the
 * OSU micro-benchmarks do (100, or 10 above 8 KiB): the first ones pay for
 * cold caches and page faults, and one 10 ms round trip among 2000 doubles
 * a mean.  Both ends derive it from the size. */
static uint32_t tcp_lat_warmup(uint64_t size)
{
    return size > 8192 ? 10 : 100;
}

static void tcp_serve(int fd)
{
    struct perf_pd wire, pd;
    uint64_t sizes[40], unit;
    uint8_t *buf;
    int ns;

    tcp_setopts(fd);
    tcp_xfer(fd, (uint8_t *)&wire, sizeof(wire), 0);
    pd_ntoh(&pd, &wire);
    if (pd.magic != PERF_MAGIC || pd.max > (1ULL << 30))
        die("TCP: bad parameters");
    unit = buf_unit(pd.max);
    if (!(buf = malloc(unit)))
        die("out of memory");
    ns = size_list(&pd, sizes);
    for (int k = 0; k < ns; k++) {
        uint64_t s = sizes[k];
        uint32_t n = iters_for(&pd, s);
        if (!s)
            continue;
        if (pd.mode == M_LAT) {
            for (int64_t i = -(int64_t)tcp_lat_warmup(s); i <= (int64_t)n; i++) {   /* echo */
                tcp_xfer(fd, buf, s, 0);
                tcp_xfer(fd, buf, s, 1);
            }
        } else {
            uint8_t ack = 1;
            for (uint64_t left = s * n; left;) {
                uint64_t c = left < unit ? left : unit;
                tcp_xfer(fd, buf, c, 0);
                left -= c;
            }
            tcp_xfer(fd, &ack, 1, 1);
        }
    }
    free(buf);
    close(fd);
}

static int tcp_server(void)
{
    struct sockaddr_storage ss;
    socklen_t sl = resolve(o.bind_addr, o.port, 1, &ss);
    int one = 1, l = socket(ss.ss_family, SOCK_STREAM, 0);

    if (l < 0)
        die("socket: %s", strerror(errno));
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(l, (struct sockaddr *)&ss, sl) < 0 || listen(l, 16) < 0)
        die("bind/listen: %s", strerror(errno));
    sl = sizeof(ss);
    getsockname(l, (struct sockaddr *)&ss, &sl);
    printf("listening port=%u\n", ss_port(&ss));
    fflush(stdout);
    for (;;) {
        int fd = accept(l, NULL, NULL);
        pid_t pid;

        if (fd < 0) {
            if (errno == EINTR)
                continue;
            die("accept: %s", strerror(errno));
        }
        /* a child per connection: a failing client cannot end the server */
        pid = fork();
        if (pid == 0) {
            close(l);
            tcp_serve(fd);
            _exit(0);
        }
        close(fd);
        if (pid > 0)
            waitpid(pid, NULL, 0);
        if (o.once)
            break;
    }
    close(l);
    return 0;
}

static int tcp_client(void)
{
    struct sockaddr_storage ss;
    socklen_t sl = resolve(o.host, o.port, 0, &ss);
    struct perf_pd pd = { 0 }, wire;
    uint64_t sizes[40], unit = buf_unit(o.max);
    uint8_t *tx = malloc(unit), *rx = malloc(unit);
    int fd = socket(ss.ss_family, SOCK_STREAM, 0), ns;

    if (!tx || !rx || fd < 0)
        die("setup: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&ss, sl) < 0)
        die("TCP connect to %s port %u: %s", o.host, o.port, strerror(errno));
    tcp_setopts(fd);
    pd.magic = PERF_MAGIC;
    pd.version = 1;
    pd.test = (uint8_t)o.test;
    pd.mode = (uint8_t)o.mode;
    pd.all = (uint8_t)o.all;
    pd.iters = o.iters;
    pd.window = o.window;
    pd.size = o.size;
    pd.max = o.max;
    pd_hton(&wire, &pd);
    tcp_xfer(fd, (uint8_t *)&wire, sizeof(wire), 1);
    pat_fill(tx, unit, SEED_CLI);
    if (!o.json)
        printf("# client: tcp %s (TCP_NODELAY, busy-poll)\n", mode_name[o.mode]);
    ns = size_list(&pd, sizes);
    for (int k = 0; k < ns; k++) {
        uint64_t s = sizes[k];
        uint32_t n = iters_for(&pd, s);

        if (!s)
            continue;
        if (o.mode == M_LAT) {
            double *t = calloc(n, sizeof(double));
            for (int64_t i = -(int64_t)tcp_lat_warmup(s); i <= (int64_t)n; i++) {
                double t0;
                if (i == n)
                    pat_fill(tx, s, SEED_LAST);
                t0 = now_us();
                tcp_xfer(fd, tx, s, 1);
                tcp_xfer(fd, rx, s, 0);
                if (i >= 0 && i < n)
                    t[i] = now_us() - t0;
                if (i == 0 || i == n)
                    pat_verify(rx, s, i ? SEED_LAST : SEED_CLI, "TCP echo");
            }
            pat_fill(tx, s, SEED_CLI);
            report_lat("tcp", s, n, t);
            free(t);
        } else {
            uint8_t ack;
            double t0 = now_us();
            for (uint32_t i = 0; i < n; i++)
                tcp_xfer(fd, tx, s, 1);
            tcp_xfer(fd, &ack, 1, 0);
            report_bw("tcp", s, n, now_us() - t0);
        }
    }
    close(fd);
    free(tx);
    free(rx);
    return 0;
}

int main(int argc, char **argv)
{
    parse(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    if (!o.server && o.timeout_s > 0)
        alarm((unsigned)o.timeout_s);            /* a stuck client must not hang a script */
    if (o.tcp)
        return o.server ? tcp_server() : tcp_client();
    return o.server ? rdma_server() : rdma_client();
}
