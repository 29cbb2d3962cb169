/* oslat tests between processes: pipe and AF_UNIX round trips, context
 * switches in a ring of processes (lmbench's lat_ctx), and loopback UDP/TCP
 * round trips, TCP connect and TCP bandwidth. Peers are forked children that
 * echo or serve; every reply is checked. Network: 127.0.0.1 only. */
#include "oslat.h"

#include "rmx_stats.h"
#include "rmx_threads.h"
#include "rmx_timer.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- round trips of one byte through a pair of descriptors ------------------------------------ */

typedef struct {
    int rfd, wfd; /* the side this process reads from and writes to */
} duplex;

static void echo(void *arg)
{
    duplex *d = arg;
    unsigned char c;
    while (read(d->rfd, &c, 1) == 1)
        if (write(d->wfd, &c, 1) != 1)
            break;
}

static int op_round_trip(void *ctx, size_t n)
{
    duplex *d = ctx;
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char out = (unsigned char)(i * 7 + 1), in = 0;
        if (write(d->wfd, &out, 1) != 1 || read(d->rfd, &in, 1) != 1 || in != out) {
            bad = 1;
            break;
        }
    }
    return bad;
}

void oslat_pipe(oslat_env *e)
{
    int to_child[2], to_parent[2];
    if (pipe(to_child) || pipe(to_parent)) {
        e->r->failed = 1;
        return;
    }
    duplex child = {to_child[0], to_parent[1]}, me = {to_parent[0], to_child[1]};
    int pid = oslat_spawn(echo, &child);
    close(to_child[0]);
    close(to_parent[1]);
    oslat_measure(e, "pipe", "pipe round trip", op_round_trip, &me, 0, 1, NAN, NULL);
    close(me.wfd);
    close(me.rfd);
    oslat_reap(pid);
}

void oslat_unix(oslat_env *e)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
        e->r->failed = 1;
        return;
    }
    duplex child = {sv[1], sv[1]}, me = {sv[0], sv[0]};
    int pid = oslat_spawn(echo, &child);
    close(sv[1]);
    oslat_measure(e, "unix", "AF_UNIX round trip", op_round_trip, &me, 0, 1, NAN, NULL);
    close(sv[0]);
    oslat_reap(pid);
}

/* ---- context switches: a token passed around a ring of processes on one CPU ------------------- */

static volatile long touch_sink;

/* Reads the working set, as lmbench's lat_ctx does, so a switch also pays for refilling the cache. */
static void touch(const long *ws, size_t words)
{
    long s = 0;
    for (size_t i = 0; i < words; i++)
        s += ws[i];
    touch_sink = s;
}

typedef struct {
    int procs;
    size_t ws_bytes;
    int (*pipes)[2]; /* process i reads pipes[i][0], writes pipes[(i+1) % procs][1] */
    int me;
    long *ws;
} ring;

static void pin_first_cpu(void)
{
    cpu_set_t set, one;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) {
            CPU_SET(c, &one);
            break;
        }
    sched_setaffinity(0, sizeof one, &one);
}

static void ring_member(void *arg)
{
    ring *r = arg;
    pin_first_cpu();
    long *ws = calloc(r->ws_bytes / sizeof(long) + 1, sizeof(long)); /* private to this process */
    int in = r->pipes[r->me][0], out = r->pipes[(r->me + 1) % r->procs][1];
    for (int i = 0; i < r->procs; i++) /* keep only our two ends */
        for (int k = 0; k < 2; k++)
            if (r->pipes[i][k] != in && r->pipes[i][k] != out)
                close(r->pipes[i][k]);
    long token;
    while (read(in, &token, sizeof token) == (ssize_t)sizeof token) {
        touch(ws, r->ws_bytes / sizeof(long));
        token++;
        if (write(out, &token, sizeof token) != (ssize_t)sizeof token)
            break;
    }
    free(ws);
}

/* One operation is one lap: procs switches. */
static int op_lap(void *ctx, size_t n)
{
    ring *r = ctx;
    int in = r->pipes[0][0], out = r->pipes[1 % r->procs][1];
    long token = 0;
    for (size_t i = 0; i < n; i++) {
        long sent = token;
        if (write(out, &token, sizeof token) != (ssize_t)sizeof token ||
            read(in, &token, sizeof token) != (ssize_t)sizeof token)
            return 1;
        if (token != sent + r->procs - 1) /* every other member passed it on exactly once */
            return 1;
        touch(r->ws, r->ws_bytes / sizeof(long));
    }
    return 0;
}

