/* rmax-hpl: types and entry points shared by the files of the HPL-compatible
 * LU benchmark. Each .c file holds one concern (input, grid, generator, panel
 * factorisation, broadcast, swaps, update, solve, check, output, driver). */
#ifndef RMAX_HPL_H
#define RMAX_HPL_H

#include <limits.h>
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

#define HPL_PROG "rmax-hpl"
#define HPL_MAXLIST 20

enum { HPL_FACT_LEFT = 0, HPL_FACT_CROUT = 1, HPL_FACT_RIGHT = 2 };
enum { HPL_BC_1RING, HPL_BC_1RINGM, HPL_BC_2RING, HPL_BC_2RINGM, HPL_BC_LONG, HPL_BC_LONGM, HPL_BC_COUNT };
enum { HPL_SWAP_BINEXCH = 0, HPL_SWAP_LONG = 1, HPL_SWAP_MIX = 2 };
/* HPL.dat's "device out" (line 4), Fortran's unit numbers: 6 standard output,
 * 7 standard error; any other value writes the file named on line 3. */
enum { HPL_DEVICE_STDOUT = 6, HPL_DEVICE_STDERR = 7 };

/* Everything HPL.dat (or its JSON twin) holds, after clamping. */
typedef struct {
    char outfile[PATH_MAX];
    int device;
    int nn, n[HPL_MAXLIST];
    int nnb, nb[HPL_MAXLIST];
    int pmap;
    int ngrid, p[HPL_MAXLIST], q[HPL_MAXLIST];
    double thresh;
    int npfact, pfact[HPL_MAXLIST];
    int nnbmin, nbmin[HPL_MAXLIST];
    int nndiv, ndiv[HPL_MAXLIST];
    int nrfact, rfact[HPL_MAXLIST];
    int nbcast, bcast[HPL_MAXLIST];
    int ndepth, depth[HPL_MAXLIST];
    int swap, swapthr, l1notran, unotran, equil, align;
} hpl_input;

/* The parameters of one test. */
typedef struct {
    int n, nb, pmap, p, q, depth, bcast, rfact, pfact, nbmin, ndiv;
    int swap, swapthr, l1notran, unotran, equil, align;
    double thresh;
} hpl_params;

/* Reads and validates `path` ("-": standard input; HPL.dat format, or JSON when
 * the file starts with '{'). Returns 0, or -1 with a one-line message in err. */
int hpl_input_read(const char *path, hpl_input *in, char *err, size_t errlen);
/* The parsed input as one JSON object in the JSON input's keys (rmax-hpl --check). */
void hpl_input_json(FILE *f, const hpl_input *in);

/* ---- process grid ---- */
typedef struct {
    MPI_Comm comm;     /* the P*Q ranks of this grid; MPI_COMM_NULL on idle ranks */
    MPI_Comm row, col; /* my process row (ranked by column) and process column (ranked by row) */
    int P, Q, myrow, mycol, iam, pmap;
} hpl_grid;

/* Collective over world: ranks >= P*Q get comm == MPI_COMM_NULL. */
void hpl_grid_init(hpl_grid *g, MPI_Comm world, int P, int Q, int pmap);
void hpl_grid_free(hpl_grid *g);
/* Rank in g->comm of the process at (row, col). */
int hpl_grid_rank(const hpl_grid *g, int row, int col);

/* ---- block-cyclic index arithmetic (distribution starts on process 0) ---- */
/* How many of the first n indices process iproc owns, in 64 bits for the
 * memory model, which sizes inputs that rmax-hpl's int indices cannot hold. */
static inline long long hpl_numroc_ll(long long n, long long nb, long long iproc, long long nprocs)
{
    const long long nblocks = n / nb, extra = nblocks % nprocs;
    long long num = (nblocks / nprocs) * nb;
    if (iproc < extra)
        num += nb;
    else if (iproc == extra)
        num += n % nb;
    return num;
}
/* The same for the int indices of a run (at most n, so it fits). */
static inline int hpl_numroc(int n, int nb, int iproc, int nprocs) { return (int)hpl_numroc_ll(n, nb, iproc, nprocs); }
static inline int hpl_owner(int g, int nb, int nprocs) { return (g / nb) % nprocs; }
static inline int hpl_g2l(int g, int nb, int nprocs) { return (g / (nb * nprocs)) * nb + g % nb; }
static inline int hpl_l2g(int l, int nb, int iproc, int nprocs)
{
    return ((l / nb) * nprocs + iproc) * nb + l % nb;
}

