/*
 * mpi-connect.c - connection setup time and memory per connected peer,
 * all ranks to all ranks (meant for 8 ranks; needs at least 3).
 *
 *   mpi-connect -t connect|mem [-s BIGBYTES]
 *
 * -t connect: right after MPI_Init every rank posts a receive from and an
 *   8-byte send to every other rank; the time from before the first send to
 *   the last completion, maximum over ranks, is the time to first message
 *   (connections are opened on the way).  A second all-to-all on the now
 *   open connections follows for comparison.
 * -t mem: every rank touches its buffers, then exchanges one message with
 *   rank 0 only (rank 0 thereby connects to everyone, the others to rank 0:
 *   first-use allocations happen here); VmRSS before.  Then an 8-byte
 *   exchange with every peer (ranks 1..N-1 each connect to N-2 new peers);
 *   VmRSS after.  Then one BIGBYTES message (default 4 MiB) each way with
 *   every peer; VmRSS again.  Per peer = delta / (N-2), mean and max over
 *   ranks 1..N-1.  Also (after - right after MPI_Init) / (N-1): an upper
 *   bound that includes the first-use allocations.
 *
 * Output on rank 0, one line per figure (as mpi-bench):
 *   connect 8 1234.5 us          time to first message, max over ranks
 *   connlast 8 987.6 us          from the moment the last rank left MPI_Init
 *                                to the last completion (one host's clock:
 *                                leaves out the ranks' start-up skew)
 *   initskew 8 765.4 us          from the first rank leaving MPI_Init to the
 *                                last (the skew itself; connection requests
 *                                the early ranks send are served by the late
 *                                ones while they wait in MPI_Init's last
 *                                fence, so a transport that connects sooner
 *                                can show a larger skew and a smaller
 *                                connlast)
 *   connwarm 8 12.3 us           the same exchange once connected
 *   mempeer 8 180.0 KiB          RSS per new peer after 8-byte messages, mean
 *   mempeermax 8 200.0 KiB       ... max over ranks
 *   mempeer 4194304 190.0 KiB    ... after BIGBYTES messages as well
 *   meminit 8 300.0 KiB          upper bound, from right after MPI_Init
 */
#include "mpi_common.h"
#include <getopt.h>

static int rank, np;

/* every rank: one message of len bytes to and from every peer at once */
static void all_to_all(uint8_t *s, uint8_t *r, size_t len)
{
    MPI_Request *req = malloc(2 * (size_t) np * sizeof(*req));
    int n = 0;

    CHECK(req, "malloc");
    for (int p = 0; p < np; p++) {
        if (p != rank) {
            MPI_Irecv(r + (size_t) p * len, (int) len, MPI_BYTE, p, 5, MPI_COMM_WORLD, &req[n++]);
        }
    }
    for (int k = 1; k < np; k++) {
        int p = (rank + k) % np;       /* staggered, not everyone to rank 0 first */
        MPI_Isend(s, (int) len, MPI_BYTE, p, 5, MPI_COMM_WORLD, &req[n++]);
    }
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    free(req);
}

