"""The Array API namespace: property tests (hypothesis.extra.array_api strategies) comparing
streamrt.array_api with array_api_strict, plus the namespace's fixed surface.

Few examples, derandomized: every new (op, dtype, loop depth) compiles a Numba kernel, and a
fixed example sequence lets a warm run load them all from the on-disk cache."""
from __future__ import annotations

import array_api_strict as sx
import numpy as np
import pytest
from helpers import assert_same
from hypothesis import assume, given, settings, strategies as st
from hypothesis.extra.array_api import make_strategies_namespace

import streamrt as ps

xp = ps.array_api
xps = make_strategies_namespace(xp)
sx.set_array_api_strict_flags(api_version="2023.12")

DTYPES = (xps.integer_dtypes() | xps.unsigned_integer_dtypes() | xps.floating_dtypes()
          | xps.boolean_dtypes())
SHAPES = xps.array_shapes(min_dims=1, max_dims=2, min_side=2, max_side=4)
FAST = settings(max_examples=6, deadline=None, derandomize=True, database=None)


def arrays(dtype, shape, elements=None):
    """Arrays whose every element is drawn (no fill value: all-zero arrays pass too much)."""
    return xps.arrays(dtype, shape, elements=elements, fill=st.nothing())


def _strict(x):
    return sx.asarray(np.asarray(x))


def _same(got, exp, tol=False, rtol=0.0):
    g, e = np.asarray(got), np.from_dlpack(exp)
    assert g.dtype == e.dtype, (g.dtype, e.dtype)
    assert_same(g, e, ulps=4 if tol else 0, rtol=rtol)


def _call(f, *args):
    """(result or None if array_api_strict refuses these dtypes)."""
    try:
        return f(*args)
    except (TypeError, ValueError):
        return None


UNARY = ["abs", "negative", "exp", "log", "sqrt", "sin", "tanh", "floor", "round", "isnan",
         "sign", "logical_not", "bitwise_invert"]
TRANSCENDENTAL = {"exp", "log", "sqrt", "sin", "tanh", "atan2", "hypot", "logaddexp", "pow"}
BINARY = ["add", "subtract", "multiply", "divide", "maximum", "equal", "less",
          "logical_and", "bitwise_xor", "floor_divide", "remainder", "pow", "atan2",
          "logaddexp"]


@pytest.mark.parametrize("name", UNARY)
@FAST
@given(x=DTYPES.flatmap(lambda d: arrays(d, SHAPES)))
def test_unary_elementwise_matches_array_api_strict(name, x):
    exp = _call(getattr(sx, name), _strict(x))
    assume(exp is not None)
    _same(getattr(xp, name)(x), exp, tol=name in TRANSCENDENTAL)


@pytest.mark.parametrize("name", BINARY)
@FAST
@given(dt=DTYPES, shape=SHAPES, data=st.data())
def test_binary_elementwise_matches_array_api_strict(name, dt, shape, data):
    x = data.draw(arrays(dt, shape), label="x")
    y = data.draw(arrays(dt, shape[-1:]), label="y")        # broadcasting
    # the standard defines these for numeric dtypes only (array_api_strict lets NumPy answer
    # int8 for booleans)
    assume(not (name in ("floor_divide", "remainder", "pow") and dt == xp.bool))
    if name == "pow" and xp.isdtype(dt, "integral"):
        y = xp.abs(y)                    # integers to negative powers are undefined
    exp = _call(getattr(sx, name), _strict(x), _strict(y))
    assume(exp is not None)
    _same(getattr(xp, name)(x, y), exp, tol=name in TRANSCENDENTAL)


BOUNDED = {"min_value": -1000, "max_value": 1000}


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "max", "min", "var", "std"])
@FAST
@given(dt=DTYPES, shape=SHAPES, axis=st.sampled_from([None, 0, -1]), keepdims=st.booleans(),
       data=st.data())
