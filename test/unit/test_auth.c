/*
 * test_auth.c - the handshake primitives (common/auth.c) both adapters
 * sign and check their connections with: the HMAC against RFC 4231's
 * published vectors (label and parts are simply its message, cut
 * anywhere), the compare, the random draw, the printed source address,
 * and the gate that rate-limits refusal warnings.
 */
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "harness.h"
#include "auth.h"

static const uint8_t tc2_want[SWP_AUTH_MAC_LEN] = {   /* RFC 4231 4.3 */
    0x5b, 0xdc, 0xc1, 0x46, 0xbf, 0x60, 0x75, 0x4e, 0x6a, 0x04, 0x24, 0x26, 0x08, 0x95, 0x75, 0xc7,
    0x5a, 0x00, 0x3f, 0x08, 0x9d, 0x27, 0x39, 0x83, 0x9d, 0xec, 0x58, 0xb9, 0x64, 0xec, 0x38, 0x43,
};

/* key "Jefe", message "what do ya want for nothing?": the label is its
 * first four octets, the parts the rest however cut */
TEST(mac_is_hmac_sha256_of_label_and_parts)
{
    const char *msg = "what do ya want for nothing?";
    uint8_t mac[SWP_AUTH_MAC_LEN];
    size_t rest = strlen(msg) - 4;

    for (size_t cut = 0; cut <= rest; cut++) {
        struct swp_auth_part parts[3] = {
            { msg + 4, cut }, { NULL, 0 }, { msg + 4 + cut, rest - cut },
        };
        memset(mac, 0, sizeof(mac));
        swp_auth_mac((const uint8_t *)"Jefe", 4, msg, parts, 3, mac);
        ASSERT_MEM_EQ(mac, tc2_want, sizeof(mac));
    }
}

/* RFC 4231 4.2: a 20-octet key of 0x0b, "Hi There" */
TEST(mac_long_key_vector)
{
    static const uint8_t want[SWP_AUTH_MAC_LEN] = {
        0xb0, 0x34, 0x4c, 0x61, 0xd8, 0xdb, 0x38, 0x53, 0x5c, 0xa8, 0xaf, 0xce, 0xaf, 0x0b, 0xf1, 0x2b,
        0x88, 0x1d, 0xc2, 0x00, 0xc9, 0x83, 0x3d, 0xa7, 0x26, 0xe9, 0x37, 0x6c, 0x2e, 0x32, 0xcf, 0xf7,
    };
    uint8_t key[20], mac[SWP_AUTH_MAC_LEN];
    struct swp_auth_part p = { "here", 4 };

    memset(key, 0x0b, sizeof(key));
    swp_auth_mac(key, sizeof(key), "Hi T", &p, 1, mac);
    ASSERT_MEM_EQ(mac, want, sizeof(mac));
}

/* the label is signed: the same parts under "REQ" and "REP" differ */
TEST(label_separates_messages)
{
    uint8_t key[16] = { 1 }, a[SWP_AUTH_MAC_LEN], b[SWP_AUTH_MAC_LEN];
    struct swp_auth_part p = { "private data", 12 };

    swp_auth_mac(key, sizeof(key), "REQ", &p, 1, a);
    swp_auth_mac(key, sizeof(key), "REP", &p, 1, b);
    ASSERT(!swp_auth_equal(a, b, sizeof(a)));
}

TEST(equal_compares_every_octet)
{
    uint8_t a[SWP_AUTH_MAC_LEN], b[SWP_AUTH_MAC_LEN];

    for (unsigned i = 0; i < sizeof(a); i++)
        a[i] = (uint8_t)(i * 7 + 1);
    memcpy(b, a, sizeof(b));
    ASSERT(swp_auth_equal(a, b, sizeof(a)));
    for (unsigned i = 0; i < sizeof(a); i++) {
        b[i] ^= 0x80;
        ASSERT(!swp_auth_equal(a, b, sizeof(a)));
        b[i] ^= 0x80;
    }
}

TEST(random_fills_and_differs)
{
    uint8_t a[64], b[64], zero[64] = { 0 };

    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
    ASSERT_OK(swp_auth_random(a, sizeof(a)));
    ASSERT_OK(swp_auth_random(b, sizeof(b)));
    /* 2^-512 each: not the kernel's to fail */
    ASSERT(memcmp(a, zero, sizeof(a)) != 0);
    ASSERT(memcmp(a, b, sizeof(a)) != 0);
    ASSERT_OK(swp_auth_random(a, 0));
}

TEST(wipe_zeroes)
{
    uint8_t s[40];

    memset(s, 0xa5, sizeof(s));
    swp_auth_wipe(s, sizeof(s));
    for (unsigned i = 0; i < sizeof(s); i++)
        ASSERT_EQ(s[i], 0);
}

TEST(addr_str_names_the_source)
{
    struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(5000) };
    struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(18515) };
    struct sockaddr un = { .sa_family = AF_UNIX };
    char buf[64];

    inet_pton(AF_INET, "192.0.2.7", &in.sin_addr);
    inet_pton(AF_INET6, "2001:db8::1", &in6.sin6_addr);
    swp_auth_addr_str((struct sockaddr *)&in, buf, sizeof(buf));
    ASSERT(strcmp(buf, "192.0.2.7:5000") == 0);
    swp_auth_addr_str((struct sockaddr *)&in6, buf, sizeof(buf));
    ASSERT(strcmp(buf, "[2001:db8::1]:18515") == 0);
    swp_auth_addr_str(&un, buf, sizeof(buf));
    ASSERT(strcmp(buf, "an unknown address") == 0);
    swp_auth_addr_str(NULL, buf, sizeof(buf));
    ASSERT(strcmp(buf, "an unknown address") == 0);
}

/* one warning per period; the next one carries the count left out */
TEST(warn_gate_limits_and_counts)
{
    struct swp_auth_warn_gate g = { 0 };
    unsigned skipped = 99;

    ASSERT_EQ(swp_auth_warn_due(&g, 1000, 10, &skipped), 1);
    ASSERT_EQ(skipped, 0);
    ASSERT_EQ(swp_auth_warn_due(&g, 1000, 10, &skipped), 0);
    ASSERT_EQ(swp_auth_warn_due(&g, 1005, 10, &skipped), 0);
    ASSERT_EQ(swp_auth_warn_due(&g, 1009, 10, &skipped), 0);
    ASSERT_EQ(swp_auth_warn_due(&g, 1010, 10, &skipped), 1);
    ASSERT_EQ(skipped, 3);
    ASSERT_EQ(swp_auth_warn_due(&g, 1030, 10, &skipped), 1);
    ASSERT_EQ(skipped, 0);
}

SWP_TEST_MAIN()
