/* long: bandwidth-minded. The root scatters the panel in Q pieces, then the
 * pieces roll around the ring (Q-1 steps) until everyone has all of them:
 * each process sends about the panel's size once, instead of the root
 * sending it Q-1 times. */
#include "hpl.h"

#include <stdlib.h>

void hpl_bc_plan_long(hpl_bcast *b)
{
    int *m = hpl_malloc((size_t)b->size * sizeof *m, "the broadcast's member list");
    for (int i = 0; i < b->size; i++)
        m[i] = i;
    hpl_bc_plan_spread_roll(b, m, b->size, 0);
    free(m);
}
