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

hpl_u hpl_u_of(const hpl_lu *lu, const hpl_panel *p, int lc0, int nc, double *work)
{
    /* With one process row the pivot rows are U in place in the matrix (ld
     * lda), and so on the diagonal process row of a pair (hpl_pair_active),
     * whose other row gets U as jb x nc; else U is the work array, jb x nc
     * or its transpose. */
    const int pair = hpl_pair_active(lu);
    const int inplace = lu->g->P == 1 || (pair && lu->g->myrow == p->prow);
    const int unotran = inplace || pair || lu->prm->unotran;
    const int lr = lu->g->P == 1 ? p->jj : hpl_g2l(p->jj, lu->prm->nb, lu->g->P);
    return (hpl_u){inplace ? lu->a + lr + (size_t)lc0 * lu->lda : work, inplace ? lu->lda : unotran ? p->jb : nc,
                   unotran, inplace};
}

double *hpl_u_col(const hpl_u *u, int c) { return u->notran ? u->u + (size_t)c * u->ld : u->u + c; }

void hpl_u_gemm(const hpl_lu *lu, const hpl_panel *p, const hpl_u *u, int lc0, int c, int w, int r0, int h)
{
    const double one = 1.0, mone = -1.0;
    const int jb = p->jb, m = p->mrows, lda = lu->lda;
    const double *l2 = hpl_panel_l2(p) + r0;
    double *cc = lu->a + (lu->mp - m) + r0 + (size_t)(lc0 + c) * lda;
    if (u->notran)
        dgemm_("N", "N", &h, &w, &jb, &mone, l2, &m, hpl_u_col(u, c), &u->ld, &one, cc, &lda, 1, 1);
    else
        dgemm_("N", "T", &h, &w, &jb, &mone, l2, &m, hpl_u_col(u, c), &u->ld, &one, cc, &lda, 1, 1);
}

void hpl_u_store(const hpl_lu *lu, const hpl_panel *p, const hpl_u *u, int lc0, int c0, int c1)
{
    /* The diagonal block's rows become this panel's U (already there in place). */
    if (u->inplace || lu->g->myrow != p->prow)
        return;
    const int jb = p->jb, lda = lu->lda;
    double *d = lu->a + hpl_g2l(p->jj, lu->prm->nb, lu->g->P) + (size_t)lc0 * lda;
    if (u->notran)
        for (int j = c0; j < c1; j++)
            memcpy(d + (size_t)j * lda, hpl_u_col(u, j), (size_t)jb * sizeof *d);
    else /* transpose in tiles: 8 columns of u's rows are one cache line */
        for (int j0 = c0; j0 < c1; j0 += 8) {
            const int j1 = j0 + 8 < c1 ? j0 + 8 : c1;
            for (int i = 0; i < jb; i++) {
                const double *ui = u->u + (size_t)i * u->ld;
                for (int j = j0; j < j1; j++)
                    d[i + (size_t)j * lda] = ui[j];
            }
        }
}

/* C -= L2 U for columns [c0, c1) of the range: in CHUNK-column calls with a
 * poll() after each while broadcasts are pending (*pending), then in one.
 * Returns the seconds spent polling. */
static double gemm_cols(hpl_lu *lu, const hpl_panel *p, const hpl_u *u, int lc0, int c0, int c1, hpl_poll_fn poll,
                        void *pctx, int *pending)
{
    double tpoll = 0.0;
    if (p->mrows <= 0)
        return 0.0;
    for (int c = c0, w; c < c1; c += w) {
        w = *pending && c1 - c > CHUNK ? CHUNK : c1 - c;
        hpl_u_gemm(lu, p, u, lc0, c, w, 0, p->mrows);
        if (*pending && c + w < c1) {
            const double tp = rmx_now();
            *pending = poll(pctx);
            tpoll += rmx_now() - tp;
        }
    }
    return tpoll;
}

