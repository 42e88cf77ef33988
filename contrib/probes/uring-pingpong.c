/* uring-pingpong.c - does io_uring beat a busy-polled recv() for small
 * messages on this host?  A probe behind a "tried, not kept" line in the
 * README, not part of the build:
 *
 *   cc -O2 -o /tmp/uring-pingpong contrib/probes/uring-pingpong.c -luring
 *   /tmp/uring-pingpong spin|multishot|single [ITERS [BYTES]]
 *
 * Two processes on loopback TCP (TCP_NODELAY), pinned to CPUs 0 and 1, play
 * ping-pong; the parent prints half the median and mean round trip.
 *   spin       recv(MSG_DONTWAIT) in a loop: what bench-raw.sh's raw TCP
 *              ping-pong and libsiwarp's receive path do
 *   multishot  one multishot recv with a provided-buffer ring, and the
 *              completion queue polled from user space: no syscall at all
 *              to learn that data arrived, which is the appeal
 *   single     a plain recv SQE, resubmitted after each completion
 * The io_uring variants depend on the kernel running the completion as task
 * work in the receiving task, which it is told of by an interrupt when that
 * task spins in user space.  Where that interrupt is slow (a paravirtualised
 * guest) every message waits for it. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum mode { SPIN, MULTISHOT, SINGLE };

#define NBUF 64
#define BUFSZ 4096
#define WARMUP 1000

static enum mode mode;
static struct io_uring ring;
static struct io_uring_buf_ring *bring;
static char *bufs;
static char single_buf[BUFSZ];

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof(s), &s) < 0) {
        perror("sched_setaffinity");
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static void die(const char *what, int err)
{
    fprintf(stderr, "uring-pingpong: %s: %s\n", what, strerror(err));
    exit(1);
}

static void arm(int fd)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    if (MULTISHOT == mode) {
        io_uring_prep_recv_multishot(sqe, fd, NULL, 0, 0);
        sqe->flags |= IOSQE_BUFFER_SELECT;
        sqe->buf_group = 1;
    } else {
        io_uring_prep_recv(sqe, fd, single_buf, BUFSZ, 0);
    }
    int rc = io_uring_submit(&ring);
    if (rc < 0) {
        die("io_uring_submit", -rc);
    }
}

static void setup_ring(int fd)
{
    int rc = io_uring_queue_init(64, &ring, 0);
    if (rc < 0) {
        die("io_uring_queue_init", -rc);
    }
    if (MULTISHOT == mode) {
        bufs = aligned_alloc(4096, NBUF * BUFSZ);
        if (!bufs || posix_memalign((void **) &bring, 4096, NBUF * sizeof(struct io_uring_buf))) {
            die("allocating the buffer ring", ENOMEM);
        }
        struct io_uring_buf_reg reg = { .ring_addr = (unsigned long) bring,
                                        .ring_entries = NBUF, .bgid = 1 };
        rc = io_uring_register_buf_ring(&ring, &reg, 0);
        if (rc < 0) {
            die("io_uring_register_buf_ring", -rc);
        }
        io_uring_buf_ring_init(bring);
        for (int i = 0; i < NBUF; i++) {
            io_uring_buf_ring_add(bring, bufs + i * BUFSZ, BUFSZ, i,
                                  io_uring_buf_ring_mask(NBUF), i);
        }
        io_uring_buf_ring_advance(bring, NBUF);
    }
    arm(fd);
}

static void recv_uring(int fd, char *dst, int want)
{
    for (int got = 0; got < want;) {
        struct io_uring_cqe *cqe;
        while (io_uring_peek_cqe(&ring, &cqe) != 0) {
            /* user-space spin: the point of the exercise */
        }
        int res = cqe->res;
        unsigned flags = cqe->flags;
        if (res <= 0) {
            die("recv completion", res < 0 ? -res : EPIPE);
        }
        if (MULTISHOT == mode) {
            int bid = (int) (flags >> IORING_CQE_BUFFER_SHIFT);
            memcpy(dst + got, bufs + bid * BUFSZ, (size_t) res);
            io_uring_cqe_seen(&ring, cqe);
            io_uring_buf_ring_add(bring, bufs + bid * BUFSZ, BUFSZ, bid,
                                  io_uring_buf_ring_mask(NBUF), 0);
            io_uring_buf_ring_advance(bring, 1);
            if (!(flags & IORING_CQE_F_MORE)) {
                arm(fd);        /* the kernel ended the multishot */
            }
        } else {
            memcpy(dst + got, single_buf, (size_t) res);
            io_uring_cqe_seen(&ring, cqe);
            arm(fd);
        }
        got += res;
    }
}

static void recv_spin(int fd, char *dst, int want)
{
    for (int got = 0; got < want;) {
        ssize_t r = recv(fd, dst + got, (size_t) (want - got), MSG_DONTWAIT);
        if (r > 0) {
            got += (int) r;
        } else if (0 == r || errno != EAGAIN) {
            die("recv", r ? errno : EPIPE);
        }
    }
}

static void recv_msg(int fd, char *dst, int want)
{
    if (SPIN == mode) {
        recv_spin(fd, dst, want);
    } else {
        recv_uring(fd, dst, want);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: uring-pingpong spin|multishot|single [ITERS [BYTES]]\n");
        return 2;
    }
    mode = !strcmp(argv[1], "multishot") ? MULTISHOT : !strcmp(argv[1], "single") ? SINGLE : SPIN;
    int n = argc > 2 ? atoi(argv[2]) : 50000, size = argc > 3 ? atoi(argv[3]) : 8, one = 1;
    if (n < 1 || size < 1 || size > BUFSZ) {
        fprintf(stderr, "uring-pingpong: ITERS >= 1, 1 <= BYTES <= %d\n", BUFSZ);
        return 2;
    }
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof(a);
    if (ls < 0 || bind(ls, (struct sockaddr *) &a, sizeof(a)) < 0 ||
        getsockname(ls, (struct sockaddr *) &a, &alen) < 0 || listen(ls, 1) < 0) {
        die("listening socket", errno);
    }
    pid_t child = fork();
    int fd;
    if (0 == child) {
        pin(1);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &a, sizeof(a)) < 0) {
            die("connect", errno);
        }
    } else {
        pin(0);
        fd = accept(ls, NULL, NULL);
        if (fd < 0) {
            die("accept", errno);
        }
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (SPIN != mode) {
        setup_ring(fd);
    }
    char buf[BUFSZ];
    double *rtt = malloc(sizeof(double) * (size_t) n);
    if (!rtt) {
        die("malloc", ENOMEM);
    }
    memset(buf, 1, sizeof(buf));
    for (int i = -WARMUP; i < n; i++) {
        if (child) {
            double t0 = now_us();
            if (send(fd, buf, (size_t) size, 0) != size) {
                die("send", errno);
            }
            recv_msg(fd, buf, size);
            if (i >= 0) {
                rtt[i] = now_us() - t0;
            }
        } else {
            recv_msg(fd, buf, size);
            if (send(fd, buf, (size_t) size, 0) != size) {
                die("send", errno);
            }
        }
    }
    if (child) {
        double sum = 0;
        qsort(rtt, (size_t) n, sizeof(double), cmp_double);
        for (int i = 0; i < n; i++) {
            sum += rtt[i];
        }
        printf("%s %d B: one way (half round trip) median %.2f us, mean %.2f us\n",
               argv[1], size, rtt[n / 2] / 2, sum / n / 2);
        waitpid(child, NULL, 0);
    }
    return 0;
}
