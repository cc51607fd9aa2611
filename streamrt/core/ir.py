"""The IR: a port is the output of one recorded op (an immutable description and its
runtime state); its states; ``strided``, the one way a view's elements are read from its
base buffer; ``scratch_port``, the uninitialised buffers region writes take over."""
from __future__ import annotations

import functools
import itertools
import math
import sys

import numpy as np

from . import stats

_ids = itertools.count(1)

# Port states
NEW, SUBMITTED, DONE, FAILED, DEAD = range(5)


@functools.lru_cache(maxsize=1024)
def _c_strides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return tuple(reversed(st))


def c_strides(shape):
    """The element strides of a C-ordered array of ``shape``."""
    return _c_strides(tuple(shape))


class Port:
    """One IR node: the output of one recorded op (immutable description + its runtime state).

    kind: 'const' (host data), 'scalar' (a kernel parameter), 'map', 'reduce', 'view',
    'intrinsic'. ``params`` holds the static arguments the generated code specialises on."""

    __slots__ = ("id", "kind", "op", "dtype", "shape", "inputs", "params", "site", "queue",
                 "value", "state", "error", "nrefs", "scalar", "loop_dtype", "ref",
                 "holders", "captured", "eager_views", "counted", "__weakref__")

    def __init__(self, kind, op, dtype, shape, inputs=(), params=(), site=None, queue=None,
                 value=None, scalar=None, loop_dtype=None):
        self.id = next(_ids)
        self.kind = kind
        self.op = op
        self.dtype = dtype
        self.shape = shape
        self.inputs = inputs
        self.params = params
        self.site = site
        self.queue = queue
        self.value = value
        self.scalar = scalar
        self.loop_dtype = loop_dtype
        self.error = None
        self.ref = None            # reference-mode shadow value (debug/reference.py)
        self.nrefs = 0
        self.holders = None        # {id: weakref} of Arrays that may alias this base (mutation)
        # the NumPy tier (runtime/tiers.py): the work queue(s) whose recorded, not yet run
        # ops read this computed base; its live views made by the NumPy tier (not in
        # ``holders``: a computed base is written in place); this view is one of them
        self.captured = None
        self.eager_views = 0
        self.counted = False
        self.state = DONE if kind in ("const", "scalar") else NEW

    # ---- views ---------------------------------------------------------------------------
    def base_view(self):
        """(base port, element offset, element strides) through which this port is read."""
        if self.kind == "view":
            off, st = self.params
            return self.inputs[0], off, st
        return self, 0, c_strides(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def released(self):
        return self.nrefs <= 0

    def host_value(self):
        """The computed value as an ndarray (views are built over the base's buffer)."""
        if self.counted:
            return self.value                           # (a NumPy-tier view: its ndarray)
        if self.kind == "view":
            base, off, st = self.base_view()
            if hasattr(base.value, "host_view"):      # held by Dask workers: gather what is read
                return base.value.host_view(off, self.shape, st)
            return strided(_host(base.value), off, self.shape, st)
        return _host(self.value)

    def __repr__(self):
        return f"Port#{self.id}({self.kind}:{self.op} {self.dtype}{list(self.shape)})"


def scratch_port(shape, dtype, site=None):
    """An uninitialised host buffer for an array every element of which a region write
    will set (``roll``, ``concatenate``, frontend/pieces.py); the first write takes the
    buffer over in place (proggen/analysis.py). Counted as allocated."""
    buf = np.empty(tuple(shape), dtype)
    stats.add("bytes_allocated", buf.nbytes)
    stats.add("buffers_allocated")
    return Port("const", "const", buf.dtype, buf.shape, value=buf, params=("scratch",),
                site=site)


def is_scratch(p):
    return p.kind == "const" and p.params == ("scratch",)


def scratch_written(p):
    """A scratch buffer the NumPy tier wrote a piece into at once: a plain buffer from then on
    (no longer uninitialised: the flush must not swap it for a pool buffer, a region write
    must not take it over)."""
    p.params = ("scratch", "written")


def dying_buffer(p):
    """Whether constant port ``p``'s buffer is a temporary as NumPy sees one: no Array holds
    the constant or a view of it (NumPy-tier views included), at most one work queue's
    recorded work reads it (the one being run), and no Python object but the port refers to
    its ndarray (NumPy's own criterion for eliding a temporary: its reference count). The
    interpreter may then write an element-wise result into it at its last reader
    (``alpha * np.outer(a, b)``: the product in the outer's buffer)."""
    v = p.value
    return p.kind == "const" and p.nrefs <= 0 and not p.eager_views and \
        not isinstance(p.captured, tuple) and type(v) is np.ndarray and v.base is None and \
        sys.getrefcount(v) == 3         # (the port, ``v`` and getrefcount's argument)


def strided(a, off, shape, st):
    """A view of C-ordered ndarray ``a``: element offset ``off``, ``shape``, element strides
    ``st`` (a fresh empty array when nothing is viewed)."""
    flat = a.reshape(-1)
    shape = tuple(shape)
    if flat.size == 0 or 0 in shape:
        return np.empty(shape, a.dtype)
    n = flat.itemsize
    try:        # (ndarray over the buffer: ~0.2 us, where as_strided, in Python, takes ~2.4)
        return np.ndarray(shape, flat.dtype, flat, off * n, tuple(s * n for s in st))
    except (TypeError, ValueError):
        return np.lib.stride_tricks.as_strided(flat[off:], shape, [s * n for s in st])


def _host(v):
    """A port value as a host ndarray: a device executor's DeviceArray is copied back once."""
    return v if v is None or isinstance(v, np.ndarray) else v.host()
