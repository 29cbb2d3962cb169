/* rmax-net matrix: all-pairs latency and bandwidth (the mpiGraph / ClusterKit
 * method). The pairs meet in rounds of disjoint pairs that run at once, so
 * every pair is measured under the same load: every pair in a round-robin
 * tournament (N-1 rounds, N when N is odd), or above MX_SAMPLE_ABOVE ranks a
 * sample in O(log N) shifts (matrix_rounds.c). Per pair: a ping-pong of
 * lat-size bytes, and a stream of bw-size messages each way. Each rank reduces
 * its samples to numbers per pair (median and best); rank 0 gathers them after
 * each round and writes that round's pairs as a record ("round"), so that a run
 * stopped in the rounds keeps what it measured.
 *
 * Rank 0 then writes the matrices (before any retest: a run stopped during
 * the retests keeps them) with the suspects (matrix_suspects.c): a pair whose
 * latency is above 2x its class median, or bandwidth below 90% of it, where
 * the class is same switch or across switches when --groups names the hosts of
 * each switch (else all pairs). The most severe suspects are measured again
 * --retests times each, with a control (the pair of its class nearest the
 * median that is no suspect) measured in turn with it, so that both alone
 * values are taken under the same conditions (a shared host can change speed
 * between the concurrent rounds and the retests). Retests whose ranks are
 * disjoint run at once, a round at a time while --retest-budget lasts; each
 * round's results are a record of their own. Each alone measurement also says
 * whether the pair's two ranks shared one CPU meanwhile (colocate.c): then it
 * measured that CPU, not the network. The caller decides what is flagged. */
#include "matrix.h"
#include "p2p.h"

#include "rmx_args.h"
#include "rmx_step.h"
#include "rmx_subcmd.h"
#include "rmx_timer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RETESTS_PER_RANK 4  /* suspects retested at most: 4 per rank, the most severe */
#define SLOW_OP_S 5e-3      /* --self-test-slow-last: seconds the last rank adds to each operation */

/* What each rank keeps per partner, gathered to rank 0 as one matrix each. */
enum { ROW_LAT, ROW_BW, ROW_LAT_BEST, ROW_BW_BEST, ROW_SHARED, ROWS };
static const char *const ROW_NAMES[ROWS] = {"latency", "bandwidth", "latency_best", "bandwidth_best", "cpu_shared"};

/* One suspect's retest as broadcast to every rank. */
enum { U_SUSPECT, U_FROM, U_TO, U_KIND, U_CTL_FROM, U_CTL_TO, U_ROUND, U_INTS };

typedef struct {
    net_pair p;  /* first: slowed() gets &p, the batch functions' context, and reads the rest */
    net_timing t;
    size_t lat_size, bw_size;
    int slow;            /* --self-test-slow-last on the last rank */
    net_batch_fn inner;  /* the kernel slowed() runs */
} matrix_ctx;

/* --self-test-slow-last: the last rank sleeps SLOW_OP_S per operation before each batch it is in,
 * so that its pairs measure slow (a partner waits for it) and the retests have real suspects,
 * and controls among the other pairs, whatever the machine's noise. */
static double slowed(void *ctx, long iters)
{
    matrix_ctx *x = ctx;
    const double t0 = rmx_now(), wait = SLOW_OP_S * (double)iters;
    const struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
    nanosleep(&ts, NULL);
    const double el = x->inner(&x->p, iters);
    return el < 0 ? el : rmx_now() - t0;
}

/* One measurement on pc, a pair's communicator whose rank 0 initiates (latency) or sends
 * (bandwidth). Returns, on pc's rank 0, the median latency (one-way seconds) or bandwidth
 * (bytes/s), and in *best the best sample; *bad there says whether validation failed; *shared,
 * on both, whether they ran on one CPU meanwhile (colocate.c). */
static double measure_on(matrix_ctx *x, MPI_Comm pc, int bandwidth, int *bad, double *best, int *shared)
{
    double value = NAN;
    *best = NAN;
    const int cpu = net_cpu_now();
    net_pair *p = &x->p;
    p->comm = pc;
    MPI_Comm_rank(pc, &p->me);
    p->seq = 0;
    p->size = bandwidth ? x->bw_size : x->lat_size;
    const net_p2p_kernel *k = &net_p2p_kernels[bandwidth ? 2 : 0];  /* mpi-stream or mpi ping-pong */
    net_measure m;
    memset(&m, 0, sizeof m);
    *bad = net_pair_validate_once(p, k->fn);
    x->inner = k->fn;
    if (!*bad)
        net_measure_run(pc, 0, NET_ROOT, &x->t, x->slow ? slowed : k->fn, p, &m);
    *bad |= m.failed;
    *shared = net_pair_shared_cpu(pc, cpu);
    if (p->me == 0 && m.s[NET_ROOT].n) {
        rmx_summary s;
        rmx_summarize(m.s[NET_ROOT].v, m.s[NET_ROOT].n, &s);
        const double bytes = (double)p->window * (double)p->size;
        value = bandwidth ? bytes / s.median : s.median / 2;
        *best = bandwidth ? bytes / s.min : s.min / 2;
    }
    net_measure_free(&m);
    return value;
}

