/* peakflops: measured floating-point peak from FMA-throughput kernels, on one
 * core and on all cores, for every ISA the CPU has. Each sample is the rate of
 * one timed block of about --sample-time seconds; the answer of every block is
 * checked against a scalar replay of the same recurrence. A wrong answer is
 * reported (validated: false, no rate), as every node kernel reports one. */
#include "measure.h"
#include "peakflops_kernels.h"

#include "node_util.h"
#include "rmx_subcmd.h"
#include "rmx_threads.h"
#include "rmx_timer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const node_kernel K = {
    "rmax-node peakflops", "rmax.peakflops/1", "Measured FMA-throughput peak, one core and all cores.",
    "# ISA     Precision  Threads       Median          Min          Max      n",
    "GFLOPS per measurement: median, min and max of timed blocks (n)",
    "an answer differs from its scalar replay",
};

/* Converges to a / (1 - m) = 1.0, so values stay normal however long it runs. */
static const double M = 0.9990234375, A = 0.0009765625;

typedef struct {
    const rmx_peak_kernel *k;
    size_t iters;
    int bad; /* set by any thread whose answer disagreed with the replay */
    double expect[RMX_PEAK_CHAINS];
} peak_ctx;

/* The exact answer of `iters` steps of every chain. A chain reaches a value that
 * its step maps to itself within 28 200 steps (7 600 in single precision: its
 * distance to 1.0 shrinks by M a step until rounding holds it), and every later
 * step returns that same value: the replay stops there, so that it costs the
 * same small time however long the blocks are (a full replay, 12 dependent
 * chains one after the other, cost about 8 blocks: the step's largest fixed
 * work, paid on every node; bench/RESULTS.md, session 15). */
static void replay(const rmx_peak_kernel *k, size_t iters, double *expect)
{
    for (int c = 0; c < RMX_PEAK_CHAINS; c++) {
        if (strcmp(k->precision, "double") == 0) {
            double x = 1.0 + 0.01 * c;
            for (size_t i = 0; i < iters; i++) {
                double next = k->fused ? fma(x, M, A) : x * M + A;
                if (next == x)
                    break;
                x = next;
            }
            expect[c] = x;
        } else {
            float x = (float)(1.0 + 0.01 * c), m = (float)M, a = (float)A;
            for (size_t i = 0; i < iters; i++) {
                float next = k->fused ? fmaf(x, m, a) : x * m + a;
                if (next == x)
                    break;
                x = next;
            }
            expect[c] = x;
        }
    }
}

static int peak_thread(void *arg, int tid, int nthreads)
{
    (void)tid;
    (void)nthreads;
    peak_ctx *p = arg;
    double out[RMX_PEAK_CHAINS];
    p->k->run(p->iters, M, A, out);
    for (int c = 0; c < RMX_PEAK_CHAINS; c++)
        if (out[c] != p->expect[c])
            __atomic_store_n(&p->bad, 1, __ATOMIC_RELAXED);
    return 0;
}

typedef struct {
    peak_ctx *p;
    int threads;
} sample_ctx;

/* One sample: GFLOPS of all threads together, each thread pinned to its own
 * core, timed from the release to the last thread's end. (A thread's own time
 * would overstate the rate when threads do not overlap: on a 16-vCPU guest,
 * 1 s blocks timed that way gave 1330 GFLOPS against 16 x 63 single-core.) */
static double sample(void *arg)
{
    sample_ctx *s = arg;
    double t = rmx_run_threads(peak_thread, s->p, s->threads);
    if (t <= 0 || s->p->bad)
        return -1.0;
    const rmx_peak_kernel *k = s->p->k;
    double flops = 2.0 * k->lanes * RMX_PEAK_CHAINS * (double)s->p->iters * s->threads;
    return flops / t / 1e9;
}

/* Iterations per timed block: grown on one thread until a block lasts a
 * quarter of sample_time, then scaled to sample_time. */
