/* Which pairs of ranks meet in each round of rmax-net matrix: every pair
 * (a round-robin tournament), or a sample of O(log n) shifts for large n, and
 * the rounds of the retests. In every round a rank meets at most one other, so
 * that the round's pairs run at once under the same load. */
#include "matrix.h"

#include <stdlib.h>
#include <string.h>

/* Every pair of the `size` ranks pos[0..size) in rounds 0.. of s (a round-robin tournament by the
 * circle method; a ghost player makes the count even, and its partner sits out that round). */
static void tournament(mx_schedule *s, const int *pos, int size)
{
    const int m = size % 2 ? size + 1 : size;
    for (int r = 0; r < m - 1; r++)
        for (int k = 0; k < m / 2; k++) {
            const int a = k == 0 ? m - 1 : (r + k) % (m - 1), b = k == 0 ? r : (r - k + m - 1) % (m - 1);
            if (a < size && b < size) {
                s->partner[(size_t)r * s->n + pos[a]] = pos[b];
                s->partner[(size_t)r * s->n + pos[b]] = pos[a];
            }
        }
}

static int alloc_rounds(mx_schedule *s, int n, int rounds)
{
    s->n = n;
    s->rounds = 0;
    s->partner = malloc(((size_t)rounds * (size_t)n + 1) * sizeof *s->partner);
    if (!s->partner)
        return -1;
    for (size_t i = 0; i < (size_t)rounds * (size_t)n; i++)
        s->partner[i] = -1;
    return 0;
}

int mx_schedule_full(int n, mx_schedule *s)
{
    const int m = n % 2 ? n + 1 : n;
    int *pos = malloc((size_t)n * sizeof *pos);
    if (!pos || alloc_rounds(s, n, m - 1) < 0) {
        free(pos);
        return -1;
    }
    for (int r = 0; r < n; r++)
        pos[r] = r;
    tournament(s, pos, n);
    s->rounds = m - 1;
    free(pos);
    return 0;
}

