/* What several commands ask about ranks: the host a rank runs on, a pair's own communicator, and
 * a shuffle of rank orders that every host and C library repeats alike. */
#include "net.h"

#include <string.h>
#include <unistd.h>

const char *net_hostname(void)
{
    static char host[64];
    if (!host[0] && gethostname(host, sizeof host - 1) != 0)
        strcpy(host, "unknown");
    return host;
}

MPI_Comm net_pair_comm(int a, int b)
{
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    int color = MPI_UNDEFINED, key = 0;
    if (a >= 0 && (me == a || me == b)) {
        color = a < b ? a : b;  /* each pair has a distinct smallest member */
        key = me == a ? 0 : 1;
    }
    MPI_Comm c;
    MPI_Comm_split(MPI_COMM_WORLD, color, key, &c);
    return c;
}

void net_shuffle(int *v, int n, uint64_t *state)
{
    for (int i = n - 1; i > 0; i--) {
        /* xorshift64*: reproducible across hosts and C libraries, unlike rand() */
        uint64_t x = *state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        *state = x;
        int j = (int)((x * 0x2545F4914F6CDD1DULL) % (uint64_t)(i + 1));
        int t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}
