/*
 * mpi_progress_rule.c - a message whose send completed reaches its receiver
 * while the sender stays out of MPI (MPI's progress rule).
 *
 * Pairs of ranks (0,1), (2,3), ...  Each case ends with one rank waiting
 * OUTSIDE MPI (polling a flag file, never calling MPI) for its partner to
 * say, through another flag file, that it got what the waiting rank's
 * completed operations owed it.  A transport that keeps a "sent" message,
 * or the FIN of a finished receive, in user space until the next progress
 * call makes the partner wait forever: the waiting rank gives up after
 * FLAG_WAIT_S and the test fails naming the case.  MPI_Comm_spawn's roots
 * block in PMIx_Connect exactly so while their ranks wait in a bcast.
 *
 *   a: 8 small blocking MPI_Send, then wait outside MPI
 *   b: 8 small MPI_Isend + MPI_Waitall, then wait outside MPI
 *   c: the receiver of two 1 MiB messages (rendezvous: RDMA and FINs)
 *      leaves MPI_Waitall and waits outside MPI for the sender's Waitall
 *      (three rounds)
 *
 * Usage: mpi_progress_rule DIR (a fresh directory for the flag files)
 */
#include "mpi_common.h"

#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#define FLAG_WAIT_S 15
#define SMALL       8
#define BIG         (1 << 20)

static const char *dir;
static int rank, peer;

static void flag_path(char *buf, size_t len, const char *name, int r)
{
    snprintf(buf, len, "%s/%s.%d", dir, name, r);
}

static void flag_set(const char *name)
{
    char path[512];
    int fd;

    flag_path(path, sizeof(path), name, rank);
    fd = open(path, O_CREAT | O_WRONLY, 0600);
    CHECK(fd >= 0, "creating %s: %s", path, strerror(errno));
    close(fd);
}

/* Poll for the peer's flag without calling MPI. */
static void flag_wait(const char *name, const char *what)
{
    struct timespec ms = { 0, 1000000 }, t0, t;
    char path[512];

    flag_path(path, sizeof(path), name, peer);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (0 != access(path, F_OK)) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        CHECK(t.tv_sec - t0.tv_sec < FLAG_WAIT_S,
              "case %s: rank %d never got %s while this rank stayed out of MPI "
              "for %d s (a completed send held back in user space?)",
              name, peer, what, FLAG_WAIT_S);
        nanosleep(&ms, NULL);
    }
}

/* The partner's side of cases a and b: the SMALL messages, in order,
 * then the flag the sender waits for outside MPI. */
static void recv_small(const char *name, int tag, uint64_t base)
{
    for (int i = 0; i < SMALL; i++) {
        uint64_t v;
        MPI_Recv(&v, 1, MPI_UINT64_T, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(v == base + (uint64_t) i, "case %s: message %d is %#llx", name, i,
              (unsigned long long) v);
    }
    flag_set(name);
}

int main(int argc, char **argv)
{
    int size, first, hello;
    uint64_t small[SMALL];
    MPI_Request req[SMALL];
    uint8_t *big[2];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc > 1, "usage: mpi_progress_rule DIR");
    CHECK(0 == size % 2, "needs an even number of ranks, got %d", size);
    dir = argv[1];
    peer = rank ^ 1;
    first = 0 == rank % 2;
    big[0] = malloc(BIG);
    big[1] = malloc(BIG);
    CHECK(big[0] && big[1], "malloc");
    /* connect the pair first, so that no case measures connection set-up */
    MPI_Sendrecv(&rank, 1, MPI_INT, peer, 0, &hello, 1, MPI_INT, peer, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);

    /* a: blocking sends, all complete, then out of MPI */
    if (first) {
        for (int i = 0; i < SMALL; i++) {
            small[i] = 0xa000u + (uint64_t) i;
            MPI_Send(&small[i], 1, MPI_UINT64_T, peer, 1, MPI_COMM_WORLD);
        }
        flag_wait("a", "the 8 messages of MPI_Send");
    } else {
        recv_small("a", 1, 0xa000u);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* b: nonblocking sends completed by MPI_Waitall, then out of MPI */
    if (first) {
        for (int i = 0; i < SMALL; i++) {
            small[i] = 0xb000u + (uint64_t) i;
            MPI_Isend(&small[i], 1, MPI_UINT64_T, peer, 2, MPI_COMM_WORLD, &req[i]);
        }
        MPI_Waitall(SMALL, req, MPI_STATUSES_IGNORE);
        flag_wait("b", "the 8 messages of MPI_Isend");
    } else {
        recv_small("b", 2, 0xb000u);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* c: the receiver leaves MPI as soon as its receives are complete; the
     * sender's sends complete only when the receiver's FINs arrive.  Whether
     * both Reads end in one progress call (the second FIN then posted
     * behind the first) varies: three rounds. */
    for (int round = 0; round < 3; round++) {
    char name[8];
    snprintf(name, sizeof(name), "c%d", round);
    if (first) {
        fill(big[0], BIG, 0xc0);
        fill(big[1], BIG, 0xc1);
        MPI_Isend(big[0], BIG, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(big[1], BIG, MPI_BYTE, peer, 4, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        flag_set(name);
    } else {
        MPI_Irecv(big[0], BIG, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(big[1], BIG, MPI_BYTE, peer, 4, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        CHECK(verify(big[0], BIG, 0xc0) == (size_t) -1, "case c: first message corrupt");
        CHECK(verify(big[1], BIG, 0xc1) == (size_t) -1, "case c: second message corrupt");
        flag_wait(name, "the completions of its two 1 MiB sends");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    }

    free(big[0]);
    free(big[1]);
    if (0 == rank) {
        printf("progress rule: ok (%d ranks)\n", size);
    }
    MPI_Finalize();
    return 0;
}
