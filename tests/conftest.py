"""Test set-up: a private kernel cache directory and a clean streamrt environment.

STREAMRT_* variables of the calling shell are cleared *before* streamrt is imported (the
counters and results the tests assert must not depend on a STREAMRT_BACKEND or
STREAMRT_DEBUG left in the environment), and compiled kernels go to a directory under the
system temp dir (override with STREAMRT_TEST_CACHE_DIR), never to the repository or $HOME;
so do Hypothesis' files.
The directory is shared by the xdist workers and kept between runs: a warm run loads the
kernels from disk instead of compiling them.

STREAMRT_TEST_NATIVE=0 runs the whole suite with the C record path off (STREAMRT_NATIVE=0):
CI runs it a second time, so that the Python path -- the definition -- passes everything on
its own too."""
import os
import tempfile

# CI sets this: the OpenCL suites must run there (PoCL is installed), not skip silently
_require_opencl = os.environ.get("STREAMRT_TEST_REQUIRE_OPENCL") == "1"
# ... and the C record path must be built there (a failed build would otherwise leave every
# operator on the Python path, tests/test_native.py skipped)
_native_off = os.environ.get("STREAMRT_TEST_NATIVE") == "0"
_require_native = os.environ.get("STREAMRT_TEST_REQUIRE_NATIVE") == "1" and not _native_off
_cache = os.environ.get("STREAMRT_TEST_CACHE_DIR") or os.path.join(
    tempfile.gettempdir(), f"streamrt-test-cache-{os.getuid()}")
# (the STREAMRT_TEST_* variables are kept: pytest-xdist's workers inherit this environment and
# run this file again)
for _k in [k for k in os.environ if k.startswith("STREAMRT_") and not k.startswith("STREAMRT_TEST_")]:
    del os.environ[_k]
os.environ["STREAMRT_CACHE_DIR"] = _cache
if _native_off:
    os.environ["STREAMRT_NATIVE"] = "0"
# the NumPy tier (small ops run at once through NumPy) would leave the small arrays most
# tests use unrecorded: the tests of recording, fusion and caches assert what the compiled
# path does; tests/test_tiers.py and the fuzzer run the NumPy tier and the switch points
os.environ["STREAMRT_EAGER_ELEMENTS"] = "0"
# ... and kernels compile on their first launch, on the launching thread, as the tests of the
# compiled path assert; tests/test_jit.py runs the background compiles
os.environ["STREAMRT_JIT"] = "sync"

import hypothesis.configuration
import pytest

import streamrt as ps

# Hypothesis' own files (it writes some even without an example database) go there too
hypothesis.configuration.set_hypothesis_home_dir(
    os.path.join(tempfile.gettempdir(), f"streamrt-test-hypothesis-{os.getuid()}"))


def pytest_configure(config):
    if _require_native:
        from streamrt.frontend import native
        if not native.available():
            raise pytest.UsageError("STREAMRT_TEST_REQUIRE_NATIVE=1 but the C record path "
                                    "(streamrt/frontend/_native.c) is not built or not installed")
    if _require_opencl:
        from helpers import OPENCL
        if not OPENCL:
            raise pytest.UsageError("STREAMRT_TEST_REQUIRE_OPENCL=1 but no OpenCL device works "
                                    "here: the OpenCL suites would be skipped")


@pytest.fixture
def stats():
    """Runs what earlier code left recorded, zeroes the counters, and returns a function that
    reads them (``stats()["kernels_launched"]``)."""
    ps.sync()
    ps.reset_stats()
    return ps.runtime_stats


@pytest.fixture(autouse=True)
def _isolated():
    """Each test starts with this thread's work queue empty: what an earlier test recorded
    and never read must not end up in this test's flushes (and its trace keys)."""
    ps.sync()
    yield
