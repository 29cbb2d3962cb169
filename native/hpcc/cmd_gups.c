/* rmax-hpcc gups: HPC Challenge's RandomAccess.
 *
 * A table of 2^k 64-bit words, T[i] = i, takes 4 x 2^k updates T[a & (2^k - 1)] ^= a from
 * HPCC's stream a(i+1) = a(i) << 1 ^ (a(i) < 0 ? 7 : 0) (a primitive polynomial over GF(2),
 * so any rank can start anywhere: stream_at). GUP/s = updates / seconds / 1e9.
 *
 * Local forms (single, star): HPCC's core of 128 independent streams over the table.
 * MPI form: the table is spread over the ranks as HPCC spreads it (equal parts for a power
 * of two ranks, else parts that differ by one word); each rank generates its share of the
 * stream and sends every update to the owner of its word, holding at most 1024 updates
 * (HPCC's look-ahead bound) in per-destination buckets and sending the fullest one when
 * full, while it polls for updates from the others.
 *
 * Verification (HPCC's): the same updates again, XOR undoing XOR, must leave T[i] = i; the
 * run passes when at most 1 % of the words differ. The local check replays the stream on one
 * core in order; the MPI check sends the updates again through collective exchanges, a path
 * apart from the timed one, so a fault of the timed exchange cannot undo itself. */
#include "hpcc.h"

#include "rmx_args.h"
#include "rmx_step.h"
#include "rmx_subcmd.h"
#include "rmx_timer.h"

#include <stdlib.h>
#include <string.h>

#define POLY 0x7ULL
#define PERIOD 1317624576693539401LL
#define LOOKAHEAD 128       /* HPCC's single-CPU core: independent streams in flight */
#define MAX_PENDING 1024    /* HPCC: updates a process may hold before sending */
#define CHECK_CHUNK 8192    /* updates each rank sends per round of the verification */
#define CORRUPT_STRIDE 50   /* the self-test damages every 50th word: 2 %, beyond the 1 % allowed */

enum { TAG_UPDATE = 61, TAG_DONE = 62 };

static inline uint64_t step(uint64_t a) { return (a << 1) ^ ((int64_t)a < 0 ? POLY : 0); }

/* The stream's n-th number, x^n modulo HPCC's polynomial, by repeated squaring. */
static uint64_t stream_at(int64_t n)
{
    while (n < 0)
        n += PERIOD;
    while (n > PERIOD)
        n -= PERIOD;
    if (n == 0)
        return 1;
    uint64_t sq[64], t = 1;   /* sq[j] = x^(2j): squaring a polynomial over GF(2) spreads its bits */
    for (int j = 0; j < 64; j++) {
        sq[j] = t;
        t = step(step(t));
    }
    int i = 62;
    while (i > 0 && !((n >> i) & 1))
        i--;
    uint64_t a = 2;
    while (i > 0) {
        uint64_t s = 0;
        for (int j = 0; j < 64; j++)
            if ((a >> j) & 1)
                s ^= sq[j];
        a = s;
        i--;
        if ((n >> i) & 1)
            a = step(a);
    }
    return a;
}

static int is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

/* ---- local forms ------------------------------------------------------------------------- */

typedef struct {
    double rate, seconds, check_seconds;   /* updates/s */
    long long errors;
} gups_result;

typedef struct {
    uint64_t size;
    int corrupt;
} gups_args;

