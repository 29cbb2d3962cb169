/* longM: the next process column receives the whole panel first so it can
 * start its look-ahead factorisation; the rest use spread-and-roll. */
#include "hpl.h"

#include <stdlib.h>

void hpl_bc_plan_longm(hpl_bcast *b)
{
    const int me = hpl_bc_rel(b);
    if (me == 1)
        hpl_bc_add(b, 0, 0, 1, 0, b->len);
    if (me == 0)
        hpl_bc_add(b, 0, 1, 0, 0, b->len);
    if (b->size < 3)
        return;
    int *m = malloc((size_t)b->size * sizeof *m);
    if (!m)
        MPI_Abort(MPI_COMM_WORLD, 1);
    int n = 0;
    m[n++] = 0;
    for (int i = 2; i < b->size; i++)
        m[n++] = i;
    hpl_bc_plan_spread_roll(b, m, n, 0);
    free(m);
}
