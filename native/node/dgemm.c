/* dgemm: GFLOPS of the BLAS's DGEMM (C = A B, Fortran ABI, whatever
 * libblas.so.3 the loader picks) vs square order n, and vs the inner dimension
 * k at fixed large m = n: I-Cluster's rule for HPL's NB (Richard et al., HP
 * Labs Grenoble) is the k where the rate stops growing. Every timed block is checked: sampled entries of C against a
 * long-double dot product. */
#include "node_commands.h"
#include "node_util.h"

#include "rmx_args.h"
#include "rmx_stats.h"
#include "rmx_step.h"
#include "rmx_timer.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PROG "rmax-node dgemm"
#define CHECKS 48

/* Fortran BLAS; the trailing lengths of the character arguments are gfortran's hidden arguments. */
void dgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k, const double *alpha,
            const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c,
            const int *ldc, size_t la, size_t lb);

typedef struct {
    int m, n, k;
    double *a, *b, *c;
    size_t calls; /* dgemm calls per timed block */
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
    return 2.0 * g->m * (double)g->n * g->k * (double)g->calls / t / 1e9;
}

static void fill(double *x, size_t n, node_rng *r)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (double)(node_rand(r) >> 11) * 0x1.0p-53 - 0.5;
}

typedef struct {
    node_out *o;
    double budget, sample_time, target;
    int corrupt, failed;
} run_opts;

static void measure(run_opts *ro, const char *sweep, int m, int n, int k)
{
    gemm_ctx g = {0};
    g.m = m;
    g.n = n;
    g.k = k;
    g.corrupt = ro->corrupt;
    g.rng.s = 0x2545F4914F6CDD1DULL ^ (unsigned long long)(m * 31 + k);
    size_t na = (size_t)m * k, nb = (size_t)k * n, nc = (size_t)m * n;
    g.a = node_alloc(PROG, na * sizeof(double));
    g.b = node_alloc(PROG, nb * sizeof(double));
    g.c = node_alloc(PROG, nc * sizeof(double));
    fill(g.a, na, &g.rng);
    fill(g.b, nb, &g.rng);
    /* Calibrate: calls per block so one block lasts about sample_time (at least one call). */
    g.calls = 1;
    gemm(&g);
    double t0 = rmx_now();
    gemm(&g);
    double t1 = rmx_now() - t0;
    g.calls = (size_t)fmax(1.0, ro->sample_time / fmax(t1, 1e-9));

    rmx_repeat_rule rule = rmx_repeat_default();
    rule.warmup = 1;
    rule.min_reps = 5;
    rule.budget = ro->budget;
    rule.rel_target = ro->target;
    rmx_samples smp;
    rmx_samples_init(&smp);
    int rc = rmx_repeat(sample, &g, &rule, &smp);
    rmx_summary sum;
    rmx_summarize(smp.v, smp.n, &sum);
    if (g.bad)
        ro->failed = 1;
    if (ro->o->table)
        printf("  %-7s %7d %7d %7d %12.2f %12.2f %12.2f %6zu%s\n", sweep, m, n, k, sum.median, sum.min, sum.max, sum.n,
               g.bad ? "  INVALID" : "");
    if (ro->o->jf) {
        rmx_json *j = &ro->o->j;
        rmx_json_obj_begin(j, NULL);
        rmx_json_str(j, "schema", "rmax.dgemm/1");
        rmx_json_str(j, "sweep", sweep);
        rmx_json_int(j, "m", m);
        rmx_json_int(j, "n", n);
        rmx_json_int(j, "k", k);
        rmx_json_int(j, "calls_per_sample", (long long)g.calls);
        rmx_json_str(j, "unit", "GFLOPS");
        node_json_measurement(ro->o, &smp, &sum, !g.bad, rc == 0);
        rmx_json_obj_end(j);
    }
    rmx_samples_free(&smp);
    node_free(g.a, na * sizeof(double));
    node_free(g.b, nb * sizeof(double));
    node_free(g.c, nc * sizeof(double));
}

