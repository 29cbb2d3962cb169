"""`rmax survey`: the whole characterisation of a cluster as one stored survey."""
