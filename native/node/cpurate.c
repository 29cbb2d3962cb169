/* cpurate: Brown's floating-point rate vs vector length ("cpu-rate", from
 * "Maximizing Beowulf Performance").
 *
 * For each length of a geometric sweep and each precision: every sample is one
 * timed block of passes over a vector of 1.0s, at a fresh random page-aligned
 * place in a pool four times its size (so, as with Brown's independent runs,
 * each sample gets other physical pages and the spread shows page-placement
 * conflicts in physically indexed caches); the time of the same block with an
 * empty pass function is subtracted; the vector must still hold 1.0s. The sweep
 * stops at --max-size or when the next length would overrun --budget. */
#include "cpurate_kernels.h"
#include "measure.h"
#include "node_util.h"

#include "rmx_step.h"
#include "rmx_subcmd.h"
#include "rmx_timer.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const node_kernel K = {
    "rmax-node cpurate", "rmax.cpurate/1",
    "Brown's cpu-rate: floating-point rate vs vector length, empty loop subtracted.",
    "# Precision          Bytes       Median         Mean           SD     Passes      n",
    "GFLOPS (4 flops per element, empty loop subtracted) per vector length: median, mean, SD of n timed blocks",
    "the vector no longer holds 1.0",
};
#define POOL_LIMIT ((size_t)64 << 20) /* beyond this, one fixed vector: page placement no longer matters */

typedef struct {
    int dp;             /* 1 double, 0 single */
    int divide;         /* Brown's divide kernel, else the multiply variant */
    size_t bytes, n;    /* vector length in bytes and elements */
    char *pool;
    size_t pool_bytes;
    size_t passes;      /* passes per timed block */
    double empty;       /* seconds of the empty block */
    int corrupt;        /* testing: spoil one element so validation must fail */
    int bad;            /* validation failed */
    node_rng rng;
} rate_ctx;

static void *place(rate_ctx *c)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t slots = (c->pool_bytes - c->bytes) / page + 1;
    return c->pool + (node_rand(&c->rng) % slots) * page;
}

static void fill(rate_ctx *c, void *x)
{
    if (c->dp)
        for (size_t i = 0; i < c->n; i++)
            ((double *)x)[i] = 1.0;
    else
        for (size_t i = 0; i < c->n; i++)
            ((float *)x)[i] = 1.0f;
}

static int check(rate_ctx *c, const void *x)
{
    if (c->dp) {
        for (size_t i = 0; i < c->n; i++)
            if (((const double *)x)[i] != 1.0)
                return 0;
    } else {
        for (size_t i = 0; i < c->n; i++)
            if (((const float *)x)[i] != 1.0f)
                return 0;
    }
    return 1;
}

static double block(rate_ctx *c, void *x, int empty)
{
    double t0 = rmx_now();
    if (c->dp) {
        void (*fn)(double *, size_t) = empty ? cpurate_empty_d : c->divide ? cpurate_pass_d : cpurate_mul_d;
        for (size_t p = 0; p < c->passes; p++)
            fn(x, c->n);
    } else {
        void (*fn)(float *, size_t) = empty ? cpurate_empty_s : c->divide ? cpurate_pass_s : cpurate_mul_s;
        for (size_t p = 0; p < c->passes; p++)
            fn(x, c->n);
    }
    return rmx_now() - t0;
}

/* One sample: GFLOPS of one block at a fresh place, empty-loop time subtracted. */
static double sample(void *arg)
{
    rate_ctx *c = arg;
    void *x = place(c);
    fill(c, x); /* also brings the vector into cache, as a warm-up pass */
    double t = block(c, x, 0) - c->empty;
    if (c->corrupt) {
        if (c->dp)
            ((double *)x)[c->n / 2] = 1.5;
        else
            ((float *)x)[c->n / 2] = 1.5f;
    }
    if (!check(c, x))
        c->bad = 1;
    if (t <= 0)
        t = 1e-9; /* below timer resolution; cannot happen with calibrated blocks */
    return 4.0 * (double)c->n * (double)c->passes / t / 1e9;
}

static double median_of(double *v, size_t n)
{
    rmx_summary s;
    rmx_summarize(v, n, &s);
    return s.median;
}

