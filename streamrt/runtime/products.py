"""The NumPy tier's products in a loop: a vector-matrix product (``v @ M`` or ``M @ v``) whose
vector steps through one buffer from call to call -- ``A[i, :] @ B`` for i = 0, 1, 2, ... (gemm
row by row), ``X[:, i] @ X[:, i:]`` (covariance), ``A[:i + 1, :] @ A[i, :]`` (syrk),
``A[i + 1:, i] @ B[i + 1:, :]`` (trmm) -- gets its answer from one matrix-matrix product over
the next rows, computed once and handed out row by row (BLAS at its compute speed instead of
one matrix-vector product at memory speed each).

A *run* is such a sequence: the same two base buffers, the vector's stride, the matrix's
strides. The vector is the window [r0, r0 + K) of a *line* (a row or column of its base) whose
start steps by a constant; the matrix contracts over rows [r0, r0 + K) of its base (oriented
so) and takes a window of its columns; r0, K and the column window may change by constants
from call to call. After two steps alike the run computes a block of the next rows (8,
doubling after each block used to its end, within the base buffer and ``MAX_BLOCK_BYTES``;
when a window moves, over the union of the rows' windows, at most a quarter of the window's
rows at once, each row's vector zeroed outside its own contracted window). A call is answered
from the block only when its vector is exactly a row of it (the same memory, read with the
same stride) and its matrix the same memory.

The block marks both base ports *captured* (runtime/tiers.py): a write into either buffer goes
through ``tiers.settle``, which drops the block and stops the run (a loop that writes what its
products read -- Gram-Schmidt -- computes products one by one, as NumPy does). The C path
answers a block's rows itself (``hooks.product_block`` registers the block in one of its
``SLOTS``; Python sees a block's first and last rows), lets a write outside what the block
has still to answer go on (doitgen writes each row back, trmm a matrix row no later row
reads), and stops asking at a line for which ``serve`` answered False. A block with a value
that is not finite is not used (its rows are computed by NumPy's call, which reports
floating-point errors as NumPy does). The answers equal NumPy's up to rounding: a
matrix-matrix product sums in another order than a matrix-vector product.
``STREAMRT_BATCH_PRODUCTS=0``: none of this."""
from __future__ import annotations

import threading
import weakref

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..core import hooks, stats
from ..core.config import settings

MIN_ELEMENTS = 2048         # matrices smaller than this: products one by one (C path's test)
FIRST_BLOCK = 8             # rows of a run's first block
MAX_BLOCK_BYTES = 16 << 20  # one block's size
MAX_RUNS = 16               # runs remembered per thread
CHURN = 3                   # runs of one pair of buffers never come to a block: stop asking
MISSES = 8                  # calls of a run without a block in between: stop asking
MASKED_MIN_WORK = 1 << 20   # a moving contraction's block: at least this many multiply-adds

_counts = {"products_batched": 0, "product_blocks": 0, "product_blocks_dropped": 0}
_local = threading.local()
SLOTS = 4                   # blocks the C path answers from (_native.c PRODUCT_SLOTS)
_slots: list = [None] * SLOTS   # the run whose block each slot holds
_next_slot = [0]


