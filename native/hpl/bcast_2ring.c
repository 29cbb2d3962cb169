/* 2ring: the processes other than the root form two halves; the root sends
 * to the first of each and each half forwards along its own ring, halving
 * the length of the longest chain. */
#include "hpl.h"

#include <stdlib.h>

void hpl_bc_plan_two_halves(hpl_bcast *b, int first)
{
    const int rest = b->size - first;
    if (rest <= 0)
        return;
    const int h = (rest + 1) / 2;
    int *m = hpl_malloc((size_t)(h + 1) * sizeof *m, "the broadcast's member list");
    m[0] = 0;
    for (int i = 0; i < h; i++)
        m[i + 1] = first + i;
    hpl_bc_plan_chain(b, m, h + 1, 0);
    m[0] = 0;
    for (int i = 0; i < rest - h; i++)
        m[i + 1] = first + h + i;
    hpl_bc_plan_chain(b, m, rest - h + 1, 0);
    free(m);
}

void hpl_bc_plan_2ring(hpl_bcast *b)
{
    hpl_bc_plan_two_halves(b, 1);
}
