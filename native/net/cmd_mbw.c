/* rmax-net mbw: aggregate bandwidth and message rate of concurrent pairs
 * (the method of OSU's osu_mbw_mr).
 *
 * Rank i of the first half sends to rank i + n/2. Per iteration each sender
 * posts a window of non-blocking sends of one size from one buffer, the
 * receiver a window of non-blocking receives, and the receiver answers with a
 * zero-byte acknowledgement once its window has arrived (OSU: the ack keeps a
 * sender from timing only its local copies). The harness (repeat.c) times
 * calibrated batches of iterations on every rank at once; a batch counts as
 * long as its slowest rank took, so the rate is that of all pairs together
 * (OSU multiplies rank 0's rate by the number of pairs instead):
 *
 *     message rate = pairs x window x iterations / seconds
 *     bandwidth    = message rate x size
 *
 * The whole size list is measured --repeats times, one repeat after the
 * other; a point reports the median of its repeats and every repeat's values.
 * Each point is first exchanged once untimed with every byte checked; timed
 * windows carry a first/last-byte mark (every byte with --validate). */
#include "net.h"
#include "p2p.h"

#include "rmx_args.h"
#include "rmx_step.h"
#include "rmx_subcmd.h"
#include "rmx_timer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


enum { TAG_DATA = 51, TAG_ACK = 52 };

typedef struct {
    int me, pairs, peer, sender, window, validate, corrupt;
    size_t size;
    unsigned char *buf;
    MPI_Request *req;
    uint64_t seq;
    long bad;
} mbw_ctx;

static uint64_t seed(const mbw_ctx *c, int pair) { return c->seq * 2654435761u + (uint64_t)pair; }

static double mbw_batch(void *ctx, long iters)
{
    mbw_ctx *c = ctx;
    int n = (int)c->size, w = c->window, pair = c->sender ? c->me : c->peer;
    char ack = 0;
    double t0 = rmx_now();
    for (long i = 0; i < iters; i++, c->seq++) {
        uint64_t s = seed(c, pair);
        if (c->sender) {
            if (c->validate)
                net_fill(c->buf, c->size, s);
            else
                net_mark(c->buf, c->size, s);
            /* Checks the checker (HPCC's CHECK_LEVEL 2): a damaged byte must be caught. */
            if (c->corrupt && c->me == 0 && c->size > 0)
                c->buf[c->size - 1] ^= 0x5a;
            for (int k = 0; k < w; k++)
                MPI_Isend(c->buf, n, MPI_BYTE, c->peer, TAG_DATA, MPI_COMM_WORLD, &c->req[k]);
            MPI_Waitall(w, c->req, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 0, MPI_BYTE, c->peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int k = 0; k < w; k++)
                MPI_Irecv(c->buf, n, MPI_BYTE, c->peer, TAG_DATA, MPI_COMM_WORLD, &c->req[k]);
            MPI_Waitall(w, c->req, MPI_STATUSES_IGNORE);
            if (!(c->validate ? net_check(c->buf, c->size, s) == 0 : net_mark_ok(c->buf, c->size, s)))
                c->bad++;
            MPI_Send(&ack, 0, MPI_BYTE, c->peer, TAG_ACK, MPI_COMM_WORLD);
        }
    }
    double el = rmx_now() - t0;
    return c->bad ? -1.0 : el;
}

