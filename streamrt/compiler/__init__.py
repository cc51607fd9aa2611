"""The compiler (ProgGen): work-queue entries in, program sequence out. The passes
(passes.py, in order) group the live ops into kernels; each kernel's IR (kernel.py) gets a
loop plan (plan.py) and is rendered by the backend -- ``caps["render"]``, its renderer, is
all the compiler knows of it -- into source; the programs form the sequence (sequence.py).
Pure: it imports no backend and no device library."""
from __future__ import annotations

import sys

from ..core.config import settings
from . import passes, plan
from .kernel import build_kernel, has_complex
from .sequence import Program, ProgramSequence


def kernel_program(ops, stored, space, axes, caps, inplace=frozenset(), phases=None,
                   stash=()):
    """The program of one fused group: its kernel IR, planned and rendered by the backend
    (``caps["render"](kernel, plan)`` -> source, function name, index table, scratch spec)."""
    k = build_kernel(ops, stored, space, axes or (), inplace, phases, stash)
    inputs = [a.port for a in k.loads]
    # region writes wait for (and copy or reuse) their base
    inputs += [a.port.inputs[0] for a in k.stores if a.role in ("copy", "alias")]
    outputs = [a.port for a in k.stores] + list(k.reductions)
    # (only this program's ops: the sequence-wide set would make every program -- and each
    # instantiation of a cached template -- cost the size of the whole sequence)
    prog = Program("kernel", list(ops), list(inputs) + list(k.scalars), outputs, kernel=k,
                   stored=frozenset(p.id for p in ops if p.id in stored))
    if not caps.get("complex", True) and has_complex(k):
        # a backend without complex types (C dialects): its executor runs this on the CPU
        prog.source, prog.fn, prog.table, prog.partials = None, "host", None, None
        return prog
    prog.source, prog.fn, prog.table, prog.partials = caps["render"](k, plan.choose(k))
    return prog


def generate(entries, caps, reusable=frozenset()):
    """Build the program sequence for a flush. ``caps``: the backend's (``Executor.caps``) --
    ``render`` (its renderer, or None: one reference op per program), ``render_scan`` (fused
    scans), ``complex`` (it renders complex dtypes), ``max_ops`` and the switches of the
    passes (passes.py)."""
    f = passes.run(entries, caps, reusable)
    programs = []
    for g in f.groups:
        if not g.ops:
            continue                     # emptied by fuse_scans
        if g.kind == "scan":
            programs.append(_scan_program(g, f.scans, caps))
        elif g.kind == "intrinsic":
            p = g.ops[0]
            programs.append(Program("intrinsic", [p], list(p.inputs), [p]))
        elif caps.get("render") is None:
            p = g.ops[0]
            programs.append(Program("refop", [p], list(p.inputs), [p]))
        else:
            programs.append(kernel_program(g.ops, f.stored, g.space, g.axes, caps, f.inplace,
                                           g.phases, g.stash))
    if settings.debug >= 3:
        for g in f.groups:
            print(f"[streamrt] fusion group {g}", file=sys.stderr)
    return ProgramSequence(programs, f.dead, f.groups)


def _scan_program(g, scans, caps):
    """A cumsum/cumprod fused with its element-wise producers (scan.py), rendered by the
    backend (``caps["render_scan"]``)."""
    p = g.ops[-1]
    ops, leaves = scans[p.id]
    prog = Program("scan", list(g.ops), list(leaves), [p])
    prog.source, prog.fn = caps["render_scan"](ops, leaves, p)
    return prog


def split(prog, caps):
    """A kernel that failed to compile, split in two halves (ports crossing the cut are stored)."""
    ops = prog.ops
    k = prog.kernel
    if k.phases:
        # a row kernel: one kernel per phase (its reductions and row-buffered values stored
        # for the next phases; the values it recomputed are recomputed by each phase's kernel)
        cross = set(prog.stored) | {p.id for p in k.reductions} | {k.ops[n].id for n in k.stash}
        out = []
        for ph in k.phases:
            part = [k.ops[n] for n in ph]
            reds = any(p.kind == "reduce" for p in part)
            out.append(kernel_program(part, cross, k.space, k.axes if reds else (), caps))
        return out
    if len(ops) < 2:
        return None
    half = len(ops) // 2
    first, second = ops[:half], ops[half:]
    ids2 = {p.id for p in second}
    cross = set(prog.stored)
    for p in second:
        for i in p.inputs:
            if i.id in {q.id for q in first}:
                cross.add(i.id)
    del ids2
    out = []
    for part in (first, second):
        reds = [p for p in part if p.kind == "reduce"]
        sp = k.space
        out.append(kernel_program(part, cross, sp, k.axes if reds else (), caps))
    return out
