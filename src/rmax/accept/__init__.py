"""`rmax accept`: a verdict per node and metric of a survey's measurements, against references
(references.toml) and against the node's class in the fleet (classes.py, verdicts.py)."""
