/* Unit tests of rmax-hpl's plans and arithmetic, without MPI (the plans are
 * data): the panel broadcasts of every variant, the row-swap plan, numroc and
 * the memory model. Run by tests/test_native.py; prints "N passed, M failed",
 * exit status 1 if anything failed. */
#include "hpl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

/* One line per failed check, at most a few per test: a broken plan fails many cases alike. */
#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (cond) {                                        \
            passed++;                                      \
        } else {                                           \
            if (failed++ < 20) {                           \
                printf("FAIL %s:%d ", __FILE__, __LINE__); \
                printf(__VA_ARGS__);                       \
                putchar('\n');                             \
            }                                              \
        }                                                  \
    } while (0)

/* ---- numroc and the index maps ---- */

static void test_numroc(void)
{
    static const int ns[] = {0, 1, 5, 63, 64, 65, 1000, 1001};
    static const int nbs[] = {1, 3, 64};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t c = 0; c < sizeof nbs / sizeof nbs[0]; c++)
            for (int np = 1; np <= 7; np++) {
                const int n = ns[a], nb = nbs[c];
                int owned[7] = {0}, total = 0;
                for (int g = 0; g < n; g++) {
                    const int o = hpl_owner(g, nb, np), l = hpl_g2l(g, nb, np);
                    CHECK(l == owned[o] && hpl_l2g(l, nb, o, np) == g, "g2l/l2g of %d (nb %d, %d procs)", g, nb,
                          np);
                    owned[o]++;
                }
                for (int p = 0; p < np; p++) {
                    const int got = hpl_numroc(n, nb, p, np);
                    total += got;
                    CHECK(got == owned[p], "numroc(%d, %d, %d, %d) = %d, owns %d", n, nb, p, np, got, owned[p]);
                    CHECK(got <= hpl_numroc(n, nb, 0, np), "process 0 has the largest share");
                }
                CHECK(total == n, "shares of n = %d sum to %d", n, total);
            }
    /* 64 bits: what the memory model asks of sizes beyond int. */
    CHECK(hpl_numroc_ll(3000000000LL, 1000, 0, 2) == 1500000000LL, "numroc in 64 bits");
    CHECK(hpl_numroc_ll(2147483648LL, 1, 1, 3) == 715827883LL, "numroc of 2^31 (process 1 of 3)");
}

/* ---- panel broadcasts ---- */

typedef struct {
    hpl_bcast b;
    int next, posted_to;   /* first op not yet done; ops [next, posted_to) are posted */
    size_t *seq;           /* per op: its index among the ops between the same two ranks, same direction */
} sim_rank;

/* Sum of the overlaps of [off, off + cnt) with the receives rank r has completed. */
static size_t held(const sim_rank *r, size_t off, size_t cnt)
{
    size_t have = 0;
    for (int i = 0; i < r->next; i++) {
        const hpl_bc_op *o = &r->b.ops[i];
        if (!o->recv)
            continue;
        const size_t lo = o->off > off ? o->off : off;
        const size_t hi = o->off + o->cnt < off + cnt ? o->off + o->cnt : off + cnt;
        if (hi > lo)
            have += hi - lo;
    }
    return have;
}

/* Index of the op of rank `peer` that matches op k of rank `me` (MPI matches the messages
 * between two ranks in posting order), or -1. */
static int partner(sim_rank *rk, int me, int k)
{
    const hpl_bc_op *o = &rk[me].b.ops[k];
    const sim_rank *q = &rk[o->peer];
    for (int i = 0; i < q->b.nops; i++)
        if (q->b.ops[i].peer == me && q->b.ops[i].recv != o->recv && q->seq[i] == rk[me].seq[k])
            return i;
    return -1;
}

/* Builds every rank's plan and runs them as the engine posts them: a phase is
 * posted when the previous one completed, an operation completes once its
 * partner is posted. Checks that sends and receives pair up with the same
 * piece, that nothing is sent before it is held, that nobody waits forever,
 * and that every rank but the root receives every element exactly once. */
