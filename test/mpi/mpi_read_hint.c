/*
 * mpi_read_hint.c - btl_siwarp_read_hint under MPI: rendezvous messages
 * whose send buffers change between sends, as MPI allows once a send has
 * completed, must all arrive intact.  A Response sent with CRCs computed
 * for the bytes before the change would fail the connection, and the job
 * with it.  2 ranks, both ways:
 *
 *   - ping-pong of 64 KiB + 1 .. 4 MiB, the same buffer refilled before
 *     every send (the registration cache hands back the same registration
 *     each time: every send's hint must replace the last);
 *   - a window of 4 MPI_Isends from 4 buffers, matched in reverse order,
 *     every buffer refilled and sent again, 6 rounds;
 *   - every byte of every message checked.
 *
 * Then the counter: btl_siwarp_read_hint_segments (MPI_T) must have moved
 * when btl_siwarp_read_hint is 1 and CRC is on, and stayed at 0 when the
 * hint is 0 -- so a BTL that stopped announcing Reads fails here.
 */
#include "mpi_common.h"

#define MIB (1024ul * 1024ul)
#define WIN 4

static void pingpong(int rank, uint8_t *buf, uint64_t *seed)
{
    int peer = 1 - rank;

    for (size_t len = 65537; len <= 4 * MIB; len = len * 2 + 4099) {
        for (int it = 0; it < 4; it++) {
            for (int turn = 0; turn < 2; turn++, (*seed)++) {
                if (rank == turn) {
                    fill(buf, len, *seed);      /* changed since its last send */
                    MPI_Send(buf, (int) len, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                } else {
                    size_t bad;

                    memset(buf, 0, len);
                    MPI_Recv(buf, (int) len, MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                    bad = verify(buf, len, *seed);
                    CHECK(bad == (size_t) -1, "%zu-byte message %d: byte %zu wrong", len, it, bad);
                }
            }
        }
    }
}

static void windows(int rank, uint8_t **bufs, size_t len, uint64_t *seed)
{
    MPI_Request rq[WIN];
    int peer = 1 - rank;

    for (int round = 0; round < 6; round++, *seed += WIN) {
        int sender = round & 1;

        for (int i = 0; i < WIN; i++) {
            if (rank == sender) {
                fill(bufs[i], len, *seed + (uint64_t) i);
                MPI_Isend(bufs[i], (int) len, MPI_BYTE, peer, 100 + i, MPI_COMM_WORLD, &rq[i]);
            } else {
                int j = WIN - 1 - i;    /* the last sent is matched first */
                memset(bufs[j], 0, len);
                MPI_Irecv(bufs[j], (int) len, MPI_BYTE, peer, 100 + j, MPI_COMM_WORLD, &rq[i]);
            }
        }
        MPI_Waitall(WIN, rq, MPI_STATUSES_IGNORE);
        if (rank != sender) {
            for (int i = 0; i < WIN; i++) {
                size_t bad = verify(bufs[i], len, *seed + (uint64_t) i);
                CHECK(bad == (size_t) -1, "window round %d, message %d: byte %zu wrong", round, i,
                      bad);
            }
        }
    }
}

int main(int argc, char **argv)
{
    int rank, size, provided;
    uint64_t seed = 1;
    uint8_t *buf, *bufs[WIN];
    unsigned long hint, crc, markers, used;
    MPI_T_pvar_session session;
    MPI_T_pvar_handle h;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(2 == size, "needs exactly 2 ranks");
    CHECK(MPI_SUCCESS == MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), "MPI_T_init_thread");
    CHECK(MPI_SUCCESS == MPI_T_pvar_session_create(&session), "MPI_T_pvar_session_create");
    pvar_open(session, "btl_siwarp_read_hint_segments", MPI_T_PVAR_CLASS_COUNTER, &h);
    hint = cvar_read_ulong("btl_siwarp_read_hint");
    crc = cvar_read_ulong("btl_siwarp_crc");
    markers = cvar_read_ulong("btl_siwarp_markers");

    buf = malloc(4 * MIB + 4099);
    CHECK(buf, "out of memory");
    pingpong(rank, buf, &seed);
    for (int i = 0; i < WIN; i++) {
        bufs[i] = malloc(MIB + 12345);
        CHECK(bufs[i], "out of memory");
    }
    windows(rank, bufs, MIB + 12345, &seed);

    used = pvar_read(session, h);
    printf("read_hint: rank %d: btl_siwarp_read_hint %lu, crc %lu, markers %lu: %lu Response "
           "segments with CRCs computed ahead\n", rank, hint, crc, markers, used);
    fflush(stdout);
    if (hint && crc && !markers) {
        CHECK(used > 0, "btl_siwarp_read_hint 1 and no Response segment used a precomputed CRC");
    } else {
        CHECK(used == 0, "%lu segments used precomputed CRCs with the hint off or inapplicable",
              used);
    }
    for (int i = 0; i < WIN; i++) {
        free(bufs[i]);
    }
    free(buf);
    MPI_T_pvar_handle_free(session, &h);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        printf("read_hint: ok\n");
    }
    MPI_Finalize();
    return 0;
}