/* The update of a pair of process rows (hpl_pair_active; swap.c): D permutes
 * each piece in place, solves it and sends it, then runs its DGEMM on all
 * columns; O runs its DGEMM piece by piece as they arrive. The first piece
 * goes out before D solves it, and O solves its own copy: O waits only for
 * D's interchanges of that piece, not for its solve too. */
static void update_pair(hpl_lu *lu, const hpl_panel *p, int lc0, int lc1, double *work, hpl_poll_fn poll,
                        void *pctx)
{
    const int nc = lc1 - lc0, jb = p->jb;
    const hpl_u u = hpl_u_of(lu, p, lc0, nc, work);
    const double t = rmx_now(), sw0 = lu->st->t[HPL_PH_SWAP];
    double tpoll = 0.0;
    int pending = 0;
    if (poll && p->mrows > 0) {
        const double tp = rmx_now();
        pending = poll(pctx);
        tpoll += rmx_now() - tp;
    }
    hpl_pair x;
    hpl_pair_start(lu, p, lc0, lc1, &x);
    for (int i = 0; i < x.np; i++) {
        const int c0 = x.cut[i], w = x.cut[i + 1] - c0;
        if (x.diag) {
            hpl_pair_permute(lu, p, &x, i);
            if (i == 0)
                hpl_pair_send_u(lu, p, &x, i, work);
            hpl_solve_u(lu->prm->l1notran, 1, jb, w, hpl_panel_l1(p), hpl_u_col(&u, c0), u.ld);
            if (i > 0)
                hpl_pair_send_u(lu, p, &x, i, work);
        } else {
            hpl_pair_receive(lu, p, &x, i, work);
            if (i == 0)
                hpl_solve_u(lu->prm->l1notran, 1, jb, w, hpl_panel_l1(p), hpl_u_col(&u, c0), u.ld);
            tpoll += gemm_cols(lu, p, &u, lc0, c0, c0 + w, poll, pctx, &pending);
        }
    }
    if (x.diag)
        tpoll += gemm_cols(lu, p, &u, lc0, 0, nc, poll, pctx, &pending);
    hpl_pair_finish(lu, &x);
    lu->st->t[HPL_PH_BCAST] += tpoll;
    lu->st->t[HPL_PH_UPDATE] += rmx_now() - t - tpoll - (lu->st->t[HPL_PH_SWAP] - sw0);
}

void hpl_update(hpl_lu *lu, const hpl_panel *p, int lc0, int lc1, double *work, hpl_poll_fn poll, void *pctx)
{
    const int nc = lc1 - lc0, jb = p->jb;
    if (nc <= 0 || jb <= 0)
        return;
    if (hpl_pair_active(lu)) {
        update_pair(lu, p, lc0, lc1, work, poll, pctx);
        return;
    }
    const hpl_u u = hpl_u_of(lu, p, lc0, nc, work);
    double t = rmx_now();
    if (u.inplace)
        hpl_swap_inplace(lu, p, lc0, lc1);
    else
        hpl_swap(lu, p, lc0, lc1, u.u, u.ld);
    double t1 = rmx_now();
    lu->st->t[HPL_PH_SWAP] += t1 - t;

    hpl_solve_u(lu->prm->l1notran, u.notran, jb, nc, hpl_panel_l1(p), u.u, u.ld);

    int pending = 0;
    if (poll && p->mrows > 0) {
        const double tp = rmx_now();
        pending = poll(pctx);
        lu->st->t[HPL_PH_BCAST] += rmx_now() - tp;
        t1 += rmx_now() - tp;
    }
    const double tp = gemm_cols(lu, p, &u, lc0, 0, nc, poll, pctx, &pending);
    lu->st->t[HPL_PH_BCAST] += tp;
    t1 += tp;
    hpl_u_store(lu, p, &u, lc0, 0, nc);
    lu->st->t[HPL_PH_UPDATE] += rmx_now() - t1;
}
