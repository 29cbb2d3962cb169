/* rmax-net: network and MPI microbenchmarks. Shared declarations.
 *
 * Layout (one concept per file):
 *   main.c        the dispatch (each cmd_*.c registers itself: RMX_SUBCMD)
 *   ranks.c       a rank's host name, a pair's communicator, a reproducible shuffle of ranks
 *   repeat.c      the synchronised timing harness (calibration + adaptive repetition)
 *   payload.c     message patterns, validation, buffer allocation under a memory check
 *   schedule.c    NetPIPE-style size schedule; the largest of a list of sizes
 *   p2p.c         MPI point-to-point kernels (blocking, non-blocking, stream, bidirectional)
 *   netaddr.c     choosing each rank's own interface address
 *   sockets.c     the TCP and UDP layers between the same two processes
 *   colocate.c    ranks sharing a host's CPUs: a pair on one CPU, waiting without polling
 *   output.c      a measured record's members (the run around it: native/mpi/rmx_mpirun.c)
 *   cmd_*.c       one command each: p2p, coll, ring, bisect, matrix, mbw, mlat, rma, nbc
 *   coll_ops.c    the collective operations behind one interface
 */
#ifndef RMAX_NET_H
#define RMAX_NET_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "rmx_json.h"
#include "rmx_mpirun.h"
#include "rmx_stats.h"

#define PROG "rmax-net"
/* The largest message of every command (rmax.bench.netlaunch.MAX_MESSAGE, checked against --describe):
 * MPI counts are int; 1 GiB keeps well clear. */
#define MAX_MESSAGE ((size_t)1 << 30)

/* Every rank of MPI_COMM_WORLD calls this on a fatal error it has detected
 * itself: one line on stderr naming the rank and host, then MPI_Abort (rmx_mpirun.h). */
#define net_fail(...) rmx_mpi_fail(PROG, __VA_ARGS__)
/* After MPI_Init, input only the rank count shows wrong: one line from rank 0, MPI finalized, 2 returned. */
#define net_refuse(me, ...) rmx_mpi_refuse(PROG, me, __VA_ARGS__)

/* This rank's host name (cached). */
const char *net_hostname(void);

/* ---- timing harness (repeat.c) ----------------------------------------- */

/* One batch: perform `iters` operations and return this rank's elapsed
 * seconds, or a negative value when a received payload failed validation. */
typedef double (*net_batch_fn)(void *ctx, long iters);

typedef struct {
    double batch_target;   /* seconds a batch should last (calibrated) */
    long max_iters;        /* cap on operations per batch */
    rmx_repeat_rule rule;  /* warm-up, min/max samples, budget, CI target */
    double deadline;       /* the root's rmx_now() past which calibration stops growing the batch and
                            * no further sample is taken once one is in (0: none); a caller's time budget */
} net_timing;

/* Which per-rank time a sample is. */
enum { NET_ROOT = 0, NET_MIN = 1, NET_AVG = 2, NET_MAX = 3, NET_NSTAT = 4 };

typedef struct {
    long iters;                     /* operations per batch */
    int converged;                  /* 1: CI target met, 0: budget or max samples ended it */
    int failed;                     /* a batch failed validation on some rank */
    rmx_samples s[NET_NSTAT];       /* seconds per operation; valid on the root only */
} net_measure;

/* Collective over comm: calibrate the batch length, warm up, then repeat
 * batches until the rule stops it. `root` (a rank of comm) decides; the
 * statistic `key` (NET_ROOT, NET_AVG, ...) drives the stopping rule. */
void net_measure_run(MPI_Comm comm, int root, int key, const net_timing *t, net_batch_fn fn, void *ctx,
                     net_measure *m);
void net_measure_free(net_measure *m);

/* Defaults from budget (seconds per measurement), the sample cap and the fewest samples (5
 * usually; 2 to 4 where a caller fits many measurements into a short time: then no separate
 * warm-up batch either). */
net_timing net_timing_make(double budget, size_t max_samples, size_t min_samples);

/* A command's bound on all its measurements (--sweep-budget, seconds; 0: none), from its start. */
typedef struct {
    double start, budget;
} net_sweep;
net_sweep net_sweep_start(double budget);
/* On rank 0, which decides: whether the bound is used up (0 on every other rank, and with none). */
int net_sweep_past(const net_sweep *s, int me);
/* The closing members of a "cut" record (its elapsed seconds and the bound), and its end. */
void net_sweep_cut_end(rmx_json *j, const net_sweep *s);

/* ---- payloads (payload.c) ---------------------------------------------- */
void net_fill(unsigned char *buf, size_t n, uint64_t seed);
/* Number of bytes that differ from the pattern of `seed` (0: valid). */
size_t net_check(const unsigned char *buf, size_t n, uint64_t seed);
/* Cheap per-message mark: first and last byte only (HPCC's check level 1). */
void net_mark(unsigned char *buf, size_t n, uint64_t seed);
int net_mark_ok(const unsigned char *buf, size_t n, uint64_t seed);
/* Bytes of memory this host can still give without swapping. */
size_t net_available_memory(void);
/* Dies naming the rank and host when `total` bytes of buffers would not fit
 * in the memory this host has available (so a huge size fails at once instead
 * of swapping or being killed by the OOM killer). */
void net_require_memory(size_t total, const char *what);

/* MPI_Init, then this rank and the rank count. A count outside [min_ranks, max_ranks]
 * (max 0: no limit) ends every rank with one error line from rank 0: returns 0 to go on,
 * 2 (the exit status) after MPI_Finalize otherwise (rmx_mpi_start). */
