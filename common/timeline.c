/*
 * timeline.c - the buffer behind timeline.h's marks, and its file.
 *
 * Times are TSC ticks where the TSC runs at a constant rate (constant_tsc:
 * rdtsc costs about 10 ns, clock_gettime 25-40 on a VM), which all cores
 * share, so two processes' marks compare as they are; the file gives the
 * rate, measured over 20 ms at the first mark, only to turn ticks into
 * time.  (Converting each process's ticks to nanoseconds with its own
 * measured rate let two processes drift apart by tens of microseconds
 * a second.)  Elsewhere CLOCK_MONOTONIC nanoseconds.
 */
#include "timeline.h"

#ifdef SWP_TIMELINE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#define TL_MAX (2u << 20)

static struct swp_tl_mark *tl_buf;
static uint64_t tl_n, tl_dropped;
static char tl_path[512];
static pthread_once_t tl_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t tl_lock = PTHREAD_MUTEX_INITIALIZER;
static double tl_ns_per_tick;

static uint64_t tl_clock_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t tl_now(void)
{
#if defined(__x86_64__)
    if (tl_ns_per_tick > 0)
        return __rdtsc();
#endif
    return tl_clock_ns();
}

static void tl_write(void)
{
    struct swp_tl_file h = { .magic = "SWPTL2", .ns_per_tick = tl_ns_per_tick };
    FILE *f;

    /* a progress thread may still be marking */
    pthread_mutex_lock(&tl_lock);
    if (!tl_buf) {
        pthread_mutex_unlock(&tl_lock);
        return;
    }
    h.marks = tl_n;
    h.dropped = tl_dropped;
    f = fopen(tl_path, "wb");
    if (!f) {
        fprintf(stderr, "siwarp: timeline: cannot write %s\n", tl_path);
    } else {
        if (fwrite(&h, sizeof(h), 1, f) != 1 ||
            fwrite(tl_buf, sizeof(*tl_buf), tl_n, f) != tl_n)
            fprintf(stderr, "siwarp: timeline: short write to %s\n", tl_path);
        fclose(f);
    }
    free(tl_buf);
    tl_buf = NULL;
    pthread_mutex_unlock(&tl_lock);
}

static void tl_init(void)
{
    const char *prefix = getenv("SIWARP_TIMELINE");

    if (!prefix || !*prefix)
        return;
    snprintf(tl_path, sizeof(tl_path), "%s.%d", prefix, (int)getpid());
#if defined(__x86_64__)
    {
        FILE *ci = fopen("/proc/cpuinfo", "r");
        char line[4096];
        int constant = 0;
        while (ci && fgets(line, sizeof(line), ci))
            if (!strncmp(line, "flags", 5)) {
                constant = strstr(line, " constant_tsc") != NULL;
                break;
            }
        if (ci)
            fclose(ci);
        if (constant) {
            /* the first mark, and the post it marks, wait for this */
            struct timespec d = { 0, 20000000 };
            uint64_t t0 = __rdtsc(), n0 = tl_clock_ns(), t1, n1;
            nanosleep(&d, NULL);
            t1 = __rdtsc();
            n1 = tl_clock_ns();
            if (t1 > t0)
                tl_ns_per_tick = (double)(n1 - n0) / (double)(t1 - t0);
        }
    }
#endif
    tl_buf = malloc(sizeof(*tl_buf) * TL_MAX);
    /* registered from a plugin, atexit runs at its dlclose as well */
    if (tl_buf)
        atexit(tl_write);
}

void swp_tl_mark(enum swp_tl_event event, uint64_t arg)
{
    pthread_once(&tl_once, tl_init);
    if (!tl_buf)
        return;
    pthread_mutex_lock(&tl_lock);
    if (tl_buf && tl_n < TL_MAX) {
        tl_buf[tl_n].t = tl_now();
        tl_buf[tl_n].event = (uint32_t)event;
        tl_buf[tl_n].arg = (uint32_t)arg;
        tl_n++;
    } else {
        tl_dropped++;
    }
    pthread_mutex_unlock(&tl_lock);
}
#endif
