/* 1ring: the root sends to its right neighbour, and each process forwards
 * the whole panel to the next one until the ring closes. */
#include "hpl.h"

#include <stdlib.h>

void hpl_bc_plan_1ring(hpl_bcast *b)
{
    int *m = hpl_malloc((size_t)b->size * sizeof *m, "the broadcast's member list");
    for (int i = 0; i < b->size; i++)
        m[i] = i;
    hpl_bc_plan_chain(b, m, b->size, 0);
    free(m);
}
