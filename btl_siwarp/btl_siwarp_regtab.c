/*
 * btl_siwarp_regtab.c - STag -> {base, length, rights} of every registration
 * this process handed out; checked before the TCP fallback touches memory
 * on a peer's behalf.  See btl_siwarp_regtab.h.
 */
#include "btl_siwarp_regtab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define REGTAB_MIN_CAP 64

static size_t slot_of(uint32_t stag, size_t cap)
{
    /* Fibonacci hashing: STags are an index plus a key byte */
    return (size_t) ((stag * 0x9E3779B1u) & (uint32_t) (cap - 1));
}

/* Slot holding stag, or the empty slot where it would go. */
static size_t probe(const mca_btl_siwarp_regtab_entry_t *slots, size_t cap, uint32_t stag)
{
    size_t i = slot_of(stag, cap);
    while (0 != slots[i].stag && stag != slots[i].stag) {
        i = (i + 1) & (cap - 1);
    }
    return i;
}

static int grow(mca_btl_siwarp_regtab_t *t)
{
    size_t cap = t->cap ? 2 * t->cap : REGTAB_MIN_CAP;
    mca_btl_siwarp_regtab_entry_t *s = calloc(cap, sizeof(*s));

    if (NULL == s) {
        return -ENOMEM;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (0 != t->slots[i].stag) {
            s[probe(s, cap, t->slots[i].stag)] = t->slots[i];
        }
    }
    free(t->slots);
    t->slots = s;
    t->cap = cap;
    return 0;
}

int mca_btl_siwarp_regtab_init(mca_btl_siwarp_regtab_t *t)
{
    memset(t, 0, sizeof(*t));
    if (0 != pthread_mutex_init(&t->lock, NULL)) {
        return -ENOMEM;
    }
    return grow(t);
}

void mca_btl_siwarp_regtab_fini(mca_btl_siwarp_regtab_t *t)
{
    free(t->slots);
    t->slots = NULL;
    t->cap = t->used = 0;
    pthread_mutex_destroy(&t->lock);
}

int mca_btl_siwarp_regtab_add(mca_btl_siwarp_regtab_t *t, uint32_t stag, uint64_t base,
                              uint64_t len, uint32_t access)
{
    size_t i;
    int rc = 0;

    if (0 == stag || base + len < base) {
        return -EINVAL;
    }
    pthread_mutex_lock(&t->lock);
    if (2 * (t->used + 1) > t->cap && (rc = grow(t)) < 0) {
        goto out;
    }
    i = probe(t->slots, t->cap, stag);
    if (0 != t->slots[i].stag) {
        rc = -EEXIST;
        goto out;
    }
    t->slots[i] = (mca_btl_siwarp_regtab_entry_t) {
        .stag = stag, .access = access, .base = base, .len = len,
    };
    t->used++;
out:
    pthread_mutex_unlock(&t->lock);
    return rc;
}

int mca_btl_siwarp_regtab_remove(mca_btl_siwarp_regtab_t *t, uint32_t stag)
{
    size_t i, j;

    if (0 == stag) {
        return -ENOENT;
    }
    pthread_mutex_lock(&t->lock);
    i = probe(t->slots, t->cap, stag);
    if (0 == t->slots[i].stag) {
        pthread_mutex_unlock(&t->lock);
        return -ENOENT;
    }
    /* backward-shift deletion: no tombstones, probes stay short */
    t->slots[i].stag = 0;
    t->used--;
    for (j = (i + 1) & (t->cap - 1); 0 != t->slots[j].stag; j = (j + 1) & (t->cap - 1)) {
        size_t home = slot_of(t->slots[j].stag, t->cap);
        /* move j into the hole at i unless its home lies cyclically in (i, j] */
        if (((j - home) & (t->cap - 1)) >= ((j - i) & (t->cap - 1))) {
            t->slots[i] = t->slots[j];
            t->slots[j].stag = 0;
            i = j;
        }
    }
    pthread_mutex_unlock(&t->lock);
    return 0;
}

int mca_btl_siwarp_regtab_check(mca_btl_siwarp_regtab_t *t, uint32_t stag, uint64_t addr,
                                uint64_t len, uint32_t access)
{
    mca_btl_siwarp_regtab_entry_t e;
    size_t i;

    if (0 == stag) {
        return -ENOENT;
    }
    pthread_mutex_lock(&t->lock);
    i = probe(t->slots, t->cap, stag);
    e = t->slots[i];
    pthread_mutex_unlock(&t->lock);
    /* the order of an RNIC: handle valid -> rights -> bounds */
    if (0 == e.stag) {
        return -ENOENT;
    }
    if ((e.access & access) != access) {
        return -EACCES;
    }
    if (addr + len < addr || addr < e.base || addr + len > e.base + e.len) {
        return -ERANGE;
    }
    return 0;
}

const char *mca_btl_siwarp_regtab_strerror(int err)
{
    switch (err) {
    case 0:
        return "allowed";
    case -ENOENT:
        return "no registration with this handle";
    case -EACCES:
        return "the registration does not grant this access";
    case -ERANGE:
        return "the range lies outside the registration";
    default:
        return "invalid";
    }
}
