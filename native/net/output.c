/* JSON pieces every rmax-net command writes (from rank 0 only). */
#include "net.h"

#include "rmx_args.h"

#include <stdlib.h>
#include <string.h>

FILE *net_json_open(const char *path)
{
    if (!path)
        return NULL;
    FILE *f = rmx_json_open(path);
    if (!f)
        net_fail(2, "cannot write --json file '%s'", path);
    return f;
}

char (*net_gather_hosts(MPI_Comm comm))[64]
{
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    char mine[64] = {0};
    strncpy(mine, net_hostname(), sizeof mine - 1);
    char (*all)[64] = me == 0 ? calloc((size_t)n, sizeof *all) : NULL;
    MPI_Gather(mine, 64, MPI_CHAR, all, 64, MPI_CHAR, 0, comm);
    return all;
}

void net_json_header(rmx_json *j, const char *schema, const char *test, int nranks, char (*hosts)[64])
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = '\0';
    rmx_json_str(j, "schema", schema);
    rmx_json_str(j, "record", "header");
    rmx_json_str(j, "test", test);
    rmx_json_int(j, "ranks", nranks);
    rmx_json_arr_begin(j, "hosts");
    for (int r = 0; r < nranks; r++)
        rmx_json_str(j, NULL, hosts[r]);
    rmx_json_arr_end(j);
    rmx_json_str(j, "mpi_library", lib);
}

FILE *net_json_start(rmx_json *j, const char *path, int me, const char *schema, const char *test, int nranks,
                     char (*hosts)[64])
{
    FILE *jf = me == 0 ? net_json_open(path) : NULL;
    if (jf) {
        rmx_json_init(j, jf);
        rmx_json_obj_begin(j, NULL);
        net_json_header(j, schema, test, nranks, hosts);
    }
    return jf;
}

int net_table(int me, const char *path)
{
    return me == 0 && !(path && strcmp(path, "-") == 0);
}

void net_json_done(rmx_json *j, const char *schema)
{
    rmx_json_obj_begin(j, NULL);
    rmx_json_str(j, "schema", schema);
    rmx_json_str(j, "record", "done");
}

void net_json_finish(rmx_json *j, FILE *jf)
{
    rmx_json_obj_end(j);
    if (jf != stdout)
        fclose(jf);
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