static int gcd(int a, int b)
{
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The shifts: 1 to 4 (neighbours: same switch where hosts are numbered along
 * the switches), then growing by half up to n / 2 (farther and farther); at
 * most `most` of them (0: all), spread evenly with the first and the last kept,
 * so that near and far pairs are still both sampled. */
static int shifts(int n, int most, int *k)
{
    int c = 0, half = n / 2;
    for (int v = 1; v <= half; v = v < 4 ? v + 1 : v + (v + 1) / 2)
        k[c++] = v;
    if (half >= 1 && k[c - 1] != half)
        k[c++] = half;
    if (most > 0 && c > most) {
        const int keep = most < 2 ? 2 : most;
        for (int i = 0; i < keep; i++)
            k[i] = k[(int)((double)i * (c - 1) / (keep - 1) + 0.5)];
        c = keep;
    }
    return c;
}

int mx_schedule_sampled(int n, const int *group_of, int most_shifts, mx_schedule *s)
{
    int *pos = malloc((size_t)n * sizeof *pos), *k = malloc(64 * sizeof *k);
    if (!pos || !k) {
        free(pos);
        free(k);
        return -1;
    }
    /* positions: the ranks ordered by switch group (then rank), so shifts cross groups in order */
    int ng = 0, biggest = 0;
    for (int r = 0; r < n; r++)
        ng = group_of && group_of[r] + 1 > ng ? group_of[r] + 1 : ng;
    int p = 0;
    if (group_of) {
        for (int g = 0; g < ng; g++) {
            int size = 0;
            for (int r = 0; r < n; r++)
                if (group_of[r] == g) {
                    pos[p++] = r;
                    size++;
                }
            biggest = size > biggest ? size : biggest;
        }
    } else {
        for (int r = 0; r < n; r++)
            pos[p++] = r;
    }
    const int nk = shifts(n, most_shifts, k);
    const int inside = group_of && biggest > 1 ? (biggest % 2 ? biggest : biggest - 1) : 0;
    if (alloc_rounds(s, n, inside + 3 * nk) < 0) {
        free(pos);
        free(k);
        return -1;
    }
    /* every pair inside a group: the groups' tournaments side by side (members are consecutive in pos) */
    for (int start = 0; start < n && inside;) {
        int end = start;
        while (end < n && group_of[pos[end]] == group_of[pos[start]])
            end++;
        tournament(s, pos + start, end - start);
        start = end;
    }
    s->rounds = inside;
    /* shift k: the pairs (p, p + k) form gcd(n, k) cycles of n / gcd positions; alternate edges of
     * a cycle can run at once: 2 rounds for even cycles, 3 for odd ones (the closing edge), 1 for k = n / 2 */
    for (int i = 0; i < nk; i++) {
        const int g = gcd(n, k[i]), len = n / g, colours = len == 2 ? 1 : len % 2 ? 3 : 2;
        int base = s->rounds, used[3] = {0, 0, 0};
        for (int c = 0; c < g; c++)
            for (int t = 0; t < (len == 2 ? 1 : len); t++) {
                const int a = pos[(c + (long)t * k[i]) % n], b = pos[(c + (long)(t + 1) * k[i]) % n];
                if (group_of && inside && group_of[a] == group_of[b])
                    continue;  /* measured with its group */
                const int colour = len % 2 && t == len - 1 ? 2 : t % 2;
                s->partner[(size_t)(base + colour) * n + a] = b;
                s->partner[(size_t)(base + colour) * n + b] = a;
                used[colour] = 1;
            }
        /* close the gaps left by rounds with no pair (all of the shift's pairs inside groups) */
        for (int colour = 0; colour < colours; colour++) {
            if (!used[colour])
                continue;
            if (base + colour != s->rounds)
                memcpy(s->partner + (size_t)s->rounds * n, s->partner + (size_t)(base + colour) * n,
                       (size_t)n * sizeof *s->partner);
            s->rounds++;
        }
        for (int r = s->rounds; r < base + colours; r++)
            for (int q = 0; q < n; q++)
                s->partner[(size_t)r * n + q] = -1;
    }
    free(pos);
    free(k);
    return 0;
}

int mx_schedule_cap(mx_schedule *s, int most)
{
    if (most <= 0)
        return 0;
    const size_t n = (size_t)s->n;
    size_t rounds = 0;
    for (int r = 0; r < s->rounds; r++) {
        int pairs = 0;
        for (size_t q = 0; q < n; q++)
            pairs += s->partner[(size_t)r * n + q] > (int)q;
        rounds += pairs > most ? (size_t)((pairs + most - 1) / most) : 1;
    }
    int *out = malloc((rounds * n + 1) * sizeof *out);
    if (!out)
        return -1;
    for (size_t i = 0; i < rounds * n; i++)
        out[i] = -1;
    size_t at = 0;
    for (int r = 0; r < s->rounds; r++) {
        const int *in = s->partner + (size_t)r * n;
        int pairs = 0;
        for (size_t q = 0; q < n; q++)
            pairs += in[q] > (int)q;
        const int parts = pairs > most ? (pairs + most - 1) / most : 1;
        /* the k-th pair of the round goes to part k mod parts: pairs of neighbouring ranks (often one
         * switch's) spread over the parts, so that each part mixes near and far pairs as the round did */
        int k = 0;
        for (size_t q = 0; q < n; q++)
            if (in[q] > (int)q) {
                int *o = out + (at + (size_t)(k++ % parts)) * n;
                o[q] = in[q];
                o[in[q]] = (int)q;
            }
        at += (size_t)parts;
    }
    free(s->partner);
    s->partner = out;
    s->rounds = (int)rounds;
    return 0;
}

void mx_schedule_free(mx_schedule *s)
{
    free(s->partner);
    s->partner = NULL;
    s->rounds = 0;
}

int mx_retest_rounds(const mx_suspect *sus, int nsus, int cap, int most, int n, int *round_of)
{
    const int units = nsus < cap ? nsus : cap;
    unsigned char *busy = calloc((size_t)(units ? units : 1) * (size_t)n, 1);  /* busy[round * n + rank] */
    int *count = calloc((size_t)(units ? units : 1), sizeof *count);           /* suspects per round */
    if (!busy || !count) {
        free(busy);
        free(count);
        return -1;
    }
    int rounds = 0;
    for (int s = 0; s < nsus; s++) {
        round_of[s] = -1;
        if (s >= units)
            continue;
        const int r4[4] = {sus[s].from, sus[s].to, sus[s].ctl_from, sus[s].ctl_to};
        for (int r = 0;; r++) {
            unsigned char *b = busy + (size_t)r * n;
            int free_ = most <= 0 || count[r] < most;
            for (int q = 0; q < 4; q++)
                free_ &= r4[q] < 0 || !b[r4[q]];
            if (!free_)
                continue;
            for (int q = 0; q < 4; q++)
                if (r4[q] >= 0)
                    b[r4[q]] = 1;
            round_of[s] = r;
            count[r]++;
            rounds = r + 1 > rounds ? r + 1 : rounds;
            break;
        }
    }
    free(busy);
    free(count);
    return rounds;
}
