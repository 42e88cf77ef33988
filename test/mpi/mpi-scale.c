/*
 * mpi-scale.c - what a job of many ranks pays to start and per peer: the
 * first all-to-all after MPI_Init, memory and sockets against the number of
 * peers connected, and osu_alltoall's loop.
 *
 *   mpi-scale [-n MINBYTES] [-m MAXBYTES] [-f FACTOR] [-i ITERS] [-w WARMUP]
 *
 * 1. Right after MPI_Init every rank calls MPI_Alltoall with 8 bytes a peer
 *    (whatever algorithm Open MPI picks: at 16 ranks and more, 8 B blocks
 *    go by Bruck's, which talks to about 2 log2(N) peers, so this connects
 *    only those).
 *      first NP us       from a rank's exit from MPI_Init to its completion,
 *                        the maximum over ranks
 *      firstlast NP us   from the last rank's exit from MPI_Init to the last
 *                        completion (CLOCK_MONOTONIC, which the namespaces
 *                        share): leaves out the ranks' start-up skew
 *      firstsock NP n    sockets the first all-to-all opened, mean per rank
 * 2. Then every rank exchanges 8 B with the peers at distance 1, 2, ...
 *    (MPI_Sendrecv to rank + d, from rank - d), which connects 2 more peers
 *    a step, until every peer is connected.  At checkpoints (nominally N/8,
 *    N/4, N/2 peers and all of them) and before the first step, after a
 *    barrier, each rank reads its sockets, VmRSS and VmSize:
 *      curve NP PEERS SOCKETS RSS_KIB VMSIZE_KIB   means over ranks
 *    PEERS is the number of peers the exchanges reached (plus those the
 *    first all-to-all did, which SOCKETS counts); the per-peer cost is the
 *    slope between two lines, and a cost that grows faster than the peers
 *    shows as a slope that rises along the curve.
 *      sockall NP n      sockets per rank once every peer is connected
 *    The same sweep follows on the open connections; the difference between
 *    the two is what making the connections cost:
 *      connwall NP us    wall time, the maximum over ranks
 *      conncpu NP us     CPU time (user + system, getrusage) per socket the
 *                        first sweep opened, mean over ranks
 * 3. osu_alltoall's loop, size by size from MINBYTES to MAXBYTES (default
 *    1..4096, FACTOR 4): a barrier, then WARMUP untimed and ITERS timed
 *    iterations of MPI_Wtime, MPI_Alltoall, MPI_Wtime, MPI_Barrier (the
 *    barrier outside the timed part); each rank's mean; reported as OSU
 *    does, the average over ranks (and the minimum and maximum):
 *      a2a SIZE us   a2amin SIZE us   a2amax SIZE us
 *    OSU runs 100 + 1000 iterations up to 8 KiB and 10 + 100 above; these
 *    runs oversubscribe 2 cores many times over, so the defaults are
 *    ITERS 50, WARMUP 10 (5 and 20 above 8 KiB).  -m 0 leaves it out.
 * Output on rank 0, one line per figure (as mpi-bench and mpi-connect).
 */
#include "mpi_common.h"
#include <getopt.h>
#include <sys/resource.h>

#define LARGE_BYTES 8192        /* where OSU switches to its large counts */

static int rank, np;

static double reduce(double mine, MPI_Op op)
{
    double v = 0;

    MPI_Reduce(&mine, &v, 1, MPI_DOUBLE, op, 0, MPI_COMM_WORLD);
    return op == MPI_SUM ? v / np : v;
}

/* user + system CPU seconds of this process, every thread */
static double cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* one checkpoint of the curve: barrier, then the means over ranks (printed
 * by the sweep that connects; the one after it does the same work) */
static void checkpoint(int peers, int print)
{
    MPI_Barrier(MPI_COMM_WORLD);
    double sock = reduce(count_sockets(), MPI_SUM);
    double rss = reduce(proc_status_kib("VmRSS:"), MPI_SUM);
    double vsz = reduce(proc_status_kib("VmSize:"), MPI_SUM);

    if (0 == rank && print) {
        printf("curve %d %d %.1f %.0f %.0f\n", np, peers, sock, rss, vsz);
    }
}

/* 8 B with the peers at distance 1, 2, ..., N/2, checkpoints on the way;
 * returns the sweep's wall and CPU seconds (this rank's) in t[0], t[1] */