def test_statistical_functions_match_array_api_strict(name, dt, shape, axis, keepdims, data):
    el = BOUNDED if not xp.isdtype(dt, "bool") else None
    if xp.isdtype(dt, "integral"):
        info = xp.iinfo(dt)
        el = {"min_value": max(-1000, info.min), "max_value": min(1000, info.max)}
    if name == "prod" and xp.isdtype(dt, "integral"):
        el = {"min_value": max(-3, xp.iinfo(dt).min), "max_value": 3}
    x = data.draw(arrays(dt, shape, elements=el), label="x")
    exp = _call(lambda a: getattr(sx, name)(a, axis=axis, keepdims=keepdims), _strict(x))
    assume(exp is not None)
    got = getattr(xp, name)(x, axis=axis, keepdims=keepdims)
    # float sums accumulate in float64 in streamrt, pairwise in NumPy
    fl = xp.isdtype(dt, "real floating")
    _same(got, exp, rtol=(1e-5 if dt == xp.float32 else 1e-12) if fl else 0.0)


MANIP = {
    "flip": lambda m, x: m.flip(x, axis=0),
    "roll": lambda m, x: m.roll(x, 2, axis=-1),
    "permute_dims": lambda m, x: m.permute_dims(x, tuple(reversed(range(x.ndim)))),
    "reshape": lambda m, x: m.reshape(x, (-1,)),
    "expand_dims": lambda m, x: m.expand_dims(x, axis=1),
    "squeeze": lambda m, x: m.squeeze(m.expand_dims(x, axis=0), axis=0),
    "concat": lambda m, x: m.concat([x, x], axis=0),
    "stack": lambda m, x: m.stack([x, x], axis=-1),
    "tile": lambda m, x: m.tile(x, (2, 1)),
    "repeat": lambda m, x: m.repeat(x, 2, axis=0),
    "moveaxis": lambda m, x: m.moveaxis(x, 0, -1),
    "broadcast_to": lambda m, x: m.broadcast_to(x, (2,) + tuple(x.shape)),
    "unstack": lambda m, x: m.unstack(x, axis=0)[-1],
    "astype": lambda m, x: m.astype(x, m.float32),
    "matrix_transpose": lambda m, x: m.matrix_transpose(m.reshape(x, (1, -1))),
    "where": lambda m, x: m.where(m.astype(x, m.bool), x, m.zeros_like(x)),
}


@pytest.mark.parametrize("name", sorted(MANIP))
@FAST
@given(x=DTYPES.flatmap(lambda d: arrays(d, SHAPES)))
def test_manipulation_functions_match_array_api_strict(name, x):
    exp = MANIP[name](sx, _strict(x))
    _same(MANIP[name](xp, x), exp)


CREATE = {
    "arange": lambda m, n, d: m.arange(0, n, 1, dtype=m.float64 if d == "f" else m.int64),
    "zeros": lambda m, n, d: m.zeros((n, 2), dtype=m.float32 if d == "f" else m.int32),
    "ones": lambda m, n, d: m.ones(n, dtype=m.bool if d == "b" else m.float64),
    "full": lambda m, n, d: m.full((2, n), 7 if d != "f" else 2.5),
    "linspace": lambda m, n, d: m.linspace(-1, 1, n),
    "eye": lambda m, n, d: m.eye(n, n + 1, k=1 if d == "f" else -1),
    "full_like": lambda m, n, d: m.full_like(m.zeros(n, dtype=m.int64), 3),
    "tril": lambda m, n, d: m.tril(m.ones((n, n)), k=-1),
    "triu": lambda m, n, d: m.triu(m.ones((n, 3), dtype=m.int32)),
    "meshgrid": lambda m, n, d: m.meshgrid(m.arange(n), m.arange(3), indexing="ij")[1],
}


@pytest.mark.parametrize("name", sorted(CREATE))
@FAST
@given(n=st.integers(1, 5), d=st.sampled_from("fib"))
def test_creation_functions_match_array_api_strict(name, n, d):
    _same(CREATE[name](xp, n, d), CREATE[name](sx, n, d))


