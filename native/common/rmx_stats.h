/* Summary statistics and the adaptive repetition rule used by every kernel
 * (warm up, repeat until the 95% CI half-width is within a relative target of
 * the median or the time budget ends, keep the raw samples: Hoefler and Belli,
 * "Scientific Benchmarking of Parallel Computing Systems", SC'15). */
#ifndef RMX_STATS_H
#define RMX_STATS_H

#include <stddef.h>

typedef struct {
    size_t n;
    double min, max, median, mean, sd;
    double ci_lo, ci_hi;   /* 95% confidence interval of the mean (Student t) */
    double ci_half_rel;    /* CI half-width divided by the median (inf when n < 2) */
} rmx_summary;

/* Summarise n samples (the array is not modified). n == 0 gives all-NaN fields. */
void rmx_summarize(const double *x, size_t n, rmx_summary *out);

/* Two-sided 95% quantile of Student's t with df degrees of freedom. */
double rmx_t95(size_t df);

/* A growable array of samples. */
typedef struct {
    double *v;
    size_t n, cap;
} rmx_samples;

void rmx_samples_init(rmx_samples *s);
void rmx_samples_push(rmx_samples *s, double x);
void rmx_samples_free(rmx_samples *s);

/* When to stop repeating a measurement. */
typedef struct {
    size_t warmup;       /* untimed (discarded) repetitions first */
    size_t min_reps;     /* never fewer timed repetitions */
    size_t max_reps;     /* never more */
    double budget;       /* seconds for the timed repetitions (<= 0: no limit) */
    double rel_target;   /* stop when ci_half_rel <= this (default 0.02) */
    int signed_values;   /* 1: values are differences and may be zero or negative; NaN is the failure */
} rmx_repeat_rule;

/* Defaults: warmup 1, min 5, max 1000, budget 1 s, target 2%. */
rmx_repeat_rule rmx_repeat_default(void);

/* One repetition: returns the measured value (seconds, or a rate) or a
 * negative number on failure (NaN where the rule has signed_values; the loop
 * stops and rmx_repeat returns -1). */
typedef double (*rmx_sample_fn)(void *ctx);

/* Runs fn under the rule, appending each timed value to out.
 * Returns 0 when the target was met, 1 when the budget or max_reps ended it
 * first, -1 when fn failed. */
int rmx_repeat(rmx_sample_fn fn, void *ctx, const rmx_repeat_rule *rule, rmx_samples *out);

#endif
