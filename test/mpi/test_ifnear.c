/*
 * test_ifnear.c - interface nearness and address order
 * (btl_siwarp_ifnear.c), driven with a topology of our own: two packages of
 * one core each, a network NIC on each ("nica0" on package 0, "nicb0" on
 * package 1), an InfiniBand-style device named like a NIC on package 0
 * ("nicb1", not a network device, so not an interface), and a NIC whose
 * host bridge hangs from the machine itself ("nicm0").  Built by
 * run-mpi-tests.sh with cc against libhwloc; prints a line per failed check
 * and exits non-zero on any.
 */
#include "../../btl_siwarp/btl_siwarp_ifnear.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "test_expect.h"

#define SETS(c, n) \
    "cpuset=\"" c "\" complete_cpuset=\"" c "\" nodeset=\"" n "\" complete_nodeset=\"" n "\""
#define NIC(gp, bus, name, type)                                                          \
    "<object type=\"Bridge\" gp_index=\"" gp "0\" bridge_type=\"0-1\" depth=\"0\" "       \
    "bridge_pci=\"0000:[" bus "-" bus "]\">"                                              \
    "<object type=\"PCIDev\" gp_index=\"" gp "1\" pci_busid=\"0000:" bus ":00.0\" "       \
    "pci_type=\"0200 [8086:1572] [8086:0000] 01\" pci_link_speed=\"0.000000\">"           \
    "<object type=\"OSDev\" gp_index=\"" gp "2\" name=\"" name "\" osdev_type=\"" type "\"/>" \
    "</object></object>"
#define PACKAGE(i, c, n, gp)                                                               \
    "<object type=\"Package\" os_index=\"" i "\" " SETS(c, n) " gp_index=\"" gp "0\">"   \
    "<object type=\"NUMANode\" os_index=\"" i "\" " SETS(c, n) " gp_index=\"" gp "1\" "  \
    "local_memory=\"1073741824\"/>"                                                       \
    "<object type=\"Core\" os_index=\"" i "\" " SETS(c, n) " gp_index=\"" gp "2\">"      \
    "<object type=\"PU\" os_index=\"" i "\" " SETS(c, n) " gp_index=\"" gp "3\"/>"       \
    "</object>"

static const char topo_xml[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
    "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">"
    "<topology version=\"2.0\">"
    "<object type=\"Machine\" os_index=\"0\" " SETS("0x3", "0x3")
    " allowed_cpuset=\"0x3\" allowed_nodeset=\"0x3\" gp_index=\"1\">"
    PACKAGE("0", "0x1", "0x1", "10") NIC("20", "01", "nica0", "2") NIC("30", "03", "nicb1", "3")
    "</object>"
    PACKAGE("1", "0x2", "0x2", "40") NIC("50", "02", "nicb0", "2") "</object>"
    NIC("60", "04", "nicm0", "2")
    "</object></topology>";

static mca_btl_siwarp_ifnear_net_t net(const char *addr, int prefix, int near)
{
    mca_btl_siwarp_ifnear_net_t n = { 0 };

    n.family = strchr(addr, ':') ? 6 : 4;
    inet_pton(6 == n.family ? AF_INET6 : AF_INET, addr, n.addr);
    n.prefix = prefix;
    n.near = near;
    return n;
}

static int score(const mca_btl_siwarp_ifnear_net_t *nets, int n, const char *addr)
{
    uint8_t a[16] = { 0 };
    int family = strchr(addr, ':') ? 6 : 4;

    inet_pton(6 == family ? AF_INET6 : AF_INET, addr, a);
    return mca_btl_siwarp_ifnear_score(nets, n, family, a);
}

static void check_nearness(void)
{
    hwloc_topology_t t;
    hwloc_bitmap_t pu0 = hwloc_bitmap_alloc(), pu1 = hwloc_bitmap_alloc();
    hwloc_bitmap_t both = hwloc_bitmap_alloc(), none = hwloc_bitmap_alloc();

    if (0 != hwloc_topology_init(&t) ||
        0 != hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT) ||
        0 != hwloc_topology_set_xmlbuffer(t, topo_xml, (int) sizeof(topo_xml)) ||
        0 != hwloc_topology_load(t)) {
        fprintf(stderr, "could not load the test topology\n");
        failures++;
        return;
    }
    hwloc_bitmap_only(pu0, 0);
    hwloc_bitmap_only(pu1, 1);
    hwloc_bitmap_set_range(both, 0, 1);

    /* bound to package 0: its NIC shares the package, the other's only the machine */
    EXPECT(mca_btl_siwarp_ifnear(t, pu0, "nica0"), 1);
    EXPECT(mca_btl_siwarp_ifnear(t, pu0, "nicb0"), 0);
    /* and the other way round */
    EXPECT(mca_btl_siwarp_ifnear(t, pu1, "nica0"), 0);
    EXPECT(mca_btl_siwarp_ifnear(t, pu1, "nicb0"), 1);
    /* not bound to part of the machine: nothing to choose */
    EXPECT(mca_btl_siwarp_ifnear(t, both, "nica0"), 0);
    EXPECT(mca_btl_siwarp_ifnear(t, both, "nicb0"), 0);
    EXPECT(mca_btl_siwarp_ifnear(t, none, "nica0"), 0);
    EXPECT(mca_btl_siwarp_ifnear(t, NULL, "nicb0"), 0);
    /* a NIC whose bridge hangs from the machine is as near to every core */
    EXPECT(mca_btl_siwarp_ifnear(t, pu0, "nicm0"), 0);
    EXPECT(mca_btl_siwarp_ifnear(t, pu1, "nicm0"), 0);
    /* unknown to the topology: loopback, veth, a name only a non-network
     * device carries */
    EXPECT(mca_btl_siwarp_ifnear(t, pu0, "lo"), -1);
    EXPECT(mca_btl_siwarp_ifnear(t, pu0, "nicb1"), -1);
    EXPECT(mca_btl_siwarp_ifnear(t, pu0, "nica"), -1);

    hwloc_topology_destroy(t);
    hwloc_bitmap_free(pu0);
    hwloc_bitmap_free(pu1);
    hwloc_bitmap_free(both);
    hwloc_bitmap_free(none);
}

