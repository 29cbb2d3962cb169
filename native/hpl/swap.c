/* Row interchanges of a factored panel applied to the columns to its right.
 *
 * The panel's pivots, applied in order, permute a few rows: the jb rows of
 * the diagonal block receive the pivot rows (they become U, which every
 * process of the column needs for its DGEMM), and the pivot rows' old places
 * receive rows displaced from the diagonal block. Every process works out
 * this permutation from ipiv, contributes the rows it holds as "records", and
 * an all-gather over the process column gives everybody all records. The
 * all-gather is where the SWAP variants differ:
 *   binary exchange  recursive doubling, log2(P) steps (latency-bound sizes);
 *   long             spread-roll: with equilibration the records are first
 *                    collected and dealt out in equal pieces, then the pieces
 *                    roll around the column in P-1 steps (bandwidth-bound);
 *                    without, each process's own records roll as they are;
 *   mix              binary exchange up to the threshold number of columns.
 * With one process row there is nothing to exchange: hpl_swap_inplace applies
 * the interchanges in the matrix (in pivot order, 16-column tiles). */
#include "hpl.h"
#include "rmx_timer.h"

#include <stdlib.h>
#include <string.h>

#define SWAP_TAG 7

/* Message counts below are at most swbuf's 2 nb nq doubles, which the memory
 * model (hpl_mem_model's msg) keeps within int before a run: the casts hold. */

void hpl_swap_plan_make(hpl_swap_plan *pl, int *mem, const double *ipiv, int jb, int jj, int nb, int P)
{
    int *pos = mem, *cont = mem + 2 * jb;
    int npos = jb;
    for (int i = 0; i < jb; i++)
        pos[i] = cont[i] = jj + i;
    for (int k = 0; k < jb; k++) {
        const int q = (int)ipiv[k];
        int b = -1;
        if (q < jj + jb)
            b = q - jj;
        else
            for (int i = jb; i < npos; i++)
                if (pos[i] == q)
                    b = i;
        if (b < 0) {
            b = npos++;
            pos[b] = cont[b] = q;
        }
        const int t = cont[k];
        cont[k] = cont[b];
        cont[b] = t;
    }
    int *w = mem + 4 * jb;
    pl->src = w;
    pl->dst = w + 2 * jb;
    pl->grp = w + 4 * jb;
    pl->idx = w + 6 * jb;
    pl->cnt = w + 8 * jb;
    pl->off = w + 8 * jb + P;
    pl->nrec = 0;
    for (int i = 0; i < jb; i++) {
        pl->src[pl->nrec] = cont[i];
        pl->dst[pl->nrec++] = -1;
    }
    for (int i = jb; i < npos; i++)
        if (cont[i] != pos[i]) {
            pl->src[pl->nrec] = cont[i];
            pl->dst[pl->nrec++] = pos[i];
        }
    for (int r = 0; r < P; r++)
        pl->cnt[r] = 0;
    for (int e = 0; e < pl->nrec; e++) {
        pl->grp[e] = hpl_owner(pl->src[e], nb, P);
        pl->idx[e] = pl->cnt[pl->grp[e]]++;
    }
    pl->off[0] = 0;
    for (int r = 1; r <= P; r++)
        pl->off[r] = pl->off[r - 1] + pl->cnt[r - 1];
}

/* Virtual rank in the power-of-two core of the binary exchange. */
static int vrank(int r, int P2) { return r < P2 ? r : r - P2; }

static size_t pack_set(double *out, const double *G, const hpl_swap_plan *pl, int P, int P2, int who, int mask,
                       int nc)
{
    size_t n = 0;
    for (int r = 0; r < P; r++)
        if ((vrank(r, P2) & mask) == (who & mask)) {
            const size_t len = (size_t)pl->cnt[r] * nc;
            if (out)
                memcpy(out + n, G + (size_t)pl->off[r] * nc, len * sizeof *out);
            n += len;
        }
    return n;
}

