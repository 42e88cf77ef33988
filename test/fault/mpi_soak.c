/*
 * mpi_soak.c - verified traffic for the soak and the MPI fault tests.
 *
 *   mpi_soak [-t SECONDS] [-m MAXBYTES] [-a A2A_MAX] [-r REPORT_S] [-s SEED]
 *            [-g RSS_GROWTH_MIB] [-f FD_GROWTH] [-G REG_GROWTH_MIB] [-k SPLIT_EVERY]
 *
 * Until SECONDS have passed (rank 0 decides, every rank follows), each
 * iteration does
 *   - an all-to-all: every rank sends every other rank a message of a random
 *     size in [0, A2A_MAX] (default 256 KiB);
 *   - random pairs: a random perfect matching of the ranks (the same on all
 *     ranks, drawn from the seed and the iteration), each pair exchanging
 *     messages of random sizes in [0, MAXBYTES] (default 4 MiB) both ways;
 *   - every SPLIT_EVERY iterations (default 16) a sub-communicator from
 *     MPI_Comm_split with random colours, an allreduce and a ring exchange
 *     over it, freed again;
 * and checks every byte received against the sender's pattern (a function
 * of seed, iteration, source, destination and offset), aborting on the first
 * wrong byte with its position.
 *
 * Every REPORT_S seconds rank 0 prints "soak: t=... iter=... msgs=...
 * bytes=...".  Each rank samples its own VmRSS, open descriptors
 * (/proc/self/status, /proc/self/fd) and registered memory (the siwarp
 * BTL's MPI_T performance variable btl_siwarp_registered_bytes) at the end
 * of its first minute (or at a quarter of the run if shorter) and at the
 * end; rank 0 prints one "soak-mem:" line per rank and the job fails (exit
 * 1 from every rank) when a rank's RSS grew by more than RSS_GROWTH_MIB
 * (default 64), its descriptors by more than FD_GROWTH (default 4) or its
 * registered memory by more than REG_GROWTH_MIB (default 64).  Without
 * that variable (another BTL) registered memory is reported as not
 * measured and not checked.  At start every rank
 * prints "soak: rank R pid P host H" so a driver can find its processes.
 */
#include <dirent.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;

#define DIE(...) do { fprintf(stderr, "[rank %d] ", rank); fprintf(stderr, __VA_ARGS__); \
        fprintf(stderr, "\n"); MPI_Abort(MPI_COMM_WORLD, 3); } while (0)

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27; x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t key(uint64_t seed, uint64_t it, int src, int dst, int kind)
{
    return mix(seed ^ mix(it * 0x10001ull + (uint64_t) kind) ^
               ((uint64_t) src << 40) ^ ((uint64_t) dst << 20));
}

static void fill(uint8_t *p, size_t n, uint64_t k)
{
    uint64_t x = k | 1;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        memcpy(p + i, &x, 8);
    }
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    for (; i < n; i++) {
        p[i] = (uint8_t) (x >> (8 * (i & 7)));
    }
}

static uint8_t *scratch;

static void verify(const uint8_t *got, size_t n, uint64_t k, const char *what, int peer,
                   uint64_t it)
{
    fill(scratch, n, k);
    if (memcmp(got, scratch, n) != 0) {
        size_t i = 0;
        while (got[i] == scratch[i]) {
            i++;
        }
        DIE("%s from rank %d, iteration %llu, %zu bytes: byte %zu is 0x%02x, "
            "expected 0x%02x", what, peer, (unsigned long long) it, n, i, got[i], scratch[i]);
    }
}

static size_t rsize(uint64_t k, size_t max)
{
    uint64_t r = mix(k ^ 0x5a5a);
    /* half the messages small (eager), half anywhere up to max */
    if (r & 1) {
        return (size_t) ((r >> 8) % 4097);
    }
    return (size_t) ((r >> 8) % (max + 1));
}

/* The siwarp BTL's registered bytes through MPI_T, or -1 without them. */
static MPI_T_pvar_session reg_session;
static MPI_T_pvar_handle reg_handle;
static int reg_ok, t_init;

static void reg_open(void)
{
    int provided, idx, count;

    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        return;
    }
    t_init = 1;
    if (MPI_T_pvar_get_index("btl_siwarp_registered_bytes", MPI_T_PVAR_CLASS_SIZE, &idx) !=
            MPI_SUCCESS ||
        MPI_T_pvar_session_create(&reg_session) != MPI_SUCCESS) {
        return;
    }
    if (MPI_T_pvar_handle_alloc(reg_session, idx, NULL, &reg_handle, &count) != MPI_SUCCESS ||
        count != 1) {
        MPI_T_pvar_session_free(&reg_session);
        return;
    }
    reg_ok = 1;
}

static long reg_kib(void)
{
    unsigned long v = 0;

    if (!reg_ok || MPI_T_pvar_read(reg_session, reg_handle, &v) != MPI_SUCCESS) {
        return -1;
    }
    return (long) (v / 1024);
}