static void local_run(const void *args, void *result)
{
    const gups_args *arg = args;
    uint64_t size = arg->size;
    int corrupt = arg->corrupt;
    gups_result *r = result;
    uint64_t *t = hc_alloc(size * sizeof *t, "the RandomAccess table");
    uint64_t updates = 4 * size, ran[LOOKAHEAD], mask = size - 1;
    for (uint64_t i = 0; i < size; i++)
        t[i] = i;
    for (int j = 0; j < LOOKAHEAD; j++)
        ran[j] = stream_at((int64_t)(updates / LOOKAHEAD * (uint64_t)j));
    double t0 = rmx_now();
    for (uint64_t i = 0; i < updates / LOOKAHEAD; i++)
        /* Unrolled, as HPCC's builds compile this loop (-funroll-loops): more updates in flight
         * for the out-of-order core, 10-16 % more GUP/s here than the rolled loop (bench/RESULTS.md). */
#pragma GCC unroll 8
        for (int j = 0; j < LOOKAHEAD; j++) {
            ran[j] = step(ran[j]);
            t[ran[j] & mask] ^= ran[j];
        }
    r->seconds = rmx_now() - t0;
    r->rate = (double)updates / r->seconds;
    if (corrupt)
        for (uint64_t i = 0; i < size; i += CORRUPT_STRIDE)
            t[i] ^= 1;
    t0 = rmx_now();
    uint64_t a = 1;
    for (uint64_t i = 0; i < updates; i++) {
        a = step(a);
        t[a & mask] ^= a;
    }
    long long errors = 0;
    for (uint64_t i = 0; i < size; i++)
        errors += t[i] != i;
    r->check_seconds = rmx_now() - t0;
    r->errors = errors;
    free(t);
}

/* ---- MPI form ------------------------------------------------------------------------------ */

typedef struct {
    uint64_t size, local, start;        /* global words, this rank's, its first global index */
    uint64_t min_local, remainder, top; /* HPCC's uneven split: the first `remainder` ranks hold one more */
    int log_local, pow2, me, n;
    uint64_t *t;
} dist;

static void dist_make(dist *d, uint64_t size, int me, int n)
{
    memset(d, 0, sizeof *d);
    d->size = size;
    d->me = me;
    d->n = n;
    d->pow2 = is_pow2((uint64_t)n);
    d->min_local = size / (uint64_t)n;
    d->remainder = size - d->min_local * (uint64_t)n;
    d->top = (d->min_local + 1) * d->remainder;
    if ((uint64_t)me < d->remainder) {
        d->local = d->min_local + 1;
        d->start = d->local * (uint64_t)me;
    } else {
        d->local = d->min_local;
        d->start = d->min_local * (uint64_t)me + d->remainder;
    }
    while (d->pow2 && ((uint64_t)1 << d->log_local) < d->min_local)
        d->log_local++;
}

static inline int owner(const dist *d, uint64_t g)
{
    if (d->pow2)
        return (int)(g >> d->log_local);
    return (int)(g < d->top ? g / (d->min_local + 1) : (g - d->remainder) / d->min_local);
}

static inline void apply(dist *d, uint64_t a) { d->t[(a & (d->size - 1)) - d->start] ^= a; }

/* Per-destination buckets in one pool of MAX_PENDING updates (linked lists). */
typedef struct {
    uint64_t v[MAX_PENDING];
    int next[MAX_PENDING], free_head;
    int *head, *tail, *count;
} buckets;

static void buckets_init(buckets *b, int n)
{
    b->head = hc_alloc((size_t)n * sizeof(int), "the update buckets");
    b->tail = hc_alloc((size_t)n * sizeof(int), "the update buckets");
    b->count = calloc((size_t)n, sizeof(int));
    for (int p = 0; p < n; p++)
        b->head[p] = b->tail[p] = -1;
    for (int i = 0; i < MAX_PENDING; i++)
        b->next[i] = i + 1 < MAX_PENDING ? i + 1 : -1;
    b->free_head = 0;
}

static void buckets_put(buckets *b, int p, uint64_t a)
{
    int i = b->free_head;
    b->free_head = b->next[i];
    b->v[i] = a;
    b->next[i] = -1;
    if (b->tail[p] < 0)
        b->head[p] = i;
    else
        b->next[b->tail[p]] = i;
    b->tail[p] = i;
    b->count[p]++;
}

/* Empties the fullest bucket into out; returns its destination and sets *k to its count. */
static int buckets_take(buckets *b, int n, uint64_t *out, int *k)
{
    int best = 0;
    for (int p = 1; p < n; p++)
        if (b->count[p] > b->count[best])
            best = p;
    int c = 0;
    for (int i = b->head[best], nx; i >= 0; i = nx) {
        nx = b->next[i];
        out[c++] = b->v[i];
        b->next[i] = b->free_head;
        b->free_head = i;
    }
    b->head[best] = b->tail[best] = -1;
    b->count[best] = 0;
    *k = c;
    return best;
}

