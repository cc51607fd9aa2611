"""Automatic placement (the supervisor's choice of executor): flushed work queue in, executor out.
When STREAMRT_BACKEND is ``auto`` (the default), each program sequence goes where it is
estimated to finish first: its size and op costs, where its inputs' valid copies already are
(transfers cost time), dtype support (float64 on a device without fp64 is excluded), and the
measured time of earlier runs of the same trace on each executor. Small sequences whose inputs
are on the host stay on the CPU without looking at devices at all.

The estimates are plain numbers (``Estimate``) that tests and users can replace with
``set_estimate``; measured times are kept per (trace, executor) and can be read with
``measured()`` and forgotten with ``reset()``."""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
import time
import weakref

import numpy as np

from ..core import atfork, config, keys, stats
from ..core.config import settings
from ..core.ir import DONE
from ..compiler.sequence import cost
from ..backends import registry
from ..backends.devices import devices

_lock = threading.Lock()
stats.declare(*(f"placements_{n}" for n, b in registry.BACKENDS.items() if b.device))


class Estimate:
    """How fast an executor is assumed to be before a trace was measured on it."""

    __slots__ = ("launch_s", "ops_per_s", "bytes_per_s")

    def __init__(self, launch_s, ops_per_s, bytes_per_s):
        self.launch_s = launch_s        # fixed cost of a sequence (launch latency, scheduling)
        self.ops_per_s = ops_per_s      # element-operations per second (op-table cost units)
        self.bytes_per_s = bytes_per_s  # host <-> executor transfer bandwidth (inf: shared)

    def __repr__(self):
        return (f"Estimate(launch_s={self.launch_s}, ops_per_s={self.ops_per_s}, "
                f"bytes_per_s={self.bytes_per_s})")


_estimates: dict = {}        # executor name -> Estimate (defaults filled in on first use)
_explored = {}                          # trace key -> best's run count at its last re-measurement
_measured = collections.OrderedDict()   # (trace key, executor) -> [runs, seconds EWMA or None]
_MEASURED_MAX = 4096
MEASURE_RUNS = 3             # device runs per trace timed synchronously (then trusted)
_where = weakref.WeakKeyDictionary()    # port computed on a device -> executor name
_devices = None


def _default_estimate(name, dev=None):
    """What backend ``name`` is assumed to do on device ``dev`` (its Backend's ``estimate``)."""
    return Estimate(*registry.BACKENDS[name].estimate(dev))


_discovery = None


def discover_now():
    """Discover the devices on this thread, now (tests; ps.devices() does it anyway)."""
    _discover()
    return _devices


def _discover(in_process=True, cache_dir=None):
    global _devices
    ds = devices() if in_process else _devices_of_a_child(cache_dir)
    found = []
    for d in ds:
        if d["backend"] in registry.BACKENDS and registry.BACKENDS[d["backend"]].device and \
                d["available"] and all(f[0] != d["backend"] for f in found):
            found.append((d["backend"], d))
    _devices = found


DISCOVERY_TTL_S = 24 * 3600     # how long a discovery written to the cache directory holds


def _devices_of_a_child(cache_dir=None):
    """ps.devices() as a child process finds them: importing pyopencl and building a probe
    kernel take ~1 s of this process's GIL otherwise. The answer is kept in the cache
    directory for a day, for this interpreter on this machine: the child also takes a core
    for that second, which a two-core machine's next processes should not pay again (a
    device that went away since then fails to open, and placement drops it). [] if the
    child fails."""
    # (the cache directory comes from the thread that asked: reading a setting here would
    # leave this short-lived thread's settings cache behind, config.py)
    cache_dir = cache_dir if cache_dir is not None else config.cache_dir()
    path = _saved_discovery(cache_dir)
    me = keys.discovery_key()
    try:
        with open(path) as f:
            saved = json.load(f)
        if saved["for"] == me and 0 <= time.time() - saved["at"] < DISCOVERY_TTL_S:
            return saved["devices"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    found = _ask_a_child()
    if found:
        try:
            os.makedirs(cache_dir, exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                json.dump({"for": me, "at": time.time(), "devices": found}, f)
            os.replace(tmp, path)
        except OSError:
            pass
    return found


def _saved_discovery(cache_dir):
    return os.path.join(cache_dir, "devices.json")


def _ask_a_child():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                else "")
    code = ("import json, sys; from streamrt.backends.devices import devices; "
            "sys.stdout.write(json.dumps(devices()))")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, env=env,
                             timeout=120, check=True).stdout
        return json.loads(out)
    except (OSError, subprocess.SubprocessError, ValueError):
        return []


