"""C-Scheduler: decides when the work queue is compiled (a read, a queue-length threshold, a
hint, ps.sync()), hands it to ProgGen and submits the program sequence to the E-Scheduler
under flow control."""
from __future__ import annotations

import contextlib
import gc
import sys
import threading

import numpy as np

from ..core import atfork, hooks, keys, stats
from ..core.config import settings
from ..core.errors import UNKNOWN, CancelledError, MacroError, callsite, record_error
from ..core.ir import DEAD, DONE, FAILED, NEW, SUBMITTED, dying_buffer, is_scratch
from ..core.ops import OPS
from .. import compiler
from ..compiler import analysis, sequence
from ..compiler.kernel import is_update
from ..backends.base import HostPool, host_pool, interpret
from ..backends.intrinsics import TOTAL as TOTAL_INTRINSICS
from ..backends.numba_cpu import jit, program_cache
from . import direct, escheduler as es_mod, macro_cache, placement, tiers, trace_cache
from .flow import Flow
from .workqueue import current_queue

_flow = None
_flow_lock = threading.Lock()


def flow() -> Flow:
    global _flow
    with _flow_lock:
        if _flow is None:
            _flow = Flow(settings.max_inflight)
        return _flow


def _before_fork():
    """Drain the pipeline before a fork: the child has no E-Scheduler or executor thread to
    finish what is in flight, so it gets every submitted result computed (a fork from a
    runtime thread itself does not wait: it would wait for itself)."""
    f = _flow
    if f is None or threading.current_thread().name.startswith("streamrt-"):
        return
    with f.cond:
        f.cond.wait_for(lambda: f.inflight == 0, timeout=600)


def _after_fork():
    global _flow, _flow_lock
    _flow_lock = threading.Lock()
    _flow = None


atfork.register(_after_fork, before=_before_fork)


def _program_sequence(entries, kparts, kports, executor, macro_key=None, direct_ok=False,
                      reusable=frozenset()):
    """(program sequence, cache hit or None) for a flush: a trace-cache (or macro-cache) hit
    instantiates the cached template; a miss runs ProgGen and caches the template.
    ``direct_ok``: the flush would run its sequence inline with nothing observing it -- a hit
    whose template has a direct plan (executors/direct.py) runs it here instead and returns
    (None, True). ``reusable``: see ``reusable_bases`` (part of the key)."""
    cache = macro_cache.get() if macro_key is not None else trace_cache.get()
    use = kparts is not None and (macro_key is not None or settings.trace_cache)
    if use and kparts:
        key = keys.trace_key(executor.name, kparts, released_flags(kports), macro_key, kports,
                             reusable)
        t = cache.lookup(key)
        prof = hooks.profiler
        if t is not None:
            plan = t.direct
            if plan and direct_ok and plan.run(kports, executor):
                return None, True       # (its run counts the hit and the flush: TracePlan)
            cache.note(True)
            if prof is not None:
                prof.cache(cache.stat[:5], True, _first_site(entries))
            seq = sequence.instantiate(t, kports)
            if plan is None and direct_ok and jit.all_ready(seq):
                t.direct = direct.trace_plan(t, seq, kports, executor, cache.stat) or False
            return seq, True
        with _gc_paused():
            return _miss(entries, kparts, kports, executor, macro_key, reusable, cache, key,
                         direct_ok)
    with _gc_paused():
        return compiler.generate(entries, executor.caps, reusable), None


