/* rmax-hpcc: HPC Challenge's RandomAccess, PTRANS and FFT, one sub-command per file.
 *
 * Each kernel runs in the forms HPCC defines: "single" (one rank alone, the others
 * waiting), "star" (every rank alone, all at once; reported as the mean over ranks)
 * and "mpi" (all ranks on one problem; PTRANS has only this form). Each checks its
 * own answer as HPCC does and has a --self-test-corrupt that must fail the check.
 *
 * Layout (one concept per file):
 *   main.c        the dispatch (each cmd_*.c registers itself: RMX_SUBCMD)
 *   run.c         what the commands share: forms, their point records and table, the done record
 *   cmd_gups.c    RandomAccess (GUP/s): local and distributed table updates, the verification pass
 *   cmd_ptrans.c  PTRANS (GB/s): C = A^T + C on a block-cyclic P x Q grid, its residual
 *   cmd_fft.c     FFT (GFLOPS): FFTW's 1-D complex transform, local and over MPI, the inverse's error
 */
#ifndef RMAX_HPCC_H
#define RMAX_HPCC_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rmx_json.h"
#include "rmx_mpirun.h"

#define PROG "rmax-hpcc"
#define HC_THRESHOLD 16.0   /* HPCC's residual threshold (hpccinf.txt line 6's default) */

/* The forms of a kernel, as a bit mask. */
enum { HC_SINGLE = 1, HC_STAR = 2, HC_MPI = 4 };

/* "single,star,mpi" (any of them, comma-separated) as a mask. Refuses anything else with one
 * line and exit status 2: call before MPI starts. */
int hc_forms(const char *list);

/* One run of a command (rmx_mpirun.h, shared with rmax-net): every rank's host, rank 0's JSON
 * lines (a header, the command's records, a closing "done" record) and its table; `invalid`
 * counts the forms whose check failed. */
typedef rmx_mpirun hc_run;

/* MPI_Init (the step "init"), the run's fields, the hosts gathered (all ranks call). */
void hc_start(int *argc, char ***argv, hc_run *r, const char *schema, const char *json);
/* After hc_start, input only the rank count shows wrong: one line from rank 0, MPI finalized, 2 returned. */
#define hc_refuse(r, ...) rmx_mpi_refuse(PROG, (r)->me, __VA_ARGS__)
/* On rank 0 with --json: opens it and begins the header record (schema, "header", test, ranks,
 * hosts, MPI library), left open for the command's members; end it with rmx_json_obj_end. */
#define hc_header rmx_mpirun_header
/* A "point" record for one form, begun with its common members and left open (NULL where this
 * rank writes no JSON); the table line is printed here too, in units of 1e9 (GUP/s, GB/s, GFLOPS).
 * `value` is in base units: updates/s, bytes/s, flop/s. */
rmx_json *hc_point(hc_run *r, const char *form, int ranks, long long size, double value, double seconds,
                   int validated, const char *unit);
/* Ends a point record after the command's members: the star form's range of the ranks' values
 * ("value_min", "value_max" where lo >= 0), the single form's rank (where rank >= 0). */
void hc_point_end(rmx_json *j, double lo, double hi, int rank);
/* The "done" record ({"invalid": count}), the JSON closed, MPI finalized. Returns 0: a run whose
 * check failed completed (its records say which form; rmax stores it as invalid). */
int hc_finish(hc_run *r);

/* One line on stderr naming the rank and host, then MPI_Abort (exit before MPI). */
#define hc_fail(...) rmx_mpi_fail(PROG, __VA_ARGS__)
/* malloc of `bytes` that dies naming the rank and host and what it was for. */
void *hc_alloc(size_t bytes, const char *what);

/* The "single" form: `kernel` runs on one rank (drawn at random, not rank 0, as HPCC does), the
 * others waiting, into `result` (`bytes` of it, zeroed first), which then reaches every rank.
 * Returns that rank (all ranks call). */
int hc_single(void (*kernel)(const void *args, void *result), const void *args, void *result, size_t bytes);
/* A random seed drawn by rank 0, the same on every rank (all ranks call). */
uint64_t hc_shared_seed(void);
/* min, mean and max of every rank's value, and whether every rank's check passed (all ranks call). */
void hc_star(double value, int ok, double *min, double *mean, double *max, int *all_ok);
/* max over ranks of a time (all ranks call). */
double hc_max(double v);

/* A reproducible 64-bit hash (splitmix64's finaliser) and a double in [-0.5, 0.5) from it. */
uint64_t hc_mix(uint64_t x);
double hc_uniform(uint64_t seed, uint64_t index);

#endif
