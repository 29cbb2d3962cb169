/* rmax-net coll: collectives vs message size, vs process count (goptest:
 * sub-communicators of the first 2, 4, ..., all launched ranks) and vs rank
 * order (natural; second half reversed; random; and the node orders of the
 * Helix study (Massey University, 2004): cyclic, one rank of each node in turn,
 * 1..64,1..64, and serpentine, the turn reversed every other pass,
 * 1..64,64..1, which put fewer SMP neighbours in the same Allreduce step).
 * Each point reports the per-call time's min, mean and max over the ranks
 * (IMB's t_min, t_avg, t_max); the mean drives the repetition rule. Before
 * and after the timed calls the outputs are checked against the seed. */
#include "coll.h"

#include "rmx_args.h"
#include "rmx_names.h"
#include "rmx_step.h"
#include "rmx_subcmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const orders_all[] = {"natural", "reversed", "random", "cyclic", "serpentine"};
#define NORDERS (sizeof orders_all / sizeof orders_all[0])

static int in_list(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *c = list; c && *c;) {
        const char *comma = strchr(c, ',');
        size_t len = comma ? (size_t)(comma - c) : strlen(c);
        if (len == n && strncmp(c, word, n) == 0)
            return 1;
        c = comma ? comma + 1 : NULL;
    }
    return 0;
}

/* seq = ranks 0..p-1 taken one per node in turn, nodes in order of their
 * first rank; with serpentine every other turn walks the nodes backwards. */
static void node_turns(int p, char (*hosts)[64], int serpentine, int *seq)
{
    int *node = malloc((size_t)p * sizeof *node), nodes = 0;
    for (int r = 0; r < p; r++) {
        int k = 0;
        while (k < r && strcmp(hosts[k], hosts[r]) != 0)
            k++;
        node[r] = k < r ? node[k] : nodes++;
    }
    char *used = calloc((size_t)p, 1);
    for (int filled = 0, pass = 0; filled < p; pass++) {
        int back = serpentine && pass % 2;
        for (int i = 0; i < nodes; i++) {
            int want = back ? nodes - 1 - i : i;
            for (int r = 0; r < p; r++)
                if (!used[r] && node[r] == want) {
                    used[r] = 1;
                    seq[filled++] = r;
                    break;
                }
        }
    }
    free(used);
    free(node);
}

/* The point the sweep budget stopped at: its process count and order, and its operation and size
 * (NULL: the count and order's first); the points from there on were left out. */
static void cut_record(rmx_json *j, const net_sweep *sw, int p, const char *order, const char *op, size_t size)
{
    rmx_json_int(j, "procs", p);
    rmx_json_str(j, "order", order);
    if (op) {
        rmx_json_str(j, "op", op);
        rmx_json_int(j, "size", (long long)size);
    }
    net_sweep_cut_end(j, sw);
}

/* Positions of ranks 0..p-1 in the given order (hosts: every rank's host). */
static void make_order(const char *order, int p, char (*hosts)[64], int *pos_of_rank, uint64_t *state)
{
    int *seq = malloc((size_t)p * sizeof *seq);
    for (int i = 0; i < p; i++)
        seq[i] = i;
    if (strcmp(order, "cyclic") == 0 || strcmp(order, "serpentine") == 0) {
        node_turns(p, hosts, order[0] == 's', seq);
    } else if (strcmp(order, "reversed") == 0) {
        for (int a = p / 2, b = p - 1; a < b; a++, b--) {
            int t = seq[a];
            seq[a] = seq[b];
            seq[b] = t;
        }
    } else if (strcmp(order, "random") == 0) {
        net_shuffle(seq, p, state);
    }
    for (int i = 0; i < p; i++)
        pos_of_rank[seq[i]] = i;
    free(seq);
}

