/*
 * btl_siwarp_ifnear.c - interfaces near a rank's cores (see the header).
 *
 * On a host with a NIC per package (or per NUMA node), traffic of a rank
 * that goes out of the other package's NIC crosses the inter-socket link
 * twice: the socket buffers the kernel copies into are on the rank's node,
 * the DMA is the far NIC's.  Open MPI's own RDMA BTLs and UCX prefer the
 * nearest device for that reason; for a BTL over kernel TCP the device is
 * chosen by the address a connection goes to, so nearness orders addresses:
 * the ones we publish (peers try them in that order) and the peer's ones we
 * try (the one on the network of our nearest interface first).
 */
#include "btl_siwarp_ifnear.h"

#include <string.h>

#ifdef SIWARP_HAVE_HWLOC
int mca_btl_siwarp_ifnear(hwloc_topology_t topo, hwloc_const_cpuset_t bound, const char *ifname)
{
    hwloc_obj_t dev = NULL, at, mine;

    while (NULL != (dev = hwloc_get_next_osdev(topo, dev))) {
        if (HWLOC_OBJ_OSDEV_NETWORK == dev->attr->osdev.type && NULL != dev->name &&
            0 == strcmp(dev->name, ifname)) {
            break;
        }
    }
    if (NULL == dev) {
        return -1;
    }
    at = hwloc_get_non_io_ancestor_obj(topo, dev);
    mine = NULL != bound && !hwloc_bitmap_iszero(bound)
               ? hwloc_get_obj_covering_cpuset(topo, bound)
               : NULL;
    if (NULL == at || NULL == mine) {
        return 0;
    }
    at = hwloc_get_common_ancestor_obj(topo, at, mine);
    return NULL != at && at->depth > 0 ? (int) at->depth : 0;
}
#endif

int mca_btl_siwarp_prefix_match(const uint8_t *a, const uint8_t *b, int bits)
{
    for (int i = 0; bits > 0; i++, bits -= 8) {
        uint8_t mask = bits >= 8 ? 0xff : (uint8_t) (0xff << (8 - bits));
        if ((a[i] ^ b[i]) & mask) {
            return 0;
        }
    }
    return 1;
}

static int in_network(const mca_btl_siwarp_ifnear_net_t *net, int family, const uint8_t *addr)
{
    int max = 4 == family ? 32 : 128;

    return net->family == family && net->prefix >= 0 && net->prefix <= max &&
           mca_btl_siwarp_prefix_match(addr, net->addr, net->prefix);
}

int mca_btl_siwarp_ifnear_score(const mca_btl_siwarp_ifnear_net_t *nets, int n, int family,
                                const uint8_t *addr)
{
    int best = -1;

    for (int i = 0; i < n; i++) {
        if (in_network(&nets[i], family, addr)) {
            int near = nets[i].near < 0 ? 0 : nets[i].near;
            best = near > best ? near : best;
        }
    }
    return best;
}

void mca_btl_siwarp_ifnear_sort(const int *key, int n, int *perm)
{
    /* insertion sort: a handful of addresses, and it is stable */
    for (int i = 0; i < n; i++) {
        int j = i;
        while (j > 0 && key[perm[j - 1]] < key[i]) {
            perm[j] = perm[j - 1];
            j--;
        }
        perm[j] = i;
    }
}
