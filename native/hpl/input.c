/* Reading HPL.dat (or its JSON twin): the one grammar of rmax's HPL input.
 * rmax's Python side never parses HPL.dat itself; it asks `rmax-hpl --check`,
 * which runs this code, so a file means the same whichever way it arrives.
 *
 * The reference (HPL 2.3, HPL_pdinfo) reads 31 lines with fgets and sscanf and
 * is lenient where this is strict; the rules (also in native/hpl/README.md):
 *  - The file: at most 1 MiB and no NUL byte (anything else is not an HPL.dat).
 *    Lines end at LF only; a CR before it is a blank, so CRLF files read the
 *    same. VT, FF, NEL and U+2028 are text, not line ends.
 *  - Lines 1 and 2 are free text: any bytes (Latin-1, UTF-8, control codes).
 *  - Lines 3 to 31: the leading values count, separated by blanks (space, tab,
 *    CR, VT, FF); the rest of the line is comment, any bytes. Lines after 31
 *    are ignored (hpcc's hpccinf.txt continues there).
 *  - A value is at most 127 bytes (the output file name PATH_MAX - 1): a longer
 *    one is refused, never cut.
 *  - Integers: an optional sign and ASCII digits, within 32 bits. No other
 *    digits, separators, decimal points or exponents.
 *  - The threshold: [sign] digits [. digits] [e|E [sign] digits] that a double
 *    holds exactly enough: finite and not underflowing (no nan, inf, hex, 1e-400).
 *  - Lists: a count of 1 to 20 (HPL's limit), then a line with at least that
 *    many values (values after them are comment, as in the reference).
 *  - Ranges: N >= 0, NB >= 1, PMAP 0|1, P, Q >= 1, PFACT and RFACT 0..2,
 *    NBMIN >= 1, NDIV >= 2, BCAST 0..5, DEPTH >= 0, swapping threshold >= 0;
 *    SWAP, L1, U, equilibration and alignment are clamped as the reference
 *    clamps them. Device out is any integer (6 stdout, 7 stderr, else the file).
 *  - The output file name: printable UTF-8; when device out names the file,
 *    it must be creatable (its folder exists and is writable).
 * The JSON form follows RFC 8259 strictly (numbers, strings with escapes, no
 * duplicate or unknown keys, nothing after the object) with the same ranges.
 * Memory limits are checked by the caller (main.c), with the ranks per node. */
#include "hpl.h"
#include "rmx_json.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILE_BYTES (1 << 20)
#define DAT_LINES 31
#define VALUE_MAX 127
#define SHOWN_MAX 200

typedef struct {
    char *line[DAT_LINES];
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

/* A value as a message shows it: printable ASCII as is, other bytes as \xHH
 * (the message stays one printable line), long values cut with their length. */
static const char *shown(const char *p, size_t n, char *buf)
{
    const size_t keep = n > 40 ? 32 : n;
    size_t o = 0;
    for (size_t i = 0; i < keep; i++) {
        const unsigned char c = (unsigned char)p[i];
        if (c >= 0x20 && c < 0x7f)
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, SHOWN_MAX - o, "\\x%02x", c);
    }
    buf[o] = '\0';
    if (keep < n)
        snprintf(buf + o, SHOWN_MAX - o, "... (%zu bytes)", n);
    return buf;
}

static int blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
static int digit(char c) { return c >= '0' && c <= '9'; }

/* [sign] ASCII digits within 32 bits: 0, -1 not an integer, -2 out of range. */
static int to_int(const char *p, size_t n, int *out)
{
    size_t i = 0;
    const int neg = n > 0 && p[0] == '-';
    if (n > 0 && (p[0] == '-' || p[0] == '+'))
        i++;
    if (i == n)
        return -1;
    long long v = 0;
    int big = 0;
    for (; i < n; i++) {
        if (!digit(p[i]))
            return -1;
        if (!big)
            v = v * 10 + (p[i] - '0');
        big |= v > (long long)INT_MAX + 1;
    }
    if (neg)
        v = -v;
    if (big || v > INT_MAX || v < INT_MIN)
        return -2;
    *out = (int)v;
    return 0;
}

