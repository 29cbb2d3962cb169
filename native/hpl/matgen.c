/* The reference's matrix generator, so the same N gives the same [A|b].
 *
 * Facts (checked against the norms hpcc reports for the same N): a 64-bit
 * linear congruential stream X(k+1) = a X(k) + c mod 2^64 with
 * a = 6364136223846793005 and c = 1, seeded with X(0) = 100. Entry (i, j) of
 * the N-row matrix takes X(1 + j*N + i); its top 31 bits u give the value
 * 0.5 - u / 2^31, in (-0.5, 0.5]. b is column N of the same stream.
 * Each rank jumps straight to its own blocks: X(k+s) = A_s X(k) + C_s. */
#include "hpl.h"

#include <stdint.h>

typedef struct {
    uint64_t a, c;
} jump_t;

static const uint64_t MULT = 6364136223846793005ULL;

/* The affine map that advances the stream by s steps. */
static jump_t jump(uint64_t s)
{
    jump_t r = {1, 0}, base = {MULT, 1};
    while (s) {
        if (s & 1) {
            /* r = base o r */
            r.c = (base.a * r.c + base.c);
            r.a = (base.a * r.a);
        }
        /* base = base o base */
        base.c = (base.a * base.c + base.c);
        base.a = (base.a * base.a);
        s >>= 1;
    }
    return r;
}

static inline uint64_t apply(jump_t j, uint64_t x)
{
    return (j.a * x + j.c);
}

void hpl_matgen(const hpl_grid *g, int n, int nb, double *a, int lda)
{
    const int mp = hpl_numroc(n, nb, g->myrow, g->P);
    const int nq = hpl_numroc(n + 1, nb, g->mycol, g->Q);
    const jump_t one = jump(1);
    const double scale = 1.0 / 2147483648.0;
    for (int lj = 0; lj < nq; lj++) {
        const uint64_t gj = (uint64_t)hpl_l2g(lj, nb, g->mycol, g->Q);
        double *col = a + (size_t)lj * lda;
        for (int li = 0; li < mp; li += nb) {
            const uint64_t gi = (uint64_t)hpl_l2g(li, nb, g->myrow, g->P);
            /* Jumping per block costs ~31 steps against nb entries generated. */
            uint64_t x = apply(jump(1 + gj * (uint64_t)n + gi), 100);
            const int ib = mp - li < nb ? mp - li : nb;
            for (int i = 0; i < ib; i++) {
                col[li + i] = 0.5 - (double)(x >> 33) * scale;
                x = apply(one, x);
            }
        }
    }
}