typedef struct {
    int nrecv, receiving;
    uint64_t (*buf)[MAX_PENDING];
    MPI_Request *req;
} inbox;

static void inbox_take(dist *d, inbox *in, int idx, MPI_Status *st)
{
    if (st->MPI_TAG == TAG_UPDATE) {
        int k;
        MPI_Get_count(st, MPI_UINT64_T, &k);
        for (int j = 0; j < k; j++)
            apply(d, in->buf[idx][j]);
    } else {
        in->receiving--;
    }
    MPI_Irecv(in->buf[idx], MAX_PENDING, MPI_UINT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &in->req[idx]);
}

static void inbox_poll(dist *d, inbox *in)
{
    int idx, flag;
    MPI_Status st;
    do {
        MPI_Testany(in->nrecv, in->req, &idx, &flag, &st);
        if (flag && idx != MPI_UNDEFINED)
            inbox_take(d, in, idx, &st);
    } while (flag && idx != MPI_UNDEFINED && in->receiving > 0);
}

/* The timed exchange: HPCC's algorithm (one update generated per poll, 1024 held at most). */
static void mpi_updates(dist *d)
{
    int n = d->n;
    buckets b;
    buckets_init(&b, n);
    inbox in = {n > 4 ? 4 : 1, n - 1, NULL, NULL};
    in.buf = hc_alloc((size_t)in.nrecv * sizeof *in.buf, "the receive buffers");
    in.req = hc_alloc((size_t)in.nrecv * sizeof *in.req, "the receive requests");
    for (int j = 0; j < in.nrecv; j++)
        MPI_Irecv(in.buf[j], MAX_PENDING, MPI_UINT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &in.req[j]);
    uint64_t out[MAX_PENDING], a = stream_at((int64_t)(4 * d->start)), todo = 4 * d->local;
    int pending = 0, flag;
    MPI_Request outreq = MPI_REQUEST_NULL;
    while (todo > 0 || pending > 0) {
        inbox_poll(d, &in);
        if (todo > 0 && pending < MAX_PENDING) {
            a = step(a);
            int p = owner(d, a & (d->size - 1));
            if (p == d->me) {
                apply(d, a);
            } else {
                buckets_put(&b, p, a);
                pending++;
            }
            todo--;
        } else {
            MPI_Test(&outreq, &flag, MPI_STATUS_IGNORE);
            if (flag) {
                int k, p = buckets_take(&b, n, out, &k);
                MPI_Isend(out, k, MPI_UINT64_T, p, TAG_UPDATE, MPI_COMM_WORLD, &outreq);
                pending -= k;
            }
        }
    }
    MPI_Request *done = hc_alloc((size_t)n * sizeof *done, "the completion requests");
    for (int p = 0; p < n; p++)
        done[p] = MPI_REQUEST_NULL;
    MPI_Wait(&outreq, MPI_STATUS_IGNORE);
    for (int p = 0; p < n; p++)
        if (p != d->me)
            MPI_Isend(NULL, 0, MPI_UINT64_T, p, TAG_DONE, MPI_COMM_WORLD, &done[p]);
    while (in.receiving > 0) {
        int idx;
        MPI_Status st;
        MPI_Waitany(in.nrecv, in.req, &idx, &st);
        inbox_take(d, &in, idx, &st);
    }
    MPI_Waitall(n, done, MPI_STATUSES_IGNORE);
    for (int j = 0; j < in.nrecv; j++) {
        MPI_Cancel(&in.req[j]);
        MPI_Wait(&in.req[j], MPI_STATUS_IGNORE);
    }
    free(done);
    free(in.buf);
    free(in.req);
    free(b.head);
    free(b.tail);
    free(b.count);
}

