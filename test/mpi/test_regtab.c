/*
 * test_regtab.c - the registration table that the fallback's put/get and
 * every peer's atomics are checked against (btl_siwarp_regtab.c), driven
 * directly: handle -> rights -> bounds in that order, overflow of
 * addr + len, removal keeping other entries findable, growth to many
 * entries.  Built by run-mpi-tests.sh with plain cc; prints TAP-ish lines
 * and exits non-zero on the first failure.
 */
#include "../../btl_siwarp/btl_siwarp_regtab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define R MCA_BTL_SIWARP_REGTAB_READ
#define W MCA_BTL_SIWARP_REGTAB_WRITE
#define A MCA_BTL_SIWARP_REGTAB_ATOMIC

#include "test_expect.h"

int main(void)
{
    mca_btl_siwarp_regtab_t t;
    const uint64_t base = 0x7f0000001000ull, len = 0x10000;

    EXPECT(mca_btl_siwarp_regtab_init(&t), 0);
    EXPECT(mca_btl_siwarp_regtab_add(&t, 0x100, base, len, W), 0);
    EXPECT(mca_btl_siwarp_regtab_add(&t, 0x200, base + len, len, R), 0);
    EXPECT(mca_btl_siwarp_regtab_add(&t, 0x100, base, len, W), -EEXIST);
    EXPECT(mca_btl_siwarp_regtab_add(&t, 0, base, len, W), -EINVAL);
    EXPECT(mca_btl_siwarp_regtab_add(&t, 0x300, UINT64_MAX - 10, 100, W), -EINVAL);

    /* inside, exactly the whole region, zero bytes at either end */
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x100, base, len, W), 0);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x100, base + 10, 100, W), 0);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x100, base + len, 0, W), 0);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x100, base, 0, W), 0);
    /* handle first: an unknown handle is -ENOENT even with a good range */
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x101, base, 8, W), -ENOENT);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0, base, 8, W), -ENOENT);
    /* rights before bounds */
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x100, base, 8, R), -EACCES);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x200, base + len, 8, W), -EACCES);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x200, base, 8, W), -EACCES);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x200, base + len, 8, R), 0);
    /* the atomic right is its own: write access does not grant it */
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x100, base, 8, A), -EACCES);
    EXPECT(mca_btl_siwarp_regtab_add(&t, 0x400, base + 4 * len, len, W | A), 0);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x400, base + 4 * len + 8, 8, A), 0);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x400, base + 4 * len, 8, R), -EACCES);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x400, base + 5 * len - 4, 8, A), -ERANGE);
    EXPECT(mca_btl_siwarp_regtab_remove(&t, 0x400), 0);
    /* bounds: one byte below, one past, straddling, another region's range */
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x100, base - 1, 1, W), -ERANGE);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x100, base + len, 1, W), -ERANGE);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x100, base + len - 4, 8, W), -ERANGE);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x100, base + len, 16, W), -ERANGE);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x100, base - (2u << 20), len, W), -ERANGE);
    /* overflow: addr + len wraps past 2^64 and would compare "inside" */
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x100, base + 8, UINT64_MAX - 4, W), -ERANGE);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x100, UINT64_MAX - 15, 32, W), -ERANGE);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x100, UINT64_MAX, UINT64_MAX, W), -ERANGE);

    /* removal: gone, the other stays */
    EXPECT(mca_btl_siwarp_regtab_remove(&t, 0x100), 0);
    EXPECT(mca_btl_siwarp_regtab_remove(&t, 0x100), -ENOENT);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x100, base, 8, W), -ENOENT);
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x200, base + len, 8, R), 0);

    /* growth and deletion with collisions: every live entry stays findable */
    for (uint32_t i = 1; i <= 20000; i++) {
        EXPECT(mca_btl_siwarp_regtab_add(&t, i << 8 | 0x11, i * 0x100000ull, 4096, R | W), 0);
    }
    for (uint32_t i = 1; i <= 20000; i += 3) {
        EXPECT(mca_btl_siwarp_regtab_remove(&t, i << 8 | 0x11), 0);
    }
    for (uint32_t i = 1; i <= 20000; i++) {
        EXPECT(mca_btl_siwarp_regtab_check(&t, i << 8 | 0x11, i * 0x100000ull + 4000, 96,
                                           R | W), (i - 1) % 3 ? 0 : -ENOENT);
    }
    EXPECT(mca_btl_siwarp_regtab_check(&t, 0x200, base + len, 8, R), 0);
    mca_btl_siwarp_regtab_fini(&t);

    if (failures) {
        printf("regtab: %d failures\n", failures);
        return 1;
    }
    printf("regtab: ok\n");
    return 0;
}