class Run:
    """One watched sequence of products (see the module docstring)."""
    __slots__ = ("bu", "bw", "table", "key", "last", "step", "mw_ptr", "geo", "block",
                 "block_lp", "rows", "grow", "off", "marked", "win", "dwin", "bc0",
                 "slot", "misses", "ctr", "dctr", "bctr", "__weakref__")

    def __init__(self, table, key, bu, bw, uptr):
        self.table, self.key = table, key
        self.bu = weakref.ref(bu, self._gone)
        self.bw = weakref.ref(bw, self._gone)
        self.last, self.step, self.mw_ptr, self.geo = uptr, 0, None, None
        self.block = None
        self.block_lp = self.rows = 0
        self.ctr = self.dctr = self.bctr = None  # the contracted window (r0, K): last, change,
        #                                         the block's first row's
        self.grow, self.off, self.marked = FIRST_BLOCK, False, False
        self.win = self.dwin = None         # the last call's window (c0, N), its change
        self.bc0 = 0                        # the block's first column
        self.slot = None                    # the C path's slot answering from the block
        self.misses = 0                     # calls since the last block

    def _gone(self, _ref):
        if self.table.get(self.key) is self:
            del self.table[self.key]
        self.release()

    # -- the captured marks (tiers.settle calls ``written``) --
    def _mark(self):
        for r in (self.bu, self.bw):
            p = r()
            c = p.captured
            if c is None:
                p.captured = self
            elif c is not self and not (isinstance(c, tuple) and self in c):
                p.captured = (c, self) if not isinstance(c, tuple) else c + (self,)
        self.marked = True

    def _unmark(self):
        self.marked = False
        for r in (self.bu, self.bw):
            p = r()
            if p is None:
                continue
            c = p.captured
            if c is self:
                p.captured = None
            elif isinstance(c, tuple) and self in c:
                rest = tuple(q for q in c if q is not self)
                p.captured = rest if len(rest) > 1 else rest[0]

    def release(self):
        self.block = None
        k = self.slot
        if k is not None:
            self.slot = None
            if _slots[k] is self:
                _slots[k] = None
                hooks.product_block(k, None)
        if self.marked:
            self._unmark()

    def _register(self, spec):
        """The C path answers the block's rows but its last (hooks.product_block)."""
        if hooks.product_block is None:
            return
        k = next((i for i, r in enumerate(_slots) if r is None), None)
        if k is None:
            k = _next_slot[0] = (_next_slot[0] + 1) % SLOTS
            _slots[k].slot = None
        _slots[k], self.slot = self, k
        hooks.product_block(k, spec)

    def written(self):
        """A buffer the run reads is being written: its block is stale and the run stops."""
        if self.block is not None:
            _counts["product_blocks_dropped"] += 1
        self.off = True
        self.release()


def _table():
    t = getattr(_local, "runs", None)
    if t is None:
        t = _local.runs = {}
        _local.pairs = {}       # (bu, bw, left) ids -> (bu's weakref, runs made since the
        #                         pair's last block)
    return t


