"""Direct replay on the CPU executor: a macro section (``Plan``) or a trace-cache hit
(``TracePlan``) whose programs are Numba kernels reading
computed inputs is run straight from the replay call -- output buffers, kernel arguments, the
call -- with no ports for its intermediates, no program sequence and no E-Scheduler round.

This is the small-array case of ``@ps.macro``: re-creating ports, instantiating the template
and settling states costs the general replay path several times what NumPy spends on a small
update (docs/decisions.md). The plan is built from the first replay's instantiated sequence and used only
when that replay would itself have run inline on this thread: the pipeline idle, the inputs
computed host arrays, nothing watching (profiler, debugger, launch log, debug output). A plan
writes no input (region writes are not planned), so an exception simply sends the call down
the general path, which owns splitting and fallbacks."""
from __future__ import annotations

import math

import numpy as np

from ..core import dtypes as D, stats
from ..core.ir import DONE, Port
from ..compiler.kernel import is_update
from ..backends.numba_cpu import program_cache
from ..backends.linalg_intrinsics import HOST_INTRINSICS
from ..backends.base import HostPool, host_pool, kernel_scalar, ref_value
from ..backends.numba_cpu.executor import CPUExecutor, chunks_for
from . import cscheduler


class _Plan:
    """What both plans share: kernel steps, the output buffers each run allocates, and the
    counters a run adds (those of the general path it replaces; folded as counts x runs by
    ``stats.runtime_stats``)."""
    __slots__ = ("steps", "slots", "elements", "counts", "runs", "__weakref__")

    def __init__(self, steps, slots, elements, counts):
        # per kernel: (Kernels, elements, arg sources, reduction); per intrinsic (trace plans):
        # (host function, None, input sources, (port number, output slot))
        self.steps = steps
        self.slots = slots          # output buffers: (port number, shape, dtype)
        self.elements = elements    # the largest kernel's (intrinsics thread themselves)
        m = sum(1 for st in steps if st[1] is None)
        n = len(steps) - m
        nbytes = sum(math.prod(shape) * dt.itemsize for _, shape, dt in slots)
        self.counts = counts + (("sequences_submitted", 1), ("inline_sequences", 1),
                                ("kernels_launched", n), ("program_cache_memory_hits", n),
                                ("intrinsics_launched", m),
                                ("buffers_allocated", len(slots)), ("bytes_allocated", nbytes),
                                ("direct_replays", 1))
        self.runs = 0
        stats.register_runs(self)

    def _source(self, g, head, fail, executor):
        """The generated body shared by both plans (after ``head``, the plan's own input
        checks, which bind the kernels' load arguments): the small-and-idle check (the
        general path's: ``cscheduler.inline_limit``, so every kernel runs single-threaded),
        output buffers, the kernel calls under ``run_lock`` with the executor's reused
        reduction scratch; ``fail`` is what a run that must take the general path returns.
        Argument sources: ``c`` a constant (bound in ``g``), ``b`` an output buffer, ``i`` /
        ``p`` a checked input's flat value, ``s`` a flushed scalar."""
        g.update(plan=self, empty=np.empty, pool=host_pool.array, cs=cscheduler, nd=np.ndarray,
                 DONE=DONE, errstate=np.errstate, call=program_cache.call)
        lines = list(head)
        lines += ["    f = cs._flow",
                  f"    if {self.elements} > cs.inline_limit() or f is None or f.inflight:",
                  f"        return {fail}"]
        for j, (_, shape, dt) in enumerate(self.slots):
            g[f"D{j}"] = dt
            # (a large one -- an intrinsic's result -- from the host pool, as Executor.alloc)
            big = math.prod(shape) * dt.itemsize >= HostPool.MIN_BYTES
            lines.append(f"    b{j} = {'pool' if big else 'empty'}({tuple(shape)!r}, D{j})")
            # (a 1-D buffer is its own flat view: no reshape call)
            lines.append(f"    f{j} = b{j}" if len(shape) == 1 else f"    f{j} = b{j}.reshape(-1)")
        # (host intrinsics run with NumPy's floating-point warnings off, as ``run_refop``
        # runs them: one errstate for the whole run, not one per step)
        quiet = ", errstate(all='ignore')" if any(st[1] is None for st in self.steps) else ""
        lines += ["    try:",
                  f"        with executor.run_lock{quiet}:"]
        for si, (kern, elements, srcs, red) in enumerate(self.steps):
            if elements is None:
                lines += self._intrinsic(g, si, kern, srcs, red)
                continue
            g[f"K{si}"] = kern
            args = []
            for j, (kind, x) in enumerate(srcs):
                if kind == "c":
                    g[f"c{si}_{j}"] = x
                    args.append(f"c{si}_{j}")
                elif kind == "b":
                    args.append(f"f{x}")
                elif kind in ("i", "p"):
                    args.append(f"{kind}{x}")
                else:           # "s": a scalar port of the flush, x = (number, native)
                    # (``kernel_scalar`` inline: the Python number the kernel casts itself;
                    # ``native`` None when the key says the value is one already -- a Python
                    # float for a float dtype -- else the type to convert it with)
                    if x[1] is None:
                        args.append(f"kp[{x[0]}].scalar")
                    else:
                        g[f"T{x[0]}"] = x[1]
                        args.append(f"T{x[0]}(kp[{x[0]}].scalar)")
            pre = "            "
            lines.append(f"{pre}a = ({''.join(a + ', ' for a in args)})")
            if red is not None:
                # the chunk count and the executor's reused scratch, bound once (the chunk
                # count follows Numba's thread count, fixed here: any count gives the same
                # result; the scratch arrays stay this plan's if the executor drops them)
                K, R0, partials = red
                C = chunks_for(K, R0)
                g[f"S{si}"] = executor.scratch(partials, K * C, R0) + (C,)
                lines.append(f"{pre}a = a + S{si}")
            lines.append(f"{pre}call(K{si}, True, a)")        # single-threaded (above)
        lines += ["    except Exception:  # the general path splits, falls back and counts",
                  f"        return {fail}",
                  "    plan.runs += 1"]
        return lines


    def _intrinsic(self, g, si, fn, srcs, out):
        """An intrinsic step (BLAS, LAPACK, FFT, sort, scan on the host), as the general path
        runs it (executors/base.py ``run_refop``): the function over the port and its input
        values, the result cast and copied into the step's output buffer. Sources: ``b`` a
        buffer of this plan (shaped), ``v`` a port of the flush (its host value)."""
        i, j = out
        _, shape, dt = self.slots[j]
        g.update({f"I{si}": fn, "rv": ref_value, "asarray": np.asarray})
        args = "".join(f"b{x}, " if kind == "b" else f"rv(kp[{x}]), " for kind, x in srcs)
        pre = "            "
        return [f"{pre}r = I{si}(kp[{i}], {args})",
                f"{pre}b{j}[...] = asarray(r).astype(D{j}, copy=False).reshape({tuple(shape)!r})"]


