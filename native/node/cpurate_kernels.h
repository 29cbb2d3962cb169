/* Brown's cpu-rate kernel ("Maximizing Beowulf Performance"): x[i] = (1.0 + x[i]) * (1.5 - x[i]) / x[i],
 * four flops per element; with x[i] = 1.0 the result is exactly 1.0 again, so a
 * run checks itself. The divide variant is Brown's; the multiply variant
 * (... * x[i]) has the same flops and fixed point without the divide, whose
 * throughput (one vector per 8-16 cycles on x86, Intel's optimization manual) bounds
 * the rate below cache bandwidth on a wide core, so that the divide's
 * curve is flat through the caches. One pass over the vector per call, in each
 * precision, and an empty function with the same call signature for the
 * empty-loop correction. */
#ifndef CPURATE_KERNELS_H
#define CPURATE_KERNELS_H

#include <stddef.h>

void cpurate_pass_d(double *x, size_t n);
void cpurate_pass_s(float *x, size_t n);
void cpurate_mul_d(double *x, size_t n);
void cpurate_mul_s(float *x, size_t n);
void cpurate_empty_d(double *x, size_t n);
void cpurate_empty_s(float *x, size_t n);

#endif
