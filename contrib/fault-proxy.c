/*
 * fault-proxy.c - a TCP proxy that injects faults on command, for testing
 * how libsiwarp and the siwarp BTL react to a corrupted, dropped, stalled or
 * slow link.
 *
 *   fault-proxy -l [ADDR:]PORT (-t HOST:PORT | -T) -c CTLSOCK [options]
 *   fault-proxy -C CTLSOCK COMMAND...      send one command, print the reply
 *
 * Listens on PORT (0: any; the chosen port is printed on stdout as
 * "fault-proxy: listening on port N", which is the readiness signal), and
 * forwards every accepted connection to HOST:PORT, or with -T to the
 * connection's original destination before an nftables/iptables REDIRECT
 * or DNAT (SO_ORIGINAL_DST; the proxy's own upstream sockets carry the mark
 * given with -m so a rule can exempt them: `meta mark 0x5157 return`).
 *
 * Commands, one per line on the UNIX stream socket CTLSOCK; each gets one
 * reply line starting with "ok" or "err".  Stream offsets count bytes of
 * one direction of one connection from its first byte, so an offset past
 * the MPA handshake (a few hundred bytes) puts a fault into the data.
 * DIR is up (client to server), down (server to client) or any (default).
 *
 *   flip OFF N [DIR]   flip one bit of one byte chosen in [OFF, OFF+N) of the
 *                      next stream to pass OFF (the byte and bit are drawn
 *                      from the -s seed; N=1 is exact); once
 *   drop rst|fin OFF [DIR]  when a stream passes OFF, end that connection:
 *                      rst resets both sides (SO_LINGER 0), fin closes both
 *                      sides in order; OFF 0: every connection now
 *   stall MS|forever   stop forwarding (both directions, all connections,
 *                      new ones too) for MS milliseconds or until resume;
 *                      data then waits in the kernel buffers, so a sender
 *                      ends up facing a zero window
 *   resume             end a stall
 *   delay MS           hold every chunk (at most -k bytes) MS ms before
 *                      forwarding it; 0 turns it off
 *   stats              conns=N bytes_up=N bytes_down=N flips=N drops=N
 *                      last_flip=CONN:DIR:OFFSET:BIT
 *   quit               close everything and exit 0
 *
 * Options: -s SEED (default 1), -k CHUNK bytes read at a time (default
 * 16384), -r RCVBUF for accepted and upstream sockets (default: kernel's),
 * -m MARK (SO_MARK on upstream sockets, default 0x5157 with -T), -v (log each
 * event on stderr).
 *
 * Bounded: at most 64 connections and 8 control clients; the loop sleeps
 * in poll() with a timeout computed from the next deadline (stall end,
 * delayed chunk), never spins.  SIGINT/SIGTERM end it like quit; the
 * control socket is unlinked on exit.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/netfilter_ipv4.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS   64
#define MAX_CTL     8
#define MAX_CHUNK   (1 << 20)
#define FOREVER     UINT64_MAX

enum { UP = 0, DOWN = 1, ANY = 2 };
static const char *dir_name[] = { "up", "down", "any" };

struct dir {
    int from, to;              /* indexes into conn.fd */
    char *buf;
    size_t len, off;           /* pending bytes buf[off..len) */
    uint64_t count;            /* bytes read from `from` so far */
    uint64_t release_ms;       /* delayed chunk: not before this */
    int eof, shut;
};

struct conn {
    int used, id;
    int fd[2];                 /* 0: client (accepted), 1: server (upstream) */
    struct dir d[2];           /* UP: fd0 -> fd1, DOWN: fd1 -> fd0 */
};

struct ctl {
    int fd;
    char line[512];
    size_t len;
};

static struct conn conns[MAX_CONNS];
static struct ctl ctls[MAX_CTL];
static int listen_fd = -1, ctl_fd = -1, verbose, transparent, next_id;
static size_t chunk = 16384;
static int rcvbuf, mark = -1;
static struct sockaddr_storage target;
static socklen_t target_len;
static const char *ctl_path;
static uint64_t rng = 1;
static volatile sig_atomic_t stop;

