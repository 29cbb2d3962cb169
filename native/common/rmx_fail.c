#include "rmx_fail.h"
#include "rmx_step.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

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

void *rmx_realloc_or_exit(void *p, size_t bytes, const char *what)
{
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q) {
        rmx_fail_line(program_invocation_short_name, "out of memory for %s (%zu bytes)", what, bytes);
        exit(1);
    }
    return q;
}
