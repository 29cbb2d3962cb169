#include "rmx_subcmd.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f, const char *prog, const rmx_subcmd *table, size_t n)
{
    fprintf(f, "usage: %s COMMAND [options]   (COMMAND --help for its options)\n\ncommands:\n", prog);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "  %-12s %s\n", table[i].name, table[i].summary);
}

int rmx_subcmd_dispatch(const char *prog, const rmx_subcmd *table, size_t n, int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr, prog, table, n);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout, prog, table, n);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(argv[1], table[i].name) == 0)
            return table[i].run(argc, argv);
    fprintf(stderr, "%s: error: unknown command '%s' (see %s --help)\n", prog, argv[1], prog);
    return 2;
}
