/*
 * btl_siwarp_rdma.c - registration (through Open MPI's grdma rcache, which
 * caches by address range, evicts LRU under a limit and invalidates on
 * free/munmap through the memory hooks), put = RDMA Write, get = RDMA Read.
 */
#include "btl_siwarp.h"
#include "btl_siwarp_endpoint.h"
#include "btl_siwarp_frag.h"

#include <stddef.h>
#include <string.h>

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/rcache/base/base.h"
#include "opal/util/output.h"
#include "opal/util/sys_limits.h"

/* Registered memory, counted for the MPI_T performance variables below:
 * the rcache calls these two under its own lock. */
static void count_reg(mca_btl_siwarp_reg_t *reg, size_t len)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;

    reg->len = len;
    c->reg_bytes += len;
    c->reg_count++;
    if (c->reg_bytes > c->reg_bytes_peak) {
        c->reg_bytes_peak = c->reg_bytes;
    }
}

static void count_dereg(mca_btl_siwarp_reg_t *reg)
{
    mca_btl_siwarp_component_t *c = &mca_btl_siwarp_component;

    c->reg_bytes -= reg->len;
    c->reg_count--;
    reg->len = 0;
}

/* Called by grdma on a cache miss only, before the new registration is in
 * its tree, with no lock of its held.
 *
 * A cached registration outlives the buffer it was made for until the
 * memory goes back to the system (munmap, brk: Open MPI's memory hooks).
 * glibc keeps large freed blocks in its heap once its mmap threshold has
 * risen past them, so the next large buffer lands elsewhere in the same
 * memory and misses: each adds a registration overlapping the earlier
 * ones, and registered memory grows past all the process has mapped (50
 * accept/connect cycles under Open MPI 5 with 64 KiB eager: 19 -> 215
 * MiB; MALLOC_MMAP_THRESHOLD_ fixed: flat).  A page wholly inside the new
 * range belongs to the buffer now being registered, so a registration
 * reaching into one was made for memory since freed, or is a smaller
 * registration of this same buffer: either way this one supersedes it.
 * The first and last pages are left alone, as a neighbouring live buffer
 * may share them.  Unused registrations go now (at grdma's next
 * registration); one in use is dropped when its last user releases it. */
static void drop_superseded(mca_btl_siwarp_module_t *m, void *base, size_t size)
{
    size_t page = (size_t) opal_getpagesize();

    if (size > 2 * page && m->rcache && m->rcache->rcache_invalidate_range) {
        (void) m->rcache->rcache_invalidate_range(m->rcache, (char *) base + page,
                                                  size - 2 * page);
    }
}

/* btl_siwarp_rcache_limit: while registered memory (plus size bytes about
 * to be registered) is past the limit, unused cached registrations go,
 * least recently used first -- before each registration, and when a user
 * lets go of one (mca_btl_siwarp_deregister_mem), so that what the cache
 * keeps is bounded at all times, not only at the next registration.
 * drop_superseded catches the stale registrations a new buffer overlaps;
 * this bounds the ones it never will (a heap whose large blocks land at
 * new places: 50 accept/connect cycles kept 2 to 10 stale 1 MiB
 * registrations, depending on where malloc put them).  grdma calls
 * register_mem with no lock held, so its evict (the one its own
 * out-of-resource retry uses) is safe here; it returns false once nothing
 * unused is left, and registrations in use stay, so this never fails. */
static void keep_under_limit(mca_btl_siwarp_module_t *m, size_t size)
{
    size_t limit = mca_btl_siwarp_component.rcache_limit;

    if (0 == limit || NULL == m->rcache || NULL == m->rcache->rcache_evict) {
        return;
    }
    while (mca_btl_siwarp_component.reg_bytes + size > limit &&
           m->rcache->rcache_evict(m->rcache)) {
    }
}

