/*
 * copy-offset.c - how fast memcpy (and a bare rep movsb, as the kernel
 * copies socket data with on CPUs with FSRM) runs for each distance
 * between destination and source modulo 4 KiB.  Evidence for
 * PERFORMANCE.md ("The 128 KiB-1 MiB ping-pong on the AMD host, again"):
 * on the AMD EPYC host a destination 1-15 octets past its source modulo
 * 4 KiB copies 15-30x slower than any other distance.
 *
 *   cc -O2 -o /tmp/copy-offset contrib/probes/copy-offset.c
 *   taskset -c 1 /tmp/copy-offset 32768
 *
 * Prints GB/s for each distance (best of 5 runs of 200 copies, so the data
 * stay in cache and only the copy is timed).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define AREA (2u << 20)

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void copy_movsb(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
    __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
#else
    memcpy(dst, src, n);
#endif
}

static double rate(void (*copy)(void *, const void *, size_t), uint8_t *dst, const uint8_t *src,
                   size_t n)
{
    double best = 1e9;

    for (int r = 0; r < 5; r++) {
        double t0 = now_s();
        for (int i = 0; i < 200; i++) {
            copy(dst, src, n);
            __asm__ volatile("" : : : "memory");
        }
        double t = now_s() - t0;
        if (t < best)
            best = t;
    }
    return 200.0 * (double)n / best / 1e9;
}

static void copy_libc(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

int main(int argc, char **argv)
{
    static const int dist[] = { 0, 1, 4, 8, 12, 15, 16, 20, 32, 64, 2048, 4081, 4095 };
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 0) : 32768;
    uint8_t *src = aligned_alloc(4096, AREA), *dst = aligned_alloc(4096, AREA);

    if (!src || !dst || n == 0 || n + 4096 > AREA) {
        fprintf(stderr, "usage: copy-offset [BYTES], 1 .. %u\n", AREA - 4096);
        return 2;
    }
    memset(src, 1, AREA);
    memset(dst, 2, AREA);
    printf("%zu octets: destination - source (mod 4 KiB), memcpy GB/s, rep movsb GB/s\n", n);
    for (size_t k = 0; k < sizeof(dist) / sizeof(dist[0]); k++)
        printf("%5d  %7.2f  %7.2f\n", dist[k], rate(copy_libc, dst + dist[k], src, n),
               rate(copy_movsb, dst + dist[k], src, n));
    return 0;
}
