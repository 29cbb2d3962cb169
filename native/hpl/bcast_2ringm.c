/* 2ringM: the next process column gets the panel first and directly, then
 * the two-ring broadcast covers the others. */
#include "hpl.h"

void hpl_bc_plan_2ringm(hpl_bcast *b)
{
    hpl_bc_send_next_first(b);
    hpl_bc_plan_two_halves(b, 2);
}