static void reg_close(void)
{
    if (reg_ok) {
        MPI_T_pvar_handle_free(reg_session, &reg_handle);
        MPI_T_pvar_session_free(&reg_session);
    }
    if (t_init) {
        MPI_T_finalize();
    }
}

static void sample(long *rss_kib, int *fds, long *reg)
{
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    DIR *d;
    struct dirent *e;

    *reg = reg_kib();
    *rss_kib = -1;
    *fds = 0;
    if (f) {
        while (fgets(line, sizeof(line), f)) {
            if (!strncmp(line, "VmRSS:", 6)) {
                *rss_kib = atol(line + 6);
            }
        }
        fclose(f);
    }
    if ((d = opendir("/proc/self/fd")) != NULL) {
        while ((e = readdir(d)) != NULL) {
            *fds += e->d_name[0] != '.';
        }
        closedir(d);
        (*fds)--;               /* the DIR's own descriptor */
    }
}

int main(int argc, char **argv)
{
    double seconds = 60, report = 10, t0, last_report;
    size_t maxb = 4u << 20, a2a = 256u << 10;
    uint64_t seed = 1, it = 0;
    unsigned long long msgs = 0, bytes = 0;
    long rss0 = -1, rss1 = -1, rss_bound = 64, reg0 = -1, reg1 = -1, reg_bound = 64;
    int fds0 = -1, fds1 = -1, fd_bound = 4, split_every = 16, opt, sampled = 0;
    char host[256] = "";
    uint8_t **sb, **rb;
    MPI_Request *req;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "t:m:a:r:s:g:f:G:k:")) != -1) {
        switch (opt) {
        case 't': seconds = atof(optarg); break;
        case 'm': maxb = strtoul(optarg, NULL, 0); break;
        case 'a': a2a = strtoul(optarg, NULL, 0); break;
        case 'r': report = atof(optarg); break;
        case 's': seed = strtoull(optarg, NULL, 0); break;
        case 'g': rss_bound = atol(optarg); break;
        case 'f': fd_bound = atoi(optarg); break;
        case 'G': reg_bound = atol(optarg); break;
        case 'k': split_every = atoi(optarg); break;
        default: DIE("bad option");
        }
    }
    reg_open();
    gethostname(host, sizeof(host) - 1);
    printf("soak: rank %d pid %d host %s\n", rank, (int) getpid(), host);
    fflush(stdout);

    size_t cap = maxb > a2a ? maxb : a2a;
    sb = calloc((size_t) size, sizeof(*sb));
    rb = calloc((size_t) size, sizeof(*rb));
    req = calloc(4 * (size_t) size, sizeof(*req));
    scratch = malloc(cap + 8);
    if (!sb || !rb || !req || !scratch) {
        DIE("out of memory");
    }
    for (int i = 0; i < size; i++) {
        sb[i] = malloc(a2a + 8);
        rb[i] = malloc(a2a + 8);
        if (!sb[i] || !rb[i]) {
            DIE("out of memory");
        }
    }
    uint8_t *ps = malloc(maxb + 8), *pr = malloc(maxb + 8);
    if (!ps || !pr) {
        DIE("out of memory");
    }

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = last_report = MPI_Wtime();
    double sample_at = seconds >= 240 ? 60 : seconds / 4;
    for (;;) {
        int go[2] = { 1, 0 }, nr = 0;
        double now = MPI_Wtime() - t0;
        /* rank 0's clock decides both, so every rank makes the same calls */
        if (rank == 0) {
            go[0] = now < seconds;
            go[1] = MPI_Wtime() - last_report >= report;
        }
        MPI_Bcast(go, 2, MPI_INT, 0, MPI_COMM_WORLD);
        if (!go[0]) {
            break;
        }
        if (!sampled && now >= sample_at) {
            sample(&rss0, &fds0, &reg0);
            sampled = 1;
        }

        /* all-to-all */
        for (int p = 0; p < size; p++) {
            if (p == rank) {
                continue;
            }
            size_t rn = rsize(key(seed, it, p, rank, 0), a2a);
            size_t sn = rsize(key(seed, it, rank, p, 0), a2a);
            fill(sb[p], sn, key(seed, it, rank, p, 0));
            MPI_Irecv(rb[p], (int) rn, MPI_BYTE, p, 1, MPI_COMM_WORLD, &req[nr++]);
            MPI_Isend(sb[p], (int) sn, MPI_BYTE, p, 1, MPI_COMM_WORLD, &req[nr++]);
            msgs++;
            bytes += sn;
        }
        MPI_Waitall(nr, req, MPI_STATUSES_IGNORE);
        for (int p = 0; p < size; p++) {
            if (p != rank) {
                verify(rb[p], rsize(key(seed, it, p, rank, 0), a2a), key(seed, it, p, rank, 0),
                       "all-to-all", p, it);
            }
        }

        /* random perfect matching (odd size: one rank sits out) */
        {
            int perm[1024], partner = -1, n = size < 1024 ? size : 1024;
            uint64_t r = key(seed, it, 0, 0, 1);
            for (int i = 0; i < n; i++) {
                perm[i] = i;
            }
            for (int i = n - 1; i > 0; i--) {
                int j;
                r = mix(r + (uint64_t) i);
                j = (int) (r % (uint64_t) (i + 1));
                int t = perm[i]; perm[i] = perm[j]; perm[j] = t;
            }
            for (int i = 0; i + 1 < n; i += 2) {
                if (perm[i] == rank) partner = perm[i + 1];
                if (perm[i + 1] == rank) partner = perm[i];
            }
            if (partner >= 0) {
                size_t sn = rsize(key(seed, it, rank, partner, 2), maxb);
                size_t rn = rsize(key(seed, it, partner, rank, 2), maxb);
                fill(ps, sn, key(seed, it, rank, partner, 2));
                MPI_Sendrecv(ps, (int) sn, MPI_BYTE, partner, 2, pr, (int) rn, MPI_BYTE,
                             partner, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                verify(pr, rn, key(seed, it, partner, rank, 2), "random pair", partner, it);
                msgs++;
                bytes += sn;
            }
        }

        /* sub-communicator churn */
        if (split_every > 0 && it % (uint64_t) split_every == 0) {
            MPI_Comm sub;
            int color = (int) (key(seed, it, rank, 0, 3) % 3), sr, ss;
            long v = rank, sum = 0, expect = 0;
            MPI_Comm_split(MPI_COMM_WORLD, color, rank, &sub);
            MPI_Comm_rank(sub, &sr);
            MPI_Comm_size(sub, &ss);
            MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, sub);
            /* the members are the world ranks with the same colour */
            for (int p = 0; p < size; p++) {
                if ((int) (key(seed, it, p, 0, 3) % 3) == color) {
                    expect += p;
                }
            }
            if (sum != expect) {
                DIE("sub-communicator allreduce: %ld, expected %ld", sum, expect);
            }
            if (ss > 1) {
                uint64_t tok = key(seed, it, sr, 0, 4), got = 0;
                MPI_Sendrecv(&tok, 1, MPI_UINT64_T, (sr + 1) % ss, 4, &got, 1, MPI_UINT64_T,
                             (sr + ss - 1) % ss, 4, sub, MPI_STATUS_IGNORE);
                if (got != key(seed, it, (sr + ss - 1) % ss, 0, 4)) {
                    DIE("sub-communicator ring: wrong token");
                }
            }
            MPI_Comm_free(&sub);
        }
        it++;

        if (go[1]) {
            unsigned long long v[2] = { msgs, bytes }, s[2];
            last_report = MPI_Wtime();
            MPI_Reduce(v, s, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
            if (rank == 0) {
                printf("soak: t=%.0fs iter=%llu msgs=%llu bytes=%llu\n",
                       MPI_Wtime() - t0, (unsigned long long) it, s[0], s[1]);
                fflush(stdout);
            }
        }
    }
    sample(&rss1, &fds1, &reg1);
    if (!sampled) {
        rss0 = rss1;
        fds0 = fds1;
        reg0 = reg1;
    }

    {
        unsigned long long v[2] = { msgs, bytes }, s[2];
        long m[6] = { rss0, rss1, fds0, fds1, reg0, reg1 }, *all = NULL;
        int bad = 0;
        MPI_Reduce(v, s, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            all = malloc(6 * sizeof(long) * (size_t) size);
        }
        MPI_Gather(m, 6, MPI_LONG, all, 6, MPI_LONG, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("soak: done t=%.0fs iter=%llu msgs=%llu bytes=%llu verified\n",
                   MPI_Wtime() - t0, (unsigned long long) it, s[0], s[1]);
            int no_reg = 0;
            for (int p = 0; p < size; p++) {
                long *x = all + 6 * p;
                int have_reg = x[4] >= 0 && x[5] >= 0;
                int over = (x[1] - x[0]) > rss_bound * 1024 || (x[3] - x[2]) > fd_bound ||
                           (have_reg && (x[5] - x[4]) > reg_bound * 1024);
                char reg[96] = "";
                if (have_reg) {
                    snprintf(reg, sizeof(reg), " registered_kib %ld -> %ld (%+ld)", x[4], x[5],
                             x[5] - x[4]);
                }
                no_reg |= !have_reg;
                printf("soak-mem: rank %d rss_kib %ld -> %ld (%+ld) fds %ld -> %ld (%+ld)%s%s\n",
                       p, x[0], x[1], x[1] - x[0], x[2], x[3], x[3] - x[2], reg,
                       over ? " GREW BEYOND BOUND" : "");
                bad |= over;
            }
            if (no_reg) {
                printf("soak-mem: registered bytes not measured on some rank "
                       "(no btl_siwarp_registered_bytes through MPI_T)\n");
            }
            fflush(stdout);
            free(all);
        }
        MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
        reg_close();
        MPI_Finalize();
        return bad ? 1 : 0;
    }
}
