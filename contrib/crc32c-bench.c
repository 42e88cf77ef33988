/*
 * crc32c-bench.c - throughput of every CRC32c engine this CPU runs, plain
 * (swp_crc32c) and fused with a copy (swp_crc32c_copy), against memcpy
 * (what the receive path does with CRC off).  GB/s = 1e9 bytes/s, the
 * median of several runs, since shared machines are noisy.
 *
 *   contrib/crc32c-bench [-r runs] [-t seconds-per-run] [-a src-align]
 *                        [-s size]... [engine]...
 *
 * Defaults: 9 runs of 0.03 s, sizes 64 B, 512 B, 4 KiB, 64 KiB, 1 MiB,
 * engines hybrid vpclmul pclmul sse42 portable (those the CPU lacks print "-").
 * Each engine is measured in a child process that sets SIWARP_CRC32C
 * before its first CRC call (the engine is chosen once per process).
 * A call's result feeds the next, so calls do not overlap.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "swp.h"

#define MAX_SIZES 16

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile uint32_t sink;

enum { M_CRC, M_COPY, M_MEMCPY };

/* one run: GB/s over at least secs seconds */
static double run(int what, uint8_t *dst, const uint8_t *src, size_t len, double secs)
{
    size_t batch = len >= 65536 ? 4 : len >= 4096 ? 64 : 1024;
    uint64_t bytes = 0;
    uint32_t c = 0;
    double t0 = now(), t;

    do {
        for (size_t i = 0; i < batch; i++) {
            switch (what) {
            case M_CRC:  c = swp_crc32c(c, src, len); break;
            case M_COPY: c = swp_crc32c_copy(c, dst, src, len); break;
            default:
                memcpy(dst, src, len);
                c += dst[c % len];          /* keep the copies ordered */
                break;
            }
        }
        bytes += batch * len;
        t = now() - t0;
    } while (t < secs);
    sink = c;
    return (double)bytes / t / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

struct opts {
    int runs;
    double secs;
    size_t align;
    size_t sizes[MAX_SIZES];
    int nsizes;
};

/* median over o->runs runs, the runs of all sizes interleaved */
static void measure(const struct opts *o, int what, uint8_t *dst, const uint8_t *src,
                    double *med)
{
    double r[MAX_SIZES][64];

    for (int k = 0; k < o->runs; k++)
        for (int s = 0; s < o->nsizes; s++)
            r[s][k] = run(what, dst, src, o->sizes[s], o->secs);
    for (int s = 0; s < o->nsizes; s++) {
        qsort(r[s], (size_t)o->runs, sizeof(double), cmp_double);
        med[s] = r[s][o->runs / 2];
    }
}

static void print_row(const char *label, const struct opts *o, const double *v)
{
    printf("%-22s", label);
    for (int s = 0; s < o->nsizes; s++)
        printf(" %8.2f", v[s]);
    printf("\n");
    fflush(stdout);
}

static void size_label(size_t n, char *buf, size_t cap)
{
    if (n >= (1u << 20) && n % (1u << 20) == 0)
        snprintf(buf, cap, "%zuM", n >> 20);
    else if (n >= 1024 && n % 1024 == 0)
        snprintf(buf, cap, "%zuK", n >> 10);
    else
        snprintf(buf, cap, "%zu", n);
}

int main(int argc, char **argv)
{
    static const char *const all[] = { "hybrid", "vpclmul", "pclmul", "sse42", "portable" };
    static const size_t def_sizes[] = { 64, 512, 4096, 65536, 1 << 20 };
    struct opts o = { .runs = 9, .secs = 0.03, .align = 0 };
    const char *engines[16];
    int nengines = 0, opt;
    size_t max = 0;

    while ((opt = getopt(argc, argv, "r:t:a:s:")) != -1) {
        switch (opt) {
        case 'r': o.runs = atoi(optarg); break;
        case 't': o.secs = atof(optarg); break;
        case 'a': o.align = (size_t)atol(optarg) % 64; break;
        case 's':
            if (o.nsizes < MAX_SIZES)
                o.sizes[o.nsizes++] = (size_t)atol(optarg);
            break;
        default:
            fprintf(stderr, "usage: %s [-r runs] [-t secs] [-a align] [-s size]... "
                    "[engine]...\n", argv[0]);
            return 2;
        }
    }
    if (o.runs < 1 || o.runs > 64)
        o.runs = 9;
    if (!o.nsizes) {
        memcpy(o.sizes, def_sizes, sizeof(def_sizes));
        o.nsizes = (int)(sizeof(def_sizes) / sizeof(def_sizes[0]));
    }
    for (int i = optind; i < argc && nengines < 16; i++)
        engines[nengines++] = argv[i];
    if (!nengines)
        for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
            engines[nengines++] = all[i];
    for (int s = 0; s < o.nsizes; s++)
        if (o.sizes[s] > max)
            max = o.sizes[s];

    uint8_t *src = aligned_alloc(64, max + 128), *dst = aligned_alloc(64, max + 128);
    double med[MAX_SIZES];

    if (!src || !dst || !max)
        return 1;
    for (size_t i = 0; i < max + 128; i++)
        src[i] = (uint8_t)(i * 131 + 7);
    memset(dst, 0, max + 128);

    printf("GB/s, median of %d runs of %.3f s, source alignment %zu\n%-22s",
           o.runs, o.secs, o.align, "");
    for (int s = 0; s < o.nsizes; s++) {
        char l[24];
        size_label(o.sizes[s], l, sizeof(l));
        printf(" %8s", l);
    }
    printf("\n");
    measure(&o, M_MEMCPY, dst, src + o.align, med);
    print_row("memcpy (CRC off)", &o, med);
    fflush(stdout);

    for (int e = 0; e < nengines; e++) {
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            char label[64];
            setenv("SIWARP_CRC32C", engines[e], 1);
            if (strcmp(swp_crc32c_name(), engines[e]) != 0 &&
                !(strcmp(engines[e], "sse42") == 0 &&
                  strcmp(swp_crc32c_name(), "sse4.2") == 0)) {
                printf("%-22s %8s\n", engines[e], "-");
                _exit(0);
            }
            measure(&o, M_CRC, dst, src + o.align, med);
            snprintf(label, sizeof(label), "%s crc", engines[e]);
            print_row(label, &o, med);
            measure(&o, M_COPY, dst, src + o.align, med);
            snprintf(label, sizeof(label), "%s copy+crc", engines[e]);
            print_row(label, &o, med);
            _exit(0);
        }
        waitpid(pid, NULL, 0);
    }
    free(src);
    free(dst);
    return 0;
}
