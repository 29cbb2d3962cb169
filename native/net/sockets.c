/* The socket layers: the same round trip as the MPI ping-pong, between the
 * same two processes, over a plain TCP connection and over UDP datagrams.
 * MPI only carries the addresses and ports, so the difference between these
 * curves and the MPI curve is the cost of the MPI layer (NIST's per-layer
 * measurements of each protocol layer). Sockets bind to the address netaddr.c chose, never
 * to a wildcard address. */
#include "p2p.h"

#include "rmx_step.h"
#include "rmx_timer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ACCEPT_SECONDS 30      /* the peer connects right after MPI told it the port */
#define UDP_RESEND_MS 200      /* a datagram not answered by then is taken as lost */
#define UDP_MAX_TRIES 50
#define IDLE_SECONDS 120       /* a responder that hears nothing this long gives up */

static const char *peer_host = "the peer";
static char peer_name[64];

static struct sockaddr_in make_addr(const char *text, uint16_t port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    if (inet_pton(AF_INET, text, &a.sin_addr) != 1)
        net_fail(1, "'%s' is not an IPv4 address", text);
    return a;
}

static int bound_socket(int type, const char *addr)
{
    int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
    if (fd < 0)
        net_fail(1, "socket: %s", strerror(errno));
    struct sockaddr_in a = make_addr(addr, 0);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0)
        net_fail(1, "cannot bind a socket to %s: %s", addr, strerror(errno));
    return fd;
}

static uint16_t port_of(int fd)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    return ntohs(a.sin_port);
}

static void send_all(int fd, const unsigned char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            net_fail(1, "TCP send to %s failed: %s", peer_host, w < 0 ? strerror(errno) : "connection closed");
        buf += w;
        n -= (size_t)w;
    }
}

