/* wait-pingpong.c - should a rank that shares its core with another busy
 * task sleep while it waits for a message, instead of spinning?  A probe
 * behind the "Sleeping instead of spinning, under load" entry of
 * contrib/PERFORMANCE.md, not part of the build:
 *
 *   cc -O2 -o /tmp/wait-pingpong contrib/probes/wait-pingpong.c
 *   /tmp/wait-pingpong spin|block|hybrid [ITERS [load]]
 *
 * Two processes on loopback TCP (TCP_NODELAY), pinned to CPUs 0 and 1, play
 * an 8-octet ping-pong; the parent prints the one-way mean, median, 99th
 * percentile and maximum (half the round trip).  With "load" a third
 * process spins on CPU 0, the parent's core, for as long as the run lasts.
 *   spin    recv(MSG_DONTWAIT) in a loop: what libsiwarp's receive path
 *           and every MPI transport here do
 *   block   a blocking recv(): the task sleeps until the data is there
 *   hybrid  HYBRID_SPINS empty polls, then poll() until data arrives
 * The question is what waking a sleeping task costs against what a
 * spinning one loses by waiting for its share of a contended core. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum mode { SPIN, BLOCK, HYBRID };

#define WARMUP 1000
#define MSG 8
#define HYBRID_SPINS 2000

static double now_us(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int pin(int cpu)
{
    cpu_set_t s;

    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return sched_setaffinity(0, sizeof(s), &s);
}

/* Read exactly n octets the way the mode says; -1 on error or EOF. */
static int read_all(int fd, char *buf, size_t n, enum mode mode)
{
    size_t got = 0;
    long empty = 0;

    while (got < n) {
        ssize_t r;

        if (mode == HYBRID && empty >= HYBRID_SPINS) {
            struct pollfd p = { .fd = fd, .events = POLLIN };

            if (poll(&p, 1, 1000) < 0 && errno != EINTR)
                return -1;
            empty = 0;
        }
        r = recv(fd, buf + got, n - got, mode == BLOCK ? 0 : MSG_DONTWAIT);
        if (r > 0) {
            got += (size_t)r;
        } else if (r == 0) {
            return -1;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            empty++;
        } else {
            return -1;
        }
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static void usage(void)
{
    fprintf(stderr, "usage: wait-pingpong spin|block|hybrid [ITERS [load]]\n");
}

int main(int argc, char **argv)
{
    enum mode mode;
    int iters = argc > 2 ? atoi(argv[2]) : 50000;
    int load = argc > 3 && strcmp(argv[3], "load") == 0;
    struct sockaddr_in a = { .sin_family = AF_INET };
    socklen_t alen = sizeof(a);
    int one = 1, ls, s, rc = 0;
    pid_t echo, spinner = -1;
    char buf[MSG] = { 0 };
    double *lat, sum = 0;

    if (argc < 2 || iters <= 0) {
        usage();
        return 2;
    }
    if (strcmp(argv[1], "spin") == 0)
        mode = SPIN;
    else if (strcmp(argv[1], "block") == 0)
        mode = BLOCK;
    else if (strcmp(argv[1], "hybrid") == 0)
        mode = HYBRID;
    else {
        usage();
        return 2;
    }

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(ls, 1) < 0 ||
        getsockname(ls, (struct sockaddr *)&a, &alen) < 0) {
        perror("wait-pingpong: listen");
        return 1;
    }
    echo = fork();
    if (echo < 0) {
        perror("wait-pingpong: fork");
        return 1;
    }
    if (echo == 0) {
        int c = socket(AF_INET, SOCK_STREAM, 0);

        if (pin(1) < 0 || c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
            _exit(1);
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        for (int i = 0; i < iters + WARMUP; i++)
            if (read_all(c, buf, MSG, mode) < 0 || send(c, buf, MSG, MSG_NOSIGNAL) != MSG)
                _exit(1);
        _exit(0);
    }
    if (load) {
        spinner = fork();
        if (spinner == 0) {
            volatile unsigned long x = 0;

            if (pin(0) < 0)
                _exit(1);
            for (;;)
                x++;
        }
    }
    if (pin(0) < 0 || (s = accept(ls, NULL, NULL)) < 0) {
        perror("wait-pingpong: accept");
        return 1;
    }
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    lat = malloc(sizeof(*lat) * (size_t)iters);
    if (!lat)
        return 1;
    for (int i = 0; i < iters + WARMUP; i++) {
        double t = now_us();

        if (send(s, buf, MSG, MSG_NOSIGNAL) != MSG || read_all(s, buf, MSG, mode) < 0) {
            fprintf(stderr, "wait-pingpong: round trip %d failed\n", i);
            rc = 1;
            break;
        }
        if (i >= WARMUP)
            lat[i - WARMUP] = (now_us() - t) / 2;
    }
    if (spinner > 0) {
        kill(spinner, SIGKILL);
        waitpid(spinner, NULL, 0);
    }
    close(s);
    waitpid(echo, NULL, 0);
    if (rc == 0) {
        for (int i = 0; i < iters; i++)
            sum += lat[i];
        qsort(lat, (size_t)iters, sizeof(*lat), cmp_double);
        printf("%s%s: one way mean %.2f median %.2f p99 %.2f max %.1f us\n", argv[1],
               load ? " (loaded)" : "", sum / iters, lat[iters / 2],
               lat[(size_t)iters * 99 / 100], lat[iters - 1]);
    }
    free(lat);
    return rc;
}