static void check_order(const char *what, size_t v)
{
    if (v == 0)
        rmx_die(2, PROG, "%s: matrix dimensions must be greater than zero", what);
    if (v > 1000000)
        rmx_die(2, PROG, "%s: %zu is too large a matrix dimension", what, v);
}

int cmd_dgemm(int argc, char **argv)
{
    const char *json = NULL, *sweep = "both";
    rmx_size_list sizes = {0}, ks = {0};
    size_t mn = 2048;
    long long corrupt = 0;
    double budget = 1.0, sample_time = 0.05, target = 0.02;
    static size_t default_sizes[] = {128, 256, 512, 1024, 2048};
    static size_t default_ks[] = {32, 64, 96, 128, 192, 256, 384, 512};
    const rmx_arg spec[] = {
        {"sweep", RMX_ARG_CHOICE, &sweep, "which sweep", 0, 0, "square|k|both"},
        {"sizes", RMX_ARG_SIZE_LIST, &sizes, "square orders n (default 128,256,512,1024,2048)", 0, 1e18, NULL},
        {"k", RMX_ARG_SIZE_LIST, &ks, "inner dimensions k at m = n = --mn (default 32,64,96,128,192,256,384,512)", 0, 1e18, NULL},
        {"mn", RMX_ARG_SIZE, &mn, "m = n of the k sweep (default 2048)", 0, 1e18, NULL},
        {"budget", RMX_ARG_DOUBLE, &budget, "seconds of timed repetitions per point (default 1)", 0.001, 3600, NULL},
        {"sample-time", RMX_ARG_DOUBLE, &sample_time, "seconds per timed block, at least one call (default 0.05)", 1e-5, 60, NULL},
        {"target", RMX_ARG_DOUBLE, &target, "stop when the 95% CI half-width is within this fraction of the median (default 0.02)", 1e-4, 1, NULL},
        {"self-test-corrupt", RMX_ARG_FLAG, &corrupt, "testing: spoil one result so that validation must fail", 0, 0, NULL},
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
    };
    rmx_args_parse(PROG, "BLAS DGEMM rate vs square size and vs inner dimension k.", argc, argv, 2, spec,
                   sizeof spec / sizeof spec[0]);
    if (!sizes.n) {
        sizes.v = default_sizes;
        sizes.n = sizeof default_sizes / sizeof default_sizes[0];
    }
    if (!ks.n) {
        ks.v = default_ks;
        ks.n = sizeof default_ks / sizeof default_ks[0];
    }
    int do_square = strcmp(sweep, "k") != 0, do_k = strcmp(sweep, "square") != 0;
    for (size_t i = 0; do_square && i < sizes.n; i++) {
        check_order("--sizes", sizes.v[i]);
        node_check_size(PROG, "--sizes: three matrices", sizes.v[i] * sizes.v[i] * sizeof(double), 3);
    }
    if (do_k) {
        check_order("--mn", mn);
        for (size_t i = 0; i < ks.n; i++) {
            check_order("--k", ks.v[i]);
            node_check_size(PROG, "--k: the matrices", (mn * ks.v[i] * 2 + mn * mn) * sizeof(double), 1);
        }
    }
    node_out o;
    node_out_open(&o, PROG, json);
    if (o.table)
        printf("# %-7s %7s %7s %7s %12s %12s %12s %6s\n", "Sweep", "m", "n", "k", "Median", "Min", "Max", "n");
    run_opts ro = {&o, budget, sample_time, target, (int)corrupt, 0};
    rmx_step("square");
    for (size_t i = 0; do_square && i < sizes.n; i++)
        measure(&ro, "square", (int)sizes.v[i], (int)sizes.v[i], (int)sizes.v[i]);
    rmx_step("k");
    for (size_t i = 0; do_k && i < ks.n; i++)
        measure(&ro, "k", (int)mn, (int)mn, (int)ks.v[i]);
    if (o.table)
        printf("# GFLOPS (2mnk per call): median, min, max of n timed blocks\n");
    node_out_close(&o);
    if (ro.failed)
        fprintf(stderr, PROG ": warning: validation failed: C differs from a long-double reference\n");
    return 0;
}