/* A decimal number (syntax checked here, strtod in the C locale converts it):
 * 0, -1 not a number, -2 not finite in a double (overflow or underflow). */
static int to_double(const char *p, size_t n, double *out)
{
    size_t i = 0, d = 0;
    if (i < n && (p[i] == '-' || p[i] == '+'))
        i++;
    while (i < n && digit(p[i]))
        i++, d++;
    if (i < n && p[i] == '.')
        for (i++; i < n && digit(p[i]); i++)
            d++;
    if (d == 0)
        return -1;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '-' || p[i] == '+'))
            i++;
        if (i == n || !digit(p[i]))
            return -1;
        while (i < n && digit(p[i]))
            i++;
    }
    if (i != n || n > VALUE_MAX)
        return -1;
    char buf[VALUE_MAX + 1];
    memcpy(buf, p, n);
    buf[n] = '\0';
    errno = 0;
    const double v = strtod(buf, NULL);
    if (errno == ERANGE || !isfinite(v))
        return -2;
    *out = v;
    return 0;
}

/* The tok-th value (from 0) of line ln (from 1), at most max bytes long. */
static int value(src *s, int ln, int tok, const char *what, size_t max, const char **v, size_t *n)
{
    char b[SHOWN_MAX];
    if (ln > s->nlines)
        return fail(s, "%s: line %d is missing (%s): the file has %d line%s, the format needs 31", s->path, ln,
                    what, s->nlines, s->nlines == 1 ? "" : "s");
    const char *p = s->line[ln - 1];
    for (int t = 0;; t++) {
        while (blank(*p))
            p++;
        if (!*p)
            return fail(s, "%s: line %d: %s: expected at least %d value%s, found %d", s->path, ln, what, tok + 1,
                        tok ? "s" : "", t);
        const char *e = p;
        while (*e && !blank(*e))
            e++;
        if (t == tok) {
            *v = p;
            *n = (size_t)(e - p);
            if (*n > max)
                return fail(s, "%s: line %d: %s: the value '%s' is longer than %zu bytes", s->path, ln, what,
                            shown(p, *n, b), max);
            return 0;
        }
        p = e;
    }
}

static int get_int(src *s, int ln, int tok, const char *what, int *out)
{
    const char *v;
    size_t n;
    char b[SHOWN_MAX];
    if (value(s, ln, tok, what, VALUE_MAX, &v, &n))
        return -1;
    const int rc = to_int(v, n, out);
    if (rc == -1)
        return fail(s, "%s: line %d: %s must be an integer, got '%s'", s->path, ln, what, shown(v, n, b));
    if (rc == -2)
        return fail(s, "%s: line %d: %s = %s is out of range: integers are 32-bit (%d to %d)", s->path, ln, what,
                    shown(v, n, b), INT_MIN, INT_MAX);
    return 0;
}

static int get_double(src *s, int ln, int tok, const char *what, double *out)
{
    const char *v;
    size_t n;
    char b[SHOWN_MAX];
    if (value(s, ln, tok, what, VALUE_MAX, &v, &n))
        return -1;
    const int rc = to_double(v, n, out);
    if (rc == -1)
        return fail(s, "%s: line %d: %s must be a decimal number, got '%s'", s->path, ln, what, shown(v, n, b));
    if (rc == -2)
        return fail(s, "%s: line %d: %s = %s is out of the range of a double (finite, not underflowing)", s->path,
                    ln, what, shown(v, n, b));
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

/* Length of the UTF-8 sequence starting at p (1 to 4), or 0 when it is not valid UTF-8. */
static size_t utf8_len(const unsigned char *p)
{
    if (p[0] < 0x80)
        return 1;
    size_t n = p[0] >= 0xc2 && p[0] <= 0xdf   ? 2
               : p[0] >= 0xe0 && p[0] <= 0xef ? 3
               : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4
                                              : 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    /* No overlong forms, surrogates or code points above U+10FFFF. */
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) || (p[0] == 0xf0 && p[1] < 0x90) ||
        (p[0] == 0xf4 && p[1] >= 0x90))
        return 0;
    return n;
}

