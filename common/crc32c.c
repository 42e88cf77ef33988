/*
 * crc32c.c - CRC32c (Castagnoli, reflected polynomial 0x82F63B78), the MPA
 * FPDU CRC of RFC 5044 section 4.4 (RFC 3385 / iSCSI CRC).
 *
 * Two engines, chosen once at first use:
 *  - "sse4.2":   the SSE4.2 crc32 instruction on three interleaved streams
 *                (the instruction has a 3-cycle latency and a 1-cycle
 *                throughput), the three partial CRCs merged with a
 *                precomputed "append N zero bytes" operator (tables);
 *  - "portable": slicing-by-8 tables.
 * SIWARP_CRC32C=portable in the environment forces the table engine.
 *
 * All functions take and return the *final* CRC (0 to start); pre- and
 * post-inversion happen inside, so feeding a buffer in pieces gives the
 * same result as feeding it at once.
 *
 * On the wire (RFC 5044 4.4, checked against a Linux siw capture that
 * Wireshark rates "Good CRC32"): the CRC covers ULPDU_Length, ULPDU, pad
 * (and markers, if any), and the 32-bit final CRC is sent LEAST significant
 * byte first, i.e. NOT with swp_put32():
 *
 *     uint32_t crc = swp_crc32c(0, fpdu, 2 + ulpdu_len + pad);
 *     trailer[0] = crc; trailer[1] = crc >> 8;
 *     trailer[2] = crc >> 16; trailer[3] = crc >> 24;
 *     (equivalently swp_put32(trailer, __builtin_bswap32(crc)))
 *
 * test/unit/test_crc32c.c holds the captured FPDUs as fixed vectors.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "swp.h"

#if defined(__x86_64__) || defined(__i386__)
#define SWP_CRC_X86 1
#include <nmmintrin.h>
#endif

#define POLY 0x82F63B78u            /* reflected Castagnoli polynomial */

/* ---- portable: slicing-by-8 ------------------------------------------------- */

static uint32_t tab8[8][256];

static void build_tables(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        tab8[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = tab8[0][n];
        for (int k = 1; k < 8; k++) {
            c = tab8[0][c & 0xff] ^ (c >> 8);
            tab8[k][n] = c;
        }
    }
}

static inline uint64_t load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);               /* little-endian host assumed (x86, arm64) */
    return v;
}

