/* oslat: lmbench-style operating-system latencies. Each test is one function
 * that sets up, measures through oslat_measure and tears down; the driver in
 * oslat.c picks the tests and shares the budget among them. */
#ifndef OSLAT_H
#define OSLAT_H

#include <stddef.h>

#include "measure.h"

typedef struct {
    node_run *r;         /* the run: options, output, failures */
    double budget;       /* seconds per measurement */
    int cpu_a, cpu_b;    /* the first two CPUs the run may use (sched_getaffinity); cpu_b -1: only one */
    int placed[2];       /* where the current measurement's processes are pinned, recorded with it; -1: unused */
} oslat_env;

/* Times batches of n operations: op(ctx, n) does them and returns 0 when every
 * answer was right. Samples are microseconds per event, an operation being
 * `events_per_op` events (a lap of a ring of 8 processes is 8 switches), as
 * measured; or, with bytes_per_op > 0, MB/s. `overhead_us` (NAN: none) is a cost
 * inside each event that the figure is meant without: it is recorded, never
 * subtracted from a sample (noise would take a difference below zero), with the
 * resolution of the difference: the overhead's own spread, `overhead_spread_us`,
 * or the timer's resolution per event, whichever is larger. Readers derive the
 * figure as the summary less the overhead, unresolved at or below the resolution
 * (src/rmax/families/oslat.py); the table shows it so. The record names the CPUs in e->placed. `extra` (may
 * be NULL) adds members to the record. */
typedef int (*oslat_op)(void *ctx, size_t n);
typedef void (*oslat_extra)(void *ctx, rmx_json *j);

void oslat_measure(oslat_env *e, const char *test, const char *label, oslat_op op, void *ctx, double bytes_per_op,
                   double events_per_op, double overhead_us, double overhead_spread_us, oslat_extra extra);

/* Tests in oslat_proc.c, oslat_ipc.c and oslat_cacheline.c; the harness above and below in oslat_harness.c. */
void oslat_null(oslat_env *e);
void oslat_stat(oslat_env *e);
void oslat_open_close(oslat_env *e);
void oslat_fork_exit(oslat_env *e);
void oslat_fork_exec(oslat_env *e);
void oslat_sig_install(oslat_env *e);
void oslat_sig_catch(oslat_env *e);
void oslat_pipe(oslat_env *e);
void oslat_unix(oslat_env *e);
void oslat_ctxsw(oslat_env *e, int procs, size_t ws_bytes);
void oslat_tcp(oslat_env *e);
void oslat_udp(oslat_env *e);
void oslat_tcp_connect(oslat_env *e);
void oslat_tcp_bw(oslat_env *e);
void oslat_cacheline(oslat_env *e); /* oslat_cacheline.c */

/* Pins the calling process to one CPU (0 when done). */
int oslat_pin(int cpu);

/* A child, pinned to `cpu`, that runs fn(arg) and _exits (never returns to the caller's stdio). */
int oslat_spawn(int cpu, void (*fn)(void *), void *arg);
void oslat_reap(int pid);

/* Records that a measurement could not be made here, and why (one line, in the JSON and the table). */
void oslat_not_measured(oslat_env *e, const char *test, const char *label, const char *why);

#endif