static int rcache_reg(void *reg_data, void *base, size_t size,
                      mca_rcache_base_registration_t *base_reg)
{
    mca_btl_siwarp_module_t *m = reg_data;
    mca_btl_siwarp_reg_t *reg = (mca_btl_siwarp_reg_t *) base_reg;
    int access = SIWARP_ACCESS_LOCAL_WRITE;
    int rc;

    drop_superseded(m, base, size);
    keep_under_limit(m, size);

    if (base_reg->access_flags & MCA_RCACHE_ACCESS_REMOTE_READ) {
        access |= SIWARP_ACCESS_REMOTE_READ;
    }
    if (base_reg->access_flags & (MCA_RCACHE_ACCESS_REMOTE_WRITE |
                                  MCA_RCACHE_ACCESS_REMOTE_ATOMIC)) {
        access |= SIWARP_ACCESS_REMOTE_WRITE;
    }
    /* RFC 7306 Atomic Requests from siwarp peers (btl_siwarp_ratomic.c);
     * a verbs device has no RFC 7306 and refuses the right */
    if ((base_reg->access_flags & MCA_RCACHE_ACCESS_REMOTE_ATOMIC) && m->inplace &&
        mca_btl_siwarp_component.rfc7306) {
        access |= SIWARP_ACCESS_REMOTE_ATOMIC;
    }
    rc = siwarp_reg_mr(m->pd, base, size, access, &reg->mr);
    if (rc < 0) {
        BTL_VERBOSE(("siwarp_reg_mr(%p, %zu): %s", base, size, strerror(-rc)));
        reg->mr = NULL;
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    reg->handle.stag = siwarp_mr_stag(reg->mr);
    reg->handle.flags = (access & SIWARP_ACCESS_REMOTE_ATOMIC) ? MCA_BTL_SIWARP_HANDLE_RFC7306 : 0;
    reg->handle.base = (uint64_t) (uintptr_t) base;
    reg->handle.len = size;
    /* the fallback transport checks peers' put/get targets against this */
    rc = mca_btl_siwarp_regtab_add(&m->regtab, reg->handle.stag, (uint64_t) (uintptr_t) base,
                                   size,
                                   ((access & SIWARP_ACCESS_REMOTE_READ) ?
                                    MCA_BTL_SIWARP_REGTAB_READ : 0) |
                                   ((access & SIWARP_ACCESS_REMOTE_WRITE) ?
                                    MCA_BTL_SIWARP_REGTAB_WRITE : 0) |
                                   ((base_reg->access_flags & MCA_RCACHE_ACCESS_REMOTE_ATOMIC) ?
                                    MCA_BTL_SIWARP_REGTAB_ATOMIC : 0));
    if (rc < 0) {
        BTL_ERROR(("siwarp: registration table: stag 0x%08x: %s", reg->handle.stag,
                   strerror(-rc)));
        siwarp_dereg_mr(reg->mr);
        reg->mr = NULL;
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    count_reg(reg, size);
    return OPAL_SUCCESS;
}

static int rcache_dereg(void *reg_data, mca_rcache_base_registration_t *base_reg)
{
    mca_btl_siwarp_module_t *m = reg_data;
    mca_btl_siwarp_reg_t *reg = (mca_btl_siwarp_reg_t *) base_reg;

    if (reg->mr) {
        /* out of the table first: no fallback access once dereg starts */
        mca_btl_siwarp_regtab_remove(&m->regtab, reg->handle.stag);
        siwarp_dereg_mr(reg->mr);
        reg->mr = NULL;
        count_dereg(reg);
    }
    return OPAL_SUCCESS;
}

/* btl_siwarp_read_hint_segments: how many Read Response segments went out
 * with CRCs computed ahead (btl_siwarp_read_hint), so that a test can see
 * the announcements are taken. */
static int read_hint_segments_get(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    mca_btl_siwarp_module_t *m = mca_btl_siwarp_component.module;
    (void) pvar;
    (void) obj;

    *(unsigned long *) value =
        m && m->ctx ? (unsigned long) siwarp_ctx_read_hint_segments(m->ctx) : 0;
    return OPAL_SUCCESS;
}

/* btl_siwarp_registered_bytes, _registrations and _registered_bytes_peak:
 * what the registration cache holds registered, for a tool or a test
 * (test/fault/mpi_soak) to read through MPI_T; read-only, always on. */
int mca_btl_siwarp_reg_pvars_register(void)
{
    int rc;

    static const struct {
        const char *name, *help;
        int var_class;
        size_t off;
    } pv[] = {
        { "registered_bytes", "Bytes of memory registered now (cached registrations "
          "included)", MCA_BASE_PVAR_CLASS_SIZE,
          offsetof(mca_btl_siwarp_component_t, reg_bytes) },
        { "registrations", "Memory registrations held now (cached ones included)",
          MCA_BASE_PVAR_CLASS_SIZE, offsetof(mca_btl_siwarp_component_t, reg_count) },
        { "registered_bytes_peak", "Most bytes of memory registered at once",
          MCA_BASE_PVAR_CLASS_HIGHWATERMARK,
          offsetof(mca_btl_siwarp_component_t, reg_bytes_peak) },
    };

    for (size_t i = 0; i < sizeof(pv) / sizeof(pv[0]); i++) {
        rc = mca_base_component_pvar_register(
            &mca_btl_siwarp_component.super.btl_version, pv[i].name, pv[i].help,
            OPAL_INFO_LVL_4, pv[i].var_class, MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL,
            MCA_BASE_VAR_BIND_NO_OBJECT,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, NULL, NULL, NULL,
            (char *) &mca_btl_siwarp_component + pv[i].off);
        if (rc < 0) {
            return rc;
        }
    }
    rc = mca_base_component_pvar_register(
        &mca_btl_siwarp_component.super.btl_version, "read_hint_segments",
        "RDMA Read Response segments sent with CRCs computed while the Read was awaited "
        "(btl_siwarp_read_hint)", OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER,
        MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
        MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, read_hint_segments_get,
        NULL, NULL, NULL);
    return rc < 0 ? rc : OPAL_SUCCESS;
}

int mca_btl_siwarp_rcache_init(mca_btl_siwarp_module_t *m)
{
    mca_rcache_base_resources_t res = {
        .cache_name = "siwarp",
        .reg_data = m,
        .sizeof_reg = sizeof(mca_btl_siwarp_reg_t),
        .register_mem = rcache_reg,
        .deregister_mem = rcache_dereg,
    };

    if (!m->regtab_ready) {
        if (mca_btl_siwarp_regtab_init(&m->regtab) < 0) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        m->regtab_ready = 1;
    }
    m->rcache = mca_rcache_base_module_create("grdma", m, &res);
    return m->rcache ? OPAL_SUCCESS : OPAL_ERR_NOT_AVAILABLE;
}

/* btl_siwarp_read_hint: a registration for remote reads only, with the
 * peer named, is how ob1 starts an RDMA Read rendezvous (RGET): the peer
 * will read exactly [base, base + size) once, and MPI keeps a send buffer
 * unchanged until the send completes, when ob1 deregisters it
 * (mca_btl_siwarp_deregister_mem withdraws the hint).  In the Open MPI
 * 4.1.4 and 5.0.7 sources only ob1's send paths register for remote reads
 * alone; osc registers its windows for every access, so they never
 * qualify.  A hint libsiwarp declines (-EBUSY, -EOPNOTSUPP, ...) costs
 * nothing: the Read is answered as usual. */
static void announce_read(mca_btl_siwarp_module_t *m, struct mca_btl_base_endpoint_t *ep,
                          mca_btl_siwarp_reg_t *reg, void *base, size_t size, uint32_t flags)
{
    if (!mca_btl_siwarp_component.read_hint || NULL == ep || NULL == reg->mr ||
        (flags & MCA_BTL_REG_FLAG_ACCESS_ANY) != MCA_BTL_REG_FLAG_REMOTE_READ ||
        MCA_BTL_SIWARP_TR_IWARP != ep->transport || NULL == ep->qp ||
        MCA_BTL_SIWARP_EP_CONNECTED != ep->state || size < 32768 || !m->ctx) {
        return;
    }
    (void) siwarp_qp_read_hint(ep->qp, reg->mr, base, size);
}

mca_btl_base_registration_handle_t *
mca_btl_siwarp_register_mem(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                            void *base, size_t size, uint32_t flags)
{
    mca_btl_siwarp_module_t *m = (mca_btl_siwarp_module_t *) btl;
    mca_rcache_base_registration_t *reg = NULL;
    int access = flags & MCA_BTL_REG_FLAG_ACCESS_ANY;
    int rc;
    (void) ep;

    rc = m->rcache->rcache_register(m->rcache, base, size ? size : 1, 0, access, &reg);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc || NULL == reg)) {
        return NULL;
    }
    announce_read(m, ep, (mca_btl_siwarp_reg_t *) reg, base, size, flags);
    return &((mca_btl_siwarp_reg_t *) reg)->handle;
}

