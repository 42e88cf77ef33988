/*
 * mpi-coll-bench.c - blocking collective latency over MPI_COMM_WORLD as
 * the OSU micro-benchmarks 7.4 measure it (osu_allreduce, osu_alltoall,
 * osu_bcast), for the oversubscribed section of contrib/bench-mpi.sh.
 *
 *   mpi-coll-bench [-t allreduce|alltoall|bcast[,...]] [-n MINBYTES]
 *                  [-m MAXBYTES] [-i ITER]
 *
 * The loop, per size (MPI_CHAR elements, sizes doubling from MINBYTES,
 * default 1, to MAXBYTES, default 65536): a barrier; ITER timed rounds
 * (default 1000, a tenth above 8 KiB) after a tenth as many untimed ones;
 * each round times the collective alone and ends with a barrier.  Each
 * rank's mean over its timed rounds, averaged over the ranks, is what is
 * printed (OSU's "Avg Latency").  Allreduce sums, bcast's root is rank 0,
 * alltoall sends SIZE bytes to every rank.  Data is checked once per size,
 * before timing.
 *
 * Output, one line per (test, size), as mpi-bench prints:
 *   # test size value unit
 *   allreduce 1024 42.10 us
 */
#include "mpi_common.h"
#include <getopt.h>

#define LARGE 8192      /* above this, a tenth of the rounds (OSU's LARGE_MESSAGE_SIZE) */

static int rank, nprocs;

static const char *const tests[] = { "allreduce", "alltoall", "bcast" };

static void run(int t, void *s, void *r, int n)
{
    switch (t) {
    case 0: MPI_Allreduce(s, r, n, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD); break;
    case 1: MPI_Alltoall(s, n, MPI_CHAR, r, n, MPI_CHAR, MPI_COMM_WORLD); break;
    default: MPI_Bcast(s, n, MPI_CHAR, 0, MPI_COMM_WORLD); break;
    }
}

/* One exchange whose result every rank can predict. */
static void check(int t, char *s, char *r, int n)
{
    for (int i = 0; i < n * nprocs; i++) {
        s[i] = (char) (t == 1 ? rank + i / n : rank == 0 ? 7 : 0);
    }
    if (t == 0) {
        for (int i = 0; i < n; i++) {
            s[i] = 1;
        }
    }
    run(t, s, r, n);
    for (int i = 0; i < n; i++) {
        char want = (char) (t == 0 ? nprocs : t == 1 ? 0 : 7);
        char got = t == 1 ? (char) (r[i] - rank) : t == 0 ? r[i] : s[i];
        CHECK(got == want, "%s %d bytes: byte %d is %d, not %d", tests[t], n, i, got, want);
    }
    if (t == 1) {
        for (int p = 0; p < nprocs; p++) {
            CHECK(r[p * n] == (char) (p + rank), "alltoall %d bytes: from rank %d", n, p);
        }
    }
}

static double measure(int t, void *s, void *r, int n, int iters)
{
    int skip = iters / 10;
    double sum = 0, mine, all = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + skip; i++) {
        double t0 = MPI_Wtime();
        run(t, s, r, n);
        double t1 = MPI_Wtime();
        MPI_Barrier(MPI_COMM_WORLD);
        if (i >= skip) {
            sum += t1 - t0;
        }
    }
    mine = sum * 1e6 / iters;
    MPI_Reduce(&mine, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    return all / nprocs;
}

int main(int argc, char **argv)
{
    const char *want = "allreduce,alltoall,bcast";
    long min = 1, max = 65536;
    int iters = 1000, c;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    while ((c = getopt(argc, argv, "t:n:m:i:")) != -1) {
        switch (c) {
        case 't': want = optarg; break;
        case 'n': min = strtol(optarg, NULL, 0); break;
        case 'm': max = strtol(optarg, NULL, 0); break;
        case 'i': iters = atoi(optarg); break;
        default:
            if (0 == rank) {
                fprintf(stderr, "usage: mpi-coll-bench [-t allreduce|alltoall|bcast[,...]] "
                        "[-n min] [-m max] [-i iters]\n");
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    CHECK(min >= 1 && max >= min && max <= (1L << 26), "-n/-m: 1 <= min <= max <= 64 MiB");
    CHECK(iters >= 10, "-i: 10 or more");
    for (const char *w = want; *w; w += strcspn(w, ","), w += *w == ',') {
        size_t len = strcspn(w, ",");
        int known = 0;
        for (int t = 0; t < 3; t++) {
            known |= strlen(tests[t]) == len && 0 == strncmp(w, tests[t], len);
        }
        CHECK(known, "-t: unknown test '%.*s' (allreduce, alltoall, bcast)", (int) len, w);
    }
    char *s = bench_alloc((size_t) max * (size_t) nprocs), *r = bench_alloc((size_t) max * (size_t) nprocs);
    CHECK(s && r, "bench_alloc %ld x %d", max, nprocs);
    if (0 == rank) {
        printf("# test size value unit\n");
    }
    for (int t = 0; t < 3; t++) {
        if (!strstr(want, tests[t])) {
            continue;
        }
        for (long n = min; n <= max; n *= 2) {
            check(t, s, r, (int) n);
            double v = measure(t, s, r, (int) n, n > LARGE ? (iters / 10 > 10 ? iters / 10 : 10)
                                                           : iters);
            if (0 == rank) {
                printf("%s %ld %.2f us\n", tests[t], n, v);
                fflush(stdout);
            }
        }
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
