/* The residual check: regenerate [A|b] (the factors overwrote it), form
 * r = A x - b on the grid and scale its infinity norm the way the reference
 * does, ||r|| / (eps (||A|| ||x|| + ||b||) N) with eps = 2^-53, so the same
 * threshold (16) means the same thing. */
#include "hpl.h"

#include <math.h>
#include <stdlib.h>

void hpl_check(hpl_lu *lu, const double *x, hpl_check_result *r)
{
    const hpl_grid *g = lu->g;
    const int n = lu->prm->n, nb = lu->prm->nb, lda = lu->lda, mp = lu->mp;
    const int nqa = hpl_numroc(n, nb, g->mycol, g->Q); /* local columns of A alone */
    const int pcb = hpl_owner(n, nb, g->Q), lcb = hpl_g2l(n, nb, g->Q);
    hpl_matgen(g, n, nb, lu->a, lda);

    double *xl = hpl_malloc((size_t)(nqa > 0 ? nqa : 1) * sizeof *xl, "the check's local x");
    double *res = hpl_malloc((size_t)(mp > 0 ? mp : 1) * 2 * sizeof *res, "the check's row sums");
    double *rowsum = res + (mp > 0 ? mp : 1);
    for (int j = 0; j < nqa; j++)
        xl[j] = x[hpl_l2g(j, nb, g->mycol, g->Q)];
    const int one = 1;
    const double done = 1.0, dzero = 0.0;
    if (mp > 0 && nqa > 0)
        dgemv_("N", &mp, &nqa, &done, lu->a, &lda, xl, &one, &dzero, res, &one, 1);
    double colmax1 = 0.0; /* ||A||_1 pieces: column sums */
    for (int j = 0; j < nqa; j++) {
        const double *col = lu->a + (size_t)j * lda;
        double s = 0.0;
        for (int i = 0; i < mp; i++) {
            rowsum[i] += fabs(col[i]);
            s += fabs(col[i]);
        }
        xl[j] = s;
    }
    double bmax = 0.0;
    if (g->mycol == pcb)
        for (int i = 0; i < mp; i++) {
            res[i] -= lu->a[i + (size_t)lcb * lda];
            if (fabs(lu->a[i + (size_t)lcb * lda]) > bmax)
                bmax = fabs(lu->a[i + (size_t)lcb * lda]);
        }
    /* Rows are complete after summing along the process row. */
    if (g->Q > 1 && mp > 0)
        MPI_Allreduce(MPI_IN_PLACE, res, 2 * mp, MPI_DOUBLE, MPI_SUM, g->row);
    if (g->P > 1 && nqa > 0)
        MPI_Allreduce(MPI_IN_PLACE, xl, nqa, MPI_DOUBLE, MPI_SUM, g->col);
    double loc[4] = {0.0, 0.0, bmax, 0.0};
    for (int i = 0; i < mp; i++) {
        if (fabs(res[i]) > loc[0])
            loc[0] = fabs(res[i]);
        if (rowsum[i] > loc[1])
            loc[1] = rowsum[i];
    }
    for (int j = 0; j < nqa; j++)
        if (xl[j] > colmax1)
            colmax1 = xl[j];
    loc[3] = colmax1;
    MPI_Allreduce(MPI_IN_PLACE, loc, 4, MPI_DOUBLE, MPI_MAX, g->comm);
    r->rnorm = loc[0];
    r->anorm_inf = loc[1];
    r->bnorm_inf = loc[2];
    r->anorm_1 = loc[3];
    r->xnorm_inf = r->xnorm_1 = 0.0;
    for (int i = 0; i < n; i++) {
        r->xnorm_1 += fabs(x[i]);
        if (fabs(x[i]) > r->xnorm_inf)
            r->xnorm_inf = fabs(x[i]);
    }
    const double eps = ldexp(1.0, -53);
    const double den = eps * (r->anorm_inf * r->xnorm_inf + r->bnorm_inf) * (double)n;
    r->resid = den > 0 ? r->rnorm / den : 0.0;
    free(xl);
    free(res);
}
