"""Profile collector: runtime events in, one run file out (JSON lines, format below).

Enabled by ``STREAMRT_PROFILE=run.stprof`` (written at exit) or ``with ps.profile(path):``.
The active collector is ``core.hooks.profiler``: when none is active every event site is a
single ``if``.

Run file format (``streamrt-profile`` version 1): UTF-8 JSON, one object per line.

* ``{"t": "header", "format": "streamrt-profile", "version": 1, "start": <unix s>,
  "machine": {...}, "streamrt": "<version>"}`` -- always the first line;
* ``{"t": "site", "id": n, "file": str, "line": int, "function": str, "text": str}`` -- a
  call site and its source line's text (when the file could be read);
* ``{"t": "pc", "site": n, "calls": int}`` -- ops recorded at a call site;
* ``{"t": "ck", "name": str, "executor": str, "device": str, "start": s, "dur": s,
  "bytes_in": int, "bytes_out": int, "elements": int, "ops": int, "kind": str,
  "weights": {site id: w}}`` -- one kernel or intrinsic execution; ``start`` is seconds since
  the header's ``start``; the weights attribute its time to the call sites fused into it
  (op-table instruction estimate x elements) and sum to 1;
* ``{"t": "compile", "start": s, "dur": s, "level": "memory"|"disk"|"compiled",
  "kernel": str}`` -- a program-cache lookup that had to load or compile;
* ``{"t": "cache", "cache": "trace"|"macro", "hit": bool, "site": n, "why": str|null}``;
* ``{"t": "transfer", "direction": "to_device"|"to_host", "bytes": int, "start": s,
  "dur": s, "executor": str}``;
* ``{"t": "wait", "start": s, "dur": s, "what": "flow"}`` -- the application blocked;
* ``{"t": "flush", "start": s, "reason": str, "entries": int, "programs": int,
  "hit": bool|null}``;
* ``{"t": "end", "wall": s}`` -- the last line."""
from __future__ import annotations

import linecache
import math
import os
import platform
import threading
import time
from collections import Counter

from ...core import hooks
from ...runtime import cscheduler


def active():
    return hooks.profiler