/* The output file name: printable UTF-8, and creatable when the output goes there. */
static int check_outfile(src *s, const hpl_input *in)
{
    char b[SHOWN_MAX];
    const char *name = in->outfile;
    const size_t len = strlen(name);
    if (len == 0)
        return fail(s, "%s: the output file name is empty", s->path);
    for (const unsigned char *p = (const unsigned char *)name; *p;) {
        const size_t n = *p < 0x20 || *p == 0x7f ? 0 : utf8_len(p);
        if (n == 0)
            return fail(s, "%s: the output file name '%s' is not printable UTF-8", s->path, shown(name, len, b));
        p += n;
    }
    if (in->device == HPL_DEVICE_STDOUT || in->device == HPL_DEVICE_STDERR)
        return 0; /* the name is not used */
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    if (!*base)
        return fail(s, "%s: the output file name '%s' names a folder, not a file", s->path, shown(name, len, b));
    if (strlen(base) > NAME_MAX)
        return fail(s, "%s: the output file name's last part is longer than %d bytes", s->path, NAME_MAX);
    struct stat st;
    if (stat(name, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return fail(s, "%s: the output file '%s' is a folder", s->path, shown(name, len, b));
        if (access(name, W_OK) != 0)
            return fail(s, "%s: the output file '%s' is not writable: %s", s->path, shown(name, len, b),
                        strerror(errno));
        return 0;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - name) + 1 : 1, slash ? name : ".");
    const int found = stat(dir, &st) == 0;
    if (!found || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK) != 0)
        return fail(s, "%s: the output file '%s' cannot be created: its folder %s", s->path, shown(name, len, b),
                    !found ? "does not exist" : !S_ISDIR(st.st_mode) ? "is not a folder" : "is not writable");
    return 0;
}

/* Rules shared by both formats. */
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
    return check_outfile(s, in);
}

static int parse_dat(src *s, hpl_input *in)
{
    const char *v;
    size_t n;
    if (value(s, 3, 0, "output file name", sizeof in->outfile - 1, &v, &n))
        return -1;
    memcpy(in->outfile, v, n);
    in->outfile[n] = '\0';
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

static const char *json_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* Extent of the JSON number at p (RFC 8259 section 6), 0 when there is none. */
static size_t json_number_len(const char *p, int *is_int)
{
    const char *q = p;
    *is_int = 1;
    if (*q == '-')
        q++;
    if (*q == '0')
        q++;
    else if (*q >= '1' && *q <= '9')
        while (digit(*q))
            q++;
    else
        return 0;
    if (*q == '.') {
        *is_int = 0;
        if (!digit(*++q))
            return 0;
        while (digit(*q))
            q++;
    }
    if (*q == 'e' || *q == 'E') {
        *is_int = 0;
        q++;
        if (*q == '+' || *q == '-')
            q++;
        if (!digit(*q))
            return 0;
        while (digit(*q))
            q++;
    }
    return (size_t)(q - p);
}

static int json_int(src *s, const char **pp, const char *key, int *out)
{
    char b[SHOWN_MAX];
    int is_int;
    const size_t n = json_number_len(*pp, &is_int);
    if (n == 0 || !is_int || n > VALUE_MAX)
        return fail(s, "%s: \"%s\" must hold integers, got '%s'", s->path, key,
                    shown(*pp, n ? n : strcspn(*pp, ",]} \t\r\n"), b));
    if (to_int(*pp, n, out))
        return fail(s, "%s: \"%s\" = %s is out of range: integers are 32-bit (%d to %d)", s->path, key,
                    shown(*pp, n, b), INT_MIN, INT_MAX);
    *pp += n;
    return 0;
}

static int json_double(src *s, const char **pp, const char *key, double *out)
{
    char b[SHOWN_MAX];
    int is_int;
    const size_t n = json_number_len(*pp, &is_int);
    if (n == 0 || n > VALUE_MAX)
        return fail(s, "%s: \"%s\" must be a number, got '%s'", s->path, key,
                    shown(*pp, n ? n : strcspn(*pp, ",]} \t\r\n"), b));
    if (to_double(*pp, n, out))
        return fail(s, "%s: \"%s\" = %s is out of the range of a double (finite, not underflowing)", s->path, key,
                    shown(*pp, n, b));
    *pp += n;
    return 0;
}

static int hex4(const char *p, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        const char c = p[i];
        const int d = digit(c)                 ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
        if (d < 0)
            return -1;
        *v = *v * 16 + (unsigned)d;
    }
    return 0;
}

