#include "rmx_args.h"

#include "rmx_json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void verror_line(const char *prog, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "%s: error: %s\n", prog, msg);
    fflush(stderr);
}

void rmx_error_line(const char *prog, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror_line(prog, fmt, ap);
    va_end(ap);
}

void rmx_die(int status, const char *prog, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror_line(prog, fmt, ap);
    va_end(ap);
    exit(status);
}

/* strtod also reads hexadecimal ("0x10"), "inf" and "nan": a decimal number is digits, a
 * point and an exponent only, as the rmax CLI accepts them. */
static int decimal(const char *s, const char *end)
{
    if (end == s)
        return 0;
    for (const char *c = s; c < end; c++)
        if (!strchr("0123456789.eE+-", *c))
            return 0;
    return 1;
}

int rmx_parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!decimal(s, end) || errno || !isfinite(v) || v < 0)
        return -1;
    double mult = 1.0;
    if (*end) {
        static const struct { const char *suffix; double mult; } units[] = {
            {"K", 1024.0}, {"KiB", 1024.0}, {"KB", 1e3},
            {"M", 1048576.0}, {"MiB", 1048576.0}, {"MB", 1e6},
            {"G", 1073741824.0}, {"GiB", 1073741824.0}, {"GB", 1e9},
            {"B", 1.0}};
        size_t i;
        for (i = 0; i < sizeof units / sizeof units[0]; i++)
            if (strcasecmp(end, units[i].suffix) == 0)
                break;
        if (i == sizeof units / sizeof units[0])
            return -1;
        mult = units[i].mult;
    }
    v *= mult;
    if (v != floor(v) || v > 1.8e19)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int in_range(const rmx_arg *a, double v)
{
    return a->min > a->max || (v >= a->min && v <= a->max);
}

/* The value an option has before parsing is its default. One the option itself would refuse
 * (out of its range, SIZE_MAX, no text, an empty list) marks a default the command computes
 * at run time, which its help text says in words. */
static int has_default(const rmx_arg *a)
{
    switch (a->type) {
    case RMX_ARG_FLAG: return 1;
    case RMX_ARG_INT: return in_range(a, (double)*(const long long *)a->dest);
    case RMX_ARG_DOUBLE: return in_range(a, *(const double *)a->dest);
    case RMX_ARG_SIZE: {
        size_t v = *(const size_t *)a->dest;
        return v != (size_t)-1 && in_range(a, (double)v);
    }
    case RMX_ARG_STRING:
    case RMX_ARG_CHOICE: return *(const char *const *)a->dest != NULL;
    case RMX_ARG_SIZE_LIST: return ((const rmx_size_list *)a->dest)->n > 0;
    }
    return 0;
}

static const char *const type_names[] = {"flag", "int", "double", "size", "string", "size_list", "choice"};

static void describe_default(rmx_json *j, const rmx_arg *a)
{
    if (!has_default(a)) {
        rmx_json_null(j, "default");
        return;
    }
    switch (a->type) {
    case RMX_ARG_FLAG: rmx_json_bool(j, "default", *(const int *)a->dest); break;
    case RMX_ARG_INT: rmx_json_int(j, "default", *(const long long *)a->dest); break;
    case RMX_ARG_DOUBLE: rmx_json_num(j, "default", *(const double *)a->dest); break;
    case RMX_ARG_SIZE: rmx_json_int(j, "default", (long long)*(const size_t *)a->dest); break;
    case RMX_ARG_STRING:
    case RMX_ARG_CHOICE: rmx_json_str(j, "default", *(const char *const *)a->dest); break;
    case RMX_ARG_SIZE_LIST: {
        const rmx_size_list *l = a->dest;
        rmx_json_arr_begin(j, "default");
        for (size_t i = 0; i < l->n; i++)
            rmx_json_int(j, NULL, (long long)l->v[i]);
        rmx_json_arr_end(j);
        break;
    }
    }
}

/* "--describe": the table as one JSON object, so that rmax checks its own copy of these
 * options (defaults, ranges, types) against the kernel's instead of trusting it. */
