"""Frontend: the Array and the NumPy-like functions that record ports (the patent's LSI + FE)."""
