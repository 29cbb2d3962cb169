/* memlat: load-to-use latency by pointer chasing (lmbench's lat_mem_rd), vs
 * working-set size, with two chains:
 *  - random (the default): one cycle through every cache line of the set in
 *    random order (Sattolo's algorithm), which defeats prefetching; large sets are on
 *    transparent huge pages where the kernel grants them, so the curve shows
 *    caches rather than TLB reach;
 *  - stride: node i points to node i+1, --stride bytes apart, as lat_mem_rd;
 *    hardware prefetchers follow it, so it stays near L1 latency far past L1.
 * Each load depends on the previous one, so time / loads is the latency.
 * The chain is checked before timing: every link is the one the visit order
 * prescribes and the order is a permutation, i.e. one cycle through all nodes. */
#include "measure.h"
#include "node_util.h"

#include "rmx_step.h"
#include "rmx_subcmd.h"
#include "rmx_timer.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static const node_kernel K = {
    "rmax-node memlat", "rmax.memlat/1", "Memory load latency by pointer chasing vs working-set size.",
    "# Pattern          Bytes    Median ns       Min ns       Max ns      n",
    "ns per dependent load: median, min, max of n timed chases",
    "a chain is not one cycle through every node",
};
#define LINE 64

typedef struct {
    char *buf;
    size_t stride, nodes;
    uint32_t *order; /* visit order: order[i] -> order[i+1] */
    size_t loads;    /* per sample */
    void *volatile sink;
} chase_ctx;

static void *node_at(chase_ctx *c, size_t i) { return c->buf + i * c->stride; }

static void build(chase_ctx *c, int random, node_rng *rng)
{
    for (size_t i = 0; i < c->nodes; i++)
        c->order[i] = (uint32_t)i;
    if (random) /* Sattolo: a uniformly random single cycle (Fisher-Yates with j < i) */
        for (size_t i = c->nodes - 1; i > 0; i--) {
            size_t j = (size_t)(node_rand(rng) % i);
            uint32_t t = c->order[i];
            c->order[i] = c->order[j];
            c->order[j] = t;
        }
    for (size_t i = 0; i < c->nodes; i++)
        *(void **)node_at(c, c->order[i]) = node_at(c, c->order[(i + 1) % c->nodes]);
}

/* Independent loads, so fast even for large chains (no dependency between them). */
static int check_chain(chase_ctx *c)
{
    unsigned char *seen = calloc(c->nodes, 1);
    if (!seen)
        return 0;
    int ok = 1;
    for (size_t i = 0; i < c->nodes && ok; i++) {
        size_t k = c->order[i];
        if (k >= c->nodes || seen[k]++)
            ok = 0;
        else if (*(void **)node_at(c, k) != node_at(c, c->order[(i + 1) % c->nodes]))
            ok = 0;
    }
    free(seen);
    return ok;
}

#define HOP p = *(void **)p;
#define HOP16 HOP HOP HOP HOP HOP HOP HOP HOP HOP HOP HOP HOP HOP HOP HOP HOP

__attribute__((noinline)) static void *chase(void *p, size_t rounds)
{
    for (size_t r = 0; r < rounds; r++) {
        HOP16
    }
    return p;
}

/* One sample: nanoseconds per dependent load. */
static double sample(void *arg)
{
    chase_ctx *c = arg;
    void *p = c->sink;
    double t0 = rmx_now();
    p = chase(p, c->loads / 16);
    double t = rmx_now() - t0;
    c->sink = p;
    return t / (double)c->loads * 1e9;
}

