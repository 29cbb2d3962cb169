/* rmax-net: network and MPI microbenchmarks, one sub-command per file.
 * Options are parsed by each command before MPI starts, so bad input ends
 * every rank with the same one-line error and no MPI noise. */
#include "net.h"
#include "rmx_lifeline.h"
#include "rmx_subcmd.h"

#include <string.h>
#include <unistd.h>

static const rmx_subcmd commands[] = {
    {"p2p", cmd_p2p, "two ranks: latency and bandwidth vs size over MPI, TCP and UDP"},
    {"coll", cmd_coll, "collectives vs message size, process count and rank order"},
    {"ring", cmd_ring, "HPCC natural and random ring latency and bandwidth, per-link times"},
    {"bisect", cmd_bisect, "bisection bandwidth over random bisections"},
    {"matrix", cmd_matrix, "all-pairs latency and bandwidth matrices"},
    {"mbw", cmd_mbw, "concurrent pairs: aggregate bandwidth and message rate (OSU osu_mbw_mr)"},
    {"mlat", cmd_mlat, "concurrent pairs: ping-pong latency (OSU osu_multi_lat)"},
    {"rma", cmd_rma, "one-sided put, get, accumulate: latency and bandwidth per synchronisation"},
    {"nbc", cmd_nbc, "non-blocking collectives: time alone, computation alone, overlapped"},
};

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

int main(int argc, char **argv)
{
    rmx_lifeline();
    return rmx_subcmd_dispatch(PROG, commands, sizeof commands / sizeof commands[0], argc, argv);
}
