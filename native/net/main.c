/* rmax-net: network and MPI microbenchmarks, one sub-command per cmd_*.c file, registered by its
 * RMX_SUBCMD line.
 * Options are parsed by each command before MPI starts, so bad input ends
 * every rank with the same one-line error and no MPI noise. */
#include "net.h"
#include "rmx_lifeline.h"
#include "rmx_subcmd.h"

int main(int argc, char **argv)
{
    rmx_lifeline();
    return rmx_subcmd_dispatch(PROG, argc, argv);
}
