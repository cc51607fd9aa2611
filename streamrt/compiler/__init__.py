"""The compiler (ProgGen): work-queue entries in, program sequence out. The passes
(passes.py, in order) group the live ops into kernels; each kernel's IR (kernel.py) gets a
loop plan (plan.py) and is rendered by the backend -- ``caps["render"]``, its renderer, is
all the compiler knows of it -- into source; the programs form the sequence (sequence.py).
Pure: it imports no backend and no device library."""
from __future__ import annotations

import sys

from ..core.config import settings
from ..core.ir import is_scratch
from ..core.keys import group_key, stride_classes
from . import passes, plan
from .fusion import space_of
from .kernel import build_kernel, has_complex
from .sequence import LAZY_TABLE, Program, ProgramSequence, instantiate, to_template


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
    memo = {}
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
        elif g.phases:
            programs.append(kernel_program(g.ops, f.stored, g.space, g.axes, caps, f.inplace,
                                           g.phases, g.stash))
        else:
            programs.append(_repeated_program(memo, g.ops, f.stored, g.space, g.axes, caps,
                                              f.inplace))
    if settings.debug >= 3:
        for g in f.groups:
            print(f"[streamrt] fusion group {g}", file=sys.stderr)
    return ProgramSequence(programs, f.dead, f.groups)


def _repeated_program(memo, ops, stored, space, axes, caps, inplace):
    """``kernel_program`` for a group, or, when an earlier group of this flush had the same
    structure (core/keys.group_key) -- a loop body recorded many times over before its first
    flush -- that group's program instantiated over this one's ports: the kernel and its
    source are functions of the key, so the source is rendered once. (fdtd-2d, 200 steps of
    4 kernels: the first flush rendered 801 kernels, ~0.1 ms each.)"""
    gk = group_key(ops, stored, inplace, space, axes)
    if gk is None:
        return kernel_program(ops, stored, space, axes, caps, inplace)
    key, kports = gk
    t = memo.get(key)
    if t is not None:
        return instantiate(t, kports).programs[0]
    prog = kernel_program(ops, stored, space, axes, caps, inplace)
    t = to_template(ProgramSequence([prog], []), kports)
    if t is not None:
        memo[key] = t
    return prog


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


# ---- re-deriving a cached template for other sizes (the shape-generic trace cache) ----------
def signature(kept, red, accesses, index):
    """What a kernel's source depends on besides its ops and dtypes: the number of collapsed
    loops, and per access (offset, kept strides, reduced strides) the strides that are 0 or 1
    (the renderers write those as literals) and the others' signs (a view with a negative
    stride is indexed from its offset); sizes, offsets and the other strides are read from
    the index table at run time (kernel.index_table)."""
    return (len(kept), len(red),
            tuple((stride_classes(ks), stride_classes(rs)) for ks, rs in accesses),
            None if index is None else (stride_classes(index[0]), stride_classes(index[1])))


def _broadcasts(shape, space):
    return len(shape) <= len(space) and all(
        a == 1 or a == b for a, b in zip(reversed(shape), reversed(space)))


def reoffset(t, ports):
    """A program sequence for ``ports`` from template ``t`` of a trace whose key differs only
    in its views' offsets (core/keys.same_but_offsets): the template's programs, each
    kernel's loads at the new ports' offsets and its index table built anew at first use.
    Sizes and strides are the template's, so its fusion, stores and sources hold; None when
    the template holds a program ``reshape`` would not re-derive either."""
    if not t.generic:
        return None
    seq = instantiate(t, ports)
    for prog in seq.programs:
        k = prog.kernel
        if k is None:
            continue
        for a in k.loads:
            a.off = a.port.base_view()[1]
        if prog.table is not None:
            prog.table = LAZY_TABLE
    return seq


def reshape(t, ports, caps):
    """A program sequence for ``ports`` from template ``t`` of the same trace over other
    sizes and offsets (runtime/trace_cache.py's shape-generic entries), or None when the
    template does not fit them. The fusion groups, what they store and the dead ports are
    the template's; each kernel is rebuilt over the new ports (its loops, offsets and
    strides), after checking what the passes checked against sizes: every op of a group
    shares its space (an inlined op broadcasts to it), and a region write that reuses its
    base still reads that base only at the written elements. A kernel whose signature is the
    template's keeps its source (and compiled function) with a new index table; another is
    rendered again."""
    programs = []
    if t.signatures is None:
        t.signatures = [None if kt is None else
                        signature(kt[3], kt[4], [(a[3], a[4]) for a in kt[5] + kt[6]], kt[9])
                        for _, _, _, _, _, kt, *_ in t.programs]
    for (kind, ops, ins, outs, stored, kt, source, fn, table, partials, _w), tsig in \
            zip(t.programs, t.signatures):
        pops = [ports[i] for i in ops]
        sids = frozenset(ports[i].id for i in stored)
        if kt is None:
            programs.append(Program(kind, pops, [ports[i] for i in ins],
                                    [ports[i] for i in outs], stored=sids))
            continue
        space = space_of(pops[-1])
        for p in pops:
            if space_of(p) != space and (p.kind != "map" or p.id in sids or
                                         not _broadcasts(p.shape, space)):
                return None
        inplace = frozenset(ports[a[0]].id for a in kt[6] if a[1] == "alias")
        k = build_kernel(pops, sids, space, kt[2] or (), inplace)
        for a in k.stores:
            if a.role != "alias" or is_scratch(a.port.inputs[0]):
                continue
            b = a.port.inputs[0]
            for ld in k.loads:
                lb = ld.port.inputs[0] if ld.port.kind == "view" else ld.port
                if lb is b and (ld.off != a.off or ld.kept != a.kept or ld.red != a.red):
                    return None
        inputs = [a.port for a in k.loads]
        inputs += [a.port.inputs[0] for a in k.stores if a.role in ("copy", "alias")]
        prog = Program("kernel", pops, inputs + list(k.scalars),
                       [a.port for a in k.stores] + list(k.reductions), kernel=k, stored=sids)
        if fn == "host":
            prog.fn = "host"
        elif tsig == signature(k.kept, k.red, [(a.kept, a.red) for a in k.loads + k.stores],
                               None if k.index is None else (k.index.kept, k.index.red)):
            prog.source, prog.fn, prog.partials = source, fn, partials
            prog.table = LAZY_TABLE     # (an interpreted run never reads it)
        else:
            prog.source, prog.fn, prog.table, prog.partials = caps["render"](k, plan.choose(k))
        programs.append(prog)
    return ProgramSequence(programs, [ports[i] for i in t.dead])
