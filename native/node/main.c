/* rmax-node: single-node kernels, one sub-command each. */
#include "node_commands.h"
#include "rmx_lifeline.h"
#include "rmx_subcmd.h"

static const rmx_subcmd commands[] = {
    {"peakflops", cmd_peakflops, "measured FMA-throughput peak, one core and all cores"},
    {"cpurate", cmd_cpurate, "Brown's floating-point rate vs vector length"},
    {"dgemm", cmd_dgemm, "BLAS DGEMM rate vs size and vs inner dimension k"},
    {"stream", cmd_stream, "STREAM Copy, Scale, Add, Triad bandwidth"},
    {"memlat", cmd_memlat, "memory load latency vs working-set size"},
    {"memcopy", cmd_memcopy, "memcpy bandwidth vs buffer size"},
    {"oslat", cmd_oslat, "operating-system latencies, lmbench style"},
};

int main(int argc, char **argv)
{
    rmx_lifeline();
    return rmx_subcmd_dispatch("rmax-node", commands, sizeof commands / sizeof commands[0], argc, argv);
}