/* One untimed iteration with every byte checked; 1 when some receiver saw a wrong byte. */
static int validate_once(mbw_ctx *c)
{
    int saved = c->validate, bad, any = 0;
    c->validate = 1;
    bad = mbw_batch(c, 1) < 0;
    c->validate = saved;
    c->bad = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

typedef struct {
    long iterations;    /* timed iterations (windows per pair) */
    double seconds;     /* their time, each batch as long as its slowest rank */
    double rate;        /* messages per second, all pairs */
    int converged, failed;
} mbw_repeat;

static double median(double *v, size_t n)
{
    rmx_summary s;
    rmx_summarize(v, n, &s);
    return s.median;
}

static void write_point(net_run *run, size_t size, int pairs, int window, const mbw_repeat *r, long nrep)
{
    rmx_json *j = net_record(run, "point");
    double *rate = malloc((size_t)nrep * sizeof *rate), *bw = malloc((size_t)nrep * sizeof *bw);
    long iterations = 0;
    double seconds = 0;
    int valid = 1, converged = 1;
    for (long t = 0; t < nrep; t++) {
        rate[t] = r[t].rate;
        bw[t] = r[t].rate * (double)size;
        iterations += r[t].iterations;
        seconds += r[t].seconds;
        valid &= !r[t].failed;
        converged &= r[t].converged;
    }
    rmx_json_int(j, "size", (long long)size);
    rmx_json_int(j, "pairs", pairs);
    rmx_json_int(j, "window", window);
    rmx_json_int(j, "iterations", iterations);
    rmx_json_num(j, "seconds", seconds);
    rmx_json_bool(j, "validated", valid);
    rmx_json_bool(j, "converged", converged);
    if (valid) {
        rmx_json_num(j, "message_rate", median(rate, (size_t)nrep));
        rmx_json_num(j, "bandwidth", median(bw, (size_t)nrep));
        rmx_json_nums(j, "message_rate_repeats", rate, (size_t)nrep);
        rmx_json_nums(j, "bandwidth_repeats", bw, (size_t)nrep);
        rmx_json_arr_begin(j, "iterations_repeats");
        for (long t = 0; t < nrep; t++)
            rmx_json_int(j, NULL, r[t].iterations);
        rmx_json_arr_end(j);
        for (long t = 0; t < nrep; t++)
            bw[t] = r[t].seconds;
        rmx_json_nums(j, "seconds_repeats", bw, (size_t)nrep);
    }
    rmx_json_obj_end(j);
    free(rate);
    free(bw);
}

int cmd_mbw(int argc, char **argv)
{
    const char *json = NULL;
    rmx_size_list sizes = {NULL, 0};
    size_t min_size = 1, max_size = 4u << 20, window_bytes = 8u << 20;
    long long window = 64, max_samples = 200, min_samples = 5, repeats = 5;
    double budget = 0.05;
    int validate = 0, corrupt = 0;
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
        {"sizes", RMX_ARG_SIZE_LIST, &sizes, "explicit message sizes instead of the schedule", 0,
         (double)MAX_MESSAGE, NULL},
        {"min-size", RMX_ARG_SIZE, &min_size, "smallest size of the schedule", 0, (double)MAX_MESSAGE, NULL},
        {"max-size", RMX_ARG_SIZE, &max_size, "largest size of the schedule (2^k and 3x2^(k-1))", 1,
         (double)MAX_MESSAGE, NULL},
        {"window", RMX_ARG_INT, &window, "messages each sender keeps in flight per iteration (OSU: 64)", 1, 1024,
         NULL},
        {"window-bytes", RMX_ARG_SIZE, &window_bytes,
         "at most this many bytes in flight per sender: large messages get a shorter window (0: no bound)", 0,
         (double)((size_t)1 << 40), NULL},
        {"budget", RMX_ARG_DOUBLE, &budget, "seconds of timed repetitions per size and repeat", 0.001, 3600, NULL},
        {"max-samples", RMX_ARG_INT, &max_samples, "most samples per size and repeat", 5, 100000, NULL},
        {"min-samples", RMX_ARG_INT, &min_samples,
         "fewest samples per measurement (below 5: no separate warm-up batch)", 2, 100000, NULL},
        {"repeats", RMX_ARG_INT, &repeats, "times the whole size list is measured, one repeat after the other", 1,
         1000, NULL},
        {"validate", RMX_ARG_FLAG, &validate, "check every byte of every window (slower)", 0, 0, NULL},
        {"self-test-corrupt", RMX_ARG_FLAG, &corrupt, "rank 0 damages what it sends: validation must fail", 0, 0,
         NULL},
    };
    rmx_args_parse(PROG " mbw", "Aggregate bandwidth and message rate of concurrent sender/receiver pairs.", argc,
                   argv, 2, spec, sizeof spec / sizeof spec[0]);
    size_t *sz = sizes.v, nsz = sizes.n;
    if (!sz) {
        if (min_size > max_size)
            rmx_die(2, PROG, "--min-size is larger than --max-size");
        nsz = net_schedule(min_size, max_size, 0, &sz);
    }
    size_t largest = net_largest(sz, nsz);

    net_run run;
    if (net_start(&argc, &argv, "mbw", 2, 0, &run.me, &run.n))
        return 2;
    int rank = run.me, nranks = run.n;
    if (nranks % 2)
        return net_refuse(rank, "mbw needs an even number of ranks (pairs), not %d", nranks);
    net_require_memory(largest, "the message buffer");
    mbw_ctx c;
    memset(&c, 0, sizeof c);
    c.me = rank;
    c.pairs = nranks / 2;
    c.sender = rank < c.pairs;
    c.peer = c.sender ? rank + c.pairs : rank - c.pairs;
    c.window = (int)window;
    c.validate = validate;
    c.corrupt = corrupt;
    c.buf = net_alloc(largest, "the message buffer");
    c.req = malloc((size_t)window * sizeof *c.req);

    net_timing t = net_timing_make(budget, (size_t)max_samples, (size_t)min_samples);
    net_run_init(&run, "rmax.mbw/1", json);
    int table = run.table;
    rmx_json *j = net_run_header(&run, "mbw");
    if (j) {
        rmx_json_int(j, "pairs", c.pairs);
        rmx_json_int(j, "window", window);
        rmx_json_int(j, "window_bytes", (long long)window_bytes);
        rmx_json_int(j, "min_samples", min_samples);
        rmx_json_bool(j, "validate_every_message", validate);
        rmx_json_num(j, "budget", budget);
        rmx_json_num(j, "batch", t.batch_target);
        rmx_json_int(j, "repeats", repeats);
        rmx_json_arr_begin(j, "sizes");
        for (size_t i = 0; i < nsz; i++)
            rmx_json_int(j, NULL, (long long)sz[i]);
        rmx_json_arr_end(j);
        rmx_json_obj_end(j);
    }

    mbw_repeat *res = calloc(nsz * (size_t)repeats, sizeof *res);
    /* Repeats are the outer loop, so a point's repeats are a whole size list apart: a slow
     * spell of the machine lands in one repeat of many points, not in all repeats of one. */
    for (long trial = 0; trial < repeats; trial++) {
        if (rank == 0) {
            char step[64];
            snprintf(step, sizeof step, "mbw repeat %ld", trial + 1);
            rmx_step(step);
        }
        for (size_t i = 0; i < nsz; i++) {
            mbw_repeat *r = &res[i * (size_t)repeats + (size_t)trial];
            c.size = sz[i];
            c.window = net_window_for((int)window, sz[i], window_bytes);
            net_measure m;
            memset(&m, 0, sizeof m);
            r->failed = validate_once(&c);
            if (!r->failed)
                net_measure_run(MPI_COMM_WORLD, 0, NET_MAX, &t, mbw_batch, &c, &m);
            r->failed |= m.failed;
            c.bad = 0;
            if (rank == 0 && !r->failed) {
                for (size_t k = 0; k < m.s[NET_MAX].n; k++)
                    r->seconds += m.s[NET_MAX].v[k] * (double)m.iters;  /* samples are per iteration */
                r->iterations = m.iters * (long)m.s[NET_MAX].n;
                r->rate = r->seconds > 0 ? (double)c.pairs * (double)c.window * (double)r->iterations / r->seconds : 0;
                r->converged = m.converged;
            }
            net_measure_free(&m);
        }
    }

    long invalid = 0;
    if (table)
        printf("# mbw: %d pair(s), window %lld, median of %lld repeat(s)\n# %-10s %14s %16s %10s\n", c.pairs, window,
               repeats, "Size", "MB/s", "Messages/s", "Spread");
    for (size_t i = 0; i < nsz && rank == 0; i++) {
        const mbw_repeat *r = &res[i * (size_t)repeats];
        int bad = 0;
        double lo = 0, hi = 0, v[1000];
        for (long k = 0; k < repeats; k++) {
            bad |= r[k].failed;
            v[k] = r[k].rate;
            lo = k == 0 || r[k].rate < lo ? r[k].rate : lo;
            hi = r[k].rate > hi ? r[k].rate : hi;
        }
        invalid += bad;
        if (run.jf)
            write_point(&run, sz[i], c.pairs, net_window_for((int)window, sz[i], window_bytes), r, repeats);
        if (table) {
            double rate = bad ? 0 : median(v, (size_t)repeats);
            printf("  %-10zu %14.2f %16.0f %9.1f%%%s\n", sz[i], rate * (double)sz[i] / 1e6, rate,
                   rate > 0 ? 100.0 * (hi - lo) / rate : 0.0, bad ? "  INVALID" : "");
        }
    }
    if (table)
        fflush(stdout);
    if ((j = net_run_done(&run))) {
        rmx_json_int(j, "points", (long long)nsz);
        rmx_json_int(j, "invalid", invalid);
    }
    free(res);
    free(c.req);
    return net_run_end(&run);
}

RMX_SUBCMD("mbw", cmd_mbw, "concurrent pairs: aggregate bandwidth and message rate (OSU osu_mbw_mr)");