/* A pair's communicator inside a turn's (rank 0 of it is `first`). */
static MPI_Comm pair_in(MPI_Comm turn, int first, int second)
{
    int me;
    MPI_Comm pc;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_split(turn, first < second ? first : second, me == first ? 0 : 1, &pc);
    return pc;
}

/* The rounds as turns (turns.c): each round's pairs measure on their own, the others asleep. */
enum { C_PARTNER, C_LAT, C_LAT_BEST, C_BW, C_BW_BEST, C_SHARED, C_BAD, CELL };

typedef struct {
    matrix_ctx *x;
    const mx_schedule *sch;
    net_run *run;
    double **mat;     /* rank 0: ROWS matrices */
    int any_bad;
    const int *order; /* the rounds in the order run (NULL: as planned) */
    double budget, start, mean;  /* --rounds-budget: no round starts that would end later */
} rounds_ctx;

static int round_of(const rounds_ctx *c, int turn) { return c->order ? c->order[turn] : turn; }

static int round_members(void *ctx, int turn, int *out)
{
    const rounds_ctx *c = ctx;
    const int n = c->sch->n, *partner = c->sch->partner + (size_t)round_of(c, turn) * (size_t)n;
    int m = 0;
    for (int q = 0; q < n; q++)
        if (partner[q] >= 0)
            out[m++] = q;
    return m;
}

/* Latency (lo initiates), then bandwidth: lo sends, then hi sends; each rank's cell goes to rank 0
 * (latency when it initiated, bandwidth from it, their best samples, CPU shared). */
static void round_run(void *ctx, int turn, MPI_Comm comm, double *cell)
{
    rounds_ctx *c = ctx;
    const int me = c->run->me, partner = c->sch->partner[(size_t)round_of(c, turn) * (size_t)c->sch->n + (size_t)me];
    const int lo = me < partner ? me : partner, hi = me < partner ? partner : me;
    /* the reversed pair, whose rank 0 is hi, is split from the pair alone */
    MPI_Comm pc[2] = {pair_in(comm, lo, hi), MPI_COMM_NULL};
    MPI_Comm_split(pc[0], 0, me == hi ? 0 : 1, &pc[1]);
    int bad = 0, sh[3] = {0, 0, 0};
    double best;
    for (int k = 0; k < CELL; k++)
        cell[k] = k == C_PARTNER ? partner : k >= C_SHARED ? 0 : NAN;
    for (int q = 0; q < 3; q++) {
        const int dir = q == 2, from = dir ? hi : lo;
        const double v = measure_on(c->x, pc[dir], q > 0, &bad, &best, &sh[q]);
        net_quiet_barrier(comm, NET_IDLE_SHORT);  /* the round's pairs move on together */
        if (me == from) {
            cell[q ? C_BW : C_LAT] = v;
            cell[q ? C_BW_BEST : C_LAT_BEST] = best;
            cell[C_BAD] = cell[C_BAD] || bad;
        }
    }
    for (int d = 0; d < 2; d++)
        MPI_Comm_free(&pc[d]);
    cell[C_SHARED] = sh[0] || sh[1] || sh[2];
}

/* Rank 0, before each round: whether it starts (the rounds budget), and the step it names. */
static int round_go(void *ctx, int turn)
{
    const rounds_ctx *c = ctx;
    if (c->budget > 0 && turn > 0 && MPI_Wtime() - c->start + c->mean > c->budget)
        return 0;
    char step[64];
    snprintf(step, sizeof step, "matrix round %d of %d", turn + 1, c->sch->rounds);
    rmx_step(step);
    return 1;
}

/* Rank 0: the round's cells into the matrices and its record. */
static void round_done(void *ctx, int turn, const int *members, int m, const double *cells)
{
    rounds_ctx *c = ctx;
    const int n = c->sch->n;
    static const int row_of[CELL] = {-1, ROW_LAT, ROW_LAT_BEST, ROW_BW, ROW_BW_BEST, ROW_SHARED, -1};
    c->mean = (MPI_Wtime() - c->start) / (turn + 1);
    rmx_json *j = net_record(c->run, "round");
    if (j) {
        rmx_json_int(j, "round", round_of(c, turn));
        rmx_json_arr_begin(j, "cells");  /* [from, to, latency, latency_best, bandwidth, bandwidth_best, shared] */
    }
    for (int k = 0; k < m; k++) {
        const double *cl = cells + (size_t)k * CELL;
        const int i = members[k];
        const size_t at = (size_t)i * n + (size_t)cl[C_PARTNER];
        for (int q = C_LAT; q <= C_SHARED; q++)
            if (q == C_SHARED || !isnan(cl[q]))
                c->mat[row_of[q]][at] = cl[q];
        c->any_bad |= cl[C_BAD] != 0;
        if (j) {
            rmx_json_arr_begin(j, NULL);
            rmx_json_int(j, NULL, i);
            rmx_json_int(j, NULL, (long long)cl[C_PARTNER]);
            for (int q = C_LAT; q < C_SHARED; q++)
                rmx_json_num(j, NULL, cl[q]);
            rmx_json_int(j, NULL, cl[C_SHARED] != 0);
            rmx_json_arr_end(j);
        }
    }
    if (j) {
        rmx_json_arr_end(j);
        rmx_json_bool(j, "validated", !c->any_bad);
        rmx_json_obj_end(j);
    }
}

