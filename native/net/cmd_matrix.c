/* rmax-net matrix: all-pairs latency and bandwidth (the mpiGraph / ClusterKit
 * method). The pairs are scheduled as a round-robin tournament: N-1 rounds
 * (N with a rank sitting out when N is odd) of N/2 pairs that run at once,
 * so every pair is measured under the same load. Per pair: a ping-pong of
 * lat-size bytes, and a stream of bw-size messages each way.
 *
 * Then the suspects: a pair is compared with the pairs of its class (same
 * switch, or across switches, when --groups names the hosts of each switch;
 * else all pairs): latency above 2x the class median, or bandwidth below 90%
 * of it, makes it a suspect, measured again alone (everyone else waits)
 * --retests times. Each suspect has a control: the pair of its class and kind
 * nearest the class median that is no suspect (sharing no rank with it where
 * one can), measured alone in turn with it, so that the two alone values are
 * taken under the same conditions (a shared host can change speed between the
 * concurrent rounds and the retests). Each alone measurement also says
 * whether the pair's two ranks shared one CPU meanwhile (colocate.c): then it
 * measured that CPU, not the network. The matrices stay the concurrent
 * measurements; the alone values are reported beside them, and the caller
 * decides what is flagged. */
#include "p2p.h"

#include "rmx_args.h"
#include "rmx_step.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAT_FACTOR 2.0
#define BW_FRACTION 0.9
#define KEEP 64  /* raw samples kept per pair and measurement (N x N x KEEP doubles on rank 0) */

typedef struct {
    net_pair p;
    net_timing t;
    size_t lat_size, bw_size;
} matrix_ctx;

/* One measurement between world ranks a (initiator / sender) and b; every rank
 * calls it, and the ranks of no pair wait without polling. Returns, on world
 * rank a, the latency (one-way seconds) or the bandwidth (bytes/s); *bad on a
 * says whether validation failed; *shared, on a and b, whether they ran on one
 * CPU meanwhile (colocate.c). */
