#include "rmx_step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rmx_step(const char *name)
{
    static int enabled = -1;
    if (enabled < 0) {
        const char *e = getenv("RMAX_STEPS");
        enabled = e && strcmp(e, "1") == 0;
    }
    if (enabled) {
        fprintf(stderr, "rmax-step: %s\n", name);
        fflush(stderr);
    }
}