/* The retests as turns: per retest round, each repetition measures the round's suspects, all at
 * once, then their controls. Turn t: round t / (2 retests), repetition t / 2 % retests, controls
 * when t is odd. No round starts that would end past the budget. */
typedef struct {
    matrix_ctx *x;
    net_run *run;
    const int *units;
    int nunits, retests, nrounds, n;
    int *first;       /* per round, its first unit; first[nrounds] = nunits */
    double *val[4];   /* rank 0: alone, alone CPU shared, control, control CPU shared [unit * retests + r] */
    double budget, start, round_start, longest;
    int any_bad, rounds_run, retested;
} retests_ctx;

static const int *unit_at(const retests_ctx *c, int u) { return c->units + (size_t)u * U_INTS; }

/* The pair a unit measures in this turn ((from, to): the suspect's, or its control's; -1: none). */
static void unit_pair(const int *t, int control, int *a, int *b)
{
    *a = t[control ? U_CTL_FROM : U_FROM];
    *b = t[control ? U_CTL_TO : U_TO];
}

static int retest_members(void *ctx, int turn, int *out)
{
    const retests_ctx *c = ctx;
    const int r = turn / (2 * c->retests), control = turn % 2;
    int m = 0;
    for (int q = 0; q < c->n; q++)
        for (int u = c->first[r]; u < c->first[r + 1]; u++) {
            int a, b;
            unit_pair(unit_at(c, u), control, &a, &b);
            if (a >= 0 && (a == q || b == q)) {
                out[m++] = q;
                break;
            }
        }
    return m;
}

static void retest_run(void *ctx, int turn, MPI_Comm comm, double *msg)
{
    retests_ctx *c = ctx;
    const int r = turn / (2 * c->retests), control = turn % 2, me = c->run->me;
    int a = -1, b = -1, kind = 0;
    for (int u = c->first[r]; u < c->first[r + 1] && a < 0; u++) {  /* a round's pairs share no rank */
        unit_pair(unit_at(c, u), control, &a, &b);
        kind = unit_at(c, u)[U_KIND];
        if (a != me && b != me)
            a = -1;
    }
    int bad = 0, shared = 0;
    double best;
    MPI_Comm pc = pair_in(comm, a, b);
    const double v = measure_on(c->x, pc, kind, &bad, &best, &shared);
    MPI_Comm_free(&pc);
    net_quiet_barrier(comm, NET_IDLE_SHORT);
    msg[0] = v;
    msg[1] = bad;
    msg[2] = shared;
}

static int retest_go(void *ctx, int turn)
{
    retests_ctx *c = ctx;
    if (turn % (2 * c->retests))
        return 1;
    c->round_start = MPI_Wtime();
    if (c->round_start - c->start + c->longest > c->budget)
        return 0;
    char step[64];
    snprintf(step, sizeof step, "matrix retest round %d of %d", turn / (2 * c->retests) + 1, c->nrounds);
    rmx_step(step);
    return 1;
}

