/* rmax-net nbc: non-blocking collectives and the computation they let overlap them, OSU's
 * method (osu_iallreduce, osu_ibcast, osu_ialltoall):
 *
 *   comm     the collective alone: start it, wait for it
 *   compute  a computation loop alone, each rank's calibrated to last `comm`
 *   overall  start the collective, run the loop, wait: both overlapped
 *   busy     the loop's own time inside `overall` (OSU's "Compute": its share of the overlapped
 *            calls' time on each rank, times `overall`)
 *   overlap  = 100 x (1 - (overall - busy) / comm), within [0, 100]
 *
 * Each is the per-call time averaged over the ranks (OSU averages over ranks too), the median
 * over the harness's samples; every call is timed between barriers, as OSU times them, so a
 * root cannot run ahead of the others. The whole measurement is made --repeats times and each
 * figure is the median of its repeats. The loop holds no MPI call: what overlaps is what the
 * MPI library progresses on its own. The collectives are those of coll_ops.c (their inputs set
 * from a seed, their outputs checked before and after the timed calls). */
#include "coll.h"

#include "rmx_args.h"
#include "rmx_step.h"
#include "rmx_subcmd.h"
#include "rmx_timer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    net_coll *c;
    const net_coll_op *op;
    long units;       /* computation loop length */
    int mode;         /* MODE_COMM, MODE_COMPUTE, MODE_BOTH */
    double busy, all; /* MODE_BOTH: seconds in the loop, and in the whole calls, over every batch */
} nbc_ctx;

enum { MODE_COMM, MODE_COMPUTE, MODE_BOTH };

static volatile double sink;   /* the loop's result is used, so the compiler keeps the loop */

/* A dependent multiply-add chain: a fixed amount of work whose time scales with units. */
static void compute(long units)
{
    double x = sink + 1.0;
    for (long i = 0; i < units; i++)
        x = x * 0.9999999 + 1e-7;
    sink = x;
}

static double nbc_batch(void *ctx, long iters)
{
    nbc_ctx *n = ctx;
    double total = 0;
    for (long i = 0; i < iters; i++) {
        if (n->mode == MODE_COMPUTE) {
            double t0 = rmx_now();
            compute(n->units);
            total += rmx_now() - t0;
            continue;
        }
        MPI_Barrier(n->c->comm);
        MPI_Request r;
        double t0 = rmx_now();
        n->op->istart(n->c, &r);
        if (n->mode == MODE_BOTH) {
            double c0 = rmx_now();
            compute(n->units);
            n->busy += rmx_now() - c0;
        }
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        total += rmx_now() - t0;
    }
    if (n->mode == MODE_BOTH)
        n->all += total;
    return total;
}

/* Loop units that last `seconds` on this rank (the fastest of three timings of a long loop). */
static long calibrate(double seconds)
{
    long probe = 1 << 16;
    double best = 1e30;
    for (int k = 0; k < 3; k++) {
        double t0 = rmx_now();
        compute(probe);
        double el = rmx_now() - t0;
        best = el < best ? el : best;
    }
    double units = seconds / (best / (double)probe);
    return units < 1 ? 1 : (long)units;
}

static double median_of(const rmx_samples *s)
{
    rmx_summary sum;
    rmx_summarize(s->v, s->n, &sum);
    return sum.median;
}

static double median(double *v, size_t n)
{
    rmx_summary s;
    rmx_summarize(v, n, &s);
    return s.median;
}

static const net_coll_op *find_op(const char *iname)
{
    for (size_t k = 0; k < net_coll_nops; k++)
        if (iname[0] == 'i' && strcmp(net_coll_ops[k].name, iname + 1) == 0 && net_coll_ops[k].sized)
            return &net_coll_ops[k];
    return NULL;
}

