/*
 * mpi_accept.c - MPI_Comm_accept / MPI_Comm_connect, then dyn_exchange
 * (both ways, 0 B..4 MiB, merged bcast/allreduce) and MPI_Comm_disconnect.
 *
 *   mpi_accept split          one job split in halves (MPI_Comm_split): the
 *                             lower half opens a port and accepts, its name
 *                             goes to the upper half over MPI_COMM_WORLD,
 *                             which connects
 *   mpi_accept cycles N FDS KIB
 *                             the same N times, each with a new port; each
 *                             rank's open descriptors (/proc/self/fd) and
 *                             the BTL's btl_siwarp_registered_bytes (MPI_T)
 *                             may grow after cycle 5 by at most FDS and KIB
 *   mpi_accept server NAME    a job of its own: open a port, MPI_Publish_name
 *                             NAME (ompi-server), accept, exchange
 *   mpi_accept client NAME    another job: MPI_Lookup_name NAME, connect
 */
#include "mpi_dyn.h"

#include <unistd.h>

#define BASE_CYCLE 5

static MPI_T_pvar_session session;
static MPI_T_pvar_handle h_reg;
static int have_reg;

/* btl_siwarp_registered_bytes in KiB; -1 where the BTL is not loaded
 * (the btl tcp reference run) */
static long reg_kib(void)
{
    return have_reg ? (long) (pvar_read(session, h_reg) / 1024) : -1;
}

/* one accept/connect between the halves of MPI_COMM_WORLD, exchanged over
 * and disconnected */
static void split_once(int cycle)
{
    int rank, size, half, hrank;
    char port[MPI_MAX_PORT_NAME] = "";
    MPI_Comm comm, inter;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2 && 0 == size % 2, "needs an even number of ranks, not %d", size);
    half = rank >= size / 2;
    MPI_Comm_split(MPI_COMM_WORLD, half, rank, &comm);
    MPI_Comm_rank(comm, &hrank);
    if (0 == rank) {
        CHECK(MPI_SUCCESS == MPI_Open_port(MPI_INFO_NULL, port), "MPI_Open_port");
        MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, size / 2, 1, MPI_COMM_WORLD);
    } else if (size / 2 == rank) {
        MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    dyn_note(comm, "%s: cycle %d: %s %s", half ? "connector" : "acceptor", cycle,
             half ? "connecting to" : "accepting on", port);
    if (!half) {
        CHECK(MPI_SUCCESS == MPI_Comm_accept(port, MPI_INFO_NULL, 0, comm, &inter),
              "MPI_Comm_accept on %s", port);
    } else {
        CHECK(MPI_SUCCESS == MPI_Comm_connect(port, MPI_INFO_NULL, 0, comm, &inter),
              "MPI_Comm_connect to %s", port);
    }
    dyn_exchange(inter, half, half ? "connector" : "acceptor", (uint64_t) cycle);
    CHECK(MPI_SUCCESS == MPI_Comm_disconnect(&inter), "disconnect in cycle %d", cycle);
    if (0 == rank) {
        MPI_Close_port(port);
    }
    MPI_Comm_free(&comm);
}

