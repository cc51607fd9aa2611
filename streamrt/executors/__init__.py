"""Executors: one module per backend with the same interface (see base.py)."""
