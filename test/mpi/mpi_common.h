/*
 * mpi_common.h - helpers shared by the MPI test programs: deterministic
 * fill patterns, checks that abort with a message naming the failure.
 */
#ifndef SIWARP_MPI_COMMON_H
#define SIWARP_MPI_COMMON_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            int r_;                                                        \
            MPI_Comm_rank(MPI_COMM_WORLD, &r_);                            \
            fprintf(stderr, "[rank %d] %s:%d: check failed: %s: ", r_,    \
                    __FILE__, __LINE__, #cond);                            \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
            MPI_Abort(MPI_COMM_WORLD, 1);                                  \
        }                                                                  \
    } while (0)

static inline uint8_t pat(uint64_t seed, size_t i)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return (uint8_t) (x ^ (x >> 17));
}

static inline void fill(void *buf, size_t len, uint64_t seed)
{
    uint8_t *p = buf;
    for (size_t i = 0; i < len; i++) {
        p[i] = pat(seed, i);
    }
}

/* Returns the first mismatching index, or (size_t)-1. */
static inline size_t verify(const void *buf, size_t len, uint64_t seed)
{
    const uint8_t *p = buf;
    for (size_t i = 0; i < len; i++) {
        if (p[i] != pat(seed, i)) {
            return i;
        }
    }
    return (size_t) -1;
}

#endif
