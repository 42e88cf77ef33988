/*
 * mpi-bench.c - ping-pong latency, uni- and bi-directional bandwidth
 * (window of 64 outstanding messages) and message rate between ranks 0
 * and 1, sizes 0 B to 64 MiB.  Data is verified once per size.
 *
 *   mpi-bench [-t lat|bw|bibw|rate|all[,...]] [-m MAXBYTES] [-n MINBYTES]
 *             [-i ITER] [-f FACTOR]
 *
 * Sizes run from MINBYTES to MAXBYTES, each FACTOR (default 2) times the one
 * before (after 0 comes 1); 8 B, the message rate's size, is always among
 * them when in range.  Each measurement follows untimed warm-up rounds, as
 * in the OSU micro-benchmarks (see warmup_for).  -t takes a comma list
 * ("bw,bibw": both, size by size, in one launch).
 *
 * Output, one line per (test, size), easy to join across runs:
 *   # test size value unit
 *   lat 8 12.34 us               one way: the mean, as OSU reports it
 *   latmed 8 11.90 us            one way: half the median round trip
 *   bw 1048576 950.1 MB/s
 *   bwcpu 1048576 0.41 s/GB     user+system CPU of both ranks (getrusage,
 *                               every thread) per 1e9 bytes, during bw
 */
#include "mpi_common.h"
#include <getopt.h>
#include <sys/resource.h>

#define WINDOW 64

static int rank;
static int iters_for(size_t len, int base)
{
    if (len >= (8u << 20)) {
        return base / 50 > 2 ? base / 50 : 2;
    }
    if (len >= (1u << 20)) {
        return base / 10 > 5 ? base / 10 : 5;
    }
    if (len >= 65536) {
        return base / 2 > 10 ? base / 2 : 10;
    }
    return base;
}

