/*
 * mpi_anysrc.c - MPI_ANY_SOURCE / MPI_ANY_TAG matching, MPI_Probe /
 * MPI_Iprobe, and MPI_Cancel of a receive that never matches.
 */
#include "mpi_common.h"

int main(int argc, char **argv)
{
    int rank, size;
    const int per = 50;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs 2 ranks");
    MPI_Comm other;     /* keeps the tag-999 messages away from the probe loop */
    MPI_Comm_dup(MPI_COMM_WORLD, &other);

    if (0 == rank) {
        int total = per * (size - 1);
        int *seen = calloc((size_t) size, sizeof(int));
        for (int i = 0; i < total; i++) {
            MPI_Status st;
            int len;
            uint8_t *buf;
            MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &len);
            buf = malloc((size_t) len + 1);
            MPI_Recv(buf, len, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            /* tag encodes the per-sender sequence number: order per pair holds */
            CHECK(st.MPI_TAG == seen[st.MPI_SOURCE], "from %d tag %d expected %d",
                  st.MPI_SOURCE, st.MPI_TAG, seen[st.MPI_SOURCE]);
            CHECK(len == 17 * st.MPI_TAG + st.MPI_SOURCE, "len %d", len);
            CHECK(verify(buf, (size_t) len, (uint64_t) (st.MPI_SOURCE * 1000 + st.MPI_TAG))
                  == (size_t) -1, "payload from %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
            seen[st.MPI_SOURCE]++;
            free(buf);
        }
        /* any-source with a wildcard buffer big enough */
        for (int i = 1; i < size; i++) {
            int v = -1;
            MPI_Status st;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 999, other, &st);
            CHECK(v == st.MPI_SOURCE * 3, "value %d from %d", v, st.MPI_SOURCE);
        }
        free(seen);
    } else {
        for (int t = 0; t < per; t++) {
            size_t len = (size_t) (17 * t + rank);
            uint8_t *buf = malloc(len + 1);
            fill(buf, len, (uint64_t) (rank * 1000 + t));
            MPI_Send(buf, (int) len, MPI_BYTE, 0, t, MPI_COMM_WORLD);
            free(buf);
        }
        int v = rank * 3;
        MPI_Send(&v, 1, MPI_INT, 0, 999, other);
    }

    /* cancel: a receive nobody will ever match */
    {
        MPI_Request req;
        MPI_Status st;
        int cancelled = 0, flag = 0;
        char dummy[8];
        MPI_Irecv(dummy, 8, MPI_CHAR, MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &req);
        MPI_Cancel(&req);
        MPI_Wait(&req, &st);
        MPI_Test_cancelled(&st, &cancelled);
        CHECK(cancelled, "receive not cancelled");
        /* iprobe finds nothing with that tag */
        MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        CHECK(!flag, "iprobe found a message that was never sent");
    }
    MPI_Comm_free(&other);
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        printf("anysrc/probe/cancel: ok on %d ranks\n", size);
    }
    MPI_Finalize();
    return 0;
}
