/*
 * mpi_stranger.c - the job a stranger knocks at (run-mpi-tests.sh: hostile).
 *
 * Usage: mpi_stranger READY_FIFO DONE_FIFO.  Every rank connects to every
 * other (an exchange), so that each request a rank sends is in the file
 * named by SIWARP_BTL_TEST_RECORD.  Rank 0 then writes "ready" to
 * READY_FIFO, and every rank keeps progressing (its listeners with it)
 * while test/hostile/siwarp_stranger plays those requests again and
 * forges others; once "done" comes through DONE_FIFO, rank 0 lets the
 * others go, and a second exchange shows the job unharmed.  A message
 * reaching rank 0 meanwhile fails the run.
 */
#include "mpi_common.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#define TAG_X  7
#define TAG_GO 8
#define LEN    4096

static void exchange(int rank, int size, uint64_t round)
{
    uint8_t *out = malloc(LEN), *in = malloc((size_t) size * LEN);
    MPI_Request *rq = malloc(2 * (size_t) size * sizeof(*rq));
    int n = 0;

    CHECK(out && in && rq, "out of memory");
    fill(out, LEN, round * 1000 + (uint64_t) rank);
    for (int p = 0; p < size; p++) {
        if (p != rank) {
            MPI_Irecv(in + (size_t) p * LEN, LEN, MPI_BYTE, p, TAG_X, MPI_COMM_WORLD, &rq[n++]);
            MPI_Isend(out, LEN, MPI_BYTE, p, TAG_X, MPI_COMM_WORLD, &rq[n++]);
        }
    }
    MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
    for (int p = 0; p < size; p++) {
        if (p != rank) {
            size_t bad = verify(in + (size_t) p * LEN, LEN, round * 1000 + (uint64_t) p);
            CHECK(bad == (size_t) -1, "round %llu: data from rank %d wrong at byte %zu",
                  (unsigned long long) round, p, bad);
        }
    }
    free(out);
    free(in);
    free(rq);
}

int main(int argc, char **argv)
{
    int rank, size, flag = 0;
    MPI_Status st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc == 3, "usage: mpi_stranger READY_FIFO DONE_FIFO");
    exchange(rank, size, 1);
    MPI_Barrier(MPI_COMM_WORLD);

    if (0 == rank) {
        /* open DONE first (non-blocking: no writer yet), then say ready */
        int done = open(argv[2], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        int ready = open(argv[1], O_WRONLY | O_CLOEXEC);
        char buf[16];
        ssize_t got = 0;

        CHECK(done >= 0 && ready >= 0, "fifos: %s", strerror(errno));
        CHECK(write(ready, "ready\n", 6) == 6, "write ready: %s", strerror(errno));
        close(ready);
        while (got <= 0) {
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
            CHECK(!flag, "an unexpected message from rank %d, tag %d", st.MPI_SOURCE, st.MPI_TAG);
            got = read(done, buf, sizeof(buf));
            CHECK(got >= 0 || EAGAIN == errno, "read done: %s", strerror(errno));
        }
        close(done);
        for (int p = 1; p < size; p++) {
            MPI_Send(NULL, 0, MPI_BYTE, p, TAG_GO, MPI_COMM_WORLD);
        }
    } else {
        /* progressing all the while (a rank that got its go may start the
         * second exchange before this one hears its own) */
        MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    exchange(rank, size, 2);
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        printf("stranger: the job ran on, %d ranks\n", size);
    }
    MPI_Finalize();
    return 0;
}
