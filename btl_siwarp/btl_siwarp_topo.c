/*
 * btl_siwarp_topo.c - what the BTL takes from Open MPI's hardware topology
 * (opal_hwloc, the topology mpirun already loaded and shares with its
 * ranks): where the progress thread runs, and how near each interface is
 * to the rank's cores (the order of addresses: btl_siwarp_ifnear.c).
 *
 * A thread inherits its creator's binding: on a rank bound to one core
 * (mpirun's default up to 2 ranks a node) libsiwarp's progress thread would
 * share that core with the computing rank it is meant to stand in for, and
 * run only when the scheduler takes the core from the rank.  Placed on the
 * nearest core that no rank of the job on this node is bound to (same
 * cache, then same package, then anywhere allowed), it answers one-sided
 * peers at once.  A rank that is not bound (--bind-to none, oversubscribed
 * nodes), or a node whose cores all have a rank, leaves the thread where it
 * is: the scheduler already moves an unbound one to whichever core is free.
 */
#include "btl_siwarp.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#include "opal/mca/hwloc/base/base.h"
#include "opal/util/argv.h"
#include <hwloc/glibc-sched.h>

/* Add the cores the other ranks of this job on this node are bound to
 * (the cpusets the runtime publishes for them) to *used.  A
 * rank whose binding is not known adds nothing. */
static void add_local_ranks(hwloc_bitmap_t used)
{
    opal_process_name_t all = { OPAL_PROC_MY_NAME.jobid, OPAL_VPID_WILDCARD }, p = all;
    char *val = NULL, **peers;
    int rc;

    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_LOCAL_PEERS, &all, &val, OPAL_STRING);
    if (OPAL_SUCCESS != rc || NULL == val) {
        return;
    }
    peers = opal_argv_split(val, ',');
    free(val);
    for (int i = 0; peers && peers[i]; i++) {
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        p.vpid = (opal_vpid_t) strtoul(peers[i], NULL, 10);
        val = NULL;
        OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_CPUSET, &p, &val, OPAL_STRING);
        if (set && OPAL_SUCCESS == rc && val && 0 == hwloc_bitmap_list_sscanf(set, val)) {
            hwloc_bitmap_or(used, used, set);
        }
        free(val);
        hwloc_bitmap_free(set);
    }
    opal_argv_free(peers);
}

/* The nearest core outside the rank's binding and every other local
 * rank's, into *set; 1 when found, 0 when there is none to choose (not
 * bound, or every allowed core taken), or an OPAL error.  A core of
 * another rank is no place for it: there the thread waits for that rank's
 * time slice instead of its own rank's, and when that rank busy-polls for
 * this one's answer -- the one-sided case the thread exists for -- longer
 * (2 ranks on 2 cores, passive-target put with the target computing: 134
 * us on the peer's core against 53 on its own). */
static int pick_core(cpu_set_t *set)
{
    hwloc_topology_t topo;
    hwloc_bitmap_t bound, used;
    hwloc_const_cpuset_t allowed;
    hwloc_obj_t o, core = NULL;
    int rc = 0;

    if (OPAL_SUCCESS != opal_hwloc_base_get_topology() || NULL == opal_hwloc_topology) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    topo = opal_hwloc_topology;
    allowed = hwloc_topology_get_allowed_cpuset(topo);
    bound = hwloc_bitmap_alloc();
    used = hwloc_bitmap_alloc();
    if (NULL == bound || NULL == used) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto out;
    }
    if (0 != hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS) ||
        hwloc_bitmap_isincluded(allowed, bound)) {
        rc = 2;                 /* unknown or unbound: nothing to choose */
        goto out;
    }
    hwloc_bitmap_copy(used, bound);
    add_local_ranks(used);
    /* up from the smallest object holding the binding: the first level
     * that holds an allowed core outside it has the nearest one */
    for (o = hwloc_get_obj_covering_cpuset(topo, bound); o && !core; o = o->parent) {
        hwloc_obj_t c = NULL;
        while (NULL != (c = hwloc_get_next_obj_inside_cpuset_by_type(topo, o->cpuset,
                                                                      HWLOC_OBJ_CORE, c))) {
            if (!hwloc_bitmap_intersects(c->cpuset, used) &&
                hwloc_bitmap_intersects(c->cpuset, allowed)) {
                core = c;
                break;
            }
        }
    }
    if (core) {
        hwloc_bitmap_t cs = hwloc_bitmap_dup(core->cpuset);
        if (NULL == cs) {
            rc = OPAL_ERR_OUT_OF_RESOURCE;
            goto out;
        }
        hwloc_bitmap_and(cs, cs, allowed);
        rc = 0 == hwloc_cpuset_to_glibc_sched_affinity(topo, cs, set, sizeof(*set)) ? 1
                                                                                    : OPAL_ERROR;
        hwloc_bitmap_free(cs);
    }
out:
    hwloc_bitmap_free(bound);
    hwloc_bitmap_free(used);
    return rc;
}

void mca_btl_siwarp_topo_place_thread(mca_btl_siwarp_module_t *m)
{
    cpu_set_t set;
    int rc;

    if (!mca_btl_siwarp_component.progress_thread_place) {
        return;
    }
    rc = pick_core(&set);
    if (1 != rc) {
        BTL_VERBOSE(("progress thread: left where it started (%s)",
                     0 == rc ? "no core is free of the node's ranks"
                     : 2 == rc ? "the rank is not bound" : "no topology"));
        return;
    }
    int first = 0;
    while (first < CPU_SETSIZE - 1 && !CPU_ISSET(first, &set)) {
        first++;
    }
    rc = siwarp_ctx_set_progress_thread_cpus(m->ctx, &set, sizeof(set));
    BTL_VERBOSE(("progress thread: on the nearest core no rank of this node is bound to (CPU %d): %s",
                 first, 0 == rc ? "placed" : strerror(-rc)));
}

/* The rank's binding as the kernel has it (sched_getaffinity: mpirun's
 * binding or a taskset around the rank alike; hwloc_get_cpubind would
 * refuse a topology loaded from a file, hwloc_base_topo_file). */
int mca_btl_siwarp_topo_if_near(const char *ifname)
{
    hwloc_bitmap_t bound;
    cpu_set_t set;
    int near = -1;

    if (OPAL_SUCCESS != opal_hwloc_base_get_topology() || NULL == opal_hwloc_topology ||
        0 != sched_getaffinity(0, sizeof(set), &set) || NULL == (bound = hwloc_bitmap_alloc())) {
        return -1;
    }
    if (0 == hwloc_cpuset_from_glibc_sched_affinity(opal_hwloc_topology, bound, &set,
                                                    sizeof(set))) {
        near = mca_btl_siwarp_ifnear(opal_hwloc_topology, bound, ifname);
    }
    hwloc_bitmap_free(bound);
    return near;
}
