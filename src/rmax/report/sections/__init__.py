"""Section builders, one module per family; importing this package registers them."""

from rmax.report.sections import generic, hpl, inventory, node, peakflops, tuning  # noqa: F401
