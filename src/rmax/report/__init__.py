"""Reports: static HTML (inline SVG plots, CSV/JSON data files) made from the store alone."""
