/*
 * mpi_rma.c - one-sided MPI as osc/rdma runs it over a BTL's RDMA and
 * atomics: every answer checked exactly.
 *
 *   counter   MPI_Fetch_and_op(SUM) by every rank on one counter under
 *             lock_all + flush: the counter ends at N x ranks and the
 *             fetched values are exactly 0 .. N x ranks - 1, each once
 *   cas       a compare-and-swap increment loop by every rank: the counter
 *             ends exact
 *   acc       MPI_Accumulate of every predefined MPI_Op on every basic
 *             datatype it applies to (count 1: the BTL-atomic path; count
 *             3: osc/rdma's locked path), every rank into rank 0, and
 *             MPI_Get_accumulate / MPI_Fetch_and_op with the same ops
 *   sync      put/get rings under fence, post-start-complete-wait, and
 *             lock / lock_all with flush, 8 B to 1 MiB
 *   dynamic   MPI_Win_create_dynamic: attach, put/get, detach
 *
 * Usage: mpi_rma [create] [CASES...]   (default: all cases; "create": the
 * windows by MPI_Win_create on malloc'd memory instead of MPI_Win_allocate)
 */
#include "mpi_common.h"

#include <stdbool.h>

static int rank, size;
static bool use_create;     /* "create": MPI_Win_create on malloc'd memory */

/* A window of `bytes`: MPI_Win_allocate, or with "create" MPI_Win_create
 * over memory of our own (on one node osc/rdma then reaches a peer's window
 * through the BTL rather than shared memory). */
static void win_make(size_t bytes, int disp, void *base_out, MPI_Win *win)
{
    if (use_create) {
        void *mem = calloc(1, bytes);
        CHECK(NULL != mem, "calloc %zu", bytes);
        MPI_Win_create(mem, (MPI_Aint) bytes, disp, MPI_INFO_NULL, MPI_COMM_WORLD, win);
        *(void **) base_out = mem;
    } else {
        MPI_Win_allocate((MPI_Aint) bytes, disp, MPI_INFO_NULL, MPI_COMM_WORLD, base_out, win);
    }
}

static void win_done(MPI_Win *win, void *base)
{
    MPI_Win_free(win);
    if (use_create) {
        free(base);
    }
}

static bool want(int argc, char **argv, const char *name)
{
    if (argc < 2) {
        return true;
    }
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], name)) {
            return true;
        }
    }
    return false;
}

/* ---- counter and cas ------------------------------------------------------------ */

static void case_counter(void)
{
    enum { N = 300 };
    int64_t *base, one = 1, got[N], *all = NULL;
    MPI_Win win;

    win_make(sizeof(int64_t), sizeof(int64_t), &base, &win);
    *base = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < N; i++) {
        MPI_Fetch_and_op(&one, &got[i], MPI_INT64_T, 0, 0, MPI_SUM, win);
        MPI_Win_flush(0, win);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        all = calloc((size_t) N * size, sizeof(*all));
        CHECK(NULL != all, "calloc");
    }
    MPI_Gather(got, N, MPI_INT64_T, all, N, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        char *seen = calloc((size_t) N * size, 1);
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        CHECK(*base == (int64_t) N * size, "counter ends at %lld, not %d",
              (long long) *base, N * size);
        MPI_Win_unlock(0, win);
        for (int i = 0; i < N * size; i++) {
            CHECK(all[i] >= 0 && all[i] < (int64_t) N * size && !seen[all[i]],
                  "fetched value %lld is out of range or came twice", (long long) all[i]);
            seen[all[i]] = 1;
        }
        free(seen);
        free(all);
    }
    win_done(&win, base);
}

