"""A cgroup's CPU cap for tests that slow a node on purpose: a CFS quota every period, which
even timed blocks of milliseconds see (a busy neighbour is no sure slow-down: with autogroup
each session gets its own share, and a best-of figure finds a slice that ran whole). One
implementation, `rmax vcluster up --cpu-quota`'s (rmax.vcluster.cgroups), under the tests' names:
has_cap(directory), set_cap(directory, fraction or None, period_us)."""

from __future__ import annotations

from rmax.vcluster.cgroups import has_quota as has_cap, set_quota as set_cap

__all__ = ["has_cap", "set_cap"]
