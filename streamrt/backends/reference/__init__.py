"""The reference backend: one op at a time with NumPy (the oracle of the tests and of the
debugger; the interpreter of STREAMRT_BACKEND=reference)."""
from __future__ import annotations

from ...core import dtypes as D
from ..base import Backend
from .executor import ReferenceExecutor

BACKEND = Backend("reference", ReferenceExecutor, caps={"fuse": False, "render": None,
                                                       "max_ops": 1}, dtypes=D.SUPPORTED)
