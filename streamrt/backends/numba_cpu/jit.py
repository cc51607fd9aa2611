"""The compiled tier of the CPU executor: kernel in, "interpret it" or "run it compiled" out.

A kernel runs *interpreted* -- each of its ops through NumPy, in order -- until the cost model
says compiling it pays; then the compile worker process (compile_worker.py) builds it into the
disk program cache, and the kernel's next launch loads it from there. Nothing is compiled on
the application's threads: Numba's compiler holds the GIL, and a compile on a thread of this
process slowed the application thread 6.6x (docs/decisions.md).

Cost model, per kernel variant: its interpreted runs so far took ``seconds``; as many runs
are expected ahead (a loop that ran n times is likely to run about n more), each faster by the
fused kernel's estimated speed-up (its *gain*). Two decisions use it:

* *compiling now*, in the worker process, is requested once the gain exceeds
  (STREAMRT_JIT_MARGIN times) what the switch costs this process: loading the kernel, and
  loading Numba (about 0.4 s, once) until what all interpreted kernels together would have
  saved pays for that. The worker competes with this process for the machine (on a 2-vCPU
  VM it slowed a 0.26 s run by 70-120 ms), so a kernel that pays only the kernel's load is
  not compiled now but *at exit*: the worker compiles the (at most EXIT_COMPILES) best such
  variants after this process has gone, for the next run of the script;
* *switching* to a compiled variant: it is used once Numba is loaded, or once loading
  Numba pays for what the interpreted kernels would have saved so far -- in this process,
  and, for variants a previous process compiled, in that process (the gain it recorded
  beside each: ``program_cache.note_gain``). A script run again whose kernels saved more
  than that before loads them at their first launch.

Compiles in flight at exit are finished by the worker after this process has gone. A
variant whose compile failed stays interpreted, and that is remembered (a marker file
beside the module)."""
from __future__ import annotations

import atexit
import collections
import os
import pickle
import subprocess
import sys
import threading
import time

from ...core import atfork, stats
from ...core.config import settings
from ...core.ops import OPS
from ..base import split_limit
from . import program_cache

COLD, QUEUED, READY, FAILED, SLOWER = "cold", "queued", "ready", "failed", "slower"
NUMBA_LOAD_S = 0.6       # importing Numba, its first kernel load (contexts, LLVM): once a process
KERNEL_LOAD_S = 0.03     # loading one compiled kernel from the disk cache
MAX_KERNELS = 4096
EXIT_COMPILES = 4        # variants compiled after exit for the next run, at most
INTERPRET_WAIT_S = 2.0   # a kernel whose interpreted run would take longer waits for its compile
RNG_ELEMENT_S = 250e-9   # a counter-based generator op interpreted, per element (Philox, NumPy)
PARALLEL_GAIN = min(1.5, float(os.cpu_count() or 1))   # a parallel kernel's gain from the cores
WARMUP_RUNS = 5          # compiled runs not timed after the switch (dispatch set-up, threads)
MEASURED_RUNS = 5        # compiled runs then timed: the fastest of them, an element, ...
SLOWER_FACTOR = 1.5      # ... slower than the interpreted runs by this: interpreted from then on

_lock = threading.Lock()
_states: collections.OrderedDict = collections.OrderedDict()  # (source, serial) -> _Variant
_saved_all = 0.0     # what compiled kernels would have saved over every interpreted run
_prior_all = 0.0     # ... and, by their records on disk, over the processes that compiled them


class _Variant:
    __slots__ = ("state", "runs", "seconds", "error", "gain", "prior", "elements", "cruns",
                 "cseconds")

    def __init__(self):
        self.state, self.runs, self.seconds, self.error = COLD, 0, 0.0, None
        self.gain = 0.0          # what the compiled kernel would have saved so far, here
        self.prior = 0.0         # ... in the process that compiled it (read from disk)
        self.elements = 0        # the interpreted runs' elements (a time per element)
        self.cruns, self.cseconds = 0, 0.0   # the compiled runs: count, fastest an element


def mode() -> str:
    """STREAMRT_JIT: 'background' (the tiers above), 'sync' (compile on first launch, on the
    launching thread), 'off' (always interpreted)."""
    return settings.jit


