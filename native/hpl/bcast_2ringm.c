/* 2ringM: the next process column gets the panel first and directly, then
 * the two-ring broadcast covers the others. */
#include "hpl.h"

void hpl_bc_plan_2ringm(hpl_bcast *b)
{
    const int me = hpl_bc_rel(b);
    if (me == 1)
        hpl_bc_add(b, 0, 0, 1, 0, b->len);
    if (me == 0)
        hpl_bc_add(b, 0, 1, 0, 0, b->len);
    hpl_bc_plan_two_halves(b, 2);
}
