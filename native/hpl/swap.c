/* Row interchanges of a factored panel applied to the columns to its right.
 *
 * The panel's pivots, applied in order, permute a few rows: the jb rows of
 * the diagonal block receive the pivot rows (they become U, which every
 * process of the column needs for its DGEMM), and the pivot rows' old places
 * receive rows displaced from the diagonal block. Every process works out
 * this permutation from ipiv and contributes the rows it holds as "records",
 * grouped in pieces by (source process row, destination): a U piece goes to
 * every process of the column, a displaced piece only to the owner of the
 * rows it lands in. The SWAP variants differ in how the pieces travel:
 *   binary exchange  recursive doubling over whole groups of records, log2(P)
 *                    steps: few messages for the latency-bound narrow widths;
 *   long             every piece goes straight to the processes that need it
 *                    (one step, each process receives U once and only its own
 *                    displaced rows: about half the bytes of an all-gather of
 *                    every record), posted block by block so that the update
 *                    of column block b runs while block b+1 is in flight;
 *   mix              binary exchange up to the threshold number of columns.
 * Equilibration (HPL's balancing of the long variant's roll pieces) has
 * nothing to balance here: no process forwards another's records.
 * With one process row there is nothing to exchange: the interchanges are
 * applied in the matrix (in pivot order, 16-column tiles). */
#include "hpl.h"
#include "rmx_timer.h"

#include <stdlib.h>
#include <string.h>

#define SWAP_TAG_U 7
#define SWAP_TAG_D 8
#define SWAP_TAG_X 9
/* Column blocks of the direct exchange: at least BLOCK_MIN columns (each block
 * is one more DGEMM call, which packs L2 again), at most BLOCKS_MAX blocks. */
#define BLOCK_MIN 512
#define BLOCKS_MAX 8
/* A record is a matrix row, one element per column in its own cache line:
 * copies walk TILE columns of all records before the next TILE. */
#define TILE 16

/* The permutation as the records, in HPL's order: jb U rows, then displaced rows. */
static void make_records(hpl_swp *s, int *pos, int *cont)
{
    const hpl_panel *p = s->p;
    const int jb = p->jb, jj = p->jj;
    const double *ipiv = hpl_panel_ipiv(p);
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
    s->nrec = 0;
    for (int i = 0; i < jb; i++) {
        s->src[s->nrec] = cont[i];
        s->dst[s->nrec++] = -1;
    }
    for (int i = jb; i < npos; i++)
        if (cont[i] != pos[i]) {
            s->src[s->nrec] = cont[i];
            s->dst[s->nrec++] = pos[i];
        }
}