/* The JSON string at *pp (escapes decoded to UTF-8) into buf[cap]. */
static int json_string(src *s, const char **pp, char *buf, size_t cap, const char *what)
{
    const char *p = *pp;
    size_t o = 0;
    if (*p != '"')
        return fail(s, "%s: %s must be a string", s->path, what);
    for (p++; *p != '"'; p++) {
        char enc[4];
        size_t n = 1;
        const unsigned char c = (unsigned char)*p;
        if (!c)
            return fail(s, "%s: unterminated JSON string", s->path);
        if (c < 0x20)
            return fail(s, "%s: %s: a control character must be escaped in a JSON string", s->path, what);
        enc[0] = (char)c;
        if (c == '\\') {
            const char e = *++p;
            const char *simple = strchr("\"\\/bfnrt", e);
            if (e && simple)
                enc[0] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
            else if (e == 'u') {
                unsigned u, lo;
                if (hex4(p + 1, &u))
                    return fail(s, "%s: %s: malformed \\u escape", s->path, what);
                p += 4;
                if (u >= 0xdc00 && u <= 0xdfff)
                    return fail(s, "%s: %s: a lone surrogate in a \\u escape", s->path, what);
                if (u >= 0xd800 && u <= 0xdbff) {
                    if (p[1] != '\\' || p[2] != 'u' || hex4(p + 3, &lo) || lo < 0xdc00 || lo > 0xdfff)
                        return fail(s, "%s: %s: a lone surrogate in a \\u escape", s->path, what);
                    p += 6;
                    u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                }
                if (u < 0x80)
                    enc[0] = (char)u;
                else if (u < 0x800)
                    n = 2, enc[0] = (char)(0xc0 | u >> 6), enc[1] = (char)(0x80 | (u & 0x3f));
                else if (u < 0x10000)
                    n = 3, enc[0] = (char)(0xe0 | u >> 12), enc[1] = (char)(0x80 | (u >> 6 & 0x3f)),
                    enc[2] = (char)(0x80 | (u & 0x3f));
                else
                    n = 4, enc[0] = (char)(0xf0 | u >> 18), enc[1] = (char)(0x80 | (u >> 12 & 0x3f)),
                    enc[2] = (char)(0x80 | (u >> 6 & 0x3f)), enc[3] = (char)(0x80 | (u & 0x3f));
                if (u == 0)
                    return fail(s, "%s: %s: \\u0000 is not allowed", s->path, what);
            } else
                return fail(s, "%s: %s: unknown escape in a JSON string", s->path, what);
        }
        if (o + n >= cap)
            return fail(s, "%s: %s is longer than %zu bytes", s->path, what, cap - 1);
        memcpy(buf + o, enc, n);
        o += n;
    }
    buf[o] = '\0';
    *pp = p + 1;
    return 0;
}

typedef struct {
    const char *key;
    enum { J_INT, J_DOUBLE, J_STRING, J_LIST } kind;
    int *count; /* J_LIST: where the length goes (NULL for Q, checked against P) */
    int *ival;
    double *dval;
    char *sval;
    int seen;
} jfield;