def _compile(lines, g, name):
    exec(compile("\n".join(lines), f"<streamrt {name}>", "exec"), g)  # noqa: S102
    return g[name]


class Plan(_Plan):
    """A macro section's plan: its outputs are new ports (recipes ``N``), its inputs the
    call's Arrays (recipes ``I``), its constants frozen at the recording (``F``)."""
    __slots__ = ("outputs", "inputs", "recipes", "run")

    def __init__(self, steps, slots, elements, outputs, inputs, recipes, nnew, struct, wrap,
                 unflatten, executor):
        super().__init__(steps, slots, elements,
                         (("ops_recorded", nnew), ("flushes", 1), ("macro_cache_hits", 1)))
        self.outputs = outputs      # per section output: ("in", k) | ("slot", j) | ("port", p)
        self.inputs = inputs        # input positions whose ports are read
        self.recipes = recipes      # per slot: the recipe of the port it becomes
        # run(inputs, q, executor): the call's result -- the section's outputs as Arrays
        # (``wrap``) in the body's structure (``struct``, rebuilt by frontend/macro.py's
        # ``unflatten``) -- or None: take
        # the general path (an input not yet computed, the pipeline busy, the kernel raised).
        # Generated straight-line code: this is the whole of a small replay's time.
        g = {"Port": Port, "W": wrap, "unflatten": unflatten, "struct": struct}
        head = ["def run(inputs, q, executor):"]
        for j, k in enumerate(inputs):
            head += [f"    x = inputs[{k}]._port",
                     "    v = x.value",
                     "    if x.state != DONE or type(v) is not nd:",
                     "        return None",
                     f"    i{j} = v if v.ndim == 1 else v.reshape(-1)"]
        lines = self._source(g, head, "None", executor)
        names = []
        for n, (kind, x) in enumerate(outputs):
            if kind == "in":
                names.append(f"inputs[{x}]._port")
            elif kind == "port":
                g[f"O{n}"] = x
                names.append(f"O{n}")
            else:
                if f"o{x}" not in names:
                    _, pkind, op, dt, shape, _ins, params, site, loop = recipes[x]
                    g[f"R{x}"] = (pkind, op, dt, shape, params, site, loop)
                    lines += [f"    k, o, d, s, a, t, l = R{x}",
                              f"    o{x} = Port(k, o, d, s, (), a, t, q, b{x}, None, l)",
                              f"    o{x}.state = DONE"]
                names.append(f"o{x}")
        leaves = "".join(f"W({n}), " for n in names)
        if struct == ("T", tuple(("A", n) for n in range(len(names)))):
            lines.append(f"    return ({leaves})")         # a flat tuple: no unflatten call
        else:
            lines.append(f"    return unflatten(struct, ({leaves}))")
        self.run = _compile(lines, g, "run")


