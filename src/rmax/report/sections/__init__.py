"""Section builders, one module per family; importing this package registers them."""

from rmax.report.sections import generic, hpl, inventory, network, node, tuning  # noqa: F401
