/* Built with -ffp-contract=off so the scalar replays below round exactly as the
 * vector instructions do (fused where the kernel is fused, separate otherwise). */
#include "peakflops_kernels.h"

#include <immintrin.h>
#include <math.h>

#define CHAINS RMX_PEAK_CHAINS

/* One kernel body: VT vector type, SET1 broadcast, OP(acc, m, a) -> new acc, STORE0 lane 0. */
#define PEAK_KERNEL(name, tgt, VT, ST, SET1, OP, LANE0)                         \
    __attribute__((target(tgt))) static void name(size_t iters, double m,     \
                                                     double a, double *out)      \
    {                                                                            \
        VT vm = SET1((ST)m), va = SET1((ST)a), acc[CHAINS];                      \
        _Pragma("GCC unroll 16")                                                 \
        for (int c = 0; c < CHAINS; c++)                                         \
            acc[c] = SET1((ST)(1.0 + 0.01 * c));                                 \
        for (size_t i = 0; i < iters; i++) {                                     \
            _Pragma("GCC unroll 16") /* keeps every chain in a register */       \
            for (int c = 0; c < CHAINS; c++)                                     \
                acc[c] = OP(acc[c], vm, va);                                     \
        }                                                                        \
        for (int c = 0; c < CHAINS; c++)                                         \
            out[c] = (double)LANE0(acc[c]);                                      \
    }

#define FMA512D(x, m, a) _mm512_fmadd_pd(x, m, a)
#define FMA512S(x, m, a) _mm512_fmadd_ps(x, m, a)
#define FMA256D(x, m, a) _mm256_fmadd_pd(x, m, a)
#define FMA256S(x, m, a) _mm256_fmadd_ps(x, m, a)
#define MULADD128D(x, m, a) _mm_add_pd(_mm_mul_pd(x, m), a)
#define MULADD128S(x, m, a) _mm_add_ps(_mm_mul_ps(x, m), a)

PEAK_KERNEL(k512d, "avx512f", __m512d, double, _mm512_set1_pd, FMA512D, _mm512_cvtsd_f64)
PEAK_KERNEL(k512s, "avx512f", __m512, float, _mm512_set1_ps, FMA512S, _mm512_cvtss_f32)
PEAK_KERNEL(k256d, "avx2,fma", __m256d, double, _mm256_set1_pd, FMA256D, _mm256_cvtsd_f64)
PEAK_KERNEL(k256s, "avx2,fma", __m256, float, _mm256_set1_ps, FMA256S, _mm256_cvtss_f32)
PEAK_KERNEL(k128d, "sse2", __m128d, double, _mm_set1_pd, MULADD128D, _mm_cvtsd_f64)
PEAK_KERNEL(k128s, "sse2", __m128, float, _mm_set1_ps, MULADD128S, _mm_cvtss_f32)

static int has_avx512(void) { return __builtin_cpu_supports("avx512f"); }
static int has_avx2fma(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
static int has_sse2(void) { return __builtin_cpu_supports("sse2"); }

static const rmx_peak_kernel K512D = {"avx512", "double", 8, 1, has_avx512, k512d};
static const rmx_peak_kernel K512S = {"avx512", "single", 16, 1, has_avx512, k512s};
static const rmx_peak_kernel K256D = {"avx2", "double", 4, 1, has_avx2fma, k256d};
static const rmx_peak_kernel K256S = {"avx2", "single", 8, 1, has_avx2fma, k256s};
static const rmx_peak_kernel K128D = {"sse2", "double", 2, 0, has_sse2, k128d};
static const rmx_peak_kernel K128S = {"sse2", "single", 4, 0, has_sse2, k128s};

const rmx_peak_kernel *const rmx_peak_kernels[] = {&K512D, &K512S, &K256D, &K256S, &K128D, &K128S, NULL};