def _variant(source, serial):
    global _prior_all
    key = (source, serial)
    v = _states.get(key)
    if v is None:
        v = _states[key] = _Variant()
        if len(_states) > MAX_KERNELS:
            _states.popitem(last=False)
        if program_cache.failed_marker(source):
            v.state = FAILED
        elif program_cache.compiled_on_disk(source, serial):
            v.state = READY              # (a second process: built before, loaded when used)
            v.prior = program_cache.noted_gain(source, serial)
            _prior_all += v.prior
    return v


def _usable(v) -> bool:
    """Whether compiled variant ``v`` runs compiled now: Numba is loaded, or loading it pays
    (see the module's docstring)."""
    if v.state != READY:
        return False
    if "numba" in sys.modules:
        return True
    return _saved_all + _prior_all >= settings.jit_margin * NUMBA_LOAD_S


def ready(prog, serial) -> bool:
    """Whether the variant of ``prog``'s kernel runs compiled now."""
    with _lock:
        return _usable(_variant(prog.source, serial))


_serial_only = False      # a forked child of a process whose OpenMP team ran (_after_fork)


def use_serial(elements) -> bool:
    """Whether a kernel over ``elements`` runs its serial twin (``prange`` -> ``range``)."""
    return _serial_only or elements <= settings.serial_elements


def all_ready(seq) -> bool:
    """Whether every kernel of program sequence ``seq`` runs compiled now (a direct plan,
    runtime/direct.py, calls the kernels itself: only then may one be built)."""
    if mode() != "background":
        return mode() == "sync" and not any(
            prog.kind == "kernel" and program_cache.failed(prog.source) is not None
            for prog in seq.programs)
    with _lock:
        for prog in seq.programs:
            if prog.kind == "kernel" and \
                    not _usable(_variant(prog.source, use_serial(prog.kernel.elements))):
                return False
    return True


def none_ready(seq) -> bool:
    """Whether every kernel of program sequence ``seq`` would run interpreted now (no Numba
    parallel region: it may run on any thread)."""
    m = mode()
    if m == "sync":
        return False
    with _lock:
        for prog in seq.programs:
            if prog.kind == "kernel" and (m == "background" and _usable(_variant(
                    prog.source, use_serial(prog.kernel.elements)))):
                return False
            if prog.kind == "scan" and (m == "background" and program_cache.compiled_on_disk(
                    prog.source, use_serial(prog.ops[-1].size))):
                return False            # (compiled before: executor._run_scan)
    return True


def speedup(prog, serial) -> float:
    """The estimated speed-up of the fused kernel over its ops run one by one by NumPy: the
    memory traffic it saves -- each op of the interpreted run reads its array operands and
    writes its result; the kernel reads its loads and writes its stores once -- and, for the
    parallel variant, PARALLEL_GAIN (not for a kernel that fuses nothing but a reduction, nor
    for one whose interpreted ops run on both cores already: ``_cut``).
    (It was the op count times the cores: a two-op kernel over 4M elements, NumPy's passes already halved by its temporary elision, was rated 4x and
    ran 1.1x; its gain made the next process load Numba for nothing.)"""
    k = prog.kernel
    naive = 0
    for p in prog.ops:
        if p.kind in ("map", "reduce"):
            naive += p.size + sum(i.size for i in p.inputs if i.kind != "scalar")
    fused = sum(a.port.size for a in k.loads) + sum(a.port.size for a in k.stores) \
        if k is not None else 0
    s = naive / fused if fused > 0 and naive > fused else 1.0
    if s == 1.0 and not any(p.kind == "reduce" for p in prog.ops):
        # nothing fused: NumPy's loop does the same work, its transcendental functions in
        # SIMD where Numba calls libm per element (nbody large's ``x ** -1.5`` over 250,000
        # elements: 1.1 ms compiled on two cores, 0.39 ms NumPy): the cores alone are not
        # counted (a reduction keeps them: its kernel splits the sum over the cores)
        return 1.0
    if not serial and not _cut(prog):
        s *= PARALLEL_GAIN
    return max(s, 1.0)


def _cut(prog) -> bool:
    """Whether the interpreted ops of kernel ``prog`` run on both cores themselves (their
    loops cut over the C path's helper thread: base.split_limit; a reduction is not cut):
    then the compiled kernel's cores are no gain over them."""
    n, k = split_limit(), prog.kernel
    return k is not None and 0 < n <= k.elements and PARALLEL_GAIN > 1.0 and \
        not any(p.kind == "reduce" for p in prog.ops)