static void recv_all(int fd, unsigned char *buf, size_t n)
{
    while (n > 0) {
        ssize_t r = recv(fd, buf, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            net_fail(1, "TCP receive from %s failed: %s", peer_host, r < 0 ? strerror(errno) : "connection closed");
        buf += r;
        n -= (size_t)r;
    }
}

/* Rank 0 listens, rank 1 connects; a token sent over MPI proves that the
 * connection accepted is our peer's and not a stranger's. */
static int tcp_connect(net_pair *p, const char *mine, const char *peer)
{
    struct {
        uint16_t port;
        uint64_t token;
    } info = {0, 0};
    int fd;
    if (p->me == 0) {
        int lfd = bound_socket(SOCK_STREAM, mine);
        if (listen(lfd, 4) != 0)
            net_fail(1, "listen on %s: %s", mine, strerror(errno));
        info.port = port_of(lfd);
        info.token = ((uint64_t)getpid() << 32) ^ (uint64_t)(rmx_now() * 1e9);
        MPI_Send(&info, sizeof info, MPI_BYTE, 1, 31, p->comm);
        double deadline = rmx_now() + ACCEPT_SECONDS;
        for (;;) {
            struct pollfd pf = {lfd, POLLIN, 0};
            int left = (int)((deadline - rmx_now()) * 1000);
            if (left <= 0 || poll(&pf, 1, left) <= 0)
                net_fail(1, "no TCP connection from host %s (%s) within %d s; a firewall?", peer_host, peer,
                         ACCEPT_SECONDS);
            fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
            if (fd < 0)
                continue;
            uint64_t got = 0;
            struct pollfd pt = {fd, POLLIN, 0};
            if (poll(&pt, 1, 2000) == 1 && recv(fd, &got, sizeof got, MSG_WAITALL) == (ssize_t)sizeof got &&
                got == info.token)
                break;
            close(fd);  /* not our peer */
        }
        close(lfd);
    } else {
        MPI_Recv(&info, sizeof info, MPI_BYTE, 0, 31, p->comm, MPI_STATUS_IGNORE);
        fd = bound_socket(SOCK_STREAM, mine);
        struct sockaddr_in to = make_addr(peer, info.port);
        if (connect(fd, (struct sockaddr *)&to, sizeof to) != 0)
            net_fail(1, "cannot connect to host %s at %s:%u: %s", peer_host, peer, info.port, strerror(errno));
        send_all(fd, (const unsigned char *)&info.token, sizeof info.token);
    }
    int one = 1;
    /* Without TCP_NODELAY, Nagle's algorithm would hold small messages back. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int udp_connect(net_pair *p, const char *mine, const char *peer)
{
    int fd = bound_socket(SOCK_DGRAM, mine);
    uint16_t port = port_of(fd), peer_port = 0;
    MPI_Sendrecv(&port, 1, MPI_UINT16_T, 1 - p->me, 32, &peer_port, 1, MPI_UINT16_T, 1 - p->me, 32, p->comm,
                 MPI_STATUS_IGNORE);
    struct sockaddr_in to = make_addr(peer, peer_port);
    /* A connected UDP socket only accepts datagrams from the peer's port. */
    if (connect(fd, (struct sockaddr *)&to, sizeof to) != 0)
        net_fail(1, "UDP connect to %s: %s", peer, strerror(errno));
    int big = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    return fd;
}

void net_sockets_open(net_pair *p, char *my_addr, char *peer_addr, size_t addrlen)
{
    char mine[64] = {0};
    strncpy(mine, net_hostname(), sizeof mine - 1);
    MPI_Sendrecv(mine, 64, MPI_CHAR, 1 - p->me, 30, peer_name, 64, MPI_CHAR, 1 - p->me, 30, p->comm,
                 MPI_STATUS_IGNORE);
    peer_host = peer_name;
    rmx_step("socket-addresses");
    net_choose_address(p->comm, my_addr, peer_addr, addrlen);
    rmx_step("tcp-connect");
    p->tcp = tcp_connect(p, my_addr, peer_addr);
    rmx_step("udp-connect");
    p->udp = udp_connect(p, my_addr, peer_addr);
    MPI_Barrier(p->comm);
}

void net_sockets_close(net_pair *p)
{
    if (p->tcp >= 0)
        close(p->tcp);
    if (p->udp >= 0)
        close(p->udp);
    p->tcp = p->udp = -1;
}

double net_tcp_pingpong(void *ctx, long iters)
{
    net_pair *p = ctx;
    double t0 = rmx_now();
    for (long i = 0; i < iters; i++) {
        uint64_t s = 2 * p->seq++;
        if (p->me == 0) {
            net_pair_prepare(p, p->sbuf, s);
            send_all(p->tcp, p->sbuf, p->size);
            recv_all(p->tcp, p->rbuf, p->size);
            net_pair_verify(p, p->rbuf, s + 1);
        } else {
            recv_all(p->tcp, p->rbuf, p->size);
            net_pair_verify(p, p->rbuf, s);
            net_pair_prepare(p, p->sbuf, s + 1);
            send_all(p->tcp, p->sbuf, p->size);
        }
    }
    double el = rmx_now() - t0;
    return p->bad ? -1.0 : el;
}

/* 1: the echo of datagram s; 0: a late echo of the previous datagram, to be
 * skipped (only after that one was resent: both copies may come back); -1:
 * damaged. Without a resend nothing late can come, and a damaged 1-byte echo
 * that happens to read as the previous mark (1 in 256) is still damage. */
static int udp_reply(const net_pair *p, ssize_t got, uint64_t s)
{
    if (got != (ssize_t)p->size)
        return 0;
    int ok = p->validate ? net_check(p->rbuf, p->size, s) == 0 : net_mark_ok(p->rbuf, p->size, s);
    if (ok)
        return 1;
    if (p->udp_last_resent && s > 0 && p->size > 0 && net_mark_ok(p->rbuf, p->size, s - 1))
        return 0;
    return -1;
}

/* Rank 1 echoes every datagram back unchanged until rank 0 ends the batch
 * over TCP; rank 0 resends a datagram whose echo does not come back (UDP
 * may drop it) and discards echoes that are not the one it waits for. */
double net_udp_pingpong(void *ctx, long iters)
{
    net_pair *p = ctx;
    double t0 = rmx_now();
    if (p->me == 0) {
        for (long i = 0; i < iters; i++) {
            uint64_t s = p->seq++;
            net_pair_prepare(p, p->sbuf, s);
            if (send(p->udp, p->sbuf, p->size, 0) < 0)
                net_fail(1, "UDP send to %s: %s", peer_host, strerror(errno));
            int tries = 0;
            for (;;) {
                struct pollfd pf = {p->udp, POLLIN, 0};
                if (poll(&pf, 1, UDP_RESEND_MS) == 0) {
                    if (++tries >= UDP_MAX_TRIES)
                        net_fail(1, "no UDP reply from host %s after %d tries", peer_host, tries);
                    p->lost++;
                    send(p->udp, p->sbuf, p->size, 0);
                    continue;
                }
                ssize_t got = recv(p->udp, p->rbuf, p->size, MSG_TRUNC);
                int r = udp_reply(p, got, s);
                if (r < 0)
                    p->bad++;
                if (r != 0)
                    break;
            }
            p->udp_last_resent = tries > 0;
        }
        uint64_t end = p->seq;  /* keeps the responder's sequence in step for later kernels */
        send_all(p->tcp, (const unsigned char *)&end, sizeof end);
    } else {
        for (;;) {
            struct pollfd pf[2] = {{p->udp, POLLIN, 0}, {p->tcp, POLLIN, 0}};
            if (poll(pf, 2, IDLE_SECONDS * 1000) <= 0)
                net_fail(1, "nothing from host %s for %d s during the UDP test", peer_host, IDLE_SECONDS);
            if (pf[0].revents & POLLIN) {
                ssize_t got = recv(p->udp, p->rbuf, p->size, MSG_TRUNC);
                if (got == (ssize_t)p->size) {
                    if (p->corrupt && p->size > 0)
                        p->rbuf[p->size - 1] ^= 0x5a;  /* self-test of the checker */
                    send(p->udp, p->rbuf, p->size, 0);
                }
                continue;
            }
            if (pf[1].revents) {
                uint64_t end;
                recv_all(p->tcp, (unsigned char *)&end, sizeof end);
                p->seq = end;
                break;
            }
        }
    }
    double el = rmx_now() - t0;
    return p->bad ? -1.0 : el;
}
