/* An option's comma-separated list of names from a fixed set ("put,get", "single,star"), checked
 * before anything starts: an unknown name ends the program with one line and exit status 2. */
#ifndef RMX_NAMES_H
#define RMX_NAMES_H

#include <stddef.h>

/* Each name of `list` must be one of names[0..n-1]: chosen[k] (when chosen is not NULL) is set to 1
 * for each given; any other name dies with "PROG: error: --OPT: unknown WHAT 'NAME'". Returns how
 * many names the list gives (0: an empty list; the caller says whether that will do). */
size_t rmx_names(const char *prog, const char *opt, const char *what, const char *list, const char *const *names,
                 size_t n, int *chosen);

#endif