static void check_data(uint8_t *s, uint8_t *r, size_t len)
{
    /* one verified exchange before timing */
    if (0 == rank) {
        fill(s, len, len);
        MPI_Send(s, (int) len, MPI_BYTE, 1, 99, MPI_COMM_WORLD);
        MPI_Recv(r, (int) len, MPI_BYTE, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(verify(r, len, len + 1) == (size_t) -1, "data check at %zu bytes", len);
    } else {
        MPI_Recv(r, (int) len, MPI_BYTE, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(verify(r, len, len) == (size_t) -1, "data check at %zu bytes", len);
        fill(s, len, len + 1);
        MPI_Send(s, (int) len, MPI_BYTE, 0, 99, MPI_COMM_WORLD);
    }
}

/* Untimed rounds before each measurement, as the OSU micro-benchmarks
 * skip them (100 ping-pongs and 10 windows for small messages, 10 and 2
 * above 8 KiB): the first rounds after a size change pay for cold caches,
 * registrations and, in a BTL, credit grants that later rounds do not. */
static int warmup_for(size_t len, int windows)
{
    if (windows) {
        return len > 8192 ? 2 : 10;
    }
    return len > 8192 ? 10 : 100;
}

/* Is NAME in the comma list TESTS ("all" names every test)? */
static int wants(const char *tests, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = tests; *p;) {
        size_t len = strcspn(p, ",");
        if ((len == n && !strncmp(p, name, n)) || (len == 3 && !strncmp(p, "all", 3))) {
            return 1;
        }
        p += len + (p[len] == ',');
    }
    return 0;
}

/* The first name in the comma list TESTS that is no test, or NULL. */
static const char *unknown_test(const char *tests)
{
    static const char *const names[] = { "lat", "bw", "bibw", "rate", "all" };
    for (const char *p = tests;; p += strcspn(p, ",") + 1) {
        size_t len = strcspn(p, ","), k = 0;
        while (k < sizeof(names) / sizeof(names[0]) &&
               !(strlen(names[k]) == len && !strncmp(p, names[k], len))) {
            k++;
        }
        if (k == sizeof(names) / sizeof(names[0])) {
            return p;
        }
        if (!p[len]) {
            return NULL;
        }
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* One-way latency in microseconds: the mean (total time over 2 * iters,
 * as OSU reports it) and, through *median, half the median round trip.
 * Rank 0 times every round trip: on a 2-core host one preempted round
 * (a timer tick, a daemon) can cost 1000 ordinary ones, which moves a mean
 * but not a median -- and the raw TCP ping-pong it is held against
 * (bench-raw.sh) reports both, so like is compared with like. */
static double lat(uint8_t *s, uint8_t *r, size_t len, int iters, double *median)
{
    double t0 = 0, prev = 0;
    double *rtt = 0 == rank ? malloc(sizeof(double) * (size_t) iters) : NULL;

    CHECK(0 != rank || rtt, "malloc of %d round-trip times", iters);
    for (int i = -warmup_for(len, 0); i < iters; i++) {
        if (0 == rank) {
            double now = MPI_Wtime();
            if (0 == i) {
                t0 = now;
            } else if (i > 0) {
                rtt[i - 1] = now - prev;
            }
            prev = now;
            MPI_Send(s, (int) len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(r, (int) len, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(r, (int) len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(s, (int) len, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    if (0 != rank) {
        *median = 0;
        return 0;
    }
    double end = MPI_Wtime();
    rtt[iters - 1] = end - prev;
    qsort(rtt, (size_t) iters, sizeof(double), cmp_double);
    *median = (iters % 2 ? rtt[iters / 2] : (rtt[iters / 2 - 1] + rtt[iters / 2]) / 2) * 1e6 / 2;
    free(rtt);
    return (end - t0) * 1e6 / (2.0 * iters);
}

/* window of WINDOW messages one way (bi: both ways), then a 1-byte ack;
 * returns seconds, *msgs the messages moved */
static double window(uint8_t *s, uint8_t *r, size_t len, int iters, int bidir, double *msgs)
{
    MPI_Request req[2 * WINDOW];
    double t0 = 0;
    char ack = 0;
    size_t stride = len < 65536 ? len : 0;     /* small messages: distinct slots */

    for (int i = -warmup_for(len, 1); i < iters; i++) {
        int n = 0;
        if (0 == i) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        if (0 == rank || bidir) {
            for (int w = 0; w < WINDOW; w++) {
                MPI_Isend(s + stride * w, (int) len, MPI_BYTE, 1 - rank, 2, MPI_COMM_WORLD,
                          &req[n++]);
            }
        }
        if (1 == rank || bidir) {
            for (int w = 0; w < WINDOW; w++) {
                MPI_Irecv(r + stride * w, (int) len, MPI_BYTE, 1 - rank, 2, MPI_COMM_WORLD,
                          &req[n++]);
            }
        }
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        if (0 == rank) {
            MPI_Recv(&ack, 1, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Send(&ack, 1, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
        }
    }
    *msgs = (double) WINDOW * iters * (bidir ? 2 : 1);
    return MPI_Wtime() - t0;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double) ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
           (double) ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
}

/* MB/s; *cpu_per_gb (rank 0 only): CPU seconds of both ranks per 1e9 bytes */
static double bw(uint8_t *s, uint8_t *r, size_t len, int iters, int bidir, double *cpu_per_gb)
{
    double msgs, c0 = cpu_seconds(), t = window(s, r, len, iters, bidir, &msgs);
    double mine = cpu_seconds() - c0, both = 0;

    MPI_Reduce(&mine, &both, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (cpu_per_gb) {
        *cpu_per_gb = len ? both / ((double) len * msgs / 1e9) : 0;
    }
    return (double) len * msgs / t / 1e6;
}

static double rate(uint8_t *s, uint8_t *r, size_t len, int iters)
{
    double msgs, t = window(s, r, len, iters, 0, &msgs);
    return msgs / t;
}

int main(int argc, char **argv)
{
    const char *test = "all";
    size_t max = 64u << 20, min = 0;
    int base_iters = 1000, factor = 2, c, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((c = getopt(argc, argv, "t:m:n:i:f:")) != -1) {
        switch (c) {
        case 't': test = optarg; break;
        case 'm': max = strtoull(optarg, NULL, 0); break;
        case 'n': min = strtoull(optarg, NULL, 0); break;
        case 'i': base_iters = atoi(optarg); break;
        case 'f': factor = atoi(optarg); break;
        default:
            if (0 == rank) {
                fprintf(stderr, "usage: mpi-bench [-t lat|bw|bibw|rate|all[,...]] [-m max] "
                        "[-n min] [-i iters] [-f factor]\n");
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    CHECK(size >= 2, "needs 2 ranks");
    CHECK(factor >= 2, "-f: 2 or more");
    CHECK(base_iters >= 1, "-i: 1 or more");
    const char *bad = unknown_test(test);
    CHECK(!bad, "-t: unknown test '%.*s' (lat, bw, bibw, rate, all)",
          (int) strcspn(bad, ","), bad);
    if (rank > 1) {     /* extra ranks idle */
        MPI_Finalize();
        return 0;
    }
    /* the window of small messages uses distinct slots */
    size_t bytes = max > 65536 * (size_t) WINDOW ? max : 65536 * (size_t) WINDOW;
    uint8_t *s = bench_alloc(bytes), *r = bench_alloc(bytes);
    CHECK(s && r, "bench_alloc %zu", bytes);
    memset(s, 1, bytes);
    memset(r, 0, bytes);
    if (0 == rank) {
        printf("# test size value unit\n");
    }
    for (size_t len = min, grid = min; len <= max;) {
        int it = iters_for(len, base_iters);
        check_data(s, r, len);
        if (wants(test, "lat")) {
            double med, v = lat(s, r, len, it, &med);
            if (0 == rank) printf("lat %zu %.2f us\nlatmed %zu %.2f us\n", len, v, len, med);
        }
        if (wants(test, "bw")) {
            double cpu = 0, v = bw(s, r, len, it / 10 > 2 ? it / 10 : 2, 0, &cpu);
            if (0 == rank) printf("bw %zu %.1f MB/s\n", len, v);
            if (0 == rank && len) printf("bwcpu %zu %.3f s/GB\n", len, cpu);
        }
        if (wants(test, "bibw")) {
            double v = bw(s, r, len, it / 10 > 2 ? it / 10 : 2, 1, NULL);
            if (0 == rank) printf("bibw %zu %.1f MB/s\n", len, v);
        }
        if (wants(test, "rate") && len <= 65536) {
            double v = rate(s, r, len, it / 10 > 2 ? it / 10 : 2);
            if (0 == rank) printf("rate %zu %.0f msg/s\n", len, v);
        }
        fflush(stdout);
        size_t next = grid ? grid * (size_t) factor : 1;
        if (len < 8 && 8 < next) {
            len = 8;            /* off the grid; the grid goes on after it */
        } else {
            len = grid = next;
        }
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
