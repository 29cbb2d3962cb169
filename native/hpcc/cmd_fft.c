/* rmax-hpcc fft: HPC Challenge's FFT, a 1-D complex double transform of n points through
 * FFTW (local forms) and FFTW's MPI interface (MPI form: the vector spread over the ranks).
 *
 * As HPCC: the forward plan is made before the data exist (FFTW_MEASURE may overwrite
 * them; --plan-seconds bounds FFTW's search), one forward transform is timed (the slowest rank's time in the MPI form) and
 * GFLOPS = 5 n log2(n) / seconds / 1e9. Check (HPCC's): the backward transform of the result,
 * divided by n, is compared with the input generated again; with maxerr the largest distance,
 * maxerr / ln(n) / eps must stay below 16. */
#include "hpcc.h"

#include "rmx_args.h"
#include "rmx_step.h"
#include "rmx_subcmd.h"
#include "rmx_timer.h"

#include <fftw3-mpi.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SEED 53

typedef struct {
    double rate, seconds, max_error, error;   /* flop/s; error: maxerr / ln(n) / eps */
    int ok;
} fft_result;

static void fill(fftw_complex *x, ptrdiff_t count, ptrdiff_t first)
{
    for (ptrdiff_t i = 0; i < count; i++) {
        x[i][0] = hc_uniform(SEED, 2 * (uint64_t)(first + i));
        x[i][1] = hc_uniform(SEED, 2 * (uint64_t)(first + i) + 1);
    }
}

/* The largest distance between x / n and the generated input. */
static double distance(const fftw_complex *x, ptrdiff_t count, ptrdiff_t first, double n)
{
    double worst = 0;
    for (ptrdiff_t i = 0; i < count; i++) {
        double re = x[i][0] / n - hc_uniform(SEED, 2 * (uint64_t)(first + i));
        double im = x[i][1] / n - hc_uniform(SEED, 2 * (uint64_t)(first + i) + 1);
        double d = sqrt(re * re + im * im);
        worst = d > worst || d != d ? d : worst;
    }
    return worst;
}

static void judge(fft_result *r, double n)
{
    r->rate = 5.0 * n * log2(n) / r->seconds;
    r->error = r->max_error / log(n) / (DBL_EPSILON / 2);
    r->ok = r->error < HC_THRESHOLD && r->error == r->error;
}

typedef struct {
    long n;
    unsigned flags;
    int corrupt;
} fft_args;

static void local_fft(const void *args, void *result)
{
    const fft_args *arg = args;
    long n = arg->n;
    unsigned flags = arg->flags;
    int corrupt = arg->corrupt;
    fft_result *r = result;
    fftw_complex *in = fftw_alloc_complex((size_t)n), *out = fftw_alloc_complex((size_t)n);
    if (!in || !out)
        hc_fail(1, "cannot allocate two vectors of %ld complex numbers", n);
    fftw_plan fwd = fftw_plan_dft_1d((int)n, in, out, FFTW_FORWARD, flags);
    fftw_plan bwd = fftw_plan_dft_1d((int)n, out, in, FFTW_BACKWARD, FFTW_ESTIMATE);
    if (!fwd || !bwd)
        hc_fail(1, "FFTW cannot plan a transform of %ld points", n);
    fill(in, n, 0);
    double t0 = rmx_now();
    fftw_execute(fwd);
    r->seconds = rmx_now() - t0;
    if (corrupt)
        out[0][0] += 1.0;
    fftw_execute(bwd);
    r->max_error = distance(in, n, 0, (double)n);
    judge(r, (double)n);
    fftw_destroy_plan(fwd);
    fftw_destroy_plan(bwd);
    fftw_free(in);
    fftw_free(out);
}