static void unpack_set(double *G, const double *in, const hpl_swap_plan *pl, int P, int P2, int who, int mask,
                       int nc)
{
    size_t n = 0;
    for (int r = 0; r < P; r++)
        if ((vrank(r, P2) & mask) == (who & mask)) {
            const size_t len = (size_t)pl->cnt[r] * nc;
            memcpy(G + (size_t)pl->off[r] * nc, in + n, len * sizeof *G);
            n += len;
        }
}

static void xchg(double *sb, size_t ns, int to, double *rb, size_t nr, int from, MPI_Comm c, double *bytes)
{
    MPI_Sendrecv(sb, (int)ns, MPI_DOUBLE, to, SWAP_TAG, rb, (int)nr, MPI_DOUBLE, from, SWAP_TAG, c,
                 MPI_STATUS_IGNORE);
    *bytes += 8.0 * (double)ns;
}

static void binary_exchange(hpl_lu *lu, const hpl_swap_plan *pl, double *G, int nc)
{
    const int P = lu->g->P, me = lu->g->myrow;
    MPI_Comm c = lu->g->col;
    double *tmp = lu->swtmp, *bytes = &lu->st->bytes;
    int P2 = 1;
    while (2 * P2 <= P)
        P2 *= 2;
    const size_t all = (size_t)pl->nrec * nc;
    if (me >= P2) {
        /* Fold in, then receive the complete result from the partner. */
        MPI_Send(G + (size_t)pl->off[me] * nc, pl->cnt[me] * nc, MPI_DOUBLE, me - P2, SWAP_TAG, c);
        *bytes += 8.0 * pl->cnt[me] * nc;
        MPI_Recv(G, (int)all, MPI_DOUBLE, me - P2, SWAP_TAG, c, MPI_STATUS_IGNORE);
        return;
    }
    if (me + P2 < P)
        MPI_Recv(G + (size_t)pl->off[me + P2] * nc, pl->cnt[me + P2] * nc, MPI_DOUBLE, me + P2, SWAP_TAG, c,
                 MPI_STATUS_IGNORE);
    for (int bit = 1; bit < P2; bit <<= 1) {
        const int partner = me ^ bit, mask = ~(bit - 1);
        const size_t ns = pack_set(tmp, G, pl, P, P2, me, mask, nc);
        const size_t nr = pack_set(NULL, G, pl, P, P2, partner, mask, nc);
        double *rb = tmp + ns;
        xchg(tmp, ns, partner, rb, nr, partner, c, bytes);
        unpack_set(G, rb, pl, P, P2, partner, mask, nc);
    }
    if (me + P2 < P) {
        MPI_Send(G, (int)all, MPI_DOUBLE, me + P2, SWAP_TAG, c);
        *bytes += 8.0 * (double)all;
    }
}

static void spread_roll(hpl_lu *lu, const hpl_panel *p, const hpl_swap_plan *pl, double *G, int nc)
{
    const int P = lu->g->P, me = lu->g->myrow, root = p->prow;
    MPI_Comm c = lu->g->col;
    double *bytes = &lu->st->bytes;
    const int next = (me + 1) % P, prev = (me + P - 1) % P;
    if (!lu->prm->equil) {
        /* Each process's own records go round the ring as they are. */
        for (int s = 1; s < P; s++) {
            const int sg = ((me - s + 1) % P + P) % P, rg = ((me - s) % P + P) % P;
            xchg(G + (size_t)pl->off[sg] * nc, (size_t)pl->cnt[sg] * nc, next, G + (size_t)pl->off[rg] * nc,
                 (size_t)pl->cnt[rg] * nc, prev, c, bytes);
        }
        return;
    }
    /* Collect on the root, deal out P equal pieces, then roll the pieces. */
    const size_t all = (size_t)pl->nrec * nc;
    if (me == root) {
        for (int r = 0; r < P; r++)
            if (r != root)
                MPI_Recv(G + (size_t)pl->off[r] * nc, pl->cnt[r] * nc, MPI_DOUBLE, r, SWAP_TAG, c,
                         MPI_STATUS_IGNORE);
    } else {
        MPI_Send(G + (size_t)pl->off[me] * nc, pl->cnt[me] * nc, MPI_DOUBLE, root, SWAP_TAG, c);
        *bytes += 8.0 * pl->cnt[me] * nc;
    }
#define POFF(k) ((size_t)(k) * all / (size_t)P)
#define PCNT(k) (POFF((k) + 1) - POFF(k))
    const int rel = (me - root + P) % P;
    if (rel == 0) {
        for (int k = 1; k < P; k++) {
            MPI_Send(G + POFF(k), (int)PCNT(k), MPI_DOUBLE, (k + root) % P, SWAP_TAG, c);
            *bytes += 8.0 * (double)PCNT(k);
        }
    } else {
        MPI_Recv(G + POFF(rel), (int)PCNT(rel), MPI_DOUBLE, root, SWAP_TAG, c, MPI_STATUS_IGNORE);
    }
    for (int s = 1; s < P; s++) {
        const int sp = ((rel - s + 1) % P + P) % P, rp = ((rel - s) % P + P) % P;
        xchg(G + POFF(sp), PCNT(sp), next, G + POFF(rp), PCNT(rp), prev, c, bytes);
    }
#undef POFF
#undef PCNT
}

