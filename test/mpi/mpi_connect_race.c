/*
 * mpi_connect_race.c - first contact while half the ranks do not progress.
 *
 * Every rank sends to every other rank at once (all pairs connect
 * simultaneously); then the odd ranks compute for BUSY ms without calling
 * MPI while the even ranks wait in MPI.  Run with btl_siwarp_connect_timeout
 * below BUSY (and above BUSY / 2): an even rank's MPA Request to an odd rank
 * goes unanswered longer than the timeout.  It waits (the BTL's
 * reply_wait_ms); before 2026-12-06 it timed out and was retried on the odd
 * rank's next address, so the odd rank found two requests from the same
 * peer when it woke up -- one the peer had given up (its socket closed) and
 * the live one -- and had to keep the live connection, not trade a
 * connection it accepted for another request (that closed the connection
 * under the peer's first Sends: "peer closed the connection with work in
 * flight").  The odd ranks' own Requests leave late, after the busy phase,
 * and may find the even ranks' listeners gone (libsiwarp retries them).
 *
 * Then traffic in both directions checks that no message is lost or
 * duplicated: MPI's non-overtaking order makes a lost message show up as
 * the wrong sequence number and a duplicate as an extra one.
 *
 * All ranks start at the same wall-clock second START (no MPI call may be
 * used to line them up: it would connect).  A rank still in MPI_Init's
 * progress loop when the others start would accept their requests there,
 * and then a busy phase past the timeout fails those connections by design
 * (the P2P start-up bound: Read RTR unanswered); so a rank that reaches
 * START late does not compute, and says so.
 *
 * Usage: mpi_connect_race [BUSY_MS [START]]   (default 1500, no START)
 */
#include "mpi_common.h"

#include <time.h>

#define ROUNDS 200

static double now_s(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    int rank, size, busy_ms = 1500, n = 0, late = 0;
    double start = 0;

    MPI_Init(&argc, &argv);
    if (argc > 1) {
        busy_ms = atoi(argv[1]);
    }
    if (argc > 2) {
        start = atof(argv[2]);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (start > 0) {
        late = now_s(CLOCK_REALTIME) >= start;
        while (now_s(CLOCK_REALTIME) < start) {
            struct timespec ms = { 0, 1000000 };
            nanosleep(&ms, NULL);
        }
        if (late) {
            fprintf(stderr, "[rank %d] connect_race: late for the start, not computing\n", rank);
        }
    }

    MPI_Request *req = malloc(sizeof(MPI_Request) * 2 * (size_t) size * ROUNDS);
    int (*out)[3] = malloc(sizeof(int[3]) * (size_t) size * ROUNDS);
    int (*in)[3] = malloc(sizeof(int[3]) * (size_t) size * ROUNDS);
    CHECK(req && out && in, "out of memory");

    /* first contact: all pairs at the same instant */
    for (int p = 0; p < size; p++) {
        if (p != rank) {
            MPI_Irecv(in[p], 3, MPI_INT, p, 0, MPI_COMM_WORLD, &req[n++]);
        }
    }
    for (int p = 0; p < size; p++) {
        if (p != rank) {
            out[p][0] = rank;
            out[p][1] = p;
            out[p][2] = -1;
            MPI_Isend(out[p], 3, MPI_INT, p, 0, MPI_COMM_WORLD, &req[n++]);
        }
    }
    if ((rank & 1) && !late) {
        /* compute: no MPI call, so no progress, for longer than the
         * peers' MPA Reply timeout */
        double until = now_s(CLOCK_MONOTONIC) + busy_ms / 1000.0;
        while (now_s(CLOCK_MONOTONIC) < until) {
        }
    }
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    for (int p = 0; p < size; p++) {
        if (p != rank) {
            CHECK(in[p][0] == p && in[p][1] == rank && in[p][2] == -1,
                  "first message from %d: %d %d %d", p, in[p][0], in[p][1], in[p][2]);
        }
    }

    /* unexpected traffic in both directions on the connections just made:
     * everything sent before anything is received */
    n = 0;
    for (int p = 0; p < size; p++) {
        if (p == rank) {
            continue;
        }
        for (int i = 0; i < ROUNDS; i++) {
            int *o = out[(size_t) p * ROUNDS + (size_t) i];
            o[0] = rank;
            o[1] = p;
            o[2] = i;
            MPI_Isend(o, 3, MPI_INT, p, 1, MPI_COMM_WORLD, &req[n++]);
        }
    }
    for (int p = 0; p < size; p++) {
        if (p == rank) {
            continue;
        }
        for (int i = 0; i < ROUNDS; i++) {
            int v[3];
            MPI_Recv(v, 3, MPI_INT, p, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(v[0] == p && v[1] == rank && v[2] == i,
                  "message %d from %d: %d %d %d (lost or duplicated)", i, p, v[0], v[1], v[2]);
        }
    }
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    /* nothing extra may be left over */
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        CHECK(!flag, "an extra message arrived (duplicated)");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        printf("connect_race: ok, %d ranks, odd ranks busy %d ms\n", size, busy_ms);
    }
    free(req);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
