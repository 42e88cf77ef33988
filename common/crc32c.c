/*
 * crc32c.c - CRC32c (Castagnoli, reflected polynomial 0x82F63B78), the MPA
 * FPDU CRC of RFC 5044 section 4.4 (RFC 3385 / iSCSI CRC).
 *
 * Five engines, the best one the CPU runs chosen once at first use:
 *  - "hybrid":   "vpclmul" folding with three crc32 instruction streams
 *                run in the same loop (buffers from 12 KiB); the default
 *                where a start-up timing finds it faster than "vpclmul"
 *                (CPUs that split 512-bit carry-less multiplies in two);
 *  - "vpclmul":  carry-less-multiply folding of four 512-bit lanes
 *                (VPCLMULQDQ + AVX-512F/VL), 256 bytes a round;
 *  - "pclmul":   the same folding on four 128-bit lanes (PCLMULQDQ);
 *  - "sse4.2":   the SSE4.2 crc32 instruction on three interleaved streams
 *                (3-cycle latency, 1-cycle throughput), the three partial
 *                CRCs merged with an "append N zero bytes" operator (tables);
 *  - "portable": slicing-by-8 tables.
 * The folding engines finish (and handle short buffers) with the crc32
 * instruction, so they need SSE4.2 as well.
 * SIWARP_CRC32C=hybrid|vpclmul|pclmul|sse42|portable forces an engine; one the
 * CPU cannot run is refused with a message and the default is used.
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
 *
 * This file: the public functions, the choice of engine, the portable
 * engine and the arithmetic modulo P that builds every engine's tables;
 * the x86 engines are crc32c_x86.c.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "swp.h"

/* ---- portable: slicing-by-8 ------------------------------------------------- */

static uint32_t tab8[8][256];

static void build_tables(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ SWP_CRC_POLY : c >> 1;
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

/* raw register update, no inversion */
static uint32_t sb8_update(uint32_t c, const uint8_t *p, size_t len)
{
    while (len && ((uintptr_t)p & 7)) {
        c = tab8[0][(c ^ *p++) & 0xff] ^ (c >> 8);
        len--;
    }
    while (len >= 8) {
        uint64_t w = swp_crc_load64(p) ^ c;
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

/* portable copy: copy a cache-sized piece, then CRC it while it is hot */
static uint32_t sb8_copy(uint32_t c, uint8_t *d, const uint8_t *p, size_t len)
{
    while (len) {
        size_t n = len < 4096 ? len : 4096;
        memcpy(d, p, n);
        c = sb8_update(c, d, n);
        d += n;
        p += n;
        len -= n;
    }
    return c;
}

/* ---- arithmetic modulo P ---------------------------------------------------- */

/* a * b modulo P, both in reflected representation (x^0 is bit 31). */
uint32_t swp_crc_multmodp(uint32_t a, uint32_t b)
{
    uint32_t m = 1u << 31, p = 0;

    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = b & 1 ? (b >> 1) ^ SWP_CRC_POLY : b >> 1;
    }
    return p;
}

/* x^n mod P, reflected, by square and multiply. */
uint32_t swp_crc_xnmodp(size_t n)
{
    uint32_t r = 1u << 31, sq = 1u << 30;       /* 1, x */

    while (n) {
        if (n & 1)
            r = swp_crc_multmodp(sq, r);
        sq = swp_crc_multmodp(sq, sq);
        n >>= 1;
    }
    return r;
}

/* ---- engine selection --------------------------------------------------------- */

static bool have_any(void)
{
    return true;
}

/* the last resort, after the x86 engines (crc32c_x86.c, best first): the
 * default is the first engine the CPU runs */
static const struct swp_crc_engine portable = {
    "portable", "portable", have_any, NULL, sb8_update, sb8_copy,
};

static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static const struct swp_crc_engine *engine;

/* The first usable (and preferred) engine is the best; env names one. */
static void consider(const struct swp_crc_engine *e, const char *env,
                     const struct swp_crc_engine **best, const struct swp_crc_engine **want)
{
    if (!*best && e->usable() && (!e->preferred || e->preferred()))
        *best = e;
    if (env && (strcmp(env, e->env) == 0 || strcmp(env, e->name) == 0))
        *want = e;
}

static void crc_init(void)
{
    const char *env = getenv("SIWARP_CRC32C");
    const struct swp_crc_engine *best = NULL, *want = NULL;

    build_tables();
#ifdef SWP_CRC_X86
    __builtin_cpu_init();
    swp_crc_x86_init();
    for (size_t i = 0; i < swp_crc_x86_n_engines; i++)
        consider(&swp_crc_x86_engines[i], env, &best, &want);
#endif
    consider(&portable, env, &best, &want);
    if (env && *env && !want)
        swp_log("SIWARP_CRC32C=%s: no such engine, using %s", env, best->name);
    else if (want && !want->usable())
        swp_log("SIWARP_CRC32C=%s: this CPU cannot run it, using %s", env, best->name);
    else if (want)
        best = want;
    SWP_DBG("crc32c engine: %s", best->name);
    /* published once, after the tables it uses are built */
    __atomic_store_n(&engine, best, __ATOMIC_RELEASE);
}

/* The engine, chosen on first use.  Once chosen it is one load: every
 * FPDU makes a few calls, each right after a syscall emptied the TLB,
 * and pthread_once would add a call into libc's pages to each. */
static inline const struct swp_crc_engine *crc_engine(void)
{
    const struct swp_crc_engine *e = __atomic_load_n(&engine, __ATOMIC_ACQUIRE);

    if (__builtin_expect(e == NULL, 0)) {
        pthread_once(&crc_once, crc_init);
        e = engine;
    }
    return e;
}

uint32_t swp_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
    (void)crc_engine();
    return ~sb8_update(~crc, buf, len);
}

SWP_HOT
uint32_t swp_crc32c(uint32_t crc, const void *buf, size_t len)
{
    return ~crc_engine()->update(~crc, buf, len);
}

SWP_HOT
uint32_t swp_crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
    return ~crc_engine()->copy(~crc, dst, src, len);
}

const char *swp_crc32c_name(void)
{
    return crc_engine()->name;
}

const char *siwarp_crc32c_impl(void)
{
    return swp_crc32c_name();
}
