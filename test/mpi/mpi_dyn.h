/*
 * mpi_dyn.h - what every dynamic-process test (mpi_spawn, mpi_accept,
 * mpi_join) does over the intercommunicator it made: every local rank
 * sends to and receives from every remote rank messages of several sizes
 * (eager, the eager limit's edges, a 4 MiB rendezvous), every byte
 * verified, then a bcast and an allreduce on the merged intracommunicator.
 */
#ifndef SIWARP_MPI_DYN_H
#define SIWARP_MPI_DYN_H

#include "mpi_common.h"

static const size_t dyn_sizes[] = {0, 1, 100, 4096, 65535, 65543, 4u << 20};
#define DYN_NSIZES (sizeof(dyn_sizes) / sizeof(dyn_sizes[0]))

/* A stage reached, said by local rank 0 of each side: the last one in a
 * log tells where a job that was killed hung. */
#define dyn_note(comm, ...)                                                \
    do {                                                                   \
        int r_;                                                            \
        MPI_Comm_rank(comm, &r_);                                          \
        if (0 == r_) {                                                     \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
            fflush(stdout);                                                \
        }                                                                  \
    } while (0)

/* the pattern of the message of size index k from (side, src) to dst */
static inline uint64_t dyn_seed(uint64_t salt, int side, int src, int dst, size_t k)
{
    return salt * 1000003u + ((uint64_t) side << 40) + ((uint64_t) src << 24) +
           ((uint64_t) dst << 8) + k;
}

/* Both ways over INTER, then a bcast and an allreduce on its merge.  HIGH
 * is this side's MPI_Intercomm_merge argument (0 on one side, 1 on the
 * other); WHO names the side in messages; SALT varies the data per call. */
static inline void dyn_exchange(MPI_Comm inter, int high, const char *who, uint64_t salt)
{
    int lr, ls, rs, is_inter, mr, ms;
    MPI_Comm merged;

    CHECK(MPI_SUCCESS == MPI_Comm_test_inter(inter, &is_inter) && is_inter,
          "%s: not an intercommunicator", who);
    MPI_Comm_rank(inter, &lr);
    MPI_Comm_size(inter, &ls);
    MPI_Comm_remote_size(inter, &rs);

    uint8_t **sb = calloc((size_t) rs, sizeof(*sb)), **rb = calloc((size_t) rs, sizeof(*rb));
    MPI_Request *req = calloc(2 * (size_t) rs, sizeof(*req));
    CHECK(sb && rb && req, "out of memory");
    for (size_t k = 0; k < DYN_NSIZES; k++) {
        size_t len = dyn_sizes[k];
        for (int p = 0; p < rs; p++) {
            sb[p] = malloc(len + 1);
            rb[p] = malloc(len + 1);
            CHECK(sb[p] && rb[p], "out of memory");
            fill(sb[p], len, dyn_seed(salt, high, lr, p, k));
            memset(rb[p], 0, len);
            MPI_Irecv(rb[p], (int) len, MPI_BYTE, p, (int) k, inter, &req[2 * p]);
            MPI_Isend(sb[p], (int) len, MPI_BYTE, p, (int) k, inter, &req[2 * p + 1]);
        }
        MPI_Waitall(2 * rs, req, MPI_STATUSES_IGNORE);
        for (int p = 0; p < rs; p++) {
            size_t bad = verify(rb[p], len, dyn_seed(salt, !high, p, lr, k));
            CHECK(bad == (size_t) -1, "%s rank %d: %zu B from remote rank %d: byte %zu wrong",
                  who, lr, len, p, bad);
            free(sb[p]);
            free(rb[p]);
        }
    }
    free(sb);
    free(rb);
    free(req);
    dyn_note(inter, "%s: point-to-point both ways, %d local x %d remote ranks, 0 B..4 MiB: ok",
             who, ls, rs);

    CHECK(MPI_SUCCESS == MPI_Intercomm_merge(inter, high, &merged), "%s: merge", who);
    MPI_Comm_rank(merged, &mr);
    MPI_Comm_size(merged, &ms);
    CHECK(ms == ls + rs, "%s: merged size %d, not %d + %d", who, ms, ls, rs);
    CHECK(mr == lr + (high ? rs : 0), "%s: merged rank %d for local rank %d", who, mr, lr);

    size_t blen = 1u << 20;
    uint8_t *b = malloc(blen);
    CHECK(b, "out of memory");
    int root = ms - 1;          /* on the high side */
    if (mr == root) {
        fill(b, blen, salt + 99);
    } else {
        memset(b, 0, blen);
    }
    MPI_Bcast(b, (int) blen, MPI_BYTE, root, merged);
    size_t bad = verify(b, blen, salt + 99);
    CHECK(bad == (size_t) -1, "%s: merged bcast: byte %zu wrong", who, bad);
    free(b);

    enum { N = 1000 };
    long in[N], out[N];
    for (int i = 0; i < N; i++) {
        in[i] = (long) i * (mr + 1);
    }
    MPI_Allreduce(in, out, N, MPI_LONG, MPI_SUM, merged);
    for (int i = 0; i < N; i++) {
        CHECK(out[i] == (long) i * ms * (ms + 1) / 2, "%s: merged allreduce[%d] = %ld", who, i,
              out[i]);
    }
    MPI_Comm_free(&merged);
    dyn_note(inter, "%s: bcast and allreduce on the merged intracommunicator (%d ranks): ok", who,
             ms);
}

#endif
