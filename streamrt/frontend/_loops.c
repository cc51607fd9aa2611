/* NumPy's own inner loops, called directly by the NumPy tier (part of streamrt.frontend._native).
 *
 * A ufunc call on small arrays spends most of its time in NumPy's dispatch -- the override
 * check, type resolution, the iterator, the error-state lookup -- and little in its loop:
 * ``a + b`` of 1,000 float64 costs ~380 ns, its loop ~100. For the common case the C path
 * calls the loop itself, on a new C-ordered result:
 *
 *   - a ufunc with one output and one or two inputs (no generalized ufunc);
 *   - its array operands exact ndarrays of one dtype (float64, float32, an integer, bool), native and
 *     aligned, of one shape (no broadcasting), the others Python or NumPy scalars that NumPy
 *     would convert to that dtype (NEP 50: a Python float or int takes the array's dtype);
 *   - laid out so that NumPy's iterator hands the loop the same strides: every array
 *     C-contiguous (one call over all elements, as NumPy coalesces them), or 1-D (one call,
 *     its stride), or 2-D with contiguous rows (a call per row), or N-D of one shape with
 *     positive strides in C order (the axes NumPy's iterator coalesces joined, then a call
 *     per innermost row). Other layouts of those only for the ufuncs whose result does not
 *     depend on the path the loop takes (correctly rounded IEEE operations, comparisons,
 *     integer arithmetic): a transcendental loop may take a SIMD or a scalar path by its
 *     strides, and NumPy's iterator may reorder or buffer them.
 *
 * The loop is the ufunc's first whose inputs are exactly that dtype: NumPy's dispatch finds
 * the same exact match. A floating-point exception the loop raised (NumPy would warn or
 * raise, by np.errstate) or a Python error it set discards the result: NumPy's own call
 * then redoes it and reports as NumPy does. The values are NumPy's bit for bit
 * (tests/test_native.py compares every ufunc, dtype and layout). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NPY_TARGET_VERSION NPY_2_0_API_VERSION     /* (PyUFunc_GiveFloatingpointErrors) */
#define PY_ARRAY_UNIQUE_SYMBOL streamrt_native_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>
#include <numpy/ufuncobject.h>
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <limits.h>
#include <string.h>

#include "_loops.h"

long long n_direct;                     /* ufunc calls whose loop ran here */

#define DIRECT_FPE (FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID)

/* The floating-point exception flags cleared before a loop: tested first, as NumPy's
 * npy_clear_floatstatus does (glibc's feclearexcept rewrites the x87 and SSE state: ~40 ns). */
static inline void clear_fpe(void) {
    if (fetestexcept(DIRECT_FPE))
        feclearexcept(DIRECT_FPE);
}
#define GIL_FREE_SIZE 16384             /* release the GIL for loops this long (NumPy: 500) */

typedef union {
    double d; float f; npy_int64 i; npy_int32 i32; npy_int16 i16; npy_int8 i8;
    npy_uint64 u64; npy_uint32 u32; npy_uint16 u16; npy_uint8 u8; npy_bool b;
} Element;

/* The dtypes the loops are called for: bool, the integers, float32 and float64. */
static inline int direct_type(int tn) {
    return tn == NPY_DOUBLE || tn == NPY_FLOAT || tn == NPY_BOOL || PyTypeNum_ISINTEGER(tn);
}

/* Python int ``x`` (``ux``: its value past int64, for a uint64) as an element of integer type
 * ``tn``: 0 when out of its range (NumPy raises OverflowError; its call reports it). */
static int int_element(int tn, long long x, int big, unsigned long long ux, Element *e) {
    PyArray_Descr *d = PyArray_DescrFromType(tn);
    if (d == NULL) {
        PyErr_Clear();
        return 0;
    }
    int size = (int)d->elsize, sig = PyTypeNum_ISSIGNED(tn);
    Py_DECREF(d);
    if (big)                            /* (past int64: only a uint64 holds it) */
        return !sig && size == 8 ? (e->u64 = ux, 1) : 0;
    if (sig) {
        long long lo = size == 8 ? LLONG_MIN : -(1LL << (8 * size - 1)), hi = -(lo + 1);
        if (x < lo || x > hi)
            return 0;
    } else if (x < 0 || (size < 8 && x >= (1LL << (8 * size)))) {
        return 0;
    }
    switch (size) {
    case 1: if (sig) e->i8 = (npy_int8)x; else e->u8 = (npy_uint8)x; break;
    case 2: if (sig) e->i16 = (npy_int16)x; else e->u16 = (npy_uint16)x; break;
    case 4: if (sig) e->i32 = (npy_int32)x; else e->u32 = (npy_uint32)x; break;
    case 8: if (sig) e->i = x; else e->u64 = (npy_uint64)x; break;
    default: return 0;
    }
    return 1;
}

/* After a loop (the GIL released for it when ``ts``): the floating-point exceptions it raised,
 * cleared. */
static inline int loop_end(PyThreadState *ts) {
    int fpe = fetestexcept(DIRECT_FPE);
    if (fpe)
        feclearexcept(DIRECT_FPE);
    if (ts != NULL)
        PyEval_RestoreThread(ts);
    return fpe;
}

/* A new result ``out`` its loop computed: kept, or discarded (NULL without an error) when the
 * loop raised a floating-point exception or set a Python error -- NumPy's call then redoes
 * it and reports as it does. */
static PyObject *fresh_result(int fpe, PyArrayObject *out) {
    if (fpe || PyErr_Occurred()) {
        PyErr_Clear();
        Py_DECREF(out);
        return NULL;
    }
    n_direct++;
    return (PyObject *)out;
}

/* ``v``, a scalar operand of a loop over type ``tn``, in ``*e`` as NumPy converts it for that
 * loop; 0 when NumPy would promote to another dtype or the conversion is not exact. */