static void case_cas(void)
{
    enum { N = 100 };
    int64_t *base;
    MPI_Win win;

    win_make(sizeof(int64_t), sizeof(int64_t), &base, &win);
    *base = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    for (int i = 0; i < N; i++) {
        int64_t seen = 0, old;
        for (;;) {
            int64_t next = seen + 1;
            MPI_Compare_and_swap(&next, &seen, &old, MPI_INT64_T, 0, 0, win);
            MPI_Win_flush(0, win);
            if (old == seen) {
                break;
            }
            seen = old;
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        CHECK(*base == (int64_t) N * size, "CAS counter ends at %lld, not %d",
              (long long) *base, N * size);
        MPI_Win_unlock(0, win);
    }
    win_done(&win, base);
}

/* ---- accumulate: every op on every type ----------------------------------------- */

enum kind { K_INT, K_UINT, K_FLOAT, K_BOOL };
static const struct {
    MPI_Datatype type;
    const char *name;
    int bytes;
    enum kind kind;
} types[] = {
    { MPI_SIGNED_CHAR, "signed char", 1, K_INT },
    { MPI_SHORT, "short", 2, K_INT },
    { MPI_INT, "int", 4, K_INT },
    { MPI_LONG, "long", 8, K_INT },
    { MPI_LONG_LONG, "long long", 8, K_INT },
    { MPI_UNSIGNED_CHAR, "unsigned char", 1, K_UINT },
    { MPI_UNSIGNED_SHORT, "unsigned short", 2, K_UINT },
    { MPI_UNSIGNED, "unsigned", 4, K_UINT },
    { MPI_UNSIGNED_LONG, "unsigned long", 8, K_UINT },
    { MPI_INT32_T, "int32_t", 4, K_INT },
    { MPI_INT64_T, "int64_t", 8, K_INT },
    { MPI_UINT32_T, "uint32_t", 4, K_UINT },
    { MPI_UINT64_T, "uint64_t", 8, K_UINT },
    { MPI_FLOAT, "float", 4, K_FLOAT },
    { MPI_DOUBLE, "double", 8, K_FLOAT },
    { MPI_C_BOOL, "bool", 1, K_BOOL },
};
static const struct {
    MPI_Op op;
    const char *name;
    bool arith, logical, bitwise;
} ops[] = {
    { MPI_SUM, "SUM", true, false, false },      { MPI_PROD, "PROD", true, false, false },
    { MPI_MAX, "MAX", true, false, false },      { MPI_MIN, "MIN", true, false, false },
    { MPI_LAND, "LAND", false, true, false },    { MPI_LOR, "LOR", false, true, false },
    { MPI_LXOR, "LXOR", false, true, false },    { MPI_BAND, "BAND", false, false, true },
    { MPI_BOR, "BOR", false, false, true },      { MPI_BXOR, "BXOR", false, false, true },
    { MPI_REPLACE, "REPLACE", true, true, true },
};

static bool op_applies(int o, enum kind k)
{
    if (MPI_REPLACE == ops[o].op) {
        return true;
    }
    switch (k) {
    case K_INT:
    case K_UINT: return true;    /* C integers take every op */
    case K_FLOAT: return ops[o].arith;
    case K_BOOL: return ops[o].logical;
    }
    return false;
}

/* Values as doubles: exact for everything used here (small integers, and
 * floats that are small integers). */
static double get_val(const void *p, int t)
{
    switch (types[t].kind) {
    case K_FLOAT:
        return 4 == types[t].bytes ? *(const float *) p : *(const double *) p;
    case K_BOOL:
        return *(const bool *) p;
    case K_INT:
        switch (types[t].bytes) {
        case 1: return *(const signed char *) p;
        case 2: return *(const short *) p;
        case 4: return *(const int32_t *) p;
        default: return (double) *(const int64_t *) p;
        }
    case K_UINT:
        switch (types[t].bytes) {
        case 1: return *(const unsigned char *) p;
        case 2: return *(const unsigned short *) p;
        case 4: return *(const uint32_t *) p;
        default: return (double) *(const uint64_t *) p;
        }
    }
    return 0;
}

static void set_val(void *p, int t, double v)
{
    switch (types[t].kind) {
    case K_FLOAT:
        if (4 == types[t].bytes) *(float *) p = (float) v; else *(double *) p = v;
        return;
    case K_BOOL:
        *(bool *) p = v != 0;
        return;
    default:
        switch (types[t].bytes) {
        case 1: *(signed char *) p = (signed char) (int64_t) v; return;
        case 2: *(short *) p = (short) (int64_t) v; return;
        case 4: *(int32_t *) p = (int32_t) (int64_t) v; return;
        default: *(int64_t *) p = (int64_t) v; return;
        }
    }
}

/* Operand of rank r for element e: small, distinct bit patterns; for the
 * logical ops some zeros. */
static double operand(int r, int e, int o, enum kind k)
{
    if (K_BOOL == k || ops[o].logical) {
        return (r + e) % 3 != 0;
    }
    if (MPI_PROD == ops[o].op) {
        return (r + e) % 2 + 1;                 /* 1 or 2: no overflow */
    }
    return 3 + ((r * 5 + e * 3) % 11);          /* 3..13 */
}

static double fold(int o, double a, double b)
{
    int64_t x = (int64_t) a, y = (int64_t) b;
    if (MPI_SUM == ops[o].op) return a + b;
    if (MPI_PROD == ops[o].op) return a * b;
    if (MPI_MAX == ops[o].op) return a > b ? a : b;
    if (MPI_MIN == ops[o].op) return a < b ? a : b;
    if (MPI_LAND == ops[o].op) return (a != 0) && (b != 0);
    if (MPI_LOR == ops[o].op) return (a != 0) || (b != 0);
    if (MPI_LXOR == ops[o].op) return (a != 0) != (b != 0);
    if (MPI_BAND == ops[o].op) return (double) (x & y);
    if (MPI_BOR == ops[o].op) return (double) (x | y);
    if (MPI_BXOR == ops[o].op) return (double) (x ^ y);
    return b;
}

static double initial(int e, int o, enum kind k)
{
    if (K_BOOL == k || ops[o].logical) {
        return 1 - e % 2;
    }
    return MPI_PROD == ops[o].op ? 1 : 6 + e;
}

/* One (type, op, count): every rank accumulates into rank 0 under
 * lock_all; fetch: MPI_Get_accumulate (count > 1) or MPI_Fetch_and_op,
 * whose fetched values must be states the word went through. */
static void acc_one(int t, int o, int count, bool fetch, MPI_Win win, uint8_t *base)
{
    int b = types[t].bytes;
    uint8_t src[3 * 8], res[3 * 8];
    enum kind k = types[t].kind;
    int rc;

    if (0 == rank) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        for (int e = 0; e < count; e++) {
            set_val(base + e * b, t, initial(e, o, k));
        }
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int e = 0; e < count; e++) {
        set_val(src + e * b, t, operand(rank, e, o, k));
    }
    MPI_Win_lock_all(0, win);
    if (!fetch) {
        rc = MPI_Accumulate(src, count, types[t].type, 0, 0, count, types[t].type, ops[o].op,
                            win);
    } else if (1 == count) {
        rc = MPI_Fetch_and_op(src, res, types[t].type, 0, 0, ops[o].op, win);
    } else {
        rc = MPI_Get_accumulate(src, count, types[t].type, res, count, types[t].type, 0, 0,
                                count, types[t].type, ops[o].op, win);
    }
    CHECK(MPI_SUCCESS == rc, "%s %s count %d%s: error %d", types[t].name, ops[o].name, count,
          fetch ? " (fetching)" : "", rc);
    rc = MPI_Win_unlock_all(win);
    CHECK(MPI_SUCCESS == rc, "%s %s count %d%s: unlock_all error %d", types[t].name,
          ops[o].name, count, fetch ? " (fetching)" : "", rc);
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        for (int e = 0; e < count; e++) {
            double got = get_val(base + e * b, t);
            if (MPI_REPLACE == ops[o].op) {
                bool any = false;
                for (int r = 0; r < size; r++) {
                    set_val(src, t, operand(r, e, o, k));
                    any |= get_val(src, t) == got;
                }
                CHECK(any, "%s %s count %d%s: element %d is %g, no rank's operand",
                      types[t].name, ops[o].name, count, fetch ? " (fetching)" : "", e, got);
            } else {
                double want = initial(e, o, k);
                uint8_t tmp[8];
                for (int r = 0; r < size; r++) {
                    want = fold(o, want, operand(r, e, o, k));
                }
                set_val(tmp, t, want);      /* to the type's width */
                CHECK(got == get_val(tmp, t), "%s %s count %d%s: element %d is %g, not %g",
                      types[t].name, ops[o].name, count, fetch ? " (fetching)" : "", e, got,
                      get_val(tmp, t));
            }
        }
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void case_acc(void)
{
    uint8_t *base;
    MPI_Win win;
    int n = 0;

    win_make(64, 1, &base, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);     /* name the combination */
    memset(base, 0, 64);
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
            if (!op_applies((int) o, types[t].kind)) {
                continue;
            }
            for (int fetch = 0; fetch < 2; fetch++) {
                acc_one((int) t, (int) o, 1, fetch, win, base);
                acc_one((int) t, (int) o, 3, fetch, win, base);
                n += 2;
            }
        }
    }
    win_done(&win, base);
    if (0 == rank) {
        printf("rma acc: %d (type, op, count) combinations exact\n", n);
    }
}

