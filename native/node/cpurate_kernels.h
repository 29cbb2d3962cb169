/* Brown's cpu-rate kernel ("Maximizing Beowulf Performance"): x[i] = (1.0 + x[i]) * (1.5 - x[i]) / x[i],
 * four flops per element; with x[i] = 1.0 the result is exactly 1.0 again, so a
 * run checks itself. One pass over the vector per call, in each precision, and
 * an empty function with the same call signature for the empty-loop correction. */
#ifndef CPURATE_KERNELS_H
#define CPURATE_KERNELS_H

#include <stddef.h>

void cpurate_pass_d(double *x, size_t n);
void cpurate_pass_s(float *x, size_t n);
void cpurate_empty_d(double *x, size_t n);
void cpurate_empty_s(float *x, size_t n);

#endif