/* What a hop costs without a switch: one process writing and reading its own pipe and reading its working set. */
static double hop_overhead_us(size_t ws_bytes, long *ws)
{
    int p[2];
    if (pipe(p))
        return 0;
    double v[7];
    for (int k = 0; k < 7; k++) {
        double t0 = rmx_now();
        long token = 0;
        for (int i = 0; i < 200; i++) {
            if (write(p[1], &token, sizeof token) != (ssize_t)sizeof token ||
                read(p[0], &token, sizeof token) != (ssize_t)sizeof token)
                break;
            touch(ws, ws_bytes / sizeof(long));
        }
        v[k] = (rmx_now() - t0) / 200 * 1e6;
    }
    close(p[0]);
    close(p[1]);
    rmx_summary s;
    rmx_summarize(v, 7, &s);
    return s.median;
}

static void ring_extra(void *ctx, rmx_json *j)
{
    ring *r = ctx;
    rmx_json_int(j, "procs", r->procs);
    rmx_json_int(j, "ws_bytes", (long long)r->ws_bytes);
    rmx_json_str(j, "cpu", "all processes on the first allowed CPU");
}

void oslat_ctxsw(oslat_env *e, int procs, size_t ws_bytes)
{
    cpu_set_t saved;
    int have = sched_getaffinity(0, sizeof saved, &saved) == 0;
    pin_first_cpu();
    int(*pipes)[2] = calloc((size_t)procs, sizeof *pipes);
    ring r = {procs, ws_bytes, pipes, 0, calloc(ws_bytes / sizeof(long) + 1, sizeof(long))};
    int *pids = calloc((size_t)procs, sizeof *pids);
    int ok = pipes && r.ws && pids;
    for (int i = 0; ok && i < procs; i++)
        ok = pipe(pipes[i]) == 0;
    for (int i = 1; ok && i < procs; i++) {
        ring child = r;
        child.me = i;
        pids[i] = oslat_spawn(ring_member, &child);
    }
    if (ok) {
        for (int i = 0; i < procs; i++) /* the parent keeps pipes[0][0] and pipes[1][1] */
            for (int k = 0; k < 2; k++)
                if (!((i == 0 && k == 0) || (i == 1 % procs && k == 1)))
                    close(pipes[i][k]);
        double overhead = hop_overhead_us(ws_bytes, r.ws);
        char label[48];
        snprintf(label, sizeof label, "ctxsw %dp/%zuK", procs, ws_bytes / 1024);
        oslat_measure(e, "ctxsw", label, op_lap, &r, 0, procs, overhead, ring_extra);
        close(pipes[0][0]);
        close(pipes[1 % procs][1]);
    } else {
        e->r->failed = 1;
    }
    for (int i = 1; i < procs; i++)
        if (pids[i] > 0)
            waitpid(pids[i], NULL, 0); /* each exits when its input pipe closes */
    if (have)
        sched_setaffinity(0, sizeof saved, &saved);
    free(pids);
    free(r.ws);
    free(pipes);
}

/* ---- loopback networking ---------------------------------------------------------------------- */

static int loopback_socket(int type, struct sockaddr_in *addr)
{
    int s = socket(AF_INET, type, 0);
    if (s < 0)
        return -1;
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof *addr;
    if (bind(s, (struct sockaddr *)addr, sizeof *addr) || getsockname(s, (struct sockaddr *)addr, &len) ||
        (type == SOCK_STREAM && listen(s, 128))) {
        close(s);
        return -1;
    }
    return s;
}

static void nodelay(int s)
{
    int one = 1;
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void tcp_echo_server(void *arg)
{
    int ls = *(int *)arg;
    int c = accept(ls, NULL, NULL);
    if (c < 0)
        return;
    nodelay(c);
    duplex d = {c, c};
    echo(&d);
}

static int tcp_client(const struct sockaddr_in *addr)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        return -1;
    if (connect(s, (const struct sockaddr *)addr, sizeof *addr)) {
        close(s);
        return -1;
    }
    nodelay(s);
    return s;
}

void oslat_tcp(oslat_env *e)
{
    struct sockaddr_in addr;
    int ls = loopback_socket(SOCK_STREAM, &addr);
    if (ls < 0) {
        e->r->failed = 1;
        return;
    }
    int pid = oslat_spawn(tcp_echo_server, &ls);
    close(ls);
    int s = tcp_client(&addr);
    if (s < 0) {
        e->r->failed = 1;
    } else {
        duplex me = {s, s};
        oslat_measure(e, "tcp", "TCP round trip", op_round_trip, &me, 0, 1, NAN, NULL);
        close(s);
    }
    oslat_reap(pid);
}

