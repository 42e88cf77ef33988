/*
 * crc32c_x86.c - the x86 CRC32c engines (see crc32c.c for the choice
 * among them and the portable fallback):
 *  - "hybrid":  "vpclmul" folding and three crc32 instruction streams in
 *               the same loop, where a start-up timing finds it faster;
 *  - "vpclmul": carry-less-multiply folding of four 512-bit lanes;
 *  - "pclmul":  the same on four 128-bit lanes;
 *  - "sse4.2":  the crc32 instruction on three interleaved streams.
 * Each has a plain and a copying variant (the copy rides along with the
 * loads the CRC needs).  Built on x86-64 only; the instructions are
 * enabled per function (target attributes) and used only where the CPU
 * reports them.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crc32c.h"
#include "swp.h"

#ifdef SWP_CRC_X86
#include <immintrin.h>

/*
 * Size thresholds (bytes), measured on a Xeon with AVX-512 and VPCLMULQDQ,
 * every variant timed in one process, best of 60 runs:
 *  - FOLD128_MIN: below it the serial crc32 instruction wins (16-48 B:
 *    serial 8-11 GB/s, 128-bit folding 5.6-8.4); at 64 B folding 14 GB/s;
 *  - FOLD512_MIN: from here four 512-bit lanes beat four 128-bit lanes
 *    (192 B: 22 vs 25 GB/s; 256 B: 30 vs 28; 512 B: 50 vs 32);
 *  - ALIGN_MIN: from here the 512-bit engine first runs up to 63 bytes
 *    through crc32 to align its loads (plain) or stores (copy): +6% to
 *    +35% at 4 KiB..1 MiB when misaligned, but 1 KiB drops 82 -> 45 GB/s.
 * The three-stream crc32 engine never beat the folding engines (at most
 * 27-33 GB/s from 768 B up, where 128-bit folding reaches 33 and 512-bit
 * folding 68-125), so they do not use it alone.  On an AMD EPYC (Zen 4)
 * 512-bit folding stays at 55-56 GB/s from 4 KiB up and the crc32 streams
 * at 25-27; run side by side ("hybrid") they reach 70-78 GB/s at 16 KiB
 * to 1 MiB (contrib/crc32c-bench).
 */
#ifndef FOLD512_MIN
#define FOLD512_MIN 256
#endif
#ifndef ALIGN_MIN
#define ALIGN_MIN 4096
#endif
#ifndef FOLD128_MIN
#define FOLD128_MIN 64
#endif

/* Byte-wise tables of "multiply by x^(8n)": appending n zero bytes to a raw
 * register is then four lookups. */
static void build_shift(uint32_t tab[4][256], size_t n)
{
    uint32_t op = swp_crc_xnmodp(8 * n);

    for (int i = 0; i < 4; i++)
        for (uint32_t v = 0; v < 256; v++)
            tab[i][v] = swp_crc_multmodp(op, v << (8 * i));
}

static inline uint32_t shift(uint32_t tab[4][256], uint32_t c)
{
    return tab[0][c & 0xff] ^ tab[1][(c >> 8) & 0xff] ^
           tab[2][(c >> 16) & 0xff] ^ tab[3][c >> 24];
}

/*
 * Folding constants.  16 message bytes loaded little-endian into a 128-bit
 * register put message bit i (LSB of byte 0 first) in register bit i, and
 * for the reflected CRC that bit is the coefficient of x^(127-i): the low
 * quadword is the high-degree half H, the high quadword the low half L,
 * X = H*x^64 + L.  Moving X forward by D bits (onto the block D bits
 * later) means X*x^D = H*x^(64+D) + L*x^D, and modulo P each of the two
 * factors is a 32-bit polynomial.
 *
 * Carry-less multiplying two reflected 64-bit operands (bit j = x^(63-j))
 * yields the 127-bit product with bit n = x^(126-n), i.e. the 128-bit
 * register (bit n = x^(127-n)) holds product * x: one extra x.  A 32-bit
 * reflected constant (bit j = x^(31-j)) in the low half of a 64-bit
 * operand stands for itself times x^32.  So the multiplier for H is
 *     k_hi(D) = x^(64+D-1-32) mod P = x^(D+31) mod P,
 * and for L
 *     k_lo(D) = x^(D-1-32) mod P = x^(D-33) mod P,
 * both as 32-bit reflected values, computed by swp_crc_xnmodp() at start-up.  The
 * products have degree < 127, so the sum of the two plus the block at the
 * destination is again a 128-bit register congruent to what it replaces.
 * For example D = 512 gives k_hi = 0x740eef02, k_lo = 0x9e4addf8 and
 * D = 128 gives k_hi = 0xf20c0dfe, k_lo = 0x493c7d27.
 *
 * The CRC register itself is folded in by XORing it into the first four
 * message bytes, and the final 128-bit register X is reduced by running
 * the crc32 instruction over its 16 bytes from 0: CRC(X) = X*x^32 mod P
 * depends only on X mod P.
 */