DISCOVERY_AFTER_S = 1.0     # large work goes on this long before the devices are looked for
_first_asked = None         # (monotonic time of the first large flush placed)
_known = None               # whether devices.json held a discovery when first asked


def _available():
    """[(name, device info)] of the device backends that work here. Discovered once, by a
    child process on a thread of its own (probing an OpenCL device builds a kernel: ~1 s of
    GIL here); until it is done, no device is offered and the work stays on the CPU. A
    discovery kept in the cache directory is read at the first large flush; otherwise the
    child starts once large work has gone on for DISCOVERY_AFTER_S: on a 2-vCPU machine it
    slowed a first run of 0.1-0.2 s by 80-100 ms, and a device cannot pay for its transfers
    and compiles in a program shorter than that (docs/decisions.md)."""
    global _discovery, _first_asked, _known
    if _devices is not None:
        return _devices
    with _lock:
        if _discovery is None:
            now = time.monotonic()
            if _first_asked is None:
                _first_asked = now
                _known = os.path.exists(_saved_discovery(config.cache_dir()))
            if _known or now - _first_asked >= DISCOVERY_AFTER_S:
                _discovery = threading.Thread(target=_discover,
                                              args=(False, config.cache_dir()), daemon=True,
                                              name="streamrt-device-discovery")
                _discovery.start()
    return []


def _after_fork():
    """A discovery the parent had not finished (its thread and child process are the
    parent's) starts again when the child next asks; its locks are new."""
    global _lock, _discovery, _first_asked
    _lock = threading.Lock()
    if _devices is None:
        _discovery = None
        _first_asked = None


atfork.register(_after_fork)


def estimate(name):
    with _lock:
        e = _estimates.get(name)
    if e is None:
        dev = next((d for n, d in _available() if n == name), None) if name != "cpu" else None
        e = _default_estimate(name, dev)
        with _lock:
            e = _estimates.setdefault(name, e)
    return e


def set_estimate(name, launch_s=None, ops_per_s=None, bytes_per_s=None):
    """Replace (parts of) the assumed speed of executor ``name`` ('cpu', 'opencl', 'cuda')."""
    e = estimate(name)
    with _lock:
        _estimates[name] = Estimate(e.launch_s if launch_s is None else launch_s,
                                    e.ops_per_s if ops_per_s is None else ops_per_s,
                                    e.bytes_per_s if bytes_per_s is None else bytes_per_s)


def measured():
    """{(trace key hash, executor): (runs, seconds or None)} of the traces seen so far (the
    first run of each is a warm-up and not timed)."""
    with _lock:
        return {(hash(k), n): tuple(v) for (k, n), v in _measured.items()}


def reset(estimates=True, devices=False):
    """Forget measured times (and replaced estimates; ``devices``: the discovery too)."""
    global _devices, _discovery
    with _lock:
        _measured.clear()
        _explored.clear()
        if estimates:
            _estimates.clear()
        if devices:
            _devices = None
            _discovery = None


