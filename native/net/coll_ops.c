/* bcast, reduce, allreduce, allgather, alltoall, barrier, reduce_scatter,
 * scatter and gather, each blocking and non-blocking (istart). Reductions use
 * unsigned 32-bit sums (exact, wrapping) over size/4 elements, so their
 * result can be checked bit for bit. */
#include "coll.h"

#include "rmx_timer.h"

#include <string.h>

static double timed(net_coll *c, long iters, void (*one)(net_coll *))
{
    double t0 = rmx_now();
    for (long i = 0; i < iters; i++)
        one(c);
    return rmx_now() - t0;
}

/* ---- bcast: root 0's pattern reaches everyone */
static void bcast_one(net_coll *c) { MPI_Bcast(c->out, (int)c->size, MPI_BYTE, 0, c->comm); }
static void bcast_start(net_coll *c, MPI_Request *r) { MPI_Ibcast(c->out, (int)c->size, MPI_BYTE, 0, c->comm, r); }
static double bcast_run(void *ctx, long iters) { return timed(ctx, iters, bcast_one); }
static void bcast_setup(net_coll *c, uint64_t seed)
{
    if (c->me == 0)
        net_fill(c->out, c->size, seed);
    else
        memset(c->out, 0, c->size);
}
static size_t bcast_check(const net_coll *c, uint64_t seed) { return net_check(c->out, c->size, seed); }

/* ---- reduce and allreduce: element i of rank r is (seed + i) * (r + 1) */
static int count_of(const net_coll *c) { return (int)(c->size / 4); }
static void sum_setup(net_coll *c, uint64_t seed)
{
    uint32_t *in = (uint32_t *)c->in;
    for (int i = 0; i < count_of(c); i++)
        in[i] = (uint32_t)(seed + (uint64_t)i) * (uint32_t)(c->me + 1);
    memset(c->out, 0, c->size);
}
static size_t sum_check_on(const net_coll *c, uint64_t seed, int everyone)
{
    if (!everyone && c->me != 0)
        return 0;
    const uint32_t *out = (const uint32_t *)c->out;
    uint32_t ranks = (uint32_t)((uint64_t)c->p * (uint64_t)(c->p + 1) / 2);
    size_t bad = 0;
    for (int i = 0; i < count_of(c); i++)
        bad += out[i] != (uint32_t)(seed + (uint64_t)i) * ranks;
    return 4 * bad;
}
static void reduce_one(net_coll *c)
{
    MPI_Reduce(c->in, c->out, count_of(c), MPI_UNSIGNED, MPI_SUM, 0, c->comm);
}
static double reduce_run(void *ctx, long iters) { return timed(ctx, iters, reduce_one); }
static void reduce_start(net_coll *c, MPI_Request *r)
{
    MPI_Ireduce(c->in, c->out, count_of(c), MPI_UNSIGNED, MPI_SUM, 0, c->comm, r);
}
static size_t reduce_check(const net_coll *c, uint64_t seed) { return sum_check_on(c, seed, 0); }
static void allreduce_one(net_coll *c)
{
    MPI_Allreduce(c->in, c->out, count_of(c), MPI_UNSIGNED, MPI_SUM, c->comm);
}
static double allreduce_run(void *ctx, long iters) { return timed(ctx, iters, allreduce_one); }
static void allreduce_start(net_coll *c, MPI_Request *r)
{
    MPI_Iallreduce(c->in, c->out, count_of(c), MPI_UNSIGNED, MPI_SUM, c->comm, r);
}
static size_t allreduce_check(const net_coll *c, uint64_t seed) { return sum_check_on(c, seed, 1); }

/* ---- allgather: block r is rank r's pattern */
static void allgather_setup(net_coll *c, uint64_t seed)
{
    net_fill(c->in, c->size, seed + (uint64_t)c->me);
    memset(c->out, 0, c->size * (size_t)c->p);
}
static void allgather_one(net_coll *c)
{
    MPI_Allgather(c->in, (int)c->size, MPI_BYTE, c->out, (int)c->size, MPI_BYTE, c->comm);
}
static double allgather_run(void *ctx, long iters) { return timed(ctx, iters, allgather_one); }
static void allgather_start(net_coll *c, MPI_Request *r)
{
    MPI_Iallgather(c->in, (int)c->size, MPI_BYTE, c->out, (int)c->size, MPI_BYTE, c->comm, r);
}
static size_t allgather_check(const net_coll *c, uint64_t seed)
{
    size_t bad = 0;
    for (int r = 0; r < c->p; r++)
        bad += net_check(c->out + (size_t)r * c->size, c->size, seed + (uint64_t)r);
    return bad;
}

/* ---- alltoall: the block from rank i to rank j carries pattern i * p + j */
static void alltoall_setup(net_coll *c, uint64_t seed)
{
    for (int j = 0; j < c->p; j++)
        net_fill(c->in + (size_t)j * c->size, c->size, seed + (uint64_t)(c->me * c->p + j));
    memset(c->out, 0, c->size * (size_t)c->p);
}
static void alltoall_one(net_coll *c)
{
    MPI_Alltoall(c->in, (int)c->size, MPI_BYTE, c->out, (int)c->size, MPI_BYTE, c->comm);
}
static double alltoall_run(void *ctx, long iters) { return timed(ctx, iters, alltoall_one); }
static void alltoall_start(net_coll *c, MPI_Request *r)
{
    MPI_Ialltoall(c->in, (int)c->size, MPI_BYTE, c->out, (int)c->size, MPI_BYTE, c->comm, r);
}
static size_t alltoall_check(const net_coll *c, uint64_t seed)
{
    size_t bad = 0;
    for (int i = 0; i < c->p; i++)
        bad += net_check(c->out + (size_t)i * c->size, c->size, seed + (uint64_t)(i * c->p + c->me));
    return bad;
}