void hpl_swap(hpl_lu *lu, const hpl_panel *p, int lc0, int lc1, double *u, int ldu)
{
    const int nc = lc1 - lc0, jb = p->jb, nb = lu->prm->nb, P = lu->g->P, me = lu->g->myrow;
    const int lda = lu->lda, unotran = lu->prm->unotran;
    if (nc <= 0)
        return;
    int *mem = hpl_malloc(HPL_SWAP_PLAN_INTS(jb, P) * sizeof *mem, "the swap plan");
    hpl_swap_plan pl;
    hpl_swap_plan_make(&pl, mem, hpl_panel_ipiv(p), jb, p->jj, nb, P);
    const double *a = lu->a + (size_t)lc0 * lda;
    double *aw = lu->a + (size_t)lc0 * lda;

    /* Records grouped by owner; group r is cnt[r] x nc, column-major. Both
     * copies below go in tiles of TILE columns: a record is a matrix row (one
     * element per column, each in its own cache line), and walking one record
     * across all nc columns before the next would fetch every line of the
     * record buffer once per record. */
    enum { TILE = 16 };
    double *G = lu->swbuf;
    {
        const int cm = pl.cnt[me];
        double *mine = G + (size_t)pl.off[me] * nc;
        for (int j0 = 0; j0 < nc; j0 += TILE) {
            const int j1 = j0 + TILE < nc ? j0 + TILE : nc;
            for (int e = 0; e < pl.nrec; e++)
                if (pl.grp[e] == me) {
                    const int lr = hpl_g2l(pl.src[e], nb, P), k = pl.idx[e];
                    for (int j = j0; j < j1; j++)
                        mine[k + (size_t)j * cm] = a[lr + (size_t)j * lda];
                }
        }
    }
    const int sw = lu->prm->swap;
    const double tw = rmx_now();
    if (sw == HPL_SWAP_BINEXCH || (sw == HPL_SWAP_MIX && nc <= lu->prm->swapthr))
        binary_exchange(lu, &pl, G, nc);
    else
        spread_roll(lu, p, &pl, G, nc);
    lu->st->wait[HPL_PH_SWAP] += rmx_now() - tw;

    for (int j0 = 0; j0 < nc; j0 += TILE) {
        const int j1 = j0 + TILE < nc ? j0 + TILE : nc;
        for (int e = 0; e < pl.nrec; e++) {
            const int g = pl.grp[e], cm = pl.cnt[g], k = pl.idx[e];
            const double *rec = G + (size_t)pl.off[g] * nc + k;
            if (e < jb) {
                if (unotran)
                    for (int j = j0; j < j1; j++)
                        u[e + (size_t)j * ldu] = rec[(size_t)j * cm];
                else
                    for (int j = j0; j < j1; j++)
                        u[j + (size_t)e * ldu] = rec[(size_t)j * cm];
            } else if (hpl_owner(pl.dst[e], nb, P) == me) {
                const int lr = hpl_g2l(pl.dst[e], nb, P);
                for (int j = j0; j < j1; j++)
                    aw[lr + (size_t)j * lda] = rec[(size_t)j * cm];
            }
        }
    }
    free(mem);
}

