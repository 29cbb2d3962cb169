/* oslat tests between processes: pipe and AF_UNIX round trips, context
 * switches in a ring of processes (lmbench's lat_ctx), and loopback UDP/TCP
 * round trips, TCP connect and TCP bandwidth. Peers are forked children that
 * echo or serve, pinned: round trips with the peer on a second CPU and on this
 * process's own, context switches all on this process's CPU; every reply is
 * checked. Network: 127.0.0.1 only. */
#include "oslat.h"

#include "rmx_threads.h"
#include "rmx_timer.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

/* A peer for a round trip: set up the pair, spawn the echoing peer pinned to `cpu`, give this
 * side's descriptors; 0 on success. `done` closes this side. */
typedef struct {
    int (*start)(int cpu, duplex *me, int *pid);
    void (*done)(duplex *me);
} peer;

static void close_duplex(duplex *me)
{
    close(me->rfd);
    if (me->wfd != me->rfd)
        close(me->wfd);
}

/* One round-trip measurement with this process on cpu_a and the peer on `cpu`. */
static void round_trip_at(oslat_env *e, const char *test, const char *label, const peer *p, int cpu)
{
    duplex me;
    int pid = -1;
    e->placed[1] = cpu;
    if (p->start(cpu, &me, &pid) != 0) {
        e->r->failed = 1;
    } else {
        oslat_measure(e, test, label, op_round_trip, &me, 0, 1, NAN, 0, NULL);
        p->done(&me);
    }
    oslat_reap(pid);
    e->placed[1] = -1;
}

/* A round trip both ways a pair of processes can sit: on two CPUs (each wakeup crosses
 * cores) and on one CPU (each wakeup is a context switch), as separate figures. */
static void round_trips(oslat_env *e, const char *test, const char *what, const peer *p)
{
    char label[64];
    snprintf(label, sizeof label, "%s (2 CPUs)", what);
    if (e->cpu_b >= 0)
        round_trip_at(e, test, label, p, e->cpu_b);
    else
        oslat_not_measured(e, test, label, "only one CPU is allowed to this process (sched_getaffinity)");
    snprintf(label, sizeof label, "%s (1 CPU)", what);
    round_trip_at(e, test, label, p, e->cpu_a);
}

static int pipe_start(int cpu, duplex *me, int *pid)
{
    int to_child[2], to_parent[2];
    if (pipe(to_child))
        return -1;
    if (pipe(to_parent)) {
        close(to_child[0]);
        close(to_child[1]);
        return -1;
    }
    duplex child = {to_child[0], to_parent[1]};
    *me = (duplex){to_parent[0], to_child[1]};
    *pid = oslat_spawn(cpu, echo, &child);
    close(to_child[0]);
    close(to_parent[1]);
    return 0;
}

void oslat_pipe(oslat_env *e)
{
    static const peer p = {pipe_start, close_duplex};
    round_trips(e, "pipe", "pipe round trip", &p);
}

static int unix_start(int cpu, duplex *me, int *pid)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
        return -1;
    duplex child = {sv[1], sv[1]};
    *me = (duplex){sv[0], sv[0]};
    *pid = oslat_spawn(cpu, echo, &child);
    close(sv[1]);
    return 0;
}

