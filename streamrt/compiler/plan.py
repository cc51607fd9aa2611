"""Loop plan: a kernel's IR in, the loop strategy its renderer follows out -- decided here from
the kernel's structure and the op table's costs, handed to the renderer as data.

Strategies (the Numba renderer implements them all; the C dialects have one loop shape per
kind -- a grid-stride map, a work-group tree reduction -- and read only ``kind``):

* ``kind``: ``map`` (no reduction), ``reduce``, or ``rows`` (a row kernel: fusion.row_fuse's
  phases, one row per task).
* ``reduce`` (reduction kernels): ``lanes`` -- one reduced axis and a light body: the element
  loop in unrolled groups of scalar lanes the SLP vectoriser packs; ``blocks`` -- one reduced
  axis and a heavy body: values into a per-thread block, folded in lanes; ``loop`` -- the plain
  nested loop: integer/boolean accumulators (exact in any order; LLVM vectorises the reduction
  itself), argmax/argmin, several reduced axes.
* ``column_walk``: a light reduction over the leading axis of a 2-D space, one kept axis read
  by loads with non-negative strides: when the strides at run time say C order, tasks walk
  the rows over runs of columns instead of striding down each column.
* ``quads``: counter-based RNG ops with quad helpers whose flat index steps by one along the
  element loop: the loop runs four elements at a time from one Philox block.
* ``phases`` (row kernels): per phase ``lanes``, ``blocks`` or ``loop`` (no reduction).

The thresholds are the plan's: UNROLL_COST. docs/decisions.md has the measurements behind
each strategy."""
from __future__ import annotations

from ..core.ops import OPS
from .kernel import reduce_params

UNROLL_COST = 16        # the most a reduction body may cost (ops.py ``cost``, summed) for lanes


class Plan:
    """The loop strategy of one kernel (see the module docstring)."""

    __slots__ = ("kind", "reduce", "column_walk", "quads", "phases")

    def __init__(self, kind, reduce=None, column_walk=False, quads=False, phases=()):
        self.kind, self.reduce, self.column_walk = kind, reduce, column_walk
        self.quads, self.phases = quads, phases

    def __repr__(self):
        return (f"Plan({self.kind}, reduce={self.reduce}, column_walk={self.column_walk}, "
                f"quads={self.quads}, phases={self.phases})")


def light(ops):
    """Whether a reduction over the map ops among ``ops`` is light enough to run in lanes:
    their summed cost is at most UNROLL_COST."""
    return sum(OPS[p.op].cost for p in ops if p.kind == "map") <= UNROLL_COST


def _has_quads(k):
    return k.index is not None and any(p.kind == "map" and OPS[p.op].quad is not None
                                       for p in k.ops)


def choose(k) -> Plan:
    """The plan of Kernel ``k``."""
    if k.phases:
        phases = []
        for ph in k.phases:
            ops = [k.ops[n] for n in ph]
            if not any(p.kind == "reduce" for p in ops):
                phases.append("loop")
            else:
                phases.append("lanes" if light(ops) else "blocks")
        return Plan("rows", phases=tuple(phases))
    if not k.is_reduction:
        # quads along the innermost loop when the flat index steps by one along it
        return Plan("map", quads=_has_quads(k) and k.index.kept[-1] == 1)
    nk, nr = len(k.kept), len(k.red)
    argm = any(p.op in ("argmax", "argmin") for p in k.reductions)
    one_axis_light = nr == 1 and not argm and light(k.ops)
    exact = not argm and all(reduce_params(p)[3].kind in "biu" for p in k.reductions)
    if one_axis_light and not exact:
        strategy = "lanes"
    elif nr == 1 and not one_axis_light and not argm and not exact:
        strategy = "blocks"
    else:
        strategy = "loop"
    column = (one_axis_light and nk == 1 and nr == 1 and not k.stores and k.index is None
              and bool(k.loads) and k.loads[0].red[0] not in (0, 1)
              and all(a.kept[0] >= 0 and a.red[0] >= 0 for a in k.loads))
    quads = _has_quads(k) and nr == 1 and k.index.red[0] == 1 and strategy != "lanes"
    return Plan("reduce", strategy, column, quads)
