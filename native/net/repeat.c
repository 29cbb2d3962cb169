/* The timing harness every rmax-net command uses.
 *
 * mpptest's rule: a sample is the average over a batch of operations long
 * enough to dwarf the timer's resolution and the harness's own overhead; the
 * batch length is calibrated first (which doubles as warm-up). Then batches
 * are repeated until the 95% confidence half-width is within the relative
 * target or the budget ends (Hoefler and Belli, SC'15: report a CI). All ranks of the communicator must
 * run the same number of batches, so one rank (the root) decides and tells
 * the others after each batch; the decision traffic is outside the timed
 * region. Each batch's elapsed time is reduced to min, mean and max over the
 * ranks (IMB's t_min, t_avg, t_max) and the root's own time is kept too. A
 * batch that took less than half its target (the machine got faster since the
 * calibration) makes the following batches longer; `iters` records the last. */
#include "net.h"

#include "rmx_timer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { GO_ON = 1, STOP_MET = 2, STOP_BUDGET = 3, FAILED = -1 };

net_timing net_timing_make(double budget, size_t max_samples, size_t min_samples)
{
    net_timing t;
    t.batch_target = 1e-3;  /* 1 ms: > 1000x the clock resolution, short enough for many samples */
    t.max_iters = 10000000;
    t.rule = rmx_repeat_default();
    /* Below the usual 5 samples the caller fits a point into a short budget (ranks crowded onto
     * few cores, where every batch's synchronisation costs many time slices): the calibration's
     * batches and the untimed validation exchange already warm up, so no separate warm-up. */
    t.rule.min_reps = min_samples < 2 ? 2 : min_samples;
    t.rule.warmup = t.rule.min_reps >= 5;
    t.rule.max_reps = max_samples < t.rule.min_reps ? t.rule.min_reps : max_samples;
    t.rule.budget = budget;
    t.rule.rel_target = 0.02;
    t.deadline = 0;
    /* A long batch would leave too few samples for the budget: shorten it so
     * that the minimum number of samples still fits. */
    if (budget > 0 && budget / (double)(t.rule.min_reps + 2) < t.batch_target)
        t.batch_target = budget / (double)(t.rule.min_reps + 2);
    return t;
}

net_sweep net_sweep_start(double budget)
{
    net_sweep s = {rmx_now(), budget};
    return s;
}

int net_sweep_past(const net_sweep *s, int me)
{
    return me == 0 && s->budget > 0 && rmx_now() - s->start >= s->budget;
}

void net_sweep_cut_end(rmx_json *j, const net_sweep *s)
{
    rmx_json_num(j, "elapsed", rmx_now() - s->start);
    rmx_json_num(j, "sweep_budget", s->budget);
    rmx_json_obj_end(j);
}

static int past(const net_timing *t)
{
    return t->deadline > 0 && rmx_now() >= t->deadline;
}

/* One batch on every rank; the root gets (this root's, min, mean, max) elapsed. One gather, not
 * a reduction per statistic: each collective around a batch costs every rank a time slice where
 * ranks outnumber cores, and the root's n doubles are nothing next to that. */
static int batch(MPI_Comm comm, int root, net_batch_fn fn, void *ctx, long iters, double out[NET_NSTAT],
                 double *all)
{
    double el = fn(ctx, iters);
    int n, me;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    MPI_Gather(&el, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, root, comm);
    out[NET_ROOT] = el;
    if (me != root)
        return 0;
    double lo = all[0], hi = all[0], sum = 0;
    for (int r = 0; r < n; r++) {
        lo = all[r] < lo ? all[r] : lo;
        hi = all[r] > hi ? all[r] : hi;
        sum += all[r];
    }
    out[NET_MIN] = lo;
    out[NET_AVG] = sum / n;
    out[NET_MAX] = hi;
    return lo < 0; /* some rank reported a validation failure */
}

void net_measure_run(MPI_Comm comm, int root, int key, const net_timing *t, net_batch_fn fn, void *ctx,
                     net_measure *m)
{
    memset(m, 0, sizeof *m);
    for (int k = 0; k < NET_NSTAT; k++)
        rmx_samples_init(&m->s[k]);
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    double v[NET_NSTAT] = {0, 0, 0, 0};
    double *all = me == root ? malloc((size_t)size * sizeof *all) : NULL;
    if (me == root && !all)
        net_fail(1, "out of memory for %d ranks' batch times", size);

    /* Calibration: grow the batch until it lasts batch_target on the slowest rank. */
    long iters = 1;
    for (;;) {
        int bad = batch(comm, root, fn, ctx, iters, v, all);
        long next = 0;
        if (me == root) {
            if (bad)
                next = -1;
            else if (v[NET_MAX] < t->batch_target && iters < t->max_iters && !past(t)) {
                double grow = v[NET_MAX] > 0 ? 1.2 * t->batch_target / v[NET_MAX] : 64.0;
                grow = fmin(fmax(grow, 2.0), 64.0);
                next = (long)fmin((double)t->max_iters, ceil((double)iters * grow));
            }
        }
        MPI_Bcast(&next, 1, MPI_LONG, root, comm);
        if (next < 0) {
            m->failed = 1;
            free(all);
            return;
        }
        if (next == 0)
            break;
        iters = next;
    }
    m->iters = iters;

    for (size_t w = 0; w < t->rule.warmup; w++) {
        int bad = batch(comm, root, fn, ctx, iters, v, all);
        int go = bad ? FAILED : GO_ON;
        MPI_Bcast(&go, 1, MPI_INT, root, comm);
        if (go == FAILED) {
            m->failed = 1;
            free(all);
            return;
        }
    }

    double start = rmx_now();
    for (;;) {
        int bad = batch(comm, root, fn, ctx, iters, v, all);
        long go[2] = {GO_ON, iters}; /* the decision, and the iterations of the next batch */
        if (me == root) {
            for (int k = 0; k < NET_NSTAT; k++)
                rmx_samples_push(&m->s[k], v[k] / (double)iters);
            size_t n = m->s[key].n;
            if (bad)
                go[0] = FAILED;
            else if (past(t))
                go[0] = STOP_BUDGET;   /* the caller's time is up: one sample, fewer than the rule asks */
            else if (n >= t->rule.min_reps) {
                rmx_summary s;
                rmx_summarize(m->s[key].v, n, &s);
                if (s.ci_half_rel <= t->rule.rel_target)
                    go[0] = STOP_MET;
                else if (n >= t->rule.max_reps || (t->rule.budget > 0 && rmx_now() - start >= t->rule.budget))
                    go[0] = STOP_BUDGET;
            }
            /* The machine sped up since calibration (a VM's vCPUs moved onto cores that share a
             * cache: 2-3x at small sizes): batches would no longer last their target, so grow them. */
            if (v[NET_MAX] > 0 && v[NET_MAX] < t->batch_target / 2 && iters < t->max_iters)
                go[1] = (long)fmin((double)t->max_iters, ceil((double)iters * 1.2 * t->batch_target / v[NET_MAX]));
        }
        MPI_Bcast(go, 2, MPI_LONG, root, comm);
        if (go[0] == FAILED) {
            m->failed = 1;
            free(all);
            return;
        }
        if (go[0] != GO_ON) {
            m->converged = go[0] == STOP_MET;
            free(all);
            return;
        }
        iters = m->iters = go[1];
    }
}

void net_measure_free(net_measure *m)
{
    for (int k = 0; k < NET_NSTAT; k++)
        rmx_samples_free(&m->s[k]);
}
