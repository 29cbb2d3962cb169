"""Benchmark families: each module builds a kernel's argv and turns its JSON lines into a stored run."""