struct fold_k {
    uint64_t hi;                    /* multiplies the low quadword */
    uint64_t lo;                    /* multiplies the high quadword */
};

enum { K128, K256, K384, K512, K1024, K1536, K2048, K_N };
static const unsigned k_bits[K_N] = { 128, 256, 384, 512, 1024, 1536, 2048 };
static struct fold_k fold_k[K_N];

static void build_fold(void)
{
    for (int i = 0; i < K_N; i++) {
        fold_k[i].hi = swp_crc_xnmodp(k_bits[i] + 31);
        fold_k[i].lo = swp_crc_xnmodp(k_bits[i] - 33);
    }
}

/* ---- SSE4.2 --------------------------------------------------------------------- */

#define LONG_BLK  8192      /* bytes per stream in a long round */
#define SHORT_BLK 256       /* bytes per stream in a short round */

static uint32_t shift_long[4][256], shift_short[4][256];

#define T_SSE42   __attribute__((target("sse4.2")))
#define T_PCLMUL  __attribute__((target("sse4.2,pclmul")))
#define T_VPCLMUL __attribute__((target("sse4.2,pclmul,avx2,avx512f,avx512vl,vpclmulqdq")))
#define INLINE    inline __attribute__((always_inline))

/*
 * The copying and non-copying variants are one always-inlined body with a
 * constant `copy` flag, so the plain CRC carries no copy test.  The copy
 * rides along with the loads the CRC needs anyway.
 */

/* serial crc32 instruction, any length */
T_SSE42 static INLINE uint32_t serial(uint32_t crc, const uint8_t *p, uint8_t *d,
                                      size_t len, bool copy)
{
    uint64_t c = crc;

    while (len >= 8) {
        uint64_t x = swp_crc_load64(p);
        if (copy) {
            memcpy(d, &x, 8);
            d += 8;
        }
        c = _mm_crc32_u64(c, x);
        p += 8;
        len -= 8;
    }
    crc = (uint32_t)c;
    if (len & 4) {
        uint32_t x;
        memcpy(&x, p, 4);
        if (copy) {
            memcpy(d, &x, 4);
            d += 4;
        }
        crc = _mm_crc32_u32(crc, x);
        p += 4;
    }
    if (len & 2) {
        uint16_t x;
        memcpy(&x, p, 2);
        if (copy) {
            memcpy(d, &x, 2);
            d += 2;
        }
        crc = _mm_crc32_u16(crc, x);
        p += 2;
    }
    if (len & 1) {
        if (copy)
            *d = *p;
        crc = _mm_crc32_u8(crc, *p);
    }
    return crc;
}

/*
 * Three streams a, b, c of blk bytes each: crc(A|B|C) =
 * shift(shift(cA) ^ cB) ^ cC with cB, cC started from 0 (CRC is linear in
 * the register).
 */
T_SSE42 static INLINE uint32_t sse42_round(uint32_t c0, const uint8_t *p, uint8_t *d,
                                           size_t blk, uint32_t tab[4][256], bool copy)
{
    uint64_t a = c0, b = 0, c = 0;
    const uint8_t *pe = p + blk;

    do {
        uint64_t x = swp_crc_load64(p), y = swp_crc_load64(p + blk), z = swp_crc_load64(p + 2 * blk);
        if (copy) {
            memcpy(d, &x, 8);
            memcpy(d + blk, &y, 8);
            memcpy(d + 2 * blk, &z, 8);
            d += 8;
        }
        a = _mm_crc32_u64(a, x);
        b = _mm_crc32_u64(b, y);
        c = _mm_crc32_u64(c, z);
        p += 8;
    } while (p < pe);
    a = shift(tab, (uint32_t)a) ^ (uint32_t)b;
    return shift(tab, (uint32_t)a) ^ (uint32_t)c;
}

