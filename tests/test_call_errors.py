"""Errors and floating-point warnings at the call (issue 23): NumPy's exception types, with
the user's file:line in the message; divide / overflow / invalid warned as NumPy warns, at
the user's line, honouring ``np.errstate`` / ``ps.errstate`` as they stand at the call."""
from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import streamrt as ps
from streamrt.frontend import native

EAGER = 1 << 16


def _line():
    return sys._getframe(1).f_lineno


CASES = [
    ("zeros(-1)", lambda m: m.zeros(-1)),
    ("zeros(10**13)", lambda m: m.zeros(10 ** 13)),
    ("ones((2**40, 2**40))", lambda m: m.ones((2 ** 40, 2 ** 40))),
    ("arange(0, 10, 0)", lambda m: m.arange(0, 10, 0)),
    ("linspace(0, 1, -1)", lambda m: m.linspace(0, 1, -1)),
    ("full(-1, 1.0)", lambda m: m.full(-1, 1.0)),
    ("eye(-2)", lambda m: m.eye(-2)),
    ("ragged asarray", lambda m: m.asarray([[1, 2], [3]])),
    ("ragged array", lambda m: m.array([[1, 2], [3]])),
    ("bool() of many", lambda m: bool(m.asarray([1, 2]))),
    ("fft of empty", lambda m: m.fft.fft(m.asarray(np.zeros(0)))),
    ("fft2 of empty", lambda m: m.fft.fft2(m.asarray(np.zeros((0, 3))))),
    ("ndarray(-1)", lambda m: m.ndarray((-1,))),
    ("mgrid of a bad step", lambda m: m.mgrid[0:1:0]),
]


@pytest.mark.parametrize("eager", [0, EAGER], ids=["recorded", "tier"])
@pytest.mark.parametrize("what,call", CASES, ids=[c[0] for c in CASES])
def test_numpys_exception_at_the_call(what, call, eager):
    with pytest.raises(BaseException) as ne:
        call(np)
    # (NumPy's own subclasses, _ArrayMemoryError, are matched by their builtin base)
    expected = next(c for c in type(ne.value).__mro__ if c.__module__ == "builtins")
    with ps.config.override(eager_elements=eager):
        with pytest.raises(expected) as e:
            call(ps)
    # the user's line: here, the lambda's
    assert f"{__file__}:{call.__code__.co_firstlineno}:" in str(e.value), str(e.value)


# ---- floating-point warnings ------------------------------------------------------------------
@pytest.fixture(params=["native", "python"])
def tier(request):
    if request.param == "python":
        with native.disabled(), ps.config.override(eager_elements=EAGER):
            yield
    else:
        with ps.config.override(eager_elements=EAGER):
            yield


def _caught(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [(str(m.message), m.filename, m.lineno, m.category) for m in w]


def test_warnings_at_the_users_line_as_numpy(tier):
    a = ps.asarray([1.0, 0.0, -1.0])
    line = _line() + 1
    got = _caught(lambda: ps.log(a))
    assert ("divide by zero encountered in log", __file__, line, RuntimeWarning) in got
    assert ("invalid value encountered in log", __file__, line, RuntimeWarning) in got
    line = _line() + 1
    got = _caught(lambda: a / 0)
    assert ("divide by zero encountered in divide", __file__, line, RuntimeWarning) in got
    line = _line() + 1
    got = _caught(lambda: ps.exp(a * 1000.0))
    assert ("overflow encountered in exp", __file__, line, RuntimeWarning) in got
    line = _line() + 1
    got = _caught(lambda: np.sqrt(a))
    assert ("invalid value encountered in sqrt", __file__, line, RuntimeWarning) in got
    assert _caught(lambda: ps.sqrt(a + 1.0)) == []


@pytest.mark.parametrize("errstate", [np.errstate, ps.errstate], ids=["np", "ps"])
def test_errstate_at_the_call_is_honoured(tier, errstate):
    a = ps.asarray([1.0, 2.0])
    assert ps.errstate is np.errstate
    with errstate(divide="ignore"):
        assert _caught(lambda: a / 0) == []
    with errstate(all="raise"):
        with pytest.raises(FloatingPointError, match="divide by zero"):
            a / 0
    calls = []
    with errstate(divide="call", call=lambda word, flag: calls.append(word)):
        a / 0
    assert calls == ["divide by zero"]


def test_host_functions_warn_at_the_users_line():
    x, w = ps.asarray([0.25, 0.75]), ps.asarray([0.0, 0.0])
    line = _line() + 1
    got = _caught(lambda: ps.histogram(x, bins=2, range=(0, 1), density=True, weights=w))
    assert [(m, f, ln) for m, f, ln, _ in got] == [
        ("invalid value encountered in histogram", __file__, line)]
    with ps.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError, match=f"{__file__}:{_line() + 1}: invalid"):
            ps.histogram(x, bins=2, range=(0, 1), density=True, weights=w)