static void check_score(void)
{
    mca_btl_siwarp_ifnear_net_t nets[] = {
        net("10.1.0.1", 24, 1), net("10.2.0.1", 16, 0), net("10.2.7.1", 24, 2),
        net("fd00:1::1", 64, 1), net("192.168.5.9", 32, 3), net("10.9.0.1", 24, -1),
    };
    int n = (int) (sizeof(nets) / sizeof(nets[0]));

    EXPECT(score(nets, n, "10.1.0.7"), 1);
    EXPECT(score(nets, n, "10.1.1.7"), -1);     /* one bit past the /24 */
    EXPECT(score(nets, n, "10.2.9.9"), 0);
    EXPECT(score(nets, n, "10.2.7.200"), 2);    /* in both: the better one */
    EXPECT(score(nets, n, "10.3.0.1"), -1);
    EXPECT(score(nets, n, "192.168.5.9"), 3);   /* a /32 holds itself */
    EXPECT(score(nets, n, "192.168.5.8"), -1);
    EXPECT(score(nets, n, "10.9.0.5"), 0);      /* unknown nearness counts as 0 */
    EXPECT(score(nets, n, "fd00:1::77"), 1);
    EXPECT(score(nets, n, "fd00:1:0:1::77"), -1);
    /* the same 4 octets in the other family are not the same address */
    {
        uint8_t a[16] = { 10, 1, 0, 7 };
        EXPECT(mca_btl_siwarp_ifnear_score(nets, n, 6, a), -1);
    }
    /* a prefix outside its family's range holds nothing */
    {
        mca_btl_siwarp_ifnear_net_t bad[] = { net("10.1.0.1", 33, 1), net("10.1.0.1", -1, 1) };
        EXPECT(score(bad, 2, "10.1.0.1"), -1);
    }
    /* /0 holds every address of its family */
    {
        mca_btl_siwarp_ifnear_net_t all[] = { net("0.0.0.0", 0, 2) };
        EXPECT(score(all, 1, "172.16.1.1"), 2);
        EXPECT(score(all, 1, "fd00::1"), -1);
    }
}

static void check_sort(void)
{
    int key[] = { 0, 1, 0, 1, -1, 2 }, perm[6];
    int want[] = { 5, 1, 3, 0, 2, 4 };
    int same[] = { 0, 0, 0 }, p3[3];

    mca_btl_siwarp_ifnear_sort(key, 6, perm);
    for (int i = 0; i < 6; i++) {
        EXPECT(perm[i], want[i]);
    }
    mca_btl_siwarp_ifnear_sort(same, 3, p3);     /* equal keys: order kept */
    for (int i = 0; i < 3; i++) {
        EXPECT(p3[i], i);
    }
    mca_btl_siwarp_ifnear_sort(key, 0, perm);   /* nothing to do, no crash */
}

int main(void)
{
    check_nearness();
    check_score();
    check_sort();
    if (failures) {
        printf("ifnear: %d checks failed\n", failures);
        return 1;
    }
    printf("ifnear: ok\n");
    return 0;
}
