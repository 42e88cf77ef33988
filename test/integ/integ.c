/*
 * integ.c - endpoints, fork/pipe plumbing, data pattern and the step
 * schedule shared by the two-process integration tests (see integ.h).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "integ.h"

const char *const integ_op_name[I_OP_COUNT] = {
    [I_SEND] = "send", [I_SEND_SE] = "send_se", [I_SEND_INV] = "send_inv",
    [I_SEND_SE_INV] = "send_se_inv", [I_WRITE] = "write", [I_READ] = "read",
    [I_FENCE] = "read+fenced_send",
};

void integ_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "# [%s pid %d] %s:%d: %s\n", getenv("SWP_INTEG_ROLE") ?
            getenv("SWP_INTEG_ROLE") : "?", (int)getpid(), file, line, msg);
    fflush(stderr);
}

int integ_timeout_ms(void)
{
    const char *s = getenv("SWP_INTEG_TIMEOUT_MS");
    return s && atoi(s) > 0 ? atoi(s) : INTEG_TIMEOUT_MS;
}

uint64_t integ_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- pattern ------------------------------------------------------------------ */

static uint64_t mix(uint64_t seed, uint64_t k)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ULL + k * 0xbf58476d1ce4e5b9ULL + 1;

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint8_t pat_byte(uint64_t seed, uint64_t i)
{
    return (uint8_t)(mix(seed, i >> 3) >> ((i & 7) * 8));
}

void integ_fill(void *p, size_t len, uint64_t seed, uint64_t off)
{
    uint8_t *b = p;
    size_t i = 0;

    while (i < len && ((off + i) & 7))
        b[i] = pat_byte(seed, off + i), i++;
    for (; i + 8 <= len; i += 8) {
        uint64_t v = mix(seed, (off + i) >> 3);
        memcpy(b + i, &v, 8);         /* little-endian host: byte k = v >> 8k */
    }
    for (; i < len; i++)
        b[i] = pat_byte(seed, off + i);
}

long long integ_check(const void *p, size_t len, uint64_t seed, uint64_t off)
{
    const uint8_t *b = p;
    size_t i = 0;

    while (i < len && ((off + i) & 7)) {
        if (b[i] != pat_byte(seed, off + i))
            return (long long)i;
        i++;
    }
    for (; i + 8 <= len; i += 8) {
        uint64_t v = mix(seed, (off + i) >> 3);
        if (memcmp(b + i, &v, 8) != 0)
            break;
    }
    for (; i < len; i++)
        if (b[i] != pat_byte(seed, off + i))
            return (long long)i;
    return -1;
}

long long integ_check_byte(const void *p, size_t len, uint8_t c)
{
    const uint8_t *b = p;

    for (size_t i = 0; i < len; i++)
        if (b[i] != c)
            return (long long)i;
    return -1;
}

/* ---- configuration ------------------------------------------------------------- */

void integ_cfg_default(struct integ_cfg *c)
{
    memset(c, 0, sizeof(*c));
    siwarp_conn_param_default(&c->cp);
    c->cp.ird = c->cp.ord = 16;
    c->family = AF_INET;
    c->max_size = 1 << 20;
}

const char *integ_cfg_str(const struct integ_cfg *c, char *buf, size_t len)
{
    const char *p2p = !c->cp.p2p ? "none" :
                      c->cp.rtr & SIWARP_RTR_READ ? "read" :
                      c->cp.rtr & SIWARP_RTR_WRITE ? "write" : "send";

    snprintf(buf, len, "crc=%d/%d markers=%d/%d mpa=%d p2p=%s %s%s", c->cp.crc,
             c->srv_crc, c->cp.markers, c->srv_markers, c->cp.mpa_rev, p2p,
             c->family == AF_INET6 ? "ipv6" : "ipv4", c->srv_netns ? " netns" : "");
    return buf;
}

/* ---- endpoints ------------------------------------------------------------------ */

