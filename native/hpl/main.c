/* rmax-hpl: an HPL-compatible benchmark. Reads HPL.dat (or the path given
 * first, or a JSON file with the same fields), runs every combination in
 * HPL's loop order (grid, N, NB, DEPTH, BCAST, RFACT, PFACT, NBMIN, NDIV) and
 * prints results as xhpl does; --json adds one object per test.
 *
 * Input is validated on rank 0 and the verdict broadcast, so on bad input
 * every rank leaves with the same status and nobody waits for a message
 * that will never come. */
#include "hpl.h"
#include "rmx_lifeline.h"
#include "rmx_args.h"
#include "rmx_fail.h"
#include "rmx_step.h"
#include "rmx_timer.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *json;
    int progress;
    int corrupt;
    const char *check;
    long long ranks, node_ranks;
} options;

/* MemAvailable in bytes, 0 when unknown. */
static uint64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    unsigned long long kb = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb > UINT64_MAX / 1024 ? UINT64_MAX : (uint64_t)kb * 1024;
}

/* Every test must fit in memory, with `node_ranks` ranks of a grid sharing this
 * node: refused before anything is allocated (and by --check before a run). */
static int check_memory(const hpl_input *in, long long node_ranks, char *err, size_t errlen)
{
    const uint64_t avail = mem_available();
    for (int gi = 0; gi < in->ngrid; gi++)
        for (int ni = 0; ni < in->nn; ni++)
            for (int bi = 0; bi < in->nnb; bi++)
                for (int di = 0; di < in->ndepth; di++) {
                    const long long pq = (long long)in->p[gi] * in->q[gi], here = node_ranks < pq ? node_ranks : pq;
                    /* Process 0's share is the largest. */
                    const hpl_params prm = {.n = in->n[ni], .nb = in->nb[bi], .p = in->p[gi], .q = in->q[gi],
                                            .depth = in->depth[di], .align = in->align};
                    hpl_mem m;
                    const int rc = hpl_mem_model(&prm, 0, 0, &m);
                    const uint64_t need = m.bytes;
                    uint64_t total;
                    if (rc == -1) {
                        snprintf(err, errlen,
                                 "N=%d NB=%d DEPTH=%d on a %d x %d grid needs more than 2^64 bytes per rank",
                                 in->n[ni], in->nb[bi], in->depth[di], in->p[gi], in->q[gi]);
                        return -1;
                    }
                    if (__builtin_mul_overflow(need, (uint64_t)here, &total))
                        total = UINT64_MAX;
                    if (avail > 0 && total > avail) {
                        snprintf(err, errlen,
                                 "N=%d NB=%d on a %d x %d grid needs %llu bytes per rank (%llu for the %lld rank%s "
                                 "on this node) but only %llu bytes are available (MemAvailable)",
                                 in->n[ni], in->nb[bi], in->p[gi], in->q[gi], (unsigned long long)need,
                                 (unsigned long long)total, here, here == 1 ? "" : "s", (unsigned long long)avail);
                        return -1;
                    }
                    if (rc == -2) {
                        snprintf(err, errlen,
                                 "N=%d NB=%d on a %d x %d grid: the local matrix or its row-swap messages exceed "
                                 "rmax-hpl's 32-bit indices",
                                 in->n[ni], in->nb[bi], in->p[gi], in->q[gi]);
                        return -1;
                    }
                }
    return 0;
}

/* Every grid must fit in the ranks started. */
static int check_grids(const hpl_input *in, long long ranks, char *err, size_t errlen)
{
    for (int i = 0; i < in->ngrid; i++)
        if ((long long)in->p[i] * in->q[i] > ranks) {
            snprintf(err, errlen, "grid %d x %d needs %lld processes but only %lld were started", in->p[i], in->q[i],
                     (long long)in->p[i] * in->q[i], ranks);
            return -1;
        }
    return 0;
}

/* rmax-hpl --check FILE: the input's verdict without MPI, which rmax asks before
 * a run: the parsed input as one JSON object, or the one-line error (exit 2).
 * The checks and their order are a run's: grammar, grids (when the ranks are
 * given), memory. */
static int check_only(const char *path, long long ranks, long long node_ranks)
{
    hpl_input in;
    char err[1024];
    if (hpl_input_read(path, &in, err, sizeof err) || (ranks > 0 && check_grids(&in, ranks, err, sizeof err)) ||
        check_memory(&in, node_ranks, err, sizeof err)) {
        rmx_error_line(HPL_PROG, "%s", err);
        return 2;
    }
    hpl_input_json(stdout, &in);
    return fflush(stdout) == 0 ? 0 : 1;
}

