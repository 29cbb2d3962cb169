/* Ranks that share a host's CPUs.
 *
 * Whether the two ranks of a pair shared one CPU while they were measured.
 *
 * Two ranks on one kernel (a virtual cluster's network namespaces, containers,
 * or two ranks of one host) can be put on one CPU by the scheduler: a
 * synchronous stream or ping-pong wakes its partner, and the kernel tends to
 * wake it where the waker runs. The pair then measures the CPU they share,
 * not the network between them. The kernel is told apart by its boot_id
 * (the same in every namespace and container of one boot), the CPU by
 * sched_getcpu() before and after the measurement on both ranks.
 *
 * And waiting without taking a CPU from them (net_quiet_barrier). */
#include "net.h"

#include <sched.h>
#include <stdio.h>

/* FNV-1a of this kernel's boot_id; 0 when it cannot be read. */
static unsigned long long kernel_id(void)
{
    static int known;
    static unsigned long long id;
    if (known)
        return id;
    known = 1;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return id;
    char s[64];
    if (fgets(s, sizeof s, f) && s[0]) {
        id = 1469598103934665603ULL;
        for (const char *c = s; *c && *c != '\n'; c++)
            id = (id ^ (unsigned char)*c) * 1099511628211ULL;
    }
    fclose(f);
    return id;
}

int net_cpu_now(void) { return sched_getcpu(); }

int net_pair_shared_cpu(MPI_Comm pc, int cpu_before)
{
    const int after = sched_getcpu();
    const unsigned long long k = kernel_id();
    /* cpu -1: this rank moved, or its CPU or kernel is unknown */
    long long mine[2] = {(long long)k, k && cpu_before >= 0 && cpu_before == after ? after : -1}, theirs[2];
    int me;
    MPI_Comm_rank(pc, &me);
    MPI_Sendrecv(mine, 2, MPI_LONG_LONG, 1 - me, 7301, theirs, 2, MPI_LONG_LONG, 1 - me, 7301, pc,
                 MPI_STATUS_IGNORE);
    return mine[0] != 0 && mine[0] == theirs[0] && mine[1] >= 0 && mine[1] == theirs[1];
}

void net_quiet_barrier(MPI_Comm comm, int idle)
{
    /* Every rank posts the non-blocking form (it does not match a blocking
     * MPI_Barrier). A rank that only waits sleeps between tests: MPI's
     * blocking wait polls (yielding at best), and on a shared host that takes
     * CPU time from the pairs being measured. */
    MPI_Request rq;
    MPI_Ibarrier(comm, &rq);
    if (!idle) {
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        return;
    }
    /* Naps up to 1 ms (20 ms): a short wait ends soon after the others arrive, and a long one
     * wakes the CPU seldom (each wake-up can preempt a rank being measured: at a steady 200 us,
     * 2 MB transfers on shared cores took 10 % longer). */
    net_nap_wait(1, &rq, idle == NET_IDLE_LONG ? 20000000 : 1000000);
}
