/* Failures of one process of a multi-process kernel: one line on stderr,
 * "PROG: error: rank R on host H: MESSAGE", that says what failed, where and
 * why, written before the caller ends the job (MPI_Abort), so that a job's
 * log names the failing rank even when the launcher reports only an abort.
 * The rank is the launcher's (rmx_step_rank): known without MPI, and safe to
 * ask from any thread. */
#ifndef RMX_FAIL_H
#define RMX_FAIL_H

#include <stdarg.h>
#include <stddef.h>

void rmx_fail_line(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rmx_vfail_line(const char *prog, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* realloc(p, bytes) that never returns NULL: out of memory is one such line, naming `what`, and
 * exit status 1, rather than a crash with no word of why. */
void *rmx_realloc_or_exit(void *p, size_t bytes, const char *what);

#endif