static void retest_done(void *ctx, int turn, const int *members, int m, const double *got)
{
    retests_ctx *c = ctx;
    const int r = turn / (2 * c->retests), rep = turn / 2 % c->retests, control = turn % 2;
    for (int u = c->first[r]; u < c->first[r + 1]; u++) {
        int a, b, k = 0;
        unit_pair(unit_at(c, u), control, &a, &b);
        while (a >= 0 && k < m && members[k] != a)
            k++;
        const size_t at = (size_t)u * (size_t)c->retests + (size_t)rep;
        c->val[2 * control][at] = a >= 0 ? got[3 * k] : NAN;
        c->val[2 * control + 1][at] = a >= 0 ? got[3 * k + 2] : 0;
        c->any_bad |= a >= 0 && got[3 * k + 1] != 0;
    }
    if (turn % (2 * c->retests) != 2 * c->retests - 1)
        return;
    rmx_json *j = net_record(c->run, "retests");
    if (j) {
        rmx_json_int(j, "round", r);
        rmx_json_arr_begin(j, "suspects");
        for (int u = c->first[r]; u < c->first[r + 1]; u++) {
            const size_t at = (size_t)u * (size_t)c->retests;
            rmx_json_obj_begin(j, NULL);
            rmx_json_int(j, "suspect", unit_at(c, u)[U_SUSPECT]);
            rmx_json_nums(j, "alone", c->val[0] + at, (size_t)c->retests);
            rmx_json_nums(j, "alone_cpu_shared", c->val[1] + at, (size_t)c->retests);
            if (unit_at(c, u)[U_CTL_FROM] >= 0) {
                rmx_json_nums(j, "control", c->val[2] + at, (size_t)c->retests);
                rmx_json_nums(j, "control_cpu_shared", c->val[3] + at, (size_t)c->retests);
            }
            rmx_json_obj_end(j);
        }
        rmx_json_arr_end(j);
        rmx_json_obj_end(j);
    }
    const double took = MPI_Wtime() - c->round_start;
    c->longest = c->rounds_run == 0 || took > c->longest ? took : c->longest;
    c->retested += c->first[r + 1] - c->first[r];
    c->rounds_run++;
}

static void write_matrix(rmx_json *j, const char *key, const double *v, int n)
{
    rmx_json_arr_begin(j, key);
    for (int i = 0; i < n; i++)
        rmx_json_nums(j, NULL, v + (size_t)i * n, (size_t)n);
    rmx_json_arr_end(j);
}

static void write_class_stats(rmx_json *j, const mx_class_stat st[2][2], int classes)
{
    rmx_json_arr_begin(j, "class_stats");
    for (int kind = 0; kind < 2; kind++)
        for (int cls = 0; cls < 1 + classes; cls++) {
            rmx_json_obj_begin(j, NULL);
            rmx_json_str(j, "kind", kind ? "bandwidth" : "latency");
            rmx_json_str(j, "class", !classes ? "all" : cls ? "across" : "same");
            rmx_json_int(j, "pairs", st[kind][cls].pairs);
            rmx_json_num(j, "median", st[kind][cls].median);
            rmx_json_num(j, "spread", st[kind][cls].spread);
            rmx_json_obj_end(j);
        }
    rmx_json_arr_end(j);
}

static long schedule_pairs(const mx_schedule *s)
{
    long pairs = 0;
    for (size_t i = 0; i < (size_t)s->rounds * (size_t)s->n; i++)
        pairs += s->partner[i] > (int)(i % (size_t)s->n);
    return pairs;
}

static void write_schedule(rmx_json *j, const char *design, const mx_schedule *s, double seconds)
{
    rmx_json_obj_begin(j, NULL);
    rmx_json_str(j, "record", "schedule");
    rmx_json_str(j, "design", design);
    rmx_json_num(j, "cpu_seconds", seconds);
    rmx_json_int(j, "rounds", s->rounds);
    rmx_json_int(j, "pairs", schedule_pairs(s));
    rmx_json_arr_begin(j, "partner");
    for (int r = 0; r < s->rounds; r++) {
        rmx_json_arr_begin(j, NULL);
        for (int q = 0; q < s->n; q++)
            rmx_json_int(j, NULL, s->partner[(size_t)r * s->n + q]);
        rmx_json_arr_end(j);
    }
    rmx_json_arr_end(j);
    rmx_json_obj_end(j);
}

