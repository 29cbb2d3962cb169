/* The trailing update with one panel: interchange rows, finish the U rows
 * with a triangular solve against L11, and subtract L2 * U from the rows
 * below with DGEMM, in column chunks so pending broadcasts can be pushed
 * along in between (the look-ahead's communication hides behind DGEMM). */
#include "hpl.h"
#include "rmx_timer.h"

#include <string.h>

/* Columns per DGEMM chunk: large enough to run near peak, small enough to
 * poll the network a few times per update. */
#define CHUNK 384

void hpl_gemm_nn_minus(int m, int n, int k, const double *a, int lda, const double *b, int ldb, double *c, int ldc)
{
    const double mone = -1.0, one = 1.0;
    dgemm_("N", "N", &m, &n, &k, &mone, a, &lda, b, &ldb, &one, c, &ldc, 1, 1);
}

void hpl_update(hpl_lu *lu, const hpl_panel *p, int lc0, int lc1, hpl_poll_fn poll, void *pctx)
{
    const int nc = lc1 - lc0, jb = p->jb, lda = lu->lda;
    const hpl_params *prm = lu->prm;
    if (nc <= 0 || jb <= 0)
        return;
    double *u = lu->uwork;
    double t = rmx_now();
    hpl_swap(lu, p, lc0, lc1, u);
    double t1 = rmx_now();
    lu->st->t[HPL_PH_SWAP] += t1 - t;

    const double one = 1.0, mone = -1.0;
    const double *l1 = hpl_panel_l1(p), *l2 = hpl_panel_l2(p);
    const char *uplo = prm->l1notran ? "L" : "U";
    /* L11 X = U; L1 holds L11 itself or its transpose. */
    if (prm->unotran)
        dtrsm_("L", uplo, prm->l1notran ? "N" : "T", "U", &jb, &nc, &one, l1, &jb, u, &jb, 1, 1, 1, 1);
    else
        dtrsm_("R", uplo, prm->l1notran ? "T" : "N", "U", &nc, &jb, &one, l1, &jb, u, &nc, 1, 1, 1, 1);

    const int m = p->mrows;
    if (m > 0) {
        const int lrb = lu->mp - m;
        for (int c = 0; c < nc; c += CHUNK) {
            int w = nc - c < CHUNK ? nc - c : CHUNK;
            double *cc = lu->a + lrb + (size_t)(lc0 + c) * lda;
            if (prm->unotran)
                dgemm_("N", "N", &m, &w, &jb, &mone, l2, &m, u + (size_t)c * jb, &jb, &one, cc, &lda, 1, 1);
            else
                dgemm_("N", "T", &m, &w, &jb, &mone, l2, &m, u + c, &nc, &one, cc, &lda, 1, 1);
            if (poll) {
                double tp = rmx_now();
                poll(pctx);
                lu->st->t[HPL_PH_BCAST] += rmx_now() - tp;
                t1 += rmx_now() - tp;
            }
        }
    }
    /* The diagonal block's rows become this panel's U. */
    if (lu->g->myrow == p->prow) {
        const int lr = hpl_g2l(p->jj, prm->nb, lu->g->P);
        for (int j = 0; j < nc; j++) {
            double *col = lu->a + lr + (size_t)(lc0 + j) * lda;
            if (prm->unotran)
                memcpy(col, u + (size_t)j * jb, (size_t)jb * sizeof *col);
            else
                for (int i = 0; i < jb; i++)
                    col[i] = u[j + (size_t)i * nc];
        }
    }
    lu->st->t[HPL_PH_UPDATE] += rmx_now() - t1;
}
