/* Memory: the model of what one test needs (sizes computed once, for both the
 * allocation and the check before a run), the allocators, and the work space
 * of a test. */
#include "hpl.h"
#include "rmx_fail.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef unsigned long long u64;

int hpl_mem_model(const hpl_params *prm, int myrow, int mycol, hpl_mem *m)
{
    const u64 n = (u64)prm->n, nb = (u64)prm->nb, align = (u64)prm->align;
    memset(m, 0, sizeof *m);
    m->mp = hpl_numroc_ll(prm->n, prm->nb, myrow, prm->p);
    m->nq = hpl_numroc_ll((long long)prm->n + 1, prm->nb, mycol, prm->q);
    m->lda = (long long)(((u64)(m->mp > 1 ? m->mp : 1) + align - 1) / align * align);
    const u64 mp = (u64)m->mp, nq1 = (u64)(m->nq > 1 ? m->nq : 1);
    int over = __builtin_mul_overflow((u64)m->lda, nq1, &m->a);
    u64 nb2, l2;
    over |= __builtin_mul_overflow(nb, nb, &nb2);
    over |= __builtin_mul_overflow(mp, nb, &l2);
    over |= __builtin_add_overflow(nb2, l2, &m->pcap);
    over |= __builtin_add_overflow(m->pcap, nb + 7, &m->pcap);
    m->pcap = m->pcap / 8 * 8;
    over |= __builtin_mul_overflow((u64)prm->depth + 1, m->pcap, &m->pbuf);
    m->pft = nb2;
    m->pfwork = 2 * nb + 4;
    m->pfipiv = nb;
    if (prm->p > 1) { /* with one process row U stays in the matrix and no rows travel */
        over |= __builtin_mul_overflow(nq1, nb, &m->uwork);
        m->uside = nb2;
        over |= __builtin_mul_overflow(m->uwork, 2, &m->swbuf);
        over |= __builtin_mul_overflow(m->uwork, 4, &m->swtmp);
    }
    m->vectors = 3 * n + 2 * mp + 2 * nb;
    /* The row swaps' all-gather (swap.c) moves up to swbuf in one message, the
     * check's sums 2 mp; the panel broadcast splits its own (bcast.c). */
    m->msg = m->swbuf > 2 * mp ? m->swbuf : 2 * mp;
    const u64 parts[] = {m->a, m->pbuf, m->pft, m->pfwork, m->uwork, m->uside, m->swbuf, m->swtmp, m->vectors};
    u64 d = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        over |= __builtin_add_overflow(d, parts[i], &d);
    over |= __builtin_mul_overflow(d, (u64)sizeof(double), &d);
    over |= __builtin_add_overflow(d, m->pfipiv * sizeof(int), &m->bytes);
    if (over)
        return -1;
    return m->lda > INT_MAX || m->nq > INT_MAX || m->msg > INT_MAX ? -2 : 0;
}

void *hpl_alloc(size_t bytes, size_t align)
{
    const size_t huge = (size_t)2 << 20;
    if (align < 64)
        align = 64;
    if (bytes >= huge && align < huge)
        align = huge;
    void *p = NULL;
    if (posix_memalign(&p, align, bytes > 0 ? bytes : 1) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (bytes >= huge)
        (void)madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE); /* advice only */
#endif
    return p;
}

void *hpl_malloc(size_t bytes, const char *what)
{
    void *p = calloc(1, bytes > 0 ? bytes : 1);
    if (!p) {
        rmx_fail_line(HPL_PROG, "cannot allocate %zu bytes for %s", bytes, what);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

int hpl_lu_alloc(hpl_lu *lu)
{
    const hpl_params *prm = lu->prm;
    hpl_mem m;
    if (hpl_mem_model(prm, lu->g->myrow, lu->g->mycol, &m) != 0) { /* the check before the run refuses these */
        rmx_fail_line(HPL_PROG, "N=%d NB=%d: the work space exceeds 2^64 bytes or rmax-hpl's int indices; "
                      "test skipped", prm->n, prm->nb);
        return -1;
    }
    lu->mp = (int)m.mp;
    lu->nq = (int)m.nq;
    lu->lda = (int)m.lda;
    lu->pcap = (size_t)m.pcap;
    size_t align = 64;
    while (align < (size_t)prm->align * 8 && align < ((size_t)1 << 21))
        align *= 2;
    /* The matrix is written by the generator right away: no need to touch it here;
     * the rest is touched now. Arrays of 0 elements (U with P = 1) stay NULL. */
    enum { A, UWORK, USIDE, SWBUF, SWTMP, PBUF, PFT, PFWORK, PFIPIV, NARR };
    const struct {
        u64 n;
        size_t elem, align;
        const char *what;
    } arr[NARR] = {
        [A] = {m.a, sizeof(double), align, "the matrix [A|b]"},
        [UWORK] = {m.uwork, sizeof(double), 64, "U (uwork)"},
        [USIDE] = {m.uside, sizeof(double), 64, "the look-ahead's U (uside)"},
        [SWBUF] = {m.swbuf, sizeof(double), 64, "the row records (swbuf)"},
        [SWTMP] = {m.swtmp, sizeof(double), 64, "the row exchange buffer (swtmp)"},
        [PBUF] = {m.pbuf, sizeof(double), 64, "the panels in flight (pbuf)"},
        [PFT] = {m.pft, sizeof(double), 64, "the panel's pivoted rows (pft)"},
        [PFWORK] = {m.pfwork, sizeof(double), 64, "the pivot record (pfwork)"},
        [PFIPIV] = {m.pfipiv, sizeof(int), 64, "the panel's pivots (pfipiv)"},
    };
    void *p[NARR] = {NULL};
    int ok = 1;
    for (int i = 0; i < NARR && ok; i++) {
        if (arr[i].n == 0)
            continue;
        const size_t bytes = (size_t)arr[i].n * arr[i].elem;
        if (!(p[i] = hpl_alloc(bytes, arr[i].align))) {
            rmx_fail_line(HPL_PROG, "cannot allocate %zu bytes for %s (N=%d NB=%d); test skipped", bytes,
                          arr[i].what, prm->n, prm->nb);
            ok = 0;
        } else if (i != A) {
            memset(p[i], 0, bytes);
        }
    }
    lu->a = p[A];
    lu->uwork = p[UWORK];
    lu->uside = p[USIDE];
    lu->swbuf = p[SWBUF];
    lu->swtmp = p[SWTMP];
    lu->pbuf = p[PBUF];
    lu->pft = p[PFT];
    lu->pfwork = p[PFWORK];
    lu->pfipiv = p[PFIPIV];
    return ok ? 0 : -1;
}

void hpl_lu_free(hpl_lu *lu)
{
    free(lu->a);
    free(lu->uwork);
    free(lu->uside);
    free(lu->swbuf);
    free(lu->swtmp);
    free(lu->pbuf);
    free(lu->pft);
    free(lu->pfwork);
    free(lu->pfipiv);
    lu->a = lu->uwork = lu->uside = lu->swbuf = lu->swtmp = lu->pbuf = lu->pft = lu->pfwork = NULL;
    lu->pfipiv = NULL;
}
