/* 1ringM (modified ring): the next process column, which factors the next
 * panel, gets the panel straight from the root and forwards nothing; the
 * root then starts an ordinary ring over the remaining processes. */
#include "hpl.h"

void hpl_bc_plan_1ringm(hpl_bcast *b)
{
    hpl_bc_send_next_first(b);
    hpl_bc_plan_rest(b, hpl_bc_plan_chain);
}
