"""Automatic HPL tuning (`rmax tune`): a search space, strategies registered by
name, a noise-aware comparison of candidates, and a stored, resumable session."""