void hpl_swap_inplace(hpl_lu *lu, const hpl_panel *p, int lc0, int lc1)
{
    const int nc = lc1 - lc0, jb = p->jb, jj = p->jj, lda = lu->lda;
    const double *ipiv = hpl_panel_ipiv(p);
    double *a = lu->a + (size_t)lc0 * lda;
    enum { TILE = 16 };
    for (int j0 = 0; j0 < nc; j0 += TILE) {
        const int j1 = j0 + TILE < nc ? j0 + TILE : nc;
        for (int k = 0; k < jb; k++) {
            const int r = jj + k, q = (int)ipiv[k];
            if (q == r)
                continue;
            for (int j = j0; j < j1; j++) {
                double *col = a + (size_t)j * lda;
                const double t = col[r];
                col[r] = col[q];
                col[q] = t;
            }
        }
    }
}

/* ---- two process rows: a direct exchange, U in place on the diagonal row ----
 *
 * With P = 2 the all-gather above makes both processes pack their records,
 * exchange them, unpack all of them into U (a work array) and, on the
 * diagonal process row, copy U back into the matrix: five passes over the
 * records, and the U solve done twice. Here (see hpl_pair_start) the
 * diagonal row D permutes its rows in place, as with P = 1, with the U rows
 * the other row O sent it, solves U where it lies and sends it to O, piece
 * by piece of columns: O starts its DGEMM on the first piece while D
 * permutes and solves the next. Only U rows travel to D (the rows displaced
 * below the diagonal block all come from it: a pivot row, once in the block,
 * never leaves it), and only U and the displaced rows O holds travel back. */
enum { PAIR_TAG_U_IN = 8, PAIR_TAG_U_OUT = 9, PAIR_TAG_DISP = 10 };
#define PAIR_PIECE0 256 /* the first piece's columns: O waits for it idle */
#define PAIR_GROWTH 4   /* each later piece this many times the one before */

int hpl_pair_active(const hpl_lu *lu) { return lu->g->P == 2 && lu->team <= 1; }

int hpl_pair_cuts(int nc, int *cut)
{
    int np = 0, w = PAIR_PIECE0;
    cut[0] = 0;
    while (cut[np] < nc) {
        /* A remainder under PAIR_PIECE0 joins the last piece; at most HPL_PAIR_PIECES. */
        int e = nc - cut[np] - w < PAIR_PIECE0 || np == HPL_PAIR_PIECES - 1 ? nc : cut[np] + w;
        cut[++np] = e;
        w = w > INT_MAX / PAIR_GROWTH ? INT_MAX : w * PAIR_GROWTH;
    }
    return np;
}

static double blocked(hpl_lu *lu, double t0)
{
    const double s = rmx_now() - t0;
    lu->st->wait[HPL_PH_SWAP] += s;
    return s;
}

