#include "measure.h"

#include "rmx_timer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void node_parse(node_run *r, int argc, char **argv, const rmx_arg *spec, size_t nspec)
{
    /* --check-args is taken out before the table parse, so that every command has it
     * (argv is the process's own array: dropping an entry in place is allowed) */
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (i >= 2 && strcmp(argv[i], "--check-args") == 0)
            r->check_only = 1;
        else
            argv[n++] = argv[i];
    }
    argv[n] = NULL;
    rmx_args_parse(r->k->prog, r->k->about, n, argv, 2, spec, nspec);
}

void node_open(node_run *r)
{
    if (r->check_only) {
        fflush(stdout);
        exit(0);
    }
    r->jf = NULL;
    r->table = 1;
    if (r->json) {
        r->jf = rmx_json_open(r->json);
        if (!r->jf)
            rmx_die(2, r->k->prog, "cannot write --json file '%s'", r->json);
        rmx_json_init(&r->j, r->jf);
        r->table = strcmp(r->json, "-") != 0;
    }
    if (r->table)
        printf("%s\n", r->k->header);
}

int node_finish(node_run *r)
{
    if (r->table && r->stopped)
        printf("# %s; sweep ended by %s\n", r->k->footer, r->stopped);
    else if (r->table)
        printf("# %s\n", r->k->footer);
    if (r->jf && r->jf != stdout)
        fclose(r->jf);
    r->jf = NULL;
    fflush(stdout);
    if (r->failed)
        fprintf(stderr, "%s: warning: validation failed: %s\n", r->k->prog, r->k->invalid);
    return 0;
}

size_t node_blocks(const node_run *r, double one)
{
    return (size_t)fmax(1.0, r->sample_time / fmax(one, 1e-9)); /* 1 ns: below any clock's resolution */
}

void node_measure(rmx_sample_fn fn, void *ctx, const rmx_repeat_rule *rule, node_meas *m)
{
    rmx_samples_init(&m->smp);
    m->rc = rmx_repeat(fn, ctx, rule, &m->smp);
    rmx_summarize(m->smp.v, m->smp.n, &m->sum);
}

rmx_repeat_rule node_rule(const node_run *r, size_t warmup, size_t min_reps, size_t max_reps, double budget)
{
    rmx_repeat_rule rule = rmx_repeat_default();
    rule.warmup = warmup;
    rule.min_reps = min_reps;
    if (max_reps)
        rule.max_reps = max_reps;
    rule.budget = budget;
    rule.rel_target = r->target;
    return rule;
}

rmx_repeat_rule node_sweep_rule(const node_run *r, long long min_reps, double share)
{
    return node_rule(r, 1, (size_t)min_reps, 50, fmin(10 * (double)min_reps * r->sample_time, share));
}

rmx_json *node_record(node_run *r)
{
    if (!r->jf)
        return NULL;
    rmx_json_obj_begin(&r->j, NULL);
    rmx_json_str(&r->j, "schema", r->k->schema);
    return &r->j;
}

void node_record_end(node_run *r, const char *unit, node_meas *m, int validated)
{
    if (!validated)
        r->failed = 1;
    if (r->jf) {
        rmx_json_str(&r->j, "unit", unit);
        rmx_json_bool(&r->j, "validated", validated);
        rmx_json_bool(&r->j, "target_met", m->rc == 0);
        if (m->rc >= 0) {
            rmx_json_nums(&r->j, "samples", m->smp.v, m->smp.n);
            rmx_json_summary(&r->j, "summary", &m->sum);
        } else {
            rmx_json_nums(&r->j, "samples", NULL, 0);
            rmx_json_null(&r->j, "summary");
        }
        rmx_json_obj_end(&r->j);
    }
    rmx_samples_free(&m->smp);
}

void node_sweep_begin(node_run *r, size_t planned)
{
    r->stopped = "max-size";
    r->planned = planned;
    r->done = r->last_size = 0;
    r->start = r->last_mark = rmx_now();
    r->last_cost = 0;
}

int node_sweep_fits(node_run *r, double estimate)
{
    if (r->done == 0 || rmx_now() - r->start + estimate <= r->budget)
        return 1;
    r->stopped = "budget";
    return 0;
}

double node_sweep_scaled(const node_run *r, size_t bytes)
{
    return r->last_size ? r->last_cost * (double)bytes / (double)r->last_size : 0.0;
}

void node_sweep_done(node_run *r, size_t bytes)
{
    double now = rmx_now();
    r->last_cost = now - r->last_mark;
    r->last_mark = now;
    r->last_size = bytes;
    r->done++;
}

rmx_json *node_sweep_record(node_run *r, const char *schema, const char *noun, size_t max_size)
{
    if (!r->jf)
        return NULL;
    char key[64];
    rmx_json_obj_begin(&r->j, NULL);
    rmx_json_str(&r->j, "schema", schema);
    snprintf(key, sizeof key, "%s_measured", noun);
    rmx_json_int(&r->j, key, (long long)r->done);
    snprintf(key, sizeof key, "%s_planned", noun);
    rmx_json_int(&r->j, key, (long long)r->planned);
    rmx_json_int(&r->j, "max_size", (long long)max_size);
    return &r->j;
}

void node_sweep_record_end(node_run *r)
{
    rmx_json_str(&r->j, "stopped_by", r->stopped);
    rmx_json_num(&r->j, "seconds", rmx_now() - r->start);
    rmx_json_obj_end(&r->j);
}
