/* memcopy: memcpy bandwidth vs buffer size (as NIST's memcopy
 * benchmark measured it). The
 * library's memcpy, as applications get it; bandwidth counts the bytes copied
 * once (MB = 10^6 bytes), as the NIST tool did. Every size is checked: the
 * destination must equal the source. */
#include "node_commands.h"
#include "node_util.h"

#include "rmx_args.h"
#include "rmx_stats.h"
#include "rmx_step.h"
#include "rmx_timer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PROG "rmax-node memcopy"

typedef struct {
    char *src, *dst;
    size_t bytes, calls;
} copy_ctx;

static double sample(void *arg)
{
    copy_ctx *c = arg;
    double t0 = rmx_now();
    for (size_t i = 0; i < c->calls; i++) {
        memcpy(c->dst, c->src, c->bytes);
        __asm__ volatile("" : : "r"(c->dst) : "memory"); /* every copy happens */
    }
    double t = rmx_now() - t0;
    return (double)c->bytes * (double)c->calls / t / 1e6;
}

int cmd_memcopy(int argc, char **argv)
{
    const char *json = NULL;
    size_t min_size = 1024, max_size = NODE_UNSET;
    long long per_octave = 4, min_reps = 5, corrupt = 0;
    double budget = 10.0, sample_time = 0.004, target = 0.02;
    const rmx_arg spec[] = {
        {"min-size", RMX_ARG_SIZE, &min_size, "smallest buffer in bytes (default 1K)", 0, 1e18, NULL},
        {"max-size", RMX_ARG_SIZE, &max_size, "largest buffer (default 4x the last-level cache, capped by memory)", 0, 1e18, NULL},
        {"points-per-octave", RMX_ARG_INT, &per_octave, "sizes per doubling (default 4)", 1, 64, NULL},
        {"min-reps", RMX_ARG_INT, &min_reps, "samples per size at least (default 5)", 2, 1e6, NULL},
        {"budget", RMX_ARG_DOUBLE, &budget, "seconds for the whole sweep (default 10)", 0.01, 86400, NULL},
        {"sample-time", RMX_ARG_DOUBLE, &sample_time, "seconds per timed block of copies (default 0.004)", 1e-5, 10, NULL},
        {"target", RMX_ARG_DOUBLE, &target, "stop when the 95% CI half-width is within this fraction of the median (default 0.02)", 1e-4, 1, NULL},
        {"self-test-corrupt", RMX_ARG_FLAG, &corrupt, "testing: spoil one copy so that validation must fail", 0, 0, NULL},
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
    };
    rmx_args_parse(PROG, "memcpy bandwidth vs buffer size.", argc, argv, 2, spec, sizeof spec / sizeof spec[0]);
    node_sweep_range(PROG, min_size, &max_size, 2);
    size_t *sizes;
    size_t nsizes = node_sweep(min_size, max_size, (int)per_octave, 64, &sizes);
    node_out o;
    node_out_open(&o, PROG, json);
    if (o.table)
        printf("# %14s %12s %12s %12s %8s %6s\n", "Bytes", "Median MB/s", "Min MB/s", "Max MB/s", "Calls", "n");
    char *src = NULL, *dst = NULL;
    size_t have = 0, done = 0, last_size = 0;
    double start = rmx_now(), last_cost = 0;
    const char *stopped = "max-size";
    int failed = 0;
    for (size_t si = 0; si < nsizes; si++) {
        size_t bytes = sizes[si];
        if (last_size) {
            double est = fmax(last_cost * (double)bytes / (double)last_size, (double)min_reps * sample_time);
            if (rmx_now() - start + est > budget) {
                stopped = "budget";
                break;
            }
        }
        double t_size = rmx_now();
        if (bytes > have) {
            rmx_step("allocate");
            node_free(src, have);
            node_free(dst, have);
            have = bytes * 2 < max_size ? bytes * 2 : max_size;
            src = node_alloc(PROG, have);
            dst = node_alloc(PROG, have);
            for (size_t i = 0; i < have; i++)
                src[i] = (char)(i * 131 + 7);
        }
        rmx_step("measure");
        copy_ctx c = {src, dst, bytes, 1};
        double t0 = rmx_now();
        memcpy(dst, src, bytes);
        double t1 = rmx_now() - t0;
        c.calls = (size_t)fmax(1.0, sample_time / fmax(t1, 1e-8));
        rmx_repeat_rule rule = node_sweep_rule(min_reps, sample_time, budget / (double)nsizes, target);
        rmx_samples smp;
        rmx_samples_init(&smp);
        int rc = rmx_repeat(sample, &c, &rule, &smp);
        if (corrupt)
            dst[bytes / 2] ^= 1;
        int ok = memcmp(dst, src, bytes) == 0;
        if (!ok)
            failed = 1;
        rmx_summary sum;
        rmx_summarize(smp.v, smp.n, &sum);
        if (o.table)
            printf("  %14zu %12.0f %12.0f %12.0f %8zu %6zu%s\n", bytes, sum.median, sum.min, sum.max, c.calls, sum.n,
                   ok ? "" : "  INVALID");
        if (o.jf) {
            rmx_json *j = &o.j;
            rmx_json_obj_begin(j, NULL);
            rmx_json_str(j, "schema", "rmax.memcopy/1");
            rmx_json_int(j, "bytes", (long long)bytes);
            rmx_json_int(j, "calls_per_sample", (long long)c.calls);
            rmx_json_str(j, "unit", "MB/s");
            node_json_measurement(&o, &smp, &sum, ok, rc == 0);
            rmx_json_obj_end(j);
        }
        rmx_samples_free(&smp);
        last_cost = rmx_now() - t_size;
        last_size = bytes;
        done++;
    }
    if (o.jf) {
        rmx_json_obj_begin(&o.j, NULL);
        rmx_json_str(&o.j, "schema", "rmax.memcopy.sweep/1");
        rmx_json_int(&o.j, "sizes_measured", (long long)done);
        rmx_json_int(&o.j, "sizes_planned", (long long)nsizes);
        rmx_json_int(&o.j, "max_size", (long long)max_size);
        rmx_json_str(&o.j, "stopped_by", stopped);
        rmx_json_num(&o.j, "seconds", rmx_now() - start);
        rmx_json_obj_end(&o.j);
    }
    if (o.table)
        printf("# MB/s (10^6 bytes copied per second): median, min, max of n timed blocks; sweep ended by %s\n", stopped);
    node_free(src, have);
    node_free(dst, have);
    free(sizes);
    node_out_close(&o);
    if (failed)
        fprintf(stderr, PROG ": warning: validation failed: a destination differs from its source\n");
    return 0;
}