static size_t calibrate(const node_run *r, const rmx_peak_kernel *k)
{
    size_t iters = 1024;
    double out[RMX_PEAK_CHAINS], t;
    for (;;) {
        double t0 = rmx_now();
        k->run(iters, M, A, out);
        t = rmx_now() - t0;
        if (t >= r->sample_time / 4 || iters > ((size_t)1 << 40))
            break;
        iters *= 4;
    }
    double t0 = rmx_now();
    k->run(iters, M, A, out);
    t = rmx_now() - t0;
    return t > 0 ? (size_t)fmax(1024.0, (double)iters * r->sample_time / t) : iters;
}

int cmd_peakflops(int argc, char **argv)
{
    node_run r = {&K, .budget = 0.5, .sample_time = 0.02, .target = 0.02};
    const char *precision = "both", *isa = "all";
    long long threads = 0;
    const rmx_arg spec[] = {
        {"threads", RMX_ARG_INT, &threads, "threads for the all-core measurement (default: CPUs allowed)", 1, 4096, NULL},
        {"precision", RMX_ARG_CHOICE, &precision, "which precision", 0, 0, "double|single|both"},
        {"isa", RMX_ARG_CHOICE, &isa, "which instruction set (all: every one the CPU has)", 0, 0, "all|avx512|avx2|sse2"},
        {"budget", RMX_ARG_DOUBLE, &r.budget, "seconds of timed repetitions per measurement", 0.01, 3600, NULL},
        {"sample-time", RMX_ARG_DOUBLE, &r.sample_time, "seconds per timed block", 0.001, 10, NULL},
        NODE_ARG_TARGET(&r),
        NODE_ARG_JSON(&r),
        NODE_ARG_CORRUPT(&r, "spoil the expected answer"),
    };
    node_parse(&r, argc, argv, spec, sizeof spec / sizeof spec[0]);
    int all = node_threads(K.prog, threads);
    const rmx_peak_kernel *chosen[16];
    int nk = 0;
    for (const rmx_peak_kernel *const *kp = rmx_peak_kernels; *kp && nk < 16; kp++)
        if ((*kp)->available() && (strcmp(isa, "all") == 0 || strcmp(isa, (*kp)->isa) == 0) &&
            (strcmp(precision, "both") == 0 || strcmp(precision, (*kp)->precision) == 0))
            chosen[nk++] = *kp;
    if (!nk) /* refused before any output, as every bad input is */
        rmx_die(2, K.prog, "no kernel matches --isa %s --precision %s on this CPU", isa, precision);

    node_open(&r);
    for (int ki = 0; ki < nk; ki++) {
        const rmx_peak_kernel *k = chosen[ki];
        peak_ctx p = {k, calibrate(&r, k), 0, {0}};
        replay(k, p.iters, p.expect);
        if (r.corrupt)
            p.expect[0] += 1.0;
        int counts[2] = {1, all};
        for (int ci = 0; ci < (all > 1 ? 2 : 1); ci++) {
            sample_ctx s = {&p, counts[ci]};
            rmx_repeat_rule rule = node_rule(&r, 2, 5, 0, r.budget);
            node_meas m;
            node_measure(sample, &s, &rule, &m);
            int valid = m.rc >= 0;
            if (r.table && valid)
                printf("  %-7s %-9s %8d %12.2f %12.2f %12.2f %6zu\n", k->isa, k->precision, counts[ci], m.sum.median,
                       m.sum.min, m.sum.max, m.sum.n);
            else if (r.table)
                printf("  %-7s %-9s %8d  WRONG ANSWER: validation against a scalar replay failed\n", k->isa,
                       k->precision, counts[ci]);
            rmx_json *j = node_record(&r);
            if (j) {
                rmx_json_str(j, "isa", k->isa);
                rmx_json_str(j, "precision", k->precision);
                rmx_json_int(j, "threads", counts[ci]);
                rmx_json_int(j, "lanes", k->lanes);
                rmx_json_bool(j, "fused", k->fused);
                rmx_json_int(j, "chains", RMX_PEAK_CHAINS);
                rmx_json_int(j, "iterations", (long long)p.iters);
            }
            node_record_end(&r, "GFLOPS", &m, valid);
        }
    }
    return node_finish(&r);
}

RMX_SUBCMD("peakflops", cmd_peakflops, "measured FMA-throughput peak, one core and all cores");