# ---- the decision ------------------------------------------------------------------------
def _location(port):
    """(executor names holding a valid copy, bytes) of an input port's data."""
    base = port.inputs[0] if port.kind == "view" else port
    nbytes = base.size * base.dtype.itemsize
    v = base.value
    if v is None:
        where = _where.get(base)
        return ({where} if where else {"cpu"}), nbytes
    if isinstance(v, np.ndarray):
        return {"cpu"}, nbytes
    out = set()
    if getattr(v, "on_host", False):
        out.add("cpu")
    if getattr(v, "on_device", False):
        out.add(v.ex.name)
    return out or {"cpu"}, nbytes


def _survey(entries):
    """(largest element count, op-cost work, float64 used, {input port id: (where, bytes)})."""
    n = work = 0
    f64 = False
    inputs = {}
    f8 = np.dtype(np.float64)
    for e in entries:
        if e[0] != "compute":
            continue
        p = e[1]
        if p.kind == "view":
            continue
        s = p.size
        if s > n:
            n = s
        if p.kind in ("map", "reduce"):
            work += cost(p)
        if p.dtype == f8 or p.loop_dtype == f8:
            f64 = True
        for i in p.inputs:
            if i.kind == "scalar" or i.id in inputs:
                continue
            b = i.inputs[0] if i.kind == "view" else i
            if b.state == DONE or b.kind == "const" or b.value is not None or b in _where:
                inputs[i.id] = _location(i)
    return n, work, f64, inputs


def _small_on_host(entries, limit, max_elements):
    """True if every array of the flush has fewer than ``limit`` elements (``max_elements``:
    the largest entry's size, tracked by the work queue as ops are recorded) and no input
    lives on a device only (looked at only when a device executor exists)."""
    if max_elements >= limit:
        return False
    if not registry.has_device_executor():
        return True
    where = _where if len(_where) else None
    nd = np.ndarray
    for e in entries:
        if e[0] != "compute":
            continue
        for i in e[1].inputs:
            b = i.inputs[0] if i.kind == "view" else i
            v = b.value
            if v is None:
                if where is not None and b in where:
                    return False
            elif type(v) is not nd and not getattr(v, "on_host", True):
                return False
    return True


def choose(entries, kparts, max_elements):
    """The executor for one flushed work queue (STREAMRT_BACKEND forces one);
    ``max_elements``: its largest entry's size (WorkQueue.taken_max)."""
    name = settings.backend
    if name != "auto":
        return registry.get(name), None
    # (the small-work check comes first: it spares small scripts the device discovery)
    small = _small_on_host(entries, settings.device_min_elements, max_elements)
    if small or not _available():
        stats.add("placements_cpu")
        if settings.debug >= 1:
            why = (f"small: every array under {settings.device_min_elements} elements, inputs "
                   f"on the host") if small else "no device"
            print(f"[streamrt] placement: cpu ({why})", file=sys.stderr)
        return registry.get("cpu"), None
    n, work, f64, inputs = _survey(entries)
    key = keys.placement_key(kparts) if kparts else None
    cands = ["cpu"] + [d for d, _ in _available()]
    best, best_t, why, scored = "cpu", None, [], []
    for c in cands:
        if c != "cpu" and f64:
            info = next(d for nm, d in _available() if nm == c)
            if not info.get("fp64", True):
                why.append(f"{c}=no fp64")
                continue
        est = estimate(c)
        m = _measured.get((key, c)) if key is not None else None
        m = m if m is not None and m[1] is not None else None
        t = est.launch_s + work / est.ops_per_s
        if m is not None:
            # Against a device not measured yet (its estimate assumes an idle machine) the
            # CPU's measurement counts only when it beats the CPU's own estimate: a CPU time
            # measured while 8 recording threads kept the cores busy sent ~100 sequences of
            # such a process to PoCL -- on the same busy cores -- and compiled programs for
            # it that a single thread never needed (docs/decisions.md). Measured against
            # measured, the measurements decide.
            t = m[1] if c != "cpu" or all(
                (key, d) in _measured and _measured[(key, d)][1] is not None
                for d in cands if d != "cpu") else min(m[1], t)
        moved = sum(b for w, b in inputs.values() if c not in w)
        if moved:
            bw = est.bytes_per_s if c != "cpu" else _source_bandwidth(inputs)
            t += moved / bw
        why.append(f"{c}={t * 1e3:.3f}ms{' (measured)' if m else ''}"
                   f"{f' +{moved}B moved' if moved else ''}")
        scored.append((t, c, m is not None))
        if best_t is None or t < best_t:
            best, best_t = c, t
    best = _explore(key, best, scored, why)
    stats.add(f"placements_{best}")
    if settings.debug >= 1:
        print(f"[streamrt] placement: {best} ({n} elements, {work} op-units; "
              f"{', '.join(why)})", file=sys.stderr)
    ex = registry.get(best)
    if ex.name != best:              # the device could not be opened: the CPU, from now on
        with _lock:
            _devices[:] = [d for d in _devices if d[0] != best]
    return ex, (key, ex.name)


