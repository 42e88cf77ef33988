/*
 * test_crc32c.c - CRC32c engines against the check value, a bit-at-a-time
 * reference, incremental feeding, the fused copy, and real MPA FPDUs
 * captured from Linux siw (rping over soft-iWARP, MPA CRC enabled).
 *
 * Every engine the CPU runs is forced in turn with SIWARP_CRC32C (each
 * case is its own process, so the engine is chosen afresh); an engine the
 * CPU lacks is skipped, saying which feature is missing.
 */
#include <stdbool.h>
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

/* The same a byte at a time (table filled from the bit-wise definition),
 * for the multi-megabyte cases; checked against ref_crc32c below. */
static uint32_t ref_tab[256];

static uint32_t ref_bytewise(uint32_t crc, const uint8_t *p, size_t len)
{
    if (!ref_tab[1])
        for (uint32_t n = 0; n < 256; n++) {
            uint8_t b = (uint8_t)n;
            ref_tab[n] = ~ref_crc32c(0xFFFFFFFFu, &b, 1);
        }
    crc = ~crc;
    while (len--)
        crc = ref_tab[(crc ^ *p++) & 0xff] ^ (crc >> 8);
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
    for (size_t i = 0; i < len; i += 8) {
        uint64_t r = rnd();
        memcpy(b + i, &r, len - i < 8 ? len - i : 8);
    }
    return b;
}

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

/* ---- engines ---------------------------------------------------------------- */

struct engine {
    const char *env;                /* SIWARP_CRC32C value */
    const char *name;               /* what swp_crc32c_name() reports */
    const char *needs;              /* CPU features, for the skip message */
    bool (*cpu_has)(void);
};

static bool cpu_sse42(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2");
#else
    return false;
#endif
}

static bool cpu_pclmul(void)
{
#if defined(__x86_64__)
    return cpu_sse42() && __builtin_cpu_supports("pclmul");
#else
    return false;
#endif
}

static bool cpu_vpclmul(void)
{
#if defined(__x86_64__)
    return cpu_pclmul() && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("vpclmulqdq");
#else
    return false;
#endif
}

static bool cpu_any(void)
{
    return true;
}

/* best first, as crc32c.c and crc32c_x86.c order them */
static const struct engine engines[] = {
    { "hybrid",   "hybrid",   "sse4.2 pclmul avx2 avx512f avx512vl vpclmulqdq", cpu_vpclmul },
    { "vpclmul",  "vpclmul",  "sse4.2 pclmul avx2 avx512f avx512vl vpclmulqdq", cpu_vpclmul },
    { "pclmul",   "pclmul",   "sse4.2 pclmul", cpu_pclmul },
    { "sse42",    "sse4.2",   "sse4.2", cpu_sse42 },
    { "portable", "portable", "nothing", cpu_any },
};
enum { E_HYBRID, E_VPCLMUL, E_PCLMUL, E_SSE42, E_PORTABLE, E_N };

/* Force engine e for this process, or skip the case if the CPU lacks it. */
static void use_engine(int e)
{
    const struct engine *en = &engines[e];

    setenv("SIWARP_CRC32C", en->env, 1);
    if (!en->cpu_has()) {
        ASSERT(strcmp(swp_crc32c_name(), en->name) != 0);
        SKIP("CPU lacks %s", en->needs);
    }
    if (strcmp(swp_crc32c_name(), en->name) != 0)
        FAIL("SIWARP_CRC32C=%s gave engine %s", en->env, swp_crc32c_name());
}

TEST(crc32c_reference_self_check)
{
    uint8_t *buf = random_buf(5000);

    ASSERT_EQ(ref_crc32c(0, (const uint8_t *)"123456789", 9), 0xE3069283u);
    for (size_t len = 0; len < 5000; len += 1 + len / 8) {
        uint32_t seed = (uint32_t)rnd();
        ASSERT_EQ(ref_bytewise(seed, buf, len), ref_crc32c(seed, buf, len));
    }
    free(buf);
}

