/* Helpers shared by the rmax-node kernels (not generic enough for common/):
 * the machine's memory and cache sizes, checked allocation, geometric size
 * sweeps (the measurement sequence itself is in measure.h). */
#ifndef NODE_UTIL_H
#define NODE_UTIL_H

#include <stddef.h>

/* "Option not given" for size options, whose range never reaches it: 0 stays an error. */
#define NODE_UNSET ((size_t)-1)

/* Bytes the kernel may still allocate (MemAvailable), 0 when unknown. */
size_t node_mem_available(void);

/* Size of the last-level data/unified cache one CPU sees (sysfs), 0 when unknown. */
size_t node_llc_bytes(void);

/* Sum of every distinct data/unified cache on the node: STREAM's "total cache". */
size_t node_total_cache_bytes(void);

/* Refuses a zero size, or `count` buffers of `bytes` that do not fit in memory:
 * one error line naming `what`, exit 2 (bad input, not a failed run). */
void node_check_size(const char *prog, const char *what, size_t bytes, size_t count);

/* The threads of an all-core run: `threads` (0: every CPU allowed); more than the CPUs
 * allowed is refused, since threads that share a CPU do not measure all cores' rate. */
int node_threads(const char *prog, long long threads);

/* The size range of a sweep over working sets (cpurate, memcopy, memlat): an unset
 * max_size becomes 4x the last-level cache (1 GiB when unknown), capped at a quarter of
 * the available memory; then both ends are checked for `count` buffers and their order.
 * Returns 1 when max_size was given. */
int node_sweep_range(const char *prog, size_t min_size, size_t *max_size, size_t count);

/* Page-aligned allocation, every page touched (so page faults are not timed);
 * the program ends with status 1 when memory runs out. */
void *node_alloc(const char *prog, size_t bytes);
void node_free(void *p, size_t bytes);

/* Geometric sweep from lo to hi (both included) with `per_octave` points per
 * doubling, each rounded to a multiple of `align`. Returns the count; *out is malloc'ed. */
size_t node_sweep(size_t lo, size_t hi, int per_octave, size_t align, size_t **out);

/* A small fast generator for random chains and offsets (xorshift64*). */
typedef struct { unsigned long long s; } node_rng;
unsigned long long node_rand(node_rng *r);

#endif
