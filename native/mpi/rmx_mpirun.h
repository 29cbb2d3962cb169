/* One run of an MPI kernel, as every MPI executable of rmax (rmax-net, rmax-hpcc) does it around
 * its measurements: MPI start-up and the rank-count check, every rank's host gathered, rank 0's
 * JSON lines (a header record, the command's records, a closing "done" record) and its table,
 * failures as one line naming the rank and host, and the tear-down. Kept apart from rmx_common,
 * which stays free of MPI (the node kernels link it without MPI). */
#ifndef RMX_MPIRUN_H
#define RMX_MPIRUN_H

#include <mpi.h>
#include <stdio.h>

#include "rmx_json.h"

typedef struct {
    const char *prog;    /* the executable's name, for error lines */
    const char *schema;  /* every record's, "rmax.<command>/1" */
    int me, n;           /* this rank and the rank count, of MPI_COMM_WORLD */
    char (*hosts)[64];   /* every rank's host name, on rank 0 (NULL elsewhere) */
    const char *json;    /* --json: a file, "-" for stdout, NULL */
    rmx_json j;
    FILE *jf;            /* rank 0's JSON once the header is begun, NULL elsewhere */
    int table;           /* this rank prints the table: rank 0, unless the JSON goes to stdout */
    long invalid;        /* records whose check failed, for commands that count them here (rank 0's) */
} rmx_mpirun;

/* One line on stderr, "PROG: error: rank R on host H: MESSAGE" (rmx_fail_line), then MPI_Abort,
 * or exit before MPI starts. Every rank calls it on a fatal error it has detected itself. */
void rmx_mpi_fail(const char *prog, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4), noreturn));

/* After MPI_Init, for input only the rank count shows wrong: rank 0 writes "PROG: error: MESSAGE",
 * every rank finalizes MPI; returns 2, the exit status (all ranks call). */
int rmx_mpi_refuse(const char *prog, int me, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* MPI_Init (the step "init"), then this rank and the rank count. A count outside [min_ranks,
 * max_ranks] (max 0: no limit) is refused (rmx_mpi_refuse, naming `what`): returns 0 to go on,
 * 2 (the exit status) after MPI_Finalize otherwise. */
int rmx_mpi_start(int *argc, char ***argv, const char *prog, const char *what, int min_ranks, int max_ranks, int *me,
                  int *n);

/* Collective, after rmx_mpi_start: the run's fields set, every rank's host gathered to rank 0. */
void rmx_mpirun_init(rmx_mpirun *r, const char *prog, const char *schema, const char *json);
/* On rank 0 with --json: opens it (dies on a file that cannot be written) and begins the header
 * record (schema, "header", test, ranks, hosts, MPI library), left open for the command's
 * members; end it with rmx_json_obj_end. NULL elsewhere. */
rmx_json *rmx_mpirun_header(rmx_mpirun *r, const char *test);
/* Begins a record of kind `record` ("point", "link", "done", ...) for the command's members;
 * NULL when this rank writes no JSON. */
rmx_json *rmx_mpirun_record(rmx_mpirun *r, const char *record);
/* Ends the open closing record and the JSON, flushes the table, marks the step "finalize", frees
 * the hosts and finalizes MPI. Returns 0: a completed run exits 0 even when a check failed (its
 * records say which; rmax stores the run as invalid, not failed). */
int rmx_mpirun_end(rmx_mpirun *r);

#endif
