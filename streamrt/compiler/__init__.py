"""ProgGen: work-queue entries in, program sequence out (backward pass, forward pass,
scheduling pass, code generation). Pure: it imports no device library."""
from __future__ import annotations

import sys

from ..core.config import settings
from . import analysis, fusion
from .kernel import build_kernel
from .sequence import Program, ProgramSequence

RENDERERS = {}


def _renderer(name):
    if name not in RENDERERS:
        if name == "numba":
            from ..backends.numba_cpu import render as render_numba
            RENDERERS[name] = render_numba.render
        elif name in ("opencl", "opencl-fp32", "cuda"):
            from ..backends import c_render as render_c
            RENDERERS[name] = {"opencl": render_c.render_opencl, "cuda": render_c.render_cuda,
                               "opencl-fp32": render_c.render_opencl_fp32}[name]
    return RENDERERS[name]


def kernel_program(ops, stored, space, axes, renderer="numba", inplace=frozenset(), phases=None,
                   stash=()):
    k = build_kernel(ops, stored, space, axes or (), inplace, phases, stash)
    inputs = [a.port for a in k.loads]
    # region writes wait for (and copy or reuse) their base
    inputs += [a.port.inputs[0] for a in k.stores if a.role in ("copy", "alias")]
    outputs = [a.port for a in k.stores] + list(k.reductions)
    # (only this program's ops: the sequence-wide set would make every program -- and each
    # instantiation of a cached template -- cost the size of the whole sequence)
    prog = Program("kernel", list(ops), list(inputs) + list(k.scalars), outputs, kernel=k,
                   stored=frozenset(p.id for p in ops if p.id in stored))
    if renderer != "numba" and _c_host(k):
        # no complex type in OpenCL/CUDA C: the device executor runs this kernel on the CPU
        prog.source, prog.fn, prog.table, prog.partials = None, "host", None, None
        return prog
    prog.source, prog.fn, prog.table, prog.partials = _renderer(renderer)(k)
    return prog


def _c_host(k):
    from ..backends.c_render import has_complex
    return has_complex(k)


def generate(entries, backend_caps):
    """Build the program sequence for a flush. ``backend_caps``: dict with 'fuse' (bool),
    'renderer' ('numba' or None for one reference op per program), 'max_ops'."""
    ports = analysis.collect(entries)
    live, consumers, dead = analysis.backward(ports)
    ops = [p for p in live if p.kind != "view"]
    fuse = backend_caps.get("fuse", True) and settings.fusion
    # region writes fused into the kernel computing their value, and fused scans: Numba
    # renderer only, unless the executor opts out (Dask re-plans kernels per chunk)
    fuse_updates = backend_caps.get("renderer") == "numba" and backend_caps.get("fuse_updates",
                                                                                True)
    groups, gidx = fusion.schedule(ops, fuse=fuse, max_ops=backend_caps.get("max_ops", 128),
                                   fuse_updates=fuse_updates)
    inlined = set()
    if fuse and backend_caps.get("renderer") == "numba" and backend_caps.get("inline_scalars",
                                                                              True):
        inlined = fusion.inline_scalars(groups, gidx, consumers)
    if fuse and backend_caps.get("sink_ops", True):
        fusion.sink_ops(groups, gidx, consumers, backend_caps.get("max_ops", 128))
    if fuse and backend_caps.get("renderer") == "numba" and settings.row_fusion \
            and backend_caps.get("row_fusion", True):
        fusion.row_fuse(groups, gidx, consumers, backend_caps.get("max_ops", 128))
    stored = analysis.forward(live, consumers, gidx) - inlined
    scans = {}
    if fuse and backend_caps.get("renderer") == "numba" and settings.fuse_scans \
            and backend_caps.get("fuse_scans", True):
        from . import scan
        scans = scan.fuse_scans(groups, gidx, consumers, stored)
    inplace = analysis.inplace_updates(groups, gidx, consumers) if fuse_updates else set()
    programs = []
    for g in groups:
        if not g.ops:
            continue                     # emptied by fuse_scans
        if g.kind == "scan":
            programs.append(_scan_program(g, scans))
        elif g.kind == "intrinsic":
            p = g.ops[0]
            programs.append(Program("intrinsic", [p], list(p.inputs), [p]))
        elif backend_caps.get("renderer") is None:
            p = g.ops[0]
            programs.append(Program("refop", [p], list(p.inputs), [p]))
        else:
            programs.append(kernel_program(g.ops, stored, g.space, g.axes,
                                           backend_caps["renderer"], inplace, g.phases,
                                           g.stash))
    if settings.debug >= 3:
        for g in groups:
            print(f"[streamrt] fusion group {g}", file=sys.stderr)
    return ProgramSequence(programs, dead, groups)


def _scan_program(g, scans):
    """A cumsum/cumprod fused with its element-wise producers (proggen/scan.py)."""
    from . import scan
    p = g.ops[-1]
    ops, leaves = scans[p.id]
    prog = Program("scan", list(g.ops), list(leaves), [p])
    prog.source, prog.fn = scan.render(ops, leaves, p)
    return prog


def split(prog, renderer="numba"):
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
            out.append(kernel_program(part, cross, k.space, k.axes if reds else (), renderer))
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
        out.append(kernel_program(part, cross, sp, k.axes if reds else (), renderer))
    return out
