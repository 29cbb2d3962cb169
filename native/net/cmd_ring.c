/* rmax-net ring: HPCC's ring latency and bandwidth, and each link's time.
 *
 * HPCC's definitions (b_eff): every rank exchanges a message with both its
 * left and right neighbour at once, by two MPI_Sendrecv calls and by
 * Irecv/Isend/Waitall; the time per message is the loop time divided by
 * 2 x loops; the ring's value is the maximum over ranks, the minimum over
 * measurements and the better of the two methods. Latency uses 8-byte
 * messages, bandwidth 2,000,000-byte messages (bandwidth = size / time).
 * Randomly ordered rings are averaged geometrically (in Python). Every
 * message carries a first/last-byte mark that the receiver checks.
 *
 * Each link of the natural ring is then timed alone (a ping-pong between
 * the two neighbours while everyone else waits), so that a slow hop stands
 * out (as in the Helix cluster's ring test, where a hop across switches took longer). */
#include "p2p.h"

#include "rmx_args.h"
#include "rmx_step.h"
#include "rmx_subcmd.h"
#include "rmx_timer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TO_RIGHT = 41, TO_LEFT = 42 };

typedef struct {
    int me, left, right;
    size_t size;
    unsigned char *sl, *sr, *rl, *rr;
    uint64_t seq;
    long bad;
} ring_ctx;

static uint64_t mark_seed(uint64_t seq, int sender, int dir) { return seq * 2654435761u + (uint64_t)sender * 2 + (uint64_t)dir; }

static void ring_prepare(ring_ctx *r)
{
    net_mark(r->sr, r->size, mark_seed(r->seq, r->me, 0));
    net_mark(r->sl, r->size, mark_seed(r->seq, r->me, 1));
}

static void ring_verify(ring_ctx *r)
{
    if (!net_mark_ok(r->rl, r->size, mark_seed(r->seq, r->left, 0)) ||
        !net_mark_ok(r->rr, r->size, mark_seed(r->seq, r->right, 1)))
        r->bad++;
    r->seq++;
}

