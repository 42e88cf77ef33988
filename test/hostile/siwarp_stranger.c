/*
 * siwarp_stranger.c - a process outside an MPI job knocks at its siwarp
 * BTL listeners (run-mpi-tests.sh: hostile; mpi_stranger is the job).
 *
 * Usage: siwarp_stranger RECORD BOUND_MS.  RECORD holds the requests the
 * job's ranks sent each other (SIWARP_BTL_TEST_RECORD: "iwarp|tcp HOST
 * PORT HEX" per line).  For each one the stranger
 *   - plays it again, byte for byte, to the listener it went to, and
 *   - forges one: the same job id, ranks and a new attempt number, a fresh
 *     nonce, but no key (a random mac);
 * and both must be refused: an MPA Reject that carries no proof, or a
 * fallback connection closed before a byte came back.  Then it stalls in
 * the middle of an MPA Request and of a fallback HELLO: the listener must
 * close each within BOUND_MS.  TAP lines out; exit 1 on any failure.
 *
 * The BTL's private data (btl_siwarp.h, mca_btl_siwarp_conn_pd_t), as far
 * as the stranger needs it: 88 bytes, reason at 5, attempt (big-endian) at
 * 32, nonce at 40, mac at 56.  A fallback frame header is 24 bytes: length
 * (big-endian) at 0, op at 4 (1: HELLO).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>

#include "siwarp/siwarp.h"

#define PD_LEN       88
#define PD_REASON    5
#define PD_ATTEMPT   32
#define PD_NONCE     40
#define PD_MAC       56
#define PD_HEX       176           /* the record's hex digits: 2 * PD_LEN */
_Static_assert(PD_HEX == 2 * PD_LEN, "a record holds the private data in hex");
#define STR_(x) #x
#define STR(x)  STR_(x)
#define REASON_UNKNOWN 2
#define FRAME_HDR    24
#define OP_HELLO     1
#define MAX_RECORDS  64

struct record {
    char kind[8];
    struct sockaddr_in to;
    uint8_t pd[PD_LEN];
};

static int n_test, n_failed, bound_ms;