T_SSE42 static INLINE uint32_t sse42_body(uint32_t crc, const uint8_t *p, uint8_t *d,
                                          size_t len, bool copy)
{
    /* align the source so the 8-byte loads do not split cache lines */
    size_t head = (size_t)(-(uintptr_t)p & 7);

    if (head > len)
        head = len;
    crc = serial(crc, p, d, head, copy);
    p += head;
    if (copy)
        d += head;
    len -= head;
    while (len >= 3 * LONG_BLK) {
        crc = sse42_round(crc, p, d, LONG_BLK, shift_long, copy);
        p += 3 * LONG_BLK;
        if (copy)
            d += 3 * LONG_BLK;
        len -= 3 * LONG_BLK;
    }
    while (len >= 3 * SHORT_BLK) {
        crc = sse42_round(crc, p, d, SHORT_BLK, shift_short, copy);
        p += 3 * SHORT_BLK;
        if (copy)
            d += 3 * SHORT_BLK;
        len -= 3 * SHORT_BLK;
    }
    return serial(crc, p, d, len, copy);
}

SWP_HOT
T_SSE42 static uint32_t sse42_update(uint32_t c, const uint8_t *p, size_t len)
{
    return sse42_body(c, p, NULL, len, false);
}

SWP_HOT
T_SSE42 static uint32_t sse42_copy(uint32_t c, uint8_t *d, const uint8_t *p, size_t len)
{
    return sse42_body(c, p, d, len, true);
}

/* ---- PCLMULQDQ: four 128-bit lanes ------------------------------------------ */

T_PCLMUL static INLINE __m128i kx(int i)
{
    return _mm_set_epi64x((long long)fold_k[i].lo, (long long)fold_k[i].hi);
}

/* x moved forward by the distance of k, as a congruent 128-bit value */
T_PCLMUL static INLINE __m128i mul128(__m128i x, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
                         _mm_clmulepi64_si128(x, k, 0x11));
}

T_PCLMUL static INLINE __m128i ld128(const uint8_t *p, uint8_t *d, size_t off, bool copy)
{
    __m128i v = _mm_loadu_si128((const __m128i *)(p + off));

    if (copy)
        _mm_storeu_si128((__m128i *)(d + off), v);
    return v;
}

/* 16 bytes of x reduced to a CRC register with the crc32 instruction */
T_PCLMUL static INLINE uint32_t crc_of128(__m128i x)
{
    uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x));

    return (uint32_t)_mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(x, 1));
}

/*
 * Needs len >= 16.  At least 64 bytes: four accumulators one 16-byte block
 * apart, each folded 64 bytes forward a round, then merged; then single
 * 16-byte blocks; the last < 16 bytes go through the crc32 instruction.
 */
T_PCLMUL static INLINE uint32_t fold128_body(uint32_t crc, const uint8_t *p, uint8_t *d,
                                             size_t len, bool copy)
{
    __m128i x, k;

    if (len >= 64) {
        __m128i x0 = ld128(p, d, 0, copy), x1 = ld128(p, d, 16, copy);
        __m128i x2 = ld128(p, d, 32, copy), x3 = ld128(p, d, 48, copy);

        x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)crc));
        p += 64;
        if (copy)
            d += 64;
        len -= 64;
        k = kx(K512);
        while (len >= 64) {
            x0 = _mm_xor_si128(mul128(x0, k), ld128(p, d, 0, copy));
            x1 = _mm_xor_si128(mul128(x1, k), ld128(p, d, 16, copy));
            x2 = _mm_xor_si128(mul128(x2, k), ld128(p, d, 32, copy));
            x3 = _mm_xor_si128(mul128(x3, k), ld128(p, d, 48, copy));
            p += 64;
            if (copy)
                d += 64;
            len -= 64;
        }
        x = _mm_xor_si128(_mm_xor_si128(mul128(x0, kx(K384)), mul128(x1, kx(K256))),
                          _mm_xor_si128(mul128(x2, kx(K128)), x3));
    } else {
        x = _mm_xor_si128(ld128(p, d, 0, copy), _mm_cvtsi32_si128((int)crc));
        p += 16;
        if (copy)
            d += 16;
        len -= 16;
    }
    k = kx(K128);
    while (len >= 16) {
        x = _mm_xor_si128(mul128(x, k), ld128(p, d, 0, copy));
        p += 16;
        if (copy)
            d += 16;
        len -= 16;
    }
    return serial(crc_of128(x), p, d, len, copy);
}