static int scalar_operand(PyObject *v, int tn, Element *e) {
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyFloat_Type || (tn == NPY_DOUBLE && PyArray_IsScalar(v, Double))) {
        double d = t == &PyFloat_Type ? PyFloat_AS_DOUBLE(v) : PyArrayScalar_VAL(v, Double);
        if (tn == NPY_DOUBLE)
            e->d = d;
        else if (tn == NPY_FLOAT && !(isfinite(d) && fabs(d) > FLT_MAX))
            e->f = (float)d;        /* (a float64 beyond float32's range: NumPy decides) */
        else
            return 0;
        return 1;
    }
    if (PyArray_IsScalar(v, Generic)) {
        /* a NumPy scalar of the array's own dtype (another: NumPy promotes) */
        PyArray_Descr *sd = PyArray_DescrFromScalar(v);
        if (sd == NULL) {
            PyErr_Clear();
            return 0;
        }
        int same = sd->type_num == tn && PyArray_ISNBO(sd->byteorder);
        Py_DECREF(sd);
        if (same)
            PyArray_ScalarAsCtype(v, e);
        return same;
    }
    if (t == &PyBool_Type) {            /* (a Python bool: with a bool array only) */
        if (tn != NPY_BOOL)
            return 0;
        e->b = v == Py_True;
        return 1;
    }
    if (t == &PyLong_Type) {
        int over = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &over);
        if (x == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        if (PyTypeNum_ISINTEGER(tn)) {
            unsigned long long ux = 0;
            if (over > 0) {
                ux = PyLong_AsUnsignedLongLong(v);
                if (ux == (unsigned long long)-1 && PyErr_Occurred()) {
                    PyErr_Clear();
                    return 0;
                }
            } else if (over < 0) {
                return 0;
            }
            return int_element(tn, x, over != 0, ux, e);
        }
        if (over)
            return 0;
        const long long exact = tn == NPY_FLOAT ? (1LL << 24) : (1LL << 53);
        if (tn != NPY_DOUBLE && tn != NPY_FLOAT)
            return 0;                   /* (a bool array: NumPy promotes) */
        else if (x > exact || x < -exact)
            return 0;
        else if (tn == NPY_DOUBLE)
            e->d = (double)x;
        else
            e->f = (float)x;
        return 1;
    }
    return 0;
}

/* Whether ``uf``'s result is the same whatever path its loop takes (see the top). */
static const char *const exact_names[] = {
    "add", "subtract", "multiply", "divide", "true_divide", "negative", "positive",
    "absolute", "sqrt", "square", "maximum", "minimum", "fmax", "fmin", "equal", "not_equal",
    "less", "less_equal", "greater", "greater_equal", "floor", "ceil", "trunc", "rint",
    "copysign", "sign", "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift", "right_shift",
    "floor_divide", "remainder", "fmod", "isnan", "isinf", "isfinite", "signbit", NULL};

static int path_independent(PyUFuncObject *uf) {
    static PyUFuncObject *seen[16];
    static char answer[16];
    static int next;
    for (int k = 0; k < 16; k++)
        if (seen[k] == uf)
            return answer[k];
    int yes = 0;
    for (int k = 0; exact_names[k] != NULL && uf->name != NULL; k++)
        if (strcmp(uf->name, exact_names[k]) == 0)
            yes = 1;
    seen[next] = uf;                    /* (NumPy's ufuncs live as long as NumPy) */
    answer[next] = (char)yes;
    next = (next + 1) % 16;
    return yes;
}

/* The byte range [*lo, *hi) an array's elements span (empty: *lo == *hi). */
void array_extent(PyArrayObject *a, char **lo, char **hi) {
    char *l = PyArray_BYTES(a), *h = l;
    for (int ax = 0; ax < PyArray_NDIM(a); ax++) {
        npy_intp d = PyArray_DIM(a, ax), st = PyArray_STRIDE(a, ax);
        if (d == 0) {
            *lo = *hi = l;
            return;
        }
        if (st < 0)
            l += (d - 1) * st;
        else
            h += (d - 1) * st;
    }
    *lo = l;
    *hi = h + PyArray_ITEMSIZE(a);
}

/* Whether ``a`` and ``out`` may share memory other than as the same elements in the same
 * order (an operand that is the output itself is read before it is written, element by
 * element, as NumPy's in-place operators do). */
static int overlaps(PyArrayObject *a, PyArrayObject *out) {
    if (PyArray_BYTES(a) == PyArray_BYTES(out) && PyArray_NDIM(a) == PyArray_NDIM(out) &&
            PyArray_SAMESHAPE(a, out) &&
            memcmp(PyArray_STRIDES(a), PyArray_STRIDES(out),
                   PyArray_NDIM(a) * sizeof(npy_intp)) == 0)
        return 0;
    char *al, *ah, *ol, *oh;
    array_extent(a, &al, &ah);
    array_extent(out, &ol, &oh);
    return al < oh && ol < ah;
}

/* The loop's operands: pointers, inner steps and (2-D: a call per row) outer steps. */
typedef struct { char *ptr[3]; npy_intp steps[3], outer[3]; } Operands;

/* Operand k (array ``a``) of an ``nd``-D result of ``dims``, a call per row or not: 0 when
 * its layout is not one the loop is called on here (see the top). */
static inline int array_operand(Operands *o, int k, PyArrayObject *a, int nd,
                                const npy_intp *dims, npy_intp size, int rows) {
    int an = PyArray_NDIM(a);
    o->ptr[k] = PyArray_BYTES(a);
    o->outer[k] = 0;
    if (!rows) {                        /* one call: C-contiguous, or 1-D on its stride */
        if (an == nd && nd == 1)        /* (a length-1 operand of a longer result: step 0) */
            o->steps[k] = PyArray_DIM(a, 0) == 1 && dims[0] != 1 ? 0 : PyArray_STRIDE(a, 0);
        else if (PyArray_IS_C_CONTIGUOUS(a) && PyArray_SIZE(a) == size)
            o->steps[k] = PyArray_ITEMSIZE(a);
        else
            return 0;
        return 1;
    }
    /* a row of the 2-D result: the operand's axes aligned from the last, a length-1 or
     * missing axis broadcast (step 0) */
    npy_intp d1 = an >= 1 ? PyArray_DIM(a, an - 1) : 1, d0 = an == 2 ? PyArray_DIM(a, 0) : 1;
    o->steps[k] = d1 == 1 && dims[1] != 1 ? 0 : PyArray_STRIDE(a, an - 1);
    o->outer[k] = an < 2 || (d0 == 1 && dims[0] != 1) ? 0 : PyArray_STRIDE(a, 0);
    return an >= 1 && an <= 2;
}

/* Operand k of an N-D result (nd > 2, no broadcasting): its strides into ``st``. 0 unless
 * every stride is positive and none is below the next axis's -- the order NumPy's iterator
 * keeps, so that its calls are a call per innermost row, as here (a reversed or transposed
 * operand: NumPy's call). */
static inline int nd_operand(Operands *o, npy_intp *st, int k, PyArrayObject *a, int nd) {
    o->ptr[k] = PyArray_BYTES(a);
    for (int ax = 0; ax < nd; ax++) {
        st[ax] = PyArray_STRIDE(a, ax);
        if (st[ax] <= 0 || (ax > 0 && st[ax - 1] < st[ax]))
            return 0;
    }
    return 1;
}

/* Coalesce the axes of an N-D loop as NumPy's iterator does: adjacent axes whose strides
 * continue each other in every operand become one. ``dims`` and the ``nops`` stride rows
 * of ``st`` are rewritten; the new dimension count is returned. */
