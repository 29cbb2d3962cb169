/* What rmax-net's measured records hold (rank 0 writes; the run around them: rmx_mpirun.c). */
#include "net.h"

#include <stdlib.h>

void net_record_end(net_run *r, int validated, const net_measure *m, int key, double per_op)
{
    rmx_json_bool(&r->j, "validated", validated);
    net_json_measure(&r->j, m, key, per_op);
    rmx_json_obj_end(&r->j);
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
