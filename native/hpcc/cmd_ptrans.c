/* rmax-hpcc ptrans: HPC Challenge's PTRANS, the parallel matrix transpose C = A^T + C.
 *
 * A and C are n x n, spread block-cyclically (blocks of nb x nb) over a P x Q grid of ranks,
 * as ScaLAPACK and HPL spread them. Block (I, J) of A is on grid position (I mod P, J mod Q);
 * its transpose is added to block (J, I) of C, on (J mod P, I mod Q). Every rank adds the blocks
 * that stay on it in place, packs the others by destination, exchanges them with every other
 * rank in turn, and adds the transposed blocks it receives to its part of C. GB/s = n^2 x 8 bytes / seconds / 1e9, the seconds the slowest
 * rank's. As HPCC does, the transpose is repeated on --repeats random placements of the ranks
 * on the grid, and HPCC's figure is the lowest of them.
 *
 * Check (HPCC's): C is compared with A^T + B computed again from their generators;
 * residual = max|C - (A^T + B)| / max|A^T + B| / (eps x n), and it passes at 16 or less. */
#include "hpcc.h"

#include "rmx_args.h"
#include "rmx_step.h"
#include "rmx_subcmd.h"
#include "rmx_timer.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SEED_A 100
#define SEED_B 200
#define MAX_REPEATS 100
#define TAG_BLOCKS 71

/* Rows (or columns) of an n-long dimension in blocks of nb that grid coordinate `me` of `np` holds. */
static long numroc(long n, long nb, int me, int np)
{
    long blocks = n / nb, mine = blocks / np * nb, extra = blocks % np;
    if (me < extra)
        mine += nb;
    else if (me == extra)
        mine += n % nb;
    return mine;
}

typedef struct {
    long n, nb, nblk;   /* order, block size, blocks per dimension */
    int p, q, row, col; /* grid and this rank's place on it */
    long mp, nq;        /* local rows and columns */
    int *rank_at;       /* world rank at grid position r * q + c */
} grid;

static long blk(const grid *g, long b) { return b == g->nblk - 1 && g->n % g->nb ? g->n % g->nb : g->nb; }

/* Local element (i, j) of global (gi, gj) (both on this rank), column-major with leading dimension mp. */
static size_t local_index(const grid *g, long gi, long gj)
{
    long li = (gi / g->nb / g->p) * g->nb + gi % g->nb, lj = (gj / g->nb / g->q) * g->nb + gj % g->nb;
    return (size_t)lj * (size_t)g->mp + (size_t)li;
}

static void generate(const grid *g, double *m, uint64_t seed)
{
    for (long bj = g->col; bj < g->nblk; bj += g->q)
        for (long bi = g->row; bi < g->nblk; bi += g->p)
            for (long j = bj * g->nb; j < bj * g->nb + blk(g, bj); j++)
                for (long i = bi * g->nb; i < bi * g->nb + blk(g, bi); i++)
                    m[local_index(g, i, j)] = hc_uniform(seed, (uint64_t)i * (uint64_t)g->n + (uint64_t)j);
}

/* Doubles this rank sends to each other world rank (counts[d]): its blocks of A whose transposes
 * land there (those that stay here are added in place, not sent). */
static void send_counts(const grid *g, int me, int nranks, int *counts)
{
    memset(counts, 0, (size_t)nranks * sizeof *counts);
    for (long bj = g->col; bj < g->nblk; bj += g->q)
        for (long bi = g->row; bi < g->nblk; bi += g->p) {
            int dest = g->rank_at[(bj % g->p) * g->q + bi % g->q];
            long c = (long)counts[dest] + blk(g, bi) * blk(g, bj);
            if (c > INT_MAX)
                hc_fail(2, "the transpose sends more than %d doubles to one rank: use more ranks or a smaller n", INT_MAX);
            counts[dest] = dest == me ? 0 : (int)c;
        }
}

