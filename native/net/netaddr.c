/* Which address each rank of a pair binds its sockets to.
 *
 * Never a wildcard address: on one host both ranks use 127.0.0.1, which no
 * other machine can reach; on two hosts each rank binds to the address of
 * its own interface that shares a subnet with one of the peer's addresses
 * (the path MPI's TCP transport would take), falling back to the first
 * non-loopback address when no subnet is shared (a routed network). */
#include "p2p.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <netinet/in.h>
#include <string.h>

#define MAXADDR 16

typedef struct {
    char host[64];
    int n;
    uint32_t addr[MAXADDR], mask[MAXADDR];  /* network byte order */
} addr_list;

static void local_addresses(addr_list *l)
{
    memset(l, 0, sizeof *l);
    strncpy(l->host, net_hostname(), sizeof l->host - 1);
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0)
        return;
    for (struct ifaddrs *i = ifs; i && l->n < MAXADDR; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
            (i->ifa_flags & IFF_LOOPBACK) || !i->ifa_netmask)
            continue;
        l->addr[l->n] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        l->mask[l->n] = ((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr;
        l->n++;
    }
    freeifaddrs(ifs);
}

/* Index of my address on a subnet the peer shares, else the first, else -1. */
static int pick(const addr_list *me, const addr_list *peer)
{
    for (int i = 0; i < me->n; i++)
        for (int k = 0; k < peer->n; k++)
            if ((me->addr[i] & me->mask[i]) == (peer->addr[k] & me->mask[i]))
                return i;
    return me->n ? 0 : -1;
}

static void to_text(uint32_t a, char *out, size_t len)
{
    struct in_addr in = {.s_addr = a};
    inet_ntop(AF_INET, &in, out, (socklen_t)len);
}

void net_choose_address(MPI_Comm pair, char *mine, char *peer, size_t len)
{
    int me;
    MPI_Comm_rank(pair, &me);
    addr_list own, other;
    local_addresses(&own);
    MPI_Sendrecv(&own, sizeof own, MPI_BYTE, 1 - me, 21, &other, sizeof other, MPI_BYTE, 1 - me, 21, pair,
                 MPI_STATUS_IGNORE);
    if (strcmp(own.host, other.host) == 0) {
        snprintf(mine, len, "127.0.0.1");
        snprintf(peer, len, "127.0.0.1");
        return;
    }
    int a = pick(&own, &other), b = pick(&other, &own);
    if (a < 0)
        net_fail(1, "no network interface with an IPv4 address to reach host %s", other.host);
    if (b < 0)
        net_fail(1, "host %s has no network interface with an IPv4 address", other.host);
    to_text(own.addr[a], mine, len);
    to_text(other.addr[b], peer, len);
}
