"""Strength reduction: ``x ** c`` for c in 2, 0.5, -1, 3 becomes square / sqrt / reciprocal /
x*x*x (the exponent's value then chooses the op); any other exponent stays a parameter."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_same

import streamrt as ps


def _ops(x):
    from streamrt.frontend.array import Array
    assert isinstance(x, Array)
    return x._port


@pytest.mark.parametrize("c, op", [(2, "square"), (0.5, "sqrt"), (-1, "reciprocal"),
                                   (2.0, "square")])
def test_special_exponents_become_their_op(c, op, stats):
    a = np.linspace(0.5, 3.0, 7)
    x = ps.asarray(a)
    y = x ** c
    assert _ops(y).op == op
    assert_same(y, a ** c)


def test_cube_is_two_multiplies_within_the_ulp_tolerance():
    a = np.linspace(-3.0, 3.0, 9)
    y = ps.asarray(a) ** 3
    assert _ops(y).op == "multiply" and _ops(y).inputs[0].op == "square"
    assert_same(y, a ** 3, ulps=2)


def test_other_exponents_stay_parameters_and_share_a_trace(stats):
    a = np.linspace(0.5, 3.0, 7)
    x = ps.asarray(a)
    for c in (2.7, 1.3):
        y = x ** c
        assert _ops(y).op == "power"
        assert_same(y, a ** c, ulps=4)
    st = stats()
    assert st["trace_cache_hits"] >= 1          # the second exponent reused the first trace


def test_dtypes_and_integers_follow_numpy():
    i = np.arange(5, dtype=np.int32)
    assert_same(ps.asarray(i) ** 2, i ** 2)
    assert_same(ps.asarray(i) ** 0.5, i ** 0.5)
    f = np.linspace(1, 2, 4, dtype=np.float32)
    assert_same(ps.asarray(f) ** -1, f ** -1)
    with pytest.raises(ValueError):
        ps.asarray(i) ** -1                 # integers to negative powers: NumPy's error


def test_sum_of_squares_is_one_kernel(stats):
    a = np.random.default_rng(0).random(10_000).astype(np.float32)
    s = ps.sum(ps.asarray(a) ** 2)
    assert_same(s, np.sum(a.astype(np.float64) ** 2).astype(np.float32), rtol=1e-6)
    assert stats()["kernels_launched"] == 1


def test_complex_and_bool_powers_take_numpys_operator_paths():
    """NumPy's ``**`` takes square / reciprocal / sqrt for a Python int 2 or -1 or a float 0.5
    (``z ** 2.0`` and ``z ** 3`` of a complex array go through power, whose values at
    infinities differ), and ``bool_array ** 2`` is square's int8: on the NumPy tier (small,
    computed) and recorded (large, interpreted) alike. (Compiled kernels keep Numba's C99
    values at infinities: docs/guide.md.)"""
    vals = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e200, -0.3, 2.5]
    z = np.array([complex(a, b) for a in vals for b in vals])
    b = np.array([True, False, True])
    for base in (z, z.astype(np.complex64), b):
        for n in (base.size, 70_000):
            x = np.resize(base, n)
            for e in (2, 2.0, -1, -1.0, 0.5, 3, 1.5):
                if base.dtype == bool and e in (-1, -1.0):
                    continue
                with np.errstate(all="ignore"), \
                        ps.config.override(jit="off", eager_elements=1 << 16):
                    want = x ** e
                    got = np.asarray(ps.asarray(x) ** e)
                assert got.dtype == want.dtype, (base.dtype, n, e)
                for part in ((np.real, np.imag) if want.dtype.kind == "c" else (np.asarray,)):
                    w, g = part(want), part(got)
                    np.testing.assert_allclose(g, w, rtol=1e-6, atol=0, equal_nan=True)
                    assert np.array_equal(np.signbit(g[w == 0]), np.signbit(w[w == 0]))
