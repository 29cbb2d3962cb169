/* rmax-net rma: one-sided MPI (put, get, accumulate) between two ranks, latency and bandwidth
 * under each synchronisation (the tests of OSU's osu_put_latency, osu_get_bw, osu_acc_latency):
 *
 *   lock   origin: lock (shared), operations, unlock; the target takes no part
 *   flush  origin: one lock per batch, operations then MPI_Win_flush each time (OSU's default)
 *   fence  both ranks: MPI_Win_fence before and after
 *   pscw   origin: start, operations, complete; target: post, wait
 *
 * Latency: one operation per epoch. Under lock and flush rank 0 alone issues them; under fence
 * and pscw the ranks take turns (rank 0's operation, then rank 1's, OSU's ping-pong of epochs)
 * and the time per operation is the round halved. Bandwidth: a window of operations per epoch,
 * each to its own slot of the target's window, from rank 0 only; bytes / time per operation.
 * Rank 0's clock counts (the harness's NET_ROOT).
 *
 * Validation, outside the timed loop, so that it holds only the MPI calls (as OSU's does): the
 * puts of a batch carry a mark of the batch's first sequence number, which the target finds in
 * every slot of its window when the batch ends (every byte with --validate); a get's buffer is
 * spoiled before the batch and checked after it; accumulates of 32-bit unsigned sums leave
 * base + count x operand in each element, which the target checks. Each point is first run once
 * untimed with every byte checked. The target of a passive epoch waits inside a
 * blocking MPI call (the harness's), which drives the progress a one-sided transport without
 * shared memory needs. */
#include "net.h"

#include "rmx_args.h"
#include "rmx_names.h"
#include "rmx_step.h"
#include "rmx_subcmd.h"
#include "rmx_timer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_PUT, OP_GET, OP_ACC, NOPS };
enum { SYNC_LOCK, SYNC_FLUSH, SYNC_FENCE, SYNC_PSCW, NSYNCS };
enum { TEST_LATENCY, TEST_BANDWIDTH, NTESTS };
static const char *const op_names[NOPS] = {"put", "get", "acc"};
static const char *const sync_names[NSYNCS] = {"lock", "flush", "fence", "pscw"};
static const char *const test_names[NTESTS] = {"latency", "bandwidth"};

typedef struct {
    int me, peer, op, sync, test, window, validate, corrupt;
    size_t size;
    MPI_Win win;
    MPI_Group peer_group;
    unsigned char *base;     /* this rank's window */
    unsigned char *obuf;     /* origin buffers, one slot per operation of a window */
    unsigned char *scratch;  /* the accumulate check's expected operand */
    uint64_t point;          /* seed of this point: the get targets' and the accumulate operands' patterns */
    uint64_t seq;            /* operations so far, counted alike on both ranks */
    long long acc_count;     /* accumulates into each slot of this rank's window so far */
    long bad;
} rma_ctx;

static uint64_t slot_seed(const rma_ctx *c, int origin, int k) { return c->point * 131 + (uint64_t)(2 * k + origin); }

/* Marks (or fills) a put's payload; the self-test damages rank 0's. */
static void stamp(rma_ctx *c, unsigned char *buf, uint64_t seed)
{
    if (c->validate)
        net_fill(buf, c->size, seed);
    else
        net_mark(buf, c->size, seed);
    if (c->corrupt && c->me == 0)
        buf[c->size - 1] ^= 0x5a;
}

static int intact(const rma_ctx *c, const unsigned char *buf, uint64_t seed)
{
    return c->validate ? net_check(buf, c->size, seed) == 0 : net_mark_ok(buf, c->size, seed);
}

/* Element i of an accumulate slot: base (the window's pattern) + count x operand (the origin's). */
static size_t acc_wrong(const rma_ctx *c, int k, int origin)
{
    size_t n = c->size / 4, bad = 0;
    uint32_t *got = (uint32_t *)(c->base + (size_t)k * c->size), *base = (uint32_t *)c->scratch,
             *operand = (uint32_t *)(c->scratch + c->size);
    net_fill(c->scratch, c->size, slot_seed(c, 1 - origin, k) ^ 0xba5e);
    net_fill(c->scratch + c->size, c->size, slot_seed(c, origin, k));
    for (size_t i = 0; i < n; i++) {
        if (!c->validate && i != 0 && i != n - 1)
            continue;
        bad += got[i] != (uint32_t)(base[i] + (uint32_t)c->acc_count * operand[i]);
    }
    return bad;
}

