"""Direct replay on the CPU executor: a macro section (``Plan``) or a trace-cache hit
(``TracePlan``) whose programs are Numba kernels reading
computed inputs is run straight from the replay call -- output buffers, kernel arguments, the
call -- with no ports for its intermediates, no program sequence and no E-Scheduler round.

This is the small-array case of ``@ps.macro`` (a 10-op update on 1000 elements costs NumPy
~10 us; the general replay path spends ~90 us re-creating ports, instantiating the template and
settling states). The plan is built from the first replay's instantiated sequence and used only
when that replay would itself have run inline on this thread: the pipeline idle, the inputs
computed host arrays, nothing watching (profiler, debugger, launch log, debug output). A plan
writes no input (region writes are not planned), so an exception simply sends the call down
the general path, which owns splitting and fallbacks."""
from __future__ import annotations

import math

import numpy as np

from .. import stats
from ..caches import program_cache
from ..config import settings
from ..scheduler import cscheduler
from ..scheduler.workqueue import DONE, Port
from .base import kernel_partials, scalar_value
from .cpu import CPUExecutor, chunks_for


class Plan:
    __slots__ = ("steps", "slots", "outputs", "inputs", "elements", "nnew", "counts", "runs",
                 "__weakref__")

    def __init__(self, steps, slots, outputs, inputs, elements, nnew, nkernels):
        self.steps = steps          # per kernel: (Kernels, elements, arg sources, reduction)
        self.slots = slots          # buffers to allocate: (shape, dtype, recipe or None)
        self.outputs = outputs      # per section output: ("in", k) | ("slot", j) | ("port", p)
        self.inputs = inputs        # input positions whose ports are read
        self.elements = elements
        self.nnew = nnew
        nbytes = sum(math.prod(shape) * dt.itemsize for shape, dt, _ in slots)
        self.counts = (("ops_recorded", nnew), ("flushes", 1), ("sequences_submitted", 1),
                       ("inline_sequences", 1), ("kernels_launched", nkernels),
                       ("program_cache_memory_hits", nkernels), ("direct_replays", 1),
                       ("buffers_allocated", len(slots)), ("bytes_allocated", nbytes),
                       ("macro_cache_hits", 1))
        self.runs = 0               # counted by stats.runtime_stats (counts x runs)
        stats.register_runs(self)

    def run(self, inputs, q, executor):
        """The section's output Arrays' ports (one per section output), or None: take the
        general path (an input not yet computed, or the kernel raised)."""
        if self.elements > settings.inline_elements:
            return None
        vals = []
        for k in self.inputs:
            p = inputs[k]._port
            v = p.value
            if p.state != DONE or type(v) is not np.ndarray:
                return None
            vals.append(v.reshape(-1))
        f = cscheduler._flow
        if f is None or f.inflight:
            return None         # (launches are serialised by run_lock: a racy read is safe)
        try:
            bufs = [np.empty(shape, dt) for shape, dt, _ in self.slots]
            _launch(self.steps, executor, bufs, lambda kind, x: vals[x])
        except Exception:  # noqa: BLE001 - the general path splits, falls back and counts
            return None
        self.runs += 1
        made = {}
        out = []
        for kind, x in self.outputs:
            if kind == "in":
                out.append(inputs[x]._port)
            elif kind == "port":
                out.append(x)
            else:
                p = made.get(x)
                if p is None:
                    r = self.slots[x][2]
                    _, pkind, op, dt, shape, _ins, params, site, loop = r
                    p = Port(pkind, op, dt, shape, (), params, site, q, bufs[x], None, loop)
                    p.state = DONE
                    made[x] = p
                out.append(p)
        return out


