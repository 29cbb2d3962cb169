"""Models fitted to measurements, one per module (hockney: message time alpha + n/beta;
the Amdahl family, HPL's time model, cost, ...). Import from the module itself; the
Hockney fit is re-exported here because every network result uses it."""

from rmax.model.hockney import HockneyFit, fit_hockney

__all__ = ["HockneyFit", "fit_hockney"]
