/* stream: STREAM's Copy, Scale, Add and Triad (McCalpin), on one thread and on
 * all cores, under STREAM's rules, each enforced here:
 *  - every array at least 4x the total cache of the node (--size may go below
 *    it, e.g. to match another tool's array; the record then says rule_met=false);
 *  - at least 10 repetitions of the four kernels in turn; the first is a warm-up
 *    and excluded; the headline is the best rate (shortest time) of the rest;
 *  - bytes counted as STREAM counts them: 16 per element for Copy and Scale, 24
 *    for Add and Triad (write-allocate traffic not counted);
 *  - the arrays are validated at the end against a scalar replay of the same
 *    sequence of operations.
 * Pages are first touched by the thread that will stream them. */
#include "measure.h"
#include "node_util.h"
#include "stream_kernels.h"

#include "rmx_step.h"
#include "rmx_subcmd.h"
#include "rmx_threads.h"
#include "rmx_timer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static const node_kernel K = {
    "rmax-node stream", "rmax.stream/1", "STREAM Copy, Scale, Add and Triad under STREAM's rules.",
    "# Kernel Threads      Best MB/s    Median MB/s       Min MB/s      Array MiB      n",
    "MB/s (10^6 bytes/s, STREAM's byte counts); best = STREAM's headline, over n repetitions after the first",
    "the arrays differ from the scalar replay",
};
/* STREAM's own scalar is 3, which multiplies the arrays by 15 at every repetition: past about
 * 12 repetitions a spoilt element is below the check's tolerance, and past 263 every value is
 * infinite and any answer passes. With q*q + 2q = 1 the recurrence below maps a to itself, so
 * the values stay near 1 however many repetitions run; any scalar moves the same bytes. */
#define SCALAR 0.41421356237309504880 /* sqrt(2) - 1 */

enum { COPY, SCALE, ADD, TRIAD, NKERNELS };
static const char *const names[NKERNELS] = {"copy", "scale", "add", "triad"};
static const int bytes_per_element[NKERNELS] = {16, 16, 24, 24};

typedef struct {
    double *a, *b, *c;
    size_t n;
    int kernel;     /* -1: initialise */
    double *thread_s; /* seconds each thread spent on its share, timed by itself */
} stream_ctx;

static void share(size_t n, int tid, int nthreads, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)tid / (size_t)nthreads;
    *hi = n * (size_t)(tid + 1) / (size_t)nthreads;
}

static int stream_thread(void *arg, int tid, int nthreads)
{
    stream_ctx *s = arg;
    size_t lo, hi;
    share(s->n, tid, nthreads, &lo, &hi);
    double t0 = rmx_now();
    switch (s->kernel) {
    case COPY: stream_copy(s->c, s->a, lo, hi); break;
    case SCALE: stream_scale(s->b, s->c, SCALAR, lo, hi); break;
    case ADD: stream_add(s->c, s->a, s->b, lo, hi); break;
    case TRIAD: stream_triad(s->a, s->b, s->c, SCALAR, lo, hi); break;
    default:
        for (size_t i = lo; i < hi; i++) {
            s->a[i] = 1.0;
            s->b[i] = 2.0;
            s->c[i] = 0.0;
        }
    }
    s->thread_s[tid] = rmx_now() - t0;
    return 0;
}

static double *map_array(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        rmx_die(1, K.prog, "cannot allocate %.1f MiB", (double)bytes / 1048576.0);
    return p;
}

static int near(double got, double want, double tol)
{
    return fabs(got - want) <= tol * fabs(want); /* false for NaN and infinities too */
}

/* STREAM's check: replay the recurrence on scalars, compare every element. The kernels may
 * round differently from the replay (a fused multiply-add), by an ulp or so a repetition. */
static int validate(const stream_ctx *s, size_t reps)
{
    double aj = 1.0, bj = 2.0, cj = 0.0;
    for (size_t k = 0; k < reps; k++) {
        cj = aj;
        bj = SCALAR * cj;
        cj = aj + bj;
        aj = bj + SCALAR * cj;
    }
    const double tol = 1e-13 + 4e-16 * (double)reps;
    if (!isfinite(aj) || !isfinite(bj) || !isfinite(cj))
        return 0;
    for (size_t i = 0; i < s->n; i++)
        if (!near(s->a[i], aj, tol) || !near(s->b[i], bj, tol) || !near(s->c[i], cj, tol))
            return 0;
    return 1;
}

