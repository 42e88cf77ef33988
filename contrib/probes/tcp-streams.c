/* tcp-streams.c - would several TCP connections per peer, or MSG_ZEROCOPY,
 * raise what one sending process moves on this host?  A probe behind two
 * "tried, not kept" items of contrib/PERFORMANCE.md (issue 6's levers
 * "several TCP connections per peer, striped" and "MSG_ZEROCOPY for large
 * sends"), not part of the build:
 *
 *   cc -O2 -o /tmp/tcp-streams contrib/probes/tcp-streams.c
 *   /tmp/tcp-streams recv [-p PORT] [-n STREAMS] [-k CC] [-C CPU] &
 *   /tmp/tcp-streams send HOST [-p PORT] [-n STREAMS] [-z] [-m BYTES] [-t SECONDS]
 *                    [-k CC] [-C CPU]
 *
 * The sender is one thread, as an MPI rank is: it opens STREAMS
 * connections (TCP_NODELAY, non-blocking) and keeps each busy with sends of
 * BYTES / STREAMS (default 1 MiB / STREAMS: a 1 MiB message striped),
 * going round them and sleeping in poll() only when all are full.  With -z
 * every send is MSG_ZEROCOPY (SO_ZEROCOPY), and the completions are reaped
 * from the error queue, as an RDMA stack must before it may report the
 * buffer free; the sender counts how many the kernel reports as copied
 * after all (SO_EE_CODE_ZEROCOPY_COPIED: delivery to a local socket, as on
 * loopback or a veth pair, copies the pages anyway).  The receiver is one
 * thread too, reading up to 1 MiB a recv() from whichever socket has data.
 * Each side prints one line: MB/s (the receiver's, first byte to last EOF,
 * is the figure) and CPU seconds per GB of its own process.  Across two
 * namespaces: run each side under `contrib/netns.sh exec NAME s|c`.  -k
 * names the congestion control (the BTL asks for reno: common/tcp_cc.c);
 * -C pins the process to a CPU.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

#define MAX_STREAMS 16
#define RECV_CHUNK (1u << 20)

struct opts {
    const char *host, *cc;
    uint16_t port;
    int streams, zerocopy, cpu;
    size_t msg;
    double secs;
};

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu_seconds(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static int pin(int cpu)
{
    cpu_set_t set;

    if (cpu < 0)
        return 0;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) < 0) {
        perror("tcp-streams: sched_setaffinity");
        return -1;
    }
    return 0;
}

static int set_int(int fd, int level, int name, int v, const char *what)
{
    if (setsockopt(fd, level, name, &v, sizeof(v)) < 0) {
        fprintf(stderr, "tcp-streams: setsockopt %s: %s\n", what, strerror(errno));
        return -1;
    }
    return 0;
}

static int set_cc(int fd, const char *cc)
{
    if (cc && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)) < 0) {
        fprintf(stderr, "tcp-streams: congestion control %s: %s\n", cc, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- receiver ----------------------------------------------------------------- */