@contextlib.contextmanager
def _gc_paused():
    """Python's cyclic garbage collector held off while a trace misses: the generic key and
    ProgGen allocate tens of thousands of tuples and IR objects for a long trace, none of
    them cyclic garbage, and every 700 allocations started a collection that walked the
    live ports (Game of Life large's first flush: 38 -> 25 ms). Collections resume after it
    (not turned on when the program had turned them off)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


IMPORT_COLLECT_BLOCKS = 400_000   # collect_at_import: a heap this small collects in < ~20 ms


def collect_at_import():
    """One full collection when streamrt has been imported (``streamrt/__init__.py``), while
    the heap is small -- NumPy's and streamrt's modules, ~28,000 objects, ~5 ms --, so that
    the first long trace does not pay it: the imports left the collector a few
    generation-1 passes from a full one (6 of 10), and a first call recording thousands of
    ports made it then, over the modules and the live trace (~56,000 objects: 11-15 ms of
    Game of Life large's first call, 18-23 ms of collections in all against 4.5 after this).
    Skipped when
    the program has turned the collector off, imports streamrt into a large heap (a full
    collection there costs what it costs the program anyway), or keeps the collector's
    defaults (STREAMRT_GC_FREEZE=0)."""
    if settings.gc_freeze and gc.isenabled() and \
            sys.getallocatedblocks() < IMPORT_COLLECT_BLOCKS:
        gc.collect()


def _miss(entries, kparts, kports, executor, macro_key, reusable, cache, key,
          direct_ok=False):
    """_program_sequence after a trace-cache miss: a shape-generic hit, a first sight run
    through NumPy (``_first_sight``: returns (None, None)), or ProgGen (whose template is
    cached)."""
    prof = hooks.profiler
    gkey = None
    if macro_key is None:
        # the same code over other sizes (a triangular loop's shrinking slices)
        gkey = keys.generic_key(key)
        e = cache.lookup_generic(gkey)
        if e is not None:
            seq = None
            if keys.same_but_offsets(e[0], key):
                seq = compiler.reoffset(e[1], kports)
                if seq is not None:
                    stats.add("trace_cache_offset_hits")
            if seq is None:
                seq = compiler.reshape(e[1], kports, executor.caps)
            if seq is not None:
                cache.note(True)
                stats.add("trace_cache_shape_hits")
                if prof is not None:
                    prof.cache(cache.stat[:5], True, _first_site(entries))
                return seq, True
        if direct_ok and cache.first_sight(gkey) and _first_sight(entries):
            return None, None
    esites = [e[1].site for e in entries if e[0] == "compute"]
    why = None
    if settings.debug >= 1 or prof is not None:
        why = cache.explain_miss(key, esites)
        if settings.debug >= 1:
            print(f"[streamrt] {cache.name} miss: {why}", file=sys.stderr)
    if prof is not None:
        prof.cache(cache.stat[:5], False, _first_site(entries), why)
    cache.note(False)
    seq = compiler.generate(entries, executor.caps, reusable)
    t = sequence.to_template(seq, kports)
    if t is not None:
        cache.insert(key, t, esites)
        if gkey is not None and t.generic:
            cache.insert_generic(key, gkey, t)
    return seq, False


FIRST_SIGHT_ELEMENTS = 1 << 22   # _first_sight: element-wise work of a trace seen the first time


def _first_sight(entries) -> bool:
    """Run a read whose trace (its shape-generic key) this process has not seen before
    through NumPy instead of ProgGen (``run_now``, at most FIRST_SIGHT_ELEMENTS): True when
    it ran. Only when no compiled kernel can be ready for it -- no kernel folder in the
    cache, or STREAMRT_JIT=off -- and compiles are not wanted at once (STREAMRT_JIT=sync, a
    zero margin). ProgGen and its template only pay when the trace comes again: its kernels
    would run interpreted, and the cost model compiles them after runs of the same trace --
    while on its first sight ProgGen, placement and the launch cost 1-3 ms of first-executed
    code (gemver small: ~1.5 ms over NumPy's 3.5 for the whole program). A trace seen again
    takes ProgGen and the trace cache as before (its second sight is a miss, the third a
    hit). The bound keeps what the cost model learns: a first sight's time is accounted to
    no kernel, so a one-shot trace over more elements, whose kernels would have been
    compiled after the program exits for its next run (jit.py), still takes ProgGen; below
    it, fusing saves a few ms a run, never Numba's load."""
    m = jit.mode()
    if m == "sync" or m == "background" and (settings.jit_margin <= 0 or
                                              program_cache.disk_may_hold()):
        return False
    if not run_now(entries, FIRST_SIGHT_ELEMENTS):
        return False
    stats.add("first_sights")
    return True


def run_now(entries, elements) -> bool:
    """Run a flush's entries through NumPy, op by op in recording order, when they qualify:
    nothing in flight, everything they read computed, no region write, only intrinsics
    defined for every value (backends/intrinsics.TOTAL), at most ``elements`` element-wise
    and reduced elements, and no counter-based generator work that ``jit.compile_first``
    would compile first. True when they ran (a fault fails their ports, delivered at the
    read); their ports are then DONE,
    or DEAD when nothing reads them. Values no Array holds are dropped after their last use
    and element-wise ops write into dying temporaries, as the CPU executor's interpreter
    does (backends/base.py ``interpret``). ``_first_sight``, and a macro's first call with
    small computed inputs (frontend/macro.py: later calls run its body at once, so no
    template is wanted)."""
    f = _flow
    if f is not None and f.inflight:
        return False
    ports = analysis.collect(entries)
    made, n, rng = set(), 0, 0
    for p in ports:
        k = p.kind
        if k == "view":
            if not _host_ready(p.inputs[0], made):
                return False
            made.add(p.id)
            continue
        if k == "intrinsic":
            if p.op not in TOTAL_INTRINSICS:
                return False
        elif k == "map" or k == "reduce":
            n += max(p.size, p.inputs[0].size if k == "reduce" else 0)
            if n > elements:
                return False
            if k == "map" and OPS[p.op].counter:
                rng += p.size
        else:
            return False
        if not _inputs_ready(p, made):
            return False
        made.add(p.id)
    if rng * jit.RNG_ELEMENT_S >= jit.INTERPRET_WAIT_S:
        return False        # (its kernel may be compiled first: jit.compile_first)
    live, consumers, _ = analysis.backward(ports)
    keep = analysis.forward(live, consumers, {})
    ops = [p for p in live if p.kind != "view"]
    stats.add("flushes")
    try:
        interpret(ops, keep, (), (), lambda shape, dt: np.empty(shape, dt), _dying(ops),
                  cut=jit.in_flight() == 0)
    except Exception as e:  # noqa: BLE001 - delivered at the read (MemoryError), as a run's
        err = es_mod.execution_error(e, [p.site for p in ops if p.site is not None])
        for p in live:
            p.state, p.error, p.value = FAILED, err, None
        _unwritten(entries)
        return True
    for p in live:
        p.state = DONE
        if p.kind != "view":
            p.inputs = ()           # (as a run's outputs: the graph behind them is let go)
    _unwritten(entries)
    tiers.note_eager(len(ops))
    return True


def reusable_bases(entries, q, executor, through=None):
    """The ids of the computed host buffers that a region write of this flush may write in
    place (compiler/analysis.py ``inplace_updates`` checks the reads within the flush): the
    base of a region write that no Array holds any more, that no NumPy-tier view shows, and
    that no recorded work outside this flush may still read -- nothing is in flight, and no
    other work queue captured it (runtime/tiers.py). ``a[:i] += t`` in a loop otherwise
    copies the whole of ``a`` into a fresh buffer at every iteration. ``through`` (see
    ``flush``) needs only the last two conditions."""
    if not executor.caps.get("fuse_updates"):
        return frozenset()
    f = _flow
    if f is not None and f.inflight:
        return frozenset()
    out = None
    for e in entries:
        if e[0] != "compute":
            continue
        p = e[1]
        if p.op != "update" or p.kind != "intrinsic":
            continue
        b = p.inputs[0]
        if b.state == DONE and (b is through or b.nrefs <= 0 and not b.eager_views) and \
                type(b.value) is np.ndarray and b.captured in (None, q) and \
                b.value.flags.c_contiguous and b.value.flags.writeable:
            if out is None:
                out = set()
            out.add(b.id)
    return frozenset(out) if out else frozenset()


def direct_ok():
    """Whether a run may take a direct plan (executors/direct.py: a macro replay or a flushed
    trace calling its kernels itself): the direct path on and nothing observing runs -- debug
    output, the profiler, the debugger's hooks, a test's launch log."""
    if not settings.direct_replay or settings.debug or hooks.profiler is not None \
            or hooks.on_complete is not None or hooks.keep_graph or hooks.on_record is not None:
        return False
    es = es_mod._instance
    return es is None or es.launch_log is None


def _first_site(entries):
    for e in entries:
        if e[0] == "compute":
            return e[1].site
    return None


def flush(queue=None, reason="sync", macro_key=None, force=False, through=None,
          private=None):
    """Compile and submit everything recorded in ``queue`` (default: this thread's).
    ``through``: a computed base its region writes may write in place although Arrays and
    NumPy-tier views show it (frontend/indexing.py ``_write_through``: the write is NumPy's
    in-place write, seen by all of them; ``reusable_bases``); ``private``: its value port,
    when no Array holds it (``_run_statement``)."""
    q = queue if queue is not None else current_queue()
    with q.lock:
        if q.recording is not None and not force:
            return None         # a macro section is being recorded: it is flushed at its end
        entries, kparts, kports = q.take_trace()
        if not entries:
            return None
        sent = []
        try:
            return _flush(q, entries, kparts, kports, reason, macro_key, sent, through, private)
        except KeyboardInterrupt:
            if not sent:        # interrupted before its sequence was handed over (or while
                _cancel_entries(entries)    # it ran inline: what had not run is cancelled)
            raise


def _cancel_entries(entries):
    """A flush interrupted (Ctrl-C) before its sequence ran or was submitted: its ports not
    computed will never be -- they fail with CancelledError rather than wait forever."""
    err = CancelledError("cancelled: a KeyboardInterrupt interrupted the flush that was "
                         "compiling this array's computation (compute it again to get its "
                         "value)")
    for e in entries:
        if e[0] == "compute" and e[1].state in (NEW, SUBMITTED):
            e[1].state = FAILED
            e[1].error = err
    stats.add("sequences_cancelled")


WRITE_NOW_ELEMENTS = 1 << 20   # a write's statement run through NumPy at most this large


def _statement_now(entries, through):
    """Whether a write flushed at once (``through``: frontend/indexing.py ``_write_through``)
    is one small statement -- element-wise ops over computed arrays and the region write,
    at most WRITE_NOW_ELEMENTS element-ops in all -- that NumPy runs now, in order, as its
    own statement would (``_run_statement``). ProgGen, the trace cache, placement and a hand-
    off to the E-Scheduler cost 0.2-0.5 ms a flush (symm: one such write per row), more than
    fusing a few ops over a few hundred thousand elements saves."""
    if not settings.eager_elements or not direct_ok() or len(entries) > 16:
        return False
    made, n, wrote = set(), 0, False
    for e in entries:
        if e[0] != "compute":
            return False
        p = e[1]
        if p.kind == "view":
            if not _host_ready(p.inputs[0], made):
                return False
            made.add(p.id)
            continue
        if is_update(p) and p.inputs[0] is through:
            wrote = True        # (not counted: its value is computed into the region)
        elif p.kind != "map" or OPS[p.op].counter:
            return False
        else:
            n += p.size
        if not _inputs_ready(p, made):
            return False
        made.add(p.id)
    return wrote and n <= WRITE_NOW_ELEMENTS


def _host_ready(b, made):
    """Whether port ``b`` is computed before the run (a host buffer) or by it (``made``)."""
    return b.id in made or b.state == DONE and type(b.value) is np.ndarray


def _inputs_ready(p, made):
    """Whether every array input of ``p`` -- a view's base -- is ``_host_ready``."""
    for i in p.inputs:
        if i.kind != "scalar" and i.id not in made and \
                not _host_ready(i.inputs[0] if i.kind == "view" else i, made):
            return False
    return True


def _run_statement(entries, through, private=None):
    """Run ``_statement_now``'s entries through NumPy in order, as NumPy runs the statement
    (backends/base.py ``interpret``, the CPU interpreter's loop): the region write goes into
    ``through``'s buffer, its value straight into the region when no Array holds it
    (``private``: frontend/indexing.py ``_write_through``); a value an Array holds keeps a
    buffer of its own. A computed buffer read here that nothing else can read any more
    (``_dying``) is a temporary as NumPy sees one: an element-wise op may write into it."""
    ops = [e[1] for e in entries if e[1].kind != "view"]
    writes = set()
    for p in ops:
        if is_update(p):
            p.value = through.value
            writes.add(p.id)
        elif p.site is not None and p.site is not UNKNOWN:
            p.site.now = True       # (its line's next ops run at once: CallSite.now)
    keep = {p.id for p in ops if p.nrefs > 0 and p is not private}
    interpret(ops, keep, writes, writes, lambda shape, dt: np.empty(shape, dt),
              _dying(ops))
    for e in entries:
        e[1].state = DONE
    tiers.note_eager(len(ops))


def _dying(ops):
    """The ids of the constants ``ops`` read whose buffer nothing else can read (core/ir.py
    ``dying_buffer``)."""
    return {i.id for p in ops for i in p.inputs if dying_buffer(i)}


def _flush(q, entries, kparts, kports, reason, macro_key, sent, through=None,
           private=None):
    """flush's work once the entries are taken (``sent`` gets the sequence when it is
    handed to the E-Scheduler or run)."""
    if through is not None and _statement_now(entries, through):
        _run_statement(entries, through, private)
        return None
    executor, placed = placement.choose(entries, kparts, q.taken_max)
    cluster = hooks.distributed
    if cluster is not None:
        routed = cluster.route(entries, executor)
        if routed is not executor:           # reads arrays held by Dask workers
            executor, placed = routed, None
    direct = placed is None and reason in ("read", "sync") and executor.name == "cpu" \
        and cluster is None and direct_ok()
    reusable = reusable_bases(entries, q, executor, through) if macro_key is None \
        else frozenset()
    seq, hit = _program_sequence(entries, kparts, kports, executor, macro_key, direct, reusable)
    if seq is None:                 # run by the template's direct plan (which counted it)
        _unwritten(entries)
        return None
    if getattr(executor, "in_order", False) and not hooks.keep_graph:
        seq.mark_transient()
    drop_dead_scratch(seq.dead)
    pool_scratch(entries)
    if placed is not None:
        placement.start(seq, placed, executor)
    prof = hooks.profiler
    if prof is not None:
        prof.flush(entries, seq, reason, hit)
    written = set()
    for prog in seq.programs:
        for p in prog.outputs:
            written.add(p.id)
            p.state = SUBMITTED
    _unwritten(entries)
    stats.add("flushes")
    if settings.debug >= 1:
        nk = sum(1 for p in seq.programs if p.kind == "kernel")
        print(f"[streamrt] flush ({reason}): {len(entries)} entries -> {len(seq.programs)} "
              f"programs ({nk} kernels)", file=sys.stderr)
    dispatch(seq, executor, inline=reason in ("read", "sync", "write"))
    sent.append(seq)
    return seq


def released_flags(kports):
    """The trace key's released flags: of the ports this flush computes, which no Array holds
    any more (the C record path brings a twin: ``use_native``)."""
    return tuple([p.nrefs <= 0 for p in kports if p.state == NEW])


def _unwritten(entries):
    """The flushed ports no program writes: views follow their base; the rest were dead or
    fused away and are never written to memory."""
    for e in entries:
        if e[0] == "compute" and e[1].state == NEW:
            p = e[1]
            if p.kind == "view":
                p.state = SUBMITTED if p.inputs[0].state != DEAD else DEAD
            else:
                p.state = DEAD


def use_native(flags, unwritten):
    """Run the flush's two loops over its entries in C: ``released_flags`` and ``_unwritten``
    replaced by their twins (frontend/native.py, when the C record path is installed)."""
    global released_flags, _unwritten
    released_flags, _unwritten = flags, unwritten


def drop_dead_scratch(dead):
    """An uninitialised buffer (``np.empty`` at record time: ``roll``, ``concatenate``, the
    assembled results of frontend/pieces.py) whose region writes were all found dead is never
    touched: free it now rather than when the sequence ends (a wave loop records a few per
    step; held, they keep the heap from handing their memory to the buffers actually
    written)."""
    for p in dead:
        if is_update(p) and is_scratch(p.inputs[0]) and p.inputs[0].nrefs <= 0:
            p.inputs[0].value = None


def pool_scratch(entries):
    """The scratch buffers of this flush that a kernel will write (the dead ones are gone):
    each large one is swapped for a buffer of the host pool (executors/base.py ``HostPool``)
    before any kernel sees it. The buffer ``np.empty`` gave at record time is untouched, so
    dropping it costs nothing, while a fresh heap buffer would fault its pages in as the
    pieces write it: a wave loop records three per step, one of them written."""
    seen = set()
    for e in entries:
        if e[0] != "compute" or not is_update(e[1]):
            continue
        b = e[1].inputs[0]
        if not is_scratch(b) or b.id in seen:
            continue
        seen.add(b.id)
        v = b.value
        if type(v) is np.ndarray and v.base is None and v.nbytes >= HostPool.MIN_BYTES:
            b.value = host_pool.array(v.shape, v.dtype)


def submit_replay(seq, ports, executor):
    """Submit an instantiated macro sequence whose ports were created by the replay."""
    for prog in seq.programs:
        for p in prog.outputs:
            p.state = SUBMITTED
    for p in ports:
        if p.state == NEW:
            if p.kind == "view":
                p.state = SUBMITTED if p.inputs[0].state != DEAD else DEAD
            else:
                p.state = DEAD
    stats.add("flushes")
    dispatch(seq, executor, inline=True)


def dispatch(seq, executor, inline=False):
    """Hand a program sequence to the E-Scheduler -- or, when the pipeline is idle and the
    sequence is small (or about to be waited for), run it on this thread."""
    run = getattr(executor, "run_sequence", None)
    if run is not None:                 # the Dask executor launches whole sequences itself
        run(seq)
        return
    f = flow()
    es = es_mod.get(f)
    # (a read run by the NumPy interpreter -- STREAMRT_BACKEND=reference, or CPU kernels
    # that all run interpreted (the compiled tier) -- runs here whatever its size: NumPy
    # would not use the executor thread's cores any better, and the hand-off to that thread
    # and back costs a loop that reads every iteration more than its NumPy calls; decisions.md)
    # Numba kernels run inline only single-threaded: a parallel region started from this
    # thread would make libgomp a second thread team besides the executor thread's; with more
    # OpenMP threads than cores its workers stop spinning, and every parallel region of both
    # teams then waits on a futex wake (docs/decisions.md)
    if inline and settings.inline_elements and (
            executor.name == "reference"
            or max(map(sequence.elements, seq.programs), default=0) <= inline_limit()
            or (executor.name == "cpu" and jit.none_ready(seq))) \
            and f.try_idle():
        try:
            es.run_inline(seq, executor)
        finally:
            f.release()
        return
    # A read of a sequence with parallel kernels, the pipeline idle: the whole sequence runs
    # on the CPU executor's thread (its OpenMP team), the read waiting for one hand-off each
    # way rather than the E-Scheduler's four (Floyd-Warshall's row loop over 1000 x 1000,
    # which reads every iteration: 260-340 -> ~235 ms a call; docs/decisions.md)
    if inline and settings.inline_elements and executor.name == "cpu" and f.try_idle():
        es.run_on_worker(seq, executor, f.release)
        return
    f.acquire()
    es.submit(seq, executor)


def inline_limit():
    """The largest sequence (elements) a read runs on the application thread: at most
    STREAMRT_INLINE_ELEMENTS, and only while its Numba kernels are single-threaded (see
    ``dispatch``); -1 when inline runs are off. Direct plans (executors/direct.py) use the
    same rule."""
    n = settings.inline_elements
    return min(n, settings.serial_elements) if n else -1


def _check_not_recording(what):
    q = current_queue()
    if q.recording is not None:
        raise record_error(MacroError, f"{what} inside the macro {q.recording.name!r} while it "
                           "is being recorded: a macro cannot depend on values it computes "
                           "(return the array and read it after the call)", callsite())


def ensure(port):
    """Make ``port`` computed (flushing its queue if needed); raise its error if it failed."""
    _check_not_recording("a read of an array")
    base = port.inputs[0] if port.kind == "view" else port
    if base.state == NEW:
        flush(base.queue, reason="read")
    if base.state == SUBMITTED:
        es = es_mod.get(flow())
        try:
            es.wait(base)
        except KeyboardInterrupt:
            es.cancel()             # what this thread submitted and has not started: dropped
            raise
    if port.kind == "view" and port.state == SUBMITTED:
        port.state = base.state
        port.error = base.error
    if base.state == FAILED:
        raise base.error
    if base.state == DEAD:
        raise RuntimeError(f"internal error: {port} was released before it was read")


def wait_idle():
    """Wait until every program sequence submitted (by any thread) has run (an interrupt
    cancels what this thread submitted, as in a read)."""
    f = flow()
    try:
        with f.cond:
            f.cond.wait_for(lambda: f.inflight == 0)
    except KeyboardInterrupt:
        es_mod.get(f).cancel()
        raise


def sync():
    """Flush this thread's work queue and wait until everything submitted has run."""
    _check_not_recording("ps.sync()")
    flush(reason="sync")
    wait_idle()
    if hooks.distributed is not None:       # and what runs on a Dask cluster
        hooks.distributed.wait_all()