/* The verification's exchange: the same updates in rounds of all-to-all, applied as they come. */
static void mpi_check_updates(dist *d)
{
    int n = d->n;
    uint64_t todo = 4 * d->local, a = stream_at((int64_t)(4 * d->start));
    long long rounds = (long long)((todo + CHECK_CHUNK - 1) / CHECK_CHUNK), most;
    MPI_Allreduce(&rounds, &most, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    uint64_t *gen = hc_alloc(CHECK_CHUNK * sizeof *gen, "the verification's updates");
    uint64_t *send = hc_alloc(CHECK_CHUNK * sizeof *send, "the verification's updates");
    uint64_t *recv = hc_alloc((size_t)n * CHECK_CHUNK * sizeof *recv, "the verification's updates");
    int *sc = calloc((size_t)n, sizeof *sc), *rc = calloc((size_t)n, sizeof *rc);
    int *sd = calloc((size_t)n, sizeof *sd), *rd = calloc((size_t)n, sizeof *rd);
    for (long long r = 0; r < most; r++) {
        int k = (int)(todo < CHECK_CHUNK ? todo : CHECK_CHUNK);
        todo -= (uint64_t)k;
        memset(sc, 0, (size_t)n * sizeof *sc);
        for (int i = 0; i < k; i++) {
            a = step(a);
            gen[i] = a;
            sc[owner(d, a & (d->size - 1))]++;
        }
        for (int p = 0, off = 0; p < n; p++) {
            sd[p] = off;
            off += sc[p];
        }
        for (int i = 0; i < k; i++)
            send[sd[owner(d, gen[i] & (d->size - 1))]++] = gen[i];
        for (int p = 0, off = 0; p < n; p++) {
            sd[p] = off;
            off += sc[p];
        }
        MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, MPI_COMM_WORLD);
        int total = 0;
        for (int p = 0; p < n; p++) {
            rd[p] = total;
            total += rc[p];
        }
        MPI_Alltoallv(send, sc, sd, MPI_UINT64_T, recv, rc, rd, MPI_UINT64_T, MPI_COMM_WORLD);
        for (int i = 0; i < total; i++)
            apply(d, recv[i]);
    }
    free(gen);
    free(send);
    free(recv);
    free(sc);
    free(rc);
    free(sd);
    free(rd);
}

