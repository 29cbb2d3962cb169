/* The trailing update of a threaded rank with one process row (P = 1): the
 * rank's threads work as a team on tasks taken in order from a shared counter,
 * each thread calling the BLAS with one thread:
 *   for each column chunk: its row interchanges and its U := L11^-1 U (one task),
 *   then the DGEMM of that chunk in row tiles (one task each, started once the
 *   chunk's interchanges are done).
 * Meanwhile the first thread runs side() first (the look-ahead panel's update,
 * factorisation and broadcast start, all of it on one thread), then joins the
 * tasks, polling the broadcasts between them; it alone calls MPI. With the
 * library's threading instead, the panel and the swaps ran on one thread while
 * the others waited (30 % of the time at 1 x 1 with 16 threads). Tiles, not
 * whole columns, keep the DGEMM efficient: each call packs its rows of L2 and
 * its columns of U, so a tile of r rows and c columns repacks (r + c) jb values
 * for 2 r c jb flops. */
#include "hpl.h"
#include "rmx_timer.h"

#include <math.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdlib.h>

/* About TILES_PER_THREAD tiles per thread, as square as the matrix allows
 * (the least repacking for their flops), no side under TILE_MIN. */
#define TILES_PER_THREAD 4
#define TILE_MIN 256

void hpl_update_team(hpl_lu *lu, const hpl_panel *p, int lc0, int lc1, void (*side)(void *), hpl_poll_fn poll,
                     void *ctx)
{
    const int nc = lc1 - lc0, jb = p->jb, lda = lu->lda, m = p->mrows, T = lu->team;
    if (nc <= 0 || jb <= 0) {
        if (side)
            side(ctx);
        return;
    }
    /* Chunks of columns x tiles of rows. */
    const double side_len = fmax(TILE_MIN, sqrt((double)(m > 0 ? m : 1) * nc / (TILES_PER_THREAD * T)));
    const int ncc = nc / side_len < 1 ? 1 : (int)lround(nc / side_len);
    const int nrt = m / side_len < 1 ? 1 : (int)lround(m / side_len);
    const int per = 1 + nrt; /* tasks per chunk: the swap and solve, then nrt tiles */
    const int ntasks = ncc * per;
    atomic_int next = 0;
    atomic_int *ready = malloc((size_t)ncc * sizeof *ready);
    double *swap_s = calloc((size_t)T, sizeof *swap_s);
    if (!ready || !swap_s)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int i = 0; i < ncc; i++)
        atomic_init(&ready[i], 0);
    double *u0 = lu->a + p->jj + (size_t)lc0 * lda; /* U in place (P = 1) */
    const double *l2 = hpl_panel_l2(p);
    const double one = 1.0, mone = -1.0;
    const double t0 = rmx_now();
    double side_s = 0.0, poll_s = 0.0;

#pragma omp parallel num_threads(T)
    {
        const int tid = omp_get_thread_num();
        if (tid == 0 && side) {
            const double ts = rmx_now();
            side(ctx);
            side_s = rmx_now() - ts;
        }
        for (;;) {
            const int t = atomic_fetch_add(&next, 1);
            if (t >= ntasks)
                break;
            const int ci = t / per, r = t % per - 1;
            const int c = (int)((long long)ci * nc / ncc), w = (int)((long long)(ci + 1) * nc / ncc) - c;
            if (r < 0) {
                const double ts = rmx_now();
                hpl_swap_inplace(lu, p, lc0 + c, lc0 + c + w);
                swap_s[tid] += rmx_now() - ts;
                hpl_solve_u(lu->prm->l1notran, 1, jb, w, hpl_panel_l1(p), u0 + (size_t)c * lda, lda);
                atomic_store_explicit(&ready[ci], 1, memory_order_release);
            } else if (m > 0) {
                const int r0 = (int)((long long)r * m / nrt), h = (int)((long long)(r + 1) * m / nrt) - r0;
                while (!atomic_load_explicit(&ready[ci], memory_order_acquire))
                    ; /* the chunk's swap task was taken just before: it is running */
                double *cc = lu->a + (lu->mp - m) + r0 + (size_t)(lc0 + c) * lda;
                dgemm_("N", "N", &h, &w, &jb, &mone, l2 + r0, &m, u0 + (size_t)c * lda, &lda, &one, cc, &lda, 1, 1);
            }
            if (tid == 0 && poll) {
                const double tp = rmx_now();
                poll(ctx);
                poll_s += rmx_now() - tp;
            }
        }
    }
    /* Wall time less the first thread's side work and polls; the swaps' share
     * is their thread-seconds spread over the team. */
    double sw = 0.0;
    for (int i = 0; i < T; i++)
        sw += swap_s[i];
    sw /= T;
    const double wall = rmx_now() - t0 - side_s - poll_s;
    lu->st->t[HPL_PH_BCAST] += poll_s;
    lu->st->t[HPL_PH_SWAP] += sw;
    lu->st->t[HPL_PH_UPDATE] += wall > sw ? wall - sw : 0.0;
    free(ready);
    free(swap_s);
}
