/*
 * qpn-lookup.c - what naming the QP of a verbs completion costs as the
 * QPs grow: the walk hw_verbs.c swp_hw_qp_of did (every QP of the context
 * on one list, its verbs QP's number compared until found) against the
 * table it uses now (common/qpn_map.c; this program links that very
 * file).  The lookup runs for every completion polled from a verbs device
 * (an RNIC, kernel siw), so with the walk a completion cost O(QPs).
 *
 *   cc -O2 -Icommon -o qpn-lookup contrib/probes/qpn-lookup.c common/qpn_map.c
 *   ./qpn-lookup [N...]              (default 64 1024 8192 65536)
 *
 * The walk's QPs are blocks of 1,024 bytes (a siwarp_qp with its verbs
 * half is of that order) linked in creation order, each holding its
 * number behind two pointer hops as swp_hw_qp_of reads it (qp->hw->ibqp
 * ->qp_num).  For each N: lookups of numbers drawn at random among the N
 * live ones, each checked to find its QP.  Prints "walk N ns_per_lookup"
 * and "table N ns_per_lookup".
 */
#include "qpn_map.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct ibqp { uint32_t qp_num; };
struct hwqp { struct ibqp *ibqp; };
struct qp   { struct qp *next; struct hwqp *hw; char pad[1024 - 16]; };

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static struct qp *walk(struct qp *head, uint32_t qpn)
{
    for (struct qp *q = head; q; q = q->next)
        if (q->hw->ibqp && q->hw->ibqp->qp_num == qpn)
            return q;
    return NULL;
}

int main(int argc, char **argv)
{
    static const unsigned dflt[] = { 64, 1024, 8192, 65536 };
    int nsizes = argc > 1 ? argc - 1 : 4;

    for (int k = 0; k < nsizes; k++) {
        unsigned n = argc > 1 ? (unsigned)atoi(argv[k + 1]) : dflt[k];
        struct qp **qps = calloc(n, sizeof(*qps)), *head = NULL;
        struct swp_qpn_map m = { 0 };
        unsigned iters = n >= 8192 ? 20000 : 200000, bad = 0;
        volatile uintptr_t sink = 0;
        double t0;

        for (unsigned i = 0; i < n; i++) {
            qps[i] = calloc(1, sizeof(struct qp));
            qps[i]->hw = calloc(1, sizeof(struct hwqp));
            qps[i]->hw->ibqp = calloc(1, sizeof(struct ibqp));
            qps[i]->hw->ibqp->qp_num = 1000 + i * 3;     /* sparse, as devices give */
            qps[i]->next = head;
            head = qps[i];
            if (swp_qpn_map_put(&m, qps[i]->hw->ibqp->qp_num, qps[i]) < 0)
                return 1;
        }
        srand(1);
        t0 = now_ns();
        for (unsigned i = 0; i < iters; i++) {
            unsigned j = (unsigned)rand() % n;
            struct qp *q = walk(head, 1000 + j * 3);
            bad += q != qps[j];
            sink += (uintptr_t)q;
        }
        printf("walk  %6u %10.1f\n", n, (now_ns() - t0) / iters);
        srand(1);
        t0 = now_ns();
        for (unsigned i = 0; i < iters * 10; i++) {
            unsigned j = (unsigned)rand() % n;
            struct qp *q = swp_qpn_map_get(&m, 1000 + j * 3);
            bad += q != qps[j];
            sink += (uintptr_t)q;
        }
        printf("table %6u %10.1f\n", n, (now_ns() - t0) / (iters * 10.0));
        if (bad)
            printf("# %u lookups found the wrong QP\n", bad);
        swp_qpn_map_free(&m);
        (void)sink;
    }
    return 0;
}
