#include "rmx_subcmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds of the entries' section, defined by the linker; weak, so that an executable with no
 * entry links and says so instead of failing to link. */
extern const rmx_subcmd *const __start_rmx_subcmds[] __attribute__((weak));
extern const rmx_subcmd *const __stop_rmx_subcmds[] __attribute__((weak));

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const rmx_subcmd *const *)a)->name, (*(const rmx_subcmd *const *)b)->name);
}

static void usage(FILE *f, const char *prog, const rmx_subcmd **cmds, size_t n)
{
    fprintf(f, "usage: %s COMMAND [options]   (COMMAND --help for its options)\n\ncommands:\n", prog);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "  %-12s %s\n", cmds[i]->name, cmds[i]->summary);
}

int rmx_subcmd_dispatch(const char *prog, int argc, char **argv)
{
    size_t n = __start_rmx_subcmds ? (size_t)(__stop_rmx_subcmds - __start_rmx_subcmds) : 0;
    if (n == 0) {
        fprintf(stderr, "%s: error: no sub-command was linked in (RMX_SUBCMD)\n", prog);
        return 1;
    }
    const rmx_subcmd **cmds = malloc(n * sizeof *cmds);
    if (!cmds) {
        fprintf(stderr, "%s: error: out of memory for %zu sub-commands\n", prog, n);
        return 1;
    }
    memcpy(cmds, __start_rmx_subcmds, n * sizeof *cmds);
    qsort(cmds, n, sizeof *cmds, by_name);
    for (size_t i = 1; i < n; i++)
        if (strcmp(cmds[i - 1]->name, cmds[i]->name) == 0) {
            fprintf(stderr, "%s: error: two sub-commands are named '%s' (two RMX_SUBCMD lines)\n", prog,
                    cmds[i]->name);
            free(cmds);
            return 1;
        }
    int help = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
    if (argc < 2 || help) {
        usage(help ? stdout : stderr, prog, cmds, n);
        free(cmds);
        return help ? 0 : 2;
    }
    const rmx_subcmd *cmd = NULL;
    for (size_t i = 0; i < n && !cmd; i++)
        if (strcmp(argv[1], cmds[i]->name) == 0)
            cmd = cmds[i];
    free(cmds);
    if (cmd)
        return cmd->run(argc, argv);
    fprintf(stderr, "%s: error: unknown command '%s' (see %s --help)\n", prog, argv[1], prog);
    return 2;
}
