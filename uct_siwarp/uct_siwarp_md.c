/*
 * uct_siwarp_md.c - the siwarp component and its memory domain: one
 * libsiwarp context and protection domain per md, registrations as
 * libsiwarp MRs, rkeys as STags.
 */
#include "uct_siwarp.h"

#include <errno.h>
#include <string.h>

/* The one place libsiwarp's negative errno values become UCS statuses. */
ucs_status_t uct_siwarp_status(int rc)
{
    switch (rc) {
    case 0:             return UCS_OK;
    case -EAGAIN:
    case -ENOMEM:       return UCS_ERR_NO_RESOURCE;
    case -EINVAL:       return UCS_ERR_INVALID_PARAM;
    case -EOPNOTSUPP:   return UCS_ERR_UNSUPPORTED;
    case -ENODEV:       return UCS_ERR_NO_DEVICE;
    case -ECONNREFUSED: return UCS_ERR_UNREACHABLE;
    case -ETIMEDOUT:    return UCS_ERR_ENDPOINT_TIMEOUT;
    case -EADDRINUSE:   return UCS_ERR_BUSY;
    case -EACCES:
    case -EPERM:        return UCS_ERR_REJECTED;
    default:            return (rc < 0) ? UCS_ERR_IO_ERROR : UCS_OK;
    }
}

static ucs_config_field_t uct_siwarp_md_config_table[] = {
    {"", "", NULL, ucs_offsetof(uct_siwarp_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},
    {NULL}
};

static ucs_status_t uct_siwarp_md_query(uct_md_h md, uct_md_attr_t *attr)
{
    attr->cap.flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_MEMH |
                                 UCT_MD_FLAG_NEED_RKEY;
    attr->cap.max_alloc        = 0;
    attr->cap.max_reg          = UINT32_MAX;   /* one MR spans < 4 GiB */
    attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.alloc_mem_types  = 0;
    attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    attr->cap.detect_mem_types = 0;
    attr->rkey_packed_size     = sizeof(uint32_t);
    /* a software MR is an entry in the STag table, pinned nothing */
    attr->reg_cost             = ucs_linear_func_make(1e-6, 0);
    memset(&attr->local_cpus, 0xff, sizeof(attr->local_cpus));
    return UCS_OK;
}

static ucs_status_t uct_siwarp_mem_reg(uct_md_h tl_md, void *address, size_t length,
                                       unsigned flags, uct_mem_h *memh_p)
{
    uct_siwarp_md_t *md = ucs_derived_of(tl_md, uct_siwarp_md_t);
    struct siwarp_mr *mr;
    uintptr_t start, end;
    int rc;

    if (length == 0 || length > UINT32_MAX) {
        ucs_error("siwarp: cannot register %zu bytes at %p (1 B .. 4 GiB)", length, address);
        return UCS_ERR_INVALID_PARAM;
    }
    /* RFC 7306 atomics act on the 8-aligned 64-bit word: a 32-bit atomic
     * on the last 4 octets of a buffer must find its whole word inside the
     * MR, else the responder refuses it (base or bounds).  An 8-aligned
     * word never crosses a page, so the widened range is mapped memory. */
    start = (uintptr_t)address & ~(uintptr_t)7;
    end   = ((uintptr_t)address + length + 7) & ~(uintptr_t)7;
    rc = siwarp_reg_mr(md->pd, (void*)start, end - start,
                       SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE |
                       SIWARP_ACCESS_REMOTE_READ | SIWARP_ACCESS_REMOTE_ATOMIC, &mr);
    if (rc == -EOPNOTSUPP) {
        /* a verbs device refuses REMOTE_ATOMIC: register without it */
        rc = siwarp_reg_mr(md->pd, (void*)start, end - start,
                           SIWARP_ACCESS_LOCAL_WRITE | SIWARP_ACCESS_REMOTE_WRITE |
                           SIWARP_ACCESS_REMOTE_READ, &mr);
    }
    if (rc < 0) {
        ucs_error("siwarp: siwarp_reg_mr(%p, %zu): %s", address, length, strerror(-rc));
        return uct_siwarp_status(rc);
    }
    *memh_p = mr;
    return UCS_OK;
}

static ucs_status_t uct_siwarp_mem_dereg(uct_md_h md, const uct_md_mem_dereg_params_t *params)
{
    int rc;

    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0);
    rc = siwarp_dereg_mr((struct siwarp_mr*)params->memh);
    if (rc < 0) {
        ucs_error("siwarp: siwarp_dereg_mr: %s", strerror(-rc));
    }
    return uct_siwarp_status(rc);
}

