/*
 * btl_siwarp_ifnear.h - how near a network interface is to the cores a rank
 * runs on (the hardware topology: hwloc), and the order of addresses that
 * follows from it.  Free of Open MPI types, so that test_ifnear can drive it
 * with a topology of its own; btl_siwarp_topo.c feeds it Open MPI's.
 */
#ifndef MCA_BTL_SIWARP_IFNEAR_H
#define MCA_BTL_SIWARP_IFNEAR_H

#include <stdint.h>
#ifdef SIWARP_HAVE_HWLOC
#include <hwloc.h>
#endif

/* One of our interface addresses, with its nearness. */
typedef struct mca_btl_siwarp_ifnear_net_t {
    int family;          /* 4 or 6 */
    uint8_t addr[16];
    int prefix;          /* bits of the network part */
    int near;            /* mca_btl_siwarp_ifnear() of its interface */
} mca_btl_siwarp_ifnear_net_t;

#ifdef SIWARP_HAVE_HWLOC
/* How near the network interface ifname is to the cores in bound: the depth
 * of the deepest object of the topology that holds both the interface's
 * locality (the non-I/O object its PCI device hangs from) and bound.  0 is
 * the whole machine: an interface on another package, or any interface when
 * the rank is not bound to part of the machine.  -1: the topology does not
 * know the interface (loopback, veth, bridges, bonds: no PCI device), which
 * callers treat as 0. */
int mca_btl_siwarp_ifnear(hwloc_topology_t topo, hwloc_const_cpuset_t bound, const char *ifname);
#endif

/* Do a and b agree in their first bits bits (a network prefix)? */
int mca_btl_siwarp_prefix_match(const uint8_t *a, const uint8_t *b, int bits);

/* The nearness of the best of our n interface networks that holds addr
 * (family 4 or 6), or -1 when none does (the peer's address is reached
 * through a router, or not at all). */
int mca_btl_siwarp_ifnear_score(const mca_btl_siwarp_ifnear_net_t *nets, int n, int family,
                                const uint8_t *addr);

/* perm[0..n-1] := 0..n-1 ordered by key, highest first; equal keys keep
 * their order (the order a peer published, or the kernel's). */
void mca_btl_siwarp_ifnear_sort(const int *key, int n, int *perm);

#endif
