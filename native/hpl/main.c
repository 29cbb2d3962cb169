/* rmax-hpl: an HPL-compatible benchmark. Reads HPL.dat (or the path given
 * first, or a JSON file with the same fields), runs every combination in
 * HPL's loop order (grid, N, NB, DEPTH, BCAST, RFACT, PFACT, NBMIN, NDIV) and
 * prints results as xhpl does; --json adds one object per test.
 *
 * Input is validated on rank 0 and the verdict broadcast, so on bad input
 * every rank leaves with the same status and nobody waits for a message
 * that will never come. */
#include "hpl.h"
#include "rmx_args.h"
#include "rmx_step.h"
#include "rmx_timer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct {
    const char *json;
    int progress;
    int corrupt;
} options;

/* Bytes one rank needs for a test, taking the largest local share (process 0's). */
static double bytes_per_rank(int n, int nb, int P, int Q, int depth, int align)
{
    const double mp = hpl_numroc(n, nb, 0, P), nq = hpl_numroc(n + 1, nb, 0, Q);
    const double lda = ((mp > 1 ? mp : 1) + align - 1) / align * align;
    double d = lda * nq;                            /* [A|b] */
    d += (depth + 1.0) * ((double)nb * nb + nb + mp * nb); /* panels in flight */
    if (P > 1)
        d += 7.0 * nb * nq;                         /* U and row records in transit (U in place when P = 1) */
    d += 3.0 * n + 2.0 * mp + nb;                   /* x, solve and check vectors */
    return 8.0 * d;
}

static double mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    double kb = -1;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb < 0 ? -1 : kb * 1024.0;
}

static int round_up(int x, int a) { return (x + a - 1) / a * a; }

void *hpl_alloc(size_t bytes, size_t align)
{
    const size_t huge = (size_t)2 << 20;
    if (align < 64)
        align = 64;
    if (bytes >= huge && align < huge)
        align = huge;
    void *p = NULL;
    if (posix_memalign(&p, align, bytes > 0 ? bytes : 1) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (bytes >= huge)
        (void)madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE); /* advice only */
#endif
    return p;
}

/* Allocates and touches (memset) `bytes`; NULL on failure. */
static void *alloc_touched(size_t bytes, size_t align)
{
    void *p = hpl_alloc(bytes, align);
    if (p)
        memset(p, 0, bytes);
    return p;
}

int hpl_lu_alloc(hpl_lu *lu)
{
    const hpl_params *prm = lu->prm;
    const int nb = prm->nb;
    size_t align = 64;
    while (align < (size_t)prm->align * 8 && align < ((size_t)1 << 21))
        align *= 2;
    /* The matrix is written by the generator right away: no need to touch it here. */
    lu->a = hpl_alloc((size_t)lu->lda * (lu->nq > 0 ? lu->nq : 1) * sizeof(double), align);
    const size_t wq = (size_t)(lu->nq > 0 ? lu->nq : 1) * nb;
    if (lu->g->P > 1) { /* with one process row U stays in the matrix */
        lu->uwork = alloc_touched(wq * sizeof(double), 64);
        lu->swbuf = alloc_touched(2 * wq * sizeof(double), 64);
        lu->swtmp = alloc_touched(4 * wq * sizeof(double), 64);
    }
    /* Panel buffers, each rounded to whole cache lines: [L1 | ipiv | L2 (mp x nb)]. */
    lu->pcap = ((size_t)nb * nb + nb + (size_t)lu->mp * nb + 7) / 8 * 8;
    lu->pbuf = alloc_touched((size_t)(prm->depth + 1) * lu->pcap * sizeof(double), 64);
    lu->pft = alloc_touched((size_t)nb * nb * sizeof(double), 64);
    lu->pfwork = alloc_touched((size_t)(2 * nb + 4) * sizeof(double), 64);
    lu->pfipiv = malloc((size_t)nb * sizeof(int));
    const int ok = lu->a && (lu->g->P == 1 || (lu->uwork && lu->swbuf && lu->swtmp)) && lu->pbuf && lu->pft &&
                   lu->pfwork && lu->pfipiv;
    return ok ? 0 : -1;
}