int mca_btl_siwarp_deregister_mem(mca_btl_base_module_t *btl,
                                  mca_btl_base_registration_handle_t *handle)
{
    mca_btl_siwarp_module_t *m = (mca_btl_siwarp_module_t *) btl;
    mca_btl_siwarp_reg_t *reg =
        (mca_btl_siwarp_reg_t *) ((char *) handle - offsetof(mca_btl_siwarp_reg_t, handle));

    /* whoever registered it is done: its bytes may change from now */
    if (reg->mr && mca_btl_siwarp_component.read_hint) {
        (void) siwarp_mr_drop_hints(reg->mr);
    }
    m->rcache->rcache_deregister(m->rcache, &reg->base);
    keep_under_limit(m, 0);
    return OPAL_SUCCESS;
}

static int rdma_submit(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                       mca_btl_siwarp_frag_type_t type, void *local_address,
                       uint64_t remote_address,
                       mca_btl_base_registration_handle_t *local_handle,
                       mca_btl_base_registration_handle_t *remote_handle, size_t size,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                       void *cbdata)
{
    mca_btl_siwarp_module_t *m = (mca_btl_siwarp_module_t *) btl;
    size_t limit = MCA_BTL_SIWARP_FRAG_PUT == type ? btl->btl_put_limit : btl->btl_get_limit;
    mca_btl_siwarp_frag_t *frag;
    int rc;

    if (OPAL_UNLIKELY(size > limit || size > UINT32_MAX)) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    if (OPAL_UNLIKELY(mca_btl_siwarp_ep_is_self(ep))) {
        /* this process itself (mca_btl_siwarp_ep_create_self): a copy,
         * then the completion, before the call returns */
        if (MCA_BTL_SIWARP_FRAG_PUT == type) {
            memmove((void *) (uintptr_t) remote_address, local_address, size);
        } else {
            memmove(local_address, (void *) (uintptr_t) remote_address, size);
        }
        if (cbfunc) {
            cbfunc(btl, NULL, local_address, local_handle, cbcontext, cbdata, OPAL_SUCCESS);
        }
        return OPAL_SUCCESS;
    }
    if (OPAL_UNLIKELY(NULL == remote_handle ||
                      (NULL == local_handle && MCA_BTL_SIWARP_TR_TCP != ep->transport))) {
        return OPAL_ERR_BAD_PARAM;
    }
    OPAL_THREAD_LOCK(&m->lock);
    frag = mca_btl_siwarp_frag_alloc_rdma(m);
    if (OPAL_UNLIKELY(NULL == frag)) {
        OPAL_THREAD_UNLOCK(&m->lock);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    frag->type = type;
    frag->local_address = local_address;
    frag->remote_address = remote_address;
    frag->local_handle = local_handle;
    frag->local_stag = local_handle ? local_handle->stag : 0;
    frag->remote_stag = remote_handle->stag;
    frag->rdma_size = size;
    frag->cbfunc = cbfunc;
    frag->cbcontext = cbcontext;
    frag->cbdata = cbdata;
    rc = mca_btl_siwarp_ep_submit(ep, frag);
    if (OPAL_SUCCESS != rc) {
        mca_btl_siwarp_frag_return(frag);
    }
    OPAL_THREAD_UNLOCK(&m->lock);
    return rc;
}

int mca_btl_siwarp_put(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                       void *local_address, uint64_t remote_address,
                       mca_btl_base_registration_handle_t *local_handle,
                       mca_btl_base_registration_handle_t *remote_handle, size_t size,
                       int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                       void *cbcontext, void *cbdata)
{
    (void) flags;
    (void) order;
    return rdma_submit(btl, ep, MCA_BTL_SIWARP_FRAG_PUT, local_address, remote_address,
                       local_handle, remote_handle, size, cbfunc, cbcontext, cbdata);
}

int mca_btl_siwarp_get(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                       void *local_address, uint64_t remote_address,
                       mca_btl_base_registration_handle_t *local_handle,
                       mca_btl_base_registration_handle_t *remote_handle, size_t size,
                       int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                       void *cbcontext, void *cbdata)
{
    (void) flags;
    (void) order;
    return rdma_submit(btl, ep, MCA_BTL_SIWARP_FRAG_GET, local_address, remote_address,
                       local_handle, remote_handle, size, cbfunc, cbcontext, cbdata);
}

/* something of ours still under way on e */
static int flush_busy(mca_btl_siwarp_endpoint_t *e)
{
    return MCA_BTL_SIWARP_EP_FAILED != e->state &&
           (e->outstanding > 0 || !opal_list_is_empty(&e->pending) ||
            !opal_list_is_empty(&e->tx_queue) || !opal_list_is_empty(&e->gets_inflight) ||
            !opal_list_is_empty(&e->atomics));
}

/* Wait until every put, get and atomic posted before the call is complete
 * at the target (osc/rdma's MPI_Win_flush): each completes only once it is
 * (a put's completion is its placement, see iwarp_post). */
int mca_btl_siwarp_flush(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep)
{
    mca_btl_siwarp_module_t *m = (mca_btl_siwarp_module_t *) btl;
    mca_btl_siwarp_endpoint_t *e;

    for (;;) {
        int busy = 0;
        OPAL_THREAD_LOCK(&m->lock);
        if (ep) {
            busy = flush_busy(ep);      /* one peer's flush looks at that peer only */
        } else {
            OPAL_LIST_FOREACH(e, &m->endpoints, mca_btl_siwarp_endpoint_t) {
                if (flush_busy(e)) {
                    busy = 1;
                    break;
                }
            }
        }
        OPAL_THREAD_UNLOCK(&m->lock);
        if (!busy) {
            return OPAL_SUCCESS;
        }
        mca_btl_siwarp_progress_module(m);
    }
}
