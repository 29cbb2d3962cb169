/* STREAM's four kernels on the slice [lo, hi) of the arrays (one thread's share). */
#ifndef STREAM_KERNELS_H
#define STREAM_KERNELS_H

#include <stddef.h>

void stream_copy(double *c, const double *a, size_t lo, size_t hi);
void stream_scale(double *b, const double *c, double s, size_t lo, size_t hi);
void stream_add(double *c, const double *a, const double *b, size_t lo, size_t hi);
void stream_triad(double *a, const double *b, const double *c, double s, size_t lo, size_t hi);

#endif
