#include "rmx_json.h"

#include <math.h>
#include <string.h>

FILE *rmx_json_open(const char *path)
{
    if (strcmp(path, "-") == 0)
        return stdout;
    return fopen(path, "w");
}

void rmx_json_init(rmx_json *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    memset(j->count, 0, sizeof j->count);
}

static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

/* Separator and member name before a value. */
static void lead(rmx_json *j, const char *key)
{
    if (j->depth > 0 && j->count[j->depth]++ > 0)
        fputc(',', j->f);
    if (key) {
        put_string(j->f, key);
        fputc(':', j->f);
    }
}

static void open_level(rmx_json *j, const char *key, char c)
{
    lead(j, key);
    fputc(c, j->f);
    if (j->depth + 1 < RMX_JSON_MAX_DEPTH)
        j->depth++;
    j->count[j->depth] = 0;
}

static void close_level(rmx_json *j, char c)
{
    fputc(c, j->f);
    if (j->depth > 0)
        j->depth--;
    if (j->depth == 0) {
        fputc('\n', j->f);
        fflush(j->f);
    }
}

void rmx_json_obj_begin(rmx_json *j, const char *key) { open_level(j, key, '{'); }
void rmx_json_obj_end(rmx_json *j) { close_level(j, '}'); }
void rmx_json_arr_begin(rmx_json *j, const char *key) { open_level(j, key, '['); }
void rmx_json_arr_end(rmx_json *j) { close_level(j, ']'); }

void rmx_json_str(rmx_json *j, const char *key, const char *val)
{
    lead(j, key);
    if (val)
        put_string(j->f, val);
    else
        fputs("null", j->f);
}

void rmx_json_num(rmx_json *j, const char *key, double val)
{
    lead(j, key);
    if (isfinite(val))
        fprintf(j->f, "%.17g", val);
    else
        fputs("null", j->f);
}

void rmx_json_int(rmx_json *j, const char *key, long long val)
{
    lead(j, key);
    fprintf(j->f, "%lld", val);
}

void rmx_json_bool(rmx_json *j, const char *key, int val)
{
    lead(j, key);
    fputs(val ? "true" : "false", j->f);
}

void rmx_json_null(rmx_json *j, const char *key)
{
    lead(j, key);
    fputs("null", j->f);
}

void rmx_json_nums(rmx_json *j, const char *key, const double *v, size_t n)
{
    rmx_json_arr_begin(j, key);
    for (size_t i = 0; i < n; i++)
        rmx_json_num(j, NULL, v[i]);
    rmx_json_arr_end(j);
}

void rmx_json_summary(rmx_json *j, const char *key, const rmx_summary *s)
{
    rmx_json_obj_begin(j, key);
    rmx_json_int(j, "n", (long long)s->n);
    rmx_json_num(j, "min", s->min);
    rmx_json_num(j, "median", s->median);
    rmx_json_num(j, "mean", s->mean);
    rmx_json_num(j, "sd", s->sd);
    rmx_json_num(j, "max", s->max);
    rmx_json_arr_begin(j, "ci95");
    rmx_json_num(j, NULL, s->ci_lo);
    rmx_json_num(j, NULL, s->ci_hi);
    rmx_json_arr_end(j);
    rmx_json_obj_end(j);
}
