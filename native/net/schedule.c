/* NetPIPE's message-size schedule: powers of two and the points half-way
 * between them (3 * 2^(k-1)), each also 3 bytes below and above, so that
 * structure at protocol thresholds (eager/rendezvous, MTU, page size) shows
 * up instead of falling between two measured sizes. */
#include "net.h"

#include <stdlib.h>

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

size_t net_schedule(size_t min, size_t max, int perturb, size_t **out)
{
    size_t cap = 16, n = 0;
    size_t *v = malloc(cap * sizeof *v);
    if (!v)
        return 0;
#define ADD(x)                                                  \
    do {                                                        \
        size_t x_ = (x);                                        \
        if (x_ >= min && x_ <= max) {                           \
            if (n == cap) {                                     \
                size_t *w_ = realloc(v, 2 * cap * sizeof *v);   \
                if (!w_) {                                      \
                    free(v);                                    \
                    return 0;                                   \
                }                                               \
                v = w_;                                         \
                cap *= 2;                                       \
            }                                                   \
            v[n++] = x_;                                        \
        }                                                       \
    } while (0)
    ADD(0);
    for (size_t p = 1; p <= max + 3 && p != 0; p *= 2) {
        size_t pts[2] = {p, p + p / 2};
        int npts = p >= 2 ? 2 : 1;
        for (int i = 0; i < npts; i++) {
            ADD(pts[i]);
            if (perturb) {
                if (pts[i] > 3)
                    ADD(pts[i] - 3);
                ADD(pts[i] + 3);
            }
        }
        if (p > ((size_t)-1) / 4)
            break;
    }
#undef ADD
    qsort(v, n, sizeof *v, cmp_size);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || v[i] != v[u - 1])
            v[u++] = v[i];
    *out = v;
    return u;
}

size_t net_largest(const size_t *sizes, size_t n)
{
    size_t largest = 0;
    for (size_t i = 0; i < n; i++)
        largest = sizes[i] > largest ? sizes[i] : largest;
    return largest;
}
