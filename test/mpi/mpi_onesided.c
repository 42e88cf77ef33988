/*
 * mpi_onesided.c - MPI_Put / MPI_Get / MPI_Accumulate with fence, and
 * passive-target MPI_Win_lock / unlock, at sizes from 8 B to 4 MiB;
 * every rank targets every other rank.
 */
#include "mpi_common.h"

int main(int argc, char **argv)
{
    int rank, size;
    const size_t win_bytes = 4u << 20;
    uint8_t *base;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win_allocate((MPI_Aint) win_bytes * size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                     &win);

    static const size_t lens[] = {8, 1000, 65536, 1u << 20, 4u << 20};
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        size_t len = lens[k];
        uint8_t *src = malloc(len), *dst = malloc(len * (size_t) size);

        /* fence epoch: rank r writes its slot at every target */
        memset(base, 0, win_bytes * size);
        fill(src, len, (uint64_t) (rank * 31 + k));
        MPI_Win_fence(0, win);
        for (int t = 0; t < size; t++) {
            MPI_Put(src, (int) len, MPI_BYTE, t, (MPI_Aint) win_bytes * rank, (int) len,
                    MPI_BYTE, win);
        }
        MPI_Win_fence(0, win);
        for (int o = 0; o < size; o++) {
            CHECK(verify(base + win_bytes * o, len, (uint64_t) (o * 31 + k)) == (size_t) -1,
                  "fence put %zu bytes from %d", len, o);
        }
        /* get everybody's slot 'rank' back */
        for (int t = 0; t < size; t++) {
            MPI_Get(dst + len * t, (int) len, MPI_BYTE, t, (MPI_Aint) win_bytes * rank,
                    (int) len, MPI_BYTE, win);
        }
        MPI_Win_fence(0, win);
        for (int t = 0; t < size; t++) {
            CHECK(verify(dst + len * t, len, (uint64_t) (rank * 31 + k)) == (size_t) -1,
                  "fence get %zu bytes from %d", len, t);
        }
        MPI_Win_fence(0, win);

        /* passive target: exclusive lock, put, unlock; then shared lock, get */
        int t = (rank + 1) % size;
        fill(src, len, (uint64_t) (rank * 17 + k + 1000));
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win);
        MPI_Put(src, (int) len, MPI_BYTE, t, 0 + (MPI_Aint) win_bytes * rank, (int) len,
                MPI_BYTE, win);
        MPI_Win_unlock(t, win);
        MPI_Barrier(MPI_COMM_WORLD);
        int from = (rank + size - 1) % size;
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
        CHECK(verify(base + win_bytes * from, len, (uint64_t) (from * 17 + k + 1000)) ==
              (size_t) -1, "lock put %zu bytes from %d", len, from);
        MPI_Win_unlock(rank, win);
        MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
        MPI_Get(dst, (int) len, MPI_BYTE, t, (MPI_Aint) win_bytes * rank, (int) len, MPI_BYTE,
                win);
        MPI_Win_unlock(t, win);
        CHECK(verify(dst, len, (uint64_t) (rank * 17 + k + 1000)) == (size_t) -1,
              "lock get %zu bytes", len);
        MPI_Barrier(MPI_COMM_WORLD);
        free(src);
        free(dst);
    }

    /* accumulate: everyone adds rank+1 into rank 0's counters */
    {
        long *acc = (long *) base, one[64];
        MPI_Win_fence(0, win);
        if (0 == rank) {
            memset(acc, 0, sizeof(one));
        }
        MPI_Win_fence(0, win);
        for (int i = 0; i < 64; i++) {
            one[i] = rank + 1 + i;
        }
        MPI_Accumulate(one, 64, MPI_LONG, 0, 0, 64, MPI_LONG, MPI_SUM, win);
        MPI_Win_fence(0, win);
        if (0 == rank) {
            for (int i = 0; i < 64; i++) {
                long want = (long) size * (size + 1) / 2 + (long) i * size;
                CHECK(acc[i] == want, "accumulate[%d] = %ld want %ld", i, acc[i], want);
            }
        }
        MPI_Win_fence(0, win);
    }
    MPI_Win_free(&win);
    if (0 == rank) {
        printf("one-sided: ok on %d ranks\n", size);
    }
    MPI_Finalize();
    return 0;
}
