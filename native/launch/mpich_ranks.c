/* librmax-mpich.so: preloaded by rmax into MPICH's ranks (src/rmax/launch/mpiexec.py), for two
 * things MPICH 4.0's ch4:ucx (Debian 12's) does not do by itself. Measured on a 2-core guest.
 *
 * Yield while waiting (RMAX_YIELD_AFTER=N, set where ranks share cores: more ranks than CPUs,
 * every virtual cluster). ch4 polls its progress engine without ever yielding (libmpich.so.12
 * calls no sched_yield; MPIR_CVAR_POLLS_BEFORE_YIELD is read by ch3 only), so four ranks on two
 * cores each spin out their scheduler slice before a message moves: an HPL.dat of six 2 x 2
 * tests took 31.7 s, 4.4 s with this. Every pass of ch4's progress loop calls UCX's
 * ucp_worker_progress, which returns how many events it handled: after N passes in a row with
 * none, the rank calls sched_yield(), as Open MPI's mpi_yield_when_idle has it do.
 *
 * A finalize that cannot hang (RMAX_FINALIZE_LIMIT seconds, default 10; 0: off). Across a virtual
 * cluster's namespaces (UCX over TCP) MPI_Finalize hung in 3 of 8 runs of rmax-net coll on four
 * nodes, every rank inside UCX's disconnect of its endpoints, with every result already written.
 * MPI_Finalize is wrapped through MPI's profiling interface (PMPI_Finalize): when it has not
 * returned in time, the rank flushes its output and exits 0, which MPI allows once finalize has
 * begun on every rank (the wrapper's barrier before it says all of them got there). */
#include <dlfcn.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef unsigned (*progress_fn)(void *worker);

static progress_fn real_progress;
static unsigned idle_limit;   /* 0: never yield */
static __thread unsigned idle;

static void resolve(void)
{
    real_progress = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
    const char *e = getenv("RMAX_YIELD_AFTER");
    idle_limit = e && atoi(e) > 0 ? (unsigned)atoi(e) : 0;
}

unsigned ucp_worker_progress(void *worker);

unsigned ucp_worker_progress(void *worker)
{
    if (!real_progress)
        resolve();
    if (!real_progress)
        return 0;   /* not linked with UCX: nothing to progress */
    unsigned events = real_progress(worker);
    if (events || !idle_limit)
        idle = 0;
    else if (++idle >= idle_limit) {
        idle = 0;
        sched_yield();
    }
    return events;
}

static void *finalize_deadline(void *arg)
{
    struct timespec t = {(time_t)(long)arg, 0};
    while (nanosleep(&t, &t) != 0)
        ;
    fflush(NULL);
    _exit(0);
    return NULL;
}

int MPI_Finalize(void)
{
    const char *e = getenv("RMAX_FINALIZE_LIMIT");
    long limit = e ? atol(e) : 10;
    if (limit > 0) {
        PMPI_Barrier(MPI_COMM_WORLD);   /* every rank is here: its results are out */
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_create(&t, &a, finalize_deadline, (void *)limit);
        pthread_attr_destroy(&a);
    }
    return PMPI_Finalize();
}