void hpl_pair_start(hpl_lu *lu, const hpl_panel *p, int lc0, int lc1, hpl_pair *x)
{
    const int jb = p->jb, nb = lu->prm->nb, me = lu->g->myrow, lda = lu->lda;
    x->mem = hpl_malloc((HPL_SWAP_PLAN_INTS(jb, 2) + 2 * (size_t)jb) * sizeof *x->mem, "the swap plan");
    hpl_swap_plan_make(&x->pl, x->mem, hpl_panel_ipiv(p), jb, p->jj, nb, 2);
    const hpl_swap_plan *pl = &x->pl;
    x->lc0 = lc0;
    x->nc = lc1 - lc0;
    x->diag = me == p->prow;
    x->peer = 1 - me;
    x->lrd = hpl_g2l(p->jj, nb, 2);
    x->nu = pl->cnt[1 - p->prow];
    /* Displaced rows whose place is on O, numbered in record order. */
    x->dix = x->mem + HPL_SWAP_PLAN_INTS(jb, 2);
    x->nd = 0;
    for (int e = jb; e < pl->nrec; e++)
        x->dix[e - jb] = hpl_owner(pl->dst[e], nb, 2) == p->prow ? -1 : x->nd++;
    x->np = hpl_pair_cuts(x->nc, x->cut);
    x->rows = lu->swtmp;
    x->disp = lu->swbuf;
    x->nreq = 0;
    x->tmp = NULL;
    const double t = rmx_now();
    if (x->diag) {
        /* O's U rows: received into their pieces as soon as they are sent. */
        for (int i = 0; i < x->np && x->nu > 0; i++)
            MPI_Irecv(x->rows + (size_t)x->nu * x->cut[i], x->nu * (x->cut[i + 1] - x->cut[i]), MPI_DOUBLE, x->peer,
                      PAIR_TAG_U_IN, lu->g->col, &x->rreq[i]);
        x->tmp = hpl_malloc((size_t)pl->nrec * HPL_PAIR_TILE * sizeof *x->tmp, "the row permutation's tile");
        lu->st->t[HPL_PH_SWAP] += rmx_now() - t;
        return;
    }
    /* O: its U rows, piece by piece, each sent once packed (in 16-column
     * tiles: a record is one element per column, each in its own cache line). */
    const double *a = lu->a + (size_t)lc0 * lda;
    for (int i = 0; i < x->np && x->nu > 0; i++) {
        const int c0 = x->cut[i], c1 = x->cut[i + 1];
        double *out = x->rows + (size_t)x->nu * c0;
        for (int j0 = c0; j0 < c1; j0 += HPL_PAIR_TILE) {
            const int j1 = j0 + HPL_PAIR_TILE < c1 ? j0 + HPL_PAIR_TILE : c1;
            for (int e = 0; e < jb; e++)
                if (pl->grp[e] == me) {
                    const int lr = hpl_g2l(pl->src[e], nb, 2), k = pl->idx[e];
                    for (int j = j0; j < j1; j++)
                        out[k + (size_t)(j - c0) * x->nu] = a[lr + (size_t)j * lda];
                }
        }
        MPI_Isend(out, x->nu * (c1 - c0), MPI_DOUBLE, x->peer, PAIR_TAG_U_IN, lu->g->col, &x->sreq[x->nreq++]);
        lu->st->bytes += 8.0 * x->nu * (c1 - c0);
    }
    lu->st->t[HPL_PH_SWAP] += rmx_now() - t;
}

void hpl_pair_permute(hpl_lu *lu, const hpl_panel *p, hpl_pair *x, int i)
{
    const hpl_swap_plan *pl = &x->pl;
    const int jb = p->jb, nb = lu->prm->nb, lda = lu->lda, me = lu->g->myrow, nrec = pl->nrec;
    const int c0 = x->cut[i], c1 = x->cut[i + 1];
    const double t = rmx_now();
    if (x->nu > 0) {
        MPI_Wait(&x->rreq[i], MPI_STATUS_IGNORE);
        blocked(lu, t);
    }
    const double *in = x->rows + (size_t)x->nu * c0;
    double *a = lu->a + (size_t)x->lc0 * lda, *out = x->disp + (size_t)x->nd * c0, *tmp = x->tmp;
    for (int j0 = c0; j0 < c1; j0 += HPL_PAIR_TILE) {
        const int j1 = j0 + HPL_PAIR_TILE < c1 ? j0 + HPL_PAIR_TILE : c1, w = j1 - j0;
        /* Every record of the tile first (a row may be both read and written), then into place. */
        for (int e = 0; e < nrec; e++) {
            double *te = tmp + (size_t)e * HPL_PAIR_TILE;
            if (pl->grp[e] == me) {
                const double *s = a + hpl_g2l(pl->src[e], nb, 2) + (size_t)j0 * lda;
                for (int j = 0; j < w; j++)
                    te[j] = s[(size_t)j * lda];
            } else {
                const double *s = in + pl->idx[e] + (size_t)(j0 - c0) * x->nu;
                for (int j = 0; j < w; j++)
                    te[j] = s[(size_t)j * x->nu];
            }
        }
        for (int e = 0; e < nrec; e++) {
            const double *te = tmp + (size_t)e * HPL_PAIR_TILE;
            if (e < jb || x->dix[e - jb] < 0) {
                double *d = a + (e < jb ? x->lrd + e : hpl_g2l(pl->dst[e], nb, 2)) + (size_t)j0 * lda;
                for (int j = 0; j < w; j++)
                    d[(size_t)j * lda] = te[j];
            } else {
                double *d = out + x->dix[e - jb] + (size_t)(j0 - c0) * x->nd;
                for (int j = 0; j < w; j++)
                    d[(size_t)j * x->nd] = te[j];
            }
        }
    }
    if (x->nd > 0) {
        MPI_Isend(out, x->nd * (c1 - c0), MPI_DOUBLE, x->peer, PAIR_TAG_DISP, lu->g->col, &x->sreq[x->nreq++]);
        lu->st->bytes += 8.0 * x->nd * (c1 - c0);
    }
    lu->st->t[HPL_PH_SWAP] += rmx_now() - t;
}

