"""Caches: keys (one module builds them all) and the program cache."""
