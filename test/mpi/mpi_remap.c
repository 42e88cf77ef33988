/*
 * mpi_remap.c - registration-cache correctness: rendezvous transfers from
 * and into buffers that are freed, munmapped and re-mapped (often at the
 * same address) with new contents between transfers.  A stale cached
 * registration would send old data or place into a recycled region.
 */
#include "mpi_common.h"
#include <sys/mman.h>

#define LEN (4u << 20)

static void xfer(int rank, int peer, uint8_t *buf, uint64_t seed, const char *what, int it)
{
    if (rank < peer) {
        fill(buf, LEN, seed);
        MPI_Send(buf, LEN, MPI_BYTE, peer, it, MPI_COMM_WORLD);
        MPI_Recv(buf, LEN, MPI_BYTE, peer, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(verify(buf, LEN, seed + 1) == (size_t) -1, "%s iteration %d (echo)", what, it);
    } else {
        memset(buf, 0x5A, LEN);
        MPI_Recv(buf, LEN, MPI_BYTE, peer, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(verify(buf, LEN, seed) == (size_t) -1, "%s iteration %d", what, it);
        fill(buf, LEN, seed + 1);
        MPI_Send(buf, LEN, MPI_BYTE, peer, it, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    int rank, size, peer;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = rank ^ 1;
    if (peer < size) {
        for (int it = 0; it < 20; it++) {
            uint8_t *b = malloc(LEN);
            CHECK(b, "malloc");
            xfer(rank, peer, b, 1000 + (uint64_t) it * 2, "malloc/free", it);
            free(b);
        }
        for (int it = 0; it < 20; it++) {
            uint8_t *b = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                              -1, 0);
            CHECK(b != MAP_FAILED, "mmap");
            xfer(rank, peer, b, 5000 + (uint64_t) it * 2, "mmap/munmap", it);
            munmap(b, LEN);
        }
        /* same address, new pages: map, transfer, remap with MAP_FIXED */
        uint8_t *b = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(b != MAP_FAILED, "mmap");
        for (int it = 0; it < 10; it++) {
            xfer(rank, peer, b, 9000 + (uint64_t) it * 2, "MAP_FIXED remap", it);
            void *again = mmap(b, LEN, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
            CHECK(again == b, "remap at the same address");
        }
        munmap(b, LEN);
        /* realloc growing and shrinking */
        uint8_t *r = NULL;
        for (int it = 0; it < 10; it++) {
            r = realloc(r, LEN + (size_t) (it % 3) * 4096 * 1024);
            CHECK(r, "realloc");
            xfer(rank, peer, r, 13000 + (uint64_t) it * 2, "realloc", it);
        }
        free(r);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        printf("remap: ok\n");
    }
    MPI_Finalize();
    return 0;
}