/* Repeats the four kernels in turn, on nt threads, at least ntimes and at most
 * max_times times, beyond ntimes only while the budget lasts and some kernel's
 * CI is wider than the target. The first repetition is kept in smp (it is
 * reported) but excluded from every statistic. Returns the repetitions. */
static size_t repeat(stream_ctx *s, int nt, const node_run *r, long long ntimes, long long max_times,
                     rmx_samples *smp, double *thread_best, int *met)
{
    size_t reps = 0;
    double start = rmx_now();
    for (;;) {
        for (int k = 0; k < NKERNELS; k++) {
            s->kernel = k;
            double t = rmx_run_threads(stream_thread, s, nt);
            if (t <= 0)
                rmx_die(1, K.prog, "a %s thread failed", names[k]);
            rmx_samples_push(&smp[k], (double)bytes_per_element[k] * (double)s->n / t / 1e6);
            for (int i = 0; reps > 0 && i < nt; i++) {
                size_t lo, hi;
                share(s->n, i, nt, &lo, &hi);
                double rate = (double)bytes_per_element[k] * (double)(hi - lo) / s->thread_s[i] / 1e6;
                if (rate > thread_best[(size_t)i * NKERNELS + k])
                    thread_best[(size_t)i * NKERNELS + k] = rate;
            }
        }
        reps++;
        if (reps < (size_t)ntimes)
            continue;
        *met = 1;
        for (int k = 0; k < NKERNELS; k++) {
            rmx_summary sum;
            rmx_summarize(smp[k].v + 1, smp[k].n - 1, &sum);
            if (!(sum.ci_half_rel <= r->target))
                *met = 0;
        }
        if (*met || reps >= (size_t)max_times || rmx_now() - start >= r->budget)
            return reps;
    }
}