def _launch(steps, executor, bufs, resolve):
    """Call each step's kernel in order. Argument sources: ``("c", value)`` a constant,
    ``("b", j)`` buffer ``j`` of this run (flattened), any other ``resolve(kind, x)``."""
    flat = [b.reshape(-1) for b in bufs]
    serial_max = settings.serial_elements
    with executor.run_lock:
        for kern, elements, srcs, red in steps:
            args = [x if kind == "c" else flat[x] if kind == "b" else resolve(kind, x)
                    for kind, x in srcs]
            if red is not None:
                K, R0, partials = red
                C = chunks_for(K, R0)
                args += kernel_partials(partials, K * C)
                args.append(C)
            program_cache.call(kern, elements <= serial_max, args)


def _step(prog, srcs, pos, slot_of):
    """The step of kernel program ``prog`` once its table, loads, stores and scalars are in
    ``srcs``: (kernels, elements, sources, reduction launch shape or None) with the
    reductions' buffers added; None if a reduction is not written by this plan."""
    k = prog.kernel
    red = None
    if k.is_reduction:
        for r in k.reductions:
            if pos.get(r.id) not in slot_of:
                return None
            srcs.append(("b", slot_of[pos[r.id]]))
        red = (math.prod(k.kept) if k.kept else 1, k.red[0] if k.red else 1, prog.partials)
    return program_cache.numba_kernels(prog.source, prog.fn), k.elements, tuple(srcs), red


def plan(sec, seq, ports, executor):
    """The direct plan of macro section ``sec`` (``seq`` and ``ports``: its first replay's
    instantiated sequence, before submission), or None when it cannot have one."""
    if type(executor) is not CPUExecutor or sec.advance or not seq.programs:
        return None
    recipes = sec.recipes
    pos = {p.id: i for i, p in enumerate(ports)}
    slot_of = {}            # port number -> slot
    slots = []
    used_inputs = {}        # input position -> index in the run's value list
    steps = []
    elements = 0

    def source(p):
        i = pos.get(p.id)
        if i is None or p.kind == "view":
            return None
        r = recipes[i]
        if i in slot_of:
            return ("b", slot_of[i])
        if r[0] == "I":
            return ("i", used_inputs.setdefault(r[1], len(used_inputs)))
        if r[0] == "F" and isinstance(p.value, np.ndarray):
            return ("c", p.value.reshape(-1))
        return None

    for prog in seq.programs:
        k = prog.kernel
        if prog.kind != "kernel" or k is None:
            return None
        for p in prog.outputs:
            i = pos.get(p.id)
            if i is None or p.kind == "view" or recipes[i][0] != "N" or i in slot_of:
                return None
            slot_of[i] = len(slots)
            slots.append((p.shape, p.dtype, recipes[i]))
        srcs = [("c", prog.table)]
        for a in k.loads:
            s = source(a.port)
            if s is None:
                return None
            srcs.append(s)
        for a in k.stores:
            if a.role in ("copy", "alias") or pos.get(a.port.id) not in slot_of:
                return None
            srcs.append(("b", slot_of[pos[a.port.id]]))
        for s in k.scalars:
            i = pos.get(s.id)
            if i is None or recipes[i][0] != "F":
                return None
            srcs.append(("c", scalar_value(s)))
        step = _step(prog, srcs, pos, slot_of)
        if step is None:
            return None
        steps.append(step)
        elements = max(elements, k.elements)
    outputs = []
    for _, o in sec.outputs:
        r = recipes[o]
        if o in slot_of:
            outputs.append(("slot", slot_of[o]))
        elif r[0] == "I":
            outputs.append(("in", r[1]))
        elif r[0] == "F":
            outputs.append(("port", ports[o]))
        else:
            return None
    return Plan(steps, slots, outputs, list(used_inputs), elements, sec.nnew, len(steps))