/* Doubles this rank receives from each other world rank: blocks (J, I) of C whose A blocks (I, J) it owns. */
static void recv_counts(const grid *g, int me, int nranks, int *counts)
{
    memset(counts, 0, (size_t)nranks * sizeof *counts);
    for (long bi = g->col; bi < g->nblk; bi += g->q)       /* C's block column I: A's block row */
        for (long bj = g->row; bj < g->nblk; bj += g->p) { /* C's block row J: A's block column */
            int src = g->rank_at[(bi % g->p) * g->q + bj % g->q];
            counts[src] += src == me ? 0 : (int)(blk(g, bi) * blk(g, bj));
        }
}

/* C += A^T for a rows x cols block of A (column-major, leading dimension lda) into C (ldc), in
 * tiles that fit the L1 cache on both sides. */
static void add_transposed(double *c, long ldc, const double *a, long lda, long rows, long cols)
{
    enum { TILE = 32 };
    for (long i0 = 0; i0 < rows; i0 += TILE)
        for (long j0 = 0; j0 < cols; j0 += TILE) {
            long i1 = i0 + TILE < rows ? i0 + TILE : rows, j1 = j0 + TILE < cols ? j0 + TILE : cols;
            for (long i = i0; i < i1; i++)   /* C's column i: A's row i */
                for (long j = j0; j < j1; j++)
                    c[i * ldc + j] += a[j * lda + i];
        }
}

/* Adds the blocks received from world rank `src` (read in its packing order) into C. */
static void unpack(const grid *g, int src, const double *in, double *c)
{
    int sr = -1, scol = -1;
    for (int x = 0; x < g->p * g->q; x++)
        if (g->rank_at[x] == src) {
            sr = x / g->q;
            scol = x % g->q;
        }
    for (long bj = scol; bj < g->nblk; bj += g->q) {   /* A's block column J: C's block row */
        if (bj % g->p != g->row)
            continue;
        for (long bi = sr; bi < g->nblk; bi += g->p) {
            if (bi % g->q != g->col)
                continue;
            long rows = blk(g, bi), cols = blk(g, bj);   /* A's block: rows x cols, column-major */
            add_transposed(c + local_index(g, bj * g->nb, bi * g->nb), g->mp, in, rows, rows, cols);
            in += rows * cols;
        }
    }
}

/* The transpose: each rank packs its blocks of A by destination (in its order: block columns,
 * then rows) and adds the blocks that stay here in place; then, in n - 1 steps, it sends its
 * part to the rank k after it while receiving from the rank k before it (both ranks of a
 * transfer inside MPI at once: a shared-memory transport without a progress thread moves a
 * large message only then) and adds what it received. */
static void transpose(const grid *g, int me, int nranks, const double *a, double *c, double *sbuf, double *rbuf,
                      const int *sc, const int *sd, const int *rc, const int *rd, int *pos)
{
    memcpy(pos, sd, (size_t)nranks * sizeof *pos);
    for (long bj = g->col; bj < g->nblk; bj += g->q)
        for (long bi = g->row; bi < g->nblk; bi += g->p) {
            int dest = g->rank_at[(bj % g->p) * g->q + bi % g->q];
            if (dest == me) {
                add_transposed(c + local_index(g, bj * g->nb, bi * g->nb), g->mp,
                               a + local_index(g, bi * g->nb, bj * g->nb), g->mp, blk(g, bi), blk(g, bj));
                continue;
            }
            double *o = sbuf + pos[dest];
            for (long j = bj * g->nb; j < bj * g->nb + blk(g, bj); j++) {
                memcpy(o, a + local_index(g, bi * g->nb, j), (size_t)blk(g, bi) * sizeof *o);
                o += blk(g, bi);
            }
            pos[dest] = (int)(o - sbuf);
        }
    for (int k = 1; k < nranks; k++) {
        int to = (me + k) % nranks, from = (me - k + nranks) % nranks;
        MPI_Sendrecv(sbuf + sd[to], sc[to], MPI_DOUBLE, to, TAG_BLOCKS, rbuf + rd[from], rc[from], MPI_DOUBLE, from,
                     TAG_BLOCKS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rc[from])
            unpack(g, from, rbuf + rd[from], c);
    }
}

