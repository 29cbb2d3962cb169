/* Step markers for the launcher's watchdog: when RMAX_STEPS=1 a kernel writes
 * "rmax-step: NAME" to stderr as it enters each phase, so a job killed for
 * hanging can be reported with the phase it hung in. */
#ifndef RMX_STEP_H
#define RMX_STEP_H

void rmx_step(const char *name);

#endif
