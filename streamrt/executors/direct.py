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


class _Plan:
    """What both plans share: kernel steps, the output buffers each run allocates, and the
    counters a run adds (those of the general path it replaces; folded as counts x runs by
    ``stats.runtime_stats``)."""
    __slots__ = ("steps", "slots", "elements", "counts", "runs", "scratch", "__weakref__")

    def __init__(self, steps, slots, elements, counts):
        self.steps = steps          # per kernel: (Kernels, elements, arg sources, reduction)
        self.scratch = [None] * len(steps)  # per reduction step: (C, partials and blocks),
                                            # reused (runs hold ``run_lock``; only the kernel
                                            # call reads them)
        self.slots = slots          # output buffers: (port number, shape, dtype)
        self.elements = elements
        n = len(steps)
        nbytes = sum(math.prod(shape) * dt.itemsize for _, shape, dt in slots)
        self.counts = counts + (("sequences_submitted", 1), ("inline_sequences", 1),
                                ("kernels_launched", n), ("program_cache_memory_hits", n),
                                ("buffers_allocated", len(slots)), ("bytes_allocated", nbytes),
                                ("direct_replays", 1))
        self.runs = 0
        stats.register_runs(self)

    def _run(self, executor, resolve):
        """Allocate the outputs and call the kernels; their buffers, or None (nothing
        changed): the caller takes the general path, which owns splitting and fallbacks.
        Only when the general path would run inline: small, and nothing in flight (a racy
        read of the flow count is enough -- launches are serialised by ``run_lock``)."""
        f = cscheduler._flow
        if self.elements > settings.inline_elements or f is None or f.inflight:
            return None
        bufs = [np.empty(shape, dt) for _, shape, dt in self.slots]
        flat = [b.reshape(-1) for b in bufs]
        serial_max = settings.serial_elements
        try:
            with executor.run_lock:
                for si, (kern, elements, srcs, red) in enumerate(self.steps):
                    args = [x if kind == "c" else flat[x] if kind == "b" else
                            resolve(kind, x) for kind, x in srcs]
                    if red is not None:
                        K, R0, partials = red
                        C = chunks_for(K, R0)
                        sc = self.scratch[si]
                        if sc is None or sc[0] != C:
                            sc = self.scratch[si] = (C, kernel_partials(partials, K * C, R0))
                        args += sc[1]
                        args.append(C)
                    program_cache.call(kern, elements <= serial_max, args)
        except Exception:  # noqa: BLE001 - the general path splits, falls back and counts
            return None
        self.runs += 1
        return bufs


class Plan(_Plan):
    """A macro section's plan: its outputs are new ports (recipes ``N``), its inputs the
    call's Arrays (recipes ``I``), its constants frozen at the recording (``F``)."""
    __slots__ = ("outputs", "inputs", "recipes")

    def __init__(self, steps, slots, elements, outputs, inputs, recipes, nnew):
        super().__init__(steps, slots, elements,
                         (("ops_recorded", nnew), ("flushes", 1), ("macro_cache_hits", 1)))
        self.outputs = outputs      # per section output: ("in", k) | ("slot", j) | ("port", p)
        self.inputs = inputs        # input positions whose ports are read
        self.recipes = recipes      # per slot: the recipe of the port it becomes

    def run(self, inputs, q, executor):
        """The section's output ports (one per section output), or None: take the general
        path (an input not yet computed, the pipeline busy, or the kernel raised)."""
        vals = []
        for k in self.inputs:
            p = inputs[k]._port
            v = p.value
            if p.state != DONE or type(v) is not np.ndarray:
                return None
            vals.append(v.reshape(-1))
        bufs = self._run(executor, lambda kind, x: vals[x])
        if bufs is None:
            return None
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
                    _, pkind, op, dt, shape, _ins, params, site, loop = self.recipes[x]
                    p = Port(pkind, op, dt, shape, (), params, site, q, bufs[x], None, loop)
                    p.state = DONE
                    made[x] = p
                out.append(p)
        return out


class TracePlan(_Plan):
    """A cached trace whose programs are Numba kernels, run by the flush that hit it when that
    flush would run it inline (a read or ``ps.sync()`` of a small trace on an idle pipeline):
    the kernels are called with the flushed ports' buffers, without instantiating the template
    or a round through the E-Scheduler. The small-array read in a loop (``float(ps.max(u))``)
    spends its time there, not in the kernel."""
    __slots__ = ("dead", "inputs")

    def __init__(self, steps, slots, elements, dead):
        super().__init__(steps, slots, elements, ())
        self.dead = dead
        # the port numbers whose buffers the kernels read, each once
        self.inputs = tuple(dict.fromkeys(x for _, _, srcs, _ in steps
                                          for kind, x in srcs if kind == "p"))

    def run(self, kports, executor):
        """Run the trace over ``kports``; False (nothing changed): take the general path."""
        vals = {}
        for i in self.inputs:
            p = kports[i]
            b = p.inputs[0] if p.kind == "view" else p
            v = b.value
            if b.state != DONE or type(v) is not np.ndarray:
                return False
            vals[i] = v.reshape(-1)
        bufs = self._run(executor,
                         lambda kind, x: vals[x] if kind == "p" else scalar_value(kports[x]))
        if bufs is None:
            return False
        for (i, _, _), buf in zip(self.slots, bufs):
            p = kports[i]
            p.value = buf if p.nrefs > 0 else None     # released: nothing can read it
            p.state = DONE
            p.inputs = ()
        cscheduler.drop_dead_scratch(kports[i] for i in self.dead)
        return True


