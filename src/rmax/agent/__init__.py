"""`rmax agent`: a per-node daemon that measures a short fixed probe set while the node is idle,
stores each probe as a run, serves the latest rates as Prometheus metrics and flags a node whose
rates drift below its own history (Brown, "Maximizing Beowulf Performance": every node publishes
a standard matrix of its own rates)."""