static void check_bcast(int variant, int size, int root, size_t len)
{
    sim_rank *rk = calloc((size_t)size, sizeof *rk);
    for (int r = 0; r < size; r++) {
        hpl_bcast *b = &rk[r].b;
        b->root = root;
        b->me = r;
        b->size = size;
        b->len = len;
        hpl_bcast_plan(b, variant);
        rk[r].seq = calloc((size_t)b->nops + 1, sizeof *rk[r].seq);
    }
    for (int r = 0; r < size; r++)
        for (int k = 0; k < rk[r].b.nops; k++) {
            const hpl_bc_op *o = &rk[r].b.ops[k];
            size_t s = 0;
            for (int i = 0; i < k; i++)
                s += rk[r].b.ops[i].peer == o->peer && rk[r].b.ops[i].recv == o->recv;
            rk[r].seq[k] = s;
            CHECK(o->peer >= 0 && o->peer < size && o->peer != r && o->cnt > 0 && o->cnt <= INT_MAX &&
                      o->off + o->cnt <= len,
                  "variant %d size %d root %d: op %d of rank %d is out of bounds", variant, size, root, k, r);
            CHECK(k == 0 || rk[r].b.ops[k - 1].phase <= o->phase, "phases in posting order");
        }
    int bad = 0;
    for (int r = 0; r < size && !bad; r++)
        for (int k = 0; k < rk[r].b.nops && !bad; k++) {
            const int m = partner(rk, r, k);
            const hpl_bc_op *o = &rk[r].b.ops[k];
            bad = m < 0 || rk[o->peer].b.ops[m].off != o->off || rk[o->peer].b.ops[m].cnt != o->cnt;
            CHECK(!bad, "variant %d size %d root %d len %zu: op %d of rank %d has no matching partner", variant,
                  size, root, len, k, r);
        }
    /* Run the phases until nothing moves. */
    for (int moved = 1; moved && !bad;) {
        moved = 0;
        for (int r = 0; r < size; r++) {
            sim_rank *q = &rk[r];
            if (q->next == q->posted_to && q->next < q->b.nops) { /* post the next phase */
                const int ph = q->b.ops[q->next].phase;
                while (q->posted_to < q->b.nops && q->b.ops[q->posted_to].phase == ph) {
                    const hpl_bc_op *o = &q->b.ops[q->posted_to++];
                    CHECK(o->recv || r == root || held(q, o->off, o->cnt) == o->cnt,
                          "variant %d size %d root %d: rank %d sends [%zu, +%zu) before holding it", variant, size,
                          root, r, o->off, o->cnt);
                }
                moved = 1;
            }
            int complete = 1;
            for (int k = q->next; k < q->posted_to; k++) {
                const int m = partner(rk, r, k), peer = q->b.ops[k].peer;
                complete &= m < rk[peer].posted_to;
            }
            if (complete && q->next < q->posted_to) {
                q->next = q->posted_to;
                moved = 1;
            }
        }
    }
    for (int r = 0; r < size && !bad; r++) {
        const sim_rank *q = &rk[r];
        CHECK(q->next == q->b.nops, "variant %d size %d root %d: rank %d waits forever at op %d of %d", variant,
              size, root, r, q->next, q->b.nops);
        /* The received pieces, in order of offset, tile [0, len) once (none at the root). */
        size_t at = 0, n = 0;
        for (int moved = 1; moved;) {
            moved = 0;
            for (int k = 0; k < q->b.nops; k++)
                if (q->b.ops[k].recv && q->b.ops[k].off == at) {
                    at += q->b.ops[k].cnt;
                    n++;
                    moved = 1;
                }
        }
        size_t nrecv = 0;
        for (int k = 0; k < q->b.nops; k++)
            nrecv += q->b.ops[k].recv;
        if (r == root)
            CHECK(nrecv == 0, "variant %d size %d: the root %d receives", variant, size, root);
        else
            CHECK(at == len && n == nrecv, "variant %d size %d root %d len %zu: rank %d receives %zu of %zu "
                  "elements in %zu pieces (%zu in order)", variant, size, root, len, r, at, len, nrecv, n);
    }
    for (int r = 0; r < size; r++) {
        hpl_bcast_free(&rk[r].b);
        free(rk[r].seq);
    }
    free(rk);
}

static void test_bcast_plans(void)
{
    static const size_t lens[] = {1, 2, 5, 1000, 7919};
    for (int v = 0; v < HPL_BC_COUNT; v++) {
        for (int size = 1; size <= 9; size++)
            for (int root = 0; root < size; root++)
                for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
                    check_bcast(v, size, root, lens[i]);
        static const int big[] = {16, 33};
        for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
            check_bcast(v, big[i], 0, 7919);
            check_bcast(v, big[i], big[i] - 1, 100003);
        }
        /* A panel over INT_MAX doubles goes in several messages (the plan is data: nothing allocated). */
        check_bcast(v, 5, 2, 3 * (size_t)INT_MAX + 12345);
    }
}