def test_namespace_surface():
    x = ps.asarray(np.arange(6.0).reshape(2, 3))
    assert x.__array_namespace__() is xp and ps.__array_namespace__() is xp
    assert xp.__array_api_version__ == "2023.12"
    assert xp.finfo(xp.float32).eps == np.finfo(np.float32).eps
    assert xp.iinfo(xp.int32).max == 2 ** 31 - 1
    assert xp.isdtype(xp.int64, "integral") and not xp.isdtype(xp.float32, ("bool", "integral"))
    assert xp.result_type(xp.int32, xp.float32) == xp.float64
    assert xp.can_cast(xp.int32, xp.int64) and not xp.can_cast(xp.float64, xp.int64)
    assert_same(xp.permute_dims(x, (1, 0)), np.arange(6.0).reshape(2, 3).T)
    assert_same(xp.astype(x, xp.int32), np.arange(6).reshape(2, 3).astype(np.int32))
    assert_same(xp.matrix_transpose(x), np.arange(6.0).reshape(2, 3).T)
    assert_same(xp.diff(x, axis=1), np.diff(np.arange(6.0).reshape(2, 3), axis=1))
    assert_same(xp.isin(x, ps.asarray([1.0, 4.0])), np.isin(np.arange(6.0).reshape(2, 3),
                                                            [1.0, 4.0]))
    u = xp.unique_all(ps.asarray([3, 1, 3, 2]))
    assert u.values.tolist() == [1, 2, 3] and u.counts.tolist() == [1, 1, 2]
    assert u.inverse_indices.tolist() == [2, 0, 2, 1] and u.indices.tolist() == [1, 3, 0]
    assert_same(xp.vecdot(x, x), np.sum(np.arange(6.0).reshape(2, 3) ** 2, axis=-1))
    info = xp.__array_namespace_info__()
    assert set(info.dtypes()) == {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                  "uint32", "uint64", "float32", "float64", "complex64",
                                  "complex128"}
    assert set(info.dtypes(kind="unsigned integer")) == {"uint8", "uint16", "uint32", "uint64"}
    with pytest.raises(ValueError):
        xp.asarray(np.arange(3), copy=False)
    assert xp.zeros(3, dtype=xp.uint8).dtype == np.uint8
    assert xp.iinfo(xp.uint16).max == 2 ** 16 - 1 and xp.iinfo(xp.int8).min == -128
    assert xp.sum(xp.asarray(np.array([200, 100], np.uint8))).dtype == xp.uint64
    assert int(xp.sum(xp.asarray(np.array([200, 100], np.uint8)))) == 300
    with pytest.raises(TypeError):           # (DTypeError): no silent float16 -> float32
        xp.zeros(3, dtype=np.float16)


COMPLEX = xps.complex_dtypes()


def finite_complex(d):
    return st.complex_numbers(max_magnitude=8.0, allow_nan=False, allow_infinity=False,
                              width=d.itemsize * 8)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "acosh", "sign", "abs", "conj",
                                  "real", "imag", "isnan", "square", "expm1"])
@FAST
@given(x=COMPLEX.flatmap(lambda d: arrays(d, SHAPES, elements=finite_complex(d))))
def test_complex_unary_matches_array_api_strict(name, x):
    """(finite, moderate values: the kernels' complex functions are not NumPy's, so results
    agree to a tolerance relative to the largest magnitude)"""
    exp = _call(getattr(sx, name), _strict(x))
    assume(exp is not None)
    g, e = np.asarray(getattr(xp, name)(x)), np.from_dlpack(exp)
    assert g.dtype == e.dtype
    tol = 1e-5 if g.dtype in (np.complex64, np.float32) else 1e-12
    np.testing.assert_allclose(g, e, rtol=tol, atol=tol * max(1.0, np.abs(e).max()))