EXPLORE_EVERY = 64      # runs of a trace on its best executor between re-measurements


def _explore(key, best, scored, why):
    """Once every EXPLORE_EVERY runs of a trace on its best executor, run it once on the
    measured runner-up instead: a measurement taken while the machine was busy must not
    exclude an executor for good (the loser is otherwise never measured again)."""
    if key is None or len(scored) < 2:
        return best
    mb = _measured.get((key, best))
    if mb is None or mb[0] % EXPLORE_EVERY != 0 or _explored.get(key) == mb[0]:
        return best
    _explored[key] = mb[0]
    if len(_explored) > _MEASURED_MAX:
        _explored.pop(next(iter(_explored)))
    rest = sorted((t, c) for t, c, measured in scored if c != best and measured)
    if not rest:
        return best
    stats.add("placement_explorations")
    why.append(f"re-measuring {rest[0][1]}")
    return rest[0][1]


def _source_bandwidth(inputs):
    """Bandwidth of bringing device-resident inputs back to the host (the slowest device)."""
    bws = [estimate(n).bytes_per_s for w, _ in inputs.values() for n in w if n != "cpu"]
    return min(bws) if bws else float("inf")


# ---- measurements --------------------------------------------------------------------------
class Timing:
    """Attached to a program sequence placed automatically: its programs' run times add up
    here, and the total is recorded for (trace, executor) when the sequence completes."""
    __slots__ = ("key", "name", "seconds", "measure", "compiled")

    def __init__(self, key, name):
        self.key, self.name, self.seconds = key, name, 0.0
        m = _measured.get((key, name))
        # device launches are asynchronous: the first runs of a trace wait for the device so
        # that the time taken is the real one
        self.measure = name != "cpu" and (m is None or m[0] <= MEASURE_RUNS)
        self.compiled = stats.get("compile_seconds")


def start(seq, placed, ex):
    """Remember where ``seq`` went (its outputs' location, and its timing if keyed)."""
    if placed is None:
        return
    key, name = placed
    if name != "cpu":
        for prog in seq.programs:
            for p in prog.outputs:
                _where[p] = name
    if key is not None:
        seq.timing = Timing(key, name)


def finish(seq):
    t = seq.timing
    if t is None:
        return
    seq.timing = None
    k = (t.key, t.name)
    # the first run of a trace on an executor is a warm-up (device compilers may build at the
    # first launch), and a run during which anything was compiled is not representative
    valid = stats.get("compile_seconds") == t.compiled
    with _lock:
        m = _measured.get(k)
        if m is None:
            _measured[k] = [1, None]
            if len(_measured) > _MEASURED_MAX:
                _measured.popitem(last=False)
        else:
            m[0] += 1
            if valid:
                m[1] = t.seconds if m[1] is None else 0.7 * m[1] + 0.3 * t.seconds
            _measured.move_to_end(k)
