/* The suspects of rmax-net matrix: each class's statistics once (sorting its
 * values: O(n^2 log n)), then each pair against its class's median, and for
 * each suspect a control from one list per class sorted by distance to the
 * median, so that no step scans the matrix per pair or per suspect. */
#include "matrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double sorted_median(const double *x, long k)
{
    return k ? (k % 2 ? x[k / 2] : 0.5 * (x[k / 2 - 1] + x[k / 2])) : NAN;
}

static int usable(double v)
{
    return isfinite(v) && v > 0;
}

void mx_class_stats(const double *lat, const double *bw, int n, const int *group_of, mx_class_stat st[2][2])
{
    double *x = malloc(((size_t)n * (size_t)n + 1) * sizeof *x);
    for (int kind = 0; kind < 2; kind++)
        for (int cls = 0; cls < 2; cls++) {
            mx_class_stat *c = &st[kind][cls];
            c->median = c->spread = NAN;
            c->pairs = 0;
            if (!x)
                continue;
            const double *v = kind ? bw : lat;
            long k = 0;
            for (int i = 0; i < n; i++)
                for (int j = kind ? 0 : i + 1; j < n; j++)
                    if (i != j && mx_pair_class(group_of, i, j) == cls && usable(v[(size_t)i * n + j]))
                        x[k++] = v[(size_t)i * n + j];
            qsort(x, (size_t)k, sizeof *x, cmp_double);
            c->pairs = k;
            c->median = sorted_median(x, k);
            for (long q = 0; q < k; q++)
                x[q] = fabs(x[q] - c->median);
            qsort(x, (size_t)k, sizeof *x, cmp_double);
            c->spread = 1.4826 * sorted_median(x, k);
        }
    free(x);
}

static int by_severity(const void *a, const void *b)
{
    const mx_suspect *x = a, *y = b;
    if (x->severity != y->severity)
        return x->severity < y->severity ? 1 : -1;
    if (x->kind != y->kind)
        return x->kind - y->kind;
    return x->from != y->from ? x->from - y->from : x->to - y->to;
}

int mx_find_suspects(const double *lat, const double *bw, int n, const int *group_of, const mx_class_stat st[2][2],
                     mx_suspect **out)
{
    size_t cap = 64, k = 0;
    mx_suspect *s = malloc(cap * sizeof *s);
    if (!s)
        return -1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            for (int kind = 0; kind < 2 && i != j; kind++) {
                if (!kind && j < i)
                    continue;  /* latency: each pair once */
                const int cls = mx_pair_class(group_of, i, j);
                const double v = (kind ? bw : lat)[(size_t)i * n + j], med = st[kind][cls].median;
                if (isnan(v) || !usable(med))
                    continue;
                double sev = kind ? (v > 0 ? MX_BW_FRACTION * med / v : HUGE_VAL) : v / (MX_LAT_FACTOR * med);
                if (!(sev > 1))
                    continue;
                if (k == cap) {
                    mx_suspect *t = realloc(s, 2 * cap * sizeof *s);
                    if (!t) {
                        free(s);
                        return -1;
                    }
                    s = t;
                    cap *= 2;
                }
                s[k++] = (mx_suspect){i, j, kind, cls, -1, -1, sev};
            }
    qsort(s, k, sizeof *s, by_severity);
    *out = s;
    return (int)k;
}

typedef struct {
    double d;  /* |log(value / class median)| */
    int a, b;
} candidate;

static int by_distance(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->d != y->d)
        return x->d < y->d ? -1 : 1;
    return x->a != y->a ? x->a - y->a : x->b - y->b;
}

int mx_pick_controls(const double *lat, const double *bw, int n, const int *group_of, const mx_class_stat st[2][2],
                     mx_suspect *sus, int nsus, int cap)
{
    const size_t nn = (size_t)n * (size_t)n;
    unsigned char *suspect = calloc(2 * nn + 1, 1);  /* [kind][from * n + to] */
    candidate *list[2][2] = {{NULL, NULL}, {NULL, NULL}};
    long len[2][2] = {{0, 0}, {0, 0}}, start[2][2] = {{0, 0}, {0, 0}};
    unsigned char *used[2][2] = {{NULL, NULL}, {NULL, NULL}};
    int rc = suspect ? 0 : -1;
    for (int s = 0; s < nsus && !rc; s++)
        suspect[(size_t)sus[s].kind * nn + (size_t)sus[s].from * n + sus[s].to] = 1;
    for (int s = 0; s < nsus && s < cap && !rc; s++) {
        mx_suspect *x = &sus[s];
        const int kind = x->kind, cls = x->cls;
        x->ctl_from = x->ctl_to = -1;
        if (!list[kind][cls]) {  /* the class's pairs that are no suspect, nearest the median first */
            const double *v = kind ? bw : lat, med = st[kind][cls].median;
            list[kind][cls] = malloc(((size_t)st[kind][cls].pairs + 1) * sizeof(candidate));
            used[kind][cls] = calloc((size_t)st[kind][cls].pairs + 1, 1);
            if (!list[kind][cls] || !used[kind][cls]) {
                rc = -1;
                break;
            }
            long k = 0;
            for (int a = 0; a < n; a++)
                for (int b = kind ? 0 : a + 1; b < n; b++) {
                    const double w = v[(size_t)a * n + b];
                    if (a != b && mx_pair_class(group_of, a, b) == cls && usable(w) && k < st[kind][cls].pairs &&
                        !suspect[(size_t)kind * nn + (size_t)a * n + b])
                        list[kind][cls][k++] = (candidate){fabs(log(w / med)), a, b};
                }
            qsort(list[kind][cls], (size_t)k, sizeof(candidate), by_distance);
            len[kind][cls] = k;
        }
        candidate *c = list[kind][cls];
        unsigned char *u = used[kind][cls];
        /* at most the used candidates and the 4n pairs sharing a rank with it are skipped */
        for (int reuse = 0; reuse < 2 && x->ctl_from < 0; reuse++)  /* another's control only when none is left */
            for (long q = reuse ? 0 : start[kind][cls]; q < len[kind][cls]; q++) {
                if ((u[q] && !reuse) || c[q].a == x->from || c[q].a == x->to || c[q].b == x->from ||
                    c[q].b == x->to)
                    continue;
                u[q] = 1;
                x->ctl_from = c[q].a;
                x->ctl_to = c[q].b;
                break;
            }
        while (start[kind][cls] < len[kind][cls] && u[start[kind][cls]])
            start[kind][cls]++;
    }
    for (int kind = 0; kind < 2; kind++)
        for (int cls = 0; cls < 2; cls++) {
            free(list[kind][cls]);
            free(used[kind][cls]);
        }
    free(suspect);
    return rc;
}