class TracePlan(_Plan):
    """A cached trace whose programs are Numba kernels, run by the flush that hit it when that
    flush would run it inline (a read or ``ps.sync()`` of a small trace on an idle pipeline):
    the kernels are called with the flushed ports' buffers, without instantiating the template
    or a round through the E-Scheduler. The small-array read in a loop (``float(ps.max(u))``)
    spends its time there, not in the kernel."""
    __slots__ = ("dead", "inputs", "run")

    def __init__(self, steps, slots, elements, dead, executor, stat="trace_cache"):
        # (a run is also the flush's cache hit and the flush: counted with the run)
        super().__init__(steps, slots, elements, ((f"{stat}_hits", 1), ("flushes", 1)))
        self.dead = dead
        # the port numbers whose buffers the kernels read, each once
        self.inputs = tuple(dict.fromkeys(x for _, _, srcs, _ in steps
                                          for kind, x in srcs if kind == "p"))
        # the ports of the flush an intrinsic reads (through their host value), each once
        values = tuple(dict.fromkeys(x for _, _, srcs, _ in steps
                                     for kind, x in srcs if kind == "v"))
        # run(kports, executor): run the trace over ``kports``; False (nothing changed): take
        # the general path. Generated straight-line code, as Plan.run.
        g = {"drop": cscheduler.drop_dead_scratch}
        head = ["def run(kp, executor):"]
        for i in self.inputs:
            head += [f"    x = kp[{i}]",
                     "    if x.kind == 'view':",
                     "        x = x.inputs[0]",
                     "    v = x.value",
                     "    if x.state != DONE or type(v) is not nd:",
                     "        return False",
                     f"    p{i} = v if v.ndim == 1 else v.reshape(-1)"]
        for i in values:
            head += [f"    x = kp[{i}]",
                     "    if x.kind != 'scalar':",
                     "        if x.kind == 'view':",
                     "            x = x.inputs[0]",
                     "        if x.state != DONE or type(x.value) is not nd:",
                     "            return False"]
        lines = self._source(g, head, "False", executor)
        for j, (i, _, _) in enumerate(slots):
            lines += [f"    x = kp[{i}]",
                      f"    x.value = b{j} if x.nrefs > 0 else None  # released: never read",
                      "    x.state = DONE",
                      "    x.inputs = ()"]
        if dead:
            lines.append(f"    drop([kp[i] for i in {tuple(dead)!r}])")
        lines.append("    return True")
        self.run = _compile(lines, g, "run")


