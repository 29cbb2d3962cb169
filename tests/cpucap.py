"""A cgroup's CPU cap for tests that slow a node on purpose: a CFS quota every period, which
even timed blocks of milliseconds see (a busy neighbour is no sure slow-down: with autogroup
each session gets its own share, and a best-of figure finds a slice that ran whole)."""

from __future__ import annotations

from pathlib import Path


def has_cap(directory: Path) -> bool:
    """The cgroup has the cpu controller's quota (v2 cpu.max or v1 cpu.cfs_quota_us)."""
    return (directory / "cpu.max").exists() or (directory / "cpu.cfs_quota_us").exists()


def set_cap(directory: Path, fraction: float | None, period_us: int) -> None:
    """Cap the cgroup at `fraction` of one CPU in every period of `period_us` (None: no cap)."""
    quota = int(period_us * fraction) if fraction else -1
    if (directory / "cpu.cfs_quota_us").exists():   # v1
        (directory / "cpu.cfs_period_us").write_text(str(period_us))
        (directory / "cpu.cfs_quota_us").write_text(str(quota))
    else:
        (directory / "cpu.max").write_text(f"{quota if quota > 0 else 'max'} {period_us}")
