/*
 * mpi_passive.c - true passive target: one-sided operations complete while
 * the target computes without calling MPI.
 *
 * Rank 0 locks rank 1's window (MPI_LOCK_SHARED), then both pass a
 * barrier.  Rank 1 then stays out of MPI -- it spins on its own window's
 * words -- until it has seen everything rank 0 does to them, or until
 * its deadline.  Rank 0 meanwhile: N MPI_Fetch_and_op(SUM) of one int64
 * and N of one int32 in the upper half of the next 8 bytes, one
 * MPI_Fetch_and_op(REPLACE), one MPI_Put, one MPI_Get, one
 * MPI_Compare_and_swap, each followed by MPI_Win_flush and checked (every
 * fetched value, the got value).  Rank 1 prints what it saw before its
 * deadline:
 *
 *   passive: target saw 100/100 int64 adds, 100/100 int32 adds, replace yes,
 *            put yes, cas yes outside MPI
 *   passive: ok                          (everything seen in time)
 *   passive: incomplete                  (the deadline came first)
 *
 * Only a progress thread that serves the operations by itself gets
 * "ok": with the siwarp BTL, btl_siwarp_progress_thread=1 and atomics as
 * RFC 7306 requests (btl_siwarp_rfc7306=1).  Everything else -- atomics as
 * BTL messages, no thread -- waits for the target's next MPI call, after
 * the deadline: "incomplete", and the test's control run expects that.
 *
 *   mpi_passive [-n N] [-d SECONDS]     (defaults 100, 30)
 */
#include "mpi_common.h"

#include <getopt.h>
#include <time.h>

enum { W_ADD64, W_ADD32, W_REPLACE, W_PUT, W_GET, W_CAS, W_COUNT };

#define MAGIC_PUT 0x5057415250555421ll
#define MAGIC_GET 0x4745542047455421ll
#define MAGIC_REP 0x5245504c41434521ll
#define MAGIC_CAS 0x4341532043415321ll

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void origin(MPI_Win win, int n)
{
    int64_t one = 1, old, v, zero = 0;
    int32_t one32 = 1, old32;
    /* the int32 in the upper half of word W_ADD32 (displacement in bytes) */
    MPI_Aint d32 = W_ADD32 * 8 + 4;

    for (int i = 0; i < n; i++) {
        MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 1, W_ADD64 * 8, MPI_SUM, win);
        MPI_Win_flush(1, win);
        CHECK(old == i, "int64 add %d fetched %lld", i, (long long) old);
    }
    for (int i = 0; i < n; i++) {
        MPI_Fetch_and_op(&one32, &old32, MPI_INT32_T, 1, d32, MPI_SUM, win);
        MPI_Win_flush(1, win);
        CHECK(old32 == i, "int32 add %d fetched %d", i, old32);
    }
    v = MAGIC_REP;
    MPI_Fetch_and_op(&v, &old, MPI_INT64_T, 1, W_REPLACE * 8, MPI_REPLACE, win);
    MPI_Win_flush(1, win);
    CHECK(old == 0, "replace fetched %lld", (long long) old);
    v = MAGIC_PUT;
    MPI_Put(&v, 1, MPI_INT64_T, 1, W_PUT * 8, 1, MPI_INT64_T, win);
    MPI_Win_flush(1, win);
    MPI_Get(&v, 1, MPI_INT64_T, 1, W_GET * 8, 1, MPI_INT64_T, win);
    MPI_Win_flush(1, win);
    CHECK(v == MAGIC_GET, "get brought %llx", (long long) v);
    v = MAGIC_CAS;
    MPI_Compare_and_swap(&v, &zero, &old, MPI_INT64_T, 1, W_CAS * 8, win);
    MPI_Win_flush(1, win);
    CHECK(old == 0, "compare-and-swap fetched %lld", (long long) old);
}

/* Rank 1: out of MPI until everything is seen or the deadline passes. */
static int target(int64_t *w, int n, double seconds)
{
    double end = now() + seconds;
    int32_t *halves = (int32_t *) &w[W_ADD32];
    int32_t *upper = &halves[1];
    int64_t a64, rep, put, cas;
    int32_t a32, lower;
    int done;

    do {
        a64 = __atomic_load_n(&w[W_ADD64], __ATOMIC_ACQUIRE);
        a32 = __atomic_load_n(upper, __ATOMIC_ACQUIRE);
        lower = __atomic_load_n(&halves[0], __ATOMIC_ACQUIRE);
        rep = __atomic_load_n(&w[W_REPLACE], __ATOMIC_ACQUIRE);
        put = __atomic_load_n(&w[W_PUT], __ATOMIC_ACQUIRE);
        cas = __atomic_load_n(&w[W_CAS], __ATOMIC_ACQUIRE);
        done = a64 == n && a32 == n && rep == MAGIC_REP && put == MAGIC_PUT && cas == MAGIC_CAS;
    } while (!done && now() < end);
    /* the int32 adds must leave the lower half alone */
    CHECK(lower == 0, "an int32 add into the upper half changed the lower half to %d", lower);
    printf("passive: target saw %lld/%d int64 adds, %d/%d int32 adds, replace %s, put %s, "
           "cas %s outside MPI\n", (long long) a64, n, a32, n, rep == MAGIC_REP ? "yes" : "no",
           put == MAGIC_PUT ? "yes" : "no", cas == MAGIC_CAS ? "yes" : "no");
    printf("passive: %s\n", done ? "ok" : "incomplete");
    fflush(stdout);
    return done;
}

int main(int argc, char **argv)
{
    int rank, size, n = 100, opt;
    double seconds = 30;
    int64_t *w;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    while ((opt = getopt(argc, argv, "n:d:")) != -1) {
        switch (opt) {
        case 'n': n = atoi(optarg); break;
        case 'd': seconds = atof(optarg); break;
        default: break;
        }
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(2 == size, "run on 2 ranks, not %d", size);
    CHECK(n > 0 && n < 1000000, "-n %d", n);
    w = calloc(W_COUNT, sizeof(*w));
    CHECK(NULL != w, "calloc");
    w[W_GET] = MAGIC_GET;
    MPI_Win_create(w, W_COUNT * sizeof(*w), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);

    if (0 == rank) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        MPI_Barrier(MPI_COMM_WORLD);
        origin(win, n);
        MPI_Win_unlock(1, win);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        target(w, n, seconds);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    free(w);
    MPI_Finalize();
    return 0;
}
