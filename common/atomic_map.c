/*
 * atomic_map.c - the atomic operations MPI, OpenSHMEM and UCX ask for,
 * expressed as RFC 7306's four: FetchAdd, CmpSwap and their masked forms.
 *
 * RFC 7306 (section 5.2.1) acts on one 8-octet, 8-aligned word.  So that
 * every layer above (the Open MPI BTL, the UCX transport) maps the same
 * way, the rules live here once:
 *   ADD x        FetchAdd x
 *   CSWAP c, x   CmpSwap: compare c, swap x
 *   SWAP x       masked CmpSwap, Compare Mask 0 (the comparison always
 *                holds), Swap Mask all of the operand
 *   AND x        masked CmpSwap, Compare Mask 0, swap in 0 where x has 0 bits
 *   OR x         masked CmpSwap, Compare Mask 0, swap in 1 where x has 1 bits
 * A 4-byte operand acts on its half of the containing 8-aligned word: the
 * masks confine CmpSwap to that half, and ADD becomes a masked FetchAdd
 * whose Add Mask marks the top bit of both halves, so no carry crosses
 * into the other half (which gets + 0).  XOR, MIN, MAX and floating point
 * have no RFC 7306 form; the caller carries them some other way.
 *
 * Both ends are assumed to share a byte order (siwarp converts no memory),
 * so the half a 4-byte operand lives in follows this host's order.
 */
#include <errno.h>

#include "swp.h"

/* the bit offset of the 4-byte operand at addr within its 8-byte word */
static unsigned swp_atomic_half_shift(uint64_t addr)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return (addr & 4) ? 32 : 0;
#else
    return (addr & 4) ? 0 : 32;
#endif
}

int siwarp_atomic_prep(struct siwarp_send_wr *wr, enum siwarp_atomic_op op, unsigned width,
                       uint64_t remote_addr, uint64_t operand, uint64_t compare,
                       unsigned *shift)
{
    uint64_t field = UINT64_MAX, x = operand, c = compare;
    unsigned sh = 0;

    if ((unsigned) op > SIWARP_AOP_OR) {
        return -EOPNOTSUPP;                  /* wr untouched */
    }
    if (8 == width) {
        if (remote_addr & 7) {
            return -EINVAL;                  /* RFC 7306 5.2.1: 8-aligned */
        }
    } else if (4 == width) {
        if (remote_addr & 3) {
            return -EINVAL;
        }
        sh = swp_atomic_half_shift(remote_addr);
        field = (uint64_t) UINT32_MAX << sh;
        x = (uint64_t) (uint32_t) operand << sh;
        c = (uint64_t) (uint32_t) compare << sh;
    } else {
        return -EINVAL;
    }

    wr->atomic.remote_addr = remote_addr & ~(uint64_t) 7;
    wr->atomic.compare_add = 0;
    wr->atomic.swap = 0;
    wr->atomic.compare_add_mask = 0;         /* for CmpSwap: always equal */
    wr->atomic.swap_mask = 0;
    switch (op) {
    case SIWARP_AOP_ADD:
        wr->opcode = (8 == width) ? SIWARP_WR_ATOMIC_FETCH_ADD : SIWARP_WR_ATOMIC_MASKED_FETCH_ADD;
        wr->atomic.compare_add = x;
        /* two 32-bit fields: each field's top bit drops its carry */
        wr->atomic.compare_add_mask = (8 == width) ? 0 : (1ull << 31) | (1ull << 63);
        break;
    case SIWARP_AOP_CSWAP:
        if (8 == width) {
            wr->opcode = SIWARP_WR_ATOMIC_CMP_SWP;
            wr->atomic.compare_add = c;
            wr->atomic.swap = x;
            break;
        }
        wr->opcode = SIWARP_WR_ATOMIC_MASKED_CMP_SWP;
        wr->atomic.compare_add = c;
        wr->atomic.compare_add_mask = field;
        wr->atomic.swap = x;
        wr->atomic.swap_mask = field;
        break;
    case SIWARP_AOP_SWAP:
        wr->opcode = SIWARP_WR_ATOMIC_MASKED_CMP_SWP;
        wr->atomic.swap = x;
        wr->atomic.swap_mask = field;
        break;
    case SIWARP_AOP_AND:
        wr->opcode = SIWARP_WR_ATOMIC_MASKED_CMP_SWP;
        wr->atomic.swap = 0;
        wr->atomic.swap_mask = ~x & field;
        break;
    case SIWARP_AOP_OR:
        wr->opcode = SIWARP_WR_ATOMIC_MASKED_CMP_SWP;
        wr->atomic.swap = field;
        wr->atomic.swap_mask = x & field;
        break;
    default:
        return -EOPNOTSUPP;
    }
    if (NULL != shift) {
        *shift = sh;
    }
    return 0;
}
