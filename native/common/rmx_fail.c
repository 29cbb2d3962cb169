#include "rmx_fail.h"
#include "rmx_step.h"

#include <stdio.h>

void rmx_vfail_line(const char *prog, const char *fmt, va_list ap)
{
    /* One buffer and one write: lines of ranks failing together do not interleave. */
    char msg[512], line[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    snprintf(line, sizeof line, "%s: error: rank %ld on host %s: %s\n", prog, rmx_step_rank(), rmx_step_host(), msg);
    fputs(line, stderr);
    fflush(stderr);
}

void rmx_fail_line(const char *prog, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rmx_vfail_line(prog, fmt, ap);
    va_end(ap);
}
