/*
 * test_crc32c.c - CRC32c engines against the check value, a bit-at-a-time
 * reference, incremental feeding, the fused copy, and real MPA FPDUs
 * captured from Linux siw (rping over soft-iWARP, MPA CRC enabled).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "swp.h"

/* The definition, one bit at a time: reflected, poly 0x82F63B78,
 * init and final xor 0xFFFFFFFF. */
static uint32_t ref_crc32c(uint32_t crc, const uint8_t *p, size_t len)
{
    crc = ~crc;
    while (len--) {
        crc ^= *p++;
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
    }
    return ~crc;
}

/* splitmix64: seeded, so a failure reproduces */
static uint64_t rng_state = 0x5157415250ull;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint8_t *random_buf(size_t len)
{
    uint8_t *b = malloc(len ? len : 1);

    ASSERT(b != NULL);
    for (size_t i = 0; i < len; i++)
        b[i] = (uint8_t)rnd();
    return b;
}

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

TEST(crc32c_check_value)
{
    ASSERT_EQ(ref_crc32c(0, (const uint8_t *)"123456789", 9), 0xE3069283u);
    ASSERT_EQ(swp_crc32c(0, "123456789", 9), 0xE3069283u);
    ASSERT_EQ(swp_crc32c_portable(0, "123456789", 9), 0xE3069283u);
    ASSERT_EQ(swp_crc32c(0, "", 0), 0);
    /* RFC 3720 B.4: 32 bytes of zeros */
    static const uint8_t zeros[32];
    ASSERT_EQ(swp_crc32c(0, zeros, 32), 0x8A9136AAu);
}

TEST(crc32c_engine_name)
{
    const char *n = swp_crc32c_name();

    ASSERT(strcmp(n, "sse4.2") == 0 || strcmp(n, "portable") == 0);
    ASSERT(strcmp(siwarp_crc32c_impl(), n) == 0);
    fprintf(stderr, "# engine: %s\n", n);
}

TEST(crc32c_env_forces_portable)
{
    /* each case runs in a fresh process: the engine is not chosen yet */
    setenv("SIWARP_CRC32C", "portable", 1);
    ASSERT(strcmp(swp_crc32c_name(), "portable") == 0);
    ASSERT_EQ(swp_crc32c(0, "123456789", 9), 0xE3069283u);
}

static void check_all_lengths(crc_fn fn)
{
    uint8_t *buf = random_buf(1024 + 16);

    for (size_t align = 0; align < 16; align++)
        for (size_t len = 0; len <= 1024; len++) {
            uint32_t seed = (uint32_t)rnd();
            uint32_t want = ref_crc32c(seed, buf + align, len);
            uint32_t got = fn(seed, buf + align, len);
            if (got != want)
                FAIL("len %zu align %zu seed 0x%08x: got 0x%08x want 0x%08x",
                     len, align, seed, got, want);
        }
    free(buf);
}

static void check_large(crc_fn fn)
{
    const size_t max = 1u << 20;
    uint8_t *buf = random_buf(max + 16);

    for (int round = 0; round < 6; round++) {
        size_t len = round == 0 ? max : (size_t)(rnd() % max);
        for (size_t align = 0; align < 16; align++) {
            uint32_t want = ref_crc32c(0, buf + align, len);
            uint32_t got = fn(0, buf + align, len);
            if (got != want)
                FAIL("len %zu align %zu: got 0x%08x want 0x%08x", len, align, got, want);
        }
    }
    /* the interleaving boundaries: 3 streams of 256 and 8192 bytes */
    static const size_t edges[] = { 767, 768, 769, 775, 776, 24575, 24576, 24577,
                                    24576 + 768, 24576 + 767, 2 * 24576 + 769 };
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
        for (size_t align = 0; align < 16; align++)
            ASSERT_EQ(fn(0, buf + align, edges[i]), ref_crc32c(0, buf + align, edges[i]));
    free(buf);
}

TEST(crc32c_matches_reference_small)  { check_all_lengths(swp_crc32c); }
TEST(crc32c_portable_matches_reference_small) { check_all_lengths(swp_crc32c_portable); }
TEST(crc32c_matches_reference_large)  { check_large(swp_crc32c); }
TEST(crc32c_portable_matches_reference_large) { check_large(swp_crc32c_portable); }

static void check_pieces(crc_fn fn)
{
    const size_t len = 300000;
    uint8_t *buf = random_buf(len);
    uint32_t want = ref_crc32c(0, buf, len);

    for (int round = 0; round < 50; round++) {
        uint32_t crc = 0;
        size_t off = 0;
        while (off < len) {
            /* mostly small pieces, sometimes big ones, sometimes empty */
            size_t n = rnd() % 4 == 0 ? rnd() % 70000 : rnd() % 40;
            if (n > len - off)
                n = len - off;
            crc = fn(crc, buf + off, n);
            off += n;
        }
        ASSERT_EQ(crc, want);
    }
    free(buf);
}