int integ_ep_init(struct integ_ep *e, size_t buflen, uint32_t sq, uint32_t rq)
{
    struct siwarp_qp_init_attr qa;

    memset(e, 0, sizeof(*e));
    e->len = buflen;
    e->buf = mmap(NULL, buflen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (e->buf == MAP_FAILED) {
        e->buf = NULL;
        INTEG_FAIL("mmap %zu: %s", buflen, strerror(errno));
        return -1;
    }
    INTEG_CHECK_RC(siwarp_ctx_create(&e->ctx));
    INTEG_CHECK_RC(siwarp_alloc_pd(e->ctx, &e->pd));
    INTEG_CHECK_RC(siwarp_reg_mr(e->pd, e->buf, buflen, SIWARP_ACCESS_LOCAL_WRITE |
                                 SIWARP_ACCESS_REMOTE_WRITE | SIWARP_ACCESS_REMOTE_READ,
                                 &e->mr));
    INTEG_CHECK_RC(siwarp_create_cq(e->ctx, (int)(sq + rq + 64), &e->cq));
    memset(&qa, 0, sizeof(qa));
    qa.send_cq = e->cq;
    qa.recv_cq = e->cq;
    qa.max_send_wr = sq;
    qa.max_recv_wr = rq;
    qa.max_sge = 4;
    qa.max_inline = 64;
    INTEG_CHECK_RC(siwarp_create_qp(e->pd, &qa, &e->qp));
    return 0;
}

void integ_ep_fini(struct integ_ep *e)
{
    if (e->qp)
        siwarp_destroy_qp(e->qp);
    if (e->l)
        siwarp_listener_destroy(e->l);
    if (e->cq)
        siwarp_destroy_cq(e->cq);
    if (e->mr)
        siwarp_dereg_mr(e->mr);
    if (e->pd)
        siwarp_dealloc_pd(e->pd);
    if (e->ctx)
        siwarp_ctx_destroy(e->ctx);
    if (e->buf)
        munmap(e->buf, e->len);
    memset(e, 0, sizeof(*e));
}

uint32_t integ_lkey(const struct integ_ep *e)
{
    return siwarp_mr_stag(e->mr);
}

static socklen_t make_addr(const struct integ_cfg *c, uint16_t port,
                           struct sockaddr_storage *ss)
{
    const char *a = c->addr;

    memset(ss, 0, sizeof(*ss));
    if (c->family == AF_INET6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        inet_pton(AF_INET6, a ? a : "::1", &s6->sin6_addr);
        return sizeof(*s6);
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons(port);
    inet_pton(AF_INET, a ? a : "127.0.0.1", &s4->sin_addr);
    return sizeof(*s4);
}

int integ_listen(struct integ_ep *e, const struct integ_cfg *c, uint16_t *port)
{
    struct sockaddr_storage ss;
    socklen_t sl = make_addr(c, 0, &ss);
    struct siwarp_conn_param p;

    siwarp_conn_param_default(&p);
    p.crc = c->srv_crc;
    p.markers = c->srv_markers;
    p.rtr = SIWARP_RTR_READ | SIWARP_RTR_WRITE;
    p.ird = p.ord = c->cp.ird ? c->cp.ird : 16;
    INTEG_CHECK_RC(siwarp_listen(e->ctx, (struct sockaddr *)&ss, sl, &p, &e->l));
    INTEG_CHECK_RC(siwarp_listener_addr(e->l, &ss));
    *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                           : ((struct sockaddr_in *)&ss)->sin_port);
    INTEG_CHECK(*port != 0);
    e->is_server = 1;
    return 0;
}

int integ_wait_state(struct integ_ep *e, int st, int timeout_ms,
                     struct siwarp_qp_attr *attr)
{
    struct siwarp_qp_attr a;
    uint64_t end = integ_now_ms() + (uint64_t)timeout_ms;

    if (!attr)
        attr = &a;
    for (unsigned spins = 0;; spins++) {
        int rc = spins > 2000 ? siwarp_wait(e->ctx, 10) : siwarp_progress(e->ctx);
        if (rc < 0) {
            INTEG_FAIL("siwarp_progress: %d (%s)", rc, strerror(-rc));
            return -1;
        }
        INTEG_CHECK_RC(siwarp_query_qp(e->qp, attr));
        if (st >= 0 ? (int)attr->state == st :
            st == INTEG_ST_NOT_CONNECTING ? attr->state != SIWARP_QPS_IDLE &&
                                            attr->state != SIWARP_QPS_CONNECTING :
            attr->state != SIWARP_QPS_RTS && attr->state != SIWARP_QPS_CONNECTING)
            return 0;
        if (integ_now_ms() > end) {
            INTEG_FAIL("QP state %s, waited %d ms for %s (error %d '%s')",
                       siwarp_qp_state_str(attr->state), timeout_ms,
                       st >= 0 ? siwarp_qp_state_str((enum siwarp_qp_state)st)
                               : "not RTS", attr->error, attr->error_str);
            return -ETIMEDOUT;
        }
    }
}

int integ_accept(struct integ_ep *e, const struct integ_cfg *c, const void *pd,
                 uint16_t pd_len)
{
    struct siwarp_conn_req *req = NULL;
    struct siwarp_conn_param asked, p;
    struct sockaddr_storage peer;
    struct siwarp_qp_attr attr;

    INTEG_CHECK_RC(siwarp_get_conn_request_wait(e->l, integ_timeout_ms(), &req));
    INTEG_CHECK(req != NULL);
    INTEG_CHECK_RC(siwarp_conn_req_param(req, &asked, &peer));
    siwarp_conn_param_default(&p);
    p.mpa_rev = asked.mpa_rev;
    p.p2p = asked.p2p;
    p.rtr = SIWARP_RTR_READ | SIWARP_RTR_WRITE;
    p.crc = c->srv_crc;
    p.markers = c->srv_markers;
    p.ird = p.ord = c->cp.ird ? c->cp.ird : 16;
    p.private_data = pd;
    p.private_data_len = pd_len;
    INTEG_CHECK_RC(siwarp_accept(req, e->qp, &p));
    /* the client may already have sent something fatal: RTS or beyond */
    if (integ_wait_state(e, INTEG_ST_NOT_CONNECTING, integ_timeout_ms(), &attr) < 0)
        return -1;
    if (attr.state == SIWARP_QPS_IDLE) {
        INTEG_FAIL("accepted QP back in IDLE: '%s'", attr.error_str);
        return -1;
    }
    return 0;
}

int integ_connect(struct integ_ep *e, const struct integ_cfg *c, uint16_t port)
{
    struct sockaddr_storage ss;
    socklen_t sl = make_addr(c, port, &ss);
    struct siwarp_qp_attr attr;
    int rc;

    INTEG_CHECK_RC(siwarp_connect(e->qp, (struct sockaddr *)&ss, sl, &c->cp));
    rc = siwarp_connect_wait(e->qp, integ_timeout_ms());
    if (rc < 0) {
        siwarp_query_qp(e->qp, &attr);
        INTEG_FAIL("siwarp_connect_wait: %d (%s), state %s, error '%s'", rc,
                   strerror(-rc), siwarp_qp_state_str(attr.state), attr.error_str);
        return -1;
    }
    return 0;
}

int integ_check_nego(struct integ_ep *e, const struct integ_cfg *c)
{
    struct siwarp_qp_attr a;
    int want_crc = c->cp.crc || c->srv_crc;
    int want_mk = c->cp.markers || c->srv_markers;

    INTEG_CHECK_RC(siwarp_query_qp(e->qp, &a));
    if (a.state != SIWARP_QPS_RTS) {
        INTEG_FAIL("state %s after connect", siwarp_qp_state_str(a.state));
        return -1;
    }
    if (!!a.crc != want_crc || !!a.markers != want_mk || a.mpa_rev != c->cp.mpa_rev ||
        !!a.p2p != !!c->cp.p2p) {
        INTEG_FAIL("negotiated crc=%d markers=%d mpa=%d p2p=%d rtr=%#x, expected "
                   "crc=%d markers=%d mpa=%d p2p=%d", a.crc, a.markers, a.mpa_rev,
                   a.p2p, a.rtr, want_crc, want_mk, c->cp.mpa_rev, c->cp.p2p);
        return -1;
    }
    /* one RTR type, among those offered (RFC 6581 5) */
    if (c->cp.p2p && (a.rtr == 0 || (a.rtr & (a.rtr - 1)) || (a.rtr & ~c->cp.rtr))) {
        INTEG_FAIL("P2P RTR negotiated %#x, asked for %#x", a.rtr, c->cp.rtr);
        return -1;
    }
    return 0;
}

int integ_poll1(struct integ_ep *e, struct siwarp_wc *wc, int timeout_ms)
{
    uint64_t end = integ_now_ms() + (uint64_t)timeout_ms;
    unsigned spins = 0;

    for (;;) {
        int n = siwarp_poll_cq(e->cq, 1, wc);
        if (n < 0) {
            INTEG_FAIL("siwarp_poll_cq: %d (%s)", n, strerror(-n));
            return n;
        }
        if (n > 0)
            return 0;
        /* spin a little, then let the library block on its fd for at most
         * 10 ms: two busy processes per test on 2 cores starve each other */
        if (++spins > 2000)
            siwarp_wait(e->ctx, 10);
        if ((spins & 255) == 0 && integ_now_ms() > end)
            return -ETIMEDOUT;
    }
}

/* ---- two processes ------------------------------------------------------------ */

int integ_enter_netns(const char *name)
{
    char path[256];
    int fd;

    if (!name)
        return 0;
    snprintf(path, sizeof(path), "/var/run/netns/%s", name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        INTEG_FAIL("open %s: %s", path, strerror(errno));
        return -1;
    }
    if (setns(fd, CLONE_NEWNET) < 0) {
        INTEG_FAIL("setns %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

int integ_announce(int fd, uint16_t port)
{
    if (write(fd, &port, sizeof(port)) != (ssize_t)sizeof(port)) {
        INTEG_FAIL("announce: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int integ_pair(const struct integ_cfg *c, integ_srv_fn server, integ_cli_fn client,
               void *arg)
{
    int pfd[2], status = 0, rc;
    pid_t pid;
    uint64_t end;

    fflush(stdout);
    fflush(stderr);
    if (pipe(pfd) < 0) {
        INTEG_FAIL("pipe: %s", strerror(errno));
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        INTEG_FAIL("fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        uint16_t port = 0;
        struct pollfd p = { .fd = pfd[0], .events = POLLIN };

        setenv("SWP_INTEG_ROLE", "client", 1);
        close(pfd[1]);
        if (integ_enter_netns(c->cli_netns) < 0)
            _exit(3);
        if (poll(&p, 1, integ_timeout_ms()) != 1 ||
            read(pfd[0], &port, sizeof(port)) != (ssize_t)sizeof(port)) {
            INTEG_FAIL("server never announced its port");
            _exit(4);
        }
        close(pfd[0]);
        _exit(client(c, arg, port) == 0 ? 0 : 1);
    }
    setenv("SWP_INTEG_ROLE", "server", 1);
    close(pfd[0]);
    if (integ_enter_netns(c->srv_netns) < 0)
        rc = -1;
    else
        rc = server(c, arg, pfd[1]);
    close(pfd[1]);
    /* the client has its own deadlines; give it a bounded time to finish,
     * and end it if the server already failed and it is still stuck */
    end = integ_now_ms() + (rc == 0 ? (uint64_t)integ_timeout_ms() : 2000);
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0) {
            INTEG_FAIL("waitpid: %s", strerror(errno));
            return -1;
        }
        if (integ_now_ms() > end) {
            INTEG_FAIL("client pid %d did not finish; killing it", (int)pid);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        struct timespec ts = { 0, 2000000 };   /* reaping, not readiness */
        nanosleep(&ts, NULL);
    }
    unsetenv("SWP_INTEG_ROLE");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFSIGNALED(status))
            INTEG_FAIL("client died from signal %d", WTERMSIG(status));
        else
            INTEG_FAIL("client exited with %d", WEXITSTATUS(status));
        return -1;
    }
    return rc == 0 ? 0 : -1;
}

/* ---- schedules ---------------------------------------------------------------- */

#define CTRL_AREA   4096
#define CTRL_SLOT   64
#define CTRL_NRECV  16          /* recv slots 0..15, send slots 16..63 */
#define CTRL_NSEND  48
#define GAP         64          /* between SGEs and around targets (canaries) */
#define CANARY      0xa5
#define MSG_MAGIC   0x53575047u /* "SWPG" */
#define STEP_BYE    0xffffffffu

struct integ_msg {
    uint32_t magic;
    uint32_t step;
    uint64_t raddr;
    uint32_t rkey;
    uint32_t inv_stag;
};

/* wr_id encoding: kind in the low byte, step or slot above */
enum { WR_CTRL_RECV = 1, WR_CTRL_SEND, WR_DATA, WR_DATA_RECV, WR_FENCE_READ };
#define WRID(kind, n) (((uint64_t)(n) << 8) | (kind))
#define WR_KIND(w)    ((unsigned)((w) & 0xff))
#define WR_NUM(w)     ((uint32_t)((w) >> 8))

static uint64_t step_seed(int i, uint64_t size)
{
    return 0x5157a000ULL + (uint64_t)i * 1000003ULL + size;
}

static int nsge_of(const struct integ_step *s)
{
    int n = s->nsge > 0 ? s->nsge : 1;
    /* an SGE of 0 bytes would be odd: no more SGEs than bytes */
    if (s->size < (uint64_t)n)
        n = s->size ? (int)s->size : 1;
    return n > 4 ? 4 : n;
}

/* Split [base, base + total) into n SGEs separated by GAP bytes; sizes differ
 * (the first piece is the smallest) so every boundary lands somewhere new. */
static int sgl_layout(uint8_t *base, uint64_t total, int n, uint32_t lkey,
                      struct siwarp_sge *sge)
{
    uint64_t left = total, unit = n > 1 ? total / (uint64_t)(n * (n + 1) / 2) : total;
    uint8_t *p = base;

    for (int i = 0; i < n; i++) {
        uint64_t len = i == n - 1 ? left : unit * (uint64_t)(i + 1);
        if (len > left)
            len = left;
        sge[i].addr = p;
        sge[i].length = (uint32_t)len;
        sge[i].lkey = lkey;
        p += len + GAP;
        left -= len;
    }
    return (int)(p - base);
}

static void sgl_fill(const struct siwarp_sge *sge, int n, uint64_t seed)
{
    uint64_t off = 0;

    for (int i = 0; i < n; i++) {
        integ_fill(sge[i].addr, sge[i].length, seed, off);
        off += sge[i].length;
    }
}

/* The first `len` bytes of the SGL stream carry the pattern; every other
 * byte from area_lo to area_hi (gaps, unused tails) is still CANARY. */
static int sgl_verify(const struct siwarp_sge *sge, int n, uint64_t seed, uint64_t len,
                      const uint8_t *area_lo, const uint8_t *area_hi, const char *what)
{
    uint64_t off = 0;
    const uint8_t *p = area_lo;
    long long bad;

    for (int i = 0; i < n; i++) {
        const uint8_t *a = sge[i].addr;
        uint64_t have = len > off ? len - off : 0;
        if (have > sge[i].length)
            have = sge[i].length;
        bad = integ_check_byte(p, (size_t)(a - p), CANARY);
        if (bad >= 0) {
            INTEG_FAIL("%s: byte before SGE %d at -%lld overwritten (0x%02x)", what, i,
                       (long long)(a - p) - bad, p[bad]);
            return -1;
        }
        bad = integ_check(a, have, seed, off);
        if (bad >= 0) {
            INTEG_FAIL("%s: data mismatch in SGE %d at stream offset %llu "
                       "(got 0x%02x, %llu bytes, %d SGEs)", what, i,
                       (unsigned long long)(off + (uint64_t)bad), a[bad],
                       (unsigned long long)len, n);
            return -1;
        }
        off += have;
        p = a + have;
    }
    bad = integ_check_byte(p, (size_t)(area_hi - p), CANARY);
    if (bad >= 0) {
        INTEG_FAIL("%s: byte %lld past the data overwritten (0x%02x), %llu bytes",
                   what, bad, p[bad], (unsigned long long)len);
        return -1;
    }
    return 0;
}

static int post_ctrl_recv(struct integ_ep *e, int slot)
{
    struct siwarp_sge sge = { e->buf + slot * CTRL_SLOT, CTRL_SLOT, integ_lkey(e) };
    struct siwarp_recv_wr wr = { .wr_id = WRID(WR_CTRL_RECV, slot), .sg_list = &sge,
                                 .num_sge = 1 }, *bad;
    INTEG_CHECK_RC(siwarp_post_recv(e->qp, &wr, &bad));
    return 0;
}

static int post_ctrl_send(struct integ_ep *e, unsigned *next, const struct integ_msg *m)
{
    int slot = CTRL_NRECV + (int)(*next % CTRL_NSEND);
    struct siwarp_sge sge = { e->buf + slot * CTRL_SLOT, sizeof(*m), integ_lkey(e) };
    struct siwarp_send_wr wr = { .wr_id = WRID(WR_CTRL_SEND, slot), .sg_list = &sge,
                                 .num_sge = 1, .opcode = SIWARP_WR_SEND,
                                 .send_flags = SIWARP_SEND_SIGNALED }, *bad;

    (*next)++;
    memcpy(sge.addr, m, sizeof(*m));
    INTEG_CHECK_RC(siwarp_post_send(e->qp, &wr, &bad));
    return 0;
}

/* Wait for a completion whose wr_id is `want`; completions of control Sends
 * are absorbed, anything unexpected or failed is an error. */
static int wait_wr(struct integ_ep *e, uint64_t want, struct siwarp_wc *out,
                   const char *what)
{
    struct siwarp_wc wc;
    int rc;

    for (;;) {
        rc = integ_poll1(e, &wc, integ_timeout_ms());
        if (rc == -ETIMEDOUT) {
            struct siwarp_qp_attr a;
            siwarp_query_qp(e->qp, &a);
            INTEG_FAIL("%s: no completion in %d ms (QP %s, error '%s', term sent %#x "
                       "recv %#x)", what, integ_timeout_ms(),
                       siwarp_qp_state_str(a.state), a.error_str, a.term_sent,
                       a.term_recv);
            return -1;
        }
        if (rc < 0)
            return -1;
        if (wc.status != SIWARP_WC_SUCCESS) {
            INTEG_FAIL("%s: completion wr_id kind %u num %u status %s vendor_err %#x (%s)",
                       what, WR_KIND(wc.wr_id), WR_NUM(wc.wr_id),
                       siwarp_wc_status_str(wc.status), wc.vendor_err,
                       wc.vendor_err ? siwarp_term_str(wc.vendor_err) : "-");
            return -1;
        }
        if (wc.wr_id == want) {
            if (out)
                *out = wc;
            return 0;
        }
        if (WR_KIND(wc.wr_id) == WR_CTRL_SEND && wc.opcode == SIWARP_WC_SEND)
            continue;
        INTEG_FAIL("%s: unexpected completion wr_id kind %u num %u opcode %d "
                   "(waiting for kind %u num %u)", what, WR_KIND(wc.wr_id),
                   WR_NUM(wc.wr_id), wc.opcode, WR_KIND(want), WR_NUM(want));
        return -1;
    }
}

struct sched {
    const struct integ_step *steps;
    int n;
};

static uint64_t max_step(const struct sched *s)
{
    uint64_t m = 0;
    for (int i = 0; i < s->n; i++)
        if (s->steps[i].size > m)
            m = s->steps[i].size;
    return m;
}

/* server buffer: ctrl | R (2 * (max + 1 KiB)) | inv scratch 4 KiB */
static size_t srv_region(uint64_t max) { return 2 * ((size_t)max + 1024) + 4 * GAP; }

static int server_step(struct integ_ep *e, const struct integ_step *st, int i,
                       unsigned *nsend)
{
    uint64_t seed = step_seed(i, st->size);
    size_t rlen = srv_region(st->size ? st->size : 1);
    uint8_t *R = e->buf + CTRL_AREA, *t = R + GAP + (size_t)(i % 8);
    struct siwarp_mr *inv_mr = NULL;
    struct integ_msg go = { MSG_MAGIC, (uint32_t)i, 0, integ_lkey(e), 0 };
    struct siwarp_sge sge[4];
    struct siwarp_wc wc;
    int n = nsge_of(st), isrecv;
    char what[96];
    uint8_t *area_hi;

    snprintf(what, sizeof(what), "step %d %s %llu B x%d SGE (server)", i,
             integ_op_name[st->op], (unsigned long long)st->size, n);
    memset(R, CANARY, rlen);
    isrecv = st->op <= I_SEND_SE_INV || st->op == I_FENCE;
    if (st->op == I_READ || st->op == I_FENCE)
        integ_fill(t, st->size, seed, 0);
    go.raddr = (uint64_t)(uintptr_t)t;
    if (isrecv) {
        /* receive into a separate SGL after the source, with 32 spare bytes */
        uint8_t *rb = t + st->size + GAP + (size_t)(i % 5);
        struct siwarp_recv_wr wr = { .wr_id = WRID(WR_DATA_RECV, i), .sg_list = sge,
                                     .num_sge = n }, *bad;
        area_hi = rb + sgl_layout(rb, st->size + 32, n, integ_lkey(e), sge);
        INTEG_CHECK_RC(siwarp_post_recv(e->qp, &wr, &bad));
    } else {
        area_hi = t + st->size + GAP;
        INTEG_CHECK_RC(post_ctrl_recv(e, i % CTRL_NRECV));
    }
    if (st->op == I_SEND_INV || st->op == I_SEND_SE_INV) {
        uint8_t *scratch = R + rlen;
        INTEG_CHECK_RC(siwarp_reg_mr(e->pd, scratch, 4096, SIWARP_ACCESS_LOCAL_WRITE |
                                     SIWARP_ACCESS_REMOTE_WRITE, &inv_mr));
        go.inv_stag = siwarp_mr_stag(inv_mr);
    }
    if (post_ctrl_send(e, nsend, &go) < 0)
        return -1;
    if (wait_wr(e, isrecv ? WRID(WR_DATA_RECV, i) : WRID(WR_CTRL_RECV, i % CTRL_NRECV),
                &wc, what) < 0)
        return -1;
    INTEG_CHECK(wc.opcode == SIWARP_WC_RECV);
    if (isrecv) {
        int want_se = st->op == I_SEND_SE || st->op == I_SEND_SE_INV;
        int want_inv = st->op == I_SEND_INV || st->op == I_SEND_SE_INV;
        if (wc.byte_len != st->size) {
            INTEG_FAIL("%s: byte_len %u, expected %llu", what, wc.byte_len,
                       (unsigned long long)st->size);
            return -1;
        }
        if (!!(wc.wc_flags & SIWARP_WC_SOLICITED) != want_se ||
            !!(wc.wc_flags & SIWARP_WC_WITH_INV) != want_inv) {
            INTEG_FAIL("%s: wc_flags %#x (SOLICITED expected %d, WITH_INV expected %d)",
                       what, wc.wc_flags, want_se, want_inv);
            return -1;
        }
        if (want_inv && wc.invalidated_stag != go.inv_stag) {
            INTEG_FAIL("%s: invalidated_stag %#x, expected %#x", what,
                       wc.invalidated_stag, go.inv_stag);
            return -1;
        }
        if (sgl_verify(sge, n, st->op == I_FENCE ? step_seed(i, st->size) : seed,
                       st->size, (uint8_t *)sge[0].addr - GAP, area_hi, what) < 0) {
            if (st->op == I_FENCE)
                INTEG_FAIL("%s: the fenced Send did not carry the Read's data", what);
            return -1;
        }
    } else {
        struct integ_msg m;
        memcpy(&m, e->buf + (i % CTRL_NRECV) * CTRL_SLOT, sizeof(m));
        INTEG_CHECK(m.magic == MSG_MAGIC && m.step == (uint32_t)i);
        if (st->op == I_WRITE) {
            struct siwarp_sge one = { t, (uint32_t)st->size, 0 };
            if (sgl_verify(&one, 1, seed, st->size, t - GAP, area_hi, what) < 0)
                return -1;
        } else {
            INTEG_CHECK(integ_check(t, st->size, seed, 0) < 0);   /* source untouched */
        }
    }
    if (inv_mr)
        INTEG_CHECK_RC(siwarp_dereg_mr(inv_mr));
    return 0;
}

static int sched_server(const struct integ_cfg *c, void *arg, int afd)
{
    struct sched *s = arg;
    struct integ_ep e;
    uint16_t port;
    unsigned nsend = 0;
    int rc = -1;
    struct integ_msg bye = { MSG_MAGIC, STEP_BYE, 0, 0, 0 };

    if (integ_ep_init(&e, CTRL_AREA + srv_region(max_step(s)) + 4096,
                      CTRL_NSEND + 16, CTRL_NRECV + 16) < 0)
        goto out;
    if (integ_listen(&e, c, &port) < 0 || integ_announce(afd, port) < 0)
        goto out;
    if (integ_accept(&e, c, NULL, 0) < 0 || integ_check_nego(&e, c) < 0)
        goto out;
    for (int i = 0; i < s->n; i++)
        if (server_step(&e, &s->steps[i], i, &nsend) < 0)
            goto out;
    if (post_ctrl_send(&e, &nsend, &bye) < 0)
        goto out;
    /* the client closes after BYE; any error on the way is a failure */
    if (integ_wait_state(&e, -1, integ_timeout_ms(), NULL) < 0)
        goto out;
    rc = 0;
out:
    integ_ep_fini(&e);
    return rc;
}

static int client_wait_go(struct integ_ep *e, uint32_t step, struct integ_msg *m,
                          int *slot_io, const char *what)
{
    int slot = *slot_io;
    struct siwarp_wc wc;

    if (wait_wr(e, WRID(WR_CTRL_RECV, slot), &wc, what) < 0)
        return -1;
    memcpy(m, e->buf + slot * CTRL_SLOT, sizeof(*m));
    if (m->magic != MSG_MAGIC || m->step != step) {
        INTEG_FAIL("%s: GO message for step %u, expected %u", what, m->step, step);
        return -1;
    }
    INTEG_CHECK_RC(post_ctrl_recv(e, slot));
    *slot_io = (slot + 1) % CTRL_NRECV;
    return 0;
}

static const enum siwarp_wr_opcode wr_op[] = {
    [I_SEND] = SIWARP_WR_SEND, [I_SEND_SE] = SIWARP_WR_SEND_SE,
    [I_SEND_INV] = SIWARP_WR_SEND_INV, [I_SEND_SE_INV] = SIWARP_WR_SEND_SE_INV,
    [I_WRITE] = SIWARP_WR_WRITE, [I_READ] = SIWARP_WR_READ, [I_FENCE] = SIWARP_WR_SEND,
};

static int client_step(struct integ_ep *e, const struct integ_step *st, int i,
                       int *slot, unsigned *nsend, size_t half)
{
    uint64_t seed = step_seed(i, st->size);
    uint8_t *S = e->buf + CTRL_AREA + GAP + (size_t)(i % 7);
    uint8_t *D = e->buf + CTRL_AREA + half + GAP + (size_t)(i % 3);
    struct siwarp_sge sge[4];
    struct siwarp_send_wr wr, *bad;
    struct integ_msg go, chk = { MSG_MAGIC, (uint32_t)i, 0, 0, 0 };
    struct siwarp_wc wc;
    int n = nsge_of(st);
    char what[96];

    snprintf(what, sizeof(what), "step %d %s %llu B x%d SGE%s (client)", i,
             integ_op_name[st->op], (unsigned long long)st->size, n,
             st->unsignaled ? " unsignaled" : "");
    if (client_wait_go(e, (uint32_t)i, &go, slot, what) < 0)
        return -1;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = WRID(WR_DATA, i);
    wr.opcode = wr_op[st->op];
    wr.sg_list = sge;
    wr.num_sge = n;
    wr.send_flags = st->unsignaled ? 0 : SIWARP_SEND_SIGNALED;
    wr.invalidate_stag = go.inv_stag;
    wr.rdma.remote_addr = go.raddr;
    wr.rdma.rkey = go.rkey;

    if (st->op == I_READ || st->op == I_FENCE) {
        uint8_t *hi;
        memset(D - GAP, CANARY, st->size + 8 * GAP);
        hi = D + sgl_layout(D, st->size, n, integ_lkey(e), sge);
        if (st->op == I_FENCE) {
            /* unsignaled Read into D, then a fenced Send of the same D */
            struct siwarp_send_wr rd = wr;
            rd.wr_id = WRID(WR_FENCE_READ, i);
            rd.opcode = SIWARP_WR_READ;
            rd.send_flags = 0;
            wr.send_flags = SIWARP_SEND_SIGNALED | SIWARP_SEND_FENCE;
            rd.next = &wr;
            INTEG_CHECK_RC(siwarp_post_send(e->qp, &rd, &bad));
            if (wait_wr(e, WRID(WR_DATA, i), &wc, what) < 0)
                return -1;
            return 0;
        }
        wr.send_flags = SIWARP_SEND_SIGNALED;
        INTEG_CHECK_RC(siwarp_post_send(e->qp, &wr, &bad));
        if (wait_wr(e, WRID(WR_DATA, i), &wc, what) < 0)
            return -1;
        INTEG_CHECK(wc.opcode == SIWARP_WC_READ);
        if (sgl_verify(sge, n, seed, st->size, D - GAP, hi, what) < 0)
            return -1;
    } else {
        sgl_layout(S, st->size, n, integ_lkey(e), sge);
        sgl_fill(sge, n, seed);
        INTEG_CHECK_RC(siwarp_post_send(e->qp, &wr, &bad));
        if (!st->unsignaled) {
            if (wait_wr(e, WRID(WR_DATA, i), &wc, what) < 0)
                return -1;
            INTEG_CHECK(wc.opcode == (st->op == I_WRITE ? SIWARP_WC_WRITE : SIWARP_WC_SEND));
        }
    }
    if (st->op == I_WRITE || st->op == I_READ) {
        /* an unsignaled Write must not complete: the CHECK's completion is
         * the next one on the send queue, and wait_wr rejects strays */
        if (post_ctrl_send(e, nsend, &chk) < 0)
            return -1;
    }
    return 0;
}

static int sched_client(const struct integ_cfg *c, void *arg, uint16_t port)
{
    struct sched *s = arg;
    struct integ_ep e;
    struct integ_msg bye;
    size_t half = (size_t)max_step(s) + 8 * GAP + 64;
    unsigned nsend = 0;
    int slot = 0, rc = -1;

    if (integ_ep_init(&e, CTRL_AREA + 2 * half, CTRL_NSEND + 16, CTRL_NRECV + 16) < 0)
        goto out;
    for (int k = 0; k < CTRL_NRECV; k++)
        if (post_ctrl_recv(&e, k) < 0)
            goto out;
    if (integ_connect(&e, c, port) < 0 || integ_check_nego(&e, c) < 0)
        goto out;
    for (int i = 0; i < s->n; i++)
        if (client_step(&e, &s->steps[i], i, &slot, &nsend, half) < 0)
            goto out;
    if (client_wait_go(&e, STEP_BYE, &bye, &slot, "BYE") < 0)
        goto out;
    rc = 0;
    siwarp_disconnect(e.qp);
out:
    integ_ep_fini(&e);
    return rc;
}

int integ_run(const struct integ_cfg *c, const struct integ_step *steps, int n)
{
    struct sched s = { steps, n };

    return integ_pair(c, sched_server, sched_client, &s);
}

int integ_add(struct integ_step *steps, int n, enum integ_op op,
              const uint64_t *sizes, int nsizes, int nsge, int unsignaled)
{
    for (int i = 0; i < nsizes; i++) {
        steps[n].op = op;
        steps[n].size = sizes[i];
        steps[n].nsge = nsge;
        steps[n].unsignaled = unsignaled && op != I_READ && op != I_FENCE;
        n++;
    }
    return n;
}