void hpl_pair_send_u(hpl_lu *lu, const hpl_panel *p, hpl_pair *x, int i, double *work)
{
    /* U's columns are jb contiguous doubles in the matrix: one copy each into
     * a contiguous piece, which the shared-memory transport's single copy
     * (CMA) lets O read without D's help while D goes on computing. */
    const int jb = p->jb, lda = lu->lda, c0 = x->cut[i], c1 = x->cut[i + 1];
    const double t = rmx_now();
    const double *u = lu->a + x->lrd + (size_t)x->lc0 * lda;
    for (int j = c0; j < c1; j++)
        memcpy(work + (size_t)j * jb, u + (size_t)j * lda, (size_t)jb * sizeof *work);
    MPI_Isend(work + (size_t)jb * c0, jb * (c1 - c0), MPI_DOUBLE, x->peer, PAIR_TAG_U_OUT, lu->g->col,
              &x->sreq[x->nreq++]);
    lu->st->bytes += 8.0 * jb * (c1 - c0);
    lu->st->t[HPL_PH_SWAP] += rmx_now() - t;
}

void hpl_pair_receive(hpl_lu *lu, const hpl_panel *p, hpl_pair *x, int i, double *work)
{
    const hpl_swap_plan *pl = &x->pl;
    const int jb = p->jb, nb = lu->prm->nb, lda = lu->lda, c0 = x->cut[i], c1 = x->cut[i + 1];
    const double t = rmx_now();
    MPI_Request r[2];
    int n = 0;
    MPI_Irecv(work + (size_t)jb * c0, jb * (c1 - c0), MPI_DOUBLE, x->peer, PAIR_TAG_U_OUT, lu->g->col, &r[n++]);
    double *in = x->disp + (size_t)x->nd * c0;
    if (x->nd > 0)
        MPI_Irecv(in, x->nd * (c1 - c0), MPI_DOUBLE, x->peer, PAIR_TAG_DISP, lu->g->col, &r[n++]);
    MPI_Waitall(n, r, MPI_STATUSES_IGNORE);
    blocked(lu, t);
    double *a = lu->a + (size_t)x->lc0 * lda;
    for (int j0 = c0; j0 < c1; j0 += HPL_PAIR_TILE) {
        const int j1 = j0 + HPL_PAIR_TILE < c1 ? j0 + HPL_PAIR_TILE : c1;
        for (int e = jb; e < pl->nrec; e++)
            if (x->dix[e - jb] >= 0) {
                double *d = a + hpl_g2l(pl->dst[e], nb, 2);
                const double *s = in + x->dix[e - jb];
                for (int j = j0; j < j1; j++)
                    d[(size_t)j * lda] = s[(size_t)(j - c0) * x->nd];
            }
    }
    lu->st->t[HPL_PH_SWAP] += rmx_now() - t;
}

void hpl_pair_finish(hpl_lu *lu, hpl_pair *x)
{
    const double t = rmx_now();
    MPI_Waitall(x->nreq, x->sreq, MPI_STATUSES_IGNORE);
    lu->st->t[HPL_PH_SWAP] += blocked(lu, t);
    free(x->tmp);
    free(x->mem);
}