static void mpi_fft(long n, unsigned flags, int corrupt, fft_result *r)
{
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    ptrdiff_t ni, i0, no, o0, bni, bi0, bno, bo0;
    ptrdiff_t room = fftw_mpi_local_size_1d(n, MPI_COMM_WORLD, FFTW_FORWARD, flags, &ni, &i0, &no, &o0);
    fftw_mpi_local_size_1d(n, MPI_COMM_WORLD, FFTW_BACKWARD, FFTW_ESTIMATE, &bni, &bi0, &bno, &bo0);
    /* The backward transform reads what the forward one wrote, where it wrote it. */
    if (bni != no || bi0 != o0 || bno != ni || bo0 != i0)
        hc_fail(1, "FFTW spreads the forward output and the backward input of %ld points differently", n);
    fftw_complex *x = fftw_alloc_complex((size_t)(room > 0 ? room : 1));
    if (!x)
        hc_fail(1, "cannot allocate %td complex numbers", room);
    fftw_plan fwd = fftw_mpi_plan_dft_1d(n, x, x, MPI_COMM_WORLD, FFTW_FORWARD, flags);
    fftw_plan bwd = fftw_mpi_plan_dft_1d(n, x, x, MPI_COMM_WORLD, FFTW_BACKWARD, FFTW_ESTIMATE);
    if (!fwd || !bwd)
        hc_fail(1, "FFTW cannot plan an MPI transform of %ld points (use a multiple of the ranks squared)", n);
    fill(x, ni, i0);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = rmx_now();
    fftw_execute(fwd);
    r->seconds = hc_max(rmx_now() - t0);
    if (corrupt && me == 0 && no > 0)
        x[0][0] += 1.0;
    fftw_execute(bwd);
    double mine = distance(x, ni, i0, (double)n);
    MPI_Allreduce(&mine, &r->max_error, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    judge(r, (double)n);
    fftw_destroy_plan(fwd);
    fftw_destroy_plan(bwd);
    fftw_free(x);
}

static void point(hc_run *run, const char *form, int ranks, long n, const fft_result *r, int ok, double lo,
                  double hi, int rank)
{
    rmx_json *j = hc_point(run, form, ranks, n, r->rate, r->seconds, ok, "GFLOPS");
    if (!j)
        return;
    rmx_json_num(j, "max_error", r->max_error);
    rmx_json_num(j, "error", r->error);
    rmx_json_num(j, "threshold", HC_THRESHOLD);
    hc_point_end(j, lo, hi, rank);
}

int cmd_fft(int argc, char **argv)
{
    const char *json = NULL, *forms_arg = "single,star,mpi", *plan = "measure";
    long long n = 1 << 20, mpi_n = 0;
    double plan_seconds = 10;
    int corrupt = 0;
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
        {"forms", RMX_ARG_STRING, &forms_arg, "forms to run: single, star, mpi (comma-separated)", 0, 0, NULL},
        {"n", RMX_ARG_INT, &n, "points of each rank's transform in the single and star forms", 8, 1 << 30, NULL},
        {"mpi-n", RMX_ARG_INT, &mpi_n, "points of the MPI form's transform, a multiple of the ranks squared (0: "
         "ranks x --n, rounded down to one)", 0, 1LL << 40, NULL},
        {"plan", RMX_ARG_CHOICE, &plan, "FFTW's planning of the forward transform (HPCC: measure)", 0, 0,
         "measure|estimate|patient"},
        {"plan-seconds", RMX_ARG_DOUBLE, &plan_seconds, "FFTW's time limit for planning one transform (0: none; "
         "its measured planning of an MPI transform can take minutes)", 0, 86400, NULL},
        {"self-test-corrupt", RMX_ARG_FLAG, &corrupt, "damage one point of the forward result: the check must fail", 0,
         0, NULL},
    };
    rmx_args_parse(PROG " fft", "HPC Challenge FFT: 1-D complex transform through FFTW, GFLOPS.", argc, argv, 2, spec,
                   sizeof spec / sizeof spec[0]);
    int forms = hc_forms(forms_arg);
    unsigned flags = strcmp(plan, "estimate") == 0 ? FFTW_ESTIMATE : strcmp(plan, "patient") == 0 ? FFTW_PATIENT
                                                                                                  : FFTW_MEASURE;
    hc_run run;
    hc_start(&argc, &argv, &run, "rmax.fft/1", json);
    long long sq = (long long)run.n * run.n;
    if (!mpi_n)
        mpi_n = n * run.n / sq * sq;
    if (mpi_n < sq || mpi_n % sq)
        return hc_refuse(&run, "--mpi-n: %lld points is not a multiple of %lld (the ranks squared)", mpi_n, sq);
    fftw_mpi_init();
    fftw_set_timelimit(plan_seconds > 0 ? plan_seconds : FFTW_NO_TIMELIMIT);
    rmx_json *j = hc_header(&run, "fft");
    if (j) {
        rmx_json_int(j, "n", n);
        rmx_json_int(j, "mpi_n", mpi_n);
        rmx_json_str(j, "plan", plan);
        rmx_json_num(j, "plan_seconds", plan_seconds);
        rmx_json_str(j, "fftw", fftw_version);
        rmx_json_bool(j, "self_test_corrupt", corrupt);
        rmx_json_obj_end(j);
    }
    if (run.table)
        printf("# FFT: 1-D complex double, GFLOPS = 5 n log2(n) / s; passes with maxerr / ln(n) / eps < 16\n");
    fft_result r;
    const fft_args local = {(long)n, flags, corrupt};
    if (forms & HC_SINGLE) {
        rmx_step("fft single");
        int pick = hc_single(local_fft, &local, &r, sizeof r);
        point(&run, "single", 1, (long)n, &r, r.ok, -1, -1, pick);
    }
    if (forms & HC_STAR) {
        rmx_step("fft star");
        MPI_Barrier(MPI_COMM_WORLD);
        local_fft(&local, &r);
        double lo, mean, hi, err;
        int all_ok;
        hc_star(r.rate, r.ok, &lo, &mean, &hi, &all_ok);
        MPI_Allreduce(&r.max_error, &err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        r.rate = mean;
        r.max_error = err;   /* the worst rank's */
        r.error = err / log((double)n) / (DBL_EPSILON / 2);
        r.seconds = hc_max(r.seconds);
        point(&run, "star", run.n, (long)n, &r, all_ok, lo, hi, -1);
    }
    if (forms & HC_MPI) {
        rmx_step("fft mpi");
        mpi_fft((long)mpi_n, flags, corrupt, &r);
        point(&run, "mpi", run.n, (long)mpi_n, &r, r.ok, -1, -1, -1);
    }
    fftw_mpi_cleanup();
    return hc_finish(&run);
}

RMX_SUBCMD("fft", cmd_fft, "FFT: 1-D complex double transform through FFTW (GFLOPS), single, star and MPI");
