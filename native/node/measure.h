/* The measurement harness of the rmax-node kernels. Every command runs the
 * same sequence: parse its options, refuse bad input, open the output, and for
 * each point calibrate a block to --sample-time, repeat timed blocks under a
 * rule (rmx_repeat), validate the answer, and print a table row and one JSON
 * record; sweeps over sizes stop when the budget would run out. As in
 * likwid-bench, where kernels are data and one harness runs them, a command
 * keeps its kernel and its table (node_kernel) and the sequence lives here. */
#ifndef NODE_MEASURE_H
#define NODE_MEASURE_H

#include <stddef.h>
#include <stdio.h>

#include "rmx_args.h"
#include "rmx_json.h"
#include "rmx_stats.h"

/* What a command is, as data. */
typedef struct {
    const char *prog;    /* "rmax-node NAME", the prefix of its error lines */
    const char *schema;  /* of every point's record, "rmax.NAME/1" */
    const char *about;   /* --help's summary */
    const char *header;  /* the table's column line */
    const char *footer;  /* the table's closing note: what the numbers are */
    const char *invalid; /* the warning when a validation failed: what differed */
} node_kernel;

/* One run of a command. The command sets the defaults of the shared options
 * (budget, sample_time, target) before node_parse. */
typedef struct {
    const node_kernel *k;
    double budget, sample_time, target;
    long long corrupt; /* --self-test-corrupt: spoil one answer, so that validation must fail */
    const char *json;
    FILE *jf;          /* NULL: no JSON */
    rmx_json j;
    int table;         /* a table on stdout (unless the JSON goes there) */
    int failed;        /* some validation failed */
    int check_only;    /* --check-args: refuse bad input as a run would, then exit 0 without measuring */
    /* a sweep over sizes: what ended it (NULL: not a sweep), its start and
     * points, and the last point's size and cost, to estimate the next one's */
    const char *stopped;
    double start, last_cost, last_mark;
    size_t planned, done, last_size;
} node_run;

/* The largest size any command takes: rmax.sizes.MAX_BYTES (1 PiB), beyond any memory. */
#define NODE_MAX_BYTES 1125899906842624.0
/* Sample counts at most: the net kernels' --max-samples bound. */
#define NODE_MAX_SAMPLES 1e5

/* The options every command has, placed by the command where --help lists them. Defaults are
 * the values their variables hold before parsing (--help and --describe show them), not help text. */
#define NODE_ARG_TARGET(r)                                                                                          \
    {"target", RMX_ARG_DOUBLE, &(r)->target,                                                                        \
     "stop when the 95% CI half-width is within this fraction of the median", 1e-4, 1, NULL}
#define NODE_ARG_CORRUPT(r, what)                                                                                   \
    {"self-test-corrupt", RMX_ARG_FLAG, &(r)->corrupt, "testing: " what " so that validation must fail", 0, 0, NULL}
#define NODE_ARG_JSON(r) {"json", RMX_ARG_STRING, &(r)->json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL}
/* The size range of a sweep over working sets (cpurate, memcopy, memlat); `what` is one buffer. */
#define NODE_ARGS_SIZES(min, max, per_octave, what)                                                                 \
    {"min-size", RMX_ARG_SIZE, (min), "smallest " what " in bytes", 1, NODE_MAX_BYTES, NULL},                        \
    {"max-size", RMX_ARG_SIZE, (max), "largest " what " (default 4x the last-level cache, capped by memory)", 1,      \
     NODE_MAX_BYTES, NULL},                                                                                          \
    {"points-per-octave", RMX_ARG_INT, (per_octave), "sizes per doubling", 1, 64, NULL}

/* Parses the command's options. "--check-args" (any command, not in --help) makes
 * node_open exit 0: the input is refused or accepted exactly as a run would, so
 * that a caller can refuse it before it stores a run (rmax.bench.node_kernel). */
void node_parse(node_run *r, int argc, char **argv, const rmx_arg *spec, size_t nspec);

/* Opens the JSON output and prints the table's header: called once the command
 * has refused bad input, so that a refused run writes nothing (with --check-args
 * it exits 0 here instead). */
void node_open(node_run *r);

/* Prints the footer (and what ended a sweep), closes the output, and warns on
 * stderr when a validation failed. A wrong answer is a finished run with
 * validated=false (reported "invalid" upstream, as HPL's FAILED residual), not a
 * crash: the status is 0. */
int node_finish(node_run *r);

/* Timed blocks of `unit`s (calls, passes) that last about sample_time, given
 * that one unit took `one` seconds: at least one. */
size_t node_blocks(const node_run *r, double one);

/* One point's samples, their summary, and rmx_repeat's status. */
typedef struct {
    rmx_samples smp;
    rmx_summary sum;
    int rc;
} node_meas;

void node_measure(rmx_sample_fn fn, void *ctx, const rmx_repeat_rule *rule, node_meas *m);

/* A repetition rule with the run's --target (max_reps 0: rmx_repeat's default). */
rmx_repeat_rule node_rule(const node_run *r, size_t warmup, size_t min_reps, size_t max_reps, double budget);

/* The repetition rule of one point of a sweep: one warm-up, at least min_reps and
 * at most 50 samples, and the smaller of 10 x min_reps samples' time and the
 * point's `share` of the sweep's budget. */
rmx_repeat_rule node_sweep_rule(const node_run *r, long long min_reps, double share);

/* A point's record: node_record writes its schema and gives the writer for the
 * command's own members (NULL when there is no JSON); node_record_end adds the
 * unit and the measurement (validated, target_met, samples, summary; when the
 * kernel itself failed, no samples and a null summary), frees the samples and
 * remembers a failed validation. Call node_record_end in any case. */
rmx_json *node_record(node_run *r);
void node_record_end(node_run *r, const char *unit, node_meas *m, int validated);

/* Sweeps over sizes. node_sweep_begin: `planned` points to come.
 * node_sweep_fits: whether `estimate` seconds more stay within the budget (the
 * first point always does); when not, the budget ended the sweep.
 * node_sweep_scaled: the last point's cost scaled to `bytes` (0 before the first).
 * node_sweep_done: a point of `bytes` is measured; its cost is the time since
 * the previous point. */
void node_sweep_begin(node_run *r, size_t planned);
int node_sweep_fits(node_run *r, double estimate);
double node_sweep_scaled(const node_run *r, size_t bytes);
void node_sweep_done(node_run *r, size_t bytes);

/* The sweep's closing record: schema, NOUN_measured, NOUN_planned and max_size,
 * then the command's own members, then node_sweep_record_end adds stopped_by and
 * the seconds the sweep took. NULL when there is no JSON. */
rmx_json *node_sweep_record(node_run *r, const char *schema, const char *noun, size_t max_size);
void node_sweep_record_end(node_run *r);

#endif
