"""The extension points: what tools (profiler, debugger), the distributed layer and the public
API attach to the pipeline. The pipeline reads these names where each one's comment says; the
attaching side sets them through the functions below, so no module assigns another module's
globals. Every hook off (None, empty, False) is the normal case and costs one test.

Who sets what: ``set_debugger`` -- tools/debug (reference mode, breakpoints);
``set_profiler``, ``at_shutdown`` -- tools/profiler; ``set_error_dispatch`` and
``error_handlers`` -- tools/debug/handlers.py (``ps.push_error_handler``);
``set_distributed`` -- streamrt.distributed (``connect``/``close``);
``set_array_namespace`` -- the public API (``streamrt/__init__.py``);
``set_ufunc_loop`` -- frontend/native.py (the C path)."""
from __future__ import annotations

# ---- debugger ------------------------------------------------------------------------------
# called with every recorded port (runtime/workqueue.py; the C record path records only while
# it is None and leaves the op to the Python path otherwise)
on_record = None
# called with (port, host value) at every read of an Array's value (frontend/array.py)
on_read = None
# called with each completed program; returns an error to deliver at the read, or None
# (runtime/escheduler.py)
on_complete = None
# computed ports keep their inputs (the debugger walks the graph to the diverging op)
keep_graph = False

# ---- profiler ------------------------------------------------------------------------------
# the active collector (tools/profiler/collector.py) or None: every event site tests it
profiler = None
# called in order when the runtime shuts down at exit, while its pipeline still runs
# (runtime/escheduler.shutdown)
shutdown: list = []

# ---- errors --------------------------------------------------------------------------------
# the error-handler stack, innermost last (core/errors.record_error consults it when it is not
# empty, through ``on_error``)
error_handlers: list = []
# (error, call site, op name) -> 'raise' | 'ignore' (or raises an abort)
on_error = None

# ---- distributed ---------------------------------------------------------------------------
# the route to a cluster (runtime/cscheduler.py): an object with ``route(entries, executor)``
# -> the executor a flush runs on, and ``wait_all()`` (ps.sync waits for the cluster too)
distributed = None

# ---- the C path ----------------------------------------------------------------------------
# (ufunc, args tuple, out ndarray) -> out, or None when not taken: the ufunc's own loop into
# ``out``, cut over two threads when long (frontend/native.py sets it when the C path is built;
# backends/base.py's interpreter calls it, NumPy's call when None)
ufunc_loop = None
# () -> None: the cut loops' helper thread stops spinning (backends/numba_cpu/executor.py, before
# a compiled parallel kernel, whose OpenMP threads need both cores); None without the C path
park_helper = None
# (slot, spec or None) -> None: a block of a loop's products answers its calls in C
# (runtime/products.py registers its blocks; None without the C path)
product_block = None

# ---- public API ----------------------------------------------------------------------------
# () -> the Array API namespace module (Array.__array_namespace__)
array_namespace = None


def set_ufunc_loop(f, park=None, product=None):
    """The C path's ufunc-into call (None: NumPy's call), its helper thread's park and its
    registry of product blocks."""
    global ufunc_loop, park_helper, product_block
    ufunc_loop = f
    park_helper = park
    product_block = product


def set_debugger(record=None, read=None, complete=None, keep=False):
    """Install (or, with the defaults, remove) the debugger's hooks."""
    global on_record, on_read, on_complete, keep_graph
    on_record, on_read, on_complete, keep_graph = record, read, complete, bool(keep)


def set_profiler(collector):
    """The collector events go to (None: profiling off)."""
    global profiler
    profiler = collector


def at_shutdown(fn):
    """Call ``fn()`` when the runtime shuts down (before its threads stop)."""
    if fn not in shutdown:
        shutdown.append(fn)


def set_error_dispatch(fn):
    """``fn(error, call site, op name)``: asks the error handlers about an error."""
    global on_error
    on_error = fn


def set_distributed(route):
    """The cluster flushes may be routed to (None: detached)."""
    global distributed
    distributed = route


def set_array_namespace(loader):
    """``loader()`` returns the Array API namespace module."""
    global array_namespace
    array_namespace = loader

