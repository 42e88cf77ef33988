/*
 * rndv-floor.c - the floor that the kernel's TCP sets under a mid-size MPI
 * ping-pong on this host, and whether a sender that hands the kernel its
 * pages instead of copying them lowers it.  Evidence for
 * contrib/PERFORMANCE.md ("The floor under the mid-size ping-pong"); not
 * part of the build:
 *
 *   cc -O2 -o /tmp/rndv-floor contrib/probes/rndv-floor.c
 *   /tmp/rndv-floor [BYTES [ITERS [ROUNDS [READ_MAX]]]]
 *
 * Two processes on loopback TCP (TCP_NODELAY; recv and send with
 * MSG_DONTWAIT, busy-polled as MPI transports poll), pinned to CPUs 0 and
 * 1, page-aligned buffers that are never changed; each plays a symmetric ping-pong of BYTES, as
 * osu_latency does, in three ways, alternating within every round:
 *   eager   the message alone: one hop (an eager Send's floor)
 *   rndv    a 64-octet header, a 64-octet answer, then the message: the
 *           three hops of every rendezvous (ob1's RGET: header, Read
 *           Request, Response; btl tcp's put: RNDV, ACK, data), with no
 *           MPI, no matching and no integrity check
 *   splice  rndv, the message sent by vmsplice() into a pipe and splice()
 *           into the socket: spliced pages reach a local socket by
 *           reference (MSG_ZEROCOPY's are copied on local delivery:
 *           tcp-streams.c), so the receiver's recv() is the only copy
 * READ_MAX caps what one recv() asks for (default: all that is missing),
 * as a receiver that reads FPDU by FPDU would.
 * Prints each round's one-way time (half the round trip, mean of ITERS
 * after ITERS/10 untimed) and the medians.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* microseconds on the monotonic clock that NTP does not slew */
static double mono_us(void)
{
    struct timespec t;

    if (clock_gettime(CLOCK_MONOTONIC_RAW, &t))
        die("clock_gettime");
    return 1e6 * (double)t.tv_sec + 1e-3 * (double)t.tv_nsec;
}

/* this process on one CPU only: the two ranks of a bound MPI job */
static void bind_cpu(int cpu)
{
    cpu_set_t only;

    CPU_ZERO(&only);
    CPU_SET(cpu, &only);
    if (sched_setaffinity(0, sizeof(only), &only))
        die("sched_setaffinity");
}

static size_t read_max;

static void recv_all(int fd, char *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        size_t want = len - got;
        if (read_max && want > read_max)
            want = read_max;
        ssize_t n = recv(fd, buf + got, want, MSG_DONTWAIT);
        if (n > 0)
            got += n;
        else if (n == 0)
            exit(0);
        else if (errno != EAGAIN)
            die("recv");
    }
}

static void send_copy(int fd, const char *buf, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, buf + off, len - off, MSG_DONTWAIT);
        if (n > 0)
            off += n;
        else if (errno != EAGAIN)
            die("send");
    }
}

/* vmsplice what fits into the pipe, splice the pipe into the socket,
 * until all of it left */
static void send_splice(int fd, int pr, int pw, const char *buf, size_t len)
{
    size_t in = 0, out = 0;
    while (out < len) {
        if (in < len) {
            struct iovec v = { (void *)(buf + in), len - in };
            ssize_t n = vmsplice(pw, &v, 1, SPLICE_F_NONBLOCK);
            if (n > 0)
                in += n;
            else if (n < 0 && errno != EAGAIN)
                die("vmsplice");
        }
        ssize_t n = splice(pr, NULL, fd, NULL, in - out, SPLICE_F_NONBLOCK | SPLICE_F_MOVE |
                           (in < len ? SPLICE_F_MORE : 0));
        if (n > 0)
            out += n;
        else if (n < 0 && errno != EAGAIN)
            die("splice");
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* one side's half of a round: receive, then answer (the parent starts
 * with its answer) */
static void serve(int fd, int pr, int pw, int mode, char *buf, char *rbuf, size_t len, int first)
{
    char h[64] = { 0 };

    if (!first) {
        if (mode)
            recv_all(fd, h, sizeof(h)), send_copy(fd, h, sizeof(h));
        recv_all(fd, rbuf, len);
    }
    if (mode) {
        send_copy(fd, h, sizeof(h));
        recv_all(fd, h, sizeof(h));
    }
    if (mode == 2)
        send_splice(fd, pr, pw, buf, len);
    else
        send_copy(fd, buf, len);
}

int main(int argc, char **argv)
{
    size_t len = argc > 1 ? strtoul(argv[1], NULL, 0) : 262144;
    int iters = argc > 2 ? atoi(argv[2]) : 2000;
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    read_max = argc > 4 ? strtoul(argv[4], NULL, 0) : 0;
    int one = 1, lfd, fd, p[2];
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof(a);
    char *buf, *rbuf;
    static const char *name[3] = { "eager", "rndv", "splice" };

    if (posix_memalign((void **)&buf, 4096, len) || posix_memalign((void **)&rbuf, 4096, len))
        die("posix_memalign");
    memset(buf, 0x5a, len);
    memset(rbuf, 0, len);
    if (rounds > 64)
        rounds = 64;
    lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (void *)&a, sizeof(a)) || listen(lfd, 1) ||
        getsockname(lfd, (void *)&a, &al))
        die("listen");
    if (pipe2(p, O_NONBLOCK) || fcntl(p[1], F_SETPIPE_SZ, 1 << 20) < 0)
        die("pipe");
    pid_t child = fork();
    if (child == 0) {
        bind_cpu(1);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (void *)&a, sizeof(a)))
            die("connect");
    } else {
        bind_cpu(0);
        fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            die("accept");
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

    double res[3][64];
    for (int r = 0; r < rounds; r++) {
        for (int m = 0; m < 3; m++) {
            double t0 = 0;
            for (int i = -iters / 10; i < iters; i++) {
                if (i == 0)
                    t0 = mono_us();
                if (child) {
                    serve(fd, p[0], p[1], m, buf, rbuf, len, 1);
                    /* the answer: the child's header (rndv) and message */
                    if (m)
                        recv_all(fd, rbuf, 64), send_copy(fd, rbuf, 64);
                    recv_all(fd, rbuf, len);
                } else {
                    serve(fd, p[0], p[1], m, buf, rbuf, len, 0);
                }
            }
            res[m][r] = (mono_us() - t0) / iters / 2;
            if (child)
                printf("round %d %-6s %zu B: %.2f us one way\n", r, name[m], len, res[m][r]);
        }
    }
    if (child) {
        for (int m = 0; m < 3; m++)
            qsort(res[m], rounds, sizeof(double), cmp);
        printf("median %zu B: eager %.2f rndv %.2f splice %.2f us one way\n", len,
               res[0][rounds / 2], res[1][rounds / 2], res[2][rounds / 2]);
        waitpid(child, NULL, 0);
    }
    close(fd);
    return 0;
}
