/* rmax-node: single-node kernels, one sub-command each. */
#include "node_commands.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"peakflops", cmd_peakflops, "measured FMA-throughput peak, one core and all cores"},
    {"cpurate", cmd_cpurate, "Brown's floating-point rate vs vector length"},
    {"dgemm", cmd_dgemm, "BLAS DGEMM rate vs size and vs inner dimension k"},
    {"stream", cmd_stream, "STREAM Copy, Scale, Add, Triad bandwidth"},
    {"memlat", cmd_memlat, "memory load latency vs working-set size"},
    {"memcopy", cmd_memcopy, "memcpy bandwidth vs buffer size"},
    {"oslat", cmd_oslat, "operating-system latencies, lmbench style"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: rmax-node COMMAND [options]   (COMMAND --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc, argv);
    fprintf(stderr, "rmax-node: error: unknown command '%s' (see rmax-node --help)\n", argv[1]);
    return 2;
}
