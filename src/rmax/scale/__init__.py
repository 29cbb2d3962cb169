"""The scaling workflow: run a program (the user's, or HPL) at 1, 2, 4, ... ranks or
nodes with repeats, store every run under one parent, and fit the generalised
Amdahl model to the times (rmax.model.amdahl_fit)."""
