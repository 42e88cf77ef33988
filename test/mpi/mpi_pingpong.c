/*
 * mpi_pingpong.c - blocking and nonblocking ping-pong and exchange between
 * rank pairs (0<->1, 2<->3, ...) from 0 B up to MAX (argv[1], default 64 MiB),
 * powers of two and odd sizes, buffers at several misalignments; every byte
 * verified.
 */
#include "mpi_common.h"

static void one(int rank, int peer, size_t len, size_t off, int nonblocking, uint64_t seed)
{
    uint8_t *sraw = malloc(len + 64), *rraw = malloc(len + 64);
    uint8_t *s = sraw + off, *r = rraw + (off * 3) % 61;
    MPI_Request req[2];
    size_t bad;
    int cnt;
    MPI_Status st;

    CHECK(sraw && rraw, "malloc %zu", len);
    fill(s, len, seed + (uint64_t) rank);
    memset(r, 0xEE, len);
    if (nonblocking) {
        /* exchange: both send and receive at once */
        MPI_Irecv(r, (int) len, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(s, (int) len, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    } else if (rank < peer) {
        MPI_Send(s, (int) len, MPI_BYTE, peer, 5, MPI_COMM_WORLD);
        MPI_Recv(r, (int) len, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &st);
    } else {
        MPI_Recv(r, (int) len, MPI_BYTE, peer, 5, MPI_COMM_WORLD, &st);
        MPI_Send(s, (int) len, MPI_BYTE, peer, 5, MPI_COMM_WORLD);
    }
    if (!nonblocking) {
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        CHECK((size_t) cnt == len, "count %d != %zu", cnt, len);
    }
    bad = verify(r, len, seed + (uint64_t) peer);
    CHECK(bad == (size_t) -1, "%s len %zu off %zu: byte %zu wrong",
          nonblocking ? "exchange" : "ping-pong", len, off, bad);
    free(sraw);
    free(rraw);
}

int main(int argc, char **argv)
{
    int rank, size, peer;
    size_t max = 64u << 20;
    static const size_t odd[] = {1, 3, 7, 13, 63, 65, 127, 1000, 4095, 4097, 12345,
                                 32767, 32769, 65535, 65537, 100001, 1048577, 3333333};
    uint64_t seed = 1;

    MPI_Init(&argc, &argv);
    if (argc > 1) {
        max = strtoull(argv[1], NULL, 0);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = rank ^ 1;
    if (peer >= size) {
        peer = MPI_PROC_NULL;
    }
    if (peer != MPI_PROC_NULL) {
        for (int nb = 0; nb < 2; nb++) {
            one(rank, peer, 0, 0, nb, seed++);
            for (size_t len = 1; len <= max; len *= 2) {
                one(rank, peer, len, 0, nb, seed++);
                one(rank, peer, len, (len % 7) + 1, nb, seed++);
            }
            for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
                if (odd[i] <= max) {
                    one(rank, peer, odd[i], i % 8, nb, seed++);
                }
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        printf("pingpong: ok up to %zu bytes on %d ranks\n", max, size);
    }
    MPI_Finalize();
    return 0;
}
