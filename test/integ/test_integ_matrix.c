/*
 * test_integ_matrix.c - every operation at a medium set of sizes in every
 * combination of CRC on/off x markers on/off x MPA revision 1/2 x
 * peer-to-peer mode (Read RTR, Write RTR, none).  Peer-to-peer mode is an
 * RFC 6581 (MPA v2) feature, so revision 1 runs without it.  The full size
 * list up to 64 MiB runs in test_integ_ops for the default combination.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "integ.h"

static const uint64_t sizes[] = { 0, 1, 3, 4095, 4096, 65537, 300000 };
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

enum { P2P_NONE, P2P_READ, P2P_WRITE };

static void combo(int crc, int markers, int rev, int p2p, int srv_crc, int srv_markers)
{
    static const uint64_t sgl[] = { 4096, 65537 };
    struct integ_step steps[128];
    struct integ_cfg c;
    char buf[128];
    int n = 0;

    integ_cfg_default(&c);
    c.cp.crc = crc;
    c.cp.markers = markers;
    c.cp.mpa_rev = rev;
    c.cp.p2p = p2p != P2P_NONE;
    c.cp.rtr = p2p == P2P_READ ? SIWARP_RTR_READ : p2p == P2P_WRITE ? SIWARP_RTR_WRITE : 0;
    c.srv_crc = srv_crc;
    c.srv_markers = srv_markers;
    fprintf(stderr, "# %s\n", integ_cfg_str(&c, buf, sizeof(buf)));
    for (int op = I_SEND; op <= I_READ; op++)
        n = integ_add(steps, n, (enum integ_op)op, sizes, NSIZES, 1, 0);
    n = integ_add(steps, n, I_SEND, sgl, 2, 3, 0);
    n = integ_add(steps, n, I_WRITE, sgl, 2, 3, 1);
    n = integ_add(steps, n, I_READ, sgl, 2, 1, 0);   /* multi-SGE Reads: test_integ_ops */
    n = integ_add(steps, n, I_FENCE, sgl, 2, 1, 0);
    ASSERT_OK(integ_run(&c, steps, n));
}

#define COMBO(c, mk, rev, p2p, name) \
    TEST(crc##c##_markers##mk##_mpa##rev##_##name) { combo(c, mk, rev, P2P_##p2p, c, mk); }

#define P2P_SET(c, mk) \
    COMBO(c, mk, 2, NONE, p2p_none) \
    COMBO(c, mk, 2, READ, p2p_read) \
    COMBO(c, mk, 2, WRITE, p2p_write) \
    COMBO(c, mk, 1, NONE, p2p_none)

P2P_SET(0, 0)
P2P_SET(0, 1)
P2P_SET(1, 0)
P2P_SET(1, 1)

/* one side asks, the other does not: CRC is used if either side asks
 * (RFC 5044 7.1), and a peer that asks for markers gets them */
TEST(crc_asked_by_server_only)     { combo(0, 0, 2, P2P_NONE, 1, 0); }
TEST(crc_asked_by_client_only)     { combo(1, 0, 2, P2P_NONE, 0, 0); }
TEST(markers_asked_by_server_only) { combo(0, 0, 2, P2P_NONE, 0, 1); }
TEST(markers_asked_by_client_only) { combo(0, 1, 2, P2P_NONE, 0, 0); }
TEST(crc_server_only_mpa1)         { combo(0, 0, 1, P2P_NONE, 1, 0); }

SWP_TEST_MAIN()