/* ---- the row-swap plan ---- */

static void check_swap_plan(const double *ipiv, int jb, int jj, int n, int nb, int P)
{
    /* Reference: apply the interchanges in order to the rows' contents. */
    int *row = malloc((size_t)n * sizeof *row);
    for (int i = 0; i < n; i++)
        row[i] = i;
    for (int k = 0; k < jb; k++) {
        const int q = (int)ipiv[k], t = row[jj + k];
        row[jj + k] = row[q];
        row[q] = t;
    }
    int *mem = malloc(HPL_SWAP_PLAN_INTS(jb, P) * sizeof *mem);
    hpl_swap_plan pl;
    hpl_swap_plan_make(&pl, mem, ipiv, jb, jj, nb, P);
    int moved = 0;
    for (int i = jj + jb; i < n; i++)
        moved += row[i] != i;
    CHECK(pl.nrec == jb + moved, "jb %d P %d: %d records for %d U rows and %d displaced", jb, P, pl.nrec, jb, moved);
    for (int e = 0; e < pl.nrec && e < jb + moved; e++) {
        if (e < jb)
            CHECK(pl.src[e] == row[jj + e] && pl.dst[e] == -1, "U row %d comes from row %d, plan says %d", e,
                  row[jj + e], pl.src[e]);
        else
            CHECK(pl.dst[e] >= jj + jb && pl.dst[e] < n && row[pl.dst[e]] == pl.src[e] && pl.src[e] != pl.dst[e],
                  "record %d: row %d to %d", e, pl.src[e], pl.dst[e]);
        CHECK(pl.grp[e] == hpl_owner(pl.src[e], nb, P), "record %d grouped with its owner", e);
    }
    for (int e = jb; e < pl.nrec; e++)
        for (int f = jb; f < e; f++)
            CHECK(pl.dst[e] != pl.dst[f], "rows %d and %d both go to %d", pl.src[e], pl.src[f], pl.dst[e]);
    /* Groups: cnt records each, at offsets off, each record its own index within its group. */
    CHECK(pl.off[0] == 0 && pl.off[P] == pl.nrec, "group offsets span the records");
    for (int r = 0; r < P; r++) {
        CHECK(pl.off[r + 1] - pl.off[r] == pl.cnt[r], "group %d's offset", r);
        unsigned long long seen = 0;
        int members = 0;
        for (int e = 0; e < pl.nrec; e++)
            if (pl.grp[e] == r) {
                members++;
                if (pl.idx[e] >= 0 && pl.idx[e] < 64)
                    seen |= 1ULL << pl.idx[e];
            }
        CHECK(members == pl.cnt[r] && (members == 64 ? ~0ULL : (1ULL << members) - 1) == seen,
              "group %d: %d records with indices 0..cnt-1", r, members);
    }
    free(mem);
    free(row);
}

static void test_swap_plan(void)
{
    srand(12345);
    enum { N = 200 };
    double ipiv[32];
    for (int trial = 0; trial < 300; trial++) {
        const int nb = 1 + rand() % 32, P = 1 + rand() % 6;
        const int jb = 1 + rand() % nb, jj = nb * (rand() % 4);
        for (int k = 0; k < jb; k++) /* a pivot is on or below its row; often near it, as in a real LU */
            ipiv[k] = jj + k + (rand() % 3 == 0 ? 0 : rand() % 2 ? rand() % (jb - k) : rand() % (N - jj - k));
        check_swap_plan(ipiv, jb, jj, N, nb, P);
    }
    /* No interchange: U is the diagonal block as it is, nothing displaced. */
    for (int k = 0; k < 8; k++)
        ipiv[k] = 16 + k;
    check_swap_plan(ipiv, 8, 16, 64, 8, 3);
    /* Every pivot below the block, into rows other processes hold. */
    for (int k = 0; k < 8; k++)
        ipiv[k] = 40 + 3 * k;
    check_swap_plan(ipiv, 8, 0, 64, 8, 4);
}

/* ---- the memory model ---- */

static hpl_params params(int n, int nb, int p, int q, int depth, int align)
{
    return (hpl_params){.n = n, .nb = nb, .p = p, .q = q, .depth = depth, .align = align};
}