static double ring_sendrecv(void *ctx, long iters)
{
    ring_ctx *r = ctx;
    int n = (int)r->size;
    double t0 = rmx_now();
    for (long i = 0; i < iters; i++) {
        ring_prepare(r);
        MPI_Sendrecv(r->sr, n, MPI_BYTE, r->right, TO_RIGHT, r->rl, n, MPI_BYTE, r->left, TO_RIGHT, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Sendrecv(r->sl, n, MPI_BYTE, r->left, TO_LEFT, r->rr, n, MPI_BYTE, r->right, TO_LEFT, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        ring_verify(r);
    }
    double el = rmx_now() - t0;
    return r->bad ? -1.0 : el;
}

static double ring_nonblocking(void *ctx, long iters)
{
    ring_ctx *r = ctx;
    int n = (int)r->size;
    MPI_Request q[4];
    double t0 = rmx_now();
    for (long i = 0; i < iters; i++) {
        ring_prepare(r);
        MPI_Irecv(r->rl, n, MPI_BYTE, r->left, TO_RIGHT, MPI_COMM_WORLD, &q[0]);
        MPI_Irecv(r->rr, n, MPI_BYTE, r->right, TO_LEFT, MPI_COMM_WORLD, &q[1]);
        MPI_Isend(r->sr, n, MPI_BYTE, r->right, TO_RIGHT, MPI_COMM_WORLD, &q[2]);
        MPI_Isend(r->sl, n, MPI_BYTE, r->left, TO_LEFT, MPI_COMM_WORLD, &q[3]);
        MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        ring_verify(r);
    }
    double el = rmx_now() - t0;
    return r->bad ? -1.0 : el;
}

static const struct {
    const char *name;
    net_batch_fn fn;
} methods[] = {{"sendrecv", ring_sendrecv}, {"nonblocking", ring_nonblocking}};

static void write_measure(net_run *run, int pattern, const int *order, int n, size_t size, const char *method,
                          const net_measure *m, int valid)
{
    rmx_json *j = net_record(run, "ring");
    if (!j)
        return;
    rmx_json_int(j, "pattern", pattern);
    rmx_json_str(j, "ordering", pattern == 0 ? "natural" : "random");
    if (order) {
        rmx_json_arr_begin(j, "ring");
        for (int i = 0; i < n; i++)
            rmx_json_int(j, NULL, order[i]);
        rmx_json_arr_end(j);
    }
    rmx_json_int(j, "size", (long long)size);
    rmx_json_str(j, "method", method);
    net_record_end(run, valid, m, NET_MAX, 2.0);  /* two messages per rank per loop */
}

/* Times the link a -> b alone; world rank 0 gets (median, min, n) per message. */
static void time_link(int a, int b, size_t size, unsigned char *sbuf, unsigned char *rbuf, const net_timing *t,
                      double out[3], int *valid)
{
    MPI_Comm pc = net_pair_comm(a, b);
    const int idle = pc == MPI_COMM_NULL;
    double v[4] = {0, 0, 0, 1};
    if (!idle) {
        net_pair p;
        memset(&p, 0, sizeof p);
        p.comm = pc;
        MPI_Comm_rank(pc, &p.me);
        p.size = size;
        p.sbuf = sbuf;
        p.rbuf = rbuf;
        p.tcp = p.udp = -1;
        MPI_Request req[2];
        p.req = req;
        const net_p2p_kernel *k = &net_p2p_kernels[0];  /* blocking MPI ping-pong */
        int bad = net_pair_validate_once(&p, k->fn);
        net_measure m;
        memset(&m, 0, sizeof m);
        if (!bad)
            net_measure_run(pc, 0, NET_ROOT, t, k->fn, &p, &m);
        if (p.me == 0) {
            rmx_summary s;
            rmx_summarize(m.s[NET_ROOT].v, m.s[NET_ROOT].n, &s);
            v[0] = s.median / 2;
            v[1] = s.min / 2;
            v[2] = (double)s.n;
            v[3] = !(bad || m.failed);
        }
        net_measure_free(&m);
        MPI_Comm_free(&pc);
    }
    net_quiet_barrier(MPI_COMM_WORLD, idle ? NET_IDLE_SHORT : NET_IDLE_NO);  /* "alone": the others wait without polling */
    MPI_Bcast(v, 4, MPI_DOUBLE, a, MPI_COMM_WORLD);
    memcpy(out, v, 3 * sizeof *out);
    *valid = v[3] != 0;
}

/* What the sweep budget left out: from this part on (a random ring's pattern, or the links). */
static void cut_record(rmx_json *j, const net_sweep *sw, const char *part, long pattern)
{
    rmx_json_str(j, "from", part);
    if (pattern > 0)
        rmx_json_int(j, "pattern", pattern);
    net_sweep_cut_end(j, sw);
}

int cmd_ring(int argc, char **argv)
{
    const char *json = NULL;
    size_t lat_size = 8, bw_size = 2000000;
    long long rings = 10, seed = 1, max_samples = 50, min_samples = 5;
    double budget = 0.02, sweep_budget = 0;
    int no_links = 0;
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
        {"lat-size", RMX_ARG_SIZE, &lat_size, "latency message size (HPCC: 8)", 1, (double)MAX_MESSAGE, NULL},
        {"bw-size", RMX_ARG_SIZE, &bw_size, "bandwidth message size (HPCC: 2000000)", 1, (double)MAX_MESSAGE, NULL},
        {"random-rings", RMX_ARG_INT, &rings, "randomly ordered rings (HPCC: 30 for latency, 10 for bandwidth)", 0,
         10000, NULL},
        {"seed", RMX_ARG_INT, &seed, "seed of the random rings", 1, 1e18, NULL},
        {"budget", RMX_ARG_DOUBLE, &budget, "seconds of timed repetitions per measurement", 0.001, 3600, NULL},
        {"sweep-budget", RMX_ARG_DOUBLE, &sweep_budget,
         "seconds all its measurements may take (0: no limit); past them the random rings and links not yet "
         "measured are left out (a 'cut' record names the first; the natural ring always runs)",
         0, 86400, NULL},
        {"max-samples", RMX_ARG_INT, &max_samples, "most samples per measurement", 5, 100000, NULL},
        {"min-samples", RMX_ARG_INT, &min_samples,
         "fewest samples per measurement (below 5: no separate warm-up batch)", 2, 100000, NULL},
        {"no-links", RMX_ARG_FLAG, &no_links, "skip timing each link of the natural ring alone", 0, 0, NULL},
    };
    rmx_args_parse(PROG " ring", "HPCC natural and random ring latency and bandwidth, and per-link times.", argc,
                   argv, 2, spec, sizeof spec / sizeof spec[0]);
    net_run run;
    if (net_start(&argc, &argv, "ring", 2, 0, &run.me, &run.n))
        return 2;
    int me = run.me, n = run.n;
    size_t big = lat_size > bw_size ? lat_size : bw_size;
    net_require_memory(4 * big, "the four ring buffers");
    ring_ctx r;
    memset(&r, 0, sizeof r);
    r.me = me;
    r.sl = net_alloc(big, "ring buffers");
    r.sr = net_alloc(big, "ring buffers");
    r.rl = net_alloc(big, "ring buffers");
    r.rr = net_alloc(big, "ring buffers");
    net_run_init(&run, "rmax.ring/1", json);
    rmx_json *j = net_run_header(&run, "ring");
    if (j) {
        rmx_json_int(j, "lat_size", (long long)lat_size);
        rmx_json_int(j, "bw_size", (long long)bw_size);
        rmx_json_int(j, "random_rings", rings);
        rmx_json_int(j, "seed", seed);
        rmx_json_num(j, "sweep_budget", sweep_budget);
        rmx_json_obj_end(j);
    }
    if (run.table)
        printf("# %-8s %-8s %10s %-12s %14s %12s\n", "Ring", "Pattern", "Size", "Method", "Avg Latency(us)",
               "Best(us)");

    net_timing t = net_timing_make(budget, (size_t)max_samples, (size_t)min_samples);
    uint64_t state = (uint64_t)seed * 0x9e3779b97f4a7c15ULL + 7;
    /* the ring's order, and after it rank 0's word on the sweep budget (1: used up) */
    int *order = malloc(((size_t)n + 1) * sizeof *order);
    long invalid = 0;
    size_t msg[2] = {lat_size, bw_size};
    net_sweep sw = net_sweep_start(sweep_budget);
    int cut = 0;
    for (long pat = 0; pat <= rings && !cut; pat++) {
        for (int i = 0; i < n; i++)
            order[i] = i;
        if (pat > 0 && me == 0)
            net_shuffle(order, n, &state);
        order[n] = pat > 0 && net_sweep_past(&sw, me);
        MPI_Bcast(order, n + 1, MPI_INT, 0, MPI_COMM_WORLD);
        if ((cut = order[n])) {
            if ((j = net_record(&run, "cut")))
                cut_record(j, &sw, "random ring", pat);
            break;
        }
        for (int i = 0; i < n; i++)
            if (order[i] == me) {
                r.left = order[(i - 1 + n) % n];
                r.right = order[(i + 1) % n];
            }
        if (me == 0) {
            char step[48];
            snprintf(step, sizeof step, "ring pattern %ld", pat);
            rmx_step(step);
        }
        for (int s = 0; s < 2; s++) {
            r.size = msg[s];
            for (size_t k = 0; k < sizeof methods / sizeof methods[0]; k++) {
                net_measure m;
                net_measure_run(MPI_COMM_WORLD, 0, NET_MAX, &t, methods[k].fn, &r, &m);
                invalid += m.failed;
                write_measure(&run, (int)pat, order, n, r.size, methods[k].name, &m, !m.failed);
                if (run.table) {
                    rmx_summary sm;
                    rmx_summarize(m.s[NET_MAX].v, m.s[NET_MAX].n, &sm);
                    printf("  %-8s %-8ld %10zu %-12s %14.2f %12.2f%s\n", pat ? "random" : "natural", pat, r.size,
                           methods[k].name, sm.mean / 2 * 1e6, sm.min / 2 * 1e6, m.failed ? "  INVALID" : "");
                    fflush(stdout);
                }
                net_measure_free(&m);
            }
        }
    }
    if (!no_links && !cut) {
        rmx_step("ring links");
        if (run.table)
            printf("# %-6s %-6s %10s %16s %12s\n", "From", "To", "Size", "Latency(us)", "Best(us)");
        for (int s = 0; s < 2 && !cut; s++) {
            cut = net_sweep_past(&sw, me);
            MPI_Bcast(&cut, 1, MPI_INT, 0, MPI_COMM_WORLD);
            if (cut) {
                if ((j = net_record(&run, "cut")))
                    cut_record(j, &sw, s ? "bandwidth links" : "links", 0);
                break;
            }
            for (int a = 0; a < n; a++) {
                int b = (a + 1) % n, valid = 0;
                double v[3];
                time_link(a, b, msg[s], r.sr, r.rr, &t, v, &valid);
                invalid += !valid;
                if ((j = net_record(&run, "link"))) {
                    rmx_json_int(j, "from", a);
                    rmx_json_int(j, "to", b);
                    rmx_json_str(j, "from_host", run.hosts[a]);
                    rmx_json_str(j, "to_host", run.hosts[b]);
                    rmx_json_int(j, "size", (long long)msg[s]);
                    rmx_json_num(j, "time", v[0]);
                    rmx_json_num(j, "best", v[1]);
                    rmx_json_int(j, "n", (long long)v[2]);
                    rmx_json_bool(j, "validated", valid);
                    rmx_json_obj_end(j);
                }
                if (run.table)
                    printf("  %-6d %-6d %10zu %16.2f %12.2f%s\n", a, b, msg[s], v[0] * 1e6, v[1] * 1e6,
                           valid ? "" : "  INVALID");
            }
        }
    }
    if ((j = net_run_done(&run)))
        rmx_json_int(j, "invalid", invalid);
    free(order);
    return net_run_end(&run);
}

RMX_SUBCMD("ring", cmd_ring, "HPCC natural and random ring latency and bandwidth, per-link times");