static int nd_coalesce(npy_intp *dims, npy_intp st[][NPY_MAXDIMS], int nops, int nd) {
    int m = 0;
    for (int ax = 1; ax < nd; ax++) {
        int join = 1;
        for (int k = 0; k < nops; k++)
            if (st[k][m] != dims[ax] * st[k][ax])
                join = 0;
        if (join) {
            dims[m] *= dims[ax];
            for (int k = 0; k < nops; k++)
                st[k][m] = st[k][ax];
        } else {
            m++;
            dims[m] = dims[ax];
            for (int k = 0; k < nops; k++)
                st[k][m] = st[k][ax];
        }
    }
    return m + 1;
}

/* The next row of an odometer over the outer axes ``dims[0 .. no-1]`` (``idx``: its position,
 * all 0 at the start): each of the ``np`` pointers ``p[k]`` moved by its strides ``st[k]``.
 * 0 after the last row (the pointers back at the first). */
static inline int next_row(npy_intp *idx, const npy_intp *dims, int no, char **p,
                           const npy_intp *const *st, int np) {
    for (int ax = no - 1; ax >= 0; ax--) {
        for (int k = 0; k < np; k++)
            p[k] += st[k][ax];
        if (++idx[ax] < dims[ax])
            return 1;
        idx[ax] = 0;
        for (int k = 0; k < np; k++)
            p[k] -= dims[ax] * st[k][ax];
    }
    return 0;
}

/* ---- the NumPy tier on two cores ----------------------------------------------------------
 * A loop over ``split_min`` elements or more is cut in two: this thread runs the first part,
 * a helper thread the second, both with the GIL released (NumPy's loops are called without
 * it). The cut never changes a result: a call per row (the rows of a 2-D result are separate
 * calls under NumPy too) is cut between rows; one call over all elements only for the
 * ufuncs whose result does not depend on the path the loop takes (``path_independent``).
 * The helper spins for a moment after a part (the next op of an interpreted kernel comes
 * within microseconds), then sleeps on a condition variable; a part it has not started when
 * this thread is done with its own is taken back and run here, so a helper descheduled by
 * the OS costs no more than the serial loop. A part it started but finished after twice
 * this thread's part took (its core busy) sends the next loops to one thread, 1, 2, 4, ...
 * up to SPLIT_BACKOFF_MAX of them (``split_skip``). Both threads yield their core every 256
 * pauses of a spin (a BLAS pool's thread placed on that core runs). One caller at a time
 * (``split_busy``): another thread's loop meanwhile runs serially. The floating-point
 * exceptions the helper's part raised are handed back and merged with this thread's. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

Py_ssize_t split_min = 0;               /* 0: off (settings.split_elements, native.py) */
int split_wait = 0;                     /* 1: never take the helper's part back (tests) */
_Thread_local int split_paused;         /* 1: this thread's loops are not cut (ufunc_into) */
long long n_split;                      /* loops cut in two */
long long n_split_lost;                 /* ... that ran slower than on one thread */
int split_skip, split_backoff = 1;      /* loops left to run on one thread; the next wait */
int split_delay_us;                     /* tests: the helper sleeps this long before its part */
#define SPLIT_BACKOFF_MAX 1024

typedef struct {
    PyUFuncGenericFunction loop;
    void *data;
    char *ptr[3];
    npy_intp steps[3], outer[3], count, nrows;
    int nops;
} Part;

static Part part;
static atomic_int part_state;           /* 0 none, 1 posted, 2 taken, 3 done */
static atomic_int split_busy;
static int part_fpe, helper_up, helper_failed;
static pthread_mutex_t part_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t part_cv = PTHREAD_COND_INITIALIZER;
#define SPIN_NS 200000                  /* the helper spins this long after a part */
/* 1: the helper stops spinning at once and sleeps until the next part (``split_park``: a
 * compiled parallel kernel is about to run, whose OpenMP threads need both cores) */
static atomic_int helper_park;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void run_part(Part *t) {
    char *ptr[3];
    memcpy(ptr, t->ptr, sizeof ptr);
    for (npy_intp r = 0; r < t->nrows; r++) {
        t->loop(ptr, &t->count, t->steps, t->data);
        for (int k = 0; k < t->nops; k++)
            ptr[k] += t->outer[k];
    }
}

static void *helper_main(void *arg) {
    (void)arg;
    for (;;) {
        if (atomic_load(&part_state) != 1) {
            long long until = now_ns() + SPIN_NS;
            int spins = 0;
            while (atomic_load(&part_state) != 1) {
                cpu_relax();
                if (++spins % 256 != 0 && !atomic_load(&helper_park))
                    continue;
                sched_yield();          /* (a thread sharing this core -- BLAS's -- runs) */
                if (now_ns() > until || atomic_load(&helper_park)) {
                    pthread_mutex_lock(&part_mu);
                    while (atomic_load(&part_state) != 1)
                        pthread_cond_wait(&part_cv, &part_mu);
                    pthread_mutex_unlock(&part_mu);
                    break;
                }
            }
        }
        int expect = 1;
        if (!atomic_compare_exchange_strong(&part_state, &expect, 2))
            continue;                   /* (taken back by the caller) */
        if (split_delay_us > 0) {       /* (tests: a helper whose core is busy) */
            struct timespec d = {0, split_delay_us * 1000L};
            nanosleep(&d, NULL);
        }
        clear_fpe();
        run_part(&part);
        part_fpe = fetestexcept(DIRECT_FPE);
        if (part_fpe)
            feclearexcept(DIRECT_FPE);
        atomic_store(&part_state, 3);
    }
    return NULL;
}

void split_park(void) {
    if (helper_up)
        atomic_store(&helper_park, 1);
}

void split_reset(void) {
    split_skip = 0;
    split_backoff = 1;
}

static void split_after_fork(void) {    /* the child has no helper thread */
    helper_up = 0;
    split_reset();
    atomic_store(&part_state, 0);
    atomic_store(&split_busy, 0);
    pthread_mutex_init(&part_mu, NULL);
    pthread_cond_init(&part_cv, NULL);
}

/* Start the helper (with the GIL held, once): 0 when it cannot be started. */
static int split_ready(void) {
    if (helper_up)
        return 1;
    if (helper_failed)
        return 0;
    static int registered;
    if (!registered) {
        pthread_atfork(NULL, NULL, split_after_fork);
        registered = 1;
    }
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &at, helper_main, NULL) != 0) {
        helper_failed = 1;
        pthread_attr_destroy(&at);
        return 0;
    }
    pthread_attr_destroy(&at);
    helper_up = 1;
    return 1;
}

