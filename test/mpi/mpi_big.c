/*
 * mpi_big.c - ob1's RDMA path for very large messages (issue 3: up to at
 * least 1 GiB): rank 0 sends SIZE bytes to rank 1, which verifies every
 * byte, refills and sends them back; rank 0 verifies.  Each size runs twice
 * on the same buffer (the second time hits the registration cache), then
 * the buffer is freed.  One buffer per rank, so a 1 GiB run needs ~1 GiB per
 * rank.  Each rank reports its peak resident memory (getrusage), which the
 * test script bounds: registrations must not copy or pin extra memory.
 *
 *   mpi_big SIZE...      (suffixes k, m, g accepted)
 */
#include "mpi_common.h"
#include <sys/resource.h>

static size_t parse_size(const char *s)
{
    char *end;
    size_t v = strtoull(s, &end, 0);
    switch (*end) {
    case 'g': case 'G': v <<= 30; break;
    case 'm': case 'M': v <<= 20; break;
    case 'k': case 'K': v <<= 10; break;
    default: break;
    }
    return v;
}

/* word-wise pattern: the byte pattern of mpi_common.h is too slow at 1 GiB */
static void fill64(uint64_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
    }
}

static size_t verify64(const uint64_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != ((i + 1) * 0x9E3779B97F4A7C15ull ^ seed)) {
            return i;
        }
    }
    return (size_t) -1;
}

int main(int argc, char **argv)
{
    int rank, size;
    struct rusage ru;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(2 == size, "needs exactly 2 ranks");
    for (int a = 1; a < argc; a++) {
        size_t len = parse_size(argv[a]) & ~(size_t) 7, n = len / 8, bad;
        uint64_t *buf;
        double t0;

        CHECK(len > 0 && len <= INT32_MAX + (size_t) 1 - 8, "size %s", argv[a]);
        buf = malloc(len);
        CHECK(buf, "malloc %zu", len);
        for (int round = 0; round < 2; round++) {
            uint64_t seed = len + (uint64_t) round * 7;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            if (0 == rank) {
                fill64(buf, n, seed);
                MPI_Send(buf, (int) len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, (int) len, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                bad = verify64(buf, n, ~seed);
                CHECK(bad == (size_t) -1, "%zu B round %d: word %zu wrong on the way back",
                      len, round, bad);
            } else {
                memset(buf, 0, len);
                MPI_Recv(buf, (int) len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                bad = verify64(buf, n, seed);
                CHECK(bad == (size_t) -1, "%zu B round %d: word %zu wrong", len, round, bad);
                fill64(buf, n, ~seed);
                MPI_Send(buf, (int) len, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
            }
            if (0 == rank) {
                printf("big: %zu bytes round %d ok (%.2f s incl. fill/verify)\n", len, round,
                       MPI_Wtime() - t0);
                fflush(stdout);
            }
        }
        free(buf);
    }
    getrusage(RUSAGE_SELF, &ru);
    printf("big: rank %d maxrss %ld MiB\n", rank, ru.ru_maxrss / 1024);
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        printf("big: ok\n");
    }
    MPI_Finalize();
    return 0;
}
