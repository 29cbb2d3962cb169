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

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const node_kernel K = {
    "rmax-node oslat", "rmax.oslat/1", "Operating-system latencies, lmbench style (loopback only for the network).",
    "# Test                                 Median          Min          Max Unit       Ops     n",
    "microseconds per operation (round trips for pipe, unix, udp, tcp), MB/s = 10^6 bytes/s: median, min, max of n "
    "timed batches",
    "an operation gave a wrong answer",
};

static const char *const ALL = "null,stat,open-close,sig-install,sig-catch,fork-exit,fork-exec,pipe,unix,ctxsw,"
                               "udp,tcp,tcp-connect,tcp-bw,cacheline";

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