TEST(crc32c_default_engine_is_best_supported)
{
    const char *n;
    int best = 0;

    unsetenv("SIWARP_CRC32C");      /* the case's own process: not chosen yet */
    n = swp_crc32c_name();
    while (!engines[best].cpu_has())
        best++;
    /* hybrid is the default only where a start-up timing finds it faster
     * than vpclmul alone; otherwise vpclmul is */
    if (best == E_HYBRID && strcmp(n, engines[E_HYBRID].name) != 0)
        best = E_VPCLMUL;
    ASSERT(strcmp(n, engines[best].name) == 0);
    ASSERT(strcmp(siwarp_crc32c_impl(), n) == 0);
    fprintf(stderr, "# engine: %s\n", n);
}

TEST(crc32c_env_unknown_engine_uses_default)
{
    int best = 0;

    setenv("SIWARP_CRC32C", "no-such-engine", 1);
    while (!engines[best].cpu_has())
        best++;
    if (best == E_HYBRID && strcmp(swp_crc32c_name(), engines[E_HYBRID].name) != 0)
        best = E_VPCLMUL;
    ASSERT(strcmp(swp_crc32c_name(), engines[best].name) == 0);
}

static void check_value(void)
{
    static const uint8_t zeros[32];

    ASSERT_EQ(swp_crc32c(0, "123456789", 9), 0xE3069283u);
    ASSERT_EQ(swp_crc32c(0, "", 0), 0);
    ASSERT_EQ(swp_crc32c(0x12345678u, "", 0), 0x12345678u);
    /* RFC 3720 B.4: 32 bytes of zeros */
    ASSERT_EQ(swp_crc32c(0, zeros, 32), 0x8A9136AAu);
    ASSERT_EQ(swp_crc32c_portable(0, "123456789", 9), 0xE3069283u);
}

/* Every length 0..4096 at every alignment 0..63, a random seed per
 * alignment; the expected values are built one byte at a time. */
static void check_all_lengths(crc_fn fn)
{
    const size_t max = 4096;
    uint8_t *buf = random_buf(max + 64);

    for (size_t align = 0; align < 64; align++) {
        uint32_t seed = align ? (uint32_t)rnd() : 0;
        uint32_t want = seed;
        for (size_t len = 0; len <= max; len++) {
            uint32_t got = fn(seed, buf + align, len);
            if (got != want)
                FAIL("len %zu align %zu seed 0x%08x: got 0x%08x want 0x%08x",
                     len, align, seed, got, want);
            want = ref_crc32c(want, buf + align + len, 1);
        }
    }
    free(buf);
}

/* A random size up to 4 MiB at each alignment 0..63, then the lengths
 * around every switch between code paths above 4 KiB. */
static void check_large(crc_fn fn)
{
    const size_t max = 4u << 20;
    uint8_t *buf = random_buf(max + 64);

    for (size_t align = 0; align < 64; align++) {
        size_t len = (size_t)(rnd() % (max + 1));
        uint32_t seed = (uint32_t)rnd();
        uint32_t want = ref_bytewise(seed, buf + align, len), got = fn(seed, buf + align, len);
        if (got != want)
            FAIL("len %zu align %zu seed 0x%08x: got 0x%08x want 0x%08x",
                 len, align, seed, got, want);
    }
    static const size_t edges[] = {
        4096 + 63, 4096 + 64, 4096 + 65, 4096 + 255, 4096 + 256, 4096 + 257,
        24575, 24576, 24577, 24576 + 767, 24576 + 768, 24576 + 769,
        2 * 24576 + 769, 65536 - 1, 65536 + 17, 1u << 20, max,
        /* hybrid: whole 6016-byte chunks from 12032 bytes on */
        12031, 12032, 12033, 12032 + 63, 18047, 18048, 18049, 6016 * 10 + 5,
    };
    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
        for (size_t align = 0; align < 64; align += edges[i] > 100000 ? 21 : 1) {
            uint32_t want = ref_bytewise(0, buf + align, edges[i]);
            uint32_t got = fn(0, buf + align, edges[i]);
            if (got != want)
                FAIL("len %zu align %zu: got 0x%08x want 0x%08x", edges[i], align, got, want);
        }
    free(buf);
}

