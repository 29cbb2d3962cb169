/* dgemm: GFLOPS of the BLAS's DGEMM (C = A B, Fortran ABI, whatever
 * libblas.so.3 the loader picks) vs square order n, and vs the inner dimension
 * k at fixed large m = n: I-Cluster's rule for HPL's NB (Richard et al., HP
 * Labs Grenoble) is the k where the rate stops growing. Given shapes m x n x k
 * (--shapes) are measured too: HPL's trailing update at its own N, NB and grid.
 * Every timed block is checked: sampled entries of C against a long-double dot product. */
#include "measure.h"
#include "node_util.h"

#include "rmx_step.h"
#include "rmx_subcmd.h"
#include "rmx_timer.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHECKS 48

static const node_kernel K = {
    "rmax-node dgemm", "rmax.dgemm/1", "BLAS DGEMM rate vs square size, vs inner dimension k, and at given shapes.",
    "# Sweep         m       n       k       Median          Min          Max      n",
    "GFLOPS (2mnk per call): median, min, max of n timed blocks",
    "C differs from a long-double reference",
};

/* Fortran BLAS; the trailing lengths of the character arguments are gfortran's hidden arguments. */
void dgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const double *alpha,
            const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c,
            const int *ldc, size_t la, size_t lb);

typedef struct {
    int m, n, k;
    double *a, *b, *c;
    size_t calls; /* dgemm calls per timed block */
    double block; /* the seconds a block is sized for (--sample-time) */
    int corrupt, bad;
    node_rng rng;
} gemm_ctx;

static void gemm(gemm_ctx *g)
{
    const double one = 1.0, zero = 0.0;
    dgemm_("N", "N", &g->m, &g->n, &g->k, &one, g->a, &g->m, g->b, &g->k, &zero, g->c, &g->m, 1, 1);
}

/* Checks C(0,0) and CHECKS-1 random entries against a long-double dot product,
 * within the forward error bound of a k-term sum (k eps sum|a||b|, doubled for safety). */
static int verify(gemm_ctx *g)
{
    for (int t = 0; t < CHECKS; t++) {
        int i = t ? (int)(node_rand(&g->rng) % (unsigned)g->m) : 0;
        int j = t ? (int)(node_rand(&g->rng) % (unsigned)g->n) : 0;
        long double ref = 0, mag = 0;
        for (int p = 0; p < g->k; p++) {
            long double x = g->a[(size_t)p * g->m + i], y = g->b[(size_t)j * g->k + p];
            ref += x * y;
            mag += fabsl(x * y);
        }
        double got = g->c[(size_t)j * g->m + i];
        if (!(fabsl((long double)got - ref) <= 2.0L * g->k * DBL_EPSILON * mag + 1e-300))
            return 0;
    }
    return 1;
}

static double sample(void *arg)
{
    gemm_ctx *g = arg;
    double t0 = rmx_now();
    for (size_t i = 0; i < g->calls; i++)
        gemm(g);
    double t = rmx_now() - t0;
    if (g->corrupt)
        g->c[0] += 1.0;
    if (!verify(g))
        g->bad = 1;
    double rate = 2.0 * g->m * (double)g->n * g->k * (double)g->calls / t / 1e9;
    /* Blocks are sized from one call's time; where the CPU is shared (nodes of a virtual cluster)
     * that call may have had a whole core and the next ones a sliver of it: a block far past its
     * time gets fewer calls from then on, so the point stays near its budget. */
    if (t > 2 * g->block && g->calls > 1)
        g->calls = (size_t)fmax(1.0, (double)g->calls * g->block / t);
    return rate;
}

static void fill(double *x, size_t n, node_rng *r)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (double)(node_rand(r) >> 11) * 0x1.0p-53 - 0.5;
}

enum { MIN_REPS = 5, MIN_FIT = 3 };   /* timed blocks a point takes at least: as a rule, and when short of time */