/* every rank: len bytes with every peer, one peer at a time (bounded memory) */
static void pairwise(uint8_t *s, uint8_t *r, size_t len)
{
    for (int k = 1; k < np; k++) {
        int to = (rank + k) % np, from = (rank - k + np) % np;
        fill(s, len, (uint64_t) rank * 131 + (uint64_t) to);
        MPI_Sendrecv(s, (int) len, MPI_BYTE, to, 6, r, (int) len, MPI_BYTE, from, 6,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(verify(r, len, (uint64_t) from * 131 + (uint64_t) rank) == (size_t) -1,
              "data from rank %d", from);
    }
}

/* a barrier over point-to-point with rank 0 only: connects nobody else */
static void star_barrier(void)
{
    char b = 0;

    if (0 == rank) {
        for (int p = 1; p < np; p++) {
            MPI_Recv(&b, 1, MPI_BYTE, p, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        for (int p = 1; p < np; p++) {
            MPI_Send(&b, 1, MPI_BYTE, p, 7, MPI_COMM_WORLD);
        }
    } else {
        MPI_Send(&b, 1, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
        MPI_Recv(&b, 1, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

static void report(const char *key, size_t size, double mine, int op, const char *unit)
{
    double v = 0;

    MPI_Reduce(&mine, &v, 1, MPI_DOUBLE, op == 0 ? MPI_SUM : MPI_MAX, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("%s %zu %.1f %s\n", key, size, op == 0 ? v / (np - 1) : v, unit);
    }
}

int main(int argc, char **argv)
{
    const char *test = "connect";
    size_t big = 4u << 20;
    int c;

    MPI_Init(&argc, &argv);
    long rss_init = proc_status_kib("VmRSS:");
    double t0 = mono_s();         /* before anything else, for -t connect */

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    while ((c = getopt(argc, argv, "t:s:")) != -1) {
        switch (c) {
        case 't': test = optarg; break;
        case 's': big = strtoull(optarg, NULL, 0); break;
        default:
            if (0 == rank) {
                fprintf(stderr, "usage: mpi-connect -t connect|mem [-s BIGBYTES]\n");
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    CHECK(np >= 3, "needs 3 or more ranks (8 meant)");
    /* -t connect needs 8 bytes a peer: 4 MiB buffers here would put 36 MiB
     * of first-touch page faults per rank (a quarter of a second for 8 ranks
     * on 2 cores) inside the time to first message */
    size_t slot = strcmp(test, "connect") && big > 8 ? big : 8;
    uint8_t *s = malloc(slot), *r = malloc(slot * (size_t) np);
    CHECK(s && r, "malloc");
    memset(s, 1, slot);
    memset(r, 0, slot * (size_t) np);

    if (!strcmp(test, "connect")) {
        all_to_all(s, r, 8);
        double done = mono_s(), mine = (done - t0) * 1e6, last_init = 0, first_init = 0, last_done = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        double t1 = MPI_Wtime();
        all_to_all(s, r, 8);
        double warm = (MPI_Wtime() - t1) * 1e6;
        /* rank 0 also takes part: the maximum is over all ranks */
        double v = 0;
        MPI_Reduce(&mine, &v, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            printf("# test size value unit\nconnect 8 %.1f us\n", v);
        }
        MPI_Reduce(&t0, &last_init, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&t0, &first_init, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&done, &last_done, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            printf("connlast 8 %.1f us\n", (last_done - last_init) * 1e6);
            printf("initskew 8 %.1f us\n", (last_init - first_init) * 1e6);
        }
        MPI_Reduce(&warm, &v, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            printf("connwarm 8 %.1f us\n", v);
        }
    } else if (!strcmp(test, "mem")) {
        CHECK(rss_init >= 0, "no /proc/self/status");
        star_barrier();
        long rss0 = proc_status_kib("VmRSS:");
        all_to_all(s, r, 8);
        star_barrier();
        long rss1 = proc_status_kib("VmRSS:");
        pairwise(s, r, big);
        star_barrier();
        long rss2 = proc_status_kib("VmRSS:");
        /* rank 0 connected to everyone before rss0: it contributes 0 */
        double small = rank ? (double) (rss1 - rss0) / (np - 2) : 0;
        double large = rank ? (double) (rss2 - rss0) / (np - 2) : 0;
        double upper = rank ? (double) (rss1 - rss_init) / (np - 1) : 0;
        if (0 == rank) {
            printf("# test size value unit\n");
        }
        report("mempeer", 8, small, 0, "KiB");
        report("mempeermax", 8, small, 1, "KiB");
        report("mempeer", big, large, 0, "KiB");
        report("mempeermax", big, large, 1, "KiB");
        report("meminit", 8, upper, 0, "KiB");
        if (0 == rank) {
            printf("memrank0 8 %ld KiB\n", rss1 - rss0);  /* control: no new peers */
        }
    } else {
        CHECK(0, "-t connect or mem, not '%s'", test);
    }
    fflush(stdout);
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
