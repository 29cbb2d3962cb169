/* Unit tests of native/common, run by tests/test_native.py. Prints one line per
 * check and "N passed, M failed"; exit status 1 if anything failed. */
#include "rmx_args.h"
#include "rmx_fail.h"
#include "rmx_json.h"
#include "rmx_stats.h"
#include "rmx_step.h"
#include "rmx_threads.h"
#include "rmx_timer.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int passed, failed;

#define CHECK(cond, what)                                        \
    do {                                                         \
        if (cond) {                                              \
            passed++;                                            \
        } else {                                                 \
            failed++;                                            \
            printf("FAIL %s:%d %s\n", __FILE__, __LINE__, what); \
        }                                                        \
    } while (0)

static int near(double a, double b, double tol) { return fabs(a - b) <= tol; }

static void test_summary(void)
{
    const double x[] = {4, 1, 3, 2, 5};
    rmx_summary s;
    rmx_summarize(x, 5, &s);
    CHECK(s.n == 5, "n");
    CHECK(s.min == 1 && s.max == 5, "min/max");
    CHECK(s.median == 3, "odd median");
    CHECK(near(s.mean, 3.0, 1e-12), "mean");
    CHECK(near(s.sd, sqrt(2.5), 1e-12), "sample sd");
    /* half-width = t(4) * sd / sqrt(5) = 2.776 * 1.5811 / 2.2361 */
    CHECK(near(s.ci_hi - s.mean, 2.776 * sqrt(2.5) / sqrt(5.0), 1e-9), "ci half-width");
    CHECK(near(s.ci_half_rel, (s.ci_hi - s.mean) / 3.0, 1e-12), "relative half-width");
    CHECK(x[0] == 4, "input untouched");

    const double y[] = {2, 1, 4, 3};
    rmx_summarize(y, 4, &s);
    CHECK(s.median == 2.5, "even median");

    rmx_summarize(y, 1, &s);
    CHECK(s.sd == 0 && isinf(s.ci_half_rel), "single sample");
    rmx_summarize(y, 0, &s);
    CHECK(isnan(s.mean), "empty");
    CHECK(near(rmx_t95(1), 12.706, 1e-9) && near(rmx_t95(1000), 1.962, 1e-3), "t quantiles");
}

static double constant_sample(void *ctx)
{
    int *calls = ctx;
    ++*calls;
    return 1.0;
}

static double noisy_sample(void *ctx)
{
    int *calls = ctx;
    ++*calls;
    return (*calls % 2) ? 1.0 : 2.0; /* never converges to 2% */
}

static double failing_sample(void *ctx)
{
    (void)ctx;
    return -1.0;
}

static double difference_sample(void *ctx)
{
    int *calls = ctx;
    ++*calls;
    return (*calls % 2) ? -0.25 : 0.5; /* a derived value (lat_ctx's): at times below zero */
}

static double nan_sample(void *ctx)
{
    (void)ctx;
    return NAN;
}

static void test_repeat(void)
{
    rmx_repeat_rule r = rmx_repeat_default();
    rmx_samples s;
    int calls = 0;
    rmx_samples_init(&s);
    CHECK(rmx_repeat(constant_sample, &calls, &r, &s) == 0, "constant samples meet the target");
    CHECK(s.n == r.min_reps && calls == (int)(r.min_reps + r.warmup), "stops at min_reps, warm-up not kept");
    rmx_samples_free(&s);

    r.max_reps = 40;
    r.budget = 0;
    calls = 0;
    CHECK(rmx_repeat(noisy_sample, &calls, &r, &s) == 1, "noisy samples stop at the cap");
    CHECK(s.n == 40, "cap respected");
    rmx_samples_free(&s);
    CHECK(rmx_repeat(failing_sample, NULL, &r, &s) == -1, "failure propagates");
    rmx_samples_free(&s);

    /* differences: a value below zero is a sample, and only NaN a failure */
    CHECK(rmx_repeat(difference_sample, &calls, &r, &s) == -1, "below zero fails by default");
    rmx_samples_free(&s);
    r.signed_values = 1;
    calls = 0;
    CHECK(rmx_repeat(difference_sample, &calls, &r, &s) == 1 && s.n == 40, "signed values are kept");
    rmx_samples_free(&s);
    CHECK(rmx_repeat(nan_sample, NULL, &r, &s) == -1, "NaN is the failure of signed values");
    rmx_samples_free(&s);
}

static void test_sizes(void)
{
    size_t v = 0;
    CHECK(rmx_parse_size("4096", &v) == 0 && v == 4096, "plain");
    CHECK(rmx_parse_size("64K", &v) == 0 && v == 65536, "K");
    CHECK(rmx_parse_size("8MiB", &v) == 0 && v == 8388608, "MiB");
    CHECK(rmx_parse_size("1GB", &v) == 0 && v == 1000000000, "GB");
    CHECK(rmx_parse_size("1.5K", &v) == 0 && v == 1536, "fraction");
    CHECK(rmx_parse_size("-1", &v) != 0, "negative refused");
    CHECK(rmx_parse_size("12Q", &v) != 0, "bad suffix refused");
    CHECK(rmx_parse_size("abc", &v) != 0, "not a number refused");
    CHECK(rmx_parse_size("0.3", &v) != 0, "fractional bytes refused");
}