static void cycles(int n, int fd_slack, long kib_slack)
{
    int rank, provided, fd0 = -1, fd_max = -1, fd = -1;
    long reg0 = -1, reg_max = -1, reg = -1;
    int fd1 = count_fds();
    long reg1;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECK(MPI_SUCCESS == MPI_T_init_thread(MPI_THREAD_SINGLE, &provided), "MPI_T_init_thread");
    CHECK(MPI_SUCCESS == MPI_T_pvar_session_create(&session), "MPI_T_pvar_session_create");
    int idx;
    have_reg = MPI_SUCCESS == MPI_T_pvar_get_index("btl_siwarp_registered_bytes",
                                                   MPI_T_PVAR_CLASS_SIZE, &idx);
    if (have_reg) {
        pvar_open(session, "btl_siwarp_registered_bytes", MPI_T_PVAR_CLASS_SIZE, &h_reg);
    }
    reg1 = reg_kib();
    for (int c = 1; c <= n; c++) {
        split_once(c);
        MPI_Barrier(MPI_COMM_WORLD);
        fd = count_fds();
        reg = reg_kib();
        if (BASE_CYCLE == c) {
            fd0 = fd_max = fd;
            reg0 = reg_max = reg;
        } else if (c > BASE_CYCLE) {
            fd_max = fd > fd_max ? fd : fd_max;
            reg_max = reg > reg_max ? reg : reg_max;
        }
        if (0 == c % 10) {
            dyn_note(MPI_COMM_WORLD, "cycles: %d done (rank 0: %d descriptors, %ld KiB registered)",
                     c, fd, reg);
        }
    }
    printf("cycles: rank %d: descriptors %d at start, %d after cycle %d, most %d after, %d at end; "
           "registered KiB %ld at start, %ld after cycle %d, most %ld after, %ld at end\n",
           rank, fd1, fd0, BASE_CYCLE, fd_max, fd, reg1, reg0, BASE_CYCLE, reg_max, reg);
    fflush(stdout);
    CHECK(n <= BASE_CYCLE || fd_max <= fd0 + fd_slack,
          "descriptors grew from %d (cycle %d) to %d, more than %d", fd0, BASE_CYCLE, fd_max,
          fd_slack);
    CHECK(n <= BASE_CYCLE || reg_max <= reg0 + kib_slack,
          "registered memory grew from %ld KiB (cycle %d) to %ld KiB, more than %ld", reg0,
          BASE_CYCLE, reg_max, kib_slack);
    if (have_reg) {
        MPI_T_pvar_handle_free(session, &h_reg);
    }
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();
}

/* server and client: separate jobs that meet through the name service */
static void named(int server, const char *name)
{
    char port[MPI_MAX_PORT_NAME] = "";
    MPI_Comm inter;
    MPI_Info global;
    int rc;

    /* the name goes to ompi-server, not to this job's mpirun */
    MPI_Info_create(&global);
    MPI_Info_set(global, "ompi_global_scope", "true");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (server) {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (0 == rank) {
            CHECK(MPI_SUCCESS == MPI_Open_port(MPI_INFO_NULL, port), "MPI_Open_port");
            rc = MPI_Publish_name(name, global, port);
            CHECK(MPI_SUCCESS == rc, "MPI_Publish_name %s (%d): is ompi-server reachable?",
                  name, rc);
        }
        dyn_note(MPI_COMM_WORLD, "server: published %s", name);
        rc = MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter);
        CHECK(MPI_SUCCESS == rc, "MPI_Comm_accept (%d)", rc);
    } else {
        /* Open MPI 4.1.4 now and then answers the first lookup after the
         * server job published with MPI_ERR_NAME, over btl tcp as over
         * siwarp: ask again, for 10 s at most, and say how often */
        int tries = 0;
        do {
            if (tries) {
                usleep(200000);
            }
            rc = MPI_Lookup_name(name, global, port);
        } while (MPI_SUCCESS != rc && ++tries < 50);
        CHECK(MPI_SUCCESS == rc, "MPI_Lookup_name %s (%d), %d tries", name, rc, tries);
        dyn_note(MPI_COMM_WORLD, "client: %s is at %s (%d lookups failed first)", name, port,
                 tries);
        rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter);
        CHECK(MPI_SUCCESS == rc, "MPI_Comm_connect to %s (%d)", port, rc);
    }
    dyn_exchange(inter, !server, server ? "server" : "client", 3);
    CHECK(MPI_SUCCESS == MPI_Comm_disconnect(&inter), "disconnect");
    if (server) {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (0 == rank) {
            MPI_Unpublish_name(name, global, port);
            MPI_Close_port(port);
        }
    }
    MPI_Info_free(&global);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    CHECK(argc >= 2, "usage: mpi_accept split | cycles N FDS KIB | server NAME | client NAME");
    if (!strcmp(argv[1], "split")) {
        split_once(0);
    } else if (!strcmp(argv[1], "cycles")) {
        CHECK(argc >= 5, "usage: mpi_accept cycles N FDS KIB");
        cycles(atoi(argv[2]), atoi(argv[3]), atol(argv[4]));
    } else {
        CHECK(argc >= 3 && (!strcmp(argv[1], "server") || !strcmp(argv[1], "client")),
              "unknown mode %s", argv[1]);
        named(!strcmp(argv[1], "server"), argv[2]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    dyn_note(MPI_COMM_WORLD, "accept %s: ok", argv[1]);
    MPI_Finalize();
    return 0;
}