/* Before a batch, slots 0..w-1 of this rank's origin buffers: puts marked with the batch's
 * first sequence number, gets spoiled (one that did not land cannot pass for one that did). */
static void prepare(rma_ctx *c, int w)
{
    for (int k = 0; k < w; k++) {
        unsigned char *o = c->obuf + (size_t)k * c->size;
        if (c->op == OP_PUT) {
            stamp(c, o, c->seq * 4 + (uint64_t)c->me);
        } else if (c->op == OP_GET) {
            o[0] ^= 0xff;
            if (c->size > 1)
                o[c->size - 1] ^= 0xff;
        }
    }
}

/* One operation from this rank into slot k of the peer's window. */
static void issue(rma_ctx *c, int k)
{
    size_t off = (size_t)k * c->size;
    unsigned char *o = c->obuf + off;
    int n = (int)c->size;
    if (c->op == OP_PUT) {
        MPI_Put(o, n, MPI_BYTE, c->peer, (MPI_Aint)off, n, MPI_BYTE, c->win);
    } else if (c->op == OP_GET) {
        MPI_Get(o, n, MPI_BYTE, c->peer, (MPI_Aint)off, n, MPI_BYTE, c->win);
    } else {
        MPI_Accumulate(o, n / 4, MPI_UNSIGNED, c->peer, (MPI_Aint)off, n / 4, MPI_UNSIGNED, MPI_SUM, c->win);
    }
}

/* The origin's check once the gets into slots 0..w-1 are complete: the peer's pattern, kept in
 * scratch since the point began (first and last byte; every byte with --validate). */
static void after_epoch(rma_ctx *c, int w)
{
    if (c->op != OP_GET)
        return;
    for (int k = 0; k < w; k++) {
        const unsigned char *got = c->obuf + (size_t)k * c->size, *want = c->scratch + (size_t)k * c->size;
        int ok = c->validate ? memcmp(got, want, c->size) == 0
                             : got[0] == want[0] && got[c->size - 1] == want[c->size - 1];
        c->bad += !ok;
    }
}

/* The target's check of its window when the batch is over: the batch's put mark in each slot,
 * or every accumulate so far. `ops` operations landed in each slot this batch. */
static void target_check(rma_ctx *c, int w, long ops, uint64_t first_seq)
{
    if (c->op == OP_PUT) {
        for (int k = 0; k < w; k++)
            if (!intact(c, c->base + (size_t)k * c->size, first_seq * 4 + (uint64_t)(1 - c->me)))
                c->bad++;
    } else if (c->op == OP_ACC) {
        c->acc_count += ops;
        for (int k = 0; k < w; k++)
            c->bad += acc_wrong(c, k, 1 - c->me) > 0;
    }
}

static void fence(rma_ctx *c) { MPI_Win_fence(0, c->win); }
static void start(rma_ctx *c) { MPI_Win_start(c->peer_group, 0, c->win); }
static void complete(rma_ctx *c) { MPI_Win_complete(c->win); }
static void post(rma_ctx *c) { MPI_Win_post(c->peer_group, 0, c->win); }
static void wait_(rma_ctx *c) { MPI_Win_wait(c->win); }

/* A latency batch: one operation per epoch. Passive syncs: rank 0's loop, the target idle in
 * the barrier that ends the batch. Active syncs: rank 0's epoch, then rank 1's. */