def interpreted_estimate(prog) -> float:
    """Seconds an interpreted run of kernel ``prog`` is expected to take where interpreting
    is far slower than its compile: its counter-based generator ops (Philox and Squares in
    NumPy: ~250 ns a number, against ~1-2 for the compiled kernel and ~4 for NumPy's own
    generator). Other ops run at NumPy's speed interpreted: 0 for them."""
    k = sum(1 for p in prog.ops if p.kind == "map" and OPS[p.op].counter)
    return prog.kernel.elements * k * RNG_ELEMENT_S if k else 0.0


def compile_first(prog, serial, describe, timeout=120.0) -> bool:
    """A kernel whose one interpreted run would take over INTERPRET_WAIT_S (50M random
    numbers: ~25 s) is sent to the worker now and waited for (Numba, ~1-2 s, in the worker:
    this thread only waits), its expected saving counted; True when it runs compiled now.
    (Waiting is the one exception to "the program never waits for a compiler": interpreting
    would make it wait ten times longer.)"""
    est = interpreted_estimate(prog)
    if est < INTERPRET_WAIT_S:
        return False
    global _saved_all
    with _lock:
        v = _variant(prog.source, serial)
        if v.state == FAILED:
            return False
        submit = v.state == COLD
        if submit:
            v.state = QUEUED
            _at_exit.pop((prog.source, serial), None)
        saved = est * (1.0 - 1.0 / speedup(prog, serial))
        v.gain += saved
        _saved_all += saved
    if submit:
        _request(prog, serial, describe)
    s = _svc
    if s is not None:
        with s.cond:
            s.cond.wait_for(lambda: v.state != QUEUED, timeout)
    return ready(prog, serial)


def compiled(prog, serial, seconds):
    """One compiled run of the variant took ``seconds``. The estimate that switched it is
    checked against what it measures: after WARMUP_RUNS runs (Numba's dispatch set-up, its
    threads starting), when even the fastest
    of MEASURED_RUNS runs takes SLOWER_FACTOR times longer an element than the interpreted
    runs did on average, it runs interpreted again for the rest of this process (nbody's
    250,000-element kernels: ~0.75 s a call compiled, ~0.55 interpreted). Runs while the
    compile worker works are not counted -- a parallel kernel sharing two cores with it runs
    many times slower -- and the verdict is not kept on disk: the first runs after a switch
    can be slow for a moment (Floyd-Warshall's row update: 2-5 ns an element against 0.33
    interpreted, then 2x faster than interpreted in the next process)."""
    with _lock:
        v = _variant(prog.source, serial)
        if v.state != READY or v.runs < 2 or v.cruns < 0:
            return               # (nothing interpreted to compare with; judged already)
    if in_flight() > 0:
        return                   # (the worker shares the cores: not counted)
    with _lock:
        v.cruns += 1
        if v.cruns <= WARMUP_RUNS:
            return
        per = seconds / max(prog.kernel.elements, 1)
        v.cseconds = per if v.cruns == WARMUP_RUNS + 1 else min(v.cseconds, per)
        if v.cruns < WARMUP_RUNS + MEASURED_RUNS:
            return
        slower = v.cseconds * v.elements > SLOWER_FACTOR * v.seconds
        if slower:
            v.state = SLOWER
        else:
            v.cruns = -1         # (judged: not measured again)
    if slower:
        stats.add("kernels_slower_compiled")
        if settings.debug >= 1:
            print(f"[streamrt] a compiled kernel ran slower than interpreted "
                  f"({v.cseconds * 1e9:.2f} against "
                  f"{v.seconds / max(v.elements, 1) * 1e9:.2f} ns an element): interpreted "
                  "from now on", file=sys.stderr)