/* ---- barrier: nothing to check beyond everyone having returned */
static void barrier_one(net_coll *c) { MPI_Barrier(c->comm); }
static double barrier_run(void *ctx, long iters) { return timed(ctx, iters, barrier_one); }
static void barrier_start(net_coll *c, MPI_Request *r) { MPI_Ibarrier(c->comm, r); }
static void none_setup(net_coll *c, uint64_t seed) { (void)c; (void)seed; }
static size_t none_check(const net_coll *c, uint64_t seed) { (void)c; (void)seed; return 0; }

/* ---- reduce_scatter (block form): element i of rank r's input is (seed + i) * (r + 1), over
 * p blocks of size/4 elements; rank r gets block r summed over the ranks */
static void rs_setup(net_coll *c, uint64_t seed)
{
    uint32_t *in = (uint32_t *)c->in;
    for (int i = 0; i < count_of(c) * c->p; i++)
        in[i] = (uint32_t)(seed + (uint64_t)i) * (uint32_t)(c->me + 1);
    memset(c->out, 0, c->size);
}
static void rs_one(net_coll *c)
{
    MPI_Reduce_scatter_block(c->in, c->out, count_of(c), MPI_UNSIGNED, MPI_SUM, c->comm);
}
static double rs_run(void *ctx, long iters) { return timed(ctx, iters, rs_one); }
static void rs_start(net_coll *c, MPI_Request *r)
{
    MPI_Ireduce_scatter_block(c->in, c->out, count_of(c), MPI_UNSIGNED, MPI_SUM, c->comm, r);
}
static size_t rs_check(const net_coll *c, uint64_t seed)
{
    const uint32_t *out = (const uint32_t *)c->out;
    uint32_t ranks = (uint32_t)((uint64_t)c->p * (uint64_t)(c->p + 1) / 2);
    uint64_t first = (uint64_t)c->me * (uint64_t)count_of(c);
    size_t bad = 0;
    for (int i = 0; i < count_of(c); i++)
        bad += out[i] != (uint32_t)(seed + first + (uint64_t)i) * ranks;
    return 4 * bad;
}

/* ---- scatter: root 0's block j carries pattern j and reaches rank j */
static void scatter_setup(net_coll *c, uint64_t seed)
{
    for (int j = 0; c->me == 0 && j < c->p; j++)
        net_fill(c->in + (size_t)j * c->size, c->size, seed + (uint64_t)j);
    memset(c->out, 0, c->size);
}
static void scatter_one(net_coll *c)
{
    MPI_Scatter(c->in, (int)c->size, MPI_BYTE, c->out, (int)c->size, MPI_BYTE, 0, c->comm);
}
static double scatter_run(void *ctx, long iters) { return timed(ctx, iters, scatter_one); }
static void scatter_start(net_coll *c, MPI_Request *r)
{
    MPI_Iscatter(c->in, (int)c->size, MPI_BYTE, c->out, (int)c->size, MPI_BYTE, 0, c->comm, r);
}
static size_t scatter_check(const net_coll *c, uint64_t seed)
{
    return net_check(c->out, c->size, seed + (uint64_t)c->me);
}

/* ---- gather: rank r's pattern r lands in block r of root 0 */
static void gather_setup(net_coll *c, uint64_t seed)
{
    net_fill(c->in, c->size, seed + (uint64_t)c->me);
    memset(c->out, 0, c->size * (size_t)c->p);
}
static void gather_one(net_coll *c)
{
    MPI_Gather(c->in, (int)c->size, MPI_BYTE, c->out, (int)c->size, MPI_BYTE, 0, c->comm);
}
static double gather_run(void *ctx, long iters) { return timed(ctx, iters, gather_one); }
static void gather_start(net_coll *c, MPI_Request *r)
{
    MPI_Igather(c->in, (int)c->size, MPI_BYTE, c->out, (int)c->size, MPI_BYTE, 0, c->comm, r);
}
static size_t gather_check(const net_coll *c, uint64_t seed) { return c->me == 0 ? allgather_check(c, seed) : 0; }

const net_coll_op net_coll_ops[] = {
    {"bcast", bcast_run, bcast_setup, bcast_check, 1, bcast_start},
    {"reduce", reduce_run, sum_setup, reduce_check, 1, reduce_start},
    {"allreduce", allreduce_run, sum_setup, allreduce_check, 1, allreduce_start},
    {"allgather", allgather_run, allgather_setup, allgather_check, 1, allgather_start},
    {"alltoall", alltoall_run, alltoall_setup, alltoall_check, 1, alltoall_start},
    {"barrier", barrier_run, none_setup, none_check, 0, barrier_start},
    {"reduce_scatter", rs_run, rs_setup, rs_check, 1, rs_start},
    {"scatter", scatter_run, scatter_setup, scatter_check, 1, scatter_start},
    {"gather", gather_run, gather_setup, gather_check, 1, gather_start},
};

void net_coll_damage(net_coll *c)
{
    if (c->me != 0 || c->size == 0)
        return;
    c->in[c->size - 1] ^= 0x5a;
    c->out[c->size - 1] ^= 0x5a;   /* bcast's root sends from its output */
}
const size_t net_coll_nops = sizeof net_coll_ops / sizeof net_coll_ops[0];
