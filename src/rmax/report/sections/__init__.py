"""Section builders, one module per family; importing this package registers them."""

from rmax.report.sections import accept, experiment, generic, inventory, topology, tuning  # noqa: F401
