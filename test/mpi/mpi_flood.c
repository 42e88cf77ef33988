/*
 * mpi_flood.c - unexpected-message flood: every rank sends N small
 * messages (default 20000) to every other rank before anyone posts a
 * receive; receivers then drain them in reverse tag order of posting.
 * Exercises credit flow control: no Send may arrive without a receive
 * buffer, and nothing may deadlock.
 */
#include "mpi_common.h"

#define MID_COUNT 2000      /* mid-size messages per pair in the second flood */

int main(int argc, char **argv)
{
    int rank, size, n = 20000;

    MPI_Init(&argc, &argv);
    if (argc > 1) {
        n = atoi(argv[1]);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* both floods post their sends here: n, then MID_COUNT per peer */
    size_t per_peer = n > MID_COUNT ? (size_t) n : MID_COUNT;
    MPI_Request *sreq = malloc(sizeof(MPI_Request) * per_peer * (size_t) size);
    int (*sbuf)[4] = malloc(sizeof(int[4]) * (size_t) n);
    int ns = 0;
    for (int i = 0; i < n; i++) {
        sbuf[i][0] = rank;
        sbuf[i][1] = i;
        sbuf[i][2] = i * 7 + rank;
        sbuf[i][3] = ~i;
    }
    for (int p = 0; p < size; p++) {
        if (p == rank) {
            continue;
        }
        for (int i = 0; i < n; i++) {
            MPI_Isend(sbuf[i], 4, MPI_INT, p, i % 32000, MPI_COMM_WORLD, &sreq[ns++]);
        }
    }
    /* everything above is unexpected at the receivers until here */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int p = 0; p < size; p++) {
        if (p == rank) {
            continue;
        }
        for (int i = 0; i < n; i++) {
            int v[4];
            MPI_Recv(v, 4, MPI_INT, p, i % 32000, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(v[0] == p && v[1] == i && v[2] == i * 7 + p && v[3] == ~i,
                  "message %d from %d: %d %d %d %d", i, p, v[0], v[1], v[2], v[3]);
        }
    }
    MPI_Waitall(ns, sreq, MPI_STATUSES_IGNORE);
    /* a second flood of mid-size (eager, several KB) messages */
    {
        const int m = MID_COUNT, len = 3000;
        uint8_t *big = malloc((size_t) m * len);
        int nr = 0;
        MPI_Request *rr = malloc(sizeof(MPI_Request) * (size_t) m * (size_t) size);
        for (int i = 0; i < m; i++) {
            fill(big + (size_t) i * len, len, (uint64_t) (rank * 100000 + i));
        }
        ns = 0;
        for (int p = 0; p < size; p++) {
            if (p != rank) {
                for (int i = 0; i < m; i++) {
                    MPI_Isend(big + (size_t) i * len, len, MPI_BYTE, p, i, MPI_COMM_WORLD,
                              &sreq[ns++]);
                }
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        uint8_t *rb = malloc((size_t) m * len * (size_t) size);
        for (int p = 0; p < size; p++) {
            if (p != rank) {
                for (int i = m - 1; i >= 0; i--) {
                    MPI_Irecv(rb + ((size_t) p * m + i) * len, len, MPI_BYTE, p, i,
                              MPI_COMM_WORLD, &rr[nr++]);
                }
            }
        }
        MPI_Waitall(nr, rr, MPI_STATUSES_IGNORE);
        MPI_Waitall(ns, sreq, MPI_STATUSES_IGNORE);
        for (int p = 0; p < size; p++) {
            if (p != rank) {
                for (int i = 0; i < m; i++) {
                    CHECK(verify(rb + ((size_t) p * m + i) * len, len,
                                 (uint64_t) (p * 100000 + i)) == (size_t) -1,
                          "mid-size message %d from %d", i, p);
                }
            }
        }
        free(big);
        free(rb);
        free(rr);
    }
    free(sreq);
    free(sbuf);
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        printf("flood: ok, %d messages per pair on %d ranks\n", n, size);
    }
    MPI_Finalize();
    return 0;
}
