/*
 * tcp_cc.c - which TCP congestion control libsiwarp's sockets run.
 *
 * The kernel's default applies unless the application names others
 * (siwarp_ctx_set_tcp_congestion, or SIWARP_TCP_CONGESTION for every
 * context of a process): a comma-separated list, tried in order on each
 * socket before it connects or as it is accepted; the first one the kernel
 * takes wins.  A name the kernel lacks, or one an unprivileged process may
 * not choose (net.ipv4.tcp_allowed_congestion_control), is skipped; if none
 * is taken the socket keeps the default.
 *
 * Why it matters: with BBR as the system default (as on the machines this
 * was measured on), BBR paces every connection at the rate it has
 * estimated, and the bursts of an MPI rendezvous stream keep that estimate
 * low.  mpi-bench -t bw across a veth pair, BBR against CUBIC on siwarp's
 * sockets: 64 KiB 1.4 against 4.7-4.9 GB/s, 1 MiB 3.2-3.4 against 6.7-6.9;
 * on loopback 256 KiB 4.6-4.9 against 6.5-6.8.  The Open MPI BTL asks for
 * "reno,cubic" (btl_siwarp_tcp_congestion).  Reno before CUBIC: both are
 * loss-based and unpaced, and on a cluster's short round trips CUBIC grows
 * its window as Reno does (its "TCP-friendly" region), so they move the
 * same bandwidth; but every ACK runs CUBIC's pkts_acked and cwnd_event
 * hooks, indirect calls through retpolines here, which Reno does not have.
 * A busy-polled loopback ping-pong: 2.68-2.73 us one way with Reno, 2.81-2.85
 * with CUBIC (4 alternating runs); MPI 0 B over siwarp 0.09 us less (median
 * of 6 paired rounds), bandwidth 16 KiB-4 MiB unchanged on loopback and veth.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "swp.h"

/* Each name as the kernel limits it (TCP_CA_NAME_MAX, 16 with the NUL):
 * letters, digits, '_' and '-'. */
static int cc_name_ok(const char *s, size_t n)
{
    if (n == 0 || n >= 16)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

int siwarp_tcp_congestion_check(const char *list)
{
    size_t len;

    if (!list)
        return -EINVAL;
    len = strlen(list);
    if (len == 0)
        return 0;
    if (len >= SWP_TCP_CC_MAX)
        return -EINVAL;
    for (const char *p = list;;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (!cc_name_ok(p, n))
            return -EINVAL;
        if (!e)
            return 0;
        p = e + 1;
    }
}

int siwarp_sock_set_congestion(int fd, const char *list, char *chosen, size_t cap)
{
    int rc = siwarp_tcp_congestion_check(list);

    if (chosen && cap)
        chosen[0] = '\0';
    if (rc < 0)
        return rc;
    if (fd < 0)
        return -EBADF;
    if (!*list)
        return -ENOENT;
    for (const char *p = list;;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char name[16];

        memcpy(name, p, n);
        name[n] = '\0';
        if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, (socklen_t)n) == 0) {
            if (chosen && cap) {
                strncpy(chosen, name, cap - 1);
                chosen[cap - 1] = '\0';
            }
            return 0;
        }
        if (errno == EBADF || errno == ENOTSOCK || errno == ENOPROTOOPT)
            return -errno;
        /* ENOENT: not in this kernel; EPERM: not allowed to us */
        if (!e)
            return -ENOENT;
        p = e + 1;
    }
}

int siwarp_ctx_set_tcp_congestion(struct siwarp_ctx *ctx, const char *list)
{
    int rc;

    if (!ctx || !list)
        return -EINVAL;
    if (ctx->hw)
        return -EOPNOTSUPP;     /* an RNIC runs its own TCP */
    if ((rc = siwarp_tcp_congestion_check(list)) < 0)
        return rc;
    swp_lock(ctx);
    memcpy(ctx->tcp_cc, list, strlen(list) + 1);
    swp_unlock(ctx);
    return 0;
}

void swp_tcp_cc_init(struct siwarp_ctx *ctx)
{
    const char *env = getenv("SIWARP_TCP_CONGESTION");

    ctx->tcp_cc[0] = '\0';
    if (!env)
        return;
    if (siwarp_tcp_congestion_check(env) < 0) {
        swp_log("SIWARP_TCP_CONGESTION=%s: not a comma-separated list of congestion control "
                "names; the kernel's default is used", env);
        return;
    }
    memcpy(ctx->tcp_cc, env, strlen(env) + 1);
}

void swp_tcp_cc_apply(struct siwarp_ctx *ctx, int fd)
{
    char chosen[16];

    if (!ctx->tcp_cc[0])
        return;
    if (siwarp_sock_set_congestion(fd, ctx->tcp_cc, chosen, sizeof(chosen)) == 0)
        SWP_DBG("fd %d: TCP congestion control %s", fd, chosen);
    else
        SWP_DBG("fd %d: none of %s taken; the kernel's default stays", fd, ctx->tcp_cc);
}
