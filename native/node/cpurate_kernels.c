/* Compiled at -O3 with one clone per vector ISA (chosen by the loader at run
 * time), so the loop runs as fast as this CPU can run it: the point of the
 * sweep is how memory, not instruction choice, changes the rate. */
#include "cpurate_kernels.h"

#define CLONES __attribute__((target_clones("avx512f", "avx2", "default"), noinline))

CLONES void cpurate_pass_d(double *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (1.0 + x[i]) * (1.5 - x[i]) / x[i];
}

CLONES void cpurate_pass_s(float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (1.0f + x[i]) * (1.5f - x[i]) / x[i];
}

CLONES void cpurate_mul_d(double *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (1.0 + x[i]) * (1.5 - x[i]) * x[i];
}

CLONES void cpurate_mul_s(float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (1.0f + x[i]) * (1.5f - x[i]) * x[i];
}

/* The empty loop: a vectorised loop's per-element overhead is folded into its
 * arithmetic, so what is left to subtract is the per-pass cost (call, loop
 * setup, dispatch); the asm keeps the call from being optimised away. */
CLONES void cpurate_empty_d(double *x, size_t n)
{
    __asm__ volatile("" : : "r"(x), "r"(n) : "memory");
}

CLONES void cpurate_empty_s(float *x, size_t n)
{
    __asm__ volatile("" : : "r"(x), "r"(n) : "memory");
}