static void test_json(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    rmx_json j;
    rmx_json_init(&j, f);
    rmx_json_obj_begin(&j, NULL);
    rmx_json_str(&j, "s", "a\"b\\c\n");
    rmx_json_int(&j, "i", -3);
    rmx_json_num(&j, "nan", NAN);
    const double v[] = {1.5, 2};
    rmx_json_nums(&j, "v", v, 2);
    rmx_json_obj_begin(&j, "o");
    rmx_json_bool(&j, "t", 1);
    rmx_json_null(&j, "z");
    rmx_json_obj_end(&j);
    rmx_json_obj_end(&j);
    fclose(f);
    const char *want = "{\"s\":\"a\\\"b\\\\c\\n\",\"i\":-3,\"nan\":null,\"v\":[1.5,2],\"o\":{\"t\":true,\"z\":null}}\n";
    CHECK(strcmp(buf, want) == 0, "json line");
    if (strcmp(buf, want) != 0)
        printf("  got:  %s  want: %s", buf, want);
    free(buf);
}

static void test_timer(void)
{
    double a = rmx_now();
    rmx_spin(0.01);
    double b = rmx_now();
    CHECK(b - a >= 0.01 && b - a < 1.0, "spin lasts what it says");
    CHECK(rmx_timer_resolution() > 0 && rmx_timer_resolution() < 1e-3, "resolution");
}

/* The rank the markers name comes from the first launcher variable set; junk is not a rank. */
static void test_step_rank(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unsetenv(names[i]);
    CHECK(rmx_step_rank() == 0, "no launcher: rank 0");
    setenv("PMI_RANK", "7", 1);
    CHECK(rmx_step_rank() == 7, "MPICH's PMI_RANK");
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    CHECK(rmx_step_rank() == 3, "Open MPI's variable first");
    setenv("OMPI_COMM_WORLD_RANK", "3x", 1);
    CHECK(rmx_step_rank() == 7, "junk skipped");
    CHECK(rmx_step_host()[0] != '\0', "host name");
}

/* A failure line names the program, the launcher's rank, the host and the message, on one line. */
static void test_fail_line(void)
{
    setenv("OMPI_COMM_WORLD_RANK", "5", 1);
    FILE *tmp = tmpfile();
    fflush(stderr);
    const int saved = dup(STDERR_FILENO);
    dup2(fileno(tmp), STDERR_FILENO);
    rmx_fail_line("prog", "cannot allocate %zu bytes for %s", (size_t)42, "the plan");
    dup2(saved, STDERR_FILENO);
    close(saved);
    char got[512] = "", want[512];
    rewind(tmp);
    size_t n = fread(got, 1, sizeof got - 1, tmp);
    got[n] = '\0';
    fclose(tmp);
    snprintf(want, sizeof want, "prog: error: rank 5 on host %s: cannot allocate 42 bytes for the plan\n",
             rmx_step_host());
    CHECK(strcmp(got, want) == 0, "failure line");
    unsetenv("OMPI_COMM_WORLD_RANK");
}

static int where_thread0_ran(void *ctx, int tid, int nthreads)
{
    (void)nthreads;
    if (tid == 0)
        *(int *)ctx = sched_getcpu();
    return 0;
}

/* RMAX_CPU_OFFSET moves where a measurement's first thread is pinned (nodes of one machine each
 * start from their own CPU), and the caller's own affinity is given back afterwards. */
static void test_thread_offset(void)
{
    cpu_set_t before, after;
    CHECK(sched_getaffinity(0, sizeof before, &before) == 0, "affinity readable");
    int cpu0 = -1, cpu1 = -1;
    unsetenv("RMAX_CPU_OFFSET");
    CHECK(rmx_run_threads(where_thread0_ran, &cpu0, 1) >= 0, "one thread runs");
    setenv("RMAX_CPU_OFFSET", "1", 1);
    CHECK(rmx_run_threads(where_thread0_ran, &cpu1, 1) >= 0, "one thread runs at offset 1");
    unsetenv("RMAX_CPU_OFFSET");
    CHECK(cpu0 >= 0 && cpu1 >= 0, "thread 0 saw its CPU");
    if (rmx_cpus_allowed() > 1)
        CHECK(cpu0 != cpu1, "offset 1 starts on another CPU");
    CHECK(sched_getaffinity(0, sizeof after, &after) == 0 && CPU_EQUAL(&before, &after), "affinity restored");
}

int main(void)
{
    test_thread_offset();
    test_summary();
    test_step_rank();
    test_fail_line();
    test_repeat();
    test_sizes();
    test_json();
    test_timer();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