/* CPU seconds of this process: the analysis's cost, whatever else the machine runs */
static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double uniform(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

/* --self-test-analysis N: the analysis on a synthetic N-rank matrix, no MPI. Switches of
 * 16 ranks (2 us / 1 GB/s inside, 6 us / 100 MB/s across, +-10% and -5% noise), 2% of
 * the pairs planted slow (latency x5, bandwidth x0.5): one record with the CPU time taken,
 * the planted pairs and the suspects (with controls and retest rounds) for the caller to
 * check, then the sampled schedule (and the full one up to 256 ranks). */
static int self_test_analysis(int n)
{
    const size_t nn = (size_t)n * (size_t)n;
    double *lat = malloc(nn * sizeof *lat), *bw = malloc(nn * sizeof *bw);
    int *group_of = malloc((size_t)n * sizeof *group_of);
    unsigned char *planted = calloc(2 * nn, 1);
    if (!lat || !bw || !group_of || !planted)
        net_fail(1, "out of memory for a %d-rank synthetic matrix", n);
    uint64_t st_ = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < n; i++)
        group_of[i] = i / 16;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            const size_t c = (size_t)i * n + j;
            const int across = group_of[i] != group_of[j];
            bw[c] = lat[c] = NAN;
            if (i == j)
                continue;
            bw[c] = (across ? 1e8 : 1e9) * (1 - 0.05 * uniform(&st_));
            if (uniform(&st_) < 0.02) {
                bw[c] *= 0.5;
                planted[nn + c] = 1;
            }
            if (j > i) {
                lat[c] = (across ? 6e-6 : 2e-6) * (1 + 0.1 * uniform(&st_));
                if (uniform(&st_) < 0.02) {
                    lat[c] *= 5;
                    planted[c] = 1;
                }
            }
        }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            lat[(size_t)i * n + j] = lat[(size_t)j * n + i];

    const double t0 = cpu_s();
    mx_class_stat st[2][2];
    mx_suspect *sus = NULL;
    mx_class_stats(lat, bw, n, group_of, st);
    const int nsus = mx_find_suspects(lat, bw, n, group_of, st, &sus);
    int *round_of = nsus >= 0 ? malloc(((size_t)nsus + 1) * sizeof *round_of) : NULL;
    const int cap = RETESTS_PER_RANK * n;
    if (!round_of || mx_pick_controls(lat, bw, n, group_of, st, sus, nsus, cap) < 0)
        net_fail(1, "out of memory in the analysis");
    const int rounds = mx_retest_rounds(sus, nsus, cap, 0, n, round_of);
    const double seconds = cpu_s() - t0;

    rmx_json j;
    rmx_json_init(&j, stdout);
    rmx_json_obj_begin(&j, NULL);
    rmx_json_str(&j, "record", "self-test-analysis");
    rmx_json_int(&j, "n", n);
    rmx_json_num(&j, "cpu_seconds", seconds);
    rmx_json_int(&j, "retest_rounds", rounds);
    rmx_json_int(&j, "retest_cap", cap);
    write_class_stats(&j, st, 1);
    rmx_json_arr_begin(&j, "group_of");
    for (int i = 0; i < n; i++)
        rmx_json_int(&j, NULL, group_of[i]);
    rmx_json_arr_end(&j);
    rmx_json_arr_begin(&j, "planted");  /* [from, to, kind] */
    for (size_t c = 0; c < 2 * nn; c++)
        if (planted[c]) {
            rmx_json_arr_begin(&j, NULL);
            rmx_json_int(&j, NULL, (long long)((c % nn) / (size_t)n));
            rmx_json_int(&j, NULL, (long long)(c % (size_t)n));
            rmx_json_int(&j, NULL, c >= nn);
            rmx_json_arr_end(&j);
        }
    rmx_json_arr_end(&j);
    rmx_json_arr_begin(&j, "suspects");  /* [from, to, kind, control from, control to, retest round] */
    for (int s = 0; s < nsus; s++) {
        const int v[6] = {sus[s].from, sus[s].to, sus[s].kind, sus[s].ctl_from, sus[s].ctl_to, round_of[s]};
        rmx_json_arr_begin(&j, NULL);
        for (int q = 0; q < 6; q++)
            rmx_json_int(&j, NULL, v[q]);
        rmx_json_arr_end(&j);
    }
    rmx_json_arr_end(&j);
    rmx_json_obj_end(&j);

    mx_schedule sch;
    double t1 = cpu_s();
    if (mx_schedule_sampled(n, group_of, 0, &sch) < 0)
        net_fail(1, "out of memory for the sampled schedule");
    write_schedule(&j, "sampled", &sch, cpu_s() - t1);
    mx_schedule_free(&sch);
    if (n <= 256) {
        t1 = cpu_s();
        if (mx_schedule_full(n, &sch) < 0)
            net_fail(1, "out of memory for the full schedule");
        write_schedule(&j, "full", &sch, cpu_s() - t1);
        mx_schedule_free(&sch);
    }
    free(lat);
    free(bw);
    free(group_of);
    free(planted);
    free(sus);
    free(round_of);
    return 0;
}