/* raw register update, no inversion */
static uint32_t sb8_update(uint32_t c, const uint8_t *p, size_t len)
{
    while (len && ((uintptr_t)p & 7)) {
        c = tab8[0][(c ^ *p++) & 0xff] ^ (c >> 8);
        len--;
    }
    while (len >= 8) {
        uint64_t w = load64(p) ^ c;
        c = tab8[7][w & 0xff] ^ tab8[6][(w >> 8) & 0xff] ^
            tab8[5][(w >> 16) & 0xff] ^ tab8[4][(w >> 24) & 0xff] ^
            tab8[3][(w >> 32) & 0xff] ^ tab8[2][(w >> 40) & 0xff] ^
            tab8[1][(w >> 48) & 0xff] ^ tab8[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        c = tab8[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return c;
}

/* ---- zero-append operators (to merge interleaved streams) ------------------- */

/* a * b modulo P, both in reflected representation (x^0 is bit 31). */
static uint32_t multmodp(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31, p = 0;

    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ POLY : b >> 1;
    }
    return p;
}

/* x^(8n) mod P: the operator that appends n zero bytes to a raw register. */
static uint32_t x8nmodp(size_t n)
{
    uint32_t r = 1u << 31, sq = 1u << 23;       /* 1, x^8 */

    while (n) {
        if (n & 1)
            r = multmodp(sq, r);
        sq = multmodp(sq, sq);
        n >>= 1;
    }
    return r;
}

/* Byte-wise tables of "multiply by x^(8n)" so a shift is four lookups. */
static void build_shift(uint32_t tab[4][256], size_t n)
{
    uint32_t op = x8nmodp(n);

    for (int i = 0; i < 4; i++)
        for (uint32_t v = 0; v < 256; v++)
            tab[i][v] = multmodp(op, v << (8 * i));
}

static inline uint32_t shift(uint32_t tab[4][256], uint32_t c)
{
    return tab[0][c & 0xff] ^ tab[1][(c >> 8) & 0xff] ^
           tab[2][(c >> 16) & 0xff] ^ tab[3][c >> 24];
}

/* ---- SSE4.2 --------------------------------------------------------------------- */

#define LONG_BLK  8192      /* bytes per stream in a long round */
#define SHORT_BLK 256       /* bytes per stream in a short round */

static uint32_t shift_long[4][256], shift_short[4][256];

#ifdef SWP_CRC_X86
/*
 * Raw register update.  If dst is not NULL the bytes are also copied there
 * (the copy rides along with the loads the CRC needs anyway).  Three
 * streams a, b, c of blk bytes each: crc(A|B|C) = shift(shift(cA) ^ cB) ^ cC
 * with cB, cC started from 0 (CRC is linear in the register).
 */
__attribute__((target("sse4.2")))
static inline uint32_t hw_round(uint32_t c0, const uint8_t *p, uint8_t *d,
                                size_t blk, uint32_t tab[4][256])
{
    uint64_t a = c0, b = 0, c = 0;
    const uint8_t *pe = p + blk;

    if (d) {
        do {
            uint64_t x = load64(p), y = load64(p + blk), z = load64(p + 2 * blk);
            memcpy(d, &x, 8);
            memcpy(d + blk, &y, 8);
            memcpy(d + 2 * blk, &z, 8);
            a = _mm_crc32_u64(a, x);
            b = _mm_crc32_u64(b, y);
            c = _mm_crc32_u64(c, z);
            p += 8;
            d += 8;
        } while (p < pe);
    } else {
        do {
            a = _mm_crc32_u64(a, load64(p));
            b = _mm_crc32_u64(b, load64(p + blk));
            c = _mm_crc32_u64(c, load64(p + 2 * blk));
            p += 8;
        } while (p < pe);
    }
    a = shift(tab, (uint32_t)a) ^ (uint32_t)b;
    return shift(tab, (uint32_t)a) ^ (uint32_t)c;
}

__attribute__((target("sse4.2")))
static uint32_t hw_update(uint32_t crc, const uint8_t *p, uint8_t *d, size_t len)
{
    uint64_t c;

    /* align the source so the 8-byte loads do not split cache lines */
    while (len && ((uintptr_t)p & 7)) {
        if (d)
            *d++ = *p;
        crc = _mm_crc32_u8(crc, *p++);
        len--;
    }
    while (len >= 3 * LONG_BLK) {
        crc = hw_round(crc, p, d, LONG_BLK, shift_long);
        p += 3 * LONG_BLK;
        if (d)
            d += 3 * LONG_BLK;
        len -= 3 * LONG_BLK;
    }
    while (len >= 3 * SHORT_BLK) {
        crc = hw_round(crc, p, d, SHORT_BLK, shift_short);
        p += 3 * SHORT_BLK;
        if (d)
            d += 3 * SHORT_BLK;
        len -= 3 * SHORT_BLK;
    }
    c = crc;
    while (len >= 8) {
        uint64_t x = load64(p);
        if (d) {
            memcpy(d, &x, 8);
            d += 8;
        }
        c = _mm_crc32_u64(c, x);
        p += 8;
        len -= 8;
    }
    crc = (uint32_t)c;
    while (len--) {
        if (d)
            *d++ = *p;
        crc = _mm_crc32_u8(crc, *p++);
    }
    return crc;
}
#endif /* SWP_CRC_X86 */

/* ---- engine selection --------------------------------------------------------- */

static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static bool use_hw;

static void crc_init(void)
{
    const char *env = getenv("SIWARP_CRC32C");

    build_tables();
#ifdef SWP_CRC_X86
    __builtin_cpu_init();
    use_hw = __builtin_cpu_supports("sse4.2") &&
             !(env && strcmp(env, "portable") == 0);
    if (use_hw) {
        build_shift(shift_long, LONG_BLK);
        build_shift(shift_short, SHORT_BLK);
    }
#else
    (void)env;
#endif
}

static inline void crc_ready(void)
{
    pthread_once(&crc_once, crc_init);
}

uint32_t swp_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
    crc_ready();
    return ~sb8_update(~crc, buf, len);
}

uint32_t swp_crc32c(uint32_t crc, const void *buf, size_t len)
{
    crc_ready();
#ifdef SWP_CRC_X86
    if (use_hw)
        return ~hw_update(~crc, buf, NULL, len);
#endif
    return ~sb8_update(~crc, buf, len);
}

uint32_t swp_crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
    crc_ready();
#ifdef SWP_CRC_X86
    if (use_hw)
        return ~hw_update(~crc, src, dst, len);
#endif
    /* portable: copy a cache-sized piece, then CRC it while it is hot */
    crc = ~crc;
    while (len) {
        size_t n = len < 4096 ? len : 4096;
        memcpy(dst, src, n);
        crc = sb8_update(crc, dst, n);
        dst = (uint8_t *)dst + n;
        src = (const uint8_t *)src + n;
        len -= n;
    }
    return ~crc;
}

const char *swp_crc32c_name(void)
{
    crc_ready();
    return use_hw ? "sse4.2" : "portable";
}

const char *siwarp_crc32c_impl(void)
{
    return swp_crc32c_name();
}
