/* longM: the next process column receives the whole panel first so it can
 * start its look-ahead factorisation; the rest use spread-and-roll. */
#include "hpl.h"

void hpl_bc_plan_longm(hpl_bcast *b)
{
    hpl_bc_send_next_first(b);
    hpl_bc_plan_rest(b, hpl_bc_plan_spread_roll);
}
