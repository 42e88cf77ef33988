/*
 * mpi_regcount.c - the BTL's registration counters, read as MPI_T
 * performance variables: btl_siwarp_registered_bytes, _registrations and
 * _registered_bytes_peak must exist, move with a rendezvous transfer (ob1
 * registers both ends of an RDMA Read) and come back down when the buffer
 * is freed (the registration cache drops registrations of memory given
 * back to the system).  2 ranks.
 *
 *   mpi_regcount [ROUNDS]      default 8 rounds, each with a fresh buffer
 *   mpi_regcount ROUNDS heap   the buffers from malloc's heap, each at
 *                              another offset of the memory the last used
 *   mpi_regcount ROUNDS apart  the buffers from one mapping kept to the
 *                              end, each where no earlier one was
 *
 * Round r moves 4 MiB + r * 64 KiB: each buffer is a new mapping too large
 * for the hole the last one left, so it lands at a new address, and a
 * freed buffer whose registration stayed would add to the count.
 *
 * In heap mode (what glibc does on its own once its mmap threshold has
 * risen) the memory is never given back: malloc keeps large blocks in its
 * heap and does not trim it, and each round's 4 MiB buffer starts 64 KiB
 * further into the memory the last one used.  The cache may keep the last
 * registration; one that a later buffer has overwritten must go, or each
 * round adds 4 MiB (Open MPI 5's accept/connect cycles grew by 200 MiB).
 *
 * In apart mode each round's buffer is a fresh stretch of one mapping that
 * stays mapped to the end, as memory malloc keeps and hands out again
 * elsewhere: no later buffer overlaps an earlier one and nothing goes back
 * to the system, so nothing tells the cache a registration is no longer
 * wanted.  With btl_siwarp_rcache_limit (read here through MPI_T) set,
 * registered memory must stay under it; with 0 (no limit), every round's
 * registration must still be there at the end, which shows that the
 * limited run did not pass by luck.
 */
#include "mpi_common.h"

#include <malloc.h>
#include <sys/mman.h>

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
 * verified, and the buffer freed (apart mode: at AT, left mapped) */
static void transfer(size_t len, uint64_t seed, size_t shift, uint8_t *at)
{
    int rank;
    /* heap mode: the spacer pushes the buffer shift bytes further along */
    uint8_t *spacer = shift ? malloc(shift) : NULL;
    uint8_t *buf = at ? at : malloc(len);     /* apart mode: where we are told */

    CHECK(buf && (spacer || !shift), "out of memory");
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
    if (!at) {
        free(buf);      /* mmap'd, so given back to the system, except in heap mode */
    }
    free(spacer);
}

int main(int argc, char **argv)
{
    int rank, size, provided, rounds = argc > 1 ? atoi(argv[1]) : 8;
    int heap = argc > 2 && !strcmp(argv[2], "heap");
    int apart = argc > 2 && !strcmp(argv[2], "apart");
    unsigned long b0, c0, b = 0, c = 0, p = 0, bmax = 0, limit = 0;
    unsigned long page = (unsigned long) sysconf(_SC_PAGESIZE);
    uint8_t *arena = NULL;
    size_t arena_len = 0, at = 0;

    CHECK(rounds > 0 && rounds <= 64, "1 to 64 rounds");
    if (heap) {
        /* before MPI_Init, as a program tuning malloc would: large blocks
         * from the heap, and the heap never trimmed */
        CHECK(mallopt(M_MMAP_THRESHOLD, 256 << 20) && mallopt(M_TRIM_THRESHOLD, 1 << 30),
              "mallopt");
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(2 == size, "needs exactly 2 ranks");
    CHECK(MPI_SUCCESS == MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), "MPI_T_init_thread");
    CHECK(MPI_SUCCESS == MPI_T_pvar_session_create(&session), "MPI_T_pvar_session_create");
    open_pvar("btl_siwarp_registered_bytes", MPI_T_PVAR_CLASS_SIZE, &h_bytes);
    open_pvar("btl_siwarp_registrations", MPI_T_PVAR_CLASS_SIZE, &h_count);
    open_pvar("btl_siwarp_registered_bytes_peak", MPI_T_PVAR_CLASS_HIGHWATERMARK, &h_peak);
    if (apart) {
        limit = cvar_read_ulong("btl_siwarp_rcache_limit");
        for (int r = 0; r < rounds; r++) {
            arena_len += 4 * MIB + (size_t) r * 65536;
        }
        arena = mmap(NULL, arena_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(MAP_FAILED != arena, "mmap of %zu bytes", arena_len);
    }

    /* connect first: the eager buffers are not counted, only the rcache's */
    MPI_Barrier(MPI_COMM_WORLD);
    b0 = rd(h_bytes);
    c0 = rd(h_count);
    CHECK((0 == c0) == (0 == b0), "%lu bytes in %lu registrations", b0, c0);

    for (int r = 0; r < rounds; r++) {
        size_t len = heap ? 4 * MIB : 4 * MIB + (size_t) r * 65536;
        transfer(len, (uint64_t) r + 1, heap ? 4096 + (size_t) r * 65536 : 0,
                 apart ? arena + at : NULL);
        at += len;
        MPI_Barrier(MPI_COMM_WORLD);
        b = rd(h_bytes);
        c = rd(h_count);
        p = rd(h_peak);
        bmax = b > bmax ? b : bmax;
        CHECK((0 == c) == (0 == b), "round %d: %lu bytes in %lu registrations", r, b, c);
        CHECK(p >= len, "round %d: peak %lu bytes, below the %zu just registered", r, p, len);
        CHECK(p >= b, "round %d: peak %lu below the %lu bytes registered now", r, p, b);
        /* each round's buffer is freed: its registration must not pile up
         * behind the next ones (at most this round's and the last's); in
         * heap mode the last stays cached, and the one before until the
         * cache's next registration (grdma frees dropped ones then); each
         * may be a page longer at either end */
        if (apart && limit) {
            /* over the limit only by the registration just made */
            CHECK(b <= (limit > b0 + len + 2 * page ? limit : b0 + len + 2 * page),
                  "round %d: %lu bytes registered (%lu at start), over btl_siwarp_rcache_limit "
                  "%lu: unused registrations kept", r, b, b0, limit);
        } else if (!apart) {
            CHECK(b <= b0 + 2 * (len + 2 * page),
                  "round %d: %lu bytes registered (%lu at start): freed buffers stay registered",
                  r, b, b0);
        }
    }
    if (apart && !limit) {
        CHECK(b >= b0 + (unsigned long) rounds * 4 * MIB,
              "%lu bytes registered after %d rounds apart (%lu at start): the buffers did not "
              "land apart, so this mode tests nothing", b, rounds, b0);
    }
    printf("regcount%s: rank %d: registered %lu -> %lu bytes (most %lu), %lu -> %lu registrations, "
           "peak %lu, limit %lu\n", heap ? " (heap)" : apart ? " (apart)" : "", rank, b0, b, bmax,
           c0, c, rd(h_peak), limit);
    MPI_T_pvar_handle_free(session, &h_bytes);
    MPI_T_pvar_handle_free(session, &h_count);
    MPI_T_pvar_handle_free(session, &h_peak);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Finalize();
    if (arena) {
        munmap(arena, arena_len);
    }
    return 0;
}
