"""Models fitted to measurements, one per module: hockney (message time
alpha + n/beta), amdahl and amdahl_fit (generalised Amdahl speed-up),
karp_flatt (serial fraction), plots. Import from the module itself."""

from rmax.model.hockney import HockneyFit, fit_hockney

__all__ = ["HockneyFit", "fit_hockney"]
