/* oslat's harness, which every test file calls (oslat.h): pinning, child processes, and timing a
 * test's batches into one record; the driver that picks the tests is oslat.c. */
#include "oslat.h"

#include "rmx_step.h"
#include "rmx_timer.h"

#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int oslat_pin(int cpu)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(0, sizeof one, &one);
}

int oslat_spawn(int cpu, void (*fn)(void *), void *arg)
{
    fflush(NULL); /* the child must not write our buffered output a second time */
    int pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the measuring process */
        if (oslat_pin(cpu) != 0)
            _exit(1); /* the parent's operation then fails: no figure from an unpinned peer */
        fn(arg);
        _exit(0);
    }
    return pid;
}

void oslat_not_measured(oslat_env *e, const char *test, const char *label, const char *why)
{
    if (e->r->table)
        printf("  %-30s not measured: %s\n", label, why);
    if (e->r->jf) {
        rmx_json_obj_begin(&e->r->j, NULL);
        rmx_json_str(&e->r->j, "schema", "rmax.oslat.not_measured/1");
        rmx_json_str(&e->r->j, "test", test);
        rmx_json_str(&e->r->j, "label", label);
        rmx_json_str(&e->r->j, "why", why);
        rmx_json_obj_end(&e->r->j);
    }
}

void oslat_reap(int pid)
{
    if (pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
}

typedef struct {
    oslat_op op;
    void *ctx;
    size_t n;
    double bytes_per_op, events_per_op;
    int bad;
} batch;

static double one_batch(void *arg)
{
    batch *b = arg;
    double t0 = rmx_now();
    int rc = b->op(b->ctx, b->n);
    double t = rmx_now() - t0;
    if (rc != 0)
        b->bad = 1;
    if (b->bytes_per_op > 0)
        return b->bytes_per_op * (double)b->n / t / 1e6;
    /* as measured, the overhead included: a sample is a time, never a difference that noise can
     * take below zero; the record gives the overhead, and its reader subtracts it from the summary */
    return t / ((double)b->n * b->events_per_op) * 1e6;
}

void oslat_measure(oslat_env *e, const char *test, const char *label, oslat_op op, void *ctx, double bytes_per_op,
                   double events_per_op, double overhead_us, double overhead_spread_us, oslat_extra extra)
{
    rmx_step(label);
    batch b = {op, ctx, 1, bytes_per_op, events_per_op, 0};
    /* warm up first (peers just forked are not yet scheduled, caches are cold), then
     * calibrate: grow the batch until it lasts about sample_time */
    double w0 = rmx_now();
    for (int i = 0; i < 3 && rmx_now() - w0 < e->budget / 8; i++)
        if (op(ctx, 1) != 0)
            b.bad = 1;
    for (;;) {
        double t0 = rmx_now();
        if (op(ctx, b.n) != 0)
            b.bad = 1;
        double t = rmx_now() - t0;
        if (t >= e->r->sample_time / 2 || b.n >= ((size_t)1 << 30) || t >= e->budget / 8)
            break;
        b.n = t > 0 ? (size_t)fmax((double)b.n * 2, (double)b.n * e->r->sample_time / t) : b.n * 8;
    }
    rmx_repeat_rule rule = node_rule(e->r, 1, 5, 0, e->budget);
    node_meas m;
    node_measure(one_batch, &b, &rule, &m);
    const char *unit = bytes_per_op > 0 ? "MB/s" : "us";
    double less = isnan(overhead_us) ? 0 : overhead_us; /* the table shows the derived figure */
    if (e->r->table)
        printf("  %-30s %12.3f %12.3f %12.3f %-5s %8zu %5zu%s\n", label, m.sum.median - less, m.sum.min - less,
               m.sum.max - less, unit, b.n, m.sum.n, b.bad ? "  INVALID" : "");
    rmx_json *j = node_record(e->r);
    if (j) {
        rmx_json_str(j, "test", test);
        rmx_json_str(j, "label", label);
        rmx_json_int(j, "ops_per_sample", (long long)b.n);
        if (!isnan(overhead_us)) {
            rmx_json_num(j, "overhead_us", overhead_us);
            double timer = rmx_timer_resolution() * 1e6 / ((double)b.n * events_per_op);
            rmx_json_num(j, "resolution_us", fmax(overhead_spread_us, timer));
        }
        double cpus[2];
        size_t nc = 0;
        for (int k = 0; k < 2; k++)
            if (e->placed[k] >= 0)
                cpus[nc++] = e->placed[k];
        rmx_json_nums(j, "cpus", cpus, nc);
        if (extra)
            extra(ctx, j);
    }
    node_record_end(e->r, unit, &m, !b.bad);
}
