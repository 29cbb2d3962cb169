"""rmax: measure, model and tune Linux compute clusters."""

__version__ = "0.1.0"
