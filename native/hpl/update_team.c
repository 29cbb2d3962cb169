/* The trailing update of a threaded rank: the rank's threads work as a team
 * on tasks taken in order from a shared counter, each thread calling the BLAS
 * with one thread:
 *   for each column chunk: its row interchanges (P = 1, in place) and its
 *   U := L11^-1 U (one task; with P > 1 it also stores the chunk's U rows on
 *   the process row that holds them), then the DGEMM of that chunk in row
 *   tiles (one task each, started once the chunk's U is ready).
 * With P > 1 the first thread exchanges the rows over the process column
 * (swap.c), piece by piece of columns, while the others solve and update the
 * columns already exchanged: so the exchange does not run on one thread while
 * the others wait.
 * The first chunk is the look-ahead panel's columns. Once they are done the
 * first thread runs side() (the rest of the look-ahead: the panel's
 * factorisation and broadcast start) while the others go on with the trailing
 * columns, then joins them, polling the broadcasts between its tasks; it alone
 * calls MPI. With the library's threading instead, the panel and the swaps ran
 * on one thread while the others waited (20 % of the run at 1 x 1 with 16
 * threads, N = 30000; bench/RESULTS.md). Tiles, not
 * whole columns, keep the DGEMM efficient: each call packs its rows of L2 and
 * its columns of U, so a tile of r rows and c columns repacks (r + c) jb values
 * for 2 r c jb flops. */
#include "hpl.h"
#include "rmx_timer.h"

#include <math.h>
#include <omp.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

/* About TILES_PER_THREAD tiles per thread, as square as the matrix allows
 * (the least repacking for their flops), no side under TILE_MIN; the
 * look-ahead panel's columns in up to T row tiles. The last chunk's rows in
 * TAIL_TILES times as many tiles (of at least TILE_MIN / 2 rows), so that the
 * threads run out of work nearly together: at 1 x 1 x 2 threads this took the
 * team from 87 to 92 GFLOPS (bench/RESULTS.md). */
#define TILES_PER_THREAD 4
#define TILE_MIN 256
#define TAIL_TILES 2

/* The exchange's pieces: the look-ahead panel's columns, then the rest in up
 * to XCHG_PIECES pieces of at least XCHG_MIN columns. They depend only on the
 * column counts, which every process of the column shares (they exchange
 * together), not on the local rows as the tasks' chunks do. */
#define XCHG_PIECES 8
#define XCHG_MIN 256

/* The first thread's exchange: columns [0, *swapped) of the range are done. */
static void exchange(hpl_lu *lu, const hpl_panel *p, const hpl_u *u, int lc0, int nc, int first, atomic_int *swapped)
{
    const int rest = nc - first;
    int np = rest / XCHG_MIN;
    np = np > XCHG_PIECES ? XCHG_PIECES : np < 1 ? 1 : np;
    for (int i = first > 0 ? -1 : 0, c = 0; i < np && c < nc; i++) {
        const int e = i < 0 ? first : first + (int)((long long)(i + 1) * rest / np);
        hpl_swap(lu, p, lc0 + c, lc0 + e, hpl_u_col(u, c), u->ld);
        atomic_store_explicit(swapped, e, memory_order_release);
        c = e;
    }
}

typedef struct {
    int c, w;   /* columns [c, c + w) of the range */
    int r0, h;  /* rows [r0, r0 + h) of the DGEMM; h < 0: the swap and solve task */
} task;

/* Appends the tasks of columns [c, c + w) in nrt row tiles: the swap and solve first. */
static int add_chunk(task *tk, int n, int c, int w, int m, int nrt)
{
    tk[n++] = (task){c, w, 0, -1};
    for (int r = 0; m > 0 && r < nrt; r++) {
        const int r0 = (int)((long long)r * m / nrt);
        tk[n++] = (task){c, w, r0, (int)((long long)(r + 1) * m / nrt) - r0};
    }
    return n;
}

