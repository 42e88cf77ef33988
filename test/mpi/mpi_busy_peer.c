/*
 * mpi_busy_peer.c - first contact with a rank that stays out of MPI for a
 * while, as a rank computing, reading its input, blocked in the runtime
 * (a parent inside MPI_Comm_spawn) or stopped in a debugger does.
 *
 *   mpi_busy_peer recv BUSY_MS   rank 1 computes BUSY_MS before its first
 *                                MPI call after MPI_Init; rank 0 sends to it
 *                                at once, so rank 0's connection request
 *                                waits for rank 1 all that time
 *   mpi_busy_peer send BUSY_MS   rank 0 starts its send (MPI_Isend: the
 *                                connection is begun) and computes BUSY_MS
 *                                before MPI_Wait; rank 1 waits in MPI_Recv
 *
 * Run with btl_siwarp_connect_timeout well below BUSY_MS: the job must
 * complete, the message arrive whole and the reply too.  Rank 0 then sends
 * a window of messages both ways to show the connection is whole.
 */
#include "mpi_common.h"

#define N 4096

int main(int argc, char **argv)
{
    int rank, size, busy_ms, recv_mode;
    int *buf;
    MPI_Request r;
    double t0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc == 3 && size == 2, "usage: mpi_busy_peer recv|send BUSY_MS, on 2 ranks");
    recv_mode = 0 == strcmp(argv[1], "recv");
    busy_ms = atoi(argv[2]);
    buf = malloc(N * sizeof(int));
    CHECK(buf != NULL, "out of memory");
    t0 = MPI_Wtime();

    if (0 == rank) {
        for (int i = 0; i < N; i++) {
            buf[i] = i * 7 + 1;
        }
        MPI_Isend(buf, N, MPI_INT, 1, 0, MPI_COMM_WORLD, &r);
        if (!recv_mode) {
            usleep((useconds_t) busy_ms * 1000u);       /* computing, outside MPI */
        }
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        memset(buf, 0, N * sizeof(int));
        MPI_Recv(buf, N, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < N; i++) {
            CHECK(buf[i] == i * 7 + 2, "reply word %d is %d, want %d", i, buf[i], i * 7 + 2);
        }
    } else {
        if (recv_mode) {
            /* for the fault test that takes the link down meanwhile */
            printf("busy_peer: rank 1 out of MPI for %d ms\n", busy_ms);
            fflush(stdout);
            usleep((useconds_t) busy_ms * 1000u);
        }
        MPI_Recv(buf, N, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < N; i++) {
            CHECK(buf[i] == i * 7 + 1, "word %d is %d, want %d", i, buf[i], i * 7 + 1);
            buf[i]++;
        }
        MPI_Send(buf, N, MPI_INT, 0, 1, MPI_COMM_WORLD);
    }
    /* and the connection carries a window both ways afterwards */
    for (int round = 0; round < 50; round++) {
        int out = rank * 1000 + round, in = -1, peer = 1 - rank;
        MPI_Sendrecv(&out, 1, MPI_INT, peer, 2, &in, 1, MPI_INT, peer, 2, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        CHECK(in == peer * 1000 + round, "round %d got %d", round, in);
    }
    if (0 == rank) {
        printf("busy_peer: ok (%s, %d ms busy, %.1f s)\n", argv[1], busy_ms, MPI_Wtime() - t0);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
