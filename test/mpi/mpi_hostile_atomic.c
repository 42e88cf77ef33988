/*
 * mpi_hostile_atomic.c - a hostile peer's atomics must not touch memory we
 * did not register for them.  Rank 0 runs with SIWARP_BTL_TEST_HOSTILE_ATOMIC
 * =stag|below|misalign|wrap (the BTL's test hook: it corrupts the target of
 * every atomic it sends) and updates rank 1's window with MPI_Fetch_and_op
 * and MPI_Compare_and_swap under osc/rdma.
 *
 * Rank 1's 4 KiB window sits 4 MiB above a guard area it never registers.
 * Expected with the target's checks: rank 1 refuses with the "remote access
 * refused" message naming rank 0, and the job aborts.  Without them this
 * program prints "HARM:" (guard or window changed) or the updates silently
 * "succeed".
 */
#include "mpi_common.h"
#include <sys/mman.h>

#define GUARD (4u << 20)
#define WIN 4096

int main(int argc, char **argv)
{
    int rank, size;
    uint8_t *area, *buf;
    int64_t one = 1, old = 0, cmp = 0, val = 7;
    MPI_Win win;
    size_t bad;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(2 == size, "needs exactly 2 ranks");
    area = mmap(NULL, GUARD + WIN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(MAP_FAILED != area, "mmap");
    buf = area + GUARD;
    fill(area, GUARD + WIN, 0x6a0d + (uint64_t) rank);
    MPI_Win_create(buf, WIN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    if (0 == rank) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 1, 64, MPI_SUM, win);
        MPI_Compare_and_swap(&val, &cmp, &old, MPI_INT64_T, 1, 128, win);
        MPI_Win_flush(1, win);
        MPI_Win_unlock(1, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (1 == rank) {
        bad = verify(area, GUARD, 0x6a0d + 1);
        if ((size_t) -1 != bad) {
            printf("HARM: guard byte %zu below the window changed\n", bad);
        }
        bad = verify(area, GUARD + WIN, 0x6a0d + 1);
        if ((size_t) -1 != bad) {
            printf("HARM: window byte %zu changed by a forged atomic\n", bad - GUARD);
        }
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