/* The loop over ``o`` (``nops`` operands), ``nrows`` calls of ``count`` elements, cut in two
 * (between rows; one call only where the caller found the ufunc path-independent) and run on
 * this thread and the helper (the GIL already released): the helper part's floating-point
 * exceptions in ``*fpe``. 0 when not cut (the caller runs it serially). */
static int run_split(PyUFuncGenericFunction loop, void *data, Operands *o, int nops,
                     npy_intp count, npy_intp nrows, int *fpe) {
    npy_intp h = nrows >= 2 ? nrows / 2 : (count / 2) & ~(npy_intp)63;
    int expect = 0;
    if (h == 0 || !atomic_compare_exchange_strong(&split_busy, &expect, 1))
        return 0;
    if (split_skip > 0 && !split_wait) {    /* (backing off: see below) */
        split_skip--;
        atomic_store(&split_busy, 0);
        return 0;
    }
    Part mine = {loop, data, {NULL}, {0}, {0}, count, nrows, nops};
    memcpy(mine.ptr, o->ptr, sizeof mine.ptr);
    memcpy(mine.steps, o->steps, sizeof mine.steps);
    memcpy(mine.outer, o->outer, sizeof mine.outer);
    part = mine;
    if (nrows >= 2) {                   /* between rows */
        mine.nrows = h;
        part.nrows = nrows - h;
        for (int k = 0; k < nops; k++)
            part.ptr[k] += h * o->outer[k];
    } else {                            /* one call: at a multiple of 64 elements */
        mine.count = h;
        part.count = count - h;
        for (int k = 0; k < nops; k++)
            part.ptr[k] += h * o->steps[k];
    }
    part_fpe = 0;
    atomic_store(&helper_park, 0);
    atomic_store(&part_state, 1);
    pthread_mutex_lock(&part_mu);
    pthread_cond_signal(&part_cv);
    pthread_mutex_unlock(&part_mu);
    long long t0 = now_ns();
    run_part(&mine);
    long long t1 = now_ns();
    expect = 1;
    if (!split_wait && atomic_compare_exchange_strong(&part_state, &expect, 2)) {
        run_part(&part);                /* (the helper had not started it) */
        *fpe = 0;
    } else {
        for (int spins = 0; atomic_load(&part_state) != 3;) {
            cpu_relax();
            if (++spins % 256 == 0)
                sched_yield();          /* (the helper may share this core: it runs) */
        }
        *fpe = part_fpe;
        /* waited longer for the helper than this thread's half took: the loop ran slower
         * than on one thread (the helper's core busy -- a BLAS thread pool spinning there,
         * another process): the next loops run on one thread, for longer each time */
        if (now_ns() - t1 > t1 - t0) {
            split_skip = split_backoff;
            split_backoff = split_backoff < SPLIT_BACKOFF_MAX ? 2 * split_backoff : split_backoff;
            n_split_lost++;
        } else if (split_backoff > 1) {
            split_backoff /= 2;
        }
    }
    atomic_store(&part_state, 0);
    atomic_store(&split_busy, 0);
    n_split++;
    return 1;
}

/* ``a @ b`` of 1-D or 2-D float arrays of one dtype: matmul's own loop, called as NumPy calls
 * it for operands without stacked dimensions -- one outer iteration, the core dimensions
 * (m, n, p) with a missing one (a vector's) of size 1 and step 0 -- into a new C-ordered
 * result. The loop picks BLAS or its own loops from those dimensions and steps, as under
 * NumPy's call. */
static PyObject *direct_matmul(PyUFuncObject *uf, PyObject *const *hv) {
    if (!PyArray_CheckExact(hv[0]) || !PyArray_CheckExact(hv[1]))
        return NULL;
    PyArrayObject *a = (PyArrayObject *)hv[0], *b = (PyArrayObject *)hv[1];
    PyArray_Descr *d = PyArray_DESCR(a);
    int an = PyArray_NDIM(a), bn = PyArray_NDIM(b), tn = d->type_num;
    if (an < 1 || an > 2 || bn < 1 || bn > 2 || (tn != NPY_DOUBLE && tn != NPY_FLOAT) ||
            PyArray_DESCR(b)->type_num != tn || !PyArray_ISNBO(d->byteorder) ||
            !PyArray_ISNBO(PyArray_DESCR(b)->byteorder) || !PyArray_ISALIGNED(a) ||
            !PyArray_ISALIGNED(b))
        return NULL;
    npy_intp m = an == 2 ? PyArray_DIM(a, 0) : 1, n = PyArray_DIM(a, an - 1);
    npy_intp p = bn == 2 ? PyArray_DIM(b, 1) : 1;
    if (PyArray_DIM(b, 0) != n)
        return NULL;                    /* (NumPy's call raises) */
    int i = 0;
    for (; i < uf->ntypes; i++)
        if (uf->types[i * 3] == tn && uf->types[i * 3 + 1] == tn)
            break;
    if (i == uf->ntypes || uf->functions[i] == NULL || uf->types[i * 3 + 2] != tn)
        return NULL;
    if (an == 1 && bn == 1) {
        /* a vector times a vector: the dtype's dot function, which matmul's loop calls for
         * it (BLAS's dot where the strides allow it, else its own loop), without a 0-d
         * result array */
        PyArray_DotFunc *dot = PyDataType_GetArrFuncs(d)->dotfunc;
        if (dot == NULL || n > INT_MAX)
            return NULL;
        Element r;
        dot(PyArray_BYTES(a), PyArray_STRIDE(a, 0), PyArray_BYTES(b), PyArray_STRIDE(b, 0), &r,
            n, NULL);
        n_direct++;
        return PyArray_Scalar(&r, d, NULL);
    }
    npy_intp dims[2];
    int nd = 0;
    if (an == 2)
        dims[nd++] = m;
    if (bn == 2)
        dims[nd++] = p;
    Py_INCREF(d);
    PyArrayObject *out = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, d, nd, dims, NULL,
                                                               NULL, 0, NULL);
    if (out == NULL)
        return NULL;
    npy_intp sz = PyArray_ITEMSIZE(out);
    npy_intp core[4] = {1, m, n, p};
    npy_intp steps[9] = {0, 0, 0,
                         an == 2 ? PyArray_STRIDE(a, 0) : 0, PyArray_STRIDE(a, an - 1),
                         PyArray_STRIDE(b, 0), bn == 2 ? PyArray_STRIDE(b, 1) : 0,
                         an == 2 ? (bn == 2 ? p * sz : sz) : 0, bn == 2 ? sz : 0};
    char *args[3] = {PyArray_BYTES(a), PyArray_BYTES(b), PyArray_BYTES(out)};
    PyThreadState *ts = m * n * p >= GIL_FREE_SIZE ? PyEval_SaveThread() : NULL;
    clear_fpe();
    uf->functions[i](args, core, steps, uf->data == NULL ? NULL : uf->data[i]);
    return fresh_result(loop_end(ts), out);
}