static void mpi_run(uint64_t size, int corrupt, gups_result *r)
{
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    dist d;
    dist_make(&d, size, me, n);
    d.t = hc_alloc(d.local * sizeof *d.t, "this rank's part of the RandomAccess table");
    for (uint64_t i = 0; i < d.local; i++)
        d.t[i] = d.start + i;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = rmx_now();
    mpi_updates(&d);
    MPI_Barrier(MPI_COMM_WORLD);
    r->seconds = hc_max(rmx_now() - t0);
    r->rate = 4.0 * (double)size / r->seconds;
    if (corrupt)
        for (uint64_t i = 0; i < d.local; i += CORRUPT_STRIDE)
            d.t[i] ^= 1;
    if (me == 0)
        rmx_step("gups mpi verification");
    t0 = rmx_now();
    mpi_check_updates(&d);
    long long mine = 0;
    for (uint64_t i = 0; i < d.local; i++)
        mine += d.t[i] != d.start + i;
    MPI_Allreduce(&mine, &r->errors, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    r->check_seconds = hc_max(rmx_now() - t0);
    free(d.t);
}

/* ---- the command --------------------------------------------------------------------------- */

static int passed(long long errors, uint64_t size) { return (double)errors <= 0.01 * (double)size; }

static void point(hc_run *run, const char *form, int ranks, uint64_t size, const gups_result *r, int ok,
                  double lo, double hi, int rank)
{
    rmx_json *j = hc_point(run, form, ranks, (long long)size, r->rate, r->seconds, ok, "GUP/s");
    if (!j)
        return;
    rmx_json_int(j, "updates", (long long)(4 * size));
    rmx_json_int(j, "errors", r->errors);
    rmx_json_num(j, "error_fraction", (double)r->errors / (double)size);
    rmx_json_num(j, "check_seconds", r->check_seconds);
    hc_point_end(j, lo, hi, rank);
}

int cmd_gups(int argc, char **argv)
{
    const char *json = NULL, *forms_arg = "single,star,mpi";
    size_t size = (size_t)1 << 22, mpi_size = 0;
    int corrupt = 0;
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &json, "write JSON lines to FILE ('-' for stdout)", 0, 0, NULL},
        {"forms", RMX_ARG_STRING, &forms_arg, "forms to run: single, star, mpi (comma-separated)", 0, 0, NULL},
        {"table-size", RMX_ARG_SIZE, &size, "words (64-bit) of each rank's table in the single and star forms, "
         "a power of two", 1024, (double)((size_t)1 << 40), NULL},
        {"mpi-table-size", RMX_ARG_SIZE, &mpi_size, "words of the MPI form's table, spread over the ranks, a power "
         "of two (0: the largest power of two <= ranks x --table-size)", 0, (double)((size_t)1 << 46), NULL},
        {"self-test-corrupt", RMX_ARG_FLAG, &corrupt, "damage 2% of the table before the check: it must fail", 0, 0,
         NULL},
    };
    rmx_args_parse(PROG " gups", "HPC Challenge RandomAccess: random table updates, GUP/s.", argc, argv, 2, spec,
                   sizeof spec / sizeof spec[0]);
    int forms = hc_forms(forms_arg);
    if (!is_pow2(size))
        rmx_die(2, PROG, "--table-size: %zu words is not a power of two", size);
    if (mpi_size && !is_pow2(mpi_size))
        rmx_die(2, PROG, "--mpi-table-size: %zu words is not a power of two", mpi_size);

    hc_run run;
    hc_start(&argc, &argv, &run, "rmax.gups/1", json);
    if (!mpi_size)
        for (mpi_size = 1; mpi_size * 2 <= size * (size_t)run.n; mpi_size *= 2)
            ;
    if (mpi_size < (size_t)run.n * 1024)
        return hc_refuse(&run, "--mpi-table-size: %zu words is below 1024 a rank on %d ranks", mpi_size, run.n);
    rmx_json *j = hc_header(&run, "gups");
    if (j) {
        rmx_json_int(j, "table_size", (long long)size);
        rmx_json_int(j, "mpi_table_size", (long long)mpi_size);
        rmx_json_int(j, "lookahead", MAX_PENDING);
        rmx_json_bool(j, "self_test_corrupt", corrupt);
        rmx_json_obj_end(j);
    }
    if (run.table)
        printf("# RandomAccess: tables of 64-bit words, 4 updates a word; passes with <= 1%% of words wrong\n");
    gups_result r;
    const gups_args local = {size, corrupt};
    /* HPCC's order: the MPI form first, then star, then single. */
    if (forms & HC_MPI) {
        rmx_step("gups mpi");
        mpi_run(mpi_size, corrupt, &r);
        point(&run, "mpi", run.n, mpi_size, &r, passed(r.errors, mpi_size), -1, -1, -1);
    }
    if (forms & HC_STAR) {
        rmx_step("gups star");
        MPI_Barrier(MPI_COMM_WORLD);
        local_run(&local, &r);
        double lo, mean, hi;
        int all_ok;
        hc_star(r.rate, passed(r.errors, size), &lo, &mean, &hi, &all_ok);
        long long errors;
        MPI_Allreduce(&r.errors, &errors, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        r.rate = mean;
        r.errors = errors;   /* the worst rank's */
        r.seconds = hc_max(r.seconds);
        r.check_seconds = hc_max(r.check_seconds);
        point(&run, "star", run.n, size, &r, all_ok, lo, hi, -1);
    }
    if (forms & HC_SINGLE) {
        rmx_step("gups single");
        int pick = hc_single(local_run, &local, &r, sizeof r);
        point(&run, "single", 1, size, &r, passed(r.errors, size), -1, -1, pick);
    }
    return hc_finish(&run);
}

RMX_SUBCMD("gups", cmd_gups, "RandomAccess: random 64-bit table updates (GUP/s), single, star and MPI");