@pytest.mark.parametrize("name", ["copysign", "signbit"])
@FAST
@given(dt=xps.floating_dtypes(), shape=SHAPES, data=st.data())
def test_sign_bit_functions_match_array_api_strict(name, dt, shape, data):
    x = data.draw(arrays(dt, shape), label="x")
    args = (x,) if name == "signbit" else (x, data.draw(arrays(dt, shape[-1:]), label="y"))
    exp = getattr(sx, name)(*map(_strict, args))
    got = np.asarray(getattr(xp, name)(*args))
    assert got.dtype == np.from_dlpack(exp).dtype
    assert np.array_equal(got, np.from_dlpack(exp), equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(np.from_dlpack(exp)))


def _spd(m):
    """A symmetric positive-definite matrix from ``m`` (cholesky, eigh, solve)."""
    return m @ m.T + m.shape[0] * np.eye(m.shape[0])


LINALG = {
    "det": lambda m, a: m.linalg.det(a),
    "inv": lambda m, a: m.linalg.inv(a),
    "cholesky": lambda m, a: m.linalg.cholesky(a, upper=True),
    "eigvalsh": lambda m, a: m.linalg.eigvalsh(a),
    "svdvals": lambda m, a: m.linalg.svdvals(a),
    "solve": lambda m, a: m.linalg.solve(a, m.linalg.diagonal(a)[:, None]),
    "slogdet": lambda m, a: m.linalg.slogdet(a).logabsdet,
    "pinv": lambda m, a: m.linalg.pinv(a),
    "matrix_rank": lambda m, a: m.linalg.matrix_rank(a),
    "matrix_power": lambda m, a: m.linalg.matrix_power(a, 3),
    "matrix_norm": lambda m, a: m.linalg.matrix_norm(a, ord=1, keepdims=True),
    "vector_norm": lambda m, a: m.linalg.vector_norm(a, axis=0, ord=3),
    "trace": lambda m, a: m.linalg.trace(a, offset=1),
    "diagonal": lambda m, a: m.linalg.diagonal(a, offset=-1),
    "cross": lambda m, a: m.linalg.cross(a, m.flip(a, axis=0), axis=-2),
    "outer": lambda m, a: m.linalg.outer(a[0, ...], a[1, ...]),
    "tensordot": lambda m, a: m.linalg.tensordot(a, a, axes=1),
    "vecdot": lambda m, a: m.linalg.vecdot(a, a),
    "matmul": lambda m, a: m.linalg.matmul(a, a),
    "matrix_transpose": lambda m, a: m.linalg.matrix_transpose(a),
    "qr": lambda m, a: m.abs(m.linalg.qr(a).R),
    "eigh": lambda m, a: m.abs(m.linalg.eigh(a).eigenvectors),
    "svd": lambda m, a: m.linalg.svd(a, full_matrices=False).S,
}


@pytest.mark.parametrize("name", sorted(LINALG))
@FAST
@given(m=arrays(np.float64, (3, 3), elements={"min_value": -4, "max_value": 4,
                                               "allow_nan": False, "allow_infinity": False}))
def test_linalg_extension_matches_array_api_strict(name, m):
    a = _spd(np.asarray(m))
    exp = np.from_dlpack(LINALG[name](sx, sx.asarray(a)))
    got = np.asarray(LINALG[name](xp, xp.asarray(a)))
    assert got.dtype == exp.dtype and got.shape == exp.shape, (got.dtype, got.shape, exp.shape)
    np.testing.assert_allclose(got, exp, rtol=1e-9, atol=1e-9)