static int run_recv(const struct opts *o)
{
    struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(o->port),
                              .sin6_addr = IN6ADDR_ANY_INIT };
    struct pollfd pfd[MAX_STREAMS];
    int ls = socket(AF_INET6, SOCK_STREAM, 0), open_n = 0;
    uint64_t bytes = 0;
    double t0 = 0, t1 = 0, c0;
    char *buf = malloc(RECV_CHUNK);

    if (ls < 0 || !buf || set_int(ls, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR") < 0 ||
        set_int(ls, IPPROTO_IPV6, IPV6_V6ONLY, 0, "IPV6_V6ONLY") < 0 ||
        set_cc(ls, o->cc) < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(ls, MAX_STREAMS) < 0) {
        perror("tcp-streams recv: listen");
        return 1;
    }
    printf("listening port=%u\n", o->port);
    fflush(stdout);
    for (int i = 0; i < o->streams; i++) {
        struct pollfd lp = { .fd = ls, .events = POLLIN };
        /* bounded: a sender that never comes must not leave us waiting */
        if (poll(&lp, 1, 10000) <= 0) {
            fprintf(stderr, "tcp-streams recv: %d of %d connections after 10 s, giving up\n",
                    i, o->streams);
            return 1;
        }
        pfd[i].fd = accept(ls, NULL, NULL);
        if (pfd[i].fd < 0) {
            perror("tcp-streams recv: accept");
            return 1;
        }
        pfd[i].events = POLLIN;
        open_n++;
    }
    close(ls);
    c0 = cpu_seconds();
    while (open_n) {
        if (poll(pfd, (nfds_t)o->streams, 10000) <= 0) {
            fprintf(stderr, "tcp-streams recv: nothing for 10 s, giving up\n");
            return 1;
        }
        for (int i = 0; i < o->streams; i++) {
            if (pfd[i].fd < 0 || !(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = recv(pfd[i].fd, buf, RECV_CHUNK, MSG_DONTWAIT);
            if (n > 0) {
                if (!bytes)
                    t0 = now();
                bytes += (uint64_t)n;
            } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                if (n < 0)
                    fprintf(stderr, "tcp-streams recv: stream %d: %s\n", i, strerror(errno));
                close(pfd[i].fd);
                pfd[i].fd = -1;
                open_n--;
                t1 = now();
            }
        }
    }
    double gb = (double)bytes / 1e9;
    printf("recv streams=%d bytes=%llu MB/s=%.0f cpu_s_per_GB=%.3f\n", o->streams,
           (unsigned long long)bytes, t1 > t0 ? (double)bytes / (t1 - t0) / 1e6 : 0.0,
           gb > 0 ? (cpu_seconds() - c0) / gb : 0.0);
    free(buf);
    return 0;
}

/* ---- sender ------------------------------------------------------------------- */

struct zc {
    uint64_t sent, done, copied;    /* zerocopy sends, completions, of them copied */
};

/* Reap MSG_ZEROCOPY completions: each names a range of send calls. */
static void zc_reap(int fd, struct zc *z)
{
    for (;;) {
        char ctl[128];
        struct msghdr m = { .msg_control = ctl, .msg_controllen = sizeof(ctl) };
        struct cmsghdr *c;

        if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
            return;
        for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            const struct sock_extended_err *e = (const void *)CMSG_DATA(c);
            if (e->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
                continue;
            uint64_t n = (uint64_t)(e->ee_data - e->ee_info) + 1;
            z->done += n;
            if (e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
                z->copied += n;
        }
    }
}

static int connect_one(const struct opts *o)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
    char port[8];
    int fd;

    snprintf(port, sizeof(port), "%u", o->port);
    if (getaddrinfo(o->host, port, &hints, &ai) != 0) {
        fprintf(stderr, "tcp-streams send: cannot resolve %s\n", o->host);
        return -1;
    }
    fd = socket(ai->ai_family, SOCK_STREAM, 0);
    if (fd < 0 || set_cc(fd, o->cc) < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        fprintf(stderr, "tcp-streams send: connect %s:%s: %s\n", o->host, port, strerror(errno));
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    if (set_int(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY") < 0 ||
        (o->zerocopy && set_int(fd, SOL_SOCKET, SO_ZEROCOPY, 1, "SO_ZEROCOPY") < 0))
        return -1;
    return fd;
}

static int run_send(const struct opts *o)
{
    struct pollfd pfd[MAX_STREAMS];
    struct zc z[MAX_STREAMS] = { { 0 } };
    size_t part = o->msg / (size_t)o->streams, off[MAX_STREAMS] = { 0 };
    char *buf = malloc(o->msg);
    uint64_t bytes = 0, calls = 0;
    int flags = MSG_DONTWAIT | MSG_NOSIGNAL | (o->zerocopy ? MSG_ZEROCOPY : 0);
    double t0, c0, end;

    if (!buf || part == 0)
        return 1;
    for (size_t i = 0; i < o->msg; i++)
        buf[i] = (char)(i * 131 + 7);
    for (int i = 0; i < o->streams; i++) {
        pfd[i].fd = connect_one(o);
        if (pfd[i].fd < 0)
            return 1;
        pfd[i].events = POLLOUT;
    }
    t0 = now();
    c0 = cpu_seconds();
    end = t0 + o->secs;
    while (now() < end) {
        int blocked = 0;

        for (int i = 0; i < o->streams; i++) {
            ssize_t n = send(pfd[i].fd, buf + (size_t)i * part + off[i], part - off[i], flags);
            if (n < 0) {
                if (errno == ENOBUFS && o->zerocopy) {      /* too many pinned: reap */
                    zc_reap(pfd[i].fd, &z[i]);
                    blocked++;
                    continue;
                }
                if (errno != EAGAIN && errno != EINTR) {
                    fprintf(stderr, "tcp-streams send: stream %d: %s\n", i, strerror(errno));
                    return 1;
                }
                blocked++;
                continue;
            }
            calls++;
            bytes += (uint64_t)n;
            off[i] = (off[i] + (size_t)n) % part;
            if (o->zerocopy) {
                z[i].sent++;
                zc_reap(pfd[i].fd, &z[i]);
            }
        }
        if (blocked == o->streams)
            poll(pfd, (nfds_t)o->streams, 100);
    }
    for (int i = 0; i < o->streams; i++)
        shutdown(pfd[i].fd, SHUT_WR);
    /* every zerocopy send completes once its bytes are acknowledged */
    for (double stop = now() + 2.0; o->zerocopy && now() < stop;) {
        uint64_t left = 0;
        for (int i = 0; i < o->streams; i++) {
            zc_reap(pfd[i].fd, &z[i]);
            left += z[i].sent - z[i].done;
        }
        if (!left)
            break;
        struct pollfd e[MAX_STREAMS];
        for (int i = 0; i < o->streams; i++)
            e[i] = (struct pollfd){ .fd = pfd[i].fd, .events = 0 };
        poll(e, (nfds_t)o->streams, 10);
    }
    double t = now() - t0, gb = (double)bytes / 1e9;
    uint64_t sent = 0, done = 0, copied = 0;
    for (int i = 0; i < o->streams; i++) {
        sent += z[i].sent;
        done += z[i].done;
        copied += z[i].copied;
        close(pfd[i].fd);
    }
    printf("send streams=%d zerocopy=%d part=%zu bytes=%llu MB/s=%.0f cpu_s_per_GB=%.3f "
           "calls=%llu",
           o->streams, o->zerocopy, part, (unsigned long long)bytes, (double)bytes / t / 1e6,
           gb > 0 ? (cpu_seconds() - c0) / gb : 0.0, (unsigned long long)calls);
    if (o->zerocopy)
        printf(" zc_completed=%llu/%llu zc_copied=%llu", (unsigned long long)done,
               (unsigned long long)sent, (unsigned long long)copied);
    printf("\n");
    free(buf);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: tcp-streams recv [-p PORT] [-n STREAMS] [-k CC] [-C CPU]\n"
                    "       tcp-streams send HOST [-p PORT] [-n STREAMS] [-z] [-m BYTES] "
                    "[-t SECONDS] [-k CC] [-C CPU]\n");
    return 2;
}

int main(int argc, char **argv)
{
    struct opts o = { .port = 18515, .streams = 1, .cpu = -1, .msg = 1u << 20, .secs = 3 };
    int c, recv_mode;

    if (argc < 2)
        return usage();
    recv_mode = strcmp(argv[1], "recv") == 0;
    if (!recv_mode && strcmp(argv[1], "send") != 0)
        return usage();
    optind = 2;
    if (!recv_mode) {
        if (argc < 3)
            return usage();
        o.host = argv[2];
        optind = 3;
    }
    while ((c = getopt(argc, argv, "p:n:zm:t:k:C:")) != -1) {
        switch (c) {
        case 'p': o.port = (uint16_t)atoi(optarg); break;
        case 'n': o.streams = atoi(optarg); break;
        case 'z': o.zerocopy = 1; break;
        case 'm': o.msg = strtoull(optarg, NULL, 0); break;
        case 't': o.secs = atof(optarg); break;
        case 'k': o.cc = optarg; break;
        case 'C': o.cpu = atoi(optarg); break;
        default: return usage();
        }
    }
    if (o.streams < 1 || o.streams > MAX_STREAMS || o.secs <= 0 || o.secs > 60) {
        fprintf(stderr, "tcp-streams: STREAMS must be 1-%d and SECONDS 0-60\n", MAX_STREAMS);
        return 2;
    }
    if (pin(o.cpu) < 0)
        return 1;
    return recv_mode ? run_recv(&o) : run_send(&o);
}
