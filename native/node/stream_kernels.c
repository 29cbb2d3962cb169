/* Compiled at -O3 with one clone per vector ISA: plain loads and stores as
 * STREAM's reference C code has (no non-temporal stores), so the bytes counted
 * are STREAM's (16 or 24 per element) and comparable with hpcc's STREAM. */
#include "stream_kernels.h"

#define CLONES __attribute__((target_clones("avx512f", "avx2", "default"), noinline))

CLONES void stream_copy(double *restrict c, const double *restrict a, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        c[i] = a[i];
}

CLONES void stream_scale(double *restrict b, const double *restrict c, double s, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        b[i] = s * c[i];
}

CLONES void stream_add(double *restrict c, const double *restrict a, const double *restrict b, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        c[i] = a[i] + b[i];
}

CLONES void stream_triad(double *restrict a, const double *restrict b, const double *restrict c, double s, size_t lo,
                         size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        a[i] = b[i] + s * c[i];
}