FFT = {
    "fft": lambda m, a: m.fft.fft(a, n=5, norm="ortho"),
    "ifft": lambda m, a: m.fft.ifft(a, axis=0),
    "fftn": lambda m, a: m.fft.fftn(a, s=(2, 3), axes=(0, 1)),
    "ifftn": lambda m, a: m.fft.ifftn(a, norm="forward"),
    "rfft": lambda m, a: m.fft.rfft(m.real(a)),
    "irfft": lambda m, a: m.fft.irfft(a, n=6),
    "rfftn": lambda m, a: m.fft.rfftn(m.real(a)),
    "irfftn": lambda m, a: m.fft.irfftn(a, s=(3, 4), axes=(0, 1)),
    "hfft": lambda m, a: m.fft.hfft(a),
    "ihfft": lambda m, a: m.fft.ihfft(m.imag(a), axis=0),
    "fftshift": lambda m, a: m.fft.fftshift(a),
    "ifftshift": lambda m, a: m.fft.ifftshift(a, axes=1),
    "fftfreq": lambda m, a: m.fft.fftfreq(a.shape[1], d=0.5),
    "rfftfreq": lambda m, a: m.fft.rfftfreq(a.shape[1]),
}


@pytest.mark.parametrize("name", sorted(FFT))
@FAST
@given(dt=COMPLEX, data=st.data())
def test_fft_extension_matches_array_api_strict(name, dt, data):
    a = data.draw(arrays(dt, (3, 4), elements=finite_complex(dt)))
    exp = np.from_dlpack(FFT[name](sx, _strict(a)))
    got = np.asarray(FFT[name](xp, a))
    assert got.dtype == exp.dtype and got.shape == exp.shape, (got.dtype, got.shape, exp.shape)
    tol = 1e-4 if got.dtype in (np.complex64, np.float32) else 1e-10
    np.testing.assert_allclose(got, exp, rtol=tol, atol=tol)


def test_dlpack_exchange_with_numpy():
    x = xp.asarray(np.arange(6.0).reshape(2, 3))
    y = x + 1                              # recorded, not run
    assert x.__dlpack_device__() == (1, 0)
    v = np.from_dlpack(x)                  # zero-copy: a read-only view of x's buffer
    assert not v.flags.writeable
    with pytest.raises(ValueError):
        v[0, 0] = 100.0                    # ... so it cannot change y
    assert_same(y, np.arange(6.0).reshape(2, 3) + 1)
    assert np.shares_memory(v, np.from_dlpack(x))
    w = np.from_dlpack(x, copy=True)       # the consumer's own copy
    w[0, 0] = 100.0
    assert x.numpy()[0, 0] == 0.0
    c = x.__dlpack__()                     # a legacy consumer (no read-only flag): a copy
    assert "dltensor" in repr(c)
    with pytest.raises(BufferError):
        x.__dlpack__(copy=False)
    t = xp.asarray(np.arange(6.0).reshape(3, 2)).mT          # a strided view
    assert_same(np.from_dlpack(t), np.arange(6.0).reshape(3, 2).T)
    z = xp.from_dlpack(np.arange(4, dtype=np.int16))
    assert z.dtype == xp.int16 and z.tolist() == [0, 1, 2, 3]
    assert xp.from_dlpack(x) is x
    with pytest.raises(BufferError):
        xp.from_dlpack(np.arange(3.0), copy=False)
    c64 = xp.asarray(np.array([1 + 2j], np.complex64))
    assert np.from_dlpack(c64).dtype == np.complex64


