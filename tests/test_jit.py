"""The compiled tier: kernels run interpreted until the cost model sends them to the compile
worker process; nothing compiles on the application's thread; results are the same on both
sides of the switch; a failed compile is remembered."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from helpers import assert_same, child_env

import streamrt as ps
from streamrt.backends.numba_cpu import jit
from streamrt.backends.numba_cpu.executor import CPUExecutor
from streamrt.core import hooks

N = 1 << 18          # large enough to be recorded (not the NumPy tier), small enough to be quick


def _program(x, y):
    return ps.sin(x) * 2.0 + ps.sqrt(y) * x - y / 3.0


def _expect(a, b):
    return np.sin(a) * 2.0 + np.sqrt(b) * a - b / 3.0


@pytest.fixture
def background(stats, tmp_path):
    """Background compiles, process-wide (kernels launch on the scheduler's thread, which a
    ps.config.override of this thread does not reach), into an empty kernel cache; no trace
    seen before (a trace's first sight runs without ProgGen: cscheduler._first_sight)."""
    from streamrt.core.config import settings
    old, backend = settings.cache_dir, settings.backend
    jit.reset()
    ps.clear_caches()
    # (the CPU executor's tiers: with a device found, placement would weigh it first)
    ps.config.set(jit="background", cache_dir=str(tmp_path), backend="cpu")
    try:
        yield stats
    finally:
        jit.wait(120)
        ps.config.set(jit="sync", jit_margin=1.0, cache_dir=old, backend=backend)
        jit.reset()


def test_a_cold_kernel_runs_interpreted_and_compiles_nothing_here(background):
    """A trace's first sight runs through NumPy op by op (no ProgGen, no kernel); when it
    comes again its kernel runs interpreted, and nothing is compiled."""
    rng = np.random.default_rng(0)
    a, b = rng.random(N), rng.random(N)
    ps.config.set(jit_margin=1e9)                       # never worth compiling
    x, y = ps.asarray(a), ps.asarray(b)
    r = _program(x, y)
    assert_same(r, _expect(a, b), rtol=1e-15)
    st = background()
    assert st["first_sights"] == 1 and st["trace_cache_misses"] == 0
    assert st["kernels_interpreted"] == 0 and st["kernels_launched"] == 0
    r = _program(x, y)
    assert_same(r, _expect(a, b), rtol=1e-15)
    st = background()
    assert st["first_sights"] == 1 and st["trace_cache_misses"] == 1
    assert st["kernels_interpreted"] == 1
    assert st["kernels_launched"] == 0 and st["kernels_compiled"] == 0
    assert st["compiles_in_flight"] == 0


def test_the_switch_to_the_compiled_kernel(background):
    rng = np.random.default_rng(1)
    a, b = rng.random(N), rng.random(N)
    x, y = ps.asarray(a), ps.asarray(b)
    ps.config.set(jit_margin=0.0)                       # compile at the first run
    first = np.array(_program(x, y))
    st = background()
    assert st["kernels_interpreted"] == 1 and st["compiles_requested"] == 1
    assert jit.wait(120)
    st = background()
    assert st["kernels_compiled"] == 1 and st["compile_failures"] == 0
    second = np.array(_program(x, y))
    st = background()
    assert st["kernels_launched"] == 1 and st["kernels_interpreted"] == 1
    assert_same(first, _expect(a, b), rtol=1e-15)
    assert_same(second, first, rtol=1e-14)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc (Linux)")
def test_the_compile_worker_writes_its_own_stderr_under_the_cache(background):
    """The worker outlives the process to finish its compiles: it must not hold that
    process's stderr (a pipe's reader -- ``subprocess.run(capture_output=True)``, ``| tee``
    -- would wait for its last compile), so its stderr is a log file in the cache."""
    ps.config.set(jit_margin=0.0)
    np.array(_program(ps.asarray(np.ones(N)), ps.asarray(np.ones(N))))
    assert background()["compiles_requested"] == 1
    proc = jit._svc.proc
    worker_stderr = os.readlink(f"/proc/{proc.pid}/fd/2")
    # (under the cache root of the test that started the worker: it serves the later ones)
    assert os.path.basename(worker_stderr) == jit.WORKER_LOG
    assert worker_stderr != os.readlink("/proc/self/fd/2")
    assert jit.wait(120) and background()["kernels_compiled"] == 1


def test_with_the_jit_off_a_hot_kernel_compiles_nothing(background):
    """STREAMRT_JIT=off: kernels run interpreted and none is sent to the compile worker
    (they were: a worker compiled beside the program, for kernels it would never use)."""
    rng = np.random.default_rng(2)
    a, b = rng.random(N), rng.random(N)
    x, y = ps.asarray(a), ps.asarray(b)
    ps.config.set(jit="off", jit_margin=0.0)            # (would compile at the first run)
    for _ in range(3):
        assert_same(_program(x, y), _expect(a, b), rtol=1e-15)
    st = background()
    # (the first call is the trace's first sight: no kernel)
    assert st["first_sights"] == 1
    assert st["kernels_interpreted"] == 2 and st["compiles_requested"] == 0
    assert st["kernels_launched"] == 0


def test_a_compile_that_fails_stays_interpreted_and_is_remembered(background, monkeypatch):
    rng = np.random.default_rng(2)
    a = rng.random(N)
    x = ps.asarray(a)
    # the worker is asked to compile for argument types the kernel cannot take
    monkeypatch.setattr(CPUExecutor, "describe", lambda self, prog: (("S", "bool"),))
    ps.config.set(jit_margin=0.0)
    r1 = np.array(ps.exp(x) + x)
    assert jit.wait(120)
    st = background()
    assert st["compile_failures"] == 1
    r2 = np.array(ps.exp(x) + x)
    st = background()
    assert st["kernels_interpreted"] == 2 and st["kernels_launched"] == 0
    assert st["compiles_requested"] == 1            # not asked again
    assert_same(r1, np.exp(a) + a, rtol=1e-15)
    assert_same(r2, r1)


def test_a_kernel_far_slower_interpreted_waits_for_its_compile(background, monkeypatch):
    """Counter-based random numbers interpreted by NumPy cost ~250 ns each: a kernel whose
    one interpreted run is estimated over INTERPRET_WAIT_S is compiled by the worker first
    (this thread waits) and runs compiled at its first launch; a smaller one runs
    interpreted as before."""
    monkeypatch.setattr(jit, "INTERPRET_WAIT_S", N * 200e-9)    # (as 2 s is to 8M numbers)
    monkeypatch.setattr(jit, "NUMBA_LOAD_S", 0.0)               # (its saving pays for Numba)
    rng = ps.random.default_rng(3)
    small = float(ps.mean(rng.random(N // 2)))              # estimated under the limit
    st = background()               # (the trace's first sight: NumPy, no kernel)
    assert st["first_sights"] == 1 and st["kernels_interpreted"] == 0
    for _ in range(2):              # seen again: its kernel, interpreted
        small = float(ps.mean(rng.random(N // 2)))
    st = background()
    interpreted = st["kernels_interpreted"]
    assert interpreted >= 1 and st["compiles_requested"] == 0
    big = float(ps.mean(rng.random(N)))                     # over it
    st = background()
    assert st["kernels_interpreted"] == interpreted and st["kernels_launched"] == 1
    assert st["compiles_requested"] == 1 and st["kernels_compiled"] == 1
    assert abs(small - 0.5) < 0.01 and abs(big - 0.5) < 0.01


def test_a_short_script_never_loads_numba(tmp_path):
    """A fresh process whose large work runs a few times: through NumPy (its first sight,
    then its kernel interpreted), no compiler, and Numba never imported (its import alone
    costs about half a second)."""
    code = textwrap.dedent(f"""
        import sys, numpy as np, streamrt as ps
        x = ps.asarray(np.random.default_rng(0).random({N}))
        for _ in range(3):
            s = float(ps.sum(ps.sin(x) * x + 1.0))
        st = ps.runtime_stats()
        print(st["kernels_interpreted"], st["kernels_launched"], "numba" in sys.modules,
              st["first_sights"])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=child_env(tmp_path, STREAMRT_JIT="background"), timeout=300)
    assert out.returncode == 0, out.stderr
    interpreted, launched, numba, first = out.stdout.split()
    assert int(interpreted) >= 2 and launched == "0" and numba == "False" and first == "1"


def test_a_second_process_finds_the_kernels_compiled(tmp_path):
    code = textwrap.dedent(f"""
        import numpy as np, streamrt as ps
        from streamrt.backends.numba_cpu import jit
        x = ps.asarray(np.random.default_rng(0).random({N}))
        r = float(ps.sum(ps.sin(x) * x + 1.0))
        jit.wait(120)
        r2 = float(ps.sum(ps.sin(x) * x + 1.0))
        st = ps.runtime_stats()
        print(st["kernels_interpreted"], st["kernels_launched"], st["kernels_compiled"])
    """)
    env = child_env(tmp_path, STREAMRT_JIT="background", STREAMRT_JIT_MARGIN="0")
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["1", "1", "1"]
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=300)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["0", "2", "0"]      # loaded from the disk cache


AFTER_EXIT = """
import sys, numpy as np, streamrt as ps
from streamrt.backends.numba_cpu import jit
jit.KERNEL_LOAD_S, jit.NUMBA_LOAD_S = 0.0, {numba_load}
x = ps.asarray(np.random.default_rng(0).random({n}))
for _ in range(3):
    s = float(ps.sum(ps.sin(x) * x + 1.0))
st = ps.runtime_stats()
print(st["kernels_interpreted"] + st["first_sights"], st["kernels_launched"],
      st["compiles_requested"], "numba" in sys.modules)
"""


def test_a_kernel_that_pays_only_for_its_load_compiles_after_exit(tmp_path):
    """A kernel whose gain pays for loading it but not for loading Numba into a short run is
    not compiled during the run (the worker would compete with it for the machine); the
    worker compiles it after the process has exited. The next run loads it only when the
    gain recorded for it pays for loading Numba, at its first launch."""
    import glob
    env = child_env(tmp_path, STREAMRT_JIT="background")

    def run(numba_load):
        # (stderr a pipe too: the worker, still compiling, does not hold it -- see
        # test_the_compile_worker_writes_its_own_stderr_under_the_cache)
        out = subprocess.run([sys.executable, "-c",
                              AFTER_EXIT.format(n=N, numba_load=numba_load)],
                             capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    assert run(1e9) == ["3", "0", "0", "False"]           # nothing compiled, Numba not loaded
    # the worker holds the cache's worker lock from its start: waiting for it, right after
    # the process exited, waits for the compile (it took the lock itself only once started)
    assert jit.workers_idle(str(tmp_path), timeout=120)
    assert glob.glob(str(tmp_path / "numba" / "*.parallel")) + \
        glob.glob(str(tmp_path / "numba" / "*.serial")), "the worker did not compile after exit"
    assert glob.glob(str(tmp_path / "numba" / "*.gain-*"))
    assert run(1e9) == ["3", "0", "0", "False"]           # its gain does not pay for Numba
    assert run(0.0) == ["0", "3", "0", "True"]            # it does: loaded at its first launch


PROGRESS = r"""
import time
import numpy as np
import streamrt as ps
from streamrt.backends.numba_cpu import jit
x = ps.asarray(np.linspace(0, 1, 1000))
print(float(ps.sum(ps.sin(x) * 2.0 + 1.0)))
assert jit.wait(120)
time.sleep(0.2)                  # (the status line ends on the service's reader thread)
print(ps.runtime_stats()["kernels_compiled"])
"""


@pytest.mark.parametrize("progress", ["on", "off"])
def test_a_long_compile_says_so_on_stderr(tmp_path, progress):
    """A background compile that takes over half a second (this one also starts the worker
    and imports Numba there) shows a status on stderr -- plain lines when stderr is not a
    terminal, as here -- unless STREAMRT_PROGRESS=off."""
    env = child_env(tmp_path, STREAMRT_JIT="background", STREAMRT_JIT_MARGIN="0",
                    STREAMRT_PROGRESS=progress)
    p = subprocess.run([sys.executable, "-c", PROGRESS], env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split()[-1] == "1"
    print(repr(p.stderr))
    if progress == "on":
        assert "compiling 1 kernel in the background" in p.stderr
        assert "background compiles done after" in p.stderr
    else:
        assert "compiling" not in p.stderr


def test_the_speed_up_estimate_counts_the_memory_traffic_fusion_saves(monkeypatch):
    """jit.speedup: the traffic of the ops run one by one (each reads its array operands and
    writes its result) over the kernel's (its loads and stores once), times PARALLEL_GAIN
    for the parallel variant -- not the op count: a + b + c saves a third of NumPy's passes,
    a chain of four ops on one array three quarters."""
    seen = []
    launch = CPUExecutor.launch

    def spy(self, prog):
        if prog.kind == "kernel":       # (before the run: a completed port lets go of its inputs)
            seen.append((jit.speedup(prog, True), jit.speedup(prog, False)))
        return launch(self, prog)
    monkeypatch.setattr(CPUExecutor, "launch", spy)
    rng = np.random.default_rng(3)
    a, b, c = (ps.asarray(rng.random(N)) for _ in range(3))
    from streamrt.core.config import settings
    old = settings.split_elements
    ps.sync()
    ps.config.set(split_elements=0)     # (process-wide: the kernels may run on another thread)
    try:
        (a + b + c).numpy()
        ((a * 2.0 + 1.0) * 3.0 - 4.0).numpy()
        (ps.exp(a)).numpy()
        a.sum().numpy()
        (three, chain, one, red) = seen[-4:]
        assert three[0] == pytest.approx(12 / 8)      # 2 ops x 3 arrays / (3 loads + 1 store)
        assert chain[0] == pytest.approx(8 / 2)       # 4 ops x 2 arrays / (1 + 1)
        assert chain[1] == pytest.approx(4 * jit.PARALLEL_GAIN)
        assert one == (1.0, 1.0)                      # nothing fused: not even the cores count
        assert red[1] == pytest.approx(red[0] * jit.PARALLEL_GAIN)  # (a reduction: over them)
        if hooks.ufunc_loop is not None and jit.PARALLEL_GAIN > 1.0:
            # interpreted ops cut over two threads: the cores are no gain, but for a reduction
            ps.sync()
            ps.config.set(split_elements=N // 2)
            ((a * 2.0 + 1.0) * 3.0 - 5.0).numpy()
            (a * 3.0).sum().numpy()
            chain, red = seen[-2:]
            assert chain == (pytest.approx(4.0), pytest.approx(4.0))
            assert red[1] == pytest.approx(red[0] * jit.PARALLEL_GAIN)
    finally:
        ps.sync()
        ps.config.set(split_elements=old)


@pytest.mark.parametrize("compiled_slower", [True, False])
def test_a_compiled_kernel_measured_slower_runs_interpreted_again(background, monkeypatch,
                                                                   compiled_slower):
    """The switch follows an estimate; the compiled runs are then timed against the
    interpreted ones (per element), and a variant slower compiled goes back to interpreting
    for the rest of the process (a later one judges again). One faster compiled stays
    compiled. (Either side is slowed by 100 ms a run to make the comparison certain.)"""
    import time as _time
    slow = "_run_kernel" if compiled_slower else "_interpret"
    orig = getattr(CPUExecutor, slow)

    def slowed(self, *a):
        _time.sleep(0.1)
        return orig(self, *a)
    monkeypatch.setattr(CPUExecutor, slow, slowed)
    rng = np.random.default_rng(5)
    a, b = rng.random(N), rng.random(N)
    x, y = ps.asarray(a), ps.asarray(b)
    ps.config.set(jit_margin=1e9)
    for _ in range(2):
        assert_same(_program(x, y), _expect(a, b), rtol=1e-15)     # interpreted, timed
    ps.config.set(jit_margin=0.0)
    _program(x, y).numpy()                                          # requests the compile
    assert jit.wait(120)
    for _ in range(jit.WARMUP_RUNS + jit.MEASURED_RUNS):
        assert_same(_program(x, y), _expect(a, b), rtol=1e-14)     # compiled, timed
    st = background()
    assert st["kernels_launched"] == jit.WARMUP_RUNS + jit.MEASURED_RUNS
    assert st["kernels_slower_compiled"] == int(compiled_slower)
    ps.reset_stats()
    assert_same(_program(x, y), _expect(a, b), rtol=1e-14)
    st = background()
    assert (st["kernels_interpreted"], st["kernels_launched"]) == \
        ((1, 0) if compiled_slower else (0, 1))
    jit.reset()                         # (a later process: compiled on disk, judged again)
    ps.reset_stats()
    _program(x, y).numpy()
    assert background()["kernels_launched"] == 1


SPIN = """
import os, numpy as np, streamrt as ps
from streamrt.backends.numba_cpu import executor
x = ps.asarray(np.random.default_rng(0).random(1 << 18))
float(ps.sum(x * 2.0 + 1.0))
print(ps.runtime_stats()["kernels_compiled"], executor.omp_spincount or "-",
      os.environ.get("GOMP_SPINCOUNT", "-"))
"""


@pytest.mark.parametrize("env,want", [({}, ["10000", "-"]),
                                      ({"GOMP_SPINCOUNT": "77"}, ["77", "77"]),
                                      ({"OMP_WAIT_POLICY": "passive"}, ["-", "-"])])
def test_openmp_threads_spin_briefly_unless_the_user_said(tmp_path, env, want):
    """Loading Numba's OpenMP layer sets GNU OpenMP's spin count (its idle threads otherwise
    spin for milliseconds against the BLAS threads of the next matrix product), keeping what
    the user set; ours does not stay in the environment (the program's children)."""
    base = {k: v for k, v in child_env(tmp_path, STREAMRT_JIT="sync").items()
            if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    out = subprocess.run([sys.executable, "-c", SPIN], capture_output=True, text=True,
                         env={**base, **env}, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1"] + want


def test_a_parallel_kernel_parks_the_cut_loops_helper(monkeypatch):
    """Before a compiled parallel kernel runs, the C path's helper thread (which spins ~0.2 ms
    after each cut loop of an interpreted kernel) is told to sleep: OpenMP's team needs both
    cores. A serial kernel does not park it; with the C path off there is nothing to park."""
    from streamrt.core import hooks
    from streamrt.frontend import native
    calls = []
    if native.available():
        assert hooks.park_helper is not None
        hooks.park_helper()                     # (callable at any time: a no-op when idle)
    monkeypatch.setattr(hooks, "park_helper", lambda: calls.append(1))
    with ps.config.override(serial_elements=1 << 15, backend="cpu"):
        x = ps.asarray(np.linspace(0.0, 1.0, 100_000))
        assert float(ps.sum(ps.sin(x) * 2.0)) == pytest.approx(
            float(np.sum(np.sin(np.linspace(0.0, 1.0, 100_000)) * 2.0)))
        assert calls == [1]
        y = ps.asarray(np.linspace(0.0, 1.0, 1000))
        float(ps.sum(ps.cos(y) * 3.0))          # (serial: not parked)
        assert calls == [1]
