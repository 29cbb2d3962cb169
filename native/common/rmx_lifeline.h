/* Ties a kernel's life to its launcher. Called first in every rmax-* main.
 *
 * Under rmax's watchdog (RMAX_STEPS=1) the process asks the kernel for SIGKILL
 * when its parent dies (prctl(2) PR_SET_PDEATHSIG): a rank whose mpirun,
 * orted or hydra proxy is killed does not run on alone. It then announces the
 * step "start" and keeps a heartbeat, "rmax-alive: rank R on HOST every T s",
 * from a thread of its own: a rank that stops (SIGSTOP, a frozen node) falls
 * silent while a rank merely waiting in MPI does not, which is how the
 * watchdog tells who stopped answering; a normal exit says "rmax-exit: rank R
 * on HOST", so a rank done early is not taken for a silent one. Outside the
 * watchdog it does nothing, so a kernel started by hand (nohup) outlives its
 * shell as before. */
#ifndef RMX_LIFELINE_H
#define RMX_LIFELINE_H

void rmx_lifeline(void);

#endif
