/*
 * mpi_regcount.c - the BTL's registration counters, read as MPI_T
 * performance variables: btl_siwarp_registered_bytes, _registrations and
 * _registered_bytes_peak must exist, move with a rendezvous transfer (ob1
 * registers both ends of an RDMA Read) and come back down when the buffer
 * is freed (the registration cache drops registrations of memory given
 * back to the system).  2 ranks.
 *
 *   mpi_regcount [ROUNDS]      default 8 rounds, each with a fresh buffer
 *
 * Round r moves 4 MiB + r * 64 KiB: each buffer is a new mapping too large
 * for the hole the last one left, so it lands at a new address, and a
 * freed buffer whose registration stayed would add to the count.
 */
#include "mpi_common.h"

#define MIB (1024ul * 1024ul)

static MPI_T_pvar_session session;
static MPI_T_pvar_handle h_bytes, h_count, h_peak;

static void open_pvar(const char *name, int var_class, MPI_T_pvar_handle *h)
{
    pvar_open(session, name, var_class, h);
}

static unsigned long rd(MPI_T_pvar_handle h)
{
    return pvar_read(session, h);
}

/* one message of len bytes from rank 0 to rank 1 out of a fresh buffer,
 * verified, and the buffer freed */
static void transfer(size_t len, uint64_t seed)
{
    int rank;
    uint8_t *buf = malloc(len);

    CHECK(buf, "out of memory");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (0 == rank) {
        fill(buf, len, seed);
        MPI_Send(buf, (int) len, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
    } else {
        memset(buf, 0, len);
        MPI_Recv(buf, (int) len, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (size_t i = 0; i < len; i++) {
            CHECK(buf[i] == pat(seed, i), "byte %zu of round %llu", i, (unsigned long long) seed);
        }
    }
    free(buf);                   /* over 128 KiB: mmap'd, so given back to the system */
}

int main(int argc, char **argv)
{
    int rank, size, provided, rounds = argc > 1 ? atoi(argv[1]) : 8;
    unsigned long b0, c0, b = 0, c = 0, p = 0, bmax = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(2 == size, "needs exactly 2 ranks");
    CHECK(MPI_SUCCESS == MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), "MPI_T_init_thread");
    CHECK(MPI_SUCCESS == MPI_T_pvar_session_create(&session), "MPI_T_pvar_session_create");
    open_pvar("btl_siwarp_registered_bytes", MPI_T_PVAR_CLASS_SIZE, &h_bytes);
    open_pvar("btl_siwarp_registrations", MPI_T_PVAR_CLASS_SIZE, &h_count);
    open_pvar("btl_siwarp_registered_bytes_peak", MPI_T_PVAR_CLASS_HIGHWATERMARK, &h_peak);

    /* connect first: the eager buffers are not counted, only the rcache's */
    MPI_Barrier(MPI_COMM_WORLD);
    b0 = rd(h_bytes);
    c0 = rd(h_count);
    CHECK((0 == c0) == (0 == b0), "%lu bytes in %lu registrations", b0, c0);

    for (int r = 0; r < rounds; r++) {
        size_t len = 4 * MIB + (size_t) r * 65536;
        transfer(len, (uint64_t) r + 1);
        MPI_Barrier(MPI_COMM_WORLD);
        b = rd(h_bytes);
        c = rd(h_count);
        p = rd(h_peak);
        bmax = b > bmax ? b : bmax;
        CHECK((0 == c) == (0 == b), "round %d: %lu bytes in %lu registrations", r, b, c);
        CHECK(p >= len, "round %d: peak %lu bytes, below the %zu just registered", r, p, len);
        CHECK(p >= b, "round %d: peak %lu below the %lu bytes registered now", r, p, b);
        /* each round's buffer is freed: its registration must not pile up
         * behind the next ones (at most this round's and the last's) */
        CHECK(b <= b0 + 2 * len,
              "round %d: %lu bytes registered (%lu at start): freed buffers stay registered",
              r, b, b0);
    }
    printf("regcount: rank %d: registered %lu -> %lu bytes (most %lu), %lu -> %lu registrations, "
           "peak %lu\n", rank, b0, b, bmax, c0, c, rd(h_peak));
    MPI_T_pvar_handle_free(session, &h_bytes);
    MPI_T_pvar_handle_free(session, &h_count);
    MPI_T_pvar_handle_free(session, &h_peak);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
