/*
 * qpn_map.h - a verbs QP number -> libsiwarp QP map: what the verbs
 * backend looks up for every completion it polls (ibv_wc names its QP by
 * number only).  Open addressing with linear probing, grown at half full;
 * a deleted slot is a tombstone until the table is rebuilt.
 */
#ifndef SWP_QPN_MAP_H
#define SWP_QPN_MAP_H

#include <stdint.h>

struct swp_qpn_slot {
    uint32_t qpn;
    uint8_t  state;          /* SWP_QPN_FREE, _USED, _GONE (tombstone) */
    void    *val;
};

struct swp_qpn_map {
    struct swp_qpn_slot *slots;
    uint32_t cap;            /* a power of two, or 0 before the first put */
    uint32_t live;
    uint32_t taken;          /* live + tombstones */
};

/* 0, or -ENOMEM; a number already there gets the new value */
int   swp_qpn_map_put(struct swp_qpn_map *m, uint32_t qpn, void *val);
/* the value, or NULL */
void *swp_qpn_map_get(const struct swp_qpn_map *m, uint32_t qpn);
/* nothing if qpn is not there */
void  swp_qpn_map_del(struct swp_qpn_map *m, uint32_t qpn);
void  swp_qpn_map_free(struct swp_qpn_map *m);

#endif
