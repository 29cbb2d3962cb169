/* rmax-net matrix: what the command decides apart from MPI, so that it can be
 * checked on synthetic matrices of any size without n ranks.
 *   matrix_rounds.c    which pairs meet in each round (all pairs, or a sample
 *                      in O(log n) shifts), and the retest rounds
 *   matrix_suspects.c  class statistics, suspects and their controls
 * Matrices are n x n, row = from, column = to, NaN where not measured;
 * latency is measured once per pair (kept in both cells), bandwidth each way. */
#ifndef RMAX_NET_MATRIX_H
#define RMAX_NET_MATRIX_H

#define MX_LAT_FACTOR 2.0    /* a latency above 2x its class median is suspect */
#define MX_BW_FRACTION 0.9   /* a bandwidth below 90% of it */
#define MX_SAMPLE_ABOVE 64   /* --design auto: every pair up to this many ranks, a sample above */

/* Rounds of disjoint pairs: partner[r * n + rank] is the rank it meets in round r, or -1. */
typedef struct {
    int n, rounds;
    int *partner;
} mx_schedule;

/* Every pair once: the round-robin tournament (n - 1 rounds, n when n is odd). */
int mx_schedule_full(int n, mx_schedule *s);
/* A sample, for large n: every pair inside a switch group when group_of is known
 * (the groups' tournaments side by side), then for each shift k of a set of
 * O(log n) shifts the pairs (p, p + k mod n) of positions in the ranks' order
 * (grouped by switch when known: near and far shifts cross near and far
 * switches), 1 to 3 rounds per shift; at most `most_shifts` shifts (0: all),
 * spread from the nearest to the farthest. Returns 0, -1 when out of memory. */
int mx_schedule_sampled(int n, const int *group_of, int most_shifts, mx_schedule *s);
/* Split every round of more than `most` pairs into rounds of at most `most` (0: as it is): where
 * the ranks crowd few cores, pairs measured all at once measure the cores, not the links. */
int mx_schedule_cap(mx_schedule *s, int most);
void mx_schedule_free(mx_schedule *s);

/* 0 within one switch group, 1 across; 0 for all when group_of is NULL. */
static inline int mx_pair_class(const int *group_of, int i, int j)
{
    return group_of && group_of[i] != group_of[j];
}

/* One class of one kind: the median of its measured pairs and their robust
 * spread (1.4826 x the median absolute deviation, the SD of a normal sample). */
typedef struct {
    double median, spread;
    long pairs;
} mx_class_stat;

/* st[kind][class], kind 0 latency (each pair once), 1 bandwidth. O(n^2 log n). */
void mx_class_stats(const double *lat, const double *bw, int n, const int *group_of, mx_class_stat st[2][2]);

typedef struct {
    int from, to, kind, cls;     /* kind 0 latency (from < to), 1 bandwidth from -> to */
    int ctl_from, ctl_to;        /* its control pair, or -1 */
    double severity;             /* how far beyond the margin: > 1 */
} mx_suspect;

/* The pairs beyond their class's margin, most severe first; *out is malloc'd.
 * Returns the count, -1 when out of memory. O(n^2 + s log s). */
int mx_find_suspects(const double *lat, const double *bw, int n, const int *group_of, const mx_class_stat st[2][2],
                     mx_suspect **out);
/* A control for each of the first `cap` suspects: the pair of its class and kind
 * nearest the class median (in log) that is no suspect, shares no rank with it
 * and is no other suspect's control (so that retests of different suspects can
 * run at once) while one is left, or -1 when none is. O(n^2 log n + cap * (cap + n)). */
int mx_pick_controls(const double *lat, const double *bw, int n, const int *group_of, const mx_class_stat st[2][2],
                     mx_suspect *sus, int nsus, int cap);

/* Packs the first `cap` suspects (each with its control: up to 4 ranks) into
 * rounds whose ranks are disjoint, at most `most` suspects a round (0: no
 * bound; --pairs-at-once, which holds for the retests too), first fit in
 * order of severity, so that a host in many suspect pairs has one of them in
 * each round rather than all of them first. round_of[s] gets the round, -1
 * beyond cap. Returns the round count, -1 when out of memory. */
int mx_retest_rounds(const mx_suspect *sus, int nsus, int cap, int most, int n, int *round_of);

#endif