def interpreted(prog, serial, seconds, describe):
    """One interpreted run of the variant took ``seconds``; ``describe()`` gives its argument
    types when a compile is requested."""
    stats.add("kernels_interpreted")
    with _lock:
        v = _variant(prog.source, serial)
        v.runs += 1
        v.seconds += seconds
        v.elements += prog.kernel.elements
        global _saved_all
        saved = seconds * (1.0 - 1.0 / speedup(prog, serial))
        v.gain += saved
        _saved_all += saved
        if v.state != COLD:
            return
        # loading Numba is paid once per process: by what all kernels would have saved
        numba_due = "numba" not in sys.modules and \
            _saved_all < settings.jit_margin * NUMBA_LOAD_S
        cost = KERNEL_LOAD_S + (NUMBA_LOAD_S if numba_due else 0.0)
        later = False
        if v.gain < settings.jit_margin * cost and v.runs < settings.jit_runs:
            if v.gain < settings.jit_margin * KERNEL_LOAD_S or (prog.source, serial) in _at_exit:
                return
            later = True
            _at_exit[(prog.source, serial)] = None
        else:
            v.state = QUEUED
            _at_exit.pop((prog.source, serial), None)
    if later:
        # (what the worker needs, not the program: it holds its ports and their buffers)
        try:
            _at_exit[(prog.source, serial)] = _what(prog, serial, describe)
        except Exception:  # noqa: BLE001 - cannot describe it: not compiled at exit
            pass
        return
    _request(prog, serial, describe)


def _what(prog, serial, describe):
    """(module path, module name, function, argument types): a compile request's contents."""
    path, name = program_cache.module_file(prog.source, prog.fn)
    return path, name, prog.fn + ("_serial" if serial else ""), describe()


def _request(prog, serial, describe):
    try:
        what = _what(prog, serial, describe)
    except Exception as e:  # noqa: BLE001 - cannot even describe it: stays interpreted
        _finish(prog.source, serial, False, 0.0, f"{type(e).__name__}: {e}")
        return
    _service().submit(prog.source, serial, *what)


def _finish(source, serial, ok, seconds, error):
    with _lock:
        v = _states.get((source, serial))
        if v is None:
            v = _states[(source, serial)] = _Variant()
        v.state = READY if ok else FAILED
        v.error = error
    if ok:
        stats.add("kernels_compiled")
        stats.add("compile_seconds", seconds)
    else:
        stats.add("compile_failures")
        program_cache.mark_failed(source, error)
        if settings.debug >= 1:
            print(f"[streamrt] compile failed; the kernel stays interpreted: {error}",
                  file=sys.stderr)


_at_exit: dict = {}      # (source, serial) -> _what(...) of a variant to compile after exit


def _exit():
    """At exit: the best variants that pay for their load but were not worth compiling now
    go to the worker, and every compiled or queued variant's gain is recorded beside it on
    disk; then the worker is left to finish (``_Service.close``)."""
    if mode() != "background":
        return
    with _lock:
        wanted = sorted(((_states[k].gain, k, w) for k, w in _at_exit.items()
                         if w is not None and k in _states and _states[k].state == COLD),
                        key=lambda t: -t[0])[:EXIT_COMPILES]
        for _, k, _ in wanted:
            _states[k].state = QUEUED
        _at_exit.clear()
    for _, (source, serial), what in wanted:
        try:
            _service().submit(source, serial, *what)
        except Exception:  # noqa: BLE001 - at exit: nothing to report to
            pass
    with _lock:
        items = [(k, v.gain) for k, v in _states.items()
                 if v.state in (QUEUED, READY) and v.gain > 0.0]
    for (source, serial), gain in items:
        program_cache.note_gain(source, serial, gain)
    s = _svc
    if s is not None:
        s.close()


atexit.register(_exit)


def in_flight() -> int:
    s = _svc
    return s.pending_count() if s is not None else 0


def wait(timeout=None) -> bool:
    """Wait until every requested compile has finished (tests, benchmarks); True if none is
    left."""
    s = _svc
    return True if s is None else s.wait(timeout)


def workers_idle(cache_dir, timeout=300.0) -> bool:
    """Wait until no compile worker -- of any process, this one's or one that has exited --
    is working for the kernel cache in ``cache_dir`` (benchmarks: a second process measured
    "warm" finds what the first one's worker compiled after it exited); True if none is."""
    try:
        import fcntl        # (POSIX only; elsewhere there is nothing to wait for)
    except ImportError:
        return True
    path = os.path.join(cache_dir, program_cache.WORKER_LOCK)
    if not os.path.exists(path):
        return True
    deadline = time.monotonic() + timeout
    with open(path, "a") as f:
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(f, fcntl.LOCK_UN)
                return True
            except OSError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.05)


