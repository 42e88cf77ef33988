/*
 * mpi_hostile.c - a hostile TCP-fallback peer must not make us touch memory
 * we did not register.  Run over btl_siwarp_mpa=0 with one rank started with
 * SIWARP_BTL_TEST_HOSTILE=below|stag|wrap (the BTL's test hook: it corrupts
 * the target of every put / get it sends).
 *
 * Each rank's buffer sits 4 MiB above a guard area ob1 never registers; rank
 * 0 sends SIZE bytes (argv[1]) to rank 1.  Above btl_siwarp_min_rdma_pipeline_size
 * ob1 uses its put pipeline (the sender puts into the receiver's buffer),
 * below it RGET (the receiver gets from the sender's buffer).  "below" moves
 * the target 2 MiB down, into the guard.
 *
 * Expected with the check: the target process refuses with the "remote
 * access refused" message and the job aborts.  Without it this program
 * prints "HARM:" (guard overwritten, or guard bytes leaked into the
 * receive buffer) or the transfer silently "succeeds" with a forged handle.
 */
#include "mpi_common.h"
#include <sys/mman.h>

#define GUARD (4u << 20)

int main(int argc, char **argv)
{
    int rank, size;
    size_t len = argc > 1 ? strtoull(argv[1], NULL, 0) : (4u << 20);
    uint8_t *area, *buf;
    size_t bad;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(2 == size, "needs exactly 2 ranks");
    area = mmap(NULL, GUARD + len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(MAP_FAILED != area, "mmap %zu", GUARD + len);
    buf = area + GUARD;
    fill(area, GUARD, 0x6a0d + (uint64_t) rank);     /* the "secret" / canary */
    if (0 == rank) {
        fill(buf, len, 42);
        MPI_Send(buf, (int) len, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
    } else {
        memset(buf, 0, len);
        MPI_Recv(buf, (int) len, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    bad = verify(area, GUARD, 0x6a0d + (uint64_t) rank);
    if (bad != (size_t) -1) {
        printf("HARM: rank %d: unregistered memory overwritten at guard byte %zu\n", rank, bad);
    }
    if (1 == rank && (bad = verify(buf, len, 42)) != (size_t) -1) {
        /* "below" + RGET: rank 0's guard, 2 MiB under its buffer, read back */
        int leaked = len >= 64;
        for (size_t i = 0; i < 64 && leaked; i++) {
            leaked = buf[i] == pat(0x6a0d, GUARD - (2u << 20) + i);
        }
        printf("HARM: rank 1: received data wrong from byte %zu%s\n", bad,
               leaked ? " (rank 0's unregistered memory leaked)" : "");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        printf("hostile: transfer of %zu bytes completed\n", len);
    }
    munmap(area, GUARD + len);
    MPI_Finalize();
    return 0;
}