SWP_HOT
T_PCLMUL static uint32_t pclmul_update(uint32_t c, const uint8_t *p, size_t len)
{
    if (len < FOLD128_MIN)
        return serial(c, p, NULL, len, false);
    return fold128_body(c, p, NULL, len, false);
}

SWP_HOT
T_PCLMUL static uint32_t pclmul_copy(uint32_t c, uint8_t *d, const uint8_t *p, size_t len)
{
    if (len < FOLD128_MIN)
        return serial(c, p, d, len, true);
    return fold128_body(c, p, d, len, true);
}

/* ---- VPCLMULQDQ + AVX-512: four 512-bit lanes -------------------------------- */

T_VPCLMUL static INLINE __m512i kz(int i)
{
    return _mm512_broadcast_i32x4(kx(i));
}

T_VPCLMUL static INLINE __m512i ld512(const uint8_t *p, uint8_t *d, size_t off, bool copy)
{
    __m512i v = _mm512_loadu_si512(p + off);

    if (copy)
        _mm512_storeu_si512(d + off, v);
    return v;
}

/* each 128-bit lane of x moved forward by the distance of k, XORed into y */
T_VPCLMUL static INLINE __m512i fold512(__m512i x, __m512i k, __m512i y)
{
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                     _mm512_clmulepi64_epi128(x, k, 0x11), y, 0x96);
}

/* Four 512-bit accumulators, 64 bytes apart, folded onto the last. */
T_VPCLMUL static INLINE __m512i fold512_merge4(__m512i z0, __m512i z1, __m512i z2, __m512i z3)
{
    __m512i z = fold512(z0, kz(K1536), z3);

    z = fold512(z1, kz(K1024), z);
    return fold512(z2, kz(K512), z);
}

/* The four 128-bit lanes of z as one 128-bit value: lanes 0, 1, 2 moved
 * forward by 48, 32, 16 bytes onto lane 3. */
T_VPCLMUL static INLINE __m128i fold512_lanes(__m512i z)
{
    __m512i k = _mm512_set_epi64(0, 0,
                                 (long long)fold_k[K128].lo, (long long)fold_k[K128].hi,
                                 (long long)fold_k[K256].lo, (long long)fold_k[K256].hi,
                                 (long long)fold_k[K384].lo, (long long)fold_k[K384].hi);

    z = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(z, k, 0x00),
                                  _mm512_clmulepi64_epi128(z, k, 0x11),
                                  _mm512_maskz_mov_epi64(0xc0, z), 0x96);
    __m256i y = _mm256_xor_si256(_mm512_castsi512_si256(z), _mm512_extracti64x4_epi64(z, 1));
    return _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
}

/*
 * Needs len >= 64.  At least 256 bytes: four 64-byte accumulators folded
 * 256 bytes forward a round, then merged; then 64-byte blocks; then the
 * four lanes of the last one merged into 128 bits, which the 128-bit code
 * finishes (16-byte blocks, then the crc32 instruction).
 */
T_VPCLMUL static INLINE uint32_t fold512_body(uint32_t crc, const uint8_t *p, uint8_t *d,
                                              size_t len, bool copy)
{
    __m512i z, k, c0 = _mm512_inserti32x4(_mm512_setzero_si512(),
                                          _mm_cvtsi32_si128((int)crc), 0);
    __m128i x;

    if (len >= 256) {
        __m512i z0 = ld512(p, d, 0, copy), z1 = ld512(p, d, 64, copy);
        __m512i z2 = ld512(p, d, 128, copy), z3 = ld512(p, d, 192, copy);

        z0 = _mm512_xor_si512(z0, c0);
        p += 256;
        if (copy)
            d += 256;
        len -= 256;
        k = kz(K2048);
        while (len >= 256) {
            z0 = fold512(z0, k, ld512(p, d, 0, copy));
            z1 = fold512(z1, k, ld512(p, d, 64, copy));
            z2 = fold512(z2, k, ld512(p, d, 128, copy));
            z3 = fold512(z3, k, ld512(p, d, 192, copy));
            p += 256;
            if (copy)
                d += 256;
            len -= 256;
        }
        z = fold512_merge4(z0, z1, z2, z3);
    } else {
        z = _mm512_xor_si512(ld512(p, d, 0, copy), c0);
        p += 64;
        if (copy)
            d += 64;
        len -= 64;
    }
    k = kz(K512);
    while (len >= 64) {
        z = fold512(z, k, ld512(p, d, 0, copy));
        p += 64;
        if (copy)
            d += 64;
        len -= 64;
    }
    x = fold512_lanes(z);
    k = kz(K128);
    while (len >= 16) {
        x = _mm_xor_si128(mul128(x, _mm512_castsi512_si128(k)), ld128(p, d, 0, copy));
        p += 16;
        if (copy)
            d += 16;
        len -= 16;
    }
    return serial(crc_of128(x), p, d, len, copy);
}

