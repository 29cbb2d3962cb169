/* Monotonic wall-clock timer shared by every rmax kernel. */
#ifndef RMX_TIMER_H
#define RMX_TIMER_H

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC): immune to NTP steps. */
double rmx_now(void);

/* Resolution of rmx_now() in seconds, as the clock reports it. */
double rmx_timer_resolution(void);

/* Spin until `seconds` have passed; used for warm-up so the core leaves idle states. */
void rmx_spin(double seconds);

#endif
