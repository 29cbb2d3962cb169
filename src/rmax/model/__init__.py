"""Models fitted to measurements, one per module (hockney: message time alpha + n/beta;
the Amdahl family, HPL's time model, cost, cache boundaries on a rate curve, ...). Import
from the module itself: the package imports nothing, so that a reader of one model (a
family's cache boundaries in `rmax runs list`) does not load numpy for another."""
