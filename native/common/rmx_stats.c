#include "rmx_stats.h"
#include "rmx_fail.h"
#include "rmx_timer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double rmx_t95(size_t df)
{
    /* Two-sided 95% quantiles for df = 1..30; beyond, the normal limit with a
     * first-order correction (error < 0.1% for df > 30). */
    static const double t[30] = {
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    if (df == 0)
        return INFINITY;
    if (df <= 30)
        return t[df - 1];
    return 1.959964 + 2.37 / (double)df;
}

void rmx_summarize(const double *x, size_t n, rmx_summary *out)
{
    memset(out, 0, sizeof *out);
    out->n = n;
    if (n == 0) {
        out->min = out->max = out->median = out->mean = out->sd = NAN;
        out->ci_lo = out->ci_hi = out->ci_half_rel = NAN;
        return;
    }
    double *s = malloc(n * sizeof *s);
    if (!s) {
        out->min = out->max = out->median = out->mean = out->sd = NAN;
        out->ci_lo = out->ci_hi = out->ci_half_rel = NAN;
        return;
    }
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    out->min = s[0];
    out->max = s[n - 1];
    out->median = (n % 2) ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    /* Welford: stable for samples of similar magnitude (all timings are). */
    double mean = 0.0, m2 = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = s[i] - mean;
        mean += d / (double)(i + 1);
        m2 += d * (s[i] - mean);
    }
    free(s);
    out->mean = mean;
    out->sd = n > 1 ? sqrt(m2 / (double)(n - 1)) : 0.0;
    if (n > 1) {
        double half = rmx_t95(n - 1) * out->sd / sqrt((double)n);
        out->ci_lo = mean - half;
        out->ci_hi = mean + half;
        out->ci_half_rel = out->median != 0.0 ? half / fabs(out->median) : INFINITY;
    } else {
        out->ci_lo = out->ci_hi = mean;
        out->ci_half_rel = INFINITY;
    }
}

void rmx_samples_init(rmx_samples *s)
{
    s->v = NULL;
    s->n = s->cap = 0;
}

void rmx_samples_push(rmx_samples *s, double x)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        s->v = rmx_realloc_or_exit(s->v, cap * sizeof *s->v, "a measurement's samples");
        s->cap = cap;
    }
    s->v[s->n++] = x;
}

void rmx_samples_free(rmx_samples *s)
{
    free(s->v);
    rmx_samples_init(s);
}

rmx_repeat_rule rmx_repeat_default(void)
{
    rmx_repeat_rule r = {1, 5, 1000, 1.0, 0.02, 0};
    return r;
}

static int failed(double v, const rmx_repeat_rule *rule)
{
    return isnan(v) || (v < 0 && !rule->signed_values);
}

int rmx_repeat(rmx_sample_fn fn, void *ctx, const rmx_repeat_rule *rule, rmx_samples *out)
{
    for (size_t i = 0; i < rule->warmup; i++)
        if (failed(fn(ctx), rule))
            return -1;
    double start = rmx_now();
    size_t first = out->n;
    for (;;) {
        double v = fn(ctx);
        if (failed(v, rule))
            return -1;
        rmx_samples_push(out, v);
        size_t taken = out->n - first;
        if (taken < rule->min_reps)
            continue;
        rmx_summary s;
        rmx_summarize(out->v + first, taken, &s);
        if (s.ci_half_rel <= rule->rel_target)
            return 0;
        if (taken >= rule->max_reps)
            return 1;
        if (rule->budget > 0 && rmx_now() - start >= rule->budget)
            return 1;
    }
}