void hpl_swp_init(hpl_swp *s, hpl_lu *lu, const hpl_panel *p, int lc0, int lc1, double *u)
{
    memset(s, 0, sizeof *s);
    s->lu = lu;
    s->p = p;
    s->lc0 = lc0;
    s->nc = lc1 - lc0;
    s->u = u;
    s->posted = -1;
    s->nblk = 1;
    const int P = lu->g->P, nb = lu->prm->nb, jb = p->jb, sw = lu->prm->swap;
    if (P == 1) {
        s->mode = HPL_SWP_INPLACE;
        return;
    }
    s->mode = sw == HPL_SWAP_BINEXCH || (sw == HPL_SWAP_MIX && s->nc <= lu->prm->swapthr) ? HPL_SWP_BINEXCH
                                                                                          : HPL_SWP_DIRECT;
    if (s->mode == HPL_SWP_DIRECT) {
        s->nblk = s->nc / BLOCK_MIN;
        s->nblk = s->nblk < 1 ? 1 : s->nblk > BLOCKS_MAX ? BLOCKS_MAX : s->nblk;
    }
    s->npc = P * (P + 1);
    const size_t ni = (size_t)4 * jb + 5 * (size_t)2 * jb + 4 * (size_t)s->npc + 2 * (size_t)P;
    s->mem = malloc(ni * sizeof *s->mem);
    s->req = malloc((size_t)4 * P * sizeof *s->req);
    if (!s->mem || !s->req)
        MPI_Abort(MPI_COMM_WORLD, 1);
    int *w = s->mem + 4 * jb;
    s->src = w;
    s->dst = w + 2 * jb;
    s->grp = w + 4 * jb;
    s->pc = w + 6 * jb;
    s->k = w + 8 * jb;
    w += 10 * jb;
    s->pfrom = w;
    s->pto = w + s->npc;
    s->poff = w + 2 * s->npc;
    s->pcnt = w + 3 * s->npc;
    s->goff = w + 4 * s->npc;
    s->gcnt = w + 4 * s->npc + P;
    make_records(s, s->mem, s->mem + 2 * jb);

    /* Piece (r, d): records held by process row r for destination d; d = P stands
     * for "everybody" (U rows). Pieces of one source are consecutive. */
    for (int i = 0; i < s->npc; i++) {
        s->pfrom[i] = i / (P + 1);
        s->pto[i] = i % (P + 1) == 0 ? -1 : i % (P + 1) - 1;
        s->pcnt[i] = 0;
    }
    for (int e = 0; e < s->nrec; e++) {
        s->grp[e] = hpl_owner(s->src[e], nb, P);
        s->pc[e] = s->grp[e] * (P + 1) + (e < jb ? 0 : 1 + hpl_owner(s->dst[e], nb, P));
        s->k[e] = s->pcnt[s->pc[e]]++;
    }
    for (int i = 0, off = 0; i < s->npc; i++) {
        s->poff[i] = off;
        off += s->pcnt[i];
    }
    for (int r = 0; r < P; r++) {
        s->goff[r] = s->poff[r * (P + 1)];
        s->gcnt[r] = 0;
        for (int i = 0; i <= P; i++)
            s->gcnt[r] += s->pcnt[r * (P + 1) + i];
    }
}

void hpl_swp_cols(const hpl_swp *s, int b, int *c, int *w)
{
    *c = (int)((long long)b * s->nc / s->nblk);
    *w = (int)((long long)(b + 1) * s->nc / s->nblk) - *c;
}

/* Block b's records live at swbuf + nrec * c: every block has its own region,
 * so a block's messages never touch another's. */
static double *region(const hpl_swp *s, int c) { return s->lu->swbuf + (size_t)s->nrec * c; }
static double *piece(const hpl_swp *s, double *R, int i, int w) { return R + (size_t)s->poff[i] * w; }

static void pack(hpl_swp *s, int c, int w)
{
    hpl_lu *lu = s->lu;
    const int nb = lu->prm->nb, P = lu->g->P, me = lu->g->myrow, lda = lu->lda;
    const double *a = lu->a + (size_t)(s->lc0 + c) * lda;
    double *R = region(s, c);
    for (int j0 = 0; j0 < w; j0 += TILE) {
        const int j1 = j0 + TILE < w ? j0 + TILE : w;
        for (int e = 0; e < s->nrec; e++)
            if (s->grp[e] == me) {
                const int lr = hpl_g2l(s->src[e], nb, P), pc = s->pc[e], cnt = s->pcnt[pc];
                double *d = piece(s, R, pc, w) + s->k[e];
                for (int j = j0; j < j1; j++)
                    d[(size_t)j * cnt] = a[lr + (size_t)j * lda];
            }
    }
}

static void unpack(hpl_swp *s, int c, int w)
{
    hpl_lu *lu = s->lu;
    const int nb = lu->prm->nb, P = lu->g->P, me = lu->g->myrow, lda = lu->lda, jb = s->p->jb, nc = s->nc;
    const int unotran = lu->prm->unotran;
    double *a = lu->a + (size_t)(s->lc0 + c) * lda, *R = region(s, c);
    for (int j0 = 0; j0 < w; j0 += TILE) {
        const int j1 = j0 + TILE < w ? j0 + TILE : w;
        for (int e = 0; e < s->nrec; e++) {
            const int pc = s->pc[e], cnt = s->pcnt[pc];
            const double *rec = piece(s, R, pc, w) + s->k[e];
            if (e < jb) {
                if (unotran)
                    for (int j = j0; j < j1; j++)
                        s->u[e + (size_t)(c + j) * jb] = rec[(size_t)j * cnt];
                else
                    for (int j = j0; j < j1; j++)
                        s->u[c + j + (size_t)e * nc] = rec[(size_t)j * cnt];
            } else if (hpl_owner(s->dst[e], nb, P) == me) {
                const int lr = hpl_g2l(s->dst[e], nb, P);
                for (int j = j0; j < j1; j++)
                    a[lr + (size_t)j * lda] = rec[(size_t)j * cnt];
            }
        }
    }
}

