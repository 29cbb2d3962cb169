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

/* Progress between DGEMM chunks: the broadcasts (through poll, timed as
 * broadcast) and the next block's row exchange. Returns poll's verdict. */
static int progress(hpl_lu *lu, hpl_poll_fn poll, void *pctx, hpl_swp *s, double *excluded)
{
    const double t = rmx_now();
    const int pending = poll ? poll(pctx) : 0;
    const double t1 = rmx_now();
    lu->st->t[HPL_PH_BCAST] += t1 - t;
    hpl_swp_test(s);
    lu->st->t[HPL_PH_SWAP] += rmx_now() - t1;
    *excluded += rmx_now() - t;
    return pending;
}

/* U := L11^-1 U and the DGEMM for the columns [lc, lc + nc) whose U is u. */
static void block_update(hpl_lu *lu, const hpl_panel *p, double *u, int ldu, int unotran, int lc, int nc,
                         hpl_poll_fn poll, void *pctx, hpl_swp *s)
{
    const int jb = p->jb, lda = lu->lda, m = p->mrows;
    const double one = 1.0, mone = -1.0;
    const double t = rmx_now();
    double excluded = 0.0;
    hpl_solve_u(lu->prm->l1notran, unotran, jb, nc, hpl_panel_l1(p), u, ldu);
    if (m > 0) {
        const double *l2 = hpl_panel_l2(p);
        double *c0 = lu->a + (lu->mp - m) + (size_t)lc * lda;
        int pending = poll ? progress(lu, poll, pctx, s, &excluded) : 0;
        for (int c = 0, w; c < nc; c += w) {
            w = pending && nc - c > CHUNK ? CHUNK : nc - c;
            if (unotran)
                dgemm_("N", "N", &m, &w, &jb, &mone, l2, &m, u + (size_t)c * ldu, &ldu, &one, c0 + (size_t)c * lda,
                       &lda, 1, 1);
            else
                dgemm_("N", "T", &m, &w, &jb, &mone, l2, &m, u + c, &ldu, &one, c0 + (size_t)c * lda, &lda, 1, 1);
            if (pending && c + w < nc)
                pending = progress(lu, poll, pctx, s, &excluded);
        }
    }
    lu->st->t[HPL_PH_UPDATE] += rmx_now() - t - excluded;
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
    /* Pipeline: block b+1's rows travel while block b is updated. */
    hpl_swp s;
    hpl_swp_init(&s, lu, p, lc0, lc1, u);
    hpl_swp_post(&s, 0);
    hpl_swp_finish(&s, 0);
    for (int b = 0; b < s.nblk; b++) {
        if (b + 1 < s.nblk)
            hpl_swp_post(&s, b + 1);
        int c, w;
        hpl_swp_cols(&s, b, &c, &w);
        block_update(lu, p, unotran ? u + (size_t)c * ldu : u + c, ldu, unotran, lc0 + c, w, poll, pctx, &s);
        if (b + 1 < s.nblk)
            hpl_swp_finish(&s, b + 1);
    }
    hpl_swp_free(&s);

    /* The diagonal block's rows become this panel's U (already there in place). */
    const double t = rmx_now();
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
    lu->st->t[HPL_PH_UPDATE] += rmx_now() - t;
}
