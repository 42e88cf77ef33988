/*
 * hostile.h - helpers shared by the hostile-peer tests: a context with a
 * loopback listener, raw TCP sockets, descriptor counting, and the
 * "listener still serves a healthy siwarp client" check.
 */
#ifndef SWP_HOSTILE_H
#define SWP_HOSTILE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "mpa.h"

struct henv {
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_listener *l;
    struct sockaddr_in at;
};

/* siw as initiator, defaults: rev 2, enhanced, IRD 1 ORD 1, no P2P */
static const uint8_t h_siw_req[] = {
    'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ', 'F', 'r', 'a', 'm', 'e',
    0x10, 0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x01,
};

static inline int h_count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    ASSERT(d != NULL);
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1;       /* the directory's own descriptor */
}

static inline struct sockaddr_in h_loopback(uint16_t port)
{
    struct sockaddr_in sin;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons(port);
    return sin;
}

static inline struct siwarp_qp *h_qp(struct henv *e)
{
    struct siwarp_qp_init_attr a;
    struct siwarp_qp *qp;

    memset(&a, 0, sizeof(a));
    a.send_cq = a.recv_cq = e->cq;
    a.max_send_wr = a.max_recv_wr = 8;
    a.max_sge = 1;
    ASSERT_OK(siwarp_create_qp(e->pd, &a, &qp));
    return qp;
}

/* A context; with timeout_ms > 0 also a loopback listener (CRC off, P2P
 * accepted with Write and Read RTRs, the given MPA timeout). */
static inline void h_env(struct henv *e, int timeout_ms)
{
    memset(e, 0, sizeof(*e));
    ASSERT_OK(siwarp_ctx_create(&e->ctx));
    ASSERT_OK(siwarp_alloc_pd(e->ctx, &e->pd));
    ASSERT_OK(siwarp_create_cq(e->ctx, 256, &e->cq));
    if (timeout_ms > 0) {
        struct siwarp_conn_param p;
        struct sockaddr_in sin = h_loopback(0);
        struct sockaddr_storage ss;

        siwarp_conn_param_default(&p);
        p.crc = 0;
        p.timeout_ms = timeout_ms;
        ASSERT_OK(siwarp_listen(e->ctx, (struct sockaddr *)&sin, sizeof(sin), &p, &e->l));
        ASSERT_OK(siwarp_listener_addr(e->l, &ss));
        memcpy(&e->at, &ss, sizeof(e->at));
    }
}

static inline int h_raw_connect(const struct sockaddr_in *to)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    ASSERT(fd >= 0);
    ASSERT_OK(connect(fd, (const struct sockaddr *)to, sizeof(*to)));
    return fd;
}

static inline void h_send_all(int fd, const void *b, size_t n)
{
    ASSERT_EQ(send(fd, b, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Progress until fd reads end of stream or reset: elapsed ms, or -1. */
static inline int h_wait_closed(struct henv *e, int fd, int ms)
{
    uint64_t t0 = swp_now_ns(), end = t0 + (uint64_t)ms * 1000000ull;
    char b[256];

    while (swp_now_ns() < end) {
        ssize_t n;

        siwarp_wait(e->ctx, 10);
        n = recv(fd, b, sizeof(b), MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return (int)((swp_now_ns() - t0) / 1000000ull);
    }
    return -1;
}

/* Progress until the process has `want` descriptors (or time runs out). */
static inline int h_wait_fds(struct henv *e, int want, int ms)
{
    uint64_t end = swp_now_ns() + (uint64_t)ms * 1000000ull;
    int n;

    while ((n = h_count_fds()) != want && swp_now_ns() < end)
        siwarp_wait(e->ctx, 10);
    return n;
}

/* Read exactly n bytes, progressing the context meanwhile. */
static inline void h_read_full(struct henv *e, int fd, uint8_t *b, size_t n)
{
    size_t got = 0;
    uint64_t end = swp_now_ns() + 5000000000ull;

    while (got < n) {
        ssize_t r = recv(fd, b + got, n - got, MSG_DONTWAIT);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        ASSERT(r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
        ASSERT(swp_now_ns() < end);
        siwarp_wait(e->ctx, 5);
    }
}

/* A siwarp QP connects to the listener, is accepted, both reach RTS within
 * ms; both QPs are destroyed again.  Returns the time it took in ms. */
static inline int h_healthy(struct henv *e, int ms)
{
    struct siwarp_conn_req *req = NULL;
    struct siwarp_qp *a = h_qp(e), *b = h_qp(e);
    struct siwarp_qp_attr qa, qb;
    uint64_t t0 = swp_now_ns();
    struct siwarp_conn_param p;

    siwarp_conn_param_default(&p);
    p.timeout_ms = ms;
    ASSERT_OK(siwarp_connect(a, (struct sockaddr *)&e->at, sizeof(e->at), &p));
    ASSERT_OK(siwarp_get_conn_request_wait(e->l, ms, &req));
    ASSERT_OK(siwarp_accept(req, b, NULL));
    ASSERT_OK(siwarp_connect_wait(a, ms));
    for (int i = 0; i < ms; i++) {
        ASSERT_OK(siwarp_query_qp(b, &qb));
        if (qb.state != SIWARP_QPS_CONNECTING)
            break;
        siwarp_wait(e->ctx, 1);
    }
    ASSERT_OK(siwarp_query_qp(a, &qa));
    ASSERT_OK(siwarp_query_qp(b, &qb));
    ASSERT_EQ(qa.state, SIWARP_QPS_RTS);
    ASSERT_EQ(qb.state, SIWARP_QPS_RTS);
    ASSERT_OK(siwarp_destroy_qp(a));
    ASSERT_OK(siwarp_destroy_qp(b));
    return (int)((swp_now_ns() - t0) / 1000000ull);
}

static inline void h_fini(struct henv *e)
{
    if (e->l)
        ASSERT_OK(siwarp_listener_destroy(e->l));
    ASSERT_OK(siwarp_destroy_cq(e->cq));
    ASSERT_OK(siwarp_dealloc_pd(e->pd));
    siwarp_ctx_destroy(e->ctx);
}

#endif /* SWP_HOSTILE_H */