static int parse_json(src *s, const char *text, hpl_input *in)
{
    int nq = 0;
    jfield f[] = {
        {"output_file", J_STRING, NULL, NULL, NULL, in->outfile, 0},
        {"device_out", J_INT, NULL, &in->device, NULL, NULL, 0},
        {"N", J_LIST, &in->nn, in->n, NULL, NULL, 0},
        {"NB", J_LIST, &in->nnb, in->nb, NULL, NULL, 0},
        {"PMAP", J_INT, NULL, &in->pmap, NULL, NULL, 0},
        {"P", J_LIST, &in->ngrid, in->p, NULL, NULL, 0},
        {"Q", J_LIST, &nq, in->q, NULL, NULL, 0},
        {"threshold", J_DOUBLE, NULL, NULL, &in->thresh, NULL, 0},
        {"PFACT", J_LIST, &in->npfact, in->pfact, NULL, NULL, 0},
        {"NBMIN", J_LIST, &in->nnbmin, in->nbmin, NULL, NULL, 0},
        {"NDIV", J_LIST, &in->nndiv, in->ndiv, NULL, NULL, 0},
        {"RFACT", J_LIST, &in->nrfact, in->rfact, NULL, NULL, 0},
        {"BCAST", J_LIST, &in->nbcast, in->bcast, NULL, NULL, 0},
        {"DEPTH", J_LIST, &in->ndepth, in->depth, NULL, NULL, 0},
        {"SWAP", J_INT, NULL, &in->swap, NULL, NULL, 0},
        {"swap_threshold", J_INT, NULL, &in->swapthr, NULL, NULL, 0},
        {"L1", J_INT, NULL, &in->l1notran, NULL, NULL, 0},
        {"U", J_INT, NULL, &in->unotran, NULL, NULL, 0},
        {"equilibration", J_INT, NULL, &in->equil, NULL, NULL, 0},
        {"alignment", J_INT, NULL, &in->align, NULL, NULL, 0},
    };
    const size_t nf = sizeof f / sizeof f[0];
    char b[SHOWN_MAX];
    /* Defaults for the optional scalars: those of the usual HPL.dat. */
    snprintf(in->outfile, sizeof in->outfile, "HPL.out");
    in->device = HPL_DEVICE_STDOUT;
    in->pmap = 0;
    in->thresh = 16.0;
    in->swap = 2;
    in->swapthr = 64;
    in->l1notran = 0;
    in->unotran = 0;
    in->equil = 1;
    in->align = 8;

    const char *p = json_ws(text);
    if (*p != '{')
        return fail(s, "%s: a JSON input must be one object", s->path);
    p = json_ws(p + 1);
    if (*p == '}')
        p++;
    else
        for (;;) {
            char key[64];
            if (*p != '"')
                return fail(s, "%s: malformed JSON near '%s'", s->path, shown(p, strnlen(p, 20), b));
            if (json_string(s, &p, key, sizeof key, "a key"))
                return -1;
            p = json_ws(p);
            if (*p != ':')
                return fail(s, "%s: malformed JSON near '%s'", s->path, shown(p, strnlen(p, 20), b));
            p = json_ws(p + 1);
            jfield *fd = NULL;
            for (size_t i = 0; i < nf; i++)
                if (strcmp(f[i].key, key) == 0)
                    fd = &f[i];
            if (!fd)
                return fail(s, "%s: unknown field \"%s\"", s->path, shown(key, strlen(key), b));
            if (fd->seen++)
                return fail(s, "%s: field \"%s\" is given twice", s->path, fd->key);
            if (fd->kind == J_STRING) {
                if (json_string(s, &p, fd->sval, sizeof in->outfile, "\"output_file\""))
                    return -1;
            } else if (fd->kind == J_INT) {
                if (json_int(s, &p, fd->key, fd->ival))
                    return -1;
            } else if (fd->kind == J_DOUBLE) {
                if (json_double(s, &p, fd->key, fd->dval))
                    return -1;
            } else if (*p == '[') {
                int n = 0;
                p = json_ws(p + 1);
                if (*p != ']')
                    for (;;) {
                        if (n == HPL_MAXLIST)
                            return fail(s, "%s: \"%s\" holds more than %d values", s->path, fd->key, HPL_MAXLIST);
                        if (json_int(s, &p, fd->key, &fd->ival[n++]))
                            return -1;
                        p = json_ws(p);
                        if (*p == ']')
                            break;
                        if (*p != ',')
                            return fail(s, "%s: malformed list for \"%s\"", s->path, fd->key);
                        p = json_ws(p + 1);
                    }
                p++;
                if (n == 0)
                    return fail(s, "%s: \"%s\" is empty", s->path, fd->key);
                *fd->count = n;
            } else {
                if (json_int(s, &p, fd->key, &fd->ival[0]))
                    return -1;
                *fd->count = 1;
            }
            p = json_ws(p);
            if (*p == '}') {
                p++;
                break;
            }
            if (*p != ',')
                return fail(s, "%s: malformed JSON near '%s'", s->path, shown(p, strnlen(p, 20), b));
            p = json_ws(p + 1);
        }
    if (*json_ws(p))
        return fail(s, "%s: text after the JSON object: '%s'", s->path, shown(json_ws(p), strnlen(json_ws(p), 20), b));
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

static void json_ints(rmx_json *j, const char *key, const int *v, int n)
{
    rmx_json_arr_begin(j, key);
    for (int i = 0; i < n; i++)
        rmx_json_int(j, NULL, v[i]);
    rmx_json_arr_end(j);
}

void hpl_input_json(FILE *f, const hpl_input *in)
{
    rmx_json j;
    rmx_json_init(&j, f);
    rmx_json_obj_begin(&j, NULL);
    rmx_json_str(&j, "output_file", in->outfile);
    rmx_json_int(&j, "device_out", in->device);
    json_ints(&j, "N", in->n, in->nn);
    json_ints(&j, "NB", in->nb, in->nnb);
    rmx_json_int(&j, "PMAP", in->pmap);
    json_ints(&j, "P", in->p, in->ngrid);
    json_ints(&j, "Q", in->q, in->ngrid);
    rmx_json_num(&j, "threshold", in->thresh);
    json_ints(&j, "PFACT", in->pfact, in->npfact);
    json_ints(&j, "NBMIN", in->nbmin, in->nnbmin);
    json_ints(&j, "NDIV", in->ndiv, in->nndiv);
    json_ints(&j, "RFACT", in->rfact, in->nrfact);
    json_ints(&j, "BCAST", in->bcast, in->nbcast);
    json_ints(&j, "DEPTH", in->depth, in->ndepth);
    rmx_json_int(&j, "SWAP", in->swap);
    rmx_json_int(&j, "swap_threshold", in->swapthr);
    rmx_json_int(&j, "L1", in->l1notran);
    rmx_json_int(&j, "U", in->unotran);
    rmx_json_int(&j, "equilibration", in->equil);
    rmx_json_int(&j, "alignment", in->align);
    rmx_json_obj_end(&j);
}

/* The whole file (or standard input for "-"), at most MAX_FILE_BYTES, NUL-terminated. */
static char *slurp(src *s, const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    if (!f) {
        fail(s, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    char *text = malloc(MAX_FILE_BYTES + 2);
    *len = text ? fread(text, 1, MAX_FILE_BYTES + 1, f) : 0;
    const int bad = ferror(f);
    const int err = errno;
    if (f != stdin)
        fclose(f);
    if (!text)
        fail(s, "%s: out of memory reading the file", s->path);
    else if (bad)
        fail(s, "cannot read %s: %s", s->path, strerror(err));
    else if (*len > MAX_FILE_BYTES)
        fail(s, "%s is larger than %d bytes: not an HPL input", s->path, MAX_FILE_BYTES);
    else {
        text[*len] = '\0';
        return text;
    }
    free(text);
    return NULL;
}

int hpl_input_read(const char *path, hpl_input *in, char *err, size_t errlen)
{
    src s = {.nlines = 0, .err = err, .errlen = errlen, .path = strcmp(path, "-") == 0 ? "standard input" : path};
    memset(in, 0, sizeof *in);
    size_t len;
    char *text = slurp(&s, path, &len);
    if (!text)
        return -1;
    int rc;
    const char *nul = memchr(text, '\0', len);
    const char *first = text;
    while (blank(*first) || *first == '\n')
        first++;
    if (nul) {
        int ln = 1;
        for (const char *p = text; p < nul; p++)
            ln += *p == '\n';
        rc = fail(&s, "%s: line %d holds a NUL byte: not a text file", s.path, ln);
    } else if (*first == '{') {
        rc = parse_json(&s, text, in);
    } else {
        for (char *p = text; *p && s.nlines < DAT_LINES;) {
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
