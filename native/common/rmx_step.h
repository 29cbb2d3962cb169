/* Step markers for the launcher's watchdog: when RMAX_STEPS=1 a kernel writes
 * "rmax-step: NAME (rank R on HOST)" to stderr as it enters each phase, so a job
 * killed for hanging can be reported with the phase it hung in and by whom.
 * The rank comes from the launcher's environment, so it is known before
 * MPI_Init (a hang there is named too). */
#ifndef RMX_STEP_H
#define RMX_STEP_H

void rmx_step(const char *name);

/* Whether markers are on (RMAX_STEPS=1: run under rmax's watchdog). */
int rmx_steps_enabled(void);

/* This process's rank as its launcher set it (Open MPI, MPICH/PMI, PMIx, Slurm); 0 outside MPI. */
long rmx_step_rank(void);

/* This host's name, as the markers give it. */
const char *rmx_step_host(void);

#endif
