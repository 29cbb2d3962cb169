/* Streaming JSON-lines writer: every kernel writes one object per line
 * (JSON Lines), flushed as soon as it is complete so a watchdog or a parser
 * reading the pipe sees progress at once. NaN and infinities become null. */
#ifndef RMX_JSON_H
#define RMX_JSON_H

#include <stddef.h>
#include <stdio.h>

#include "rmx_stats.h"

#define RMX_JSON_MAX_DEPTH 32

typedef struct {
    FILE *f;
    int depth;
    int count[RMX_JSON_MAX_DEPTH]; /* members written so far at each level */
} rmx_json;

/* Opens "-" as stdout, anything else as a file for writing; NULL on failure. */
FILE *rmx_json_open(const char *path);

void rmx_json_init(rmx_json *j, FILE *f);
/* `key` is the member name inside an object, NULL inside an array or at top level. */
void rmx_json_obj_begin(rmx_json *j, const char *key);
void rmx_json_obj_end(rmx_json *j); /* at top level: newline and flush */
void rmx_json_arr_begin(rmx_json *j, const char *key);
void rmx_json_arr_end(rmx_json *j);
void rmx_json_str(rmx_json *j, const char *key, const char *val);
void rmx_json_num(rmx_json *j, const char *key, double val);
void rmx_json_int(rmx_json *j, const char *key, long long val);
void rmx_json_bool(rmx_json *j, const char *key, int val);
void rmx_json_null(rmx_json *j, const char *key);
void rmx_json_nums(rmx_json *j, const char *key, const double *v, size_t n);
/* {"n":..,"min":..,"median":..,"mean":..,"sd":..,"max":..,"ci95":[lo,hi]} */
void rmx_json_summary(rmx_json *j, const char *key, const rmx_summary *s);

#endif