/* HPCC's residual of C against A^T + B, over all ranks. */
static double residual(const grid *g, const double *c)
{
    double err = 0, big = 0;
    for (long bj = g->col; bj < g->nblk; bj += g->q)
        for (long bi = g->row; bi < g->nblk; bi += g->p)
            for (long j = bj * g->nb; j < bj * g->nb + blk(g, bj); j++)
                for (long i = bi * g->nb; i < bi * g->nb + blk(g, bi); i++) {
                    double want = hc_uniform(SEED_A, (uint64_t)j * (uint64_t)g->n + (uint64_t)i) +
                                  hc_uniform(SEED_B, (uint64_t)i * (uint64_t)g->n + (uint64_t)j);
                    double d = fabs(c[local_index(g, i, j)] - want);
                    err = d > err || d != d ? d : err;
                    big = fabs(want) > big ? fabs(want) : big;
                }
    double v[2] = {err, big}, all[2];
    MPI_Allreduce(v, all, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return all[0] / (all[1] > 0 ? all[1] : 1.0) / (DBL_EPSILON / 2 * (double)g->n);
}

int cmd_ptrans(int argc, char **argv)
{
    const char *json = NULL;
    long long n = 4000, nb = 64, p = 0, q = 0, repeats = 5;
    int corrupt = 0;
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
        {"n", RMX_ARG_INT, &n, "order of the matrices (HPCC: half of HPL's N)", 1, 1e7, NULL},
        {"nb", RMX_ARG_INT, &nb, "block size (HPCC: HPL's NB)", 1, 4096, NULL},
        {"p", RMX_ARG_INT, &p, "grid rows (0: with --q 0, the squarest grid P <= Q of every rank)", 0, 1 << 20, NULL},
        {"q", RMX_ARG_INT, &q, "grid columns (P x Q must be the rank count)", 0, 1 << 20, NULL},
        {"repeats", RMX_ARG_INT, &repeats, "transposes, each on a random placement of the ranks (HPCC: 5)", 1,
         MAX_REPEATS, NULL},
        {"self-test-corrupt", RMX_ARG_FLAG, &corrupt, "damage one element of C before the check: it must fail", 0, 0,
         NULL},
    };
    rmx_args_parse(PROG " ptrans", "HPC Challenge PTRANS: parallel transpose C = A^T + C, GB/s.", argc, argv, 2, spec,
                   sizeof spec / sizeof spec[0]);
    if ((p == 0) != (q == 0))
        rmx_die(2, PROG, "--p and --q: give both or neither");
    if (nb > n)
        rmx_die(2, PROG, "--nb %lld is larger than --n %lld", nb, n);

    hc_run run;
    hc_start(&argc, &argv, &run, "rmax.ptrans/1", json);
    if (!p) {
        for (p = 1; (p + 1) * (p + 1) <= run.n; p++)
            ;
        while (run.n % p)
            p--;
        q = run.n / p;
    }
    if (p * q != run.n)
        return hc_refuse(&run, "a %lld x %lld grid needs %lld ranks, not %d", p, q, p * q, run.n);
    grid g = {n, nb, (n + nb - 1) / nb, (int)p, (int)q, 0, 0, 0, 0, NULL};
    g.rank_at = hc_alloc((size_t)run.n * sizeof *g.rank_at, "the grid map");
    rmx_json *j = hc_header(&run, "ptrans");
    if (j) {
        rmx_json_int(j, "n", n);
        rmx_json_int(j, "nb", nb);
        rmx_json_int(j, "p", p);
        rmx_json_int(j, "q", q);
        rmx_json_int(j, "repeats", repeats);
        rmx_json_bool(j, "self_test_corrupt", corrupt);
        rmx_json_obj_end(j);
    }
    if (run.table)
        printf("# PTRANS: C = A^T + C, n %lld, nb %lld, %lld x %lld grid; GB/s the lowest of %lld placements\n", n, nb,
               p, q, repeats);
    double rate[MAX_REPEATS], secs[MAX_REPEATS], worst_resid = 0;
    int all_ok = 1;
    uint64_t seed = hc_shared_seed();   /* the placements: drawn once, the same everywhere */
    int *sc = hc_alloc((size_t)run.n * sizeof(int) * 5, "the exchange counts");
    int *sd = sc + run.n, *rc = sd + run.n, *rd = rc + run.n, *pos = rd + run.n;
    for (long long t = 0; t < repeats; t++) {
        char stepname[48];
        snprintf(stepname, sizeof stepname, "ptrans repeat %lld", t + 1);
        if (run.me == 0)
            rmx_step(stepname);
        for (int i = 0; i < run.n; i++)   /* a random placement of the ranks on the grid, as HPCC's grid_map */
            g.rank_at[i] = i;
        for (int i = run.n - 1; i > 0; i--) {
            int k = (int)(hc_mix(seed + (uint64_t)t * 1000003u + (uint64_t)i) % (uint64_t)(i + 1)), x = g.rank_at[i];
            g.rank_at[i] = g.rank_at[k];
            g.rank_at[k] = x;
        }
        for (int i = 0; i < run.n; i++)
            if (g.rank_at[i] == run.me) {
                g.row = i / g.q;
                g.col = i % g.q;
            }
        g.mp = numroc(n, nb, g.row, g.p);
        g.nq = numroc(n, nb, g.col, g.q);
        size_t local = (size_t)g.mp * (size_t)g.nq;
        double *a = hc_alloc(local * sizeof *a, "matrix A"), *c = hc_alloc(local * sizeof *c, "matrix C");
        send_counts(&g, run.me, run.n, sc);
        recv_counts(&g, run.me, run.n, rc);
        long long stot = 0, rtot = 0;
        for (int i = 0; i < run.n; i++) {
            sd[i] = (int)stot;
            rd[i] = (int)rtot;
            stot += sc[i];
            rtot += rc[i];
        }
        if (stot > INT_MAX || rtot > INT_MAX)   /* the offsets into the buffers are ints */
            hc_fail(2, "a rank's share of the matrix exceeds %d doubles: use more ranks or a smaller n", INT_MAX);
        double *sbuf = hc_alloc((size_t)stot * sizeof *sbuf, "the send buffer");
        double *rbuf = hc_alloc((size_t)rtot * sizeof *rbuf, "the receive buffer");
        /* every page touched before the timer, as HPCC zeroes its work space: no page faults timed */
        memset(sbuf, 0, (size_t)stot * sizeof *sbuf);
        memset(rbuf, 0, (size_t)rtot * sizeof *rbuf);
        generate(&g, a, SEED_A);
        generate(&g, c, SEED_B);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = rmx_now();
        transpose(&g, run.me, run.n, a, c, sbuf, rbuf, sc, sd, rc, rd, pos);
        secs[t] = hc_max(rmx_now() - t0);
        rate[t] = (double)n * (double)n * sizeof(double) / secs[t];   /* bytes/s */
        if (corrupt && run.me == 0 && local)
            c[0] += 1.0;
        double resid = residual(&g, c);
        int ok = resid <= HC_THRESHOLD && resid == resid;
        all_ok &= ok;
        worst_resid = resid > worst_resid || resid != resid ? resid : worst_resid;
        free(a);
        free(c);
        free(sbuf);
        free(rbuf);
    }
    double lo = rate[0], lo_s = secs[0];
    for (long long t = 1; t < repeats; t++)
        if (rate[t] < lo) {
            lo = rate[t];
            lo_s = secs[t];
        }
    j = hc_point(&run, "mpi", run.n, n, lo, lo_s, all_ok, "GB/s");
    if (j) {
        rmx_json_num(j, "residual", worst_resid);
        rmx_json_num(j, "threshold", HC_THRESHOLD);
        rmx_json_int(j, "nb", nb);
        rmx_json_int(j, "p", p);
        rmx_json_int(j, "q", q);
        rmx_json_nums(j, "repeats", rate, (size_t)repeats);
        rmx_json_nums(j, "seconds_repeats", secs, (size_t)repeats);
        rmx_json_obj_end(j);
    }
    free(sc);
    free(g.rank_at);
    return hc_finish(&run);
}

RMX_SUBCMD("ptrans", cmd_ptrans, "PTRANS: parallel matrix transpose C = A^T + C (GB/s)");