/* ---- memory (memory.c) ---- */
/* Allocation for the big arrays (matrix, panels, U): aligned to `align` bytes
 * (a power of two, at least 64), and from 2 MB on aligned to 2 MB and marked
 * for transparent huge pages, which spares the TLB the column-strided and
 * random-row accesses of the swaps and the DGEMM. Free with free(). */
void *hpl_alloc(size_t bytes, size_t align);
/* Zeroed memory for the small work arrays, which a run cannot do without: on
 * failure one line (what, rank, host, bytes) on stderr, then MPI_Abort. */
void *hpl_malloc(size_t bytes, const char *what);

/* The memory model: every array one test needs on the process at (myrow, mycol),
 * in elements (doubles; ints for pfipiv), in 64 bits. hpl_lu_alloc allocates
 * from it and the memory check before a run sizes process 0's share with it. */
typedef struct {
    long long mp, nq, lda;   /* local rows, local columns of [A|b], leading dimension */
    unsigned long long a;    /* [A|b]: lda x max(nq, 1) */
    unsigned long long pcap; /* one panel [L1 | ipiv | L2], rounded to whole cache lines */
    unsigned long long pbuf, pft, pfwork, pfipiv; /* depth+1 panels; pfact's rows, pivot record, pivots */
    unsigned long long uwork, uside, swbuf, swtmp; /* U and the row records in transit: 0 when P = 1 */
    unsigned long long vectors;  /* x, the solve's and the check's vectors (an upper bound) */
    unsigned long long msg;      /* the largest MPI message not split into int counts (doubles) */
    unsigned long long bytes;    /* all of it */
} hpl_mem;
/* Returns 0; -1 when the bytes overflow 64 bits; -2 when a local dimension or
 * an MPI message count exceeds rmax-hpl's int indices. */
int hpl_mem_model(const hpl_params *prm, int myrow, int mycol, hpl_mem *m);

/* ---- generator ---- */
/* Fills the local part of the N x (N+1) matrix [A|b] (column-major, lda). */
void hpl_matgen(const hpl_grid *g, int n, int nb, double *a, int lda);

/* ---- per-phase accounting ---- */
enum { HPL_PH_PFACT, HPL_PH_SWAP, HPL_PH_BCAST, HPL_PH_UPDATE, HPL_PH_SOLVE, HPL_PH_CHECK, HPL_PH_COUNT };
extern const char *const hpl_phase_names[HPL_PH_COUNT];
typedef struct {
    double t[HPL_PH_COUNT];
    double wait[HPL_PH_COUNT]; /* the part of t spent blocked in MPI: waiting for peers (and, on shared
                                  memory, the copy the library makes inside the blocking call) */
    double bytes; /* bytes this rank sent */
} hpl_stats;

/* ---- BLAS through the Fortran ABI (hidden string lengths last) ---- */
void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k, const double *alpha,
            const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c,
            const int *ldc, size_t lta, size_t ltb);
void dtrsm_(const char *side, const char *uplo, const char *ta, const char *diag, const int *m, const int *n,
            const double *alpha, const double *a, const int *lda, double *b, const int *ldb, size_t l1, size_t l2,
            size_t l3, size_t l4);
void dtrsv_(const char *uplo, const char *ta, const char *diag, const int *n, const double *a, const int *lda,
            double *x, const int *incx, size_t l1, size_t l2, size_t l3);
void dgemv_(const char *ta, const int *m, const int *n, const double *alpha, const double *a, const int *lda,
            const double *x, const int *incx, const double *beta, double *y, const int *incy, size_t l1);
void dscal_(const int *n, const double *a, double *x, const int *incx);
int idamax_(const int *n, const double *x, const int *incx);

