/*
 * mpi_common.h - helpers shared by the MPI test programs: deterministic
 * fill patterns, checks that abort with a message naming the failure,
 * open descriptors and sockets, /proc/self/status fields, the monotonic
 * clock, MPI_T performance variables.
 */
#ifndef SIWARP_MPI_COMMON_H
#define SIWARP_MPI_COMMON_H

#include <dirent.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* Descriptors this process has open (/proc/self/fd), or -1. */
static inline int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    if (!d) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n - 1;               /* the DIR's own descriptor */
}

/* Descriptors this process has open that are sockets (TCP, Unix), or -1. */
static inline int count_sockets(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    char path[300], link[64];
    int n = 0;

    if (!d) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        ssize_t len;

        snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
        len = readlink(path, link, sizeof(link) - 1);
        n += len > 7 && !strncmp(link, "socket:", 7);
    }
    closedir(d);
    return n;
}

/* A field of /proc/self/status in KiB ("VmRSS:", "VmSize:"), -1 if absent. */
static inline long proc_status_kib(const char *field)
{
    char line[256];
    size_t n = strlen(field);
    long v = -1;
    FILE *f = fopen("/proc/self/status", "r");

    if (!f) {
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        if (!strncmp(line, field, n)) {
            v = strtol(line + n, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

/* A benchmark buffer as the OSU micro-benchmarks allocate theirs:
 * zeroed, starting on a page (posix_memalign to the page size).  Where a
 * buffer starts within its page matters on this kind of host: malloc puts
 * a large block 16 octets into its first page, and a kernel copy into a
 * destination a few octets past its source modulo 4 KiB runs many times
 * slower (contrib/probes/copy-offset.c): btl tcp reads straight into the
 * user's buffer, and with malloc's buffers its 128-512 KiB ping-pong took
 * 13-41% longer than with OSU's (2026-12-07, contrib/PERFORMANCE.md).
 * NULL when out of memory; free() releases it. */
static inline void *bench_alloc(size_t bytes)
{
    void *p = NULL;
    long page = sysconf(_SC_PAGESIZE);

    if (0 != posix_memalign(&p, page > 0 ? (size_t) page : 4096, bytes ? bytes : 1)) {
        return NULL;
    }
    memset(p, 0, bytes);
    return p;
}

/* Seconds on the host's monotonic clock: every rank of one host reads the
 * same clock (network namespaces share it too). */
static inline double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A handle on the MPI_T performance variable NAME of class VAR_CLASS, one
 * value (MPI_T_init_thread and the session are the caller's). */
static inline void pvar_open(MPI_T_pvar_session session, const char *name, int var_class,
                             MPI_T_pvar_handle *h)
{
    int idx, count;

    CHECK(MPI_SUCCESS == MPI_T_pvar_get_index(name, var_class, &idx),
          "no MPI_T performance variable %s", name);
    CHECK(MPI_SUCCESS == MPI_T_pvar_handle_alloc(session, idx, NULL, h, &count) && 1 == count,
          "%s: no handle of one value", name);
}

static inline unsigned long pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle h)
{
    unsigned long v = 0;

    CHECK(MPI_SUCCESS == MPI_T_pvar_read(session, h, &v), "MPI_T_pvar_read");
    return v;
}

/* The value of the MPI_T control variable NAME, an unsigned integer of at
 * most 8 bytes (an int, a size_t, ...), after MPI_T_init_thread. */
static inline unsigned long cvar_read_ulong(const char *name)
{
    MPI_T_cvar_handle h;
    int idx, count, size;
    MPI_Datatype type;
    unsigned long v = 0;

    CHECK(MPI_SUCCESS == MPI_T_cvar_get_index(name, &idx), "no MPI_T control variable %s", name);
    CHECK(MPI_SUCCESS == MPI_T_cvar_get_info(idx, NULL, NULL, NULL, &type, NULL, NULL, NULL,
                                             NULL, NULL) &&
              MPI_SUCCESS == MPI_Type_size(type, &size) && size <= (int) sizeof(v),
          "%s: not an integer of at most %zu bytes", name, sizeof(v));
    CHECK(MPI_SUCCESS == MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) && 1 == count,
          "%s: no handle of one value", name);
    CHECK(MPI_SUCCESS == MPI_T_cvar_read(h, &v), "MPI_T_cvar_read %s", name);
    MPI_T_cvar_handle_free(&h);
    return v;
}

#endif