def _steps(seq, ports, output_ok, load_source, scalar_source):
    """The kernel steps of program sequence ``seq`` over the numbered ``ports``, or None if a
    program is not a plain Numba kernel writing fresh buffers: (steps, output slots,
    port number -> slot, largest space). ``output_ok(port, number)``: may this output be a
    fresh buffer; ``load_source(port, number, slot_of)`` and ``scalar_source(port, number)``:
    the argument source of a load or a scalar parameter (None: no plan)."""
    pos = {p.id: i for i, p in enumerate(ports)}
    slot_of, slots, steps, elements = {}, [], [], 0
    for prog in seq.programs:
        k = prog.kernel
        if prog.kind != "kernel" or k is None:
            return None
        for p in prog.outputs:
            i = pos.get(p.id)
            if i is None or p.kind == "view" or i in slot_of or not output_ok(p, i):
                return None
            slot_of[i] = len(slots)
            slots.append((i, p.shape, p.dtype))
        srcs = [("c", prog.table)]
        for a in k.loads:
            s = load_source(a.port, pos.get(a.port.id), slot_of)
            if s is None:
                return None
            srcs.append(s)
        for a in k.stores:
            if a.role in ("copy", "alias") or pos.get(a.port.id) not in slot_of:
                return None                 # (region writes are not planned)
            srcs.append(("b", slot_of[pos[a.port.id]]))
        for sc in k.scalars:
            s = scalar_source(sc, pos.get(sc.id))
            if s is None:
                return None
            srcs.append(s)
        red = None
        if k.is_reduction:
            for r in k.reductions:
                if pos.get(r.id) not in slot_of:
                    return None
                srcs.append(("b", slot_of[pos[r.id]]))
            red = (math.prod(k.kept) if k.kept else 1, k.red[0] if k.red else 1,
                   prog.partials)
        steps.append((program_cache.numba_kernels(prog.source, prog.fn), k.elements,
                      tuple(srcs), red))
        elements = max(elements, k.elements)
    return tuple(steps), tuple(slots), slot_of, elements


def plan(sec, seq, ports, executor):
    """The direct plan of macro section ``sec`` (``seq`` and ``ports``: its first replay's
    instantiated sequence, before submission), or None when it cannot have one."""
    if type(executor) is not CPUExecutor or sec.advance or not seq.programs:
        return None
    recipes = sec.recipes
    used_inputs = {}        # input position -> index in the run's value list

    def load_source(p, i, slot_of):
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

    def scalar_source(p, i):
        return ("c", scalar_value(p)) if i is not None and recipes[i][0] == "F" else None

    r = _steps(seq, ports, lambda p, i: recipes[i][0] == "N", load_source, scalar_source)
    if r is None:
        return None
    steps, slots, slot_of, elements = r
    outputs = []
    for _, o in sec.outputs:
        if o in slot_of:
            outputs.append(("slot", slot_of[o]))
        elif recipes[o][0] == "I":
            outputs.append(("in", recipes[o][1]))
        elif recipes[o][0] == "F":
            outputs.append(("port", ports[o]))
        else:
            return None
    return Plan(steps, slots, elements, outputs, list(used_inputs),
                tuple(recipes[i] for i, _, _ in slots), sec.nnew)


def trace_plan(t, seq, kports, executor):
    """The TracePlan of template ``t`` (``seq``: its instantiation for ``kports``, before
    submission), or None."""
    if type(executor) is not CPUExecutor or not seq.programs:
        return None

    def load_source(p, i, slot_of):
        if i is None:
            return None
        b = p.inputs[0] if p.kind == "view" else p
        j = pos.get(b.id)
        if j in slot_of:                    # computed by an earlier kernel of this trace
            return None if p.kind == "view" else ("b", slot_of[j])
        return ("p", i)

    pos = {p.id: i for i, p in enumerate(kports)}
    r = _steps(seq, kports, lambda p, i: p.value is None, load_source,
               lambda p, i: None if i is None else ("s", i))
    if r is None:
        return None
    steps, slots, _, elements = r
    dead = tuple(pos[p.id] for p in seq.dead if p.id in pos)
    return TracePlan(steps, slots, elements, dead)