/* C = C - A * op(B), the workhorse, with the sizes as ints. */
void hpl_gemm_nn_minus(int m, int n, int k, const double *a, int lda, const double *b, int ldb, double *c, int ldc);

/* ---- panel broadcast: one variant per file, all behind start / test / wait ---- */
typedef struct {
    int phase, peer, recv; /* recv: 1 receive, 0 send */
    size_t off, cnt;       /* doubles */
} hpl_bc_op;

typedef struct hpl_bcast {
    MPI_Comm comm;
    int root, me, size, tag;
    double *buf;
    size_t len;
    hpl_bc_op *ops;
    int nops, cap;
    int next;              /* first op not yet posted */
    int cur_phase;         /* phase being waited for, -1 when none */
    MPI_Request *req;
    int nreq;
    int done;
    double *bytes;         /* where to count bytes sent */
} hpl_bcast;

typedef void (*hpl_bc_plan_fn)(hpl_bcast *b);
/* Relative rank helpers for the plans: rel 0 is the root. */
int hpl_bc_abs(const hpl_bcast *b, int rel);
int hpl_bc_rel(const hpl_bcast *b);
void hpl_bc_add(hpl_bcast *b, int phase, int peer_rel, int recv, size_t off, size_t cnt);
/* A chain members[0] -> members[1] -> ... forwarding the whole buffer. */
void hpl_bc_plan_chain(hpl_bcast *b, const int *members, int n, int first_phase);
/* Scatter then roll (ring allgather) of the buffer over members (members[0] has it). */
void hpl_bc_plan_spread_roll(hpl_bcast *b, const int *members, int n, int first_phase);

/* The "M" variants' common start: the next process column (relative rank 1) gets the
 * whole panel straight from the root, so its look-ahead factorisation can begin. */
void hpl_bc_send_next_first(hpl_bcast *b);
/* The others (the root and relative ranks 2..size-1) covered by a member-list plan. */
void hpl_bc_plan_rest(hpl_bcast *b, void (*plan)(hpl_bcast *, const int *, int, int));
void hpl_bc_plan_1ring(hpl_bcast *b);
void hpl_bc_plan_1ringm(hpl_bcast *b);
void hpl_bc_plan_2ring(hpl_bcast *b);
void hpl_bc_plan_2ringm(hpl_bcast *b);
void hpl_bc_plan_long(hpl_bcast *b);
void hpl_bc_plan_longm(hpl_bcast *b);
/* Two chains from the root over the rel ranks [first, size). */
void hpl_bc_plan_two_halves(hpl_bcast *b, int first);

/* The plan of this rank (b->root, me, size and len set, no ops yet): its
 * operations in posting order. No MPI call: the unit tests check the plans of
 * every rank as data. Pieces over INT_MAX doubles are split (MPI counts are int). */
void hpl_bcast_plan(hpl_bcast *b, int variant);
/* Starts broadcasting buf[0..len) from root over comm with the chosen topology. */
void hpl_bcast_start(hpl_bcast *b, int variant, MPI_Comm comm, int root, double *buf, size_t len, int tag,
                     double *bytes);
/* Progresses without blocking; returns 1 once this rank's part is complete. */
int hpl_bcast_test(hpl_bcast *b);
void hpl_bcast_free(hpl_bcast *b);

/* ---- the factorisation as a whole ---- */
typedef struct {
    const hpl_params *prm;
    const hpl_grid *g;
    double *a;          /* local [A|b], column-major */
    int lda, mp, nq;    /* local rows, local columns (b included) */
    hpl_stats *st;
    int progress;       /* print progress on rank 0 */
    int test;           /* the test's number in the input (1-based), for the progress lines */
    double t0;          /* start time, for the progress rate */
    double *uwork;      /* nb x nq: the U rows of the current update (P > 1) */
    double *uside;      /* nb x nb: the same for the look-ahead panel's columns (P > 1) */
    double *swbuf, *swtmp; /* 2 nb x nq and 4 nb x nq: row records in transit (P > 1) */
    double *pbuf;       /* depth+1 panel buffers of pcap doubles each */
    size_t pcap;
    double *pft;        /* nb x nb: the panel factorisation's pivoted rows */
    double *pfwork;     /* 2 nb + 4: one pivot record */
    int *pfipiv;        /* nb: the panel's pivot rows */
    int team;           /* > 1: the team update with this many threads (the BLAS's), which every
                           rank of the process column then runs; else 1 */
} hpl_lu;