int cmd_nbc(int argc, char **argv)
{
    const char *json = NULL, *ops = "iallreduce,ibcast,ialltoall";
    static size_t default_sizes[] = {8, 1024, 65536, 1048576};
    rmx_size_list sizes = {default_sizes, sizeof default_sizes / sizeof default_sizes[0]};
    double budget = 0.02;
    long long max_samples = 100, min_samples = 5, repeats = 3;
    int corrupt = 0;
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
        {"ops", RMX_ARG_STRING, &ops,
         "non-blocking collectives: iallreduce, ibcast, ialltoall, ireduce, iallgather, ireduce_scatter, iscatter, "
         "igather",
         0, 0, NULL},
        {"sizes", RMX_ARG_SIZE_LIST, &sizes, "bytes per rank", 1, (double)MAX_MESSAGE, NULL},
        {"budget", RMX_ARG_DOUBLE, &budget, "seconds of timed repetitions per measurement", 0.001, 3600, NULL},
        {"max-samples", RMX_ARG_INT, &max_samples, "most samples per measurement", 5, 100000, NULL},
        {"min-samples", RMX_ARG_INT, &min_samples, "fewest samples per measurement (below 5: no warm-up batch)", 2,
         100000, NULL},
        {"repeats", RMX_ARG_INT, &repeats, "times each point's three measurements are made", 1, 1000, NULL},
        {"self-test-corrupt", RMX_ARG_FLAG, &corrupt, "rank 0 damages its input: validation must fail", 0, 0,
         NULL},
    };
    rmx_args_parse(PROG " nbc", "Non-blocking collectives: time alone, computation alone, both overlapped.", argc,
                   argv, 2, spec, sizeof spec / sizeof spec[0]);
    const net_coll_op *chosen[16];
    size_t nops = 0;
    char *copy = strdup(ops), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const net_coll_op *op = find_op(tok);
        if (!op)
            rmx_die(2, PROG, "--ops: unknown non-blocking collective '%s'", tok);
        if (nops < sizeof chosen / sizeof chosen[0])
            chosen[nops++] = op;
    }
    free(copy);
    if (nops == 0)
        rmx_die(2, PROG, "--ops: empty list");
    size_t largest = net_largest(sizes.v, sizes.n);

    net_run run;
    if (net_start(&argc, &argv, "nbc", 2, 0, &run.me, &run.n))
        return 2;
    net_require_memory(2 * largest * (size_t)run.n, "the collective buffers (2 x size x ranks)");
    net_coll c;
    memset(&c, 0, sizeof c);
    c.comm = MPI_COMM_WORLD;
    c.me = run.me;
    c.p = run.n;
    c.in = net_alloc(largest * (size_t)run.n, "the input buffer");
    c.out = net_alloc(largest * (size_t)run.n, "the output buffer");
    net_run_init(&run, "rmax.nbc/1", json);
    net_timing t = net_timing_make(budget, (size_t)max_samples, (size_t)min_samples);
    rmx_json *j = net_run_header(&run, "nbc");
    if (j) {
        rmx_json_int(j, "repeats", repeats);
        rmx_json_num(j, "budget", budget);
        rmx_json_obj_end(j);
    }
    if (run.table)
        printf("# %-16s %10s %12s %12s %12s %10s\n", "Op", "Size", "Comm(us)", "Compute(us)", "Overall(us)",
               "Overlap(%)");
    long points = 0, invalid = 0;
    double *rep = malloc(5 * (size_t)repeats * sizeof *rep);
    for (size_t k = 0; k < nops; k++) {
        const net_coll_op *op = chosen[k];
        if (run.me == 0) {
            char step[64];
            snprintf(step, sizeof step, "nbc i%s", op->name);
            rmx_step(step);
        }
        for (size_t is = 0; is < sizes.n; is++) {
            c.size = sizes.v[is];
            uint64_t seed = (uint64_t)points * 4096 + 1;
            nbc_ctx n = {&c, op, 0, MODE_COMM, 0, 0};
            double *comm = rep, *comp = rep + repeats, *both = rep + 2 * repeats, *ovl = rep + 3 * repeats,
                   *busy = rep + 4 * repeats;
            int failed = 0, converged = 1;
            op->setup(&c, seed);
            if (corrupt)
                net_coll_damage(&c);
            for (long r = 0; r < repeats && !failed; r++) {
                /* before the timed calls (an untimed one first) and after them: the same right answer */
                nbc_batch(&n, 1);
                long bad = (long)op->check(&c, seed), any = 0;
                MPI_Allreduce(&bad, &any, 1, MPI_LONG, MPI_SUM, c.comm);
                if (any) {
                    failed = 1;
                    break;
                }
                double got[3];
                for (int mode = MODE_COMM; mode <= MODE_BOTH; mode++) {
                    net_measure m;
                    n.mode = mode;
                    if (mode == MODE_COMPUTE) {
                        /* each rank's loop lasts as long as the collective alone, OSU's rule */
                        double target = got[MODE_COMM];
                        MPI_Bcast(&target, 1, MPI_DOUBLE, 0, c.comm);
                        n.units = calibrate(target);
                    }
                    n.busy = n.all = 0;
                    net_measure_run(c.comm, 0, NET_AVG, &t, nbc_batch, &n, &m);
                    got[mode] = run.me == 0 ? median_of(&m.s[NET_AVG]) : 0;
                    if (mode == MODE_BOTH) {
                        double share = n.all > 0 ? n.busy / n.all : 0, sum = 0;
                        MPI_Reduce(&share, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, c.comm);
                        busy[r] = got[MODE_BOTH] * sum / c.p;
                    }
                    converged &= m.converged;
                    net_measure_free(&m);
                }
                bad = (long)op->check(&c, seed);
                MPI_Allreduce(&bad, &any, 1, MPI_LONG, MPI_SUM, c.comm);
                failed = any > 0;
                comm[r] = got[MODE_COMM];
                comp[r] = got[MODE_COMPUTE];
                both[r] = got[MODE_BOTH];
                double o = comm[r] > 0 ? 100.0 * (1.0 - (both[r] - busy[r]) / comm[r]) : 0;
                ovl[r] = o < 0 ? 0 : o > 100 ? 100 : o;
            }
            points++;
            invalid += failed;
            if ((j = net_record(&run, "point"))) {
                char name[32];
                snprintf(name, sizeof name, "i%s", op->name);
                rmx_json_str(j, "op", name);
                rmx_json_int(j, "size", (long long)c.size);
                rmx_json_int(j, "procs", c.p);
                rmx_json_bool(j, "validated", !failed);
                rmx_json_bool(j, "converged", converged);
                if (!failed) {
                    rmx_json_num(j, "comm", median(comm, (size_t)repeats));
                    rmx_json_num(j, "compute", median(comp, (size_t)repeats));
                    rmx_json_num(j, "overall", median(both, (size_t)repeats));
                    rmx_json_num(j, "busy", median(busy, (size_t)repeats));
                    rmx_json_num(j, "overlap", median(ovl, (size_t)repeats));
                    rmx_json_nums(j, "comm_repeats", comm, (size_t)repeats);
                    rmx_json_nums(j, "compute_repeats", comp, (size_t)repeats);
                    rmx_json_nums(j, "overall_repeats", both, (size_t)repeats);
                    rmx_json_nums(j, "busy_repeats", busy, (size_t)repeats);
                    rmx_json_nums(j, "overlap_repeats", ovl, (size_t)repeats);
                }
                rmx_json_obj_end(j);
            }
            if (run.table) {
                if (failed)
                    printf("  i%-15s %10zu  INVALID\n", op->name, c.size);
                else
                    printf("  i%-15s %10zu %12.2f %12.2f %12.2f %10.1f\n", op->name, c.size,
                           median(comm, (size_t)repeats) * 1e6, median(comp, (size_t)repeats) * 1e6,
                           median(both, (size_t)repeats) * 1e6, median(ovl, (size_t)repeats));
                fflush(stdout);
            }
        }
    }
    free(rep);
    if ((j = net_run_done(&run))) {
        rmx_json_int(j, "points", points);
        rmx_json_int(j, "invalid", invalid);
    }
    return net_run_end(&run);
}

RMX_SUBCMD("nbc", cmd_nbc, "non-blocking collectives: time alone, computation alone, overlapped");
