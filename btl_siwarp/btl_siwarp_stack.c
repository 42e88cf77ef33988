/*
 * btl_siwarp_stack.c - does a peer share this process's network stack, so
 * that its loopback addresses reach it?
 *
 * Open MPI's answer, OPAL_PROC_ON_LOCAL_NODE, knows only the processes its
 * runtime placed on this node: a process of another mpirun (connected
 * through ompi-server, MPI_Comm_join) has no known node, and treating it as
 * remote left two jobs on one host with no path when siwarp listens on
 * loopback only.  And a node's flag is no proof of a shared loopback when
 * the processes sit in different network namespaces.  So every process
 * publishes in the modex the identity of its network stack -- the kernel's
 * boot id and its network namespace (device and inode of
 * /proc/self/ns/net) -- and a peer with the same one is reachable over
 * loopback, whatever its job.
 */
#include "btl_siwarp.h"
#include "btl_siwarp_endpoint.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>


#define STACK_MODEX_KEY "btl.siwarp.netstack"

typedef struct mca_btl_siwarp_netstack_t {
    char boot_id[40];        /* /proc/sys/kernel/random/boot_id, NUL-padded */
    uint64_t ns_dev;
    uint64_t ns_ino;
} mca_btl_siwarp_netstack_t;
_Static_assert(sizeof(mca_btl_siwarp_netstack_t) == 56, "netstack record is 56 bytes");

/* This process's identity, read once; -1 when the kernel does not tell
 * (then only Open MPI's node flag decides). */
static int netstack_read(mca_btl_siwarp_netstack_t *id)
{
    struct stat st;
    FILE *f;

    memset(id, 0, sizeof(*id));
    f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (NULL == f) {
        return -1;
    }
    if (NULL == fgets(id->boot_id, sizeof(id->boot_id), f)) {
        fclose(f);
        return -1;
    }
    fclose(f);
    id->boot_id[strcspn(id->boot_id, "\n")] = '\0';
    if (0 != stat("/proc/self/ns/net", &st)) {
        return -1;
    }
    id->ns_dev = (uint64_t) st.st_dev;
    id->ns_ino = (uint64_t) st.st_ino;
    return 0;
}

static int netstack_self(mca_btl_siwarp_netstack_t *id)
{
    static mca_btl_siwarp_netstack_t self;
    static int known = 0;           /* 0 not read, 1 read, -1 unavailable */

    if (0 == known) {
        known = netstack_read(&self) < 0 ? -1 : 1;
    }
    *id = self;
    return known > 0 ? 0 : -1;
}

int mca_btl_siwarp_stack_publish(void)
{
    mca_btl_siwarp_netstack_t id;
    int rc;

    if (netstack_self(&id) < 0) {
        return OPAL_SUCCESS;        /* nothing to tell: peers fall back on the node flag */
    }
    OPAL_MODEX_SEND_STRING(rc, OPAL_PMIX_GLOBAL, STACK_MODEX_KEY, &id, sizeof(id));
    return rc;
}

int mca_btl_siwarp_stack_shared(opal_proc_t *proc)
{
    mca_btl_siwarp_netstack_t mine, *theirs = NULL;
    size_t size = 0;
    int rc, same;

    if (OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags)) {
        return 1;
    }
    if (netstack_self(&mine) < 0) {
        return 0;
    }
    OPAL_MODEX_RECV_STRING(rc, STACK_MODEX_KEY, &proc->proc_name, (void **) &theirs, &size);
    if (OPAL_SUCCESS != rc || NULL == theirs || sizeof(mine) != size) {
        free(theirs);
        return 0;                   /* an older BTL, or none published */
    }
    same = 0 == memcmp(&mine, theirs, sizeof(mine));
    free(theirs);
    if (same) {
        BTL_VERBOSE(("%s shares this network stack: its loopback addresses reach it",
                     OPAL_NAME_PRINT(proc->proc_name)));
    }
    return same;
}
