/* oslat: the driver. Tests run in lmbench's order; the budget is shared evenly
 * among the measurements; a test whose answer is wrong is reported with
 * validated=false (and the run marked invalid upstream). Network tests use the
 * loopback interface (127.0.0.1) only. Every process is pinned to a named CPU
 * of those the run may use, and each record says which: unpinned, the
 * scheduler's choice of placement (same core, other core, migrating) decides a
 * round trip's cost, and repeated runs disagree by up to 10x. */
#include "oslat.h"

#include "rmx_step.h"
#include "rmx_subcmd.h"
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

static const node_kernel K = {
    "rmax-node oslat", "rmax.oslat/1", "Operating-system latencies, lmbench style (loopback only for the network).",
    "# Test                                 Median          Min          Max Unit       Ops     n",
    "microseconds per operation (round trips for pipe, unix, udp, tcp), MB/s = 10^6 bytes/s: median, min, max of n "
    "timed batches",
    "an operation gave a wrong answer",
};

static const char *const ALL = "null,stat,open-close,sig-install,sig-catch,fork-exit,fork-exec,pipe,unix,ctxsw,"
                               "udp,tcp,tcp-connect,tcp-bw,cacheline";

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

static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

int cmd_oslat(int argc, char **argv)
{
    node_run r = {&K, .budget = 25.0, .sample_time = 0.002, .target = 0.02};
    const char *tests = ALL;
    const rmx_arg spec[] = {
        {"tests", RMX_ARG_STRING, &tests, "comma-separated tests", 0, 0, NULL},
        {"budget", RMX_ARG_DOUBLE, &r.budget, "seconds for all the tests together", 0.01, 86400, NULL},
        {"sample-time", RMX_ARG_DOUBLE, &r.sample_time, "seconds per timed batch", 1e-5, 10, NULL},
        NODE_ARG_TARGET(&r),
        NODE_ARG_JSON(&r),
    };
    node_parse(&r, argc, argv, spec, sizeof spec / sizeof spec[0]);
    /* refuse unknown test names before measuring anything */
    char *copy = strdup(tests);
    int count = 0;
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (!listed(ALL, t))
            rmx_die(2, K.prog, "--tests: unknown test '%s' (known: %s)", t, ALL);
        count += strcmp(t, "ctxsw") == 0 ? 9 : listed("pipe,unix,udp,tcp", t) ? 2 : 1; /* 2: on 2 CPUs, on 1 */
    }
    free(copy);
    if (count == 0)
        rmx_die(2, K.prog, "--tests: no test given");
    signal(SIGPIPE, SIG_IGN); /* a dead peer is an error return, not the end of the program */
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        rmx_die(1, K.prog, "cannot read the CPUs this process may run on (sched_getaffinity)");
    oslat_env e = {&r, r.budget / count, -1, -1, {-1, -1}};
    for (int c = 0; c < CPU_SETSIZE && e.cpu_b < 0; c++)
        if (CPU_ISSET(c, &allowed))
            *(e.cpu_a < 0 ? &e.cpu_a : &e.cpu_b) = c;
    if (e.cpu_a < 0 || oslat_pin(e.cpu_a) != 0)
        rmx_die(1, K.prog, "cannot pin to an allowed CPU");
    e.placed[0] = e.cpu_a; /* single-process tests: on the first allowed CPU */
    node_open(&r);
    if (listed(tests, "null")) oslat_null(&e);
    if (listed(tests, "stat")) oslat_stat(&e);
    if (listed(tests, "open-close")) oslat_open_close(&e);
    if (listed(tests, "sig-install")) oslat_sig_install(&e);
    if (listed(tests, "sig-catch")) oslat_sig_catch(&e);
    if (listed(tests, "fork-exit")) oslat_fork_exit(&e);
    if (listed(tests, "fork-exec")) oslat_fork_exec(&e);
    if (listed(tests, "pipe")) oslat_pipe(&e);
    if (listed(tests, "unix")) oslat_unix(&e);
    if (listed(tests, "ctxsw")) {
        static const int procs[] = {2, 8, 16};
        static const size_t ws[] = {0, 16 * 1024, 64 * 1024};
        for (int p = 0; p < 3; p++)
            for (int w = 0; w < 3; w++)
                oslat_ctxsw(&e, procs[p], ws[w]);
    }
    if (listed(tests, "udp")) oslat_udp(&e);
    if (listed(tests, "tcp")) oslat_tcp(&e);
    if (listed(tests, "tcp-connect")) oslat_tcp_connect(&e);
    if (listed(tests, "tcp-bw")) oslat_tcp_bw(&e);
    if (listed(tests, "cacheline")) oslat_cacheline(&e);
    return node_finish(&r);
}

RMX_SUBCMD("oslat", cmd_oslat, "operating-system latencies, lmbench style");
