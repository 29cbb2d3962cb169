#include "rmx_threads.h"
#include "rmx_timer.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

/* The start line: workers count themselves in, then spin until the caller
 * raises `go`. A sleeping barrier would hand the start to the scheduler: the
 * waiters wake one by one (on a virtual machine each wake-up of a halted vCPU
 * is an exit to the hypervisor), and with short timed blocks that skew, not the
 * kernel, sets the all-core rate. Spinning threads already hold their CPUs. */
typedef struct {
    int arrived; /* workers pinned and waiting */
    int go;      /* raised once, when all have arrived */
    double release;
} start_line;

typedef struct {
    rmx_thread_fn fn;
    void *ctx;
    int tid, nthreads, cpu, rc;
    start_line *line;
    double end;
} worker;

int rmx_cpus_allowed(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    int n = CPU_COUNT(&set);
    return n > 0 ? n : 1;
}

/* A CPU's physical core as (package << 20 | core id), or -1 when sysfs does not say. */
static long physical_core(int cpu)
{
    long v[2];
    const char *what[2] = {"physical_package_id", "core_id"};
    for (int k = 0; k < 2; k++) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/%s", cpu, what[k]);
        FILE *f = fopen(path, "r");
        if (!f)
            return -1;
        int ok = fscanf(f, "%ld", &v[k]) == 1;
        fclose(f);
        if (!ok || v[k] < 0)
            return -1;
    }
    return v[0] << 20 | v[1];
}

/* The i-th CPU of our affinity mask (so pinning respects taskset/cgroups and MPI
 * binding), counting one hardware thread of every physical core before any
 * core's second one: with SMT, CPUs n and n+1 can be siblings, and two threads
 * on one core share its FMA units, halving a per-core peak. */
static int nth_allowed_cpu(int i)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    int n = CPU_COUNT(&set);
    if (n == 0)
        return -1;
    i %= n;
    int cpus[CPU_SETSIZE], m = 0;
    long cores[CPU_SETSIZE];
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set)) {
            cores[m] = physical_core(c);
            cpus[m++] = c;
        }
    /* Round r takes every CPU that is the r-th allowed one of its core. */
    for (int round = 0; round < m; round++)
        for (int a = 0; a < m; a++) {
            int rank = 0;
            for (int b = 0; b < a; b++)
                rank += cores[a] >= 0 && cores[b] == cores[a];
            if (rank == round && i-- == 0)
                return cpus[a];
        }
    return -1;
}

/* Where this process's threads start in that order: RMAX_CPU_OFFSET, set by a survey whose nodes
 * share one machine (a virtual cluster's) to each node's rank; else 0. Without it every node's
 * first thread is pinned to the first CPU, and all their one-thread measurements queue there. */
static int cpu_offset(void)
{
    const char *v = getenv("RMAX_CPU_OFFSET");
    char *end;
    long k = v ? strtol(v, &end, 10) : 0;
    return v && *v && *end == '\0' && k >= 0 && k < CPU_SETSIZE ? (int)k : 0;
}

static void pin(const worker *w)
{
    if (w->cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(w->cpu, &one);
        pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    }
}

/* Spin, yielding now and then so that a worker sharing its CPU with a
 * not-yet-started one (more threads than CPUs) cannot stall the start. */
static void spin_until(const int *flag, int value)
{
    for (unsigned i = 1; __atomic_load_n(flag, __ATOMIC_ACQUIRE) < value; i++) {
        rmx_cpu_relax();
        if (i % 4096 == 0)
            sched_yield();
    }
}

static void *run(void *arg)
{
    worker *w = arg;
    pin(w);
    __atomic_add_fetch(&w->line->arrived, 1, __ATOMIC_ACQ_REL);
    spin_until(&w->line->go, 1);
    w->rc = w->fn(w->ctx, w->tid, w->nthreads);
    w->end = rmx_now();
    return NULL;
}

double rmx_run_threads(rmx_thread_fn fn, void *ctx, int nthreads)
{
    if (nthreads < 1)
        return -1.0;
    worker *w = calloc((size_t)nthreads, sizeof *w);
    pthread_t *t = calloc((size_t)nthreads, sizeof *t);
    start_line line = {0, 0, 0.0};
    if (!w || !t) {
        free(w);
        free(t);
        return -1.0;
    }
    int started = 0, offset = cpu_offset();
    for (int i = 0; i < nthreads; i++) {
        w[i] = (worker){fn, ctx, i, nthreads, nth_allowed_cpu(offset + i), 0, &line, 0.0};
        if (i == 0)
            continue; /* thread 0 is the caller itself */
        if (pthread_create(&t[i], NULL, run, &w[i]) != 0)
            break;
        started++;
    }
    cpu_set_t saved;
    int have_saved = sched_getaffinity(0, sizeof saved, &saved) == 0;
    pin(&w[0]);
    spin_until(&line.arrived, started);
    /* The clock starts at the release: every worker is spinning on its CPU. */
    line.release = rmx_now();
    __atomic_store_n(&line.go, 1, __ATOMIC_RELEASE);
    int rc = started == nthreads - 1 ? fn(ctx, 0, nthreads) : -1; /* a missing thread: release the others, fail */
    w[0].end = rmx_now();
    if (have_saved)
        sched_setaffinity(0, sizeof saved, &saved);
    for (int i = 1; i <= started; i++)
        pthread_join(t[i], NULL);
    double last = w[0].end;
    for (int i = 0; i < nthreads; i++) {
        if (w[i].end > last)
            last = w[i].end;
        rc |= w[i].rc;
    }
    free(w);
    free(t);
    return rc ? -1.0 : last - line.release;
}