static void sweep(int print, double t[2])
{
    uint64_t s = 0, r = 0;
    int steps = np / 2, next = 0;
    int marks[4] = { np / 16, np / 8, np / 4, steps };

    checkpoint(0, print);
    t[0] = MPI_Wtime();
    t[1] = cpu_s();
    for (int d = 1; d <= steps; d++) {
        int to = (rank + d) % np, from = (rank - d + np) % np;

        s = (uint64_t) rank << 32 | (uint64_t) to;
        MPI_Sendrecv(&s, 1, MPI_UINT64_T, to, 3, &r, 1, MPI_UINT64_T, from, 3,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(r == ((uint64_t) from << 32 | (uint64_t) rank), "data from rank %d", from);
        while (next < 4 && marks[next] < d) {
            next++;
        }
        if (next < 4 && marks[next] == d) {
            checkpoint(2 * d < np ? 2 * d : np - 1, print);
            next++;
        }
    }
    t[0] = MPI_Wtime() - t[0];
    t[1] = cpu_s() - t[1];
}

/* the curve, then the same sweep again on open connections: the
 * difference is what making the connections cost */
static void curve(void)
{
    double cold[2], warm[2];
    int sock0 = count_sockets();

    sweep(1, cold);
    int made = count_sockets() - sock0;
    sweep(0, warm);
    double sock = reduce(count_sockets(), MPI_SUM);
    double wall = reduce((cold[0] - warm[0]) * 1e6, MPI_MAX);
    double cpu = reduce(made > 0 ? (cold[1] - warm[1]) * 1e6 / made : 0, MPI_SUM);
    if (0 == rank) {
        printf("sockall %d %.1f n\nconnwall %d %.1f us\nconncpu %d %.1f us\n", np, sock, np,
               wall, np, cpu);
    }
}

static void osu_alltoall(size_t min, size_t max, int factor, int iters, int warmup)
{
    char *sbuf = NULL, *rbuf = NULL;

    CHECK(0 == posix_memalign((void **) &sbuf, 4096, max * (size_t) np) &&
          0 == posix_memalign((void **) &rbuf, 4096, max * (size_t) np), "posix_memalign");
    memset(sbuf, 1, max * (size_t) np);
    memset(rbuf, 0, max * (size_t) np);
    for (size_t len = min; len <= max; len = len ? len * (size_t) factor : 1) {
        int n = len > LARGE_BYTES ? (iters / 10 > 5 ? iters / 10 : 5) : iters;
        int skip = len > LARGE_BYTES ? (warmup / 2 > 1 ? warmup / 2 : 1) : warmup;
        double timer = 0;

        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < n + skip; i++) {
            double t0 = MPI_Wtime();
            MPI_Alltoall(sbuf, (int) len, MPI_CHAR, rbuf, (int) len, MPI_CHAR, MPI_COMM_WORLD);
            double t1 = MPI_Wtime();
            MPI_Barrier(MPI_COMM_WORLD);
            if (i >= skip) {
                timer += t1 - t0;
            }
        }
        double lat = timer * 1e6 / n;
        double avg = reduce(lat, MPI_SUM), lo = reduce(lat, MPI_MIN), hi = reduce(lat, MPI_MAX);
        if (0 == rank) {
            printf("a2a %zu %.2f us\na2amin %zu %.2f us\na2amax %zu %.2f us\n", len, avg, len,
                   lo, len, hi);
            fflush(stdout);
        }
    }
    free(sbuf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    size_t min = 1, max = 4096;
    int factor = 4, iters = 50, warmup = 10, c;

    MPI_Init(&argc, &argv);
    double t0 = mono_s();
    int sock0 = count_sockets();

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    while ((c = getopt(argc, argv, "n:m:f:i:w:")) != -1) {
        switch (c) {
        case 'n': min = strtoull(optarg, NULL, 0); break;
        case 'm': max = strtoull(optarg, NULL, 0); break;
        case 'f': factor = atoi(optarg); break;
        case 'i': iters = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        default:
            if (0 == rank) {
                fprintf(stderr, "usage: mpi-scale [-n MINBYTES] [-m MAXBYTES] [-f FACTOR] "
                                "[-i ITERS] [-w WARMUP]\n");
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    CHECK(np >= 4 && factor >= 2 && iters > 0 && warmup >= 0 && (0 == max || min <= max),
          "needs 4 or more ranks, FACTOR >= 2, ITERS > 0, MINBYTES <= MAXBYTES");

    /* 1: the first all-to-all, before anything else talks to a peer */
    uint64_t *s = malloc((size_t) np * 8), *r = malloc((size_t) np * 8);
    CHECK(s && r, "malloc");
    for (int p = 0; p < np; p++) {
        s[p] = (uint64_t) rank << 32 | (uint64_t) p;
    }
    MPI_Alltoall(s, 8, MPI_BYTE, r, 8, MPI_BYTE, MPI_COMM_WORLD);
    double done = mono_s();
    int sock1 = count_sockets();
    for (int p = 0; p < np; p++) {
        CHECK(r[p] == ((uint64_t) p << 32 | (uint64_t) rank), "first all-to-all: from %d", p);
    }
    free(s);
    free(r);
    double first = reduce((done - t0) * 1e6, MPI_MAX);
    double last_init = reduce(t0, MPI_MAX), last_done = reduce(done, MPI_MAX);
    double opened = reduce(sock1 - sock0, MPI_SUM);
    if (0 == rank) {
        printf("# test size value unit\nfirst %d %.1f us\nfirstlast %d %.1f us\n"
               "firstsock %d %.1f n\n", np, first, np, (last_done - last_init) * 1e6, np, opened);
        fflush(stdout);
    }

    /* 2: memory and sockets against peers connected */
    curve();

    /* 3: osu_alltoall */
    if (max > 0) {
        osu_alltoall(min, max, factor, iters, warmup);
    }
    MPI_Finalize();
    return 0;
}