void oslat_unix(oslat_env *e)
{
    static const peer p = {unix_start, close_duplex};
    round_trips(e, "unix", "AF_UNIX round trip", &p);
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

static void ring_member(void *arg)
{
    ring *r = arg;
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

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* What a hop costs without a switch: one process writing and reading its own pipe and reading its working set.
 * The median of 9 repeats, and in *iqr_us their interquartile range: how finely subtracting it can resolve a
 * switch (a range would let one preempted repeat on a shared node make every figure unresolvable). */
static double hop_overhead_us(size_t ws_bytes, long *ws, double *iqr_us)
{
    enum { REPEATS = 9 };
    int p[2];
    *iqr_us = 0;
    if (pipe(p))
        return 0;
    double v[REPEATS];
    for (int k = 0; k < REPEATS; k++) {
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
    qsort(v, REPEATS, sizeof v[0], by_value);
    *iqr_us = v[3 * REPEATS / 4] - v[REPEATS / 4];
    return v[REPEATS / 2];
}

static void ring_extra(void *ctx, rmx_json *j)
{
    ring *r = ctx;
    double iqr;
    /* the hop again, after the ring was timed: how far it drifted meanwhile (a shared node's load
     * changes) bounds how finely the difference resolves a switch, as its spread does */
    rmx_json_num(j, "overhead_after_us", hop_overhead_us(r->ws_bytes, r->ws, &iqr));
    rmx_json_int(j, "procs", r->procs);
    rmx_json_int(j, "ws_bytes", (long long)r->ws_bytes);
    rmx_json_str(j, "cpu", "all processes on one CPU (lmbench's lat_ctx)");
}

void oslat_ctxsw(oslat_env *e, int procs, size_t ws_bytes)
{
    int(*pipes)[2] = calloc((size_t)procs, sizeof *pipes);
    ring r = {procs, ws_bytes, pipes, 0, calloc(ws_bytes / sizeof(long) + 1, sizeof(long))};
    int *pids = calloc((size_t)procs, sizeof *pids);
    int ok = pipes && r.ws && pids;
    for (int i = 0; ok && i < procs; i++)
        ok = pipe(pipes[i]) == 0;
    for (int i = 1; ok && i < procs; i++) {
        ring child = r;
        child.me = i;
        pids[i] = oslat_spawn(e->cpu_a, ring_member, &child); /* the whole ring on this process's CPU */
    }
    if (ok) {
        for (int i = 0; i < procs; i++) /* the parent keeps pipes[0][0] and pipes[1][1] */
            for (int k = 0; k < 2; k++)
                if (!((i == 0 && k == 0) || (i == 1 % procs && k == 1)))
                    close(pipes[i][k]);
        double iqr;
        double overhead = hop_overhead_us(ws_bytes, r.ws, &iqr);
        char label[48];
        snprintf(label, sizeof label, "ctxsw %dp/%zuK", procs, ws_bytes / 1024);
        oslat_measure(e, "ctxsw", label, op_lap, &r, 0, procs, overhead, iqr, ring_extra);
        close(pipes[0][0]);
        close(pipes[1 % procs][1]);
    } else {
        e->r->failed = 1;
    }
    for (int i = 1; i < procs; i++)
        if (pids[i] > 0)
            waitpid(pids[i], NULL, 0); /* each exits when its input pipe closes */
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

static int tcp_start(int cpu, duplex *me, int *pid)
{
    struct sockaddr_in addr;
    int ls = loopback_socket(SOCK_STREAM, &addr);
    if (ls < 0)
        return -1;
    *pid = oslat_spawn(cpu, tcp_echo_server, &ls);
    close(ls);
    int s = tcp_client(&addr);
    if (s < 0)
        return -1;
    *me = (duplex){s, s};
    return 0;
}

void oslat_tcp(oslat_env *e)
{
    static const peer p = {tcp_start, close_duplex};
    round_trips(e, "tcp", "TCP round trip", &p);
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

static int udp_start(int cpu, duplex *me, int *pid)
{
    struct sockaddr_in addr;
    int ss = loopback_socket(SOCK_DGRAM, &addr);
    if (ss < 0)
        return -1;
    *pid = oslat_spawn(cpu, udp_echo_server, &ss);
    close(ss);
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct timeval tv = {1, 0}; /* a lost datagram is a failed test, not a hang */
    if (s < 0 || setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) ||
        connect(s, (struct sockaddr *)&addr, sizeof addr)) {
        if (s >= 0)
            close(s);
        return -1;
    }
    *me = (duplex){s, s};
    return 0;
}

void oslat_udp(oslat_env *e)
{
    static const peer p = {udp_start, close_duplex};
    round_trips(e, "udp", "UDP round trip", &p);
}

/* The server of a one-figure test: on the second CPU where there is one (as the round trips' 2-CPU
 * figure), else on this process's. */
static int server_cpu(oslat_env *e)
{
    e->placed[1] = e->cpu_b >= 0 ? e->cpu_b : e->cpu_a;
    return e->placed[1];
}

/* Connections the client may be ahead of the server's accepts: well under the listen backlog
 * (128), since a full accept queue drops SYNs and a dropped SYN is retried after a second
 * (RFC 6298's initial RTO), which would make one connection in a batch cost a second. */
#define CONNECT_AHEAD 32

typedef struct {
    int ls;              /* the listening socket */
    int tok[2];          /* a byte from the server per CONNECT_AHEAD connections accepted */
    struct sockaddr_in addr;
    size_t made;         /* connections made by the client so far */
} connect_ctx;

static void accept_server(void *arg)
{
    connect_ctx *c = arg;
    close(c->tok[0]);
    for (size_t accepted = 1;; accepted++) {
        int s = accept(c->ls, NULL, NULL);
        if (s < 0)
            break;
        close(s);
        if (accepted % CONNECT_AHEAD == 0 && write(c->tok[1], "", 1) != 1)
            break;
    }
}

static int op_connect(void *ctx, size_t n)
{
    connect_ctx *c = ctx;
    for (size_t i = 0; i < n; i++) {
        int s = tcp_client(&c->addr);
        if (s < 0)
            return 1;
        /* reset instead of TIME_WAIT, so thousands of connections do not exhaust the ephemeral ports */
        struct linger lg = {1, 0};
        setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        close(s);
        char t;
        if (++c->made % CONNECT_AHEAD == 0 && read(c->tok[0], &t, 1) != 1)
            return 1; /* wait for the server to have accepted them */
    }
    return 0;
}

void oslat_tcp_connect(oslat_env *e)
{
    connect_ctx c = {0};
    c.ls = loopback_socket(SOCK_STREAM, &c.addr);
    if (c.ls < 0 || pipe(c.tok)) {
        if (c.ls >= 0)
            close(c.ls);
        e->r->failed = 1;
        return;
    }
    int pid = oslat_spawn(server_cpu(e), accept_server, &c);
    close(c.ls);
    close(c.tok[1]);
    oslat_measure(e, "tcp-connect", "TCP connect", op_connect, &c, 0, 1, NAN, 0, NULL);
    close(c.tok[0]);
    oslat_reap(pid);
    e->placed[1] = -1;
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
    int pid = oslat_spawn(server_cpu(e), bw_server, &ls);
    close(ls);
    bw_ctx b = {tcp_client(&addr), malloc(BW_CHUNK)};
    if (b.s < 0 || !b.buf)
        e->r->failed = 1;
    else
        oslat_measure(e, "tcp-bw", "TCP bandwidth", op_bw, &b, BW_OP, 1, NAN, 0, NULL);
    if (b.s >= 0)
        close(b.s);
    free(b.buf);
    oslat_reap(pid);
    e->placed[1] = -1;
}