PyObject *direct_ufunc(PyObject *f, PyObject *const *hv, Py_ssize_t n, PyObject *into) {
    if (Py_TYPE(f) != &PyUFunc_Type || n < 1 || n > 2)
        return NULL;
    PyUFuncObject *uf = (PyUFuncObject *)f;
    if (uf->core_enabled && n == 2 && into == NULL && uf->name != NULL &&
            strcmp(uf->name, "matmul") == 0)
        return direct_matmul(uf, hv);
    if (uf->nin != n || uf->nout != 1 || uf->core_enabled || uf->functions == NULL)
        return NULL;
    PyArrayObject *arr[2] = {NULL, NULL}, *out = (PyArrayObject *)into;
    int tn = -1, nd = 0, same = 1;
    npy_intp dims[NPY_MAXDIMS];
    for (Py_ssize_t k = 0; k < n; k++) {
        if (!PyArray_CheckExact(hv[k]))
            continue;
        PyArrayObject *a = (PyArrayObject *)hv[k];
        PyArray_Descr *d = PyArray_DESCR(a);
        if (!PyArray_ISNBO(d->byteorder) || !PyArray_ISALIGNED(a))
            return NULL;
        if (tn < 0) {
            tn = d->type_num;
            if (!direct_type(tn))
                return NULL;
            nd = PyArray_NDIM(a);
            memcpy(dims, PyArray_DIMS(a), nd * sizeof(npy_intp));
        } else if (d->type_num != tn) {
            return NULL;
        } else if (PyArray_NDIM(a) != nd || !PyArray_SAMESHAPE(a, arr[0])) {
            /* broadcasting: two operands of at most 2-D (NumPy's rule, from the last axis) */
            int an = PyArray_NDIM(a), rn = an > nd ? an : nd;
            if (rn > 2)
                return NULL;
            npy_intp r[2];
            for (int ax = 1; ax <= rn; ax++) {
                npy_intp x = ax <= nd ? dims[nd - ax] : 1;
                npy_intp y = ax <= an ? PyArray_DIM(a, an - ax) : 1;
                if (x != y && x != 1 && y != 1)
                    return NULL;        /* (NumPy raises; its call reports it) */
                r[rn - ax] = x == 1 ? y : x;
            }
            nd = rn;
            memcpy(dims, r, rn * sizeof(npy_intp));
            same = 0;
        }
        arr[k] = a;
    }
    if (tn < 0)
        return NULL;
    if (out != NULL && (!PyArray_CheckExact(out) || PyArray_NDIM(out) != nd ||
                        !PyArray_CompareLists(PyArray_DIMS(out), dims, nd) ||
                        !PyArray_ISWRITEABLE(out) || !PyArray_ISALIGNED(out) ||
                        !PyArray_ISNBO(PyArray_DESCR(out)->byteorder)))
        return NULL;
    /* one call over all elements, or a call per row of a 2-D result */
    int rows = 0;
    for (Py_ssize_t k = 0; k <= n; k++) {
        PyArrayObject *a = k < n ? arr[k] : out;
        if (a != NULL && nd > 1 && (!PyArray_IS_C_CONTIGUOUS(a) || !same))
            rows = 1;
    }
    /* N-D (a call per innermost row): one shape, every dimension over 1 */
    int ndl = rows && nd > 2 && same;
    for (int ax = 0; ndl && ax < nd; ax++)
        if (dims[ax] < 2)
            ndl = 0;
    if (rows && nd != 2 && !ndl)
        return NULL;
    npy_intp st[3][NPY_MAXDIMS];
    /* a layout other than NumPy's coalesced one -- rows, or a length-1 1-D operand
     * broadcast (step 0) -- only for a loop whose result does not depend on its path */
    int exact = rows || !same ? path_independent(uf) : 1;
    if (!rows && !exact)
        return NULL;
    npy_intp size = 1;
    for (int ax = 0; ax < nd; ax++)
        size *= dims[ax];
    Operands o;
    Element sv[2];
    for (Py_ssize_t k = 0; k < n; k++) {
        if (arr[k] != NULL) {
            if (ndl ? !nd_operand(&o, st[k], (int)k, arr[k], nd)
                    : !array_operand(&o, (int)k, arr[k], nd, dims, size, rows))
                return NULL;
            if (ndl)
                o.steps[k] = st[k][nd - 1];
            if (!exact && rows && o.steps[k] != PyArray_ITEMSIZE(arr[k]))
                return NULL;            /* (NumPy's iterator may hand it other strides) */
            if (out != NULL && arr[k] != out && overlaps(arr[k], out))
                return NULL;            /* (NumPy copies the operand first) */
        } else {
            /* a logical op with a number: NumPy takes its bool loop (1e-300 is true, where the
             * float32 loop would see 0): NumPy's own call */
            if (uf->name != NULL && strncmp(uf->name, "logical_", 8) == 0)
                return NULL;
            if (!scalar_operand(hv[k], tn, &sv[k]))
                return NULL;
            o.ptr[k] = (char *)&sv[k];
            o.steps[k] = o.outer[k] = 0;
            for (int ax = 0; ndl && ax < nd; ax++)
                st[k][ax] = 0;
        }
    }
    if (out != NULL && PyTypeNum_ISINTEGER(tn) && strcmp(uf->name, "power") == 0)
        return NULL;        /* (its loop raises for a negative exponent midway: NumPy's call) */
    int nargs = uf->nargs, i = 0;
    for (; i < uf->ntypes; i++) {
        const char *ty = uf->types + i * nargs;
        if (ty[0] == tn && (n < 2 || ty[1] == tn))
            break;
    }
    if (i == uf->ntypes || uf->functions[i] == NULL)
        return NULL;
    int otn = uf->types[i * nargs + n];
    if (out == NULL) {
        PyArray_Descr *od = PyArray_DescrFromType(otn);
        if (od == NULL)
            return NULL;
        out = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, od, nd, dims, NULL, NULL, 0,
                                                    NULL);
        if (out == NULL)
            return NULL;
    } else if (PyArray_TYPE(out) != otn) {
        return NULL;
    } else {
        Py_INCREF(out);
    }
    if (ndl ? !nd_operand(&o, st[n], (int)n, out, nd)
            : !array_operand(&o, (int)n, out, nd, dims, size, rows)) {
        Py_DECREF(out);
        return NULL;
    }
    npy_intp cd[NPY_MAXDIMS];          /* an N-D loop's dimensions, coalesced */
    int cnd = 0;
    if (ndl) {
        memcpy(cd, dims, nd * sizeof(npy_intp));
        cnd = nd_coalesce(cd, st, (int)n + 1, nd);
        for (Py_ssize_t k = 0; k <= n; k++) {
            o.steps[k] = st[k][cnd - 1];
            o.outer[k] = cnd >= 2 ? st[k][cnd - 2] : 0;
        }
    }
    if (!exact && rows && o.steps[n] != PyArray_ITEMSIZE(out)) {
        Py_DECREF(out);
        return NULL;
    }
    PyUFuncGenericFunction loop = uf->functions[i];
    void *data = uf->data == NULL ? NULL : uf->data[i];
    npy_intp count = !rows ? size : ndl ? cd[cnd - 1] : dims[1];
    npy_intp nrows = !rows ? 1 : ndl ? (cnd >= 2 ? cd[cnd - 2] : 1) : dims[0];
    int cut = !split_paused && split_min > 0 && size >= split_min && cnd <= 2 &&
        (nrows >= 2 || path_independent(uf)) &&
        split_ready(), hfpe = 0;
    PyThreadState *ts = size >= GIL_FREE_SIZE ? PyEval_SaveThread() : NULL;
    clear_fpe();
    if (cnd > 2) {
        /* the outer axes as an odometer; a call per innermost row */
        npy_intp idx[NPY_MAXDIMS];
        const npy_intp *ost[3] = {st[0], st[1], st[2]};
        for (int ax = 0; ax < cnd - 1; ax++)
            idx[ax] = 0;
        do {
            loop(o.ptr, &count, o.steps, data);
        } while (next_row(idx, cd, cnd - 1, o.ptr, ost, (int)n + 1));
    } else if (!cut || !run_split(loop, data, &o, (int)n + 1, count, nrows, &hfpe)) {
        for (npy_intp r = 0; r < nrows; r++) {
            loop(o.ptr, &count, o.steps, data);
            for (Py_ssize_t k = 0; k <= n; k++)
                o.ptr[k] += o.outer[k];
        }
    }
    int fpe = loop_end(ts) | hfpe;
    if (into != NULL) {
        /* written in place, as NumPy's call would have; its report of the exceptions */
        n_direct++;
        if (!PyErr_Occurred() && fpe &&
            PyUFunc_GiveFloatingpointErrors(uf->name,
                                            (fpe & FE_DIVBYZERO ? UFUNC_FPE_DIVIDEBYZERO : 0) |
                                            (fpe & FE_OVERFLOW ? UFUNC_FPE_OVERFLOW : 0) |
                                            (fpe & FE_UNDERFLOW ? UFUNC_FPE_UNDERFLOW : 0) |
                                            (fpe & FE_INVALID ? UFUNC_FPE_INVALID : 0)) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        if (PyErr_Occurred()) {
            Py_DECREF(out);
            return NULL;
        }
        return (PyObject *)out;
    }
    return fresh_result(fpe, out);
}

