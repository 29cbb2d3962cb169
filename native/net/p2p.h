/* Point-to-point kernels between two ranks, all behind one interface (HPL's
 * style: a table of variants with the same signature). Each kernel performs
 * `iters` operations; an operation moves `msgs` messages of `size` bytes, so
 * the time per message and the bandwidth are comparable across kernels. */
#ifndef RMAX_NET_P2P_H
#define RMAX_NET_P2P_H

#include "net.h"

typedef struct {
    MPI_Comm comm;           /* exactly two ranks; rank 0 initiates and its clock counts */
    int me;                  /* 0 or 1 in comm */
    size_t size;             /* bytes per message */
    int window;              /* messages in flight for stream and bidirectional kernels */
    unsigned char *sbuf, *rbuf;
    MPI_Request *req;        /* 2 * window */
    int validate;            /* check every received byte (else the first and last byte) */
    uint64_t seq;            /* advances every operation on both sides: a stale buffer cannot pass */
    long bad;                /* operations whose payload failed validation */
    int tcp, udp;            /* connected sockets of the socket layers, or -1 */
    long lost;               /* UDP datagrams that had to be resent */
    int udp_last_resent;     /* the last UDP datagram was resent: a late echo of it may still come */
    int corrupt;             /* self-test: rank 1 damages one byte of what it sends */
} net_pair;

typedef struct {
    const char *name;        /* layer name in the results */
    net_batch_fn fn;
    int per_window;          /* messages per operation scale with the window */
    int msgs;                /* messages per operation (times window when per_window) */
    const char *what;        /* one line for humans */
} net_p2p_kernel;

extern const net_p2p_kernel net_p2p_kernels[];
extern const size_t net_p2p_nkernels;

/* The window for messages of `size` bytes: `window` messages, but at most `max_bytes` in flight
 * (0: no bound), at least one. A window of 64 large messages is 128 MiB at 2 MiB, a second per
 * batch on 1 Gbit/s, while a few MiB in flight already fill any link's bandwidth-delay product. */
int net_window_for(int window, size_t size, size_t max_bytes);

/* Messages one operation of k moves with this pair's window. */
int net_p2p_msgs(const net_p2p_kernel *k, const net_pair *p);

/* Payload helpers used by every kernel: pattern or mark, then check. */
void net_pair_prepare(net_pair *p, unsigned char *buf, uint64_t seed);
void net_pair_verify(net_pair *p, const unsigned char *buf, uint64_t seed);

/* One untimed operation with full validation; returns 0 when every byte was right. */
int net_pair_validate_once(net_pair *p, net_batch_fn fn);

/* Socket layers (sockets.c): set up both sockets between the pair's ranks,
 * addresses chosen by netaddr.c and exchanged over MPI. */
void net_sockets_open(net_pair *p, char *my_addr, char *peer_addr, size_t addrlen);
void net_sockets_close(net_pair *p);
double net_tcp_pingpong(void *ctx, long iters);
double net_udp_pingpong(void *ctx, long iters);
/* Largest payload one UDP datagram can carry (IPv4). */
#define NET_UDP_MAX 65507

/* The interface address this rank should use to reach `peer_host`'s rank
 * (netaddr.c): loopback when both are on this host, else the address of the
 * local interface on the peer's subnet. Collective over the pair's comm. */
void net_choose_address(MPI_Comm pair, char *mine, char *peer, size_t len);

#endif
