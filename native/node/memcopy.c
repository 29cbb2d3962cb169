/* memcopy: memcpy bandwidth vs buffer size, as NIST's memcopy benchmark
 * measured it: the library's memcpy, as applications get it; bandwidth counts
 * the bytes copied once (MB = 10^6 bytes), as the NIST tool did. Every size is
 * checked: the destination must equal the source. */
#include "measure.h"
#include "node_util.h"

#include "rmx_step.h"
#include "rmx_subcmd.h"
#include "rmx_timer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const node_kernel K = {
    "rmax-node memcopy", "rmax.memcopy/1", "memcpy bandwidth vs buffer size.",
    "#          Bytes  Median MB/s     Min MB/s     Max MB/s    Calls      n",
    "MB/s (10^6 bytes copied per second): median, min, max of n timed blocks",
    "a destination differs from its source",
};

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
    node_run r = {&K, .budget = 10.0, .sample_time = 0.004, .target = 0.02};
    size_t min_size = 1024, max_size = NODE_UNSET;
    long long per_octave = 4, min_reps = 5;
    const rmx_arg spec[] = {
        NODE_ARGS_SIZES(&min_size, &max_size, &per_octave, "buffer"),
        {"min-reps", RMX_ARG_INT, &min_reps, "samples per size at least", 2, NODE_MAX_SAMPLES, NULL},
        {"budget", RMX_ARG_DOUBLE, &r.budget, "seconds for the whole sweep", 0.01, 86400, NULL},
        {"sample-time", RMX_ARG_DOUBLE, &r.sample_time, "seconds per timed block of copies", 1e-5, 10, NULL},
        NODE_ARG_TARGET(&r),
        NODE_ARG_CORRUPT(&r, "spoil one copy"),
        NODE_ARG_JSON(&r),
    };
    node_parse(&r, argc, argv, spec, sizeof spec / sizeof spec[0]);
    node_sweep_range(K.prog, min_size, &max_size, 2);
    size_t *sizes;
    size_t nsizes = node_sweep(min_size, max_size, (int)per_octave, 64, &sizes);
    node_open(&r);
    char *src = NULL, *dst = NULL;
    size_t have = 0;
    node_sweep_begin(&r, nsizes);
    for (size_t si = 0; si < nsizes; si++) {
        size_t bytes = sizes[si];
        if (!node_sweep_fits(&r, fmax(node_sweep_scaled(&r, bytes), (double)min_reps * r.sample_time)))
            break;
        if (bytes > have) {
            rmx_step("allocate");
            node_free(src, have);
            node_free(dst, have);
            have = bytes * 2 < max_size ? bytes * 2 : max_size;
            src = node_alloc(K.prog, have);
            dst = node_alloc(K.prog, have);
            for (size_t i = 0; i < have; i++)
                src[i] = (char)(i * 131 + 7);
        }
        rmx_step("measure");
        copy_ctx c = {src, dst, bytes, 1};
        double t0 = rmx_now();
        memcpy(dst, src, bytes);
        c.calls = node_blocks(&r, rmx_now() - t0);
        rmx_repeat_rule rule = node_sweep_rule(&r, min_reps, r.budget / (double)nsizes);
        node_meas m;
        node_measure(sample, &c, &rule, &m);
        if (r.corrupt)
            dst[bytes / 2] ^= 1;
        int ok = memcmp(dst, src, bytes) == 0;
        if (r.table)
            printf("  %14zu %12.0f %12.0f %12.0f %8zu %6zu%s\n", bytes, m.sum.median, m.sum.min, m.sum.max, c.calls,
                   m.sum.n, ok ? "" : "  INVALID");
        rmx_json *j = node_record(&r);
        if (j) {
            rmx_json_int(j, "bytes", (long long)bytes);
            rmx_json_int(j, "calls_per_sample", (long long)c.calls);
        }
        node_record_end(&r, "MB/s", &m, ok);
        node_sweep_done(&r, bytes);
    }
    if (node_sweep_record(&r, "rmax.memcopy.sweep/1", "sizes", max_size))
        node_sweep_record_end(&r);
    node_free(src, have);
    node_free(dst, have);
    free(sizes);
    return node_finish(&r);
}

RMX_SUBCMD("memcopy", cmd_memcopy, "memcpy bandwidth vs buffer size");
