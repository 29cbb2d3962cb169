/* The trailing update with one panel: interchange rows, finish the U rows
 * with a triangular solve against L11, and subtract L2 * U from the rows
 * below with DGEMM, in column chunks while broadcasts are pending so they can
 * be pushed along in between (the look-ahead's communication hides behind
 * DGEMM), then in one call: every DGEMM call packs all of L2 again, so
 * chunking costs several per cent when it is not needed. */
#include "hpl.h"
#include "rmx_timer.h"

#include <string.h>

/* Columns per DGEMM chunk while a broadcast is pending: large enough to run
 * near peak, small enough to poll the network several times per update. */
#define CHUNK 384

void hpl_gemm_nn_minus(int m, int n, int k, const double *a, int lda, const double *b, int ldb, double *c, int ldc)
{
    const double mone = -1.0, one = 1.0;
    dgemm_("N", "N", &m, &n, &k, &mone, a, &lda, b, &ldb, &one, c, &ldc, 1, 1);
}

/* U := L11^-1 U, with L1 holding L11 (l1notran) or its transpose, and u
 * holding U (jb x nc, unotran) or its transpose (nc x jb). One DTRSM with a
 * 192-wide triangle runs at a quarter of DGEMM's rate here (OpenBLAS), so the
 * triangle goes in blocks, left-looking: each block first takes a DGEMM with
 * the blocks already solved, then a narrow DTRSM. Block widths measured with
 * OpenBLAS 0.3.21 (SkylakeX kernels), nc = 5000, jb = 192: the right-side
 * solve (U transposed) is fastest with 32 columns, the left side with 64. */
#define TRSM_BS_RIGHT 32
#define TRSM_BS_LEFT 64

void hpl_solve_u(int l1notran, int unotran, int jb, int nc, const double *l1, double *u, int ldu)
{
    const double one = 1.0, mone = -1.0;
    const int bs = unotran ? TRSM_BS_LEFT : TRSM_BS_RIGHT;
    for (int j = 0; j < jb; j += bs) {
        const int b = jb - j < bs ? jb - j : bs;
        const double *ljj = l1 + j + (size_t)j * jb;
        if (unotran) {
            /* Rows j..j+b of U: L[j:j+b, 0:j] X[0:j] then L[j:j+b, j:j+b]. */
            if (j > 0) {
                if (l1notran)
                    dgemm_("N", "N", &b, &nc, &j, &mone, l1 + j, &jb, u, &ldu, &one, u + j, &ldu, 1, 1);
                else
                    dgemm_("T", "N", &b, &nc, &j, &mone, l1 + (size_t)j * jb, &jb, u, &ldu, &one, u + j, &ldu, 1,
                           1);
            }
            dtrsm_("L", l1notran ? "L" : "U", l1notran ? "N" : "T", "U", &b, &nc, &one, ljj, &jb, u + j, &ldu, 1, 1,
                   1, 1);
        } else {
            /* Columns j..j+b of U^T: X[:, 0:j] L[j:j+b, 0:j]^T then L[j:j+b, j:j+b]^T. */
            double *uj = u + (size_t)j * ldu;
            if (j > 0) {
                if (l1notran)
                    dgemm_("N", "T", &nc, &b, &j, &mone, u, &ldu, l1 + j, &jb, &one, uj, &ldu, 1, 1);
                else
                    dgemm_("N", "N", &nc, &b, &j, &mone, u, &ldu, l1 + (size_t)j * jb, &jb, &one, uj, &ldu, 1, 1);
            }
            dtrsm_("R", l1notran ? "L" : "U", l1notran ? "T" : "N", "U", &nc, &b, &one, ljj, &jb, uj, &ldu, 1, 1, 1,
                   1);
        }
    }
}

void hpl_update(hpl_lu *lu, const hpl_panel *p, int lc0, int lc1, hpl_poll_fn poll, void *pctx)
{
    const int nc = lc1 - lc0, jb = p->jb, lda = lu->lda;
    const hpl_params *prm = lu->prm;
    if (nc <= 0 || jb <= 0)
        return;
    /* U is u (jb x nc or its transpose, ld ldu): the work array, or with one
     * process row the pivot rows in place in the matrix (ld lda). */
    const int inplace = lu->g->P == 1;
    const int unotran = inplace || prm->unotran;
    double *u = inplace ? lu->a + p->jj + (size_t)lc0 * lda : lu->uwork;
    const int ldu = inplace ? lda : prm->unotran ? jb : nc;
    double t = rmx_now();
    if (inplace)
        hpl_swap_inplace(lu, p, lc0, lc1);
    else
        hpl_swap(lu, p, lc0, lc1, u);
    double t1 = rmx_now();
    lu->st->t[HPL_PH_SWAP] += t1 - t;

    const double one = 1.0, mone = -1.0;
    const double *l1 = hpl_panel_l1(p), *l2 = hpl_panel_l2(p);
    hpl_solve_u(prm->l1notran, unotran, jb, nc, l1, u, ldu);

    const int m = p->mrows;
    if (m > 0) {
        const int lrb = lu->mp - m;
        int pending = 0;
        if (poll) {
            const double tp = rmx_now();
            pending = poll(pctx);
            lu->st->t[HPL_PH_BCAST] += rmx_now() - tp;
            t1 += rmx_now() - tp;
        }
        for (int c = 0, w; c < nc; c += w) {
            w = pending && nc - c > CHUNK ? CHUNK : nc - c;
            double *cc = lu->a + lrb + (size_t)(lc0 + c) * lda;
            if (unotran)
                dgemm_("N", "N", &m, &w, &jb, &mone, l2, &m, u + (size_t)c * ldu, &ldu, &one, cc, &lda, 1, 1);
            else
                dgemm_("N", "T", &m, &w, &jb, &mone, l2, &m, u + c, &ldu, &one, cc, &lda, 1, 1);
            if (pending && c + w < nc) {
                double tp = rmx_now();
                pending = poll(pctx);
                lu->st->t[HPL_PH_BCAST] += rmx_now() - tp;
                t1 += rmx_now() - tp;
            }
        }
    }
    /* The diagonal block's rows become this panel's U (already there in place). */
    if (!inplace && lu->g->myrow == p->prow) {
        const int lr = hpl_g2l(p->jj, prm->nb, lu->g->P);
        double *d = lu->a + lr + (size_t)lc0 * lda;
        if (prm->unotran)
            for (int j = 0; j < nc; j++)
                memcpy(d + (size_t)j * lda, u + (size_t)j * jb, (size_t)jb * sizeof *d);
        else /* transpose in tiles: 8 columns of u's rows are one cache line */
            for (int j0 = 0; j0 < nc; j0 += 8) {
                const int j1 = j0 + 8 < nc ? j0 + 8 : nc;
                for (int i = 0; i < jb; i++) {
                    const double *ui = u + (size_t)i * nc;
                    for (int j = j0; j < j1; j++)
                        d[i + (size_t)j * lda] = ui[j];
                }
            }
    }
    lu->st->t[HPL_PH_UPDATE] += rmx_now() - t1;
}