class TracePlan:
    """A cached trace whose programs are Numba kernels, run by the flush that hit it when that
    flush would run it inline (a read or ``ps.sync()`` of a small trace on an idle pipeline):
    the kernels are called with the flushed ports' buffers, without instantiating the template
    or a round through the E-Scheduler. The small-array read in a loop (``float(ps.max(u))``)
    spends its time there, not in the kernel."""
    __slots__ = ("steps", "slots", "elements", "dead", "counts", "runs", "inputs",
                 "__weakref__")

    def __init__(self, steps, slots, elements, dead, nkernels):
        self.steps, self.slots, self.elements, self.dead = steps, slots, elements, dead
        # the port numbers whose buffers the kernels read, each once
        self.inputs = tuple(dict.fromkeys(x for _, _, srcs, _ in steps
                                          for kind, x in srcs if kind == "p"))
        nbytes = sum(math.prod(shape) * dt.itemsize for _, shape, dt in slots)
        self.counts = (("sequences_submitted", 1), ("inline_sequences", 1),
                       ("kernels_launched", nkernels), ("program_cache_memory_hits", nkernels),
                       ("buffers_allocated", len(slots)), ("bytes_allocated", nbytes),
                       ("direct_replays", 1))
        self.runs = 0
        stats.register_runs(self)

    def run(self, kports, executor):
        """Run the trace over ``kports``; False (nothing changed): take the general path."""
        if self.elements > settings.inline_elements:
            return False
        vals = {}
        for i in self.inputs:
            p = kports[i]
            b = p.inputs[0] if p.kind == "view" else p
            v = b.value
            if b.state != DONE or type(v) is not np.ndarray:
                return False
            vals[i] = v.reshape(-1)
        f = cscheduler.flow()
        if not f.try_idle():
            return False
        try:
            bufs = [np.empty(shape, dt) for _, shape, dt in self.slots]
            _launch(self.steps, executor, bufs,
                    lambda kind, x: vals[x] if kind == "p" else scalar_value(kports[x]))
        except Exception:  # noqa: BLE001 - the general path splits, falls back and counts
            return False
        finally:
            f.release()
        self.runs += 1
        for (i, _, _), buf in zip(self.slots, bufs):
            p = kports[i]
            p.value = buf if p.nrefs > 0 else None     # released: nothing can read it
            p.state = DONE
            p.inputs = ()
        cscheduler.drop_dead_scratch(kports[i] for i in self.dead)
        return True


def trace_plan(t, seq, kports, executor):
    """The TracePlan of template ``t`` (``seq``: its instantiation for ``kports``, before
    submission), or None."""
    if type(executor) is not CPUExecutor or not seq.programs:
        return None
    pos = {p.id: i for i, p in enumerate(kports)}
    slot_of, slots, steps, elements = {}, [], [], 0
    for prog in seq.programs:
        k = prog.kernel
        if prog.kind != "kernel" or k is None:
            return None
        for p in prog.outputs:
            i = pos.get(p.id)
            if i is None or p.kind == "view" or p.value is not None or i in slot_of:
                return None
            slot_of[i] = len(slots)
            slots.append((i, p.shape, p.dtype))
        srcs = [("c", prog.table)]
        for a in k.loads:
            i = pos.get(a.port.id)
            b = a.port.inputs[0] if a.port.kind == "view" else a.port
            if i is None:
                return None
            if b.id in pos and pos[b.id] in slot_of:
                if a.port.kind == "view":
                    return None             # (a view of this trace's own result)
                srcs.append(("b", slot_of[pos[b.id]]))
            else:
                srcs.append(("p", i))
        for a in k.stores:
            i = pos.get(a.port.id)
            if a.role in ("copy", "alias") or i not in slot_of:
                return None
            srcs.append(("b", slot_of[i]))
        for sc in k.scalars:
            i = pos.get(sc.id)
            if i is None:
                return None
            srcs.append(("s", i))
        step = _step(prog, srcs, pos, slot_of)
        if step is None:
            return None
        steps.append(step)
        elements = max(elements, k.elements)
    dead = tuple(pos[p.id] for p in seq.dead if p.id in pos)
    return TracePlan(tuple(steps), tuple(slots), elements, dead, len(steps))
