/*
 * qpn_map.c - the verbs backend's QP number -> QP map (qpn_map.h).
 *
 * A process of a large job on an RNIC holds a QP per peer it talks to,
 * tens of thousands at full connectivity: a list walked per completion
 * (what hw_verbs.c did) costs more than the completion.  QP numbers are
 * small and dense on some devices and sparse on others, so they are mixed
 * before probing.
 */
#include "qpn_map.h"

#include <errno.h>
#include <stdlib.h>

enum { SWP_QPN_FREE = 0, SWP_QPN_USED, SWP_QPN_GONE };

static uint32_t swp_qpn_hash(uint32_t qpn)
{
    /* Fibonacci hashing: neighbouring numbers land far apart */
    return qpn * 2654435761u;
}

/* the slot of qpn, or of a free one to put it in (the first tombstone on
 * the way, if any); cap > 0 and the table never full */
static struct swp_qpn_slot *swp_qpn_find(const struct swp_qpn_map *m, uint32_t qpn)
{
    uint32_t mask = m->cap - 1, i = swp_qpn_hash(qpn) & mask;
    struct swp_qpn_slot *gone = NULL;

    for (;; i = (i + 1) & mask) {
        struct swp_qpn_slot *s = &m->slots[i];

        if (s->state == SWP_QPN_FREE)
            return gone ? gone : s;
        if (s->state == SWP_QPN_USED && s->qpn == qpn)
            return s;
        if (s->state == SWP_QPN_GONE && !gone)
            gone = s;
    }
}

/* a table of cap slots holding the live entries (tombstones dropped) */
static int swp_qpn_rebuild(struct swp_qpn_map *m, uint32_t cap)
{
    struct swp_qpn_map n = { .cap = cap };

    n.slots = calloc(cap, sizeof(*n.slots));
    if (!n.slots)
        return -ENOMEM;
    for (uint32_t i = 0; i < m->cap; i++) {
        if (m->slots[i].state == SWP_QPN_USED) {
            *swp_qpn_find(&n, m->slots[i].qpn) = m->slots[i];
            n.live++;
        }
    }
    n.taken = n.live;
    free(m->slots);
    *m = n;
    return 0;
}

int swp_qpn_map_put(struct swp_qpn_map *m, uint32_t qpn, void *val)
{
    struct swp_qpn_slot *s;

    if ((m->taken + 1) * 2 > m->cap) {
        /* grow if the live ones need it, else only sweep the tombstones */
        uint32_t cap = m->cap ? m->cap : 16;
        int rc;

        while ((m->live + 1) * 2 > cap)
            cap *= 2;
        rc = swp_qpn_rebuild(m, cap);
        if (rc < 0)
            return rc;
    }
    s = swp_qpn_find(m, qpn);
    if (s->state != SWP_QPN_USED) {
        m->live++;
        if (s->state == SWP_QPN_FREE)
            m->taken++;
    }
    s->qpn = qpn;
    s->state = SWP_QPN_USED;
    s->val = val;
    return 0;
}

void *swp_qpn_map_get(const struct swp_qpn_map *m, uint32_t qpn)
{
    struct swp_qpn_slot *s;

    if (!m->cap)
        return NULL;
    s = swp_qpn_find(m, qpn);
    return s->state == SWP_QPN_USED ? s->val : NULL;
}

void swp_qpn_map_del(struct swp_qpn_map *m, uint32_t qpn)
{
    struct swp_qpn_slot *s;

    if (!m->cap)
        return;
    s = swp_qpn_find(m, qpn);
    if (s->state == SWP_QPN_USED) {
        s->state = SWP_QPN_GONE;
        s->val = NULL;
        m->live--;
    }
}

void swp_qpn_map_free(struct swp_qpn_map *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->live = m->taken = 0;
}
