/* rmax-net p2p: two ranks, latency and bandwidth vs message size, per layer
 * (MPI blocking, MPI non-blocking, MPI stream, MPI bidirectional, TCP, UDP).
 *
 * Fair-measurement rules enforced here:
 *  - sizes follow NetPIPE's schedule with +-3-byte perturbations;
 *  - each (layer, size) point is first exchanged once untimed with every
 *    byte checked, then timed by the harness (calibrated batches, warm-up,
 *    repeated to a 2% confidence interval or the budget);
 *  - the reported time is per message: a ping-pong's round trip halved
 *    (OSU's latency), a stream's window time divided by the window;
 *  - rank 0's clock is the one that counts: it starts and ends every
 *    operation. */
#include "p2p.h"

#include "rmx_args.h"
#include "rmx_step.h"
#include "rmx_subcmd.h"
#include "rmx_timer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static const net_p2p_kernel *find_kernel(const char *name)
{
    for (size_t k = 0; k < net_p2p_nkernels; k++)
        if (strcmp(net_p2p_kernels[k].name, name) == 0)
            return &net_p2p_kernels[k];
    return NULL;
}

/* Parses "mpi,tcp" into kernel pointers; dies on an unknown name. */
static size_t parse_layers(const char *text, const net_p2p_kernel **out)
{
    size_t n = 0;
    char *copy = strdup(text), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const net_p2p_kernel *k = find_kernel(tok);
        if (!k)
            rmx_die(2, PROG, "--layers: unknown layer '%s' (mpi, mpi-nonblocking, mpi-stream, mpi-bidir, tcp, udp)",
                    tok);
        if (n < net_p2p_nkernels)
            out[n++] = k;
    }
    free(copy);
    if (n == 0)
        rmx_die(2, PROG, "--layers: empty list");
    return n;
}

static int uses_sockets(const net_p2p_kernel **ks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ks[i]->fn == net_tcp_pingpong || ks[i]->fn == net_udp_pingpong)
            return 1;
    return 0;
}

