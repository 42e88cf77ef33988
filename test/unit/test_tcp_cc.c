/*
 * test_tcp_cc.c - the TCP congestion control libsiwarp asks for (tcp_cc.c):
 * list syntax, one socket, and both ends of a connection made by the
 * connection manager.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "swp.h"

static void cc_of(int fd, char *name, size_t cap)
{
    socklen_t len = (socklen_t)cap;

    memset(name, 0, cap);
    ASSERT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len), 0);
    name[cap - 1] = '\0';
}

/* One the kernel runs that differs from a fresh socket's default, set on
 * a probe socket; the test is skipped where none can be chosen. */
static void other_cc(char *want, size_t cap, char *dflt)
{
    static const char *const cands[] = { "reno", "cubic" };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    ASSERT(fd >= 0);
    cc_of(fd, dflt, 16);
    for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
        if (strcmp(cands[i], dflt) != 0 &&
            setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cands[i], (socklen_t)strlen(cands[i])) == 0) {
            snprintf(want, cap, "%s", cands[i]);
            close(fd);
            return;
        }
    }
    close(fd);
    SKIP("no congestion control other than %s may be chosen here", dflt);
}

TEST(tcp_congestion_list_syntax)
{
    ASSERT_EQ(siwarp_tcp_congestion_check(""), 0);
    ASSERT_EQ(siwarp_tcp_congestion_check("cubic"), 0);
    ASSERT_EQ(siwarp_tcp_congestion_check("cubic,reno,bbr"), 0);
    ASSERT_EQ(siwarp_tcp_congestion_check("my_cc-2"), 0);
    ASSERT_EQ(siwarp_tcp_congestion_check(NULL), -EINVAL);
    ASSERT_EQ(siwarp_tcp_congestion_check("cubic,"), -EINVAL);
    ASSERT_EQ(siwarp_tcp_congestion_check(",cubic"), -EINVAL);
    ASSERT_EQ(siwarp_tcp_congestion_check("cubic,,reno"), -EINVAL);
    ASSERT_EQ(siwarp_tcp_congestion_check("cu bic"), -EINVAL);
    ASSERT_EQ(siwarp_tcp_congestion_check("a123456789abcdef"), -EINVAL);   /* 16 > 15 */
    ASSERT_EQ(siwarp_tcp_congestion_check("a123456789abcde"), 0);          /* 15 */
    char longlist[80];
    memset(longlist, 'a', sizeof(longlist));
    for (int i = 10; i < 79; i += 11)
        longlist[i] = ',';
    longlist[79] = '\0';
    ASSERT_EQ(siwarp_tcp_congestion_check(longlist), -EINVAL);            /* > 63 */
}

TEST(tcp_congestion_on_one_socket)
{
    char want[16], dflt[16], got[16], chosen[16], list[48];
    int fd;

    other_cc(want, sizeof(want), dflt);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT(fd >= 0);
    /* a name the kernel lacks is skipped, the next one taken */
    snprintf(list, sizeof(list), "no-such-cc-x,%s", want);
    ASSERT_EQ(siwarp_sock_set_congestion(fd, list, chosen, sizeof(chosen)), 0);
    ASSERT(strcmp(chosen, want) == 0);
    cc_of(fd, got, sizeof(got));
    ASSERT(strcmp(got, want) == 0);
    close(fd);
    /* none taken: the default stays, and the caller is told */
    fd = socket(AF_INET, SOCK_STREAM, 0);
    ASSERT(fd >= 0);
    ASSERT_EQ(siwarp_sock_set_congestion(fd, "no-such-cc-x", chosen, sizeof(chosen)), -ENOENT);
    ASSERT_EQ(chosen[0], '\0');
    cc_of(fd, got, sizeof(got));
    ASSERT(strcmp(got, dflt) == 0);
    ASSERT_EQ(siwarp_sock_set_congestion(fd, "cu bic", chosen, sizeof(chosen)), -EINVAL);
    close(fd);
    ASSERT_EQ(siwarp_sock_set_congestion(-1, want, NULL, 0), -EBADF);
}

