"""PolyBench deriche: Deriche recursive edge-detection filter on a float32 image."""
import math

import numpy

from ._common import grid, njit

NAME = "deriche"
SIZES = {"small": {"w": 192, "h": 128}, "large": {"w": 2048, "h": 1536}}


def inputs(size):
    w, h = SIZES[size]["w"], SIZES[size]["h"]
    i, j = grid(w, h)
    img = (((313 * i + 991 * j) % 65536) / 65535.0).astype(numpy.float32)
    return (0.25, img)


def coefficients(alpha):
    """The filter's coefficients (PolyBench computes them in float: expf, powf)."""
    e = math.exp(-alpha)
    k = (1.0 - e) * (1.0 - e) / (1.0 + 2.0 * alpha * e - math.exp(2.0 * alpha))
    a1 = k
    a2 = k * e * (alpha - 1.0)
    a3 = k * e * (alpha + 1.0)
    a4 = -k * math.exp(-2.0 * alpha)
    b1 = 2.0 ** -alpha
    b2 = -math.exp(-2.0 * alpha)
    return a1, a2, a3, a4, b1, b2


def kernel(np, alpha, img_in):
    a1, a2, a3, a4, b1, b2 = coefficients(alpha)
    w, h = img_in.shape
    y1 = np.zeros((w, h), dtype=np.float32)
    y2 = np.zeros((w, h), dtype=np.float32)
    # horizontal pass: every row at once, the recursion along j in Python
    xm1 = np.zeros(w, dtype=np.float32)
    ym1 = np.zeros(w, dtype=np.float32)
    ym2 = np.zeros(w, dtype=np.float32)
    for j in range(h):
        y1[:, j] = a1 * img_in[:, j] + a2 * xm1 + b1 * ym1 + b2 * ym2
        xm1 = img_in[:, j]
        ym2 = ym1
        ym1 = y1[:, j]
    xp1 = np.zeros(w, dtype=np.float32)
    xp2 = np.zeros(w, dtype=np.float32)
    yp1 = np.zeros(w, dtype=np.float32)
    yp2 = np.zeros(w, dtype=np.float32)
    for j in range(h - 1, -1, -1):
        y2[:, j] = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2
        xp2 = xp1
        xp1 = img_in[:, j]
        yp2 = yp1
        yp1 = y2[:, j]
    img_out = y1 + y2
    # vertical pass: every column at once, the recursion along i in Python
    tm1 = np.zeros(h, dtype=np.float32)
    ym1 = np.zeros(h, dtype=np.float32)
    ym2 = np.zeros(h, dtype=np.float32)
    for i in range(w):
        y1[i, :] = a1 * img_out[i, :] + a2 * tm1 + b1 * ym1 + b2 * ym2
        tm1 = img_out[i, :]
        ym2 = ym1
        ym1 = y1[i, :]
    tp1 = np.zeros(h, dtype=np.float32)
    tp2 = np.zeros(h, dtype=np.float32)
    yp1 = np.zeros(h, dtype=np.float32)
    yp2 = np.zeros(h, dtype=np.float32)
    for i in range(w - 1, -1, -1):
        y2[i, :] = a3 * tp1 + a4 * tp2 + b1 * yp1 + b2 * yp2
        tp2 = tp1
        tp1 = img_out[i, :]
        yp2 = yp1
        yp1 = y2[i, :]
    return y1 + y2


def numba_kernel(alpha, img_in):
    return _deriche_loops(*coefficients(alpha), img_in)


@njit
def _deriche_loops(a1, a2, a3, a4, b1, b2, img_in):
    w, h = img_in.shape
    y1 = numpy.zeros((w, h), dtype=numpy.float32)
    y2 = numpy.zeros((w, h), dtype=numpy.float32)
    out = numpy.zeros((w, h), dtype=numpy.float32)
    for i in range(w):
        ym1 = ym2 = xm1 = numpy.float32(0.0)
        for j in range(h):
            y1[i, j] = a1 * img_in[i, j] + a2 * xm1 + b1 * ym1 + b2 * ym2
            xm1 = img_in[i, j]
            ym2 = ym1
            ym1 = y1[i, j]
    for i in range(w):
        yp1 = yp2 = xp1 = xp2 = numpy.float32(0.0)
        for j in range(h - 1, -1, -1):
            y2[i, j] = a3 * xp1 + a4 * xp2 + b1 * yp1 + b2 * yp2
            xp2 = xp1
            xp1 = img_in[i, j]
            yp2 = yp1
            yp1 = y2[i, j]
    for i in range(w):
        for j in range(h):
            out[i, j] = y1[i, j] + y2[i, j]
    for j in range(h):
        tm1 = ym1 = ym2 = numpy.float32(0.0)
        for i in range(w):
            y1[i, j] = a1 * out[i, j] + a2 * tm1 + b1 * ym1 + b2 * ym2
            tm1 = out[i, j]
            ym2 = ym1
            ym1 = y1[i, j]
    for j in range(h):
        tp1 = tp2 = yp1 = yp2 = numpy.float32(0.0)
        for i in range(w - 1, -1, -1):
            y2[i, j] = a3 * tp1 + a4 * tp2 + b1 * yp1 + b2 * yp2
            tp2 = tp1
            tp1 = out[i, j]
            yp2 = yp1
            yp1 = y2[i, j]
    for i in range(w):
        for j in range(h):
            out[i, j] = y1[i, j] + y2[i, j]
    return out