int cmd_memlat(int argc, char **argv)
{
    node_run r = {&K, .budget = 20.0, .sample_time = 0.004, .target = 0.02};
    const char *pattern = "random";
    size_t min_size = 1024, max_size = NODE_UNSET, stride = 64;
    long long per_octave = 4, min_reps = 5;
    const rmx_arg spec[] = {
        NODE_ARGS_SIZES(&min_size, &max_size, &per_octave, "working set"),
        {"pattern", RMX_ARG_CHOICE, &pattern, "which chain", 0, 0, "random|stride|both"},
        {"stride", RMX_ARG_SIZE, &stride, "bytes between nodes of the stride chain", 8, 1 << 20, NULL},
        {"min-reps", RMX_ARG_INT, &min_reps, "samples per size at least", 2, NODE_MAX_SAMPLES, NULL},
        {"budget", RMX_ARG_DOUBLE, &r.budget, "seconds for the whole sweep", 0.01, 86400, NULL},
        {"sample-time", RMX_ARG_DOUBLE, &r.sample_time, "seconds per timed chase", 1e-5, 10, NULL},
        NODE_ARG_TARGET(&r),
        NODE_ARG_CORRUPT(&r, "break one link"),
        NODE_ARG_JSON(&r),
    };
    node_parse(&r, argc, argv, spec, sizeof spec / sizeof spec[0]);
    size_t llc = node_llc_bytes();
    node_sweep_range(K.prog, min_size, &max_size, 1);
    if (stride % sizeof(void *))
        rmx_die(2, K.prog, "--stride must be a multiple of %zu bytes", sizeof(void *));
    if (min_size < 2 * stride || min_size < 2 * LINE)
        rmx_die(2, K.prog, "--min-size must hold at least two nodes (%zu bytes)", 2 * (stride > LINE ? stride : LINE));
    if (max_size / (stride < LINE ? stride : LINE) > UINT32_MAX)
        rmx_die(2, K.prog, "--max-size is beyond the 2^32 nodes a chain may have");

    int pats[2], np = 0;
    if (strcmp(pattern, "random") != 0)
        pats[np++] = 0;
    if (strcmp(pattern, "stride") != 0)
        pats[np++] = 1;
    size_t *sizes;
    size_t nsizes = node_sweep(min_size, max_size, (int)per_octave, LINE, &sizes);

    node_open(&r);
    char *buf = NULL;
    size_t buf_bytes = 0;
    uint32_t *order = NULL;
    node_rng rng = {0x853c49e6748fea9bULL};
    node_sweep_begin(&r, nsizes);
    for (size_t si = 0; si < nsizes; si++) {
        size_t bytes = sizes[si];
        if (!node_sweep_fits(&r, fmax(node_sweep_scaled(&r, bytes), np * (double)min_reps * r.sample_time)))
            break;
        if (bytes > buf_bytes) { /* grow by doubling: the total allocated stays under twice the last size */
            rmx_step("allocate");
            node_free(buf, buf_bytes);
            free(order);
            size_t want = bytes * 2 < max_size ? bytes * 2 : max_size;
            buf = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (buf == MAP_FAILED)
                rmx_die(1, K.prog, "cannot allocate %.1f MiB", (double)want / 1048576.0);
            madvise(buf, want, MADV_HUGEPAGE); /* fewer TLB misses: the curve shows caches, not TLB reach */
            memset(buf, 0, want);
            buf_bytes = want;
            size_t step = stride < LINE ? stride : LINE; /* the closest nodes of either chain */
            order = malloc((want / step + 1) * sizeof *order);
            if (!order)
                rmx_die(1, K.prog, "out of memory for the visit order");
        }
        rmx_step("measure");
        for (int pi = 0; pi < np; pi++) {
            int random = pats[pi];
            chase_ctx c = {0};
            c.buf = buf;
            c.stride = random ? LINE : stride;
            c.nodes = bytes / c.stride;
            if (c.nodes < 2)
                continue;
            c.order = order;
            build(&c, random, &rng);
            if (r.corrupt) /* node 0 skips its successor */
                *(void **)node_at(&c, c.order[0]) = node_at(&c, c.order[2 % c.nodes]);
            int ok = check_chain(&c);
            c.sink = node_at(&c, c.order[0]);
            /* warm-up: one lap brings the set into the caches; a block is as many
             * loads as sample_time holds at the lap's rate */
            c.loads = 16 * ((c.nodes + 15) / 16);
            double tw = rmx_now();
            sample(&c);
            tw = rmx_now() - tw;
            c.loads = 16 * node_blocks(&r, fmax(tw, 1e-7) / (double)(c.loads / 16));
            rmx_repeat_rule rule = node_sweep_rule(&r, min_reps, r.budget / (double)(nsizes * (size_t)np));
            node_meas m;
            node_measure(sample, &c, &rule, &m);
            const char *pname = random ? "random" : "stride";
            if (r.table)
                printf("  %-7s %14zu %12.2f %12.2f %12.2f %6zu%s\n", pname, bytes, m.sum.median, m.sum.min, m.sum.max,
                       m.sum.n, ok ? "" : "  INVALID");
            rmx_json *j = node_record(&r);
            if (j) {
                rmx_json_str(j, "pattern", pname);
                rmx_json_int(j, "bytes", (long long)bytes);
                rmx_json_int(j, "stride", (long long)c.stride);
                rmx_json_int(j, "nodes", (long long)c.nodes);
                rmx_json_int(j, "loads_per_sample", (long long)c.loads);
            }
            node_record_end(&r, "ns", &m, ok);
        }
        node_sweep_done(&r, bytes);
    }
    rmx_json *j = node_sweep_record(&r, "rmax.memlat.sweep/1", "sizes", max_size);
    if (j) {
        rmx_json_int(j, "llc_bytes", (long long)llc);
        rmx_json_str(j, "huge_pages", "madvised");
        node_sweep_record_end(&r);
    }
    node_free(buf, buf_bytes);
    free(order);
    free(sizes);
    return node_finish(&r);
}

RMX_SUBCMD("memlat", cmd_memlat, "memory load latency vs working-set size");