def _steps(seq, ports, output_ok, load_source, scalar_source, intrinsic_source=None):
    """The steps of program sequence ``seq`` over the numbered ``ports``, or None if a program
    is neither a plain Numba kernel writing fresh buffers nor (with ``intrinsic_source``) a
    host intrinsic: (steps, output slots, port number -> slot, largest kernel space).
    ``output_ok(port, number)``: may this output be a fresh buffer; ``load_source(port,
    number, slot_of)``, ``scalar_source(port, number)`` and ``intrinsic_source(port, number,
    slot_of)``: the argument source of a kernel load, a scalar parameter or an intrinsic's
    input (None: no plan)."""
    pos = {p.id: i for i, p in enumerate(ports)}
    slot_of, slots, steps, elements = {}, [], [], 0
    for prog in seq.programs:
        k = prog.kernel
        if prog.kind == "intrinsic" and intrinsic_source is not None:
            if {p.id for p in prog.ops} != {p.id for p in prog.outputs}:
                return None
            for p in prog.ops:
                fn = HOST_INTRINSICS.get(p.op) if p.kind == "intrinsic" else None
                i = pos.get(p.id)
                if fn is None or i is None or i in slot_of or not output_ok(p, i):
                    return None
                srcs = []
                for a in p.inputs:
                    s = intrinsic_source(a, pos.get(a.id), slot_of)
                    if s is None:
                        return None
                    srcs.append(s)
                slot_of[i] = len(slots)
                slots.append((i, p.shape, p.dtype))
                steps.append((fn, None, tuple(srcs), (i, slot_of[i])))
            continue
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
        try:
            kern = program_cache.numba_kernels(prog.source, prog.fn)
        except program_cache.CompileFailed:
            return None
        if not kern.called:                 # (a kernel not run yet may fail to compile: the
            return None                     # general path splits it, a plan would raise)
        steps.append((kern, k.elements, tuple(srcs), red))
        elements = max(elements, k.elements)
    return tuple(steps), tuple(slots), slot_of, elements


def plan(sec, seq, ports, executor, wrap, unflatten):
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
        return ("c", kernel_scalar(p)) if i is not None and recipes[i][0] == "F" else None

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
                tuple(recipes[i] for i, _, _ in slots), sec.nnew, sec.struct, wrap, unflatten,
                executor)


def trace_plan(t, seq, kports, executor, stat="trace_cache"):
    """The TracePlan of template ``t`` (``seq``: its instantiation for ``kports``, before
    submission; ``stat``: its cache's counter prefix), or None."""
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

    def intrinsic_source(p, i, slot_of):
        if i is None:
            return None
        if i in slot_of:                    # computed by an earlier step of this trace
            return ("b", slot_of[i])
        b = p.inputs[0] if p.kind == "view" else p
        return None if pos.get(b.id) in slot_of else ("v", i)

    def scalar_source(p, i):
        if i is None:
            return None
        native = D.PY_NUMBER[p.dtype.kind]
        # a Python scalar's kind is part of the trace key (its port's params): a float
        # operand of a float dtype arrives as it is; anything else is converted per run
        weak = p.params[:1] == ("weak",) and D.PY_NUMBER.get(p.params[1]) is native
        return ("s", (i, None if weak else native))

    pos = {p.id: i for i, p in enumerate(kports)}
    r = _steps(seq, kports, lambda p, i: p.value is None, load_source, scalar_source,
               intrinsic_source)
    if r is None:
        return None
    steps, slots, _, elements = r
    # the dead region writes (``drop_dead_scratch`` frees their scratch bases): the other dead
    # ports -- a loop's released intermediates, ~100 in a 10-step trace -- need no visit
    dead = tuple(pos[p.id] for p in seq.dead if p.id in pos and is_update(p))
    return TracePlan(steps, slots, elements, dead, executor, stat)
