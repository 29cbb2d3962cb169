#include "rmx_step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int rmx_steps_enabled(void)
{
    static int enabled = -1;
    if (enabled < 0) {
        const char *e = getenv("RMAX_STEPS");
        enabled = e && strcmp(e, "1") == 0;
    }
    return enabled;
}

long rmx_step_rank(void)
{
    /* Open MPI, MPICH's Hydra (PMI), any PMIx launcher, Slurm's srun: the first one set. */
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        char *end;
        if (v && *v) {
            long r = strtol(v, &end, 10);
            if (*end == '\0' && r >= 0)
                return r;
        }
    }
    return 0;
}

const char *rmx_step_host(void)
{
    static char host[256];
    if (!host[0] && gethostname(host, sizeof host - 1) != 0)
        strcpy(host, "unknown");
    return host;
}

void rmx_step(const char *name)
{
    if (rmx_steps_enabled()) {
        fprintf(stderr, "rmax-step: %s (rank %ld on %s)\n", name, rmx_step_rank(), rmx_step_host());
        fflush(stderr);
    }
}
