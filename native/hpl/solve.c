/* Back substitution U x = y on the distributed factors, block by block from
 * the last: the process row of a diagonal block sums its partial products
 * onto the block's owner, which solves the small triangle and sends the
 * piece of x to everybody; the owner's process column then folds that piece
 * into its partial products. y is column N, which the factorisation left as
 * L^-1 P b. Work is O(N^2 / PQ); messages are one reduction and one
 * broadcast per block. */
#include "hpl.h"

#include <stdlib.h>
#include <string.h>

void hpl_solve(hpl_lu *lu, double *x)
{
    const hpl_grid *g = lu->g;
    const int n = lu->prm->n, nb = lu->prm->nb, P = g->P, Q = g->Q, lda = lu->lda;
    const int npan = (n + nb - 1) / nb;
    const int pcb = hpl_owner(n, nb, Q), lcb = hpl_g2l(n, nb, Q);
    double *w = hpl_malloc((size_t)(lu->mp > 0 ? lu->mp : 1) * sizeof *w, "the solve's partial products");
    double *tmp = hpl_malloc((size_t)nb * sizeof *tmp, "the solve's block of x");
    memset(x, 0, (size_t)n * sizeof *x);
    const int one = 1;
    const double dmone = -1.0, done = 1.0;
    for (int j = npan - 1; j >= 0; j--) {
        const int jj = j * nb, jb = n - jj < nb ? n - jj : nb;
        const int prow = j % P, pcol = j % Q;
        if (g->myrow == prow) {
            const int lr = hpl_g2l(jj, nb, P);
            for (int i = 0; i < jb; i++)
                tmp[i] = (g->mycol == pcb ? lu->a[lr + i + (size_t)lcb * lda] : 0.0) - w[lr + i];
            if (Q > 1) {
                if (g->mycol == pcol)
                    MPI_Reduce(MPI_IN_PLACE, tmp, jb, MPI_DOUBLE, MPI_SUM, pcol, g->row);
                else {
                    MPI_Reduce(tmp, NULL, jb, MPI_DOUBLE, MPI_SUM, pcol, g->row);
                    lu->st->bytes += 8.0 * jb;
                }
            }
            if (g->mycol == pcol) {
                const int lc = hpl_g2l(jj, nb, Q);
                dtrsv_("U", "N", "N", &jb, lu->a + lr + (size_t)lc * lda, &lda, tmp, &one, 1, 1, 1);
                memcpy(x + jj, tmp, (size_t)jb * sizeof *x);
                lu->st->bytes += 8.0 * jb;
            }
        }
        MPI_Bcast(x + jj, jb, MPI_DOUBLE, hpl_grid_rank(g, prow, pcol), g->comm);
        if (g->mycol == pcol) {
            /* Partial products of the rows above this block. */
            const int mabove = hpl_numroc(jj, nb, g->myrow, P);
            if (mabove > 0) {
                const int lc = hpl_g2l(jj, nb, Q);
                dgemv_("N", &mabove, &jb, &done, lu->a + (size_t)lc * lda, &lda, x + jj, &one, &done, w, &one, 1);
            }
        }
    }
    (void)dmone;
    free(w);
    free(tmp);
}