/* ---- synchronization modes ------------------------------------------------------- */

static void ring_check(const uint8_t *buf, size_t len, int from, int round, const char *how)
{
    size_t bad = verify(buf, len, (uint64_t) from * 1000 + (uint64_t) round);
    CHECK(bad == (size_t) -1, "%s: %zu B from rank %d wrong at byte %zu", how, len, from, bad);
}

static void case_sync(void)
{
    const size_t max = 1 << 20;
    uint8_t *base, *src = malloc(max), *dst = malloc(max);
    int right = (rank + 1) % size, left = (rank + size - 1) % size, round = 0;
    MPI_Group world, peers;
    MPI_Win win;

    CHECK(src && dst, "malloc");
    win_make(max, 1, &base, &win);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    for (size_t len = 8; len <= max; len *= 8, round++) {
        /* fence: put to the right, then get it back from the right */
        fill(src, len, (uint64_t) rank * 1000 + (uint64_t) round);
        MPI_Win_fence(0, win);
        MPI_Put(src, (int) len, MPI_BYTE, right, 0, (int) len, MPI_BYTE, win);
        MPI_Win_fence(0, win);
        ring_check(base, len, left, round, "fence put");
        MPI_Get(dst, (int) len, MPI_BYTE, right, 0, (int) len, MPI_BYTE, win);
        MPI_Win_fence(0, win);
        ring_check(dst, len, rank, round, "fence get");

        /* PSCW: expose to the left neighbour, access the right one */
        fill(src, len, (uint64_t) rank * 1000 + (uint64_t) round + 500);
        MPI_Group_incl(world, 1, &left, &peers);
        MPI_Win_post(peers, 0, win);
        MPI_Group_free(&peers);
        MPI_Group_incl(world, 1, &right, &peers);
        MPI_Win_start(peers, 0, win);
        MPI_Put(src, (int) len, MPI_BYTE, right, 0, (int) len, MPI_BYTE, win);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
        MPI_Group_free(&peers);
        ring_check(base, len, left, round + 500, "PSCW put");

        /* lock + flush: put, flush (remote completion), get it back */
        MPI_Barrier(MPI_COMM_WORLD);
        fill(src, len, (uint64_t) rank * 1000 + (uint64_t) round + 700);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
        MPI_Put(src, (int) len, MPI_BYTE, right, 0, (int) len, MPI_BYTE, win);
        MPI_Win_flush(right, win);
        memset(dst, 0, len);
        MPI_Get(dst, (int) len, MPI_BYTE, right, 0, (int) len, MPI_BYTE, win);
        MPI_Win_unlock(right, win);
        ring_check(dst, len, rank, round + 700, "lock/flush put then get");

        /* lock_all + flush_all: put to the right, then everyone checks */
        fill(src, len, (uint64_t) rank * 1000 + (uint64_t) round + 900);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock_all(0, win);
        MPI_Put(src, (int) len, MPI_BYTE, right, 0, (int) len, MPI_BYTE, win);
        MPI_Win_flush_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_sync(win);
        ring_check(base, len, left, round + 900, "lock_all/flush_all put");
        MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Group_free(&world);
    win_done(&win, base);
    free(src);
    free(dst);
}

/* ---- dynamic windows ------------------------------------------------------------- */

static void case_dynamic(void)
{
    enum { LEN = 65536 };
    uint8_t *mine = malloc(LEN), *src = malloc(LEN), *dst = malloc(LEN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Aint addr, *addrs = malloc(sizeof(MPI_Aint) * (size_t) size);
    MPI_Win win;

    CHECK(mine && src && dst && addrs, "malloc");
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    for (int round = 0; round < 3; round++) {
        memset(mine, 0, LEN);
        MPI_Win_attach(win, mine, LEN);
        MPI_Get_address(mine, &addr);
        MPI_Allgather(&addr, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
        fill(src, LEN, (uint64_t) rank * 1000 + 100 + (uint64_t) round);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
        MPI_Put(src, LEN, MPI_BYTE, right, addrs[right], LEN, MPI_BYTE, win);
        MPI_Win_flush(right, win);
        MPI_Get(dst, LEN, MPI_BYTE, right, addrs[right], LEN, MPI_BYTE, win);
        MPI_Win_unlock(right, win);
        ring_check(dst, LEN, rank, 100 + round, "dynamic window put then get");
        MPI_Barrier(MPI_COMM_WORLD);
        ring_check(mine, LEN, left, 100 + round, "dynamic window target");
        MPI_Win_detach(win, mine);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_free(&win);
    free(mine);
    free(src);
    free(dst);
    free(addrs);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "create")) {
            use_create = true;          /* a flavour, not a case */
            argv[i] = (char *) "";
        }
    }
    if (argc > 1 && use_create && 2 == argc) {
        argc = 1;                       /* "create" alone: every case */
    }
    if (want(argc, argv, "counter")) {
        case_counter();
    }
    if (want(argc, argv, "cas")) {
        case_cas();
    }
    if (want(argc, argv, "acc")) {
        case_acc();
    }
    if (want(argc, argv, "sync")) {
        case_sync();
    }
    if (want(argc, argv, "dynamic")) {
        case_dynamic();
    }
    if (0 == rank) {
        printf("rma: ok on %d ranks\n", size);
    }
    MPI_Finalize();
    return 0;
}
