/*
 * test_eptab.c - the endpoint table by peer name (btl_siwarp_eptab.c),
 * driven directly: every name of many finds its own endpoint and never
 * another's (names that differ in the jobid only, in the vpid only, or are
 * the two halves swapped), one endpoint per name, removal only of the
 * endpoint the name maps to, and connect/disconnect cycles that remove and
 * add the same names again.  Built by run-mpi-tests.sh with cc against
 * libopen-pal; prints TAP-ish lines and exits non-zero on any failure.
 */
#include "../../btl_siwarp/btl_siwarp_eptab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "test_expect.h"

#define JOBS 3
#define RANKS 5000      /* past several of the table's growth steps */

static opal_process_name_t name(uint32_t jobid, uint32_t vpid)
{
    opal_process_name_t n;

    n.jobid = jobid;
    n.vpid = vpid;
    return n;
}

/* a distinct fake endpoint for each name: the table never dereferences it */
static char eps[JOBS][RANKS];

int main(void)
{
    opal_hash_table_t t;
    opal_process_name_t n, swapped;
    static char other;
    int round;

    EXPECT(mca_btl_siwarp_eptab_init(&t), 0);

    /* empty: nothing found */
    n = name(7, 0);
    EXPECT_PTR(mca_btl_siwarp_eptab_find(&t, &n), NULL);
    EXPECT(mca_btl_siwarp_eptab_remove(&t, &n, &eps[0][0]), -ENOENT);
    EXPECT(mca_btl_siwarp_eptab_add(&t, &n, NULL), -EINVAL);

    /* several jobs (spawned ones share vpids with ours) */
    for (uint32_t j = 0; j < JOBS; j++) {
        for (uint32_t v = 0; v < RANKS; v++) {
            n = name(7 + j, v);
            EXPECT(mca_btl_siwarp_eptab_add(&t, &n, &eps[j][v]), 0);
        }
    }
    for (uint32_t j = 0; j < JOBS; j++) {
        for (uint32_t v = 0; v < RANKS; v++) {
            n = name(7 + j, v);
            EXPECT_PTR(mca_btl_siwarp_eptab_find(&t, &n), &eps[j][v]);
        }
    }
    /* a name nobody added: same vpid, unknown job; known job, vpid past the end;
     * jobid and vpid swapped */
    n = name(6, 1);
    EXPECT_PTR(mca_btl_siwarp_eptab_find(&t, &n), NULL);
    n = name(7, RANKS);
    EXPECT_PTR(mca_btl_siwarp_eptab_find(&t, &n), NULL);
    swapped = name(1, 7);
    EXPECT_PTR(mca_btl_siwarp_eptab_find(&t, &swapped), NULL);
    printf("ok 1 - %d names find their own endpoint, unknown names none\n", JOBS * RANKS);

    /* one endpoint per name: a second add fails and leaves the first */
    n = name(8, 42);
    EXPECT(mca_btl_siwarp_eptab_add(&t, &n, &other), -EEXIST);
    EXPECT_PTR(mca_btl_siwarp_eptab_find(&t, &n), &eps[1][42]);
    /* removal names the endpoint: a stale one removes nothing */
    EXPECT(mca_btl_siwarp_eptab_remove(&t, &n, &other), -ENOENT);
    EXPECT_PTR(mca_btl_siwarp_eptab_find(&t, &n), &eps[1][42]);
    printf("ok 2 - one endpoint per name; a stale endpoint removes nothing\n");

    /* disconnect/connect cycles: the second job leaves and comes back with
     * new endpoints; the others stay findable throughout */
    for (round = 0; round < 30; round++) {
        for (uint32_t v = 0; v < RANKS; v += 1 + (uint32_t) round % 3) {
            n = name(8, v);
            EXPECT(mca_btl_siwarp_eptab_remove(&t, &n, &eps[1][v]), 0);
            EXPECT_PTR(mca_btl_siwarp_eptab_find(&t, &n), NULL);
            EXPECT(mca_btl_siwarp_eptab_remove(&t, &n, &eps[1][v]), -ENOENT);
        }
        for (uint32_t v = 0; v < RANKS; v++) {
            n = name(7, v);
            EXPECT_PTR(mca_btl_siwarp_eptab_find(&t, &n), &eps[0][v]);
            n = name(9, v);
            EXPECT_PTR(mca_btl_siwarp_eptab_find(&t, &n), &eps[2][v]);
        }
        for (uint32_t v = 0; v < RANKS; v += 1 + (uint32_t) round % 3) {
            n = name(8, v);
            EXPECT(mca_btl_siwarp_eptab_add(&t, &n, &eps[1][v]), 0);
        }
        for (uint32_t v = 0; v < RANKS; v++) {
            n = name(8, v);
            EXPECT_PTR(mca_btl_siwarp_eptab_find(&t, &n), &eps[1][v]);
        }
    }
    printf("ok 3 - 30 disconnect/connect cycles keep every name right\n");

    mca_btl_siwarp_eptab_fini(&t);
    if (failures) {
        printf("not ok - %d failures\n", failures);
        return 1;
    }
    return 0;
}
