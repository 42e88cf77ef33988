/*
 * test_integ_netns.c - a subset of the operations over a veth pair between
 * two network namespaces the test creates with contrib/netns.sh: a real
 * link with a 1500-byte MTU (so MULPDU follows a 1448-byte MSS) instead of
 * loopback's 64 KiB.  Each operation at 1 MiB + 7 and 64 MiB with CRC on.
 * Skips (with the reason) when not root or when namespaces are unavailable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "integ.h"

#define MiB (1ULL << 20)

static char ns_name[32];

static const char *netns_sh(void)
{
    static char path[4096];
    const char *top = getenv("top_srcdir");

    snprintf(path, sizeof(path), "%s/contrib/netns.sh", top ? top : ".");
    if (access(path, R_OK) != 0)
        snprintf(path, sizeof(path), "%s", SWP_SRCDIR "/contrib/netns.sh");
    return path;
}

static int netns(const char *verb)
{
    char cmd[4300];
    int st;

    snprintf(cmd, sizeof(cmd), "sh '%s' %s %s >/dev/null", netns_sh(), verb,
             strcmp(verb, "check") ? ns_name : "");
    st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static void run_netns(enum integ_op op, int family)
{
    static const uint64_t sz[] = { MiB + 7, 64 * MiB };
    struct integ_step steps[4];
    struct integ_cfg c;
    char sns[48], cns[48];
    int n, rc;

    if (geteuid() != 0)
        SKIP("needs root to create network namespaces");
    rc = netns("check");
    if (rc == 77 || rc == 127)
        SKIP("ip netns not available (netns.sh check: %d)", rc);
    ASSERT_EQ(rc, 0);
    snprintf(ns_name, sizeof(ns_name), "swi%d", (int)getpid());
    ASSERT_EQ(netns("up"), 0);
    snprintf(sns, sizeof(sns), "%s-s", ns_name);
    snprintf(cns, sizeof(cns), "%s-c", ns_name);
    integ_cfg_default(&c);
    c.cp.crc = 1;
    c.srv_crc = 1;
    c.family = family;
    c.addr = family == AF_INET6 ? "fd00:231::1" : "10.231.0.1";
    c.srv_netns = sns;
    c.cli_netns = cns;
    n = integ_add(steps, 0, op, sz, 2, op == I_WRITE ? 2 : 1, 0);
    rc = integ_run(&c, steps, n);
    netns("down");
    ASSERT_OK(rc);
}

TEST(netns_send)        { run_netns(I_SEND, AF_INET); }
TEST(netns_send_se_inv) { run_netns(I_SEND_SE_INV, AF_INET); }
TEST(netns_write)       { run_netns(I_WRITE, AF_INET); }
TEST(netns_read)        { run_netns(I_READ, AF_INET); }
TEST(netns_read_ipv6)   { run_netns(I_READ, AF_INET6); }

SWP_TEST_MAIN()