/* Virtual rank in the power-of-two core of the binary exchange. */
static int vrank(int r, int P2) { return r < P2 ? r : r - P2; }

/* Copies (out != NULL) or counts the groups of the processes whose virtual rank
 * matches `who` on the bits of `mask`. */
static size_t pack_set(double *out, const double *G, const hpl_swp *s, int P2, int who, int mask, int nc)
{
    size_t n = 0;
    for (int r = 0; r < s->lu->g->P; r++)
        if ((vrank(r, P2) & mask) == (who & mask)) {
            const size_t len = (size_t)s->gcnt[r] * nc;
            if (out)
                memcpy(out + n, G + (size_t)s->goff[r] * nc, len * sizeof *out);
            n += len;
        }
    return n;
}

static void unpack_set(double *G, const double *in, const hpl_swp *s, int P2, int who, int mask, int nc)
{
    size_t n = 0;
    for (int r = 0; r < s->lu->g->P; r++)
        if ((vrank(r, P2) & mask) == (who & mask)) {
            const size_t len = (size_t)s->gcnt[r] * nc;
            memcpy(G + (size_t)s->goff[r] * nc, in + n, len * sizeof *G);
            n += len;
        }
}

/* Everybody gets every group (the whole range is one block). */
static void binary_exchange(hpl_swp *s)
{
    hpl_lu *lu = s->lu;
    const int P = lu->g->P, me = lu->g->myrow, nc = s->nc;
    MPI_Comm c = lu->g->col;
    double *G = region(s, 0), *tmp = lu->swtmp, *bytes = &lu->st->bytes;
    int P2 = 1;
    while (2 * P2 <= P)
        P2 *= 2;
    const size_t all = (size_t)s->nrec * nc;
    if (me >= P2) {
        /* Fold in, then receive the complete result from the partner. */
        MPI_Send(G + (size_t)s->goff[me] * nc, s->gcnt[me] * nc, MPI_DOUBLE, me - P2, SWAP_TAG_X, c);
        *bytes += 8.0 * s->gcnt[me] * nc;
        MPI_Recv(G, (int)all, MPI_DOUBLE, me - P2, SWAP_TAG_X, c, MPI_STATUS_IGNORE);
        return;
    }
    if (me + P2 < P)
        MPI_Recv(G + (size_t)s->goff[me + P2] * nc, s->gcnt[me + P2] * nc, MPI_DOUBLE, me + P2, SWAP_TAG_X, c,
                 MPI_STATUS_IGNORE);
    for (int bit = 1; bit < P2; bit <<= 1) {
        const int partner = me ^ bit, mask = ~(bit - 1);
        const size_t ns = pack_set(tmp, G, s, P2, me, mask, nc);
        const size_t nr = pack_set(NULL, G, s, P2, partner, mask, nc);
        double *rb = tmp + ns;
        MPI_Sendrecv(tmp, (int)ns, MPI_DOUBLE, partner, SWAP_TAG_X, rb, (int)nr, MPI_DOUBLE, partner, SWAP_TAG_X, c,
                     MPI_STATUS_IGNORE);
        *bytes += 8.0 * (double)ns;
        unpack_set(G, rb, s, P2, partner, mask, nc);
    }
    if (me + P2 < P) {
        MPI_Send(G, (int)all, MPI_DOUBLE, me + P2, SWAP_TAG_X, c);
        *bytes += 8.0 * (double)all;
    }
}

