"""Every cache key is built here: what changes generated code enters, nothing else does."""
from __future__ import annotations

import hashlib


def compiler_versions() -> str:
    import numba
    import numpy
    return f"numba={numba.__version__};numpy={numpy.__version__}"


def program_key(backend: str, device: str, source: str, flags: str = "") -> str:
    h = hashlib.sha1()
    for part in (backend, device, compiler_versions(), flags, source):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]
