/*
 * hw_dl.h - rdma-core reached through dlopen: libibverbs and librdmacm are
 * loaded the first time a verbs context is asked for, not when libsiwarp
 * (or the BTL that contains it) is loaded.
 *
 * Why: most users run the software backend, and loading libibverbs,
 * librdmacm and their libnl dependencies cost each MPI rank 3-4 ms of CPU
 * and 30-50 page faults in MPI_Init (8 ranks: 606 -> 577 ms of CPU summed,
 * btl tcp 573; a bare dlopen of the two: 3.8-4.3 ms, 47-50 faults) -- and
 * 8 ranks sharing 2 cores pay it 4 times over on each core.
 *
 * How: hw_int.h includes this after the rdma-core headers.  It declares
 * one pointer per rdma-core function the backend calls (the list below),
 * then redefines each function's name to its pointer, so hw_verbs.c,
 * hw_qp.c and hw_cm.c keep calling ibv_* and rdma_* as written.  The
 * data-path calls (ibv_post_send, ibv_poll_cq, ibv_req_notify_cq, ...)
 * are inline in verbs.h and go through the device's ops table: they need
 * no symbol.  hw_dl.c, which fills the pointers, includes this with
 * SWP_HW_DL_NO_REDIRECT.
 */
#ifndef SWP_HW_DL_H
#define SWP_HW_DL_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* X(library, function): every rdma-core symbol the verbs backend uses */
#define SWP_RDMA_CORE_FUNCS(X)                                                   \
    X(ibverbs, ibv_ack_async_event) X(ibverbs, ibv_ack_cq_events)                 \
    X(ibverbs, ibv_alloc_pd)       X(ibverbs, ibv_event_type_str)                 \
    X(ibverbs, ibv_get_async_event)                                               \
    X(ibverbs, ibv_create_comp_channel) X(ibverbs, ibv_create_cq)                 \
    X(ibverbs, ibv_dealloc_pd)     X(ibverbs, ibv_dereg_mr)                       \
    X(ibverbs, ibv_destroy_comp_channel) X(ibverbs, ibv_destroy_cq)               \
    X(ibverbs, ibv_free_device_list) X(ibverbs, ibv_get_cq_event)                 \
    X(ibverbs, ibv_get_device_list) X(ibverbs, ibv_get_device_name)               \
    X(ibverbs, ibv_modify_qp)      X(ibverbs, ibv_query_device)                   \
    X(ibverbs, ibv_reg_mr)                                                        \
    X(rdmacm, rdma_accept)         X(rdmacm, rdma_ack_cm_event)                   \
    X(rdmacm, rdma_bind_addr)      X(rdmacm, rdma_connect)                        \
    X(rdmacm, rdma_create_event_channel) X(rdmacm, rdma_create_id)                \
    X(rdmacm, rdma_create_qp)      X(rdmacm, rdma_destroy_event_channel)          \
    X(rdmacm, rdma_destroy_id)     X(rdmacm, rdma_destroy_qp)                     \
    X(rdmacm, rdma_disconnect)     X(rdmacm, rdma_event_str)                      \
    X(rdmacm, rdma_free_devices)   X(rdmacm, rdma_get_cm_event)                   \
    X(rdmacm, rdma_get_devices)    X(rdmacm, rdma_listen)                         \
    X(rdmacm, rdma_reject)         X(rdmacm, rdma_resolve_addr)                   \
    X(rdmacm, rdma_resolve_route)

/* A function-like macro name not followed by "(" is not expanded, so this
 * names the real functions even where verbs.h wraps them in a macro
 * (ibv_reg_mr, ibv_get_device_list). */
#define SWP_RC_MEMBER(lib, f) __typeof__(&f) f;
struct swp_rdma_core {
    SWP_RDMA_CORE_FUNCS(SWP_RC_MEMBER)
};
#undef SWP_RC_MEMBER

extern struct swp_rdma_core swp_rc;

/* Load both libraries and every symbol, once per process; 0, or -ENODEV
 * when rdma-core is not installed (the reason goes to the debug log). */
int swp_rdma_core_load(void);

#ifndef SWP_HW_DL_NO_REDIRECT
#undef ibv_reg_mr
#undef ibv_get_device_list
#define ibv_ack_async_event        (swp_rc.ibv_ack_async_event)
#define ibv_ack_cq_events          (swp_rc.ibv_ack_cq_events)
#define ibv_alloc_pd               (swp_rc.ibv_alloc_pd)
#define ibv_create_comp_channel    (swp_rc.ibv_create_comp_channel)
#define ibv_create_cq              (swp_rc.ibv_create_cq)
#define ibv_dealloc_pd             (swp_rc.ibv_dealloc_pd)
#define ibv_dereg_mr               (swp_rc.ibv_dereg_mr)
#define ibv_event_type_str         (swp_rc.ibv_event_type_str)
#define ibv_destroy_comp_channel   (swp_rc.ibv_destroy_comp_channel)
#define ibv_destroy_cq             (swp_rc.ibv_destroy_cq)
#define ibv_free_device_list       (swp_rc.ibv_free_device_list)
#define ibv_get_async_event        (swp_rc.ibv_get_async_event)
#define ibv_get_cq_event           (swp_rc.ibv_get_cq_event)
#define ibv_get_device_list        (swp_rc.ibv_get_device_list)
#define ibv_get_device_name        (swp_rc.ibv_get_device_name)
#define ibv_modify_qp              (swp_rc.ibv_modify_qp)
#define ibv_query_device           (swp_rc.ibv_query_device)
#define ibv_reg_mr                 (swp_rc.ibv_reg_mr)
#define rdma_accept                (swp_rc.rdma_accept)
#define rdma_ack_cm_event          (swp_rc.rdma_ack_cm_event)
#define rdma_bind_addr             (swp_rc.rdma_bind_addr)
#define rdma_connect               (swp_rc.rdma_connect)
#define rdma_create_event_channel  (swp_rc.rdma_create_event_channel)
#define rdma_create_id             (swp_rc.rdma_create_id)
#define rdma_create_qp             (swp_rc.rdma_create_qp)
#define rdma_destroy_event_channel (swp_rc.rdma_destroy_event_channel)
#define rdma_destroy_id            (swp_rc.rdma_destroy_id)
#define rdma_destroy_qp            (swp_rc.rdma_destroy_qp)
#define rdma_disconnect            (swp_rc.rdma_disconnect)
#define rdma_event_str             (swp_rc.rdma_event_str)
#define rdma_free_devices          (swp_rc.rdma_free_devices)
#define rdma_get_cm_event          (swp_rc.rdma_get_cm_event)
#define rdma_get_devices           (swp_rc.rdma_get_devices)
#define rdma_listen                (swp_rc.rdma_listen)
#define rdma_reject                (swp_rc.rdma_reject)
#define rdma_resolve_addr          (swp_rc.rdma_resolve_addr)
#define rdma_resolve_route         (swp_rc.rdma_resolve_route)
#endif

#endif