static double measure_pair(matrix_ctx *x, int a, int b, int bandwidth, int *bad, int *n, double *kept, int *shared)
{
    MPI_Comm pc = net_pair_comm(a, b);
    double value = NAN;
    *bad = 0;
    *n = 0;
    *shared = 0;
    if (pc == MPI_COMM_NULL) {
        net_quiet_barrier(MPI_COMM_WORLD, 1);
        return value;
    }
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
    if (!*bad)
        net_measure_run(pc, 0, NET_ROOT, &x->t, k->fn, p, &m);
    *bad |= m.failed;
    *shared = net_pair_shared_cpu(pc, cpu);
    if (p->me == 0 && m.s[NET_ROOT].n) {
        rmx_summary s;
        rmx_summarize(m.s[NET_ROOT].v, m.s[NET_ROOT].n, &s);
        value = bandwidth ? (double)p->window * (double)p->size / s.median : s.median / 2;
        /* the raw samples, in the unit of the matrix: one-way seconds or bytes/s */
        for (size_t i = 0; i < m.s[NET_ROOT].n && i < KEEP; i++) {
            double v = m.s[NET_ROOT].v[i];
            if (kept)
                kept[i] = bandwidth ? (double)p->window * (double)p->size / v : v / 2;
            *n = (int)i + 1;
        }
    }
    net_measure_free(&m);
    MPI_Comm_free(&pc);
    net_quiet_barrier(MPI_COMM_WORLD, 0);
    return value;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A pair's class: 0 within one switch group, 1 across groups; 0 for all when no groups are known. */
static int pair_class(const int *group_of, int i, int j)
{
    return group_of && group_of[i] != group_of[j];
}

/* Median of the matrix over the off-diagonal pairs of class cls (latency: each unordered pair once). */
static double class_median(const double *v, int n, const int *group_of, int cls, int symmetric)
{
    double *x = malloc((size_t)n * (size_t)n * sizeof *x);
    int k = 0;
    for (int i = 0; i < n; i++)
        for (int j = symmetric ? i + 1 : 0; j < n; j++)
            if (i != j && pair_class(group_of, i, j) == cls && isfinite(v[i * n + j]))
                x[k++] = v[i * n + j];
    qsort(x, (size_t)k, sizeof *x, cmp_double);
    double med = k ? (k % 2 ? x[k / 2] : 0.5 * (x[k / 2 - 1] + x[k / 2])) : NAN;
    free(x);
    return med;
}

static int off_class(const double *lat, const double *bw, int n, const int *group_of, int i, int j, int bandwidth)
{
    int cls = pair_class(group_of, i, j);
    double med = class_median(bandwidth ? bw : lat, n, group_of, cls, !bandwidth);
    return bandwidth ? bw[i * n + j] < BW_FRACTION * med : lat[i * n + j] > LAT_FACTOR * med;
}

/* Whether a -> b is a suspect of this kind (latency pairs are all kept lower rank first). */
static int is_suspect(const int *sus, int nsus, int a, int b, int kind)
{
    for (int s = 0; s < nsus; s++)
        if (sus[5 * s + 2] == kind && sus[5 * s] == a && sus[5 * s + 1] == b)
            return 1;
    return 0;
}

/* The control of suspect s (see the top): sets sus[5s+3], sus[5s+4] to its ranks, or -1. */
static void pick_control(const double *lat, const double *bw, int n, const int *group_of, int *sus, int nsus, int s)
{
    const int i = sus[5 * s], j = sus[5 * s + 1], kind = sus[5 * s + 2], cls = pair_class(group_of, i, j);
    const double *v = kind ? bw : lat;
    const double med = class_median(v, n, group_of, cls, !kind);
    double best = INFINITY;
    sus[5 * s + 3] = sus[5 * s + 4] = -1;
    for (int a = 0; a < n; a++)
        for (int b = kind ? 0 : a + 1; b < n; b++) {
            if (a == b || pair_class(group_of, a, b) != cls || !isfinite(v[a * n + b]) || v[a * n + b] <= 0 ||
                is_suspect(sus, nsus, a, b, kind))
                continue;
            /* distance from the median in log, plus a penalty for sharing a rank with the suspect */
            const double d = fabs(log(v[a * n + b] / med)) + (a == i || a == j || b == i || b == j ? 10.0 : 0.0);
            if (d < best) {
                best = d;
                sus[5 * s + 3] = a;
                sus[5 * s + 4] = b;
            }
        }
}

static void write_matrix(rmx_json *j, const char *key, const double *v, int n)
{
    rmx_json_arr_begin(j, key);
    for (int i = 0; i < n; i++)
        rmx_json_nums(j, NULL, v + (size_t)i * n, (size_t)n);
    rmx_json_arr_end(j);
}

int cmd_matrix(int argc, char **argv)
{
    const char *json = NULL, *groups = NULL;
    size_t lat_size = 8, bw_size = 1 << 20;
    long long window = 8, max_samples = 20, retests = 3;
    double budget = 0.01;
    int no_retest = 0;
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
        {"lat-size", RMX_ARG_SIZE, &lat_size, "latency message size", 0, 1 << 30, NULL},
        {"bw-size", RMX_ARG_SIZE, &bw_size, "bandwidth message size", 1, 1 << 30, NULL},
        {"window", RMX_ARG_INT, &window, "messages in flight for bandwidth", 1, 1024, NULL},
        {"budget", RMX_ARG_DOUBLE, &budget, "seconds of timed repetitions per pair and measurement", 0.001, 3600,
         NULL},
        {"max-samples", RMX_ARG_INT, &max_samples, "most samples per pair and measurement", 5, 100000, NULL},
        {"no-retest", RMX_ARG_FLAG, &no_retest, "report suspects without measuring them again", 0, 0, NULL},
        {"retests", RMX_ARG_INT, &retests, "times each suspect is measured alone", 1, 100, NULL},
        {"groups", RMX_ARG_STRING, &groups,
         "hosts per switch, 'h1,h2;h3,h4': a pair is compared with pairs of its class (same switch or across)", 0,
         0, NULL},
    };
    rmx_args_parse(PROG " matrix", "All-pairs latency and bandwidth matrices.", argc, argv, 2, spec,
                   sizeof spec / sizeof spec[0]);
    net_run run;
    if (net_start(&argc, &argv, "matrix", 2, 0, &run.me, &run.n))
        return 2;
    int me = run.me, n = run.n;
    size_t big = lat_size > bw_size ? lat_size : bw_size;
    net_require_memory(2 * big, "the send and receive buffers");
    matrix_ctx x;
    memset(&x, 0, sizeof x);
    x.lat_size = lat_size;
    x.bw_size = bw_size;
    x.t = net_timing_make(budget, (size_t)max_samples);
    x.p.sbuf = net_alloc(big, "the send buffer");
    x.p.rbuf = net_alloc(big, "the receive buffer");
    x.p.req = malloc(2 * (size_t)window * sizeof *x.p.req);
    x.p.window = (int)window;
    x.p.tcp = x.p.udp = -1;
    net_run_init(&run, "rmax.matrix/1", json);

    /* my row: latency to j (when I initiated), bandwidth from me to j */
    double *lat_row = malloc((size_t)n * sizeof *lat_row), *bw_row = malloc((size_t)n * sizeof *bw_row);
    double *lat_keep = calloc((size_t)n * KEEP, sizeof *lat_keep), *bw_keep = calloc((size_t)n * KEEP, sizeof *bw_keep);
    int *lat_cnt = calloc((size_t)n, sizeof *lat_cnt), *bw_cnt = calloc((size_t)n, sizeof *bw_cnt);
    /* 1 where the pair's two ranks shared one CPU in any of its three measurements */
    double *shared_row = calloc((size_t)n, sizeof *shared_row);
    int bad_row = 0;
    for (int j = 0; j < n; j++)
        lat_row[j] = bw_row[j] = NAN;
    int m_ = n % 2 ? n + 1 : n;  /* a ghost rank makes the count even; its partner sits the round out */
    for (int round = 0; round < m_ - 1; round++) {
        int partner = -1;
        for (int k = 0; k < m_ / 2; k++) {
            int a = k == 0 ? m_ - 1 : (round + k) % (m_ - 1);
            int b = k == 0 ? round : (round - k + m_ - 1) % (m_ - 1);
            if (a == me)
                partner = b;
            if (b == me)
                partner = a;
        }
        if (partner >= n)
            partner = -1;
        if (me == 0) {
            char step[48];
            snprintf(step, sizeof step, "matrix round %d", round);
            rmx_step(step);
        }
        int lo = partner < 0 ? -1 : (me < partner ? me : partner), hi = partner < 0 ? -1 : (me < partner ? partner : me);
        int bad, cnt, slot = partner < 0 ? 0 : partner, sh[3];
        double v = measure_pair(&x, lo, hi, 0, &bad, &cnt, lat_keep + (size_t)slot * KEEP, &sh[0]);
        if (me == lo && partner >= 0) {
            lat_row[partner] = v;
            lat_cnt[partner] = cnt;
            bad_row |= bad;
        }
        v = measure_pair(&x, lo, hi, 1, &bad, &cnt, bw_keep + (size_t)slot * KEEP, &sh[1]);  /* lo sends */
        if (me == lo && partner >= 0) {
            bw_row[partner] = v;
            bw_cnt[partner] = cnt;
            bad_row |= bad;
        }
        v = measure_pair(&x, hi, lo, 1, &bad, &cnt, bw_keep + (size_t)slot * KEEP, &sh[2]);  /* hi sends */
        if (me == hi && partner >= 0) {
            bw_row[partner] = v;
            bw_cnt[partner] = cnt;
            bad_row |= bad;
        }
        if (partner >= 0)
            shared_row[partner] = sh[0] || sh[1] || sh[2];
    }
    double *lat = me == 0 ? malloc((size_t)n * n * sizeof *lat) : NULL;
    double *bw = me == 0 ? malloc((size_t)n * n * sizeof *bw) : NULL;
    MPI_Gather(lat_row, n, MPI_DOUBLE, lat, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(bw_row, n, MPI_DOUBLE, bw, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double *shared_all = me == 0 ? malloc((size_t)n * n * sizeof *shared_all) : NULL;
    MPI_Gather(shared_row, n, MPI_DOUBLE, shared_all, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    size_t cells = (size_t)n * n;
    double *lat_all = me == 0 ? malloc(cells * KEEP * sizeof *lat_all) : NULL;
    double *bw_all = me == 0 ? malloc(cells * KEEP * sizeof *bw_all) : NULL;
    int *lat_alln = me == 0 ? malloc(cells * sizeof *lat_alln) : NULL;
    int *bw_alln = me == 0 ? malloc(cells * sizeof *bw_alln) : NULL;
    MPI_Gather(lat_keep, n * KEEP, MPI_DOUBLE, lat_all, n * KEEP, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(bw_keep, n * KEEP, MPI_DOUBLE, bw_all, n * KEEP, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(lat_cnt, n, MPI_INT, lat_alln, n, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(bw_cnt, n, MPI_INT, bw_alln, n, MPI_INT, 0, MPI_COMM_WORLD);
    int any_bad = 0;
    MPI_Reduce(&bad_row, &any_bad, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);

    /* suspects: (i, j, kind, control i, control j) with kind 0 latency, 1 bandwidth i -> j */
    int cap = 4 * n, nsus = 0;
    int *sus = malloc((size_t)cap * 5 * sizeof *sus);
    int *group_of = NULL, *order = NULL;
    if (me == 0 && groups) {
        group_of = malloc((size_t)n * sizeof *group_of);
        order = malloc((size_t)n * sizeof *order);
        if (net_group_order(groups, run.hosts, n, order, group_of) < 0) {  /* a host in no group: one class */
            free(group_of);
            group_of = NULL;
        }
    }
    if (me == 0) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < i; j++)
                lat[i * n + j] = lat[j * n + i];  /* measured once, by the lower rank */
        for (int i = 0; i < n && !no_retest; i++)
            for (int j = 0; j < n; j++) {
                if (i == j)
                    continue;
                for (int kind = 0; kind < 2; kind++)
                    if ((kind == 1 || i < j) && off_class(lat, bw, n, group_of, i, j, kind) && nsus < cap) {
                        sus[5 * nsus] = i;
                        sus[5 * nsus + 1] = j;
                        sus[5 * nsus + 2] = kind;
                        nsus++;
                    }
            }
        for (int s = 0; s < nsus; s++)
            pick_control(lat, bw, n, group_of, sus, nsus, s);
    }
    MPI_Bcast(&nsus, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(sus, 5 * nsus, MPI_INT, 0, MPI_COMM_WORLD);
    double *retest = malloc(((size_t)nsus * (size_t)retests + 1) * sizeof *retest);
    double *control = malloc(((size_t)nsus * (size_t)retests + 1) * sizeof *control);
    /* whether each of those ran with its two ranks on one CPU */
    double *retest_shared = malloc(((size_t)nsus * (size_t)retests + 1) * sizeof *retest_shared);
    double *control_shared = malloc(((size_t)nsus * (size_t)retests + 1) * sizeof *control_shared);
    if (nsus)
        rmx_step("matrix retests");
    /* each suspect alone, then its control alone, `retests` times, the suspects taking turns */
    for (long r = 0; r < retests; r++)
        for (int s = 0; s < nsus; s++)
            for (int c = 0; c < 2; c++) {
                const int *pair = sus + 5 * s + (c ? 3 : 0); /* the suspect, then its control */
                const int i = pair[0], jj = pair[1], kind = sus[5 * s + 2];
                const size_t at = (size_t)s * (size_t)retests + (size_t)r;
                double *out = (c ? control : retest) + at, *sh = (c ? control_shared : retest_shared) + at;
                int bad, cnt, shared;
                *out = NAN;
                *sh = 0;
                if (i < 0)
                    continue;
                double v = measure_pair(&x, i, jj, kind, &bad, &cnt, NULL, &shared);
                double msg[3] = {v, bad, shared};
                MPI_Bcast(msg, 3, MPI_DOUBLE, i, MPI_COMM_WORLD);
                *out = msg[0];
                *sh = msg[2];
                any_bad |= msg[1] != 0;
            }

    if (me == 0) {
        rmx_json *j = net_run_header(&run, "matrix");
        if (j) {
            rmx_json_int(j, "lat_size", (long long)lat_size);
            rmx_json_int(j, "bw_size", (long long)bw_size);
            rmx_json_int(j, "window", window);
            rmx_json_int(j, "rounds", m_ - 1);
            rmx_json_int(j, "retests", retests);
            rmx_json_bool(j, "classes", group_of != NULL);
            rmx_json_arr_begin(j, "group_of");   /* each rank's switch group, when known */
            for (int r = 0; r < n && group_of; r++)
                rmx_json_int(j, NULL, group_of[r]);
            rmx_json_arr_end(j);
            rmx_json_obj_end(j);
            net_record(&run, "matrix");
            write_matrix(j, "latency", lat, n);
            write_matrix(j, "bandwidth", bw, n);
            write_matrix(j, "cpu_shared", shared_all, n);
            rmx_json_arr_begin(j, "suspects");
            for (int s = 0; s < nsus; s++) {
                int i = sus[5 * s], jj = sus[5 * s + 1], kind = sus[5 * s + 2];
                rmx_json_obj_begin(j, NULL);
                rmx_json_int(j, "from", i);
                rmx_json_int(j, "to", jj);
                rmx_json_str(j, "kind", kind ? "bandwidth" : "latency");
                rmx_json_str(j, "class", !group_of ? "all" : pair_class(group_of, i, jj) ? "across" : "same");
                rmx_json_num(j, "concurrent", kind ? bw[i * n + jj] : lat[i * n + jj]);
                rmx_json_nums(j, "alone", retest + (size_t)s * (size_t)retests, (size_t)retests);
                rmx_json_nums(j, "alone_cpu_shared", retest_shared + (size_t)s * (size_t)retests, (size_t)retests);
                if (sus[5 * s + 3] >= 0) {
                    rmx_json_int(j, "control_from", sus[5 * s + 3]);
                    rmx_json_int(j, "control_to", sus[5 * s + 4]);
                    rmx_json_nums(j, "control", control + (size_t)s * (size_t)retests, (size_t)retests);
                    rmx_json_nums(j, "control_cpu_shared", control_shared + (size_t)s * (size_t)retests,
                                  (size_t)retests);
                }
                rmx_json_obj_end(j);
            }
            rmx_json_arr_end(j);
            /* first-pass raw samples per pair (row = from; latency measured by the lower rank) */
            for (int kind = 0; kind < 2; kind++) {
                const double *all = kind ? bw_all : lat_all;
                const int *cnt = kind ? bw_alln : lat_alln;
                rmx_json_arr_begin(j, kind ? "samples_bandwidth" : "samples_latency");
                for (int i = 0; i < n; i++) {
                    rmx_json_arr_begin(j, NULL);
                    for (int jj = 0; jj < n; jj++)
                        rmx_json_nums(j, NULL, all + ((size_t)i * n + jj) * KEEP, (size_t)cnt[i * n + jj]);
                    rmx_json_arr_end(j);
                }
                rmx_json_arr_end(j);
            }
            rmx_json_bool(j, "validated", !any_bad);
            rmx_json_obj_end(j);
            net_run_done(&run);
        }
        if (run.table) {
            printf("# Latency (us), row = from, column = to\n");
            for (int i = 0; i < n; i++) {
                for (int jj = 0; jj < n; jj++)
                    printf(" %9.2f", i == jj ? 0.0 : lat[i * n + jj] * 1e6);
                putchar('\n');
            }
            printf("# Bandwidth (MB/s), row = from, column = to\n");
            for (int i = 0; i < n; i++) {
                for (int jj = 0; jj < n; jj++)
                    printf(" %9.0f", i == jj ? 0.0 : bw[i * n + jj] / 1e6);
                putchar('\n');
            }
        }
    }
    free(lat_row);
    free(bw_row);
    free(lat_keep);
    free(bw_keep);
    free(lat_cnt);
    free(bw_cnt);
    free(shared_row);
    free(shared_all);
    free(lat_all);
    free(bw_all);
    free(lat_alln);
    free(bw_alln);
    free(lat);
    free(bw);
    free(group_of);
    free(order);
    free(sus);
    free(retest);
    free(control);
    free(retest_shared);
    free(control_shared);
    return net_run_end(&run);
}
