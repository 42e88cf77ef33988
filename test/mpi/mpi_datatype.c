/*
 * mpi_datatype.c - derived datatypes: strided vectors (eager and
 * rendezvous sizes), a struct with holes, and a vector received as
 * contiguous bytes.
 */
#include "mpi_common.h"

static void vector_case(int rank, int peer, int count, int blocklen, int stride)
{
    MPI_Datatype vec;
    size_t span = (size_t) count * (size_t) stride, packed = (size_t) count * blocklen;
    double *s = malloc(span * sizeof(double)), *r = malloc(span * sizeof(double));
    double *c = malloc(packed * sizeof(double));

    for (size_t i = 0; i < span; i++) {
        s[i] = (double) (rank * 1000003 + (long) i);
        r[i] = -1.0;
    }
    MPI_Type_vector(count, blocklen, stride, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    MPI_Sendrecv(s, 1, vec, peer, 1, r, 1, vec, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int b = 0; b < count; b++) {
        for (int k = 0; k < stride; k++) {
            size_t i = (size_t) b * stride + k;
            double want = k < blocklen ? (double) (peer * 1000003 + (long) i) : -1.0;
            CHECK(r[i] == want, "vector %dx%d/%d: element %zu = %g want %g", count, blocklen,
                  stride, i, r[i], want);
        }
    }
    /* strided send, contiguous receive */
    MPI_Sendrecv(s, 1, vec, peer, 2, c, (int) packed, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    for (int b = 0; b < count; b++) {
        for (int k = 0; k < blocklen; k++) {
            size_t i = (size_t) b * stride + k;
            CHECK(c[(size_t) b * blocklen + k] == (double) (peer * 1000003 + (long) i),
                  "packed element %d/%d", b, k);
        }
    }
    MPI_Type_free(&vec);
    free(s);
    free(r);
    free(c);
}

struct rec {
    char c;
    double d;
    int i[3];
};

int main(int argc, char **argv)
{
    int rank, size, peer;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = rank ^ 1;
    if (peer < size) {
        vector_case(rank, peer, 10, 1, 2);
        vector_case(rank, peer, 1000, 3, 7);        /* ~24 KB: eager */
        vector_case(rank, peer, 100000, 5, 9);      /* ~4 MB: rendezvous, packed */
        vector_case(rank, peer, 3, 200000, 200001); /* big blocks */

        MPI_Datatype st;
        int bl[3] = {1, 1, 3};
        MPI_Aint disp[3] = {offsetof(struct rec, c), offsetof(struct rec, d),
                            offsetof(struct rec, i)};
        MPI_Datatype types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
        const int n = 5000;
        struct rec *a = calloc(n, sizeof(*a)), *b = calloc(n, sizeof(*b));
        MPI_Type_create_struct(3, bl, disp, types, &st);
        MPI_Type_commit(&st);
        for (int k = 0; k < n; k++) {
            a[k].c = (char) (k + rank);
            a[k].d = k * 0.5 + rank;
            a[k].i[0] = k;
            a[k].i[1] = -k;
            a[k].i[2] = rank;
        }
        MPI_Sendrecv(a, n, st, peer, 3, b, n, st, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int k = 0; k < n; k++) {
            CHECK(b[k].c == (char) (k + peer) && b[k].d == k * 0.5 + peer && b[k].i[0] == k &&
                  b[k].i[1] == -k && b[k].i[2] == peer, "struct element %d", k);
        }
        MPI_Type_free(&st);
        free(a);
        free(b);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        printf("datatype: ok\n");
    }
    MPI_Finalize();
    return 0;
}