def reset():
    """Forget every kernel's state (ps.clear_caches)."""
    global _saved_all, _prior_all
    with _lock:
        _states.clear()
        _at_exit.clear()
        _saved_all = 0.0
        _prior_all = 0.0


# ---- the worker process ----------------------------------------------------------------------
class _Service:
    """One compile worker process, fed through its stdin; a reader thread takes its replies
    (blocked in a read, it holds no GIL). A worker that dies fails what it had, and the next
    request starts a new one."""

    def __init__(self):
        self.proc = None
        self.pending = {}             # request id -> (source, serial, start time)
        self.ids = 0
        self.cond = threading.Condition()
        self.progress = _Progress()
        self.owner = os.getpid()      # (a forked child must not close its parent's worker)

    def _start(self):
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))))
        env = dict(os.environ)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"]
                                    if env.get("PYTHONPATH") else "")
        env["STREAMRT_CACHE_DIR"] = program_cache.cache_root()
        env["STREAMRT_JIT"] = "sync"
        lock = program_cache.worker_lock(env["STREAMRT_CACHE_DIR"])
        log = _worker_log(env["STREAMRT_CACHE_DIR"])
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "streamrt.backends.numba_cpu.compile_worker"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env,
                pass_fds=(lock.fileno(),) if lock is not None else ())
        finally:
            if lock is not None:
                lock.close()     # (the worker's inherited descriptor holds the lock now)
            if log is not subprocess.DEVNULL:
                log.close()      # (the worker's inherited descriptor writes to it now)
        t = threading.Thread(target=self._read, args=(self.proc,), daemon=True,
                             name="streamrt-jit-reader")
        t.start()

    def submit(self, source, serial, path, name, fn, desc):
        with self.cond:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            self.ids += 1
            rid = self.ids
            self.pending[rid] = (source, serial, time.perf_counter())
            stats.add("compiles_requested")
            try:
                pickle.dump((rid, path, name, fn, desc), self.proc.stdin)
                self.proc.stdin.flush()
            except OSError as e:
                self.pending.pop(rid, None)
                _finish(source, serial, False, 0.0, f"compile worker: {e}")
                return
        self.progress.update(self.pending_count())

    def _read(self, proc):
        out = proc.stdout
        while True:
            try:
                rid, ok, seconds, error = pickle.load(out)
            except Exception:  # noqa: BLE001 - EOF: the worker exited or died
                break
            with self.cond:
                item = self.pending.get(rid)
            if item is not None:        # (its state first: a waiter woken sees it)
                _finish(item[0], item[1], ok, seconds, error)
            with self.cond:
                self.pending.pop(rid, None)
                self.cond.notify_all()
            self.progress.update(self.pending_count())
        with self.cond:
            lost = list(self.pending.items())
            if self.proc is proc:
                self.proc = None
        for _, (source, serial, _) in lost:     # (their state first, as above)
            _finish(source, serial, False, 0.0, "the compile worker exited")
        with self.cond:
            for rid, _ in lost:
                self.pending.pop(rid, None)
            self.cond.notify_all()
        self.progress.update(0)

    def pending_count(self):
        with self.cond:
            return len(self.pending)

    def wait(self, timeout=None):
        with self.cond:
            return self.cond.wait_for(lambda: not self.pending, timeout)

    def close(self):
        """At exit: the worker finishes the compiles it was sent, into the disk cache, for
        the next process, after this one has gone (its stdin's end tells it to stop)."""
        p = self.proc
        if p is not None and self.owner == os.getpid():
            try:
                p.stdin.close()
            except OSError:
                pass
            if not self.pending_count():
                try:
                    p.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    p.kill()
        self.progress.update(0)


WORKER_LOG = "compile-worker.log"
WORKER_LOG_BYTES = 1 << 20


def _worker_log(cache_dir):
    """The compile worker's stderr: a file under the cache root (``WORKER_LOG``, started
    again past ``WORKER_LOG_BYTES``), never this process's stderr. The worker outlives this
    process to finish its compiles; had it inherited a stderr that is a pipe -- a script run
    by ``subprocess.run(..., capture_output=True)`` or ``| tee`` --, the reader of that pipe
    would wait for the worker's last compile, seconds after the script itself had ended.
    (Compile errors come back through the protocol and are reported here.)"""
    path = os.path.join(cache_dir, WORKER_LOG)
    try:
        big = os.path.getsize(path) > WORKER_LOG_BYTES
    except OSError:
        big = False
    try:
        return open(path, "wb" if big else "ab")
    except OSError:
        return subprocess.DEVNULL