/* ---- basic-index assignment: ``A[1:-1] = v`` ---------------------------------------------
 * NumPy's setitem is its indexing (the view) and PyArray_AssignArray (overlap check, a dtype
 * transfer function, the copy loop). For a value of the view's own dtype and shape (or a
 * Python number into a float64 or int64 view) this copies with memmove: rows of contiguous
 * elements (a row per position of the outer axes, any number of them), a strided last
 * axis of a 1-D or 2-D view, or a fill. A source overlapping the view other than as the
 * same bytes, another dtype, broadcasting: NumPy's setitem. 1 done, 0 not taken, -1 error. */
int direct_setitem(PyObject *base, PyObject *key, PyObject *value) {
    PyObject *view = PyObject_GetItem(base, key);
    if (view == NULL)
        return -1;
    int rc = 0;
    if (!PyArray_CheckExact(view))       /* (an element: NumPy's setitem writes it) */
        goto done;
    PyArrayObject *d = (PyArrayObject *)view;
    int nd = PyArray_NDIM(d), tn = PyArray_TYPE(d);
    npy_intp isz = PyArray_ITEMSIZE(d);
    if (!PyArray_ISWRITEABLE(d) || !PyArray_ISALIGNED(d) ||
            !PyArray_ISNBO(PyArray_DESCR(d)->byteorder))
        goto done;
    /* a row per position of the outer axes (an odometer over them), the last axis a row */
    int no = nd > 0 ? nd - 1 : 0;
    const npy_intp *dd = PyArray_DIMS(d), *dst = PyArray_STRIDES(d);
    npy_intp cols = nd >= 1 ? dd[nd - 1] : 1, dcol = nd >= 1 ? dst[nd - 1] : isz;
    npy_intp rows = 1, idx[NPY_MAXDIMS];
    for (int ax = 0; ax < no; ax++) {
        rows *= dd[ax];
        idx[ax] = 0;
    }
    if (PyArray_CheckExact(value)) {
        PyArrayObject *s = (PyArrayObject *)value;
        if (PyArray_TYPE(s) != tn || PyArray_NDIM(s) != nd || !PyArray_SAMESHAPE(s, d) ||
                !PyArray_ISALIGNED(s) || !PyArray_ISNBO(PyArray_DESCR(s)->byteorder) ||
                PyArray_DESCR(s)->kind == 'O' || overlaps(s, d))
            goto done;
        const npy_intp *sst = PyArray_STRIDES(s);
        npy_intp scol = nd >= 1 ? sst[nd - 1] : isz;
        if (nd > 2 && (dcol != isz || scol != isz))
            goto done;      /* (element by element over many rows: NumPy's copy is faster) */
        char *dp = PyArray_BYTES(d), *sp = PyArray_BYTES(s);
        const npy_intp *rst[2] = {dst, sst};
        for (npy_intp r = 0; r < rows; r++) {
            if (dcol == isz && scol == isz) {
                memmove(dp, sp, cols * isz);
            } else if (isz == 8) {          /* (aligned: checked above) */
                char *a = dp, *b = sp;
                for (npy_intp c = 0; c < cols; c++, a += dcol, b += scol)
                    *(npy_uint64 *)a = *(const npy_uint64 *)b;
            } else {
                char *a = dp, *b = sp;
                for (npy_intp c = 0; c < cols; c++, a += dcol, b += scol)
                    memcpy(a, b, isz);
            }
            char *p[2] = {dp, sp};
            next_row(idx, dd, no, p, rst, 2);
            dp = p[0];
            sp = p[1];
        }
        rc = 1;
    } else if ((tn == NPY_DOUBLE || tn == NPY_LONG) &&
               (Py_TYPE(value) == &PyFloat_Type || Py_TYPE(value) == &PyLong_Type)) {
        Element e;
        if (tn == NPY_DOUBLE) {
            if (!scalar_operand(value, NPY_DOUBLE, &e))
                goto done;
        } else if (Py_TYPE(value) != &PyLong_Type || !scalar_operand(value, NPY_LONG, &e)) {
            goto done;                  /* (a float into int64: NumPy's conversion) */
        }
        char *dp = PyArray_BYTES(d);
        npy_uint64 bits = e.u64;            /* (float64 and int64: 8 bytes, aligned) */
        for (npy_intp r = 0; r < rows; r++) {
            if (dcol == 8) {
                npy_uint64 *q = (npy_uint64 *)dp;
                for (npy_intp c = 0; c < cols; c++)
                    q[c] = bits;
            } else {
                char *a = dp;
                for (npy_intp c = 0; c < cols; c++, a += dcol)
                    *(npy_uint64 *)a = bits;
            }
            next_row(idx, dd, no, &dp, &dst, 1);
        }
        rc = 1;
    }
done:
    if (rc)
        n_direct++;
    Py_DECREF(view);
    return rc;
}

