/* The right-looking blocked LU of [A|b] with look-ahead, then the solve.
 *
 * With look-ahead depth d, panel k+d is factored and its broadcast started
 * before panel k's update of the rest of the matrix: the process column that
 * owns panel k+d first brings just those columns up to date (with panels
 * k..k+d-1), factors them, starts the broadcast, and only then runs the big
 * trailing DGEMM, during which the broadcast progresses. d = 0 is the plain
 * algorithm. b rides along as column N, so the forward substitution happens
 * during the factorisation and only U x = y remains. A threaded rank runs
 * each update with its own thread team, the look-ahead panel being factored
 * on the team's first thread meanwhile (update_team.c). */
#include "hpl.h"
#include "rmx_step.h"
#include "rmx_timer.h"

#include <stdlib.h>

typedef struct {
    hpl_lu *lu;
    hpl_panel *slot; /* depth+1 panels, panel i in slot i % nslots */
    int nslots;
    int k, f;        /* the team's side work: look-ahead for panel f during iteration k */
} driver;

static hpl_panel *panel_of(driver *d, int idx) { return &d->slot[idx % d->nslots]; }

/* Pushes every in-flight broadcast along; called between DGEMM chunks and
 * while waiting. Returns the number of broadcasts not yet complete here. */
static int poll_all(void *ctx)
{
    driver *d = ctx;
    int pending = 0;
    for (int i = 0; i < d->nslots; i++)
        if (d->slot[i].in_flight && !hpl_bcast_test(&d->slot[i].bc))
            pending++;
    return pending;
}

static void wait_panel(driver *d, hpl_panel *p)
{
    if (!p->in_flight)
        return;
    const double t = rmx_now();
    while (!hpl_bcast_test(&p->bc))
        poll_all(d);
    d->lu->st->t[HPL_PH_BCAST] += rmx_now() - t;
    d->lu->st->wait[HPL_PH_BCAST] += rmx_now() - t;
}

static void setup(driver *d, hpl_panel *p, int idx)
{
    const hpl_lu *lu = d->lu;
    const int nb = lu->prm->nb, n = lu->prm->n;
    p->idx = idx;
    p->jj = idx * nb;
    p->jb = n - p->jj < nb ? n - p->jj : nb;
    p->pcol = idx % lu->g->Q;
    p->prow = idx % lu->g->P;
    p->mrows = lu->mp - hpl_numroc(p->jj + p->jb, nb, lu->g->myrow, lu->g->P);
    p->len = (size_t)p->jb * p->jb + p->jb + (size_t)p->mrows * p->jb;
}

static void factor_and_send(driver *d, int idx)
{
    hpl_lu *lu = d->lu;
    hpl_panel *p = panel_of(d, idx);
    setup(d, p, idx);
    if (lu->g->mycol == p->pcol) {
        rmx_step("pfact");
        hpl_pfact(lu, p);
    }
    rmx_step("bcast");
    const double t = rmx_now();
    hpl_bcast_start(&p->bc, lu->prm->bcast, lu->g->row, p->pcol, p->buf, p->len, 1 + idx % 30000,
                    &lu->st->bytes);
    p->in_flight = 1;
    hpl_bcast_test(&p->bc);
    lu->st->t[HPL_PH_BCAST] += rmx_now() - t;
}

/* Local column range of the global columns [g0, g1). */
static void local_cols(const hpl_lu *lu, int g0, int g1, int *l0, int *l1)
{
    *l0 = hpl_numroc(g0, lu->prm->nb, lu->g->mycol, lu->g->Q);
    *l1 = hpl_numroc(g1, lu->prm->nb, lu->g->mycol, lu->g->Q);
}

static void progress(const hpl_lu *lu, int col)
{
    if (!lu->progress || lu->g->iam != 0)
        return;
    const double n = lu->prm->n, r = n - col;
    const double flops = 2.0 / 3.0 * (n * n * n - r * r * r);
    const double el = rmx_now() - lu->t0;
    /* The test number and the elapsed seconds let a reader (rmax's engine) keep one trajectory per test. */
    fprintf(stderr, "%s: test %d: column %d of %d (%.1f%% of the work) %.2f GFLOPS after %.6f s\n", HPL_PROG,
            lu->test, col, lu->prm->n, 100.0 * (1.0 - (r * r * r) / (n * n * n)), el > 0 ? flops / el / 1e9 : 0.0,
            el);
}

/* Look-ahead: bring panel f's columns up to date with panels k..f-1 (those not
 * yet applied to them), factor, send. */
static void look_ahead(driver *d, int k, int f)
{
    hpl_lu *lu = d->lu;
    hpl_panel tmp;
    setup(d, &tmp, f);
    if (lu->g->mycol == tmp.pcol) {
        int l0, l1;
        local_cols(lu, tmp.jj, tmp.jj + tmp.jb, &l0, &l1);
        for (int j = k < 0 ? 0 : k; j < f; j++) {
            hpl_panel *pj = panel_of(d, j);
            wait_panel(d, pj);
            rmx_step("update");
            hpl_update(lu, pj, l0, l1, lu->uside, NULL, NULL);
        }
    }
    factor_and_send(d, f);
}

/* The team has applied panel k to panel f's columns (its first columns). */
static void team_side(void *ctx)
{
    driver *d = ctx;
    look_ahead(d, d->k + 1, d->f);
}

void hpl_pdgesv(hpl_lu *lu, double *x)
{
    const hpl_params *prm = lu->prm;
    const int n = prm->n, nb = prm->nb, dep = prm->depth;
    const int npan = (n + nb - 1) / nb;
    driver d = {lu, NULL, dep + 1, 0, 0};
    d.slot = hpl_malloc((size_t)d.nslots * sizeof *d.slot, "the panel slots");
    for (int i = 0; i < d.nslots; i++)
        d.slot[i].buf = lu->pbuf + (size_t)i * lu->pcap;

    /* A threaded rank runs the update as a team, with the look-ahead on the
     * team's first thread (update_team.c); the BLAS then runs one thread per
     * call. */
    const int team = lu->team > 1;
    if (team)
        hpl_blas_set_threads(1);
    for (int k = -dep; k < npan; k++) {
        const int f = k + dep;
        const int side = team && k >= 0 && dep > 0 && f < npan;
        if (f < npan && !side) {
            if (dep > 0)
                look_ahead(&d, k, f);
            else
                factor_and_send(&d, f);
        }
        if (k < 0)
            continue;
        hpl_panel *pk = panel_of(&d, k);
        wait_panel(&d, pk);
        int g0 = (f + 1) * nb;
        if (g0 > n)
            g0 = n;
        int l0, l1;
        local_cols(lu, g0, n + 1, &l0, &l1);
        rmx_step("update");
        d.k = k;
        d.f = f;
        if (side) {
            /* The team starts with panel f's own columns, then factors it. */
            int f0, f1;
            local_cols(lu, f * nb, g0, &f0, &f1);
            hpl_update_team(lu, pk, f0, l1, f1 - f0, team_side, poll_all, &d);
        } else if (team) {
            hpl_update_team(lu, pk, l0, l1, 0, NULL, poll_all, &d);
        } else {
            hpl_update(lu, pk, l0, l1, lu->uwork, poll_all, &d);
        }
        hpl_bcast_free(&pk->bc);
        pk->in_flight = 0;
        progress(lu, pk->jj + pk->jb);
    }
    free(d.slot);
    if (team)
        hpl_blas_set_threads(lu->team);

    rmx_step("solve");
    const double t = rmx_now();
    hpl_solve(lu, x);
    lu->st->t[HPL_PH_SOLVE] += rmx_now() - t;
}
