/* Run one function on T pinned threads at once and time the slowest:
 * the harness of every kernel that loads all cores. */
#ifndef RMX_THREADS_H
#define RMX_THREADS_H

#include <stddef.h>

/* fn(ctx, thread_index, nthreads) does one thread's share; returns 0 on success. */
typedef int (*rmx_thread_fn)(void *ctx, int tid, int nthreads);

/* Starts nthreads threads (thread i pinned to the i-th allowed CPU, physical
 * cores before SMT siblings), releases them together once all are spinning on
 * their CPUs and returns the wall time from the release until the last one
 * finished, or a negative value if any thread failed or could not start. */
double rmx_run_threads(rmx_thread_fn fn, void *ctx, int nthreads);

/* Number of CPUs this process may run on (its affinity mask). */
int rmx_cpus_allowed(void);

/* One pause in a spin-wait loop (x86 PAUSE: yields the core's pipeline to its sibling). */
static inline void rmx_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

#endif
