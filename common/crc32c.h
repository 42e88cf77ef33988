/*
 * crc32c.h - what the CRC32c engines share (private to crc32c.c, the
 * dispatch and the portable engine, and crc32c_x86.c, the engines built on
 * the crc32 and carry-less-multiply instructions).
 */
#ifndef SWP_CRC32C_H
#define SWP_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SWP_CRC_POLY 0x82F63B78u    /* reflected Castagnoli polynomial */

/* One engine.  update and copy work on the raw register (no inversion). */
struct swp_crc_engine {
    const char *name;               /* swp_crc32c_name() */
    const char *env;                /* SIWARP_CRC32C value that forces it */
    bool (*usable)(void);
    bool (*preferred)(void);        /* NULL: the default whenever usable */
    uint32_t (*update)(uint32_t c, const uint8_t *p, size_t len);
    uint32_t (*copy)(uint32_t c, uint8_t *d, const uint8_t *p, size_t len);
};

static inline uint64_t swp_crc_load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);               /* little-endian host assumed (x86, arm64) */
    return v;
}

/* crc32c.c: arithmetic modulo P, in reflected representation (x^0 is bit 31) */
uint32_t swp_crc_multmodp(uint32_t a, uint32_t b);
uint32_t swp_crc_xnmodp(size_t n);

#if defined(__x86_64__)
#define SWP_CRC_X86 1
/* crc32c_x86.c: its engines, best first, and the tables they need (built
 * once, before any engine runs) */
extern const struct swp_crc_engine swp_crc_x86_engines[];
extern const size_t swp_crc_x86_n_engines;
void swp_crc_x86_init(void);
#endif

#endif
