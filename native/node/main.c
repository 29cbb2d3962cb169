/* rmax-node: single-node kernels, one sub-command per file, each registered by its RMX_SUBCMD line. */
#include "rmx_lifeline.h"
#include "rmx_subcmd.h"

int main(int argc, char **argv)
{
    rmx_lifeline();
    return rmx_subcmd_dispatch("rmax-node", argc, argv);
}
