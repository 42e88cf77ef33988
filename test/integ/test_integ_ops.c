/*
 * test_integ_ops.c - every operation between two processes over loopback
 * with the default connection parameters (siwarp_conn_param_default): each
 * Send variant, Write and Read at 0 B .. 64 MiB, scatter-gather lists,
 * unsignaled work requests, the read fence, and IPv6.
 */
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "integ.h"

#define MiB (1ULL << 20)

/* the full list minus 64 MiB, which gets a case per operation */
static const uint64_t sizes[] = { 0, 1, 3, 4095, 4096, 65537, MiB + 7 };
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

static void run_op(enum integ_op op, const uint64_t *sz, int nsz, int nsge, int unsig)
{
    struct integ_step steps[64];
    struct integ_cfg c;
    int n;

    integ_cfg_default(&c);
    n = integ_add(steps, 0, op, sz, nsz, nsge, unsig);
    ASSERT_OK(integ_run(&c, steps, n));
}

TEST(send_sizes)        { run_op(I_SEND, sizes, NSIZES, 1, 0); }
TEST(send_se_sizes)     { run_op(I_SEND_SE, sizes, NSIZES, 1, 0); }
TEST(send_inv_sizes)    { run_op(I_SEND_INV, sizes, NSIZES, 1, 0); }
TEST(send_se_inv_sizes) { run_op(I_SEND_SE_INV, sizes, NSIZES, 1, 0); }
TEST(write_sizes)       { run_op(I_WRITE, sizes, NSIZES, 1, 0); }
TEST(read_sizes)        { run_op(I_READ, sizes, NSIZES, 1, 0); }

static const uint64_t big[] = { 64 * MiB };
TEST(send_64m)          { run_op(I_SEND, big, 1, 1, 0); }
TEST(send_se_64m)       { run_op(I_SEND_SE, big, 1, 1, 0); }
TEST(send_inv_64m)      { run_op(I_SEND_INV, big, 1, 1, 0); }
TEST(send_se_inv_64m)   { run_op(I_SEND_SE_INV, big, 1, 1, 0); }
TEST(write_64m)         { run_op(I_WRITE, big, 1, 1, 0); }
TEST(read_64m)          { run_op(I_READ, big, 1, 1, 0); }

/* several SGEs on both ends (the server receives into an SGL too) */
static const uint64_t sgl_sizes[] = { 4, 4096, 65537, MiB + 7 };
static void run_sgl(enum integ_op op)
{
    struct integ_step steps[32];
    struct integ_cfg c;
    int n = 0;

    integ_cfg_default(&c);
    for (int k = 2; k <= 4; k++)
        n = integ_add(steps, n, op, sgl_sizes, 4, k, 0);
    ASSERT_OK(integ_run(&c, steps, n));
}
TEST(sgl_send)          { run_sgl(I_SEND); }
TEST(sgl_send_se_inv)   { run_sgl(I_SEND_SE_INV); }
TEST(sgl_write)         { run_sgl(I_WRITE); }
TEST(sgl_read)          { run_sgl(I_READ); }

/* unsignaled Sends and Writes between signaled ones: no completion may
 * appear for an unsignaled WR, signaled ones complete in order */
TEST(unsignaled_mix)
{
    static const uint64_t sz[] = { 0, 1, 4096, 65537 };
    struct integ_step steps[64];
    struct integ_cfg c;
    int n = 0;

    integ_cfg_default(&c);
    for (int r = 0; r < 2; r++) {
        n = integ_add(steps, n, I_SEND, sz, 4, 1, 1);
        n = integ_add(steps, n, I_WRITE, sz, 4, 1, 1);
        n = integ_add(steps, n, I_SEND, sz, 4, 2, 0);
        n = integ_add(steps, n, I_WRITE, sz, 4, 2, 1);
        n = integ_add(steps, n, I_READ, sz, 4, 1, 0);
    }
    ASSERT_OK(integ_run(&c, steps, n));
}

/* Read into D followed by a fenced Send of D: the Send must carry what the
 * Read brought, i.e. it may only start once the Read Response is placed */
TEST(read_fence)
{
    static const uint64_t sz[] = { 1, 4096, 65537, MiB + 7, 8 * MiB };
    struct integ_step steps[16];
    struct integ_cfg c;
    int n;

    integ_cfg_default(&c);
    /* one SGE: multi-SGE Reads are covered (and may fail) in sgl_read */
    n = integ_add(steps, 0, I_FENCE, sz, 5, 1, 0);
    ASSERT_OK(integ_run(&c, steps, n));
}

static int have_ipv6_loopback(void)
{
    int s = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 a = { .sin6_family = AF_INET6 };
    int ok;

    if (s < 0)
        return 0;
    a.sin6_addr.s6_addr[15] = 1;
    ok = bind(s, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(s);
    return ok;
}

TEST(ipv6_loopback)
{
    static const uint64_t sz[] = { 0, 1, 4096, 65537, MiB + 7 };
    struct integ_step steps[64];
    struct integ_cfg c;
    int n = 0;

    if (!have_ipv6_loopback())
        SKIP("no IPv6 loopback ([::1] cannot be bound)");
    integ_cfg_default(&c);
    c.family = AF_INET6;
    for (int op = I_SEND; op <= I_READ; op++)
        n = integ_add(steps, n, (enum integ_op)op, sz, 5, 1, 0);
    ASSERT_OK(integ_run(&c, steps, n));
}

SWP_TEST_MAIN()
