"""Functions the process-pool tests send to their workers (importable by a spawned worker:
multiprocessing's spawn and forkserver pickle functions by module and name)."""
import streamrt as ps


def double_sum(a):
    """A streamrt array in (pickled by value), a Python float out; large enough to run on the
    E-Scheduler thread, not inline."""
    return float(ps.sum(ps.asarray(a) * 2.0))


def scaled(a):
    """A streamrt array in, a streamrt array out (pickled back by value)."""
    return ps.sqrt(a) * 3.0