static void udp_echo_server(void *arg)
{
    int s = *(int *)arg;
    unsigned char c;
    struct sockaddr_in from;
    for (;;) {
        socklen_t len = sizeof from;
        if (recvfrom(s, &c, 1, 0, (struct sockaddr *)&from, &len) != 1)
            break;
        if (sendto(s, &c, 1, 0, (struct sockaddr *)&from, len) != 1)
            break;
    }
}

void oslat_udp(oslat_env *e)
{
    struct sockaddr_in addr;
    int ss = loopback_socket(SOCK_DGRAM, &addr);
    if (ss < 0) {
        e->r->failed = 1;
        return;
    }
    int pid = oslat_spawn(udp_echo_server, &ss);
    close(ss);
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct timeval tv = {1, 0}; /* a lost datagram is a failed test, not a hang */
    if (s < 0 || setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) ||
        connect(s, (struct sockaddr *)&addr, sizeof addr)) {
        e->r->failed = 1;
    } else {
        duplex me = {s, s};
        oslat_measure(e, "udp", "UDP round trip", op_round_trip, &me, 0, 1, NAN, NULL);
    }
    if (s >= 0)
        close(s);
    oslat_reap(pid);
}

static void accept_server(void *arg)
{
    int ls = *(int *)arg;
    for (;;) {
        int c = accept(ls, NULL, NULL);
        if (c < 0)
            break;
        close(c);
    }
}

static int op_connect(void *ctx, size_t n)
{
    const struct sockaddr_in *addr = ctx;
    for (size_t i = 0; i < n; i++) {
        int s = tcp_client(addr);
        if (s < 0)
            return 1;
        /* reset instead of TIME_WAIT, so thousands of connections do not exhaust the ephemeral ports */
        struct linger lg = {1, 0};
        setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(s);
    }
    return 0;
}

void oslat_tcp_connect(oslat_env *e)
{
    struct sockaddr_in addr;
    int ls = loopback_socket(SOCK_STREAM, &addr);
    if (ls < 0) {
        e->r->failed = 1;
        return;
    }
    int pid = oslat_spawn(accept_server, &ls);
    close(ls);
    oslat_measure(e, "tcp-connect", "TCP connect", op_connect, &addr, 0, 1, NAN, NULL);
    oslat_reap(pid);
}

#define BW_CHUNK (64 * 1024)
#define BW_OP (1 << 20) /* bytes per operation */

static unsigned char pattern(size_t i) { return (unsigned char)(i % 251); }

static void bw_server(void *arg)
{
    int ls = *(int *)arg;
    int c = accept(ls, NULL, NULL);
    if (c < 0)
        return;
    static unsigned char buf[BW_CHUNK];
    for (size_t i = 0; i < BW_CHUNK; i++)
        buf[i] = pattern(i);
    uint64_t want;
    while (read(c, &want, sizeof want) == (ssize_t)sizeof want) {
        for (uint64_t sent = 0; sent < want;) {
            size_t k = want - sent < BW_CHUNK ? (size_t)(want - sent) : BW_CHUNK;
            ssize_t w = write(c, buf, k);
            if (w <= 0)
                return;
            sent += (uint64_t)w;
        }
    }
}

typedef struct {
    int s;
    unsigned char *buf;
} bw_ctx;

/* One operation: ask for 1 MiB and receive it all; the bytes must follow the pattern. */
static int op_bw(void *ctx, size_t n)
{
    bw_ctx *b = ctx;
    for (size_t i = 0; i < n; i++) {
        uint64_t want = BW_OP;
        if (write(b->s, &want, sizeof want) != (ssize_t)sizeof want)
            return 1;
        size_t got = 0;
        while (got < BW_OP) {
            ssize_t r = read(b->s, b->buf, BW_CHUNK);
            if (r <= 0)
                return 1;
            /* chunks are sent whole from offset 0 of the pattern; check the first and last byte received */
            size_t off = got % BW_CHUNK;
            if (b->buf[0] != pattern(off) || b->buf[r - 1] != pattern((off + (size_t)r - 1) % BW_CHUNK))
                return 1;
            got += (size_t)r;
        }
    }
    return 0;
}

void oslat_tcp_bw(oslat_env *e)
{
    struct sockaddr_in addr;
    int ls = loopback_socket(SOCK_STREAM, &addr);
    if (ls < 0) {
        e->r->failed = 1;
        return;
    }
    int pid = oslat_spawn(bw_server, &ls);
    close(ls);
    bw_ctx b = {tcp_client(&addr), malloc(BW_CHUNK)};
    if (b.s < 0 || !b.buf)
        e->r->failed = 1;
    else
        oslat_measure(e, "tcp-bw", "TCP bandwidth", op_bw, &b, BW_OP, 1, NAN, NULL);
    if (b.s >= 0)
        close(b.s);
    free(b.buf);
    oslat_reap(pid);
}
