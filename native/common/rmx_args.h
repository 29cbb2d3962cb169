/* Strict command-line parsing shared by the kernels: every option is declared
 * in a table with its type and range; anything unknown, malformed or out of
 * range ends the program with one clear line on stderr and exit status 2. */
#ifndef RMX_ARGS_H
#define RMX_ARGS_H

#include <stddef.h>

typedef enum {
    RMX_ARG_FLAG,      /* int: set to 1 when present, takes no value */
    RMX_ARG_INT,       /* long long within [min, max] */
    RMX_ARG_DOUBLE,    /* double within [min, max] */
    RMX_ARG_SIZE,      /* size_t bytes within [min, max]; suffixes K M G (x1024) and KiB MiB GiB, KB MB GB (x1000) */
    RMX_ARG_STRING,    /* const char * (points into argv) */
    RMX_ARG_SIZE_LIST, /* rmx_size_list: comma-separated sizes, each within [min, max] */
    RMX_ARG_CHOICE     /* const char *, one of the '|'-separated words in `choices` */
} rmx_arg_type;

typedef struct {
    size_t *v;
    size_t n;
} rmx_size_list;

typedef struct {
    const char *name;  /* without the leading "--" */
    rmx_arg_type type;
    void *dest;
    const char *help;
    double min, max;   /* numeric range (ignored when min > max) */
    const char *choices;
} rmx_arg;

/* Parses argv[first..argc-1] against spec. "--help" prints usage and exits 0; "--describe" prints
 * the table as one JSON object (name, type, help, min, max, unit, default, choices) and exits 0.
 * The value a dest holds before parsing is the option's default: put it there, not in the help.
 * Accepts "--name value" and "--name=value". Positional arguments are refused. */
void rmx_args_parse(const char *prog, const char *summary, int argc, char **argv, int first,
                    const rmx_arg *spec, size_t nspec);

/* Parses one size string such as "64K", "8MiB", "1e6". Returns 0 on success. */
int rmx_parse_size(const char *s, size_t *out);

/* Prints "prog: error: <message>" (one line, one write). */
void rmx_error_line(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints "prog: error: <message>" and exits with `status` (2 usage, 1 run failure). */
void rmx_die(int status, const char *prog, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

#endif