/* Starts block b's messages: my U piece to everybody, my displaced pieces to
 * their destinations; the matching receives. */
static void post_direct(hpl_swp *s, int c, int w)
{
    hpl_lu *lu = s->lu;
    const int P = lu->g->P, me = lu->g->myrow;
    MPI_Comm col = lu->g->col;
    double *R = region(s, c);
    s->nreq = 0;
    for (int r = 0; r < P; r++) {
        if (r == me)
            continue;
        const int iu_me = me * (P + 1), iu_r = r * (P + 1);
        const int id_me = iu_me + 1 + r, id_r = iu_r + 1 + me;
        if (s->pcnt[iu_r])
            MPI_Irecv(piece(s, R, iu_r, w), s->pcnt[iu_r] * w, MPI_DOUBLE, r, SWAP_TAG_U, col, &s->req[s->nreq++]);
        if (s->pcnt[id_r])
            MPI_Irecv(piece(s, R, id_r, w), s->pcnt[id_r] * w, MPI_DOUBLE, r, SWAP_TAG_D, col, &s->req[s->nreq++]);
        if (s->pcnt[iu_me]) {
            MPI_Isend(piece(s, R, iu_me, w), s->pcnt[iu_me] * w, MPI_DOUBLE, r, SWAP_TAG_U, col,
                      &s->req[s->nreq++]);
            lu->st->bytes += 8.0 * s->pcnt[iu_me] * w;
        }
        if (s->pcnt[id_me]) {
            MPI_Isend(piece(s, R, id_me, w), s->pcnt[id_me] * w, MPI_DOUBLE, r, SWAP_TAG_D, col,
                      &s->req[s->nreq++]);
            lu->st->bytes += 8.0 * s->pcnt[id_me] * w;
        }
    }
}

void hpl_swp_post(hpl_swp *s, int b)
{
    if (s->mode == HPL_SWP_INPLACE || s->nc <= 0)
        return;
    int c, w;
    hpl_swp_cols(s, b, &c, &w);
    const double t = rmx_now();
    pack(s, c, w);
    if (s->mode == HPL_SWP_DIRECT) {
        post_direct(s, c, w);
        s->posted = b;
    }
    s->lu->st->t[HPL_PH_SWAP] += rmx_now() - t;
}

int hpl_swp_test(hpl_swp *s)
{
    if (s->posted < 0)
        return 1;
    int flag = 1;
    if (s->nreq)
        MPI_Testall(s->nreq, s->req, &flag, MPI_STATUSES_IGNORE);
    if (flag)
        s->nreq = 0;
    return flag;
}

void hpl_swp_finish(hpl_swp *s, int b)
{
    hpl_lu *lu = s->lu;
    if (s->nc <= 0)
        return;
    int c, w;
    hpl_swp_cols(s, b, &c, &w);
    const double t = rmx_now();
    if (s->mode == HPL_SWP_INPLACE) {
        hpl_swap_inplace(lu, s->p, s->lc0 + c, s->lc0 + c + w);
    } else {
        const double tw = rmx_now();
        if (s->mode == HPL_SWP_BINEXCH)
            binary_exchange(s);
        else if (s->nreq)
            MPI_Waitall(s->nreq, s->req, MPI_STATUSES_IGNORE);
        s->nreq = 0;
        s->posted = -1;
        lu->st->wait[HPL_PH_SWAP] += rmx_now() - tw;
        unpack(s, c, w);
    }
    lu->st->t[HPL_PH_SWAP] += rmx_now() - t;
}

void hpl_swp_free(hpl_swp *s)
{
    free(s->mem);
    free(s->req);
    s->mem = NULL;
    s->req = NULL;
}

void hpl_swap_inplace(hpl_lu *lu, const hpl_panel *p, int lc0, int lc1)
{
    const int nc = lc1 - lc0, jb = p->jb, jj = p->jj, lda = lu->lda;
    const double *ipiv = hpl_panel_ipiv(p);
    double *a = lu->a + (size_t)lc0 * lda;
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
