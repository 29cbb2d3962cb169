/* rmax-net mlat: latency of concurrent pairs (the method of OSU's osu_multi_lat): rank i of the
 * first half ping-pongs with rank i + n/2, every pair at once, each with p2p's blocking
 * ping-pong kernel (every message marked and checked, every byte of one untimed exchange).
 * A pair's latency is its round trip halved on its first rank's clock; a point reports the
 * average over the pairs (OSU's figure) and the slowest pair, medians over the samples. */
#include "p2p.h"

#include "rmx_args.h"
#include "rmx_step.h"
#include "rmx_subcmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_mlat(int argc, char **argv)
{
    const char *json = NULL;
    static size_t default_sizes[] = {0, 8, 1024, 65536};
    rmx_size_list sizes = {default_sizes, sizeof default_sizes / sizeof default_sizes[0]};
    long long max_samples = 200, min_samples = 5;
    double budget = 0.02;
    int validate = 0, corrupt = 0;
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
        {"sizes", RMX_ARG_SIZE_LIST, &sizes, "message sizes", 0, (double)MAX_MESSAGE, NULL},
        {"budget", RMX_ARG_DOUBLE, &budget, "seconds of timed repetitions per size", 0.001, 3600, NULL},
        {"max-samples", RMX_ARG_INT, &max_samples, "most samples per size", 5, 100000, NULL},
        {"min-samples", RMX_ARG_INT, &min_samples, "fewest samples per size (below 5: no warm-up batch)", 2, 100000,
         NULL},
        {"validate", RMX_ARG_FLAG, &validate, "check every byte of every message (slower)", 0, 0, NULL},
        {"self-test-corrupt", RMX_ARG_FLAG, &corrupt, "the second rank of each pair damages what it sends", 0, 0,
         NULL},
    };
    rmx_args_parse(PROG " mlat", "Latency of concurrent pairs (OSU osu_multi_lat).", argc, argv, 2, spec,
                   sizeof spec / sizeof spec[0]);
    size_t largest = net_largest(sizes.v, sizes.n);

    net_run run;
    if (net_start(&argc, &argv, "mlat", 2, 0, &run.me, &run.n))
        return 2;
    if (run.n % 2)
        return net_refuse(run.me, "mlat needs an even number of ranks (pairs), not %d", run.n);
    int half = run.n / 2, first = run.me < half;
    net_require_memory(2 * largest, "the send and receive buffers");
    net_pair p;
    memset(&p, 0, sizeof p);
    p.comm = first ? net_pair_comm(run.me, run.me + half) : net_pair_comm(run.me - half, run.me);
    MPI_Comm_rank(p.comm, &p.me);
    p.window = 1;
    p.validate = validate;
    p.corrupt = corrupt;
    p.tcp = p.udp = -1;
    p.sbuf = net_alloc(largest, "the send buffer");
    p.rbuf = net_alloc(largest, "the receive buffer");
    p.req = malloc(2 * sizeof *p.req);
    const net_p2p_kernel *k = &net_p2p_kernels[0];   /* "mpi": blocking Send/Recv ping-pong */

    net_run_init(&run, "rmax.mlat/1", json);
    net_timing t = net_timing_make(budget, (size_t)max_samples, (size_t)min_samples);
    rmx_json *j = net_run_header(&run, "mlat");
    if (j) {
        rmx_json_int(j, "pairs", half);
        rmx_json_num(j, "budget", budget);
        rmx_json_bool(j, "validate_every_message", validate);
        rmx_json_obj_end(j);
    }
    if (run.table)
        printf("# mlat: %d pair(s)\n# %-10s %16s %16s\n", half, "Size", "Avg latency(us)", "Slowest pair(us)");
    long invalid = 0;
    for (size_t i = 0; i < sizes.n; i++) {
        p.size = sizes.v[i];
        p.bad = 0;
        if (run.me == 0) {
            char step[64];
            snprintf(step, sizeof step, "mlat %zu B", p.size);
            rmx_step(step);
        }
        int bad = net_pair_validate_once(&p, k->fn), any = 0;
        MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        net_measure m;
        memset(&m, 0, sizeof m);
        /* Every rank's clock: both ranks of a pair time the same round trips, so the mean over
         * the ranks is the mean over the pairs and the max the slowest pair. */
        if (!any)
            net_measure_run(MPI_COMM_WORLD, 0, NET_AVG, &t, k->fn, &p, &m);
        int failed = any || m.failed;
        invalid += failed;
        if ((j = net_record(&run, "point"))) {
            rmx_json_int(j, "size", (long long)p.size);
            rmx_json_int(j, "pairs", half);
            net_record_end(&run, !failed, &m, NET_AVG, 2.0);
        }
        if (run.table) {
            rmx_summary a, hi;
            rmx_summarize(m.s[NET_AVG].v, m.s[NET_AVG].n, &a);
            rmx_summarize(m.s[NET_MAX].v, m.s[NET_MAX].n, &hi);
            printf("  %-10zu %16.3f %16.3f%s\n", p.size, a.median / 2 * 1e6, hi.median / 2 * 1e6,
                   failed ? "  INVALID" : "");
            fflush(stdout);
        }
        net_measure_free(&m);
    }
    if ((j = net_run_done(&run))) {
        rmx_json_int(j, "points", (long long)sizes.n);
        rmx_json_int(j, "invalid", invalid);
    }
    MPI_Comm_free(&p.comm);
    return net_run_end(&run);
}

RMX_SUBCMD("mlat", cmd_mlat, "concurrent pairs: ping-pong latency (OSU osu_multi_lat)");