int cmd_p2p(int argc, char **argv)
{
    const char *json = NULL, *layers = "mpi,mpi-nonblocking,mpi-stream,mpi-bidir,tcp,udp";
    rmx_size_list sizes = {NULL, 0};
    size_t min_size = 0, max_size = 8u << 20, offset = 0, window_bytes = 8u << 20;
    long long window = 64, max_samples = 200, min_samples = 5, repeats = 3;
    double budget = 0.05, batch = 0, layer_budget = 120;
    int no_perturb = 0, validate = 0, corrupt = 0, one_buffer = 0;
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
        {"layers", RMX_ARG_STRING, &layers, "comma-separated layers to measure", 0, 0, NULL},
        {"sizes", RMX_ARG_SIZE_LIST, &sizes, "explicit message sizes instead of the schedule", 0,
         (double)MAX_MESSAGE, NULL},
        {"min-size", RMX_ARG_SIZE, &min_size, "smallest size of the schedule", 0, (double)MAX_MESSAGE, NULL},
        {"max-size", RMX_ARG_SIZE, &max_size, "largest size of the schedule", 0, (double)MAX_MESSAGE, NULL},
        {"no-perturb", RMX_ARG_FLAG, &no_perturb, "schedule without the +-3-byte points", 0, 0, NULL},
        {"window", RMX_ARG_INT, &window, "messages in flight for stream and bidirectional", 1, 1024, NULL},
        {"window-bytes", RMX_ARG_SIZE, &window_bytes,
         "at most this many bytes in flight: large messages get a shorter window (0: no bound)", 0,
         (double)((size_t)1 << 40), NULL},
        {"budget", RMX_ARG_DOUBLE, &budget, "seconds of timed repetitions per layer and size", 0.001, 3600, NULL},
        {"max-samples", RMX_ARG_INT, &max_samples, "most samples per layer and size", 5, 100000, NULL},
        {"min-samples", RMX_ARG_INT, &min_samples,
         "fewest samples per layer and size (below 5: no separate warm-up batch)", 2, 100000, NULL},
        {"batch", RMX_ARG_DOUBLE, &batch,
         "seconds one timed batch (one sample) lasts (default: 0.001, shorter for tiny budgets; NetPIPE: 0.25)",
         1e-5, 10, NULL},
        {"layer-budget", RMX_ARG_DOUBLE, &layer_budget,
         "seconds a layer may take in one repeat (0: no limit); past it the point under way ends with the samples "
         "it has and the layer's other sizes are left out of that repeat (a 'cut' record names them)",
         0, 86400, NULL},
        {"repeats", RMX_ARG_INT, &repeats,
         "times the whole schedule is measured, one repeat after the other (each point's spread across repeats "
         "is what one timed run cannot show)",
         1, 1000, NULL},
        {"validate", RMX_ARG_FLAG, &validate, "check every byte of every message (slower)", 0, 0, NULL},
        {"one-buffer", RMX_ARG_FLAG, &one_buffer,
         "ping-pongs send back the buffer just received, as NetPIPE does (its lines are dirty in the sender's cache)",
         0, 0, NULL},
        {"offset", RMX_ARG_SIZE, &offset,
         "bytes past a page boundary where both buffers start (NetPIPE's malloc'ed buffer of a large message lies "
         "16 bytes past one: glibc's chunk header)",
         0, 4095, NULL},
        {"self-test-corrupt", RMX_ARG_FLAG, &corrupt, "rank 1 damages what it sends: validation must fail", 0, 0,
         NULL},
    };
    rmx_args_parse(PROG " p2p", "Point-to-point latency and bandwidth between two ranks, per layer.", argc, argv, 2,
                   spec, sizeof spec / sizeof spec[0]);
    const net_p2p_kernel *ks[16];
    size_t nk = parse_layers(layers, ks);
    size_t *sz = sizes.v, nsz = sizes.n;
    if (!sz) {
        if (min_size > max_size)
            rmx_die(2, PROG, "--min-size is larger than --max-size");
        nsz = net_schedule(min_size, max_size, !no_perturb, &sz);
    }
    size_t largest = net_largest(sz, nsz);

    net_run run;
    if (net_start(&argc, &argv, "p2p", 2, 2, &run.me, &run.n))
        return 2;
    int rank = run.me;
    net_require_memory(2 * largest, "the send and receive buffers");
    net_pair p;
    memset(&p, 0, sizeof p);
    MPI_Comm_dup(MPI_COMM_WORLD, &p.comm);
    p.me = rank;
    p.window = (int)window;
    p.validate = validate;
    p.corrupt = corrupt;
    p.tcp = p.udp = -1;
    /* A copy's speed can depend on where a buffer starts relative to cache lines and pages,
     * more on some CPUs than others: --offset places both buffers as another tool's are. */
    unsigned char *own_sbuf = net_alloc(largest + offset, "the send buffer") + offset;
    p.sbuf = own_sbuf;
    p.rbuf = net_alloc(largest + offset, "the receive buffer") + offset;
    p.req = malloc(2 * (size_t)window * sizeof *p.req);
    char my_addr[64] = "", peer_addr[64] = "";
    if (uses_sockets(ks, nk))
        net_sockets_open(&p, my_addr, peer_addr, sizeof my_addr);
    net_run_init(&run, "rmax.net/1", json);

    net_timing t = net_timing_make(budget, (size_t)max_samples, (size_t)min_samples);
    if (batch > 0)
        t.batch_target = batch;  /* asked for: wins over the budget */
    rmx_json *j = net_run_header(&run, "p2p");
    if (j) {
        rmx_json_str(j, "address0", my_addr);
        rmx_json_str(j, "address1", peer_addr);
        rmx_json_int(j, "window", window);
        rmx_json_int(j, "window_bytes", (long long)window_bytes);
        rmx_json_int(j, "min_samples", min_samples);
        rmx_json_bool(j, "validate_every_message", validate);
        rmx_json_bool(j, "one_buffer", one_buffer);
        rmx_json_int(j, "offset", (long long)offset);
        rmx_json_num(j, "budget", budget);
        rmx_json_num(j, "batch", t.batch_target);
        rmx_json_int(j, "repeats", repeats);
        rmx_json_num(j, "layer_budget", layer_budget);
        rmx_json_arr_begin(j, "layers");
        for (size_t k = 0; k < nk; k++)
            rmx_json_str(j, NULL, ks[k]->name);
        rmx_json_arr_end(j);
        rmx_json_arr_begin(j, "sizes");
        for (size_t i = 0; i < nsz; i++)
            rmx_json_int(j, NULL, (long long)sz[i]);
        rmx_json_arr_end(j);
        rmx_json_obj_end(j);
    }

    long points = 0, invalid = 0;
    /* Repeats are the outer loop, so a point's repeats are a whole schedule apart: a slow
     * spell of the machine lands in one repeat of many points, not in all repeats of one. */
    for (long trial = 0; trial < repeats; trial++) {
        for (size_t k = 0; k < nk; k++) {
            const net_p2p_kernel *kern = ks[k];
            if (rank == 0) {
                char step[64];
                snprintf(step, sizeof step, "p2p %s repeat %ld", kern->name, trial + 1);
                rmx_step(step);
            }
            if (run.table)
                printf("# %s: %s (repeat %ld of %lld)\n# %-10s %16s %12s %18s\n", kern->name, kern->what, trial + 1,
                       repeats, "Size", "Avg Latency(us)", "Median(us)", "Bandwidth (MB/s)");
            /* The layer's time budget, on rank 0's clock (it decides): a layer that cannot finish
             * in it (busy-polling ranks on a loaded machine: a window of large messages both ways
             * moves at the CPU share the ranks get) leaves its other sizes, not the whole run. */
            double layer_start = rmx_now();
            t.deadline = layer_budget > 0 ? layer_start + layer_budget : 0;
            for (size_t i = 0; i < nsz; i++) {
                size_t n = sz[i];
                int cut = rank == 0 && t.deadline > 0 && rmx_now() >= t.deadline;
                MPI_Bcast(&cut, 1, MPI_INT, 0, p.comm);
                if (cut) {
                    if (rank == 0 && (j = net_record(&run, "cut"))) {
                        rmx_json_str(j, "layer", kern->name);
                        rmx_json_int(j, "trial", trial);
                        rmx_json_int(j, "from_size", (long long)n);
                        rmx_json_num(j, "elapsed", rmx_now() - layer_start);
                        rmx_json_num(j, "layer_budget", layer_budget);
                        rmx_json_obj_end(j);
                    }
                    if (run.table)
                        printf("  layer time budget of %.3g s used up: sizes from %zu left out\n", layer_budget, n);
                    break;
                }
                /* TCP has no zero-byte message; a UDP datagram cannot exceed 64 KiB. */
                if ((kern->fn == net_tcp_pingpong && n == 0) || (kern->fn == net_udp_pingpong && n > NET_UDP_MAX))
                    continue;
                p.size = n;
                p.window = net_window_for((int)window, n, window_bytes);
                p.lost = 0;
                p.bad = 0;   /* a damaged message makes its own point invalid, not every later one */
                /* Only the blocking round trips may share one buffer: a pending receive and a
                 * pending send must not overlap (MPI), and the window kernels have both. */
                p.sbuf = one_buffer && !kern->per_window && kern->fn != net_p2p_kernels[1].fn ? p.rbuf : own_sbuf;
                int bad = net_pair_validate_once(&p, kern->fn);
                net_measure m;
                memset(&m, 0, sizeof m);
                if (!bad)
                    net_measure_run(p.comm, 0, NET_ROOT, &t, kern->fn, &p, &m);
                int failed = bad || m.failed;
                points++;
                invalid += failed;
                double msgs = net_p2p_msgs(kern, &p);
                if (rank == 0) {
                    rmx_summary s;
                    double *v = malloc((m.s[NET_ROOT].n + 1) * sizeof *v);
                    for (size_t r = 0; r < m.s[NET_ROOT].n; r++)
                        v[r] = m.s[NET_ROOT].v[r] / msgs;
                    rmx_summarize(v, m.s[NET_ROOT].n, &s);
                    free(v);
                    if ((j = net_record(&run, "point"))) {
                        rmx_json_str(j, "layer", kern->name);
                        rmx_json_int(j, "size", (long long)n);
                        rmx_json_int(j, "trial", trial);
                        rmx_json_int(j, "messages_per_op", (long long)msgs);
                        if (kern->per_window)
                            rmx_json_int(j, "window", p.window);
                        rmx_json_int(j, "udp_resent", p.lost);
                        net_record_end(&run, !failed, &m, NET_ROOT, msgs);
                    }
                    if (run.table)
                        printf("  %-10zu %16.2f %12.2f %18.2f%s\n", n, s.mean * 1e6, s.median * 1e6,
                               s.median > 0 ? (double)n / s.median / 1e6 : 0.0, failed ? "  INVALID" : "");
                }
                net_measure_free(&m);
            }
            if (run.table)
                fflush(stdout);
        }
    }
    if ((j = net_run_done(&run))) {
        rmx_json_int(j, "points", points);
        rmx_json_int(j, "invalid", invalid);
    }
    net_sockets_close(&p);
    MPI_Comm_free(&p.comm);
    return net_run_end(&run);
}

RMX_SUBCMD("p2p", cmd_p2p, "two ranks: latency and bandwidth vs size over MPI, TCP and UDP");