static void result(int ok, const char *what, const struct record *r, const char *detail)
{
    char host[INET_ADDRSTRLEN];

    inet_ntop(AF_INET, &r->to.sin_addr, host, sizeof(host));
    n_test++;
    if (!ok) {
        n_failed++;
    }
    printf("%sok %d - %s %s to %s:%u%s%s\n", ok ? "" : "not ", n_test, r->kind, what, host,
           ntohs(r->to.sin_port), detail ? ": " : "", detail ? detail : "");
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

static int read_records(const char *path, struct record *r, int max)
{
    FILE *f = fopen(path, "r");
    char host[64], hex[2 * PD_LEN + 1];
    unsigned port;
    int n = 0;

    if (!f) {
        perror(path);
        return -1;
    }
    while (n < max && 4 == fscanf(f, "%7s %63s %u %" STR(PD_HEX) "s", r[n].kind, host, &port, hex)) {
        memset(&r[n].to, 0, sizeof(r[n].to));
        r[n].to.sin_family = AF_INET;
        r[n].to.sin_port = htons((uint16_t) port);
        if (1 != inet_pton(AF_INET, host, &r[n].to.sin_addr) || strlen(hex) != 2 * PD_LEN) {
            continue;
        }
        for (int i = 0; i < PD_LEN; i++) {
            sscanf(hex + 2 * i, "%2hhx", &r[n].pd[i]);
        }
        n++;
    }
    fclose(f);
    return n;
}

/* An MPA exchange with this private data: refused with an unproven Reject? */
static void knock_iwarp(struct siwarp_pd *pd, struct siwarp_cq *cq,
                        const struct record *r, const uint8_t *data, const char *what)
{
    struct siwarp_qp_init_attr a = {.send_cq = cq, .recv_cq = cq, .max_send_wr = 4,
                                    .max_recv_wr = 4, .max_sge = 1};
    struct siwarp_conn_param p;
    struct siwarp_qp_attr attr;
    struct siwarp_qp *qp;
    char detail[160];
    int rc;

    if (siwarp_create_qp(pd, &a, &qp) < 0) {
        result(0, what, r, "siwarp_create_qp failed");
        return;
    }
    siwarp_conn_param_default(&p);
    p.v1_fallback = p.markers_fallback = 0;
    p.timeout_ms = bound_ms;
    p.private_data = data;
    p.private_data_len = PD_LEN;
    rc = siwarp_connect(qp, (const struct sockaddr *) &r->to, sizeof(r->to), &p);
    if (0 == rc) {
        rc = siwarp_connect_wait(qp, bound_ms + 1000);
    }
    siwarp_query_qp(qp, &attr);
    snprintf(detail, sizeof(detail), "connect %d, state %s, error %d (%s)", rc,
             siwarp_qp_state_str(attr.state), attr.error, attr.error_str);
    /* refused by an MPA Reject whose private data proves nothing: reason
     * UNKNOWN; the QP never reached RTS, so not a byte could be sent */
    result(rc < 0 && SIWARP_QPS_RTS != attr.state && -ECONNABORTED == attr.error &&
           attr.peer_private_data_len >= PD_LEN &&
           REASON_UNKNOWN == attr.peer_private_data[PD_REASON], what, r, detail);
    siwarp_destroy_qp(qp);
}

/* A fallback HELLO with this private data: closed, nothing answered? */
static void knock_tcp(const struct record *r, const uint8_t *data, const char *what)
{
    uint8_t frame[FRAME_HDR + PD_LEN] = {0}, b[256];
    uint32_t len = htonl(PD_LEN);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    uint64_t end = now_ms() + (uint64_t) bound_ms;
    size_t answered = 0;
    int closed = 0;
    char detail[96];

    memcpy(frame, &len, 4);
    frame[4] = OP_HELLO;
    memcpy(frame + FRAME_HDR, data, PD_LEN);
    if (fd < 0 || connect(fd, (const struct sockaddr *) &r->to, sizeof(r->to)) < 0 ||
        send(fd, frame, sizeof(frame), MSG_NOSIGNAL) != (ssize_t) sizeof(frame)) {
        result(0, what, r, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return;
    }
    while (!closed && now_ms() < end) {
        ssize_t n;
        if (poll(&pfd, 1, 50) <= 0) {
            continue;
        }
        n = recv(fd, b, sizeof(b), 0);
        if (n > 0) {
            answered += (size_t) n;
        } else if (0 == n || ECONNRESET == errno) {
            closed = 1;
        }
    }
    close(fd);
    snprintf(detail, sizeof(detail), "%s, %zu bytes answered",
             closed ? "closed" : "still open", answered);
    result(closed && 0 == answered, what, r, detail);
}

/* Connect, send the first `part` bytes of what a request would be, stop:
 * closed by the listener within bound_ms? */
static void stall(const struct record *r, const char *what, const void *part, size_t len)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    uint64_t t0 = now_ms(), end = t0 + 2u * (uint64_t) bound_ms;
    int closed = 0;
    char detail[96], b[256];

    if (fd < 0 || connect(fd, (const struct sockaddr *) &r->to, sizeof(r->to)) < 0 ||
        send(fd, part, len, MSG_NOSIGNAL) != (ssize_t) len) {
        result(0, what, r, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return;
    }
    while (!closed && now_ms() < end) {
        if (poll(&pfd, 1, 50) > 0) {
            ssize_t n = recv(fd, b, sizeof(b), 0);
            closed = 0 == n || (n < 0 && ECONNRESET == errno);
        }
    }
    close(fd);
    snprintf(detail, sizeof(detail), "%s after %llu ms (bound %d ms)",
             closed ? "closed" : "still open", (unsigned long long) (now_ms() - t0), bound_ms);
    result(closed && now_ms() - t0 <= (uint64_t) bound_ms + 1000, what, r, detail);
}

int main(int argc, char **argv)
{
    static struct record rec[MAX_RECORDS];
    static const char mpa_req_part[] = "MPA ID Req";
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    const struct record *iw = NULL, *tcp = NULL;
    int n;

    if (argc != 3) {
        fprintf(stderr, "usage: siwarp_stranger RECORD BOUND_MS\n");
        return 2;
    }
    bound_ms = atoi(argv[2]);
    n = read_records(argv[1], rec, MAX_RECORDS);
    if (n <= 0) {
        fprintf(stderr, "siwarp_stranger: no requests recorded in %s\n", argv[1]);
        return 1;
    }
    if (siwarp_ctx_create_dev("soft", &ctx) < 0 || siwarp_alloc_pd(ctx, &pd) < 0 ||
        siwarp_create_cq(ctx, 64, &cq) < 0) {
        fprintf(stderr, "siwarp_stranger: no libsiwarp context\n");
        return 1;
    }
    for (int i = 0; i < n; i++) {
        uint8_t forged[PD_LEN];
        uint64_t attempt;
        int iwarp = 0 == strcmp(rec[i].kind, "iwarp");

        memcpy(forged, rec[i].pd, PD_LEN);
        memcpy(&attempt, forged + PD_ATTEMPT, 8);
        attempt = htobe64(be64toh(attempt) + 1000);
        memcpy(forged + PD_ATTEMPT, &attempt, 8);
        if (getrandom(forged + PD_NONCE, PD_LEN - PD_NONCE, 0) != PD_LEN - PD_NONCE) {
            return 1;
        }
        if (iwarp) {
            knock_iwarp(pd, cq, &rec[i], rec[i].pd, "recorded request played again");
            knock_iwarp(pd, cq, &rec[i], forged, "right job and rank, no key");
            iw = iw ? iw : &rec[i];
        } else {
            knock_tcp(&rec[i], rec[i].pd, "recorded hello played again");
            knock_tcp(&rec[i], forged, "right job and rank, no key");
            tcp = tcp ? tcp : &rec[i];
        }
    }
    if (iw) {
        stall(iw, "stalled inside the MPA Request", mpa_req_part, sizeof(mpa_req_part) - 1);
    }
    if (tcp) {
        uint8_t half[FRAME_HDR + PD_LEN / 2] = {0};
        uint32_t len = htonl(PD_LEN);
        memcpy(half, &len, 4);
        half[4] = OP_HELLO;
        memcpy(half + FRAME_HDR, tcp->pd, PD_LEN / 2);
        stall(tcp, "stalled inside the fallback HELLO", half, sizeof(half));
    }
    siwarp_destroy_cq(cq);
    siwarp_dealloc_pd(pd);
    siwarp_ctx_destroy(ctx);
    printf("1..%d\n", n_test);
    return n_failed ? 1 : 0;
}