def serve(u, w, bu, bw, left, uptr, wptr):
    """``u @ w`` (``left``) or ``w @ u`` from a run's block; None: NumPy's call computes it;
    False: that too, and the C path stops asking for this call site (its runs were written
    while in use, or its operands change shape at every call: trmm's ``A[i + 1:, i] @ B[i +
    1:, :]``). ``u``: the 1-D operand, ``w`` the 2-D one, of one float dtype; ``bu``/``bw``:
    the base ports whose buffers they view; ``uptr``/``wptr``: their data addresses."""
    if not settings.batch_products:
        return None
    wt = w if left else w.T             # the product is u @ wt: wt is (K, N)
    t0, t1 = wt.strides
    key = (id(bu), id(bw), left, u.strides[0], t0, t1, u.dtype.char)
    table = _table()
    run = table.get(key)
    if run is None or run.bu() is not bu or run.bw() is not bw:
        pairs = _local.pairs
        pair = key[:3]
        seen = pairs.get(pair)
        n = seen[1] + 1 if seen is not None and seen[0]() is bu else 1
        if n > CHURN:                   # new runs of one pair that never came to a block
            return False
        if len(pairs) >= 4 * MAX_RUNS:
            pairs.clear()
        pairs[pair] = (weakref.ref(bu), n)
        if run is not None:
            run.release()
        if len(table) >= MAX_RUNS:
            table.pop(next(iter(table))).release()
        run = table[key] = Run(table, key, bu, bw, uptr)
    elif run.off:
        return False
    # the matrix's place in its base: the rows it contracts over (fixed for the run), the
    # columns of its window
    mw = bw.value
    if run.mw_ptr is None:
        if type(mw) is not np.ndarray or mw.ndim != 2 or t0 <= 0 or t1 <= 0:
            run.off = True
            return None
        run.mw_ptr = mw.__array_interface__["data"][0]
    if (t0, t1) == mw.strides:
        m2 = mw
    elif (t1, t0) == mw.strides:
        m2 = mw.T
    else:
        m2 = None
    K, N = wt.shape
    su = u.strides[0]
    if m2 is not None:
        off = wptr - run.mw_ptr
        if off < 0:
            m2 = None
        elif t0 > t1:
            r0, rest = divmod(off, t0)
            c0, bad = divmod(rest, t1)
        else:
            c0, rest = divmod(off, t1)
            r0, bad = divmod(rest, t0)
    if m2 is not None and (bad or r0 + K > m2.shape[0] or c0 + N > m2.shape[1]):
        m2 = None
    # the vector is the window [r0, r0 + K) of a *line* (a row or column of its base) that
    # starts at ``lp`` and steps from call to call; the matrix contracts over the same rows
    if m2 is None:              # a matrix of other strides: the block is for it exactly
        geo, r0, c0 = (wptr, N, K), 0, 0
    else:
        geo = m2.shape
    lp = uptr - r0 * su
    if run.geo != geo:
        first = run.geo is None
        if not first:                   # another matrix: a new run
            run.release()
            run.step, run.last, run.dctr = 0, lp, None
        run.geo, run.win, run.ctr = geo, (c0, N), (r0, K)
        if first:
            run.last = lp
            return None
    b = run.block
    if b is not None:
        j, bad = divmod(lp - run.block_lp, run.step) if run.step else (-1, 1)
        c = c0 - run.bc0
        br0, bK = run.bctr
        dr, dK = run.dctr
        # (a block the C path answers from: its last row only -- the C path knows which rows
        # a write allowed there made stale, _native.c product_write_ok)
        if not bad and (j == run.rows - 1 or run.slot is None and 0 <= j < run.rows) and \
                r0 == br0 + j * dr and K == bK + j * dK and c >= 0 and c + N <= b.shape[1]:
            out = b[j, c:c + N].copy()
            _counts["products_batched"] += 1
            if j == run.rows - 1:       # the block used to its end: the next one is larger
                run.release()
                run.grow = min(2 * run.grow, 1 << 30)
            run.last, run.win, run.ctr = lp, (c0, N), (r0, K)
            return out
        # a call the block does not answer leaves the run as it is (doitgen's second product
        # of a row it wrote), unless the block's rows are not asked for any more
        run.misses += 1
        if run.misses <= MISSES:
            return None
        run.release()
        run.misses = 0
    run.misses += 1
    if run.misses > MISSES:             # (a vector that does not step: the same row again)
        run.off = True
        return False
    step = lp - run.last
    win, last, ctr, lastc = (c0, N), run.win, (r0, K), run.ctr
    run.last, run.win, run.ctr = lp, win, ctr
    dwin = (c0 - last[0], N - last[1])
    dctr = (r0 - lastc[0], K - lastc[1])
    if step == 0 or step != run.step or dctr != run.dctr:
        run.step, run.dwin, run.dctr = step, dwin, dctr
        return None
    if dwin != run.dwin:                # windows that do not change by a constant: all columns
        run.dwin = None
    return _block(run, u, wt if m2 is None else m2, lp, r0, K, c0, N, left)


