/* What every MPI executable of rmax does around its measurements (see rmx_mpirun.h). */
#include "rmx_mpirun.h"

#include "rmx_fail.h"
#include "rmx_step.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void rmx_mpi_fail(const char *prog, int status, const char *fmt, ...)
{
    int up = 0;
    va_list ap;
    va_start(ap, fmt);
    rmx_vfail_line(prog, fmt, ap);
    va_end(ap);
    MPI_Initialized(&up);
    if (up)
        MPI_Abort(MPI_COMM_WORLD, status);
    exit(status);
}

int rmx_mpi_refuse(const char *prog, int me, const char *fmt, ...)
{
    if (me == 0) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fprintf(stderr, "%s: error: %s\n", prog, msg);
    }
    MPI_Finalize();
    return 2;
}

int rmx_mpi_start(int *argc, char ***argv, const char *prog, const char *what, int min_ranks, int max_ranks, int *me,
                  int *n)
{
    rmx_step("init");
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, me);
    MPI_Comm_size(MPI_COMM_WORLD, n);
    if (*n >= min_ranks && (max_ranks == 0 || *n <= max_ranks))
        return 0;
    return rmx_mpi_refuse(prog, *me, "%s needs %s %d ranks, not %d", what,
                          min_ranks == max_ranks ? "exactly" : "at least", min_ranks, *n);
}

void rmx_mpirun_init(rmx_mpirun *r, const char *prog, const char *schema, const char *json)
{
    memset(r, 0, sizeof *r);
    r->prog = prog;
    r->schema = schema;
    r->json = json;
    MPI_Comm_rank(MPI_COMM_WORLD, &r->me);
    MPI_Comm_size(MPI_COMM_WORLD, &r->n);
    r->table = r->me == 0 && !(json && strcmp(json, "-") == 0);
    char mine[64] = {0};
    snprintf(mine, sizeof mine, "%s", rmx_step_host());
    r->hosts = r->me == 0 ? calloc((size_t)r->n, sizeof *r->hosts) : NULL;
    MPI_Gather(mine, 64, MPI_CHAR, r->hosts, 64, MPI_CHAR, 0, MPI_COMM_WORLD);
}

rmx_json *rmx_mpirun_header(rmx_mpirun *r, const char *test)
{
    if (r->me != 0 || !r->json)
        return NULL;
    r->jf = rmx_json_open(r->json);
    if (!r->jf)
        rmx_mpi_fail(r->prog, 2, "cannot write --json file '%s'", r->json);
    rmx_json_init(&r->j, r->jf);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = '\0';
    rmx_json_obj_begin(&r->j, NULL);
    rmx_json_str(&r->j, "schema", r->schema);
    rmx_json_str(&r->j, "record", "header");
    rmx_json_str(&r->j, "test", test);
    rmx_json_int(&r->j, "ranks", r->n);
    rmx_json_arr_begin(&r->j, "hosts");
    for (int i = 0; i < r->n; i++)
        rmx_json_str(&r->j, NULL, r->hosts[i]);
    rmx_json_arr_end(&r->j);
    rmx_json_str(&r->j, "mpi_library", lib);
    return &r->j;
}

rmx_json *rmx_mpirun_record(rmx_mpirun *r, const char *record)
{
    if (!r->jf)
        return NULL;
    rmx_json_obj_begin(&r->j, NULL);
    rmx_json_str(&r->j, "schema", r->schema);
    rmx_json_str(&r->j, "record", record);
    return &r->j;
}

int rmx_mpirun_end(rmx_mpirun *r)
{
    if (r->jf) {
        rmx_json_obj_end(&r->j);
        if (r->jf != stdout)
            fclose(r->jf);
        r->jf = NULL;
    }
    if (r->table)
        fflush(stdout);
    rmx_step("finalize");
    free(r->hosts);
    r->hosts = NULL;
    MPI_Finalize();
    return 0;
}