#define net_start(argc, argv, what, min_ranks, max_ranks, me, n) \
    rmx_mpi_start(argc, argv, PROG, what, min_ranks, max_ranks, me, n)
/* malloc that dies naming the rank and host; n == 0 gives a 1-byte buffer. */
unsigned char *net_alloc(size_t n, const char *what);

/* ---- size schedule (schedule.c) ---------------------------------------- */
/* NetPIPE-style: 2^k and 3*2^(k-1), each also at -3 and +3 bytes (when
 * `perturb`), from min to max inclusive, sorted, unique. Returns the count. */
size_t net_schedule(size_t min, size_t max, int perturb, size_t **out);
/* The largest of n sizes (0 when n is 0): what a command's buffers must hold. */
size_t net_largest(const size_t *sizes, size_t n);

/* ---- sub-communicators ------------------------------------------------- */
/* A communicator of exactly the two given world ranks (every rank of world
 * calls; ranks outside any pair pass a == b == -1 and get MPI_COMM_NULL).
 * In the result, rank 0 is `a`. */
MPI_Comm net_pair_comm(int a, int b);

/* The CPU this rank runs on now (-1 unknown): take it before a pair's
 * measurement, then call net_pair_shared_cpu on both ranks of the pair: 1 on
 * both when they ran on one kernel and each stayed on the same one CPU
 * (colocate.c). */
int net_cpu_now(void);
int net_pair_shared_cpu(MPI_Comm pc, int cpu_before);
/* A barrier; idle: this rank has nothing to do meanwhile, and sleeps between
 * tests of an MPI_Ibarrier instead of polling (colocate.c): NET_IDLE_SHORT naps
 * up to 1 ms (a wait of the others' few measurements), NET_IDLE_LONG up to 20 ms
 * (a rank left out of a whole series: 80 ranks napping 1 ms each on 2 cores
 * took the cores from the 16 measuring, coll at 96 virtual nodes). */
enum { NET_IDLE_NO, NET_IDLE_SHORT, NET_IDLE_LONG };
void net_quiet_barrier(MPI_Comm comm, int idle);

/* ---- turns (turns.c) ----------------------------------------------------- */
/* Measurements that some ranks take while the others sleep: rank 0 calls each
 * turn's members with one message, they measure on a communicator of their
 * own and report `results` doubles to rank 0, whose `done` gets them in the
 * members' order; no collective of the whole world per turn. Every rank calls
 * net_turns_run with the same table; `members` (every rank) lists a turn's
 * world ranks, ascending; `go` (rank 0, may be NULL) says whether a turn
 * starts (0 stops the turns there). Returns the turns run, on every rank. */
typedef struct {
    int turns, results;
    int (*members)(void *ctx, int turn, int *out);
    void (*run)(void *ctx, int turn, MPI_Comm comm, double *result);
    int (*go)(void *ctx, int turn);
    void (*done)(void *ctx, int turn, const int *members, int m, const double *results);
    void *ctx;
} net_turns;
int net_turns_run(const net_turns *t);
/* Waits for the requests, sleeping between tests (50 us doubling up to cap_ns). */
void net_nap_wait(int count, MPI_Request *rq, long cap_ns);

/* A deterministic permutation of 0..n-1 (xorshift, seeded). */
void net_shuffle(int *v, int n, uint64_t *state);

/* ---- switch groups (groups.c) ------------------------------------------ */
/* `spec` lists host names per switch group: "h1,h2;h3,h4". Fills order with
 * the n ranks sorted by the group of their host (then by rank) and group_of
 * with each rank's group. Returns the number of groups the ranks occupy, or
 * -1 when some rank's host is in no group (then nothing can be said). */
int net_group_order(const char *spec, char (*hosts)[64], int n, int *order, int *group_of);

/* ---- one run of a command (rmx_mpirun.h, output.c) --------------------- */
/* What every command does around its measurements, once: every rank's host,
 * rank 0's JSON lines (a header record, the command's records, a closing
 * "done" record) and its table, and the tear-down (native/mpi, shared with rmax-hpcc). */
typedef rmx_mpirun net_run;

/* Collective, after net_start: gathers every rank's host to rank 0. */
#define net_run_init(r, schema, json) rmx_mpirun_init(r, PROG, schema, json)
/* On rank 0 with --json: opens it and begins the header record, left open for the
 * command's members; end it with rmx_json_obj_end. NULL elsewhere. */
#define net_run_header rmx_mpirun_header
/* Begins a record of kind `record` ("point", "link", ...) for the command's members;
 * NULL when this rank writes no JSON. */
#define net_record rmx_mpirun_record
/* Ends a measured record: validated, then the measurement (net_json_measure). */
void net_record_end(net_run *r, int validated, const net_measure *m, int key, double per_op);
/* Begins the closing record ({"schema", "record": "done"}) for the command's counts;
 * NULL when this rank writes no JSON. */
#define net_run_done(r) rmx_mpirun_record(r, "done")
/* Ends the closing record and the JSON, finalizes MPI; returns 0: a completed run exits 0
 * even when a payload was wrong (its records say which points are invalid). */
#define net_run_end rmx_mpirun_end
/* Writes the measurement's samples and summaries as members "samples", "summary",
 * "rank_min", "rank_avg", "rank_max" (per operation seconds divided by `per_op`). */
void net_json_measure(rmx_json *j, const net_measure *m, int key, double per_op);

#endif