void hpl_lu_free(hpl_lu *lu)
{
    free(lu->a);
    free(lu->uwork);
    free(lu->swbuf);
    free(lu->swtmp);
    free(lu->pbuf);
    free(lu->pft);
    free(lu->pfwork);
    free(lu->pfipiv);
    lu->a = lu->uwork = lu->swbuf = lu->swtmp = lu->pbuf = lu->pft = lu->pfwork = NULL;
    lu->pfipiv = NULL;
}

typedef struct {
    int npass, nfail, nskip, ntests;
} counts;

static void run_test(const hpl_params *prm, const hpl_grid *g, const options *opt, FILE *out, FILE *json,
                     counts *cnt)
{
    const int n = prm->n, nb = prm->nb;
    hpl_result res;
    memset(&res, 0, sizeof res);
    res.prm = *prm;
    res.ranks = prm->p * prm->q;
    hpl_stats st;
    memset(&st, 0, sizeof st);

    hpl_lu lu;
    memset(&lu, 0, sizeof lu);
    lu.prm = prm;
    lu.g = g;
    lu.st = &st;
    lu.progress = opt->progress;
    lu.team = hpl_blas_threads();
    res.threads = lu.team;
    res.team = lu.team > 1 && g->P == 1;
    lu.mp = hpl_numroc(n, nb, g->myrow, g->P);
    lu.nq = hpl_numroc(n + 1, nb, g->mycol, g->Q);
    lu.lda = round_up(lu.mp > 1 ? lu.mp : 1, prm->align);
    double *x = malloc((size_t)(n > 0 ? n : 1) * sizeof *x);
    int ok = hpl_lu_alloc(&lu) == 0 && x;
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, g->comm);
    if (!all_ok) {
        res.status = "SKIPPED";
        res.skip_reason = "memory allocation failed";
        cnt->nskip++;
        if (g->iam == 0) {
            fprintf(out, "%s: N=%d NB=%d %dx%d skipped: memory allocation failed\n", HPL_PROG, n, nb, prm->p,
                    prm->q);
            if (json)
                hpl_out_json(json, &res);
        }
        hpl_lu_free(&lu);
        free(x);
        return;
    }

    rmx_step("matgen");
    hpl_matgen(g, n, nb, lu.a, lu.lda);
    MPI_Barrier(g->comm);
    lu.t0 = rmx_now();
    hpl_pdgesv(&lu, x);
    double t = rmx_now() - lu.t0;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, g->comm);
    res.time = t;
    const double flops = 2.0 / 3.0 * (double)n * n * n + 1.5 * (double)n * n;
    res.gflops = t > 0 ? flops / t / 1e9 : 0.0;

    if (opt->corrupt && n > 0)
        x[0] += 1.0; /* self-test of the checker: a wrong x must fail */
    if (prm->thresh > 0.0) {
        rmx_step("check");
        const double tc = rmx_now();
        hpl_check(&lu, x, &res.chk);
        st.t[HPL_PH_CHECK] = rmx_now() - tc;
        res.checked = 1;
        res.status = res.chk.resid < prm->thresh ? "PASSED" : "FAILED";
    } else {
        res.status = "PASSED"; /* the reference counts unchecked tests as passed */
    }
    if (strcmp(res.status, "PASSED") == 0)
        cnt->npass++;
    else
        cnt->nfail++;

    MPI_Reduce(st.t, res.ph_max, HPL_PH_COUNT, MPI_DOUBLE, MPI_MAX, 0, g->comm);
    MPI_Reduce(st.t, res.ph_min, HPL_PH_COUNT, MPI_DOUBLE, MPI_MIN, 0, g->comm);
    double wait[HPL_PH_COUNT + 1] = {0}, comp[HPL_PH_COUNT + 1] = {0};
    for (int i = 0; i < HPL_PH_COUNT; i++) {
        wait[i] = st.wait[i];
        comp[i] = st.t[i] - st.wait[i];
        wait[HPL_PH_COUNT] += wait[i];
        comp[HPL_PH_COUNT] += comp[i];
    }
    MPI_Reduce(wait, res.wait_max, HPL_PH_COUNT + 1, MPI_DOUBLE, MPI_MAX, 0, g->comm);
    MPI_Reduce(wait, res.wait_min, HPL_PH_COUNT + 1, MPI_DOUBLE, MPI_MIN, 0, g->comm);
    MPI_Reduce(comp, res.comp_max, HPL_PH_COUNT + 1, MPI_DOUBLE, MPI_MAX, 0, g->comm);
    MPI_Reduce(comp, res.comp_min, HPL_PH_COUNT + 1, MPI_DOUBLE, MPI_MIN, 0, g->comm);
    MPI_Reduce(&st.bytes, &res.bytes_total, 1, MPI_DOUBLE, MPI_SUM, 0, g->comm);
    MPI_Reduce(&st.bytes, &res.bytes_max, 1, MPI_DOUBLE, MPI_MAX, 0, g->comm);
    if (g->iam == 0) {
        hpl_out_result(out, &res);
        if (json)
            hpl_out_json(json, &res);
    }
    hpl_lu_free(&lu);
    free(x);
}

