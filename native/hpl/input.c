/* Reading HPL.dat: the 31-line format xhpl reads (only the leading tokens of
 * a line count, the rest is comment), or a JSON object with the same fields.
 * Values the reference silently fixes are clamped the same way; values it
 * refuses are refused here with the line they came from. */
#include "hpl.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAXLINES 64

typedef struct {
    char *line[MAXLINES];
    int nlines;
    char *err;
    size_t errlen;
    const char *path;
} src;

static int fail(src *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(src *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, s->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The tok-th whitespace-separated token of line ln (1-based) into buf. */
static int token(src *s, int ln, int tok, char *buf, size_t len)
{
    if (ln > s->nlines)
        return fail(s, "%s: line %d is missing (the file has %d lines, the format needs 31)", s->path, ln,
                    s->nlines);
    const char *p = s->line[ln - 1];
    for (int t = 0;; t++) {
        while (*p && isspace((unsigned char)*p))
            p++;
        if (!*p)
            return fail(s, "%s: line %d: expected at least %d value%s, found %d", s->path, ln, tok + 1,
                        tok ? "s" : "", t);
        const char *e = p;
        while (*e && !isspace((unsigned char)*e))
            e++;
        if (t == tok) {
            size_t n = (size_t)(e - p);
            if (n >= len)
                n = len - 1;
            memcpy(buf, p, n);
            buf[n] = '\0';
            return 0;
        }
        p = e;
    }
}

static int get_int(src *s, int ln, int tok, const char *what, int *out)
{
    char buf[128];
    if (token(s, ln, tok, buf, sizeof buf))
        return -1;
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (end == buf || *end || errno || v < INT_MIN || v > INT_MAX)
        return fail(s, "%s: line %d: %s must be an integer, got '%s'", s->path, ln, what, buf);
    *out = (int)v;
    return 0;
}

static int get_double(src *s, int ln, int tok, const char *what, double *out)
{
    char buf[128];
    if (token(s, ln, tok, buf, sizeof buf))
        return -1;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (end == buf || *end || errno)
        return fail(s, "%s: line %d: %s must be a number, got '%s'", s->path, ln, what, buf);
    *out = v;
    return 0;
}

/* A count line followed by a list line. */
static int get_list(src *s, int ln, const char *what, int *count, int *vals)
{
    if (get_int(s, ln, 0, what, count))
        return -1;
    if (*count < 1 || *count > HPL_MAXLIST)
        return fail(s, "%s: line %d: the number of %s must be between 1 and %d, got %d", s->path, ln, what,
                    HPL_MAXLIST, *count);
    for (int i = 0; i < *count; i++)
        if (get_int(s, ln + 1, i, what, &vals[i]))
            return -1;
    return 0;
}

/* Rules shared by both formats; ln_* give line numbers for messages (0 in JSON). */
static int validate(src *s, hpl_input *in)
{
    for (int i = 0; i < in->nn; i++)
        if (in->n[i] < 0)
            return fail(s, "%s: illegal N = %d: problem sizes must be >= 0", s->path, in->n[i]);
    for (int i = 0; i < in->nnb; i++)
        if (in->nb[i] < 1)
            return fail(s, "%s: illegal NB = %d: block sizes must be >= 1", s->path, in->nb[i]);
    if (in->pmap != 0 && in->pmap != 1)
        return fail(s, "%s: illegal PMAP = %d: use 0 (row-major) or 1 (column-major)", s->path, in->pmap);
    for (int i = 0; i < in->ngrid; i++)
        if (in->p[i] < 1 || in->q[i] < 1)
            return fail(s, "%s: illegal grid %d x %d: P and Q must be >= 1", s->path, in->p[i], in->q[i]);
    for (int i = 0; i < in->npfact; i++)
        if (in->pfact[i] < 0 || in->pfact[i] > 2)
            return fail(s, "%s: illegal PFACT = %d: use 0 (left), 1 (Crout) or 2 (right)", s->path, in->pfact[i]);
    for (int i = 0; i < in->nrfact; i++)
        if (in->rfact[i] < 0 || in->rfact[i] > 2)
            return fail(s, "%s: illegal RFACT = %d: use 0 (left), 1 (Crout) or 2 (right)", s->path, in->rfact[i]);
    for (int i = 0; i < in->nnbmin; i++)
        if (in->nbmin[i] < 1)
            return fail(s, "%s: illegal NBMIN = %d: must be >= 1", s->path, in->nbmin[i]);
    for (int i = 0; i < in->nndiv; i++)
        if (in->ndiv[i] < 2)
            return fail(s, "%s: illegal NDIV = %d: must be >= 2", s->path, in->ndiv[i]);
    for (int i = 0; i < in->nbcast; i++)
        if (in->bcast[i] < 0 || in->bcast[i] >= HPL_BC_COUNT)
            return fail(s, "%s: illegal BCAST = %d: use 0 to 5", s->path, in->bcast[i]);
    for (int i = 0; i < in->ndepth; i++)
        if (in->depth[i] < 0)
            return fail(s, "%s: illegal DEPTH = %d: must be >= 0", s->path, in->depth[i]);
    if (in->swapthr < 0)
        return fail(s, "%s: illegal swapping threshold %d: must be >= 0", s->path, in->swapthr);
    /* The reference's silent fixes. */
    if (in->swap < 0 || in->swap > 2)
        in->swap = HPL_SWAP_LONG;
    if (in->l1notran != 0 && in->l1notran != 1)
        in->l1notran = 0;
    if (in->unotran != 0 && in->unotran != 1)
        in->unotran = 0;
    if (in->equil != 0 && in->equil != 1)
        in->equil = 1;
    if (in->align <= 0)
        in->align = 4;
    return 0;
}

static int parse_dat(src *s, hpl_input *in)
{
    char buf[256];
    if (token(s, 3, 0, buf, sizeof buf))
        return -1;
    snprintf(in->outfile, sizeof in->outfile, "%s", buf);
    if (get_int(s, 4, 0, "device out", &in->device))
        return -1;
    if (get_list(s, 5, "problem sizes (N)", &in->nn, in->n) || get_list(s, 7, "block sizes (NB)", &in->nnb, in->nb))
        return -1;
    if (get_int(s, 9, 0, "PMAP", &in->pmap))
        return -1;
    if (get_int(s, 10, 0, "process grids", &in->ngrid))
        return -1;
    if (in->ngrid < 1 || in->ngrid > HPL_MAXLIST)
        return fail(s, "%s: line 10: the number of process grids must be between 1 and %d, got %d", s->path,
                    HPL_MAXLIST, in->ngrid);
    for (int i = 0; i < in->ngrid; i++)
        if (get_int(s, 11, i, "P", &in->p[i]) || get_int(s, 12, i, "Q", &in->q[i]))
            return -1;
    if (get_double(s, 13, 0, "threshold", &in->thresh))
        return -1;
    if (get_list(s, 14, "panel factorisations (PFACT)", &in->npfact, in->pfact) ||
        get_list(s, 16, "recursion stopping sizes (NBMIN)", &in->nnbmin, in->nbmin) ||
        get_list(s, 18, "panels in recursion (NDIV)", &in->nndiv, in->ndiv) ||
        get_list(s, 20, "recursive factorisations (RFACT)", &in->nrfact, in->rfact) ||
        get_list(s, 22, "broadcasts (BCAST)", &in->nbcast, in->bcast) ||
        get_list(s, 24, "look-ahead depths (DEPTH)", &in->ndepth, in->depth))
        return -1;
    if (get_int(s, 26, 0, "SWAP", &in->swap) || get_int(s, 27, 0, "swapping threshold", &in->swapthr) ||
        get_int(s, 28, 0, "L1 form", &in->l1notran) || get_int(s, 29, 0, "U form", &in->unotran) ||
        get_int(s, 30, 0, "equilibration", &in->equil) || get_int(s, 31, 0, "memory alignment", &in->align))
        return -1;
    return 0;
}

/* ---- the JSON form: {"N": [..], "NB": [..], "P": [..], ...}; scalars allowed for lists ---- */

static const char *skip_ws(const char *p)
{
    while (*p && isspace((unsigned char)*p))
        p++;
    return p;
}

typedef struct {
    const char *key;
    int is_list, is_double, is_string;
    int *count;
    int *ival;
    double *dval;
    char *sval;
    int seen;
} jfield;

static int json_number(src *s, const char **pp, const char *key, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(*pp, &end);
    if (end == *pp || errno)
        return fail(s, "%s: \"%s\" must hold numbers", s->path, key);
    *out = v;
    *pp = end;
    return 0;
}

static int json_int(src *s, double v, const char *key, int *out)
{
    if (v != (double)(long long)v || v < INT_MIN || v > INT_MAX)
        return fail(s, "%s: \"%s\" must hold integers, got %g", s->path, key, v);
    *out = (int)v;
    return 0;
}

static int parse_json(src *s, const char *text, hpl_input *in)
{
    jfield f[] = {
        {"output_file", 0, 0, 1, NULL, NULL, NULL, in->outfile, 0},
        {"device_out", 0, 0, 0, NULL, &in->device, NULL, NULL, 0},
        {"N", 1, 0, 0, &in->nn, in->n, NULL, NULL, 0},
        {"NB", 1, 0, 0, &in->nnb, in->nb, NULL, NULL, 0},
        {"PMAP", 0, 0, 0, NULL, &in->pmap, NULL, NULL, 0},
        {"P", 1, 0, 0, &in->ngrid, in->p, NULL, NULL, 0},
        {"Q", 1, 0, 0, NULL, in->q, NULL, NULL, 0},
        {"threshold", 0, 1, 0, NULL, NULL, &in->thresh, NULL, 0},
        {"PFACT", 1, 0, 0, &in->npfact, in->pfact, NULL, NULL, 0},
        {"NBMIN", 1, 0, 0, &in->nnbmin, in->nbmin, NULL, NULL, 0},
        {"NDIV", 1, 0, 0, &in->nndiv, in->ndiv, NULL, NULL, 0},
        {"RFACT", 1, 0, 0, &in->nrfact, in->rfact, NULL, NULL, 0},
        {"BCAST", 1, 0, 0, &in->nbcast, in->bcast, NULL, NULL, 0},
        {"DEPTH", 1, 0, 0, &in->ndepth, in->depth, NULL, NULL, 0},
        {"SWAP", 0, 0, 0, NULL, &in->swap, NULL, NULL, 0},
        {"swap_threshold", 0, 0, 0, NULL, &in->swapthr, NULL, NULL, 0},
        {"L1", 0, 0, 0, NULL, &in->l1notran, NULL, NULL, 0},
        {"U", 0, 0, 0, NULL, &in->unotran, NULL, NULL, 0},
        {"equilibration", 0, 0, 0, NULL, &in->equil, NULL, NULL, 0},
        {"alignment", 0, 0, 0, NULL, &in->align, NULL, NULL, 0},
    };
    const size_t nf = sizeof f / sizeof f[0];
    int nq = 0;
    /* Defaults for the optional scalars: those of the usual HPL.dat. */
    snprintf(in->outfile, sizeof in->outfile, "HPL.out");
    in->device = 6;
    in->pmap = 0;
    in->thresh = 16.0;
    in->swap = 2;
    in->swapthr = 64;
    in->l1notran = 0;
    in->unotran = 0;
    in->equil = 1;
    in->align = 8;

    const char *p = skip_ws(text);
    if (*p != '{')
        return fail(s, "%s: a JSON input must be one object", s->path);
    p = skip_ws(p + 1);
    while (*p && *p != '}') {
        if (*p != '"')
            return fail(s, "%s: malformed JSON near '%.20s'", s->path, p);
        const char *k = ++p;
        while (*p && *p != '"')
            p++;
        if (!*p)
            return fail(s, "%s: unterminated JSON string", s->path);
        size_t klen = (size_t)(p - k);
        p = skip_ws(p + 1);
        if (*p != ':')
            return fail(s, "%s: malformed JSON near '%.20s'", s->path, k);
        p = skip_ws(p + 1);
        jfield *fd = NULL;
        for (size_t i = 0; i < nf; i++)
            if (strlen(f[i].key) == klen && strncmp(f[i].key, k, klen) == 0)
                fd = &f[i];
        if (!fd)
            return fail(s, "%s: unknown field \"%.*s\"", s->path, (int)klen, k);
        fd->seen = 1;
        if (fd->is_string) {
            if (*p != '"')
                return fail(s, "%s: \"%s\" must be a string", s->path, fd->key);
            const char *v = ++p;
            while (*p && *p != '"')
                p++;
            if (!*p)
                return fail(s, "%s: unterminated JSON string", s->path);
            snprintf(fd->sval, sizeof in->outfile, "%.*s", (int)(p - v), v);
            p++;
        } else if (fd->is_list) {
            int n = 0;
            double v;
            if (*p == '[') {
                p = skip_ws(p + 1);
                while (*p != ']') {
                    if (n == HPL_MAXLIST)
                        return fail(s, "%s: \"%s\" holds more than %d values", s->path, fd->key, HPL_MAXLIST);
                    if (json_number(s, &p, fd->key, &v) || json_int(s, v, fd->key, &fd->ival[n]))
                        return -1;
                    n++;
                    p = skip_ws(p);
                    if (*p == ',')
                        p = skip_ws(p + 1);
                    else if (*p != ']')
                        return fail(s, "%s: malformed list for \"%s\"", s->path, fd->key);
                }
                p++;
            } else {
                if (json_number(s, &p, fd->key, &v) || json_int(s, v, fd->key, &fd->ival[0]))
                    return -1;
                n = 1;
            }
            if (n == 0)
                return fail(s, "%s: \"%s\" is empty", s->path, fd->key);
            if (fd->count)
                *fd->count = n;
            else
                nq = n;
        } else {
            double v;
            if (json_number(s, &p, fd->key, &v))
                return -1;
            if (fd->is_double)
                *fd->dval = v;
            else if (json_int(s, v, fd->key, fd->ival))
                return -1;
        }
        p = skip_ws(p);
        if (*p == ',')
            p = skip_ws(p + 1);
        else if (*p != '}')
            return fail(s, "%s: malformed JSON near '%.20s'", s->path, p);
    }
    if (*p != '}')
        return fail(s, "%s: unterminated JSON object", s->path);
    /* Lists without a default are required. */
    static const char *const required[] = {"N", "NB", "P", "Q"};
    for (size_t r = 0; r < sizeof required / sizeof required[0]; r++)
        for (size_t i = 0; i < nf; i++)
            if (strcmp(f[i].key, required[r]) == 0 && !f[i].seen)
                return fail(s, "%s: field \"%s\" is required", s->path, required[r]);
    if (nq != in->ngrid)
        return fail(s, "%s: \"P\" and \"Q\" must have the same length", s->path);
    /* Defaults for the lists: the recommended variant WR11C2R4. */
    static const struct { const char *key; int v; } dl[] = {{"PFACT", 2}, {"NBMIN", 4}, {"NDIV", 2},
                                                            {"RFACT", 1}, {"BCAST", 1}, {"DEPTH", 1}};
    for (size_t d = 0; d < sizeof dl / sizeof dl[0]; d++)
        for (size_t i = 0; i < nf; i++)
            if (strcmp(f[i].key, dl[d].key) == 0 && !f[i].seen) {
                *f[i].count = 1;
                f[i].ival[0] = dl[d].v;
            }
    return 0;
}

int hpl_input_read(const char *path, hpl_input *in, char *err, size_t errlen)
{
    src s = {.nlines = 0, .err = err, .errlen = errlen, .path = path};
    memset(in, 0, sizeof *in);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    /* Slurp the file (HPL.dat is tiny; refuse anything absurd). */
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    size_t got;
    while (text && (got = fread(text + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap) {
            if (cap > (1u << 20))
                break;
            char *t = realloc(text, cap *= 2);
            if (!t) {
                free(text);
                text = NULL;
            } else
                text = t;
        }
    }
    fclose(f);
    if (!text) {
        snprintf(err, errlen, "%s: out of memory reading the file", path);
        return -1;
    }
    text[len] = '\0';
    int rc;
    const char *first = skip_ws(text);
    if (*first == '{') {
        rc = parse_json(&s, text, in);
    } else {
        for (char *p = text; *p && s.nlines < MAXLINES;) {
            s.line[s.nlines++] = p;
            char *nl = strchr(p, '\n');
            if (!nl)
                break;
            *nl = '\0';
            p = nl + 1;
        }
        rc = parse_dat(&s, in);
    }
    if (rc == 0)
        rc = validate(&s, in);
    free(text);
    return rc;
}
