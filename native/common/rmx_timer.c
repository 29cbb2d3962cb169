#include "rmx_timer.h"

#include <time.h>

double rmx_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double rmx_timer_resolution(void)
{
    struct timespec ts;
    clock_getres(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void rmx_spin(double seconds)
{
    volatile double sink = 0.0;
    double end = rmx_now() + seconds;
    while (rmx_now() < end)
        sink += 1.0;
    (void)sink;
}
