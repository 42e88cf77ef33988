/*
 * mpi_oneway.c - rank 1 sends one message to rank 0, which never sends:
 * only rank 1 ever initiates a connection.  With rank 0 started with
 * SIWARP_BTL_TEST_REFUSE_INCOMING=1 (it answers "duplicate, use mine" and
 * never connects), rank 1 must give up after btl_siwarp_connect_timeout and
 * report rank 0 instead of waiting forever.
 */
#include "mpi_common.h"

int main(int argc, char **argv)
{
    int rank, size;
    uint64_t v = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(2 == size, "needs exactly 2 ranks");
    if (1 == rank) {
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