int cmd_matrix(int argc, char **argv)
{
    const char *json = NULL, *groups = NULL, *design = "auto";
    size_t lat_size = 8, bw_size = 1 << 20;
    long long window = 8, max_samples = 20, min_samples = 5, retests = 3, self_test = 0, shifts = 0,
              at_once = 0;
    double budget = 0.01, retest_budget = 120, rounds_budget = 0;
    int no_retest = 0, slow_last = 0;
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
        {"lat-size", RMX_ARG_SIZE, &lat_size, "latency message size", 0, (double)MAX_MESSAGE, NULL},
        {"bw-size", RMX_ARG_SIZE, &bw_size, "bandwidth message size", 1, (double)MAX_MESSAGE, NULL},
        {"window", RMX_ARG_INT, &window, "messages in flight for bandwidth", 1, 1024, NULL},
        {"budget", RMX_ARG_DOUBLE, &budget, "seconds of timed repetitions per pair and measurement", 0.001, 3600,
         NULL},
        {"max-samples", RMX_ARG_INT, &max_samples, "most samples per pair and measurement", 5, 100000, NULL},
        {"min-samples", RMX_ARG_INT, &min_samples,
         "fewest samples per measurement (below 5: no separate warm-up batch)", 2, 100000, NULL},
        {"design", RMX_ARG_CHOICE, &design,
         "pairs measured: full (every pair), sampled (O(log N) shifts plus every pair inside a switch), auto "
         "(full up to 64 ranks)", 0, 0, "auto|full|sampled"},
        {"shifts", RMX_ARG_INT, &shifts,
         "the sampled design's shifts at most (0: all, about 2 log2 N), spread from the nearest to the farthest", 0,
         64, NULL},
        {"pairs-at-once", RMX_ARG_INT, &at_once,
         "pairs measured at once at most (0: every pair of a round; fewer where ranks share few cores)", 0,
         1 << 20, NULL},
        {"rounds-budget", RMX_ARG_DOUBLE, &rounds_budget,
         "seconds for the rounds (0: no limit): the rounds run in a shuffled order, each a sample of the design, "
         "and no round starts that would end later", 0, 86400, NULL},
        {"no-retest", RMX_ARG_FLAG, &no_retest, "report suspects without measuring them again", 0, 0, NULL},
        {"retests", RMX_ARG_INT, &retests, "times each suspect is measured alone", 1, 100, NULL},
        {"retest-budget", RMX_ARG_DOUBLE, &retest_budget,
         "seconds for the retests: no retest round starts that would end later", 0, 86400, NULL},
        {"groups", RMX_ARG_STRING, &groups,
         "hosts per switch, 'h1,h2;h3,h4': a pair is compared with pairs of its class (same switch or across)", 0,
         0, NULL},
        {"self-test-analysis", RMX_ARG_INT, &self_test,
         "run the analysis on a synthetic N-rank matrix with planted slow pairs, without MPI, and exit", 0, 1 << 16,
         NULL},
        {"self-test-slow-last", RMX_ARG_FLAG, &slow_last,
         "self-test of the retests: the last rank adds 5 ms to each operation of its pairs, which are then suspects",
         0, 0, NULL},
    };
    rmx_args_parse(PROG " matrix", "All-pairs latency and bandwidth matrices.", argc, argv, 2, spec,
                   sizeof spec / sizeof spec[0]);
    if (self_test)
        return self_test_analysis(self_test < 2 ? 2 : (int)self_test);
    net_run run;
    if (net_start(&argc, &argv, "matrix", 2, 0, &run.me, &run.n))
        return 2;
    const int me = run.me, n = run.n;
    const size_t nn = (size_t)n * (size_t)n;
    size_t big = lat_size > bw_size ? lat_size : bw_size;
    net_require_memory(2 * big, "the send and receive buffers");
    matrix_ctx x;
    memset(&x, 0, sizeof x);
    x.lat_size = lat_size;
    x.bw_size = bw_size;
    x.slow = slow_last && me == n - 1;
    x.t = net_timing_make(budget, (size_t)max_samples, (size_t)min_samples);
    x.p.sbuf = net_alloc(big, "the send buffer");
    x.p.rbuf = net_alloc(big, "the receive buffer");
    x.p.req = malloc(2 * (size_t)window * sizeof *x.p.req);
    x.p.window = (int)window;
    x.p.tcp = x.p.udp = -1;
    net_run_init(&run, "rmax.matrix/2", json);

    /* rank 0 plans the rounds (it alone knows every rank's host, hence the groups) */
    int *group_of = NULL, *order = NULL;
    const int sampled = strcmp(design, "sampled") == 0 || (strcmp(design, "auto") == 0 && n > MX_SAMPLE_ABOVE);
    mx_schedule sch = {n, 0, NULL};
    if (me == 0) {
        if (groups) {
            group_of = malloc((size_t)n * sizeof *group_of);
            order = malloc((size_t)n * sizeof *order);
            if (net_group_order(groups, run.hosts, n, order, group_of) < 0) {  /* a host in no group: one class */
                free(group_of);
                group_of = NULL;
            }
        }
        if ((sampled ? mx_schedule_sampled(n, group_of, (int)shifts, &sch) : mx_schedule_full(n, &sch)) < 0 ||
            mx_schedule_cap(&sch, (int)at_once) < 0)
            net_fail(1, "out of memory for the schedule of %d ranks", n);
    }
    MPI_Bcast(&sch.rounds, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (me != 0)
        sch.partner = malloc(((size_t)sch.rounds * (size_t)n + 1) * sizeof *sch.partner);
    MPI_Bcast(sch.partner, sch.rounds * n, MPI_INT, 0, MPI_COMM_WORLD);

    /* The header before the rounds: each round's pairs are a record of their own, so that a run
     * stopped in the rounds (its watchdog, a lost host) keeps the pairs measured so far. */
    rmx_json *j = me == 0 ? net_run_header(&run, "matrix") : NULL;
    if (j) {
        rmx_json_int(j, "lat_size", (long long)lat_size);
        rmx_json_int(j, "bw_size", (long long)bw_size);
        rmx_json_int(j, "window", window);
        rmx_json_int(j, "min_samples", min_samples);
        rmx_json_str(j, "design", sampled ? "sampled" : "full");
        rmx_json_int(j, "shifts", shifts);
        rmx_json_int(j, "pairs_at_once", at_once);
        rmx_json_int(j, "rounds", sch.rounds);
        rmx_json_num(j, "rounds_budget", rounds_budget);
        rmx_json_int(j, "pairs", schedule_pairs(&sch));
        rmx_json_int(j, "pairs_total", (long long)n * (n - 1) / 2);
        rmx_json_int(j, "retests", retests);
        rmx_json_bool(j, "retesting", !no_retest);
        rmx_json_num(j, "retest_budget", retest_budget);
        rmx_json_bool(j, "classes", group_of != NULL);
        rmx_json_arr_begin(j, "group_of");   /* each rank's switch group, when known */
        for (int r = 0; r < n && group_of; r++)
            rmx_json_int(j, NULL, group_of[r]);
        rmx_json_arr_end(j);
        rmx_json_obj_end(j);
    }

    /* Rank 0 holds numbers per pair (not samples): each round, every rank sends its cell to its
     * partner (latency when it initiated, bandwidth from it, their best samples, CPU shared). */
    double *mat[ROWS];
    for (int k = 0; k < ROWS; k++) {
        mat[k] = me == 0 ? malloc(nn * sizeof *mat[k]) : NULL;
        if (me == 0 && !mat[k])
            net_fail(1, "out of memory for the %d x %d matrices", n, n);
        for (size_t c = 0; me == 0 && c < nn; c++)
            mat[k][c] = k == ROW_SHARED ? 0 : NAN;
    }
    /* Under a rounds budget the rounds run in a shuffled order (the same on every rank), so that
     * the rounds run before it ends are a sample of the whole design's, near and far pairs alike. */
    int *shuffled = NULL;
    if (rounds_budget > 0) {
        uint64_t seed = 0x9E3779B97F4A7C15ULL;
        shuffled = malloc(((size_t)sch.rounds + 1) * sizeof *shuffled);
        if (!shuffled)
            net_fail(1, "out of memory for the order of %d rounds", sch.rounds);
        for (int r = 0; r < sch.rounds; r++)
            shuffled[r] = r;
        net_shuffle(shuffled, sch.rounds, &seed);
    }
    const double rounds_start = MPI_Wtime();
    rounds_ctx rc = {&x, &sch, &run, mat, 0, shuffled, rounds_budget, rounds_start, 0};
    const net_turns rounds = {sch.rounds, CELL, round_members, round_run, round_go, round_done, &rc};
    const int rounds_run = net_turns_run(&rounds);
    free(shuffled);
    int any_bad = rc.any_bad;
    const double per_round = rounds_run ? (MPI_Wtime() - rounds_start) / rounds_run : 0;
    MPI_Bcast(&any_bad, 1, MPI_INT, 0, MPI_COMM_WORLD);

    /* the analysis, and the matrices written before any retest */
    const int cap = no_retest ? 0 : RETESTS_PER_RANK * n;
    mx_suspect *sus = NULL;
    int nsus = 0, nunits = 0, nrounds = 0, *units = NULL;
    if (me == 0) {
        double *lat = mat[ROW_LAT], *bw = mat[ROW_BW];
        for (int i = 0; i < n; i++)
            for (int q = 0; q < i; q++)
                for (int k = 0; k < 2; k++) {  /* measured once, by the lower rank */
                    double *m = mat[k ? ROW_LAT_BEST : ROW_LAT];
                    m[(size_t)i * n + q] = m[(size_t)q * n + i];
                }
        mx_class_stat st[2][2];
        mx_class_stats(lat, bw, n, group_of, st);
        nsus = mx_find_suspects(lat, bw, n, group_of, st, &sus);
        int *round_of = nsus >= 0 ? malloc(((size_t)nsus + 1) * sizeof *round_of) : NULL;
        if (!round_of || mx_pick_controls(lat, bw, n, group_of, st, sus, nsus, cap) < 0)
            net_fail(1, "out of memory for the suspects of %d ranks", n);
        nrounds = mx_retest_rounds(sus, nsus, cap, (int)at_once, n, round_of);
        units = malloc(((size_t)nsus + 1) * U_INTS * sizeof *units);
        if (nrounds < 0 || !units)
            net_fail(1, "out of memory for the retests of %d ranks", n);
        for (int r = 0; r < nrounds; r++)  /* round by round */
            for (int s = 0; s < nsus; s++)
                if (round_of[s] == r) {
                    const int u[U_INTS] = {s, sus[s].from, sus[s].to, sus[s].kind, sus[s].ctl_from, sus[s].ctl_to, r};
                    memcpy(units + (size_t)nunits++ * U_INTS, u, sizeof u);
                }
        if ((j = net_record(&run, "matrix"))) {
            rmx_json_int(j, "retest_rounds", nrounds);
            for (int k = 0; k < ROWS; k++)
                write_matrix(j, ROW_NAMES[k], mat[k], n);
            write_class_stats(j, st, group_of != NULL);
            rmx_json_arr_begin(j, "suspects");
            for (int s = 0; s < nsus; s++) {
                const int i = sus[s].from, jj = sus[s].to, kind = sus[s].kind;
                rmx_json_obj_begin(j, NULL);
                rmx_json_int(j, "from", i);
                rmx_json_int(j, "to", jj);
                rmx_json_str(j, "kind", kind ? "bandwidth" : "latency");
                rmx_json_str(j, "class", !group_of ? "all" : sus[s].cls ? "across" : "same");
                rmx_json_num(j, "concurrent", (kind ? bw : lat)[(size_t)i * n + jj]);
                if (sus[s].ctl_from >= 0) {
                    rmx_json_int(j, "control_from", sus[s].ctl_from);
                    rmx_json_int(j, "control_to", sus[s].ctl_to);
                }
                if (round_of[s] >= 0)
                    rmx_json_int(j, "retest_round", round_of[s]);
                rmx_json_obj_end(j);
            }
            rmx_json_arr_end(j);
            rmx_json_bool(j, "validated", !any_bad);
            rmx_json_obj_end(j);
        }
        free(round_of);
    }
    MPI_Bcast(&nrounds, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(&nunits, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (me != 0)
        units = malloc(((size_t)nunits + 1) * U_INTS * sizeof *units);
    MPI_Bcast(units, nunits * U_INTS, MPI_INT, 0, MPI_COMM_WORLD);

    /* the retests, a round at a time: each suspect of the round, all at once, then their controls */
    retests_ctx tc = {&x, &run, units, nunits, (int)retests, nrounds, n, malloc(((size_t)nrounds + 2) * sizeof(int)),
                      {NULL}, retest_budget, MPI_Wtime(), 0, per_round * 2 * (double)retests / 3, any_bad, 0, 0};
    /* a guess before the first round's time is known: 2 of a round's 3 measurements */
    const size_t nval = (size_t)nunits * (size_t)retests + 1;
    for (int k = 0; k < 4; k++)
        tc.val[k] = malloc(nval * sizeof *tc.val[k]);
    if (!tc.first || !tc.val[0] || !tc.val[1] || !tc.val[2] || !tc.val[3])
        net_fail(1, "out of memory for the retests of %d ranks", n);
    for (int r = 0, u = 0; r <= nrounds; r++) {
        while (u < nunits && units[(size_t)u * U_INTS + U_ROUND] < r)
            u++;
        tc.first[r] = u;
    }
    const net_turns retest_turns = {2 * (int)retests * nrounds, 3, retest_members, retest_run, retest_go, retest_done,
                                    &tc};
    net_turns_run(&retest_turns);
    any_bad = tc.any_bad;
    const int retest_rounds_run = tc.rounds_run, retested = tc.retested;
    const double retest_start = tc.start;

    if (me == 0) {
        j = net_run_done(&run);
        if (j) {
            rmx_json_bool(j, "validated", !any_bad);
            rmx_json_int(j, "rounds_run", rounds_run);
            rmx_json_bool(j, "rounds_budget_used_up", rounds_run < sch.rounds);
            rmx_json_int(j, "retest_rounds_run", retest_rounds_run);
            rmx_json_int(j, "retested", retested);
            rmx_json_int(j, "not_retested", nsus - retested);
            rmx_json_num(j, "retest_seconds", MPI_Wtime() - retest_start);
            rmx_json_bool(j, "retest_budget_used_up", retest_rounds_run < nrounds);
        }
        if (run.table) {
            for (int k = ROW_LAT; k <= ROW_BW; k++) {
                printf(k == ROW_LAT ? "# Latency (us), row = from, column = to\n"
                                    : "# Bandwidth (MB/s), row = from, column = to\n");
                for (int i = 0; i < n; i++) {
                    for (int jj = 0; jj < n; jj++)
                        printf(" %9.2f", i == jj ? 0.0 : mat[k][(size_t)i * n + jj] * (k == ROW_LAT ? 1e6 : 1e-6));
                    putchar('\n');
                }
            }
            printf("# %d suspects, %d retested\n", nsus, retested);
        }
    }
    for (int k = 0; k < ROWS; k++)
        free(mat[k]);
    for (int k = 0; k < 4; k++)
        free(tc.val[k]);
    free(tc.first);
    free(units);
    free(sus);
    free(group_of);
    free(order);
    free(sch.partner);
    return net_run_end(&run);
}

RMX_SUBCMD("matrix", cmd_matrix, "all-pairs latency and bandwidth matrices");