/* rkey = the STag; the tagged offset is the virtual address (as verbs). */
static ucs_status_t uct_siwarp_mkey_pack(uct_md_h md, uct_mem_h memh,
                                         const uct_md_mkey_pack_params_t *params,
                                         void *rkey_buffer)
{
    uint32_t stag = siwarp_mr_stag((struct siwarp_mr*)memh);

    memcpy(rkey_buffer, &stag, sizeof(stag));
    return UCS_OK;
}

static ucs_status_t uct_siwarp_rkey_unpack(uct_component_t *component, const void *rkey_buffer,
                                           uct_rkey_t *rkey_p, void **handle_p)
{
    uint32_t stag;

    memcpy(&stag, rkey_buffer, sizeof(stag));
    *rkey_p   = stag;
    *handle_p = NULL;
    return UCS_OK;
}

static void uct_siwarp_md_close(uct_md_h tl_md)
{
    uct_siwarp_md_t *md = ucs_derived_of(tl_md, uct_siwarp_md_t);
    int rc;

    rc = siwarp_dealloc_pd(md->pd);
    if (rc < 0) {
        ucs_warn("siwarp: siwarp_dealloc_pd: %s (registrations left?)", strerror(-rc));
    }
    siwarp_ctx_destroy(md->ctx);
    ucs_free(md);
}

static uct_md_ops_t uct_siwarp_md_ops = {
    .close              = uct_siwarp_md_close,
    .query              = uct_siwarp_md_query,
    .mem_reg            = uct_siwarp_mem_reg,
    .mem_dereg          = uct_siwarp_mem_dereg,
    .mkey_pack          = uct_siwarp_mkey_pack,
    .detect_memory_type = ucs_empty_function_return_unsupported
};

static ucs_status_t uct_siwarp_md_open(uct_component_t *component, const char *md_name,
                                       const uct_md_config_t *config, uct_md_h *md_p)
{
    uct_siwarp_md_t *md;
    int rc;

    md = ucs_calloc(1, sizeof(*md), "uct_siwarp_md");
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    /* SIWARP_DEVICE picks the backend (libsiwarp; unset: software) */
    rc = siwarp_ctx_create(&md->ctx);
    if (rc < 0) {
        ucs_error("siwarp: siwarp_ctx_create: %s", strerror(-rc));
        goto err_free;
    }
    rc = siwarp_alloc_pd(md->ctx, &md->pd);
    if (rc < 0) {
        ucs_error("siwarp: siwarp_alloc_pd: %s", strerror(-rc));
        goto err_ctx;
    }
    md->super.ops       = &uct_siwarp_md_ops;
    md->super.component = &uct_siwarp_component;
    *md_p = &md->super;
    return UCS_OK;

err_ctx:
    siwarp_ctx_destroy(md->ctx);
err_free:
    ucs_free(md);
    return uct_siwarp_status(rc);
}

uct_component_t uct_siwarp_component = {
    .query_md_resources = uct_md_query_single_md_resource,
    .md_open            = uct_siwarp_md_open,
    .cm_open            = ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_siwarp_rkey_unpack,
    .rkey_ptr           = ucs_empty_function_return_unsupported,
    .rkey_release       = ucs_empty_function_return_success,
    .name               = UCT_SIWARP_NAME,
    .md_config          = {
        .name           = "siwarp memory domain",
        .prefix         = UCT_SIWARP_CONFIG_PREFIX,
        .table          = uct_siwarp_md_config_table,
        .size           = sizeof(uct_siwarp_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(&uct_siwarp_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)ucs_empty_function
};
