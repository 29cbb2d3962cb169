/* rmax-ranks: where did every rank land? Each rank reports its host, pid, the
 * CPUs it may run on and the BLAS/OpenMP thread settings it was given; a
 * reduction checks that the ranks really talk to each other. Used by
 * `rmax launch check` to verify a launcher, a hostfile or a Slurm allocation. */
#include "rmx_lifeline.h"
#include "rmx_args.h"
#include "rmx_json.h"
#include "rmx_step.h"
#include "rmx_timer.h"

#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG "rmax-ranks"
#define FIELD 256

/* Which MPI build this is (native/mpi/builds.cmake defines both). */
#ifndef RMX_MPI_BUILD
#define RMX_MPI_BUILD "default"
#endif
#ifndef RMX_MPI_WRAPPER
#define RMX_MPI_WRAPPER ""
#endif

static const char *const thread_vars[] = {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "BLIS_NUM_THREADS",
                                          "MKL_NUM_THREADS"};
#define NVARS (sizeof thread_vars / sizeof thread_vars[0])

typedef struct {
    char host[FIELD];
    char cpus[FIELD];
    char vars[NVARS][32];
    long long pid;
} rank_info;

static void cpu_list(char *buf, size_t len)
{
    cpu_set_t set;
    buf[0] = '\0';
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    size_t used = 0;
    for (int c = 0; c < CPU_SETSIZE && used + 8 < len; c++)
        if (CPU_ISSET(c, &set))
            used += (size_t)snprintf(buf + used, len - used, used ? ",%d" : "%d", c);
}

/* The build's name, the wrapper it was built with, and the MPI library it loads now (which
 * LD_LIBRARY_PATH may change): one JSON line, with no launcher and before MPI_Init, where the
 * MPI standard allows MPI_Get_library_version and MPI_Get_version. */
static int mpi_build(void)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0, major = 0, minor = 0;
    MPI_Get_library_version(lib, &len);
    MPI_Get_version(&major, &minor);
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = '\0';
    rmx_json j;
    rmx_json_init(&j, stdout);
    rmx_json_obj_begin(&j, NULL);
    rmx_json_str(&j, "schema", "rmax.mpi_build/1");
    rmx_json_str(&j, "build", RMX_MPI_BUILD);
    rmx_json_str(&j, "wrapper", RMX_MPI_WRAPPER);
    rmx_json_str(&j, "library", lib);
    rmx_json_int(&j, "standard_major", major);
    rmx_json_int(&j, "standard_minor", minor);
    rmx_json_obj_end(&j);
    return 0;
}

int main(int argc, char **argv)
{
    rmx_lifeline();
    const char *json = NULL;
    int build = 0;
    const rmx_arg spec[] = {
        {"json", RMX_ARG_STRING, &json, "write one JSON line per rank to FILE ('-' for stdout)", 0, 0, NULL},
        {"mpi-build", RMX_ARG_FLAG, &build, "print this build's MPI as one JSON line, without MPI_Init, and exit",
         0, 0, NULL},
    };
    rmx_args_parse(PROG, "Report where every MPI rank runs and check that they communicate.", argc, argv, 1, spec, 2);
    if (build)
        return mpi_build();

    rmx_step("init");
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    rank_info me;
    memset(&me, 0, sizeof me);
    gethostname(me.host, sizeof me.host - 1);
    cpu_list(me.cpus, sizeof me.cpus);
    me.pid = (long long)getpid();
    for (size_t v = 0; v < NVARS; v++) {
        const char *e = getenv(thread_vars[v]);
        snprintf(me.vars[v], sizeof me.vars[v], "%s", e ? e : "");
    }

    rmx_step("allreduce");
    long long mine = rank, sum = 0;
    double t0 = rmx_now();
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    double t_allreduce = rmx_now() - t0;
    int ok = sum == (long long)size * (size - 1) / 2;

    rmx_step("gather");
    rank_info *all = rank == 0 ? malloc((size_t)size * sizeof *all) : NULL;
    if (rank == 0 && !all)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Gather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        MPI_Get_library_version(lib, &len);
        char *nl = strchr(lib, '\n');
        if (nl)
            *nl = '\0';
        FILE *jf = json ? rmx_json_open(json) : NULL;
        if (json && !jf) {
            fprintf(stderr, "%s: error: cannot write --json file '%s'\n", PROG, json);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        int table = !(json && strcmp(json, "-") == 0);
        if (table)
            printf("# %-5s %-24s %-8s %-12s %s\n", "Rank", "Host", "PID", "CPUs", "BLAS threads");
        rmx_json j;
        if (jf)
            rmx_json_init(&j, jf);
        for (int r = 0; r < size; r++) {
            if (table)
                printf("  %-5d %-24s %-8lld %-12s %s\n", r, all[r].host, all[r].pid, all[r].cpus,
                       all[r].vars[0][0] ? all[r].vars[0] : "(unset)");
            if (jf) {
                rmx_json_obj_begin(&j, NULL);
                rmx_json_str(&j, "schema", "rmax.ranks/1");
                rmx_json_int(&j, "rank", r);
                rmx_json_int(&j, "size", size);
                rmx_json_str(&j, "host", all[r].host);
                rmx_json_int(&j, "pid", all[r].pid);
                rmx_json_str(&j, "cpus", all[r].cpus);
                rmx_json_obj_begin(&j, "env");
                for (size_t v = 0; v < NVARS; v++)
                    if (all[r].vars[v][0])
                        rmx_json_str(&j, thread_vars[v], all[r].vars[v]);
                rmx_json_obj_end(&j);
                rmx_json_str(&j, "mpi_library", lib);
                rmx_json_bool(&j, "allreduce_ok", ok);
                rmx_json_num(&j, "allreduce_seconds", t_allreduce);
                rmx_json_obj_end(&j);
            }
        }
        if (table)
            printf("# %d ranks; allreduce check %s\n", size, ok ? "passed" : "FAILED");
        if (jf && jf != stdout)
            fclose(jf);
        free(all);
    }
    rmx_step("finalize");
    MPI_Finalize();
    return ok ? 0 : 1;
}