static void describe(const char *prog, const char *summary, const rmx_arg *spec, size_t nspec)
{
    rmx_json j;
    rmx_json_init(&j, stdout);
    rmx_json_obj_begin(&j, NULL);
    rmx_json_str(&j, "program", prog);
    rmx_json_str(&j, "summary", summary);
    rmx_json_arr_begin(&j, "options");
    for (size_t i = 0; i < nspec; i++) {
        const rmx_arg *a = &spec[i];
        rmx_json_obj_begin(&j, NULL);
        rmx_json_str(&j, "name", a->name);
        rmx_json_str(&j, "type", type_names[a->type]);
        rmx_json_str(&j, "help", a->help);
        int numeric = a->type == RMX_ARG_INT || a->type == RMX_ARG_DOUBLE || a->type == RMX_ARG_SIZE ||
                      a->type == RMX_ARG_SIZE_LIST;
        if (numeric && a->min <= a->max) {
            rmx_json_num(&j, "min", a->min);
            rmx_json_num(&j, "max", a->max);
        } else {
            rmx_json_null(&j, "min");
            rmx_json_null(&j, "max");
        }
        if (a->type == RMX_ARG_SIZE || a->type == RMX_ARG_SIZE_LIST)
            rmx_json_str(&j, "unit", "bytes");
        else
            rmx_json_null(&j, "unit");
        describe_default(&j, a);
        if (a->type == RMX_ARG_CHOICE) {
            rmx_json_arr_begin(&j, "choices");
            for (const char *c = a->choices; c && *c;) {
                const char *bar = strchr(c, '|');
                size_t wl = bar ? (size_t)(bar - c) : strlen(c);
                char word[64];
                snprintf(word, sizeof word, "%.*s", (int)wl, c);
                rmx_json_str(&j, NULL, word);
                c = bar ? bar + 1 : NULL;
            }
            rmx_json_arr_end(&j);
        }
        rmx_json_obj_end(&j);
    }
    rmx_json_arr_end(&j);
    rmx_json_obj_end(&j);
}

static void print_default(const rmx_arg *a)
{
    switch (a->type) {
    case RMX_ARG_FLAG: break;
    case RMX_ARG_INT: printf(" (default %lld)", *(const long long *)a->dest); break;
    case RMX_ARG_DOUBLE: printf(" (default %g)", *(const double *)a->dest); break;
    case RMX_ARG_SIZE: printf(" (default %zu)", *(const size_t *)a->dest); break;
    case RMX_ARG_STRING:
    case RMX_ARG_CHOICE: printf(" (default %s)", *(const char *const *)a->dest); break;
    case RMX_ARG_SIZE_LIST: {
        const rmx_size_list *l = a->dest;
        for (size_t i = 0; i < l->n; i++)
            printf("%s%zu", i ? "," : " (default ", l->v[i]);
        putchar(')');
        break;
    }
    }
}

static void usage(const char *prog, const char *summary, const rmx_arg *spec, size_t nspec)
{
    printf("usage: %s [options]\n%s\n\noptions:\n", prog, summary);
    for (size_t i = 0; i < nspec; i++) {
        const char *meta = "";
        switch (spec[i].type) {
        case RMX_ARG_FLAG: meta = ""; break;
        case RMX_ARG_INT: meta = " N"; break;
        case RMX_ARG_DOUBLE: meta = " X"; break;
        case RMX_ARG_SIZE: meta = " SIZE"; break;
        case RMX_ARG_STRING: meta = " TEXT"; break;
        case RMX_ARG_SIZE_LIST: meta = " SIZE,SIZE,..."; break;
        case RMX_ARG_CHOICE: meta = " WORD"; break;
        }
        printf("  --%s%s\n      %s", spec[i].name, meta, spec[i].help);
        if (spec[i].type == RMX_ARG_CHOICE)
            printf(" (%s)", spec[i].choices);
        /* the default comes from the table; a help text that gives it in words keeps its own */
        if (spec[i].type != RMX_ARG_FLAG && has_default(&spec[i]) && !strstr(spec[i].help, "default"))
            print_default(&spec[i]);
        putchar('\n');
    }
    printf("  --describe\n      print these options as one JSON object\n");
    printf("  --help\n      show this text\n");
}

static void range_error(const char *prog, const rmx_arg *a, const char *val, double v)
{
    /* whole numbers in full (a byte limit of 2^50 is 1125899906842624, not 1.12589990684262e+15) */
    if (a->type == RMX_ARG_DOUBLE)
        rmx_die(2, prog, "--%s: %s is out of range [%.15g, %.15g]", a->name, val, a->min, a->max);
    rmx_die(2, prog, "--%s: %s is out of range [%.0f, %.0f]%s", a->name, val, a->min, a->max,
            a->min == 1 && v < 1 ? ": it must be greater than zero" : "");
}

