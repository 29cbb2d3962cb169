/* FMA-throughput kernels, one per ISA and precision, chosen at run time.
 * Each runs `iters` rounds of RMX_PEAK_CHAINS independent multiply-add chains
 * acc = acc * m + a, enough chains to cover FMA latency on two FMA ports, and
 * stores the first lane of every chain in out[] so the caller can check it
 * against a scalar replay of the same recurrence. */
#ifndef PEAKFLOPS_KERNELS_H
#define PEAKFLOPS_KERNELS_H

#include <stddef.h>

#define RMX_PEAK_CHAINS 12

typedef struct {
    const char *isa;        /* "avx512", "avx2", "sse2" */
    const char *precision;  /* "double", "single" */
    int lanes;              /* elements per vector register */
    int fused;              /* 1: one FMA instruction = 2 flops; 0: separate mul and add */
    int (*available)(void);
    void (*run)(size_t iters, double m, double a, double *out);
} rmx_peak_kernel;

/* Every kernel compiled in, widest first; NULL-terminated. */
extern const rmx_peak_kernel *const rmx_peak_kernels[];

#endif
