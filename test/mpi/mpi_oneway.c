/*
 * mpi_oneway.c - rank 1 sends one message to rank 0, which never sends:
 * only rank 1 ever initiates a connection.  With rank 0 started with
 * SIWARP_BTL_TEST_REFUSE_INCOMING=1 (it answers "duplicate, use mine" and
 * never connects), rank 1 must give up after btl_siwarp_connect_timeout and
 * report rank 0 instead of waiting forever.
 *
 * mpi_oneway reply MS: rank 0 then sleeps MS milliseconds outside MPI, so
 * that rank 1's connection request waits for it, and sends its reply
 * before it receives.  Its reply must take that waiting connection rather
 * than open one of its own (run-mpi-tests.sh reads the BTL's report: no
 * duplicate rejected).
 */
#include "mpi_common.h"

#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size;
    uint64_t v = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(2 == size, "needs exactly 2 ranks");
    if (argc > 2 && !strcmp(argv[1], "reply")) {
        uint64_t w = 0;
        MPI_Request req;
        if (1 == rank) {
            v = 0x5157415250ull;
            MPI_Isend(&v, 1, MPI_UINT64_T, 0, 1, MPI_COMM_WORLD, &req);
            MPI_Recv(&w, 1, MPI_UINT64_T, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            CHECK(0x7265706c79ull == w, "reply: got %llx", (unsigned long long) w);
        } else {
            usleep((useconds_t) atoi(argv[2]) * 1000u);
            w = 0x7265706c79ull;
            MPI_Send(&w, 1, MPI_UINT64_T, 1, 2, MPI_COMM_WORLD);
            MPI_Recv(&v, 1, MPI_UINT64_T, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(0x5157415250ull == v, "got %llx", (unsigned long long) v);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == rank) {
            printf("oneway reply: ok\n");
        }
    } else if (1 == rank) {
        v = 0x5157415250ull;
        MPI_Send(&v, 1, MPI_UINT64_T, 0, 1, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&v, 1, MPI_UINT64_T, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(0x5157415250ull == v, "got %llx", (unsigned long long) v);
        printf("oneway: ok\n");
    }
    MPI_Finalize();
    return 0;
}