static void set_value(const char *prog, const rmx_arg *a, const char *val)
{
    char *end;
    switch (a->type) {
    case RMX_ARG_FLAG:
        *(int *)a->dest = 1;
        return;
    case RMX_ARG_INT: {
        errno = 0;
        long long v = strtoll(val, &end, 10);
        if (end == val || *end || errno)
            rmx_die(2, prog, "--%s: '%s' is not a whole number", a->name, val);
        if (!in_range(a, (double)v))
            range_error(prog, a, val, (double)v);
        *(long long *)a->dest = v;
        return;
    }
    case RMX_ARG_DOUBLE: {
        errno = 0;
        double v = strtod(val, &end);
        if (!decimal(val, end) || *end || errno || !isfinite(v))
            rmx_die(2, prog, "--%s: '%s' is not a number", a->name, val);
        if (!in_range(a, v))
            range_error(prog, a, val, v);
        *(double *)a->dest = v;
        return;
    }
    case RMX_ARG_SIZE: {
        size_t v;
        if (rmx_parse_size(val, &v))
            rmx_die(2, prog, "--%s: '%s' is not a size (examples: 4096, 64K, 8MiB, 1GB)", a->name, val);
        if (!in_range(a, (double)v))
            range_error(prog, a, val, (double)v);
        *(size_t *)a->dest = v;
        return;
    }
    case RMX_ARG_STRING:
        *(const char **)a->dest = val;
        return;
    case RMX_ARG_CHOICE: {
        size_t len = strlen(val);
        for (const char *c = a->choices; c && *c;) {
            const char *bar = strchr(c, '|');
            size_t wl = bar ? (size_t)(bar - c) : strlen(c);
            if (wl == len && strncmp(c, val, len) == 0) {
                *(const char **)a->dest = val;
                return;
            }
            c = bar ? bar + 1 : NULL;
        }
        rmx_die(2, prog, "--%s: '%s' is not one of %s", a->name, val, a->choices);
    }
    case RMX_ARG_SIZE_LIST: {
        rmx_size_list *list = a->dest;
        size_t cap = 1;
        for (const char *p = val; *p; p++)
            cap += *p == ',';
        list->v = malloc(cap * sizeof *list->v);
        if (!list->v)
            rmx_die(1, prog, "out of memory");
        list->n = 0;
        char *copy = strdup(val);
        if (!copy)
            rmx_die(1, prog, "out of memory");
        /* items split at every comma: an empty one ("1,,2", "1,") is a mistake, not skipped */
        for (char *tok = copy, *next; tok; tok = next) {
            next = strchr(tok, ',');
            if (next)
                *next++ = '\0';
            if (!*tok)
                rmx_die(2, prog, "--%s: '%s' has an empty item", a->name, val);
            size_t v;
            if (rmx_parse_size(tok, &v))
                rmx_die(2, prog, "--%s: '%s' is not a size (examples: 4096, 64K, 8MiB)", a->name, tok);
            if (!in_range(a, (double)v))
                range_error(prog, a, tok, (double)v);
            list->v[list->n++] = v;
        }
        free(copy);
        if (list->n == 0)
            rmx_die(2, prog, "--%s: empty list", a->name);
        return;
    }
    }
}

void rmx_args_parse(const char *prog, const char *summary, int argc, char **argv, int first,
                    const rmx_arg *spec, size_t nspec)
{
    /* before any value is parsed: the defaults described are the table's, not this argv's */
    for (int i = first; i < argc; i++)
        if (strcmp(argv[i], "--describe") == 0) {
            describe(prog, summary, spec, nspec);
            exit(0);
        }
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(prog, summary, spec, nspec);
            exit(0);
        }
        if (strncmp(arg, "--", 2) != 0)
            rmx_die(2, prog, "unexpected argument '%s' (options start with --; see --help)", arg);
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const rmx_arg *a = NULL;
        for (size_t k = 0; k < nspec; k++)
            if (strlen(spec[k].name) == len && strncmp(spec[k].name, name, len) == 0)
                a = &spec[k];
        if (!a)
            rmx_die(2, prog, "unknown option '--%.*s' (see --help)", (int)len, name);
        if (a->type == RMX_ARG_FLAG) {
            if (eq)
                rmx_die(2, prog, "--%s takes no value", a->name);
            set_value(prog, a, NULL);
            continue;
        }
        const char *val = eq ? eq + 1 : NULL;
        if (!val) {
            if (i + 1 >= argc)
                rmx_die(2, prog, "--%s needs a value (see --help)", a->name);
            val = argv[++i];
        }
        set_value(prog, a, val);
    }
}