static void leave(int status)
{
    MPI_Finalize();
    exit(status);
}

int main(int argc, char **argv)
{
    int thread_level; /* threaded ranks call MPI from their main thread only */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &thread_level);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    const char *path = "HPL.dat";
    int first = 1;
    if (argc > 1 && argv[1][0] != '-') {
        path = argv[1];
        first = 2;
    }
    options opt = {NULL, 0, 0};
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &opt.json, "also write one JSON object per test to FILE ('-' for stdout)", 0, 0,
         NULL},
        {"progress", RMX_ARG_FLAG, &opt.progress, "report column, fraction done and GFLOPS on stderr as it runs", 0,
         0, NULL},
        {"corrupt-solution", RMX_ARG_FLAG, &opt.corrupt,
         "self-test of the residual check: perturb x before checking (the tests must FAIL)", 0, 0, NULL},
    };
    if (rank != 0)
        for (int i = first; i < argc; i++)
            if (strcmp(argv[i], "--help") == 0)
                leave(0);
    rmx_args_parse(HPL_PROG, "usage: rmax-hpl [HPL.dat|input.json] [options]\n"
                             "Solve dense random systems by LU as HPL does; input in the HPL.dat format.",
                   argc, argv, first, spec, sizeof spec / sizeof spec[0]);

    rmx_step("input");
    hpl_input in;
    char err[512] = "";
    int rc = 0;
    if (rank == 0)
        rc = hpl_input_read(path, &in, err, sizeof err);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc != 0) {
        if (rank == 0)
            fprintf(stderr, "%s: error: %s\n", HPL_PROG, err);
        leave(2);
    }
    MPI_Bcast(&in, (int)sizeof in, MPI_BYTE, 0, MPI_COMM_WORLD);

    /* Every grid must fit in the ranks started. */
    for (int i = 0; i < in.ngrid; i++)
        if ((long long)in.p[i] * in.q[i] > size) {
            if (rank == 0)
                fprintf(stderr, "%s: error: grid %d x %d needs %lld processes but only %d were started\n",
                        HPL_PROG, in.p[i], in.q[i], (long long)in.p[i] * in.q[i], size);
            leave(2);
        }

    /* Every test must fit in memory: refuse before allocating anything. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int node_ranks;
    MPI_Comm_size(node, &node_ranks);
    MPI_Comm_free(&node);
    double avail = rank == 0 ? mem_available() : 0;
    MPI_Bcast(&avail, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (avail > 0)
        for (int gi = 0; gi < in.ngrid; gi++)
            for (int ni = 0; ni < in.nn; ni++)
                for (int bi = 0; bi < in.nnb; bi++)
                    for (int di = 0; di < in.ndepth; di++) {
                        const int pq = in.p[gi] * in.q[gi], here = node_ranks < pq ? node_ranks : pq;
                        const double need = bytes_per_rank(in.n[ni], in.nb[bi], in.p[gi], in.q[gi], in.depth[di],
                                                           in.align);
                        if (need * here > avail) {
                            if (rank == 0)
                                fprintf(stderr,
                                        "%s: error: N=%d NB=%d on a %d x %d grid needs %.0f bytes per rank "
                                        "(%.0f for the %d ranks on this node) but only %.0f bytes are available "
                                        "(MemAvailable)\n",
                                        HPL_PROG, in.n[ni], in.nb[bi], in.p[gi], in.q[gi], need, need * here, here,
                                        avail);
                            leave(1);
                        }
                    }

    FILE *out = NULL, *json = NULL;
    int open_ok = 1;
    if (rank == 0) {
        if (in.device == 6)
            out = opt.json && strcmp(opt.json, "-") == 0 ? stderr : stdout;
        else if (in.device == 7)
            out = stderr;
        else
            out = fopen(in.outfile, "w");
        if (!out) {
            fprintf(stderr, "%s: error: cannot open the output file %s\n", HPL_PROG, in.outfile);
            open_ok = 0;
        }
        if (open_ok && opt.json && !(json = strcmp(opt.json, "-") == 0 ? stdout : fopen(opt.json, "w"))) {
            fprintf(stderr, "%s: error: cannot open %s for writing\n", HPL_PROG, opt.json);
            open_ok = 0;
        }
    }
    MPI_Bcast(&open_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!open_ok)
        leave(1);
    if (rank == 0)
        hpl_out_banner(out, &in, size);

    counts cnt = {0, 0, 0, 0};
    for (int gi = 0; gi < in.ngrid; gi++) {
        hpl_grid g;
        hpl_grid_init(&g, MPI_COMM_WORLD, in.p[gi], in.q[gi], in.pmap);
        if (g.comm != MPI_COMM_NULL) {
            for (int ni = 0; ni < in.nn; ni++)
                for (int bi = 0; bi < in.nnb; bi++)
                    for (int di = 0; di < in.ndepth; di++)
                        for (int ci = 0; ci < in.nbcast; ci++)
                            for (int ri = 0; ri < in.nrfact; ri++)
                                for (int pi = 0; pi < in.npfact; pi++)
                                    for (int mi = 0; mi < in.nnbmin; mi++)
                                        for (int vi = 0; vi < in.nndiv; vi++) {
                                            hpl_params prm = {
                                                .n = in.n[ni], .nb = in.nb[bi], .pmap = in.pmap, .p = in.p[gi],
                                                .q = in.q[gi], .depth = in.depth[di], .bcast = in.bcast[ci],
                                                .rfact = in.rfact[ri], .pfact = in.pfact[pi],
                                                .nbmin = in.nbmin[mi], .ndiv = in.ndiv[vi], .swap = in.swap,
                                                .swapthr = in.swapthr, .l1notran = in.l1notran,
                                                .unotran = in.unotran, .equil = in.equil, .align = in.align,
                                                .thresh = in.thresh};
                                            cnt.ntests++;
                                            run_test(&prm, &g, &opt, out, json, &cnt);
                                        }
        }
        hpl_grid_free(&g);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0) {
        hpl_out_summary(out, cnt.ntests, cnt.npass, cnt.nfail, cnt.nskip);
        if (out != stdout && out != stderr)
            fclose(out);
        if (json && json != stdout)
            fclose(json);
    }
    MPI_Finalize();
    return 0;
}
