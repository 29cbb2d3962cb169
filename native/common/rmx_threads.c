#include "rmx_threads.h"
#include "rmx_timer.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    rmx_thread_fn fn;
    void *ctx;
    int tid, nthreads, cpu, rc;
    pthread_barrier_t *barrier;
    double start, end;
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

static void *run(void *arg)
{
    worker *w = arg;
    if (w->cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(w->cpu, &one);
        pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    }
    pthread_barrier_wait(w->barrier);
    w->start = rmx_now();
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
    pthread_barrier_t barrier;
    if (!w || !t || pthread_barrier_init(&barrier, NULL, (unsigned)nthreads) != 0) {
        free(w);
        free(t);
        return -1.0;
    }
    int started = 0, failed = 0;
    for (int i = 0; i < nthreads; i++) {
        w[i] = (worker){fn, ctx, i, nthreads, nth_allowed_cpu(i), 0, &barrier, 0.0, 0.0};
        if (i == 0)
            continue; /* thread 0 is the caller itself */
        if (pthread_create(&t[i], NULL, run, &w[i]) != 0) {
            failed = 1;
            break;
        }
        started++;
    }
    if (failed) {
        /* The barrier can never complete; the started threads would wait forever. */
        abort();
    }
    cpu_set_t saved;
    int have_saved = sched_getaffinity(0, sizeof saved, &saved) == 0;
    run(&w[0]);
    if (have_saved)
        sched_setaffinity(0, sizeof saved, &saved);
    for (int i = 1; i <= started; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    double first = w[0].start, last = w[0].end;
    int rc = 0;
    for (int i = 0; i < nthreads; i++) {
        if (w[i].start < first)
            first = w[i].start;
        if (w[i].end > last)
            last = w[i].end;
        rc |= w[i].rc;
    }
    free(w);
    free(t);
    return rc ? -1.0 : last - first;
}
