/*
 * mpi_coll.c - collectives over the BTL: bcast (small and 8 MiB),
 * allreduce (sum of ints and doubles, 1 to 1M elements), alltoall and
 * alltoallv with distinct data per pair.
 */
#include "mpi_common.h"

int main(int argc, char **argv)
{
    int rank, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    static const size_t blen[] = {1, 1000, 65537, 8u << 20};
    for (size_t k = 0; k < sizeof(blen) / sizeof(blen[0]); k++) {
        uint8_t *b = malloc(blen[k]);
        int root = (int) (k % (size_t) size);
        if (rank == root) {
            fill(b, blen[k], 77 + k);
        } else {
            memset(b, 0, blen[k]);
        }
        MPI_Bcast(b, (int) blen[k], MPI_BYTE, root, MPI_COMM_WORLD);
        CHECK(verify(b, blen[k], 77 + k) == (size_t) -1, "bcast %zu bytes", blen[k]);
        free(b);
    }

    static const int alen[] = {1, 7, 1000, 100000, 1 << 20};
    for (size_t k = 0; k < sizeof(alen) / sizeof(alen[0]); k++) {
        int n = alen[k];
        long *in = malloc(sizeof(long) * (size_t) n), *out = malloc(sizeof(long) * (size_t) n);
        double *din = malloc(sizeof(double) * (size_t) n);
        double *dout = malloc(sizeof(double) * (size_t) n);
        for (int i = 0; i < n; i++) {
            in[i] = (long) i * (rank + 1);
            din[i] = 0.5 * (rank + 1);
        }
        MPI_Allreduce(in, out, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(din, dout, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        long f = (long) size * (size + 1) / 2;
        for (int i = 0; i < n; i++) {
            CHECK(out[i] == (long) i * f, "allreduce[%d] = %ld", i, out[i]);
            CHECK(dout[i] == 0.5 * (double) f, "allreduce double[%d]", i);
        }
        free(in);
        free(out);
        free(din);
        free(dout);
    }

    static const int tlen[] = {1, 100, 5000, 300000};
    for (size_t k = 0; k < sizeof(tlen) / sizeof(tlen[0]); k++) {
        size_t n = (size_t) tlen[k];
        uint8_t *s = malloc(n * (size_t) size), *r = malloc(n * (size_t) size);
        for (int p = 0; p < size; p++) {
            fill(s + n * (size_t) p, n, (uint64_t) (rank * 64 + p) + k * 4096);
        }
        MPI_Alltoall(s, (int) n, MPI_BYTE, r, (int) n, MPI_BYTE, MPI_COMM_WORLD);
        for (int p = 0; p < size; p++) {
            CHECK(verify(r + n * (size_t) p, n, (uint64_t) (p * 64 + rank) + k * 4096) ==
                  (size_t) -1, "alltoall %zu from %d", n, p);
        }
        free(s);
        free(r);
    }

    /* alltoallv: rank i sends (i + p + 1) * 1000 bytes to p */
    {
        int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
        int *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
        int st = 0, rt = 0;
        for (int p = 0; p < size; p++) {
            sc[p] = (rank + p + 1) * 1000;
            sd[p] = st;
            st += sc[p];
            rc[p] = (p + rank + 1) * 1000;
            rd[p] = rt;
            rt += rc[p];
        }
        uint8_t *s = malloc((size_t) st), *r = malloc((size_t) rt);
        for (int p = 0; p < size; p++) {
            fill(s + sd[p], (size_t) sc[p], (uint64_t) (rank * 64 + p) + 99999);
        }
        MPI_Alltoallv(s, sc, sd, MPI_BYTE, r, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
        for (int p = 0; p < size; p++) {
            CHECK(verify(r + rd[p], (size_t) rc[p], (uint64_t) (p * 64 + rank) + 99999) ==
                  (size_t) -1, "alltoallv from %d", p);
        }
        free(s);
        free(r);
        free(sc);
        free(sd);
        free(rc);
        free(rd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        printf("collectives: ok on %d ranks\n", size);
    }
    MPI_Finalize();
    return 0;
}
