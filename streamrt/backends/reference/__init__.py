"""The reference backend: one op at a time with NumPy (the oracle of the tests and of the
debugger)."""
