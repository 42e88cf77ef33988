/*
 * mpi_spawn.c - MPI_Comm_spawn and MPI_Comm_spawn_multiple: the parents
 * (any number of ranks) spawn children, both sides run dyn_exchange over
 * the intercommunicator (both ways, 0 B..4 MiB, merged bcast/allreduce)
 * and disconnect.  The program is its own child.
 *
 *   mpi_spawn spawn N[,N...] [OPTION...]     spawn N children, in turn for each N
 *   mpi_spawn multiple CMD2 N1 N2 [OPTION...] spawn_multiple: N1 of this program
 *                                            with one argv, N2 of CMD2 (a copy of
 *                                            it) with another
 * Options: host=H (the "host" info key: where the children go), param=K=V
 * (the "ompi_param" info key: an environment variable of the children,
 * e.g. OMPI_MCA_btl_siwarp_mpa=0), remote (the children must run on
 * another host than parent rank 0: MPI_Get_processor_name).
 *
 * Children get argv: child SET SALT CMDNAME [extra]; they check that SET
 * matches their MPI_APPNUM, that they run as CMDNAME and the extra word.
 */
#include "mpi_dyn.h"

#include <libgen.h>

static void child(int argc, char **argv)
{
    MPI_Comm parent;
    int *appnum, flag, rank;
    char name[MPI_MAX_PROCESSOR_NAME];
    int len;

    MPI_Comm_get_parent(&parent);
    CHECK(MPI_COMM_NULL != parent, "child without a parent");
    CHECK(argc >= 5, "child: %d arguments", argc);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    CHECK(flag, "child: no MPI_APPNUM");
    const char *set = argv[2];
    uint64_t salt = strtoull(argv[3], NULL, 10);
    int want = !strcmp(set, "beta") ? 1 : 0;
    CHECK(*appnum == want, "child of set %s has MPI_APPNUM %d", set, *appnum);
    CHECK(!strcmp(basename(argv[0]), argv[4]), "child of set %s runs as %s, not %s", set,
          argv[0], argv[4]);
    CHECK(!strcmp(set, "beta") ? argc == 6 && !strcmp(argv[5], "extra") : argc == 5,
          "child of set %s: %d arguments", set, argc);

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    dyn_exchange(parent, 1, "child", salt);
    MPI_Get_processor_name(name, &len);
    MPI_Send(name, len + 1, MPI_CHAR, 0, 99, parent);
    CHECK(MPI_SUCCESS == MPI_Comm_disconnect(&parent), "child: disconnect");
    MPI_Finalize();
}

/* children's host names to parent rank 0, which prints them and, with
 * REMOTE, checks that none is its own */
static void where(MPI_Comm inter, int remote)
{
    int rank, rs, len;
    char mine[MPI_MAX_PROCESSOR_NAME], theirs[MPI_MAX_PROCESSOR_NAME];

    MPI_Comm_rank(inter, &rank);
    if (rank) {
        return;
    }
    MPI_Comm_remote_size(inter, &rs);
    MPI_Get_processor_name(mine, &len);
    for (int p = 0; p < rs; p++) {
        MPI_Recv(theirs, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, p, 99, inter, MPI_STATUS_IGNORE);
        printf("spawn: child %d runs on %s (parent rank 0 on %s)\n", p, theirs, mine);
        CHECK(!remote || strcmp(theirs, mine), "child %d on the parent's host %s", p, mine);
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int rank, size, nset = 0, remote = 0;
    int counts[8];
    const char *cmd2 = NULL;
    MPI_Info info;

    MPI_Init(&argc, &argv);
    if (argc > 1 && !strcmp(argv[1], "child")) {
        child(argc, argv);
        return 0;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(argc >= 3, "usage: mpi_spawn spawn N[,N...] | multiple CMD2 N1 N2 [OPTION...]");
    int multiple = !strcmp(argv[1], "multiple"), opt = 3;
    if (multiple) {
        CHECK(argc >= 5, "usage: mpi_spawn multiple CMD2 N1 N2");
        cmd2 = argv[2];
        counts[0] = atoi(argv[3]);
        counts[1] = atoi(argv[4]);
        opt = 5;
    } else {
        CHECK(!strcmp(argv[1], "spawn"), "unknown mode %s", argv[1]);
        for (char *s = argv[2]; s && nset < 8; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL) {
            counts[nset++] = atoi(s);
        }
    }
    MPI_Info_create(&info);
    for (int i = opt; i < argc; i++) {
        if (!strncmp(argv[i], "host=", 5)) {
            MPI_Info_set(info, "host", argv[i] + 5);
        } else if (!strncmp(argv[i], "param=", 6)) {
            MPI_Info_set(info, "ompi_param", argv[i] + 6);
        } else {
            CHECK(!strcmp(argv[i], "remote"), "unknown option %s", argv[i]);
            remote = 1;
        }
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    char salt[32], self[256];
    snprintf(self, sizeof(self), "%s", basename(argv[0]));
    for (int round = 0; round < (multiple ? 1 : nset); round++) {
        MPI_Comm inter;
        int err[16], rc, n = multiple ? counts[0] + counts[1] : counts[round];
        CHECK(n > 0 && n <= 16, "%d children", n);
        snprintf(salt, sizeof(salt), "%d", 7 + round);
        dyn_note(MPI_COMM_WORLD, "spawn: %d parents start %d children%s", size, n,
                 multiple ? " of two commands" : "");
        if (multiple) {
            char *cmds[2] = {argv[0], (char *) cmd2};
            char *a0[] = {"child", "alpha", salt, self, NULL};
            char b0[256];
            snprintf(b0, sizeof(b0), "%s", basename((char *) cmd2));
            char *a1[] = {"child", "beta", salt, b0, "extra", NULL};
            char **argvs[2] = {a0, a1};
            MPI_Info infos[2] = {info, info};
            rc = MPI_Comm_spawn_multiple(2, cmds, argvs, counts, infos, 0, MPI_COMM_WORLD,
                                         &inter, err);
        } else {
            char *a[] = {"child", "spawn", salt, self, NULL};
            rc = MPI_Comm_spawn(argv[0], a, n, info, 0, MPI_COMM_WORLD, &inter, err);
        }
        CHECK(MPI_SUCCESS == rc, "spawn of %d children failed (%d)", n, rc);
        for (int i = 0; i < n; i++) {
            CHECK(MPI_SUCCESS == err[i], "child %d: error code %d", i, err[i]);
        }
        int rs;
        MPI_Comm_remote_size(inter, &rs);
        CHECK(rs == n, "%d children in the intercommunicator, %d spawned", rs, n);
        dyn_note(MPI_COMM_WORLD, "spawn: %d children up", n);
        dyn_exchange(inter, 0, "parent", 7 + round);
        where(inter, remote);
        CHECK(MPI_SUCCESS == MPI_Comm_disconnect(&inter), "parent: disconnect");
        dyn_note(MPI_COMM_WORLD, "spawn: %d children disconnected", n);
    }
    MPI_Info_free(&info);
    MPI_Barrier(MPI_COMM_WORLD);
    dyn_note(MPI_COMM_WORLD, "spawn: ok");
    MPI_Finalize();
    return 0;
}
