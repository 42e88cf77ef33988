/*
 * crc32c-bench.c - throughput of each CRC32c implementation, plain and
 * fused with a copy, at 4 KiB and 1 MiB.  Prints GB/s (1e9 bytes/s).
 *   contrib/crc32c-bench [seconds-per-measurement, default 0.3]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "swp.h"

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile uint32_t sink;

static double measure(int which, uint8_t *dst, const uint8_t *src, size_t len, double secs)
{
    uint64_t bytes = 0;
    uint32_t c = 0;
    double t0 = now(), t;

    do {
        for (int i = 0; i < 64; i++) {
            switch (which) {
            case 0: c = swp_crc32c(c, src, len); break;
            case 1: c = swp_crc32c_portable(c, src, len); break;
            default: c = swp_crc32c_copy(c, dst, src, len); break;
            }
            bytes += len;
            if (len > 65536 && i == 7)
                break;
        }
        t = now() - t0;
    } while (t < secs);
    sink = c;
    return (double)bytes / t / 1e9;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 4096, 1 << 20 };
    double secs = argc > 1 ? atof(argv[1]) : 0.3;
    uint8_t *src = malloc(1 << 20), *dst = malloc(1 << 20);
    char name[64];

    if (!src || !dst)
        return 1;
    for (size_t i = 0; i < (1 << 20); i++)
        src[i] = (uint8_t)(i * 131 + 7);
    memset(dst, 0, 1 << 20);

    snprintf(name, sizeof(name), "swp_crc32c (%s)", swp_crc32c_name());
    const char *names[] = { name, "swp_crc32c_portable", "swp_crc32c_copy" };
    printf("%-28s %10s %10s\n", "implementation", "4 KiB", "1 MiB");
    for (int w = 0; w < 3; w++) {
        printf("%-28s", names[w]);
        for (size_t s = 0; s < 2; s++)
            printf(" %7.2f GB/s", measure(w, dst, src, sizes[s], secs));
        printf("\n");
    }
    free(src);
    free(dst);
    return 0;
}