def test_namespace_2023_12_details():
    f = xp.finfo(xp.float32)
    assert all(type(getattr(f, k)) is float for k in ("eps", "max", "min", "smallest_normal"))
    assert type(f.bits) is int and f.bits == 32 and f.dtype == xp.float32
    assert xp.finfo(xp.complex64).dtype == xp.float32
    i = xp.iinfo(xp.uint64)
    assert type(i.max) is int and i.max == 2 ** 64 - 1 and i.min == 0 and i.bits == 64
    assert xp.isdtype(xp.complex64, "complex floating") and xp.isdtype(xp.complex128, "numeric")
    assert not xp.isdtype(xp.complex64, "real floating")
    info = xp.__array_namespace_info__()
    assert set(info.dtypes(kind="complex floating")) == {"complex64", "complex128"}
    assert info.default_dtypes()["complex floating"] == xp.complex128
    x = xp.ones((2, 3))
    assert type(xp.broadcast_arrays(x, xp.ones(3))) is list
    assert xp.expand_dims(x, 1).shape == (2, 1, 3)
    e = xp.cumulative_sum(xp.asarray(np.array([], np.int32)), axis=0, dtype=xp.int32,
                          include_initial=True)
    assert e.tolist() == [0] and e.dtype == xp.int32
    p = xp.cumulative_prod(xp.ones((2, 0)), axis=1, include_initial=True)
    assert p.shape == (2, 1)
    a = xp.asarray(np.arange(8.0).reshape(2, 2, 2) + np.eye(2) * 5)
    rt = xp.asarray(np.array([0.5, 1e-3]))              # an array rtol: one per matrix
    assert_same(xp.linalg.pinv(a, rtol=rt), np.linalg.pinv(np.asarray(a), rtol=np.asarray(rt)))
    assert_same(xp.linalg.matrix_rank(a, rtol=rt),
                np.linalg.matrix_rank(np.asarray(a), rtol=np.asarray(rt)))
    for n in ("int8", "uint8", "uint16", "uint32", "uint64"):
        assert int(xp.asarray(7, dtype=getattr(xp, n))) == 7
        assert [0, 1, 2][xp.asarray(2, dtype=getattr(xp, n))] == 2   # __index__


def test_can_cast_round_linspace_asarray_follow_the_standard():
    """can_cast is the standard's promotion lattice (no narrowing, no int -> float); round
    of a complex array rounds each part; linspace with a complex endpoint is complex128;
    asarray of a NumPy scalar is a 0-d array of its dtype."""
    import array_api_strict as st
    names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
             "float32", "float64", "complex64", "complex128"]
    for a in names:
        for b in names:
            assert xp.can_cast(getattr(xp, a), getattr(xp, b)) == \
                st.can_cast(getattr(st, a), getattr(st, b)), (a, b)
    z = np.array([1.5 + 2.5j, 0.4 - 1.6j, -2.5 + 0.5j])
    np.testing.assert_array_equal(np.asarray(xp.round(xp.asarray(z))), np.round(z))
    r = xp.linspace(0, 1 + 2j, 3)
    assert r.dtype == np.complex128
    np.testing.assert_allclose(np.asarray(r), np.linspace(0, 1 + 2j, 3))
    for v in (np.float64(3.0), np.float32(2.5), np.int16(7), 3.0, 2, True, 1 + 2j):
        a = xp.asarray(v)
        assert a.shape == () and a.dtype == np.asarray(v).dtype and float(np.real(a)) == \
            float(np.real(v))


@pytest.mark.parametrize("eager", [0, 1 << 16])
def test_fft_rfft2_irfft2_and_empty_axes(eager):
    """rfft2/irfft2 as NumPy's; fftn/fft2 over no axes give the input (its dtype, not
    complex: NumPy returns the input itself)."""
    x = np.random.default_rng(2).random((6, 8, 5))
    with ps.config.override(eager_elements=eager):
        r = ps.fft.rfft2(ps.asarray(x))
        np.testing.assert_allclose(np.asarray(r), np.fft.rfft2(x), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(np.asarray(ps.fft.irfft2(r)), np.fft.irfft2(np.fft.rfft2(x)),
                                   rtol=1e-12, atol=1e-12)
        got = ps.fft.rfft2(ps.asarray(x), s=(4, 6), axes=(0, 2))
        np.testing.assert_allclose(np.asarray(got), np.fft.rfft2(x, s=(4, 6), axes=(0, 2)),
                                   rtol=1e-12, atol=1e-12)
        a = ps.asarray(x)
        for f in ("fftn", "ifftn", "fft2", "ifft2"):
            r = getattr(ps.fft, f)(a, axes=())
            assert r.dtype == np.float64
            np.testing.assert_array_equal(np.asarray(r), x)
        with pytest.raises(ValueError):
            ps.fft.rfftn(a, axes=())