static void test_memory_model(void)
{
    /* By hand: N = 1000, NB = 64, 2 x 3, depth 1, alignment 8, process (0, 0):
     * mp = 512 (8 of the 15 whole row blocks), nq = 361 (5 of the 15 whole
     * column blocks and the 41 columns left over). */
    hpl_params prm = params(1000, 64, 2, 3, 1, 8);
    hpl_mem m;
    CHECK(hpl_mem_model(&prm, 0, 0, &m) == 0, "a small test fits");
    const long long mp = hpl_numroc(1000, 64, 0, 2), nq = hpl_numroc(1001, 64, 0, 3);
    CHECK(m.mp == mp && m.nq == nq && mp == 512 && nq == 361, "local shape %lld x %lld", m.mp, m.nq);
    CHECK(m.lda == 512 && m.a == 512ULL * 361, "[A|b] is lda x nq");
    const unsigned long long pcap = (64ULL * 64 + 64 + 512ULL * 64 + 7) / 8 * 8;
    CHECK(m.pcap == pcap && m.pbuf == 2 * pcap, "two panels of %llu", pcap);
    CHECK(m.uwork == 361ULL * 64 && m.swbuf == 2 * m.uwork && m.swtmp == 4 * m.uwork && m.uside == 64 * 64,
          "U and the row records");
    const unsigned long long doubles =
        m.a + m.pbuf + 64 * 64 + (2 * 64 + 4) + 7 * 361ULL * 64 + 64 * 64 + (3 * 1000 + 2 * 512 + 2 * 64);
    CHECK(m.bytes == 8 * doubles + 4 * 64, "bytes %llu, by hand %llu", m.bytes, 8 * doubles + 4 * 64);

    /* One process row: no U, no row records. */
    prm = params(1000, 64, 1, 3, 0, 1);
    CHECK(hpl_mem_model(&prm, 0, 0, &m) == 0 && m.uwork + m.uside + m.swbuf + m.swtmp == 0 && m.lda == 1000,
          "P = 1 keeps U in the matrix");

    /* Process 0 needs the most, so the check before a run sizes its share. */
    for (int P = 1; P <= 4; P++)
        for (int Q = 1; Q <= 4; Q++) {
            prm = params(777, 32, P, Q, 2, 4);
            hpl_mem m0, mi;
            hpl_mem_model(&prm, 0, 0, &m0);
            for (int r = 0; r < P; r++)
                for (int c = 0; c < Q; c++) {
                    hpl_mem_model(&prm, r, c, &mi);
                    CHECK(mi.bytes <= m0.bytes && mi.msg <= m0.msg, "process (%d, %d) of %d x %d needs more", r, c,
                          P, Q);
                }
        }

    /* Too big: past 2^64 bytes, and past int indices or message counts. */
    prm = params(INT_MAX, 1, 1, 1, 0, 1);
    CHECK(hpl_mem_model(&prm, 0, 0, &m) == -1, "N = 2^31 - 1 overflows 64 bits");
    prm = params(INT_MAX, 1000, 1, 1000, 0, 8); /* lda: 2^31 - 1 rows rounded up to 2^31 */
    CHECK(hpl_mem_model(&prm, 0, 0, &m) == -2 && m.lda > INT_MAX, "a local dimension over int");
    prm = params(300000, 4096, 2, 1, 0, 1); /* 2 nb nq = 2.5e9 doubles in one row-swap message */
    CHECK(hpl_mem_model(&prm, 0, 0, &m) == -2 && m.msg > INT_MAX, "a row-swap message over int");
    prm = params(300000, 4096, 1, 1, 0, 1);
    CHECK(hpl_mem_model(&prm, 0, 0, &m) == 0, "the same with one process row sends no rows");

    /* hpl_lu_alloc allocates what the model says. */
    hpl_grid g = {.P = 2, .Q = 3, .myrow = 1, .mycol = 2};
    prm = params(500, 32, 2, 3, 1, 4);
    hpl_lu lu;
    memset(&lu, 0, sizeof lu);
    lu.prm = &prm;
    lu.g = &g;
    hpl_mem_model(&prm, 1, 2, &m);
    CHECK(hpl_lu_alloc(&lu) == 0 && lu.mp == m.mp && lu.nq == m.nq && lu.lda == m.lda && lu.pcap == m.pcap &&
              lu.a && lu.uwork && lu.uside && lu.swbuf && lu.swtmp && lu.pbuf && lu.pft && lu.pfwork && lu.pfipiv,
          "hpl_lu_alloc follows the model");
    hpl_lu_free(&lu);
}

int main(void)
{
    test_numroc();
    test_bcast_plans();
    test_swap_plan();
    test_memory_model();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