static double latency_batch(rma_ctx *c, long iters)
{
    int passive = c->sync == SYNC_LOCK || c->sync == SYNC_FLUSH, origin0 = c->me == 0;
    if (passive && c->sync == SYNC_FLUSH && origin0)
        MPI_Win_lock(MPI_LOCK_SHARED, c->peer, 0, c->win);
    uint64_t first = c->seq;
    prepare(c, 1);
    double t0 = rmx_now();
    for (long i = 0; i < iters; i++, c->seq++) {
        switch (c->sync) {
        case SYNC_LOCK:
            if (origin0) {
                MPI_Win_lock(MPI_LOCK_SHARED, c->peer, 0, c->win);
                issue(c, 0);
                MPI_Win_unlock(c->peer, c->win);
            }
            break;
        case SYNC_FLUSH:
            if (origin0) {
                issue(c, 0);
                MPI_Win_flush(c->peer, c->win);
            }
            break;
        case SYNC_FENCE:
            fence(c);
            if (origin0)
                issue(c, 0);
            fence(c);
            if (!origin0)
                issue(c, 0);
            fence(c);
            break;
        default:
            if (origin0) {
                start(c);
                issue(c, 0);
                complete(c);
                post(c);
                wait_(c);
            } else {
                post(c);
                wait_(c);
                start(c);
                issue(c, 0);
                complete(c);
            }
        }
    }
    double el = rmx_now() - t0;
    if (origin0 || !passive)
        after_epoch(c, 1);
    if (passive && c->sync == SYNC_FLUSH && origin0)
        MPI_Win_unlock(c->peer, c->win);
    if (passive) {
        MPI_Barrier(MPI_COMM_WORLD);   /* every operation of the batch is complete at the target */
        if (!origin0) {
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, c->me, 0, c->win);
            target_check(c, 1, iters, first);
            MPI_Win_unlock(c->me, c->win);
        }
    } else {
        target_check(c, 1, iters, first);   /* both ranks were targets; the last fence or wait closed it */
    }
    return c->bad ? -1.0 : el;
}

/* A bandwidth batch: a window of operations per epoch, rank 0 the origin. */
static double bandwidth_batch(rma_ctx *c, long iters)
{
    int origin0 = c->me == 0, w = c->window;
    if (c->sync == SYNC_FLUSH && origin0)
        MPI_Win_lock(MPI_LOCK_SHARED, c->peer, 0, c->win);
    uint64_t first = c->seq;
    if (origin0)
        prepare(c, w);
    double t0 = rmx_now();
    for (long i = 0; i < iters; i++, c->seq++) {
        if (origin0) {
            if (c->sync == SYNC_LOCK)
                MPI_Win_lock(MPI_LOCK_SHARED, c->peer, 0, c->win);
            else if (c->sync == SYNC_FENCE)
                fence(c);
            else if (c->sync == SYNC_PSCW)
                start(c);
            for (int k = 0; k < w; k++)
                issue(c, k);
            if (c->sync == SYNC_LOCK)
                MPI_Win_unlock(c->peer, c->win);
            else if (c->sync == SYNC_FLUSH)
                MPI_Win_flush(c->peer, c->win);
            else if (c->sync == SYNC_FENCE)
                fence(c);
            else
                complete(c);
        } else if (c->sync == SYNC_FENCE) {
            fence(c);
            fence(c);
        } else if (c->sync == SYNC_PSCW) {
            post(c);
            wait_(c);
        }
    }
    double el = rmx_now() - t0;
    if (origin0)
        after_epoch(c, w);
    if (c->sync == SYNC_FLUSH && origin0)
        MPI_Win_unlock(c->peer, c->win);
    if (c->sync == SYNC_LOCK || c->sync == SYNC_FLUSH) {
        MPI_Barrier(MPI_COMM_WORLD);   /* every operation of the batch is complete at the target */
        if (!origin0)
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, c->me, 0, c->win);
    }
    if (!origin0)
        target_check(c, w, iters, first);   /* active syncs: the last fence or wait closed the epoch */
    if ((c->sync == SYNC_LOCK || c->sync == SYNC_FLUSH) && !origin0)
        MPI_Win_unlock(c->me, c->win);
    return c->bad ? -1.0 : el;
}

static double rma_batch(void *ctx, long iters)
{
    rma_ctx *c = ctx;
    return c->test == TEST_LATENCY ? latency_batch(c, iters) : bandwidth_batch(c, iters);
}

/* A point's start, on both ranks: get targets hold their pattern, accumulate slots their base
 * and operands theirs, and nothing of the previous point can pass for this one's. Plain stores:
 * no epoch is open (a fence point ends with MPI_MODE_NOSUCCEED), the barrier orders them. */
