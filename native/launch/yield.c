/* librmax-yield.so: preloaded into MPICH's ranks when they share cores (more ranks than CPUs,
 * every virtual cluster), so that a rank waiting on its peers gives up the CPU they need.
 *
 * Why a preload: MPICH 4.0's ch4 device polls its progress engine without ever yielding (Debian's
 * libmpich.so.12 calls no sched_yield; MPIR_CVAR_POLLS_BEFORE_YIELD is read by ch3 only), so four
 * ranks on two cores each spin out their scheduler slice before a message moves (HPL's 2x2 tests:
 * minutes instead of seconds). Open MPI has mpi_yield_when_idle for this. Every pass of ch4's
 * progress loop calls UCX's ucp_worker_progress, which returns how many events it handled: after
 * RMAX_YIELD_AFTER (default 10) passes in a row with none, this wrapper calls sched_yield(). */
#include <dlfcn.h>
#include <sched.h>
#include <stdlib.h>

typedef unsigned (*progress_fn)(void *worker);

static progress_fn real_progress;
static unsigned idle_limit = 10;
static __thread unsigned idle;

static void resolve(void)
{
    real_progress = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
    const char *e = getenv("RMAX_YIELD_AFTER");
    if (e && atoi(e) > 0)
        idle_limit = (unsigned)atoi(e);
}

unsigned ucp_worker_progress(void *worker);

unsigned ucp_worker_progress(void *worker)
{
    if (!real_progress)
        resolve();
    if (!real_progress)
        return 0;   /* not linked with UCX: nothing to progress */
    unsigned events = real_progress(worker);
    if (events)
        idle = 0;
    else if (++idle >= idle_limit) {
        idle = 0;
        sched_yield();
    }
    return events;
}
