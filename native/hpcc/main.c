/* rmax-hpcc: HPC Challenge's RandomAccess, PTRANS and FFT (see hpcc.h). Options are parsed by
 * each command before MPI starts, so bad input ends every rank with the same one-line error. */
#include "hpcc.h"
#include "rmx_lifeline.h"
#include "rmx_subcmd.h"

static const rmx_subcmd commands[] = {
    {"gups", cmd_gups, "RandomAccess: random 64-bit table updates (GUP/s), single, star and MPI"},
    {"ptrans", cmd_ptrans, "PTRANS: parallel matrix transpose C = A^T + C (GB/s)"},
    {"fft", cmd_fft, "FFT: 1-D complex double transform through FFTW (GFLOPS), single, star and MPI"},
};

int main(int argc, char **argv)
{
    rmx_lifeline();
    return rmx_subcmd_dispatch(PROG, commands, sizeof commands / sizeof commands[0], argc, argv);
}