int cmd_coll(int argc, char **argv)
{
    const char *json = NULL, *ops = "bcast,reduce,allreduce,allgather,alltoall,barrier";
    const char *orders = "natural,reversed,random";
    static size_t default_sizes[] = {8, 64, 512, 4096, 32768, 262144, 1048576};
    rmx_size_list sizes = {default_sizes, sizeof default_sizes / sizeof default_sizes[0]}, procs = {NULL, 0};
    double budget = 0.02, sweep_budget = 0;
    long long max_samples = 100, min_samples = 5, seed = 1;
    int corrupt = 0;
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
        {"ops", RMX_ARG_STRING, &ops, "comma-separated operations", 0, 0, NULL},
        {"sizes", RMX_ARG_SIZE_LIST, &sizes, "bytes per rank", 0, (double)MAX_MESSAGE, NULL},
        {"procs", RMX_ARG_SIZE_LIST, &procs, "process counts (default 2,4,8,...,all)", 2, 1 << 20, NULL},
        {"orders", RMX_ARG_STRING, &orders, "rank orders: natural,reversed,random,cyclic,serpentine", 0, 0,
         NULL},
        {"seed", RMX_ARG_INT, &seed, "seed of the random order", 1, 1e18, NULL},
        {"budget", RMX_ARG_DOUBLE, &budget, "seconds of timed repetitions per point", 0.001, 3600, NULL},
        {"sweep-budget", RMX_ARG_DOUBLE, &sweep_budget,
         "seconds all its points may take (0: no limit); past them the points not yet measured are left out "
         "(a 'cut' record names the first)",
         0, 86400, NULL},
        {"max-samples", RMX_ARG_INT, &max_samples, "most samples per point", 5, 100000, NULL},
        {"min-samples", RMX_ARG_INT, &min_samples,
         "fewest samples per measurement (below 5: no separate warm-up batch)", 2, 100000, NULL},
        {"self-test-corrupt", RMX_ARG_FLAG, &corrupt, "rank 0 damages its input: validation must fail", 0, 0,
         NULL},
    };
    rmx_args_parse(PROG " coll", "Collectives vs message size, process count and rank order.", argc, argv, 2, spec,
                   sizeof spec / sizeof spec[0]);
    const char *opnames[16];
    for (size_t k = 0; k < net_coll_nops; k++)
        opnames[k] = net_coll_ops[k].name;
    rmx_names(PROG, "ops", "name", ops, opnames, net_coll_nops, NULL);
    rmx_names(PROG, "orders", "name", orders, orders_all, NORDERS, NULL);

    net_run run;
    if (net_start(&argc, &argv, "coll", 2, 0, &run.me, &run.n))
        return 2;
    int me = run.me, n = run.n;
    /* goptest's process counts: powers of two, then everyone. */
    size_t pc[64], npc = 0;
    if (procs.v) {
        for (size_t i = 0; i < procs.n; i++) {
            if (procs.v[i] > (size_t)n)
                net_fail(2, "--procs: %zu is more than the %d ranks launched", procs.v[i], n);
            pc[npc++] = procs.v[i];
        }
    } else {
        for (size_t q = 2; q < (size_t)n && npc < 63; q *= 2)
            pc[npc++] = q;
        pc[npc++] = (size_t)n;
    }
    size_t largest = net_largest(sizes.v, sizes.n);
    net_require_memory(2 * largest * (size_t)n, "the collective buffers (2 x size x ranks)");
    net_coll c;
    memset(&c, 0, sizeof c);
    c.in = net_alloc(largest * (size_t)n, "the input buffer");
    c.out = net_alloc(largest * (size_t)n, "the output buffer");
    net_run_init(&run, "rmax.coll/1", json);
    rmx_json *j = net_run_header(&run, "coll");
    if (j) {
        rmx_json_str(j, "ops", ops);
        rmx_json_str(j, "orders", orders);
        rmx_json_int(j, "seed", seed);
        rmx_json_num(j, "sweep_budget", sweep_budget);
        rmx_json_arr_begin(j, "procs");
        for (size_t i = 0; i < npc; i++)
            rmx_json_int(j, NULL, (long long)pc[i]);
        rmx_json_arr_end(j);
        rmx_json_obj_end(j);
    }
    if (run.table)
        printf("# %-10s %6s %-9s %10s %14s %12s %12s\n", "Op", "Procs", "Order", "Size", "Avg Latency(us)",
               "Min(us)", "Max(us)");

    net_timing t = net_timing_make(budget, (size_t)max_samples, (size_t)min_samples);
    uint64_t state = (uint64_t)seed * 0x9e3779b97f4a7c15ULL + 1;
    long points = 0, invalid = 0;
    /* the positions, and after them rank 0's word on the sweep budget (1: used up) */
    int *pos = malloc(((size_t)n + 1) * sizeof *pos);
    net_sweep sw = net_sweep_start(sweep_budget);
    /* cut: this rank saw the sweep budget run out inside a process count it measured (the members of
     * one count decide together); stop: every rank leaves at the next count and order, told by rank 0 */
    int cut = 0, stop = 0;
    for (size_t ip = 0; ip < npc && !stop; ip++) {
        int p = (int)pc[ip];
        for (size_t io = 0; io < NORDERS && !stop; io++) {
            const char *order = orders_all[io];
            if (!in_list(orders, order))
                continue;
            if (me == 0) {
                make_order(order, p, run.hosts, pos, &state);
                pos[p] = cut || net_sweep_past(&sw, me);
                char step[64];
                snprintf(step, sizeof step, "coll p=%d %s", p, order);
                rmx_step(step);
            }
            MPI_Bcast(pos, p + 1, MPI_INT, 0, MPI_COMM_WORLD);
            if ((stop = pos[p])) {
                if (!cut && (j = net_record(&run, "cut")))
                    cut_record(j, &sw, p, order, NULL, 0);
                break;
            }
            MPI_Comm sub;
            MPI_Comm_split(MPI_COMM_WORLD, me < p ? 0 : MPI_UNDEFINED, me < p ? pos[me] : 0, &sub);
            if (sub != MPI_COMM_NULL) {
                c.comm = sub;
                c.p = p;
                MPI_Comm_rank(sub, &c.me);
                int root = pos[0];  /* world rank 0 decides, so that it holds the samples it writes */
                for (size_t k = 0; k < net_coll_nops && !cut; k++) {
                    const net_coll_op *op = &net_coll_ops[k];
                    if (!in_list(ops, op->name))
                        continue;
                    for (size_t is = 0; is < (op->sized ? sizes.n : 1); is++) {
                        c.size = op->sized ? sizes.v[is] : 0;
                        /* the same on every member, whichever points it took part in before */
                        uint64_t s = (((uint64_t)ip * 3 + io) * 16 + k) * 4096 + is + 1;
                        points++;
                        op->setup(&c, s);
                        if (corrupt)
                            net_coll_damage(&c);
                        op->run(&c, 1);
                        /* this rank's wrong bytes, and (world rank 0's) whether the sweep budget is used
                         * up, in the one reduction the point makes before it is timed */
                        long word[2] = {(long)op->check(&c, s), net_sweep_past(&sw, me)};
                        long sum[2] = {0, 0};
                        MPI_Allreduce(word, sum, 2, MPI_LONG, MPI_SUM, sub);
                        if (sum[1]) {
                            cut = 1;
                            points--;
                            if ((j = net_record(&run, "cut")))
                                cut_record(j, &sw, p, order, op->name, c.size);
                            break;
                        }
                        long bad = word[0], anybad = sum[0];
                        net_measure m;
                        memset(&m, 0, sizeof m);
                        if (!anybad) {
                            net_measure_run(sub, root, NET_AVG, &t, op->run, &c, &m);
                            bad = (long)op->check(&c, s);  /* the timed calls left the same answer */
                            MPI_Allreduce(&bad, &anybad, 1, MPI_LONG, MPI_SUM, sub);
                        }
                        int failed = anybad > 0 || m.failed;
                        invalid += failed;
                        if ((j = net_record(&run, "point"))) {
                            rmx_json_str(j, "op", op->name);
                            rmx_json_int(j, "procs", p);
                            rmx_json_str(j, "order", order);
                            rmx_json_arr_begin(j, "rank_order");
                            for (int r = 0; r < p; r++)
                                for (int q = 0; q < p; q++)
                                    if (pos[q] == r)
                                        rmx_json_int(j, NULL, q);
                            rmx_json_arr_end(j);
                            rmx_json_int(j, "size", (long long)c.size);
                            rmx_json_int(j, "wrong_bytes", anybad);
                            net_record_end(&run, !failed, &m, NET_AVG, 1.0);
                        }
                        if (run.table) {
                            rmx_summary a, lo, hi;
                            rmx_summarize(m.s[NET_AVG].v, m.s[NET_AVG].n, &a);
                            rmx_summarize(m.s[NET_MIN].v, m.s[NET_MIN].n, &lo);
                            rmx_summarize(m.s[NET_MAX].v, m.s[NET_MAX].n, &hi);
                            printf("  %-10s %6d %-9s %10zu %14.2f %12.2f %12.2f%s\n", op->name, p, order, c.size,
                                   a.median * 1e6, lo.median * 1e6, hi.median * 1e6, failed ? "  INVALID" : "");
                            fflush(stdout);
                        }
                        net_measure_free(&m);
                    }
                }
                MPI_Comm_free(&sub);
            }
            net_quiet_barrier(MPI_COMM_WORLD, me >= p ? NET_IDLE_LONG : NET_IDLE_NO);  /* ranks left out sleep */
        }
    }
    long total_invalid = 0;
    MPI_Reduce(&invalid, &total_invalid, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if ((j = net_run_done(&run)))
        rmx_json_int(j, "invalid", total_invalid);
    free(pos);
    return net_run_end(&run);
}

RMX_SUBCMD("coll", cmd_coll, "collectives vs message size, process count and rank order");