/* All the work space of one test, as the memory model sizes it (lu->mp, nq
 * and lda set from it), allocated and touched before the clock starts
 * (first-touch page faults are not part of the factorisation): returns 0, or
 * -1 when an allocation failed, named on stderr (then call hpl_lu_free). */
int hpl_lu_alloc(hpl_lu *lu);
void hpl_lu_free(hpl_lu *lu);

/* One panel: its factors packed for the broadcast and the updates. */
typedef struct {
    int idx, jj, jb, pcol, prow;
    int mrows;          /* local rows below the diagonal block on my process row */
    double *buf;        /* [L1 jb*jb | ipiv jb | L2 mrows*jb (ld mrows)] */
    size_t len;
    hpl_bcast bc;
    int in_flight;
} hpl_panel;

static inline double *hpl_panel_l1(const hpl_panel *p) { return p->buf; }
static inline double *hpl_panel_ipiv(const hpl_panel *p) { return p->buf + (size_t)p->jb * p->jb; }
static inline double *hpl_panel_l2(const hpl_panel *p) { return p->buf + (size_t)p->jb * p->jb + p->jb; }

/* Factorises panel p (on its process column): recursive factorisation with the
 * chosen variants, then packs buf. Writes L and U11 back into the matrix. */
void hpl_pfact(hpl_lu *lu, hpl_panel *p);

/* Panel factorisation internals, shared by the variant files. */
typedef struct hpl_pf hpl_pf;
typedef void (*hpl_pf_child)(hpl_pf *pf, int c, int w);
struct hpl_pf {
    double *a;          /* local rows with global index >= jj, panel columns */
    int lda, m, jb, jj, nb, lr0; /* lr0: local index of a's first row */
    int diag;           /* this process holds the diagonal block (rows 0..jb-1 of a) */
    int P, myrow, prow;
    MPI_Comm col;
    double *t;          /* jb x jb replicated rows already pivoted (ld jb) */
    int *ipiv;          /* global row chosen at each step */
    double *work;       /* 2*jb+4 doubles for the pivot exchange */
    int pfact, rfact, nbmin, ndiv;
    MPI_Op op;
    MPI_Datatype rec;   /* one pivot record (2*jb+4 doubles) as a single element */
    double *bytes;
    double *wait;       /* seconds blocked in the pivot reductions */
};
void hpl_pf_leaf(hpl_pf *pf, int k);
/* A[rows >= r0, J] -= A[rows >= r0, c:c+w] * T[c:c+w, J]   (J = [j0, j0+nj)) */
void hpl_pf_upd_lower(hpl_pf *pf, int r0, int c, int w, int j0, int nj);
/* T[c:c+w, J] = unit_lower(T[c:c+w, c:c+w])^-1 T[c:c+w, J] */
void hpl_pf_upd_trsm(hpl_pf *pf, int c, int w, int j0, int nj);
/* T[r:r+h, J] -= T[r:r+h, c:c+w] * T[c:c+w, J] */
void hpl_pf_upd_tgemm(hpl_pf *pf, int r, int h, int c, int w, int j0, int nj);
/* The three ways to walk columns [c0, c0+n) in np pieces; child(c, w)
 * factors one piece whose columns are up to date with everything left of c. */
void hpl_pf_left(hpl_pf *pf, int c0, int n, int np, hpl_pf_child child);
void hpl_pf_crout(hpl_pf *pf, int c0, int n, int np, hpl_pf_child child);
void hpl_pf_right(hpl_pf *pf, int c0, int n, int np, hpl_pf_child child);
static inline int hpl_pf_piece(int c0, int n, int np, int i) { return c0 + (int)((long long)i * n / np); }

