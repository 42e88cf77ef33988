/*
 * qp_pair.c - see qp_pair.h.
 */
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "qp_pair.h"
#include "swp.h"

void swp_test_nego(struct swp_nego *n, const struct swp_test_pair_opts *o, bool initiator)
{
    memset(n, 0, sizeof(*n));
    n->mpa_rev = 2;
    n->crc = o->crc;
    n->markers_tx = n->markers_rx = o->markers;
    n->ird = n->ord = o->ird_ord;
    n->mulpdu = o->mulpdu;
    n->max_rx_ulpdu = 65535;
    n->rfc7306 = n->peer_is_siwarp = o->rfc7306;
    n->initiator = initiator;
}

void swp_test_pair_setup(struct swp_test_pair *p, const struct swp_test_pair_opts *o)
{
    struct siwarp_qp_init_attr a = { 0 };
    struct swp_nego n;
    int fd[2];

    ASSERT_OK(siwarp_ctx_create(&p->ctx));
    ASSERT_OK(siwarp_alloc_pd(p->ctx, &p->pd));
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(siwarp_create_cq(p->ctx, o->cqe, &p->cq[i]));
        a.send_cq = a.recv_cq = p->cq[i];
        a.max_send_wr = a.max_recv_wr = o->depth;
        a.max_sge = 1;
        ASSERT_OK(siwarp_create_qp(p->pd, &a, &p->qp[i]));
    }
    if (o->tcp)
        swp_test_tcp_pair(fd);
    else
        ASSERT_OK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fd));
    if (o->sndbuf) {
        ASSERT_OK(setsockopt(fd[0], SOL_SOCKET, SO_SNDBUF, &o->sndbuf, sizeof(o->sndbuf)));
        ASSERT_OK(setsockopt(fd[1], SOL_SOCKET, SO_RCVBUF, &o->sndbuf, sizeof(o->sndbuf)));
    }
    swp_test_nego(&n, o, true);
    ASSERT_OK(swp_qp_attach_fd(p->qp[0], fd[0], &n));
    swp_test_nego(&n, o, false);
    ASSERT_OK(swp_qp_attach_fd(p->qp[1], fd[1], &n));
}

void swp_test_pair_teardown(struct swp_test_pair *p)
{
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(siwarp_destroy_qp(p->qp[i]));
        ASSERT_OK(siwarp_destroy_cq(p->cq[i]));
    }
    ASSERT_OK(siwarp_dealloc_pd(p->pd));
    siwarp_ctx_destroy(p->ctx);
}

static void *sleeper_main(void *arg)
{
    struct swp_test_sleeper *s = arg;

    s->rc = siwarp_cq_wait(s->p->cq[1], s->timeout_ms);
    return NULL;
}

void swp_test_sleeper_start(struct swp_test_sleeper *s, struct swp_test_pair *p, int timeout_ms)
{
    struct timespec d = { 0, 100 * 1000000L };

    s->p = p;
    s->timeout_ms = timeout_ms;
    s->rc = 1;
    ASSERT_OK(pthread_create(&s->thread, NULL, sleeper_main, s));
    nanosleep(&d, NULL);        /* in epoll_wait by now */
}

int swp_test_sleeper_join(struct swp_test_sleeper *s)
{
    pthread_join(s->thread, NULL);
    return s->rc;
}

void swp_test_tcp_pair(int fd[2])
{
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sin);
    int l = socket(AF_INET, SOCK_STREAM, 0);

    ASSERT(l >= 0);
    ASSERT_OK(bind(l, (struct sockaddr *)&sin, sizeof(sin)));
    ASSERT_OK(listen(l, 1));
    ASSERT_OK(getsockname(l, (struct sockaddr *)&sin, &len));
    fd[0] = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT(fd[0] >= 0);
    ASSERT_OK(connect(fd[0], (struct sockaddr *)&sin, sizeof(sin)));
    fd[1] = accept(l, NULL, NULL);
    ASSERT(fd[1] >= 0);
    close(l);
    for (int i = 0; i < 2; i++) {
        int one = 1;
        ASSERT_OK(fcntl(fd[i], F_SETFL, O_NONBLOCK));
        ASSERT_OK(setsockopt(fd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
    }
}