void hpl_update_team(hpl_lu *lu, const hpl_panel *p, int lc0, int lc1, int first, void (*side)(void *),
                     hpl_poll_fn poll, void *ctx)
{
    const int nc = lc1 - lc0, jb = p->jb, m = p->mrows, T = lu->team;
    if (nc <= 0 || jb <= 0) {
        if (side)
            side(ctx);
        return;
    }
    const hpl_u u = hpl_u_of(lu, p, lc0, nc, lu->uwork);
    /* The first columns (the look-ahead panel's) in row tiles shared by the
     * whole team, then the rest in chunks of columns x tiles of rows. */
    const int rest = nc - first;
    const double side_len = fmax(TILE_MIN, sqrt((double)(m > 0 ? m : 1) * (rest > 0 ? rest : 1) /
                                                (TILES_PER_THREAD * T)));
    const int ncc = rest <= 0 ? 0 : rest / side_len < 1 ? 1 : (int)lround(rest / side_len);
    const int nrt = m / side_len < 1 ? 1 : (int)lround(m / side_len);
    const int nrt0 = m / TILE_MIN < 1 ? 1 : m / TILE_MIN < T ? m / TILE_MIN : T;
    const int fine = m / (TILE_MIN / 2) < nrt * TAIL_TILES ? m / (TILE_MIN / 2) : nrt * TAIL_TILES;
    const int nrt_last = fine > nrt ? fine : nrt;   /* the last chunk's row tiles */
    const int nchunks = (first > 0) + ncc;
    const size_t ntasks_max = 2 + (size_t)nrt0 + (size_t)ncc * (1 + nrt) + (size_t)(nrt_last - nrt);
    task *tk = hpl_malloc(ntasks_max * sizeof *tk, "the team's tasks");
    int *chunk_of = hpl_malloc(ntasks_max * sizeof *chunk_of, "the team's task chunks");
    atomic_int *ready = hpl_malloc((size_t)(nchunks > 0 ? nchunks : 1) * sizeof *ready, "the team's chunk flags");
    double *swap_s = hpl_malloc((size_t)T * sizeof *swap_s, "the team's swap times");
    int ntasks = 0, nfirst = 0, ch = 0;
    if (first > 0) {
        ntasks = add_chunk(tk, 0, 0, first, m, nrt0);
        nfirst = ntasks;
        for (int t = 0; t < ntasks; t++)
            chunk_of[t] = ch;
        ch++;
    }
    for (int i = 0; i < ncc; i++, ch++) {
        const int c = first + (int)((long long)i * rest / ncc);
        const int n0 = ntasks;
        ntasks = add_chunk(tk, ntasks, c, first + (int)((long long)(i + 1) * rest / ncc) - c, m,
                           i == ncc - 1 ? nrt_last : nrt);
        for (int t = n0; t < ntasks; t++)
            chunk_of[t] = ch;
    }
    for (int i = 0; i < nchunks; i++)
        atomic_init(&ready[i], 0);
    atomic_int next = 0, first_done = 0, swapped = u.inplace ? nc : 0;
    const double t0 = rmx_now();
    double poll_s = 0.0, xwait = 0.0;

#pragma omp parallel num_threads(T)
    {
        const int tid = omp_get_thread_num();
        int side_left = tid == 0 && side;
        if (tid == 0 && !u.inplace) {
            const double ts = rmx_now(), w0 = lu->st->wait[HPL_PH_SWAP];
            exchange(lu, p, &u, lc0, nc, first, &swapped);
            swap_s[0] += rmx_now() - ts;
            xwait = lu->st->wait[HPL_PH_SWAP] - w0;
        }
        for (;;) {
            if (side_left && atomic_load_explicit(&first_done, memory_order_acquire) == nfirst) {
                side(ctx); /* the look-ahead panel's columns are up to date: factor it */
                side_left = 0;
            }
            /* Until then the first thread takes only the first columns' tasks. */
            if (side_left && atomic_load_explicit(&next, memory_order_relaxed) >= nfirst) {
                sched_yield();
                continue;
            }
            const int t = atomic_fetch_add(&next, 1);
            if (t >= ntasks) {
                if (!side_left)
                    break;
                sched_yield();
                continue;
            }
            const task *k = &tk[t];
            if (k->h < 0) {
                while (atomic_load_explicit(&swapped, memory_order_acquire) < k->c + k->w)
                    sched_yield(); /* the first thread is exchanging these columns */
                if (u.inplace) {
                    const double ts = rmx_now();
                    hpl_swap_inplace(lu, p, lc0 + k->c, lc0 + k->c + k->w);
                    swap_s[tid] += rmx_now() - ts;
                }
                hpl_solve_u(lu->prm->l1notran, u.notran, jb, k->w, hpl_panel_l1(p), hpl_u_col(&u, k->c), u.ld);
                hpl_u_store(lu, p, &u, lc0, k->c, k->c + k->w);
                atomic_store_explicit(&ready[chunk_of[t]], 1, memory_order_release);
            } else {
                while (!atomic_load_explicit(&ready[chunk_of[t]], memory_order_acquire))
                    sched_yield(); /* the chunk's swap task was taken just before: it is running */
                hpl_u_gemm(lu, p, &u, lc0, k->c, k->w, k->r0, k->h);
            }
            if (t < nfirst)
                atomic_fetch_add_explicit(&first_done, 1, memory_order_release);
            if (tid == 0 && poll) {
                const double tp = rmx_now();
                poll(ctx);
                poll_s += rmx_now() - tp;
            }
        }
    }
    /* The team's wall time less the polls and the swaps' share (their
     * thread-seconds spread over the team, the first thread's exchange and
     * its time blocked in MPI too) is update time; the side work is timed by
     * its own phases, overlapping this one. */
    double sw = 0.0;
    for (int i = 0; i < T; i++)
        sw += swap_s[i];
    sw /= T;
    lu->st->wait[HPL_PH_SWAP] -= xwait - xwait / T;
    const double wall = rmx_now() - t0 - poll_s;
    lu->st->t[HPL_PH_BCAST] += poll_s;
    lu->st->t[HPL_PH_SWAP] += sw;
    lu->st->t[HPL_PH_UPDATE] += wall > sw ? wall - sw : 0.0;
    free(tk);
    free(chunk_of);
    free(ready);
    free(swap_s);
}