_svc = None
_svc_lock = threading.Lock()


def _service():
    global _svc
    with _svc_lock:
        if _svc is None:
            _svc = _Service()
            atexit.register(_svc.close)
        return _svc


# ---- progress on stderr --------------------------------------------------------------------
class _Progress:
    """A status line on stderr while compiles are in flight for more than half a second
    (STREAMRT_PROGRESS: auto -- only when stderr is a terminal --, on, off): rich's spinner on
    a terminal; elsewhere (on) a line when compiling starts and one when it ends."""

    DELAY_S = 0.5

    def __init__(self):
        self.lock = threading.Lock()
        self.status = None
        self.timer = None
        self.since = None

    def _wanted(self):
        p = settings.progress
        if p == "off":
            return False
        return p == "on" or _isatty()

    def update(self, n):
        with self.lock:
            if n and self.since is None:
                self.since = time.perf_counter()
                if self._wanted():
                    self.timer = threading.Timer(self.DELAY_S, self._show)
                    self.timer.daemon = True
                    self.timer.start()
            elif n and self.status is not None:
                self.status.update(self._text(n))
            elif not n:
                self.since = None
                if self.timer is not None:
                    self.timer.cancel()
                    self.timer = None
                if self.status is not None:
                    self.status.stop()
                    self.status = None

    def _text(self, n):
        return (f"streamrt: compiling {n} kernel{'s' if n != 1 else ''} in the background "
                "(the program runs on NumPy meanwhile)")

    def _show(self):
        n = in_flight()
        with self.lock:
            if not n or self.since is None or self.status is not None:
                return
            if _isatty():
                from rich.console import Console    # (~30 ms to import: the first status)
                self.status = Console(stderr=True).status(self._text(n))
            else:
                self.status = _PlainStatus(self._text(n), self.since)
            self.status.start()


def _isatty():
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class _PlainStatus:
    """The status for a stderr that is not a terminal (a log): two lines, no animation."""

    def __init__(self, text, since):
        self.text, self.since, self.n = text, since, 0

    def start(self):
        self._line(self.text + " ...")

    def update(self, text):
        pass

    def stop(self):
        self._line(f"streamrt: background compiles done after "
                   f"{time.perf_counter() - self.since:.1f} s")

    @staticmethod
    def _line(s):
        try:
            print(s, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass


def _after_fork():
    """In a forked child: the parent's compile worker and its pipes are the parent's (the
    child closes its copies of the pipes, so the worker still sees its parent's end only), and
    the compiles in flight will be answered to the parent: those kernels are cold again here
    (the parent's finished compiles are found on disk by the next launch)."""
    global _lock, _svc, _svc_lock, _serial_only
    _lock = threading.Lock()
    # GNU OpenMP (Numba's ``omp`` layer, executor._setup_numba's choice) is not fork-safe:
    # once its team has run in the parent, a parallel region in the child makes Numba
    # terminate the child. The child then runs every kernel's serial twin (same result, one
    # core); the child of a process that never ran a parallel kernel keeps both.
    par = sys.modules.get("numba.np.ufunc.parallel")
    if par is not None and getattr(par, "_is_initialized", False) and \
            getattr(par, "_threading_layer", None) == "omp":
        _serial_only = True
    _svc_lock = threading.Lock()
    s, _svc = _svc, None
    if s is not None:
        _orphans.append(s)          # (kept: its Popen must not be reaped or killed here)
        p = s.proc
        if p is not None:
            # the child's copies of the pipe ends point at /dev/null from now on (closing them
            # would free fd numbers the orphaned file objects still name)
            null = os.open(os.devnull, os.O_RDWR)
            try:
                for f in (p.stdin, p.stdout):
                    try:
                        os.dup2(null, f.fileno())
                    except (OSError, ValueError):
                        pass
            finally:
                os.close(null)
    for v in _states.values():
        if v.state == QUEUED:
            v.state = COLD
    _at_exit.clear()


_orphans: list = []
atfork.register(_after_fork)


def _stats(snapshot):
    snapshot["compiles_in_flight"] = in_flight()


stats.register_reader(_stats, lambda: None)
