/* Panel factorisation: recursive, on the process column that owns the panel.
 *
 * The rows already chosen as pivots are kept in T, a jb x jb block every
 * process of the column holds, so the updates those rows need (the U part)
 * are done redundantly without further messages; the rows not yet pivoted
 * stay in the distributed matrix. Each column's pivot search, the swap and
 * the broadcast of the pivot row are one reduction carrying the winning row
 * and the row it displaces. Recursion splits a panel in NDIV pieces walked
 * left-looking, Crout or right-looking (RFACT) until NBMIN columns remain,
 * which are factored column by column with the PFACT walk. */
#include "hpl.h"
#include "rmx_timer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Reduction over the pivot records of one column. A record is 2 jb + 4
 * doubles: [|candidate|, its global row (NO_ROW: none), 0, its jb values,
 * diagonal flag, the diagonal row's jb values]. Keep the candidate of larger
 * magnitude (ties: lower global row; a process without candidate never wins),
 * and whichever contribution carries the diagonal row. Commutative.
 *
 * The record travels as ONE element of a contiguous derived datatype: MPI may
 * apply a user operation to any split of a vector of basic elements (Open MPI
 * halves 2 jb + 4 doubles between two processes once the vector is a few KB),
 * which would cut a record in two. With a derived type it cannot; the record
 * length comes from the type's size, not from the count. */
#define NO_ROW 1e300

static void pivot_op(void *vin, void *vinout, int *len, MPI_Datatype *dt)
{
    int bytes = 0;
    MPI_Type_size(*dt, &bytes);
    const int rl = bytes / (int)sizeof(double), jb = (rl - 4) / 2;
    for (int e = 0; e < *len; e++) {
        const double *in = (const double *)vin + (size_t)e * rl;
        double *io = (double *)vinout + (size_t)e * rl;
        const int in_has = in[1] < NO_ROW, io_has = io[1] < NO_ROW;
        if (in_has && (!io_has || in[0] > io[0] || (in[0] == io[0] && in[1] < io[1])))
            memcpy(io, in, (size_t)(3 + jb) * sizeof *io);
        if (in[3 + jb] != 0.0)
            memcpy(io + 3 + jb, in + 3 + jb, (size_t)(1 + jb) * sizeof *io);
    }
}

static MPI_Op pivot_mpi_op(void)
{
    static MPI_Op op = MPI_OP_NULL;
    if (op == MPI_OP_NULL)
        MPI_Op_create(pivot_op, 1, &op);
    return op;
}

void hpl_pf_leaf(hpl_pf *pf, int k)
{
    const int jb = pf->jb, lda = pf->lda;
    double *a = pf->a, *w = pf->work;
    const int r0 = pf->diag ? k : 0;
    double best = -1.0;
    int bi = -1;
    const double *colk = a + (size_t)k * lda;
    if (pf->m > r0) {
        /* First row of largest magnitude (BLAS IDAMAX); a valid row whatever
         * the values, NaN included. */
        const int len = pf->m - r0, inc = 1;
        int i = idamax_(&len, colk + r0, &inc) - 1;
        if (i < 0 || i >= len)
            i = 0;
        bi = r0 + i;
        best = fabs(colk[bi]);
    }
    w[0] = best;
    w[1] = bi >= 0 ? (double)hpl_l2g(pf->lr0 + bi, pf->nb, pf->myrow, pf->P) : NO_ROW;
    w[2] = 0.0;
    if (bi >= 0)
        for (int c = 0; c < jb; c++)
            w[3 + c] = a[bi + (size_t)c * lda];
    w[3 + jb] = pf->diag ? 1.0 : 0.0;
    if (pf->diag)
        for (int c = 0; c < jb; c++)
            w[4 + jb + c] = a[k + (size_t)c * lda];
    if (pf->P > 1) {
        const double t = rmx_now();
        MPI_Allreduce(MPI_IN_PLACE, w, 1, pf->rec, pf->op, pf->col);
        *pf->wait += rmx_now() - t;
        *pf->bytes += 8.0 * (2 * jb + 4);
    }
    const int gp = (int)w[1], gk = pf->jj + k;
    pf->ipiv[k] = gp;
    for (int c = 0; c < jb; c++)
        pf->t[k + (size_t)c * jb] = w[3 + c];
    if (gp != gk && hpl_owner(gp, pf->nb, pf->P) == pf->myrow) {
        /* The displaced diagonal row takes the pivot row's place. */
        const int li = hpl_g2l(gp, pf->nb, pf->P) - pf->lr0;
        for (int c = 0; c < jb; c++)
            a[li + (size_t)c * lda] = w[4 + jb + c];
    }
    const double piv = pf->t[k + (size_t)k * jb];
    const int r1 = pf->diag ? k + 1 : 0;
    if (piv != 0.0 && pf->m > r1) {
        const double inv = 1.0 / piv;
        double *col = a + (size_t)k * lda;
        for (int i = r1; i < pf->m; i++)
            col[i] *= inv;
    }
}

void hpl_pf_upd_lower(hpl_pf *pf, int r0, int c, int w, int j0, int nj)
{
    const int start = pf->diag ? r0 : 0, m = pf->m - start;
    if (m <= 0 || w <= 0 || nj <= 0)
        return;
    hpl_gemm_nn_minus(m, nj, w, pf->a + start + (size_t)c * pf->lda, pf->lda, pf->t + c + (size_t)j0 * pf->jb,
                      pf->jb, pf->a + start + (size_t)j0 * pf->lda, pf->lda);
}

void hpl_pf_upd_trsm(hpl_pf *pf, int c, int w, int j0, int nj)
{
    if (w <= 1 || nj <= 0)
        return; /* a 1 x 1 unit triangle changes nothing */
    const double one = 1.0;
    dtrsm_("L", "L", "N", "U", &w, &nj, &one, pf->t + c + (size_t)c * pf->jb, &pf->jb,
           pf->t + c + (size_t)j0 * pf->jb, &pf->jb, 1, 1, 1, 1);
}

void hpl_pf_upd_tgemm(hpl_pf *pf, int r, int h, int c, int w, int j0, int nj)
{
    if (h <= 0 || w <= 0 || nj <= 0)
        return;
    hpl_gemm_nn_minus(h, nj, w, pf->t + r + (size_t)c * pf->jb, pf->jb, pf->t + c + (size_t)j0 * pf->jb, pf->jb,
                      pf->t + r + (size_t)j0 * pf->jb, pf->jb);
}

typedef void (*walk_fn)(hpl_pf *, int, int, int, hpl_pf_child);
static const walk_fn walks[3] = {hpl_pf_left, hpl_pf_crout, hpl_pf_right};

static void leaf_child(hpl_pf *pf, int c, int w)
{
    for (int k = c; k < c + w; k++)
        hpl_pf_leaf(pf, k);
}

static void rec_child(hpl_pf *pf, int c, int n)
{
    if (n <= pf->nbmin || n < 2) {
        walks[pf->pfact](pf, c, n, n, leaf_child);
        return;
    }
    walks[pf->rfact](pf, c, n, n < pf->ndiv ? n : pf->ndiv, rec_child);
}

void hpl_pfact(hpl_lu *lu, hpl_panel *p)
{
    const hpl_params *prm = lu->prm;
    const hpl_grid *g = lu->g;
    const double t0 = rmx_now();
    const int nb = prm->nb, jb = p->jb, jj = p->jj;
    const int lc = hpl_g2l(jj, nb, g->Q);
    const int lr0 = hpl_numroc(jj, nb, g->myrow, g->P);
    hpl_pf pf = {0};
    pf.a = lu->a + lr0 + (size_t)lc * lu->lda;
    pf.lda = lu->lda;
    pf.m = lu->mp - lr0;
    pf.jb = jb;
    pf.jj = jj;
    pf.nb = nb;
    pf.lr0 = lr0;
    pf.diag = g->myrow == p->prow;
    pf.P = g->P;
    pf.myrow = g->myrow;
    pf.prow = p->prow;
    pf.col = g->col;
    pf.pfact = prm->pfact;
    pf.rfact = prm->rfact;
    pf.nbmin = prm->nbmin;
    pf.ndiv = prm->ndiv;
    pf.op = pivot_mpi_op();
    pf.rec = MPI_DATATYPE_NULL;
    if (g->P > 1) {
        MPI_Type_contiguous(2 * jb + 4, MPI_DOUBLE, &pf.rec);
        MPI_Type_commit(&pf.rec);
    }
    pf.bytes = &lu->st->bytes;
    pf.wait = &lu->st->wait[HPL_PH_PFACT];
    pf.t = lu->pft;
    memset(pf.t, 0, (size_t)jb * jb * sizeof *pf.t);
    pf.ipiv = lu->pfipiv;
    pf.work = lu->pfwork;

    rec_child(&pf, 0, jb);

    /* The diagonal block in the matrix becomes L11\U11 (U11 for the solve). */
    if (pf.diag)
        for (int c = 0; c < jb; c++)
            memcpy(pf.a + (size_t)c * pf.lda, pf.t + (size_t)c * jb, (size_t)jb * sizeof(double));
    /* Pack [L1 | ipiv | L2] for the broadcast and the updates. */
    double *l1 = hpl_panel_l1(p), *ip = hpl_panel_ipiv(p), *l2 = hpl_panel_l2(p);
    if (prm->l1notran)
        memcpy(l1, pf.t, (size_t)jb * jb * sizeof *l1);
    else
        for (int c = 0; c < jb; c++)
            for (int r = 0; r < jb; r++)
                l1[c + (size_t)r * jb] = pf.t[r + (size_t)c * jb];
    for (int k = 0; k < jb; k++)
        ip[k] = (double)pf.ipiv[k];
    const int skip = pf.diag ? jb : 0;
    for (int c = 0; c < jb; c++)
        memcpy(l2 + (size_t)c * p->mrows, pf.a + skip + (size_t)c * pf.lda, (size_t)p->mrows * sizeof *l2);
    if (pf.rec != MPI_DATATYPE_NULL)
        MPI_Type_free(&pf.rec);
    lu->st->t[HPL_PH_PFACT] += rmx_now() - t0;
}
