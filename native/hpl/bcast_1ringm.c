/* 1ringM (modified ring): the next process column, which factors the next
 * panel, gets the panel straight from the root and forwards nothing; the
 * root then starts an ordinary ring over the remaining processes. */
#include "hpl.h"

#include <stdlib.h>

void hpl_bc_plan_1ringm(hpl_bcast *b)
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
    hpl_bc_plan_chain(b, m, n, 0);
    free(m);
}