/*
 * Long buffers start with up to 63 bytes through the crc32 instruction so
 * the 64-byte loads (plain CRC) or stores (copy) do not split cache lines.
 */
T_VPCLMUL static INLINE uint32_t fold512_aligned(uint32_t c, const uint8_t *p, uint8_t *d,
                                                 size_t len, bool copy)
{
    size_t head = (size_t)(-(uintptr_t)(copy ? d : p) & 63);

    c = serial(c, p, d, head, copy);
    return fold512_body(c, p + head, copy ? d + head : d, len - head, copy);
}

SWP_HOT
T_VPCLMUL static uint32_t vpclmul_update(uint32_t c, const uint8_t *p, size_t len)
{
    if (len >= ALIGN_MIN)
        return fold512_aligned(c, p, NULL, len, false);
    if (len >= FOLD512_MIN)
        return fold512_body(c, p, NULL, len, false);
    if (len >= FOLD128_MIN)
        return fold128_body(c, p, NULL, len, false);
    return serial(c, p, NULL, len, false);
}

SWP_HOT
T_VPCLMUL static uint32_t vpclmul_copy(uint32_t c, uint8_t *d, const uint8_t *p, size_t len)
{
    if (len >= ALIGN_MIN)
        return fold512_aligned(c, p, d, len, true);
    if (len >= FOLD512_MIN)
        return fold512_body(c, p, d, len, true);
    if (len >= FOLD128_MIN)
        return fold128_body(c, p, d, len, true);
    return serial(c, p, d, len, true);
}

/* ---- hybrid: VPCLMULQDQ folding and the crc32 instruction side by side ------ */

/*
 * Where VPCLMULQDQ is split into 256-bit halves (AMD Zen 4), folding tops
 * out near 16 bytes a cycle while the integer crc32 unit sits idle.  A
 * chunk of HYB_CHUNK bytes is then cut in two: its first HYB_V bytes are
 * folded in 512-bit lanes as above, and in the same loop the last 3 *
 * HYB_S bytes run through crc32 as three streams.  The four partial CRCs
 * are joined with the "append HYB_S zero bytes" tables (CRC is linear in
 * the register), as the sse4.2 engine joins its streams.
 */
#ifndef HYB_Q
#define HYB_Q     5                     /* crc32 instructions per stream per fold */
#endif
#define HYB_ROUNDS 16                   /* 256-byte folds per chunk */
#define HYB_V     (HYB_ROUNDS * 256)
#define HYB_S     (HYB_ROUNDS * HYB_Q * 8)
#define HYB_CHUNK (HYB_V + 3 * HYB_S)
#define HYB_MIN   (2 * HYB_CHUNK)       /* shorter buffers fold only */

static uint32_t shift_hyb[4][256];

T_VPCLMUL static INLINE uint32_t hyb_chunk(uint32_t crc, const uint8_t *p)
{
    const uint8_t *s0 = p + HYB_V, *s1 = s0 + HYB_S, *s2 = s1 + HYB_S;
    uint64_t a = 0, b = 0, c = 0;
    __m512i k = kz(K2048);
    __m512i z0 = _mm512_xor_si512(_mm512_loadu_si512(p),
                                  _mm512_inserti32x4(_mm512_setzero_si512(),
                                                     _mm_cvtsi32_si128((int)crc), 0));
    __m512i z1 = _mm512_loadu_si512(p + 64), z2 = _mm512_loadu_si512(p + 128);
    __m512i z3 = _mm512_loadu_si512(p + 192);

    for (int r = 1; r <= HYB_ROUNDS; r++) {
        if (r < HYB_ROUNDS) {
            const uint8_t *q = p + 256 * r;
            z0 = fold512(z0, k, _mm512_loadu_si512(q));
            z1 = fold512(z1, k, _mm512_loadu_si512(q + 64));
            z2 = fold512(z2, k, _mm512_loadu_si512(q + 128));
            z3 = fold512(z3, k, _mm512_loadu_si512(q + 192));
        }
        for (int i = 0; i < HYB_Q; i++) {
            a = _mm_crc32_u64(a, swp_crc_load64(s0));
            b = _mm_crc32_u64(b, swp_crc_load64(s1));
            c = _mm_crc32_u64(c, swp_crc_load64(s2));
            s0 += 8;
            s1 += 8;
            s2 += 8;
        }
    }
    crc = crc_of128(fold512_lanes(fold512_merge4(z0, z1, z2, z3)));
    crc = shift(shift_hyb, crc) ^ (uint32_t)a;
    crc = shift(shift_hyb, crc) ^ (uint32_t)b;
    return shift(shift_hyb, crc) ^ (uint32_t)c;
}

