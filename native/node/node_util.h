/* Helpers shared by the rmax-node kernels (not generic enough for common/):
 * the machine's memory and cache sizes, checked allocation, geometric size
 * sweeps, and the table-or-JSON output every sub-command has. */
#ifndef NODE_UTIL_H
#define NODE_UTIL_H

#include <stddef.h>
#include <stdio.h>

#include "rmx_json.h"
#include "rmx_stats.h"

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

/* The size range of a sweep over working sets (cpurate, memcopy, memlat): an unset
 * max_size becomes 4x the last-level cache (1 GiB when unknown), capped at a quarter of
 * the available memory; then both ends are checked for `count` buffers and their order.
 * Returns 1 when max_size was given. */
int node_sweep_range(const char *prog, size_t min_size, size_t *max_size, size_t count);

/* The repetition rule of one point of such a sweep: one warm-up, at least min_reps and at
 * most 50 samples, and the smaller of 10 x min_reps samples' time and the point's `share`
 * of the sweep's budget. */
rmx_repeat_rule node_sweep_rule(long long min_reps, double sample_time, double share, double target);

/* Page-aligned allocation, every page touched (so page faults are not timed);
 * the program ends with status 1 when memory runs out. */
void *node_alloc(const char *prog, size_t bytes);
void node_free(void *p, size_t bytes);

/* Geometric sweep from lo to hi (both included) with `per_octave` points per
 * doubling, each rounded to a multiple of `align`. Returns the count; *out is malloc'ed. */
size_t node_sweep(size_t lo, size_t hi, int per_octave, size_t align, size_t **out);

/* Table on stdout unless the JSON goes to stdout; JSON lines to a file or "-". */
typedef struct {
    FILE *jf;
    rmx_json j;
    int table;
} node_out;

void node_out_open(node_out *o, const char *prog, const char *json_path);
void node_out_close(node_out *o);

/* The members every measurement record carries: schema, samples, summary,
 * validated and whether the repetition target was met. Call between
 * rmx_json_obj_begin and rmx_json_obj_end. */
void node_json_measurement(node_out *o, const rmx_samples *s, const rmx_summary *sum, int validated,
                           int target_met);

/* A small fast generator for random chains and offsets (xorshift64*). */
typedef struct { unsigned long long s; } node_rng;
unsigned long long node_rand(node_rng *r);

#endif
