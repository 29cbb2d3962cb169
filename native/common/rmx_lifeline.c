#include "rmx_lifeline.h"

#include "rmx_step.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* One heartbeat per second for up to 100 ranks, then slower, so the watchdog
 * reads about 100 lines a second whatever the job's size. */
static double heartbeat_period(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        long n = v ? strtol(v, NULL, 10) : 0;
        if (n > 100)
            return n / 100.0;
        if (n > 0)
            break;
    }
    return 1.0;
}

static void *heartbeat(void *arg)
{
    double period = *(double *)arg;
    struct timespec ts = {(time_t)period, (long)((period - (time_t)period) * 1e9)};
    for (;;) {
        nanosleep(&ts, NULL);
        fprintf(stderr, "rmax-alive: rank %ld on %s every %.2f s\n", rmx_step_rank(), rmx_step_host(), period);
        fflush(stderr);
    }
    return NULL;
}

static void announce_exit(void)
{
    fprintf(stderr, "rmax-exit: rank %ld on %s\n", rmx_step_rank(), rmx_step_host());
    fflush(stderr);
}

void rmx_lifeline(void)
{
    static double period;
    if (!rmx_steps_enabled())
        return;
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) == 0 && getppid() != parent)
        _exit(1); /* the parent died before the request took hold */
    rmx_step("start");
    atexit(announce_exit);
    period = heartbeat_period();
    /* The thread takes no signals: handlers (Ctrl-C, timers) stay on the kernel's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    if (pthread_create(&t, NULL, heartbeat, &period) == 0)
        pthread_detach(t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}
