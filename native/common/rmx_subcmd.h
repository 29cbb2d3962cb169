/* Executables with sub-commands (rmax-node, rmax-net): a table of names, entry
 * points and one-line summaries, and the dispatch that every such main() does. */
#ifndef RMX_SUBCMD_H
#define RMX_SUBCMD_H

#include <stddef.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv); /* gets the whole argv; its options start at argv[2] */
    const char *summary;
} rmx_subcmd;

/* Runs the sub-command named by argv[1]; usage on stdout for --help (exit 0), on
 * stderr with status 2 when none or an unknown one is named. */
int rmx_subcmd_dispatch(const char *prog, const rmx_subcmd *table, size_t n, int argc, char **argv);

#endif
