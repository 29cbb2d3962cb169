/* rmax-net bisect: bisection bandwidth. The ranks are split into two random
 * halves; every rank of the first half streams to its partner in the second
 * (OSU's window-and-acknowledge stream), all pairs at once, for several
 * random bisections (the Helix cluster study measured its halves the same way).
 * Aggregate bandwidth = pairs x window x size / the slowest sender's time.
 *
 * Random halves rarely put every pair across the trunks between switches; with
 * --groups (hosts per switch) the cut between the groups is measured first: the
 * ranks ordered switch by switch, the first half sending to the second, so as
 * many pairs as the group sizes allow cross the trunks (the worst cut). */
#include "p2p.h"

#include "rmx_args.h"
#include "rmx_step.h"
#include "rmx_subcmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    net_pair p;
    int active;
    double own_time;  /* this rank's time over all timed batches, for its pair's bandwidth */
    long own_ops;
} bisect_ctx;

static double bisect_batch(void *ctx, long iters)
{
    bisect_ctx *b = ctx;
    if (!b->active)
        return 0.0;
    double el = net_p2p_kernels[2].fn(&b->p, iters);  /* mpi-stream */
    if (el > 0) {
        b->own_time += el;
        b->own_ops += iters;
    }
    return el;
}

int cmd_bisect(int argc, char **argv)
{
    const char *json = NULL, *groups = NULL;
    size_t size = 1 << 20;
    long long window = 16, cuts = 5, seed = 1, max_samples = 50, min_samples = 5;
    double budget = 0.05;
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
        {"size", RMX_ARG_SIZE, &size, "message size", 1, (double)MAX_MESSAGE, NULL},
        {"window", RMX_ARG_INT, &window, "messages in flight per pair", 1, 1024, NULL},
        {"bisections", RMX_ARG_INT, &cuts, "random bisections", 1, 10000, NULL},
        {"seed", RMX_ARG_INT, &seed, "seed of the random bisections", 1, 1e18, NULL},
        {"budget", RMX_ARG_DOUBLE, &budget, "seconds of timed repetitions per bisection", 0.001, 3600, NULL},
        {"max-samples", RMX_ARG_INT, &max_samples, "most samples per bisection", 5, 100000, NULL},
        {"min-samples", RMX_ARG_INT, &min_samples,
         "fewest samples per measurement (below 5: no separate warm-up batch)", 2, 100000, NULL},
        {"groups", RMX_ARG_STRING, &groups,
         "hosts per switch, 'h1,h2;h3,h4': measure the cut between the groups too", 0, 0, NULL},
    };
    rmx_args_parse(PROG " bisect", "Bisection bandwidth over random bisections.", argc, argv, 2, spec,
                   sizeof spec / sizeof spec[0]);
    net_run run;
    if (net_start(&argc, &argv, "bisect", 2, 0, &run.me, &run.n))
        return 2;
    int me = run.me, n = run.n;
    net_require_memory(2 * size, "the send and receive buffers");
    bisect_ctx b;
    memset(&b, 0, sizeof b);
    b.p.sbuf = net_alloc(size, "the send buffer");
    b.p.rbuf = net_alloc(size, "the receive buffer");
    b.p.req = malloc(2 * (size_t)window * sizeof *b.p.req);
    b.p.size = size;
    b.p.window = (int)window;
    b.p.tcp = b.p.udp = -1;
    net_run_init(&run, "rmax.bisect/1", json);
    rmx_json *j = net_run_header(&run, "bisect");
    if (j) {
        rmx_json_int(j, "size", (long long)size);
        rmx_json_int(j, "window", window);
        rmx_json_int(j, "bisections", cuts);
        rmx_json_obj_end(j);
    }
    if (run.table)
        printf("# %-10s %6s %22s %18s\n", "Bisection", "Pairs", "Aggregate (MB/s)", "Slowest pair (MB/s)");
    net_timing t = net_timing_make(budget, (size_t)max_samples, (size_t)min_samples);
    uint64_t state = (uint64_t)seed * 0x9e3779b97f4a7c15ULL + 11;
    int half = n / 2, *perm = malloc((size_t)n * sizeof *perm);
    int *order = malloc((size_t)n * sizeof *order), *group_of = malloc((size_t)n * sizeof *group_of);
    double *pair_bw = malloc((size_t)n * sizeof *pair_bw);
    /* the cut between the switch groups, when the ranks span two or more of them */
    int group_cut = me == 0 && groups && net_group_order(groups, run.hosts, n, order, group_of) >= 2;
    MPI_Bcast(&group_cut, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (long c = group_cut ? -1 : 0; c < cuts; c++) {
        for (int i = 0; i < n; i++)
            perm[i] = c < 0 ? order[i] : i;
        if (me == 0) {
            if (c >= 0)
                net_shuffle(perm, n, &state);
            char step[48];
            snprintf(step, sizeof step, c < 0 ? "bisection between switch groups" : "bisection %ld", c + 1);
            rmx_step(step);
        }
        MPI_Bcast(perm, n, MPI_INT, 0, MPI_COMM_WORLD);
        int a = -1, bb = -1;  /* my pair: sender a, receiver bb */
        for (int i = 0; i < half; i++)
            if (perm[i] == me || perm[i + half] == me) {
                a = perm[i];
                bb = perm[i + half];
            }
        MPI_Comm pc = net_pair_comm(a, bb);
        b.active = pc != MPI_COMM_NULL;
        b.own_time = 0;
        b.own_ops = 0;
        int bad = 0;
        if (b.active) {
            b.p.comm = pc;
            b.p.seq = 0;  /* both partners start the pattern sequence together */
            MPI_Comm_rank(pc, &b.p.me);
            bad = net_pair_validate_once(&b.p, net_p2p_kernels[2].fn);
        }
        int anybad = 0;
        MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        net_measure m;
        memset(&m, 0, sizeof m);
        if (!anybad)
            net_measure_run(MPI_COMM_WORLD, 0, NET_MAX, &t, bisect_batch, &b, &m);
        /* each sender's own average, for the per-pair view */
        double mine = (b.active && b.p.me == 0 && b.own_time > 0)
                          ? (double)b.own_ops * (double)window * (double)size / b.own_time
                          : -1.0;
        MPI_Gather(&mine, 1, MPI_DOUBLE, pair_bw, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        int failed = anybad || m.failed;
        if (me == 0) {
            rmx_summary s;
            rmx_summarize(m.s[NET_MAX].v, m.s[NET_MAX].n, &s);
            double agg = s.median > 0 ? (double)half * (double)window * (double)size / s.median : 0;
            double slowest = 0;
            for (int r = 0; r < n; r++)
                if (pair_bw[r] > 0 && (slowest == 0 || pair_bw[r] < slowest))
                    slowest = pair_bw[r];
            if ((j = net_record(&run, "point"))) {
                rmx_json_int(j, "bisection", c + 1);
                rmx_json_str(j, "cut", c < 0 ? "switch groups" : "random");
                rmx_json_arr_begin(j, "pairs");
                for (int i = 0; i < half; i++) {
                    rmx_json_arr_begin(j, NULL);
                    rmx_json_int(j, NULL, perm[i]);
                    rmx_json_int(j, NULL, perm[i + half]);
                    rmx_json_num(j, NULL, pair_bw[perm[i]]);
                    rmx_json_arr_end(j);
                }
                rmx_json_arr_end(j);
                rmx_json_int(j, "bytes_per_op", (long long)half * window * (long long)size);
                net_record_end(&run, !failed, &m, NET_MAX, 1.0);
            }
            if (run.table) {
                printf("  %-10s %6d %22.1f %18.1f%s\n", c < 0 ? "groups" : "random", half, agg / 1e6, slowest / 1e6,
                       failed ? "  INVALID" : "");
                fflush(stdout);
            }
        }
        net_measure_free(&m);
        if (pc != MPI_COMM_NULL)
            MPI_Comm_free(&pc);
    }
    net_run_done(&run);
    free(perm);
    free(order);
    free(group_of);
    free(pair_bw);
    return net_run_end(&run);
}

RMX_SUBCMD("bisect", cmd_bisect, "bisection bandwidth over random bisections");