int cmd_cpurate(int argc, char **argv)
{
    node_run r = {&K, .budget = 35.0, .sample_time = 0.002, .target = 0.02};
    const char *precision = "both", *kernel = "multiply";
    size_t min_size = 1024, max_size = NODE_UNSET;
    long long reps = 30, per_octave = 4;
    const rmx_arg spec[] = {
        NODE_ARGS_SIZES(&min_size, &max_size, &per_octave, "vector"),
        {"reps", RMX_ARG_INT, &reps, "at least this many samples per length", 2, NODE_MAX_SAMPLES, NULL},
        {"precision", RMX_ARG_CHOICE, &precision, "which precision", 0, 0, "double|single|both"},
        {"kernel", RMX_ARG_CHOICE, &kernel,
         "x=(1+x)(1.5-x)*x (multiply) or Brown's x=(1+x)(1.5-x)/x (divide)", 0, 0, "multiply|divide"},
        {"budget", RMX_ARG_DOUBLE, &r.budget, "seconds for the whole sweep", 0.01, 86400, NULL},
        {"sample-time", RMX_ARG_DOUBLE, &r.sample_time, "seconds per timed block", 1e-5, 10, NULL},
        NODE_ARG_TARGET(&r),
        NODE_ARG_CORRUPT(&r, "spoil one result"),
        NODE_ARG_JSON(&r),
    };
    node_parse(&r, argc, argv, spec, sizeof spec / sizeof spec[0]);
    size_t llc = node_llc_bytes();
    int explicit_max = node_sweep_range(K.prog, min_size, &max_size, 1);
    if (min_size < 64)
        rmx_die(2, K.prog, "--min-size must be at least 64 bytes, not %zu", min_size);

    size_t *sizes;
    size_t nsizes = node_sweep(min_size, max_size, (int)per_octave, 64, &sizes);
    int precs[2], np = 0;
    if (strcmp(precision, "single") != 0)
        precs[np++] = 1;
    if (strcmp(precision, "double") != 0)
        precs[np++] = 0;

    /* The pool grows with the sweep (doubling), so a sweep that the budget ends
     * early never pays for touching memory it does not reach. */
    size_t pool_bytes = 0;
    char *pool = NULL;
    node_open(&r);
    double last_pass = 0.0;
    size_t last_bytes = 0;
    rmx_step("sweep");
    node_sweep_begin(&r, nsizes);
    for (size_t si = 0; si < nsizes; si++) {
        size_t bytes = sizes[si];
        /* Cost of this length from the last one: a pass scales with its length. */
        double pass_est = last_bytes ? last_pass * (double)bytes / (double)last_bytes : 0.0;
        if (!node_sweep_fits(&r, np * (double)reps * (fmax(r.sample_time, pass_est) + 2 * pass_est)))
            break;
        size_t need = bytes <= POOL_LIMIT ? 4 * bytes : bytes;
        if (need > pool_bytes) {
            rmx_step("allocate");
            node_free(pool, pool_bytes);
            pool_bytes = 2 * need < max_size ? 2 * need : (need > max_size ? need : max_size);
            pool = node_alloc(K.prog, pool_bytes);
            rmx_step("sweep");
        }
        for (int pi = 0; pi < np; pi++) {
            int dp = precs[pi];
            rate_ctx c = {0};
            c.dp = dp;
            c.divide = strcmp(kernel, "divide") == 0;
            c.bytes = bytes;
            c.n = bytes / (dp ? sizeof(double) : sizeof(float));
            c.pool = pool;
            c.pool_bytes = bytes <= POOL_LIMIT ? 4 * bytes : bytes;
            c.rng.s = 0x9e3779b97f4a7c15ULL ^ bytes ^ (unsigned long long)dp;
            c.corrupt = (int)r.corrupt;
            /* Calibrate: passes per block so a block lasts about sample_time. */
            void *x = place(&c);
            fill(&c, x);
            c.passes = 1;
            c.passes = node_blocks(&r, block(&c, x, 0));
            fill(&c, x);
            double pass_t = block(&c, x, 0) / (double)c.passes;
            if (dp || np == 1) {
                last_pass = pass_t;
                last_bytes = bytes;
            }
            double e[11];
            for (int k = 0; k < 11; k++)
                e[k] = block(&c, x, 1);
            c.empty = median_of(e, 11);

            rmx_repeat_rule rule =
                node_rule(&r, 1, (size_t)reps, 4 * (size_t)reps, r.budget / (double)(nsizes * (size_t)np));
            node_meas m;
            node_measure(sample, &c, &rule, &m);
            const char *pname = dp ? "double" : "single";
            if (r.table)
                printf("  %-9s %14zu %12.3f %12.3f %12.4f %10zu %6zu%s\n", pname, bytes, m.sum.median, m.sum.mean,
                       m.sum.sd, c.passes, m.sum.n, c.bad ? "  INVALID" : "");
            rmx_json *j = node_record(&r);
            if (j) {
                rmx_json_str(j, "precision", pname);
                rmx_json_str(j, "kernel", kernel);
                rmx_json_int(j, "bytes", (long long)bytes);
                rmx_json_int(j, "elements", (long long)c.n);
                rmx_json_int(j, "passes", (long long)c.passes);
                rmx_json_num(j, "empty_loop_s", c.empty);
                rmx_json_int(j, "flops_per_element", 4);
            }
            node_record_end(&r, "GFLOPS", &m, !c.bad);
        }
        node_sweep_done(&r, bytes);
    }
    rmx_json *j = node_sweep_record(&r, "rmax.cpurate.sweep/1", "lengths", max_size);
    if (j) {
        rmx_json_bool(j, "max_size_given", explicit_max);
        rmx_json_int(j, "llc_bytes", (long long)llc);
        node_sweep_record_end(&r);
    }
    node_free(pool, pool_bytes);
    free(sizes);
    return node_finish(&r);
}

RMX_SUBCMD("cpurate", cmd_cpurate, "Brown's floating-point rate vs vector length");