static void setup_point(rma_ctx *c, uint64_t point)
{
    c->point = point;
    c->acc_count = 0;
    int w = c->test == TEST_LATENCY ? 1 : c->window;
    for (int k = 0; k < w; k++) {
        unsigned char *slot = c->base + (size_t)k * c->size, *o = c->obuf + (size_t)k * c->size;
        if (c->op == OP_GET) {
            net_fill(slot, c->size, slot_seed(c, c->me, k));
            net_fill(c->scratch + (size_t)k * c->size, c->size, slot_seed(c, 1 - c->me, k));
            if (c->corrupt && c->me == 1)
                slot[c->size - 1] ^= 0x5a;   /* the self-test: rank 0's gets must see it */
        } else if (c->op == OP_ACC) {
            net_fill(slot, c->size, slot_seed(c, c->me, k) ^ 0xba5e);
            net_fill(o, c->size, slot_seed(c, c->me, k));
            if (c->corrupt && c->me == 0)
                o[c->size - 1] ^= 0x5a;
        } else {
            memset(slot, 0, c->size);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The chosen names of a list option; an empty list is refused. */
static void parse_names(const char *opt, const char *list, const char *const *names, size_t n, int *chosen)
{
    if (!rmx_names(PROG, opt, "name", list, names, n, chosen))
        rmx_die(2, PROG, "--%s: empty list", opt);
}

int cmd_rma(int argc, char **argv)
{
    const char *json = NULL, *ops = "put,get,acc", *syncs = "lock,flush,fence,pscw", *tests = "latency,bandwidth";
    static size_t default_sizes[] = {8, 512, 65536, 1048576};
    rmx_size_list sizes = {default_sizes, sizeof default_sizes / sizeof default_sizes[0]};
    size_t window_bytes = 64u << 20;
    long long window = 64, max_samples = 200, min_samples = 5;
    double budget = 0.02;
    int validate = 0, corrupt = 0;
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
        {"ops", RMX_ARG_STRING, &ops, "operations: put, get, acc (accumulate, 32-bit unsigned sums)", 0, 0, NULL},
        {"syncs", RMX_ARG_STRING, &syncs, "synchronisations: lock, flush, fence, pscw", 0, 0, NULL},
        {"tests", RMX_ARG_STRING, &tests, "latency, bandwidth", 0, 0, NULL},
        {"sizes", RMX_ARG_SIZE_LIST, &sizes, "message sizes", 1, (double)MAX_MESSAGE, NULL},
        {"window", RMX_ARG_INT, &window, "operations per epoch of the bandwidth test (OSU: 64)", 1, 1024, NULL},
        {"window-bytes", RMX_ARG_SIZE, &window_bytes,
         "at most this many bytes per epoch: large messages get a shorter window (0: no bound)", 0,
         (double)((size_t)1 << 40), NULL},
        {"budget", RMX_ARG_DOUBLE, &budget, "seconds of timed repetitions per point", 0.001, 3600, NULL},
        {"max-samples", RMX_ARG_INT, &max_samples, "most samples per point", 5, 100000, NULL},
        {"min-samples", RMX_ARG_INT, &min_samples, "fewest samples per point (below 5: no warm-up batch)", 2,
         100000, NULL},
        {"validate", RMX_ARG_FLAG, &validate, "check every byte of every operation (slower)", 0, 0, NULL},
        {"self-test-corrupt", RMX_ARG_FLAG, &corrupt, "damage one byte of every payload: validation must fail", 0,
         0, NULL},
    };
    rmx_args_parse(PROG " rma", "One-sided MPI put, get and accumulate: latency and bandwidth per synchronisation.",
                   argc, argv, 2, spec, sizeof spec / sizeof spec[0]);
    int use_op[NOPS] = {0}, use_sync[NSYNCS] = {0}, use_test[NTESTS] = {0};
    parse_names("ops", ops, op_names, NOPS, use_op);
    parse_names("syncs", syncs, sync_names, NSYNCS, use_sync);
    parse_names("tests", tests, test_names, NTESTS, use_test);
    size_t largest = 0;
    for (size_t i = 0; i < sizes.n; i++) {
        if (use_op[OP_ACC] && sizes.v[i] % 4)
            rmx_die(2, PROG, "--sizes: %zu is not a multiple of 4 bytes, as accumulate's 32-bit elements need",
                    sizes.v[i]);
        size_t w = use_test[TEST_BANDWIDTH] ? (size_t)window : 1;
        if (window_bytes && w * sizes.v[i] > window_bytes)
            w = window_bytes / sizes.v[i] ? window_bytes / sizes.v[i] : 1;
        largest = w * sizes.v[i] > largest ? w * sizes.v[i] : largest;
    }

    net_run run;
    if (net_start(&argc, &argv, "rma", 2, 2, &run.me, &run.n))
        return 2;
    net_require_memory(3 * largest, "the window, origin and check buffers");
    rma_ctx c;
    memset(&c, 0, sizeof c);
    c.me = run.me;
    c.peer = 1 - run.me;
    c.validate = validate;
    c.corrupt = corrupt;
    c.obuf = net_alloc(largest, "the origin buffers");
    c.scratch = net_alloc(2 * largest, "the check buffer");
    MPI_Win_allocate((MPI_Aint)largest, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &c.base, &c.win);
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &c.peer, &c.peer_group);
    MPI_Group_free(&world);

    net_run_init(&run, "rmax.rma/1", json);
    net_timing t = net_timing_make(budget, (size_t)max_samples, (size_t)min_samples);
    rmx_json *j = net_run_header(&run, "rma");
    if (j) {
        rmx_json_int(j, "window", window);
        rmx_json_int(j, "window_bytes", (long long)window_bytes);
        rmx_json_num(j, "budget", budget);
        rmx_json_bool(j, "validate_every_message", validate);
        rmx_json_obj_end(j);
    }
    if (run.table)
        printf("# %-4s %-6s %-9s %10s %8s %14s %14s\n", "Op", "Sync", "Test", "Size", "Window", "Latency(us)",
               "MB/s");
    long points = 0, invalid = 0;
    for (int test = 0; test < NTESTS; test++)
        for (int op = 0; op < NOPS; op++)
            for (int sync = 0; sync < NSYNCS; sync++) {
                if (!use_test[test] || !use_op[op] || !use_sync[sync])
                    continue;
                if (run.me == 0) {
                    char step[64];
                    snprintf(step, sizeof step, "rma %s %s %s", op_names[op], sync_names[sync], test_names[test]);
                    rmx_step(step);
                }
                for (size_t i = 0; i < sizes.n; i++) {
                    c.op = op;
                    c.sync = sync;
                    c.test = test;
                    c.size = sizes.v[i];
                    c.window = 1;
                    if (test == TEST_BANDWIDTH) {
                        size_t w = (size_t)window;
                        if (window_bytes && w * c.size > window_bytes)
                            w = window_bytes / c.size ? window_bytes / c.size : 1;
                        c.window = (int)w;
                    }
                    setup_point(&c, (uint64_t)points + 1);
                    /* One untimed batch with every byte checked. */
                    int saved = c.validate, bad, any = 0;
                    c.validate = 1;
                    bad = rma_batch(&c, 1) < 0;
                    c.validate = saved;
                    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
                    net_measure m;
                    memset(&m, 0, sizeof m);
                    if (!any)
                        net_measure_run(MPI_COMM_WORLD, 0, NET_ROOT, &t, rma_batch, &c, &m);
                    if (sync == SYNC_FENCE)
                        MPI_Win_fence(MPI_MODE_NOSUCCEED, c.win);   /* a lock may follow */
                    int failed = any || m.failed;
                    c.bad = 0;
                    points++;
                    invalid += failed;
                    /* Per operation: latency's fence and pscw rounds hold two; a bandwidth epoch a window. */
                    double per = test == TEST_BANDWIDTH ? (double)c.window : (sync >= SYNC_FENCE ? 2.0 : 1.0);
                    if ((j = net_record(&run, "point"))) {
                        rmx_json_str(j, "op", op_names[op]);
                        rmx_json_str(j, "sync", sync_names[sync]);
                        rmx_json_str(j, "test", test_names[test]);
                        rmx_json_int(j, "size", (long long)c.size);
                        rmx_json_int(j, "window", c.window);
                        rmx_json_num(j, "ops_per_iteration", per);
                        net_record_end(&run, !failed, &m, NET_ROOT, per);
                    }
                    if (run.table) {
                        rmx_summary s;
                        rmx_summarize(m.s[NET_ROOT].v, m.s[NET_ROOT].n, &s);
                        double op_s = s.median / per;
                        printf("  %-4s %-6s %-9s %10zu %8d %14.3f %14.1f%s\n", op_names[op], sync_names[sync],
                               test_names[test], c.size, c.window, op_s * 1e6,
                               op_s > 0 ? (double)c.size / op_s / 1e6 : 0.0, failed ? "  INVALID" : "");
                        fflush(stdout);
                    }
                    net_measure_free(&m);
                }
            }
    if ((j = net_run_done(&run))) {
        rmx_json_int(j, "points", points);
        rmx_json_int(j, "invalid", invalid);
    }
    MPI_Group_free(&c.peer_group);
    MPI_Win_free(&c.win);
    return net_run_end(&run);
}

RMX_SUBCMD("rma", cmd_rma, "one-sided put, get, accumulate: latency and bandwidth per synchronisation");