/* The row records of one panel's interchanges (swap.c), the same on every
 * process of the column: the jb rows that become U (in order), then the rows
 * displaced below the diagonal block, grouped by the process row holding them. */
typedef struct {
    int nrec;       /* jb U rows, then displaced rows */
    int *src, *dst; /* global source row; destination global row (-1 for U rows) */
    int *grp, *idx; /* owning process row of the source; index within its group */
    int *cnt, *off; /* records per group and first record of each group (P + 1 entries) */
} hpl_swap_plan;
/* The ints of work space hpl_swap_plan_make needs (the plan points into it). */
#define HPL_SWAP_PLAN_INTS(jb, P) ((size_t)(12 * (size_t)(jb) + 2 * (size_t)(P) + 2))
/* The plan of the pivots ipiv (global rows, as doubles) of the panel whose first row is jj. */
void hpl_swap_plan_make(hpl_swap_plan *pl, int *mem, const double *ipiv, int jb, int jj, int nb, int P);
/* Row interchanges of panel p applied to local columns [lc0, lc1) when P > 1: on return
 * u holds the jb pivot rows of those columns (jb x nc, or transposed nc x jb when
 * !unotran; leading dimension ldu) and rows displaced below the block are in place. */
void hpl_swap(hpl_lu *lu, const hpl_panel *p, int lc0, int lc1, double *u, int ldu);
/* With one process row (P = 1) every row is local: the interchanges are
 * applied in place, in pivot order, and U is then solved and used right
 * where it lies in the matrix (no copy in either U form). */
void hpl_swap_inplace(hpl_lu *lu, const hpl_panel *p, int lc0, int lc1);
/* With two process rows and no thread team (hpl_pair_active), the diagonal
 * process row D applies the interchanges in place with the U rows the other
 * row O sends it, solves U in the matrix and sends it back, piece by piece of
 * columns (swap.c): O runs its DGEMM on a piece while D works on the next. */
#define HPL_PAIR_PIECES 16
#define HPL_PAIR_TILE 16
typedef struct {
    hpl_swap_plan pl;
    int *mem, *dix;      /* the plan's ints; per displaced record, its index among O's (-1: on D) */
    int lc0, nc, diag, peer, lrd; /* lrd: the diagonal block's first local row (on D) */
    int nu, nd;          /* per column: U rows from O, displaced rows for O */
    int np, cut[HPL_PAIR_PIECES + 1]; /* pieces of columns [cut[i], cut[i+1]) of the range */
    double *rows, *disp, *tmp; /* O's U rows, the rows displaced to O, D's tile of records */
    MPI_Request rreq[HPL_PAIR_PIECES], sreq[2 * HPL_PAIR_PIECES];
    int nreq;
} hpl_pair;
int hpl_pair_active(const hpl_lu *lu);
/* The pieces of nc columns (a small first one, each next PAIR_GROWTH times larger); returns their number. */
int hpl_pair_cuts(int nc, int *cut);
/* Plans the exchange; O packs and sends its U rows, D posts their receives. */
void hpl_pair_start(hpl_lu *lu, const hpl_panel *p, int lc0, int lc1, hpl_pair *x);
/* D: piece i's interchanges in place, and the displaced rows of O sent. */
void hpl_pair_permute(hpl_lu *lu, const hpl_panel *p, hpl_pair *x, int i);
/* D: piece i of U (in the matrix) copied to work (jb x nc) and sent to O. */
void hpl_pair_send_u(hpl_lu *lu, const hpl_panel *p, hpl_pair *x, int i, double *work);
/* O: piece i of U received into work, the displaced rows put in place. */
void hpl_pair_receive(hpl_lu *lu, const hpl_panel *p, hpl_pair *x, int i, double *work);
/* Completes the sends and frees the plan. */
void hpl_pair_finish(hpl_lu *lu, hpl_pair *x);
/* Applies panel p to local columns [lc0, lc1): swaps, triangular solve for U,
 * DGEMM on the rows below. With P > 1, U is gathered in work (lu->uwork for
 * the trailing columns; lu->uside, nb x nb, for the look-ahead panel's, which
 * a team's first thread updates while the team uses lu->uwork). While poll()
 * reports broadcasts still in progress (returns nonzero) the DGEMM goes in
 * chunks with a poll() after each; once it returns 0 the remaining columns are
 * one DGEMM call. */
