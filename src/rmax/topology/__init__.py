"""Switch groups: inferred from measured latency and bandwidth, or declared in
cluster.toml; and the rank placements that keep heavy traffic inside a switch."""
