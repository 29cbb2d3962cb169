/* peakflops: measured floating-point peak from FMA-throughput kernels, on one
 * core and on all cores, for every ISA the CPU has. Each sample is the rate of
 * one timed block of about --sample-time seconds; the answer of every block is
 * checked against a scalar replay of the same recurrence. A wrong answer is
 * reported (validated: false, no rate), as every node kernel reports one. */
#include "node_commands.h"
#include "peakflops_kernels.h"

#include "rmx_args.h"
#include "rmx_json.h"
#include "rmx_stats.h"
#include "rmx_threads.h"
#include "rmx_timer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define PROG "rmax-node peakflops"

/* Converges to a / (1 - m) = 1.0, so values stay normal however long it runs. */
static const double M = 0.9990234375, A = 0.0009765625;

typedef struct {
    const rmx_peak_kernel *k;
    size_t iters;
    int bad; /* set by any thread whose answer disagreed with the replay */
    double expect[RMX_PEAK_CHAINS];
} peak_ctx;

static void replay(const rmx_peak_kernel *k, size_t iters, double *expect)
{
    for (int c = 0; c < RMX_PEAK_CHAINS; c++) {
        if (strcmp(k->precision, "double") == 0) {
            double x = 1.0 + 0.01 * c;
            for (size_t i = 0; i < iters; i++)
                x = k->fused ? fma(x, M, A) : x * M + A;
            expect[c] = x;
        } else {
            float x = (float)(1.0 + 0.01 * c), m = (float)M, a = (float)A;
            for (size_t i = 0; i < iters; i++)
                x = k->fused ? fmaf(x, m, a) : x * m + a;
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

int cmd_peakflops(int argc, char **argv)
{
    const char *json = NULL, *precision = "both", *isa = "all";
    long long threads = 0, corrupt = 0;
    double budget = 2.0, sample_time = 0.02, target = 0.02;
    const rmx_arg spec[] = {
        {"threads", RMX_ARG_INT, &threads, "threads for the all-core measurement (default: CPUs allowed)", 1, 4096, NULL},
        {"precision", RMX_ARG_CHOICE, &precision, "which precision", 0, 0, "double|single|both"},
        {"isa", RMX_ARG_CHOICE, &isa, "which instruction set (default: every one the CPU has)", 0, 0, "all|avx512|avx2|sse2"},
        {"budget", RMX_ARG_DOUBLE, &budget, "seconds of timed repetitions per measurement (default 2)", 0.01, 3600, NULL},
        {"sample-time", RMX_ARG_DOUBLE, &sample_time, "seconds per timed block (default 0.02)", 0.001, 10, NULL},
        {"target", RMX_ARG_DOUBLE, &target, "stop when the 95% CI half-width is within this fraction of the median (default 0.02)", 0.0001, 1, NULL},
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
        {"self-test-corrupt", RMX_ARG_FLAG, &corrupt, "testing: spoil the expected answer so that validation must fail", 0, 0, NULL},
    };
    rmx_args_parse(PROG, "Measured FMA-throughput peak, one core and all cores.", argc, argv, 2, spec,
                   sizeof spec / sizeof spec[0]);
    int all = threads > 0 ? (int)threads : rmx_cpus_allowed();

    FILE *jf = NULL;
    rmx_json j;
    if (json) {
        jf = rmx_json_open(json);
        if (!jf)
            rmx_die(2, PROG, "cannot write --json file '%s'", json);
        rmx_json_init(&j, jf);
    }
    int table = !(json && strcmp(json, "-") == 0);
    if (table)
        printf("# %-7s %-9s %8s %12s %12s %12s %6s\n", "ISA", "Precision", "Threads", "Median", "Min", "Max", "n");

    int measured = 0;
    for (const rmx_peak_kernel *const *kp = rmx_peak_kernels; *kp; kp++) {
        const rmx_peak_kernel *k = *kp;
        if (!k->available())
            continue;
        if (strcmp(isa, "all") != 0 && strcmp(isa, k->isa) != 0)
            continue;
        if (strcmp(precision, "both") != 0 && strcmp(precision, k->precision) != 0)
            continue;
        /* Calibrate the block length on one thread to about sample_time. */
        peak_ctx p = {k, 1024, 0, {0}};
        for (;;) {
            double t0 = rmx_now();
            double out[RMX_PEAK_CHAINS];
            k->run(p.iters, M, A, out);
            double t = rmx_now() - t0;
            if (t >= sample_time / 4 || p.iters > ((size_t)1 << 40))
                break;
            p.iters *= 4;
        }
        double t0 = rmx_now();
        double out[RMX_PEAK_CHAINS];
        k->run(p.iters, M, A, out);
        double t = rmx_now() - t0;
        if (t > 0)
            p.iters = (size_t)fmax(1024.0, (double)p.iters * sample_time / t);
        replay(k, p.iters, p.expect);
        if (corrupt)
            p.expect[0] += 1.0;

        int counts[2] = {1, all};
        for (int ci = 0; ci < (all > 1 ? 2 : 1); ci++) {
            sample_ctx s = {&p, counts[ci]};
            rmx_repeat_rule rule = rmx_repeat_default();
            rule.warmup = 2;
            rule.budget = budget;
            rule.rel_target = target;
            rmx_samples smp;
            rmx_samples_init(&smp);
            int rc = rmx_repeat(sample, &s, &rule, &smp);
            int valid = rc >= 0;
            rmx_summary sum;
            if (valid)
                rmx_summarize(smp.v, smp.n, &sum);
            if (table && valid)
                printf("  %-7s %-9s %8d %12.2f %12.2f %12.2f %6zu\n", k->isa, k->precision, counts[ci], sum.median,
                       sum.min, sum.max, sum.n);
            else if (table)
                printf("  %-7s %-9s %8d  WRONG ANSWER: validation against a scalar replay failed\n", k->isa,
                       k->precision, counts[ci]);
            if (jf) {
                rmx_json_obj_begin(&j, NULL);
                rmx_json_str(&j, "schema", "rmax.peakflops/1");
                rmx_json_str(&j, "isa", k->isa);
                rmx_json_str(&j, "precision", k->precision);
                rmx_json_int(&j, "threads", counts[ci]);
                rmx_json_int(&j, "lanes", k->lanes);
                rmx_json_bool(&j, "fused", k->fused);
                rmx_json_int(&j, "chains", RMX_PEAK_CHAINS);
                rmx_json_int(&j, "iterations", (long long)p.iters);
                rmx_json_str(&j, "unit", "GFLOPS");
                rmx_json_bool(&j, "validated", valid);
                rmx_json_bool(&j, "target_met", rc == 0);
                if (valid) {
                    rmx_json_nums(&j, "samples", smp.v, smp.n);
                    rmx_json_summary(&j, "summary", &sum);
                } else {
                    rmx_json_nums(&j, "samples", NULL, 0);
                    rmx_json_null(&j, "summary");
                }
                rmx_json_obj_end(&j);
            }
            rmx_samples_free(&smp);
            measured++;
        }
    }
    if (table)
        printf("# GFLOPS per measurement: median, min and max of timed blocks (n)\n");
    if (jf && jf != stdout)
        fclose(jf);
    if (!measured)
        rmx_die(2, PROG, "no kernel matches --isa %s --precision %s on this CPU", isa, precision);
    return 0;
}