typedef int (*hpl_poll_fn)(void *ctx);
void hpl_update(hpl_lu *lu, const hpl_panel *p, int lc0, int lc1, double *work, hpl_poll_fn poll, void *pctx);
/* U := L11^-1 U for nc columns: U is jb x nc (unotran, ld ldu) or its transpose. */
void hpl_solve_u(int l1notran, int unotran, int jb, int nc, const double *l1, double *u, int ldu);
/* Where one update's U lives: in place in the matrix (P = 1, not transposed),
 * or the work array given (P > 1), jb x nc (notran) or nc x jb, leading
 * dimension ld. */
typedef struct {
    double *u;
    int ld, notran, inplace;
} hpl_u;
hpl_u hpl_u_of(const hpl_lu *lu, const hpl_panel *p, int lc0, int nc, double *work);
/* Column c of U (its first element). */
double *hpl_u_col(const hpl_u *u, int c);
/* Rows [r0, r0 + h) of the rows below the diagonal block, columns [c, c + w) of
 * the update's range starting at local column lc0: C -= L2 U. */
void hpl_u_gemm(const hpl_lu *lu, const hpl_panel *p, const hpl_u *u, int lc0, int c, int w, int r0, int h);
/* Copies columns [c0, c1) of the solved U into the diagonal block's rows on the
 * process row holding them (P > 1; nothing to do in place). */
void hpl_u_store(const hpl_lu *lu, const hpl_panel *p, const hpl_u *u, int lc0, int c0, int c1);
/* The same update by the rank's thread team (lu->team threads, any grid). The
 * first `first` columns are done first, by the whole team; then the first thread
 * runs side(ctx) (the look-ahead panel's factorisation) while the others go on,
 * and joins them; it alone calls MPI (side, and poll between its tasks). */
void hpl_update_team(hpl_lu *lu, const hpl_panel *p, int lc0, int lc1, int first, void (*side)(void *),
                     hpl_poll_fn poll, void *ctx);
/* Threads the BLAS runs now (1 when it cannot tell), and setting them: see blas_threads.c. */
int hpl_blas_threads(void);
void hpl_blas_set_threads(int n);

/* LU of [A|b] then back substitution; x (length n, replicated) gets the solution. */
void hpl_pdgesv(hpl_lu *lu, double *x);
/* Solves U x = y with the factored local matrix; x replicated on return. */
void hpl_solve(hpl_lu *lu, double *x);

/* Scaled residual and norms; regenerates [A|b] into lu->a. */
typedef struct {
    double resid, rnorm, anorm_inf, anorm_1, xnorm_inf, xnorm_1, bnorm_inf;
} hpl_check_result;
void hpl_check(hpl_lu *lu, const double *x, hpl_check_result *r);

/* ---- output ---- */
typedef struct {
    hpl_params prm;
    double time, gflops;
    int checked;
    hpl_check_result chk;
    const char *status; /* PASSED FAILED SKIPPED */
    double ph_max[HPL_PH_COUNT], ph_min[HPL_PH_COUNT];
    /* Per phase and, last, summed over the phases of each rank: seconds blocked in MPI and the rest. */
    double wait_max[HPL_PH_COUNT + 1], wait_min[HPL_PH_COUNT + 1];
    double comp_max[HPL_PH_COUNT + 1], comp_min[HPL_PH_COUNT + 1];
    double bytes_total, bytes_max;
    int ranks;
    int threads, team;  /* BLAS threads per rank (rank 0's); whether the thread team ran the updates */
    const char *skip_reason;
} hpl_result;

void hpl_variant_code(const hpl_params *p, char *code, size_t len);
void hpl_out_banner(FILE *f, const hpl_input *in, int nranks);
void hpl_out_result(FILE *f, const hpl_result *r);
void hpl_out_summary(FILE *f, int ntests, int npass, int nfail, int nskip);
void hpl_out_json(FILE *f, const hpl_result *r);

#endif