static int wants_check(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--check") == 0 || strncmp(argv[i], "--check=", 8) == 0)
            return 1;
    return 0;
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
    lu.test = cnt->ntests;
    /* The ranks of a process column exchange rows and factor panels together,
     * and a team does both in another order (update_team.c): all of a column's
     * ranks run the team, or none (a rank with one BLAS thread has none). */
    res.threads = hpl_blas_threads();
    int has_team = res.threads > 1, column_team = 0;
    MPI_Allreduce(&has_team, &column_team, 1, MPI_INT, MPI_MIN, g->col);
    lu.team = column_team ? res.threads : 1;
    res.team = lu.team > 1;
    const size_t xbytes = (size_t)(n > 0 ? n : 1) * sizeof(double);
    double *x = malloc(xbytes);
    if (!x)
        rmx_fail_line(HPL_PROG, "cannot allocate %zu bytes for the solution x (N=%d NB=%d); test skipped", xbytes,
                      n, nb);
    int ok = x && hpl_lu_alloc(&lu) == 0;
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

/* Flushes (and closes, unless a standard stream) a results file; 1 with a message when any
 * write to it failed (a full disk, an I/O error): results that were not written are no success. */
static int finish_output(FILE *f, const char *name)
{
    int bad = fflush(f) != 0 || ferror(f);
    if (f != stdout && f != stderr)
        bad |= fclose(f) != 0;
    if (bad)
        rmx_error_line(HPL_PROG, "cannot write the results to %s", name);
    return bad;
}

int main(int argc, char **argv)
{
    rmx_lifeline();
    const char *path = "HPL.dat";
    int first = 1;
    if (argc > 1 && argv[1][0] != '-') {
        path = argv[1];
        first = 2;
    }
    options opt = {NULL, 0, 0, NULL, 0, 0};
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &opt.json, "also write one JSON object per test to FILE ('-' for stdout)", 0, 0,
         NULL},
        {"progress", RMX_ARG_FLAG, &opt.progress, "report column, fraction done and GFLOPS on stderr as it runs", 0,
         0, NULL},
        {"self-test-corrupt", RMX_ARG_FLAG, &opt.corrupt,
         "self-test of the residual check: perturb x before checking (the tests must FAIL)", 0, 0, NULL},
        {"check", RMX_ARG_STRING, &opt.check,
         "only read FILE ('-': standard input) and print the parsed input as one JSON object, or the one-line "
         "error (exit 2); no MPI, no run",
         0, 0, NULL},
        {"ranks", RMX_ARG_INT, &opt.ranks,
         "with --check: the ranks the run will start; every grid must fit (default: not checked)", 1, INT_MAX,
         NULL},
        {"node-ranks", RMX_ARG_INT, &opt.node_ranks,
         "with --check: ranks that will share this node's memory (default 1)", 1, INT_MAX, NULL},
    };
    const char *usage = "usage: rmax-hpl [HPL.dat|input.json] [options]\n"
                        "Solve dense random systems by LU as HPL does; input in the HPL.dat format.";
    const size_t nspec = sizeof spec / sizeof spec[0];
    if (wants_check(argc, argv)) {
        rmx_args_parse(HPL_PROG, usage, argc, argv, first, spec, nspec);
        if (first == 2)
            rmx_die(2, HPL_PROG, "give the input either first or to --check, not both");
        if (opt.json || opt.progress || opt.corrupt)
            rmx_die(2, HPL_PROG,
                    "--check only reads the input: --json, --progress and --self-test-corrupt are run options");
        return check_only(opt.check, opt.ranks, opt.node_ranks ? opt.node_ranks : 1);
    }

    int thread_level; /* threaded ranks call MPI from their main thread only */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &thread_level);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank != 0)
        for (int i = first; i < argc; i++)
            if (strcmp(argv[i], "--help") == 0)
                leave(0);
    rmx_args_parse(HPL_PROG, usage, argc, argv, first, spec, nspec);
    if (opt.ranks || opt.node_ranks) { /* after MPI_Init every rank leaves through MPI (leave) */
        if (rank == 0)
            rmx_error_line(HPL_PROG, "--ranks and --node-ranks go with --check (a run counts its ranks itself)");
        leave(2);
    }

    rmx_step("input");
    hpl_input in;
    char err[1024] = "";
    int rc = 0;
    if (rank == 0)
        rc = hpl_input_read(path, &in, err, sizeof err);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc != 0) {
        if (rank == 0)
            rmx_error_line(HPL_PROG, "%s", err);
        leave(2);
    }
    MPI_Bcast(&in, (int)sizeof in, MPI_BYTE, 0, MPI_COMM_WORLD);

    if (check_grids(&in, size, err, sizeof err)) { /* the same verdict on every rank */
        if (rank == 0)
            rmx_error_line(HPL_PROG, "%s", err);
        leave(2);
    }

    /* Every test must fit in memory: rank 0 decides for the most crowded node. */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int node_ranks;
    MPI_Comm_size(node, &node_ranks);
    MPI_Comm_free(&node);
    MPI_Allreduce(MPI_IN_PLACE, &node_ranks, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        rc = check_memory(&in, node_ranks, err, sizeof err);
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc != 0) {
        if (rank == 0)
            rmx_error_line(HPL_PROG, "%s", err);
        leave(2);
    }

    FILE *out = NULL, *json = NULL;
    int open_ok = 1;
    if (rank == 0) {
        if (in.device == HPL_DEVICE_STDOUT)
            out = opt.json && strcmp(opt.json, "-") == 0 ? stderr : stdout;
        else if (in.device == HPL_DEVICE_STDERR)
            out = stderr;
        else
            out = fopen(in.outfile, "w");
        if (!out) {
            rmx_error_line(HPL_PROG, "cannot open the output file %s", in.outfile);
            open_ok = 0;
        }
        if (open_ok && opt.json && !(json = strcmp(opt.json, "-") == 0 ? stdout : fopen(opt.json, "w"))) {
            rmx_error_line(HPL_PROG, "cannot open %s for writing", opt.json);
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
    int written = 1;
    if (rank == 0) {
        hpl_out_summary(out, cnt.ntests, cnt.npass, cnt.nfail, cnt.nskip);
        int bad = finish_output(out, out == stdout ? "standard output" : out == stderr ? "standard error" : in.outfile);
        if (json)
            bad |= finish_output(json, json == stdout ? "standard output" : opt.json);
        written = !bad;
    }
    MPI_Finalize();
    return written ? 0 : 1;
}