/* ---- whole-array reductions: np.sum(x), x.max(), ... without arguments ------------------- */
#define NREDUCE 12
static PyObject *reduce_fn[NREDUCE];    /* NumPy's functions and ndarray's methods ... */
static PyUFuncObject *reduce_uf[NREDUCE];   /* ... and the ufunc whose reduce each is */
#define REDUCE_MAX 8192                 /* NumPy's buffer size: longer inputs, NumPy's call */

/* ``fn(x)`` -- a reduction of every element of ``x``, one of reduce_fn -- by the ufunc's loop
 * in reduce mode (the accumulator as its first input and its output, step 0), as NumPy's
 * reduction calls it on an input it needs no buffer for: a start value (the ufunc's identity
 * for add and multiply, else the first element), then the loop over the rest in one call
 * (float addition sums pairwise in it). NumPy's scalar; NULL without an error otherwise. */
PyObject *direct_reduce(PyObject *fn, PyObject *x) {
    int k = 0;
    while (k < NREDUCE && reduce_fn[k] != fn)
        k++;
    if (k == NREDUCE || !PyArray_CheckExact(x))
        return NULL;
    PyUFuncObject *uf = reduce_uf[k];
    PyArrayObject *a = (PyArrayObject *)x;
    PyArray_Descr *d = PyArray_DESCR(a);
    int tn = d->type_num, one = strcmp(uf->name, "multiply") == 0;
    int additive = one || strcmp(uf->name, "add") == 0;
    npy_intp n = PyArray_SIZE(a), step;
    if (!PyArray_ISNBO(d->byteorder) || !PyArray_ISALIGNED(a) || n == 0 || n > REDUCE_MAX ||
            (tn != NPY_DOUBLE && tn != NPY_FLOAT && tn != NPY_LONG &&
             (tn != NPY_INT || additive)))  /* (int32 sums and products: int64 in NumPy) */
        return NULL;
    if (PyArray_NDIM(a) == 1)
        step = PyArray_STRIDE(a, 0);
    else if (PyArray_IS_C_CONTIGUOUS(a))
        step = PyArray_ITEMSIZE(a);
    else
        return NULL;
    int i = 0;
    for (; i < uf->ntypes; i++) {
        const char *ty = uf->types + i * 3;
        if (ty[0] == tn && ty[1] == tn && ty[2] == tn)
            break;
    }
    if (i == uf->ntypes || uf->functions[i] == NULL)
        return NULL;
    Element acc;
    char *in = PyArray_BYTES(a);
    npy_intp count = n;
    if (additive) {
        if (tn == NPY_DOUBLE)
            acc.d = one;
        else if (tn == NPY_FLOAT)
            acc.f = (float)one;
        else
            acc.i = one;
    } else {
        memcpy(&acc, in, PyArray_ITEMSIZE(a));
        in += step;
        count--;
    }
    char *args[3] = {(char *)&acc, in, (char *)&acc};
    npy_intp steps[3] = {0, step, 0};
    clear_fpe();
    if (count > 0)
        uf->functions[i](args, &count, steps, uf->data == NULL ? NULL : uf->data[i]);
    if (loop_end(NULL) || PyErr_Occurred()) {   /* NumPy's call redoes it and reports */
        PyErr_Clear();
        return NULL;
    }
    n_direct++;
    return PyArray_Scalar(&acc, d, NULL);
}

int direct_init(void) {
    import_umath1(-1);
    static const char *const names[][2] = {
        {"sum", "add"}, {"prod", "multiply"}, {"max", "maximum"}, {"min", "minimum"},
        {"amax", "maximum"}, {"amin", "minimum"}};
    PyObject *np = PyImport_ImportModule("numpy");
    if (np == NULL)
        return -1;
    PyObject *nd = PyObject_GetAttrString(np, "ndarray");
    int k = 0, rc = -1;
    for (size_t j = 0; nd != NULL && j < sizeof(names) / sizeof(names[0]); j++) {
        PyObject *f = PyObject_GetAttrString(np, names[j][0]);
        PyObject *u = PyObject_GetAttrString(np, names[j][1]);
        if (f == NULL || u == NULL || Py_TYPE(u) != &PyUFunc_Type) {
            Py_XDECREF(f);
            Py_XDECREF(u);
            goto done;
        }
        PyObject *impl = PyObject_GetAttrString(f, "_implementation");    /* (the function
                                          * behind NumPy's dispatch, what streamrt's twin calls) */
        if (impl == NULL) {
            PyErr_Clear();
            impl = Py_NewRef(f);
        }
        Py_DECREF(f);
        PyObject *m = j < 4 ? PyObject_GetAttrString(nd, names[j][0]) : NULL;
        if (PyErr_Occurred()) {
            Py_DECREF(impl);
            Py_DECREF(u);
            goto done;
        }
        reduce_fn[k] = impl;            /* (kept: NumPy lives as long as the process) */
        reduce_uf[k++] = (PyUFuncObject *)Py_NewRef(u);
        if (m != NULL) {
            reduce_fn[k] = m;
            reduce_uf[k++] = (PyUFuncObject *)u;
        } else {
            Py_DECREF(u);
        }
    }
    rc = 0;
done:
    Py_XDECREF(nd);
    Py_DECREF(np);
    return rc;
}

/* ---- integer-array indexing (gather, scatter) -------------------------------------------
 * The common case of NumPy's advanced indexing -- one int64 index vector per axis of ``a``,
 * all of one length n (smith-waterman's ``H[i - 1, j - 1]``, seidel-2d's ``A[i, j] = ...``) --
 * walked here: NumPy's call builds a map iterator first (~0.8 us). The same elements in the
 * same order: a gather copies them, a scatter writes them in index order (a repeated index:
 * the last value, as NumPy's loop leaves it). A scatter checks every index before it writes
 * anything; an index out of range, or any other key, goes to NumPy's call (its IndexError). */