/* Both sockets of a connection -- the initiator's before it connects, the
 * one the listener accepts -- run what the context asks for. */
TEST(tcp_congestion_both_ends_of_a_connection)
{
    char want[16], dflt[16], got[16], list[48];
    struct siwarp_ctx *ctx;
    struct siwarp_pd *pd;
    struct siwarp_cq *cq;
    struct siwarp_qp *a, *b;
    struct siwarp_qp_init_attr qa;
    struct siwarp_conn_param p;
    struct siwarp_listener *l;
    struct siwarp_conn_req *req;
    struct sockaddr_in sin;
    struct sockaddr_storage ss;

    other_cc(want, sizeof(want), dflt);
    ASSERT_OK(siwarp_ctx_create(&ctx));
    snprintf(list, sizeof(list), "no-such-cc-x,%s", want);
    ASSERT_EQ(siwarp_ctx_set_tcp_congestion(ctx, "bad list,"), -EINVAL);
    ASSERT_OK(siwarp_ctx_set_tcp_congestion(ctx, list));
    ASSERT_OK(siwarp_alloc_pd(ctx, &pd));
    ASSERT_OK(siwarp_create_cq(ctx, 64, &cq));
    memset(&qa, 0, sizeof(qa));
    qa.send_cq = qa.recv_cq = cq;
    qa.max_send_wr = qa.max_recv_wr = 8;
    qa.max_sge = 1;
    ASSERT_OK(siwarp_create_qp(pd, &qa, &a));
    ASSERT_OK(siwarp_create_qp(pd, &qa, &b));
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    siwarp_conn_param_default(&p);
    p.timeout_ms = 2000;
    ASSERT_OK(siwarp_listen(ctx, (struct sockaddr *)&sin, sizeof(sin), &p, &l));
    ASSERT_OK(siwarp_listener_addr(l, &ss));
    ASSERT_OK(siwarp_connect(a, (struct sockaddr *)&ss, sizeof(struct sockaddr_in), &p));
    ASSERT_OK(siwarp_get_conn_request_wait(l, 2000, &req));
    ASSERT_OK(siwarp_accept(req, b, &p));
    ASSERT_OK(siwarp_connect_wait(a, 2000));
    cc_of(a->pl.fd, got, sizeof(got));
    ASSERT(strcmp(got, want) == 0);
    cc_of(b->pl.fd, got, sizeof(got));
    ASSERT(strcmp(got, want) == 0);
    ASSERT_OK(siwarp_listener_destroy(l));
    ASSERT_OK(siwarp_destroy_qp(a));
    ASSERT_OK(siwarp_destroy_qp(b));
    ASSERT_OK(siwarp_destroy_cq(cq));
    ASSERT_OK(siwarp_dealloc_pd(pd));
    siwarp_ctx_destroy(ctx);
}

/* SIWARP_TCP_CONGESTION is every new context's list; a malformed one is
 * reported and ignored. */
TEST(tcp_congestion_from_the_environment)
{
    struct siwarp_ctx *ctx;

    setenv("SIWARP_TCP_CONGESTION", "reno,cubic", 1);
    ASSERT_OK(siwarp_ctx_create(&ctx));
    ASSERT(strcmp(ctx->tcp_cc, "reno,cubic") == 0);
    siwarp_ctx_destroy(ctx);
    setenv("SIWARP_TCP_CONGESTION", "reno cubic", 1);
    ASSERT_OK(siwarp_ctx_create(&ctx));
    ASSERT_EQ(ctx->tcp_cc[0], '\0');
    siwarp_ctx_destroy(ctx);
    unsetenv("SIWARP_TCP_CONGESTION");
}

SWP_TEST_MAIN()