static void measure(node_run *r, const char *sweep, int m, int n, int k)
{
    gemm_ctx g = {0};
    g.m = m;
    g.n = n;
    g.k = k;
    g.corrupt = (int)r->corrupt;
    g.rng.s = 0x2545F4914F6CDD1DULL ^ (unsigned long long)(m * 31 + k);
    size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
    g.a = node_alloc(K.prog, na * sizeof(double));
    g.b = node_alloc(K.prog, nb * sizeof(double));
    g.c = node_alloc(K.prog, nc * sizeof(double));
    fill(g.a, na, &g.rng);
    fill(g.b, nb, &g.rng);
    g.calls = 1;
    gemm(&g); /* untimed: the BLAS's first call sets up its threads and buffers */
    double t0 = rmx_now();
    gemm(&g);
    double one = rmx_now() - t0;
    g.calls = node_blocks(r, one);
    g.block = r->sample_time;

    /* The warm-up: a block's calls, or fewer where a block's time (sample_time) passes first on
     * the clock, and then the blocks take that many. Where nodes share the CPUs (a virtual
     * cluster's), one call may have had a whole core and the next ones a sliver of it: a block
     * sized from that call was the point's largest fixed work (64 nodes on 2 cores: 32 times its
     * time, for each point on each node; bench/RESULTS.md, session 15). */
    size_t warm = 0;
    double w0 = rmx_now();
    while (warm < g.calls && (warm == 0 || rmx_now() - w0 < g.block)) {
        gemm(&g);
        warm++;
    }
    g.calls = warm;

    /* The minimum repetitions fit the point's budget: when a call alone is long (HPL's shape on a
     * shared core), fewer than MIN_REPS blocks, down to MIN_FIT, rather than a point that overruns
     * the time the survey planned for it. */
    double fit = r->budget / fmax((double)g.calls * one, 1e-9) - 1;
    size_t min_reps = (size_t)fmax(MIN_FIT, fmin(MIN_REPS, floor(fit)));
    rmx_repeat_rule rule = node_rule(r, 0, min_reps, 0, r->budget);
    node_meas s;
    node_measure(sample, &g, &rule, &s);
    if (r->table)
        printf("  %-7s %7d %7d %7d %12.2f %12.2f %12.2f %6zu%s\n", sweep, m, n, k, s.sum.median, s.sum.min, s.sum.max,
               s.sum.n, g.bad ? "  INVALID" : "");
    rmx_json *j = node_record(r);
    if (j) {
        rmx_json_str(j, "sweep", sweep);
        rmx_json_int(j, "m", m);
        rmx_json_int(j, "n", n);
        rmx_json_int(j, "k", k);
        rmx_json_int(j, "calls_per_sample", (long long)g.calls);
    }
    node_record_end(r, "GFLOPS", &s, !g.bad);
    node_free(g.a, na * sizeof(double));
    node_free(g.b, nb * sizeof(double));
    node_free(g.c, nc * sizeof(double));
}

#define MAX_ORDER ((size_t)1 << 20) /* rmax.bench.dgemm.DIM's bound: a 2^20 order is 8 TiB */

static void check_order(const char *what, size_t v)
{
    if (v == 0)
        rmx_die(2, K.prog, "%s: matrix dimensions must be greater than zero", what);
    if (v > MAX_ORDER)
        rmx_die(2, K.prog, "%s: %zu is too large a matrix dimension", what, v);
}

#define MAX_SHAPES 64

/* "MxNxK,MxNxK,...": every order checked like the sweeps' own. */
static size_t parse_shapes(const char *text, size_t shapes[][3])
{
    size_t count = 0;
    const char *p = text;
    while (p && *p) {
        if (count == MAX_SHAPES)
            rmx_die(2, K.prog, "--shapes: at most %d shapes", MAX_SHAPES);
        for (int d = 0; d < 3; d++) {
            char *end;
            unsigned long long v = strtoull(p, &end, 10);
            if (end == p || *p == '-' || (d < 2 && *end != 'x') || (d == 2 && *end != ',' && *end != '\0'))
                rmx_die(2, K.prog, "--shapes: '%s' is not a list of MxNxK (e.g. 3000x1500x128)", text);
            check_order("--shapes", (size_t)v);
            shapes[count][d] = (size_t)v;
            p = *end ? end + 1 : end;
        }
        count++;
    }
    return count;
}