class Collector:
    def __init__(self, path):
        self.path = path
        self.t0 = time.time()
        self.p0 = time.perf_counter()
        self.lock = threading.Lock()
        self.sites = {}             # (file, line, function) -> id
        self.site_of = {}           # CallSite identity (id(code), lasti) -> site id
        self.calls = Counter()      # site id -> ops recorded
        self.records = []
        self.local = threading.local()      # compile time spent inside the current launch

    # ---- helpers ---------------------------------------------------------------------------
    def now(self):
        return time.perf_counter() - self.p0

    def site_id(self, site):
        if site is None:
            return -1
        k = (id(site.code), site.lasti)
        i = self.site_of.get(k)
        if i is None:
            key = (site.filename, site.lineno, site.function)
            i = self.sites.get(key)
            if i is None:
                i = self.sites[key] = len(self.sites)
            self.site_of[k] = i
        return i

    # ---- hooks -----------------------------------------------------------------------------
    def flush(self, entries, seq, reason, hit):
        with self.lock:
            n = 0
            for e in entries:
                if e[0] == "compute":
                    self.calls[self.site_id(e[1].site)] += 1
                    n += 1
            self.records.append({"t": "flush", "start": self.now(), "reason": reason,
                                 "entries": n, "programs": len(seq.programs), "hit": hit})

    def replay(self, sites):
        with self.lock:
            for s in sites:
                self.calls[self.site_id(s)] += 1

    def cache(self, which, hit, site, why=None):
        with self.lock:
            self.records.append({"t": "cache", "cache": which, "hit": hit,
                                 "site": self.site_id(site), "why": why})

    def kernel(self, prog, executor, start, dur):
        comp = getattr(self.local, "compile", 0.0)
        if comp:
            self.local.compile = 0.0
            start += comp
            dur = max(dur - comp, 0.0)          # a first launch compiles: not kernel time
        k = prog.kernel
        bin_ = bout = 0
        if k is not None:
            seen = set()
            for a in k.loads:
                b = a.port.base_view()[0] if a.port.kind == "view" else a.port
                if b.id not in seen:
                    seen.add(b.id)
                    bin_ += b.size * b.dtype.itemsize
            elements = k.elements
        else:
            for p in prog.inputs:
                bin_ += p.size * p.dtype.itemsize
            elements = max([p.size for p in prog.outputs] + [0])
        for p in prog.outputs:
            # a region write (``u[1:-1] = ...``, an interval of a piecewise array) writes its
            # region, not the whole array
            n = math.prod(p.params[1]) if p.kind == "intrinsic" and p.op == "update" \
                else p.size
            bout += n * p.dtype.itemsize
        name = prog.describe()
        with self.lock:
            w = {}
            for s, x in prog.weights.items():
                i = self.site_id(s)
                w[i] = w.get(i, 0.0) + x
            self.records.append({
                "t": "ck", "name": name[:200], "executor": executor.name,
                "device": getattr(executor, "device_name", executor.name),
                "start": start - self.p0, "dur": dur, "bytes_in": bin_, "bytes_out": bout,
                "elements": elements, "ops": len(prog.ops), "kind": prog.kind,
                "weights": {str(i): x for i, x in w.items()}})

    def compile(self, start, dur, level, kernel):
        self.local.compile = getattr(self.local, "compile", 0.0) + dur
        with self.lock:
            self.records.append({"t": "compile", "start": start - self.p0, "dur": dur,
                                 "level": level, "kernel": kernel})

    def transfer(self, direction, nbytes, start, dur, executor):
        with self.lock:
            self.records.append({"t": "transfer", "direction": direction, "bytes": int(nbytes),
                                 "start": start - self.p0, "dur": dur, "executor": executor})

    def wait(self, start, dur, what="flow"):
        with self.lock:
            self.records.append({"t": "wait", "start": start - self.p0, "dur": dur,
                                 "what": what})

    # ---- output ----------------------------------------------------------------------------
    def write(self):
        import json                   # (~1 ms of import streamrt: only for a run file)
        from ... import __version__   # (the package's, set after it imports this module)
        wall = self.now()
        with self.lock:
            lines = [{"t": "header", "format": "streamrt-profile", "version": 1,
                      "start": self.t0, "streamrt": __version__,
                      "machine": {"node": platform.node(), "system": platform.system(),
                                  "machine": platform.machine(), "cpus": os.cpu_count(),
                                  "python": platform.python_version()}}]
            for (f, ln, fn), i in sorted(self.sites.items(), key=lambda kv: kv[1]):
                lines.append({"t": "site", "id": i, "file": f, "line": ln, "function": fn,
                              "text": linecache.getline(f, ln).strip()})
            for i, n in sorted(self.calls.items()):
                lines.append({"t": "pc", "site": i, "calls": n})
            lines.extend(self.records)
            lines.append({"t": "end", "wall": wall})
        d = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(d, exist_ok=True)
        tmp = f"{self.path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            for r in lines:
                f.write(json.dumps(r, separators=(",", ":")) + "\n")
        os.replace(tmp, self.path)
        return self.path


def start(path):
    c = Collector(path)
    hooks.set_profiler(c)
    return c


def stop(write=True):
    """Wait for outstanding work, detach the collector and write its run file."""
    c = hooks.profiler
    if c is None:
        return None
    try:
        try:
            cscheduler.sync()
        finally:
            hooks.set_profiler(None)
    finally:
        # (also when the wait is interrupted -- Ctrl-C in the profiled block or at exit --
        # or fails: the run file has what was recorded until then)
        if write:
            path = c.write()
    return path if write else None


# at exit the run file is written while the pipeline still runs
hooks.at_shutdown(stop)
