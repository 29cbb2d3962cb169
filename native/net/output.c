/* What every rmax-net command writes and does around its measurements (rank 0 writes). */
#include "net.h"

#include "rmx_step.h"

#include <stdlib.h>
#include <string.h>

void net_run_init(net_run *r, const char *schema, const char *json)
{
    r->schema = schema;
    r->json = json;
    r->jf = NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &r->me);
    MPI_Comm_size(MPI_COMM_WORLD, &r->n);
    r->table = r->me == 0 && !(json && strcmp(json, "-") == 0);
    char mine[64] = {0};
    strncpy(mine, net_hostname(), sizeof mine - 1);
    r->hosts = r->me == 0 ? calloc((size_t)r->n, sizeof *r->hosts) : NULL;
    MPI_Gather(mine, 64, MPI_CHAR, r->hosts, 64, MPI_CHAR, 0, MPI_COMM_WORLD);
}

rmx_json *net_run_header(net_run *r, const char *test)
{
    if (r->me != 0 || !r->json)
        return NULL;
    r->jf = rmx_json_open(r->json);
    if (!r->jf)
        net_fail(2, "cannot write --json file '%s'", r->json);
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

rmx_json *net_record(net_run *r, const char *record)
{
    if (!r->jf)
        return NULL;
    rmx_json_obj_begin(&r->j, NULL);
    rmx_json_str(&r->j, "schema", r->schema);
    rmx_json_str(&r->j, "record", record);
    return &r->j;
}

void net_record_end(net_run *r, int validated, const net_measure *m, int key, double per_op)
{
    rmx_json_bool(&r->j, "validated", validated);
    net_json_measure(&r->j, m, key, per_op);
    rmx_json_obj_end(&r->j);
}

rmx_json *net_run_done(net_run *r)
{
    return net_record(r, "done");
}

int net_run_end(net_run *r)
{
    if (r->jf) {
        rmx_json_obj_end(&r->j);
        if (r->jf != stdout)
            fclose(r->jf);
        r->jf = NULL;
    }
    rmx_step("finalize");
    free(r->hosts);
    MPI_Finalize();
    return 0;
}

static void scaled(rmx_json *j, const char *key, const rmx_samples *s, double per_op, int raw)
{
    double *v = malloc((s->n ? s->n : 1) * sizeof *v);
    if (!v)
        return;
    for (size_t i = 0; i < s->n; i++)
        v[i] = s->v[i] / per_op;
    if (raw) {
        rmx_json_nums(j, key, v, s->n);
    } else {
        rmx_summary sum;
        rmx_summarize(v, s->n, &sum);
        rmx_json_summary(j, key, &sum);
    }
    free(v);
}

void net_json_measure(rmx_json *j, const net_measure *m, int key, double per_op)
{
    rmx_json_int(j, "iters", m->iters);
    rmx_json_bool(j, "converged", m->converged);
    scaled(j, "samples", &m->s[key], per_op, 1);
    scaled(j, "summary", &m->s[key], per_op, 0);
    if (key != NET_ROOT) {
        scaled(j, "rank_min", &m->s[NET_MIN], per_op, 0);
        scaled(j, "rank_avg", &m->s[NET_AVG], per_op, 0);
        scaled(j, "rank_max", &m->s[NET_MAX], per_op, 0);
    }
}
