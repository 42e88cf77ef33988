/* tcp-two-sockets.c - what does a ping-pong lose when each direction has
 * a TCP connection of its own?  The probe behind uct_siwarp's one
 * connection per pair of ifaces (uct_siwarp/uct_siwarp_conn.c, and
 * contrib/PERFORMANCE.md, "UCX transport"); not part of the build:
 *
 *   cc -O2 -o /tmp/tcp-two-sockets contrib/probes/tcp-two-sockets.c
 *   /tmp/tcp-two-sockets one|two [BYTES [ITERS]]
 *
 * Two processes on loopback TCP (TCP_NODELAY), pinned to CPUs 0 and 1,
 * busy-poll (recv with MSG_DONTWAIT) an 8-octet ping-pong, after 10,000
 * untimed rounds; the parent prints the mean round trip.
 *   one  both directions on one connection: a reply carries the ACK of the
 *        message it answers
 *   two  the ping on one connection and the pong on another, as two
 *        connect-to-iface eps each opening their own: every message is
 *        also answered by a bare ACK segment on its own socket */
#define _GNU_SOURCE
#include <arpa/inet.h>
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

#define WARMUP 10000

static double now_us(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static int listen_any(int *port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t n = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM, 0);

    if (l < 0 || bind(l, (struct sockaddr*)&a, sizeof(a)) < 0 || listen(l, 4) < 0 ||
        getsockname(l, (struct sockaddr*)&a, &n) < 0) {
        die("listen");
    }
    *port = ntohs(a.sin_port);
    return l;
}

static void nodelay(int s)
{
    int one = 1;

    if (setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
        die("TCP_NODELAY");
    }
}

static int connect_to(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int s = socket(AF_INET, SOCK_STREAM, 0);

    if (s < 0 || connect(s, (struct sockaddr*)&a, sizeof(a)) < 0) {
        die("connect");
    }
    nodelay(s);
    return s;
}

static int accept_one(int l)
{
    int s = accept(l, NULL, NULL);

    if (s < 0) {
        die("accept");
    }
    nodelay(s);
    return s;
}

static void pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) < 0) {
        die("sched_setaffinity");
    }
}

static void recv_all(int s, char *buf, int len)
{
    int got = 0;

    while (got < len) {
        int r = (int)recv(s, buf + got, len - got, MSG_DONTWAIT);
        if (r > 0) {
            got += r;
        } else if (r == 0) {
            fprintf(stderr, "peer closed\n");
            exit(1);
        }
    }
}

int main(int argc, char **argv)
{
    int two, len, iters, p1, p2, l1, l2, tx, rx;
    static char buf[65536];
    double t0 = 0;
    pid_t child;

    if (argc < 2 || (strcmp(argv[1], "one") && strcmp(argv[1], "two"))) {
        fprintf(stderr, "usage: %s one|two [BYTES [ITERS]]\n", argv[0]);
        return 2;
    }
    two   = !strcmp(argv[1], "two");
    len   = (argc > 2) ? atoi(argv[2]) : 8;
    iters = (argc > 3) ? atoi(argv[3]) : 100000;
    if (len < 1 || len > (int)sizeof(buf) || iters < 1) {
        fprintf(stderr, "BYTES 1-%zu, ITERS >= 1\n", sizeof(buf));
        return 2;
    }
    l1 = listen_any(&p1);
    l2 = listen_any(&p2);
    child = fork();
    if (child < 0) {
        die("fork");
    }
    if (child == 0) {
        /* the pong side: receives on the connection it accepted or opened */
        pin(1);
        rx = connect_to(p1);
        tx = two ? accept_one(l2) : rx;
        for (int i = -WARMUP; i < iters; i++) {
            recv_all(rx, buf, len);
            if (send(tx, buf, len, 0) != len) {
                die("send");
            }
        }
        return 0;
    }
    pin(0);
    rx = accept_one(l1);
    tx = two ? connect_to(p2) : rx;
    if (two) {
        int t = tx;    /* the ping goes on the connection the child accepted */
        tx = rx;
        rx = t;
    }
    for (int i = -WARMUP; i < iters; i++) {
        if (i == 0) {
            t0 = now_us();
        }
        if (send(tx, buf, len, 0) != len) {
            die("send");
        }
        recv_all(rx, buf, len);
    }
    printf("%s connection%s, %d B: %.3f us round trip (mean of %d)\n", two ? "two" : "one",
           two ? "s" : "", len, (now_us() - t0) / iters, iters);
    waitpid(child, NULL, 0);
    return 0;
}
