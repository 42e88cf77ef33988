/*
 * mpi_threads.c - MPI_THREAD_MULTIPLE: NT threads per rank, each a
 * ping-pong of its own on its own communicator, sizes from 1 B to 1 MiB
 * (eager, and the RDMA rendezvous), every byte checked.  The BTL and
 * libsiwarp must take their locks: two threads post, progress and
 * complete on one context at once.
 *
 * mpi_threads coll NT ROUNDS: any number of ranks; each thread runs
 * ROUNDS allreduces of 1 to 70,000 doubles on its own communicator,
 * every element checked.
 *
 * Usage: mpi_threads [coll] [NT [ROUNDS]]   (default 4 threads, 20 rounds)
 */
#include "mpi_common.h"

#include <pthread.h>

struct job {
    MPI_Comm comm;
    int rank, size, id, rounds, bad;
};

/* Allreduce of n doubles, rank r contributing r + i + id at element i. */
static void *run_coll(void *arg)
{
    struct job *j = arg;

    for (int round = 0; round < j->rounds && !j->bad; round++) {
        int n = 1 + (round * 7919 + j->id * 131) % 70000;
        double *s = malloc((size_t) n * sizeof(double)), *o = malloc((size_t) n * sizeof(double));
        if (!s || !o) {
            j->bad = 1;
        }
        for (int i = 0; i < n && !j->bad; i++) {
            s[i] = j->rank + i + j->id;
        }
        if (!j->bad) {
            MPI_Allreduce(s, o, n, MPI_DOUBLE, MPI_SUM, j->comm);
        }
        for (int i = 0; i < n && !j->bad; i++) {
            double want = (double) j->size * (i + j->id) + (double) j->size * (j->size - 1) / 2;
            j->bad = o[i] != want;
        }
        free(s);
        free(o);
    }
    return NULL;
}

static void *run(void *arg)
{
    struct job *j = arg;
    int peer = 1 - j->rank;
    size_t max = 1u << 20;
    uint8_t *s = malloc(max), *r = malloc(max);

    if (!s || !r) {
        j->bad = 1;
        return NULL;
    }
    for (int round = 0; round < j->rounds && !j->bad; round++) {
        for (size_t n = 1; n <= max && !j->bad; n *= 4) {
            uint64_t seed = ((uint64_t) j->id << 40) ^ ((uint64_t) round << 20) ^ n;
            if (0 == j->rank) {
                fill(s, n, seed);
                MPI_Send(s, (int) n, MPI_BYTE, peer, j->id, j->comm);
                MPI_Recv(r, (int) n, MPI_BYTE, peer, j->id, j->comm, MPI_STATUS_IGNORE);
                j->bad = memcmp(s, r, n) != 0;
            } else {
                MPI_Recv(r, (int) n, MPI_BYTE, peer, j->id, j->comm, MPI_STATUS_IGNORE);
                fill(s, n, seed);
                j->bad = memcmp(s, r, n) != 0;
                MPI_Send(r, (int) n, MPI_BYTE, peer, j->id, j->comm);
            }
        }
    }
    free(s);
    free(r);
    return NULL;
}

int main(int argc, char **argv)
{
    int coll = argc > 1 && !strcmp(argv[1], "coll");
    int provided, rank, size, nt = argc > 1 + coll ? atoi(argv[1 + coll]) : 4;
    int rounds = argc > 2 + coll ? atoi(argv[2 + coll]) : 20;
    struct job jobs[16];
    pthread_t t[16];

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(MPI_THREAD_MULTIPLE == provided, "MPI_THREAD_MULTIPLE not provided (%d)", provided);
    CHECK(coll || 2 == size, "needs exactly 2 ranks (or: coll)");
    CHECK(nt >= 1 && nt <= 16, "1 to 16 threads, not %d", nt);
    for (int i = 0; i < nt; i++) {
        jobs[i].rank = rank;
        jobs[i].size = size;
        jobs[i].id = i;
        jobs[i].rounds = rounds;
        jobs[i].bad = 0;
        MPI_Comm_dup(MPI_COMM_WORLD, &jobs[i].comm);
    }
    for (int i = 0; i < nt; i++) {
        CHECK(0 == pthread_create(&t[i], NULL, coll ? run_coll : run, &jobs[i]), "pthread_create");
    }
    for (int i = 0; i < nt; i++) {
        pthread_join(t[i], NULL);
        CHECK(!jobs[i].bad, "thread %d: data differ", i);
        MPI_Comm_free(&jobs[i].comm);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        printf("threads: ok, %d threads x %d rounds, %s\n", nt, rounds,
               coll ? "allreduce of 1-70,000 doubles" : "ping-pong 1 B-1 MiB");
    }
    MPI_Finalize();
    return 0;
}