static struct {
    int armed, dir;
    uint64_t off, n;
    int conn, cdir;            /* bound stream once chosen (-1 none) */
    uint64_t pos;
    int bit;
} flip = { .conn = -1 };
static struct { int armed, dir, rst; uint64_t off; } drop;
static uint64_t stall_until;       /* 0: not stalled */
static uint64_t delay_ms;
static uint64_t total[2], flips, drops;
static char last_flip[96] = "none";

static void logv(const char *fmt, ...)
{
    va_list ap;
    if (!verbose) {
        return;
    }
    va_start(ap, fmt);
    fprintf(stderr, "fault-proxy: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static uint64_t next_rand(void)
{
    /* xorshift64*: reproducible from -s */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
}

static int parse_hostport(const char *s, struct sockaddr_storage *ss, socklen_t *len,
                          int passive)
{
    char host[256] = "";
    const char *colon = strrchr(s, ':');
    const char *port = s;
    struct addrinfo hints, *ai = NULL;
    int rc;

    if (colon) {
        size_t n = (size_t) (colon - s);
        if (n >= sizeof(host)) {
            return -1;
        }
        memcpy(host, s, n);
        host[n] = 0;
        port = colon + 1;
        if (host[0] == '[' && n > 1 && host[n - 1] == ']') {
            memmove(host, host + 1, n - 2);
            host[n - 2] = 0;
        }
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    rc = getaddrinfo(host[0] ? host : (passive ? NULL : "127.0.0.1"), port, &hints, &ai);
    if (rc || !ai) {
        fprintf(stderr, "fault-proxy: %s: %s\n", s, gai_strerror(rc));
        return -1;
    }
    memcpy(ss, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

static void set_nonblock(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void close_rst(int fd)
{
    struct linger lg = { 1, 0 };
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        close(fd);
    }
}

static void conn_close(struct conn *c, int rst, const char *why)
{
    logv("conn %d closed (%s%s)", c->id, rst ? "reset: " : "", why);
    for (int i = 0; i < 2; i++) {
        if (rst) {
            close_rst(c->fd[i]);
        } else if (c->fd[i] >= 0) {
            close(c->fd[i]);
        }
        c->fd[i] = -1;
        free(c->d[i].buf);
        c->d[i].buf = NULL;
    }
    if (flip.conn == c->id) {
        flip.conn = -1;         /* a bound flip goes back to waiting */
    }
    c->used = 0;
}

/* One side failed (reset by its peer): pass on what the other end already
 * has in its kernel buffers, as a direct connection would (a Terminate
 * followed by a reset arrives as data, then the reset), then reset the
 * other side too.  Bounded: nonblocking, stops at the first EAGAIN. */
static void conn_fail(struct conn *c, const char *why)
{
    for (int i = 0; i < 2; i++) {
        struct dir *d = &c->d[i];
        for (int round = 0; round < 64; round++) {
            ssize_t r;
            while (d->off < d->len) {
                ssize_t w = send(c->fd[d->to], d->buf + d->off, d->len - d->off, MSG_NOSIGNAL);
                if (w <= 0) {
                    break;
                }
                d->off += (size_t) w;
            }
            if (d->off < d->len) {
                break;
            }
            d->off = d->len = 0;
            r = recv(c->fd[d->from], d->buf, chunk, MSG_DONTWAIT);
            if (r <= 0) {
                break;
            }
            d->len = (size_t) r;
            d->count += (uint64_t) r;
            total[i] += (uint64_t) r;
        }
    }
    conn_close(c, 1, why);
}

/* ---- accepting ---------------------------------------------------------- */

static int upstream_connect(int client, struct sockaddr_storage *dst, socklen_t *dlen)
{
    struct timeval tv = { 5, 0 };
    int fd;

    if (transparent) {
        struct sockaddr_in o;
        socklen_t ol = sizeof(o);
        if (getsockopt(client, SOL_IP, SO_ORIGINAL_DST, &o, &ol) < 0) {
            logv("SO_ORIGINAL_DST: %s", strerror(errno));
            return -1;
        }
        memcpy(dst, &o, sizeof(o));
        *dlen = sizeof(o);
    } else {
        memcpy(dst, &target, target_len);
        *dlen = target_len;
    }
    fd = socket(dst->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    if (mark >= 0 && setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) < 0) {
        logv("SO_MARK: %s", strerror(errno));
    }
    if (rcvbuf > 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    }
    /* connect honours SO_SNDTIMEO: the loop never blocks for long */
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *) dst, *dlen) < 0) {
        logv("upstream connect: %s", strerror(errno));
        close(fd);
        return -1;
    }
    set_nonblock(fd);
    return fd;
}

static void do_accept(void)
{
    struct sockaddr_storage dst;
    socklen_t dlen;
    int one = 1;
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
    struct conn *c = NULL;

    if (fd < 0) {
        return;
    }
    for (int i = 0; i < MAX_CONNS; i++) {
        if (!conns[i].used) {
            c = &conns[i];
            break;
        }
    }
    if (!c) {
        logv("too many connections, refusing one");
        close_rst(fd);
        return;
    }
    if (rcvbuf > 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    }
    int up = upstream_connect(fd, &dst, &dlen);
    if (up < 0) {
        close_rst(fd);
        return;
    }
    set_nonblock(fd);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(up, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    memset(c, 0, sizeof(*c));
    c->used = 1;
    c->id = next_id++;
    c->fd[0] = fd;
    c->fd[1] = up;
    for (int i = 0; i < 2; i++) {
        c->d[i].from = i;
        c->d[i].to = 1 - i;
        c->d[i].buf = malloc(chunk);
        if (!c->d[i].buf) {
            conn_close(c, 1, "out of memory");
            return;
        }
    }
    logv("conn %d accepted, upstream port %u", c->id,
         ntohs(((struct sockaddr_in *) &dst)->sin_port));
}

/* ---- faults ------------------------------------------------------------- */

static int dir_matches(int want, int d)
{
    return want == ANY || want == d;
}

/* Apply armed faults to a chunk just read into d->buf[0..len), which holds
 * stream bytes [d->count - len, d->count).  Returns 1 if the connection
 * must be dropped now. */
static int apply_faults(struct conn *c, int di, struct dir *d)
{
    uint64_t start = d->count - d->len, end = d->count;

    if (flip.armed && dir_matches(flip.dir, di) && end > flip.off) {
        if (flip.conn < 0) {
            uint64_t from = start > flip.off ? start : flip.off;
            flip.conn = c->id;
            flip.cdir = di;
            flip.pos = from + next_rand() % flip.n;
            flip.bit = (int) (next_rand() % 8);
        }
        if (flip.conn == c->id && flip.cdir == di && flip.pos >= start && flip.pos < end) {
            d->buf[flip.pos - start] ^= (char) (1u << flip.bit);
            flips++;
            flip.armed = 0;
            flip.conn = -1;
            snprintf(last_flip, sizeof(last_flip), "%d:%s:%llu:%d", c->id, dir_name[di],
                     (unsigned long long) flip.pos, flip.bit);
            logv("flipped bit %d at conn %d %s offset %llu", flip.bit, c->id,
                 dir_name[di], (unsigned long long) flip.pos);
        }
    }
    if (drop.armed && dir_matches(drop.dir, di) && end > drop.off) {
        /* forward the bytes before OFF, then end the connection */
        uint64_t keep = drop.off > start ? drop.off - start : 0;
        d->len = (size_t) keep;
        return 1;
    }
    return 0;
}

static void drop_conn(struct conn *c)
{
    struct dir *d;
    /* best effort: the bytes before the drop point go out first */
    for (int i = 0; i < 2; i++) {
        d = &c->d[i];
        while (d->off < d->len) {
            ssize_t w = send(c->fd[d->to], d->buf + d->off, d->len - d->off, MSG_NOSIGNAL);
            if (w <= 0) {
                break;
            }
            d->off += (size_t) w;
        }
    }
    drops++;
    if (drop.rst) {
        conn_close(c, 1, "drop rst");
    } else {
        shutdown(c->fd[0], SHUT_RDWR);
        shutdown(c->fd[1], SHUT_RDWR);
        conn_close(c, 0, "drop fin");
    }
    drop.armed = 0;
}

/* ---- forwarding --------------------------------------------------------- */

static int stalled(uint64_t now)
{
    if (stall_until && stall_until != FOREVER && now >= stall_until) {
        stall_until = 0;
        logv("stall over");
    }
    return stall_until != 0;
}

/* Move data for one direction.  Returns -1 when the connection ended. */
static int pump(struct conn *c, int di, short rev_from, short rev_to, uint64_t now)
{
    struct dir *d = &c->d[di];

    if (d->len == d->off && !d->eof && (rev_from & (POLLIN | POLLHUP | POLLERR))) {
        ssize_t r = recv(c->fd[d->from], d->buf, chunk, 0);
        if (r > 0) {
            d->off = 0;
            d->len = (size_t) r;
            d->count += (uint64_t) r;
            total[di] += (uint64_t) r;
            d->release_ms = delay_ms ? now + delay_ms : 0;
            if (apply_faults(c, di, d)) {
                drop_conn(c);
                return -1;
            }
        } else if (r == 0) {
            d->eof = 1;
        } else if (errno != EAGAIN && errno != EINTR) {
            conn_fail(c, strerror(errno));       /* pass a reset on */
            return -1;
        }
    }
    if (d->off < d->len && now >= d->release_ms && (rev_to & (POLLOUT | POLLERR))) {
        ssize_t w = send(c->fd[d->to], d->buf + d->off, d->len - d->off, MSG_NOSIGNAL);
        if (w > 0) {
            d->off += (size_t) w;
            if (d->off == d->len) {
                d->off = d->len = 0;
            }
        } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
            conn_fail(c, strerror(errno));
            return -1;
        }
    }
    if (d->eof && d->off == d->len && !d->shut) {
        shutdown(c->fd[d->to], SHUT_WR);
        d->shut = 1;
    }
    if (c->d[0].shut && c->d[1].shut) {
        conn_close(c, 0, "both sides closed");
        return -1;
    }
    return 0;
}

/* ---- control ------------------------------------------------------------ */

static int parse_dir(const char *s)
{
    if (!s || !strcmp(s, "any")) {
        return ANY;
    }
    if (!strcmp(s, "up")) {
        return UP;
    }
    if (!strcmp(s, "down")) {
        return DOWN;
    }
    return -1;
}

static int count_conns(void)
{
    int n = 0;
    for (int i = 0; i < MAX_CONNS; i++) {
        n += conns[i].used;
    }
    return n;
}

static void command(char *line, char *out, size_t outlen)
{
    char *argv[8];
    int argc = 0;
    char *save = NULL;

    for (char *t = strtok_r(line, " \t\r\n", &save); t && argc < 8;
         t = strtok_r(NULL, " \t\r\n", &save)) {
        argv[argc++] = t;
    }
    if (argc == 0) {
        snprintf(out, outlen, "err empty command");
        return;
    }
    if (!strcmp(argv[0], "flip") && (argc == 3 || argc == 4)) {
        int dir = parse_dir(argc == 4 ? argv[3] : NULL);
        unsigned long long off = strtoull(argv[1], NULL, 0), n = strtoull(argv[2], NULL, 0);
        if (dir < 0 || n == 0) {
            snprintf(out, outlen, "err usage: flip OFF N [up|down|any]");
            return;
        }
        flip.armed = 1;
        flip.off = off;
        flip.n = n;
        flip.dir = dir;
        flip.conn = -1;
        snprintf(out, outlen, "ok flip armed at %llu+%llu %s", off, n, dir_name[dir]);
    } else if (!strcmp(argv[0], "drop") && (argc == 3 || argc == 4) &&
               (!strcmp(argv[1], "rst") || !strcmp(argv[1], "fin"))) {
        int dir = parse_dir(argc == 4 ? argv[3] : NULL);
        unsigned long long off = strtoull(argv[2], NULL, 0);
        if (dir < 0) {
            snprintf(out, outlen, "err usage: drop rst|fin OFF [up|down|any]");
            return;
        }
        drop.rst = !strcmp(argv[1], "rst");
        drop.dir = dir;
        drop.off = off;
        if (off == 0) {
            int n = 0;
            for (int i = 0; i < MAX_CONNS; i++) {
                if (conns[i].used) {
                    drop_conn(&conns[i]);
                    n++;
                }
            }
            snprintf(out, outlen, "ok dropped %d", n);
            return;
        }
        drop.armed = 1;
        snprintf(out, outlen, "ok drop armed at %llu %s", off, dir_name[dir]);
    } else if (!strcmp(argv[0], "stall") && argc == 2) {
        if (!strcmp(argv[1], "forever")) {
            stall_until = FOREVER;
        } else {
            stall_until = now_ms() + strtoull(argv[1], NULL, 0);
        }
        snprintf(out, outlen, "ok stalled %s", argv[1]);
    } else if (!strcmp(argv[0], "resume") && argc == 1) {
        stall_until = 0;
        snprintf(out, outlen, "ok resumed");
    } else if (!strcmp(argv[0], "delay") && argc == 2) {
        delay_ms = strtoull(argv[1], NULL, 0);
        snprintf(out, outlen, "ok delay %llu", (unsigned long long) delay_ms);
    } else if (!strcmp(argv[0], "stats") && argc == 1) {
        snprintf(out, outlen,
                 "ok conns=%d accepted=%d bytes_up=%llu bytes_down=%llu flips=%llu "
                 "drops=%llu stalled=%d flip_armed=%d last_flip=%s",
                 count_conns(), next_id, (unsigned long long) total[UP],
                 (unsigned long long) total[DOWN], (unsigned long long) flips,
                 (unsigned long long) drops, stall_until != 0, flip.armed, last_flip);
    } else if (!strcmp(argv[0], "quit") && argc == 1) {
        stop = 1;
        snprintf(out, outlen, "ok bye");
    } else {
        snprintf(out, outlen, "err unknown command or arguments: %s", argv[0]);
    }
}

static void ctl_read(struct ctl *k)
{
    ssize_t r = recv(k->fd, k->line + k->len, sizeof(k->line) - 1 - k->len, 0);
    char *nl;

    if (r <= 0) {
        close(k->fd);
        k->fd = -1;
        return;
    }
    k->len += (size_t) r;
    k->line[k->len] = 0;
    while ((nl = strchr(k->line, '\n')) != NULL) {
        char out[512], copy[512];
        size_t used = (size_t) (nl - k->line) + 1;
        *nl = 0;
        snprintf(copy, sizeof(copy), "%s", k->line);
        command(k->line, out, sizeof(out) - 1);
        logv("command '%s' -> %s", copy, out);
        strcat(out, "\n");
        if (send(k->fd, out, strlen(out), MSG_NOSIGNAL) < 0) {
            close(k->fd);
            k->fd = -1;
            return;
        }
        memmove(k->line, k->line + used, k->len - used + 1);
        k->len -= used;
    }
    if (k->len == sizeof(k->line) - 1) {
        close(k->fd);           /* a line that long is not a command */
        k->fd = -1;
    }
}

static int ctl_listen(const char *path)
{
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    int fd;

    if (strlen(path) >= sizeof(un.sun_path)) {
        fprintf(stderr, "fault-proxy: control path too long\n");
        return -1;
    }
    strcpy(un.sun_path, path);
    unlink(path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *) &un, sizeof(un)) < 0 || listen(fd, 8) < 0) {
        fprintf(stderr, "fault-proxy: %s: %s\n", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    return fd;
}

/* Client mode: one command, one reply line on stdout; exit 0 on "ok". */
static int client(const char *path, int argc, char **argv)
{
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    char line[512] = "", reply[512];
    struct timeval tv = { 10, 0 };
    size_t got = 0;
    int fd;

    for (int i = 0; i < argc; i++) {
        if (strlen(line) + strlen(argv[i]) + 2 >= sizeof(line)) {
            return 2;
        }
        strcat(line, argv[i]);
        strcat(line, i + 1 < argc ? " " : "\n");
    }
    if (strlen(path) >= sizeof(un.sun_path)) {
        return 2;
    }
    strcpy(un.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (fd < 0 || connect(fd, (struct sockaddr *) &un, sizeof(un)) < 0) {
        fprintf(stderr, "fault-proxy: %s: %s\n", path, strerror(errno));
        return 2;
    }
    if (send(fd, line, strlen(line), MSG_NOSIGNAL) < 0) {
        return 2;
    }
    while (got < sizeof(reply) - 1) {
        ssize_t r = recv(fd, reply + got, sizeof(reply) - 1 - got, 0);
        if (r <= 0) {
            break;
        }
        got += (size_t) r;
        if (memchr(reply, '\n', got)) {
            break;
        }
    }
    reply[got] = 0;
    close(fd);
    fputs(reply, stdout);
    return strncmp(reply, "ok", 2) == 0 ? 0 : 1;
}

/* ---- main loop ---------------------------------------------------------- */

static void on_signal(int sig)
{
    (void) sig;
    stop = 1;
}

static void usage(void)
{
    fprintf(stderr, "usage: fault-proxy -l [ADDR:]PORT (-t HOST:PORT | -T) -c CTLSOCK "
                    "[-s SEED] [-k CHUNK] [-r RCVBUF] [-m MARK] [-v]\n"
                    "       fault-proxy -C CTLSOCK COMMAND...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct sockaddr_storage la;
    socklen_t llen = 0;
    const char *listen_spec = NULL, *target_spec = NULL;
    struct sigaction sa;
    int opt, one = 1;

    if (argc >= 3 && !strcmp(argv[1], "-C")) {
        return client(argv[2], argc - 3, argv + 3);
    }
    while ((opt = getopt(argc, argv, "l:t:Tc:s:k:r:m:v")) != -1) {
        switch (opt) {
        case 'l': listen_spec = optarg; break;
        case 't': target_spec = optarg; break;
        case 'T': transparent = 1; break;
        case 'c': ctl_path = optarg; break;
        case 's': rng = strtoull(optarg, NULL, 0) | 1; break;
        case 'k': chunk = strtoul(optarg, NULL, 0); break;
        case 'r': rcvbuf = atoi(optarg); break;
        case 'm': mark = (int) strtol(optarg, NULL, 0); break;
        case 'v': verbose = 1; break;
        default: usage();
        }
    }
    if (!listen_spec || !ctl_path || (!target_spec && !transparent) || chunk == 0 ||
        chunk > MAX_CHUNK) {
        usage();
    }
    if (transparent && mark < 0) {
        mark = 0x5157;
    }
    if (parse_hostport(listen_spec, &la, &llen, 1) < 0 ||
        (target_spec && parse_hostport(target_spec, &target, &target_len, 0) < 0)) {
        return 2;
    }
    listen_fd = socket(la.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listen_fd < 0) {
        perror("fault-proxy: socket");
        return 1;
    }
    setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(listen_fd, (struct sockaddr *) &la, llen) < 0 || listen(listen_fd, 64) < 0) {
        fprintf(stderr, "fault-proxy: listen %s: %s\n", listen_spec, strerror(errno));
        return 1;
    }
    llen = sizeof(la);
    getsockname(listen_fd, (struct sockaddr *) &la, &llen);
    ctl_fd = ctl_listen(ctl_path);
    if (ctl_fd < 0) {
        return 1;
    }
    for (int i = 0; i < MAX_CTL; i++) {
        ctls[i].fd = -1;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    printf("fault-proxy: listening on port %u\n",
           ntohs(la.ss_family == AF_INET ? ((struct sockaddr_in *) &la)->sin_port
                                         : ((struct sockaddr_in6 *) &la)->sin6_port));
    fflush(stdout);

    while (!stop) {
        struct pollfd p[2 + MAX_CTL + 2 * MAX_CONNS];
        int map[MAX_CONNS];
        int np = 0, timeout = -1;
        uint64_t now = now_ms();
        int st = stalled(now);

        p[np++] = (struct pollfd) { .fd = listen_fd, .events = POLLIN };
        p[np++] = (struct pollfd) { .fd = ctl_fd, .events = POLLIN };
        for (int i = 0; i < MAX_CTL; i++) {
            p[np++] = (struct pollfd) { .fd = ctls[i].fd, .events = POLLIN };
        }
        if (st && stall_until != FOREVER) {
            timeout = (int) (stall_until - now) + 1;
        }
        for (int i = 0; i < MAX_CONNS; i++) {
            struct conn *c = &conns[i];
            map[i] = -1;
            if (!c->used) {
                continue;
            }
            map[i] = np;
            for (int s = 0; s < 2; s++) {
                /* side s reads for direction s and writes for direction 1-s */
                struct dir *rd = &c->d[s], *wr = &c->d[1 - s];
                short ev = 0;
                if (!st) {
                    if (rd->len == rd->off && !rd->eof) {
                        ev |= POLLIN;
                    }
                    if (wr->off < wr->len) {
                        if (now >= wr->release_ms) {
                            ev |= POLLOUT;
                        } else {
                            int t = (int) (wr->release_ms - now) + 1;
                            if (timeout < 0 || t < timeout) {
                                timeout = t;
                            }
                        }
                    }
                }
                /* nothing wanted (stalled, or blocked on the other side):
                 * leave it out, or poll's POLLHUP would spin the loop */
                p[np++] = (struct pollfd) { .fd = ev ? c->fd[s] : -1, .events = ev };
            }
        }
        if (poll(p, (nfds_t) np, timeout) < 0) {
            if (errno == EINTR) {
                continue;
            }
            perror("fault-proxy: poll");
            break;
        }
        now = now_ms();
        if (p[0].revents & POLLIN) {
            do_accept();
        }
        if (p[1].revents & POLLIN) {
            int fd = accept4(ctl_fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0) {
                int placed = 0;
                for (int i = 0; i < MAX_CTL && !placed; i++) {
                    if (ctls[i].fd < 0) {
                        ctls[i].fd = fd;
                        ctls[i].len = 0;
                        placed = 1;
                    }
                }
                if (!placed) {
                    close(fd);
                }
            }
        }
        for (int i = 0; i < MAX_CTL; i++) {
            if (ctls[i].fd >= 0 && p[2 + i].revents) {
                ctl_read(&ctls[i]);
            }
        }
        if (stalled(now)) {
            continue;
        }
        for (int i = 0; i < MAX_CONNS; i++) {
            struct conn *c = &conns[i];
            short r0, r1;
            if (map[i] < 0 || !c->used) {
                continue;
            }
            r0 = p[map[i]].revents;
            r1 = p[map[i] + 1].revents;
            /* a delayed chunk that came due is sent without a POLLOUT */
            if (c->d[UP].off < c->d[UP].len && now >= c->d[UP].release_ms) {
                r1 |= POLLOUT;
            }
            if (c->d[DOWN].off < c->d[DOWN].len && now >= c->d[DOWN].release_ms) {
                r0 |= POLLOUT;
            }
            if (pump(c, UP, r0, r1, now) < 0) {
                continue;
            }
            pump(c, DOWN, r1, r0, now);
        }
    }
    for (int i = 0; i < MAX_CONNS; i++) {
        if (conns[i].used) {
            conn_close(&conns[i], 0, "shutdown");
        }
    }
    for (int i = 0; i < MAX_CTL; i++) {
        if (ctls[i].fd >= 0) {
            close(ctls[i].fd);
        }
    }
    close(listen_fd);
    close(ctl_fd);
    unlink(ctl_path);
    return 0;
}
