/* MPI point-to-point kernels (OSU's latency, bw and bibw; a non-blocking
 * ping-pong as mpptest has). Rank 0 of the pair starts each operation and
 * its clock is the one reported. */
#include "p2p.h"

#include "rmx_timer.h"

enum { TAG_PING = 11, TAG_PONG = 12, TAG_DATA = 13, TAG_ACK = 14 };

void net_pair_prepare(net_pair *p, unsigned char *buf, uint64_t seed)
{
    if (p->validate)
        net_fill(buf, p->size, seed);
    else
        net_mark(buf, p->size, seed);
    /* Checks the checker (HPCC's CHECK_LEVEL 2): a damaged byte must be caught. */
    if (p->corrupt && p->me == 1 && p->size > 0)
        buf[p->size - 1] ^= 0x5a;
}

void net_pair_verify(net_pair *p, const unsigned char *buf, uint64_t seed)
{
    int ok = p->validate ? net_check(buf, p->size, seed) == 0 : net_mark_ok(buf, p->size, seed);
    if (!ok)
        p->bad++;
}

int net_pair_validate_once(net_pair *p, net_batch_fn fn)
{
    int saved = p->validate;
    long before = p->bad;
    p->validate = 1;
    double r = fn(p, 1);
    p->validate = saved;
    int bad = r < 0 || p->bad != before, any = 0;
    p->bad = before;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, p->comm);
    return any;
}

static double result(const net_pair *p, double t0)
{
    double el = rmx_now() - t0;
    return p->bad ? -1.0 : el;
}

static double k_blocking(void *ctx, long iters)
{
    net_pair *p = ctx;
    int n = (int)p->size, peer = 1 - p->me;
    double t0 = rmx_now();
    for (long i = 0; i < iters; i++) {
        uint64_t s = 2 * p->seq++;
        if (p->me == 0) {
            net_pair_prepare(p, p->sbuf, s);
            MPI_Send(p->sbuf, n, MPI_BYTE, peer, TAG_PING, p->comm);
            MPI_Recv(p->rbuf, n, MPI_BYTE, peer, TAG_PONG, p->comm, MPI_STATUS_IGNORE);
            net_pair_verify(p, p->rbuf, s + 1);
        } else {
            MPI_Recv(p->rbuf, n, MPI_BYTE, peer, TAG_PING, p->comm, MPI_STATUS_IGNORE);
            net_pair_verify(p, p->rbuf, s);
            net_pair_prepare(p, p->sbuf, s + 1);
            MPI_Send(p->sbuf, n, MPI_BYTE, peer, TAG_PONG, p->comm);
        }
    }
    return result(p, t0);
}

static double k_nonblocking(void *ctx, long iters)
{
    net_pair *p = ctx;
    int n = (int)p->size, peer = 1 - p->me;
    double t0 = rmx_now();
    for (long i = 0; i < iters; i++) {
        uint64_t s = 2 * p->seq++;
        if (p->me == 0) {
            net_pair_prepare(p, p->sbuf, s);
            MPI_Irecv(p->rbuf, n, MPI_BYTE, peer, TAG_PONG, p->comm, &p->req[0]);
            MPI_Isend(p->sbuf, n, MPI_BYTE, peer, TAG_PING, p->comm, &p->req[1]);
            MPI_Waitall(2, p->req, MPI_STATUSES_IGNORE);
            net_pair_verify(p, p->rbuf, s + 1);
        } else {
            MPI_Irecv(p->rbuf, n, MPI_BYTE, peer, TAG_PING, p->comm, &p->req[0]);
            MPI_Wait(&p->req[0], MPI_STATUS_IGNORE);
            net_pair_verify(p, p->rbuf, s);
            net_pair_prepare(p, p->sbuf, s + 1);
            MPI_Isend(p->sbuf, n, MPI_BYTE, peer, TAG_PONG, p->comm, &p->req[1]);
            MPI_Wait(&p->req[1], MPI_STATUS_IGNORE);
        }
    }
    return result(p, t0);
}

/* A window of messages one way, then a zero-byte acknowledgement (OSU bw):
 * the acknowledgement keeps the sender from timing only its local copies. */
static double k_stream(void *ctx, long iters)
{
    net_pair *p = ctx;
    int n = (int)p->size, peer = 1 - p->me, w = p->window;
    char ack = 0;
    double t0 = rmx_now();
    for (long i = 0; i < iters; i++) {
        uint64_t s = p->seq++;
        if (p->me == 0) {
            net_pair_prepare(p, p->sbuf, s);
            for (int k = 0; k < w; k++)
                MPI_Isend(p->sbuf, n, MPI_BYTE, peer, TAG_DATA, p->comm, &p->req[k]);
            MPI_Waitall(w, p->req, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 0, MPI_BYTE, peer, TAG_ACK, p->comm, MPI_STATUS_IGNORE);
        } else {
            for (int k = 0; k < w; k++)
                MPI_Irecv(p->rbuf, n, MPI_BYTE, peer, TAG_DATA, p->comm, &p->req[k]);
            MPI_Waitall(w, p->req, MPI_STATUSES_IGNORE);
            net_pair_verify(p, p->rbuf, s);
            MPI_Send(&ack, 0, MPI_BYTE, peer, TAG_ACK, p->comm);
        }
    }
    return result(p, t0);
}

/* Both ranks send a window to each other at once (OSU bibw). */
static double k_bidir(void *ctx, long iters)
{
    net_pair *p = ctx;
    int n = (int)p->size, peer = 1 - p->me, w = p->window;
    double t0 = rmx_now();
    for (long i = 0; i < iters; i++) {
        uint64_t s = 2 * p->seq++;
        net_pair_prepare(p, p->sbuf, s + (uint64_t)p->me);
        for (int k = 0; k < w; k++)
            MPI_Irecv(p->rbuf, n, MPI_BYTE, peer, TAG_DATA, p->comm, &p->req[k]);
        for (int k = 0; k < w; k++)
            MPI_Isend(p->sbuf, n, MPI_BYTE, peer, TAG_DATA, p->comm, &p->req[w + k]);
        MPI_Waitall(2 * w, p->req, MPI_STATUSES_IGNORE);
        net_pair_verify(p, p->rbuf, s + (uint64_t)peer);
    }
    return result(p, t0);
}

const net_p2p_kernel net_p2p_kernels[] = {
    {"mpi", k_blocking, 0, 2, "MPI ping-pong, blocking Send/Recv"},
    {"mpi-nonblocking", k_nonblocking, 0, 2, "MPI ping-pong, Isend/Irecv"},
    {"mpi-stream", k_stream, 1, 1, "MPI unidirectional stream of a window, then an ack"},
    {"mpi-bidir", k_bidir, 1, 2, "MPI bidirectional windows"},
    {"tcp", net_tcp_pingpong, 0, 2, "TCP socket ping-pong (MPI only exchanged the addresses)"},
    {"udp", net_udp_pingpong, 0, 2, "UDP datagram ping-pong (MPI only exchanged the addresses)"},
};
const size_t net_p2p_nkernels = sizeof net_p2p_kernels / sizeof net_p2p_kernels[0];

int net_window_for(int window, size_t size, size_t max_bytes)
{
    if (max_bytes == 0 || size == 0 || (size_t)window * size <= max_bytes)
        return window;
    const size_t w = max_bytes / size;
    return w < 1 ? 1 : (int)w;
}

int net_p2p_msgs(const net_p2p_kernel *k, const net_pair *p)
{
    return k->per_window ? k->msgs * p->window : k->msgs;
}