def _block(run, u, wt, lp, r0, K, c0, N, left):
    """The run's next block: the products of the lines from ``lp`` on (``run.step`` apart, as
    many as fit in the base buffer, ``run.grow`` at most) with ``wt`` (every column of the
    matrix's base, or the union of the rows' windows when they change by a constant); a
    contracted window that moves (trmm's ``A[i + 1:, i] @ B[i + 1:, :]``, symm's ``A[i, :i] @
    B[:i, :]``) is the union of the rows' windows, each row's outside its own zeroed. The
    answer for this call's row (contracted window ``r0``/``K``, columns ``c0``/``N``), or
    None."""
    mu = run.bu().value
    if type(mu) is not np.ndarray or not (mu.flags.c_contiguous or mu.flags.f_contiguous):
        run.off = True
        return None
    lo = mu.__array_interface__["data"][0]
    hi = lo + mu.nbytes
    su, step, isz = u.strides[0], run.step, u.itemsize
    dr, dK = run.dctr
    rows = max(MAX_BLOCK_BYTES // (wt.shape[1] * isz), 1)
    if dr or dK:                        # at most 1/8 of the union computed for nothing; every
        rows = min(rows, max(K // 4, FIRST_BLOCK))      # row's window inside the matrix
        for j in range(1, rows):
            a, k = r0 + j * dr, K + j * dK
            if a < 0 or k < 1 or a + k > wt.shape[0]:
                rows = j
                break
    else:
        rows = min(rows, run.grow)

    def union(rows):
        """The contracted rows [klo, khi) the block's rows read, and where row 0 reads
        its first (the windows change linearly: their ends bound the union)."""
        last = rows - 1
        klo = min(r0, r0 + last * dr)
        khi = max(r0 + K, r0 + K + last * (dr + dK))
        return klo, khi, khi - klo, lp + klo * su

    klo, khi, L, start = union(rows)
    ext_lo, ext_hi = min(0, (L - 1) * su), max(0, (L - 1) * su) + isz
    if start + ext_lo < lo or start + ext_hi > hi or (start - lo) % isz:
        run.off = True
        return None
    fit = (hi - ext_hi - start) // step if step > 0 else (start + ext_lo - lo) // -step
    rows = min(rows, fit + 1)
    if rows < 2:
        return None
    if (dr or dK) and rows * K * N < MASKED_MIN_WORK:
        # small masked blocks cost more than they save: wait while the window grows (symm's
        # prefix), stop when it shrinks (trmm's suffix near its end)
        if dK > 0:
            run.misses = 0
            return None
        run.off = True
        return False
    bc0, bc1 = 0, wt.shape[1]
    if run.dwin is not None:            # the windows of the block's rows (covariance's shrink
        dc, dn = run.dwin               # from the left, syrk's grow to the right): their union,
        if dc or dn:                    # at most 1/8 of it computed for nothing
            rows = min(rows, max(N // 4, FIRST_BLOCK))
        last = rows - 1
        bc0 = max(min(c0, c0 + last * dc), 0)
        bc1 = min(max(c0 + N, c0 + N + last * (dc + dn)), bc1)
    klo, khi, L, start = union(rows)    # (fewer rows than bounded above: a part of that union)
    flat = mu.reshape(-1, order="A")
    rows_u = as_strided(flat[(start - lo) // isz:], (rows, L), (step, su), writeable=False)
    if dr or dK:                        # each row's own window, the rest zero
        rows_u = np.array(rows_u)
        cols = np.arange(L)[None, :]
        jj = np.arange(rows)[:, None]
        a = r0 - klo + jj * dr
        rows_u[(cols < a) | (cols >= a + K + jj * dK)] = 0
    with np.errstate(all="ignore"):
        b = np.matmul(rows_u, wt[klo:khi, bc0:bc1])
        finite = np.isfinite(b).all()
    if not finite:
        run.off = True
        return None
    run.release()
    run.block, run.block_lp, run.rows, run.bc0 = b, lp, rows, bc0
    run.bctr = (r0, K)
    run.misses = 0
    run._mark()
    _local.pairs.pop(run.key[:3], None)
    geo = run.geo
    exact = type(geo) is tuple and len(geo) == 3
    run._register((run.bu(), run.bw(), int(left), b.dtype.num, su, wt.strides[0],
                   wt.strides[1], run.mw_ptr, -1 if exact else r0, dr, K, dK,
                   geo[0] if exact else 0, N, b, lp, step, rows, bc0, start, L, run))
    _counts["product_blocks"] += 1
    _counts["products_batched"] += 1
    return b[0, c0 - bc0:c0 - bc0 + N].copy()


def forget():
    """Drop this thread's runs, every block and the call sites refused (``ps.clear_caches``,
    tests)."""
    t = getattr(_local, "runs", None)
    if t is not None:
        for run in list(t.values()):
            run.release()
        t.clear()
        _local.pairs.clear()
    if hooks.product_block is not None:
        hooks.product_block(-1, None)
    _slots[:] = [None] * SLOTS


def _stats(snapshot):
    for k, n in _counts.items():
        snapshot[k] = snapshot.get(k, 0) + n


def _reset():
    for k in _counts:
        _counts[k] = 0


stats.declare(*_counts)
stats.register_reader(_stats, _reset)
