/* librmax-bindaddr.so: preloaded into the MPI launcher and every process it
 * starts, so that nothing of an rmax job listens on a wildcard address.
 *
 * Why a preload and not launcher options: Open MPI 4.1's out-of-band listener
 * and its TCP BTL bind INADDR_ANY whatever oob_tcp_if_include and
 * btl_tcp_if_include say (open-mpi/ompi issues 12668 and 14441; fixed only in
 * PRRTE for Open MPI 5), and MPICH's Hydra binds its control port to 0.0.0.0
 * whatever -iface says. Measured with `ss -ltnp` on Debian 12.
 *
 * RMAX_BIND_NET=A.B.C.D/LEN[,...] (commas or spaces) names the networks the job may use: a bind()
 * to 0.0.0.0 becomes a bind() to this host's address inside them (the
 * loopback address for 127.0.0.0/8), and a bind() to [::] becomes [::1]. A
 * socket that listen()s without a bind() (the kernel would bind it to the
 * wildcard) is bound the same way first. With no address of this host in the
 * network the job gets loopback: closed rather than open. Explicit
 * addresses are left alone. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);
typedef int (*listen_fn)(int, int);

/* This host's first IPv4 address inside net/len, or 0 (network byte order). */
static in_addr_t address_in(struct ifaddrs *ifs, struct in_addr net, long len)
{
    uint32_t mask = len == 0 ? 0 : htonl(~(uint32_t)0 << (32 - len));
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
            continue;
        in_addr_t a = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        if ((a & mask) == (net.s_addr & mask))
            return a;
    }
    return 0;
}

/* The address for a wildcard bind: this host's first address inside one of the
 * comma-separated networks of RMAX_BIND_NET (the hosts' subnet, then each host's
 * own address as ADDR/32 for routed networks), else the loopback address. */
static in_addr_t chosen_address(void)
{
    in_addr_t loopback = htonl(INADDR_LOOPBACK);
    const char *spec = getenv("RMAX_BIND_NET");
    if (!spec)
        return loopback;
    char text[1024];
    strncpy(text, spec, sizeof text - 1);
    text[sizeof text - 1] = '\0';
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0)
        return loopback;
    in_addr_t found = 0;
    char *save = NULL;
    for (char *item = strtok_r(text, ", ", &save); item && !found; item = strtok_r(NULL, ", ", &save)) {
        char *slash = strchr(item, '/');
        long len = 32;
        if (slash) {
            *slash = '\0';
            char *end;
            len = strtol(slash + 1, &end, 10);
            if (*end || len < 0 || len > 32)
                continue;
        }
        struct in_addr net;
        if (inet_pton(AF_INET, item, &net) == 1)
            found = address_in(ifs, net, len);
    }
    freeifaddrs(ifs);
    return found ? found : loopback;
}

static bind_fn real_bind(void)
{
    static bind_fn fn;
    if (!fn)
        fn = (bind_fn)dlsym(RTLD_NEXT, "bind");
    return fn;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    bind_fn next = real_bind();
    if (!next) {
        errno = ENOSYS;
        return -1;
    }
    if (addr && addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in) &&
        ((const struct sockaddr_in *)addr)->sin_addr.s_addr == htonl(INADDR_ANY)) {
        struct sockaddr_in a = *(const struct sockaddr_in *)addr;
        a.sin_addr.s_addr = chosen_address();
        return next(fd, (struct sockaddr *)&a, sizeof a);
    }
    if (addr && addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6) &&
        IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)addr)->sin6_addr)) {
        struct sockaddr_in6 a = *(const struct sockaddr_in6 *)addr;
        a.sin6_addr = in6addr_loopback;
        return next(fd, (struct sockaddr *)&a, sizeof a);
    }
    return next(fd, addr, len);
}

int listen(int fd, int backlog)
{
    static listen_fn next;
    if (!next)
        next = (listen_fn)dlsym(RTLD_NEXT, "listen");
    if (!next) {
        errno = ENOSYS;
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    memset(&ss, 0, sizeof ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
        /* Port 0: not bound yet, so the kernel would bind it to the wildcard. */
        if (ss.ss_family == AF_INET && ((struct sockaddr_in *)&ss)->sin_port == 0)
            bind(fd, (struct sockaddr *)&ss, sizeof(struct sockaddr_in));
        else if (ss.ss_family == AF_INET6 && ((struct sockaddr_in6 *)&ss)->sin6_port == 0)
            bind(fd, (struct sockaddr *)&ss, sizeof(struct sockaddr_in6));
    }
    return next(fd, backlog);
}
