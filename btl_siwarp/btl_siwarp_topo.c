/*
 * btl_siwarp_topo.c - where the BTL's progress thread runs, from Open
 * MPI's hardware topology (opal_hwloc, the topology mpirun already loaded
 * and shares with its ranks).
 *
 * A thread inherits its creator's binding: on a rank bound to one core
 * (mpirun's default up to 2 ranks a node) libsiwarp's progress thread would
 * share that core with the computing rank it is meant to stand in for, and
 * run only when the scheduler takes the core from the rank.  Placed on the
 * nearest core the rank is not bound to (same cache, then same package,
 * then anywhere allowed), it answers one-sided peers at once.  A rank that
 * is not bound (--bind-to none, oversubscribed nodes) leaves the thread
 * where it is: the scheduler already moves it to whichever core is free.
 */
#include "btl_siwarp.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#include "opal/mca/hwloc/base/base.h"
#include <hwloc/glibc-sched.h>

/* The nearest core outside the rank's binding, into *set; 1 when found,
 * 0 when there is none to choose (not bound, or bound to every allowed
 * core), or an OPAL error. */
static int pick_core(cpu_set_t *set)
{
    hwloc_topology_t topo;
    hwloc_bitmap_t bound;
    hwloc_const_cpuset_t allowed;
    hwloc_obj_t o, core = NULL;
    int rc = 0;

    if (OPAL_SUCCESS != opal_hwloc_base_get_topology() || NULL == opal_hwloc_topology) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    topo = opal_hwloc_topology;
    allowed = hwloc_topology_get_allowed_cpuset(topo);
    if (NULL == (bound = hwloc_bitmap_alloc())) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (0 != hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS) ||
        hwloc_bitmap_isincluded(allowed, bound)) {
        goto out;               /* unknown or unbound: nothing to choose */
    }
    /* up from the smallest object holding the binding: the first level
     * that holds an allowed core outside it has the nearest one */
    for (o = hwloc_get_obj_covering_cpuset(topo, bound); o && !core; o = o->parent) {
        hwloc_obj_t c = NULL;
        while (NULL != (c = hwloc_get_next_obj_inside_cpuset_by_type(topo, o->cpuset,
                                                                      HWLOC_OBJ_CORE, c))) {
            if (!hwloc_bitmap_intersects(c->cpuset, bound) &&
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
                     0 == rc ? "the rank is not bound, or bound to every core"
                             : "no topology"));
        return;
    }
    int first = 0;
    while (first < CPU_SETSIZE - 1 && !CPU_ISSET(first, &set)) {
        first++;
    }
    rc = siwarp_ctx_set_progress_thread_cpus(m->ctx, &set, sizeof(set));
    BTL_VERBOSE(("progress thread: on the nearest core the rank is not bound to (CPU %d): %s",
                 first, 0 == rc ? "placed" : strerror(-rc)));
}