int cmd_stream(int argc, char **argv)
{
    node_run r = {&K, .budget = 1.0, .target = 0.02};
    const char *mode = "both";
    size_t size = NODE_UNSET;
    long long threads = 0, ntimes = 10, max_times = 200;
    const rmx_arg spec[] = {
        {"size", RMX_ARG_SIZE, &size, "bytes per array (default 4x the total cache, capped by memory)", 1, NODE_MAX_BYTES, NULL},
        {"threads", RMX_ARG_INT, &threads, "threads of the all-core run (default: CPUs allowed)", 1, 4096, NULL},
        {"mode", RMX_ARG_CHOICE, &mode, "one thread, all cores, or both", 0, 0, "one|all|both"},
        {"ntimes", RMX_ARG_INT, &ntimes, "at least this many repetitions, the first excluded (at least 10, STREAM's minimum)", 10, NODE_MAX_SAMPLES, NULL},
        {"max-times", RMX_ARG_INT, &max_times, "at most this many repetitions", 10, NODE_MAX_SAMPLES, NULL},
        {"budget", RMX_ARG_DOUBLE, &r.budget, "seconds of repetitions beyond the first ntimes per thread count", 0, 86400, NULL},
        {"target", RMX_ARG_DOUBLE, &r.target, "stop when the 95% CI half-width of every kernel is within this fraction of its median", 1e-4, 1, NULL},
        NODE_ARG_CORRUPT(&r, "spoil one result"),
        NODE_ARG_JSON(&r),
    };
    node_parse(&r, argc, argv, spec, sizeof spec / sizeof spec[0]);
    size_t total_cache = node_total_cache_bytes(), avail = node_mem_available();
    int given = size != NODE_UNSET;
    if (!given) {
        size = total_cache ? 4 * total_cache : (size_t)256 << 20;
        if (avail && size > avail / 6) /* three arrays in at most half the free memory */
            size = avail / 6;
        if (size < ((size_t)32 << 20))
            size = (size_t)32 << 20;
    }
    node_check_size(K.prog, "--size", size, 3);
    if (max_times < ntimes)
        max_times = ntimes;
    size_t n = size / sizeof(double);
    if (n < 1024)
        rmx_die(2, K.prog, "--size must be at least 8 KiB (1024 doubles), not %zu bytes", size);
    size_t bytes = n * sizeof(double);
    int all = node_threads(K.prog, threads);
    int counts[2], nc = 0;
    if (strcmp(mode, "all") != 0)
        counts[nc++] = 1;
    if (strcmp(mode, "one") != 0 && !(nc == 1 && all == 1))
        counts[nc++] = all;

    node_open(&r);
    for (int ci = 0; ci < nc; ci++) {
        int nt = counts[ci];
        rmx_step("allocate");
        double *thread_s = calloc((size_t)nt, sizeof *thread_s);
        /* per thread and kernel: its own best rate, as hpcc's StarSTREAM takes each process's best */
        double *thread_best = calloc((size_t)nt * NKERNELS, sizeof *thread_best);
        if (!thread_s || !thread_best)
            rmx_die(1, K.prog, "out of memory");
        stream_ctx s = {map_array(bytes), map_array(bytes), map_array(bytes), n, -1, thread_s};
        if (rmx_run_threads(stream_thread, &s, nt) < 0)
            rmx_die(1, K.prog, "cannot start %d threads", nt);
        rmx_step("measure");
        rmx_samples smp[NKERNELS];
        for (int k = 0; k < NKERNELS; k++)
            rmx_samples_init(&smp[k]);
        int met = 0;
        size_t reps = repeat(&s, nt, &r, ntimes, max_times, smp, thread_best, &met);
        if (r.corrupt)
            s.a[n / 2] += 1.0;
        int ok = validate(&s, reps);
        for (int k = 0; k < NKERNELS; k++) {
            /* samples and summary exclude the warm-up repetition */
            node_meas m = {.rc = met ? 0 : 1};
            rmx_samples_init(&m.smp);
            for (size_t i = 1; i < smp[k].n; i++)
                rmx_samples_push(&m.smp, smp[k].v[i]);
            rmx_summarize(m.smp.v, m.smp.n, &m.sum);
            if (r.table)
                printf("  %-6s %7d %14.1f %14.1f %14.1f %14.1f %6zu%s\n", names[k], nt, m.sum.max, m.sum.median,
                       m.sum.min, (double)bytes / 1048576.0, m.sum.n, ok ? "" : "  INVALID");
            rmx_json *j = node_record(&r);
            if (j) {
                rmx_json_str(j, "kernel", names[k]);
                rmx_json_int(j, "threads", nt);
                rmx_json_int(j, "array_bytes", (long long)bytes);
                rmx_json_int(j, "array_elements", (long long)n);
                rmx_json_int(j, "bytes_per_element", bytes_per_element[k]);
                rmx_json_int(j, "total_cache_bytes", (long long)total_cache);
                rmx_json_bool(j, "rule_met", total_cache == 0 || bytes >= 4 * total_cache);
                rmx_json_bool(j, "size_given", given);
                rmx_json_int(j, "repetitions", (long long)reps);
                rmx_json_num(j, "first_sample_mbs", smp[k].v[0]);
                rmx_json_num(j, "best_mbs", m.sum.max);
                double per[4096], mean = 0;
                int np_ = nt < 4096 ? nt : 4096;
                for (int i = 0; i < np_; i++) {
                    per[i] = thread_best[(size_t)i * NKERNELS + k];
                    mean += per[i] / np_;
                }
                /* each thread timed by itself (hpcc StarSTREAM style): best per thread, and their mean */
                rmx_json_nums(j, "thread_best_mbs", per, (size_t)np_);
                rmx_json_num(j, "thread_best_mean_mbs", mean);
            }
            node_record_end(&r, "MB/s", &m, ok);
            rmx_samples_free(&smp[k]);
        }
        free(thread_s);
        free(thread_best);
        munmap(s.a, bytes);
        munmap(s.b, bytes);
        munmap(s.c, bytes);
    }
    return node_finish(&r);
}

RMX_SUBCMD("stream", cmd_stream, "STREAM Copy, Scale, Add, Triad bandwidth");