TEST(crc32c_incremental_equals_oneshot)          { check_pieces(swp_crc32c); }
TEST(crc32c_portable_incremental_equals_oneshot) { check_pieces(swp_crc32c_portable); }

static void check_copy(void)
{
    const size_t max = 200000;
    uint8_t *src = random_buf(max + 16);
    uint8_t *dst = malloc(max + 32);

    ASSERT(dst != NULL);
    for (int round = 0; round < 40; round++) {
        size_t len = round < 20 ? (size_t)round * 37 : (size_t)(rnd() % max);
        size_t sa = rnd() % 16, da = rnd() % 16;
        uint32_t seed = round & 1 ? (uint32_t)rnd() : 0;

        memset(dst, 0xa5, max + 32);
        uint32_t got = swp_crc32c_copy(seed, dst + da, src + sa, len);
        ASSERT_EQ(got, ref_crc32c(seed, src + sa, len));
        ASSERT_MEM_EQ(dst + da, src + sa, len);
        /* nothing written outside [da, da + len) */
        for (size_t i = 0; i < da; i++)
            ASSERT_EQ(dst[i], 0xa5);
        for (size_t i = da + len; i < max + 32; i++)
            ASSERT_EQ(dst[i], 0xa5);
    }
    free(src);
    free(dst);
}

TEST(crc32c_copy) { check_copy(); }

TEST(crc32c_copy_portable)
{
    setenv("SIWARP_CRC32C", "portable", 1);
    ASSERT(strcmp(swp_crc32c_name(), "portable") == 0);
    check_copy();
}

/*
 * MPA FPDUs from /work/shared/iwarp-traces/rping-crc.pcap (Linux siw, CRC
 * on; Wireshark: "Good CRC32"), the TCP payload of frames 13 (RDMA Write)
 * and 9 (Read Request).  RFC 5044 4.4: the CRC covers ULPDU_Length, ULPDU
 * and pad.  Finding: the trailer holds the final CRC least significant
 * byte first (0x97c8e254 is sent as 54 e2 c8 97), so it is NOT
 * swp_put32(crc) but swp_put32(bswap32(crc)).
 */
static const uint8_t fpdu_write[] = {
    0x00, 0x36, 0xc1, 0x40, 0x7f, 0x66, 0xa6, 0x00, 0x00, 0x00, 0x55, 0x93,
    0x45, 0x7e, 0xfa, 0x90, 0x72, 0x64, 0x6d, 0x61, 0x2d, 0x70, 0x69, 0x6e,
    0x67, 0x2d, 0x30, 0x3a, 0x20, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47,
    0x48, 0x49, 0x4a, 0x4b, 0x4c, 0x4d, 0x4e, 0x4f, 0x50, 0x51, 0x52, 0x53,
    0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x00, 0x54, 0xe2, 0xc8, 0x97,
};
static const uint8_t fpdu_read_req[] = {
    0x00, 0x2e, 0x41, 0x41, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0xd6, 0xa2, 0x95, 0x00,
    0x00, 0x00, 0x55, 0xb3, 0x59, 0xa8, 0x4a, 0x90, 0x00, 0x00, 0x00, 0x28,
    0x9e, 0x8f, 0x12, 0x00, 0x00, 0x00, 0x55, 0x93, 0x45, 0x7e, 0xe5, 0x20,
    0x56, 0x54, 0xd2, 0xd9,
};

static void check_fpdu(const uint8_t *f, size_t flen)
{
    uint32_t ulpdu_len = swp_get16(f);
    uint32_t covered = SWP_MPA_HDR_LEN + ulpdu_len + swp_mpa_pad(ulpdu_len);
    uint8_t trailer[4];

    ASSERT_EQ(covered + SWP_MPA_CRC_LEN, flen);
    uint32_t crc = swp_crc32c(0, f, covered);
    ASSERT_EQ(crc, swp_crc32c_portable(0, f, covered));
    /* little-endian on the wire */
    trailer[0] = (uint8_t)crc;
    trailer[1] = (uint8_t)(crc >> 8);
    trailer[2] = (uint8_t)(crc >> 16);
    trailer[3] = (uint8_t)(crc >> 24);
    ASSERT_MEM_EQ(trailer, f + covered, 4);
    /* ... which is the byte-swapped value through the big-endian helpers */
    swp_put32(trailer, __builtin_bswap32(crc));
    ASSERT_MEM_EQ(trailer, f + covered, 4);
    ASSERT(swp_get32(f + covered) != crc);
    /* the receiver's check: CRC over the covered bytes and the trailer is
     * the CRC32c residue (0x48674BC7 after final xor) */
    ASSERT_EQ(swp_crc32c(0, f, flen), 0x48674BC7u);
}

TEST(crc32c_mpa_fpdu_write_from_siw)    { check_fpdu(fpdu_write, sizeof(fpdu_write)); }
TEST(crc32c_mpa_fpdu_readreq_from_siw)  { check_fpdu(fpdu_read_req, sizeof(fpdu_read_req)); }

SWP_TEST_MAIN()
