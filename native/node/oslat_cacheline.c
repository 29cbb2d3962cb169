/* oslat's cache-line round trip: this process and a peer pinned to the second
 * CPU hand one 64-bit counter back and forth in a shared page, each waiting
 * (spinning) for the other's increment. No system call is involved, so it is
 * the floor under every 2-CPU round trip: the time for a cache line to move
 * between the two cores and back. It also tells where the two CPUs are: cores
 * sharing a cache answer in tens of nanoseconds, cores that do not (another
 * chiplet, another socket) several times slower, and on a virtual machine the
 * figure can change while it runs, as the host moves the vCPUs. */
#include "oslat.h"

#include "rmx_threads.h"
#include "rmx_timer.h"

#include <math.h>
#include <stdint.h>
#include <sys/mman.h>

typedef struct {
    volatile int64_t *line; /* odd: this process's turn given to the peer; even: the peer's answer */
    int64_t next;           /* the value this process writes next */
} handoff;

/* The peer: answer every odd value v with v + 1, until killed. */
static void answer(void *arg)
{
    volatile int64_t *line = arg;
    for (int64_t seen = 0;;) {
        int64_t v = __atomic_load_n(line, __ATOMIC_ACQUIRE);
        if (v != seen && (v & 1)) {
            __atomic_store_n(line, v + 1, __ATOMIC_RELEASE);
            seen = v + 1;
        } else {
            rmx_cpu_relax();
        }
    }
}

/* Waits for `want`; gives up (1) after a second without it: a peer that died or never ran
 * must fail the measurement, not hang it. */
static int await(volatile int64_t *line, int64_t want)
{
    double since = 0.0;
    for (unsigned spins = 1; __atomic_load_n(line, __ATOMIC_ACQUIRE) != want; spins++) {
        rmx_cpu_relax();
        if (spins % (1u << 20) == 0) {
            double t = rmx_now();
            if (since == 0.0)
                since = t;
            else if (t - since > 1.0)
                return 1;
        }
    }
    return 0;
}

static int op_handoff(void *ctx, size_t n)
{
    handoff *h = ctx;
    for (size_t i = 0; i < n; i++) {
        __atomic_store_n(h->line, h->next, __ATOMIC_RELEASE);
        if (await(h->line, h->next + 1)) /* the answer must be exactly the next value */
            return 1;
        h->next += 2;
    }
    return 0;
}

void oslat_cacheline(oslat_env *e)
{
    const char *label = "cache-line round trip (2 CPUs)";
    if (e->cpu_b < 0) {
        oslat_not_measured(e, "cacheline", label, "only one CPU is allowed to this process (sched_getaffinity)");
        return;
    }
    void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
        e->r->failed = 1;
        return;
    }
    handoff h = {page, 1};
    e->placed[1] = e->cpu_b;
    int pid = oslat_spawn(e->cpu_b, answer, page);
    oslat_measure(e, "cacheline", label, op_handoff, &h, 0, 1, NAN, 0, NULL);
    oslat_reap(pid);
    e->placed[1] = -1;
    munmap(page, 4096);
}
