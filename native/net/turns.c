/* Turns: measurements that a few ranks take while every other rank sleeps.
 *
 * Where the ranks crowd few cores (a virtual cluster: 64 ranks on 2 cores),
 * a collective of the whole world per measurement costs every rank a time
 * slice, and the blocking ones poll: a world split, three barriers and a
 * gather per part-round of the all-pairs matrix took 118-429 s at 64 ranks
 * for 47 planned. So rank 0 starts each turn with one message to its members
 * alone, they build the turn's communicator among themselves
 * (MPI_Comm_create_group, collective over the members only), measure, and
 * report to rank 0 alone. A rank in no turn just sleeps until it is called. */
#include "net.h"

#include <stdlib.h>
#include <time.h>

enum { TAG_TURN = 7401, TAG_RESULT = 7402, TAG_GROUP = 7403 };

/* Waits for the requests, sleeping between tests from 50 us doubling up to
 * cap_ns: a rank that waits long wakes seldom (each wake-up can preempt a
 * rank being measured on a shared core). */
void net_nap_wait(int count, MPI_Request *rq, long cap_ns)
{
    int done = 0;
    long nap_ns = 50000;
    for (MPI_Testall(count, rq, &done, MPI_STATUSES_IGNORE); !done;
         MPI_Testall(count, rq, &done, MPI_STATUSES_IGNORE)) {
        const struct timespec nap = {0, nap_ns};
        nanosleep(&nap, NULL);
        nap_ns = 2 * nap_ns < cap_ns ? 2 * nap_ns : cap_ns;
    }
}

/* The turn's communicator on one of its members (world ranks, ascending). */
static MPI_Comm turn_comm(const int *members, int m)
{
    MPI_Group world, g;
    MPI_Comm c;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, m, members, &g);
    MPI_Comm_create_group(MPI_COMM_WORLD, g, TAG_GROUP, &c);
    MPI_Group_free(&g);
    MPI_Group_free(&world);
    return c;
}

static void run_member(const net_turns *t, int turn, const int *members, int m, double *result)
{
    MPI_Comm c = turn_comm(members, m);
    t->run(t->ctx, turn, c, result);
    MPI_Comm_free(&c);
}

int net_turns_run(const net_turns *t)
{
    int me, n, ran = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const int r = t->results > 0 ? t->results : 1;
    int *members = malloc(((size_t)n + 1) * sizeof *members);
    double *results = malloc(((size_t)n * (size_t)r + 1) * sizeof *results);
    MPI_Request *rq = malloc(((size_t)n + 1) * sizeof *rq);
    if (!members || !results || !rq)
        net_fail(1, "out of memory for the turns of %d ranks", n);
    if (me != 0) {
        for (;;) {  /* called by rank 0 turn by turn; a negative number ends: -1 - the turns run */
            int turn;
            MPI_Irecv(&turn, 1, MPI_INT, 0, TAG_TURN, MPI_COMM_WORLD, rq);
            net_nap_wait(1, rq, 10000000);  /* 10 ms: called at most that late, 100 wake-ups a second */
            if (turn < 0) {
                ran = -1 - turn;
                break;
            }
            const int m = t->members(t->ctx, turn, members);
            run_member(t, turn, members, m, results);
            MPI_Send(results, r, MPI_DOUBLE, 0, TAG_RESULT, MPI_COMM_WORLD);
        }
    } else {
        for (int turn = 0; turn < t->turns; turn++) {
            if (t->go && !t->go(t->ctx, turn))
                break;
            const int m = t->members(t->ctx, turn, members);
            int mine = -1, waits = 0;
            for (int k = 0; k < m; k++) {
                if (members[k] == 0) {
                    mine = k;
                    continue;
                }
                MPI_Send(&turn, 1, MPI_INT, members[k], TAG_TURN, MPI_COMM_WORLD);
                MPI_Irecv(results + (size_t)k * r, r, MPI_DOUBLE, members[k], TAG_RESULT, MPI_COMM_WORLD,
                          rq + waits++);
            }
            if (mine >= 0)
                run_member(t, turn, members, m, results + (size_t)mine * r);
            net_nap_wait(waits, rq, 1000000);
            if (t->done)
                t->done(t->ctx, turn, members, m, results);
            ran++;
        }
        const int end = -1 - ran;
        for (int q = 1; q < n; q++)
            MPI_Send(&end, 1, MPI_INT, q, TAG_TURN, MPI_COMM_WORLD);
    }
    free(members);
    free(results);
    free(rq);
    return ran;
}