int cmd_dgemm(int argc, char **argv)
{
    node_run r = {&K, .budget = 0.5, .sample_time = 0.05, .target = 0.02};
    const char *sweep = "both", *shape_text = NULL;
    static size_t default_sizes[] = {128, 256, 512, 1024, 2048};
    static size_t default_ks[] = {32, 64, 96, 128, 192, 256, 384, 512};
    rmx_size_list sizes = {default_sizes, sizeof default_sizes / sizeof default_sizes[0]};
    rmx_size_list ks = {default_ks, sizeof default_ks / sizeof default_ks[0]};
    size_t mn = 2048;
    const rmx_arg spec[] = {
        {"sweep", RMX_ARG_CHOICE, &sweep, "which sweep (shape: only the --shapes)", 0, 0, "square|k|both|shape"},
        {"shapes", RMX_ARG_STRING, &shape_text, "shapes MxNxK to measure as well, comma-separated", 0, 0, NULL},
        {"sizes", RMX_ARG_SIZE_LIST, &sizes, "square orders n", 1, MAX_ORDER, NULL},
        {"k", RMX_ARG_SIZE_LIST, &ks, "inner dimensions k at m = n = --mn", 1, MAX_ORDER, NULL},
        {"mn", RMX_ARG_SIZE, &mn, "m = n of the k sweep", 1, MAX_ORDER, NULL},
        {"budget", RMX_ARG_DOUBLE, &r.budget, "seconds of timed repetitions per point", 0.001, 3600, NULL},
        {"sample-time", RMX_ARG_DOUBLE, &r.sample_time, "seconds per timed block, at least one call", 1e-5, 60, NULL},
        NODE_ARG_TARGET(&r),
        NODE_ARG_CORRUPT(&r, "spoil one result"),
        NODE_ARG_JSON(&r),
    };
    node_parse(&r, argc, argv, spec, sizeof spec / sizeof spec[0]);
    int do_square = !strcmp(sweep, "square") || !strcmp(sweep, "both"), do_k = !strcmp(sweep, "k") || !strcmp(sweep, "both");
    size_t shapes[MAX_SHAPES][3];
    size_t n_shapes = shape_text ? parse_shapes(shape_text, shapes) : 0;
    if (!strcmp(sweep, "shape") && !n_shapes)
        rmx_die(2, K.prog, "--sweep shape needs --shapes MxNxK,...");
    for (size_t i = 0; i < n_shapes; i++)
        node_check_size(K.prog, "--shapes: the matrices",
                        (shapes[i][0] * shapes[i][2] + shapes[i][2] * shapes[i][1] + shapes[i][0] * shapes[i][1]) * sizeof(double), 1);
    for (size_t i = 0; do_square && i < sizes.n; i++) {
        check_order("--sizes", sizes.v[i]);
        node_check_size(K.prog, "--sizes: three matrices", sizes.v[i] * sizes.v[i] * sizeof(double), 3);
    }
    if (do_k) {
        check_order("--mn", mn);
        for (size_t i = 0; i < ks.n; i++) {
            check_order("--k", ks.v[i]);
            node_check_size(K.prog, "--k: the matrices", (mn * ks.v[i] * 2 + mn * mn) * sizeof(double), 1);
        }
    }
    node_open(&r);
    rmx_step("square");
    for (size_t i = 0; do_square && i < sizes.n; i++)
        measure(&r, "square", (int)sizes.v[i], (int)sizes.v[i], (int)sizes.v[i]);
    rmx_step("k");
    for (size_t i = 0; do_k && i < ks.n; i++)
        measure(&r, "k", (int)mn, (int)mn, (int)ks.v[i]);
    rmx_step("shape");
    for (size_t i = 0; i < n_shapes; i++)
        measure(&r, "shape", (int)shapes[i][0], (int)shapes[i][1], (int)shapes[i][2]);
    return node_finish(&r);
}

RMX_SUBCMD("dgemm", cmd_dgemm, "BLAS DGEMM rate vs size and vs inner dimension k");