SWP_HOT
T_VPCLMUL static uint32_t hybrid_update(uint32_t c, const uint8_t *p, size_t len)
{
    if (len < HYB_MIN)
        return vpclmul_update(c, p, len);
    size_t head = (size_t)(-(uintptr_t)p & 63);

    c = serial(c, p, NULL, head, false);
    p += head;
    len -= head;
    while (len >= HYB_CHUNK) {
        c = hyb_chunk(c, p);
        p += HYB_CHUNK;
        len -= HYB_CHUNK;
    }
    return vpclmul_update(c, p, len);
}

static bool have_sse42(void)
{
    return __builtin_cpu_supports("sse4.2");
}

static bool have_pclmul(void)
{
    return have_sse42() && __builtin_cpu_supports("pclmul");
}

static bool have_vpclmul(void)
{
    return have_pclmul() && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("vpclmulqdq");
}

/* Nanoseconds one run of fn over len bytes takes. */
static uint64_t crc_time(uint32_t (*fn)(uint32_t, const uint8_t *, size_t), const uint8_t *p,
                         size_t len, volatile uint32_t *sink)
{
    struct timespec a, b;
    uint64_t ns;

    clock_gettime(CLOCK_MONOTONIC, &a);
    *sink ^= fn(*sink, p, len);
    clock_gettime(CLOCK_MONOTONIC, &b);
    ns = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000u + (uint64_t)b.tv_nsec - (uint64_t)a.tv_nsec;
    return ns;
}

/*
 * Is "hybrid" worth it on this CPU?  Where 512-bit carry-less multiplies
 * run at full width, folding alone is faster than the mix (it reaches
 * 68-125 GB/s on a Xeon), so the two are timed here, once, alternately
 * over 48 KiB (a few tens of microseconds in all; the least of 7 runs
 * each, so a preempted run does not decide), and hybrid must win by 5%.
 */
static bool hybrid_faster(void)
{
    const size_t len = 48 * 1024;
    uint8_t *buf;
    uint64_t th = UINT64_MAX, tv = UINT64_MAX;
    volatile uint32_t sink = 0;

    if (posix_memalign((void **)&buf, 64, len) != 0)
        return false;
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(i * 131 + 7);
    for (int r = 0; r < 8; r++) {
        uint64_t h = crc_time(hybrid_update, buf, len, &sink);
        uint64_t v = crc_time(vpclmul_update, buf, len, &sink);
        if (r == 0)
            continue;               /* the first run pays for cold caches */
        th = h < th ? h : th;
        tv = v < tv ? v : tv;
    }
    free(buf);
    SWP_DBG("crc32c: 48 KiB in %llu ns (hybrid) against %llu ns (vpclmul)",
            (unsigned long long)th, (unsigned long long)tv);
    return th * 105 < tv * 100;
}

/* best first */
const struct swp_crc_engine swp_crc_x86_engines[] = {
    { "hybrid",  "hybrid",  have_vpclmul, hybrid_faster, hybrid_update,  vpclmul_copy },
    { "vpclmul", "vpclmul", have_vpclmul, NULL,          vpclmul_update, vpclmul_copy },
    { "pclmul",  "pclmul",  have_pclmul,  NULL,          pclmul_update,  pclmul_copy },
    { "sse4.2",  "sse42",   have_sse42,   NULL,          sse42_update,   sse42_copy },
};
const size_t swp_crc_x86_n_engines = sizeof(swp_crc_x86_engines) / sizeof(swp_crc_x86_engines[0]);

void swp_crc_x86_init(void)
{
    build_fold();
    build_shift(shift_long, LONG_BLK);
    build_shift(shift_short, SHORT_BLK);
    build_shift(shift_hyb, HYB_S);
}

#endif /* SWP_CRC_X86 */
