/*
 * ep-lookup.c - what finding an endpoint by peer name costs as the peers
 * grow: the list walk btl_siwarp's mca_btl_siwarp_ep_lookup did (every
 * endpoint on one opal_list, compared by process name until found) against
 * the hash table it uses now (btl_siwarp_eptab.c, an opal_hash_table_t
 * keyed by the 64-bit name; this program links that very file).  The
 * lookup runs for every peer ob1 adds and every connection a process
 * accepts, so with the walk connecting to all of N peers visited about
 * N^2/2 list nodes (issue #38, the scale study).  The walk half is the study's
 * model from the scale study, unchanged.
 *
 *   cc -O2 -I/usr/lib/x86_64-linux-gnu/openmpi/include \
 *      -I/usr/lib/x86_64-linux-gnu/openmpi/include/openmpi -o ep-lookup \
 *      contrib/probes/ep-lookup.c btl_siwarp/btl_siwarp_eptab.c \
 *      -L/usr/lib/x86_64-linux-gnu/openmpi/lib -lopen-pal
 *   ./ep-lookup [N...]               (default 64 1024 8192 65536)
 *
 * Each endpoint is a 1,040-byte block (sizeof(mca_btl_siwarp_endpoint_t)
 * on x86-64, Open MPI 4.1) allocated, as in the BTL, just before its QP
 * (a 97 KiB block whose first two pages are touched), so consecutive
 * endpoints lie a QP apart as they do in a running process.  For each N:
 * lookups of names drawn at random among the N, checked to return the
 * endpoint of that name; ns per lookup and the estimate for connecting
 * every peer: N adds plus N/2 accepts, each one lookup.
 * Prints "walk N ns_per_lookup ns_per_node est_connect_all_s" and
 * "hash N ns_per_lookup - est_connect_all_s".
 */
#include "../../btl_siwarp/btl_siwarp_eptab.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EP_BYTES 1040
#define QP_BYTES (97 * 1024)

struct ep {
    struct ep *next;            /* opal_list_item_t's links come first */
    struct ep *prev;
    uint32_t jobid, vpid;       /* opal_process_name_t */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct ep *lookup(struct ep *head, uint32_t jobid, uint32_t vpid)
{
    for (struct ep *e = head; e; e = e->next) {
        if (e->jobid == jobid && e->vpid == vpid) {
            return e;
        }
    }
    return NULL;
}

static void one(uint32_t n)
{
    struct ep *head = NULL, *tail = NULL;
    char **qps = malloc(n * sizeof(*qps));
    uint64_t x = 88172645463325252ull, visited = 0;
    uint32_t lookups = n < 4096 ? 200000 / (n / 64 + 1) + 1000 : 2000;
    uint32_t hlookups = 2000000;
    opal_hash_table_t t;

    if (!qps || 0 != mca_btl_siwarp_eptab_init(&t)) {
        exit(1);
    }
    for (uint32_t i = 0; i < n; i++) {
        struct ep *e = malloc(EP_BYTES);
        if (!e || !(qps[i] = malloc(QP_BYTES))) {
            perror("malloc");
            exit(1);
        }
        memset(e, 0, EP_BYTES);
        memset(qps[i], 1, 8192);        /* the QP and its small rings */
        e->jobid = 7;
        e->vpid = i;
        if (tail) {
            tail->next = e;
            e->prev = tail;
        } else {
            head = e;
        }
        tail = e;
        if (0 != mca_btl_siwarp_eptab_add(&t, (opal_process_name_t *) &e->jobid, e)) {
            abort();
        }
    }
    double t0 = now_s();
    for (uint32_t k = 0; k < lookups; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t v = (uint32_t) (x % n);
        struct ep *e = lookup(head, 7, v);
        if (!e || e->vpid != v) {
            abort();
        }
        visited += v + 1;
    }
    double dt = now_s() - t0;
    double per = dt / lookups, node = dt / (double) visited;
    printf("walk %u %.0f %.2f %.1f\n", n, per * 1e9, node * 1e9, 1.5 * n * per);
    fflush(stdout);

    t0 = now_s();
    for (uint32_t k = 0; k < hlookups; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        opal_process_name_t name = { .jobid = 7, .vpid = (uint32_t) (x % n) };
        struct ep *e = mca_btl_siwarp_eptab_find(&t, &name);
        if (!e || e->vpid != name.vpid) {   /* and the endpoint is touched, as a hit is */
            abort();
        }
    }
    dt = now_s() - t0;
    per = dt / hlookups;
    printf("hash %u %.0f - %.4f\n", n, per * 1e9, 1.5 * n * per);
    fflush(stdout);

    mca_btl_siwarp_eptab_fini(&t);
    while (head) {
        struct ep *nx = head->next;
        free(head);
        head = nx;
    }
    for (uint32_t i = 0; i < n; i++) {
        free(qps[i]);
    }
    free(qps);
}

int main(int argc, char **argv)
{
    static const uint32_t def[] = { 64, 1024, 8192, 65536 };

    printf("# walk N ns_per_lookup ns_per_node est_connect_all_s\n"
           "# hash N ns_per_lookup - est_connect_all_s\n");
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            one((uint32_t) strtoul(argv[i], NULL, 0));
        }
    } else {
        for (size_t i = 0; i < sizeof(def) / sizeof(def[0]); i++) {
            one(def[i]);
        }
    }
    return 0;
}