/* The buffer fed in random pieces: tiny, around the engine thresholds,
 * large, and empty ones, starting at whatever alignment they fall on. */
static void check_pieces(crc_fn fn)
{
    const size_t len = 1u << 20;
    uint8_t *buf = random_buf(len);
    uint32_t want = ref_bytewise(0, buf, len);

    for (int round = 0; round < 40; round++) {
        uint32_t crc = 0;
        size_t off = 0;
        while (off < len) {
            size_t n;
            switch (rnd() % 4) {
            case 0:  n = rnd() % 70; break;
            case 1:  n = rnd() % 600; break;
            case 2:  n = rnd() % 9000; break;
            default: n = rnd() % 100000; break;
            }
            if (n > len - off)
                n = len - off;
            crc = fn(crc, buf + off, n);
            off += n;
        }
        ASSERT_EQ(crc, want);
    }
    free(buf);
}

static void copy_one(uint8_t *dst, size_t cap, const uint8_t *src, size_t len,
                     size_t da, uint32_t seed, bool guard_all)
{
    size_t lo = guard_all ? 0 : da, hi = guard_all ? cap : da + len + 64;

    memset(dst + lo, 0xa5, hi - lo);
    uint32_t got = swp_crc32c_copy(seed, dst + da, src, len);
    uint32_t want = len > 8192 ? ref_bytewise(seed, src, len) : ref_crc32c(seed, src, len);
    if (got != want)
        FAIL("len %zu src align %zu dst align %zu: got 0x%08x want 0x%08x",
             len, (size_t)((uintptr_t)src & 63), da, got, want);
    ASSERT_MEM_EQ(dst + da, src, len);
    /* nothing written outside [da, da + len) */
    for (size_t i = lo; i < da; i++)
        ASSERT_EQ(dst[i], 0xa5);
    for (size_t i = da + len; i < hi; i++)
        ASSERT_EQ(dst[i], 0xa5);
}

/* Every length 0..4096 and random ones up to 4 MiB, source and destination
 * at independent random alignments 0..63. */
static void check_copy(void)
{
    const size_t max = 4u << 20, cap = max + 192;
    uint8_t *src = random_buf(max + 64);
    uint8_t *dst = aligned_alloc(64, cap);

    ASSERT(dst != NULL);
    for (size_t len = 0; len <= 4096; len++)
        copy_one(dst, cap, src + rnd() % 64, len, rnd() % 64,
                 len & 1 ? (uint32_t)rnd() : 0, false);
    for (int round = 0; round < 24; round++)
        copy_one(dst, cap, src + rnd() % 64, (size_t)(rnd() % (max + 1)), rnd() % 64,
                 (uint32_t)rnd(), true);
    free(src);
    free(dst);
}

static uint32_t portable_fn(uint32_t crc, const void *p, size_t len)
{
    return swp_crc32c_portable(crc, p, len);
}

#define ENGINE_TESTS(e, id)                                                   \
    TEST(crc32c_##e##_check_value)  { use_engine(id); check_value(); }        \
    TEST(crc32c_##e##_all_lengths)  { use_engine(id); check_all_lengths(swp_crc32c); } \
    TEST(crc32c_##e##_large)        { use_engine(id); check_large(swp_crc32c); } \
    TEST(crc32c_##e##_incremental)  { use_engine(id); check_pieces(swp_crc32c); } \
    TEST(crc32c_##e##_copy)         { use_engine(id); check_copy(); }

ENGINE_TESTS(hybrid, E_HYBRID)
ENGINE_TESTS(vpclmul, E_VPCLMUL)
ENGINE_TESTS(pclmul, E_PCLMUL)
ENGINE_TESTS(sse42, E_SSE42)
ENGINE_TESTS(portable, E_PORTABLE)

/* swp_crc32c_portable() is the table engine whatever the default is */
TEST(crc32c_portable_entry_all_lengths) { check_all_lengths(portable_fn); }
TEST(crc32c_portable_entry_large)       { check_large(portable_fn); }

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
    ASSERT_EQ(crc, ref_crc32c(0, f, covered));
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