#define FANCY_MAXDIM 4

typedef struct {
    int nd;
    npy_intp n;                         /* the index vectors' length */
    const char *ix[FANCY_MAXDIM];       /* each axis's index vector */
    npy_intp ixs[FANCY_MAXDIM];         /* ... its stride */
    npy_intp dim[FANCY_MAXDIM], st[FANCY_MAXDIM];  /* the array's shape and strides */
} Fancy;

/* 1: ``key`` (a host key) is one int64 vector per axis of ``a`` (aligned, of an element of
 * 1-16 bytes), all of one length; 0: another key */
static int fancy_plan(PyArrayObject *a, PyObject *key, Fancy *f) {
    int nd = PyArray_NDIM(a);
    int sz = (int)PyArray_ITEMSIZE(a);
    if (nd < 1 || nd > FANCY_MAXDIM || PyDataType_REFCHK(PyArray_DESCR(a)) ||
            !PyArray_ISALIGNED(a) || (sz != 1 && sz != 2 && sz != 4 && sz != 8 && sz != 16))
        return 0;
    PyObject *one[1] = {key};
    PyObject **items = one;
    if (PyTuple_CheckExact(key)) {
        if (PyTuple_GET_SIZE(key) != nd)
            return 0;
        items = &PyTuple_GET_ITEM(key, 0);
    } else if (nd != 1)
        return 0;
    f->nd = nd;
    for (int d = 0; d < nd; d++) {
        PyObject *k = items[d];
        if (!PyArray_CheckExact(k))
            return 0;
        PyArrayObject *ka = (PyArrayObject *)k;
        if (PyArray_NDIM(ka) != 1 || PyArray_TYPE(ka) != NPY_INT64 ||
                !PyArray_ISNOTSWAPPED(ka) || !PyArray_ISALIGNED(ka))
            return 0;
        npy_intp n = PyArray_DIM(ka, 0);
        if (d == 0)
            f->n = n;
        else if (n != f->n)
            return 0;
        f->ix[d] = PyArray_BYTES(ka);
        f->ixs[d] = PyArray_STRIDE(ka, 0);
        f->dim[d] = PyArray_DIM(a, d);
        f->st[d] = PyArray_STRIDE(a, d);
    }
    return 1;
}

/* The byte offsets of the plan's elements into ``off`` (n of them); 0: an index out of
 * range. */
static int fancy_offsets(const Fancy *f, npy_intp *off) {
    npy_intp n = f->n;
    for (npy_intp k = 0; k < n; k++)
        off[k] = 0;
    for (int d = 0; d < f->nd; d++) {
        const char *ix = f->ix[d];
        npy_intp ixs = f->ixs[d], dim = f->dim[d], st = f->st[d];
        for (npy_intp k = 0; k < n; k++) {
            npy_int64 v = *(const npy_int64 *)(ix + k * ixs);
            if (v < 0)
                v += dim;
            if (v < 0 || v >= dim)
                return 0;
            off[k] += (npy_intp)v * st;
        }
    }
    return 1;
}

/* copy n elements of ``sz`` bytes: dst[k] = src + off[k] (gather) or dst + off[k] = src[k] */
#define FANCY_COPY(T) do { \
    if (gather) { for (npy_intp k = 0; k < n; k++) ((T *)lin)[k] = *(const T *)(arr + off[k]); } \
    else { for (npy_intp k = 0; k < n; k++) *(T *)(arr + off[k]) = *(const T *)(lin + k * ls); } \
} while (0)

typedef struct { npy_int64 a, b; } Pair16;

static void fancy_copy(int gather, char *arr, char *lin, npy_intp ls, const npy_intp *off,
                       npy_intp n, int sz) {
    switch (sz) {
    case 1: FANCY_COPY(npy_int8); break;
    case 2: FANCY_COPY(npy_int16); break;
    case 4: FANCY_COPY(npy_int32); break;
    case 8: FANCY_COPY(npy_int64); break;
    default: FANCY_COPY(Pair16); break;
    }
}

/* (offsets: on the stack up to this many elements, else allocated) */
#define FANCY_STACK 2048

PyObject *direct_gather(PyObject *base, PyObject *key) {
    Fancy f;
    if (!PyArray_CheckExact(base) || !fancy_plan((PyArrayObject *)base, key, &f))
        return NULL;
    PyArrayObject *a = (PyArrayObject *)base;
    npy_intp stack[FANCY_STACK], *off = f.n <= FANCY_STACK ? stack :
        PyMem_Malloc((size_t)f.n * sizeof(npy_intp));
    if (off == NULL)
        return PyErr_NoMemory();
    PyArrayObject *r = NULL;
    if (fancy_offsets(&f, off)) {
        PyArray_Descr *descr = PyArray_DESCR(a);
        Py_INCREF(descr);
        npy_intp n = f.n;
        r = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, descr, 1, &n, NULL, NULL, 0,
                                                  NULL);
        if (r != NULL) {
            fancy_copy(1, PyArray_BYTES(a), PyArray_BYTES(r), 0, off, n,
                       (int)PyArray_ITEMSIZE(a));
            n_direct++;
        }
    }
    if (off != stack)
        PyMem_Free(off);
    return (PyObject *)r;
}

int direct_scatter(PyObject *base, PyObject *key, PyObject *v) {
    Fancy f;
    if (!PyArray_CheckExact(base) || !PyArray_CheckExact(v))
        return 0;
    PyArrayObject *a = (PyArrayObject *)base, *va = (PyArrayObject *)v;
    if (!PyArray_ISWRITEABLE(a) || !fancy_plan(a, key, &f))
        return 0;
    if (PyArray_NDIM(va) != 1 || PyArray_DIM(va, 0) != f.n || !PyArray_ISALIGNED(va) ||
            !PyArray_EquivTypes(PyArray_DESCR(va), PyArray_DESCR(a)))
        return 0;
    char *alo, *ahi, *vlo, *vhi;        /* (a value sharing a's memory: NumPy copies it first) */
    array_extent(a, &alo, &ahi);
    array_extent(va, &vlo, &vhi);
    if (vlo < ahi && alo < vhi)
        return 0;
    npy_intp stack[FANCY_STACK], *off = f.n <= FANCY_STACK ? stack :
        PyMem_Malloc((size_t)f.n * sizeof(npy_intp));
    if (off == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int done = fancy_offsets(&f, off);
    if (done) {
        fancy_copy(0, PyArray_BYTES(a), PyArray_BYTES(va), PyArray_STRIDE(va, 0), off, f.n,
                   (int)PyArray_ITEMSIZE(a));
        n_direct++;
    }
    if (off != stack)
        PyMem_Free(off);
    return done;
}
